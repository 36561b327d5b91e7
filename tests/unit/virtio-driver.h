/*
 * The driver's side of a virtio device on the modern PCI transport, for
 * the unit tests and the fuzzer: register access to BAR 0 and config
 * space as the bus delivers it, bring-up as Linux's virtio_pci_modern
 * does it, split virtqueues in the guest memory of a fake device host,
 * kicks, doorbells and waiting for the used ring.
 *
 * Queue q's rings lie at rings + VDRV_QUEUE_STRIDE * q: the descriptor
 * table, then the available ring VDRV_AVAIL_OFF further on and the used
 * ring VDRV_USED_OFF further on.  Each register access and doorbell
 * takes the device's lock (fh->lock), as the vCPU's bus does, so backend
 * threads may run meanwhile; guest memory is written without it, as a
 * driver does.
 */
#ifndef VMMD_VIRTIO_DRIVER_H
#define VMMD_VIRTIO_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake-host.h"
#include "virtqueue.h"

#define VDRV_QUEUE_STRIDE	0x3000
#define VDRV_AVAIL_OFF		0x1000
#define VDRV_USED_OFF		0x2000

struct vdrv {
	struct fake_host *fh;
	void *dev;		/* the virtio_pci device, once made */
	uint64_t rings;		/* guest address of queue 0's rings */
	uint16_t qsize;		/* what bring-up sets; the rings wrap there */
};

/*
 * A driver for the device fh will host: fh's guest memory becomes the
 * size bytes at ram, at guest address base, with the rings at its
 * start and queues of 16 entries.  Set d->dev when the device is made.
 */
void	 vdrv_init(struct vdrv *d, struct fake_host *fh, void *ram,
	    uint64_t base, size_t size);

/* Guest memory at gpa (which the test keeps inside RAM). */
void	*vdrv_gmem(const struct vdrv *d, uint64_t gpa);
uint64_t vdrv_desc_gpa(const struct vdrv *d, unsigned int q);
uint64_t vdrv_avail_gpa(const struct vdrv *d, unsigned int q);
uint64_t vdrv_used_gpa(const struct vdrv *d, unsigned int q);
struct virtq_desc *vdrv_desc(const struct vdrv *d, unsigned int q);
struct virtq_avail *vdrv_avail(const struct vdrv *d, unsigned int q);
struct virtq_used *vdrv_used(const struct vdrv *d, unsigned int q);
/* The event index fields: after the available and the used ring. */
uint16_t *vdrv_used_event(const struct vdrv *d, unsigned int q);
uint16_t *vdrv_avail_event(const struct vdrv *d, unsigned int q);

/* size bytes (1, 2, 4 or 8) of BAR 0 at off. */
uint64_t vdrv_rd(const struct vdrv *d, uint32_t off, unsigned int size);
void	 vdrv_wr(const struct vdrv *d, uint32_t off, uint64_t v,
	    unsigned int size);
/* A config space write as the PCI bus makes it: stored, then told. */
void	 vdrv_cfg_write(const struct vdrv *d, unsigned int off, uint64_t v,
	    unsigned int size);

/*
 * Reset, ACKNOWLEDGE and DRIVER, both feature words, FEATURES_OK:
 * whether the device kept FEATURES_OK.
 */
bool	 vdrv_negotiate(const struct vdrv *d, uint64_t features);
/*
 * Queue q set up with size entries and its rings at desc, avail and
 * used (desc in two 32-bit halves as Linux writes it, the others in one
 * 64-bit access), then enabled.
 */
void	 vdrv_queue(const struct vdrv *d, unsigned int q, unsigned int size,
	    uint64_t desc, uint64_t avail, uint64_t used);
/* DRIVER_OK after FEATURES_OK: the status the device then shows. */
uint8_t	 vdrv_driver_ok(const struct vdrv *d);
/*
 * All of it: guest memory zeroed, features negotiated, queues 0 to
 * nq - 1 set up in the layout above, DRIVER_OK.  The status it ends
 * with, or as soon as FEATURES_OK is refused.
 */
uint8_t	 vdrv_bring_up(const struct vdrv *d, uint64_t features,
	    unsigned int nq);

/* Head made available on queue q (the index as guest memory holds it). */
void	 vdrv_add(const struct vdrv *d, unsigned int q, uint16_t head);
/* Queue q notified through its register in the notification area. */
void	 vdrv_kick(const struct vdrv *d, unsigned int q);
/* vdrv_add(), then vdrv_kick(). */
void	 vdrv_offer(const struct vdrv *d, unsigned int q, uint16_t head);
/*
 * The host doorbells the device asked for on queue q rung, as KVM's
 * ioeventfds would: how many reached the device (not those handed to a
 * backend in the kernel).
 */
unsigned int vdrv_bell(const struct vdrv *d, unsigned int q);
/* Waits up to ms milliseconds for queue q's used index to reach idx. */
bool	 vdrv_wait_used(const struct vdrv *d, unsigned int q, uint16_t idx,
	    int ms);

#endif
