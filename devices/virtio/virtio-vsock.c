/* See virtio-vsock.h; section numbers are Virtio 1.2's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "virtio-vsock.h"

#define VSOCK_EVENT_QUEUE		2
#define VSOCK_EVENT_TRANSPORT_RESET	0	/* 5.10.6.6 */

struct virtio_vsock {
	struct virtio_dev vdev;
	const struct device_host *host;
	struct vsock_backend be;
	bool started;			/* the backend serves the queues */
	int call[VSOCK_BACKEND_QUEUES];	/* what the backend has, -1: none */
	bool kick_taken[VSOCK_BACKEND_QUEUES];
	struct virtq_chain chain;
	/* Diagnostics. */
	uint64_t starts;
	uint64_t start_failures;
	int last_error;			/* -errno of the last failure */
	uint64_t kicks_passed;		/* register kicks handed on */
	uint64_t call_changes;
	uint64_t events;		/* transport resets told */
	bool restored;			/* loaded: reset the guest's sockets */
};

static struct virtio_vsock *
virtio_vsock_of(struct virtio_dev *d)
{
	return VIRTIO_DEV_STATE(d, struct virtio_vsock, vdev);
}

static void
virtio_vsock_config_read(struct virtio_dev *d, uint32_t offset, void *data,
    unsigned int size)
{
	struct virtio_vsock *v = virtio_vsock_of(d);
	uint64_t cid = v->be.ops->cid(v->be.ctx);
	uint8_t cfg[8];

	for (unsigned int i = 0; i < 8; i++)
		cfg[i] = (uint8_t)(cid >> (8 * i));	/* le64 */
	memcpy(data, cfg + offset, size);
}

/* Give the kick eventfds back to the transport, which reads them again. */
static void
virtio_vsock_release(struct virtio_vsock *v)
{
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++) {
		if (v->kick_taken[q])
			(void)virtio_dev_queue_kick_fd(&v->vdev, q, false);
		v->kick_taken[q] = false;
		v->call[q] = -1;
	}
}

static void
virtio_vsock_stop(struct virtio_vsock *v)
{
	if (v->started)
		(void)v->be.ops->stop(v->be.ctx, NULL);
	v->started = false;
	virtio_vsock_release(v);
}

static void
virtio_vsock_fail(struct virtio_vsock *v, int err)
{
	v->start_failures++;
	v->last_error = err;
	virtio_vsock_stop(v);
	virtio_dev_needs_reset(&v->vdev);
}

/* DRIVER_OK: the backend takes the receive and transmit queues. */
static void
virtio_vsock_activate(struct virtio_dev *d)
{
	struct virtio_vsock *v = virtio_vsock_of(d);
	struct vsock_backend_start s = { .features = d->driver_features };
	int n, ret;

	n = device_mem_regions(v->host, s.mem, VSOCK_BACKEND_REGIONS);
	if (n < 0 || n > VSOCK_BACKEND_REGIONS) {
		virtio_vsock_fail(v, n < 0 ? n : -E2BIG);
		return;
	}
	s.nmem = (unsigned int)n;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++) {
		struct virtq *vq = &d->vq[q];
		struct vsock_backend_ring *r = &s.ring[q];

		if (!vq->enabled) {
			virtio_vsock_fail(v, -EINVAL);
			return;
		}
		ret = virtio_dev_queue_kick_fd(d, q, true);
		if (ret < 0) {
			virtio_vsock_fail(v, ret);
			return;
		}
		v->kick_taken[q] = true;
		*r = (struct vsock_backend_ring){ .size = vq->size,
		    .desc = vq->desc, .avail = vq->avail, .used = vq->used,
		    .next_avail = vq->last_avail, .kick = ret,
		    .call = virtio_dev_queue_call_fd(d, q) };
		/* Only MSI-X interrupts reach the driver from the kernel. */
		if (r->call < 0) {
			virtio_vsock_fail(v, -ENOTSUP);
			return;
		}
		v->call[q] = r->call;
	}
	ret = v->be.ops->start(v->be.ctx, &s);
	if (ret < 0) {
		virtio_vsock_fail(v, ret);
		return;
	}
	v->started = true;
	v->starts++;
	if (v->restored) {
		v->restored = false;
		(void)virtio_vsock_transport_reset(d);
	}
}

/* A queue's interrupt moved: the backend writes where it goes now. */
static void
virtio_vsock_vectors_changed(struct virtio_dev *d)
{
	struct virtio_vsock *v = virtio_vsock_of(d);

	if (!v->started)
		return;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++) {
		int fd = virtio_dev_queue_call_fd(d, q);

		if (fd < 0)
			fd = -1;
		if (fd == v->call[q])
			continue;
		v->call_changes++;
		if (v->be.ops->set_call(v->be.ctx, q, fd) < 0) {
			virtio_vsock_fail(v, -EIO);
			return;
		}
		/* What the backend used while it could not say so. */
		if (v->call[q] < 0)
			virtio_dev_queue_interrupt(d, q);
		v->call[q] = fd;
	}
}

static void
virtio_vsock_notify(struct virtio_dev *d, unsigned int q)
{
	struct virtio_vsock *v = virtio_vsock_of(d);

	/* Event buffers wait here for an event; data queues are the
	 * backend's. */
	if (q >= VSOCK_BACKEND_QUEUES || !v->started)
		return;
	v->kicks_passed++;
	v->be.ops->kick(v->be.ctx, q);
}

/* The backend stops at once: nothing of it reaches guest memory after. */
static bool
virtio_vsock_quiesce(struct virtio_dev *d)
{
	virtio_vsock_stop(virtio_vsock_of(d));
	return true;
}
static uint64_t
virtio_vsock_figure_cid(const void *src)
{
	const struct virtio_vsock *v = src;

	return v->be.ops->cid(v->be.ctx);
}

static uint64_t
virtio_vsock_figure_error(const void *src)
{
	const struct virtio_vsock *v = src;

	return (uint64_t)-v->last_error;
}

#define VSOCK_FIGURE(key, kind, help, member)				\
	{ #key, NULL, kind, FIGURE_UNIT_NONE, help,			\
	    FIGURE_AT(struct virtio_vsock, member) }

/* The guest's CID, then the vhost backend's starts and what it passed. */
static const struct figure virtio_vsock_figure_rows[] = {
	{ "cid", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE, "The guest's CID",
	    .get = virtio_vsock_figure_cid },
	VSOCK_FIGURE(starts, FIGURE_COUNTER, "vhost-vsock backend starts",
	    starts),
	VSOCK_FIGURE(start_failures, FIGURE_COUNTER,
	    "vhost-vsock backend starts that failed", start_failures),
	{ "last_error", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "The errno of the last failed start, or 0",
	    .get = virtio_vsock_figure_error },
	VSOCK_FIGURE(kicks_passed, FIGURE_COUNTER,
	    "Register kicks handed on to the backend", kicks_passed),
	VSOCK_FIGURE(call_changes, FIGURE_COUNTER,
	    "Changes of the backend's interrupt", call_changes),
	VSOCK_FIGURE(events, FIGURE_COUNTER,
	    "Transport resets told to the guest", events),
};

static const struct figure_table virtio_vsock_figures =
    FIGURE_TABLE(virtio_vsock_figure_rows);


static void
virtio_vsock_diag(struct virtio_dev *d, struct device_diag *dd)
{
	struct virtio_vsock *v = virtio_vsock_of(d);

	device_diag_figure_range(dd, &virtio_vsock_figures, 0, 1, v);
	device_diag_put(dd, "started", v->started, DEVICE_DIAG_BOOL);
	device_diag_figure_range(dd, &virtio_vsock_figures, 1,
	    virtio_vsock_figures.n - 1, v);
}

static void
virtio_vsock_free(struct virtio_dev *d)
{
	struct virtio_vsock *v = virtio_vsock_of(d);

	virtio_vsock_stop(v);
	free(v);
}

/*
 * Snapshots: the section "virtio-vsock" holds the CID the guest had,
 * for the record; the connections are the vhost backend's, in the
 * kernel, and do not survive.  A loaded device starts its backend
 * afresh at the queues' saved indices when the transport activates it
 * and then tells the guest with a TRANSPORT_RESET event (5.10.6.6):
 * the guest resets its connections and reads its CID again, which a
 * clone's backend may have changed (as Firecracker does).
 */
struct virtio_vsock_state {
	uint64_t cid;
};

static const struct dev_state_field virtio_vsock_state_fields[] = {
	{ .name = "cid", .type = DEV_STATE_U64,
	    DEV_STATE_AT(struct virtio_vsock_state, cid) },
};

static const struct dev_state_table virtio_vsock_state_table = {
	DEV_STATE_TABLE("virtio-vsock", 1, struct virtio_vsock_state,
	    virtio_vsock_state_fields),
};

static int
virtio_vsock_save(struct virtio_dev *d, struct dev_state_buf *out)
{
	struct virtio_vsock *v = virtio_vsock_of(d);
	struct virtio_vsock_state st = { .cid = v->be.ops->cid(v->be.ctx) };

	return dev_state_save(&virtio_vsock_state_table, &st, out);
}

static int
virtio_vsock_load(struct virtio_dev *d, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct virtio_vsock_state st;
	int rc;

	rc = dev_state_load(&virtio_vsock_state_table, &st, buf, len, err);
	if (rc == 0)
		virtio_vsock_of(d)->restored = true;
	return rc;
}

static const struct virtio_dev_ops virtio_vsock_ops = {
	.type = VIRTIO_VSOCK_ID,
	.nqueues = 3,
	.queue_max = VIRTIO_VSOCK_QUEUE,
	.config_size = 8,
	.config_read = virtio_vsock_config_read,
	.notify = virtio_vsock_notify,
	.activate = virtio_vsock_activate,
	.quiesce = virtio_vsock_quiesce,
	.save = virtio_vsock_save,
	.load = virtio_vsock_load,
	.vectors_changed = virtio_vsock_vectors_changed,
	.diag = virtio_vsock_diag,
	.free = virtio_vsock_free,
};

struct virtio_dev *
virtio_vsock_new(const struct device_host *host, const struct vsock_backend *be)
{
	struct virtio_vsock *v;

	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return NULL;
	if (virtio_dev_init(&v->vdev, &virtio_vsock_ops) < 0) {
		free(v);
		return NULL;
	}
	v->host = host;
	v->be = *be;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++)
		v->call[q] = -1;
	v->vdev.features = be->ops->features(be->ctx) &
	    (1ULL << VIRTIO_VSOCK_F_SEQPACKET);
	return &v->vdev;
}

int
virtio_vsock_transport_reset(struct virtio_dev *d)
{
	struct virtio_vsock *v = virtio_vsock_of(d);
	struct virtq *vq = &d->vq[VSOCK_EVENT_QUEUE];
	uint8_t ev[4] = { VSOCK_EVENT_TRANSPORT_RESET, 0, 0, 0 };	/* le32 */
	unsigned int i;
	int ret;

	if (!virtio_dev_queue_live(d, VSOCK_EVENT_QUEUE))
		return -ENODEV;
	ret = virtq_pop(vq, &v->chain);
	if (ret < 0) {
		virtio_dev_needs_reset(d);
		return ret;
	}
	if (ret == 0)
		return -ENOSPC;
	/* The event into the chain's first writable bytes (5.10.6.6). */
	i = v->chain.nout;
	if (v->chain.nin == 0 || v->chain.iov[i].iov_len < sizeof(ev)) {
		virtq_push(vq, v->chain.head, 0);
		virtio_dev_queue_done(d, VSOCK_EVENT_QUEUE);
		return -EINVAL;
	}
	memcpy(v->chain.iov[i].iov_base, ev, sizeof(ev));
	virtq_chain_written(&v->chain, sizeof(ev));
	virtq_push(vq, v->chain.head, sizeof(ev));
	virtio_dev_queue_done(d, VSOCK_EVENT_QUEUE);
	v->events++;
	return 0;
}
