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

#include "blk-chain.h"
#include "blk-file.h"
#include "blk-qcow2.h"
#include "blk-raw.h"

struct blk_file {
	struct blk_image *img;		/* owned; its ops run on the threads */
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

/* One request, on a pool thread, through the image's format. */
static int
blk_file_do(struct blk_image *img, struct blk_io *io)
{
	switch (io->op) {
	case BLK_READ:
		return img->ops->read(img, io->iov, io->niov, io->offset);
	case BLK_WRITE:
		return img->ops->write(img, io->iov, io->niov, io->offset);
	case BLK_FLUSH:
		return img->ops->flush(img);
	case BLK_DISCARD:
		return img->ops->discard(img, io->offset, io->len);
	case BLK_WRITE_ZEROES:
		return img->ops->write_zeroes(img, io->offset, io->len,
		    io->may_unmap);
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
		ret = blk_file_do(f->img, io);
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
blk_file_new_image(struct blk_file **out, struct blk_image *img,
    const char *serial, struct blk_backend *be)
{
	struct blk_file *f;

	if (img->size < 512)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->img = img;
	f->tail = &f->head;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, NULL);
	memset(be, 0, sizeof(*be));
	be->ops = &blk_file_ops;
	be->ctx = f;
	be->size = img->size & ~511ULL;
	be->readonly = img->readonly;
	if (serial != NULL)
		snprintf(be->serial, sizeof(be->serial), "%s", serial);
	*out = f;
	return 0;
}

int
blk_file_new(struct blk_file **out, int fd, bool readonly,
    const char *serial, struct blk_backend *be)
{
	struct blk_image *img;
	struct stat st;
	int ret;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 512)
		return -EINVAL;
	if ((ret = blk_raw_open(fd, readonly, &img)) < 0)
		return ret;
	if ((ret = blk_file_new_image(out, img, serial, be)) < 0) {
		blk_image_free_disowned(img);
	}
	return ret;
}

int
blk_file_new_chain(struct blk_file **out, const int *fds,
    const enum blk_image_format *formats, unsigned int n, bool readonly,
    const char *serial, struct blk_backend *be)
{
	struct blk_image *img;
	int ret;

	if ((ret = blk_image_open_chain(fds, formats, n, readonly, &img)) < 0)
		return ret;
	if ((ret = blk_file_new_image(out, img, serial, be)) < 0) {
		/* The fds go back to the caller, as the contract says. */
		blk_image_free_disowned(img);
	}
	return ret;
}

int
blk_file_read(struct blk_file *f, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { buf, len };

	if (off > f->img->size || len > f->img->size - off)
		return -EIO;
	return f->img->ops->read(f->img, &v, 1, off);
}

int
blk_file_flush(struct blk_file *f)
{
	blk_file_drain(f);
	return f->img->ops->flush(f->img);
}

int
blk_file_push_top(struct blk_file *f, int fd)
{
	struct blk_image_stats st = { 0 };
	struct blk_image *top;
	int ret;

	if ((ret = blk_file_flush(f)) < 0)
		return ret;
	f->img->ops->stats(f->img, &st);
	ret = blk_qcow2_open(fd, false, f->img, st.format != NULL &&
	    strcmp(st.format, "qcow2") == 0 ? BLK_IMAGE_QCOW2 : BLK_IMAGE_RAW,
	    &top);
	if (ret < 0)
		return ret;
	if (top->size != f->img->size) {
		/* The guest's disk does not change size under it. */
		top->backing = NULL;
		blk_image_free_disowned(top);
		return -EINVAL;
	}
	/* Only read from now on: a write would fail, not land. */
	f->img->readonly = true;
	f->img = top;
	return 0;
}

uint64_t
blk_file_size(struct blk_file *f)
{
	return f->img->size;
}

void
blk_file_stats(struct blk_file *f, struct blk_image_stats *st)
{
	f->img->ops->stats(f->img, st);
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
	blk_image_free(f->img);
	free(f);
}
