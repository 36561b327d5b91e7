/*
 * The kernel's vhost-vsock as a vsock backend
 * (devices/virtio/vsock-backend.h): the guest's sockets are served by a
 * kernel thread of the worker's, which reads the rings in guest memory,
 * is kicked through the doorbells' eventfds and interrupts the guest
 * through the MSI-X irqfds; no packet reaches user space.
 *
 * The supervisor opens /dev/vhost-vsock and passes the descriptor (the
 * worker cannot open files once sandboxed).  vhost_vsock_new() makes
 * the worker its owner (VHOST_SET_OWNER: once, before the sandbox) and
 * gives the guest its CID (VHOST_VSOCK_SET_GUEST_CID; -EADDRINUSE when
 * another VM of this host has it).  Afterwards, from the device under
 * its lock (a vCPU thread): VHOST_SET_FEATURES, VHOST_SET_MEM_TABLE,
 * VHOST_SET_VRING_NUM, _BASE, _ADDR, _KICK, _CALL, VHOST_GET_VRING_BASE
 * and VHOST_VSOCK_SET_RUNNING; write() to a kick eventfd.
 *
 * The backend belongs to the worker and outlives guest resets: each
 * machine's device starts and stops it on the same descriptor.
 */
#ifndef VMMD_VHOST_VSOCK_H
#define VMMD_VHOST_VSOCK_H

#include <stdint.h>

#include "vsock-backend.h"

struct vhost_vsock;

/* The lowest CID a guest may have (2 is the host's, 0 and 1 reserved). */
#define VHOST_VSOCK_CID_MIN	3

/*
 * Take fd (/dev/vhost-vsock) for the guest cid: 0 or -errno with a
 * reason in err; on success the backend owns fd and fills be.
 */
int	vhost_vsock_new(struct vhost_vsock **out, int fd, uint64_t cid,
	    struct vsock_backend *be, char *err, size_t errlen);
/* After the device that used it is gone.  NULL is fine. */
void	vhost_vsock_free(struct vhost_vsock *v);

#endif
