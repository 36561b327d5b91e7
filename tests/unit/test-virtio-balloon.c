/*
 * virtio-balloon behind the PCI transport, driven as Linux's
 * virtio_balloon drives it: the feature offer and the four queues, a
 * target that raises a configuration interrupt, actual written back,
 * inflate (pages given back to the host: they read zero again, page
 * numbers outside RAM counted and skipped), deflate, the statistics
 * buffer held and given back only on request (periodically only when
 * asked, the timer gone again after), free page reports in and out of
 * RAM, and the held buffer and the period across a save and load.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake-host.h"
#include "tap.h"
#include "virtio-balloon.h"
#include "virtio-driver.h"
#include "virtio-pci.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define PFNS		(RAM_BASE + 0x10000)	/* the driver's arrays */
#define PAGES		(RAM_BASE + 0x20000)	/* what it inflates */
#define FREE		(RAM_BASE + 0x40000)	/* what it reports */
#define PAGE		4096u

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct vdrv d;

/* vm.info's view of the device: the value of one key. */
static const char *want_key;
static uint64_t got;

static void
diag_put(struct device_diag *dd, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	if (strcmp(key, want_key) == 0)
		got = value;
}

static uint64_t
diag(void *dev, const char *key)
{
	struct device_diag dd = { .put = diag_put };

	want_key = key;
	got = UINT64_MAX;
	virtio_pci_device_ops.diag(dev, &dd);
	return got;
}

static bool
all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* One readable buffer of n page frame numbers on queue q, head 0. */
static void
send_pfns(unsigned int q, const uint32_t *pfn, unsigned int n)
{
	memcpy(vdrv_gmem(&d, PFNS), pfn, n * 4);
	vdrv_desc(&d, q)[0] = (struct virtq_desc){ PFNS, n * 4, 0, 0 };
	vdrv_offer(&d, q, 0);
}

/* The statistics buffer, head 0 of statsq: (tag, value) pairs. */
static void
put_stats(const uint16_t *tag, const uint64_t *val, unsigned int n)
{
	uint8_t *p = vdrv_gmem(&d, PFNS + 0x800);

	for (unsigned int i = 0; i < n; i++) {
		memcpy(p + 10 * i, &tag[i], 2);
		memcpy(p + 10 * i + 2, &val[i], 8);
	}
	vdrv_desc(&d, VIRTIO_BALLOON_Q_STATS)[0] =
	    (struct virtq_desc){ PFNS + 0x800, 10 * n, 0, 0 };
}

int
main(void)
{
	const uint64_t feat = 1ULL << VIRTIO_F_VERSION_1 |
	    1ULL << VIRTIO_BALLOON_F_STATS_VQ |
	    1ULL << VIRTIO_BALLOON_F_DEFLATE_ON_OOM |
	    1ULL << VIRTIO_BALLOON_F_FREE_PAGE_REPORTING;
	const uint16_t tags[] = { 4, 6, 99, 2 };
	const uint64_t vals[] = { 1000, 2000, 5, 7 };
	struct virtq_used *su, *ru;
	struct dev_state_buf sb = { 0 };
	struct dev_state_error e;
	struct virtio_dev *bd;
	uint8_t *ram, *pages, *free_;
	void *saved;
	int rc;

	/* Page-aligned anonymous memory, as guest RAM is. */
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ram == MAP_FAILED)
		tap_bail("no memory");
	vdrv_init(&d, &fh, ram, RAM_BASE, RAM_SIZE);
	pages = vdrv_gmem(&d, PAGES);
	free_ = vdrv_gmem(&d, FREE);
	su = vdrv_used(&d, VIRTIO_BALLOON_Q_STATS);
	ru = vdrv_used(&d, VIRTIO_BALLOON_Q_REPORT);

	bd = virtio_balloon_new(&fh.host);
	d.dev = virtio_pci_new(&fh.host, bd);
	tap_ok(d.dev != NULL, "device made");
	TAP_EQ(vdrv_rd(&d, 0x12, 2), 4, "four queues");
	vdrv_wr(&d, 0x00, 0, 4);
	TAP_EQ(vdrv_rd(&d, 0x04, 4) & 0xff, 0x26,
	    "STATS_VQ, DEFLATE_ON_OOM and FREE_PAGE_REPORTING offered");
	TAP_EQ(vdrv_bring_up(&d, feat, 4), 0x0f, "driver OK, four queues");
	TAP_EQ(fake_host_timers_armed(&fh), 0, "no timer by default");

	/* Target and actual (5.5.6.1). */
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE, 4), 0, "num_pages 0");
	virtio_balloon_set_target(bd, 300);
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE, 4), 300, "num_pages set");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_ISR, 1), 2,
	    "with a configuration change interrupt");
	virtio_balloon_set_target(bd, 300);
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_ISR, 1), 0, "none for the same target");
	vdrv_wr(&d, VIRTIO_PCI_DEVICE + 4, 3, 4);
	vdrv_wr(&d, VIRTIO_PCI_DEVICE + 0, 77, 4);
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE + 4, 4), 3, "actual written");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE, 4), 300,
	    "num_pages is not the driver's to write");

	/* Inflate: three pages in a run, one more, one outside RAM. */
	memset(pages, 0xaa, 8 * PAGE);
	{
		uint32_t pfn[] = { PAGES / PAGE, PAGES / PAGE + 1,
		    PAGES / PAGE + 2, PAGES / PAGE + 5, 0x7fffffff,
		    (RAM_BASE + RAM_SIZE) / PAGE };

		send_pfns(VIRTIO_BALLOON_Q_INFLATE, pfn, 6);
	}
	TAP_EQ(vdrv_used(&d, 0)->idx, 1, "inflate buffer returned");
	tap_ok(all(pages, 3 * PAGE, 0) && all(pages + 3 * PAGE, 2 * PAGE,
	    0xaa) && all(pages + 5 * PAGE, PAGE, 0) &&
	    all(pages + 6 * PAGE, 2 * PAGE, 0xaa),
	    "inflated pages given back (they read zero), the others kept");
	TAP_EQ(diag(d.dev, "inflated_pages"), 4, "four pages inflated");
	TAP_EQ(diag(d.dev, "bad_pfns"), 2, "two outside RAM refused");
	TAP_EQ(diag(d.dev, "discard_errors"), 0, "no discard failed");

	/* One buffer holds 16384 page numbers at most. */
	{
		uint32_t *pfn = vdrv_gmem(&d, PFNS);

		for (unsigned int i = 0; i < 16385; i++)
			pfn[i] = PAGES / PAGE + 7;
		vdrv_desc(&d, 0)[0] = (struct virtq_desc){ PFNS, 16385 * 4,
		    0, 0 };
		vdrv_offer(&d, 0, 0);
	}
	TAP_EQ(diag(d.dev, "inflated_pages"), 4 + 16384,
	    "16384 page numbers of a buffer taken");
	TAP_EQ(diag(d.dev, "bad_pfns"), 3, "the one beyond them refused");

	/* Deflate only acknowledges. */
	{
		uint32_t pfn[] = { PAGES / PAGE, PAGES / PAGE + 1, 0xffffffff };

		send_pfns(VIRTIO_BALLOON_Q_DEFLATE, pfn, 3);
	}
	TAP_EQ(vdrv_used(&d, 1)->idx, 1, "deflate buffer returned");
	TAP_EQ(diag(d.dev, "deflated_pages"), 2, "two pages deflated");
	TAP_EQ(diag(d.dev, "bad_pfns"), 4, "and one more refused");

	/* Statistics: held until asked for (5.5.6.3). */
	TAP_EQ(virtio_balloon_stats_request(bd), -EAGAIN,
	    "no statistics before the driver sends its buffer");
	put_stats(tags, vals, 4);
	vdrv_offer(&d, VIRTIO_BALLOON_Q_STATS, 0);
	TAP_EQ(su->idx, 0, "the statistics buffer is held");
	tap_ok(diag(d.dev, "free_memory") == 1000 &&
	    diag(d.dev, "available_memory") == 2000 &&
	    diag(d.dev, "major_faults") == 7, "statistics read");
	TAP_EQ(diag(d.dev, "stats_held"), 1, "vm.info says it is held");
	TAP_EQ(virtio_balloon_stats_request(bd), 0, "request");
	TAP_EQ(su->idx, 1, "the buffer goes back to the driver");
	TAP_EQ(virtio_balloon_stats_request(bd), -EAGAIN,
	    "a second request waits for it");
	{
		const uint64_t v2[] = { 4000, 5000, 0, 8 };

		put_stats(tags, v2, 4);
	}
	vdrv_offer(&d, VIRTIO_BALLOON_Q_STATS, 0);
	TAP_EQ(diag(d.dev, "free_memory"), 4000, "new statistics read");
	TAP_EQ(diag(d.dev, "stats_updates"), 2, "two updates");

	virtio_balloon_stats_every(bd, 2000000000);
	TAP_EQ(fake_host_timers_armed(&fh), 1, "a period arms the timer");
	fake_host_advance(&fh, 2000000000);
	TAP_EQ(su->idx, 2, "the period gives the buffer back");
	vdrv_offer(&d, VIRTIO_BALLOON_Q_STATS, 0);
	fake_host_advance(&fh, 2000000000);
	TAP_EQ(su->idx, 3, "and again a period later");
	vdrv_offer(&d, VIRTIO_BALLOON_Q_STATS, 0);
	virtio_balloon_stats_every(bd, 0);
	TAP_EQ(fake_host_timers_armed(&fh), 0, "no period, no timer");
	fake_host_advance(&fh, 10000000000LL);
	TAP_EQ(su->idx, 3, "and no request");

	/* Free page reports (5.5.6.7). */
	memset(free_, 0xbb, 6 * PAGE);
	vdrv_desc(&d, 3)[0] = (struct virtq_desc){ FREE, 2 * PAGE,
	    VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1 };
	vdrv_desc(&d, 3)[1] = (struct virtq_desc){ FREE + 3 * PAGE + 0x800,
	    PAGE + 0x800, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, VIRTIO_BALLOON_Q_REPORT, 0);
	TAP_EQ(ru->idx, 1, "report returned");
	tap_ok(all(free_, 2 * PAGE, 0) && all(free_ + 2 * PAGE, 2 * PAGE,
	    0xbb) && all(free_ + 4 * PAGE, PAGE, 0) &&
	    all(free_ + 5 * PAGE, PAGE, 0xbb),
	    "reported whole pages given back, the part page kept");
	TAP_EQ(diag(d.dev, "reported_bytes"), 3 * PAGE, "12 KiB reported");
	TAP_EQ(diag(d.dev, "bad_ranges"), 1, "one range not in pages");

	/* The held statistics buffer and the period across a save and
	 * load: the period's next request 3 s after it was asked for, 1 s
	 * of which passed before the save. */
	virtio_balloon_stats_every(bd, 3000000000);
	fake_host_advance(&fh, 1000000000);
	rc = virtio_pci_device_ops.save(d.dev, &sb);
	tap_ok(rc == 0, "saved: %d", rc);
	saved = d.dev;
	bd = virtio_balloon_new(&fh.host);
	d.dev = virtio_pci_new(&fh.host, bd);
	rc = virtio_pci_device_ops.load(d.dev, sb.data, sb.len, &e);
	tap_ok(rc == 0, "loaded: %d %s", rc, rc ? e.msg : "");
	virtio_pci_free(saved);
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE, 4), 300, "num_pages kept");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE + 4, 4), 3, "actual kept");
	TAP_EQ(fake_host_timers_armed(&fh), 1, "the period's timer is armed");
	fake_host_advance(&fh, 1999000000);
	TAP_EQ(su->idx, 3, "the held buffer is kept until the period's time");
	fake_host_advance(&fh, 1000000);
	TAP_EQ(su->idx, 4, "then given back, 3 s after the period began");
	TAP_EQ(virtio_balloon_stats_request(bd), -EAGAIN,
	    "and held no longer");
	virtio_balloon_stats_every(bd, 0);

	/* A report outside RAM: refused, the queue asks for a reset. */
	vdrv_desc(&d, 3)[0] = (struct virtq_desc){ RAM_BASE + RAM_SIZE -
	    PAGE, 2 * PAGE, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, VIRTIO_BALLOON_Q_REPORT, 0);
	TAP_EQ(ru->idx, 1, "a range outside RAM is not served");
	TAP_EQ(vdrv_rd(&d, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET,
	    VIRTIO_STATUS_NEEDS_RESET, "the device asks for a reset");
	TAP_EQ(vdrv_bring_up(&d, feat, 4), 0x0f, "and works after one");

	virtio_pci_free(d.dev);
	dev_state_buf_free(&sb);
	munmap(ram, RAM_SIZE);
	return tap_done();
}
