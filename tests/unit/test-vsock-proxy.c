/*
 * Unit tests for daemon/supervisor/vsock-proxy.c without a guest: the
 * proxy serves VMs in a scratch runtime directory on a private event
 * base, and the test plays the guest's side of a vsock connection with
 * one end of a socketpair, handed to vsock_proxy_guest() as the vsock
 * listener would hand it what it accepted.  The host's side is a Unix
 * socket the test listens on at DIR/NAME.sock_PORT, as a user would.
 *
 * Only making AF_VSOCK sockets is asked of the host (the proxy checks
 * it may before serving a VM; no vsock transport is needed): without
 * them the test skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "scratch.h"
#include "tap.h"
#include "vsock-proxy.h"

#define OTHER_UID	54321	/* owns nothing on the test machine */
#define OTHER_GID	54321
#define OWNER_UID	54322	/* VM a's owner, by its definition */
#define PORT		40001	/* a guest's port to the host */
#define CID_A		3
#define CID_B		4
#define WAIT_MS		10000	/* generous: the loop answers at once */

static struct event_base *base;
static struct vsock_proxy *proxy;
static gid_t group;
static char logged[8192];

/* The proxy's log lines, kept to look for refusals. */
static void
sink(int priority, const char *ident, const char *msg)
{
	size_t n = strlen(logged);

	(void)ident;
	if (priority <= LOG_INFO && n + strlen(msg) + 2 < sizeof(logged))
		snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Turns of the proxy's loop until fd can be read (or WAIT_MS). */
static bool
pump_until_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 5) > 0)
			return true;
	}
	return false;
}

/* DIR/name's path. */
static const char *
sock_path(const char *name)
{
	static char buf[4][512];
	static int turn;
	char *b = buf[turn++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/vsock/%s", scratch_dir(), name);
	return b;
}

/* Turns of the loop that take in what inotify saw of the directory. */
static void
settle(void)
{
	for (int i = 0; i < 3; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

/* Whether the proxy logged a line holding each of the words. */
static bool
logged_line(const char *w1, const char *w2)
{
	for (char *l = logged; *l != '\0';) {
		char *nl = strchr(l, '\n'), save = '\0';

		if (nl != NULL) {
			save = *nl;
			*nl = '\0';
		}
		bool hit = strstr(l, w1) != NULL && (w2 == NULL ||
		    strstr(l, w2) != NULL);
		if (nl != NULL)
			*nl = save;
		if (hit)
			return true;
		if (nl == NULL)
			break;
		l = nl + 1;
	}
	return false;
}

/* Nobody ever connected to the listener lfd. */
static bool
untouched(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd < 0 && errno == EAGAIN;
}

/* The socket at DIR/name given to uid and gid. */
static void
give(const char *name, uid_t uid, gid_t gid)
{
	if (chown(sock_path(name), uid, gid) < 0)
		tap_bail("chown %s: %s", sock_path(name), strerror(errno));
}

/*
 * A Unix socket listening at DIR/name, as a member of the group would
 * make it: owned by another user with the group's gid; else as made,
 * root's.  Its descriptor.
 */
static int
listener(const char *name, bool as_member)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path(name));
	unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 512) < 0)
		tap_bail("listening on %s: %s", sa.sun_path, strerror(errno));
	if (as_member)
		give(name, OTHER_UID, group);
	settle();
	return fd;
}

/*
 * A guest's connection from cid to PORT through the proxy: the guest's
 * end into *gfd (or -1), vsock_proxy_guest()'s answer returned.
 */
static int
guest_connect(uint32_t cid, uint32_t port, int *gfd)
{
	int sp[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		tap_bail("socketpair: %s", strerror(errno));
	rc = vsock_proxy_guest(proxy, cid, port, sp[1]);
	*gfd = sp[0];
	return rc;
}

/* Bytes carried both ways between the guest's end and the accepted one. */
static bool
carried(int gfd, int lfd, int *afd)
{
	char buf[16] = "";
	int fd;

	*afd = -1;
	if (!pump_until_readable(lfd) ||
	    (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return false;
	*afd = fd;
	if (write(gfd, "ping", 4) != 4 || !pump_until_readable(fd) ||
	    read(fd, buf, sizeof(buf)) != 4 || memcmp(buf, "ping", 4) != 0)
		return false;
	if (write(fd, "pong", 4) != 4 || !pump_until_readable(gfd) ||
	    read(gfd, buf, sizeof(buf)) != 4 || memcmp(buf, "pong", 4) != 0)
		return false;
	return true;
}

/* The guest's end was closed by the proxy: end of stream, or reset. */
static bool
closed(int gfd)
{
	char c;

	return pump_until_readable(gfd) && read(gfd, &c, 1) <= 0;
}

static void
setup(void)
{
	struct group *gr = getgrnam("nogroup");
	char err[512] = "";
	struct rlimit rl;
	int rc;

	/* Sockets of other users, and root's, are what is tested. */
	if (geteuid() != 0)
		tap_skip_all("not root: sockets owned by other users cannot be "
		    "made");
	scratch_new("vsock-proxy");
	/* Four descriptors for each of the proxy's connections, at most. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	log_init("test-vsock-proxy", 1, 0);
	log_set_sink(sink);
	/* The group that stands for vmm: not root's. */
	group = gr != NULL ? gr->gr_gid : 65534;
	if ((base = event_base_new()) == NULL ||
	    (proxy = vsock_proxy_new(base, scratch_dir(), group)) == NULL)
		tap_bail("out of memory");
	rc = vsock_proxy_add(proxy, "a", CID_A, OWNER_UID, err,
	    sizeof(err));
	if (rc == -EAFNOSUPPORT || rc == -EPERM || rc == -EACCES)
		tap_skip_all("no AF_VSOCK sockets here: %s", err);
	if (rc < 0 || vsock_proxy_add(proxy, "b", CID_B,
	    (uid_t)-1, err, sizeof(err)) < 0)
		tap_bail("serving VMs: %s", err);
}

/* A socket a member of the group listens on carries a guest's bytes. */
static void
test_legit(void)
{
	int lfd = listener("a.sock_40001", true), gfd, afd = -1, rc;

	rc = guest_connect(CID_A, PORT, &gfd);
	tap_ok(rc == 0 && carried(gfd, lfd, &afd), "a guest's connection "
	    "reaches the socket listening at a.sock_%u, bytes both ways (%d)",
	    PORT, rc);
	close(gfd);
	if (afd >= 0)
		close(afd);
	close(lfd);
	unlink(sock_path("a.sock_40001"));
}

/* Nobody listens: the guest's connection is closed, nothing else. */
static void
test_nobody(void)
{
	int gfd, rc = guest_connect(CID_A, PORT + 1, &gfd);

	tap_ok(rc < 0 && closed(gfd), "with no socket at the port's name "
	    "the guest's connection is closed (%d)", rc);
	close(gfd);
	rc = guest_connect(99, PORT, &gfd);
	tap_ok(rc < 0 && closed(gfd), "a CID of no VM served is closed (%d)",
	    rc);
	close(gfd);
}

/*
 * A socket vmmd must not connect a guest to is refused before anything
 * connects to it, with a warning that says why, and counted: and the
 * socket a member made keeps working beside it.
 */
static void
expect_refused(const char *name, uint32_t port, int lfd, const char *what,
    const char *word)
{
	struct vsock_proxy_counts n0, n1;
	int gfd, rc;

	vsock_proxy_counts(proxy, NULL, &n0);
	rc = guest_connect(CID_A, port, &gfd);
	vsock_proxy_counts(proxy, NULL, &n1);
	tap_ok(rc == -EPERM && closed(gfd) && untouched(lfd) &&
	    n1.refused_socket == n0.refused_socket + 1 &&
	    logged_line(name, word), "%s at %s: refused, nothing connected "
	    "to it, counted, and a warning says \"%s\" (%d)", what, name,
	    word, rc);
	close(gfd);
}

static void
test_refused(void)
{
	int member = listener("a.sock_40010", true);
	int linked = listener("a.sock_40011", true);
	int root = listener("a.sock_40012", false);
	int vmm = listener("a.sock_40013", false);
	int stranger = listener("a.sock_40014", false);
	int owner = listener("a.sock_40015", false);
	int gfd, afd = -1;

	/* A hard link to a member's socket: both names now refused. */
	if (link(sock_path("a.sock_40011"), sock_path("a.sock_40020")) < 0)
		tap_bail("link: %s", strerror(errno));
	settle();
	expect_refused("a.sock_40020", 40020, linked, "a hard link to "
	    "another socket", "hard links");
	expect_refused("a.sock_40011", 40011, linked, "a socket with a "
	    "second name", "hard links");
	unlink(sock_path("a.sock_40020"));
	tap_ok(guest_connect(CID_A, 40011, &gfd) == 0 &&
	    carried(gfd, linked, &afd), "with the link gone, its one name "
	    "carries bytes again");
	close(gfd);
	if (afd >= 0)
		close(afd);

	expect_refused("a.sock_40012", 40012, root, "a root-owned socket",
	    "owned by root");
	give("a.sock_40013", 0, group);
	expect_refused("a.sock_40013", 40013, vmm, "a root-owned socket of "
	    "the group", "owned by root");
	give("a.sock_40014", OTHER_UID, OTHER_GID);
	expect_refused("a.sock_40014", 40014, stranger, "a socket of "
	    "someone neither the VM's owner nor of the group",
	    "neither the VM's owner");

	give("a.sock_40015", OWNER_UID, OTHER_GID);
	tap_ok(guest_connect(CID_A, 40015, &gfd) == 0 &&
	    carried(gfd, owner, &afd), "the VM's owner's socket (not of the "
	    "group) carries bytes");
	close(gfd);
	if (afd >= 0)
		close(afd);
	tap_ok(guest_connect(CID_A, 40010, &gfd) == 0 &&
	    carried(gfd, member, &afd), "a member's socket beside them "
	    "carries bytes");
	close(gfd);
	if (afd >= 0)
		close(afd);
	close(member);
	close(linked);
	close(root);
	close(vmm);
	close(stranger);
	close(owner);
}

/* The proxy's connections of VM name (NULL: all). */
static unsigned int
conns(const char *name)
{
	struct vsock_proxy_counts n;

	vsock_proxy_counts(proxy, name, &n);
	return n.conns;
}

/* Turns of the loop until VM name has want connections (or WAIT_MS). */
static bool
wait_conns(const char *name, unsigned int want)
{
	long end = now_ms() + WAIT_MS;

	while (conns(name) != want && now_ms() < end) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		poll(NULL, 0, 1);
	}
	return conns(name) == want;
}

/* A client of DIR/NAME.sock, the host's side: its descriptor. */
static int
client(const char *vm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vsock/%s.sock",
	    scratch_dir(), vm);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		tap_bail("connecting to %s: %s", sa.sun_path, strerror(errno));
	return fd;
}

/*
 * n guests' connections of the VM with cid to its socket at port, each
 * end into gfd[]: how many the proxy took.
 */
static unsigned int
open_n(uint32_t cid, uint32_t port, int *gfd, unsigned int n)
{
	unsigned int ok = 0;

	for (unsigned int i = 0; i < n; i++)
		if (guest_connect(cid, port, &gfd[i]) == 0)
			ok++;
	return ok;
}

#define PER_VM	VSOCK_PROXY_CONNS_PER_VM
#define NVMS	(VSOCK_PROXY_CONNS_MAX / PER_VM)	/* to fill the total */

/*
 * A guest opens connections up to its VM's bound: the next one is
 * closed at once (and a host client's to its NAME.sock), counted and
 * logged, while another VM's go on being carried; one closed makes room
 * again.  Then VMs up to the total: everyone's next one is refused
 * until one closes.
 */
static void
test_bounds(void)
{
	static int gfd[NVMS + 1][PER_VM], afd[PER_VM];
	struct vsock_proxy_counts n0, n1;
	int la = listener("a.sock_41000", true);
	int lb = listener("b.sock_41000", true);
	int lv[NVMS + 1], fd, ufd, one = -1, got = -1, rc;
	char name[16], err[512];
	unsigned int i, v, took;

	tap_ok(wait_conns(NULL, 0), "no connection left of the tests before");
	took = open_n(CID_A, 41000, gfd[0], PER_VM);
	tap_ok(took == PER_VM && conns("a") == PER_VM, "VM a's guest opens "
	    "%u connections, its bound: all carried (%u)", PER_VM, took);

	vsock_proxy_counts(proxy, "a", &n0);
	rc = guest_connect(CID_A, 41000, &fd);
	vsock_proxy_counts(proxy, "a", &n1);
	tap_ok(rc == -EAGAIN && closed(fd) && conns("a") == PER_VM &&
	    n1.refused_vm_limit == n0.refused_vm_limit + 1 &&
	    logged_line("VM 'a' has 32 connections", "its bound"),
	    "one more is closed at once, counted, and a warning says VM a is "
	    "at its bound (%d)", rc);
	close(fd);
	ufd = client("a");
	tap_ok(closed(ufd) && conns("a") == PER_VM, "a host client of "
	    "a.sock is closed too: the VM's connections are at the bound");
	close(ufd);

	/* The other VM is served all the while. */
	rc = guest_connect(CID_B, 41000, &fd);
	tap_ok(rc == 0 && carried(fd, lb, &got), "VM b's guest still "
	    "connects, bytes both ways (%d)", rc);
	close(fd);
	if (got >= 0)
		close(got);
	tap_ok(wait_conns("b", 0), "it goes once both ends close");
	ufd = client("b");
	tap_ok(wait_conns("b", 1), "a host client of b.sock is taken");
	close(ufd);
	tap_ok(wait_conns("b", 0), "and goes as it closes");

	/* One of a's closed on both sides: room for one. */
	for (i = 0; i < PER_VM; i++)
		afd[i] = accept4(la, NULL, NULL, SOCK_CLOEXEC);
	close(gfd[0][0]);
	close(afd[0]);
	tap_ok(wait_conns("a", PER_VM - 1) &&
	    guest_connect(CID_A, 41000, &gfd[0][0]) == 0 &&
	    conns("a") == PER_VM, "with one of a's closed, its guest gets one "
	    "again");

	/* VMs up to the total. */
	lv[0] = la;
	lv[1] = lb;
	took = open_n(CID_B, 41000, gfd[1], PER_VM);
	for (v = 2; v < NVMS; v++) {
		snprintf(name, sizeof(name), "v%u", v);
		if (vsock_proxy_add(proxy, name, CID_A + v, (uid_t)-1, err,
		    sizeof(err)) < 0)
			tap_bail("serving %s: %s", name, err);
		snprintf(name, sizeof(name), "v%u.sock_41000", v);
		lv[v] = listener(name, true);
		took += open_n(CID_A + v, 41000, gfd[v], PER_VM);
	}
	tap_ok(took == (NVMS - 1) * PER_VM &&
	    conns(NULL) == VSOCK_PROXY_CONNS_MAX, "%u VMs at %u connections "
	    "each: %u in all, the total bound (%u)", NVMS, PER_VM,
	    VSOCK_PROXY_CONNS_MAX, conns(NULL));
	if (vsock_proxy_add(proxy, "last", CID_A + NVMS, (uid_t)-1, err,
	    sizeof(err)) < 0)
		tap_bail("serving last: %s", err);
	lv[NVMS] = listener("last.sock_41000", true);
	vsock_proxy_counts(proxy, NULL, &n0);
	rc = guest_connect(CID_A + NVMS, 41000, &fd);
	vsock_proxy_counts(proxy, NULL, &n1);
	tap_ok(rc == -EAGAIN && closed(fd) && untouched(lv[NVMS]) &&
	    n1.refused_limit == n0.refused_limit + 1 &&
	    logged_line("256 connections in all", "the bound"), "a VM with "
	    "none is refused beyond the total, counted, and a warning says "
	    "so (%d)", rc);
	close(fd);

	close(gfd[0][1]);
	close(afd[1]);
	tap_ok(wait_conns(NULL, VSOCK_PROXY_CONNS_MAX - 1) &&
	    guest_connect(CID_A + NVMS, 41000, &one) == 0 &&
	    carried(one, lv[NVMS], &got), "once one closes, it connects, bytes "
	    "both ways");
	close(one);
	if (got >= 0)
		close(got);

	vsock_proxy_remove(proxy, "v2");
	tap_ok(conns("v2") == 0 && conns(NULL) == VSOCK_PROXY_CONNS_MAX -
	    PER_VM, "a VM that stops takes its connections with it (%u "
	    "left)", conns(NULL));
	for (v = 0; v <= NVMS; v++)
		close(lv[v]);
	for (i = 2; i < PER_VM; i++)
		close(afd[i]);
}

int
main(void)
{
	setup();
	test_legit();
	test_nobody();
	test_refused();
	test_bounds();
	vsock_proxy_free(proxy);
	event_base_free(base);
	return tap_done();
}
