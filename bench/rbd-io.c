/*
 * What an RBD disk costs the process that serves it (rbd.sh runs it):
 *
 *   rbd-io cluster DIR      a one-node memstore cluster in DIR with a
 *                           256 MiB image rbd/bench; prints the
 *                           configuration's path, runs until stdin ends
 *   rbd-io client CONF MIB REQUEST_BYTES
 *                           rbd/bench opened through the RBD backend
 *                           (locked), MIB written in requests of
 *                           REQUEST_BYTES, 16 in flight, flushed, read
 *                           back; prints the threads and memory the
 *                           connection added
 *
 * The client alone runs under strace -c -f, so its system calls are
 * the backend's and librbd's, not the cluster's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk-rbd.h"
#include "ceph-cluster.h"
#include "proc-figure.h"

#define DEPTH	16

struct req {
	struct blk_io io;
	struct iovec iov;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static unsigned int inflight;
static int failed;

static void
req_done(struct blk_io *io, int result)
{
	pthread_mutex_lock(&lock);
	inflight--;
	if (result < 0)
		failed = result;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* Every byte of [0, bytes) moved by op, DEPTH requests in flight. */
static int
run(struct blk_backend *be, enum blk_op op, uint8_t *buf, uint64_t bytes,
    size_t reqlen)
{
	static struct req reqs[DEPTH];
	uint64_t off = 0;
	unsigned int slot = 0;

	while (off < bytes) {
		struct req *q = &reqs[slot];

		pthread_mutex_lock(&lock);
		while (inflight == DEPTH)
			pthread_cond_wait(&cond, &lock);
		inflight++;
		pthread_mutex_unlock(&lock);
		/* Slots are reused in turn: the oldest is done by now. */
		q->iov.iov_base = buf + (off % (DEPTH * reqlen));
		q->iov.iov_len = reqlen;
		q->io = (struct blk_io){ .op = op, .offset = off,
		    .iov = &q->iov, .niov = 1, .done = req_done };
		if (be->ops->submit(be->ctx, &q->io) < 0)
			return -EIO;
		off += reqlen;
		slot = (slot + 1) % DEPTH;
	}
	pthread_mutex_lock(&lock);
	while (inflight > 0)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return failed;
}

static int
client(const char *conf, uint64_t mib, size_t reqlen)
{
	struct blk_rbd_config cfg = { .pool = CEPH_CLUSTER_POOL,
	    .image = "bench", .conf = conf, .lock = true };
	struct blk_backend be;
	struct blk_rbd *r;
	struct req fl;
	char err[512];
	uint8_t *buf;
	long rss0, pss0, thr0;
	int rc;

	if ((buf = malloc(DEPTH * reqlen)) == NULL)
		return 1;
	memset(buf, 0x5a, DEPTH * reqlen);
	rss0 = proc_figure("/proc/self/status", "VmRSS:");
	pss0 = proc_figure("/proc/self/smaps_rollup", "Pss:");
	thr0 = proc_figure("/proc/self/status", "Threads:");
	if (blk_rbd_new(&r, &cfg, &be, err, sizeof(err)) < 0) {
		fprintf(stderr, "rbd-io: %s\n", err);
		return 1;
	}
	/* A mark in strace's output: what follows is after the open. */
	(void)write(-1, "rbd-io: opened", 14);
	printf("connected: %ld threads more, VmRSS %+ld kB, Pss %+ld kB "
	    "(from %ld kB and %ld kB, librbd already mapped)\n",
	    proc_figure("/proc/self/status", "Threads:") - thr0,
	    proc_figure("/proc/self/status", "VmRSS:") - rss0,
	    proc_figure("/proc/self/smaps_rollup", "Pss:") - pss0, rss0, pss0);
	rc = run(&be, BLK_WRITE, buf, mib << 20, reqlen);
	fl.io = (struct blk_io){ .op = BLK_FLUSH, .done = req_done };
	pthread_mutex_lock(&lock);
	inflight++;
	pthread_mutex_unlock(&lock);
	if (rc == 0 && be.ops->submit(be.ctx, &fl.io) == 0)
		rc = run(&be, BLK_READ, buf, 0, reqlen);
	if (rc == 0)
		rc = run(&be, BLK_READ, buf, mib << 20, reqlen);
	printf("after %llu MiB written and read: %ld threads, VmRSS %ld kB, "
	    "Pss %ld kB\n", (unsigned long long)mib,
	    proc_figure("/proc/self/status", "Threads:"),
	    proc_figure("/proc/self/status", "VmRSS:"),
	    proc_figure("/proc/self/smaps_rollup", "Pss:"));
	blk_rbd_free(r);
	free(buf);
	if (rc < 0)
		fprintf(stderr, "rbd-io: I/O failed: %s\n", strerror(-rc));
	return rc < 0;
}

static int
cluster(const char *dir)
{
	struct ceph_cluster c;
	char err[1024], buf[64];

	if (ceph_cluster_start(&c, dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "rbd-io: %s\n", err);
		return 1;
	}
	if (ceph_cluster_run(&c, NULL, 0, "rbd", "create", "--size", "256M",
	    CEPH_CLUSTER_POOL "/bench", NULL) != 0) {
		fprintf(stderr, "rbd-io: rbd create failed\n");
		ceph_cluster_stop(&c);
		return 1;
	}
	printf("%s\n", c.conf);
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	ceph_cluster_stop(&c);
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "cluster") == 0)
		return cluster(argv[2]);
	if (argc == 5 && strcmp(argv[1], "client") == 0)
		return client(argv[2], strtoull(argv[3], NULL, 0),
		    strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: %s cluster DIR | client CONF MIB "
	    "REQUEST_BYTES\n", argv[0]);
	return 2;
}
