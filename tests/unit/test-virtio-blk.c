/*
 * virtio-blk on a real raw image (blk-file.c's I/O threads), driven
 * through the transport like a driver: sectors written and read back,
 * flush, get ID, discard and write zeroes, a read-only disk refusing
 * writes, and requests that break the rules answered with IOERR or
 * UNSUPP while the device goes on; then, on a backend that answers when
 * the test says, a reset that waits for the request in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk-file.h"
#include "dev-state.h"
#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"
#include "virtio-blk.h"
#include "virtio-driver.h"
#include "virtio-pci.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define HDR		(RAM_BASE + 0x3000)
#define STATUS		(RAM_BASE + 0x3100)
#define DATA		(RAM_BASE + 0x10000)
#define DISK_SECTORS	64

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct vdrv d;

static uint8_t
bring_up(void)
{
	return vdrv_bring_up(&d, 1ULL << VIRTIO_F_VERSION_1, 1);
}

/*
 * Offer one request and kick: header, data (len bytes at DATA, written
 * by the device when in), status.
 */
static void
offer(uint32_t type, uint64_t sector, uint32_t len, bool in)
{
	struct virtq_desc *desc = vdrv_desc(&d, 0);
	uint32_t *hdr = vdrv_gmem(&d, HDR);

	hdr[0] = type;
	hdr[1] = 0;
	memcpy(&hdr[2], &sector, 8);
	*(uint8_t *)vdrv_gmem(&d, STATUS) = 0xee;
	desc[0] = (struct virtq_desc){ HDR, 16, VIRTQ_DESC_F_NEXT, 1 };
	if (len > 0) {
		desc[1] = (struct virtq_desc){ DATA, len, VIRTQ_DESC_F_NEXT |
		    (in ? VIRTQ_DESC_F_WRITE : 0), 2 };
	} else {
		desc[0].next = 2;
	}
	desc[2] = (struct virtq_desc){ STATUS, 1, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 0);
}

/* One request, waited for: the status byte, or -1. */
static int
request(uint32_t type, uint64_t sector, uint32_t len, bool in)
{
	uint16_t want = (uint16_t)(vdrv_avail(&d, 0)->idx + 1);

	offer(type, sector, len, in);
	if (!vdrv_wait_used(&d, 0, want, 5000))
		return -1;
	return *(uint8_t *)vdrv_gmem(&d, STATUS);
}

/* A backend whose requests wait until the test completes them. */
static struct {
	struct blk_io *io[4];
	unsigned int n;
} held;

static int
held_submit(void *ctx, struct blk_io *io)
{
	if (held.n == sizeof(held.io) / sizeof(held.io[0]))
		return -EAGAIN;
	held.io[held.n++] = io;
	return 0;
}

/* The oldest held request completes, as a backend thread would. */
static void
held_complete(void)
{
	struct blk_io *io = held.io[0];

	memmove(&held.io[0], &held.io[1], --held.n * sizeof(held.io[0]));
	if (io->op == BLK_READ)
		for (unsigned int i = 0; i < io->niov; i++)
			memset(io->iov[i].iov_base, 0x5a, io->iov[i].iov_len);
	io->done(io, 0);
}

static void
held_drain(void *ctx)
{
	while (held.n > 0)
		held_complete();
}

static const struct blk_backend_ops held_ops = {
	.submit = held_submit,
	.drain = held_drain,
};

static int
make_image(void)
{
	char path[] = "/tmp/vmmd-blk-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0 || ftruncate(fd, DISK_SECTORS * 512) < 0)
		tap_bail("image: %s", path);
	unlink(path);
	return fd;
}

int
main(void)
{
	struct blk_backend be;
	struct blk_file *f;
	uint8_t *data, sector[512];
	int fd, i;

	vdrv_init(&d, &fh, calloc(1, RAM_SIZE), RAM_BASE, RAM_SIZE);
	data = vdrv_gmem(&d, DATA);

	fd = make_image();
	TAP_EQ(blk_file_new(&f, fd, false, "disk-serial-0123456789", &be), 0,
	    "backend on a 32 KiB image");
	TAP_EQ(be.size, DISK_SECTORS * 512, "size");
	d.dev = virtio_pci_new(&fh.host, virtio_blk_new(&fh.host, &be));
	tap_ok(d.dev != NULL, "device made");
	TAP_EQ(bring_up(), 0x0f, "driver OK");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE, 8), DISK_SECTORS,
	    "capacity in sectors");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE + 12, 4), VIRTIO_BLK_SEG_MAX,
	    "seg_max");

	for (i = 0; i < 1024; i++)
		data[i] = (uint8_t)(i * 7 + 1);
	TAP_EQ(request(1, 3, 1024, false), 0, "write sectors 3-4");
	TAP_EQ(pread(fd, sector, 512, 3 * 512), 512, "image read back");
	tap_ok(sector[0] == 1 && sector[511] == (uint8_t)(511 * 7 + 1),
	    "the image holds what the guest wrote");
	memset(data, 0, 1024);
	TAP_EQ(request(0, 3, 1024, true), 0, "read sectors 3-4");
	tap_ok(data[0] == 1 && data[1023] == (uint8_t)(1023 * 7 + 1),
	    "read returns the data");
	TAP_EQ(vdrv_used(&d, 0)->ring[1].len, 1025,
	    "used length: data and status");
	TAP_EQ(request(4, 0, 0, false), 0, "flush");
	memset(data, 0, 32);
	TAP_EQ(request(8, 0, 20, true), 0, "get ID");
	tap_ok(memcmp(data, "disk-serial-01234567", 20) == 0,
	    "serial, 20 bytes at most");

	/* Discard and write zeroes take one range of 16 bytes. */
	memcpy(data, &(uint64_t){ 3 }, 8);
	memcpy(data + 8, &(uint32_t){ 1 }, 4);
	memset(data + 12, 0, 4);
	TAP_EQ(request(13, 0, 16, false), 0, "write zeroes on sector 3");
	pread(fd, sector, 512, 3 * 512);
	tap_ok(sector[0] == 0 && sector[511] == 0, "sector 3 reads zero");
	pread(fd, sector, 512, 4 * 512);
	tap_ok(sector[0] != 0, "sector 4 kept");
	memcpy(data, &(uint64_t){ 4 }, 8);
	TAP_EQ(request(11, 0, 16, false), 0, "discard sector 4");

	/* Requests that break the rules. */
	TAP_EQ(request(0, DISK_SECTORS - 1, 1024, true), 1,
	    "read past the end: IOERR");
	TAP_EQ(request(1, UINT64_MAX / 256, 512, false), 1,
	    "sector that overflows: IOERR");
	TAP_EQ(request(0, 0, 100, true), 1, "partial sector: IOERR");
	TAP_EQ(request(99, 0, 0, false), 2, "unknown type: UNSUPP");
	memcpy(data, &(uint64_t){ 60 }, 8);
	memcpy(data + 8, &(uint32_t){ 8 }, 4);
	TAP_EQ(request(11, 0, 16, false), 1, "discard past the end: IOERR");
	TAP_EQ(request(0, 0, 512, true), 0, "and the disk goes on");
	TAP_EQ(vdrv_rd(&d, 0x14, 1), 0x0f, "no reset needed for bad requests");

	virtio_pci_device_ops.free(d.dev);
	blk_file_free(f);

	/* Read-only. */
	fd = make_image();
	TAP_EQ(blk_file_new(&f, fd, true, NULL, &be), 0, "read-only backend");
	d.dev = virtio_pci_new(&fh.host, virtio_blk_new(&fh.host, &be));
	vdrv_wr(&d, 0x00, 0, 4);
	tap_ok((vdrv_rd(&d, 0x04, 4) >> 5) & 1, "VIRTIO_BLK_F_RO offered");
	TAP_EQ(bring_up(), 0x0f, "driver OK");
	TAP_EQ(request(1, 0, 512, false), 1, "write refused: IOERR");
	TAP_EQ(request(0, 0, 512, true), 0, "read works");
	memset(data, 0xff, 32);
	TAP_EQ(request(8, 0, 20, true), 0, "get ID without a serial");
	TAP_EQ(data[0], 0, "empty ID");
	virtio_pci_device_ops.free(d.dev);
	blk_file_free(f);

	/* A reset waits for the requests in flight. */
	be = (struct blk_backend){ .ops = &held_ops, .size = 64 * 512 };
	d.dev = virtio_pci_new(&fh.host, virtio_blk_new(&fh.host, &be));
	TAP_EQ(bring_up(), 0x0f, "driver OK on a disk that answers late");
	memset(data, 0, 512);
	offer(0, 0, 512, true);
	TAP_EQ(held.n, 1, "a read in flight");
	vdrv_wr(&d, 0x14, 0, 1);
	TAP_EQ(vdrv_rd(&d, 0x14, 1), 0x0f,
	    "reset asked for: device_status not 0 yet");
	offer(0, 1, 512, true);
	TAP_EQ(held.n, 1, "a kick while resetting takes no chain");
	vdrv_wr(&d, 0x16, 1, 2);
	TAP_EQ(vdrv_rd(&d, 0x16, 2), 0, "nor a register write");
	held_complete();
	TAP_EQ(vdrv_rd(&d, 0x14, 1), 0, "the last request back: reset done");
	tap_ok(*(uint8_t *)vdrv_gmem(&d, STATUS) == 0xee &&
	    vdrv_used(&d, 0)->idx == 0,
	    "and the request from before was not answered");
	TAP_EQ(data[0], 0x5a, "its data landed before the reset ended");
	TAP_EQ(bring_up(), 0x0f, "driver OK again");
	offer(0, 0, 512, true);
	{
		struct dev_state_buf sb = { 0 };

		TAP_EQ(virtio_pci_device_ops.save(d.dev, &sb), -EBUSY,
		    "a save with a request in flight: -EBUSY, to wait for");
		dev_state_buf_free(&sb);
	}
	held_complete();
	tap_ok(*(uint8_t *)vdrv_gmem(&d, STATUS) == 0 &&
	    vdrv_used(&d, 0)->idx == 1,
	    "and the disk goes on");
	{
		struct dev_state_buf sb = { 0 };
		struct dev_state_error e = { "" };
		struct blk_backend other = be;
		void *same, *bigger;

		TAP_EQ(virtio_pci_device_ops.save(d.dev, &sb), 0,
		    "once it is back, a save");
		same = virtio_pci_new(&fh.host, virtio_blk_new(&fh.host, &be));
		TAP_EQ(virtio_pci_device_ops.load(same, sb.data, sb.len, &e),
		    0, "loads into a device for the same disk %s", e.msg);
		other.size *= 2;
		bigger = virtio_pci_new(&fh.host, virtio_blk_new(&fh.host,
		    &other));
		TAP_EQ(virtio_pci_device_ops.load(bigger, sb.data, sb.len, &e),
		    -EINVAL, "not into one for a larger disk: %s", e.msg);
		virtio_pci_device_ops.free(same);
		virtio_pci_device_ops.free(bigger);
		dev_state_buf_free(&sb);
	}
	vdrv_wr(&d, 0x14, 0, 1);
	TAP_EQ(vdrv_rd(&d, 0x14, 1), 0,
	    "with nothing in flight a reset is at once");
	virtio_pci_device_ops.free(d.dev);

	TAP_EQ(blk_file_new(&f, open("/dev/null", O_RDONLY), true, NULL, &be),
	    -EINVAL, "a device node is no image");
	free(fh.mem);
	return tap_done();
}
