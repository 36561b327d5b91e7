/* The descriptors worker.boot names, each for one use (fd-claim.h). */
#include <errno.h>

#include "fd-claim.h"

int
fd_claim(struct fd_claims *c, int fd)
{
	uint64_t bit;

	if (fd < 0 || fd > FD_CLAIM_MAX)
		return -EBADF;
	bit = UINT64_C(1) << (fd % 64);
	if (c->bits[fd / 64] & bit)
		return -EEXIST;
	c->bits[fd / 64] |= bit;
	return 0;
}
