/*
 * vblk: drive two virtio-blk disks over PCI by hand.  The first (read
 * and write) holds "vmmd-disk-0" at sector 0, put there by the test;
 * the guest reads it and its ID, writes a pattern to sectors 1-2,
 * flushes, reads the pattern back and zeroes sector 3.  The second disk
 * is read-only: a write must fail with IOERR.  Then a chain without a
 * status byte must end in DEVICE_NEEDS_RESET.
 *
 * Output:
 *   vblk: disk0 slot S, C sectors, serial ID
 *   vblk: sector 0 says vmmd-disk-0
 *   vblk: wrote, flushed and read back 1024 bytes
 *   vblk: disk1 read-only, write status 1
 *   vblk: bad chain: status 0x4f
 *   PASS | FAIL: reason
 */
#include "runtime/rt.h"

#define VEC_BLK		0x51

struct disk {
	struct vio vio;
	struct vq vq;
};

static struct disk disks[2];
static struct disk *cur;
static uint32_t hdr[4] __attribute__((aligned(16)));
static uint8_t data[1024] __attribute__((aligned(512)));
static uint8_t status;
static volatile unsigned interrupts;

static void
blk_irq(struct trap_frame *f)
{
	unsigned i;

	for (i = 0; i < 2; i++)
		if (disks[i].vio.common != 0)
			vio_isr(&disks[i].vio);
	interrupts++;
	lapic_eoi();
}

/* At most this long for an answer: only reached when none comes. */
#define ANSWER_US	5000000

static uint16_t used_want;

static bool
used_reached(void *arg)
{
	return vq_used(&cur->vq) == used_want;
}

static bool
needs_reset(void *arg)
{
	return (vio_status(&cur->vio) & 0x40) != 0;
}

/* One request on cur: the status byte, or -1 without an answer. */
static int
request(uint32_t type, uint64_t sector, uint32_t len, bool in)
{
	struct vq *vq = &cur->vq;
	uint16_t want = (uint16_t)(vq_used(vq) + 1);

	hdr[0] = type;
	hdr[1] = 0;
	hdr[2] = (uint32_t)sector;
	hdr[3] = (uint32_t)(sector >> 32);
	status = 0xee;
	vq->desc[0] = (struct vq_desc){ (uintptr_t)hdr, 16, 1, 1 };
	if (len > 0)
		vq->desc[1] = (struct vq_desc){ (uintptr_t)data, len,
		    (uint16_t)(1 | (in ? 2 : 0)), 2 };
	else
		vq->desc[0].next = 2;
	vq->desc[2] = (struct vq_desc){ (uintptr_t)&status, 1, 2, 0 };
	vq_submit(vq, 0);
	used_want = want;
	return wait_us(used_reached, NULL, ANSWER_US) ? status : -1;
}

static int
setup(struct disk *d, uint32_t bar, unsigned from)
{
	if (vio_find(&d->vio, 2, bar, from) < 0)
		return -1;
	trap_set_handler(VEC_BLK, blk_irq);
	ioapic_route_level(d->vio.gsi_line, VEC_BLK, lapic_id());
	if (vio_start(&d->vio) < 0 || vio_queue(&d->vio, 0, &d->vq) < 0)
		return -1;
	vio_driver_ok(&d->vio);
	return 0;
}

void
guest_main(void)
{
	uint64_t sectors;
	char id[21];
	unsigned i;

	if (setup(&disks[0], 0xc0000000u, 0) < 0 ||
	    setup(&disks[1], 0xc0008000u, disks[0].vio.slot + 1) < 0) {
		printf("FAIL: two virtio-blk disks wanted\n");
		return;
	}
	cur = &disks[0];
	sectors = *(volatile uint64_t *)cur->vio.device;
	memset(data, 0, 32);
	if (request(8, 0, 20, true) != 0) {
		printf("FAIL: get ID\n");
		return;
	}
	memcpy(id, data, 20);
	id[20] = '\0';
	printf("vblk: disk0 slot %u, %lu sectors, serial %s\n", cur->vio.slot,
	    (unsigned long)sectors, id);
	if (request(0, 0, 512, true) != 0) {
		printf("FAIL: read sector 0\n");
		return;
	}
	data[11] = '\0';
	printf("vblk: sector 0 says %s\n", (char *)data);

	for (i = 0; i < 1024; i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	if (request(1, 1, 1024, false) != 0 || request(4, 0, 0, false) != 0) {
		printf("FAIL: write or flush\n");
		return;
	}
	memset(data, 0, sizeof(data));
	if (request(0, 1, 1024, true) != 0) {
		printf("FAIL: read back\n");
		return;
	}
	for (i = 0; i < 1024; i++)
		if (data[i] != (uint8_t)(i ^ 0x5a)) {
			printf("FAIL: byte %u reads 0x%02x\n", i, data[i]);
			return;
		}
	printf("vblk: wrote, flushed and read back 1024 bytes\n");
	memset(data, 0, 16);
	data[0] = 3;			/* sector 3, one sector, no flags */
	data[8] = 1;
	if (request(13, 0, 16, false) != 0) {
		printf("FAIL: write zeroes\n");
		return;
	}

	cur = &disks[1];
	printf("vblk: disk1 read-only, write status %d\n",
	    request(1, 0, 512, false));

	/* A chain with no writable byte for the status. */
	cur = &disks[0];
	cur->vq.desc[0] = (struct vq_desc){ (uintptr_t)hdr, 16, 0, 0 };
	vq_submit(&cur->vq, 0);
	(void)wait_us(needs_reset, NULL, ANSWER_US);
	printf("vblk: bad chain: status 0x%02x\n", vio_status(&cur->vio));
	if (!(vio_status(&cur->vio) & 0x40)) {
		printf("FAIL: bad chain not refused\n");
		return;
	}
	printf("PASS\n");
}
