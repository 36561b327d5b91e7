/*
 * The host side of guests' vsock for the users of the host: AF_VSOCK to
 * a guest's CID is open to any local user, so a VM whose definition
 * asks for it ("vsock": {"socket": true}) also gets a Unix socket, with
 * the control socket's mode and group, that speaks the convention of
 * Firecracker's and Cloud Hypervisor's hybrid vsock, so that tools
 * written for them work unchanged:
 *
 *  - host to guest: connect to DIR/NAME.sock, send "CONNECT PORT\n";
 *    vmmd connects to the guest's CID at PORT and answers "OK N\n" (N
 *    its own vsock port), then carries bytes both ways; a connection
 *    the guest refuses is closed.
 *  - guest to host: the guest connects to the host (CID 2) at PORT; if
 *    DIR/NAME.sock_PORT is a socket someone listens on, vmmd connects
 *    to it and carries the bytes.  vmmd listens on vsock PORT only while
 *    such a socket exists for one of its guests (inotify on DIR; no
 *    timer), and asks the peer's CID which guest it is.
 *
 * DIR is the runtime directory's vsock/ (/run/vmmd/vsock): root's,
 * group vmm, mode 1770, so that members of the group (who may control
 * every VM anyway) can make NAME.sock_PORT there and nobody can move or
 * replace what vmmd made (sticky).  vmmd connects to a NAME.sock_PORT
 * through an O_PATH descriptor of it, never following a link, and only
 * to a socket its owner made there for the guest: one with a single
 * link (a hard link may name anyone's socket), not owned by root or by
 * vmmd's uid (the system's services trust a root peer, which vmmd is),
 * and owned by the VM's owner or of group vmm (see vsp_refuse_socket()).
 * Any other is refused with a warning (at most one every 10 s for each
 * name) and counted (vmmd_vsock_refused_total{reason="socket"}).
 *
 * Bytes wait in vmmd at most VSOCK_PROXY_BUFFER each way before it
 * stops reading the side that sends them; a side's end of stream is
 * passed on (shutdown) once what it sent is delivered.  A client that
 * has not said CONNECT within 10 s is closed.  Costs nothing while
 * nobody uses it: no timer but the handshake's.
 *
 * Everything runs on the supervisor's loop, which every VM depends on,
 * so what a guest can make it hold is bounded (below): a connection
 * beyond a bound is closed as soon as it is accepted, before anything
 * is looked up or connected for it, and the VM at its bound loses only
 * its own new connections.  A connection already carried is never
 * closed for another's sake, and has no deadline (a guest's agent may
 * stay connected for days): it counts until either side closes.
 *
 * Refusals are counted (vsock_proxy_counts(), /metrics'
 * vmmd_vsock_refused_total) and logged as warnings, at most one every
 * 10 s per VM (per name for sockets), so a guest cannot flood the log.
 */
#ifndef VMMD_VSOCK_PROXY_H
#define VMMD_VSOCK_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <event2/event.h>
#include <json-c/json.h>

/*
 * The bounds.  Connections either way (a guest's to NAME.sock_PORT, a
 * client's to NAME.sock, from its accept on, handshake included) of one
 * VM, and of all VMs.  Each holds 2 descriptors and up to about
 * VSOCK_PROXY_BUFFER in each direction (plus one read of libevent's,
 * 16 KiB): at most 64 descriptors and 4 MiB for a VM, 512 descriptors
 * and 32 MiB in all.  vmmd raises its open files limit to the hard one
 * (LimitNOFILE=), which leaves the 512 beside its clients and workers.
 * Several guests together can use up the total (a VM at its bound needs
 * 8 of them): the total protects the daemon, the per-VM bound the
 * other VMs from one guest.
 */
#define VSOCK_PROXY_CONNS_PER_VM	32
#define VSOCK_PROXY_CONNS_MAX		256
/* Bytes waiting in vmmd one way before it stops reading the sender. */
#define VSOCK_PROXY_BUFFER		(64 * 1024)

struct vsock_proxy;

/*
 * For the runtime directory rundir (the control socket's); gid: the
 * group that may use the sockets, or (gid_t)-1 for root alone.  Makes
 * nothing yet.  NULL on ENOMEM.
 */
struct vsock_proxy *vsock_proxy_new(struct event_base *base,
    const char *rundir, gid_t gid);
/* Closes every connection and removes every socket.  NULL is fine. */
void	vsock_proxy_free(struct vsock_proxy *p);

/*
 * Serve VM name, whose guest has CID cid and whose definition's owner
 * is owner ((uid_t)-1: none recorded): DIR/NAME.sock, and the
 * NAME.sock_PORT sockets already there.  0 or -errno with err.
 */
int	vsock_proxy_add(struct vsock_proxy *p, const char *name, uint32_t cid,
	    uid_t owner, char *err, size_t errlen);
/* The VM stopped: its socket and its connections go. */
void	vsock_proxy_remove(struct vsock_proxy *p, const char *name);
/*
 * A guest's connection to the host's vsock port, from CID cid, as the
 * listener on that port accepted it: fd (taken: kept or closed) is
 * carried to DIR/NAME.sock_PORT for the VM with that CID.  0, or -errno
 * when it is refused and closed.  What the listener calls; the unit
 * test calls it with one end of a socketpair for the guest's side.
 */
int	vsock_proxy_guest(struct vsock_proxy *p, uint32_t cid, uint32_t port,
	    int fd);
/* What an operator may want to know of the proxy (/metrics). */
struct vsock_proxy_counts {
	unsigned int conns;		/* carried now, either way */
	/* Connections refused and closed: */
	uint64_t refused_vm_limit;	/* the VM had CONNS_PER_VM */
	uint64_t refused_limit;		/* all had CONNS_MAX */
	uint64_t refused_socket;	/* NAME.sock_PORT not for a guest */
};
/*
 * Of VM name while served (0, or -ENOENT), or with name NULL of all VMs
 * since p was made (0).
 */
int	vsock_proxy_counts(const struct vsock_proxy *p, const char *name,
	    struct vsock_proxy_counts *out);
/* DIR/NAME.sock into buf; 0 or -ENAMETOOLONG. */
int	vsock_proxy_path(const struct vsock_proxy *p, const char *name,
	    char *buf, size_t len);

#endif
