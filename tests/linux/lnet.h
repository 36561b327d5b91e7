/*
 * virtio-net on a TAP with the reference guest.  The scenarios run in a
 * network namespace of their own (ln_enter()), where vmmd creates the
 * TAP: the test gives its host side LN_HOST_ADDR and brings it up, the
 * guest takes LN_GUEST_ADDR on eth0, pings the host, and moves 1 MiB
 * each way over TCP with busybox nc, checked with md5sum on both sides.
 */
#ifndef LNET_H
#define LNET_H

#include <stdbool.h>

#include "lguest.h"

#define LN_TAP		"vmmdnet0"
#define LN_HOST_ADDR	"10.0.2.1"
#define LN_GUEST_ADDR	"10.0.2.15"

/*
 * Into a network namespace of our own, with its loopback up (the
 * display scenarios' viewers use it): 0 or -errno.  Before vmmd starts.
 */
int	ln_enter(void);
/* The TAP LN_TAP (vmmd made it at vm.start) up with LN_HOST_ADDR/24. */
bool	ln_host_up(struct lg_vm *vm, lg_check_fn check);
/* The guest's side: address, ping, TCP both ways. */
void	ln_check_guest(struct lg_vm *vm, lg_check_fn check);

#endif
