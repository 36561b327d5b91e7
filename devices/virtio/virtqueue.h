/*
 * Split virtqueues (Virtual I/O Device (VIRTIO) Version 1.2, 2.7), on
 * the device's side, for a guest that is not trusted.
 *
 * Every descriptor is copied out of guest memory once and checked on
 * the copy, so a guest changing its rings under the device's feet can
 * confuse only itself: a head or next index inside the table, a buffer
 * wholly inside guest RAM, no zero-length buffer, device-writable
 * buffers only after the readable ones (2.7.4.2), a chain no longer
 * than the queue (which also ends loops), at most 4 GiB in all, an
 * indirect table (2.7.5.3) whose length is a non-zero multiple of 16,
 * that is not chained with NEXT and that holds no indirect descriptor
 * itself.  A chain that breaks a rule makes virtq_pop() fail with
 * -EINVAL and marks the queue broken: the transport then tells the
 * driver the device needs a reset (2.1.2) and the queue stops.
 *
 * Plain state, under the device's lock; guest memory through the
 * device host, every write the device makes into it marked
 * (device_guest_written()) for a live migration.
 */
#ifndef VMMD_VIRTQUEUE_H
#define VMMD_VIRTQUEUE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "dev-state.h"
#include "device.h"

#define VIRTQ_MAX_SIZE		1024	/* entries: Linux's largest */
#define VIRTQ_MAX_SEGS		VIRTQ_MAX_SIZE

#define VIRTQ_DESC_F_NEXT	1
#define VIRTQ_DESC_F_WRITE	2
#define VIRTQ_DESC_F_INDIRECT	4

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];	/* then used_event */
};

struct virtq_used_elem {
	uint32_t id;
	uint32_t len;
};

struct virtq_used {
	uint16_t flags;
	uint16_t idx;
	struct virtq_used_elem ring[];	/* then avail_event */
};

#define VIRTQ_AVAIL_F_NO_INTERRUPT	1
#define VIRTQ_USED_F_NO_NOTIFY		1

struct virtq {
	const struct device_host *host;
	uint16_t size;
	bool enabled;
	bool event_idx;		/* VIRTIO_F_EVENT_IDX negotiated */
	bool broken;
	bool quiet;		/* the driver is asked not to kick */
	struct virtq_desc *desc;	/* guest memory */
	struct virtq_avail *avail;
	struct virtq_used *used;
	/* Where the rings are in the guest (kept for a save). */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t last_avail;	/* next avail entry to take */
	uint16_t used_idx;	/* next used entry to fill */
	uint16_t flushed;	/* used_idx as the driver sees it */
	uint16_t signalled;	/* used_idx when the driver was last told */
	/* Counters for diagnostics. */
	uint64_t popped;
	uint64_t bad_chains;
};

/* A chain as the device uses it: readable segments, then writable. */
struct virtq_chain {
	const struct device_host *host;	/* the queue's, by virtq_pop() */
	uint16_t head;
	unsigned int nout;	/* iov[0 .. nout) device-readable */
	unsigned int nin;	/* iov[nout .. nout + nin) writable */
	uint64_t out_len;
	uint64_t in_len;
	struct iovec iov[VIRTQ_MAX_SEGS];
};

/*
 * Start using a queue the driver set up: size a power of two up to
 * VIRTQ_MAX_SIZE, the three rings aligned (2.7) and wholly in guest RAM.
 * 0 or -EINVAL (the queue stays disabled).
 */
int virtq_enable(struct virtq *vq, const struct device_host *host,
    uint16_t size, uint64_t desc, uint64_t avail, uint64_t used,
    bool event_idx);
/* Forget the queue (device reset). */
void virtq_reset(struct virtq *vq);

/*
 * Take the next available chain: 1 and *c filled, 0 when there is none
 * (or the queue is disabled or broken), -EINVAL for a chain that breaks
 * the rules (see above): the queue is broken from then on.
 */
int virtq_pop(struct virtq *vq, struct virtq_chain *c);
/*
 * Give the last n chains popped back to the available ring, unused (a
 * device that found too little room for what it has to deliver), and
 * ask the driver to kick when it adds a buffer (2.7.10).
 */
void virtq_unpop(struct virtq *vq, uint16_t n);
/*
 * Notification suppression (2.7.7.1, 2.7.10), for a device that drains
 * the queue on its own for a while: virtq_quiet() asks the driver not to
 * kick (VIRTQ_USED_F_NO_NOTIFY, or with event-index an avail_event left
 * behind: virtq_pop() stops moving it).  virtq_listen() asks for kicks
 * again, then looks at the ring once more: true when chains wait that
 * the driver may have added without kicking, which the caller must take
 * (quiet again, drain, listen again).  Both are hints to the driver: a
 * kick may still come, and costs only a pop that finds nothing.
 */
void virtq_quiet(struct virtq *vq);
bool virtq_listen(struct virtq *vq);
/* Return a chain to the driver with len bytes written into it. */
void virtq_push(struct virtq *vq, uint16_t head, uint32_t len);
/*
 * virtq_push() in two steps, for a device that returns chains in
 * batches: virtq_fill() writes the used element, virtq_flush() shows the
 * driver every element filled so far (one used-index update).
 * virtq_held(): are there filled elements the driver cannot see yet?
 */
void virtq_fill(struct virtq *vq, uint16_t head, uint32_t len);
void virtq_flush(struct virtq *vq);
bool virtq_held(const struct virtq *vq);
/*
 * After pushes: should the driver be interrupted (2.7.7, 2.7.10)?  Call
 * once per batch; it remembers what the driver was told.
 */
bool virtq_should_notify(struct virtq *vq);

/*
 * Copy up to len bytes into the chain's writable part: bytes copied.
 * The pages are marked written (device_guest_written()).
 */
size_t virtq_chain_write(const struct virtq_chain *c, size_t off,
    const void *src, size_t len);
/*
 * The first len bytes of the chain's writable part were written through
 * its iovecs directly (a disk's read, getrandom()): their pages marked
 * (device_guest_written()).  virtq_fill() and virtq_flush() mark what
 * they write of the used ring by themselves.
 */
void virtq_chain_written(const struct virtq_chain *c, size_t len);
/* Copy up to len bytes out of the chain's readable part: bytes copied. */
size_t virtq_chain_read(const struct virtq_chain *c, size_t off, void *dst,
    size_t len);

/*
 * A queue's state for a snapshot, the section "virtq" (dev-state.h):
 * where its rings are, its size, whether it is enabled, uses event-index,
 * is broken or quiet, and its four indices.  The rings themselves are
 * guest RAM and travel with it.  A load refuses, naming the field, a
 * size not a power of two or beyond VIRTQ_MAX_SIZE, a disabled queue
 * with anything but zeroes, more chains in flight (last_avail past
 * used_idx) or used elements held unflushed (used_idx past flushed)
 * than the ring holds; virtq_load_state() then refuses a size beyond
 * the device's and rings outside guest RAM or misaligned.
 */
struct virtq_state {
	uint64_t desc, avail, used;
	uint16_t size;
	bool enabled, event_idx, broken, quiet;
	uint16_t last_avail, used_idx, flushed, signalled;
};

extern const struct dev_state_table virtq_state_table;

void virtq_save_state(const struct virtq *vq, struct virtq_state *st);
/*
 * Make vq the queue st describes (checked by the table), its rings in
 * host's guest RAM, at most queue_max entries: 0, or -EINVAL with err
 * naming what is wrong and vq reset.  Nothing in guest memory is
 * written: the queue goes on from the saved indices.
 */
int virtq_load_state(struct virtq *vq, const struct device_host *host,
    const struct virtq_state *st, uint16_t queue_max,
    struct dev_state_error *err);

#endif
