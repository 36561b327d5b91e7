/*
 * vblkc: count on a virtio-blk disk.  Sector 1 of the first disk holds
 * "VCNT" and the count last written (little endian); the guest keeps
 * the count it last wrote in its RAM too, and before each write reads
 * the sector back: the two must agree.  So a guest restored from a
 * snapshot finds its disk as its RAM expects it, or says it does not:
 * a disk that went on taking writes after the snapshot holds a larger
 * count than the restored RAM.  A disk without "VCNT" counts from 0.
 * Each request must complete once: a completion the guest did not ask
 * for (the used ring ahead of its requests, as a request answered twice
 * leaves it) fails.
 *
 * Output (one line per write, every 20 ms):
 *   vblkc: start N
 *   vblkc: count N
 *   FAIL: reason          and it stops
 */
#include "runtime/rt.h"

#define VEC_BLK		0x51
/* Long: a test may hold a write until it snapshots the guest. */
#define ANSWER_US	30000000

static struct vio vio;
static struct vq vq;
static uint32_t hdr[4] __attribute__((aligned(16)));
static uint8_t data[512] __attribute__((aligned(512)));
static uint8_t status;
static uint16_t used_want;
static uint32_t last;		/* the count the disk should hold */

static void
blk_irq(struct trap_frame *f)
{
	vio_isr(&vio);
	lapic_eoi();
}

static bool
used_reached(void *arg)
{
	return vq_used(&vq) == used_want;
}

/*
 * One request on sector 1 (or a flush): its status, -1 unanswered, -2
 * when the used ring went past the last request's answer before this
 * one was made.
 */
static int
request(uint32_t type, uint32_t len, bool in)
{
	if (vq_used(&vq) != used_want)
		return -2;
	hdr[0] = type;
	hdr[1] = 0;
	hdr[2] = 1;
	hdr[3] = 0;
	status = 0xee;
	vq.desc[0] = (struct vq_desc){ (uintptr_t)hdr, 16, 1, 1 };
	if (len > 0)
		vq.desc[1] = (struct vq_desc){ (uintptr_t)data, len,
		    (uint16_t)(1 | (in ? 2 : 0)), 2 };
	else
		vq.desc[0].next = 2;
	vq.desc[2] = (struct vq_desc){ (uintptr_t)&status, 1, 2, 0 };
	used_want = (uint16_t)(vq_used(&vq) + 1);
	vq_submit(&vq, 0);
	/* Polled, as vblkr waits (apic.c says why). */
	return wait_us_polling(used_reached, NULL, ANSWER_US) ? status : -1;
}

/*
 * The count sector 1 holds: 0 without "VCNT"; -1 on a failed read, -2 on
 * an answer nobody asked for.
 */
static int64_t
read_count(void)
{
	int st = request(0, 512, true);

	if (st != 0)
		return st == -2 ? -2 : -1;
	if (memcmp(data, "VCNT", 4) != 0)
		return 0;
	return (uint32_t)data[4] | (uint32_t)data[5] << 8 |
	    (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24;
}

void
guest_main(void)
{
	int64_t v;
	uint32_t next;
	int st;

	if (vio_find(&vio, 2, 0xc0000000u, 0) < 0) {
		printf("FAIL: no virtio-blk disk\n");
		return;
	}
	trap_set_handler(VEC_BLK, blk_irq);
	ioapic_route_level(vio.gsi_line, VEC_BLK, lapic_id());
	if (vio_start(&vio) < 0 || vio_queue(&vio, 0, &vq) < 0) {
		printf("FAIL: virtio-blk set-up\n");
		return;
	}
	vio_driver_ok(&vio);
	if ((v = read_count()) < 0) {
		printf("FAIL: read sector 1\n");
		return;
	}
	last = (uint32_t)v;
	printf("vblkc: start %u\n", last);
	for (;;) {
		if ((v = read_count()) < 0) {
			printf("FAIL: %s\n", v == -2 ? "a completion more than "
			    "the requests made" : "read sector 1");
			return;
		}
		if ((uint32_t)v != last) {
			printf("FAIL: the disk holds %u, the guest wrote %u\n",
			    (unsigned)v, last);
			return;
		}
		next = last + 1;
		memset(data, 0, sizeof(data));
		memcpy(data, "VCNT", 4);
		data[4] = (uint8_t)next;
		data[5] = (uint8_t)(next >> 8);
		data[6] = (uint8_t)(next >> 16);
		data[7] = (uint8_t)(next >> 24);
		if ((st = request(1, 512, false)) != 0 ||
		    (st = request(4, 0, false)) != 0) {
			printf("FAIL: %s\n", st == -2 ? "a completion more "
			    "than the requests made" : "write or flush");
			return;
		}
		last = next;
		printf("vblkc: count %u\n", last);
		sleep_ms(20);
	}
}
