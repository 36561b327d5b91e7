/* See virtio-rng.h. */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "virtio-dev.h"
#include "virtio-rng.h"

/* Buffers filled per kick before the loop gets its turn back. */
#define RNG_BUDGET	64

struct virtio_rng {
	struct virtio_dev vdev;
	const struct device_host *host;
	struct device_timer *timer;	/* the rest of a kick's work */
	bool armed;
	struct virtq_chain chain;
	uint64_t bytes;			/* given to the guest */
	uint64_t short_reads;		/* getrandom had less to give */
	uint64_t deferred;		/* kicks that ran out of budget */
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

/*
 * Fill what the driver offers, RNG_BUDGET buffers at most: a driver that
 * adds buffers as fast as they come back (from another vCPU) would keep
 * a kick going for ever, on the loop's thread when it came through a
 * doorbell.  The rest goes on at the loop's next turn, from the timer
 * (due at once), after the other devices had theirs.
 */
static void
virtio_rng_run(struct virtio_rng *r)
{
	struct virtq *vq = &r->vdev.vq[0];
	unsigned int budget = RNG_BUDGET;
	uint32_t n;
	int ret;

	while ((ret = virtq_pop(vq, &r->chain)) > 0) {
		n = virtio_rng_fill(r);
		r->bytes += n;
		virtq_chain_written(&r->chain, n);
		virtq_push(vq, r->chain.head, n);
		if (--budget == 0) {
			if (!r->armed) {
				r->armed = true;
				r->deferred++;
				device_timer_arm(r->host, r->timer,
				    device_vm_clock(r->host));
			}
			break;
		}
	}
	if (ret < 0)
		virtio_dev_needs_reset(&r->vdev);
	virtio_dev_queue_done(&r->vdev, 0);
}

static struct virtio_rng *
virtio_rng_of(struct virtio_dev *d)
{
	return VIRTIO_DEV_STATE(d, struct virtio_rng, vdev);
}

static void
virtio_rng_notify(struct virtio_dev *d, unsigned int q)
{
	virtio_rng_run(virtio_rng_of(d));
}

/* The timer: on the loop, under the device's lock. */
static void
virtio_rng_timer(void *dev)
{
	struct virtio_rng *r = dev;

	r->armed = false;
	if (virtio_dev_queue_live(&r->vdev, 0))
		virtio_rng_run(r);
}

static void
virtio_rng_reset(struct virtio_dev *d)
{
	struct virtio_rng *r = virtio_rng_of(d);

	device_timer_cancel(r->host, r->timer);
	r->armed = false;
}
static const struct figure virtio_rng_figure_rows[] = {
	{ "bytes", NULL, FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Random bytes given to the guest",
	    FIGURE_AT(struct virtio_rng, bytes) },
	{ "short_reads", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "getrandom calls that had less to give",
	    FIGURE_AT(struct virtio_rng, short_reads) },
	{ "deferred", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Kicks that ran out of budget",
	    FIGURE_AT(struct virtio_rng, deferred) },
};

static const struct figure_table virtio_rng_figures =
    FIGURE_TABLE(virtio_rng_figure_rows);


static void
virtio_rng_diag(struct virtio_dev *d, struct device_diag *dd)
{
	struct virtio_rng *r = virtio_rng_of(d);

	device_diag_figures(dd, &virtio_rng_figures, r);
}

static void
virtio_rng_free(struct virtio_dev *d)
{
	struct virtio_rng *r = virtio_rng_of(d);

	device_timer_free(r->host, r->timer);
	free(r);
}

static const struct virtio_dev_ops virtio_rng_ops = {
	.type = 4,
	.nqueues = 1,
	.queue_max = 64,
	.notify = virtio_rng_notify,
	.reset = virtio_rng_reset,
	.diag = virtio_rng_diag,
	.free = virtio_rng_free,
};

struct virtio_dev *
virtio_rng_new(const struct device_host *host)
{
	struct virtio_rng *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->host = host;
	if ((r->timer = device_timer_new(host, virtio_rng_timer, r)) == NULL)
		goto free_r;
	if (virtio_dev_init(&r->vdev, &virtio_rng_ops) < 0)
		goto free_timer;
	return &r->vdev;

free_timer:
	device_timer_free(host, r->timer);
free_r:
	free(r);
	return NULL;
}
