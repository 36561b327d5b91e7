/*
 * The descriptors worker.boot names, each claimed for one use.  A
 * supervisor that named one descriptor for two uses (two cards on one
 * TAP) would have the worker close it twice, the second time closing
 * whatever took its number since: the parser claims each number before
 * handing it on, and refuses one claimed already.
 */
#ifndef VMMD_FD_CLAIM_H
#define VMMD_FD_CLAIM_H

#include <stdint.h>

/* Descriptors 0 to FD_CLAIM_MAX, as worker-msg.h's WMSG_FD_MAX. */
#define FD_CLAIM_MAX	1023

/* A set of claimed numbers, empty when zeroed: no resources. */
struct fd_claims {
	uint64_t bits[(FD_CLAIM_MAX + 64) / 64];
};

/* Claim fd: 0, -EEXIST if claimed already, -EBADF outside 0..max. */
int	fd_claim(struct fd_claims *, int fd);

#endif
