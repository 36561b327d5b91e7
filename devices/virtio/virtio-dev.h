/*
 * A virtio device apart from its transport (Virtual I/O Device (VIRTIO)
 * Version 1.2, 2 and 3): what is the same whether the driver reaches
 * it over PCI, MMIO or a channel.  A device has virtqueues, a feature
 * offer, a configuration space, and an interrupt it raises through the
 * transport that took it; the transport (virtio-pci.h) has the
 * registers and drives any device through this interface, as
 * Firecracker's split between its device trait and its transports.
 *
 * The device's side.  A device embeds a struct virtio_dev, sets it up
 * with virtio_dev_init() and describes itself with struct
 * virtio_dev_ops: its type, queues, features, configuration, and what
 * it does when the driver kicks a queue, is ready (activate), or resets
 * it.  It pops and pushes its queues (vq[], virtqueue.h), reads what
 * the driver accepted (virtio_dev_has()), and reaches the driver only
 * through virtio_dev_queue_done(), virtio_dev_needs_reset(),
 * virtio_dev_config_changed() and virtio_dev_reset_done().  Guest
 * memory, timers and locks come from its struct device_host, as for any
 * device; nothing in a device names its transport.
 *
 * The transport's side.  A transport takes the device (sets
 * d->transport), owns every register the driver sees (device status,
 * feature and queue selectors, queue addresses, interrupt state), and
 * does the common part of the device's life here: it enables vq[] as
 * the driver asks, writes driver_features, and calls
 * virtio_dev_set_driver_ok(), virtio_dev_quiesce() and
 * virtio_dev_reset() as the driver writes device_status; it calls the
 * other ops directly.  It frees the device (ops->free) when it is
 * freed, first thing: a device may still reach it while it goes.
 *
 * Locking: a device and its transport are one device for the host
 * (device.h): every entry into either, ops and the functions below
 * included, is under that one device's lock, but the free, which is
 * not (a device may wait there for its backend's threads, which take
 * the lock).
 */
#ifndef VMMD_VIRTIO_DEV_H
#define VMMD_VIRTIO_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "virtqueue.h"

#define VIRTIO_DEV_MAX_QUEUES	4

/* Feature bits every device has, handled by the transport (6). */
#define VIRTIO_F_INDIRECT_DESC	28
#define VIRTIO_F_EVENT_IDX	29
#define VIRTIO_F_VERSION_1	32

/* Device status (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	1
#define VIRTIO_STATUS_DRIVER		2
#define VIRTIO_STATUS_DRIVER_OK		4
#define VIRTIO_STATUS_FEATURES_OK	8
#define VIRTIO_STATUS_NEEDS_RESET	0x40
#define VIRTIO_STATUS_FAILED		0x80

struct virtio_dev;

struct virtio_dev_ops {
	uint16_t type;			/* 5: 4 = entropy, 2 = block, 1 = net */
	unsigned int nqueues;		/* 1 .. VIRTIO_DEV_MAX_QUEUES */
	uint16_t queue_max;		/* entries, a power of two */
	uint64_t features;		/* device-specific offers */
	uint32_t config_size;		/* bytes of device configuration */
	/*
	 * Device configuration, offset + size <= config_size (the
	 * transport checks); may be NULL.
	 */
	void (*config_read)(struct virtio_dev *d, uint32_t offset,
	    void *data, unsigned int size);
	void (*config_write)(struct virtio_dev *d, uint32_t offset,
	    const void *data, unsigned int size);
	/* The driver kicked queue q (enabled, driver_ok set). */
	void (*notify)(struct virtio_dev *d, unsigned int q);
	/*
	 * Optional: the driver set DRIVER_OK; its features are final
	 * (virtio_dev_has()).
	 */
	void (*activate)(struct virtio_dev *d);
	/*
	 * Optional: the driver asked for a reset.  true when nothing the
	 * device started can still reach guest memory or its backend, and
	 * the reset goes on at once; false to hold it back until the
	 * device calls virtio_dev_reset_done().  Meanwhile the driver sees
	 * the device as it was, still resetting (a PCI driver polls
	 * device_status until it reads 0, 4.1.4.3.2), the queues stay as
	 * they are, and the transport passes on no kick and no write to
	 * the configuration.
	 */
	bool (*quiesce)(struct virtio_dev *d);
	/* Optional: the driver reset the device; queues already forgotten. */
	void (*reset)(struct virtio_dev *d);
	/*
	 * Optional: the interrupt a queue raises may have moved (its
	 * MSI-X vector reprogrammed, masked or unmasked, MSI-X switched):
	 * a device that handed its queues' notifications to a backend in
	 * the kernel asks again (virtio_dev_queue_call_fd()).
	 */
	void (*vectors_changed)(struct virtio_dev *d);
	/*
	 * Optional: the device's own state for a snapshot, as one section
	 * after the transport's and its queues' (dev-state.h); and that
	 * section read back into a device made for the same board entry,
	 * its queues loaded already, before the transport re-establishes
	 * its interrupts and sets driver_ok, which activates it as the
	 * driver's DRIVER_OK did (its backend starts at the queues' saved
	 * indices).  0 or
	 * -errno (-EBUSY: work in flight that the section cannot name).
	 * A device without them keeps nothing beyond its queues.
	 */
	int (*save)(struct virtio_dev *d, struct dev_state_buf *out);
	int (*load)(struct virtio_dev *d, const void *buf, size_t len,
	    struct dev_state_error *err);
	/* Optional: the device's own diagnostics, after the transport's. */
	void (*diag)(struct virtio_dev *d, struct device_diag *dd);
	/* Free the device (see its header), the transport going. */
	void (*free)(struct virtio_dev *d);
};

/* How a device reaches the driver: the transport that took it. */
struct virtio_transport_ops {
	/* Interrupt the driver for used buffers on queue q. */
	void (*queue_interrupt)(void *ctx, unsigned int q);
	/* The configuration changed: tell the driver (2.1.2 included). */
	void (*config_changed)(void *ctx);
	/* The device needs a reset: DEVICE_NEEDS_RESET, and tell. */
	void (*needs_reset)(void *ctx);
	/* The device is quiet: finish a reset held back, if one waits. */
	void (*reset_done)(void *ctx);
	/* Optional: see virtio_dev_queue_kick_fd() and _call_fd(). */
	int (*queue_kick_fd)(void *ctx, unsigned int q, bool take);
	int (*queue_call_fd)(void *ctx, unsigned int q);
};

struct virtio_transport {
	const struct virtio_transport_ops *ops;	/* NULL: none yet */
	void *ctx;
};

struct virtio_dev {
	const struct virtio_dev_ops *ops;
	/* The device's offer: ops' at init; it may change it after. */
	uint64_t features;
	/* The transport's: what the driver accepted, final at activate. */
	uint64_t driver_features;
	/*
	 * The transport's: the driver has set DRIVER_OK and not taken it
	 * back; the queues the driver enabled may be used.
	 */
	bool driver_ok;
	/* Enabled by the transport, used by the device. */
	struct virtq vq[VIRTIO_DEV_MAX_QUEUES];
	struct virtio_transport transport;
};

/* The state of type around d, its member m (a struct virtio_dev). */
#define VIRTIO_DEV_STATE(d, type, m)					\
	((type *)(void *)((char *)(d) - offsetof(type, m)))

/* Set d up for the device described by ops: 0 or -EINVAL. */
int virtio_dev_init(struct virtio_dev *d, const struct virtio_dev_ops *ops);

/* Has the driver accepted feature bit? */
static inline bool
virtio_dev_has(const struct virtio_dev *d, unsigned int bit)
{
	return (d->driver_features >> bit) & 1;
}

/* May the device use queue q now (driver OK, the queue enabled)? */
static inline bool
virtio_dev_queue_live(const struct virtio_dev *d, unsigned int q)
{
	return d->driver_ok && q < d->ops->nqueues && d->vq[q].enabled;
}

/*
 * For the device, to its transport; before one took it, nothing.
 *
 * After pushing used buffers onto queue q: interrupt the driver if it
 * wants to be (virtq_should_notify()).
 */
void virtio_dev_queue_done(struct virtio_dev *d, unsigned int q);
/*
 * A queue went bad (virtq_pop() failed): set DEVICE_NEEDS_RESET and
 * tell the driver with a configuration change interrupt (2.1.2).
 */
void virtio_dev_needs_reset(struct virtio_dev *d);
/* The device configuration changed: interrupt the driver. */
void virtio_dev_config_changed(struct virtio_dev *d);
/*
 * The device is quiet now (see ops->quiesce): the transport finishes
 * the reset the driver asked for, ops->reset included.  Under the
 * device's lock, any thread; nothing when no reset waits.
 */
void virtio_dev_reset_done(struct virtio_dev *d);
/*
 * For a device whose queues a backend in the kernel serves (vhost), so
 * that neither a kick nor an interrupt passes through user space:
 *
 * The eventfd the driver's kicks of queue q land in (take: from now on
 * it is the caller's to read, and the transport no longer calls
 * ops->notify for the kicks that land there; !take: the transport
 * reads it again, 0).  A kick that reaches the device another way
 * still comes as ops->notify: the device passes it on.  -ENOTSUP: the
 * transport has none.
 */
int virtio_dev_queue_kick_fd(struct virtio_dev *d, unsigned int q, bool take);
/*
 * The eventfd whose write raises queue q's interrupt without the
 * device (an irqfd), while there is one: -ENOENT otherwise (no MSI-X,
 * no vector, the vector masked).  Valid until ops->vectors_changed.
 */
int virtio_dev_queue_call_fd(struct virtio_dev *d, unsigned int q);
/*
 * Raise queue q's interrupt whatever the ring says (the backend may
 * have used buffers while the device could not tell the driver).
 */
void virtio_dev_queue_interrupt(struct virtio_dev *d, unsigned int q);

/*
 * For the transport.  The driver set DRIVER_OK (on) or cleared it
 * (off) without a reset: ops->activate on the way up.
 */
void virtio_dev_set_driver_ok(struct virtio_dev *d, bool on);
/* The driver asked for a reset: may it go on at once?  (ops->quiesce) */
bool virtio_dev_quiesce(struct virtio_dev *d);
/* The reset happens: queues and features forgotten, then ops->reset. */
void virtio_dev_reset(struct virtio_dev *d);

#endif
