/*
 * The link to a worker process (see worker-link.h).
 *
 * Starting a worker forks and execs vmmd-worker with one end of a
 * socketpair as WLINK_CHANNEL_FD and the descriptors the owner passes
 * (the kernel, initrd, TAP and disks a VM was checked for) after it, at
 * the numbers of worker-link.h's table.  The supervisor
 * then speaks the control protocol to the worker: it sends requests
 * with ids of its own and the worker answers them and sends events.  A
 * worker's life ends when SIGCHLD is reaped; only then is what became
 * of it known for sure, so the owner learns it from the exited
 * callback, after everything the worker said has been delivered.
 *
 * Descriptors (client connections for vm.console) go to the worker as
 * SCM_RIGHTS on a request line.  The socket is otherwise written
 * through a bufferevent, so fd-carrying messages wait in a queue until
 * the bufferevent's output is empty and are then written with one
 * sendmsg(): the byte stream never interleaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config.h"
#include "log.h"
#include "proto.h"
#include "worker-exec.h"
#include "worker-link.h"

#define WLINK_PROGRAM		"vmmd-worker"
#define WLINK_READ_CHUNK	16384
#define WLINK_MAX_LINE		(1024 * 1024)	/* worker.info can be big */
/* In the errors made up here: whether the worker can have read it. */
#define WLINK_ORIGIN_KEY	"wlink_origin"

struct wlink_req {
	TAILQ_ENTRY(wlink_req) entry;
	uint64_t id;
	enum wmsg_request what;		/* its reply's shape is checked */
	wlink_reply_cb cb;
	void *arg;
	bool unsent;		/* its line never reached the worker */
};
TAILQ_HEAD(wlink_req_list, wlink_req);

/* A message that carries a file descriptor, waiting for its turn. */
struct wlink_fdmsg {
	TAILQ_ENTRY(wlink_fdmsg) entry;
	uint64_t id;			/* the request's */
	char *line;
	size_t len;
	int fd[WMSG_REQ_FDS_MAX];
	unsigned int nfd;
};
TAILQ_HEAD(wlink_fdmsg_list, wlink_fdmsg);

struct wlink {
	TAILQ_ENTRY(wlink) rentry;	/* in the reaper's list until reaped */
	struct wlink_reaper *reaper;
	const struct wlink_ops *ops;
	void *owner;
	char *name;			/* the VM's, for messages */
	pid_t pid;
	int fd;				/* supervisor's end; owned by bev */
	struct bufferevent *bev;	/* NULL after EOF */
	struct proto_lines *lines;
	uint64_t next_id;
	struct wlink_req_list reqs;
	struct wlink_fdmsg_list fdq;
	struct event *fdq_ev;		/* waits for room after EAGAIN */
	struct event *timer;		/* the owner's deadline */
	enum worker_kill kill;		/* SIGKILL sent, and why */
	/*
	 * A SIGKILL the kernel refused (EPERM: vmmd without CAP_KILL, say):
	 * why it was wanted, and the timer that tries it again.
	 */
	enum worker_kill kill_wanted;
	struct event *kill_retry;
	bool reaped;			/* pid is no longer ours to signal */
	/* An adopted worker (not our child): watched through a pidfd. */
	int pidfd;			/* -1 for a child of ours */
	struct event *pidfd_ev;
	int exit_code;			/* from its worker.exit event */
	bool exit_known;
	bool status_known;		/* the status given to exited() */
	int report_fd;			/* the sandbox's pipe, read end */
	char violation[64];		/* what came on it, once reaped */
	uid_t uid;			/* of the reaper's range, or 0 */
};
TAILQ_HEAD(wlink_list, wlink);

struct wlink_reaper {
	struct event_base *base;
	struct event *sigchld_ev;
	struct wlink_list links;	/* spawned, not reaped yet */
	unsigned int count;
	bool unconfined;		/* spawn workers with -U */
	/* The workers' uids (wlink_reaper_set_uids()); 0: none. */
	uid_t uid_first, uid_last;
};

static void wlink_flush_fdq(struct wlink *w);
static void wlink_kill_retry_cb(evutil_socket_t fd, short what, void *arg);

/* How often a SIGKILL the kernel refused is tried again. */
#define WLINK_KILL_RETRY_S	1

/* The worker program --------------------------------------------------- */

const char *
wlink_program(const char *beside, char *err, size_t errlen)
{
	if (beside != NULL && access(beside, X_OK) == 0)
		return beside;
	if (access(VMMD_LIBEXECDIR "/" WLINK_PROGRAM, X_OK) == 0)
		return VMMD_LIBEXECDIR "/" WLINK_PROGRAM;
	snprintf(err, errlen, "%s not found (looked for %s and %s)",
	    WLINK_PROGRAM, beside != NULL ? beside : "-",
	    VMMD_LIBEXECDIR "/" WLINK_PROGRAM);
	return NULL;
}

/* Requests and replies ------------------------------------------------- */

/*
 * Build a request with a fresh id and register its callback: 0 with
 * *msgp and *idp, or -errno (args put either way).  Its arguments are
 * checked first, as the worker will: a request that fails is vmmd's
 * own bug, logged, and never sent (-EINVAL).
 */
static int
wlink_request_new(struct wlink *w, enum wmsg_request what,
    struct json_object *args, wlink_reply_cb cb, void *arg,
    struct json_object **msgp, uint64_t *idp)
{
	const struct wmsg_request_def *def = wmsg_request_def(what);
	struct json_object *msg;
	struct wlink_req *r;
	char err[256];

	if (wmsg_check(def->args, args, err, sizeof(err)) < 0) {
		log_error("VM '%s': %s not sent: %s", w->name, def->name, err);
		json_object_put(args);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	msg = json_object_new_object();
	if (r == NULL || msg == NULL) {
		free(r);
		json_object_put(msg);
		json_object_put(args);
		return -ENOMEM;
	}
	r->id = ++w->next_id;
	r->what = what;
	r->cb = cb;
	r->arg = arg;
	TAILQ_INSERT_TAIL(&w->reqs, r, entry);
	json_object_object_add(msg, "id",
	    json_object_new_int64((int64_t)r->id));
	json_object_object_add(msg, "command",
	    json_object_new_string(def->name));
	json_object_object_add(msg, "arguments",
	    args != NULL ? args : json_object_new_object());
	*msgp = msg;
	*idp = r->id;
	return 0;
}

/* Forget a request that could not be sent (no callback runs). */
static void
wlink_request_drop(struct wlink *w, uint64_t id)
{
	struct wlink_req *r;

	TAILQ_FOREACH(r, &w->reqs, entry)
		if (r->id == id) {
			TAILQ_REMOVE(&w->reqs, r, entry);
			free(r);
			return;
		}
}

/* A request whose line was never written: the worker cannot have it. */
static void
wlink_request_unsent(struct wlink *w, uint64_t id)
{
	struct wlink_req *r;

	TAILQ_FOREACH(r, &w->reqs, entry)
		if (r->id == id) {
			r->unsent = true;
			return;
		}
}

int
wlink_request(struct wlink *w, enum wmsg_request what,
    struct json_object *args, wlink_reply_cb cb, void *arg)
{
	struct json_object *msg;
	uint64_t id;
	char *line;
	size_t len;
	int rc = 0;

	if (w->bev == NULL) {
		json_object_put(args);
		return -EPIPE;
	}
	if ((rc = wlink_request_new(w, what, args, cb, arg, &msg, &id)) < 0)
		return rc;
	line = proto_serialize(msg, &len);
	json_object_put(msg);
	if (line == NULL || bufferevent_write(w->bev, line, len) < 0)
		rc = -ENOMEM;
	free(line);
	if (rc < 0)
		wlink_request_drop(w, id);
	return rc;
}

int
wlink_request_fd(struct wlink *w, enum wmsg_request what,
    struct json_object *args, int fd, wlink_reply_cb cb, void *arg)
{
	return wlink_request_fds(w, what, args, &fd, 1, cb, arg);
}

int
wlink_request_fds(struct wlink *w, enum wmsg_request what,
    struct json_object *args, const int *fds, unsigned int nfds,
    wlink_reply_cb cb, void *arg)
{
	struct json_object *msg;
	struct wlink_fdmsg *m;
	unsigned int i;
	uint64_t id;
	int rc;

	if (w->bev == NULL || nfds == 0 || nfds > WMSG_REQ_FDS_MAX) {
		json_object_put(args);
		return w->bev == NULL ? -EPIPE : -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		json_object_put(args);
		return -ENOMEM;
	}
	if ((rc = wlink_request_new(w, what, args, cb, arg, &msg, &id)) < 0) {
		free(m);
		return rc;
	}
	m->line = proto_serialize(msg, &m->len);
	json_object_put(msg);
	if (m->line == NULL) {
		rc = -ENOMEM;
		goto free_msg;
	}
	m->id = id;
	for (i = 0; i < nfds; i++) {
		m->fd[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (m->fd[i] < 0) {
			rc = -errno;
			while (i-- > 0)
				close(m->fd[i]);
			goto free_line;
		}
	}
	m->nfd = nfds;
	TAILQ_INSERT_TAIL(&w->fdq, m, entry);
	wlink_flush_fdq(w);
	return 0;

free_line:
	free(m->line);
free_msg:
	free(m);
	wlink_request_drop(w, id);
	return rc;
}

static void
wlink_reply(struct wlink *w, struct json_object *msg)
{
	struct json_object *v, *ret = NULL, *error = NULL;
	struct wlink_req *r;
	char desc[256];
	int64_t id;

	if (!json_object_object_get_ex(msg, "id", &v) ||
	    !json_object_is_type(v, json_type_int)) {
		log_warn("VM '%s': worker reply without a valid id", w->name);
		return;
	}
	id = json_object_get_int64(v);
	TAILQ_FOREACH(r, &w->reqs, entry)
		if ((int64_t)r->id == id)
			break;
	if (r == NULL) {
		log_warn("VM '%s': worker reply to unknown request %lld",
		    w->name, (long long)id);
		return;
	}
	TAILQ_REMOVE(&w->reqs, r, entry);
	if (!json_object_object_get_ex(msg, "return", &ret) || ret == NULL) {
		ret = NULL;
		if (!json_object_object_get_ex(msg, "error", &error) ||
		    error == NULL)
			error = NULL;
	}
	if (ret != NULL && wmsg_check(wmsg_request_def(r->what)->reply, ret,
	    desc, sizeof(desc)) < 0) {
		log_warn("VM '%s': worker's answer to %s: %s", w->name,
		    wmsg_request_def(r->what)->name, desc);
		ret = NULL;
	} else if (error != NULL && (!json_object_is_type(error,
	    json_type_object) || !json_object_is_type(json_object_object_get(
	    error, "class"), json_type_string) || !json_object_is_type(
	    json_object_object_get(error, "desc"), json_type_string))) {
		log_warn("VM '%s': worker's error for %s without a class and "
		    "a description", w->name, wmsg_request_def(r->what)->name);
		error = NULL;
	}
	if (ret == NULL && error == NULL) {
		struct json_object *e = proto_error(NULL, PROTO_ERR_INTERNAL,
		    "malformed reply from the worker");

		json_object_object_get_ex(e, "error", &error);
		json_object_object_add(error, WLINK_ORIGIN_KEY,
		    json_object_new_string("lost"));
		r->cb(NULL, error, r->arg);
		json_object_put(e);
	} else
		r->cb(ret, error, r->arg);
	free(r);
}

enum wlink_error_origin
wlink_error_origin(struct json_object *error)
{
	struct json_object *v;
	const char *s;

	if (error == NULL ||
	    !json_object_object_get_ex(error, WLINK_ORIGIN_KEY, &v))
		return WLINK_ERROR_WORKER;
	s = json_object_get_string(v);
	return s != NULL && strcmp(s, "unread") == 0 ? WLINK_ERROR_UNREAD :
	    WLINK_ERROR_LOST;
}

/*
 * Answer every open request with an internal error desc.  unread: the
 * worker read none of them (a worker that exits by itself, not killed,
 * not crashed, has answered every request it read first: those it did
 * not answer it never read); else only those never written are unread.
 */
static void
wlink_fail_requests(struct wlink *w, const char *desc, bool unread)
{
	struct json_object *e, *eobj;
	struct wlink_req *r;

	while ((r = TAILQ_FIRST(&w->reqs)) != NULL) {
		TAILQ_REMOVE(&w->reqs, r, entry);
		if (r->cb != NULL) {
			eobj = NULL;
			e = proto_error(NULL, PROTO_ERR_INTERNAL, "%s", desc);
			json_object_object_get_ex(e, "error", &eobj);
			json_object_object_add(eobj, WLINK_ORIGIN_KEY,
			    json_object_new_string(r->unsent || unread ?
			    "unread" : "lost"));
			r->cb(NULL, eobj, r->arg);
			json_object_put(e);
		}
		free(r);
	}
}

/* The channel ---------------------------------------------------------- */

/*
 * An event: known to worker-msg.h, its data of the shape listed there,
 * or dropped with a warning.  worker.exit is the link's own (how an
 * adopted worker ends); the rest go to the owner.
 */
static void
wlink_event(struct wlink *w, struct json_object *msg, struct json_object *v)
{
	struct json_object *data = NULL;
	char desc[256];
	int e;

	if (!json_object_is_type(v, json_type_string) ||
	    (e = wmsg_event_lookup(json_object_get_string(v))) < 0) {
		log_warn("VM '%s': unknown event from the worker: %s", w->name,
		    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		return;
	}
	json_object_object_get_ex(msg, "data", &data);
	if (wmsg_check(wmsg_event_shape((enum wmsg_event)e), data, desc,
	    sizeof(desc)) < 0) {
		log_warn("VM '%s': worker's %s event dropped: %s", w->name,
		    wmsg_event_name((enum wmsg_event)e), desc);
		return;
	}
	if (e == WMSG_EV_EXIT) {
		w->exit_code = (int)wmsg_int(data, WMSG_EXIT_STATUS, 0);
		w->exit_known = true;
	} else
		w->ops->event(w->owner, (enum wmsg_event)e, data);
}

static void
wlink_line(struct wlink *w, const char *line, size_t len)
{
	struct json_object *msg, *v;
	char desc[256];

	if (proto_parse_object(line, len, &msg, desc, sizeof(desc)) != 0) {
		log_warn("VM '%s': bad line from the worker: %s", w->name,
		    desc);
		return;
	}
	if (json_object_object_get_ex(msg, "event", &v))
		wlink_event(w, msg, v);
	else if (json_object_object_get_ex(msg, "greeting", &v))
		;	/* allowed, carries nothing we need */
	else
		wlink_reply(w, msg);
	json_object_put(msg);
}

/* Feed whatever is in the input buffer through the framer. */
static void
wlink_read_input(struct wlink *w)
{
	struct evbuffer *in = bufferevent_get_input(w->bev);
	char buf[WLINK_READ_CHUNK];
	const char *line;
	size_t len;
	int n, rc;

	while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
		proto_lines_feed(w->lines, buf, (size_t)n);
		while ((rc = proto_lines_next(w->lines, &line, &len)) != 0) {
			if (rc == -E2BIG)
				log_warn("VM '%s': over-long line from the "
				    "worker dropped", w->name);
			else
				wlink_line(w, line, len);
			/* A callback may not free w: only the exited
			 * callback does, from the SIGCHLD handler. */
			if (w->bev == NULL)
				return;
		}
	}
}

static void
wlink_read_cb(struct bufferevent *bev, void *arg)
{
	wlink_read_input(arg);
}

static void
wlink_write_cb(struct bufferevent *bev, void *arg)
{
	struct wlink *w = arg;

	if (!TAILQ_EMPTY(&w->fdq))
		wlink_flush_fdq(w);
}

static void
wlink_fdmsg_close(struct wlink_fdmsg *m)
{
	for (unsigned int i = 0; i < m->nfd; i++)
		close(m->fd[i]);
	m->nfd = 0;
}

static void
wlink_close_channel(struct wlink *w)
{
	struct wlink_fdmsg *m;

	while ((m = TAILQ_FIRST(&w->fdq)) != NULL) {
		TAILQ_REMOVE(&w->fdq, m, entry);
		wlink_request_unsent(w, m->id);
		wlink_fdmsg_close(m);
		free(m->line);
		free(m);
	}
	if (w->fdq_ev != NULL) {
		event_free(w->fdq_ev);
		w->fdq_ev = NULL;
	}
	if (w->bev != NULL) {
		bufferevent_free(w->bev);
		w->bev = NULL;
	}
}

static void
wlink_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct wlink *w = arg;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	/* Replies that came with the EOF still count. */
	wlink_read_input(w);
	if (w->bev == NULL)
		return;
	log_debug("VM '%s': worker closed its socket", w->name);
	wlink_close_channel(w);
	w->ops->hangup(w->owner);
}

bool
wlink_connected(const struct wlink *w)
{
	return w->bev != NULL;
}

/* Fd passing ----------------------------------------------------------- */

static void
wlink_fdq_cb(evutil_socket_t fd, short what, void *arg)
{
	wlink_flush_fdq(arg);
}

static void
wlink_flush_fdq(struct wlink *w)
{
	char cbuf[CMSG_SPACE(WMSG_REQ_FDS_MAX * sizeof(int))];
	struct wlink_fdmsg *m;
	struct cmsghdr *cmsg;
	struct msghdr mh;
	struct iovec iov;
	ssize_t n;

	while (w->bev != NULL && (m = TAILQ_FIRST(&w->fdq)) != NULL) {
		/* Only between two complete lines of the byte stream. */
		if (evbuffer_get_length(bufferevent_get_output(w->bev)) != 0)
			return;		/* wlink_write_cb() calls again */

		memset(&mh, 0, sizeof(mh));
		memset(cbuf, 0, sizeof(cbuf));
		iov.iov_base = m->line;
		iov.iov_len = m->len;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(m->nfd * sizeof(int));
		cmsg = CMSG_FIRSTHDR(&mh);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(m->nfd * sizeof(int));
		memcpy(CMSG_DATA(cmsg), m->fd, m->nfd * sizeof(int));

		n = sendmsg(w->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				event_add(w->fdq_ev, NULL);
				return;
			}
			/* A worker that just exited: its owner answers. */
			if (errno == EPIPE || errno == ECONNRESET)
				log_debug("VM '%s': passing a descriptor: %s",
				    w->name, strerror(errno));
			else
				log_warn("VM '%s': passing a descriptor: %s",
				    w->name, strerror(errno));
			/* The request's callback fires when the worker
			 * exits, knowing that it never got this. */
			wlink_request_unsent(w, m->id);
		} else if ((size_t)n < m->len) {
			/* The descriptor went with the first byte; the rest
			 * of the line follows through the bufferevent. */
			bufferevent_write(w->bev, m->line + n,
			    m->len - (size_t)n);
		}
		TAILQ_REMOVE(&w->fdq, m, entry);
		wlink_fdmsg_close(m);
		free(m->line);
		free(m);
	}
}

/* The deadline --------------------------------------------------------- */

static void
wlink_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wlink *w = arg;

	w->ops->deadline(w->owner);
}

void
wlink_deadline_set(struct wlink *w, unsigned int seconds)
{
	struct timeval tv = { seconds, 0 };

	evtimer_del(w->timer);
	evtimer_add(w->timer, &tv);
}

void
wlink_deadline_clear(struct wlink *w)
{
	evtimer_del(w->timer);
}

bool
wlink_deadline_left(struct wlink *w, struct timeval *left)
{
	struct timeval now;

	if (!evtimer_pending(w->timer, left))
		return false;
	event_base_gettimeofday_cached(w->reaper->base, &now);
	timersub(left, &now, left);
	return true;
}

/* Spawning ------------------------------------------------------------- */

void
wlink_free(struct wlink *w)
{
	if (w == NULL)
		return;
	wlink_close_channel(w);
	if (w->report_fd >= 0)
		close(w->report_fd);
	if (w->timer != NULL)
		event_free(w->timer);
	if (w->kill_retry != NULL)
		event_free(w->kill_retry);
	if (w->pidfd_ev != NULL)
		event_free(w->pidfd_ev);
	if (w->pidfd >= 0)
		close(w->pidfd);
	proto_lines_free(w->lines);
	free(w->name);
	free(w);
}

pid_t
wlink_pid(const struct wlink *w)
{
	return w->pid;
}

enum worker_kill
wlink_killed(const struct wlink *w)
{
	return w->kill;
}

/* SIGKILL to the worker: 0 (also when it is gone already) or -errno. */
static int
wlink_signal_kill(struct wlink *w)
{
	int ret;

	/* Not reaped yet (we reap it), so the pid is still ours; an
	 * adopted worker's pid is not, its pidfd is. */
	if (w->pidfd >= 0)
		ret = (int)syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL,
		    NULL, 0);
	else
		ret = kill(w->pid, SIGKILL);
	return ret < 0 && errno != ESRCH ? -errno : 0;
}

/*
 * A kill that failed is an error, logged each time, and tried again
 * every WLINK_KILL_RETRY_S seconds until it goes through or the worker
 * is reaped: nothing else would end the worker, and the VM would stay
 * stopping for good.
 */
void
wlink_kill(struct wlink *w, enum worker_kill why)
{
	struct timeval tv = { WLINK_KILL_RETRY_S, 0 };
	int ret;

	if (w->kill != WORKER_KILL_NONE || w->reaped)
		return;
	evtimer_del(w->timer);
	log_debug("VM '%s': SIGKILL to worker %ld", w->name, (long)w->pid);
	if ((ret = wlink_signal_kill(w)) < 0) {
		log_error("VM '%s': cannot kill worker %ld: %s%s; trying again "
		    "every %d s", w->name, (long)w->pid, strerror(-ret),
		    ret == -EPERM ? " (vmmd needs CAP_KILL: the workers run "
		    "as another user)" : "", WLINK_KILL_RETRY_S);
		w->kill_wanted = why;
		evtimer_add(w->kill_retry, &tv);
		return;
	}
	w->kill = why;
	w->kill_wanted = WORKER_KILL_NONE;
	evtimer_del(w->kill_retry);
}

static void
wlink_kill_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wlink *w = arg;

	if (w->kill_wanted != WORKER_KILL_NONE)
		wlink_kill(w, w->kill_wanted);
}

/*
 * The lowest uid of the reaper's range that no worker of ours runs as,
 * spawned or adopted, until it is reaped (its every thread gone); 0 if
 * all are taken.  Linear in the guests running, at each start.
 */
static uid_t
wlink_free_uid(const struct wlink_reaper *r)
{
	const struct wlink *w;
	uid_t uid;

	for (uid = r->uid_first; uid != 0 && uid <= r->uid_last; uid++) {
		TAILQ_FOREACH(w, &r->links, rentry)
			if (w->uid == uid)
				break;
		if (w == NULL)
			return uid;
	}
	return 0;
}

/* A link with no worker yet; NULL when out of memory. */
static struct wlink *
wlink_alloc(struct wlink_reaper *r, const char *name,
    const struct wlink_ops *ops, void *owner)
{
	struct wlink *w;

	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->reaper = r;
	w->ops = ops;
	w->owner = owner;
	w->fd = -1;
	w->pidfd = -1;
	w->report_fd = -1;
	TAILQ_INIT(&w->reqs);
	TAILQ_INIT(&w->fdq);
	w->name = strdup(name);
	w->lines = proto_lines_new(WLINK_MAX_LINE);
	w->timer = evtimer_new(r->base, wlink_timer_cb, w);
	w->kill_retry = evtimer_new(r->base, wlink_kill_retry_cb, w);
	if (w->name == NULL || w->lines == NULL || w->timer == NULL ||
	    w->kill_retry == NULL) {
		wlink_free(w);
		return NULL;
	}
	return w;
}

/* Take fd (our end of the channel) into a bufferevent; -ENOMEM. */
static int
wlink_channel(struct wlink *w, int fd)
{
	evutil_make_socket_nonblocking(fd);
	w->bev = bufferevent_socket_new(w->reaper->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (w->bev == NULL) {
		close(fd);
		return -ENOMEM;
	}
	w->fd = fd;
	w->fdq_ev = event_new(w->reaper->base, fd, EV_WRITE, wlink_fdq_cb, w);
	return w->fdq_ev != NULL ? 0 : -ENOMEM;
}

/* The worker runs: serve its channel and count it until it is reaped. */
static void
wlink_enlist(struct wlink *w)
{
	bufferevent_setcb(w->bev, wlink_read_cb, wlink_write_cb,
	    wlink_event_cb, w);
	bufferevent_enable(w->bev, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&w->reaper->links, w, rentry);
	w->reaper->count++;
}

int
wlink_spawn(struct wlink_reaper *r, const char *path, const char *name,
    int adopt_fd, const int *passed, unsigned int npassed,
    const struct wlink_ops *ops, void *owner, struct wlink **wp, char *err,
    size_t errlen)
{
	struct wlink *w;
	char *argv[12], channel_arg[12], report_arg[12], uid_arg[12];
	int sv[2], report[2], rc, ac;
	pid_t pid;

	*wp = NULL;
	if (npassed > WLINK_MAX_PASSED) {
		snprintf(err, errlen, "too many descriptors for the worker");
		return -EINVAL;
	}
	w = wlink_alloc(r, name, ops, owner);
	if (w == NULL)
		goto nomem;
	if (r->uid_first != 0 && (w->uid = wlink_free_uid(r)) == 0) {
		snprintf(err, errlen, "no uid left for another guest: all %u "
		    "of worker_uids %u-%u run one (vmmd.conf(5))",
		    (unsigned int)(r->uid_last - r->uid_first + 1),
		    (unsigned int)r->uid_first, (unsigned int)r->uid_last);
		rc = -EAGAIN;
		goto free_link_rc;
	}

	/* Non-blocking at both ends: the worker writes a few bytes into
	 * an empty pipe, we read them once it is reaped. */
	if (pipe2(report, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(-rc));
		goto free_link_rc;
	}
	w->report_fd = report[0];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(-rc));
		close(report[1]);
		goto free_link_rc;
	}
	/* Everything that can fail before the fork, so that a worker
	 * that runs always has a working link. */
	if (wlink_channel(w, sv[0]) < 0)
		goto close_child_end;

	snprintf(channel_arg, sizeof(channel_arg), "%d", WLINK_CHANNEL_FD);
	snprintf(report_arg, sizeof(report_arg), "%d", WLINK_REPORT_FD);
	ac = 0;
	argv[ac++] = (char *)WLINK_PROGRAM;
	argv[ac++] = (char *)"-c";
	argv[ac++] = channel_arg;
	argv[ac++] = (char *)"-r";
	argv[ac++] = report_arg;
	if (r->unconfined)
		argv[ac++] = (char *)"-U";
	if (w->uid != 0) {
		snprintf(uid_arg, sizeof(uid_arg), "%u", (unsigned int)w->uid);
		argv[ac++] = (char *)"-u";
		argv[ac++] = uid_arg;
	}
	argv[ac++] = (char *)"-n";
	argv[ac++] = w->name;
	argv[ac] = NULL;

	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(-rc));
		close(sv[1]);
		close(report[1]);
		goto free_link_rc;
	}
	if (pid == 0)
		wexec_child(sv[1], adopt_fd, report[1], passed, npassed, path,
		    argv);
	close(sv[1]);
	close(report[1]);
	w->pid = pid;
	wlink_enlist(w);
	if (w->uid != 0)
		log_info("VM '%s': worker %ld started (%s, uid %u)", name,
		    (long)pid, path, (unsigned int)w->uid);
	else
		log_info("VM '%s': worker %ld started (%s)", name, (long)pid,
		    path);
	*wp = w;
	return 0;

close_child_end:
	close(sv[1]);
	close(report[1]);
	rc = -ENOMEM;
	snprintf(err, errlen, "out of memory");
free_link_rc:
	wlink_free(w);
	return rc;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static void wlink_reaped(struct wlink *w, int status);

/*
 * An adopted worker has exited: the pidfd says so, but the status is
 * its parent's (init's) to collect.  What we know instead: the status
 * its worker.exit event gave, or the SIGKILL we sent; else nothing.
 */
static void
wlink_pidfd_cb(evutil_socket_t fd, short what, void *arg)
{
	wlink_reaped(arg, 0);
}

int
wlink_adopt(struct wlink_reaper *r, int fd, int pidfd, pid_t pid,
    uid_t uid, const char *name, uint64_t next_id,
    const struct wlink_ops *ops, void *owner, struct wlink **wp)
{
	struct wlink *w;

	*wp = NULL;
	w = wlink_alloc(r, name, ops, owner);
	if (w == NULL) {
		close(fd);
		close(pidfd);
		return -ENOMEM;
	}
	w->pidfd = pidfd;
	w->pid = pid;
	/* Kept from the next start on, if it is one of ours. */
	if (r->uid_first != 0 && uid >= r->uid_first && uid <= r->uid_last)
		w->uid = uid;
	w->next_id = next_id;
	w->pidfd_ev = event_new(r->base, pidfd, EV_READ, wlink_pidfd_cb, w);
	if (wlink_channel(w, fd) < 0 || w->pidfd_ev == NULL ||
	    event_add(w->pidfd_ev, NULL) < 0) {
		wlink_free(w);
		return -ENOMEM;
	}
	wlink_enlist(w);
	log_info("VM '%s': worker %ld adopted", name, (long)pid);
	*wp = w;
	return 0;
}

void
wlink_release(struct wlink *w)
{
	if (!w->reaped) {
		TAILQ_REMOVE(&w->reaper->links, w, rentry);
		w->reaper->count--;
	}
	/* The worker may have read them: lost, as in a crash of ours. */
	wlink_close_channel(w);
	wlink_fail_requests(w, "vmmd let go of the worker", false);
	log_info("VM '%s': worker %ld left running", w->name, (long)w->pid);
	wlink_free(w);
}

bool
wlink_adopted(const struct wlink *w)
{
	return w->pidfd >= 0;
}

/* Reaping -------------------------------------------------------------- */

/* What the worker's sandbox said before it died: a system call's name. */
static void
wlink_read_violation(struct wlink *w)
{
	ssize_t n;
	size_t i;

	if (w->report_fd < 0)
		return;
	n = read(w->report_fd, w->violation, sizeof(w->violation) - 1);
	w->violation[n > 0 ? n : 0] = '\0';
	/* Keep it printable: it goes into replies and logs. */
	for (i = 0; w->violation[i] != '\0'; i++)
		if (!((w->violation[i] >= 'a' && w->violation[i] <= 'z') ||
		    (w->violation[i] >= '0' && w->violation[i] <= '9') ||
		    w->violation[i] == '_' || w->violation[i] == '#'))
			w->violation[i] = '?';
	close(w->report_fd);
	w->report_fd = -1;
}

const char *
wlink_violation(const struct wlink *w)
{
	return w->violation[0] != '\0' ? w->violation : NULL;
}

static void
wlink_reaped(struct wlink *w, int status)
{
	struct wlink_reaper *r = w->reaper;
	char how[128], desc[160];

	w->reaped = true;
	TAILQ_REMOVE(&r->links, w, rentry);
	r->count--;
	evtimer_del(w->timer);
	if (w->pidfd_ev != NULL)
		event_del(w->pidfd_ev);
	/* A worker that replied and exited at once: read what it said
	 * (an adopted one's worker.exit event among it). */
	if (w->bev != NULL) {
		struct evbuffer *in = bufferevent_get_input(w->bev);

		while (evbuffer_read(in, w->fd, WLINK_READ_CHUNK) > 0)
			;
		wlink_read_input(w);
	}
	wlink_read_violation(w);
	if (w->pidfd < 0)
		w->status_known = true;		/* waitpid()'s */
	else if (w->exit_known) {
		status = w->exit_code << 8;	/* as WIFEXITED */
		w->status_known = true;
	} else if (w->kill != WORKER_KILL_NONE) {
		status = SIGKILL;		/* as WIFSIGNALED */
		w->status_known = true;
	}
	if (w->status_known)
		worker_exit_describe(status, how, sizeof(how));
	else
		snprintf(how, sizeof(how), "status unknown: not a child of "
		    "this vmmd");
	log_info("VM '%s': worker %ld exited (%s)", w->name, (long)w->pid,
	    how);
	if (w->violation[0] != '\0')
		log_warn("VM '%s': the worker's sandbox refused the system "
		    "call %s", w->name, w->violation);
	/* Requests the worker will never answer. */
	snprintf(desc, sizeof(desc), "worker exited (%s)", how);
	wlink_fail_requests(w, desc, WIFEXITED(status));
	w->ops->exited(w->owner, status);
}

bool
wlink_is_reaped(const struct wlink *w)
{
	return w->reaped;
}

bool
wlink_status_known(const struct wlink *w)
{
	return w->status_known;
}

void
wlink_kill_wait(struct wlink *w, enum worker_kill why)
{
	struct pollfd pfd = { .fd = w->pidfd, .events = POLLIN };
	int status = 0;

	wlink_kill(w, why);
	if (w->kill == WORKER_KILL_NONE)
		return;		/* refused, and said so: waiting would hang */
	if (w->pidfd >= 0) {
		while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
			;
		wlink_reaped(w, 0);
		return;
	}
	while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
		;
	wlink_reaped(w, status);
}

static void
wlink_sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
	struct wlink_reaper *r = arg;
	struct wlink *w;
	int status;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		TAILQ_FOREACH(w, &r->links, rentry)
			if (w->pid == pid)
				break;
		if (w == NULL) {
			log_debug("reaped unknown child %ld", (long)pid);
			continue;
		}
		wlink_reaped(w, status);
	}
}

struct wlink_reaper *
wlink_reaper_new(struct event_base *base)
{
	struct wlink_reaper *r;

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->base = base;
	TAILQ_INIT(&r->links);
	r->sigchld_ev = evsignal_new(base, SIGCHLD, wlink_sigchld_cb, r);
	if (r->sigchld_ev == NULL)
		goto free_reaper;
	if (evsignal_add(r->sigchld_ev, NULL) < 0)
		goto free_event;
	return r;

free_event:
	event_free(r->sigchld_ev);
free_reaper:
	free(r);
	return NULL;
}

void
wlink_reaper_set_unconfined(struct wlink_reaper *r, bool unconfined)
{
	r->unconfined = unconfined;
}

void
wlink_reaper_set_uids(struct wlink_reaper *r, uid_t first, uid_t last)
{
	r->uid_first = first;
	r->uid_last = first != 0 ? last : 0;
}

uid_t
wlink_uid(const struct wlink *w)
{
	return w->uid;
}

void
wlink_reaper_free(struct wlink_reaper *r)
{
	if (r == NULL)
		return;
	event_free(r->sigchld_ev);
	free(r);
}

unsigned int
wlink_reaper_count(const struct wlink_reaper *r)
{
	return r->count;
}
