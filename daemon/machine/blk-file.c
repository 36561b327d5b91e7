/* See blk-file.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blk-file.h"

struct blk_file {
	int fd;
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t work;		/* a request is queued, or stop */
	pthread_cond_t idle;		/* pending reached 0 */
	struct blk_io *head, **tail;	/* the queue */
	unsigned int pending;		/* queued or running */
	unsigned int nthreads;
	unsigned int waiting;		/* threads parked on work */
	bool stop;
	pthread_t threads[BLK_FILE_THREADS];
};

/* Segments handed to one call once a short transfer split the vector. */
#define BLK_FILE_WINDOW	64

/*
 * Move the whole of iov[0 .. niov), at off: 0 or -errno, -EIO at end of
 * file.  A call may move less than asked (NFS, FUSE, signals): the next
 * goes on from where it stopped, on a copy of at most BLK_FILE_WINDOW
 * segments of what is left, until every segment is done.
 */
static int
blk_file_rw(int fd, const struct iovec *iov, unsigned int niov,
    uint64_t off, bool write)
{
	struct iovec local[BLK_FILE_WINDOW];
	const struct iovec *v;
	size_t skip = 0;		/* bytes of iov[0] already moved */
	unsigned int n;
	ssize_t got;

	for (;;) {
		while (niov > 0 && skip >= iov->iov_len) {
			skip -= iov->iov_len;
			iov++;
			niov--;
		}
		if (niov == 0)
			return 0;
		if (skip == 0 && niov <= IOV_MAX) {
			v = iov;
			n = niov;
		} else {
			n = niov < BLK_FILE_WINDOW ? niov : BLK_FILE_WINDOW;
			memcpy(local, iov, n * sizeof(*iov));
			local[0].iov_base = (uint8_t *)local[0].iov_base +
			    skip;
			local[0].iov_len -= skip;
			v = local;
		}
		got = write ? pwritev(fd, v, (int)n, (off_t)off) :
		    preadv(fd, v, (int)n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EIO;
		off += (uint64_t)got;
		skip += (size_t)got;
	}
}

/* Zeroes written the slow way, where fallocate cannot. */
static int
blk_file_write_zeroes(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t zero[65536];
	struct iovec iov;
	int ret;

	while (len > 0) {
		iov.iov_base = (void *)zero;
		iov.iov_len = len < sizeof(zero) ? len : sizeof(zero);
		if ((ret = blk_file_rw(fd, &iov, 1, off, true)) < 0)
			return ret;
		off += iov.iov_len;
		len -= iov.iov_len;
	}
	return 0;
}

static int
blk_file_do(int fd, struct blk_io *io)
{
	switch (io->op) {
	case BLK_READ:
		return blk_file_rw(fd, io->iov, io->niov, io->offset, false);
	case BLK_WRITE:
		return blk_file_rw(fd, io->iov, io->niov, io->offset, true);
	case BLK_FLUSH:
		return fdatasync(fd) < 0 ? -errno : 0;
	case BLK_DISCARD:
		/* Advisory: a file system that cannot punch keeps the data. */
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		    (off_t)io->offset, (off_t)io->len);
		return 0;
	case BLK_WRITE_ZEROES:
		if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
		    (off_t)io->offset, (off_t)io->len) == 0)
			return 0;
		if (io->may_unmap && fallocate(fd, FALLOC_FL_PUNCH_HOLE |
		    FALLOC_FL_KEEP_SIZE, (off_t)io->offset,
		    (off_t)io->len) == 0)
			return 0;
		return blk_file_write_zeroes(fd, io->offset, io->len);
	}
	return -EINVAL;
}

static void *
blk_file_thread(void *arg)
{
	struct blk_file *f = arg;
	struct blk_io *io;
	int ret;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (f->head == NULL && !f->stop) {
			f->waiting++;
			pthread_cond_wait(&f->work, &f->lock);
			f->waiting--;
		}
		if (f->head == NULL)
			break;
		io = f->head;
		f->head = io->next;
		if (f->head == NULL)
			f->tail = &f->head;
		pthread_mutex_unlock(&f->lock);
		ret = blk_file_do(f->fd, io);
		io->done(io, ret);	/* takes the device's lock */
		pthread_mutex_lock(&f->lock);
		if (--f->pending == 0)
			pthread_cond_broadcast(&f->idle);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Called from vCPU threads under the device's lock: never blocks long. */
static int
blk_file_submit(void *ctx, struct blk_io *io)
{
	struct blk_file *f = ctx;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	io->next = NULL;
	*f->tail = io;
	f->tail = &io->next;
	f->pending++;
	if (f->waiting > 0) {
		pthread_cond_signal(&f->work);
	} else if (f->nthreads < BLK_FILE_THREADS) {
		ret = -pthread_create(&f->threads[f->nthreads], NULL,
		    blk_file_thread, f);
		if (ret == 0)
			f->nthreads++;
		else if (f->nthreads > 0)
			ret = 0;	/* the running ones will get to it */
		else {
			/* Nobody to run it: take it back. */
			f->head = NULL;
			f->tail = &f->head;
			f->pending--;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static void
blk_file_drain(void *ctx)
{
	struct blk_file *f = ctx;

	pthread_mutex_lock(&f->lock);
	while (f->pending > 0)
		pthread_cond_wait(&f->idle, &f->lock);
	pthread_mutex_unlock(&f->lock);
}

static const struct blk_backend_ops blk_file_ops = {
	.submit = blk_file_submit,
	.drain = blk_file_drain,
};

int
blk_file_new(struct blk_file **out, int fd, bool readonly,
    const char *serial, struct blk_backend *be)
{
	struct blk_file *f;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 512)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->fd = fd;
	f->tail = &f->head;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, NULL);
	memset(be, 0, sizeof(*be));
	be->ops = &blk_file_ops;
	be->ctx = f;
	be->size = (uint64_t)st.st_size & ~511ULL;
	be->readonly = readonly;
	if (serial != NULL)
		snprintf(be->serial, sizeof(be->serial), "%s", serial);
	*out = f;
	return 0;
}

void
blk_file_free(struct blk_file *f)
{
	unsigned int i;

	if (f == NULL)
		return;
	blk_file_drain(f);
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_broadcast(&f->work);
	pthread_mutex_unlock(&f->lock);
	for (i = 0; i < f->nthreads; i++)
		pthread_join(f->threads[i], NULL);
	pthread_cond_destroy(&f->work);
	pthread_cond_destroy(&f->idle);
	pthread_mutex_destroy(&f->lock);
	close(f->fd);
	free(f);
}
