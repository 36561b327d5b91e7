/*
 * libFuzzer harness for the virtio devices as a hostile guest drives
 * them: the modern PCI transport's registers, config space, and
 * virtqueues whose descriptors, rings and indirect tables are whatever
 * the input wrote into guest memory.  One device per input, on the unit
 * tests' fake device host, with backends that do the work in memory
 * (a disk whose requests complete when the input says, a network whose
 * frames arrive when it says).
 *
 * Input: the first byte picks the device (rng, blk, read-only blk,
 * net, balloon); then one operation after another until the bytes run
 * out:
 *
 *   op % 10  0-1  BAR write: 2 bytes of offset, size, 8 value bytes
 *            2    BAR read: 2 bytes of offset, size
 *            3    guest memory: 2 bytes of offset, a length (mod 48),
 *                 that many bytes
 *            4    bring-up as a driver does it: 8 bytes of features, a
 *                 queue size byte, then per queue (two; the balloon's
 *                 four) three ring addresses (2 bytes each, an offset
 *                 into guest memory, or out of it when the high bit is
 *                 set), DRIVER_OK last
 *            5    a kick of a queue (its doorbell)
 *            6    config space write: offset, size, 4 value bytes
 *            7    the disk completes its n-th pending request (ok or an
 *                 error), or the network delivers a frame of n bytes,
 *                 or the balloon's host sets a target (n % 3 == 0),
 *                 asks for statistics (1) or a period of them (2)
 *            8    VM time passes (device timers fire)
 *            9    a "descriptor" helper: writes one descriptor (index,
 *                 address offset, length, flags, next) and offers it
 *
 * A finding is what ASan/UBSan report (a descriptor that let the device
 * touch memory outside the guest's, a use after a reset), a crash, or a
 * broken host contract (an interrupt line set to the level it had).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "blk-backend.h"
#include "fake-host.h"
#include "fuzz-input.h"
#include "net-backend.h"
#include "virtio-balloon.h"
#include "virtio-blk.h"
#include "virtio-driver.h"
#include "virtio-net.h"
#include "virtio-pci.h"
#include "virtio-rng.h"
#include "virtqueue.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	0x10000u	/* 64 KiB: rings, tables and buffers */
#define DISK_SIZE	(64u * 512)
#define PENDING_MAX	32

enum fuzz_kind {
	FUZZ_RNG,
	FUZZ_BLK,
	FUZZ_NET,
	FUZZ_BALLOON,
};

/* The run's state: one device and its backend. */
static struct {
	struct fake_host fh;
	struct vdrv drv;	/* drv.dev: the device */
	enum fuzz_kind kind;
	const char *name;
	struct virtio_dev *balloon;	/* the balloon, for its host calls */
	/* The disk: an image in memory, requests held until completed. */
	uint8_t image[DISK_SIZE];
	struct blk_io *pending[PENDING_MAX];
	unsigned int npending;
	/* The network: the frame the next receive gets. */
	uint8_t frame[2048];
	size_t frame_len;
	bool frame_ready;
	net_rx_fn rx;
	void *rx_dev;
} s;

/* --- the disk's backend ------------------------------------------------ */

static int
fuzz_blk_submit(void *ctx, struct blk_io *io)
{
	if (s.npending == PENDING_MAX)
		return -EAGAIN;
	s.pending[s.npending++] = io;
	return 0;
}

/* Does what a backend thread would, then reports as it would. */
static void
fuzz_blk_complete(unsigned int which, bool fail)
{
	struct blk_io *io;
	uint64_t off;
	int result = 0;

	if (s.npending == 0)
		return;
	which %= s.npending;
	io = s.pending[which];
	s.pending[which] = s.pending[--s.npending];
	if (fail) {
		result = -EIO;
	} else if (io->op == BLK_READ || io->op == BLK_WRITE) {
		off = io->offset;
		for (unsigned int i = 0; i < io->niov && result == 0; i++) {
			const struct iovec *v = &io->iov[i];

			if (off > DISK_SIZE || v->iov_len > DISK_SIZE - off) {
				result = -EIO;
				break;
			}
			/* ASan checks the device's iovec against guest RAM. */
			if (io->op == BLK_READ)
				memcpy(v->iov_base, s.image + off, v->iov_len);
			else
				memcpy(s.image + off, v->iov_base, v->iov_len);
			off += v->iov_len;
		}
	} else if (io->op == BLK_DISCARD || io->op == BLK_WRITE_ZEROES) {
		if (io->offset > DISK_SIZE || io->len > DISK_SIZE - io->offset)
			result = -EIO;
		else
			memset(s.image + io->offset, 0, io->len);
	}
	io->done(io, result);	/* takes the device's lock */
}

static void
fuzz_blk_drain(void *ctx)
{
	while (s.npending > 0)
		fuzz_blk_complete(0, false);
}

static const struct blk_backend_ops fuzz_blk_ops = {
	.submit = fuzz_blk_submit,
	.drain = fuzz_blk_drain,
};

/* --- the network's backend --------------------------------------------- */

static int
fuzz_net_send(void *ctx, const struct iovec *iov, unsigned int niov)
{
	volatile uint8_t sink = 0;

	/* Touch every byte: ASan checks the frame lies in guest RAM. */
	for (unsigned int i = 0; i < niov; i++)
		for (size_t j = 0; j < iov[i].iov_len; j++)
			sink ^= ((const uint8_t *)iov[i].iov_base)[j];
	(void)sink;
	return 0;
}

static ssize_t
fuzz_net_recv(void *ctx, void *buf, size_t len)
{
	size_t n = s.frame_len < len ? s.frame_len : len;

	if (!s.frame_ready)
		return -EAGAIN;
	s.frame_ready = false;
	memcpy(buf, s.frame, n);
	return (ssize_t)n;
}

static int
fuzz_net_set_offload(void *ctx, unsigned int flags)
{
	return 0;
}

static void
fuzz_net_attach(void *ctx, net_rx_fn rx, void *dev)
{
	s.rx = rx;
	s.rx_dev = dev;
}

static void
fuzz_net_watch(void *ctx, bool on)
{
}

static const struct net_backend_ops fuzz_net_ops = {
	.send = fuzz_net_send,
	.recv = fuzz_net_recv,
	.set_offload = fuzz_net_set_offload,
	.attach = fuzz_net_attach,
	.watch = fuzz_net_watch,
};

/* --- the guest's side -------------------------------------------------- */

/*
 * One thread plays vCPU, loop and backend threads in turn.  The driver
 * (virtio-driver.h) takes the device's lock around each access, as the
 * bus does; completions and arriving frames take it in the device
 * itself, so they are made without it.
 */

/* An access the bus would deliver: naturally sized, inside the BAR. */
static unsigned int
fuzz_size(struct fuzz_in *in, uint64_t *off)
{
	unsigned int size = 1u << (fuzz_byte(in) % 4);

	*off %= VIRTIO_PCI_BAR_SIZE;
	while (*off + size > VIRTIO_PCI_BAR_SIZE)
		size >>= 1;
	return size;
}

/* A guest address from 2 input bytes: in RAM, or past it (high bit). */
static uint64_t
fuzz_gpa(struct fuzz_in *in)
{
	uint64_t v = fuzz_uint(in, 2);

	if (v & 0x8000)
		return RAM_BASE + RAM_SIZE - 64 + (v & 0x7fff);
	return RAM_BASE + (v % RAM_SIZE);
}

static void
fuzz_bring_up(struct fuzz_in *in)
{
	uint64_t features = fuzz_uint(in, 8);
	unsigned int qsize = 1u << (fuzz_byte(in) % 9), q;
	uint64_t desc, avail;

	(void)vdrv_negotiate(&s.drv, features);	/* on regardless */
	for (q = 0; q < (s.kind == FUZZ_BALLOON ? 4u : 2u); q++) {
		desc = fuzz_gpa(in);
		avail = fuzz_gpa(in);
		vdrv_queue(&s.drv, q, qsize, desc, avail, fuzz_gpa(in));
	}
	(void)vdrv_driver_ok(&s.drv);
}

/*
 * One descriptor written at desc[index] of queue 0's table (where tests
 * put it, at RAM_BASE) and offered on its avail ring, which wraps at 8.
 */
static void
fuzz_descriptor(struct fuzz_in *in)
{
	struct virtq_desc d;
	unsigned int index = fuzz_byte(in) % 64;

	d.addr = fuzz_gpa(in);
	d.len = (uint32_t)fuzz_uint(in, 2) << (fuzz_byte(in) % 17);
	d.flags = (uint16_t)(fuzz_byte(in) & 7);
	d.next = fuzz_byte(in) % 72;
	vdrv_desc(&s.drv, 0)[index] = d;
	vdrv_add(&s.drv, 0, (uint16_t)index);
}

static void
fuzz_check(const char *after)
{
	if (s.fh.irq_bad != 0) {
		fprintf(stderr, "%s: interrupt line set to the level it had "
		    "after %s\n", s.name, after);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Page-aligned: the balloon gives pages of it back (madvise). */
	static uint8_t ram[RAM_SIZE] __attribute__((aligned(4096)));
	struct fuzz_in in = { data, size };
	struct blk_backend blk = {
		.ops = &fuzz_blk_ops, .size = DISK_SIZE,
		.serial = "fuzz-serial",
	};
	struct net_backend net = {
		.ops = &fuzz_net_ops,
		.mac = { 0x02, 0, 0, 0, 0, 1 },
	};
	uint64_t off, v;
	unsigned int sz, n;
	uint8_t kind;

	memset(&s, 0, sizeof(s));
	memset(ram, 0, sizeof(ram));
	fake_host_init(&s.fh);
	vdrv_init(&s.drv, &s.fh, ram, RAM_BASE, RAM_SIZE);
	s.drv.qsize = 8;	/* fuzz_descriptor()'s ring */

	kind = fuzz_byte(&in) % 5;
	switch (kind) {
	case 0:
		s.kind = FUZZ_RNG;
		s.name = "virtio-rng";
		s.drv.dev = virtio_pci_new(&s.fh.host, virtio_rng_new(&s.fh.host));
		break;
	case 1:
	case 2:
		blk.readonly = kind == 2;
		s.kind = FUZZ_BLK;
		s.name = "virtio-blk";
		s.drv.dev = virtio_pci_new(&s.fh.host,
		    virtio_blk_new(&s.fh.host, &blk));
		break;
	case 4:
		s.kind = FUZZ_BALLOON;
		s.name = "virtio-balloon";
		s.balloon = virtio_balloon_new(&s.fh.host);
		s.drv.dev = virtio_pci_new(&s.fh.host, s.balloon);
		break;
	default:
		s.kind = FUZZ_NET;
		s.name = "virtio-net";
		s.drv.dev = virtio_pci_new(&s.fh.host,
		    virtio_net_new(&s.fh.host, &net));
		break;
	}
	if (s.drv.dev == NULL)
		abort();

	while (in.left > 0) {
		switch (fuzz_byte(&in) % 10) {
		case 0:
		case 1:
			off = fuzz_uint(&in, 2);
			sz = fuzz_size(&in, &off);
			vdrv_wr(&s.drv, (uint32_t)off, fuzz_uint(&in, 8), sz);
			fuzz_check("a BAR write");
			break;
		case 2:
			off = fuzz_uint(&in, 2);
			sz = fuzz_size(&in, &off);
			(void)vdrv_rd(&s.drv, (uint32_t)off, sz);
			fuzz_check("a BAR read");
			break;
		case 3:
			off = fuzz_uint(&in, 2) % RAM_SIZE;
			n = fuzz_byte(&in) % 48;
			for (unsigned int i = 0; i < n && off + i < RAM_SIZE;
			    i++)
				ram[off + i] = fuzz_byte(&in);
			break;
		case 4:
			fuzz_bring_up(&in);
			fuzz_check("a bring-up");
			break;
		case 5:
			n = fuzz_byte(&in) % VIRTIO_PCI_MAX_QUEUES;
			vdrv_kick(&s.drv, n);
			(void)vdrv_bell(&s.drv, n);
			fuzz_check("a kick");
			break;
		case 6:
			off = fuzz_byte(&in);
			sz = 1u << (fuzz_byte(&in) % 3);
			v = fuzz_uint(&in, 4);
			if (off + sz > 256)
				break;
			vdrv_cfg_write(&s.drv, (unsigned int)off, v, sz);
			fuzz_check("a config write");
			break;
		case 7:
			n = fuzz_byte(&in);
			if (s.kind == FUZZ_BLK) {
				fuzz_blk_complete(n >> 1, n & 1);
			} else if (s.kind == FUZZ_NET &&
			    s.rx != NULL) {
				s.frame_len = (size_t)n * 8;
				memset(s.frame, n, s.frame_len);
				s.frame_ready = true;
				s.rx(s.rx_dev);
			} else if (s.kind == FUZZ_BALLOON) {
				/* Under the lock, as the machine calls. */
				pthread_mutex_lock(&s.fh.lock);
				if (n % 3 == 0)
					virtio_balloon_set_target(s.balloon,
					    n * 37u);
				else if (n % 3 == 1)
					(void)virtio_balloon_stats_request(
					    s.balloon);
				else
					virtio_balloon_stats_every(s.balloon,
					    (int64_t)(n / 3) * 1000000);
				pthread_mutex_unlock(&s.fh.lock);
			}
			fuzz_check("a backend event");
			break;
		case 8:
			fake_host_advance(&s.fh, (int64_t)fuzz_uint(&in, 3) *
			    1000);
			fuzz_check("a timer");
			break;
		case 9:
			fuzz_descriptor(&in);
			break;
		}
	}
	/* The disk's requests still pending complete in its drain. */
	virtio_pci_device_ops.free(s.drv.dev);
	return 0;
}
