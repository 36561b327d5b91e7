/*
 * User-mode networking: the guest's card on passt, the user-space
 * network back-end QEMU and libvirt use (DHCP, DNS, NAT to the host's
 * network, port forwards from the host), so that nothing is configured
 * on the host and no privilege is needed.
 *
 * The worker starts one passt per guest while it sets the guest up,
 * before its sandbox (which allows no new process): a child that
 * becomes the guest's own uid (passt --runas; nobody where it has
 * none), outside the worker's sandbox and in passt's own, connected to
 * the worker by a socketpair (passt --fd) that carries the frames
 * (daemon/machine/net-stream.h).  Its life is the guest's: it ends when
 * the worker closes its end, whether the guest stopped or the worker
 * died, and a restart of vmmd leaves both running.
 */
#ifndef VMMD_USER_NET_H
#define VMMD_USER_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USER_NET_FORWARDS	16

struct user_net_forward {
	bool udp;
	char addr[16];		/* "" for every address */
	uint16_t host_port;
	uint16_t guest_port;
};

/*
 * Start passt (the program at path) for a guest whose worker becomes
 * uid (0: none given), with the forwards: the worker's end of the link
 * in *sock, passt's pid in *pid.  A forward whose host port is taken
 * is refused before passt starts, naming it in err (-EADDRINUSE); a
 * passt that exits at once all the same (no usable host network) is an
 * error whose reason it wrote to its standard error, the worker's log.
 * 0 or -errno.
 */
int	user_net_start(const char *path, uid_t uid,
	    const struct user_net_forward *fw, unsigned int nfw, int *sock,
	    pid_t *pid, char *err, size_t errlen);

#endif
