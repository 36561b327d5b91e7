/*
 * The RBD backend (daemon/disk/blk-rbd.c) against a real one-node Ceph
 * cluster this program starts (tests/ceph-cluster.c: a monitor and a
 * memory-backed OSD): reads, writes, flushes, discards and zeroing;
 * what was written read back after the image is closed and opened
 * again, and by `rbd export`; the exclusive lock refusing a second
 * writer and naming its holder, a read-only open that never locks,
 * the lock broken (the old holder blocklisted: its writes fail, its
 * state says so); clear errors for a missing pool, image or snapshot;
 * a silent OSD (SIGSTOP) failing a request with -EIO after the bounded
 * timeout, and the next one succeeding once it runs again; librbd
 * connecting and doing I/O in a child under the worker's filter for RBD
 * disks.  It also says what a connected client costs: threads and resident
 * memory before and after.
 *
 * Skips only where the Ceph daemons are not installed or this build
 * has no librbd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blk-rbd.h"
#include "ceph-cluster.h"
#include "proc-figure.h"
#include "rbd-module.h"
#include "sandbox.h"
#include "scratch.h"
#include "tap.h"

#define IMG_SIZE	(16u << 20)
#define WAIT_S		300	/* a busy machine's bound on one request */

static struct ceph_cluster cluster;

static pid_t cluster_owner;

/* A whole small file, NUL-terminated (malloc'ed), or NULL. */
static char *
file_read(const char *path, size_t *len)
{
	char *buf = malloc(65536);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 && buf != NULL ? read(fd, buf, 65535) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* A bail-out too leaves no Ceph daemon behind (not a child's exit). */
static void
stop_cluster(void)
{
	if (getpid() == cluster_owner)
		ceph_cluster_stop(&cluster);
}

struct waiter {
	struct blk_io io;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

static void
waiter_done(struct blk_io *io, int result)
{
	struct waiter *w = (struct waiter *)io;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->result = result;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* io on be, waited for (bounded): its result, or -ETIMEDOUT. */
static int
do_io(struct blk_backend *be, enum blk_op op, uint64_t off, uint64_t len,
    const struct iovec *iov, unsigned int niov)
{
	struct waiter w;
	struct timespec end;
	int rc;

	memset(&w, 0, sizeof(w));
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	w.io.op = op;
	w.io.offset = off;
	w.io.len = len;
	w.io.iov = iov;
	w.io.niov = niov;
	w.io.done = waiter_done;
	if ((rc = be->ops->submit(be->ctx, &w.io)) < 0)
		return rc;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += WAIT_S;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		if (pthread_cond_timedwait(&w.cond, &w.lock, &end) ==
		    ETIMEDOUT)
			break;
	rc = w.done ? w.result : -ETIMEDOUT;
	pthread_mutex_unlock(&w.lock);
	if (rc == -ETIMEDOUT)
		tap_bail("a request was not done in %d s", WAIT_S);
	return rc;
}

static int
rw(struct blk_backend *be, enum blk_op op, void *buf, uint64_t len,
    uint64_t off)
{
	/* Two pieces, so that the vectored calls are what is tested. */
	struct iovec iov[2] = {
		{ buf, len / 2 },
		{ (char *)buf + len / 2, len - len / 2 },
	};

	return do_io(be, op, off, 0, iov, 2);
}

static void
pattern(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 9));
}

static int
open_rbd(struct blk_rbd **out, struct blk_backend *be, const char *image,
    const char *snap, bool readonly, bool lock, bool break_lock, char *err,
    size_t errlen)
{
	struct blk_rbd_config cfg = {
		.pool = CEPH_CLUSTER_POOL,
		.image = image,
		.snap = snap,
		.conf = cluster.conf,
		.readonly = readonly,
		.lock = lock,
		.break_lock = break_lock,
		.serial = "rbd-test",
		.timeout_ms = 20000,
	};

	err[0] = '\0';
	return blk_rbd_new(out, &cfg, be, err, errlen);
}

/* The image's bytes by `rbd export`, compared with want. */
static int
export_equals(const char *image, const uint8_t *want, size_t len)
{
	const char *file = scratch_at("export.raw");
	char spec[64];
	uint8_t *got;
	int fd, rc;
	ssize_t n;

	unlink(file);
	snprintf(spec, sizeof(spec), "%s/%s", CEPH_CLUSTER_POOL, image);
	if ((rc = ceph_cluster_run(&cluster, NULL, 0, "rbd", "export",
	    "--no-progress", spec, file, NULL)) != 0) {
		tap_diag("rbd export: %d", rc);
		return 0;
	}
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (got = malloc(len + 1)) == NULL)
		return 0;
	n = read(fd, got, len + 1);
	close(fd);
	rc = n == (ssize_t)len && memcmp(got, want, len) == 0;
	free(got);
	return rc;
}

/*
 * The same image through the module the worker loads (vmmd-rbd.so of
 * this build, VMMD_RBD_MODULE_DIR): its table opens, reads, frees.
 */
static void
test_module(const uint8_t *want)
{
	const char *dir = getenv("VMMD_RBD_MODULE_DIR");
	const struct rbd_module *m;
	struct blk_rbd_config cfg = { .pool = CEPH_CLUSTER_POOL,
	    .image = "vd", .conf = cluster.conf, .readonly = true,
	    .timeout_ms = 20000 };
	struct blk_backend be;
	struct blk_rbd *r;
	static uint8_t buf[65536];
	char err[512] = "";
	int rc;

	if (dir == NULL) {
		tap_ok(1, "# SKIP the module: VMMD_RBD_MODULE_DIR not set");
		return;
	}
	rc = rbd_module_load(dir, &m, err, sizeof(err));
	tap_ok(rc == 0, "%s/%s loads: %s", dir, RBD_MODULE_FILE,
	    rc == 0 ? "ok" : err);
	if (rc < 0)
		return;
	rc = m->open(&r, &cfg, &be, err, sizeof(err));
	tap_ok(rc == 0 && be.readonly, "its table opens the image: %s", err);
	if (rc < 0)
		return;
	rc = rw(&be, BLK_READ, buf, sizeof(buf), 4096);
	tap_ok(rc == 0 && memcmp(buf, want + 4096, sizeof(buf)) == 0 &&
	    strcmp(m->state_name(BLK_RBD_CONNECTED), "connected") == 0,
	    "and reads what was written");
	m->free(r);
	rc = rbd_module_load("/nonexistent", &m, err, sizeof(err));
	tap_ok(rc == -ENOENT && strstr(err, "without Ceph RBD support") !=
	    NULL, "no module: %s", err);
}

/*
 * What the worker gets from the supervisor (supervisor/rbd-conf.h): the
 * configuration and a keyring one after the other in a sealed memory
 * file, read by /proc/self/fd/N.  The keyring's section, its key and
 * its caps lines included, must not stop librados from reading it.
 */
static void
test_conf_memfd(const uint8_t *want)
{
	static const char keyring[] = "\n[client.admin]\n"
	    "\tkey = AQBbP1BlAAAAABAAq3yKUb8WZpRbOWZkRlUOTg==\n"
	    "\tcaps mon = \"allow *\"\n\tcaps osd = \"allow *\"\n";
	struct blk_rbd_config cfg = { .pool = CEPH_CLUSTER_POOL,
	    .image = "vd", .readonly = true, .timeout_ms = 20000 };
	struct blk_backend be;
	struct blk_rbd *r;
	static uint8_t buf[4096];
	char err[512] = "", path[64], *conf;
	size_t len;
	int fd, rc;

	conf = file_read(cluster.conf, &len);
	fd = memfd_create("rbd-conf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (conf == NULL || fd < 0 || write(fd, conf, len) != (ssize_t)len ||
	    write(fd, keyring, sizeof(keyring) - 1) !=
	    (ssize_t)(sizeof(keyring) - 1) || lseek(fd, 0, SEEK_SET) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW |
	    F_SEAL_SHRINK) < 0)
		tap_bail("the configuration's memory file: %s",
		    strerror(errno));
	free(conf);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	cfg.conf = path;
	rc = blk_rbd_new(&r, &cfg, &be, err, sizeof(err));
	tap_ok(rc == 0, "the configuration and a keyring in one sealed "
	    "memory file, by %s: %s", path, err);
	close(fd);
	if (rc < 0)
		return;
	rc = rw(&be, BLK_READ, buf, sizeof(buf), 4096);
	tap_ok(rc == 0 && memcmp(buf, want + 4096, sizeof(buf)) == 0,
	    "and the image reads");
	blk_rbd_free(r);
}

/* A uid nothing else runs as, for the sandboxed child's task limit. */
#define SANDBOX_UID	2147480011u

/*
 * In a child under the worker's filter for guests with RBD disks
 * (sandbox.h's network; a uid of its own, the task limit of one vCPU
 * and an image): connect to the cluster and open the image from
 * scratch (by settings, no file: the sandbox opens none), write, flush,
 * read back, close.  Every connection librbd makes is made under the
 * filter.  Its exit status: 0, or the step that failed; SIGSYS names
 * the call on report.
 */
static void __attribute__((noreturn))
sandboxed_client(int report)
{
	const char *set[] = { "mon_host", cluster.mon_host, "auth_client_required",
	    "none", NULL };
	struct blk_rbd_config cfg = { .pool = CEPH_CLUSTER_POOL,
	    .image = "sb", .set = set, .lock = true, .timeout_ms = 60000 };
	struct sandbox_config sc = { .uid = SANDBOX_UID,
	    .threads = 2 + BLK_RBD_THREADS, .network = true,
	    .report_fd = report };
	struct blk_backend be;
	struct blk_rbd *r;
	static uint8_t w[65536], b[65536];
	char err[512];

	if (sandbox_enter(&sc, err, sizeof(err)) < 0) {
		fprintf(stderr, "# %s\n", err);
		_exit(2);
	}
	if (blk_rbd_new(&r, &cfg, &be, err, sizeof(err)) < 0) {
		printf("# sandboxed open: %s\n", err);
		_exit(3);
	}
	pattern(w, sizeof(w), 5);
	if (rw(&be, BLK_WRITE, w, sizeof(w), 512) != 0)
		_exit(4);
	if (do_io(&be, BLK_FLUSH, 0, 0, NULL, 0) != 0)
		_exit(5);
	if (rw(&be, BLK_READ, b, sizeof(b), 512) != 0 ||
	    memcmp(w, b, sizeof(w)) != 0)
		_exit(6);
	blk_rbd_free(r);
	_exit(0);
}

/*
 * Whether every thread of pid is stopped ('T' in its stat), waited for
 * up to WAIT_S: kill() only queues SIGSTOP, and a thread running on
 * another CPU may answer one more request before it stops.
 */
static bool
all_stopped(pid_t pid)
{
	char dir[64], path[400], line[512];
	time_t end = time(NULL) + WAIT_S;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	while (time(NULL) < end) {
		DIR *d = opendir(dir);
		struct dirent *e;
		bool all = d != NULL;

		while (all && (e = readdir(d)) != NULL) {
			FILE *f;
			char *p;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/stat", dir,
			    e->d_name);
			if ((f = fopen(path, "re")) == NULL)
				continue;	/* a thread that ended */
			if (fgets(line, sizeof(line), f) != NULL &&
			    (p = strrchr(line, ')')) != NULL &&
			    p[1] == ' ' && p[2] != 'T' && p[2] != 't')
				all = false;
			fclose(f);
		}
		if (d != NULL)
			closedir(d);
		if (all)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The OSD stopped (SIGSTOP: silent, its connections open) under an open
 * image with a 3 s timeout: a read fails with -EIO once the timeout has
 * passed, never hangs, and the state says failed; once the OSD runs
 * again the next read succeeds and the state is connected again.
 */
static void
test_lost(void)
{
	struct blk_rbd_config cfg = { .pool = CEPH_CLUSTER_POOL,
	    .image = "vd", .conf = cluster.conf, .readonly = true,
	    .timeout_ms = 3000 };
	struct blk_rbd_stats st;
	struct blk_backend be;
	struct blk_rbd *r;
	static uint8_t buf[4096];
	char err[512];
	struct timespec t0, t1;
	double s;
	int rc;

	if (blk_rbd_new(&r, &cfg, &be, err, sizeof(err)) < 0) {
		tap_ok(0, "an image opened with a 3 s timeout: %s", err);
		return;
	}
	kill(cluster.osd, SIGSTOP);
	if (!all_stopped(cluster.osd))
		tap_diag("the OSD's threads did not all stop");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = rw(&be, BLK_READ, buf, sizeof(buf), 8192);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	kill(cluster.osd, SIGCONT);
	s = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	blk_rbd_stats(r, &st);
	tap_ok(rc == -EIO && s >= 2.5 && st.state == BLK_RBD_FAILED,
	    "a silent OSD: the read fails with -EIO after its timeout "
	    "(%d after %.1f s), the state %s", rc, s,
	    blk_rbd_state_name(st.state));
	rc = rw(&be, BLK_READ, buf, sizeof(buf), 8192);
	blk_rbd_stats(r, &st);
	tap_ok(rc == 0 && st.state == BLK_RBD_CONNECTED, "the OSD back: the "
	    "next read succeeds (%d), the state %s", rc,
	    blk_rbd_state_name(st.state));
	blk_rbd_free(r);
}

static void
test_sandboxed(void)
{
	char report[128];
	int pipefd[2], status = 0;
	ssize_t n;
	pid_t pid;

	if (ceph_cluster_run(&cluster, NULL, 0, "rbd", "create", "--size",
	    "8M", CEPH_CLUSTER_POOL "/sb", NULL) != 0)
		tap_bail("rbd create %s/sb failed", CEPH_CLUSTER_POOL);
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		tap_bail("pipe: %s", strerror(errno));
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(pipefd[0]);
		sandboxed_client(pipefd[1]);
	}
	close(pipefd[1]);
	/* Bounded by the client's own timeouts (60 s a step). */
	if (waitpid(pid, &status, 0) < 0)
		tap_bail("waitpid: %s", strerror(errno));
	n = read(pipefd[0], report, sizeof(report) - 1);
	report[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "under the worker's filter with network, "
	    "librbd connects, writes, flushes, reads back and closes "
	    "(status 0x%x, report '%s')", status, report);
}

int
main(void)
{
	struct blk_backend be, be2, be3;
	struct blk_rbd *a = NULL, *b = NULL, *c = NULL;
	struct blk_rbd_stats st;
	char err[512], dir[PATH_MAX];
	uint8_t *want, *buf;
	long rss0, rss1, thr0, thr1;
	long rss_main = proc_figure("/proc/self/status", "VmRSS:");
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ceph_cluster_available(err, sizeof(err)) < 0)
		tap_skip_all("%s", err);
	{
		/* Nothing listens on port 1: refused, retried, given up. */
		static const char *const set[] = { "mon_host",
		    "v2:127.0.0.1:1", NULL };
		struct blk_rbd_config cfg = { .pool = "p", .image = "i",
		    .set = set, .timeout_ms = 2000 };

		rc = blk_rbd_new(&a, &cfg, &be, err, sizeof(err));
		if (rc == -EOPNOTSUPP)
			tap_skip_all("%s", err);
		tap_ok(rc < 0 && a == NULL, "an unreachable cluster's open "
		    "fails within its timeout: %s", err);
	}
	snprintf(dir, sizeof(dir), "%s/ceph", scratch_new("rbd"));
	cluster_owner = getpid();
	atexit(stop_cluster);
	mkdir(dir, 0755);
	if (ceph_cluster_start(&cluster, dir, err, sizeof(err)) < 0)
		tap_bail("the test cluster: %s", err);
	tap_ok(1, "a one-node memstore cluster is up at %s", cluster.mon_host);
	rc = ceph_cluster_run(&cluster, NULL, 0, "rbd", "create", "--size",
	    "16M", CEPH_CLUSTER_POOL "/vd", NULL);
	tap_ok(rc == 0, "rbd create %s/vd", CEPH_CLUSTER_POOL);

	want = calloc(1, IMG_SIZE);
	buf = malloc(IMG_SIZE);
	if (want == NULL || buf == NULL)
		tap_bail("out of memory");

	/* Errors say what is wrong. */
	rc = open_rbd(&a, &be, "nosuch", NULL, false, true, false, err,
	    sizeof(err));
	tap_ok(rc == -ENOENT && strstr(err, "nosuch") != NULL,
	    "a missing image: %s", err);
	{
		struct blk_rbd_config cfg = { .pool = "nopool", .image = "vd",
		    .conf = cluster.conf, .timeout_ms = 20000 };

		rc = blk_rbd_new(&a, &cfg, &be, err, sizeof(err));
		tap_ok(rc == -ENOENT && strstr(err, "nopool") != NULL,
		    "a missing pool: %s", err);
	}
	rc = open_rbd(&a, &be, "vd", "nosnap", false, false, false, err,
	    sizeof(err));
	tap_ok(rc == -ENOENT && strstr(err, "nosnap") != NULL,
	    "a missing snapshot: %s", err);

	/* The client's cost: before and after one connected image. */
	rss0 = proc_figure("/proc/self/status", "VmRSS:");
	thr0 = proc_figure("/proc/self/status", "Threads:");
	rc = open_rbd(&a, &be, "vd", NULL, false, true, false, err,
	    sizeof(err));
	tap_ok(rc == 0, "the image opened, locked: %s", err);
	if (rc < 0)
		goto out;
	rss1 = proc_figure("/proc/self/status", "VmRSS:");
	thr1 = proc_figure("/proc/self/status", "Threads:");
	tap_diag("one connected RBD image: %ld threads more, VmRSS %ld kB "
	    "more (%ld kB to %ld kB; %ld kB at main's start, librbd "
	    "mapped)", thr1 - thr0, rss1 - rss0, rss0, rss1, rss_main);
	tap_ok(be.size == IMG_SIZE && !be.readonly &&
	    strcmp(be.serial, "rbd-test") == 0, "size %llu, writable, "
	    "serial %s", (unsigned long long)be.size, be.serial);
	blk_rbd_stats(a, &st);
	tap_ok(st.locked && strncmp(st.client, "client.", 7) == 0 &&
	    st.state == BLK_RBD_CONNECTED, "state %s, lock held by %s",
	    blk_rbd_state_name(st.state), st.client);

	/* Writes of several pieces, a flush, reads back. */
	pattern(want + 4096, 65536, 1);
	pattern(want + (1u << 20) + 512, 8192, 2);
	pattern(want + IMG_SIZE - 4096, 4096, 3);
	rc = rw(&be, BLK_WRITE, want + 4096, 65536, 4096);
	rc = rc == 0 ? rw(&be, BLK_WRITE, want + (1u << 20) + 512, 8192,
	    (1u << 20) + 512) : rc;
	rc = rc == 0 ? rw(&be, BLK_WRITE, want + IMG_SIZE - 4096, 4096,
	    IMG_SIZE - 4096) : rc;
	tap_ok(rc == 0, "three writes (one at the image's end): %d", rc);
	rc = do_io(&be, BLK_FLUSH, 0, 0, NULL, 0);
	tap_ok(rc == 0, "flush: %d", rc);
	memset(buf, 0xee, IMG_SIZE);
	rc = rw(&be, BLK_READ, buf, IMG_SIZE, 0);
	tap_ok(rc == 0 && memcmp(buf, want, IMG_SIZE) == 0,
	    "the whole image read back as written: %d", rc);
	rc = do_io(&be, BLK_WRITE_ZEROES, 8192, 4096, NULL, 0);
	memset(want + 8192, 0, 4096);
	tap_ok(rc == 0, "write zeroes: %d", rc);
	rc = do_io(&be, BLK_DISCARD, (1u << 20), 4u << 20, NULL, 0);
	tap_ok(rc == 0, "discard: %d", rc);
	rc = rw(&be, BLK_READ, buf, 16384, 4096);
	tap_ok(rc == 0 && memcmp(buf, want + 4096, 16384) == 0,
	    "zeroed bytes read as zeroes, the rest as written");
	rc = rw(&be, BLK_READ, buf, 512, IMG_SIZE);
	tap_ok(rc == -EIO, "a read past the end is an I/O error: %d", rc);
	/* What was discarded is left out of the comparisons below. */
	rc = rw(&be, BLK_WRITE, want + (1u << 20), 4u << 20, 1u << 20);
	tap_ok(rc == 0 && do_io(&be, BLK_FLUSH, 0, 0, NULL, 0) == 0,
	    "the discarded range written again, flushed");
	/* done() ran; the count of what is in flight follows it. */
	be.ops->drain(be.ctx);
	blk_rbd_stats(a, &st);
	tap_diag("reads %llu (%llu bytes) writes %llu (%llu bytes) flushes "
	    "%llu discards %llu zeroes %llu errors %llu",
	    (unsigned long long)st.reads, (unsigned long long)st.read_bytes,
	    (unsigned long long)st.writes,
	    (unsigned long long)st.written_bytes,
	    (unsigned long long)st.flushes, (unsigned long long)st.discards,
	    (unsigned long long)st.zeroes, (unsigned long long)st.errors);
	tap_ok(st.writes == 4 && st.flushes == 2 && st.discards == 1 &&
	    st.zeroes == 1 && st.errors == 1 && st.inflight == 0,
	    "the figures count what was done");

	/* A second writer is refused, naming the holder. */
	rc = open_rbd(&b, &be2, "vd", NULL, false, true, false, err,
	    sizeof(err));
	tap_ok(rc == -EBUSY && b == NULL && strstr(err, st.client) != NULL,
	    "a second locking open is refused: %s", err);
	/* A read-only one never locks, and sees the data. */
	rc = open_rbd(&c, &be3, "vd", NULL, true, true, false, err,
	    sizeof(err));
	tap_ok(rc == 0 && be3.readonly, "a read-only open beside it: %s",
	    err);
	if (rc == 0) {
		rc = rw(&be3, BLK_READ, buf, IMG_SIZE, 0);
		tap_ok(rc == 0 && memcmp(buf, want, IMG_SIZE) == 0,
		    "reads what the holder wrote");
		blk_rbd_stats(c, &st);
		tap_ok(!st.locked, "holds no lock");
		blk_rbd_free(c);
		c = NULL;
	}

	/* Closed and opened again: the data is in the cluster. */
	blk_rbd_free(a);
	a = NULL;
	tap_ok(export_equals("vd", want, IMG_SIZE),
	    "rbd export gives back exactly what was written");
	test_module(want);
	test_conf_memfd(want);
	rc = open_rbd(&a, &be, "vd", NULL, false, true, false, err,
	    sizeof(err));
	tap_ok(rc == 0, "opened again, the lock taken again: %s", err);
	if (rc < 0)
		goto out;
	memset(buf, 0, IMG_SIZE);
	rc = rw(&be, BLK_READ, buf, IMG_SIZE, 0);
	tap_ok(rc == 0 && memcmp(buf, want, IMG_SIZE) == 0,
	    "and reads back what was written before");

	/* The lock broken: the old holder is fenced. */
	blk_rbd_stats(a, &st);
	rc = open_rbd(&b, &be2, "vd", NULL, false, true, true, err,
	    sizeof(err));
	tap_ok(rc == 0, "the lock of %s broken: %s", st.client, err);
	if (rc == 0) {
		pattern(buf, 4096, 9);
		rc = rw(&be2, BLK_WRITE, buf, 4096, 0);
		tap_ok(rc == 0, "the new holder writes");
		memcpy(want, buf, 4096);
	}
	pattern(buf, 4096, 10);
	rc = rw(&be, BLK_WRITE, buf, 4096, 0);
	blk_rbd_stats(a, &st);
	tap_ok(rc == -EIO && st.state == BLK_RBD_FAILED,
	    "the old holder's write fails (%d), its state %s", rc,
	    blk_rbd_state_name(st.state));
	blk_rbd_free(a);
	a = NULL;
	blk_rbd_free(b);
	b = NULL;
	tap_ok(export_equals("vd", want, IMG_SIZE),
	    "the image holds the new holder's write, not the old one's");

	test_sandboxed();
	test_lost();

	/* An image without the exclusive-lock feature: lock=off or say so. */
	rc = ceph_cluster_run(&cluster, NULL, 0, "rbd", "create", "--size",
	    "1M", "--image-feature", "layering", CEPH_CLUSTER_POOL "/nolock",
	    NULL);
	tap_ok(rc == 0, "rbd create %s/nolock without exclusive-lock",
	    CEPH_CLUSTER_POOL);
	rc = open_rbd(&c, &be3, "nolock", NULL, false, true, false, err,
	    sizeof(err));
	tap_ok(rc == -EOPNOTSUPP && strstr(err, "lock=off") != NULL,
	    "a locking open of it says what to do: %s", err);
	rc = open_rbd(&c, &be3, "nolock", NULL, false, false, false, err,
	    sizeof(err));
	tap_ok(rc == 0, "with lock=off it opens: %s", err);
	blk_rbd_free(c);
	c = NULL;

	/* A snapshot opens read-only. */
	rc = ceph_cluster_run(&cluster, NULL, 0, "rbd", "snap", "create",
	    CEPH_CLUSTER_POOL "/vd@s1", NULL);
	tap_ok(rc == 0, "rbd snap create");
	rc = open_rbd(&c, &be3, "vd", "s1", false, true, false, err,
	    sizeof(err));
	tap_ok(rc == 0 && be3.readonly, "a snapshot opens, read-only: %s",
	    err);
	if (rc == 0) {
		rc = rw(&be3, BLK_READ, buf, IMG_SIZE, 0);
		tap_ok(rc == 0 && memcmp(buf, want, IMG_SIZE) == 0,
		    "the snapshot reads as the image was");
		blk_rbd_free(c);
		c = NULL;
	}
out:
	blk_rbd_free(a);
	blk_rbd_free(b);
	blk_rbd_free(c);
	ceph_cluster_stop(&cluster);
	free(want);
	free(buf);
	return tap_done();
}
