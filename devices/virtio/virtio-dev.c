/* See virtio-dev.h; section numbers are Virtio 1.2's. */
#include <errno.h>
#include <string.h>

#include "virtio-dev.h"

int
virtio_dev_init(struct virtio_dev *d, const struct virtio_dev_ops *ops)
{
	if (ops->nqueues == 0 || ops->nqueues > VIRTIO_DEV_MAX_QUEUES ||
	    ops->queue_max == 0 || ops->queue_max > VIRTQ_MAX_SIZE ||
	    (ops->queue_max & (ops->queue_max - 1)) != 0 ||
	    ops->notify == NULL)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->ops = ops;
	d->features = ops->features;
	return 0;
}

void
virtio_dev_queue_done(struct virtio_dev *d, unsigned int q)
{
	if (d->transport.ops != NULL && q < d->ops->nqueues &&
	    virtq_should_notify(&d->vq[q]))
		d->transport.ops->queue_interrupt(d->transport.ctx, q);
}

void
virtio_dev_needs_reset(struct virtio_dev *d)
{
	if (d->transport.ops != NULL)
		d->transport.ops->needs_reset(d->transport.ctx);
}

void
virtio_dev_config_changed(struct virtio_dev *d)
{
	if (d->transport.ops != NULL)
		d->transport.ops->config_changed(d->transport.ctx);
}

void
virtio_dev_reset_done(struct virtio_dev *d)
{
	if (d->transport.ops != NULL)
		d->transport.ops->reset_done(d->transport.ctx);
}

int
virtio_dev_queue_kick_fd(struct virtio_dev *d, unsigned int q, bool take)
{
	if (d->transport.ops == NULL || d->transport.ops->queue_kick_fd ==
	    NULL || q >= d->ops->nqueues)
		return -ENOTSUP;
	return d->transport.ops->queue_kick_fd(d->transport.ctx, q, take);
}

int
virtio_dev_queue_call_fd(struct virtio_dev *d, unsigned int q)
{
	if (d->transport.ops == NULL || d->transport.ops->queue_call_fd ==
	    NULL || q >= d->ops->nqueues)
		return -ENOTSUP;
	return d->transport.ops->queue_call_fd(d->transport.ctx, q);
}

void
virtio_dev_queue_interrupt(struct virtio_dev *d, unsigned int q)
{
	if (d->transport.ops != NULL && q < d->ops->nqueues)
		d->transport.ops->queue_interrupt(d->transport.ctx, q);
}

void
virtio_dev_set_driver_ok(struct virtio_dev *d, bool on)
{
	bool was = d->driver_ok;

	d->driver_ok = on;
	if (on && !was && d->ops->activate != NULL)
		d->ops->activate(d);
}

bool
virtio_dev_quiesce(struct virtio_dev *d)
{
	return d->ops->quiesce == NULL || d->ops->quiesce(d);
}

void
virtio_dev_reset(struct virtio_dev *d)
{
	unsigned int q;

	d->driver_ok = false;
	d->driver_features = 0;
	for (q = 0; q < VIRTIO_DEV_MAX_QUEUES; q++)
		virtq_reset(&d->vq[q]);
	if (d->ops->reset != NULL)
		d->ops->reset(d);
}
