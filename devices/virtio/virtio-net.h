/*
 * virtio-net (Virtio 1.2, 5.1) on a struct net_backend: one receive and
 * one transmit queue, a MAC address, link up, checksum and TCP
 * segmentation offloads both ways, mergeable receive buffers.
 *
 * Transmit: each chain is the 12-byte header and the frame.  The header
 * is copied out and checked, and the copy is what the backend gets (the
 * guest cannot change it between the check and the send); the frame
 * goes as it lies in guest memory (no copy).  A header that asks for
 * what the driver did not negotiate (a checksum or segmentation offload,
 * an unknown GSO type, a checksum outside the frame) loses the frame,
 * counted, as a bad frame on a wire would.  A kick starts a
 * burst: the driver is asked not to kick while the device drains the
 * queue (VIRTQ_USED_F_NO_NOTIFY or event-index, virtq_quiet()), asked
 * again once it is empty, and the queue looked at once more so that a
 * chain added in between is not left behind.  Frames reach the backend
 * at once; their buffers go back to the driver together, with one
 * used-index update and one interrupt, at most VIRTIO_NET_TX_HOLD_NS
 * later (a one-shot timer armed only while sent buffers wait: see
 * virtio-net.c for why this makes the guest send larger frames).  A
 * burst stops after 64 frames; its rest goes on at the loop's next
 * turn.
 *
 * Receive: the backend tells the device when frames wait (on the
 * worker's loop); the device copies each into as many receive buffers
 * as it needs (one without VIRTIO_NET_F_MRG_RXBUF) and sets num_buffers.
 * With no room left the frame waits in the device, the device stops
 * watching the backend and the driver's next receive kick resumes: no
 * polling, no timer.  Offloads on received frames follow what the
 * driver accepted (the backend's set_offload at DRIVER_OK).
 *
 * UFO is not offered: Linux stopped sending UDP fragmentation offload
 * (4.14), and a guest without it loses nothing.  No control queue.
 * A backend of plain frames (net_backend.plain_frames: user-mode
 * networking) gets none of the offloads offered.
 */
#ifndef VMMD_VIRTIO_NET_H
#define VMMD_VIRTIO_NET_H

#include "device.h"
#include "net-backend.h"
#include "virtio-dev.h"

#define VIRTIO_NET_QUEUE	256
/* How long sent buffers wait, at most, to go back to the driver. */
#define VIRTIO_NET_TX_HOLD_NS	200000
#define VIRTIO_NET_HDR_LEN	12
/* The largest frame: a 64 KiB GSO frame, its Ethernet header, ours. */
#define VIRTIO_NET_FRAME_MAX	(65550 + VIRTIO_NET_HDR_LEN)

/*
 * NULL on ENOMEM; be outlives the device, which attaches to it as the
 * struct virtio_dev returned.  A transport takes it (virtio-dev.h); its
 * free detaches from the backend, on the loop's thread.
 */
struct virtio_dev *virtio_net_new(const struct device_host *host,
    const struct net_backend *be);

#endif
