/*
 * vblkr: read a virtio-blk disk into RAM all the time and check what
 * the reads left there, for live migration: the pages the device
 * writes (the data, the status byte, the used ring) are not in KVM's
 * dirty log, and must reach the target all the same.
 *
 * The disk (made by the test) holds a pattern: the 32-bit word at byte
 * offset O is VBLKR_WORD(O).  "mib=N" (default 4) MiB from 16 MiB up
 * are read in 64 KiB chunks; in pass P chunk K gets the disk's chunk
 * (7 * P + K) modulo the disk's chunks, so each pass puts other bytes
 * in every page.  Before chunk K is read again, the first and last
 * word of each of its pages must be what the previous pass read there:
 * a page a migration left behind holds an older pass's.  Every
 * "every=N" passes (default 100) it prints a line.
 *
 * Output:
 *   vblkr: N MiB from 0x1000000, disk D chunks
 *   vblkr: pass P          (every N passes)
 *   FAIL: vblkr: page at 0x... holds X, not Y, in pass P
 *   FAIL: reason           and it stops
 */
#include "runtime/rt.h"

#define VEC_BLK		0x51
#define ANSWER_US	5000000
#define VBLKR_BASE	(16ul << 20)
#define VBLKR_CHUNK	(64ul << 10)
#define VBLKR_PAGE	4096ul
#define VBLKR_WORD(o)	((uint32_t)((o) / 4 * 2654435761u + 0x5eed))

static struct vio vio;
static struct vq vq;
static uint32_t hdr[4] __attribute__((aligned(16)));
static uint8_t status;
static uint16_t used_want;

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

/* Read len bytes at disk offset off into gpa: the status, -1 unanswered. */
static int
read_into(uint64_t gpa, uint64_t off, uint32_t len)
{
	hdr[0] = 0;			/* VIRTIO_BLK_T_IN */
	hdr[1] = 0;
	hdr[2] = (uint32_t)(off / 512);
	hdr[3] = (uint32_t)(off / 512 >> 32);
	status = 0xee;
	vq.desc[0] = (struct vq_desc){ (uintptr_t)hdr, 16, 1, 1 };
	vq.desc[1] = (struct vq_desc){ gpa, len, 1 | 2, 2 };
	vq.desc[2] = (struct vq_desc){ (uintptr_t)&status, 1, 2, 0 };
	used_want = (uint16_t)(vq_used(&vq) + 1);
	vq_submit(&vq, 0);
	/* Polled: this guest waits for its disk all the time (apic.c). */
	return wait_us_polling(used_reached, NULL, ANSWER_US) ? status : -1;
}

/* Chunk k holds the disk's chunk at off: else FAIL and halt. */
static void
check(unsigned long k, uint64_t off, uint64_t pass)
{
	uint64_t gpa = VBLKR_BASE + k * VBLKR_CHUNK, pg, at;
	uint32_t got, want;

	for (pg = 0; pg < VBLKR_CHUNK; pg += VBLKR_PAGE)
		for (at = 0; at < VBLKR_PAGE; at += VBLKR_PAGE - 4) {
			got = *(volatile uint32_t *)phys_ptr(gpa + pg + at);
			want = VBLKR_WORD(off + pg + at);
			if (got != want) {
				printf("FAIL: vblkr: page at %#lx holds %#x, "
				    "not %#x, in pass %lu\n",
				    (unsigned long)(gpa + pg), got, want,
				    (unsigned long)pass);
				halt_forever();
			}
		}
}

void
guest_main(void)
{
	unsigned long mib = cmdline_get_ulong("mib", 4);
	unsigned long every = cmdline_get_ulong("every", 100);
	unsigned long chunks = (mib << 20) / VBLKR_CHUNK, k;
	uint64_t sectors, dchunks, pass;

	if (every == 0)
		every = 1;
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
	sectors = *(volatile uint64_t *)vio.device;
	dchunks = sectors * 512 / VBLKR_CHUNK;
	if (dchunks == 0) {
		printf("FAIL: a disk of %lu sectors\n", (unsigned long)sectors);
		return;
	}
	printf("vblkr: %lu MiB from %#lx, disk %lu chunks\n", mib, VBLKR_BASE,
	    (unsigned long)dchunks);
	for (pass = 0;; pass++) {
		for (k = 0; k < chunks; k++) {
			if (pass > 0)
				check(k, (7 * (pass - 1) + k) % dchunks *
				    VBLKR_CHUNK, pass);
			if (read_into(VBLKR_BASE + k * VBLKR_CHUNK,
			    (7 * pass + k) % dchunks * VBLKR_CHUNK,
			    VBLKR_CHUNK) != 0) {
				printf("FAIL: read of chunk %lu in pass %lu\n",
				    k, (unsigned long)pass);
				return;
			}
		}
		if (pass % every == every - 1)
			printf("vblkr: pass %lu\n", (unsigned long)pass + 1);
	}
}
