/* See virtqueue.h for the rules every chain is held to. */
#include <errno.h>
#include <string.h>

#include "virtqueue.h"

int
virtq_enable(struct virtq *vq, const struct device_host *host,
    uint16_t size, uint64_t desc, uint64_t avail, uint64_t used,
    bool event_idx)
{
	size_t extra = event_idx ? 2 : 0;

	virtq_reset(vq);
	if (size == 0 || size > VIRTQ_MAX_SIZE || (size & (size - 1)) != 0 ||
	    desc % 16 != 0 || avail % 2 != 0 || used % 4 != 0)
		return -EINVAL;
	vq->desc = device_guest_mem(host, desc, 16u * size);
	vq->avail = device_guest_mem(host, avail, 4 + 2u * size + extra);
	vq->used = device_guest_mem(host, used, 4 + 8u * size + extra);
	if (vq->desc == NULL || vq->avail == NULL || vq->used == NULL) {
		virtq_reset(vq);
		return -EINVAL;
	}
	vq->host = host;
	vq->desc_gpa = desc;
	vq->avail_gpa = avail;
	vq->used_gpa = used;
	vq->size = size;
	vq->event_idx = event_idx;
	vq->enabled = true;
	/* The driver starts from a zeroed used ring; so do we. */
	vq->used_idx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);
	vq->last_avail = vq->used_idx;
	vq->signalled = vq->used_idx;
	vq->flushed = vq->used_idx;
	return 0;
}

void
virtq_reset(struct virtq *vq)
{
	uint64_t popped = vq->popped, bad = vq->bad_chains;

	memset(vq, 0, sizeof(*vq));
	vq->popped = popped;
	vq->bad_chains = bad;
}

/* One descriptor, copied once: the guest may change the original. */
static void
virtq_desc_copy(const struct virtq_desc *table, unsigned int i,
    struct virtq_desc *d)
{
	const volatile struct virtq_desc *src = &table[i];

	d->addr = src->addr;
	d->len = src->len;
	d->flags = src->flags;
	d->next = src->next;
}

static int
virtq_bad(struct virtq *vq)
{
	vq->broken = true;
	vq->bad_chains++;
	return -EINVAL;
}

/* Add one buffer to the chain, checking it against the rules. */
static int
virtq_chain_add(struct virtq *vq, struct virtq_chain *c,
    const struct virtq_desc *d)
{
	struct iovec *iov;
	void *hva;

	if (d->len == 0)
		return -EINVAL;
	if (c->nout + c->nin >= VIRTQ_MAX_SEGS)
		return -EINVAL;
	if (!(d->flags & VIRTQ_DESC_F_WRITE) && c->nin > 0)
		return -EINVAL;		/* readable after writable */
	hva = device_guest_mem(vq->host, d->addr, d->len);
	if (hva == NULL)
		return -EINVAL;
	iov = &c->iov[c->nout + c->nin];
	iov->iov_base = hva;
	iov->iov_len = d->len;
	if (d->flags & VIRTQ_DESC_F_WRITE) {
		c->nin++;
		c->in_len += d->len;
	} else {
		c->nout++;
		c->out_len += d->len;
	}
	if (c->in_len + c->out_len > UINT32_MAX)
		return -EINVAL;
	return 0;
}

/* Walk an indirect table: no nesting, no loops, in guest RAM. */
static int
virtq_walk_indirect(struct virtq *vq, struct virtq_chain *c,
    const struct virtq_desc *ind)
{
	const struct virtq_desc *table;
	struct virtq_desc d;
	unsigned int n, i, steps;

	if ((ind->flags & VIRTQ_DESC_F_NEXT) || ind->len % 16 != 0 ||
	    ind->len == 0 || ind->len / 16 > VIRTQ_MAX_SEGS)
		return -EINVAL;
	n = ind->len / 16;
	table = device_guest_mem(vq->host, ind->addr, ind->len);
	if (table == NULL || ind->addr % 16 != 0)
		return -EINVAL;
	for (i = 0, steps = 0;; steps++) {
		if (steps >= n)
			return -EINVAL;		/* a loop */
		virtq_desc_copy(table, i, &d);
		if (d.flags & VIRTQ_DESC_F_INDIRECT)
			return -EINVAL;		/* indirect in indirect */
		if (virtq_chain_add(vq, c, &d) < 0)
			return -EINVAL;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= n)
			return -EINVAL;
		i = d.next;
	}
}

/* The device wrote len bytes of its used ring at p (device.h). */
static void
virtq_used_written(const struct virtq *vq, const volatile void *p,
    size_t len)
{
	device_guest_written(vq->host, (const void *)p, len);
}

void
virtq_unpop(struct virtq *vq, uint16_t n)
{
	if (!vq->enabled || vq->broken)
		return;
	vq->last_avail = (uint16_t)(vq->last_avail - n);
	if (vq->event_idx) {	/* the next buffer added kicks */
		__atomic_store_n((uint16_t *)&vq->used->ring[vq->size],
		    __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE),
		    __ATOMIC_RELEASE);
		virtq_used_written(vq, &vq->used->ring[vq->size], 2);
	}
}

int
virtq_pop(struct virtq *vq, struct virtq_chain *c)
{
	struct virtq_desc d;
	uint16_t avail_idx, head;
	unsigned int i, steps;

	if (!vq->enabled || vq->broken)
		return 0;
	avail_idx = __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE);
	if (avail_idx == vq->last_avail)
		return 0;
	if ((uint16_t)(avail_idx - vq->last_avail) > vq->size)
		return virtq_bad(vq);	/* more than the ring holds */
	head = __atomic_load_n(&vq->avail->ring[vq->last_avail % vq->size],
	    __ATOMIC_RELAXED);
	vq->last_avail++;
	if (vq->event_idx && !vq->quiet) {  /* avail_event: kick me past this */
		__atomic_store_n((uint16_t *)&vq->used->ring[vq->size],
		    vq->last_avail, __ATOMIC_RELEASE);
		virtq_used_written(vq, &vq->used->ring[vq->size], 2);
	}
	if (head >= vq->size)
		return virtq_bad(vq);
	c->host = vq->host;
	c->head = head;
	c->nout = c->nin = 0;
	c->out_len = c->in_len = 0;
	for (i = head, steps = 0;; steps++) {
		if (steps >= vq->size)
			return virtq_bad(vq);	/* a loop */
		virtq_desc_copy(vq->desc, i, &d);
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			/* Only as the whole chain (2.7.5.3.1). */
			if (steps != 0 || virtq_walk_indirect(vq, c, &d) < 0)
				return virtq_bad(vq);
			break;
		}
		if (virtq_chain_add(vq, c, &d) < 0)
			return virtq_bad(vq);
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			break;
		if (d.next >= vq->size)
			return virtq_bad(vq);
		i = d.next;
	}
	vq->popped++;
	return 1;
}

void
virtq_quiet(struct virtq *vq)
{
	if (!vq->enabled || vq->quiet)
		return;
	vq->quiet = true;
	/*
	 * With event-index, avail_event stays where it is: the driver has
	 * passed it already and does not kick again until it comes round
	 * 65536 entries later, long after virtq_listen().
	 */
	if (!vq->event_idx) {
		__atomic_store_n(&vq->used->flags, VIRTQ_USED_F_NO_NOTIFY,
		    __ATOMIC_RELAXED);
		virtq_used_written(vq, &vq->used->flags, 2);
	}
}

bool
virtq_listen(struct virtq *vq)
{
	if (!vq->enabled)
		return false;
	if (vq->quiet) {
		vq->quiet = false;
		if (vq->event_idx) {
			__atomic_store_n(
			    (uint16_t *)&vq->used->ring[vq->size],
			    vq->last_avail, __ATOMIC_RELAXED);
			virtq_used_written(vq, &vq->used->ring[vq->size], 2);
		} else {
			__atomic_store_n(&vq->used->flags, 0,
			    __ATOMIC_RELAXED);
			virtq_used_written(vq, &vq->used->flags, 2);
		}
	}
	/*
	 * The driver adds, then reads our wish; we publish our wish, then
	 * read its index: a full barrier on both sides, so one of us sees
	 * the other (2.7.13.3.1).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !vq->broken && __atomic_load_n(&vq->avail->idx,
	    __ATOMIC_ACQUIRE) != vq->last_avail;
}

void
virtq_fill(struct virtq *vq, uint16_t head, uint32_t len)
{
	volatile struct virtq_used_elem *e;

	if (!vq->enabled)
		return;
	e = &vq->used->ring[vq->used_idx % vq->size];
	e->id = head;
	e->len = len;
	virtq_used_written(vq, e, sizeof(*e));
	vq->used_idx++;
}

void
virtq_flush(struct virtq *vq)
{
	/* The elements first, then the index that shows them (2.7.8). */
	if (!vq->enabled)
		return;
	vq->flushed = vq->used_idx;
	__atomic_store_n(&vq->used->idx, vq->used_idx, __ATOMIC_RELEASE);
	virtq_used_written(vq, &vq->used->idx, 2);
}

bool
virtq_held(const struct virtq *vq)
{
	return vq->flushed != vq->used_idx;
}

void
virtq_push(struct virtq *vq, uint16_t head, uint32_t len)
{
	virtq_fill(vq, head, len);
	virtq_flush(vq);
}

bool
virtq_should_notify(struct virtq *vq)
{
	uint16_t old = vq->signalled, now = vq->used_idx, event;

	if (!vq->enabled || old == now)
		return false;
	vq->signalled = now;
	/* The used index must be visible before we read the driver's wish. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->event_idx)
		return !(__atomic_load_n(&vq->avail->flags, __ATOMIC_RELAXED) &
		    VIRTQ_AVAIL_F_NO_INTERRUPT);
	event = __atomic_load_n(&vq->avail->ring[vq->size], __ATOMIC_RELAXED);
	/* 2.7.10: notify when used_event lies in [old, now). */
	return (uint16_t)(now - event - 1) < (uint16_t)(now - old);
}

size_t
virtq_chain_write(const struct virtq_chain *c, size_t off, const void *src,
    size_t len)
{
	const uint8_t *s = src;
	size_t done = 0;
	unsigned int i;

	for (i = c->nout; i < c->nout + c->nin && done < len; i++) {
		size_t seg = c->iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = seg - off < len - done ? seg - off : len - done;
		memcpy((uint8_t *)c->iov[i].iov_base + off, s + done, n);
		if (c->host != NULL)
			device_guest_written(c->host,
			    (uint8_t *)c->iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

void
virtq_chain_written(const struct virtq_chain *c, size_t len)
{
	unsigned int i;

	if (c->host == NULL)
		return;
	for (i = c->nout; i < c->nout + c->nin && len > 0; i++) {
		size_t n = c->iov[i].iov_len < len ? c->iov[i].iov_len : len;

		device_guest_written(c->host, c->iov[i].iov_base, n);
		len -= n;
	}
}

size_t
virtq_chain_read(const struct virtq_chain *c, size_t off, void *dst,
    size_t len)
{
	uint8_t *d = dst;
	size_t done = 0;
	unsigned int i;

	for (i = 0; i < c->nout && done < len; i++) {
		size_t seg = c->iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = seg - off < len - done ? seg - off : len - done;
		memcpy(d + done, (uint8_t *)c->iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

#define VQS(nm, ty, m, ...)						\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct virtq_state, m), \
	    __VA_ARGS__ }
#define VQS_BOOL(m)	VQS(#m, DEV_STATE_BOOL, m)
#define VQS_U16(m)	VQS(#m, DEV_STATE_U16, m)

static const struct dev_state_field virtq_state_fields[] = {
	VQS("desc", DEV_STATE_U64, desc),
	VQS("avail", DEV_STATE_U64, avail),
	VQS("used", DEV_STATE_U64, used),
	VQS("size", DEV_STATE_U16, size, .max = VIRTQ_MAX_SIZE),
	VQS_BOOL(enabled), VQS_BOOL(event_idx), VQS_BOOL(broken),
	VQS_BOOL(quiet),
	VQS_U16(last_avail), VQS_U16(used_idx), VQS_U16(flushed),
	VQS_U16(signalled),
};

static int
virtq_state_check(const void *state, struct dev_state_error *err)
{
	const struct virtq_state *st = state;
	static const struct virtq_state off;

	if (!st->enabled)
		return memcmp(st, &off, sizeof(off)) == 0 ? 0 :
		    dev_state_fail(err, -EINVAL,
		    "virtq: a disabled queue with state (size %u)", st->size);
	if (st->size == 0 || (st->size & (st->size - 1)) != 0)
		return dev_state_fail(err, -EINVAL,
		    "virtq: size %u is not a power of two", st->size);
	if ((uint16_t)(st->last_avail - st->used_idx) > st->size)
		return dev_state_fail(err, -EINVAL, "virtq: last_avail %u is "
		    "more than %u chains past used_idx %u", st->last_avail,
		    st->size, st->used_idx);
	if ((uint16_t)(st->used_idx - st->flushed) > st->size)
		return dev_state_fail(err, -EINVAL, "virtq: used_idx %u is "
		    "more than %u elements past flushed %u", st->used_idx,
		    st->size, st->flushed);
	return 0;
}

const struct dev_state_table virtq_state_table = {
	DEV_STATE_TABLE("virtq", 1, struct virtq_state, virtq_state_fields),
	.check = virtq_state_check,
};

void
virtq_save_state(const struct virtq *vq, struct virtq_state *st)
{
	memset(st, 0, sizeof(*st));
	if (!vq->enabled)
		return;
	*st = (struct virtq_state){
		.desc = vq->desc_gpa, .avail = vq->avail_gpa,
		.used = vq->used_gpa, .size = vq->size, .enabled = true,
		.event_idx = vq->event_idx, .broken = vq->broken,
		.quiet = vq->quiet, .last_avail = vq->last_avail,
		.used_idx = vq->used_idx, .flushed = vq->flushed,
		.signalled = vq->signalled,
	};
}

int
virtq_load_state(struct virtq *vq, const struct device_host *host,
    const struct virtq_state *st, uint16_t queue_max,
    struct dev_state_error *err)
{
	virtq_reset(vq);
	if (!st->enabled)
		return 0;
	if (st->size > queue_max)
		return dev_state_fail(err, -EINVAL,
		    "virtq: size %u beyond the device's %u", st->size,
		    queue_max);
	if (virtq_enable(vq, host, st->size, st->desc, st->avail, st->used,
	    st->event_idx) < 0)
		return dev_state_fail(err, -EINVAL, "virtq: rings at desc "
		    "%#llx, avail %#llx, used %#llx misaligned or outside "
		    "guest RAM", (unsigned long long)st->desc,
		    (unsigned long long)st->avail,
		    (unsigned long long)st->used);
	vq->broken = st->broken;
	vq->quiet = st->quiet;
	vq->last_avail = st->last_avail;
	vq->used_idx = st->used_idx;
	vq->flushed = st->flushed;
	vq->signalled = st->signalled;
	return 0;
}
