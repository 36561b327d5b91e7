/*
 * Virtqueues against hostile drivers: every way a chain can break the
 * rules (virtqueue.h) fails with -EINVAL and breaks the queue, never
 * reads outside guest RAM; good chains, direct and indirect, come out
 * as the driver built them; interrupt suppression, both ways.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "tap.h"
#include "virtqueue.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define QSIZE		8
#define DESC		(RAM_BASE + 0x0000)
#define AVAIL		(RAM_BASE + 0x1000)
#define USED		(RAM_BASE + 0x2000)
#define IND		(RAM_BASE + 0x3000)
#define BUF		(RAM_BASE + 0x10000)

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct virtq vq;
static struct virtq_chain chain;
static uint16_t avail_idx;

static void *
gmem(uint64_t gpa)
{
	return fh.mem + (gpa - RAM_BASE);
}

static struct virtq_desc *
desc(unsigned int i)
{
	return (struct virtq_desc *)gmem(DESC) + i;
}

static struct virtq_desc *
ind(unsigned int i)
{
	return (struct virtq_desc *)gmem(IND) + i;
}

static void
setd(struct virtq_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
    uint16_t next)
{
	*d = (struct virtq_desc){ addr, len, flags, next };
}

/* A fresh queue, with or without event index. */
static void
fresh(bool event_idx)
{
	memset(fh.mem, 0, RAM_SIZE);
	avail_idx = 0;
	if (virtq_enable(&vq, &fh.host, QSIZE, DESC, AVAIL, USED,
	    event_idx) < 0)
		abort();
}

/* Offer the chain at head and pop it. */
static int
offer(uint16_t head)
{
	struct virtq_avail *a = gmem(AVAIL);

	a->ring[avail_idx % QSIZE] = head;
	a->idx = ++avail_idx;
	return virtq_pop(&vq, &chain);
}

/* A chain that must be refused, and leave the queue broken. */
static void
refused(uint16_t head, const char *what)
{
	uint64_t bad = vq.bad_chains;
	int ret = offer(head);

	tap_ok(ret == -EINVAL && vq.broken && vq.bad_chains == bad + 1,
	    "refused: %s (%d)", what, ret);
}

int
main(void)
{
	struct virtq_used *used;
	struct virtq_avail *avail;
	uint8_t out[600];
	unsigned int i;

	fh.mem = calloc(1, RAM_SIZE);
	fh.mem_base = RAM_BASE;
	fh.mem_size = RAM_SIZE;
	used = gmem(USED);
	avail = gmem(AVAIL);

	/* Setting up. */
	TAP_EQ(virtq_enable(&vq, &fh.host, 6, DESC, AVAIL, USED, false),
	    -EINVAL, "size not a power of two");
	TAP_EQ(virtq_enable(&vq, &fh.host, 2048, DESC, AVAIL, USED, false),
	    -EINVAL, "size over the maximum");
	TAP_EQ(virtq_enable(&vq, &fh.host, QSIZE, DESC + 8, AVAIL, USED,
	    false), -EINVAL, "descriptor table misaligned");
	TAP_EQ(virtq_enable(&vq, &fh.host, QSIZE, DESC, AVAIL,
	    RAM_BASE + RAM_SIZE - 8, false), -EINVAL, "used ring past RAM");
	tap_ok(!vq.enabled, "a refused queue stays off");
	fresh(false);
	TAP_EQ(virtq_pop(&vq, &chain), 0, "empty queue");

	/* A good direct chain: header out, data in, status in. */
	setd(desc(0), BUF, 16, VIRTQ_DESC_F_NEXT, 5);
	setd(desc(5), BUF + 0x1000, 512, VIRTQ_DESC_F_NEXT |
	    VIRTQ_DESC_F_WRITE, 2);
	setd(desc(2), BUF + 0x2000, 1, VIRTQ_DESC_F_WRITE, 0);
	TAP_EQ(offer(0), 1, "good chain popped");
	tap_ok(chain.head == 0 && chain.nout == 1 && chain.nin == 2 &&
	    chain.out_len == 16 && chain.in_len == 513 &&
	    chain.iov[1].iov_base == gmem(BUF + 0x1000),
	    "segments as the driver built them");
	memset(out, 0xab, sizeof(out));
	TAP_EQ(virtq_chain_write(&chain, 0, out, sizeof(out)), 513,
	    "writes stop at the chain's end");
	TAP_EQ(*(uint8_t *)gmem(BUF + 0x2000), 0xab, "across segments");
	TAP_EQ(*(uint8_t *)gmem(BUF), 0, "readable part untouched");
	TAP_EQ(virtq_chain_read(&chain, 4, out, 100), 12, "reads too");
	virtq_push(&vq, chain.head, 513);
	tap_ok(used->idx == 1 && used->ring[0].id == 0 &&
	    used->ring[0].len == 513, "used ring filled");
	tap_ok(virtq_should_notify(&vq), "driver told");
	tap_ok(!virtq_should_notify(&vq), "but only once");
	avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;
	setd(desc(1), BUF, 8, 0, 0);
	TAP_EQ(offer(1), 1, "single descriptor");
	virtq_push(&vq, chain.head, 0);
	tap_ok(!virtq_should_notify(&vq), "NO_INTERRUPT honoured");

	/* Indirect. */
	fresh(false);
	setd(ind(0), BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	setd(ind(2), BUF + 0x100, 64, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE,
	    1);
	setd(ind(1), BUF + 0x200, 1, VIRTQ_DESC_F_WRITE, 0);
	setd(desc(3), IND, 3 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	TAP_EQ(offer(3), 1, "indirect chain popped");
	tap_ok(chain.head == 3 && chain.nout == 1 && chain.nin == 2 &&
	    chain.in_len == 65, "indirect segments");

	/* Hostile chains, each on a fresh queue. */
	fresh(false);
	refused(QSIZE, "head out of the table");
	TAP_EQ(virtq_pop(&vq, &chain), 0, "a broken queue yields nothing");
	fresh(false);
	setd(desc(0), RAM_BASE + RAM_SIZE - 8, 16, 0, 0);
	refused(0, "buffer crossing the end of RAM");
	fresh(false);
	setd(desc(0), 0x1000, 16, 0, 0);
	refused(0, "buffer below RAM");
	fresh(false);
	setd(desc(0), UINT64_MAX - 7, 16, 0, 0);
	refused(0, "buffer wrapping the address space");
	fresh(false);
	setd(desc(0), BUF, 0xffffffff, 0, 0);
	refused(0, "4 GiB buffer");
	fresh(false);
	setd(desc(0), BUF, 0, 0, 0);
	refused(0, "zero length");
	fresh(false);
	setd(desc(0), BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	setd(desc(1), BUF, 16, VIRTQ_DESC_F_NEXT, 0);
	refused(0, "loop");
	fresh(false);
	for (i = 0; i < QSIZE; i++)
		setd(desc(i), BUF, 16, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	setd(desc(QSIZE - 1), BUF, 16, VIRTQ_DESC_F_NEXT, 0);
	refused(0, "chain through every descriptor and back");
	fresh(false);
	setd(desc(0), BUF, 16, VIRTQ_DESC_F_NEXT, QSIZE + 3);
	refused(0, "next out of the table");
	fresh(false);
	setd(desc(0), BUF, 16, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	setd(desc(1), BUF, 16, 0, 0);
	refused(0, "readable after writable");
	fresh(false);
	avail->ring[0] = 0;
	avail->idx = QSIZE + 1;
	TAP_EQ(virtq_pop(&vq, &chain), -EINVAL,
	    "avail index more than a ring ahead");
	fresh(false);
	setd(ind(0), IND, 16, VIRTQ_DESC_F_INDIRECT, 0);
	setd(desc(0), IND, 16, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "indirect inside indirect");
	fresh(false);
	setd(ind(0), BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	setd(ind(1), BUF, 16, VIRTQ_DESC_F_NEXT, 0);
	setd(desc(0), IND, 32, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "loop inside an indirect table");
	fresh(false);
	setd(ind(0), BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	setd(desc(0), IND, 32, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "indirect next past its table");
	fresh(false);
	setd(desc(0), IND, 24, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "indirect length not a multiple of 16");
	fresh(false);
	setd(desc(0), IND, 0, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "empty indirect table");
	fresh(false);
	setd(desc(0), IND, 16 * (VIRTQ_MAX_SEGS + 1), VIRTQ_DESC_F_INDIRECT,
	    0);
	refused(0, "indirect table over the segment limit");
	fresh(false);
	setd(ind(0), BUF, 16, 0, 0);
	setd(desc(0), IND, 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 1);
	refused(0, "indirect chained with NEXT");
	fresh(false);
	setd(ind(0), BUF, 16, 0, 0);
	setd(desc(0), BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	setd(desc(1), IND, 16, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "indirect in the middle of a chain");
	fresh(false);
	setd(desc(0), RAM_BASE + RAM_SIZE, 16, VIRTQ_DESC_F_INDIRECT, 0);
	refused(0, "indirect table outside RAM");
	fresh(false);
	setd(desc(0), BUF, 16, 0, 0);
	TAP_EQ(offer(0), 1, "the queue works again after a reset");

	/* Event index (2.7.10). */
	fresh(true);
	setd(desc(0), BUF, 16, 0, 0);
	avail->ring[QSIZE] = 1;		/* used_event: tell me after two */
	TAP_EQ(offer(0), 1, "popped with event index");
	TAP_EQ(*(uint16_t *)gmem(USED + 4 + 8 * QSIZE), 1,
	    "avail_event published");
	virtq_push(&vq, 0, 0);
	tap_ok(!virtq_should_notify(&vq), "used_event not reached");
	TAP_EQ(offer(0), 1, "second");
	virtq_push(&vq, 0, 0);
	tap_ok(virtq_should_notify(&vq), "used_event crossed");

	/* Kicks off while the device drains (2.7.10), event index. */
	virtq_quiet(&vq);
	TAP_EQ(offer(0), 1, "quiet: chains still pop");
	TAP_EQ(*(uint16_t *)gmem(USED + 4 + 8 * QSIZE), 2,
	    "quiet: avail_event stays behind the driver");
	TAP_EQ(offer(0), 1, "and again");
	TAP_EQ(*(uint16_t *)gmem(USED + 4 + 8 * QSIZE), 2,
	    "quiet: avail_event still behind");
	avail->ring[avail_idx % QSIZE] = 0;
	avail->idx = ++avail_idx;	/* added after the last pop */
	tap_ok(virtq_listen(&vq), "listen: a chain added meanwhile is seen");
	TAP_EQ(*(uint16_t *)gmem(USED + 4 + 8 * QSIZE), 4,
	    "listen: avail_event at the next chain to take");
	TAP_EQ(virtq_pop(&vq, &chain), 1, "and taken");
	TAP_EQ(*(uint16_t *)gmem(USED + 4 + 8 * QSIZE), 5,
	    "listening: avail_event follows the pops again");
	tap_ok(!virtq_listen(&vq), "listen on an empty ring: nothing waits");

	/* The same without event index: the used ring's flag. */
	fresh(false);
	setd(desc(0), BUF, 16, 0, 0);
	virtq_quiet(&vq);
	TAP_EQ(*(uint16_t *)gmem(USED), VIRTQ_USED_F_NO_NOTIFY,
	    "quiet: VIRTQ_USED_F_NO_NOTIFY set");
	TAP_EQ(offer(0), 1, "quiet: chains still pop");
	tap_ok(!virtq_listen(&vq) && *(uint16_t *)gmem(USED) == 0,
	    "listen: flag cleared, nothing waits");
	virtq_quiet(&vq);
	avail->ring[avail_idx % QSIZE] = 0;
	avail->idx = ++avail_idx;
	tap_ok(virtq_listen(&vq), "listen: a chain added while quiet is seen");
	vq.broken = true;
	tap_ok(!virtq_listen(&vq), "a broken queue has nothing to take");

	/* Used elements in a batch: one index update shows them all. */
	fresh(false);
	virtq_fill(&vq, 3, 10);
	virtq_fill(&vq, 5, 20);
	tap_ok(((struct virtq_used *)gmem(USED))->idx == 0 && virtq_held(&vq),
	    "filled, not shown yet");
	virtq_flush(&vq);
	tap_ok(((struct virtq_used *)gmem(USED))->idx == 2 && !virtq_held(&vq),
	    "flushed: both shown");
	tap_ok(((struct virtq_used *)gmem(USED))->ring[1].id == 5 &&
	    ((struct virtq_used *)gmem(USED))->ring[1].len == 20,
	    "in order, as filled");

	free(fh.mem);
	return tap_done();
}
