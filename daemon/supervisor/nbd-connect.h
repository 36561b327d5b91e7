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

#include "proto.h"

struct access_cred;

/* How long one connect() waits for a TCP server, in milliseconds. */
#define NBD_CONNECT_TIMEOUT_MS	5000

/*
 * The server at addr (an NBD address, nbd-addr.h) for cred (NULL: as
 * the daemon): *fdp a connected stream socket, CLOEXEC and blocking,
 * the handshake left to the worker.  check_only (vm.create): only what
 * cred may do is checked, nothing connected, *fdp -1.  0, or -errno
 * with *cls and err ("disk 0: nbd:unix:/run/x.sock: ...").  A TCP
 * host name is looked up here, blocking: give an address where that
 * matters.
 */
int nbd_connect(const char *addr, unsigned int disk,
    const struct access_cred *cred, bool check_only, int *fdp,
    enum proto_error *cls, char *err, size_t errlen);

#endif
