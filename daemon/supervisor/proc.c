/*
 * VMs and their worker processes.
 *
 * Starting a guest forks and execs vmmd-worker with one end of a
 * socketpair as fd 3, and the kernel and initrd as fds 4 and 5: the
 * supervisor opens them itself, after checking that the client who
 * asked may read them, and the worker loads them from /proc/self/fd/N,
 * so that what is loaded, at boot and at every reset of the guest, is
 * what was checked, whatever the paths name by then.  The supervisor
 * then speaks the control protocol to the worker: it sends requests
 * with ids of its own (worker.boot first) and the worker answers them
 * and sends events.  A worker's life ends when SIGCHLD is reaped; only
 * then is the VM's new state known for sure, so replies that depend on
 * it (vm.stop, a failed vm.start) are completed from there.
 *
 * Client connections for vm.console are passed to the worker as
 * SCM_RIGHTS on a worker.console request.  The socket is otherwise
 * written through a bufferevent, so fd-carrying messages wait in a queue
 * until the bufferevent's output is empty and are then written with one
 * sendmsg(): the byte stream never interleaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "access.h"
#include "boot.h"
#include "config.h"
#include "control.h"
#include "log.h"
#include "proc.h"

#define WORKER_NAME		"vmmd-worker"
#define WORKER_FD		3	/* the worker's end of the socketpair */
#define WORKER_KERNEL_FD	4	/* the kernel, opened by us */
#define WORKER_INITRD_FD	5	/* the initrd, if any */
#define WORKER_EOF_GRACE	2	/* s between EOF and SIGKILL */
#define WORKER_READ_CHUNK	16384
#define WORKER_MAX_LINE		(1024 * 1024)	/* worker.info can be big */

/* Why the supervisor sent SIGKILL, which decides the final state. */
enum worker_kill {
	KILL_NONE,
	KILL_STOP_FORCE,	/* vm.stop force/timeout 0 → stopped */
	KILL_STOP_TIMEOUT,	/* vm.stop timed out → stopped */
	KILL_BOOT_FAILED,	/* worker.boot answered an error */
	KILL_BOOT_TIMEOUT,	/* no worker.boot answer in time → crashed */
	KILL_EOF,		/* worker closed its socket → crashed */
	KILL_DAEMON_EXIT,	/* vmmd is stopping → stopped */
};

struct wreq {
	TAILQ_ENTRY(wreq) entry;
	uint64_t id;
	worker_reply_cb cb;
	void *arg;
};
TAILQ_HEAD(wreq_list, wreq);

/* A message that carries a file descriptor, waiting for its turn. */
struct fdmsg {
	TAILQ_ENTRY(fdmsg) entry;
	char *line;
	size_t len;
	int fd;
};
TAILQ_HEAD(fdmsg_list, fdmsg);

struct worker {
	struct vm *vm;
	pid_t pid;
	int fd;				/* supervisor's end; owned by bev */
	struct bufferevent *bev;	/* NULL after EOF */
	struct proto_lines *lines;
	uint64_t next_id;
	struct wreq_list reqs;
	struct fdmsg_list fdq;
	struct event *fdq_ev;		/* waits for room after EAGAIN */
	struct event *timer;		/* boot timeout, stop timeout, EOF */
	enum worker_kill kill;
	bool killed;			/* SIGKILL sent */
	bool reaped;			/* pid is no longer ours to signal */
	bool booted;			/* worker.boot answered {} */
	bool stop_requested;
	struct json_object *boot_error;	/* worker.boot's error object */
};

static const char *const vm_state_names[] = {
	[VM_DEFINED] = "defined",
	[VM_STARTING] = "starting",
	[VM_RUNNING] = "running",
	[VM_PAUSED] = "paused",
	[VM_STOPPING] = "stopping",
	[VM_STOPPED] = "stopped",
	[VM_CRASHED] = "crashed",
};

static void worker_flush_fdq(struct worker *w);
static void worker_console_reply(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg);
static void worker_kill(struct worker *w, enum worker_kill why);

const char *
vm_state_name(enum vm_state s)
{
	if ((unsigned int)s >=
	    sizeof(vm_state_names) / sizeof(vm_state_names[0]))
		return "unknown";
	return vm_state_names[s];
}

/* Registry ------------------------------------------------------------- */

struct vm *
vm_find(struct vmmd *d, const char *name)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (strcmp(vm->def->name, name) == 0)
			return vm;
	return NULL;
}

struct vm *
vm_add(struct vmmd *d, struct vm_def *def)
{
	struct vm *vm, *it;

	vm = calloc(1, sizeof(*vm));
	if (vm == NULL) {
		config_def_free(def);
		return NULL;
	}
	vm->d = d;
	vm->def = def;
	vm->state = VM_DEFINED;
	TAILQ_INIT(&vm->stop_waiters);
	/* Kept sorted: vm.list answers in name order. */
	TAILQ_FOREACH(it, &d->vms, entry)
		if (strcmp(it->def->name, def->name) > 0)
			break;
	if (it != NULL)
		TAILQ_INSERT_BEFORE(it, vm, entry);
	else
		TAILQ_INSERT_TAIL(&d->vms, vm, entry);
	return vm;
}

void
vm_remove(struct vm *vm)
{
	struct pending *p;

	if (vm == NULL)
		return;
	/* Callers only remove VMs without a worker, so nothing waits. */
	if (vm->start_waiter != NULL)
		pending_error(vm->start_waiter, PROTO_ERR_INTERNAL,
		    "VM removed");
	while ((p = TAILQ_FIRST(&vm->stop_waiters)) != NULL) {
		TAILQ_REMOVE(&vm->stop_waiters, p, entry);
		pending_error(p, PROTO_ERR_INTERNAL, "VM removed");
	}
	TAILQ_REMOVE(&vm->d->vms, vm, entry);
	config_def_free(vm->def);
	free(vm);
}

bool
vm_has_worker(const struct vm *vm)
{
	return vm->w != NULL;
}

pid_t
vm_pid(const struct vm *vm)
{
	return vm->w != NULL ? vm->w->pid : 0;
}

struct json_object *
vm_to_json(const struct vm *vm)
{
	struct json_object *obj;

	obj = config_to_json(vm->def);
	if (obj == NULL)
		return NULL;
	json_object_object_add(obj, "state",
	    json_object_new_string(vm_state_name(vm->state)));
	if (vm->w != NULL)
		json_object_object_add(obj, "pid",
		    json_object_new_int64(vm->w->pid));
	return obj;
}

void
vm_set_state(struct vm *vm, enum vm_state s, const char *reason)
{
	struct json_object *data;

	if (vm->state == s)
		return;
	log_info("VM '%s': %s -> %s%s%s", vm->def->name,
	    vm_state_name(vm->state), vm_state_name(s),
	    reason != NULL ? ": " : "", reason != NULL ? reason : "");
	vm->state = s;
	data = json_object_new_object();
	if (data == NULL)
		return;
	json_object_object_add(data, "state",
	    json_object_new_string(vm_state_name(s)));
	if (reason != NULL)
		json_object_object_add(data, "reason",
		    json_object_new_string(reason));
	control_broadcast(vm->d->ctl, proto_event("vm.state", vm->def->name,
	    data));
}

/* The worker binary ---------------------------------------------------- */

const char *
proc_worker_path(struct vmmd *d)
{
	if (d->worker_self != NULL && access(d->worker_self, X_OK) == 0)
		return d->worker_self;
	if (access(VMMD_LIBEXECDIR "/" WORKER_NAME, X_OK) == 0)
		return VMMD_LIBEXECDIR "/" WORKER_NAME;
	return NULL;
}

/* Talking to the worker ------------------------------------------------ */

static int
worker_send(struct worker *w, struct json_object *msg)
{
	char *line;
	size_t len;
	int rc = 0;

	if (w->bev == NULL) {
		json_object_put(msg);
		return -EPIPE;
	}
	line = proto_serialize(msg, &len);
	json_object_put(msg);
	if (line == NULL)
		return -ENOMEM;
	if (bufferevent_write(w->bev, line, len) < 0)
		rc = -ENOMEM;
	free(line);
	return rc;
}

/* Build a request with a fresh id and register its callback. */
static struct json_object *
worker_request_new(struct worker *w, const char *command,
    struct json_object *args, worker_reply_cb cb, void *arg)
{
	struct json_object *msg;
	struct wreq *r;

	r = calloc(1, sizeof(*r));
	msg = json_object_new_object();
	if (r == NULL || msg == NULL) {
		free(r);
		json_object_put(msg);
		json_object_put(args);
		return NULL;
	}
	r->id = ++w->next_id;
	r->cb = cb;
	r->arg = arg;
	TAILQ_INSERT_TAIL(&w->reqs, r, entry);
	json_object_object_add(msg, "id",
	    json_object_new_int64((int64_t)r->id));
	json_object_object_add(msg, "command", json_object_new_string(command));
	json_object_object_add(msg, "arguments",
	    args != NULL ? args : json_object_new_object());
	return msg;
}

/* Forget a request that could not be sent (no callback runs). */
static void
worker_request_drop(struct worker *w, uint64_t id)
{
	struct wreq *r;

	TAILQ_FOREACH(r, &w->reqs, entry)
		if (r->id == id) {
			TAILQ_REMOVE(&w->reqs, r, entry);
			free(r);
			return;
		}
}

static uint64_t
worker_msg_id(struct json_object *msg)
{
	struct json_object *v;

	json_object_object_get_ex(msg, "id", &v);
	return (uint64_t)json_object_get_int64(v);
}

int
vm_worker_request(struct vm *vm, const char *command,
    struct json_object *args, worker_reply_cb cb, void *arg)
{
	struct json_object *msg;
	struct worker *w = vm->w;
	uint64_t id;
	int rc;

	if (w == NULL || w->bev == NULL) {
		json_object_put(args);
		return -EPIPE;
	}
	msg = worker_request_new(w, command, args, cb, arg);
	if (msg == NULL)
		return -ENOMEM;
	id = worker_msg_id(msg);
	rc = worker_send(w, msg);
	if (rc < 0)
		worker_request_drop(w, id);
	return rc;
}

static void
worker_reply(struct worker *w, struct json_object *msg)
{
	struct json_object *v, *ret = NULL, *error = NULL;
	struct wreq *r;
	int64_t id;

	if (!json_object_object_get_ex(msg, "id", &v) ||
	    !json_object_is_type(v, json_type_int)) {
		log_warn("VM '%s': worker reply without a valid id",
		    w->vm->def->name);
		return;
	}
	id = json_object_get_int64(v);
	TAILQ_FOREACH(r, &w->reqs, entry)
		if ((int64_t)r->id == id)
			break;
	if (r == NULL) {
		log_warn("VM '%s': worker reply to unknown request %lld",
		    w->vm->def->name, (long long)id);
		return;
	}
	TAILQ_REMOVE(&w->reqs, r, entry);
	if (!json_object_object_get_ex(msg, "return", &ret) || ret == NULL) {
		ret = NULL;
		if (!json_object_object_get_ex(msg, "error", &error) ||
		    error == NULL)
			error = NULL;
	}
	if (ret == NULL && error == NULL) {
		struct json_object *e = proto_error(NULL, PROTO_ERR_INTERNAL,
		    "malformed reply from the worker");

		json_object_object_get_ex(e, "error", &error);
		r->cb(w->vm, NULL, error, r->arg);
		json_object_put(e);
	} else
		r->cb(w->vm, ret, error, r->arg);
	free(r);
}

static void
worker_event(struct worker *w, struct json_object *msg)
{
	struct vm *vm = w->vm;
	struct json_object *v, *data = NULL, *st;
	const char *event, *state;

	event = json_object_get_string(json_object_object_get(msg, "event"));
	json_object_object_get_ex(msg, "data", &data);
	if (strcmp(event, "vm.state") == 0) {
		if (data == NULL || !json_object_object_get_ex(data, "state",
		    &st) || !json_object_is_type(st, json_type_string))
			return;
		state = json_object_get_string(st);
		/* Only the running/paused toggle is the worker's to report;
		 * starting and stopping are the supervisor's. */
		if (strcmp(state, "running") == 0 && (vm->state == VM_PAUSED ||
		    (vm->state == VM_STARTING && w->booted)))
			vm_set_state(vm, VM_RUNNING, NULL);
		else if (strcmp(state, "paused") == 0 &&
		    vm->state == VM_RUNNING)
			vm_set_state(vm, VM_PAUSED, NULL);
		return;
	}
	if (strcmp(event, "vm.reboot") == 0) {
		const char *reason = "unknown";

		if (data != NULL && json_object_object_get_ex(data, "reason",
		    &v) && json_object_is_type(v, json_type_string))
			reason = json_object_get_string(v);
		log_info("VM '%s': guest reset (%s)", vm->def->name, reason);
	}
	/* Everything else is passed on as it is, named after the VM. */
	control_broadcast(vm->d->ctl, proto_event(event, vm->def->name,
	    json_object_get(data)));
}

static void
worker_line(struct worker *w, const char *line, size_t len)
{
	struct json_object *msg, *v;
	char desc[256];

	if (proto_parse_object(line, len, &msg, desc, sizeof(desc)) != 0) {
		log_warn("VM '%s': bad line from the worker: %s",
		    w->vm->def->name, desc);
		return;
	}
	if (json_object_object_get_ex(msg, "event", &v) &&
	    json_object_is_type(v, json_type_string))
		worker_event(w, msg);
	else if (json_object_object_get_ex(msg, "greeting", &v))
		;	/* allowed, carries nothing we need */
	else
		worker_reply(w, msg);
	json_object_put(msg);
}

/* Feed whatever is in the input buffer through the framer. */
static void
worker_read_input(struct worker *w)
{
	struct evbuffer *in = bufferevent_get_input(w->bev);
	char buf[WORKER_READ_CHUNK];
	const char *line;
	size_t len;
	int n, rc;

	while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
		proto_lines_feed(w->lines, buf, (size_t)n);
		while ((rc = proto_lines_next(w->lines, &line, &len)) != 0) {
			if (rc == -E2BIG)
				log_warn("VM '%s': over-long line from the "
				    "worker dropped", w->vm->def->name);
			else
				worker_line(w, line, len);
			/* A reply callback may not free w: worker_exited()
			 * only runs from the SIGCHLD handler. */
			if (w->bev == NULL)
				return;
		}
	}
}

static void
worker_read_cb(struct bufferevent *bev, void *arg)
{
	worker_read_input(arg);
}

static void
worker_write_cb(struct bufferevent *bev, void *arg)
{
	struct worker *w = arg;

	if (!TAILQ_EMPTY(&w->fdq))
		worker_flush_fdq(w);
}

static void
worker_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	if (w->vm->state == VM_STOPPING)
		worker_kill(w, w->kill == KILL_DAEMON_EXIT ?
		    KILL_DAEMON_EXIT : KILL_STOP_TIMEOUT);
	else if (w->bev == NULL)
		worker_kill(w, KILL_EOF);
	else if (w->vm->state == VM_STARTING)
		worker_kill(w, KILL_BOOT_TIMEOUT);
}

static void
worker_close_channel(struct worker *w)
{
	struct fdmsg *m;

	while ((m = TAILQ_FIRST(&w->fdq)) != NULL) {
		TAILQ_REMOVE(&w->fdq, m, entry);
		close(m->fd);
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
worker_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct worker *w = arg;
	struct timeval tv = { WORKER_EOF_GRACE, 0 };

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	/* Replies that came with the EOF still count. */
	worker_read_input(w);
	if (w->bev == NULL)
		return;
	log_debug("VM '%s': worker closed its socket", w->vm->def->name);
	worker_close_channel(w);
	/* An exiting worker is reaped in a moment; one that lives on
	 * without its socket is useless and gets killed.  A stopping one
	 * keeps its stop deadline. */
	if (!w->killed && w->vm->state != VM_STOPPING) {
		evtimer_del(w->timer);
		evtimer_add(w->timer, &tv);
	}
}

/* Fd passing ----------------------------------------------------------- */

static void
worker_fdq_cb(evutil_socket_t fd, short what, void *arg)
{
	worker_flush_fdq(arg);
}

static void
worker_flush_fdq(struct worker *w)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr *cmsg;
	struct msghdr mh;
	struct iovec iov;
	struct fdmsg *m;
	ssize_t n;

	while (w->bev != NULL && (m = TAILQ_FIRST(&w->fdq)) != NULL) {
		/* Only between two complete lines of the byte stream. */
		if (evbuffer_get_length(bufferevent_get_output(w->bev)) != 0)
			return;		/* worker_write_cb() calls again */

		memset(&mh, 0, sizeof(mh));
		memset(cbuf, 0, sizeof(cbuf));
		iov.iov_base = m->line;
		iov.iov_len = m->len;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cmsg = CMSG_FIRSTHDR(&mh);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &m->fd, sizeof(int));

		n = sendmsg(w->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				event_add(w->fdq_ev, NULL);
				return;
			}
			log_warn("VM '%s': passing a console connection: %s",
			    w->vm->def->name, strerror(errno));
			/* The request's callback fires when the worker
			 * exits; the client just sees its socket close. */
		} else if ((size_t)n < m->len) {
			/* The descriptor went with the first byte; the rest
			 * of the line follows through the bufferevent. */
			bufferevent_write(w->bev, m->line + n,
			    m->len - (size_t)n);
		}
		TAILQ_REMOVE(&w->fdq, m, entry);
		close(m->fd);
		free(m->line);
		free(m);
	}
}

int
vm_console_pass(struct vm *vm, int fd, struct json_object *id,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct worker *w = vm->w;
	struct json_object *args, *msg;
	struct fdmsg *m;
	uint64_t rid;

	if (w == NULL || w->bev == NULL ||
	    (vm->state != VM_RUNNING && vm->state != VM_PAUSED)) {
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "VM '%s' is %s", vm->def->name,
		    vm_state_name(vm->state));
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	args = json_object_new_object();
	if (m == NULL || args == NULL) {
		free(m);
		json_object_put(args);
		goto nomem;
	}
	json_object_object_add(args, "client_id", json_object_get(id));
	msg = worker_request_new(w, "worker.console", args,
	    worker_console_reply, NULL);
	if (msg == NULL) {
		free(m);
		goto nomem;
	}
	rid = worker_msg_id(msg);
	m->line = proto_serialize(msg, &m->len);
	json_object_put(msg);
	m->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (m->line == NULL || m->fd < 0) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "cannot pass the connection: %s",
		    m->fd < 0 ? strerror(errno) : "out of memory");
		if (m->fd >= 0)
			close(m->fd);
		free(m->line);
		free(m);
		worker_request_drop(w, rid);
		return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&w->fdq, m, entry);
	worker_flush_fdq(w);
	return 0;

nomem:
	*cls = PROTO_ERR_INTERNAL;
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

static void
worker_console_reply(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error != NULL)
		log_warn("VM '%s': console handover failed: %s", vm->def->name,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
}

/* Spawning ------------------------------------------------------------- */

static void
worker_free(struct worker *w)
{
	if (w == NULL)
		return;
	worker_close_channel(w);
	if (w->timer != NULL)
		event_free(w->timer);
	proto_lines_free(w->lines);
	json_object_put(w->boot_error);
	free(w);
}

static void
worker_kill(struct worker *w, enum worker_kill why)
{
	if (w->killed || w->reaped)
		return;
	w->kill = why;
	w->killed = true;
	evtimer_del(w->timer);
	log_debug("VM '%s': SIGKILL to worker %ld", w->vm->def->name,
	    (long)w->pid);
	/* Not reaped yet (we reap it), so the pid is still ours. */
	if (kill(w->pid, SIGKILL) < 0)
		log_warn("VM '%s': kill %ld: %s", w->vm->def->name,
		    (long)w->pid, strerror(errno));
}

/*
 * Between fork and exec only async-signal-safe calls: the child
 * inherited a copy of an event loop it must not touch.
 *
 * The worker gets sock as WORKER_FD, then the kernel and (if any) the
 * initrd as WORKER_KERNEL_FD and WORKER_INITRD_FD, and no other
 * descriptor but its standard streams.
 */
static void __attribute__((noreturn))
worker_child(int sock, const struct vm_files *files, const char *path,
    char *const argv[])
{
	int src[3], fd, sig, i, n;
	sigset_t none;

	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);	/* SIGPIPE was ignored, for one */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	n = 0;
	src[n++] = sock;
	src[n++] = files->kernel_fd;
	if (files->initrd_fd >= 0)
		src[n++] = files->initrd_fd;
	/* First out of the way of every target: a dup2() onto a target
	 * must not close a source still to be moved. */
	for (i = 0; i < n; i++)
		if (src[i] < WORKER_FD + n &&
		    (src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, WORKER_FD + n)) < 0)
			_exit(127);
	for (i = 0; i < n; i++)
		if (dup2(src[i], WORKER_FD + i) < 0)	/* clears CLOEXEC */
			_exit(127);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, STDIN_FILENO) < 0)
		_exit(127);
	/* Descriptors vmmd itself inherited without CLOEXEC stay here. */
	close_range(WORKER_FD + n, ~0U, 0);
	execv(path, argv);
	_exit(127);
}

static struct worker *
worker_spawn(struct vm *vm, const char *path, const struct vm_files *files,
    char *err, size_t errlen)
{
	struct worker *w;
	char *argv[6];
	int sv[2];
	pid_t pid;

	w = calloc(1, sizeof(*w));
	if (w == NULL)
		goto nomem;
	w->vm = vm;
	w->fd = -1;
	TAILQ_INIT(&w->reqs);
	TAILQ_INIT(&w->fdq);
	w->lines = proto_lines_new(WORKER_MAX_LINE);
	w->timer = evtimer_new(vm->d->base, worker_timer_cb, w);
	if (w->lines == NULL || w->timer == NULL)
		goto free_worker;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto free_worker_noerr;
	}
	argv[0] = (char *)WORKER_NAME;
	argv[1] = (char *)"-c";
	argv[2] = (char *)"3";		/* WORKER_FD */
	argv[3] = (char *)"-n";
	argv[4] = vm->def->name;
	argv[5] = NULL;

	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		goto free_worker_noerr;
	}
	if (pid == 0)
		worker_child(sv[1], files, path, argv);
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];

	evutil_make_socket_nonblocking(sv[0]);
	w->bev = bufferevent_socket_new(vm->d->base, sv[0],
	    BEV_OPT_CLOSE_ON_FREE);
	w->fdq_ev = event_new(vm->d->base, sv[0], EV_WRITE, worker_fdq_cb, w);
	if (w->bev == NULL || w->fdq_ev == NULL) {
		if (w->bev == NULL)
			close(sv[0]);
		/* The child is running: it is killed and reaped as usual. */
		snprintf(err, errlen, "out of memory");
		vm->w = w;
		vm->d->nworkers++;
		worker_close_channel(w);
		worker_kill(w, KILL_BOOT_FAILED);
		return NULL;
	}
	bufferevent_setcb(w->bev, worker_read_cb, worker_write_cb,
	    worker_event_cb, w);
	bufferevent_enable(w->bev, EV_READ | EV_WRITE);
	vm->w = w;
	vm->d->nworkers++;
	log_info("VM '%s': worker %ld started (%s)", vm->def->name, (long)pid,
	    path);
	return w;

nomem:
	snprintf(err, errlen, "out of memory");
	return NULL;
free_worker:
	snprintf(err, errlen, "out of memory");
free_worker_noerr:
	worker_free(w);
	return NULL;
}

/* Files ---------------------------------------------------------------- */

/*
 * Open one file for cred (NULL: as the daemon), as "what: path: why"
 * errors; a kernel must also be one the loaders accept.
 */
static int
vm_file_open(const char *what, const char *path, bool kernel,
    const struct access_cred *cred, int *fdp, enum proto_error *cls,
    char *err, size_t errlen)
{
	char reason[256], self[64];
	int fd, rc;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (path[0] != '/') {
		snprintf(err, errlen, "%s: '%s' is not an absolute path", what,
		    path);
		return -EINVAL;
	}
	fd = access_open_file(path, cred);
	if (fd < 0) {
		switch (fd) {
		case -EACCES:
			if (cred == NULL)
				break;
			/* Which directory or bit refused stays unsaid. */
			*cls = PROTO_ERR_PERMISSION;
			snprintf(err, errlen, "%s: %s: not readable by uid %lu",
			    what, path, (unsigned long)cred->uid);
			return fd;
		case -EINVAL:
			snprintf(err, errlen, "%s: %s: not a regular file",
			    what, path);
			return fd;
		case -ESTALE:
			snprintf(err, errlen, "%s: %s: changed while it was "
			    "being opened; try again", what, path);
			return fd;
		}
		snprintf(err, errlen, "%s: %s: %s", what, path, strerror(-fd));
		return fd;
	}
	if (kernel) {
		/* The very file opened, not whatever path names now. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		reason[0] = '\0';
		rc = boot_probe(self, reason, sizeof(reason));
		if (rc < 0) {
			close(fd);
			snprintf(err, errlen, "%s: %s: %s", what, path,
			    reason[0] != '\0' ? reason : strerror(-rc));
			return rc;
		}
	}
	*fdp = fd;
	return 0;
}

void
vm_files_close(struct vm_files *f)
{
	if (f->kernel_fd >= 0)
		close(f->kernel_fd);
	if (f->initrd_fd >= 0)
		close(f->initrd_fd);
	f->kernel_fd = f->initrd_fd = -1;
}

int
vm_files_open(struct vmmd *d, const struct vm_def *def,
    const struct access_cred *cred, bool start, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	char reason[512];
	int rc;

	f->kernel_fd = f->initrd_fd = -1;
	/* root may read anything anyway: no point in checking. */
	if (cred != NULL && cred->uid == 0)
		cred = NULL;

	if (def->kernel != NULL) {
		rc = vm_file_open("kernel", def->kernel, true, cred,
		    &f->kernel_fd, cls, err, errlen);
		if (rc < 0)
			return rc;
	} else if (start) {
		/* The daemon's own choice (-g): trusted, not the client's. */
		rc = vm_file_open("kernel", d->default_kernel, true, NULL,
		    &f->kernel_fd, cls, reason, sizeof(reason));
		if (rc < 0) {
			snprintf(err, errlen, "VM '%s' has no kernel and the "
			    "default guest is not usable (%s); create the VM "
			    "with a kernel, or start vmmd with -g FILE",
			    def->name, reason);
			return rc;
		}
	}
	if (def->initrd != NULL) {
		rc = vm_file_open("initrd", def->initrd, false, cred,
		    &f->initrd_fd, cls, err, errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
	}
	return 0;
}

/* Starting ------------------------------------------------------------- */

static void
worker_boot_reply(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct worker *w = vm->w;
	struct pending *p;

	if (w == NULL || (w->reaped && error != NULL))
		return;		/* worker_exited() reports the failure */
	if (error != NULL) {
		/* The reply waits for the exit, so that the client sees
		 * the VM settled when it gets the error. */
		json_object_put(w->boot_error);
		w->boot_error = json_object_get(error);
		log_warn("VM '%s': boot failed: %s", vm->def->name,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
		worker_kill(w, KILL_BOOT_FAILED);
		return;
	}
	w->booted = true;
	if (vm->state != VM_STARTING)
		return;		/* a stop came first */
	evtimer_del(w->timer);
	vm_set_state(vm, VM_RUNNING, "booted");
	if ((p = vm->start_waiter) != NULL) {
		vm->start_waiter = NULL;
		pending_reply(p, vm_to_json(vm));
	}
}

int
vm_start(struct vm *vm, const struct access_cred *cred, struct pending *p,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct vmmd *d = vm->d;
	struct json_object *args, *msg;
	struct timeval tv = { PROC_BOOT_TIMEOUT, 0 };
	struct vm_files files;
	struct worker *w;
	const char *path;
	char log[PATH_MAX], fdpath[32];
	int rc;

	switch (vm->state) {
	case VM_DEFINED:
	case VM_STOPPED:
	case VM_CRASHED:
		break;
	default:
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "VM '%s' is %s", vm->def->name,
		    vm_state_name(vm->state));
		return -EBUSY;
	}
	if (d->shutting_down) {
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "vmmd is shutting down");
		return -ESHUTDOWN;
	}
	path = proc_worker_path(d);
	if (path == NULL) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "%s not found (looked for %s and %s)",
		    WORKER_NAME, d->worker_self ? d->worker_self : "-",
		    VMMD_LIBEXECDIR "/" WORKER_NAME);
		return -ENOENT;
	}
	if ((size_t)snprintf(log, sizeof(log), "%s/%s.log", d->consoledir,
	    vm->def->name) >= sizeof(log)) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "console log path too long");
		return -ENAMETOOLONG;
	}
	/* Checked again at every start: the definition may have been
	 * created by another client, and paths change. */
	if ((rc = vm_files_open(d, vm->def, cred, true, &files, cls, err,
	    errlen)) < 0)
		return rc;

	args = json_object_new_object();
	if (args == NULL) {
		vm_files_close(&files);
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* The worker loads the descriptors it inherits; the names are
	 * for its messages. */
	json_object_object_add(args, "name",
	    json_object_new_string(vm->def->name));
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
	    WORKER_KERNEL_FD);
	json_object_object_add(args, "kernel", json_object_new_string(fdpath));
	json_object_object_add(args, "kernel_name", json_object_new_string(
	    vm->def->kernel != NULL ? vm->def->kernel : d->default_kernel));
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
	    WORKER_INITRD_FD);
	json_object_object_add(args, "initrd", vm->def->initrd ?
	    json_object_new_string(fdpath) : NULL);
	json_object_object_add(args, "initrd_name", vm->def->initrd ?
	    json_object_new_string(vm->def->initrd) : NULL);
	json_object_object_add(args, "cmdline",
	    json_object_new_string(vm->def->cmdline));
	json_object_object_add(args, "memory_mib",
	    json_object_new_int64(vm->def->memory_mib));
	json_object_object_add(args, "vcpus",
	    json_object_new_int64(vm->def->vcpus));
	json_object_object_add(args, "on_reboot", json_object_new_string(
	    config_on_reboot_name(vm->def->on_reboot)));
	json_object_object_add(args, "console_log",
	    json_object_new_string(log));

	w = worker_spawn(vm, path, &files, err, errlen);
	/* The worker has its own copies now (or none at all). */
	vm_files_close(&files);
	if (w == NULL) {
		json_object_put(args);
		*cls = PROTO_ERR_INTERNAL;
		if (vm->w != NULL) {
			/* Spawned but unusable: reaped like any other. */
			vm->prev_state = vm->state;
			vm->state = VM_STARTING;
		}
		return -ENOMEM;
	}
	vm->prev_state = vm->state;
	vm->start_waiter = p;
	vm_set_state(vm, VM_STARTING, NULL);

	msg = worker_request_new(w, "worker.boot", args, worker_boot_reply,
	    NULL);
	if (msg == NULL || worker_send(w, msg) < 0) {
		/* Reaped as a crash; the start fails from there. */
		worker_kill(w, KILL_BOOT_FAILED);
		return 0;
	}
	evtimer_add(w->timer, &tv);
	return 0;
}

/* Stopping ------------------------------------------------------------- */

static void
worker_shutdown_reply(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error != NULL)
		log_warn("VM '%s': worker.shutdown: %s", vm->def->name,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
}

static void
worker_ignore_reply(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
}

/* Ask the guest to shut down; SIGKILL after timeout seconds. */
static void
worker_stop(struct vm *vm, bool force, unsigned int timeout,
    enum worker_kill why)
{
	struct worker *w = vm->w;
	struct timeval tv = { timeout, 0 };

	w->stop_requested = true;
	if (force || timeout == 0 || vm->state == VM_STARTING ||
	    w->bev == NULL) {
		/* No guest to ask yet (or no way to ask it). */
		worker_kill(w, why == KILL_DAEMON_EXIT ? why : KILL_STOP_FORCE);
		return;
	}
	if (vm->state == VM_STOPPING) {
		/* Already asked: only ever bring the deadline closer. */
		struct timeval left;

		if (evtimer_pending(w->timer, &left)) {
			struct timeval now;

			event_base_gettimeofday_cached(vm->d->base, &now);
			timersub(&left, &now, &left);
			if (timercmp(&left, &tv, <=))
				return;
		}
		evtimer_del(w->timer);
		evtimer_add(w->timer, &tv);
		return;
	}
	/* A paused guest cannot see Ctrl-Alt-Del: let it run first. */
	if (vm->state == VM_PAUSED)
		vm_worker_request(vm, "worker.resume", NULL,
		    worker_ignore_reply, NULL);
	if (vm_worker_request(vm, "worker.shutdown", NULL,
	    worker_shutdown_reply, NULL) < 0) {
		worker_kill(w, why == KILL_DAEMON_EXIT ? why : KILL_STOP_FORCE);
		return;
	}
	evtimer_del(w->timer);
	evtimer_add(w->timer, &tv);
}

int
vm_stop(struct vm *vm, bool force, unsigned int timeout, struct pending *p,
    enum proto_error *cls, char *err, size_t errlen)
{
	switch (vm->state) {
	case VM_STARTING:
	case VM_RUNNING:
	case VM_PAUSED:
	case VM_STOPPING:
		break;
	default:
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "VM '%s' is %s", vm->def->name,
		    vm_state_name(vm->state));
		return -EINVAL;
	}
	if (vm->w == NULL) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "VM '%s' has no worker", vm->def->name);
		return -ESRCH;
	}
	worker_stop(vm, force, timeout, KILL_STOP_TIMEOUT);
	vm_set_state(vm, VM_STOPPING, force || timeout == 0 ||
	    vm->state == VM_STARTING ? "forced stop" : "shutdown requested");
	/* Every vm.stop while stopping waits for the same exit. */
	if (p != NULL)
		TAILQ_INSERT_TAIL(&vm->stop_waiters, p, entry);
	return 0;
}

/* Exit ----------------------------------------------------------------- */

static void
describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(status),
		    strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status 0x%x", status);
}

static void
worker_exited(struct worker *w, int status)
{
	struct vm *vm = w->vm;
	struct vmmd *d = vm->d;
	struct json_object *obj;
	struct pending *p;
	struct wreq *r;
	enum vm_state st;
	char how[128], reason[512], errdesc[512];
	enum proto_error start_cls = PROTO_ERR_INTERNAL;
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	bool by_us = w->killed && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGKILL;
	const char *desc;
	bool w_stop_requested;

	w->reaped = true;
	evtimer_del(w->timer);
	/* A worker that replied and exited at once: read what it said. */
	if (w->bev != NULL) {
		struct evbuffer *in = bufferevent_get_input(w->bev);

		while (evbuffer_read(in, w->fd, WORKER_READ_CHUNK) > 0)
			;
		worker_read_input(w);
	}
	describe_status(status, how, sizeof(how));
	log_info("VM '%s': worker %ld exited (%s)", vm->def->name,
	    (long)w->pid, how);

	errdesc[0] = '\0';
	if (w->boot_error != NULL) {
		/* The worker refused to boot: the VM never ran. */
		int c = proto_error_lookup(json_object_get_string(
		    json_object_object_get(w->boot_error, "class")));

		start_cls = c < 0 ? PROTO_ERR_INTERNAL : (enum proto_error)c;
		desc = json_object_get_string(json_object_object_get(
		    w->boot_error, "desc"));
		snprintf(errdesc, sizeof(errdesc), "%s", desc ? desc :
		    "boot failed");
		st = vm->prev_state;
		snprintf(reason, sizeof(reason), "boot failed: %s", errdesc);
	} else if (!w->booted && w->kill == KILL_BOOT_TIMEOUT) {
		st = VM_CRASHED;
		start_cls = PROTO_ERR_TIMEOUT;
		snprintf(errdesc, sizeof(errdesc), "the worker did not start "
		    "the guest within %d s", PROC_BOOT_TIMEOUT);
		snprintf(reason, sizeof(reason), "%s", errdesc);
	} else if (!w->booted && w->stop_requested &&
	    (clean || by_us)) {
		st = VM_STOPPED;
		start_cls = PROTO_ERR_BAD_STATE;
		snprintf(errdesc, sizeof(errdesc), "stopped before the guest "
		    "started");
		snprintf(reason, sizeof(reason), "%s", errdesc);
	} else if (!w->booted) {
		st = VM_CRASHED;
		snprintf(errdesc, sizeof(errdesc), "worker exited during boot "
		    "(%s)", how);
		snprintf(reason, sizeof(reason), "%s", errdesc);
	} else if (clean) {
		st = VM_STOPPED;
		snprintf(reason, sizeof(reason), w->stop_requested ?
		    "guest shut down" : "guest powered off");
	} else if (by_us && (w->kill == KILL_STOP_FORCE ||
	    w->kill == KILL_STOP_TIMEOUT || w->kill == KILL_DAEMON_EXIT)) {
		st = VM_STOPPED;
		snprintf(reason, sizeof(reason), "%s",
		    w->kill == KILL_STOP_FORCE ? "killed (forced stop)" :
		    w->kill == KILL_STOP_TIMEOUT ? "killed after the stop "
		    "timeout" : "killed (vmmd exiting)");
	} else if (by_us && w->kill == KILL_EOF) {
		st = VM_CRASHED;
		snprintf(reason, sizeof(reason), "worker closed its control "
		    "socket");
	} else {
		st = VM_CRASHED;
		snprintf(reason, sizeof(reason), "worker exited (%s)", how);
	}

	/* Requests the worker will never answer. */
	while ((r = TAILQ_FIRST(&w->reqs)) != NULL) {
		struct json_object *e, *eobj = NULL;

		TAILQ_REMOVE(&w->reqs, r, entry);
		if (r->cb != NULL) {
			e = proto_error(NULL, PROTO_ERR_INTERNAL,
			    "worker exited (%s)", how);
			json_object_object_get_ex(e, "error", &eobj);
			r->cb(vm, NULL, eobj, r->arg);
			json_object_put(e);
		}
		free(r);
	}

	w_stop_requested = w->stop_requested;
	vm->w = NULL;
	d->nworkers--;
	worker_free(w);

	vm_set_state(vm, st, reason);

	if ((p = vm->start_waiter) != NULL) {
		/* Booted, but stopped before its reply was sent. */
		if (errdesc[0] == '\0' && w_stop_requested) {
			start_cls = PROTO_ERR_BAD_STATE;
			snprintf(errdesc, sizeof(errdesc), "stopped before "
			    "the start completed");
		}
		vm->start_waiter = NULL;
		pending_error(p, start_cls, "%s", errdesc[0] ? errdesc :
		    reason);
	}
	while ((p = TAILQ_FIRST(&vm->stop_waiters)) != NULL) {
		TAILQ_REMOVE(&vm->stop_waiters, p, entry);
		obj = vm_to_json(vm);
		pending_reply(p, obj);
	}

	if (vm->def->transient) {
		log_info("VM '%s': transient, removed", vm->def->name);
		control_broadcast(d->ctl, proto_event("vm.deleted",
		    vm->def->name, NULL));
		vm_remove(vm);
	}
	if (d->shutting_down && d->nworkers == 0 && d->idle_cb != NULL)
		d->idle_cb(d);
}

static struct worker *
proc_find_pid(struct vmmd *d, pid_t pid)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (vm->w != NULL && vm->w->pid == pid)
			return vm->w;
	return NULL;
}

static void
proc_sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
	struct vmmd *d = arg;
	struct worker *w;
	int status;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		w = proc_find_pid(d, pid);
		if (w == NULL) {
			log_debug("reaped unknown child %ld", (long)pid);
			continue;
		}
		worker_exited(w, status);
	}
}

int
proc_init(struct vmmd *d)
{
	d->sigchld_ev = evsignal_new(d->base, SIGCHLD, proc_sigchld_cb, d);
	if (d->sigchld_ev == NULL || evsignal_add(d->sigchld_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

void
proc_shutdown(struct vmmd *d)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry) {
		if (vm->w == NULL)
			continue;
		if (vm->state == VM_RUNNING || vm->state == VM_STOPPING) {
			worker_stop(vm, false, PROC_EXIT_GRACE,
			    KILL_DAEMON_EXIT);
			if (vm->w->kill == KILL_NONE)
				vm->w->kill = KILL_DAEMON_EXIT;
			vm_set_state(vm, VM_STOPPING, "vmmd exiting");
		} else {
			/* Paused or still booting: nothing to ask. */
			vm->w->stop_requested = true;
			worker_kill(vm->w, KILL_DAEMON_EXIT);
		}
	}
}

void
proc_kill_all(struct vmmd *d)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (vm->w != NULL) {
			vm->w->stop_requested = true;
			worker_kill(vm->w, KILL_DAEMON_EXIT);
		}
}

void
proc_fini(struct vmmd *d)
{
	struct vm *vm;
	int status = 0;

	/* Normally every worker is gone by now; make sure of it. */
	while ((vm = TAILQ_FIRST(&d->vms)) != NULL) {
		if (vm->w != NULL) {
			worker_kill(vm->w, KILL_DAEMON_EXIT);
			while (waitpid(vm->w->pid, &status, 0) < 0 &&
			    errno == EINTR)
				;
			worker_exited(vm->w, status);
			if (TAILQ_FIRST(&d->vms) != vm)
				continue;	/* transient, removed */
		}
		vm_remove(vm);
	}
	if (d->sigchld_ev != NULL) {
		event_free(d->sigchld_ev);
		d->sigchld_ev = NULL;
	}
}
