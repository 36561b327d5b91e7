/* See virtio-fs.h; section numbers are Virtio 1.2's. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "virtio-fs.h"

struct virtio_fs {
	struct virtio_dev vdev;
	const struct device_host *host;
	struct vhost_backend be;
	uint8_t config[VIRTIO_FS_TAG_MAX + 4];	/* 5.11.4 */
	bool started;			/* the backend serves the queues */
	int call[VIRTIO_FS_QUEUES];	/* what the backend has, -1: none */
	bool kick_taken[VIRTIO_FS_QUEUES];
	bool gone;			/* the backend: answered here */
	struct virtq_chain chain;	/* while gone */
	/* Diagnostics. */
	uint64_t failed;		/* requests answered -ENOTCONN */
	uint64_t starts;
	uint64_t start_failures;
	int last_error;			/* -errno of the last failure */
	uint64_t kicks_passed;		/* register kicks handed on */
	uint64_t call_changes;
};

static struct virtio_fs *
virtio_fs_of(struct virtio_dev *d)
{
	return VIRTIO_DEV_STATE(d, struct virtio_fs, vdev);
}

static void
virtio_fs_config_read(struct virtio_dev *d, uint32_t offset, void *data,
    unsigned int size)
{
	memcpy(data, virtio_fs_of(d)->config + offset, size);
}

/* Give the kick eventfds back to the transport, which reads them again. */
static void
virtio_fs_release(struct virtio_fs *f)
{
	for (unsigned int q = 0; q < VIRTIO_FS_QUEUES; q++) {
		if (f->kick_taken[q])
			(void)virtio_dev_queue_kick_fd(&f->vdev, q, false);
		f->kick_taken[q] = false;
		f->call[q] = -1;
	}
}

static void
virtio_fs_stop(struct virtio_fs *f)
{
	if (f->started)
		(void)f->be.ops->stop(f->be.ctx, NULL);
	f->started = false;
	virtio_fs_release(f);
}

static void
virtio_fs_fail(struct virtio_fs *f, int err)
{
	f->start_failures++;
	f->last_error = err;
	virtio_fs_stop(f);
	virtio_dev_needs_reset(&f->vdev);
}

/* DRIVER_OK: the backend takes both queues. */
static void
virtio_fs_activate(struct virtio_dev *d)
{
	struct virtio_fs *f = virtio_fs_of(d);
	struct vhost_backend_start s = { .features = d->driver_features,
	    .nrings = VIRTIO_FS_QUEUES };
	int n, ret;

	/* Without a backend the queues are the device's: see notify. */
	if (f->gone)
		return;

	n = device_mem_regions(f->host, s.mem, VHOST_BACKEND_REGIONS);
	if (n < 0 || n > VHOST_BACKEND_REGIONS) {
		virtio_fs_fail(f, n < 0 ? n : -E2BIG);
		return;
	}
	s.nmem = (unsigned int)n;
	for (unsigned int q = 0; q < VIRTIO_FS_QUEUES; q++) {
		struct virtq *vq = &d->vq[q];
		struct vhost_backend_ring *r = &s.ring[q];

		if (!vq->enabled) {
			virtio_fs_fail(f, -EINVAL);
			return;
		}
		ret = virtio_dev_queue_kick_fd(d, q, true);
		if (ret < 0) {
			virtio_fs_fail(f, ret);
			return;
		}
		f->kick_taken[q] = true;
		*r = (struct vhost_backend_ring){ .size = vq->size,
		    .desc = vq->desc, .avail = vq->avail, .used = vq->used,
		    .next_avail = vq->last_avail, .kick = ret,
		    .call = virtio_dev_queue_call_fd(d, q) };
		/* Only MSI-X interrupts reach the driver from the backend. */
		if (r->call < 0) {
			virtio_fs_fail(f, -ENOTSUP);
			return;
		}
		f->call[q] = r->call;
	}
	ret = f->be.ops->start(f->be.ctx, &s);
	if (ret == -ECONNRESET || ret == -EPIPE) {
		/* It ended before the guest started the device. */
		virtio_fs_release(f);
		f->gone = true;
		return;
	}
	if (ret < 0) {
		virtio_fs_fail(f, ret);
		return;
	}
	f->started = true;
	f->starts++;
}

/* A queue's interrupt moved: the backend signals where it goes now. */
static void
virtio_fs_vectors_changed(struct virtio_dev *d)
{
	struct virtio_fs *f = virtio_fs_of(d);

	if (!f->started)
		return;
	for (unsigned int q = 0; q < VIRTIO_FS_QUEUES; q++) {
		int fd = virtio_dev_queue_call_fd(d, q);

		if (fd < 0)
			fd = -1;
		if (fd == f->call[q])
			continue;
		f->call_changes++;
		if (f->be.ops->set_call(f->be.ctx, q, fd) < 0) {
			virtio_fs_fail(f, -EIO);
			return;
		}
		/* What the backend signalled while it could not say so. */
		if (f->call[q] < 0)
			virtio_dev_queue_interrupt(d, q);
		f->call[q] = fd;
	}
}

/*
 * Each request on queue q answered with FUSE's out header (len, error,
 * unique; 5.11.6.1 and FUSE's struct fuse_out_header) saying
 * -ENOTCONN; one without room for it (FUSE_FORGET has no reply) is
 * returned empty.
 */
static void
virtio_fs_answer_all(struct virtio_fs *f, unsigned int q)
{
	struct virtq *vq = &f->vdev.vq[q];
	bool any = false;
	int ret;

	while ((ret = virtq_pop(vq, &f->chain)) == 1) {
		struct virtq_chain *c = &f->chain;
		uint8_t in[16] = { 0 }, out[16];
		size_t got = 0;
		uint32_t len = 0;

		for (unsigned int i = 0; i < c->nout && got < sizeof(in); i++) {
			size_t n = c->iov[i].iov_len < sizeof(in) - got ?
			    c->iov[i].iov_len : sizeof(in) - got;

			memcpy(in + got, c->iov[i].iov_base, n);
			got += n;
		}
		if (c->nin > 0 && c->iov[c->nout].iov_len >= sizeof(out)) {
			uint32_t err = (uint32_t)-VIRTIO_FS_ENOTCONN;

			for (unsigned int i = 0; i < 4; i++) {
				out[i] = (uint8_t)(sizeof(out) >> (8 * i));
				out[4 + i] = (uint8_t)(err >> (8 * i));
			}
			memcpy(out + 8, in + 8, 8);	/* unique, le64 */
			memcpy(c->iov[c->nout].iov_base, out, sizeof(out));
			virtq_chain_written(c, sizeof(out));
			len = sizeof(out);
		}
		virtq_push(vq, c->head, len);
		f->failed++;
		any = true;
	}
	if (ret < 0)
		virtio_dev_needs_reset(&f->vdev);
	if (any)
		virtio_dev_queue_done(&f->vdev, q);
}

void
virtio_fs_backend_gone(struct virtio_dev *d)
{
	struct virtio_fs *f = virtio_fs_of(d);
	bool was = f->started;

	if (f->gone)
		return;
	f->gone = true;
	virtio_fs_stop(f);
	if (!was)
		return;
	for (unsigned int q = 0; q < VIRTIO_FS_QUEUES; q++) {
		struct virtq *vq = &d->vq[q];
		uint16_t done;

		if (!vq->enabled)
			continue;
		/* What the backend finished, as it told the guest. */
		done = le16toh(__atomic_load_n(&vq->used->idx,
		    __ATOMIC_ACQUIRE));
		vq->last_avail = vq->used_idx = vq->flushed = done;
		vq->signalled = done;
		virtio_fs_answer_all(f, q);
	}
}

static void
virtio_fs_notify(struct virtio_dev *d, unsigned int q)
{
	struct virtio_fs *f = virtio_fs_of(d);

	if (q < VIRTIO_FS_QUEUES && f->gone) {
		virtio_fs_answer_all(f, q);
		return;
	}
	if (q >= VIRTIO_FS_QUEUES || !f->started)
		return;
	f->kicks_passed++;
	f->be.ops->kick(f->be.ctx, q);
}

/* The backend stops at once (GET_VRING_BASE answered or the connection
 * broken): nothing of it reaches guest memory after. */
static bool
virtio_fs_quiesce(struct virtio_dev *d)
{
	virtio_fs_stop(virtio_fs_of(d));
	return true;
}

static int
virtio_fs_save(struct virtio_dev *d, struct dev_state_buf *out)
{
	(void)d;
	(void)out;
	return -ENOTSUP;
}

static uint64_t
virtio_fs_figure_error(const void *src)
{
	const struct virtio_fs *f = src;

	return (uint64_t)-f->last_error;
}

#define FS_FIGURE(key, kind, help, member)				\
	{ #key, NULL, kind, FIGURE_UNIT_NONE, help,			\
	    FIGURE_AT(struct virtio_fs, member) }

static const struct figure virtio_fs_figure_rows[] = {
	FS_FIGURE(starts, FIGURE_COUNTER, "vhost-user backend starts",
	    starts),
	FS_FIGURE(start_failures, FIGURE_COUNTER,
	    "vhost-user backend starts that failed", start_failures),
	{ "last_error", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "The errno of the last failed start, or 0",
	    .get = virtio_fs_figure_error },
	FS_FIGURE(kicks_passed, FIGURE_COUNTER,
	    "Register kicks handed on to the backend", kicks_passed),
	FS_FIGURE(call_changes, FIGURE_COUNTER,
	    "Changes of the backend's interrupt", call_changes),
	FS_FIGURE(failed, FIGURE_COUNTER,
	    "Requests answered ENOTCONN, the backend gone", failed),
};

static const struct figure_table virtio_fs_figures =
    FIGURE_TABLE(virtio_fs_figure_rows);

static void
virtio_fs_diag(struct virtio_dev *d, struct device_diag *dd)
{
	struct virtio_fs *f = virtio_fs_of(d);

	device_diag_put(dd, "started", f->started, DEVICE_DIAG_BOOL);
	device_diag_put(dd, "backend_gone", f->gone, DEVICE_DIAG_BOOL);
	device_diag_figure_range(dd, &virtio_fs_figures, 0,
	    virtio_fs_figures.n, f);
}

static void
virtio_fs_free(struct virtio_dev *d)
{
	struct virtio_fs *f = virtio_fs_of(d);

	virtio_fs_stop(f);
	free(f);
}

static const struct virtio_dev_ops virtio_fs_ops = {
	.type = VIRTIO_FS_ID,
	.nqueues = VIRTIO_FS_QUEUES,
	.queue_max = VIRTIO_FS_QUEUE,
	.config_size = VIRTIO_FS_TAG_MAX + 4,
	.config_read = virtio_fs_config_read,
	.notify = virtio_fs_notify,
	.activate = virtio_fs_activate,
	.quiesce = virtio_fs_quiesce,
	.save = virtio_fs_save,
	.vectors_changed = virtio_fs_vectors_changed,
	.diag = virtio_fs_diag,
	.free = virtio_fs_free,
};

struct virtio_dev *
virtio_fs_new(const struct device_host *host, const char *tag,
    const struct vhost_backend *be)
{
	size_t len = tag != NULL ? strlen(tag) : 0;
	struct virtio_fs *f;

	if (len == 0 || len > VIRTIO_FS_TAG_MAX)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	if (virtio_dev_init(&f->vdev, &virtio_fs_ops) < 0) {
		free(f);
		return NULL;
	}
	f->host = host;
	f->be = *be;
	memcpy(f->config, tag, len);
	f->config[VIRTIO_FS_TAG_MAX] = 1;	/* num_request_queues, le32 */
	for (unsigned int q = 0; q < VIRTIO_FS_QUEUES; q++)
		f->call[q] = -1;
	return &f->vdev;
}

bool
virtio_fs_started(struct virtio_dev *d)
{
	return virtio_fs_of(d)->started;
}
