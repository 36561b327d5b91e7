/*
 * The control socket.
 *
 * Every client is one bufferevent plus a line framer.  A request is
 * parsed, looked up in the command tables and handed to its handler,
 * which either answers at once or takes a pending reply and answers
 * later.  Clients never block each other: nothing here waits, and a
 * client that stops reading is dropped once its queued output passes
 * CONTROL_MAX_OUTPUT (or its fair share, when all clients' output
 * together passes CONTROL_MAX_OUTPUT_TOTAL).  At most CONTROL_MAX_CLIENTS
 * are served at once.
 *
 * Freeing a client from inside its own callbacks would pull the rug from
 * under the code that called them, so while a callback runs, closing
 * only marks the client and the callback frees it on its way out.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config.h"
#include "control.h"
#include "counters.h"
#include "log.h"
#include "safe-dir.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS		59	/* Linux 4.13; older libc headers */
#endif

#define CONTROL_GROUP		VMMD_GROUP
#define CONTROL_SOCKET_MODE	0660
#define CONTROL_ACCEPT_BURST	64	/* accepts per wake-up */
#define CONTROL_READ_CHUNK	16384

TAILQ_HEAD(client_list, client);

struct control {
	struct event_base *base;
	struct vmmd *d;			/* for the handlers only */
	const struct cmd_def *const *tables;
	char *path;
	int fd;
	bool unlink;			/* we made the socket file */
	struct event *accept_ev;
	struct event *resume_ev;	/* re-enables accept after EMFILE */
	struct client_list clients;
	unsigned long next_client_id;
	unsigned int nclients;
	struct counters *counters;	/* NULL: nothing counted */
	unsigned long refused;		/* clients over CONTROL_MAX_CLIENTS */
	size_t queued;			/* all clients' output, in bytes */
};

struct client {
	TAILQ_ENTRY(client) entry;
	struct control *ctl;
	struct bufferevent *bev;
	struct proto_lines *lines;
	struct evbuffer_cb_entry *output_cb;	/* counts into ctl->queued */
	struct pending_owner owner;	/* replies still to send */
	unsigned long id;
	bool subscribed;
	bool eof;		/* peer shut its side: finish, then close */
	bool dead;		/* free when the running callback returns */
	int busy;		/* callbacks on the stack */
	/* A handover in progress (vm.console, vm.screenshot): the VM, the
	 * request's id, who takes it, and what for (for the log). */
	char *handover_vm;
	struct json_object *handover_id;
	control_handover_fn handover_fn;
	int64_t handover_mark;
	const char *handover_what;
	/* Peer credentials as of connect(); cred.groups is groups. */
	struct access_cred cred;
	gid_t *groups;
};

static void control_client_free(struct client *c);
static void client_close(struct client *c);
static void client_handover(struct client *c);

/* Output --------------------------------------------------------------- */

/* Queue msg (taken) on c.  May close c: do not touch c afterwards. */
static void
client_send(struct client *c, struct json_object *msg)
{
	struct evbuffer *out;
	char *line;
	size_t len;

	if (msg == NULL) {
		log_error("client %lu: out of memory building a reply", c->id);
		client_close(c);
		return;
	}
	if (c->dead) {
		json_object_put(msg);
		return;
	}
	out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) > CONTROL_MAX_OUTPUT ||
	    (c->ctl->queued > CONTROL_MAX_OUTPUT_TOTAL &&
	    evbuffer_get_length(out) > CONTROL_FAIR_OUTPUT)) {
		json_object_put(msg);
		log_warn("client %lu: does not read its replies (%zu bytes "
		    "queued, %zu for all clients); dropping it", c->id,
		    evbuffer_get_length(out), c->ctl->queued);
		client_close(c);
		return;
	}
	line = proto_serialize(msg, &len);
	json_object_put(msg);
	if (line == NULL || bufferevent_write(c->bev, line, len) < 0) {
		free(line);
		log_error("client %lu: cannot queue a reply", c->id);
		client_close(c);
		return;
	}
	free(line);
}

void
control_broadcast(struct control *ctl, struct json_object *ev)
{
	struct client *c, *tmp;

	if (ctl == NULL || ev == NULL) {
		json_object_put(ev);
		return;
	}
	/* client_send() may free c: step on before it runs. */
	for (c = TAILQ_FIRST(&ctl->clients); c != NULL; c = tmp) {
		tmp = TAILQ_NEXT(c, entry);
		if (c->subscribed && !c->dead && c->handover_vm == NULL)
			client_send(c, json_object_get(ev));
	}
	json_object_put(ev);
}

void
control_subscribe(struct client *c)
{
	c->subscribed = true;
}

const struct access_cred *
control_client_cred(const struct client *c)
{
	return &c->cred;
}

/* Pending replies ------------------------------------------------------ */

static void
client_pending_send(struct pending_owner *o, struct json_object *msg)
{
	struct client *c = (struct client *)((char *)o -
	    offsetof(struct client, owner));

	/* A half-closed client is closed by the write callback once this
	 * reply (its last, if no others pend) has been written. */
	client_send(c, msg);
}

struct pending *
control_defer(struct cmd_ctx *ctx)
{
	struct pending *p = pending_new(&ctx->client->owner, ctx->id);

	/* Counted by command and result when it completes. */
	if (p != NULL) {
		p->counters = ctx->client->ctl->counters;
		p->command = ctx->command;
	}
	return p;
}

void
control_set_counters(struct control *ctl, struct counters *counters)
{
	ctl->counters = counters;
}

unsigned int
control_clients(const struct control *ctl)
{
	return ctl != NULL ? ctl->nclients : 0;
}

/* Requests ------------------------------------------------------------- */

static bool
control_blank(const char *line, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return false;
	return true;
}

static const struct cmd_def *
control_lookup(const struct control *ctl, const char *name)
{
	const struct cmd_def *const *t;
	const struct cmd_def *cmd;

	for (t = ctl->tables; *t != NULL; t++)
		for (cmd = *t; cmd->name != NULL; cmd++)
			if (strcmp(cmd->name, name) == 0)
				return cmd;
	return NULL;
}

static void
client_request(struct client *c, const char *line, size_t len)
{
	struct proto_request req;
	struct json_object *id, *reply;
	const struct cmd_def *cmd;
	struct cmd_ctx ctx;
	char desc[512];
	int rc;

	/* Blank lines are not requests: tolerated, never answered. */
	if (control_blank(line, len))
		return;

	rc = proto_parse_request(line, len, &req, &id, desc, sizeof(desc));
	if (rc != 0) {
		log_debug("client %lu: %s: %s", c->id,
		    proto_error_class((enum proto_error)rc), desc);
		client_send(c, proto_error(id, (enum proto_error)rc, "%s",
		    desc));
		json_object_put(id);
		return;
	}

	cmd = control_lookup(c->ctl, req.command);
	if (cmd == NULL) {
		reply = proto_error(req.id, PROTO_ERR_UNKNOWN_COMMAND,
		    "unknown command '%.100s'", req.command);
		counters_request(c->ctl->counters, NULL, reply);
		client_send(c, reply);
		json_object_put(req.root);
		return;
	}

	log_debug("client %lu: %s", c->id, req.command);
	ctx.d = c->ctl->d;
	ctx.client = c;
	ctx.id = req.id;
	ctx.args = req.arguments;
	ctx.command = cmd->name;
	reply = cmd->fn(&ctx);
	if (reply != NULL) {
		counters_request(c->ctl->counters, cmd->name, reply);
		client_send(c, reply);
	}
	json_object_put(req.root);
}

/* Reads every complete line; stops early once c is closing or handing
 * its connection over (what follows is then not ours to read). */
static void
client_read_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char buf[CONTROL_READ_CHUNK];
	const char *line;
	size_t len;
	int n, rc;

	c->busy++;
	while (!c->dead && c->handover_vm == NULL &&
	    (n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
		if (proto_lines_feed(c->lines, buf, (size_t)n) < 0) {
			log_error("client %lu: out of memory", c->id);
			client_close(c);
			break;
		}
		while (!c->dead && c->handover_vm == NULL &&
		    (rc = proto_lines_next(c->lines, &line, &len)) != 0) {
			if (rc == -E2BIG)
				client_send(c, proto_error(NULL,
				    PROTO_ERR_TOO_LARGE, "request longer than "
				    "%d bytes", PROTO_MAX_LINE));
			else
				client_request(c, line, len);
		}
	}
	c->busy--;
	if (c->dead)
		control_client_free(c);
	else if (c->handover_vm != NULL)
		client_handover(c);
}

/* Output fully written: finish a handover or a half-close. */
static void
client_write_cb(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;

	if (evbuffer_get_length(bufferevent_get_output(bev)) != 0)
		return;
	if (c->handover_vm != NULL)
		client_handover(c);
	else if (c->eof && pending_owner_idle(&c->owner))
		client_close(c);
}

static void
client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	if (what & BEV_EVENT_ERROR) {
		log_debug("client %lu: %s", c->id,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		client_close(c);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		/*
		 * The client may only have shut down its sending side
		 * ("send a request, then wait for the reply"): answer what
		 * it asked, then close.
		 */
		c->eof = true;
		bufferevent_disable(bev, EV_READ);
		if (c->handover_vm != NULL)
			return;		/* client_handover() decides */
		if (pending_owner_idle(&c->owner) &&
		    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			client_close(c);
	}
}

/* Connection handover -------------------------------------------------- */

void
control_handover(struct cmd_ctx *ctx, control_handover_fn fn,
    const char *target, int64_t mark, const char *what)
{
	struct client *c = ctx->client;

	c->handover_fn = fn;
	c->handover_mark = mark;
	c->handover_what = what;
	c->handover_vm = strdup(target);
	if (c->handover_vm == NULL) {
		client_send(c, proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory"));
		return;
	}
	c->handover_id = json_object_get(ctx->id);
	/* Nothing more is read: bytes after the request belong to the
	 * console (say), and the worker reads them from the socket. */
	bufferevent_disable(c->bev, EV_READ);
}

static void
client_handover(struct client *c)
{
	struct json_object *id;
	enum proto_error cls = PROTO_ERR_INTERNAL;
	char err[512];
	int rc;

	if (c->busy || c->dead)
		return;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) != 0)
		return;			/* client_write_cb() comes back */

	rc = c->handover_fn(c->ctl->d, c->handover_vm, c->handover_mark,
	    bufferevent_getfd(c->bev), c->handover_id, &cls, err,
	    sizeof(err));

	if (rc < 0) {
		/* Back to an ordinary connection, with the error reply. */
		id = c->handover_id;
		free(c->handover_vm);
		c->handover_vm = NULL;
		c->handover_id = NULL;
		if (!c->eof)
			bufferevent_enable(c->bev, EV_READ);
		client_send(c, proto_error(id, cls, "%s", err));
		json_object_put(id);
		return;
	}
	if (rc > 0)
		log_debug("client %lu: %s of VM '%s' answered by vmmd (the "
		    "guest has ended)", c->id, c->handover_what,
		    c->handover_vm);
	else
		log_debug("client %lu: %s of VM '%s' handed to its worker",
		    c->id, c->handover_what, c->handover_vm);
	/* The worker (or vmmd's answer) has its own copy now. */
	control_client_free(c);
}

/* Clients -------------------------------------------------------------- */

static void
client_close(struct client *c)
{
	if (c->busy) {
		if (!c->dead) {
			c->dead = true;
			bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		}
		return;
	}
	control_client_free(c);
}

static void
control_client_free(struct client *c)
{
	if (c == NULL)
		return;
	/* Operations in flight go on; their replies have nowhere to go. */
	pending_owner_detach(&c->owner);
	TAILQ_REMOVE(&c->ctl->clients, c, entry);
	c->ctl->nclients--;
	log_debug("client %lu: closed", c->id);
	/* What it had queued goes with it, and nothing counts after. */
	if (c->output_cb != NULL) {
		c->ctl->queued -= evbuffer_get_length(
		    bufferevent_get_output(c->bev));
		evbuffer_remove_cb_entry(bufferevent_get_output(c->bev),
		    c->output_cb);
	}
	bufferevent_free(c->bev);
	proto_lines_free(c->lines);
	free(c->handover_vm);
	json_object_put(c->handover_id);
	free(c->groups);
	free(c);
}

/*
 * The supplementary groups of the peer as of connect() (Linux 4.13 and
 * later).  0 with *groupsp NULL when it has none; -errno if they cannot
 * be had.
 */
static int
client_peer_groups(int fd, gid_t **groupsp, size_t *np)
{
	gid_t *groups = NULL, *g;
	socklen_t len = 0;
	int tries;

	*groupsp = NULL;
	*np = 0;
	/* Asking with too small a buffer tells the size needed. */
	for (tries = 0; tries < 4; tries++) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) ==
		    0) {
			if (len == 0) {
				free(groups);
				return 0;
			}
			*groupsp = groups;
			*np = len / sizeof(gid_t);
			return 0;
		}
		if (errno != ERANGE) {
			free(groups);
			return -errno;
		}
		g = realloc(groups, len);
		if (g == NULL) {
			free(groups);
			return -ENOMEM;
		}
		groups = g;
	}
	free(groups);
	return -ERANGE;
}

/* Who the client is; logged, and kept for access checks. */
static void
client_read_cred(struct client *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	size_t n;
	int rc;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		/* Nobody in particular: only "other" permissions apply. */
		c->cred.uid = (uid_t)-1;
		c->cred.gid = (gid_t)-1;
		log_warn("client %lu: connected (peer credentials unknown: "
		    "%s)", c->id, strerror(errno));
		return;
	}
	c->cred.uid = cred.uid;
	c->cred.gid = cred.gid;
	rc = client_peer_groups(fd, &c->groups, &n);
	if (rc < 0) {
		/* Fewer groups only ever means less access. */
		log_warn("client %lu: supplementary groups unknown (%s); "
		    "only its primary group counts", c->id, strerror(-rc));
		n = 0;
	}
	c->cred.groups = c->groups;
	c->cred.ngroups = n;
	log_debug("client %lu: connected (pid %ld, uid %lu, gid %lu, %zu "
	    "supplementary groups)", c->id, (long)cred.pid,
	    (unsigned long)cred.uid, (unsigned long)cred.gid, n);
}

/* Keeps ctl->queued, the sum of every client's queued output. */
static void
client_output_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct control *ctl = arg;

	ctl->queued += info->n_added;
	ctl->queued -= info->n_deleted;
}

/*
 * One client too many: told so in one line, then closed.  The socket is
 * fresh, so the line fits in its buffer; if not, the close says enough.
 */
static void
client_refuse(struct control *ctl, int fd)
{
	struct json_object *e;
	char *line;
	size_t len;

	e = proto_error(NULL, PROTO_ERR_LIMIT, "vmmd serves at most %d "
	    "clients at once; try again later", CONTROL_MAX_CLIENTS);
	line = e == NULL ? NULL : proto_serialize(e, &len);
	json_object_put(e);
	if (line != NULL)
		(void)send(fd, line, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	free(line);
	close(fd);
	if (ctl->refused++ % 1000 == 0)
		log_warn("%u clients connected: refusing more (%lu refused "
		    "so far)", ctl->nclients, ctl->refused);
}

static void
client_new(struct control *ctl, int fd)
{
	struct client *c;

	if (ctl->nclients >= CONTROL_MAX_CLIENTS) {
		client_refuse(ctl, fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto close_fd;
	c->ctl = ctl;
	c->id = ++ctl->next_client_id;
	pending_owner_init(&c->owner, client_pending_send);
	c->lines = proto_lines_new(PROTO_MAX_LINE);
	if (c->lines == NULL)
		goto free_client;
	c->bev = bufferevent_socket_new(ctl->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		goto free_lines;

	c->output_cb = evbuffer_add_cb(bufferevent_get_output(c->bev),
	    client_output_cb, ctl);
	if (c->output_cb == NULL) {
		bufferevent_free(c->bev);
		goto free_lines_only;
	}
	client_read_cred(c, fd);

	TAILQ_INSERT_TAIL(&ctl->clients, c, entry);
	ctl->nclients++;
	if (ctl->counters != NULL)
		ctl->counters->clients++;
	bufferevent_setcb(c->bev, client_read_cb, client_write_cb,
	    client_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	client_send(c, proto_greeting());
	return;

free_lines_only:
	proto_lines_free(c->lines);
	free(c);
	log_error("out of memory accepting a client");
	return;		/* the bev closed fd */
free_lines:
	proto_lines_free(c->lines);
free_client:
	free(c);
close_fd:
	log_error("out of memory accepting a client");
	close(fd);
}

void
control_adopt(struct control *ctl, int fd)
{
	client_new(ctl, fd);
}

/* Listening ------------------------------------------------------------ */

static void
control_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control *ctl = arg;

	event_add(ctl->accept_ev, NULL);
}

static void
control_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct control *ctl = arg;
	struct timeval tv = { 1, 0 };
	int i, fd;

	for (i = 0; i < CONTROL_ACCEPT_BURST; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			log_error("accept: %s", strerror(errno));
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Retrying at once would spin: pause. */
				event_del(ctl->accept_ev);
				event_add(ctl->resume_ev, &tv);
			}
			return;
		}
		client_new(ctl, fd);
	}
}

/* A socket file at path: stale (nobody listening) or in use? */
static int
control_check_stale(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s: exists and is not a socket", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		snprintf(err, errlen, "%s: another vmmd is listening there",
		    path);
		return -EADDRINUSE;
	}
	rc = errno;
	close(fd);
	if (rc != ECONNREFUSED) {
		snprintf(err, errlen, "%s: cannot tell whether it is in use: "
		    "%s", path, strerror(rc));
		return -rc;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: removing stale socket: %s", path,
		    strerror(-rc));
		return rc;
	}
	log_info("removed stale socket %s", path);
	return 0;
}

/* mkdir -p for the socket's directory; existing directories are kept as
 * they are (and checked by control_bind()). */
static int
control_mkdirs(const char *path, char *err, size_t errlen)
{
	char *dir, *p;
	int rc = 0;

	dir = strdup(path);
	if (dir == NULL)
		return -ENOMEM;
	p = strrchr(dir, '/');
	if (p == NULL || p == dir)
		goto out;
	*p = '\0';
	for (p = dir + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;

		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", dir, strerror(-rc));
			goto out;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
out:
	free(dir);
	return rc;
}

/*
 * The socket's directory, checked (safe-dir.h): an O_PATH descriptor of
 * it in *dirfdp and the socket's name there in *namep (within path).
 */
static int
control_dir(const char *path, int *dirfdp, const char **namep, char *err,
    size_t errlen)
{
	char *dir, *slash;
	int rc;

	if ((dir = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	slash = strrchr(dir, '/');
	if (slash == NULL) {
		free(dir);
		snprintf(err, errlen, "%s: not an absolute path", path);
		return -EINVAL;
	}
	slash[slash == dir ? 1 : 0] = '\0';
	rc = safedir_check(dir, dirfdp, err, errlen);
	free(dir);
	*namep = strrchr(path, '/') + 1;
	return rc;
}

/*
 * Bind and listen on path: the socket vmmd makes itself.
 *
 * Its mode and group cannot be set through the descriptor: on Linux
 * fchmod() and fchown() on a socket change the socket's own inode, not
 * the file bind() makes.  So they go by name, in a directory that only
 * root (or vmmd's user) can write, checked first: nobody else can put
 * anything in the socket's place there.  The mode comes from the umask
 * at bind time; the group is set with fchownat() on the name in the
 * descriptor of the checked directory, never following a link, and
 * what is there is checked to be a socket before the mode is set again
 * (should a default ACL of the directory have overridden the umask).
 * Nobody can connect before listen(), which comes last.
 */
int
control_listen_path(const char *path, int *fdp, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct group *gr;
	struct stat st;
	const char *name;
	mode_t old_umask;
	int rc, dirfd;

	if (control_mkdirs(path, err, errlen) < 0 ||
	    control_dir(path, &dirfd, &name, err, errlen) < 0)
		return -EINVAL;
	if (control_check_stale(path, err, errlen) < 0)
		goto close_dir;
	*fdp = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (*fdp < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto close_dir;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	old_umask = umask(0777 & ~CONTROL_SOCKET_MODE);
	rc = bind(*fdp, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	if (rc < 0) {
		snprintf(err, errlen, "bind %s: %s", path, strerror(errno));
		goto close_fd;
	}
	gr = getgrnam(CONTROL_GROUP);
	if (gr != NULL && fchownat(dirfd, name, (uid_t)-1, gr->gr_gid,
	    AT_SYMLINK_NOFOLLOW) < 0)
		log_warn("%s: cannot give the socket to group %s: %s", path,
		    CONTROL_GROUP, strerror(errno));
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto unlink_path;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s: not the socket just bound",
		    path);
		goto close_fd;
	}
	if ((st.st_mode & 07777) != CONTROL_SOCKET_MODE &&
	    fchmodat(dirfd, name, CONTROL_SOCKET_MODE, 0) < 0) {
		snprintf(err, errlen, "chmod %s: %s", path, strerror(errno));
		goto unlink_path;
	}
	if (listen(*fdp, SOMAXCONN) < 0) {
		snprintf(err, errlen, "listen %s: %s", path, strerror(errno));
		goto unlink_path;
	}
	close(dirfd);
	log_info("listening on %s%s", path, gr != NULL ?
	    " (group " CONTROL_GROUP ")" : "");
	return 0;

unlink_path:
	unlinkat(dirfd, name, 0);
close_fd:
	close(*fdp);
	*fdp = -1;
close_dir:
	close(dirfd);
	return -EINVAL;
}

static int
control_bind(struct control *ctl, const char *path, char *err,
    size_t errlen)
{
	if (control_listen_path(path, &ctl->fd, err, errlen) < 0)
		return -EINVAL;
	ctl->unlink = true;
	return 0;
}

struct control *
control_new(struct event_base *base, struct vmmd *d,
    const struct cmd_def *const *tables, const char *path, int fd,
    char *err, size_t errlen)
{
	struct control *ctl;
	struct sockaddr_un sa;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return NULL;
	}
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ctl->base = base;
	ctl->d = d;
	ctl->tables = tables;
	ctl->fd = -1;
	TAILQ_INIT(&ctl->clients);
	ctl->path = strdup(path);
	if (ctl->path == NULL) {
		snprintf(err, errlen, "out of memory");
		goto free_ctl;
	}

	if (fd >= 0) {
		/* Made, owned and kept by the service manager. */
		ctl->fd = fd;
		evutil_make_socket_nonblocking(fd);
		evutil_make_socket_closeonexec(fd);
		log_debug("listening on the socket systemd passed");
	} else if (control_bind(ctl, path, err, errlen) < 0)
		goto free_path;

	ctl->accept_ev = event_new(base, ctl->fd, EV_READ | EV_PERSIST,
	    control_accept_cb, ctl);
	ctl->resume_ev = evtimer_new(base, control_resume_cb, ctl);
	if (ctl->accept_ev == NULL || ctl->resume_ev == NULL ||
	    event_add(ctl->accept_ev, NULL) < 0) {
		snprintf(err, errlen, "cannot watch the socket");
		goto free_events;
	}
	return ctl;

free_events:
	if (ctl->accept_ev != NULL)
		event_free(ctl->accept_ev);
	if (ctl->resume_ev != NULL)
		event_free(ctl->resume_ev);
	if (ctl->unlink)
		unlink(path);
	close(ctl->fd);
free_path:
	free(ctl->path);
free_ctl:
	free(ctl);
	return NULL;
}

void
control_free(struct control *ctl)
{
	struct client *c;

	if (ctl == NULL)
		return;
	event_free(ctl->accept_ev);
	event_free(ctl->resume_ev);
	close(ctl->fd);
	if (ctl->unlink && unlink(ctl->path) < 0 && errno != ENOENT)
		log_warn("%s: %s", ctl->path, strerror(errno));
	while ((c = TAILQ_FIRST(&ctl->clients)) != NULL)
		control_client_free(c);
	free(ctl->path);
	free(ctl);
}
