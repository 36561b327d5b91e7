/*
 * A TAP device as a network backend (devices/virtio/net-backend.h).
 *
 * The supervisor opens /dev/net/tun and attaches or creates the
 * interface (TUNSETIFF needs CAP_NET_ADMIN, which the worker does not
 * have) with IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, and passes the
 * descriptor.  The worker makes it non-blocking, sets the header size
 * (TUNSETVNETHDRSZ 12: the header virtio-net uses with mergeable
 * buffers, so frames cross unchanged), the offloads the guest's driver
 * accepted (TUNSETOFFLOAD), and reads it from one event on its loop
 * that is armed only while the device has buffers to fill.
 *
 * System calls on the worker side: ioctl TUNGETIFF, TUNSETVNETHDRSZ,
 * TUNSETOFFLOAD; fcntl F_GETFL/F_SETFL; writev (vCPU threads), read
 * (the loop); close.
 *
 * The backend belongs to the worker and outlives guest resets.
 */
#ifndef VMMD_NET_TAP_H
#define VMMD_NET_TAP_H

#include <stdint.h>
#include <event2/event.h>

#include "net-backend.h"

struct net_tap;

/*
 * Take fd, a TAP with virtio headers (else -EINVAL), for a guest with
 * address mac: 0 or -errno; on success the backend owns fd and fills be.
 * name gets the interface's name (IFNAMSIZ bytes).
 */
int net_tap_new(struct net_tap **out, struct event_base *base, int fd,
    const uint8_t mac[6], struct net_backend *be, char *name);
/* After the device that used it is gone.  NULL is fine. */
void net_tap_free(struct net_tap *t);

#endif
