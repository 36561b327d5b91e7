/*
 * virtio-net behind the PCI transport, on a backend the test plays:
 * the configuration, the offloads set at DRIVER_OK, frames sent from
 * guest memory as they lie behind the header as it was checked (even
 * when the guest rewrites it meanwhile), headers that ask for what was
 * not negotiated (lost, counted), received frames in one buffer and
 * spread over mergeable buffers with num_buffers, a starved receive
 * queue that stops watching until the driver's kick, a hostile receive
 * chain, the transport's doorbells (the kicks KVM takes in the kernel),
 * and transmit bursts: kicks off while the queue drains, a chain the
 * driver adds meanwhile taken in the same burst, frames sent at once and
 * their buffers given back together after the hold with one interrupt,
 * the burst limit and its deferral, no timer once idle.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"
#include "virtio-driver.h"
#include "virtio-net.h"
#include "virtio-pci.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define BUF		(RAM_BASE + 0x10000)

/* Feature bits, as Linux's driver takes them. */
#define F_CSUM		(1ULL << 0)
#define F_GUEST_CSUM	(1ULL << 1)
#define F_MAC		(1ULL << 5)
#define F_GUEST_TSO4	(1ULL << 7)
#define F_HOST_TSO4	(1ULL << 11)
#define F_MRG_RXBUF	(1ULL << 15)
#define F_V1		(1ULL << VIRTIO_F_VERSION_1)
#define F_EVENT_IDX	(1ULL << VIRTIO_F_EVENT_IDX)

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct vdrv d;

/* The backend. */
static struct {
	unsigned int sends, niov, offload, offload_calls;
	size_t sent_len;
	uint8_t sent[4096];
	uint8_t frame[8192];	/* the next one to receive */
	size_t frame_len;	/* 0: none waits */
	unsigned int frames;	/* how many of it */
	net_rx_fn rx;
	void *rx_dev;
	bool watch;
	/* What the driver does while a frame is sent: see be_send. */
	unsigned int refill;	/* chains it adds, one per send, no kick */
	unsigned int loud;	/* sends that saw kicks asked for */
	/* Set: the guest rewrites this header as the backend reads it. */
	uint8_t *tamper;
} be;

static void be_during_send(void);

static int
be_send(void *ctx, const struct iovec *iov, unsigned int niov)
{
	be.sends++;
	be.niov = niov;
	be.sent_len = 0;
	if (be.tamper != NULL) {
		be.tamper[0] = 0xff;	/* flags no driver may send */
		be.tamper[1] = 4;	/* TSO6, not negotiated */
	}
	for (unsigned int i = 0; i < niov; i++) {
		memcpy(be.sent + be.sent_len, iov[i].iov_base, iov[i].iov_len);
		be.sent_len += iov[i].iov_len;
	}
	be_during_send();
	return 0;
}

static ssize_t
be_recv(void *ctx, void *buf, size_t len)
{
	if (be.frames == 0)
		return -EAGAIN;
	be.frames--;
	memcpy(buf, be.frame, be.frame_len < len ? be.frame_len : len);
	return (ssize_t)(be.frame_len < len ? be.frame_len : len);
}

static int
be_set_offload(void *ctx, unsigned int flags)
{
	be.offload = flags;
	be.offload_calls++;
	return 0;
}

static void
be_attach(void *ctx, net_rx_fn rx, void *d)
{
	if (rx == NULL && be.rx_dev != d)
		return;
	be.rx = rx;
	be.rx_dev = rx != NULL ? d : NULL;
	be.watch = false;
}

static void
be_watch(void *ctx, bool on)
{
	be.watch = on;
}

static const struct net_backend_ops be_ops = {
	.send = be_send, .recv = be_recv, .set_offload = be_set_offload,
	.attach = be_attach, .watch = be_watch,
};

/* Reset, negotiate, set both queues up: the status it ends with. */
static uint8_t
bring_up(uint64_t features)
{
	return vdrv_bring_up(&d, features, 2);
}

static void *
gmem(uint64_t gpa)
{
	return vdrv_gmem(&d, gpa);
}

static struct virtq_desc *
desc(unsigned int q)
{
	return vdrv_desc(&d, q);
}

static struct virtq_used *
used(unsigned int q)
{
	return vdrv_used(&d, q);
}

/* The device's hold on sent buffers runs out. */
static void
hold_ends(void)
{
	fake_host_advance(&fh, VIRTIO_NET_TX_HOLD_NS);
}

/* Send a frame of len bytes after header h, in two descriptors. */
static void
send(const uint8_t h[12], size_t len)
{
	uint8_t *buf = gmem(BUF);

	memcpy(buf, h, 12);
	for (size_t i = 0; i < len; i++)
		buf[12 + i] = (uint8_t)i;
	desc(1)[0] = (struct virtq_desc){ BUF, 12, VIRTQ_DESC_F_NEXT, 1 };
	desc(1)[1] = (struct virtq_desc){ BUF + 12, (uint32_t)len, 0, 0 };
	vdrv_offer(&d, 1, 0);
	hold_ends();
}

/* The driver, while the device sends: does it see kicks asked for? */
static bool event_idx;

static void
be_during_send(void)
{
	/* With event index, a kick asked for is avail_event ahead. */
	if (event_idx ? *vdrv_avail_event(&d, 1) == vdrv_avail(&d, 1)->idx :
	    !(used(1)->flags & VIRTQ_USED_F_NO_NOTIFY))
		be.loud++;
	if (be.refill > 0) {
		be.refill--;
		vdrv_add(&d, 1, 0);	/* without a kick */
	}
}

/* A diagnostic counter of the device, by name. */
struct diag_one {
	struct device_diag d;
	const char *key;
	uint64_t value;
};

static void
diag_one_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_one *o = (struct diag_one *)d;

	if (strcmp(key, o->key) == 0)
		o->value = value;
}

static uint64_t
diag(const char *key)
{
	struct diag_one o = { { diag_one_put, NULL }, key, UINT64_MAX };

	virtio_pci_device_ops.diag(d.dev, &o.d);
	return o.value;
}

/* A frame of len bytes after a plain header waits at the backend. */
static void
arrive(size_t len, unsigned int count)
{
	memset(be.frame, 0, 12);
	for (size_t i = 0; i < len; i++)
		be.frame[12 + i] = (uint8_t)(i * 7);
	be.frame_len = 12 + len;
	be.frames = count;
}

/* Post rx buffer i (one descriptor of len bytes at BUF + 0x2000 * i). */
static void
post(uint16_t i, uint32_t len)
{
	desc(0)[i] = (struct virtq_desc){ BUF + 0x2000u * i, len,
	    VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, i);
}

int
main(void)
{
	struct net_backend nb = { .ops = &be_ops,
	    .mac = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 } };
	struct virtio_dev *vd;
	struct pci_config *pc;
	uint8_t h[12] = { 0 }, mac[6];
	uint16_t nbuf;
	bool same;

	vdrv_init(&d, &fh, calloc(1, RAM_SIZE), RAM_BASE, RAM_SIZE);
	vd = virtio_net_new(&fh.host, &nb);
	d.dev = virtio_pci_new(&fh.host, vd);
	tap_ok(d.dev != NULL && be.rx != NULL && be.rx_dev == vd,
	    "device made and attached to its backend");
	pc = virtio_pci_device_ops.pci(d.dev);
	tap_ok(pci_config_get16(pc, PCI_DEVICE_ID) == 0x1041 &&
	    pc->cfg[PCI_CLASS_PROG + 2] == 0x02, "modern virtio-net IDs");
	TAP_EQ(vdrv_rd(&d, 0x12, 2), 2, "two queues");
	tap_ok(fh.nbells == 2 && fh.bell[0].bar == 0 && fh.bell[0].size == 2 &&
	    fh.bell[0].offset == VIRTIO_PCI_NOTIFY && fh.bell[1].offset ==
	    VIRTIO_PCI_NOTIFY + VIRTIO_PCI_NOTIFY_MULT && fh.bell[1].id == 1,
	    "a 16-bit doorbell per queue in the notification area");
	for (unsigned int i = 0; i < 6; i++)
		mac[i] = (uint8_t)vdrv_rd(&d, VIRTIO_PCI_DEVICE + i, 1);
	tap_ok(memcmp(mac, nb.mac, 6) == 0, "MAC in the configuration");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE + 6, 2), 1, "link up");
	tap_ok(!be.watch, "no watching before the driver is ready");

	TAP_EQ(bring_up(F_V1 | F_CSUM | F_GUEST_CSUM | F_GUEST_TSO4 |
	    F_HOST_TSO4 | F_MAC | F_MRG_RXBUF), 0x0f, "driver OK");
	tap_ok(be.offload_calls == 1 && be.offload ==
	    (NET_OFFLOAD_CSUM | NET_OFFLOAD_TSO4),
	    "offloads: checksum and TSO4, as negotiated");
	tap_ok(be.watch, "watching for frames");

	/* Transmit. */
	send(h, 60);
	tap_ok(be.sends == 1 && be.niov == 2 && be.sent_len == 72 &&
	    be.sent[12 + 59] == 59, "a frame sent, header first, as it lies");
	tap_ok(used(1)->idx == 1 && used(1)->ring[0].len == 0,
	    "and its buffer returned");
	{
		vdrv_add(&d, 1, 0);
		vdrv_bell(&d, 1);
		hold_ends();
		tap_ok(be.sends == 2 && used(1)->idx == 2,
		    "the transmit doorbell sends the next frame");
		fh.bell[1].fn(fh.bell[1].dev, 7);
		TAP_EQ(be.sends, 2, "a doorbell for no queue does nothing");
	}
	h[0] = 1;		/* NEEDS_CSUM at 14 + 16: inside */
	h[6] = 14;
	h[8] = 16;
	send(h, 60);
	TAP_EQ(be.sends, 3, "a partial checksum inside the frame goes");
	h[6] = 50;
	send(h, 60);
	tap_ok(be.sends == 3 && used(1)->idx == 4,
	    "a checksum past the end is lost, the buffer returned");
	h[6] = 14;
	h[1] = 1;		/* GSO TCPv4, segment size 0 */
	send(h, 60);
	TAP_EQ(be.sends, 3, "TSO without a segment size is lost");
	h[4] = 0xa8;		/* 1448 */
	h[5] = 0x05;
	send(h, 60);
	TAP_EQ(be.sends, 4, "TSO4 with a segment size goes");
	h[1] = 4;
	send(h, 60);
	TAP_EQ(be.sends, 4, "TSO6 was not negotiated: lost");
	h[1] = 0x81;
	send(h, 60);
	TAP_EQ(be.sends, 4, "ECN was not negotiated: lost");
	h[1] = 0;
	h[0] = 2;
	send(h, 60);
	TAP_EQ(be.sends, 4, "DATA_VALID is not for the driver to send");
	desc(1)[0] = (struct virtq_desc){ BUF, 8, 0, 0 };
	vdrv_offer(&d, 1, 0);
	hold_ends();
	tap_ok(be.sends == 4 && used(1)->idx == 10,
	    "a chain shorter than the header is lost");

	/* The header checked is the header sent, in however many pieces. */
	{
		uint8_t *buf = gmem(BUF);

		memset(buf, 0, 12);
		for (unsigned int i = 0; i < 60; i++)
			buf[12 + i] = (uint8_t)i;
		desc(1)[0] = (struct virtq_desc){ BUF, 4, VIRTQ_DESC_F_NEXT,
		    1 };
		desc(1)[1] = (struct virtq_desc){ BUF + 4, 10,
		    VIRTQ_DESC_F_NEXT, 2 };
		desc(1)[2] = (struct virtq_desc){ BUF + 14, 58, 0, 0 };
		be.tamper = buf;
		vdrv_offer(&d, 1, 0);
		hold_ends();
		be.tamper = NULL;
		tap_ok(be.sends == 5 && be.sent_len == 72,
		    "a header over two descriptors: the frame sent");
		tap_ok(be.sent[0] == 0 && be.sent[1] == 0,
		    "with the header as checked, not as the guest rewrote it");
		tap_ok(be.sent[12] == 0 && be.sent[13] == 1 &&
		    be.sent[12 + 59] == 59, "and the frame's bytes in order");
	}

	/* Receive into one big buffer. */
	post(0, 2048);
	arrive(100, 1);
	be.rx(be.rx_dev);
	memcpy(&nbuf, gmem(BUF) + 10, 2);
	tap_ok(used(0)->idx == 1 && used(0)->ring[0].len == 112 && nbuf == 1,
	    "a frame received, num_buffers 1");
	tap_ok(memcmp(gmem(BUF) + 12, be.frame + 12, 100) == 0,
	    "its bytes intact");
	tap_ok(fh.rises[0] >= 1 || fh.msis >= 1, "the driver interrupted");

	/* Mergeable: 3000 bytes over buffers of 1500. */
	post(1, 1500);
	post(2, 1500);
	post(3, 1500);
	arrive(3000, 1);
	be.rx(be.rx_dev);
	memcpy(&nbuf, gmem(BUF + 0x2000) + 10, 2);
	tap_ok(used(0)->idx == 4 && nbuf == 3 &&
	    used(0)->ring[1].len == 1500 && used(0)->ring[2].len == 1500 &&
	    used(0)->ring[3].len == 12, "a frame over three buffers");
	same = memcmp(gmem(BUF + 0x2000) + 12, be.frame + 12, 1488) == 0 &&
	    memcmp(gmem(BUF + 0x4000), be.frame + 1500, 1500) == 0 &&
	    memcmp(gmem(BUF + 0x6000), be.frame + 3000, 12) == 0;
	tap_ok(same, "its bytes intact across them");

	/* Starved: two frames and room for one. */
	post(4, 1500);
	arrive(1000, 2);
	be.rx(be.rx_dev);
	tap_ok(used(0)->idx == 5 && !be.watch && be.frames == 0,
	    "out of buffers: one frame waits, no watching");
	post(5, 1500);
	tap_ok(used(0)->idx == 6 && be.watch,
	    "the driver's kick delivers it and watching resumes");
	post(6, 100);
	post(7, 100);
	arrive(1000, 1);
	be.rx(be.rx_dev);
	tap_ok(used(0)->idx == 6 && !be.watch,
	    "too little room: the buffers are not used");

	/* Saved with that frame held, loaded into a fresh device. */
	{
		struct dev_state_buf sb = { 0 };
		struct dev_state_error e = { "" };
		void *dev2;
		int rc;

		TAP_EQ(virtio_pci_device_ops.save(d.dev, &sb), 0,
		    "saved with a frame held");
		dev2 = virtio_pci_new(&fh.host, virtio_net_new(&fh.host,
		    &nb));
		rc = virtio_pci_device_ops.load(dev2, sb.data, sb.len, &e);
		TAP_EQ(rc, 0, "loaded into a fresh device %s", e.msg);
		virtio_pci_device_ops.free(d.dev);
		d.dev = dev2;
		dev_state_buf_free(&sb);
		tap_ok(!be.watch && be.offload_calls > 0,
		    "activated: offloads set, unwatched while the frame "
		    "waits");
		post(8, 1500);
		tap_ok(used(0)->idx == 9 && used(0)->ring[6].len == 100 &&
		    used(0)->ring[7].len == 100 && used(0)->ring[8].len == 812,
		    "the held frame is delivered by the loaded device, over "
		    "the buffers waiting and the new one (%u)", used(0)->idx);
		tap_ok(be.watch, "and watching resumes");
	}

	/* Without mergeable buffers a frame must fit in one buffer. */
	TAP_EQ(bring_up(F_V1), 0x0f, "driver OK without offloads");
	TAP_EQ(be.offload, 0, "no offloads on received frames");
	post(0, 500);
	arrive(1000, 1);
	be.rx(be.rx_dev);
	tap_ok(used(0)->idx == 0 && be.watch,
	    "a frame bigger than the buffer is dropped, the buffer kept");
	arrive(100, 1);
	be.rx(be.rx_dev);
	tap_ok(used(0)->idx == 1 && used(0)->ring[0].len == 112,
	    "and the next frame uses it");
	h[0] = 1;
	h[1] = 0;
	send(h, 60);
	TAP_EQ(be.sends, 5, "NEEDS_CSUM without CSUM negotiated: lost");

	/* A hostile receive chain: a buffer outside RAM. */
	desc(0)[1] = (struct virtq_desc){ RAM_BASE + RAM_SIZE - 8, 64,
	    VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 1);
	arrive(100, 1);
	be.rx(be.rx_dev);
	TAP_EQ(vdrv_rd(&d, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET,
	    VIRTIO_STATUS_NEEDS_RESET, "a bad buffer: the device needs reset");
	be.rx(be.rx_dev);
	tap_ok(!be.watch, "and stops watching");
	TAP_EQ(bring_up(F_V1), 0x0f, "after a reset, driver OK again");
	tap_ok(be.watch, "watching again");

	/* Transmit bursts, without event index. */
	h[0] = 0;
	h[1] = 0;
	be.sends = 0;
	be.loud = 0;
	{
		uint64_t irqs = diag("interrupts"), bursts = diag("tx_bursts");
		uint8_t *buf = gmem(BUF);

		memcpy(buf, h, 12);
		desc(1)[0] = (struct virtq_desc){ BUF, 12, VIRTQ_DESC_F_NEXT,
		    1 };
		desc(1)[1] = (struct virtq_desc){ BUF + 12, 60, 0, 0 };
		vdrv_add(&d, 1, 0);
		vdrv_add(&d, 1, 0);
		vdrv_offer(&d, 1, 0);
		tap_ok(be.sends == 3 && used(1)->idx == 0,
		    "one kick sends the three frames that wait, at once");
		TAP_EQ(be.loud, 0, "no kicks asked for while the queue drains");
		TAP_EQ(used(1)->flags, 0, "asked for again once it is empty");
		tap_ok(fake_host_timers_armed(&fh) == 1 &&
		    fake_host_next_deadline(&fh) == fh.vm_now +
		    VIRTIO_NET_TX_HOLD_NS && diag("interrupts") == irqs,
		    "their buffers held, no interrupt yet");
		vdrv_offer(&d, 1, 0);
		tap_ok(be.sends == 4 && used(1)->idx == 0 &&
		    fake_host_next_deadline(&fh) == fh.vm_now +
		    VIRTIO_NET_TX_HOLD_NS, "a second kick meanwhile: sent, held,"
		    " the timer not moved");
		hold_ends();
		tap_ok(used(1)->idx == 4 && diag("interrupts") == irqs + 1 &&
		    diag("tx_bursts") == bursts + 3,
		    "then all four go back, one interrupt");
		TAP_EQ(fake_host_timers_armed(&fh), 0, "and no timer is left");

		be.refill = 2;
		vdrv_offer(&d, 1, 0);
		tap_ok(be.sends == 7 && used(1)->idx == 4,
		    "chains added during the drain go in the same burst");
		hold_ends();
		tap_ok(used(1)->idx == 7 && diag("interrupts") == irqs + 2,
		    "still one interrupt");
		TAP_EQ(fake_host_timers_armed(&fh), 0, "and no timer");

		/* A driver that keeps adding: 1 + 100 frames. */
		be.refill = 100;
		vdrv_offer(&d, 1, 0);
		TAP_EQ(be.sends, 7 + 64, "a burst stops after 64 frames");
		tap_ok(diag("tx_deferred") == 1 &&
		    fake_host_timers_armed(&fh) == 1 &&
		    fake_host_next_deadline(&fh) <= fh.vm_now,
		    "the rest deferred to the timer, due at once");
		TAP_EQ(used(1)->flags, VIRTQ_USED_F_NO_NOTIFY,
		    "kicks stay off meanwhile");
		fake_host_advance(&fh, 0);
		tap_ok(be.sends == 7 + 101 && used(1)->idx == 7 + 101,
		    "the next turn sends the rest and gives all back");
		tap_ok(fake_host_timers_armed(&fh) == 0 &&
		    used(1)->flags == 0 && diag("interrupts") == irqs + 3,
		    "then kicks on, one interrupt, no timer: idle is free");
		TAP_EQ(be.loud, 0, "no kick asked for during any of it");

		be.refill = 100;
		vdrv_offer(&d, 1, 0);
		TAP_EQ(fake_host_timers_armed(&fh), 1, "deferred again");
		TAP_EQ(bring_up(F_V1), 0x0f, "a reset meanwhile");
			tap_ok(fake_host_timers_armed(&fh) == 0,
		    "cancels the deferral");
		be.refill = 0;
	}

	/* With event index: avail_event stays behind while draining. */
	TAP_EQ(bring_up(F_V1 | F_EVENT_IDX), 0x0f, "driver OK, event index");
	event_idx = true;
	be.sends = 0;
	be.loud = 0;
	{
		uint8_t *buf = gmem(BUF);
		uint64_t irqs;

		memcpy(buf, h, 12);
		desc(1)[0] = (struct virtq_desc){ BUF, 12, VIRTQ_DESC_F_NEXT,
		    1 };
		desc(1)[1] = (struct virtq_desc){ BUF + 12, 60, 0, 0 };
		vdrv_add(&d, 1, 0);
		be.refill = 3;
		vdrv_offer(&d, 1, 0);
		hold_ends();
		tap_ok(be.sends == 5 && used(1)->idx == 5,
		    "event index: five frames in one burst");
		TAP_EQ(be.loud, 0, "avail_event left behind while draining");
		TAP_EQ(*vdrv_avail_event(&d, 1), 5,
		    "then at the next chain: kick me there");
		*vdrv_used_event(&d, 1) = 100;
		irqs = diag("interrupts");
		vdrv_offer(&d, 1, 0);
		hold_ends();
		tap_ok(be.sends == 6 && diag("interrupts") == irqs,
		    "used_event honoured: no interrupt the driver did not ask for");
	}
	event_idx = false;

	virtio_pci_device_ops.free(d.dev);
	tap_ok(be.rx == NULL && !be.watch, "detached when freed");
	free(fh.mem);
	return tap_done();
}
