/*
 * Unit tests for daemon/worker/fd-claim.c: each descriptor worker.boot
 * names is claimed once, a second claim of it refused, and numbers
 * outside what worker-msg.h allows never claimed.
 */
#include <errno.h>
#include <string.h>

#include "fd-claim.h"
#include "tap.h"

int
main(void)
{
	struct fd_claims c;
	int fd, bad = 0;

	memset(&c, 0, sizeof(c));
	tap_ok(fd_claim(&c, 7) == 0, "a first claim of fd 7");
	tap_ok(fd_claim(&c, 7) == -EEXIST, "a second claim of fd 7: EEXIST");
	tap_ok(fd_claim(&c, 8) == 0 && fd_claim(&c, 6) == 0,
	    "its neighbours are free");
	tap_ok(fd_claim(&c, 0) == 0 && fd_claim(&c, 63) == 0 &&
	    fd_claim(&c, 64) == 0 && fd_claim(&c, FD_CLAIM_MAX) == 0,
	    "0, the words' edges and the last number");
	tap_ok(fd_claim(&c, 64) == -EEXIST &&
	    fd_claim(&c, FD_CLAIM_MAX) == -EEXIST, "and only once");
	tap_ok(fd_claim(&c, -1) == -EBADF &&
	    fd_claim(&c, FD_CLAIM_MAX + 1) == -EBADF, "-1 and one past the "
	    "last: EBADF");

	/* Every number once, in a set of its own. */
	memset(&c, 0, sizeof(c));
	for (fd = 0; fd <= FD_CLAIM_MAX; fd++)
		if (fd_claim(&c, fd) != 0 || fd_claim(&c, fd) != -EEXIST)
			bad++;
	tap_ok(bad == 0, "each of 0..%d claimed once, then refused (%d "
	    "wrong)", FD_CLAIM_MAX, bad);
	return tap_done();
}
