/*
 * NBD disks served by qemu-storage-daemon (Debian's qemu-system-common)
 * over a Unix socket: the vblk guest (tests/guests/vblk.c) on a qcow2
 * image exported writable, beside a raw one exported read-only.  It
 * reads what the host put there, writes, flushes and reads back; vm.info
 * shows the disks connected and their I/O; after a reset (a power cycle)
 * it reads its disk again.  Then the server is stopped and started again
 * under the running guest: after a reset the guest's I/O goes through a
 * new connection the supervisor made, which vmctl info and /metrics
 * show with the connection's state.  Stopped, the image is clean
 * (qemu-img check) and holds what the guest wrote.  A VM whose server is
 * not there does not start, and says which disk.  Last, the guest on a
 * raw image served over TCP (nbd://127.0.0.1:PORT/vd), whose server
 * then goes and whose port answers nothing: while the supervisor
 * connects again, its loop answers vm.list (redial_answers()).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"
#include "vblk-disks.h"

#define QSD	"/usr/bin/qemu-storage-daemon"

static struct h_daemon *d;
static struct h_proc qsd;
static char sock[256], image[512], ro[512];

/*
 * qemu-storage-daemon as *q, serving "vd" (img, of format fmt) and "ro"
 * at srv (its --nbd-server address); ready once its socket exists (sock)
 * or the port takes connections (port).
 */
static int
qsd_start_at(struct h_proc *q, const char *img, const char *fmt,
    const char *srv, int port)
{
	char f1[600], f2[600], top[200];
	char *argv[] = {
		QSD, "--blockdev", f1, "--blockdev", top, "--blockdev", f2,
		"--nbd-server", (char *)srv,
		"--export", "type=nbd,id=e1,node-name=vd,name=vd,writable=on",
		"--export", "type=nbd,id=e2,node-name=ro,name=ro", NULL,
	};
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct stat st;
	double end = h_now_ms() + H_REPLY_MS;
	int fd;

	snprintf(f1, sizeof(f1), "driver=file,filename=%s,node-name=f1", img);
	snprintf(top, sizeof(top), "driver=%s,file=f1,node-name=vd", fmt);
	snprintf(f2, sizeof(f2), "driver=file,filename=%s,node-name=ro,"
	    "read-only=on", ro);
	if (h_spawn(q, argv) < 0)
		return -1;
	for (;;) {
		if (port == 0 && stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))
			return 0;
		if (port != 0) {
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, (struct sockaddr *)&sin,
			    sizeof(sin)) == 0) {
				close(fd);
				return 0;
			}
			if (fd >= 0)
				close(fd);
		}
		h_proc_pump(q, 50);
		if (h_now_ms() > end || q->status != -1) {
			tap_diag("qemu-storage-daemon: %s", h_flat(q->ebuf ?
			    q->ebuf : ""));
			return -1;
		}
	}
}

/* The Unix socket's server, of the qcow2 image. */
static int
qsd_start(void)
{
	char srv[400];

	unlink(sock);
	snprintf(srv, sizeof(srv), "addr.type=unix,addr.path=%s", sock);
	return qsd_start_at(&qsd, image, "qcow2", srv, 0);
}

static int
qsd_stop_proc(struct h_proc *q)
{
	int st;

	kill(q->pid, SIGTERM);
	st = h_proc_wait(q, H_REPLY_MS);
	h_proc_free(q);
	return st;
}

static int
qsd_stop(void)
{
	return qsd_stop_proc(&qsd);
}

/* A TCP port free a moment ago on the loopback, or 0. */
static int
free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/*
 * The inode of a socket of this network namespace in SYN_SENT to port on
 * the loopback (a connect under way), or 0: from /proc/net/tcp, whose
 * lines say "sl local rem st ... uid timeout inode", addresses as
 * HEXADDR:HEXPORT and SYN_SENT as st 02.
 */
static unsigned long
syn_sent_to(int port)
{
	char line[512], rem[64];
	unsigned int rport, st;
	unsigned long ino, found = 0;
	FILE *f = fopen("/proc/net/tcp", "re");

	if (f == NULL)
		return 0;
	while (found == 0 && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, " %*u: %*s %63s %x %*s %*s %*s %*u %*u %lu",
		    rem, &st, &ino) == 3 && st == 0x02 &&
		    sscanf(strchr(rem, ':') != NULL ? strchr(rem, ':') + 1 :
		    "", "%x", &rport) == 1 && (int)rport == port)
			found = ino;
	fclose(f);
	return found;
}

/*
 * A server that answers nothing at 127.0.0.1:port: a listener whose
 * queue of one connection is full (filled by *filler) and that never
 * accepts, so that the kernel drops every further SYN and a connect()
 * waits on.  The listener's fd, or -1.
 */
static int
blackhole(int port, int *filler)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd;

	*filler = -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) < 0 || bind(fd, (struct sockaddr *)&sin,
	    sizeof(sin)) < 0 || listen(fd, 0) < 0 ||
	    (*filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(*filler, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		tap_diag("blackhole on port %d: %s", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		if (*filler >= 0)
			close(*filler);
		*filler = -1;
		return -1;
	}
	return fd;
}

/*
 * n2's server gone, and its port answering nothing: the worker asks
 * the supervisor to connect again, and the supervisor's connect()
 * waits (up to NBD_CONNECT_TIMEOUT_MS, 5 s) for a server that never
 * answers.  Meanwhile vm.list is answered: asked once the connect is
 * seen under way (a socket in SYN_SENT to the port), and its answer
 * in before that very socket is gone, i.e. while the connect waits.
 * (Were the loop blocked in it, the answer could only come after.)  A
 * round whose answer came after its connect ended proves nothing
 * either way and is tried again, on a later connect (after a reset,
 * whose reads make a worker that gave up try again), up to 3 times.
 * Stopping n2 cancels the connect under way: its socket goes with it.
 */
static void
redial_answers(struct h_conn *c, int port)
{
	struct json_object *r;
	unsigned long ino = 0;
	double end;
	int hole, filler, round, during = 0;

	if ((hole = blackhole(port, &filler)) < 0) {
		tap_ok(0, "n2: a listener that never accepts on port %d",
		    port);
		return;
	}
	for (round = 0; round < 3 && !during; round++) {
		/* The worker retries for 10 s; the connect comes soon. */
		end = h_now_ms() + H_BOOT_MS;
		while ((ino = syn_sent_to(port)) == 0 && h_now_ms() < end)
			h_sleep_ms(5);
		if (ino == 0)
			break;
		r = h_call(c, "vm.list", NULL, H_REPLY_MS);
		during = h_ret(r) != NULL && syn_sent_to(port) == ino;
		json_object_put(r);
		if (!during) {
			tap_diag("round %d: vm.list answered after the connect "
			    "ended (a busy machine?)", round + 1);
			/* The guest reads again: a worker that gave up
			 * tries once more. */
			json_object_put(h_callf(c, H_REPLY_MS, "vm.reset",
			    "{\"name\":\"n2\"}"));
		}
	}
	tap_ok(ino != 0, "n2: the supervisor connects again to a server "
	    "that answers nothing (SYN_SENT to port %d)", port);
	tap_ok(during, "n2: vm.list answers while that connect waits");
	tap_ok(h_stop(c, "n2", true, -1, H_REPLY_MS) == 0, "n2: stopped "
	    "while it reconnects");
	/* The cancel comes before the state the stop waited for. */
	tap_ok(ino == 0 || syn_sent_to(port) != ino, "n2: its connect under "
	    "way went with it");
	close(filler);
	close(hole);
}

/* The same guest on a raw image served over TCP (nbd://). */
static void
test_tcp(struct h_conn *c)
{
	char srv[200], img[512];
	struct h_proc q;
	int port = free_port();

	snprintf(img, sizeof(img), "%s", h_in_dir(d, "tcp.raw"));
	snprintf(srv, sizeof(srv), "addr.type=inet,addr.host=127.0.0.1,"
	    "addr.port=%d", port);
	tap_ok(port > 0 && vdisk_make_base(img, 0644) == 0, "a raw image "
	    "for a server on TCP port %d", port);
	if (qsd_start_at(&q, img, "raw", srv, port) < 0) {
		tap_ok(0, "qemu-storage-daemon serves it over TCP");
		return;
	}
	tap_ok(h_create(c, "n2", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"nbd://127.0.0.1:%d/vd\"},{\"path\":\"nbd://127.0.0.1:%d/ro\","
	    "\"readonly\":true}]", h_env("VMMD_GUEST_VBLK"), port, port) == 0 &&
	    h_start(c, "n2") == 0, "n2: created and started on nbd://");
	tap_ok(vdisk_guest_passes(d, "n2", 1), "n2: the guest reads the base "
	    "over TCP, writes, flushes, reads back, passes");
	tap_ok(qsd_stop_proc(&q) == 0, "n2's server stopped");
	redial_answers(c, port);
}

/* vm.info's disk i of vm, or NULL (*r to put). */
static struct json_object *
disk_info(struct h_conn *c, const char *vm, int i, struct json_object **r)
{
	struct json_object *st, *disks;

	*r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", vm);
	if (!json_object_object_get_ex(h_ret(*r), "stats", &st) ||
	    !json_object_object_get_ex(st, "disks", &disks))
		return NULL;
	return json_object_array_get_idx(disks, (size_t)i);
}

/* /metrics from the daemon's socket (malloc'ed), or NULL. */
static char *
scrape(void)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: vmmd\r\n\r\n";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap);
	double end = h_now_ms() + H_REPLY_MS;
	struct pollfd p = { .events = POLLIN };
	ssize_t n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
	    h_in_dir(d, "metrics.sock"));
	p.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (buf == NULL || p.fd < 0 || connect(p.fd, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0 || write(p.fd, req, sizeof(req) - 1) < 0) {
		if (p.fd >= 0)
			close(p.fd);
		free(buf);
		return NULL;
	}
	while (len + 1 < cap && h_now_ms() < end && poll(&p, 1, 200) >= 0) {
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if ((n = read(p.fd, buf + len, cap - len - 1)) <= 0)
			break;
		len += (size_t)n;
	}
	close(p.fd);
	buf[len] = '\0';
	return buf;
}

/* Whether text has a sample of name for disk 0 of n1 with value v. */
static bool
has_sample(const char *text, const char *name, const char *v)
{
	const char *l;
	size_t n = strlen(name);

	for (l = text; l != NULL && *l != '\0'; l = strchr(l, '\n'),
	    l = l != NULL ? l + 1 : NULL) {
		const char *e = strchr(l, '\n') ?: l + strlen(l);
		char line[512];

		if (strncmp(l, name, n) != 0 || l[n] != '{' ||
		    (size_t)(e - l) >= sizeof(line))
			continue;
		memcpy(line, l, (size_t)(e - l));
		line[e - l] = '\0';
		if (strstr(line, "disk=\"0\"") != NULL &&
		    strstr(line, "vm=\"n1\"") != NULL &&
		    strcmp(strrchr(line, ' ') + 1, v) == 0)
			return true;
	}
	return false;
}

/* vmctl info and /metrics: disk 0 connected, after one reconnect. */
static void
shows_connection(void)
{
	struct h_proc p;
	int st = h_vmctl(d, &p, 10000, "info", "n1", NULL);
	const char *out = p.obuf != NULL ? p.obuf : "";
	char *m;

	tap_ok(st == 0 && strstr(out, "disk 0: nbd, 64.0 KiB, connected, ") !=
	    NULL && strstr(out, " 0 errors, 1 reconnects") != NULL,
	    "n1: vmctl info shows the NBD disk connected (%s)",
	    h_flat(strstr(out, "disk 0:") ?: out));
	h_proc_free(&p);
	m = scrape();
	tap_ok(m != NULL && has_sample(m, "vmmd_nbd_connected", "1") &&
	    has_sample(m, "vmmd_nbd_failed", "0") &&
	    has_sample(m, "vmmd_nbd_reconnects_total", "1") &&
	    has_sample(m, "vmmd_nbd_disconnects_total", "1") &&
	    has_sample(m, "vmmd_nbd_errors_total", "0"),
	    "n1: /metrics shows the disk connected, its one reconnect and no "
	    "error");
	if (m != NULL && strstr(m, "vmmd_nbd_") == NULL)
		tap_diag("no vmmd_nbd_ sample in %zu bytes", strlen(m));
	free(m);
}

static void
reset(struct h_conn *c, int run)
{
	struct json_object *r = h_callf(c, H_REPLY_MS, "vm.reset",
	    "{\"name\":\"n1\"}");

	tap_ok(h_ret(r) != NULL, "vm.reset %d", run - 1);
	json_object_put(r);
}

static void
test_nbd(struct h_conn *c)
{
	struct json_object *r, *disk;
	int fd;

	tap_ok(vdisk_make_base(h_in_dir(d, "base.raw"), 0644) == 0 &&
	    vdisk_qemu_img("convert", "-q", "-O", "qcow2",
	    h_in_dir(d, "base.raw"), image, NULL) == 0,
	    "a qcow2 image of the vblk guest's base");
	fd = open(ro, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	tap_ok(fd >= 0 && ftruncate(fd, 4096) == 0, "a raw image for the "
	    "read-only export");
	if (fd >= 0)
		close(fd);
	if (qsd_start() < 0) {
		tap_ok(0, "qemu-storage-daemon serves them");
		return;
	}
	tap_ok(h_create(c, "n1", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"nbd:unix:%s:vd\",\"serial\":\"nbd0\"},{\"path\":"
	    "\"nbd:unix:%s:ro\"}]", h_env("VMMD_GUEST_VBLK"), sock,
	    sock) == 0, "n1: created on both exports");
	tap_ok(h_start(c, "n1") == 0, "n1: started");
	tap_ok(h_file_expect(h_console_log(d, "n1"), "vblk: disk0 slot 2, 128 "
	    "sectors, serial nbd0", 1, H_BOOT_MS) == 0,
	    "n1: the export's 128 sectors, and the serial");
	tap_ok(vdisk_guest_passes(d, "n1", 1), "n1: the guest reads the base "
	    "through NBD, writes, flushes, reads back, passes");
	tap_ok(h_file_expect(h_console_log(d, "n1"), "vblk: disk1 read-only, "
	    "write status 1", 1, H_BOOT_MS) == 0,
	    "n1: the read-only export is a read-only disk");
	disk = disk_info(c, "n1", 0, &r);
	tap_ok(disk != NULL && strcmp(h_str(disk, "format") ?: "", "nbd") ==
	    0 && strcmp(h_str(disk, "state") ?: "", "connected") == 0 &&
	    h_int(disk, "size", -1) == VDISK_BASE_BYTES &&
	    h_int(disk, "reads", 0) > 0 && h_int(disk, "writes", 0) > 0 &&
	    h_int(disk, "errors", -1) == 0, "n1: vm.info shows the disk "
	    "connected, its reads and writes: %s", disk != NULL ?
	    h_text(disk) : "none");
	json_object_put(r);

	reset(c, 2);
	tap_ok(vdisk_guest_passes(d, "n1", 2), "n1: after a power cycle the "
	    "guest reads its disk again and passes");

	/* The server goes away under the running guest, and comes back. */
	tap_ok(qsd_stop() == 0, "qemu-storage-daemon stopped");
	tap_ok(qsd_start() == 0, "and started again");
	reset(c, 3);
	tap_ok(vdisk_guest_passes(d, "n1", 3), "n1: I/O resumes on a new "
	    "connection: the guest reads, writes, passes");
	disk = disk_info(c, "n1", 0, &r);
	tap_ok(disk != NULL && strcmp(h_str(disk, "state") ?: "",
	    "connected") == 0 && h_int(disk, "reconnects", 0) >= 1 &&
	    h_int(disk, "disconnects", 0) >= 1, "n1: vm.info counts the "
	    "disconnect and the reconnect: %s", disk != NULL ? h_text(disk) :
	    "none");
	json_object_put(r);
	shows_connection();
	tap_ok(h_stop(c, "n1", true, -1, H_REPLY_MS) == 0, "n1: stopped");
	tap_ok(qsd_stop() == 0, "qemu-storage-daemon stopped");
	tap_ok(vdisk_holds_writes(image, h_in_dir(d, "converted.raw")),
	    "qemu-img check finds the image clean, holding the guest's writes");

	/* No server: the start fails, naming the disk. */
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"n1\"}");
	tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r) ?: "",
	    "disk 0") != NULL && strstr(h_err_desc(r) ?: "", sock) != NULL,
	    "with no server the start fails: %s", h_err_desc(r) ?: "no error");
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"bad\","
	    "\"kernel\":\"%s\",\"disks\":[{\"path\":\"nbd:unix:relative\"}]}",
	    h_env("VMMD_GUEST_VBLK"));
	h_check_error(r, "invalid_argument", "an NBD address with a relative "
	    "socket path is refused");
	json_object_put(r);
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	if (vdisk_qemu_img_path() == NULL)
		tap_skip_all("qemu-img is not installed (qemu-utils)");
	if (access(QSD, X_OK) < 0)
		tap_skip_all("qemu-storage-daemon is not installed "
		    "(qemu-system-common)");
	c = h_setup(&d);
	snprintf(sock, sizeof(sock), "%s", h_in_dir(d, "nbd.sock"));
	snprintf(image, sizeof(image), "%s", h_in_dir(d, "disk.qcow2"));
	snprintf(ro, sizeof(ro), "%s", h_in_dir(d, "ro.img"));
	test_nbd(c);
	test_tcp(c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
