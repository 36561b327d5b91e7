/*
 * virtio-net on a TAP with the reference guest.  The scenarios run in a
 * network namespace of their own (ln_enter()), where vmmd creates the
 * TAP: the test gives its host side LN_HOST_ADDR and brings it up, the
 * guest takes LN_GUEST_ADDR on eth0, pings the host, and moves 1 MiB
 * each way over TCP with busybox nc, checked with md5sum on both sides.
 * A second card on a second TAP (LN_TAP1) is eth1, with its own MAC and
 * subnet: the guest brings it up and pings the host through it.
 */
#ifndef LNET_H
#define LNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lguest.h"

#define LN_TAP		"vmmdnet0"
#define LN_HOST_ADDR	"10.0.2.1"
#define LN_GUEST_ADDR	"10.0.2.15"
#define LN_TAP1		"vmmdnet1"
#define LN_MAC1		"02:00:00:00:00:10"
#define LN_HOST1_ADDR	"10.0.3.1"
#define LN_GUEST1_ADDR	"10.0.3.15"

/*
 * Into a network namespace of our own, with its loopback up (the
 * display scenarios' viewers use it): 0 or -errno.  Before vmmd starts.
 */
int	ln_enter(void);
/* The TAP LN_TAP (vmmd made it at vm.start) up with LN_HOST_ADDR/24. */
bool	ln_host_up(struct lg_vm *vm, lg_check_fn check);
/* The guest's side: address, ping, TCP both ways. */
void	ln_check_guest(struct lg_vm *vm, lg_check_fn check);
/* The second card: LN_TAP1 up here, eth1 up there with LN_MAC1, a ping. */
void	ln_check_second(struct lg_vm *vm, lg_check_fn check);

/* What each TCP transfer moves, at most. */
#define LN_BYTES	(1u << 20)

/* Sets IFF_UP on interface name, with addr/24 first (NULL: none). */
int	ln_ifup(const char *name, const char *addr);
/* A TCP socket listening on addr:port (backlog 1), or -errno. */
int	ln_listen(const char *addr, int port);
/* md5sum of len bytes of buf, as the md5sum program prints it. */
bool	ln_md5(const uint8_t *buf, size_t len, char sum[static 33]);

/*
 * One TCP transfer on the host's side, run in a thread of its own by
 * ln_with_peer(): it accepts one connection on lfd, then sends len
 * bytes of buf and closes, or receives up to LN_BYTES into buf (len says
 * how many came).  err: 0 or the errno that ended it.
 */
struct ln_xfer {
	int		 lfd;
	bool		 send;		/* else receive */
	uint8_t		*buf;
	size_t		 len;
	int		 err;
};

/* Runs cmd in the guest while x runs here: the guest's output, or NULL. */
char	*ln_with_peer(struct lg_vm *vm, struct ln_xfer *x, const char *cmd,
	    int *status);

#endif
