/*
 * Unit tests for daemon/worker/sandbox.c, without KVM: the worker's
 * filter is loaded in a forked child, which then does what a worker
 * does (allowed calls), what it must not (a refused open, a forbidden
 * call), and the parent checks from the outside what the kernel says
 * about the child (/proc/PID/status) and how it died.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>

#include "sandbox.h"
#include "tap.h"

/*
 * In ASan builds the filter lets every open() through, for the
 * sanitizer runtime (sandbox.c): what is refused by name is then only
 * access(), stat() and socket().
 */
#if defined(__SANITIZE_ADDRESS__)
static const bool opens_refused = false;
#else
static const bool opens_refused = true;
#endif

/* What the child does once sandboxed. */
enum child_act {
	ACT_ALLOWED,		/* allowed calls, then wait for the parent */
	ACT_OPEN,		/* open a file: refused, not fatal */
	ACT_READ_FILES,		/* with read_files: reading only */
	ACT_NETWORK,		/* with network: TCP out, nothing else */
	ACT_FORBIDDEN,		/* mount(2): fatal */
	ACT_FORBIDDEN_THREAD,	/* the same from a second thread */
	ACT_WORKER_IO,		/* disks, log rotation, adoption accept */
	ACT_DEVICES,		/* doorbells, entropy, the TAP's calls */
	ACT_TUNSETIFF,		/* attaching to a network device: fatal */
	ACT_FCNTL,		/* the fcntl() commands a worker uses */
	ACT_SETOWN,		/* fcntl F_SETOWN: fatal */
	ACT_SETSIG,		/* fcntl F_SETSIG: fatal */
	ACT_ASYNC,		/* fcntl F_SETFL with O_ASYNC: fatal */
	ACT_UNLOCK,		/* fcntl F_OFD_SETLK: fatal */
	ACT_FORK,		/* fork(): fatal */
	ACT_STDIO,		/* the standard streams: at their end only */
	ACT_TRUNCATE_STDERR,	/* ftruncate(2): fatal */
	ACT_MAP_STDERR,		/* a shared mapping of stderr: fatal */
	ACT_TASKS,		/* threads up to RLIMIT_NPROC, with a uid */
};

/* The uid the task limit's child becomes: one nothing else runs as. */
#define TASKS_UID	2147480001u
#define TASKS_THREADS	2		/* threads the "guest" runs */

static void *
child_idle(void *arg)
{
	(void)arg;
	for (;;)
		sleep(60);	/* clock_nanosleep(2): allowed */
	return NULL;
}

struct child {
	pid_t pid;
	int report;		/* the sandbox's report, read end */
	int ctl;		/* a socket to the child */
};

static void *
child_thread(void *arg)
{
	(void)arg;
	mount("none", "/", "tmpfs", 0, NULL);
	return NULL;
}

/*
 * Descriptors a worker has before its sandbox: a disk image, a console
 * log and its old copy (here all three in one unlinked file and a
 * second one), the adoption socket with a supervisor waiting on it.
 */
struct child_fds {
	int file, old, listener, peer;
};

static int
child_fds_open(struct child_fds *f)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *dir = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";

	f->file = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	f->old = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	/* An abstract name: nothing to clean up. */
	snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
	    "vmmd-test-sandbox-%ld", (long)getpid());
	f->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	f->peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->file < 0 || f->old < 0 || f->listener < 0 || f->peer < 0 ||
	    bind(f->listener, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(f->listener, 1) < 0 ||
	    connect(f->peer, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		return -1;
	return 0;
}

/* Sandboxed: what the disk threads, console.c and relink.c do. */
static int
child_worker_io(const struct child_fds *f)
{
	static char block[4096], back[4096];
	struct iovec iov = { block, sizeof(block) };
	struct iovec riov = { back, sizeof(back) };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	off_t in = 0, out = 0;
	int cfd;

	memset(block, 'v', sizeof(block));
	if (pwritev(f->file, &iov, 1, 8192) != (ssize_t)sizeof(block) ||
	    preadv(f->file, &riov, 1, 8192) != (ssize_t)sizeof(back) ||
	    memcmp(block, back, sizeof(back)) != 0)
		return 24;
	if (fdatasync(f->file) < 0)
		return 25;
	/* The file system may not punch holes: refused, but not fatal. */
	if (fallocate(f->file, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    8192, 4096) < 0 && errno != EOPNOTSUPP)
		return 26;
	if (ftruncate(f->old, 0) < 0 ||
	    (copy_file_range(f->file, &in, f->old, &out, 12288, 0) < 0 &&
	    errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP) ||
	    ftruncate(f->file, 0) < 0)
		return 27;
	cfd = accept4(f->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0 || getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred,
	    &len) < 0 || cred.pid != getpid())
		return 28;
	close(cfd);
	return 0;
}

/*
 * Sandboxed: what the devices do once the guest runs, the TAP's calls
 * on a descriptor that is no TAP (the filter lets the request through,
 * the kernel then refuses it with ENOTTY or EINVAL: no TAP needs
 * CAP_NET_ADMIN here).
 */
static int
child_devices(void)
{
	char frame[64] = "frame", buf[64];
	struct iovec iov = { frame, sizeof(frame) };
	uint64_t one = 1;
	int efd, p[2];

	/* A doorbell (devhost.c) and virtio-rng's entropy. */
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0 || write(efd, &one, sizeof(one)) != sizeof(one) ||
	    read(efd, &one, sizeof(one)) != sizeof(one))
		return 30;
	if (getrandom(buf, sizeof(buf), GRND_NONBLOCK) < 0 && errno != EAGAIN)
		return 31;
	/* Frames out by writev, in by read (net-tap.c), on a pipe. */
	if (pipe2(p, O_CLOEXEC) < 0 ||
	    writev(p[1], &iov, 1) != (ssize_t)sizeof(frame) ||
	    read(p[0], buf, sizeof(buf)) != (ssize_t)sizeof(frame))
		return 32;
	if (ioctl(efd, TUNSETOFFLOAD, (unsigned long)TUN_F_CSUM) == 0 ||
	    (errno != ENOTTY && errno != EINVAL && errno != EBADFD))
		return 33;
	return 0;
}

/* Sandboxed: what libevent, libvncserver, kvm.c and machine.c do. */
static int
child_fcntl(void)
{
	int p[2], fl, fd;

	if (pipe2(p, O_CLOEXEC) < 0)
		return 40;
	if ((fl = fcntl(p[0], F_GETFL)) < 0 ||
	    fcntl(p[0], F_SETFL, fl | O_NONBLOCK) < 0 ||
	    (fcntl(p[0], F_GETFL) & O_NONBLOCK) == 0)
		return 41;
	if (fcntl(p[0], F_SETFD, 0) < 0 || fcntl(p[0], F_GETFD) != 0 ||
	    fcntl(p[0], F_SETFD, FD_CLOEXEC) < 0)
		return 42;
	if ((fd = fcntl(p[0], F_DUPFD_CLOEXEC, 10)) < 10 ||
	    fcntl(fd, F_GETFD) != FD_CLOEXEC)
		return 43;
	return 0;
}

/*
 * Sandboxed: the standard streams (a log file vmmd appends to) may be
 * written, not moved back, truncated or written at an offset; lseek()
 * on them fails as on a pipe.  Their numbers above 2 are any file.
 */
static int
child_stdio(int file)
{
	if (write(STDERR_FILENO, "", 0) < 0)
		return 50;
	if (lseek(STDERR_FILENO, 0, SEEK_SET) >= 0 || errno != ESPIPE ||
	    lseek(STDIN_FILENO, 0, SEEK_CUR) >= 0 || errno != ESPIPE)
		return 51;
	if (lseek(file, 0, SEEK_SET) != 0 || ftruncate(file, 0) < 0 ||
	    pwrite(file, "x", 1, 4096) != 1)
		return 52;
	return 0;
}

/* Sandboxed with TASKS_THREADS: threads until the kernel refuses. */
static int
child_tasks(void)
{
	pthread_t t;
	int i, r = 0;

	for (i = 1; i < 4 * TASKS_THREADS + 2 * SANDBOX_SPARE_TASKS; i++)
		if ((r = pthread_create(&t, NULL, child_idle, NULL)) != 0)
			break;
	/* This thread and i - 1 more: the limit. */
	if (r != EAGAIN || i != 2 * TASKS_THREADS + SANDBOX_SPARE_TASKS)
		return 60;
	return 0;
}

/*
 * Sandboxed with network (an RBD disk's librbd): a TCP connection to a
 * listener the child made before, over IPv4 and IPv6; no socket of
 * another family, no bind.  An exit status of 70 and up for a step
 * that failed.
 */
static int net_listener = -1;

/* A TCP listener on 127.0.0.1, for child_network(): its descriptor. */
static int
child_listener(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0)
		return -1;
	return fd;
}

static int
child_network(void)
{
	static const int refused[] = { AF_UNIX, AF_NETLINK, AF_PACKET,
	    AF_UNSPEC, AF_BRIDGE };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, lfd;
	size_t i;

	/* The listener is made before the filter, as a peer's would be. */
	lfd = net_listener;
	if (getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
		return 70;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 71;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 72;
	close(fd);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* A host without IPv6 says so; the filter allowed it. */
	if (fd < 0 && errno != EAFNOSUPPORT)
		return 73;
	if (fd >= 0)
		close(fd);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		fd = socket(refused[i], SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 || errno != EACCES)
			return 74 + (int)i;
	}
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 80;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
	    errno != EACCES)
		return 81;
	close(fd);
	return 0;
}

/*
 * A descriptor's status (fstat(), statx() with AT_EMPTY_PATH) always;
 * a file's by name (stat(), fstatat(), statx()) only unless names are
 * refused, EACCES then: whether a file exists is not for a confined
 * process to learn.  0, or the step that went wrong (90...).
 */
static int
child_stat(int fd, bool names_refused)
{
	struct statx stx;
	struct stat sb;
	int r;

	if (fstat(fd, &sb) < 0 || statx(fd, "", AT_EMPTY_PATH,
	    STATX_BASIC_STATS, &stx) < 0)
		return 90;
	r = stat("/etc/hostname", &sb);
	if (names_refused ? r == 0 || errno != EACCES : r < 0)
		return 91;
	r = fstatat(AT_FDCWD, "/etc", &sb, AT_SYMLINK_NOFOLLOW);
	if (names_refused ? r == 0 || errno != EACCES : r < 0)
		return 92;
	r = statx(AT_FDCWD, "/etc/hostname", 0, STATX_BASIC_STATS, &stx);
	if (names_refused ? r == 0 || errno != EACCES : r < 0)
		return 93;
	return 0;
}

/* The child: exit status 10 + step where a step failed. */
static void __attribute__((noreturn))
child_run(enum child_act act, int report, int ctl)
{
	const struct rlimit nocore = { 0, 0 };
	struct sandbox_config cfg = {
		.report_fd = report,
		.read_files = act == ACT_READ_FILES,
		.network = act == ACT_NETWORK,
		.uid = act == ACT_TASKS ? TASKS_UID : 0,
		.threads = act == ACT_TASKS ? TASKS_THREADS : 0,
	};
	struct flock lock = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	char err[256], byte = 'r', buf[16];
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	struct child_fds fds = { -1, -1, -1, -1 };
	pthread_t t;
	int fd;

	setrlimit(RLIMIT_CORE, &nocore);	/* SIGSYS would dump one */
	if ((act == ACT_WORKER_IO || act == ACT_STDIO) &&
	    child_fds_open(&fds) < 0) {
		fprintf(stderr, "# worker descriptors: %s\n", strerror(errno));
		_exit(29);
	}
	if (act == ACT_NETWORK && (net_listener = child_listener()) < 0) {
		fprintf(stderr, "# a TCP listener: %s\n", strerror(errno));
		_exit(29);
	}
	if (sandbox_enter(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "# %s\n", err);
		_exit(10);
	}
	switch (act) {
	case ACT_ALLOWED:
		/* What a worker does all day: memory, time, its sockets. */
		free(malloc(1 << 20));
		if (getpid() <= 0 || clock_gettime(CLOCK_MONOTONIC,
		    &(struct timespec){ 0 }) < 0)
			_exit(11);
		if (write(ctl, &byte, 1) != 1 || read(ctl, buf, 1) != 1)
			_exit(12);
		_exit(0);
	case ACT_OPEN:
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		if (opens_refused && (fd >= 0 || errno != EACCES))
			_exit(13);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 || errno != EACCES)
			_exit(14);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 || errno != EACCES)
			_exit(24);
		if (access("/etc/hostname", R_OK) == 0 || errno != EACCES)
			_exit(23);
		_exit(child_stat(ctl, opens_refused));
	case ACT_NETWORK:
		_exit(child_network());
	case ACT_READ_FILES:
		fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(19);
		close(fd);
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0 || errno != EACCES)
			_exit(20);
		fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EACCES)
			_exit(21);
		fd = open("/dev/null", O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EACCES)
			_exit(22);
		_exit(child_stat(ctl, false));
	case ACT_WORKER_IO:
		_exit(child_worker_io(&fds));
	case ACT_DEVICES:
		_exit(child_devices());
	case ACT_TUNSETIFF:
		/* Type 'T', as TUNSETOFFLOAD and TCGETS, and still fatal. */
		ioctl(ctl, TUNSETIFF, &ifr);
		_exit(34);
	case ACT_FORBIDDEN:
		mount("none", "/", "tmpfs", 0, NULL);
		_exit(15);
	case ACT_FORBIDDEN_THREAD:
		if (pthread_create(&t, NULL, child_thread, NULL) != 0)
			_exit(16);
		pthread_join(t, NULL);
		_exit(17);
	case ACT_FCNTL:
		_exit(child_fcntl());
	case ACT_SETOWN:
		fcntl(ctl, F_SETOWN, getppid());
		_exit(35);
	case ACT_SETSIG:
		fcntl(ctl, F_SETSIG, SIGKILL);
		_exit(36);
	case ACT_ASYNC:
		fcntl(ctl, F_SETFL, O_ASYNC | O_NONBLOCK);
		_exit(37);
	case ACT_UNLOCK:
		fcntl(ctl, F_OFD_SETLK, &lock);
		_exit(38);
	case ACT_FORK:
		if (fork() == 0)
			_exit(0);
		_exit(39);
	case ACT_STDIO:
		_exit(child_stdio(fds.file));
	case ACT_TRUNCATE_STDERR:
		ftruncate(STDERR_FILENO, 0);
		_exit(44);
	case ACT_MAP_STDERR:
		mmap(NULL, 4096, PROT_READ, MAP_SHARED, STDERR_FILENO, 0);
		_exit(45);
	case ACT_TASKS:
		_exit(child_tasks());
	}
	_exit(18);
}

static int
child_start(struct child *c, enum child_act act)
{
	int pipefd[2], sv[2];

	if (pipe2(pipefd, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fflush(stdout);
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		close(pipefd[0]);
		close(sv[0]);
		child_run(act, pipefd[1], sv[1]);
	}
	close(pipefd[1]);
	close(sv[1]);
	c->report = pipefd[0];
	c->ctl = sv[0];
	return 0;
}

static int
child_wait(struct child *c, char *report, size_t len)
{
	ssize_t n;
	int status;

	while (waitpid(c->pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	n = read(c->report, report, len - 1);
	report[n > 0 ? n : 0] = '\0';
	close(c->report);
	close(c->ctl);
	return status;
}

/* A field of /proc/PID/status, as text. */
static int
status_field(pid_t pid, const char *field, char *out, size_t len)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	FILE *f;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			snprintf(out, len, "%s", line + flen + 1 +
			    strspn(line + flen + 1, " \t"));
			out[strcspn(out, "\n")] = '\0';
			found = 0;
			break;
		}
	fclose(f);
	return found;
}

static void
test_allowed(void)
{
	char seccomp[32] = "", nnp[32] = "", capeff[32] = "", capbnd[32] = "";
	char uid[64] = "", report[64], byte;
	struct child c;
	int status;

	if (child_start(&c, ACT_ALLOWED) < 0)
		tap_bail("fork: %s", strerror(errno));
	tap_ok(read(c.ctl, &byte, 1) == 1, "the sandboxed child runs");
	status_field(c.pid, "Seccomp", seccomp, sizeof(seccomp));
	status_field(c.pid, "NoNewPrivs", nnp, sizeof(nnp));
	status_field(c.pid, "CapEff", capeff, sizeof(capeff));
	status_field(c.pid, "CapBnd", capbnd, sizeof(capbnd));
	status_field(c.pid, "Uid", uid, sizeof(uid));
	tap_ok(strcmp(seccomp, "2") == 0, "Seccomp: 2 (filter) (%s)",
	    seccomp);
	tap_ok(strcmp(nnp, "1") == 0, "NoNewPrivs: 1 (%s)", nnp);
	tap_ok(strtoull(capeff, NULL, 16) == 0, "CapEff: 0 (%s)", capeff);
	if (geteuid() == 0) {
		tap_ok(strtoull(capbnd, NULL, 16) == 0,
		    "as root: an empty bounding set (%s)", capbnd);
		tap_ok(strtoul(uid, NULL, 10) != 0,
		    "as root: an unprivileged uid (%s)", uid);
	} else {
		tap_ok(1, "# SKIP the bounding set: not root");
		tap_ok(1, "# SKIP the uid: not root");
	}
	byte = 'g';
	tap_ok(write(c.ctl, &byte, 1) == 1, "told to finish");
	status = child_wait(&c, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "allowed calls only: exits 0, reports nothing "
	    "(status 0x%x)", status);
}

/* A child that does act and is not talked to: its wait status. */
static int
child_run_to_end(enum child_act act, char *report, size_t len)
{
	struct child c;

	if (child_start(&c, act) < 0)
		tap_bail("fork: %s", strerror(errno));
	return child_wait(&c, report, len);
}

static void
test_refused(void)
{
	char report[64];
	int status = child_run_to_end(ACT_OPEN, report, sizeof(report));

	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "open(), access(), stat() by name and socket() "
	    "fail with EACCES, not fatal; fstat() works (status 0x%x)", status);
	status = child_run_to_end(ACT_NETWORK, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "network (RBD disks): TCP connections over "
	    "IPv4 and IPv6, other socket families and bind() fail with "
	    "EACCES (status 0x%x, report '%s')", status, report);
	status = child_run_to_end(ACT_WORKER_IO, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "disk I/O, log rotation by descriptor and the "
	    "adoption accept are allowed (status 0x%x, report '%s')", status,
	    report);
	status = child_run_to_end(ACT_DEVICES, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "eventfd, getrandom, writev and read, "
	    "TUNSETOFFLOAD are allowed (status 0x%x, report '%s')", status,
	    report);
	if (!opens_refused) {
		tap_ok(1, "# SKIP read_files: an ASan build allows every open");
		return;
	}
	status = child_run_to_end(ACT_READ_FILES, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "read_files: read-only opens and stat() by name "
	    "work, writing and creating opens fail with EACCES (status 0x%x)",
	    status);
}

static void
test_forbidden(enum child_act act, const char *call, const char *where)
{
	char report[64];
	int status = child_run_to_end(act, report, sizeof(report));

	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
	    "%s: %s kills it by SIGSYS (status 0x%x)", where, call, status);
	tap_ok(strncmp(report, call, strcspn(call, " ")) == 0 &&
	    report[strcspn(call, " ")] == '\0', "%s: the call is named on "
	    "the report pipe ('%s')", where, report);
}

/* What may reach other processes or vmmd's log, and what may not. */
static void
test_reach(void)
{
	char report[64];
	int status;

	status = child_run_to_end(ACT_FCNTL, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "fcntl F_GETFL, F_SETFL O_NONBLOCK, F_GETFD, "
	    "F_SETFD, F_DUPFD_CLOEXEC are allowed (status 0x%x, report '%s')",
	    status, report);
	status = child_run_to_end(ACT_STDIO, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "standard streams: written, lseek() fails "
	    "with ESPIPE; other files: lseek, ftruncate, pwrite (status 0x%x, "
	    "report '%s')", status, report);
	test_forbidden(ACT_SETOWN, "fcntl F_SETOWN", "the main thread");
	test_forbidden(ACT_SETSIG, "fcntl F_SETSIG", "the main thread");
	test_forbidden(ACT_ASYNC, "fcntl F_SETFL O_ASYNC", "the main thread");
	test_forbidden(ACT_UNLOCK, "fcntl F_OFD_SETLK", "the main thread");
	test_forbidden(ACT_FORK, "clone (fork)", "the main thread");
	test_forbidden(ACT_TRUNCATE_STDERR, "ftruncate (stderr)",
	    "the main thread");
	test_forbidden(ACT_MAP_STDERR, "mmap (stderr, MAP_SHARED)",
	    "the main thread");
	if (geteuid() != 0) {
		tap_ok(1, "# SKIP the task limit: not root");
		return;
	}
	status = child_run_to_end(ACT_TASKS, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "as uid %u for %d threads: %d tasks, the "
	    "next pthread_create() fails with EAGAIN (status 0x%x)",
	    TASKS_UID, TASKS_THREADS, 2 * TASKS_THREADS +
	    SANDBOX_SPARE_TASKS, status);
}

int
main(void)
{
	test_allowed();
	test_refused();
	test_forbidden(ACT_FORBIDDEN, "mount", "the main thread");
	test_forbidden(ACT_FORBIDDEN_THREAD, "mount", "another thread");
	test_forbidden(ACT_TUNSETIFF, "ioctl TUNSETIFF", "the main thread");
	test_reach();
	return tap_done();
}
