/*
 * An NBD disk's server connected by the supervisor, for the worker,
 * whose sandbox has no connect(): with the rights of the client
 * starting the VM for a Unix socket (it must be able to reach and
 * write the socket itself), by TCP to the host and port as anyone may.
 */
#ifndef VMMD_NBD_CONNECT_H
#define VMMD_NBD_CONNECT_H

#include <stdbool.h>
#include <stddef.h>

#include <netdb.h>
#include <sys/socket.h>

#include "proto.h"

struct access_cred;
struct nbd_addr;

/* How long one connect() waits for a TCP server, in milliseconds. */
#define NBD_CONNECT_TIMEOUT_MS	5000

/*
 * The server at addr (an NBD address, nbd-addr.h) for cred (NULL: as
 * the daemon): *fdp a connected stream socket, CLOEXEC and blocking,
 * the handshake left to the worker.  check_only (vm.create): only what
 * cred may do is checked, nothing connected, *fdp -1.  0, or -errno
 * with *cls and err ("disk 0: nbd:unix:/run/x.sock: ...").  It waits
 * for a TCP server (the start's path, vm-files.c); a reconnect, which
 * must not hold up the event loop, goes through nbd-dial.h instead.
 * A TCP host name is looked up here, blocking: give an address where
 * that matters.
 */
int nbd_connect(const char *addr, unsigned int disk,
    const struct access_cred *cred, bool check_only, int *fdp,
    enum proto_error *cls, char *err, size_t errlen);

/*
 * The steps of one connect() of the stream socket fd (CLOEXEC) to sa,
 * for a caller that waits itself (nbd-dial.c, on the event loop):
 * nbd_connect_begin() makes fd non-blocking and connects: 0 connected
 * (fd blocking again), -EINPROGRESS (wait until fd is writable, then
 * nbd_connect_end()), or -errno.  nbd_connect_end(): the connect's
 * outcome (SO_ERROR), and fd blocking again: 0 or -errno.
 */
int nbd_connect_begin(int fd, const struct sockaddr *sa, socklen_t len);
int nbd_connect_end(int fd);
/*
 * A's host and port as addresses to try in turn (*res, for
 * freeaddrinfo()): 0, or -EHOSTUNREACH with why (the resolver's
 * words).  A name is looked up here, blocking; a numeric address is
 * not (nbd-dial.h).
 */
int nbd_connect_lookup(const struct nbd_addr *a, struct addrinfo **res,
    char *why, size_t whylen);
/*
 * A stream socket (CLOEXEC) for ai, its connect begun: 0 connected or
 * -EINPROGRESS, *fdp the socket either way (as nbd_connect_begin());
 * else -errno and no socket.
 */
int nbd_connect_open(const struct addrinfo *ai, int *fdp);

#endif
