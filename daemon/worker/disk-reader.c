/* See disk-reader.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blk-image.h"
#include "disk-reader.h"
#include "sandbox.h"
#include "test-hook.h"
#include "text-escape.h"

/* The page the reader answers in, shared with its parent. */
struct disk_reader_answer {
	int done;			/* 1: the reader got to the end */
	int rc;				/* boot_choose's */
	char err[512];
	struct image_boot boot;		/* kernel, initrd: NULL */
	struct disk_reader_facts facts;
};

/* The reader's disk: the caller's, plus what the first read saw. */
struct disk_reader_disk {
	const struct image_disk *disk;
	struct disk_reader_facts *facts;
};

static long
disk_reader_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- the reader (the child) --------------------------------------------- */

static int
disk_reader_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct disk_reader_disk *rd = ctx;

	/* Who reads, asked at the moment of its first read. */
	if (!rd->facts->read) {
		sandbox_look(&rd->facts->who);
		for (int fd = 0; fd < 4096; fd++)
			rd->facts->open_fds += fcntl(fd, F_GETFD) >= 0;
		rd->facts->read = true;
	}
	return rd->disk->read(rd->disk->ctx, buf, len, off);
}

/* The address space mapped now, in bytes (0: unknown). */
static unsigned long long
disk_reader_mapped(void)
{
	unsigned long long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu", &pages) != 1)
		pages = 0;
	fclose(f);
	return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/*
 * The bounds: processor time, no core file (it would hold the disk's
 * bytes), and the address space (not in sanitizer builds, whose shadow
 * memory reserves terabytes).
 */
static int
disk_reader_limit(const struct disk_reader_request *req, char *err,
    size_t errlen)
{
	struct rlimit cpu = { DISK_READER_CPU_S, DISK_READER_CPU_S };
	struct rlimit core = { 0, 0 };
	struct rlimit as;
	unsigned long long mapped;

	if (setrlimit(RLIMIT_CPU, &cpu) < 0 ||
	    setrlimit(RLIMIT_CORE, &core) < 0) {
		snprintf(err, errlen, "disk reader: limits: %s",
		    strerror(errno));
		return -errno;
	}
	if (sandbox_sanitized_build() || (mapped = disk_reader_mapped()) == 0)
		return 0;
	as.rlim_cur = as.rlim_max = mapped + req->kernel_max +
	    req->initrd_max + DISK_READER_HEAP;
	if (setrlimit(RLIMIT_AS, &as) < 0) {
		snprintf(err, errlen, "disk reader: address space limit: %s",
		    strerror(errno));
		return -errno;
	}
	return 0;
}

static int
disk_reader_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int
disk_reader_fd_order(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * Close every descriptor but the standard streams, the disk's and the
 * two memory files: a reader taken over by what it parses must not
 * reach the link to vmmd (and forge the answer to worker.boot), the
 * console log, the TAP or anything else the worker holds.
 */
static int
disk_reader_close_others(const struct disk_reader_request *req, int kfd,
    int ifd)
{
	int keep[BLK_IMAGE_MAX_CHAIN + 2];
	unsigned int n = 0, i, lo = STDERR_FILENO + 1;

	if (req->disk_nfds > BLK_IMAGE_MAX_CHAIN)
		return -EINVAL;
	for (i = 0; i < req->disk_nfds; i++)
		keep[n++] = req->disk_fds[i];
	keep[n++] = kfd;
	keep[n++] = ifd;
	qsort(keep, n, sizeof(keep[0]), disk_reader_fd_order);
	for (i = 0; i < n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if (keep[i] > (int)lo &&
		    close_range(lo, (unsigned int)keep[i] - 1, 0) < 0)
			return -errno;
		lo = (unsigned int)keep[i] + 1;
	}
	return close_range(lo, ~0U, 0) < 0 ? -errno : 0;
}

static void __attribute__((noreturn))
disk_reader_child(const struct disk_reader_request *req,
    struct disk_reader_answer *a, int kfd, int ifd)
{
	struct disk_reader_disk rd = { .disk = req->disk, .facts = &a->facts };
	struct image_disk d = *req->disk;
	struct image_boot b;
	int rc;

	signal(SIGPIPE, SIG_DFL);
	if ((rc = disk_reader_close_others(req, kfd, ifd)) < 0)
		snprintf(a->err, sizeof(a->err), "disk reader: closing what it "
		    "inherited: %s", strerror(-rc));
	else
		rc = disk_reader_limit(req, a->err, sizeof(a->err));
	if (rc == 0 && !req->unconfined)
		rc = sandbox_enter_reader(a->err, sizeof(a->err));
	if (rc == 0)
		rc = test_hook_reader(a->err, sizeof(a->err));
	if (rc < 0) {
		a->rc = rc;
		a->done = 1;
		_exit(1);
	}
	d.read = disk_reader_read;
	d.ctx = &rd;
	rc = req->module->boot_choose(&d, req->append, req->kernel_max,
	    req->initrd_max, &b, a->err, sizeof(a->err));
	if (rc == 0) {
		if ((rc = disk_reader_write_all(kfd, b.kernel,
		    b.kernel_len)) == 0 && b.initrd_len > 0)
			rc = disk_reader_write_all(ifd, b.initrd,
			    b.initrd_len);
		if (rc < 0)
			snprintf(a->err, sizeof(a->err), "boot: a memory "
			    "file for the kernel: %s", strerror(-rc));
		a->boot = b;
		a->boot.kernel = a->boot.initrd = NULL;
	}
	a->rc = rc;
	a->done = 1;
	/* No exit handlers, no stdio buffers: they are the parent's. */
	_exit(0);
}

/* --- the parent ---------------------------------------------------------- */

/*
 * Wait for pid until deadline (CLOCK_MONOTONIC ms), then kill it; reap
 * it either way.  Whether it was killed for time.
 */
static bool
disk_reader_wait(pid_t pid, long deadline, int *status, struct rusage *ru)
{
	struct pollfd pfd = { .events = POLLIN };
	siginfo_t info;
	bool late = false;
	long left;

	pfd.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		memset(&info, 0, sizeof(info));
		if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG |
		    WNOWAIT) == 0 && info.si_pid == pid)
			break;
		left = deadline - disk_reader_now_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			late = true;
			break;
		}
		if (pfd.fd >= 0)
			(void)poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
		else
			usleep(10000);	/* no pidfd: a kernel before 5.3 */
	}
	if (pfd.fd >= 0)
		close(pfd.fd);
	while (wait4(pid, status, 0, ru) < 0 && errno == EINTR)
		;
	return late;
}

/* A memory file for the reader to fill: -errno or its descriptor. */
static int
disk_reader_memfd(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	return fd < 0 ? -errno : fd;
}

/* fd holds exactly len bytes, at most max: sealed, 0; else -EIO. */
static int
disk_reader_seal(int fd, size_t len, size_t max)
{
	struct stat st;

	if (len > max || fstat(fd, &st) < 0 || st.st_size < 0 ||
	    (size_t)st.st_size != len)
		return -EIO;
	/* The guest's every reset reads the same bytes. */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL);
	return 0;
}

static void
disk_reader_terminate(char *s, size_t len)
{
	s[len - 1] = '\0';
}

/* A string of the answer that is shown to people: ended, and escaped
 * again (the reader escapes it, unless it was taken over). */
static void
disk_reader_shown(char *s, size_t len)
{
	char tmp[2048];

	disk_reader_terminate(s, len);
	text_escape(tmp, len < sizeof(tmp) ? len : sizeof(tmp), s,
	    strlen(s));
	memcpy(s, tmp, strlen(tmp) + 1);
}

/* What the reader answered, checked as a stranger's answer. */
static int
disk_reader_take(const struct disk_reader_request *req,
    struct disk_reader_answer *a, struct image_boot *out, int kfd, int ifd,
    char *err, size_t errlen)
{
	struct image_boot *b = &a->boot;

	disk_reader_shown(a->err, sizeof(a->err));
	if (a->rc > 0 || a->rc < -4095)
		a->rc = -EIO;
	if (a->rc < 0) {
		snprintf(err, errlen, "%s", a->err[0] != '\0' ? a->err :
		    "disk reader: failed");
		return a->rc;
	}
	/* The command line goes to the guest byte for byte. */
	disk_reader_terminate(b->cmdline, sizeof(b->cmdline));
	disk_reader_shown(b->kernel_from, sizeof(b->kernel_from));
	disk_reader_shown(b->initrd_from, sizeof(b->initrd_from));
	disk_reader_shown(b->rule, sizeof(b->rule));
	disk_reader_shown(b->why, sizeof(b->why));
	if (b->kernel_len == 0 ||
	    disk_reader_seal(kfd, b->kernel_len, req->kernel_max) < 0 ||
	    disk_reader_seal(ifd, b->initrd_len, req->initrd_max) < 0) {
		snprintf(err, errlen, "disk reader: its kernel or initrd is "
		    "not what it said");
		return -EIO;
	}
	*out = *b;
	out->kernel = out->initrd = NULL;
	return 0;
}

int
disk_reader_choose(const struct disk_reader_request *req,
    struct image_boot *out, int *kernel_fd, int *initrd_fd,
    struct disk_reader_facts *facts, char *err, size_t errlen)
{
	struct disk_reader_answer *a;
	struct rusage ru;
	long start = disk_reader_now_ms();
	int timeout = test_hook_reader_timeout_ms(DISK_READER_TIMEOUT_MS);
	int kfd, ifd, rc, status = 0;
	bool late;
	pid_t pid;

	memset(facts, 0, sizeof(*facts));
	*kernel_fd = *initrd_fd = -1;
	a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errlen, "disk reader: %s", strerror(-rc));
		return rc;
	}
	kfd = disk_reader_memfd("kernel");
	ifd = kfd >= 0 ? disk_reader_memfd("initrd") : -1;
	if (kfd < 0 || ifd < 0) {
		rc = kfd < 0 ? kfd : ifd;
		snprintf(err, errlen, "boot: a memory file for the kernel: %s",
		    strerror(-rc));
		goto close_files;
	}
	fflush(NULL);	/* nothing buffered is written twice */
	if ((pid = fork()) < 0) {
		rc = -errno;
		snprintf(err, errlen, "disk reader: fork: %s", strerror(-rc));
		goto close_files;
	}
	if (pid == 0)
		disk_reader_child(req, a, kfd, ifd);
	memset(&ru, 0, sizeof(ru));
	late = disk_reader_wait(pid, start + timeout, &status, &ru);
	*facts = a->facts;
	facts->max_rss_kib = ru.ru_maxrss;
	facts->elapsed_ms = disk_reader_now_ms() - start;
	if (late || (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)) {
		rc = -ETIMEDOUT;
		snprintf(err, errlen, "%s: reading its boot configuration "
		    "took more than %d ms: given up", req->disk->name, late ?
		    timeout : DISK_READER_CPU_S * 1000);
	} else if (WIFSIGNALED(status)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: the process reading its boot "
		    "configuration died of signal %d%s", req->disk->name,
		    WTERMSIG(status), WTERMSIG(status) == SIGSYS ?
		    " (a system call its filter forbids: see the log)" : "");
	} else if (a->done != 1) {
		rc = -EIO;
		snprintf(err, errlen, "%s: the process reading its boot "
		    "configuration exited with status %d, answering nothing",
		    req->disk->name, WIFEXITED(status) ? WEXITSTATUS(status) :
		    -1);
	} else if ((rc = disk_reader_take(req, a, out, kfd, ifd, err,
	    errlen)) == 0) {
		*kernel_fd = kfd;
		if (out->initrd_len > 0)
			*initrd_fd = ifd;
		else
			close(ifd);
		munmap(a, sizeof(*a));
		return 0;
	}
close_files:
	if (kfd >= 0)
		close(kfd);
	if (ifd >= 0)
		close(ifd);
	munmap(a, sizeof(*a));
	return rc;
}
