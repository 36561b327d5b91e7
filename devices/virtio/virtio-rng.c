/* See virtio-rng.h. */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "virtio-pci.h"
#include "virtio-rng.h"

struct virtio_rng {
	struct virtio_pci vp;		/* first: the transport's view */
	struct virtq_chain chain;
	uint64_t bytes;			/* given to the guest */
	uint64_t short_reads;		/* getrandom had less to give */
};

/* Fill one chain's writable part; the bytes written. */
static uint32_t
virtio_rng_fill(struct virtio_rng *r)
{
	uint32_t done = 0;
	unsigned int i;

	for (i = r->chain.nout; i < r->chain.nout + r->chain.nin; i++) {
		size_t want = r->chain.iov[i].iov_len;
		ssize_t got;

		if (want > VIRTIO_RNG_CHUNK - done)
			want = VIRTIO_RNG_CHUNK - done;
		if (want == 0)
			break;
		got = getrandom(r->chain.iov[i].iov_base, want, GRND_NONBLOCK);
		if (got <= 0) {
			r->short_reads++;
			break;
		}
		done += (uint32_t)got;
		if ((size_t)got < want) {
			r->short_reads++;
			break;
		}
	}
	return done;
}

static void
virtio_rng_notify(struct virtio_pci *vp, unsigned int q)
{
	struct virtio_rng *r = (struct virtio_rng *)vp;
	uint32_t n;
	int ret;

	while ((ret = virtq_pop(&vp->vq[q], &r->chain)) > 0) {
		n = virtio_rng_fill(r);
		r->bytes += n;
		virtq_push(&vp->vq[q], r->chain.head, n);
	}
	if (ret < 0)
		virtio_pci_needs_reset(vp);
	virtio_pci_queue_done(vp, q);
}

static const struct virtio_dev_ops virtio_rng_ops = {
	.type = 4,
	.class_code = 0x00ff00,
	.nqueues = 1,
	.queue_max = 64,
	.notify = virtio_rng_notify,
};

struct virtio_rng *
virtio_rng_new(const struct device_host *host)
{
	struct virtio_rng *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	if (virtio_pci_init(&r->vp, host, &virtio_rng_ops) < 0) {
		free(r);
		return NULL;
	}
	return r;
}

void
virtio_rng_free(struct virtio_rng *r)
{
	free(r);
}

static void
virtio_rng_diag(void *dev, struct device_diag *d)
{
	struct virtio_rng *r = dev;

	virtio_pci_diag(&r->vp, d);
	device_diag_put(d, "bytes", r->bytes, DEVICE_DIAG_UINT);
	device_diag_put(d, "short_reads", r->short_reads, DEVICE_DIAG_UINT);
}

static void
virtio_rng_ops_free(void *dev)
{
	virtio_rng_free(dev);
}

const struct device_ops virtio_rng_device_ops = {
	.name = "virtio-rng",
	.read = virtio_pci_read,
	.write = virtio_pci_write,
	.diag = virtio_rng_diag,
	.pci = virtio_pci_config,
	.pci_written = virtio_pci_config_written,
	.free = virtio_rng_ops_free,
};
