/* See disk-reader.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blk-chain.h"
#include "disk-reader.h"
#include "fd-write.h"
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

/* A reader under way (the parent's side). */
struct disk_reader {
	struct disk_reader_answer *a;	/* shared with the reader */
	pid_t pid;
	int pidfd;			/* -1: none (a kernel before 5.3) */
	int kfd, ifd;
	long start_ms;
	int timeout_ms;
	size_t kernel_max, initrd_max;
	char name[64];
};

/* The reader's disk: its chain, plus what the first read saw. */
struct disk_reader_disk {
	struct blk_image *img;
	uint64_t size;			/* whole sectors */
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
	struct iovec v = { buf, len };

	/* Who reads, asked at the moment of its first read. */
	if (!rd->facts->read) {
		sandbox_look(&rd->facts->who);
		for (int fd = 0; fd < 4096; fd++)
			rd->facts->open_fds += fcntl(fd, F_GETFD) >= 0;
		rd->facts->read = true;
	}
	if (off > rd->size || len > rd->size - off)
		return -EIO;
	return rd->img->ops->read(rd->img, &v, 1, off);
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

/* The reader's work, its bounds and filter in place; 0 or -errno. */
static int
disk_reader_work(const struct disk_reader_request *req,
    struct disk_reader_answer *a, int kfd, int ifd)
{
	struct disk_reader_disk rd = { .facts = &a->facts };
	struct image_disk d = { .read = disk_reader_read, .ctx = &rd,
	    .name = req->name };
	struct image_boot b;
	int rc;

	rc = blk_image_open_chain(req->disk_fds, req->formats,
	    req->disk_nfds, true, &rd.img);
	if (rc < 0) {
		snprintf(a->err, sizeof(a->err), "%s: %s", req->name,
		    rc == -EINVAL ? "not an image (with its backing files) "
		    "that vmmd can read" : strerror(-rc));
		return rc;
	}
	rd.size = d.size = rd.img->size & ~(uint64_t)511;
	rc = req->module->boot_choose(&d, req->append, req->kernel_max,
	    req->initrd_max, &b, a->err, sizeof(a->err));
	if (rc < 0)
		return rc;
	if ((rc = fd_write_all(kfd, b.kernel, b.kernel_len)) == 0 &&
	    b.initrd_len > 0)
		rc = fd_write_all(ifd, b.initrd, b.initrd_len);
	if (rc < 0) {
		snprintf(a->err, sizeof(a->err), "boot: a memory file for the "
		    "kernel: %s", strerror(-rc));
		return rc;
	}
	a->boot = b;
	a->boot.kernel = a->boot.initrd = NULL;
	return 0;
}

static void __attribute__((noreturn))
disk_reader_child(const struct disk_reader_request *req,
    struct disk_reader_answer *a, int kfd, int ifd, pid_t parent)
{
	int rc;

	/*
	 * A worker killed while its reader runs (vmmd's boot timeout
	 * comes before the reader's deadline) takes the reader with it:
	 * none lives on, orphaned, as a uid the next worker gets.  The
	 * parent's loop thread forked us and lives as long as it does;
	 * one that died before the prctl() is seen in getppid().
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
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
	if (rc == 0)
		rc = disk_reader_work(req, a, kfd, ifd);
	a->rc = rc;
	a->done = 1;
	/* No exit handlers, no stdio buffers: they are the parent's. */
	_exit(rc < 0);
}

/* --- the parent ---------------------------------------------------------- */

/*
 * Wait for the reader until its deadline, then kill it; reap it either
 * way, with what it used (waitid() on its pidfd, which the guest's
 * filter allows, where wait4() on any child would not be).  Whether it
 * was killed for time.
 */
static bool
disk_reader_wait(struct disk_reader *r, int *status, struct rusage *ru)
{
	struct pollfd pfd = { .fd = r->pidfd, .events = POLLIN };
	long deadline = r->start_ms + r->timeout_ms, left;
	siginfo_t info;
	bool late = false;

	for (;;) {
		left = deadline - disk_reader_now_ms();
		if (left <= 0) {
			late = true;
			break;
		}
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) > 0)
			break;
	}
	if (late)
		(void)syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL,
		    0);
	memset(&info, 0, sizeof(info));
	while (syscall(SYS_waitid, P_PIDFD, r->pidfd, &info, WEXITED, ru) <
	    0 && errno == EINTR)
		;
	*status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status,
	    0) : info.si_status & 0x7f;
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
disk_reader_take(const struct disk_reader *r, struct disk_reader_answer *a,
    struct image_boot *out, char *err, size_t errlen)
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
	    disk_reader_seal(r->kfd, b->kernel_len, r->kernel_max) < 0 ||
	    disk_reader_seal(r->ifd, b->initrd_len, r->initrd_max) < 0) {
		snprintf(err, errlen, "disk reader: its kernel or initrd is "
		    "not what it said");
		return -EIO;
	}
	*out = *b;
	out->kernel = out->initrd = NULL;
	return 0;
}

static void
disk_reader_free(struct disk_reader *r)
{
	if (r->kfd >= 0)
		close(r->kfd);
	if (r->ifd >= 0)
		close(r->ifd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	munmap(r->a, sizeof(*r->a));
	free(r);
}

int
disk_reader_start(const struct disk_reader_request *req,
    struct disk_reader **out, char *err, size_t errlen)
{
	struct disk_reader *r;
	pid_t parent;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->kfd = r->ifd = r->pidfd = -1;
	r->start_ms = disk_reader_now_ms();
	r->timeout_ms = test_hook_reader_timeout_ms(DISK_READER_TIMEOUT_MS);
	r->kernel_max = req->kernel_max;
	r->initrd_max = req->initrd_max;
	snprintf(r->name, sizeof(r->name), "%s", req->name);
	r->a = mmap(NULL, sizeof(*r->a), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->a == MAP_FAILED) {
		rc = -errno;
		free(r);
		snprintf(err, errlen, "disk reader: %s", strerror(-rc));
		return rc;
	}
	if ((rc = r->kfd = disk_reader_memfd("kernel")) < 0 ||
	    (rc = r->ifd = disk_reader_memfd("initrd")) < 0) {
		snprintf(err, errlen, "boot: a memory file for the kernel: %s",
		    strerror(-rc));
		goto fail;
	}
	fflush(NULL);	/* nothing buffered is written twice */
	parent = getpid();
	if ((r->pid = fork()) < 0) {
		rc = -errno;
		snprintf(err, errlen, "disk reader: fork: %s", strerror(-rc));
		goto fail;
	}
	if (r->pid == 0)
		disk_reader_child(req, r->a, r->kfd, r->ifd, parent);
	r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	if (r->pidfd < 0) {
		rc = -errno;
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
		snprintf(err, errlen, "disk reader: pidfd_open: %s",
		    strerror(-rc));
		goto fail;
	}
	*out = r;
	return 0;
fail:
	if (r->kfd < 0)
		r->kfd = -1;
	if (r->ifd < 0)
		r->ifd = -1;
	disk_reader_free(r);
	return rc;
}

int
disk_reader_finish(struct disk_reader *r, struct image_boot *out,
    int *kernel_fd, int *initrd_fd, struct disk_reader_facts *facts,
    char *err, size_t errlen)
{
	struct disk_reader_answer *a = r->a;
	struct rusage ru;
	int rc, status = 0;
	bool late;

	memset(facts, 0, sizeof(*facts));
	*kernel_fd = *initrd_fd = -1;
	memset(&ru, 0, sizeof(ru));
	late = disk_reader_wait(r, &status, &ru);
	*facts = a->facts;
	facts->max_rss_kib = ru.ru_maxrss;
	facts->elapsed_ms = disk_reader_now_ms() - r->start_ms;
	if (late || (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)) {
		rc = -ETIMEDOUT;
		snprintf(err, errlen, "%s: reading its boot configuration "
		    "took more than %d ms: given up", r->name, late ?
		    r->timeout_ms : DISK_READER_CPU_S * 1000);
	} else if (WIFSIGNALED(status)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: the process reading its boot "
		    "configuration died of signal %d%s", r->name,
		    WTERMSIG(status), WTERMSIG(status) == SIGSYS ?
		    " (a system call its filter forbids: see the log)" : "");
	} else if (a->done != 1) {
		rc = -EIO;
		snprintf(err, errlen, "%s: the process reading its boot "
		    "configuration exited with status %d, answering nothing",
		    r->name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	} else if ((rc = disk_reader_take(r, a, out, err, errlen)) == 0) {
		*kernel_fd = r->kfd;
		r->kfd = -1;
		if (out->initrd_len > 0) {
			*initrd_fd = r->ifd;
			r->ifd = -1;
		}
	}
	disk_reader_free(r);
	return rc;
}

void
disk_reader_cancel(struct disk_reader *r)
{
	struct rusage ru;
	int status;

	if (r == NULL)
		return;
	r->timeout_ms = 0;	/* already late: killed at once */
	(void)disk_reader_wait(r, &status, &ru);
	disk_reader_free(r);
}
