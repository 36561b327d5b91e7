/*
 * A migration's target side of the stream, without I/O: each frame
 * received (mig-stream.h, read whole and checked) is taken here: pages
 * copied into guest RAM or zeroed, sections kept, in order, until END.
 * The worker (worker/migrate-in.c) reads the frames and loads the
 * sections; the migration fuzzer feeds it frames alone.
 */
#ifndef VMMD_MIG_RECV_H
#define VMMD_MIG_RECV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mig-stream.h"

struct mig_section {
	char name[MIG_NAME_MAX + 1];
	size_t off;		/* in mig_recv.state */
	size_t len;
};

struct mig_recv {
	const struct mig_region *regions;
	size_t nregions;
	uint8_t *state;		/* every section's bytes, in order */
	size_t len, cap;
	struct mig_section *secs;
	size_t nsecs;
	uint64_t pages;		/* pages received (RAM and ZERO) */
	bool ended;		/* END came */
};

/* An empty receiver into the regions (kept: the caller's). */
void	mig_recv_init(struct mig_recv *r, const struct mig_region *regions,
	    size_t nregions);
/*
 * Frame f, its payload p checked already (mig_frame_parse and
 * mig_frame_verify): 0, 1 for END (nothing more may come), or -errno
 * with err: -EPROTO for a frame the source may not send or anything
 * after END, -ERANGE for pages outside RAM, -E2BIG past the bounds of
 * the sections, -ECANCELED for the source's ERROR (its text in err).
 */
int	mig_recv_frame(struct mig_recv *r, const struct mig_frame *f,
	    const uint8_t *p, char *err, size_t errlen);
/* Section name's bytes, or NULL if none came. */
const uint8_t *mig_recv_section(const struct mig_recv *r, const char *name,
	    size_t *len);
void	mig_recv_free(struct mig_recv *r);

#endif
