/*
 * virtio-vsock with the reference guest, the host's side served by the
 * test host's vhost-vsock: the guest runs vsock-echo (its initramfs has
 * it and vmw_vsock_virtio_transport), and so does the test host
 * (VMMD_VSOCK_ECHO).  1 MiB each way, checked by CRC-32 on both sides:
 * host to guest by AF_VSOCK and through vmmd's NAME.sock with CONNECT,
 * guest to host to an AF_VSOCK listener and, through vmmd, to a
 * NAME.sock_PORT listener; and vmmd refusing the guest a hard link to
 * that listener's socket, and the socket once it is root's.
 */
#ifndef LVSOCK_H
#define LVSOCK_H

#include <stdint.h>

#include "lguest.h"

/* The guest's port vsock-echo listens on. */
#define LV_GUEST_PORT	1234

/*
 * vm runs with vsock (CID cid) and a socket at sock: every check
 * above.  Returns whether they all passed.
 */
bool	lv_check_guest(struct lg_vm *vm, lg_check_fn check, uint32_t cid,
	    const char *sock);

#endif
