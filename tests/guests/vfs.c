/*
 * vfs: a virtio-fs device driven by hand, to see the data path work
 * without vmmd: find the device (type 26), read its tag, give both
 * queues an MSI-X vector, DRIVER_OK, then one FUSE_INIT on the request
 * queue.  The file server (virtiofsd) reads the request from guest
 * memory, writes its answer there and raises the interrupt through
 * the irqfd: the worker sees none of it.
 *
 * Output:
 *   vfs: slot S, tag TAG, N request queues
 *   vfs: FUSE_INIT answered: 7.M, max_write N, K interrupts
 *   PASS | FAIL: reason
 * then, after a byte on COM1, one FUSE_GETATTR of the root:
 *   vfs: FUSE_GETATTR answered: unique 43 error E
 */
#include "runtime/rt.h"

#define VEC_FS		0x53
#define FUSE_GETATTR	3
#define FUSE_INIT	26
#define ANSWER_US	10000000

/* FUSE's (include/uapi/linux/fuse.h), as of protocol 7.31. */
struct fuse_in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid, padding;
};

struct fuse_init_in {
	uint32_t major, minor, max_readahead, flags;
};

struct fuse_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

struct fuse_init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t unused[8];
};

static struct vio vio;
static struct vq hiprio, request;
static volatile unsigned interrupts;
static struct {
	struct fuse_in_header h;
	struct fuse_init_in init;
} in __attribute__((aligned(64)));
static struct {
	struct fuse_out_header h;
	struct fuse_init_out init;
	uint8_t more[256];
} out __attribute__((aligned(64)));

static void
fs_irq(struct trap_frame *f)
{
	interrupts++;
	lapic_eoi();
}

static bool
answered(void *arg)
{
	return vq_used(&request) == 1;
}

static bool
answered2(void *arg)
{
	return vq_used(&request) == 2;
}

void
guest_main(void)
{
	char tag[37];
	unsigned i;

	if (vio_find(&vio, 26, 0xc0000000u, 0) < 0) {
		printf("FAIL: no virtio-fs device\n");
		return;
	}
	for (i = 0; i < 36; i++)
		tag[i] = *(volatile char *)(vio.device + i);
	tag[36] = '\0';
	printf("vfs: slot %u, tag %s, %u request queues\n", vio.slot, tag,
	    *(volatile uint32_t *)(vio.device + 36));
	if (vio.msix_cap == 0) {
		printf("FAIL: no MSI-X capability\n");
		return;
	}
	trap_set_handler(VEC_FS, fs_irq);
	if (vio_start(&vio) < 0 || vio_queue(&vio, 0, &hiprio) < 0 ||
	    vio_queue(&vio, 1, &request) < 0) {
		printf("FAIL: bring-up\n");
		return;
	}
	vio_msix_control(&vio, 1, 0);
	for (i = 0; i < 2; i++) {
		vio_msix_entry(&vio, i, lapic_id(), VEC_FS);
		vio_queue_vector(&vio, i, (uint16_t)i);
		vio_msix_mask(&vio, i, 0);
	}
	vio_driver_ok(&vio);
	if (vio_status(&vio) & 0x40) {
		printf("FAIL: the device needs a reset (status 0x%02x)\n",
		    vio_status(&vio));
		return;
	}

	in.h = (struct fuse_in_header){ .len = sizeof(in),
	    .opcode = FUSE_INIT, .unique = 42 };
	in.init = (struct fuse_init_in){ .major = 7, .minor = 31,
	    .max_readahead = 65536 };
	memset(&out, 0xee, sizeof(out));
	request.desc[0] = (struct vq_desc){ (uintptr_t)&in, sizeof(in), 1,
	    1 };
	request.desc[1] = (struct vq_desc){ (uintptr_t)&out, sizeof(out), 2,
	    0 };
	vq_submit(&request, 0);
	if (!wait_us(answered, NULL, ANSWER_US)) {
		printf("FAIL: no answer to FUSE_INIT (status 0x%02x)\n",
		    vio_status(&vio));
		return;
	}
	if (out.h.unique != 42 || out.h.error != 0 || out.init.major != 7) {
		printf("FAIL: FUSE_INIT: unique %lu error %d major %u\n",
		    (unsigned long)out.h.unique, out.h.error,
		    out.init.major);
		return;
	}
	/* The used ring is written before the interrupt is sent. */
	for (i = 0; i < 1000 && interrupts == 0; i++)
		sleep_ms(1);
	printf("vfs: FUSE_INIT answered: 7.%u, max_write %u, %u interrupts\n",
	    out.init.minor, out.init.max_write, interrupts);
	if (interrupts == 0) {
		printf("FAIL: no interrupt\n");
		return;
	}
	printf("PASS\n");

	/* A byte on COM1: one more request, whatever became of the server
	 * meanwhile (vmmd answers ENOTCONN for one that ended). */
	while (serial_getc() < 0)
		__asm__ volatile("pause");
	in.h = (struct fuse_in_header){ .len = sizeof(in.h),
	    .opcode = FUSE_GETATTR, .unique = 43, .nodeid = 1 };
	memset(&out, 0xee, sizeof(out));
	request.desc[0] = (struct vq_desc){ (uintptr_t)&in, sizeof(in.h), 1,
	    1 };
	vq_submit(&request, 0);
	if (!wait_us(answered2, NULL, ANSWER_US)) {
		printf("FAIL: no answer to FUSE_GETATTR\n");
		return;
	}
	printf("vfs: FUSE_GETATTR answered: unique %lu error %d\n",
	    (unsigned long)out.h.unique, out.h.error);
}
