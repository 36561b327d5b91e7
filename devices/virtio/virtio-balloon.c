/* See virtio-balloon.h; section numbers are Virtio 1.2's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dev-state.h"
#include "virtio-balloon.h"
#include "virtio-dev.h"

#define PAGE		(1u << VIRTIO_BALLOON_PAGE_SHIFT)

/* Configuration layout (5.5.4): num_pages, actual, and the two words
 * of FREE_PAGE_HINT and PAGE_POISON, which are not offered (zero). */
#define CFG_NUM_PAGES	0
#define CFG_ACTUAL	4
#define CFG_SIZE	16

/* One statistic as the driver writes it (5.5.6.3): le16, le64, packed. */
#define STAT_LEN	10
#define STATS_MAX	32		/* pairs read from one buffer */
/*
 * Page numbers taken from one inflate or deflate buffer; Linux sends
 * 256 at most.  More (a buffer of up to 4 GiB) would hold the thread
 * that serves the kick for as long as the driver likes: the rest are
 * refused.
 */
#define PFNS_MAX	16384

struct virtio_balloon {
	struct virtio_dev vdev;
	const struct device_host *host;
	struct virtq_chain chain;	/* the one being served */
	uint32_t num_pages;		/* the target, host's */
	uint32_t actual;		/* the driver's */
	/* The statistics buffer the device holds, if it does. */
	bool stats_held;
	uint16_t stats_head;
	/* Periodic requests: none while stats_period is 0. */
	struct device_timer *timer;
	int64_t stats_period;
	int64_t stats_deadline;
	/* The driver's last statistics, by tag. */
	uint64_t stat[VIRTIO_BALLOON_S_NR];
	/* Counters. */
	uint64_t inflated;		/* pages given back by inflating */
	uint64_t deflated;		/* pages the driver took back */
	uint64_t reported;		/* bytes of free page reports given back */
	uint64_t reports;		/* report buffers */
	uint64_t bad_pfns;		/* outside guest RAM: refused */
	uint64_t bad_ranges;		/* reported ranges not page-aligned */
	uint64_t discard_errors;	/* madvise refused */
	uint64_t stats_updates;		/* buffers of statistics read */
	uint64_t stats_requests;	/* buffers given back for them */
};

static struct virtio_balloon *
virtio_balloon_of(struct virtio_dev *d)
{
	return VIRTIO_DEV_STATE(d, struct virtio_balloon, vdev);
}

/*
 * Give len bytes of guest RAM at hva back to the host.  Guest RAM is
 * mostly a private mapping (machine.c): anonymous, where the pages come back
 * zero-filled when touched, or, for a VM restored from a snapshot, the
 * snapshot's memory file, where MADV_DONTNEED drops the private copy
 * and the page reads back as the file has it.  Both are right for a
 * balloon: without VIRTIO_BALLOON_F_PAGE_POISON (not offered) the
 * driver expects no content of a page it gave up or reported (5.5.6.2,
 * 5.5.6.7; Linux turns reporting off when it poisons or zeroes freed
 * pages and the device cannot keep the pattern), and the stale content
 * is the same guest's own.  What the host keeps then is at most the
 * page cache of the snapshot file, which it may reclaim.  Shared guest
 * RAM (a memfd, for a VM with a shared directory: machine.c) keeps its
 * pages in the memfd after MADV_DONTNEED: MADV_REMOVE frees them there,
 * and the kernel refuses it on private mappings (EINVAL anonymous,
 * EACCES file-backed), which then take MADV_DONTNEED.
 */
static int
virtio_balloon_discard(struct virtio_balloon *b, void *hva, size_t len)
{
	if (madvise(hva, len, MADV_REMOVE) == 0)
		return 0;
	if (madvise(hva, len, MADV_DONTNEED) != 0) {
		b->discard_errors++;
		return -errno;
	}
	return 0;
}

/*
 * Inflate or deflate (5.5.6.1): the readable part of a chain is an
 * array of le32 page frame numbers.  Inflated pages are discarded in
 * runs of pages adjacent in the host's mapping, one call per run; a
 * number outside guest RAM, or beyond the first PFNS_MAX, is counted
 * and skipped.
 */
static void
virtio_balloon_pfns(struct virtio_balloon *b, struct virtq_chain *c,
    bool inflate)
{
	uint64_t n = c->out_len / 4;
	uint8_t *run = NULL;
	size_t run_len = 0, off;
	uint32_t pfn;

	if (n > PFNS_MAX) {
		b->bad_pfns += n - PFNS_MAX;
		n = PFNS_MAX;
	}
	for (off = 0; off < n * 4; off += 4) {
		uint8_t *hva;

		if (virtq_chain_read(c, off, &pfn, 4) != 4)
			break;
		hva = device_guest_mem(b->host,
		    (uint64_t)pfn << VIRTIO_BALLOON_PAGE_SHIFT, PAGE);
		if (hva == NULL) {
			b->bad_pfns++;
			continue;
		}
		if (!inflate) {
			b->deflated++;
			continue;
		}
		b->inflated++;
		if (run != NULL && hva == run + run_len) {
			run_len += PAGE;
			continue;
		}
		if (run != NULL)
			virtio_balloon_discard(b, run, run_len);
		run = hva;
		run_len = PAGE;
	}
	if (run != NULL)
		virtio_balloon_discard(b, run, run_len);
}

/*
 * A free page report (5.5.6.7): each buffer of the chain is a range of
 * free guest RAM, which virtq_pop() has already found wholly inside
 * guest RAM (a chain outside it breaks the queue: a driver bug or a
 * hostile one).  Ranges are whole pages; a part of one that is not is
 * left alone and counted.
 */
static void
virtio_balloon_report(struct virtio_balloon *b, struct virtq_chain *c)
{
	for (unsigned int i = 0; i < c->nout + c->nin; i++) {
		uintptr_t start = (uintptr_t)c->iov[i].iov_base;
		uintptr_t end = start + c->iov[i].iov_len;
		uintptr_t s = (start + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
		uintptr_t e = end & ~(uintptr_t)(PAGE - 1);

		if (s != start || e != end)
			b->bad_ranges++;
		if (e <= s)
			continue;
		if (virtio_balloon_discard(b, (void *)s, e - s) == 0)
			b->reported += e - s;
	}
	b->reports++;
}

/* The held buffer's statistics (5.5.6.3); tags the device does not
 * know are skipped, as the driver may send newer ones. */
static void
virtio_balloon_read_stats(struct virtio_balloon *b, struct virtq_chain *c)
{
	uint8_t pair[STAT_LEN];
	uint16_t tag;
	uint64_t val;

	for (size_t off = 0, i = 0; i < STATS_MAX; off += STAT_LEN, i++) {
		if (virtq_chain_read(c, off, pair, STAT_LEN) != STAT_LEN)
			break;
		memcpy(&tag, pair, 2);		/* little endian, as the guest */
		memcpy(&val, pair + 2, 8);
		if (tag < VIRTIO_BALLOON_S_NR)
			b->stat[tag] = val;
	}
	b->stats_updates++;
}

static void
virtio_balloon_run(struct virtio_balloon *b, unsigned int q)
{
	struct virtq *vq = &b->vdev.vq[q];
	struct virtq_chain *c = &b->chain;
	int ret;

	while ((ret = virtq_pop(vq, c)) > 0) {
		switch (q) {
		case VIRTIO_BALLOON_Q_INFLATE:
		case VIRTIO_BALLOON_Q_DEFLATE:
			virtio_balloon_pfns(b, c, q == VIRTIO_BALLOON_Q_INFLATE);
			break;
		case VIRTIO_BALLOON_Q_STATS:
			virtio_balloon_read_stats(b, c);
			/* One buffer is held; an older one goes back. */
			if (b->stats_held)
				virtq_push(vq, b->stats_head, 0);
			b->stats_held = true;
			b->stats_head = c->head;
			continue;
		case VIRTIO_BALLOON_Q_REPORT:
			virtio_balloon_report(b, c);
			break;
		}
		virtq_push(vq, c->head, 0);
	}
	if (ret < 0)
		virtio_dev_needs_reset(&b->vdev);
	virtio_dev_queue_done(&b->vdev, q);
}

static void
virtio_balloon_notify(struct virtio_dev *d, unsigned int q)
{
	virtio_balloon_run(virtio_balloon_of(d), q);
}

static void
virtio_balloon_arm(struct virtio_balloon *b)
{
	if (b->stats_period > 0 && b->vdev.driver_ok)
		device_timer_arm(b->host, b->timer, b->stats_deadline);
}

/*
 * Linux sends its statistics buffer before DRIVER_OK, and may have
 * sent pages too: take what waits.  The periodic request comes a period
 * from now, or at the deadline a load set (the transport's load
 * activates the device after the device's own state loaded).
 */
static void
virtio_balloon_activate(struct virtio_dev *d)
{
	struct virtio_balloon *b = virtio_balloon_of(d);
	int64_t now = device_vm_clock(b->host);

	for (unsigned int q = 0; q < d->ops->nqueues; q++)
		if (virtio_dev_queue_live(d, q))
			virtio_balloon_run(b, q);
	if (b->stats_deadline <= now)
		b->stats_deadline = now + b->stats_period;
	virtio_balloon_arm(b);
}

static void
virtio_balloon_reset(struct virtio_dev *d)
{
	struct virtio_balloon *b = virtio_balloon_of(d);

	device_timer_cancel(b->host, b->timer);
	b->stats_held = false;
	b->stats_head = 0;
	b->actual = 0;
}

int
virtio_balloon_stats_request(struct virtio_dev *d)
{
	struct virtio_balloon *b = virtio_balloon_of(d);

	if (!b->stats_held ||
	    !virtio_dev_queue_live(d, VIRTIO_BALLOON_Q_STATS))
		return -EAGAIN;
	b->stats_held = false;
	b->stats_requests++;
	virtq_push(&d->vq[VIRTIO_BALLOON_Q_STATS], b->stats_head, 0);
	virtio_dev_queue_done(d, VIRTIO_BALLOON_Q_STATS);
	return 0;
}

/* The periodic request: on the loop, under the device's lock. */
static void
virtio_balloon_timer(void *dev)
{
	struct virtio_balloon *b = dev;

	virtio_balloon_stats_request(&b->vdev);
	b->stats_deadline += b->stats_period;
	virtio_balloon_arm(b);
}

void
virtio_balloon_stats_every(struct virtio_dev *d, int64_t period_ns)
{
	struct virtio_balloon *b = virtio_balloon_of(d);

	b->stats_period = period_ns > 0 ? period_ns : 0;
	if (b->stats_period == 0) {
		device_timer_cancel(b->host, b->timer);
		return;
	}
	b->stats_deadline = device_vm_clock(b->host) + b->stats_period;
	virtio_balloon_arm(b);
}

void
virtio_balloon_set_target(struct virtio_dev *d, uint32_t pages)
{
	struct virtio_balloon *b = virtio_balloon_of(d);

	if (b->num_pages == pages)
		return;
	b->num_pages = pages;
	if (d->driver_ok)
		virtio_dev_config_changed(d);
}

uint32_t
virtio_balloon_target(struct virtio_dev *d)
{
	return virtio_balloon_of(d)->num_pages;
}

static void
virtio_balloon_config_read(struct virtio_dev *d, uint32_t offset, void *data,
    unsigned int size)
{
	struct virtio_balloon *b = virtio_balloon_of(d);
	uint8_t cfg[CFG_SIZE] = { 0 };

	memcpy(&cfg[CFG_NUM_PAGES], &b->num_pages, 4);	/* little endian */
	memcpy(&cfg[CFG_ACTUAL], &b->actual, 4);
	memcpy(data, &cfg[offset], size);
}

/* Only actual is the driver's to write (5.5.6.1); the rest is ignored. */
static void
virtio_balloon_config_write(struct virtio_dev *d, uint32_t offset,
    const void *data, unsigned int size)
{
	struct virtio_balloon *b = virtio_balloon_of(d);
	uint8_t cur[4];

	memcpy(cur, &b->actual, 4);
	for (unsigned int i = 0; i < size; i++)
		if (offset + i >= CFG_ACTUAL && offset + i < CFG_ACTUAL + 4)
			cur[offset + i - CFG_ACTUAL] =
			    ((const uint8_t *)data)[i];
	memcpy(&b->actual, cur, 4);
}

static const struct figure virtio_balloon_figure_rows[] = {
	{ "target_pages", "vmmd_balloon_target_pages", FIGURE_GAUGE,
	    FIGURE_UNIT_NONE, "Pages the host asks the balloon to hold",
	    FIGURE_AT(struct virtio_balloon, num_pages) },
	{ "actual_pages", "vmmd_balloon_actual_pages", FIGURE_GAUGE,
	    FIGURE_UNIT_NONE, "Pages the guest says the balloon holds",
	    FIGURE_AT(struct virtio_balloon, actual) },
	{ "inflated_pages", "vmmd_balloon_inflated_pages", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Pages the guest gave up by inflating",
	    FIGURE_AT(struct virtio_balloon, inflated) },
	{ "deflated_pages", "vmmd_balloon_deflated_pages", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Pages the guest took back by deflating",
	    FIGURE_AT(struct virtio_balloon, deflated) },
	{ "reported_bytes", "vmmd_balloon_reported_bytes", FIGURE_COUNTER,
	    FIGURE_UNIT_BYTES, "Free guest memory reported and given back",
	    FIGURE_AT(struct virtio_balloon, reported) },
	{ "reports", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Free page report buffers",
	    FIGURE_AT(struct virtio_balloon, reports) },
	{ "bad_pfns", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Page numbers outside guest RAM, refused",
	    FIGURE_AT(struct virtio_balloon, bad_pfns) },
	{ "bad_ranges", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Reported ranges not in whole pages",
	    FIGURE_AT(struct virtio_balloon, bad_ranges) },
	{ "discard_errors", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Discards the host refused (madvise failed)",
	    FIGURE_AT(struct virtio_balloon, discard_errors) },
	{ "stats_updates", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Statistics buffers the guest filled",
	    FIGURE_AT(struct virtio_balloon, stats_updates) },
	{ "stats_requests", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Statistics buffers given back for new values",
	    FIGURE_AT(struct virtio_balloon, stats_requests) },
	/* The guest's last statistics, by tag (5.5.6.3). */
	{ "swap_in", NULL, FIGURE_GAUGE, FIGURE_UNIT_BYTES,
	    "Guest: swapped in", FIGURE_AT(struct virtio_balloon, stat[0]) },
	{ "swap_out", NULL, FIGURE_GAUGE, FIGURE_UNIT_BYTES,
	    "Guest: swapped out", FIGURE_AT(struct virtio_balloon, stat[1]) },
	{ "major_faults", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Guest: major page faults",
	    FIGURE_AT(struct virtio_balloon, stat[2]) },
	{ "minor_faults", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Guest: minor page faults",
	    FIGURE_AT(struct virtio_balloon, stat[3]) },
	{ "free_memory", "vmmd_balloon_guest_free_bytes", FIGURE_GAUGE,
	    FIGURE_UNIT_BYTES, "Guest: free memory, as it last said",
	    FIGURE_AT(struct virtio_balloon, stat[4]) },
	{ "total_memory", "vmmd_balloon_guest_total_bytes", FIGURE_GAUGE,
	    FIGURE_UNIT_BYTES, "Guest: total memory, as it last said",
	    FIGURE_AT(struct virtio_balloon, stat[5]) },
	{ "available_memory", "vmmd_balloon_guest_available_bytes",
	    FIGURE_GAUGE, FIGURE_UNIT_BYTES,
	    "Guest: available memory, as it last said",
	    FIGURE_AT(struct virtio_balloon, stat[6]) },
	{ "disk_caches", NULL, FIGURE_GAUGE, FIGURE_UNIT_BYTES,
	    "Guest: disk caches", FIGURE_AT(struct virtio_balloon, stat[7]) },
	{ "hugetlb_allocations", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Guest: huge page allocations",
	    FIGURE_AT(struct virtio_balloon, stat[8]) },
	{ "hugetlb_failures", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Guest: huge page allocation failures",
	    FIGURE_AT(struct virtio_balloon, stat[9]) },
};

static const struct figure_table virtio_balloon_figures =
    FIGURE_TABLE(virtio_balloon_figure_rows);

static void
virtio_balloon_diag(struct virtio_dev *d, struct device_diag *dd)
{
	struct virtio_balloon *b = virtio_balloon_of(d);

	device_diag_put(dd, "stats_held", b->stats_held, DEVICE_DIAG_BOOL);
	device_diag_figures(dd, &virtio_balloon_figures, b);
}

/*
 * Snapshots: the section "virtio-balloon", the target and the driver's
 * actual, the statistics buffer the device holds and the period of the
 * requests for it.  That one must be
 * kept: Linux's driver sends it again only when the device has given it
 * back, so a device that forgot it would get no statistics until the
 * guest reloads its driver.  Its chain is in flight in the saved queue
 * (last_avail past used_idx), so the head is all it takes to give it
 * back after a load.
 */
struct virtio_balloon_state {
	uint32_t num_pages, actual;
	bool stats_held;
	uint16_t stats_head;
	uint64_t stats_period, stats_deadline;
};

static const struct dev_state_field virtio_balloon_state_fields[] = {
	{ .name = "num_pages", .type = DEV_STATE_U32,
	    DEV_STATE_AT(struct virtio_balloon_state, num_pages) },
	{ .name = "actual", .type = DEV_STATE_U32,
	    DEV_STATE_AT(struct virtio_balloon_state, actual) },
	{ .name = "stats_held", .type = DEV_STATE_BOOL,
	    DEV_STATE_AT(struct virtio_balloon_state, stats_held) },
	{ .name = "stats_head", .type = DEV_STATE_U16,
	    DEV_STATE_AT(struct virtio_balloon_state, stats_head),
	    .max = VIRTQ_MAX_SIZE - 1 },
	/* The periodic request vmmd asked for (worker.balloon's
	 * stats_interval), on the VM clock: a restored or migrated guest's
	 * statistics go on being refreshed.  Version 1 had none: 0. */
	{ .name = "stats_period_ns", .type = DEV_STATE_U64,
	    DEV_STATE_AT(struct virtio_balloon_state, stats_period),
	    .max = INT64_MAX, .since = 2 },
	{ .name = "stats_deadline_ns", .type = DEV_STATE_U64,
	    DEV_STATE_AT(struct virtio_balloon_state, stats_deadline),
	    .max = INT64_MAX, .since = 2 },
};

static const struct dev_state_table virtio_balloon_state_table = {
	DEV_STATE_TABLE("virtio-balloon", 2, struct virtio_balloon_state,
	    virtio_balloon_state_fields),
};

static int
virtio_balloon_save(struct virtio_dev *d, struct dev_state_buf *out)
{
	struct virtio_balloon *b = virtio_balloon_of(d);
	struct virtio_balloon_state st = {
		.num_pages = b->num_pages, .actual = b->actual,
		.stats_held = b->stats_held, .stats_head = b->stats_head,
		.stats_period = (uint64_t)b->stats_period,
		.stats_deadline = b->stats_period > 0 ?
		    (uint64_t)b->stats_deadline : 0,
	};

	return dev_state_save(&virtio_balloon_state_table, &st, out);
}

/* The queues are loaded already: a held head must be one of statsq's. */
static int
virtio_balloon_load(struct virtio_dev *d, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct virtio_balloon *b = virtio_balloon_of(d);
	const struct virtq *vq = &d->vq[VIRTIO_BALLOON_Q_STATS];
	struct virtio_balloon_state st;
	int rc;

	rc = dev_state_load(&virtio_balloon_state_table, &st, buf, len, err);
	if (rc != 0)
		return rc;
	if (st.stats_held && (!vq->enabled || st.stats_head >= vq->size ||
	    vq->last_avail == vq->used_idx))
		return dev_state_fail(err, -EINVAL, "virtio-balloon: a "
		    "statistics buffer held (head %u) that the queue has not "
		    "in flight", st.stats_head);
	b->num_pages = st.num_pages;
	b->actual = st.actual;
	b->stats_held = st.stats_held;
	b->stats_head = st.stats_head;
	b->stats_period = (int64_t)st.stats_period;
	b->stats_deadline = (int64_t)st.stats_deadline;
	device_timer_cancel(b->host, b->timer);
	virtio_balloon_arm(b);
	return 0;
}

static void
virtio_balloon_free(struct virtio_dev *d)
{
	struct virtio_balloon *b = virtio_balloon_of(d);

	device_timer_free(b->host, b->timer);
	free(b);
}

static const struct virtio_dev_ops virtio_balloon_ops = {
	.type = 5,
	.nqueues = 4,
	.queue_max = VIRTIO_BALLOON_QUEUE,
	.features = 1ULL << VIRTIO_BALLOON_F_STATS_VQ |
	    1ULL << VIRTIO_BALLOON_F_DEFLATE_ON_OOM |
	    1ULL << VIRTIO_BALLOON_F_FREE_PAGE_REPORTING,
	.config_size = CFG_SIZE,
	.config_read = virtio_balloon_config_read,
	.config_write = virtio_balloon_config_write,
	.notify = virtio_balloon_notify,
	.activate = virtio_balloon_activate,
	.reset = virtio_balloon_reset,
	.save = virtio_balloon_save,
	.load = virtio_balloon_load,
	.diag = virtio_balloon_diag,
	.free = virtio_balloon_free,
};

struct virtio_dev *
virtio_balloon_new(const struct device_host *host)
{
	struct virtio_balloon *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->host = host;
	if ((b->timer = device_timer_new(host, virtio_balloon_timer,
	    b)) == NULL)
		goto free_b;
	if (virtio_dev_init(&b->vdev, &virtio_balloon_ops) < 0)
		goto free_timer;
	return &b->vdev;

free_timer:
	device_timer_free(host, b->timer);
free_b:
	free(b);
	return NULL;
}
