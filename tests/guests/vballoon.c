/*
 * vballoon: drive a virtio-balloon as Linux's driver does, for the host
 * to see the memory come back.
 *
 * It negotiates STATS_VQ, DEFLATE_ON_OOM and FREE_PAGE_REPORTING, sends
 * its statistics buffer before DRIVER_OK (free 12345 pages, total
 * 64 MiB, available 23456 pages), and touches "mib=N" (default 8) MiB
 * from 16 MiB and as much from 32 MiB.  At the host's first byte on
 * COM1 it inflates the first range (page frame numbers, 1024 a buffer,
 * and one more far outside RAM), reports the second as free (one
 * buffer, one range), and writes actual.  At each later byte it sends
 * its statistics again if the device gave the buffer back (free then
 * 54321 pages) and prints the device's num_pages.  Queues are polled.
 *
 * Output:
 *   vballoon: touched N MiB twice, waiting
 *   vballoon: inflated P pages, reported N MiB
 *   vballoon: stats sent again       (when the device asked)
 *   vballoon: num_pages N
 *   FAIL: reason
 */
#include "runtime/rt.h"

#define BAL_INFLATE	(16ul << 20)
#define BAL_REPORT	(32ul << 20)
#define BAL_PAGE	4096ul
#define BAL_BATCH	1024
#define BAL_HOSTILE	0xfffffff0u	/* 16 TiB up: outside any RAM */
#define ANSWER_US	5000000

static struct vio vio;
static struct vq inflateq, statsq, reportq;
static uint32_t pfns[BAL_BATCH + 1] __attribute__((aligned(4096)));
static struct bal_stat {
	uint16_t tag;
	uint64_t val;
} __attribute__((packed)) stats[3];
static volatile unsigned int bytes;
static uint16_t want;

static void
on_byte(uint8_t c)
{
	bytes++;
}

static bool
used_reached(void *arg)
{
	return vq_used(arg) == want;
}

/* Offer head 0 of vq and wait for the device to return it. */
static int
submit_wait(struct vq *vq)
{
	want = (uint16_t)(vq_used(vq) + 1);
	vq_submit(vq, 0);
	return wait_us(used_reached, vq, ANSWER_US) ? 0 : -1;
}

static volatile uint32_t *
common32(unsigned off)
{
	return (volatile uint32_t *)phys_ptr(vio.common + off);
}

/* vio_start() with the balloon's features (5.5.3): 0 or -1. */
static int
start(void)
{
	volatile uint8_t *st = (volatile uint8_t *)phys_ptr(vio.common + 0x14);

	*st = 0;
	*st = 1 | 2;
	*common32(0x08) = 0;
	*common32(0x0c) = 1u << 1 | 1u << 2 | 1u << 5;
	*common32(0x08) = 1;
	*common32(0x0c) = 1;		/* VERSION_1 */
	*st = 1 | 2 | 8;
	return (*st & 8) ? 0 : -1;
}

static void
send_stats(uint64_t free_pages)
{
	stats[0] = (struct bal_stat){ 4, free_pages * BAL_PAGE };
	stats[1] = (struct bal_stat){ 5, 64ul << 20 };
	stats[2] = (struct bal_stat){ 6, 23456 * BAL_PAGE };
	statsq.desc[0] = (struct vq_desc){ (uintptr_t)stats, sizeof(stats),
	    0, 0 };
	vq_submit(&statsq, 0);
}

static void
touch(uintptr_t base, unsigned long len)
{
	for (unsigned long off = 0; off < len; off += BAL_PAGE)
		*(volatile uint8_t *)phys_ptr(base + off) = 0x5a;
}

void
guest_main(void)
{
	unsigned long mib = cmdline_get_ulong("mib", 8);
	unsigned long pages = (mib << 20) / BAL_PAGE, done = 0, n, i;
	unsigned int seen = 0;
	uint16_t stats_used = 0;

	if (vio_find(&vio, 5, 0xc0000000u, 0) < 0) {
		printf("FAIL: no virtio-balloon\n");
		return;
	}
	if (start() < 0 || vio_queue(&vio, 0, &inflateq) < 0 ||
	    vio_queue(&vio, 2, &statsq) < 0 ||
	    vio_queue(&vio, 3, &reportq) < 0) {
		printf("FAIL: virtio-balloon set-up\n");
		return;
	}
	send_stats(12345);		/* before DRIVER_OK, as Linux */
	vio_driver_ok(&vio);
	touch(BAL_INFLATE, mib << 20);
	touch(BAL_REPORT, mib << 20);
	serial_rx_irq_enable(on_byte);
	printf("vballoon: touched %lu MiB twice, waiting\n", mib);
	while (bytes == seen)
		idle();
	seen = bytes;

	while (done < pages) {
		n = pages - done < BAL_BATCH ? pages - done : BAL_BATCH;
		for (i = 0; i < n; i++)
			pfns[i] = (uint32_t)(BAL_INFLATE / BAL_PAGE + done + i);
		if (done + n == pages)
			pfns[n++] = BAL_HOSTILE;
		inflateq.desc[0] = (struct vq_desc){ (uintptr_t)pfns,
		    (uint32_t)(n * 4), 0, 0 };
		if (submit_wait(&inflateq) < 0) {
			printf("FAIL: inflate unanswered\n");
			return;
		}
		done += n > BAL_BATCH ? BAL_BATCH : n;
	}
	reportq.desc[0] = (struct vq_desc){ BAL_REPORT, (uint32_t)(mib << 20),
	    2, 0 };
	if (submit_wait(&reportq) < 0) {
		printf("FAIL: report unanswered\n");
		return;
	}
	*(volatile uint32_t *)phys_ptr(vio.device + 4) = (uint32_t)pages;
	printf("vballoon: inflated %lu pages, reported %lu MiB\n", pages, mib);

	for (;;) {
		while (bytes == seen)
			idle();
		seen = bytes;
		if (vq_used(&statsq) != stats_used) {
			stats_used = vq_used(&statsq);
			send_stats(54321);
			printf("vballoon: stats sent again\n");
		}
		printf("vballoon: num_pages %u\n",
		    *(volatile uint32_t *)phys_ptr(vio.device));
	}
}
