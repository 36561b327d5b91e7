/*
 * User-mode networking (passt) with the reference guest.  passt takes the
 * guest's address, router and DNS from a host interface with a default
 * route; the scenarios' network namespace has none, so lu_uplink() makes
 * one: a TAP this process holds open, up with LU_HOST_ADDR/24 and a
 * default route through LU_GATEWAY.  passt then leases LU_HOST_ADDR to the
 * guest with LU_GATEWAY as its router, takes connections the guest makes
 * to the gateway to this host's loopback, and forwards 127.0.0.1:
 * LU_FWD_PORT to the guest's LU_GUEST_PORT.  Nothing else on the host is
 * configured: no bridge, no TAP for the guest, no address of the guest's.
 */
#ifndef LUSERNET_H
#define LUSERNET_H

#include <stdbool.h>

#include "lguest.h"

#define LU_UPLINK	"vmmdup0"
#define LU_HOST_ADDR	"192.168.77.2"
#define LU_GATEWAY	"192.168.77.1"
#define LU_FWD_PORT	10023	/* on the host's 127.0.0.1 */
#define LU_GUEST_PORT	5003	/* where the forward arrives */
#define LU_LOOP_PORT	5004	/* the host's 127.0.0.1, seen from the guest */

/* The uplink above: its TAP's descriptor (close it to remove it), or
 * -errno. */
int	lu_uplink(void);
/*
 * The guest (its NIC on passt) takes a DHCP lease and moves 1 MiB each
 * way: in through the forward, out to the gateway, checked by md5sum on
 * both sides.  Whether all of it passed.
 */
bool	lu_check_guest(struct lg_vm *vm, lg_check_fn check);
/* Only the forward's way in, 64 KiB of it, labelled with when. */
bool	lu_check_forward(struct lg_vm *vm, lg_check_fn check, size_t bytes,
	    const char *when);

#endif
