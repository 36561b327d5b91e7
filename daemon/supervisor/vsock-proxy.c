/* See vsock-proxy.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "log.h"
#include "vsock-proxy.h"

#define PROXY_DIR_MODE		01770
#define PROXY_SOCKET_MODE	0660
#define PROXY_BUFFER		VSOCK_PROXY_BUFFER
#define PROXY_HANDSHAKE_S	10
#define PROXY_LINE_MAX		32	/* "CONNECT 4294967295\n" fits */
#define PROXY_PORT_SUFFIX	".sock_"
/* A refusal is logged at most once in this time per NAME.sock_PORT. */
#define PROXY_WARN_S		10

struct vsp_conn;

/* A VM served: its socket for clients, its guest's CID. */
struct vsp_vm {
	TAILQ_ENTRY(vsp_vm) entry;
	struct vsock_proxy *p;
	char *name;
	uint32_t cid;
	uid_t owner;		/* the definition's owner; -1: none */
	int fd;
	struct event *ev;
	time_t warned;		/* last refusal logged, for files not seen */
	unsigned int nconns;	/* its connections now */
	time_t limit_warned;	/* last "at its bound" logged */
	struct vsock_proxy_counts n;	/* its refusals */
};

/* NAME.sock_PORT as found in the directory: a guest port to forward. */
struct vsp_file {
	TAILQ_ENTRY(vsp_file) entry;
	char *vm;
	uint32_t port;
	time_t warned;		/* last refusal logged (monotonic s) */
};

/* A vsock port vmmd listens on for guests, while files name it. */
struct vsp_port {
	TAILQ_ENTRY(vsp_port) entry;
	struct vsock_proxy *p;
	uint32_t port;
	unsigned int refs;
	int fd;
	struct event *ev;
};

enum vsp_state {
	VSP_HANDSHAKE,		/* waiting for "CONNECT PORT\n" */
	VSP_CONNECTING,		/* to the guest */
	VSP_RELAY,
};

/* One side of a connection. */
struct vsp_side {
	struct bufferevent *bev;
	bool eof;		/* it sent all it will */
	bool shut;		/* the other side was told (shutdown) */
};

struct vsp_conn {
	TAILQ_ENTRY(vsp_conn) entry;
	struct vsock_proxy *p;
	struct vsp_vm *vm;	/* whose: its connections go with it */
	enum vsp_state state;
	struct vsp_side s[2];	/* 0: the host's (Unix), 1: the guest's */
	struct event *deadline;
};

TAILQ_HEAD(vsp_vms, vsp_vm);
TAILQ_HEAD(vsp_files, vsp_file);
TAILQ_HEAD(vsp_ports, vsp_port);
TAILQ_HEAD(vsp_conns, vsp_conn);

struct vsock_proxy {
	struct event_base *base;
	char *dir;
	gid_t gid;
	int dirfd;		/* O_PATH, once made */
	int inotify_fd;
	struct event *inotify_ev;
	struct vsp_vms vms;
	struct vsp_files files;
	struct vsp_ports ports;
	struct vsp_conns conns;
	unsigned int nconns;
	time_t limit_warned;	/* last "all at the bound" logged */
	struct vsock_proxy_counts n;	/* every VM's, those gone too */
};

static void vsp_relay_read(struct bufferevent *bev, void *arg);
static void vsp_relay_write(struct bufferevent *bev, void *arg);
static void vsp_event(struct bufferevent *bev, short what, void *arg);

/* --- the directory ------------------------------------------------------ */

/*
 * DIR made (or taken as it is when it is root's and nobody else may do
 * more than the group), with an O_PATH descriptor for every later name.
 */
static int
vsp_dir(struct vsock_proxy *p, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (p->dirfd >= 0)
		return 0;
	if (mkdir(p->dir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", p->dir, strerror(-rc));
		return rc;
	}
	p->dirfd = open(p->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (p->dirfd < 0 || fstat(p->dirfd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", p->dir, strerror(-rc));
		goto close;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: refused: owned by uid %lu", p->dir,
		    (unsigned long)st.st_uid);
		rc = -EPERM;
		goto close;
	}
	/* Through the descriptor: the directory just checked. */
	if ((p->gid != (gid_t)-1 && st.st_gid != p->gid &&
	    fchownat(p->dirfd, "", (uid_t)-1, p->gid, AT_EMPTY_PATH) < 0) ||
	    ((st.st_mode & 07777) != (p->gid != (gid_t)-1 ?
	    PROXY_DIR_MODE : 0755) && chmod(p->dir, p->gid != (gid_t)-1 ?
	    PROXY_DIR_MODE : 0755) < 0)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", p->dir, strerror(-rc));
		goto close;
	}
	p->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (p->inotify_fd < 0 || inotify_add_watch(p->inotify_fd, p->dir,
	    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
	    IN_ONLYDIR | IN_DONT_FOLLOW) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: inotify: %s", p->dir,
		    strerror(-rc));
		goto close;
	}
	return 0;
close:
	if (p->inotify_fd >= 0)
		close(p->inotify_fd);
	if (p->dirfd >= 0)
		close(p->dirfd);
	p->inotify_fd = p->dirfd = -1;
	return rc;
}

/* "/proc/self/fd/DIRFD/name": a path to a name in the held directory. */
static int
vsp_at(const struct vsock_proxy *p, const char *name, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s",
	    p->dirfd, name) >= (int)sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* --- connections ------------------------------------------------------- */

static void
vsp_conn_free(struct vsp_conn *c)
{
	TAILQ_REMOVE(&c->p->conns, c, entry);
	c->p->nconns--;
	c->vm->nconns--;
	for (int i = 0; i < 2; i++)
		if (c->s[i].bev != NULL)
			bufferevent_free(c->s[i].bev);
	if (c->deadline != NULL)
		event_free(c->deadline);
	free(c);
}

/* Whether the last warning of *last is PROXY_WARN_S old; if so, now. */
static bool
vsp_may_warn(time_t *last)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	if (*last != 0 && ts.tv_sec - *last < PROXY_WARN_S)
		return false;
	*last = ts.tv_sec != 0 ? ts.tv_sec : 1;
	return true;
}

/*
 * Whether vm may have one connection more (either way): 0, or -EAGAIN
 * when it or everyone is at the bound (counted, and logged now and
 * then); the caller closes what it would have carried, before it
 * touches anything else.
 */
static int
vsp_admit(struct vsock_proxy *p, struct vsp_vm *vm)
{
	if (vm->nconns >= VSOCK_PROXY_CONNS_PER_VM) {
		vm->n.refused_vm_limit++;
		p->n.refused_vm_limit++;
		if (vsp_may_warn(&vm->limit_warned))
			log_warn("vsock: VM '%s' has %u connections, its bound: "
			    "refusing its new ones", vm->name, vm->nconns);
		return -EAGAIN;
	}
	if (p->nconns >= VSOCK_PROXY_CONNS_MAX) {
		vm->n.refused_limit++;
		p->n.refused_limit++;
		if (vsp_may_warn(&p->limit_warned))
			log_warn("vsock: %u connections in all, the bound: "
			    "refusing new ones (VM '%s' has %u)", p->nconns,
			    vm->name, vm->nconns);
		return -EAGAIN;
	}
	return 0;
}

/* A connection of vm's, admitted by vsp_admit(); NULL on ENOMEM. */
static struct vsp_conn *
vsp_conn_new(struct vsock_proxy *p, struct vsp_vm *vm)
{
	struct vsp_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->p = p;
	c->vm = vm;
	p->nconns++;
	vm->nconns++;
	TAILQ_INSERT_TAIL(&p->conns, c, entry);
	return c;
}

/* Side fd into c->s[i] (taking it), non-blocking.  0 or -ENOMEM. */
static int
vsp_side(struct vsp_conn *c, int i, int fd)
{
	evutil_make_socket_nonblocking(fd);
	c->s[i].bev = bufferevent_socket_new(c->p->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->s[i].bev == NULL) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* Both sides carry bytes now. */
static void
vsp_relay(struct vsp_conn *c)
{
	c->state = VSP_RELAY;
	if (c->deadline != NULL)
		event_del(c->deadline);
	for (int i = 0; i < 2; i++) {
		bufferevent_setcb(c->s[i].bev, vsp_relay_read,
		    vsp_relay_write, vsp_event, c);
		bufferevent_setwatermark(c->s[i].bev, EV_WRITE,
		    PROXY_BUFFER / 2, 0);
		bufferevent_enable(c->s[i].bev, EV_READ | EV_WRITE);
	}
	/* What came with the handshake's line. */
	vsp_relay_read(c->s[0].bev, c);
}

/* Side i's end of stream reaches the other side once delivered. */
static void
vsp_maybe_shut(struct vsp_conn *c, int i)
{
	struct vsp_side *from = &c->s[i], *to = &c->s[1 - i];

	if (!from->eof || from->shut ||
	    evbuffer_get_length(bufferevent_get_output(to->bev)) > 0)
		return;
	from->shut = true;
	shutdown(bufferevent_getfd(to->bev), SHUT_WR);
	if (c->s[0].shut && c->s[1].shut)
		vsp_conn_free(c);
}

static int
vsp_index(const struct vsp_conn *c, const struct bufferevent *bev)
{
	return c->s[0].bev == bev ? 0 : 1;
}

static void
vsp_relay_read(struct bufferevent *bev, void *arg)
{
	struct vsp_conn *c = arg;
	int i = vsp_index(c, bev);
	struct bufferevent *to = c->s[1 - i].bev;

	bufferevent_write_buffer(to, bufferevent_get_input(bev));
	if (evbuffer_get_length(bufferevent_get_output(to)) >= PROXY_BUFFER)
		bufferevent_disable(bev, EV_READ);
}

/* Side bev's output went below half: read the other side again. */
static void
vsp_relay_write(struct bufferevent *bev, void *arg)
{
	struct vsp_conn *c = arg;
	int i = vsp_index(c, bev);

	if (!c->s[1 - i].eof)
		bufferevent_enable(c->s[1 - i].bev, EV_READ);
	vsp_maybe_shut(c, 1 - i);
}

/* --- host to guest: "CONNECT PORT" ------------------------------------- */

static void
vsp_connected(struct vsp_conn *c)
{
	struct sockaddr_vm self;
	socklen_t len = sizeof(self);
	char line[PROXY_LINE_MAX];

	if (getsockname(bufferevent_getfd(c->s[1].bev),
	    (struct sockaddr *)&self, &len) < 0)
		self.svm_port = 0;
	snprintf(line, sizeof(line), "OK %u\n", self.svm_port);
	bufferevent_write(c->s[0].bev, line, strlen(line));
	vsp_relay(c);
}

static void
vsp_event(struct bufferevent *bev, short what, void *arg)
{
	struct vsp_conn *c = arg;
	int i = vsp_index(c, bev);

	if ((what & BEV_EVENT_CONNECTED) && c->state == VSP_CONNECTING) {
		vsp_connected(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && c->state == VSP_RELAY &&
	    !(what & BEV_EVENT_ERROR)) {
		/* Whatever it sent first. */
		vsp_relay_read(bev, c);
		c->s[i].eof = true;
		bufferevent_disable(bev, EV_READ);
		vsp_maybe_shut(c, i);
		return;
	}
	if (c->state == VSP_CONNECTING)
		log_debug("vsock: VM '%s': the guest refused a connection",
		    c->vm->name);
	vsp_conn_free(c);
}

/* The client's line; connect to the guest's port it names. */
static void
vsp_handshake_read(struct bufferevent *bev, void *arg)
{
	struct vsp_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr nl;
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK };
	char line[PROXY_LINE_MAX + 1], *end;
	struct vsp_vm *vm;
	unsigned long port;
	size_t n;
	int fd;

	nl = evbuffer_search(in, "\n", 1, NULL);
	if (nl.pos < 0) {
		if (evbuffer_get_length(in) > PROXY_LINE_MAX)
			vsp_conn_free(c);	/* no line of ours */
		return;
	}
	n = (size_t)nl.pos;
	if (n > PROXY_LINE_MAX) {
		vsp_conn_free(c);
		return;
	}
	evbuffer_remove(in, line, n + 1);
	line[n] = '\0';
	errno = 0;
	port = strncmp(line, "CONNECT ", 8) == 0 ?
	    strtoul(line + 8, &end, 10) : 0;
	vm = c->vm;
	if (strncmp(line, "CONNECT ", 8) != 0 ||
	    line[8] < '0' || line[8] > '9' || *end != '\0' || errno != 0 ||
	    port > UINT32_MAX) {
		vsp_conn_free(c);
		return;
	}
	sa.svm_cid = vm->cid;
	sa.svm_port = (unsigned int)port;
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || vsp_side(c, 1, fd) < 0) {
		vsp_conn_free(c);
		return;
	}
	c->state = VSP_CONNECTING;
	bufferevent_disable(bev, EV_READ);	/* until it is connected */
	bufferevent_setcb(c->s[1].bev, NULL, NULL, vsp_event, c);
	if (bufferevent_socket_connect(c->s[1].bev, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0)
		vsp_conn_free(c);
}

static void
vsp_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct vsp_conn *c = arg;

	if (c->state != VSP_RELAY)
		vsp_conn_free(c);
}

static void
vsp_accept_client(evutil_socket_t lfd, short what, void *arg)
{
	struct vsp_vm *vm = arg;
	const struct timeval tv = { PROXY_HANDSHAKE_S, 0 };
	struct vsp_conn *c;
	int fd;

	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (vsp_admit(vm->p, vm) < 0 ||
	    (c = vsp_conn_new(vm->p, vm)) == NULL) {
		close(fd);
		return;
	}
	c->deadline = evtimer_new(vm->p->base, vsp_deadline, c);
	if (c->deadline == NULL || vsp_side(c, 0, fd) < 0) {
		vsp_conn_free(c);
		return;
	}
	evtimer_add(c->deadline, &tv);
	bufferevent_setcb(c->s[0].bev, vsp_handshake_read, NULL, vsp_event, c);
	bufferevent_enable(c->s[0].bev, EV_READ);
}

/* --- guest to host: NAME.sock_PORT ------------------------------------- */

/* The Unix socket name a guest's connection to port goes to. */
static int
vsp_file_name(const char *vm, uint32_t port, char *buf, size_t len)
{
	return snprintf(buf, len, "%s" PROXY_PORT_SUFFIX "%u", vm, port) >=
	    (int)len ? -ENAMETOOLONG : 0;
}

/*
 * Whether vmmd may connect a guest of vm to the socket st describes
 * (held open by O_PATH, so that what is checked is what is connected):
 * NULL, or why not.
 *
 * vmmd connects as itself (root), so the peer credentials the listener
 * sees are root's: what must hold is that the listener is one its owner
 * put at this name for this VM, and that the owner is neither root nor
 * vmmd, whose services trust a root peer.  So:
 *  - one link only: a second name means someone linked a socket that
 *    may not be theirs (protected_hardlinks may be off), and which name
 *    was first cannot be told;
 *  - not root's nor vmmd's own uid: the system's sockets (D-Bus,
 *    journald, systemd's) are root's, and a guest never speaks to a
 *    service as root;
 *  - made by someone the directory lets make it: with group vmm, a
 *    socket of group vmm (a file takes its maker's group, and only a
 *    member may give it the group), or the VM's owner's; in the
 *    root-only layout (no group vmm) only root can name anything in DIR,
 *    so any other owner was put there by root.
 * Connecting with the owner's credentials instead was considered: a
 * seteuid() around connect() changes the whole daemon for a moment and
 * still shows root's groups, and a child per connection costs a fork in
 * the daemon every VM depends on; and it would not help, since the
 * danger of a socket not made for the VM is that its owner is someone
 * the guest should not speak as, whoever connects.
 */
static const char *
vsp_refuse_socket(const struct vsock_proxy *p, const struct vsp_vm *vm,
    const struct stat *st, char *why, size_t len)
{
	if (!S_ISSOCK(st->st_mode))
		return "not a socket";
	if (st->st_nlink != 1) {
		snprintf(why, len, "it has %lu hard links (a link to someone "
		    "else's socket?)", (unsigned long)st->st_nlink);
		return why;
	}
	if (st->st_uid == 0 || st->st_uid == geteuid()) {
		snprintf(why, len, "owned by %s (uid %lu): a guest never "
		    "speaks to a service as root", st->st_uid == 0 ? "root" :
		    "vmmd", (unsigned long)st->st_uid);
		return why;
	}
	if (p->gid != (gid_t)-1 && st->st_gid != p->gid &&
	    st->st_uid != vm->owner) {
		snprintf(why, len, "owned by uid %lu, group %lu: neither the "
		    "VM's owner nor of group %lu", (unsigned long)st->st_uid,
		    (unsigned long)st->st_gid, (unsigned long)p->gid);
		return why;
	}
	return NULL;
}

/* A socket at name refused for vm's port: counted, logged (rarely). */
static void
vsp_refused(struct vsock_proxy *p, struct vsp_vm *vm, uint32_t port,
    const char *name, const char *why)
{
	struct vsp_file *f;
	time_t *last = &vm->warned;

	p->n.refused_socket++;
	vm->n.refused_socket++;
	TAILQ_FOREACH(f, &p->files, entry)
		if (f->port == port && strcmp(f->vm, vm->name) == 0)
			last = &f->warned;
	if (vsp_may_warn(last))
		log_warn("vsock: VM '%s': refused to connect its port %u to "
		    "%s/%s: %s", vm->name, port, p->dir, name, why);
}

int
vsock_proxy_guest(struct vsock_proxy *p, uint32_t cid, uint32_t port, int fd)
{
	struct sockaddr_un sa;
	char name[NAME_MAX + 1], why[160];
	const char *refuse;
	struct vsp_conn *c;
	struct vsp_vm *vm;
	struct stat st;
	int path = -1, ufd = -1, rc;

	TAILQ_FOREACH(vm, &p->vms, entry)
		if (vm->cid == cid)
			break;
	if (vm == NULL || p->dirfd < 0 || vsp_file_name(vm->name, port, name,
	    sizeof(name)) < 0) {
		rc = -ENOENT;
		goto close;
	}
	/* At a bound: nothing is looked at, nothing connected to. */
	if ((rc = vsp_admit(p, vm)) < 0)
		goto close;
	/* The inode at the name, never a link's target: held by O_PATH. */
	path = openat(p->dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (path < 0 || fstat(path, &st) < 0) {
		rc = -errno;
		log_debug("vsock: VM '%s': nobody listens on %s/%s for its "
		    "port %u", vm->name, p->dir, name, port);
		goto close;
	}
	if ((refuse = vsp_refuse_socket(p, vm, &st, why, sizeof(why))) !=
	    NULL) {
		vsp_refused(p, vm, port, name, refuse);
		rc = -EPERM;
		goto close;
	}
	/* That very inode, through its descriptor. */
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", path);
	ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ufd < 0 || connect(ufd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		log_debug("vsock: VM '%s': nobody listens on %s/%s for its "
		    "port %u", vm->name, p->dir, name, port);
		goto close;
	}
	close(path);
	if ((c = vsp_conn_new(p, vm)) == NULL) {
		close(ufd);
		close(fd);
		return -ENOMEM;
	}
	if (vsp_side(c, 0, ufd) < 0 || vsp_side(c, 1, fd) < 0) {
		vsp_conn_free(c);
		return -ENOMEM;
	}
	vsp_relay(c);
	return 0;
close:
	if (path >= 0)
		close(path);
	if (ufd >= 0)
		close(ufd);
	close(fd);
	return rc;
}

static void
vsp_accept_guest(evutil_socket_t lfd, short what, void *arg)
{
	struct vsp_port *pt = arg;
	struct sockaddr_vm peer;
	socklen_t len = sizeof(peer);
	int fd;

	fd = accept4(lfd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK |
	    SOCK_CLOEXEC);
	if (fd >= 0)
		vsock_proxy_guest(pt->p, peer.svm_cid, pt->port, fd);
}

static struct vsp_port *
vsp_port_find(struct vsock_proxy *p, uint32_t port)
{
	struct vsp_port *pt;

	TAILQ_FOREACH(pt, &p->ports, entry)
		if (pt->port == port)
			return pt;
	return NULL;
}

static void
vsp_port_ref(struct vsock_proxy *p, uint32_t port)
{
	struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
	    .svm_cid = VMADDR_CID_ANY, .svm_port = port };
	struct vsp_port *pt = vsp_port_find(p, port);

	if (pt != NULL) {
		pt->refs++;
		return;
	}
	if ((pt = calloc(1, sizeof(*pt))) == NULL)
		return;
	pt->p = p;
	pt->port = port;
	pt->refs = 1;
	pt->fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (pt->fd < 0 || bind(pt->fd, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0 || listen(pt->fd, 16) < 0 ||
	    (pt->ev = event_new(p->base, pt->fd, EV_READ | EV_PERSIST,
	    vsp_accept_guest, pt)) == NULL || event_add(pt->ev, NULL) < 0) {
		log_warn("vsock: cannot listen on port %u for guests: %s",
		    port, strerror(errno));
		if (pt->ev != NULL)
			event_free(pt->ev);
		if (pt->fd >= 0)
			close(pt->fd);
		pt->ev = NULL;
		pt->fd = -1;
	}
	TAILQ_INSERT_TAIL(&p->ports, pt, entry);
}

static void
vsp_port_unref(struct vsock_proxy *p, uint32_t port)
{
	struct vsp_port *pt = vsp_port_find(p, port);

	if (pt == NULL || --pt->refs > 0)
		return;
	TAILQ_REMOVE(&p->ports, pt, entry);
	if (pt->ev != NULL)
		event_free(pt->ev);
	if (pt->fd >= 0)
		close(pt->fd);
	free(pt);
}

/* name is "VM.sock_PORT" for a VM served: *vm (in name) and *port. */
static bool
vsp_parse_file(struct vsock_proxy *p, const char *name, struct vsp_vm **vmp,
    uint32_t *port)
{
	const char *suffix = strstr(name, PROXY_PORT_SUFFIX);
	unsigned long v;
	struct vsp_vm *vm;
	char *end;
	size_t n;

	if (suffix == NULL)
		return false;
	n = (size_t)(suffix - name);
	suffix += strlen(PROXY_PORT_SUFFIX);
	errno = 0;
	v = strtoul(suffix, &end, 10);
	if (*suffix < '0' || *suffix > '9' || *end != '\0' || errno != 0 ||
	    v > UINT32_MAX)
		return false;
	TAILQ_FOREACH(vm, &p->vms, entry)
		if (strlen(vm->name) == n && strncmp(vm->name, name, n) == 0)
			break;
	if (vm == NULL)
		return false;
	*vmp = vm;
	*port = (uint32_t)v;
	return true;
}

static void
vsp_file_seen(struct vsock_proxy *p, const char *name, bool there)
{
	struct vsp_file *f;
	struct vsp_vm *vm;
	uint32_t port;

	if (!vsp_parse_file(p, name, &vm, &port))
		return;
	TAILQ_FOREACH(f, &p->files, entry)
		if (f->port == port && strcmp(f->vm, vm->name) == 0)
			break;
	if (there && f == NULL) {
		if ((f = calloc(1, sizeof(*f))) == NULL ||
		    (f->vm = strdup(vm->name)) == NULL) {
			free(f);
			return;
		}
		f->port = port;
		TAILQ_INSERT_TAIL(&p->files, f, entry);
		vsp_port_ref(p, port);
	} else if (!there && f != NULL) {
		TAILQ_REMOVE(&p->files, f, entry);
		vsp_port_unref(p, f->port);
		free(f->vm);
		free(f);
	}
}

static void
vsp_inotify(evutil_socket_t fd, short what, void *arg)
{
	struct vsock_proxy *p = arg;
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (char *q = buf; q < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)q;

			if (ev->len > 0)
				vsp_file_seen(p, ev->name, (ev->mask &
				    (IN_CREATE | IN_MOVED_TO)) != 0);
			q += sizeof(*ev) + ev->len;
		}
}

/* The NAME.sock_PORT files of vm already in the directory. */
static void
vsp_scan(struct vsock_proxy *p, struct vsp_vm *vm)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if ((fd = openat(p->dirfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, vm->name, strlen(vm->name)) == 0)
			vsp_file_seen(p, de->d_name, true);
	closedir(d);
}

/* --- VMs ---------------------------------------------------------------- */

static void
vsp_vm_free(struct vsock_proxy *p, struct vsp_vm *vm)
{
	struct vsp_conn *c, *cn;
	struct vsp_file *f, *fn;
	char name[NAME_MAX + 1];

	TAILQ_REMOVE(&p->vms, vm, entry);
	for (c = TAILQ_FIRST(&p->conns); c != NULL; c = cn) {
		cn = TAILQ_NEXT(c, entry);
		if (c->vm == vm)
			vsp_conn_free(c);
	}
	for (f = TAILQ_FIRST(&p->files); f != NULL; f = fn) {
		fn = TAILQ_NEXT(f, entry);
		if (strcmp(f->vm, vm->name) == 0) {
			TAILQ_REMOVE(&p->files, f, entry);
			vsp_port_unref(p, f->port);
			free(f->vm);
			free(f);
		}
	}
	if (vm->ev != NULL)
		event_free(vm->ev);
	if (vm->fd >= 0)
		close(vm->fd);
	if (snprintf(name, sizeof(name), "%s.sock", vm->name) <
	    (int)sizeof(name))
		unlinkat(p->dirfd, name, 0);
	free(vm->name);
	free(vm);
}

/*
 * Whether vmmd may make AF_VSOCK sockets at all: the shipped systemd
 * unit does not let it (RestrictAddressFamilies=), which a drop-in
 * changes; say so rather than fail each connection.
 */
static int
vsp_family(char *err, size_t errlen)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	rc = -errno;
	snprintf(err, errlen, "vsock: no AF_VSOCK sockets for vmmd (%s)%s",
	    strerror(-rc), rc == -EAFNOSUPPORT || rc == -EPERM ? ": under "
	    "systemd, a drop-in with RestrictAddressFamilies=AF_VSOCK allows "
	    "them (vmmd(8)); otherwise load vhost_vsock" : "");
	return rc;
}

int
vsock_proxy_add(struct vsock_proxy *p, const char *name, uint32_t cid,
    uid_t owner, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	char file[NAME_MAX + 1];
	struct vsp_vm *vm;
	mode_t old_umask;
	int rc;

	if ((rc = vsp_family(err, errlen)) < 0 ||
	    (rc = vsp_dir(p, err, errlen)) < 0)
		return rc;
	vsock_proxy_remove(p, name);
	if (snprintf(file, sizeof(file), "%s.sock", name) >=
	    (int)sizeof(file) || vsp_at(p, file, &sa) < 0) {
		snprintf(err, errlen, "vsock: %s/%s.sock: name too long",
		    p->dir, name);
		return -ENAMETOOLONG;
	}
	if ((vm = calloc(1, sizeof(*vm))) == NULL ||
	    (vm->name = strdup(name)) == NULL) {
		free(vm);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	vm->p = p;
	vm->cid = cid;
	vm->owner = owner;
	TAILQ_INSERT_TAIL(&p->vms, vm, entry);
	/*
	 * Whatever has the name goes (root may remove it from the sticky
	 * directory; unlinkat() follows no link); bind() then makes the
	 * socket, which nobody else can move or replace there, so its
	 * group and mode are set by name with no race.
	 */
	unlinkat(p->dirfd, file, 0);
	vm->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	old_umask = umask(0777 & ~PROXY_SOCKET_MODE);
	rc = vm->fd < 0 ? -1 : bind(vm->fd, (struct sockaddr *)&sa,
	    sizeof(sa));
	umask(old_umask);
	if (rc < 0 || (p->gid != (gid_t)-1 && fchownat(p->dirfd, file,
	    (uid_t)-1, p->gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    fchmodat(p->dirfd, file, PROXY_SOCKET_MODE, 0) < 0 ||
	    listen(vm->fd, 16) < 0 ||
	    (vm->ev = event_new(p->base, vm->fd, EV_READ | EV_PERSIST,
	    vsp_accept_client, vm)) == NULL || event_add(vm->ev, NULL) < 0) {
		rc = -errno;
		snprintf(err, errlen, "vsock: %s/%s: %s", p->dir, file,
		    strerror(-rc));
		vsp_vm_free(p, vm);
		return rc;
	}
	if (p->inotify_ev == NULL) {
		p->inotify_ev = event_new(p->base, p->inotify_fd,
		    EV_READ | EV_PERSIST, vsp_inotify, p);
		if (p->inotify_ev != NULL)
			event_add(p->inotify_ev, NULL);
	}
	vsp_scan(p, vm);
	return 0;
}

void
vsock_proxy_remove(struct vsock_proxy *p, const char *name)
{
	struct vsp_vm *vm;

	TAILQ_FOREACH(vm, &p->vms, entry)
		if (strcmp(vm->name, name) == 0) {
			vsp_vm_free(p, vm);
			return;
		}
}

int
vsock_proxy_path(const struct vsock_proxy *p, const char *name, char *buf,
    size_t len)
{
	return snprintf(buf, len, "%s/%s.sock", p->dir, name) >= (int)len ?
	    -ENAMETOOLONG : 0;
}

struct vsock_proxy *
vsock_proxy_new(struct event_base *base, const char *rundir, gid_t gid)
{
	struct vsock_proxy *p = calloc(1, sizeof(*p));

	if (p == NULL || asprintf(&p->dir, "%s/vsock", rundir) < 0) {
		free(p);
		return NULL;
	}
	p->base = base;
	p->gid = gid;
	p->dirfd = p->inotify_fd = -1;
	TAILQ_INIT(&p->vms);
	TAILQ_INIT(&p->files);
	TAILQ_INIT(&p->ports);
	TAILQ_INIT(&p->conns);
	return p;
}

int
vsock_proxy_counts(const struct vsock_proxy *p, const char *name,
    struct vsock_proxy_counts *out)
{
	const struct vsp_vm *vm;

	if (name == NULL) {
		*out = p->n;
		out->conns = p->nconns;
		return 0;
	}
	TAILQ_FOREACH(vm, &p->vms, entry)
		if (strcmp(vm->name, name) == 0) {
			*out = vm->n;
			out->conns = vm->nconns;
			return 0;
		}
	memset(out, 0, sizeof(*out));
	return -ENOENT;
}

void
vsock_proxy_free(struct vsock_proxy *p)
{
	if (p == NULL)
		return;
	while (!TAILQ_EMPTY(&p->vms))
		vsp_vm_free(p, TAILQ_FIRST(&p->vms));
	while (!TAILQ_EMPTY(&p->conns))
		vsp_conn_free(TAILQ_FIRST(&p->conns));
	if (p->inotify_ev != NULL)
		event_free(p->inotify_ev);
	if (p->inotify_fd >= 0)
		close(p->inotify_fd);
	if (p->dirfd >= 0)
		close(p->dirfd);
	free(p->dir);
	free(p);
}
