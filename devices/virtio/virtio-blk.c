/* See virtio-blk.h; section numbers are Virtio 1.2's. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "virtio-blk.h"
#include "virtio-dev.h"

/* Feature bits (5.2.3). */
#define VIRTIO_BLK_F_SEG_MAX		2
#define VIRTIO_BLK_F_RO			5
#define VIRTIO_BLK_F_BLK_SIZE		6
#define VIRTIO_BLK_F_FLUSH		9
#define VIRTIO_BLK_F_DISCARD		13
#define VIRTIO_BLK_F_WRITE_ZEROES	14

/* Request types and status (5.2.6). */
#define VIRTIO_BLK_T_IN			0
#define VIRTIO_BLK_T_OUT		1
#define VIRTIO_BLK_T_FLUSH		4
#define VIRTIO_BLK_T_GET_ID		8
#define VIRTIO_BLK_T_DISCARD		11
#define VIRTIO_BLK_T_WRITE_ZEROES	13
#define VIRTIO_BLK_S_OK			0
#define VIRTIO_BLK_S_IOERR		1
#define VIRTIO_BLK_S_UNSUPP		2

#define VIRTIO_BLK_ID_BYTES		20
#define SECTOR				512u
/* One discard or zeroing at most this many sectors (1 GiB). */
#define VIRTIO_BLK_MAX_RANGE		(1u << 21)

/* Configuration layout (5.2.4). */
#define CFG_CAPACITY		0
#define CFG_SEG_MAX		12
#define CFG_BLK_SIZE		20
#define CFG_NUM_QUEUES		34
#define CFG_MAX_DISCARD_SECTORS	36
#define CFG_MAX_DISCARD_SEG	40
#define CFG_DISCARD_ALIGN	44
#define CFG_MAX_WZ_SECTORS	48
#define CFG_MAX_WZ_SEG		52
#define CFG_WZ_MAY_UNMAP	56
#define CFG_SIZE		60

struct virtio_blk_req {
	struct blk_io io;		/* first: done() finds the request */
	struct virtio_blk *b;
	unsigned int gen;		/* the device's at submission */
	uint16_t head;
	uint8_t *status;		/* in guest memory */
	uint32_t written;		/* bytes the guest gets back */
	bool busy;
	struct iovec iov[VIRTIO_BLK_SEG_MAX];
};

struct virtio_blk {
	struct virtio_dev vdev;
	const struct device_host *host;
	struct blk_backend be;
	uint8_t config[CFG_SIZE];
	struct virtq_chain chain;
	unsigned int gen;		/* bumped when a reset begins */
	unsigned int inflight;		/* submitted, done() not yet run */
	bool starved;			/* a kick waits for a free request */
	struct virtio_blk_req req[VIRTIO_BLK_QUEUE];
	/* Diagnostics. */
	uint64_t reads, writes, flushes, discards, zeroes, ids;
	uint64_t errors, unsupported;
	uint64_t bytes_read, bytes_written;
};

struct virtio_blk_hdr {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

struct virtio_blk_range {
	uint64_t sector;
	uint32_t num_sectors;
	uint32_t flags;			/* bit 0: unmap (write zeroes) */
};

static struct virtio_blk_req *
virtio_blk_free_req(struct virtio_blk *b)
{
	unsigned int i;

	for (i = 0; i < VIRTIO_BLK_QUEUE; i++)
		if (!b->req[i].busy)
			return &b->req[i];
	return NULL;
}

/*
 * The bytes [skip, skip + len) of the iovecs src[0 .. n) as iovecs in
 * dst (at most max): their number, or -1 if they do not fit.
 */
static int
virtio_blk_carve(const struct iovec *src, unsigned int n, size_t skip,
    size_t len, struct iovec *dst, unsigned int max)
{
	unsigned int i, k = 0;

	for (i = 0; i < n && len > 0; i++) {
		size_t seg = src[i].iov_len, take;

		if (skip >= seg) {
			skip -= seg;
			continue;
		}
		if (k == max)
			return -1;
		take = seg - skip < len ? seg - skip : len;
		dst[k].iov_base = (uint8_t *)src[i].iov_base + skip;
		dst[k].iov_len = take;
		k++;
		len -= take;
		skip = 0;
	}
	return len == 0 ? (int)k : -1;
}

/* Hand the chain back with status; under the lock. */
static void
virtio_blk_finish(struct virtio_blk *b, uint16_t head, uint8_t *status,
    uint32_t written, uint8_t st)
{
	*(volatile uint8_t *)status = st;
	device_guest_written(b->host, status, 1);
	if (st == VIRTIO_BLK_S_IOERR)
		b->errors++;
	else if (st == VIRTIO_BLK_S_UNSUPP)
		b->unsupported++;
	virtq_push(&b->vdev.vq[0], head, written + 1);
}

static void virtio_blk_process(struct virtio_blk *b);

/* A backend thread: the request is over. */
static void
virtio_blk_done(struct blk_io *io, int result)
{
	struct virtio_blk_req *r = (struct virtio_blk_req *)io;
	struct virtio_blk *b = r->b;

	device_lock(b->host);
	/* What a read wrote, even in part, before the guest is told. */
	if (r->io.op == BLK_READ)
		for (unsigned int i = 0; i < r->io.niov; i++)
			device_guest_written(b->host, r->io.iov[i].iov_base,
			    r->io.iov[i].iov_len);
	/* The driver asked for a reset since: it gets no answer. */
	if (r->gen == b->gen) {
		virtio_blk_finish(b, r->head, r->status,
		    result == 0 ? r->written : 0,
		    result == 0 ? VIRTIO_BLK_S_OK : VIRTIO_BLK_S_IOERR);
		virtio_dev_queue_done(&b->vdev, 0);
	}
	r->busy = false;
	if (--b->inflight == 0)
		virtio_dev_reset_done(&b->vdev);	/* if one waits for us */
	if (b->starved)
		virtio_blk_process(b);
	device_unlock(b->host);
}

/* Is [sector, sector + bytes / 512) on the disk? */
static bool
virtio_blk_in_range(const struct virtio_blk *b, uint64_t sector,
    uint64_t bytes)
{
	uint64_t sectors = b->be.size / SECTOR;

	return sector <= sectors && bytes / SECTOR <= sectors - sector;
}

/*
 * Check one chain and prepare r for the backend: true to submit, false
 * when it is answered already (*st set).
 */
static bool
virtio_blk_prepare(struct virtio_blk *b, struct virtio_blk_req *r,
    uint8_t *st)
{
	const struct virtq_chain *c = &b->chain;
	struct virtio_blk_hdr h;
	struct virtio_blk_range range;
	uint64_t data;
	int n;

	*st = VIRTIO_BLK_S_IOERR;
	if (virtq_chain_read(c, 0, &h, sizeof(h)) != sizeof(h))
		return false;
	r->io = (struct blk_io){ .done = virtio_blk_done };
	switch (h.type) {
	case VIRTIO_BLK_T_IN:
		data = c->in_len - 1;
		if (data % SECTOR != 0 || c->out_len != sizeof(h) ||
		    !virtio_blk_in_range(b, h.sector, data))
			return false;
		n = virtio_blk_carve(&c->iov[c->nout], c->nin, 0, data,
		    r->iov, VIRTIO_BLK_SEG_MAX);
		if (n < 0)
			return false;
		r->io.op = BLK_READ;
		r->written = (uint32_t)data;
		b->reads++;
		b->bytes_read += data;
		break;
	case VIRTIO_BLK_T_OUT:
		data = c->out_len - sizeof(h);
		if (b->be.readonly || data % SECTOR != 0 ||
		    !virtio_blk_in_range(b, h.sector, data))
			return false;
		n = virtio_blk_carve(c->iov, c->nout, sizeof(h), data, r->iov,
		    VIRTIO_BLK_SEG_MAX);
		if (n < 0)
			return false;
		r->io.op = BLK_WRITE;
		b->writes++;
		b->bytes_written += data;
		break;
	case VIRTIO_BLK_T_FLUSH:
		n = 0;
		r->io.op = BLK_FLUSH;
		b->flushes++;
		break;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		/* One range (max_*_seg is 1), none of it past the end. */
		if (b->be.readonly ||
		    c->out_len != sizeof(h) + sizeof(range) ||
		    virtq_chain_read(c, sizeof(h), &range, sizeof(range)) !=
		    sizeof(range) || range.num_sectors > VIRTIO_BLK_MAX_RANGE ||
		    !virtio_blk_in_range(b, range.sector,
		    (uint64_t)range.num_sectors * SECTOR))
			return false;
		n = 0;
		r->io.offset = range.sector * SECTOR;
		r->io.len = (uint64_t)range.num_sectors * SECTOR;
		if (h.type == VIRTIO_BLK_T_DISCARD) {
			r->io.op = BLK_DISCARD;
			b->discards++;
		} else {
			r->io.op = BLK_WRITE_ZEROES;
			r->io.may_unmap = range.flags & 1;
			b->zeroes++;
		}
		break;
	case VIRTIO_BLK_T_GET_ID:
		/* Up to 20 bytes, NUL-padded if shorter (5.2.6). */
		n = (int)virtq_chain_write(c, 0, b->be.serial,
		    c->in_len - 1 < VIRTIO_BLK_ID_BYTES ? c->in_len - 1 :
		    VIRTIO_BLK_ID_BYTES);
		r->written = (uint32_t)n;
		b->ids++;
		*st = VIRTIO_BLK_S_OK;
		return false;
	default:
		*st = VIRTIO_BLK_S_UNSUPP;
		return false;
	}
	if (r->io.op == BLK_READ || r->io.op == BLK_WRITE)
		r->io.offset = h.sector * SECTOR;
	r->io.iov = r->iov;
	r->io.niov = (unsigned int)n;
	*st = VIRTIO_BLK_S_OK;
	return true;
}

/* Take every chain the driver offers, while requests are free. */
static void
virtio_blk_process(struct virtio_blk *b)
{
	struct virtio_blk_req *r;
	uint8_t st;
	int ret;

	b->starved = false;
	for (;;) {
		if ((r = virtio_blk_free_req(b)) == NULL) {
			b->starved = true;	/* a completion resumes */
			break;
		}
		ret = virtq_pop(&b->vdev.vq[0], &b->chain);
		if (ret < 0)
			virtio_dev_needs_reset(&b->vdev);
		if (ret <= 0)
			break;
		/* The status byte: the last of the chain, writable (5.2.6). */
		if (b->chain.nin == 0) {
			b->errors++;
			virtio_dev_needs_reset(&b->vdev);
			break;
		}
		r->head = b->chain.head;
		r->status = (uint8_t *)b->chain.iov[b->chain.nout +
		    b->chain.nin - 1].iov_base +
		    b->chain.iov[b->chain.nout + b->chain.nin - 1].iov_len - 1;
		r->written = 0;
		if (!virtio_blk_prepare(b, r, &st)) {
			virtio_blk_finish(b, r->head, r->status, r->written,
			    st);
			continue;
		}
		r->b = b;
		r->gen = b->gen;
		r->busy = true;
		b->inflight++;
		if (b->be.ops->submit(b->be.ctx, &r->io) < 0) {
			r->busy = false;
			b->inflight--;
			virtio_blk_finish(b, r->head, r->status, 0,
			    VIRTIO_BLK_S_IOERR);
		}
	}
	virtio_dev_queue_done(&b->vdev, 0);
}

static struct virtio_blk *
virtio_blk_of(struct virtio_dev *d)
{
	return VIRTIO_DEV_STATE(d, struct virtio_blk, vdev);
}

static void
virtio_blk_notify(struct virtio_dev *d, unsigned int q)
{
	virtio_blk_process(virtio_blk_of(d));
}

/*
 * The driver wrote 0 to device_status.  A request in flight is with the
 * backend's threads, which cannot be stopped: a read may still land in
 * guest memory, a write on the disk.  Finishing the reset under them
 * would let both happen after the driver re-initialised the device (the
 * memory given to something else, the sectors written anew), so the
 * reset waits for them: device_status keeps reading non-zero, which the
 * driver polls until it reads 0 (Linux's vp_reset() does), and the last
 * completion finishes the reset (virtio_blk_done()).  Nobody blocks:
 * not the vCPU that wrote the status, not the loop.  Requests that
 * complete meanwhile are not answered (the driver forgets them), and no
 * chain is taken (the transport takes no kicks).  A disk that never
 * answers leaves the device resetting, as its requests would have hung
 * anyway; freeing the device still drains them.
 */
static bool
virtio_blk_quiesce(struct virtio_dev *d)
{
	struct virtio_blk *b = virtio_blk_of(d);

	b->gen++;
	b->starved = false;
	return b->inflight == 0;
}

static void
virtio_blk_config_read(struct virtio_dev *d, uint32_t offset, void *data,
    unsigned int size)
{
	struct virtio_blk *b = virtio_blk_of(d);

	memcpy(data, &b->config[offset], size);
}

/* Waits for the requests in flight first. */
static void
virtio_blk_free(struct virtio_dev *d)
{
	struct virtio_blk *b = virtio_blk_of(d);

	/* Completions take the device's lock: not held here. */
	b->be.ops->drain(b->be.ctx);
	free(b);
}

#define VBLK_FIGURE(key, metric, kind, unit, help, member)		\
	{ key, metric, kind, unit, help, FIGURE_AT(struct virtio_blk, member) }

/* The disk's requests; of a struct virtio_blk. */
static const struct figure virtio_blk_figure_rows[] = {
	VBLK_FIGURE("reads", "vmmd_disk_reads", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Disk read requests", reads),
	VBLK_FIGURE("writes", "vmmd_disk_writes", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Disk write requests", writes),
	VBLK_FIGURE("flushes", "vmmd_disk_flushes", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Disk flushes", flushes),
	VBLK_FIGURE("discards", "vmmd_disk_discards", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Disk discards", discards),
	VBLK_FIGURE("write_zeroes", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Disk write-zeroes requests", zeroes),
	VBLK_FIGURE("get_ids", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Disk serial number requests", ids),
	VBLK_FIGURE("bytes_read", "vmmd_disk_read_bytes", FIGURE_COUNTER,
	    FIGURE_UNIT_BYTES, "Bytes the guest read from the disk",
	    bytes_read),
	VBLK_FIGURE("bytes_written", "vmmd_disk_written_bytes",
	    FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Bytes the guest wrote to the disk", bytes_written),
	VBLK_FIGURE("errors", "vmmd_disk_errors", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Disk requests that failed", errors),
	VBLK_FIGURE("unsupported", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Disk requests of a type the device does not offer",
	    unsupported),
	VBLK_FIGURE("inflight", "vmmd_disk_inflight_requests", FIGURE_GAUGE,
	    FIGURE_UNIT_NONE, "Disk requests under way", inflight),
};

static const struct figure_table virtio_blk_figures =
    FIGURE_TABLE(virtio_blk_figure_rows);

static void
virtio_blk_diag(struct virtio_dev *vd, struct device_diag *d)
{
	struct virtio_blk *b = virtio_blk_of(vd);

	device_diag_put(d, "sectors", b->be.size / SECTOR, DEVICE_DIAG_UINT);
	device_diag_put(d, "readonly", b->be.readonly, DEVICE_DIAG_BOOL);
	device_diag_figures(d, &virtio_blk_figures, b);
}

/*
 * Snapshots: the section "virtio-blk", the configuration the guest
 * read (capacity, limits), which a load refuses to change under it:
 * another disk is another machine.  A request in flight cannot be
 * named (it is the backend's until done() runs): a save refuses with
 * -EBUSY until they are done, which the caller waits for, the vCPUs
 * paused; quiesce is the driver's reset's and would drop them.
 */
struct virtio_blk_state {
	uint8_t config[CFG_SIZE];
};

static const struct dev_state_field virtio_blk_state_fields[] = {
	{ .name = "config", .type = DEV_STATE_BYTES,
	    DEV_STATE_AT(struct virtio_blk_state, config) },
};

static const struct dev_state_table virtio_blk_state_table = {
	DEV_STATE_TABLE("virtio-blk", 1, struct virtio_blk_state,
	    virtio_blk_state_fields),
};

static int
virtio_blk_save(struct virtio_dev *d, struct dev_state_buf *out)
{
	struct virtio_blk *b = virtio_blk_of(d);
	struct virtio_blk_state st;

	if (b->inflight != 0)
		return -EBUSY;
	memcpy(st.config, b->config, sizeof(st.config));
	return dev_state_save(&virtio_blk_state_table, &st, out);
}

static int
virtio_blk_load(struct virtio_dev *d, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct virtio_blk *b = virtio_blk_of(d);
	struct virtio_blk_state st;
	int rc;

	rc = dev_state_load(&virtio_blk_state_table, &st, buf, len, err);
	if (rc == 0 && memcmp(st.config, b->config, sizeof(st.config)) != 0)
		rc = dev_state_fail(err, -EINVAL, "virtio-blk: config of "
		    "another disk (capacity, limits)");
	return rc;
}

static const struct virtio_dev_ops virtio_blk_ops = {
	.type = 2,
	.nqueues = 1,
	.queue_max = VIRTIO_BLK_QUEUE,
	.features = 1ULL << VIRTIO_BLK_F_SEG_MAX |
	    1ULL << VIRTIO_BLK_F_BLK_SIZE | 1ULL << VIRTIO_BLK_F_FLUSH |
	    1ULL << VIRTIO_BLK_F_DISCARD | 1ULL << VIRTIO_BLK_F_WRITE_ZEROES,
	.config_size = CFG_SIZE,
	.config_read = virtio_blk_config_read,
	.notify = virtio_blk_notify,
	.quiesce = virtio_blk_quiesce,
	.save = virtio_blk_save,
	.load = virtio_blk_load,
	.diag = virtio_blk_diag,
	.free = virtio_blk_free,
};

static void
put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);		/* little endian host, as the guest */
}

struct virtio_dev *
virtio_blk_new(const struct device_host *host, const struct blk_backend *be)
{
	struct virtio_blk *b = calloc(1, sizeof(*b));
	uint64_t sectors = be->size / SECTOR;

	if (b == NULL)
		return NULL;
	b->host = host;
	b->be = *be;
	if (virtio_dev_init(&b->vdev, &virtio_blk_ops) < 0) {
		free(b);
		return NULL;
	}
	if (be->readonly)
		b->vdev.features = (b->vdev.features |
		    1ULL << VIRTIO_BLK_F_RO) &
		    ~(1ULL << VIRTIO_BLK_F_DISCARD |
		    1ULL << VIRTIO_BLK_F_WRITE_ZEROES);
	memcpy(&b->config[CFG_CAPACITY], &sectors, 8);
	put32(&b->config[CFG_SEG_MAX], VIRTIO_BLK_SEG_MAX);
	put32(&b->config[CFG_BLK_SIZE], SECTOR);
	b->config[CFG_NUM_QUEUES] = 1;
	put32(&b->config[CFG_MAX_DISCARD_SECTORS], VIRTIO_BLK_MAX_RANGE);
	put32(&b->config[CFG_MAX_DISCARD_SEG], 1);
	put32(&b->config[CFG_DISCARD_ALIGN], 8);	/* 4 KiB */
	put32(&b->config[CFG_MAX_WZ_SECTORS], VIRTIO_BLK_MAX_RANGE);
	put32(&b->config[CFG_MAX_WZ_SEG], 1);
	b->config[CFG_WZ_MAY_UNMAP] = 1;
	return &b->vdev;
}
