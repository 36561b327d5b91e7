/*
 * virtio-balloon: a memory balloon with statistics and free page
 * reporting (Virtual I/O Device (VIRTIO) Version 1.2, 5.5).
 *
 * The host sets a target (num_pages, 4 KiB pages the guest should give
 * up); the driver inflates towards it by sending page frame numbers,
 * deflates by sending them back, and writes how many it holds (actual).
 * Inflated pages and the free ranges the driver reports are given back
 * to the host at once (madvise(MADV_DONTNEED) on guest RAM, which is a
 * private mapping: see virtio-balloon.c); deflated pages cost nothing
 * until the guest touches them again.  Every page number and range is
 * checked against guest RAM: one outside it is counted and skipped.
 *
 * Statistics: the driver hands the device one buffer of tag/value
 * pairs and fills it again each time the device gives it back.  The
 * device keeps it until someone asks (virtio_balloon_stats_request(),
 * or a period set with virtio_balloon_stats_every()): by default no
 * timer exists and a guest that nobody watches costs nothing.
 *
 * Queues: inflateq, deflateq, statsq, reporting_vq (Linux numbers only
 * the queues whose features exist: without FREE_PAGE_HINT, which is
 * not offered, reporting is queue 3).
 */
#ifndef VMMD_VIRTIO_BALLOON_H
#define VMMD_VIRTIO_BALLOON_H

#include <stdint.h>

#include "device.h"
#include "virtio-dev.h"

#define VIRTIO_BALLOON_PAGE_SHIFT	12
#define VIRTIO_BALLOON_QUEUE		128

/* Feature bits (5.5.3). */
#define VIRTIO_BALLOON_F_STATS_VQ		1
#define VIRTIO_BALLOON_F_DEFLATE_ON_OOM		2
#define VIRTIO_BALLOON_F_FREE_PAGE_REPORTING	5

/* Queue indices, as the driver numbers them with the features above. */
#define VIRTIO_BALLOON_Q_INFLATE	0
#define VIRTIO_BALLOON_Q_DEFLATE	1
#define VIRTIO_BALLOON_Q_STATS		2
#define VIRTIO_BALLOON_Q_REPORT		3

/* Statistics tags (5.5.6.3), those the device shows. */
#define VIRTIO_BALLOON_S_NR		10

/* NULL on ENOMEM; a transport takes it (virtio-dev.h) and frees it. */
struct virtio_dev *virtio_balloon_new(const struct device_host *host);

/*
 * Under the device's lock, on d made by virtio_balloon_new():
 *
 * Ask the driver to hold pages 4 KiB pages in the balloon (num_pages),
 * with a configuration change interrupt when the value changes and the
 * driver is up.
 */
void virtio_balloon_set_target(struct virtio_dev *d, uint32_t pages);
/* The target, as set or as a snapshot's load made it. */
uint32_t virtio_balloon_target(struct virtio_dev *d);
/*
 * Give the statistics buffer back so that the driver fills it again:
 * 0, or -EAGAIN when the device holds none (the driver has not sent
 * it, or is filling it).  The new values come with the driver's kick.
 */
int virtio_balloon_stats_request(struct virtio_dev *d);
/*
 * Request statistics every period_ns of VM time from now on (a device
 * timer, re-armed from its last deadline); 0 stops it and frees the
 * loop of it.
 */
void virtio_balloon_stats_every(struct virtio_dev *d, int64_t period_ns);

#endif
