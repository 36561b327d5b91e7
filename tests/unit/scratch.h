/*
 * A scratch directory for one test program's files, made fresh under
 * /tmp (root's and sticky, so it passes vmmd's checks of the directories
 * on a path), resolved (no links in its path) and mode 0755, and removed
 * with all it holds at the exit of the process that made it (not of
 * its forked children), or at scratch_remove(), unless
 * VMMD_TEST_KEEP is set in the environment (then kept, and said so).
 *
 * Everything that cannot be set up bails out: the test has nothing to
 * test without it.
 */
#ifndef VMMD_SCRATCH_H
#define VMMD_SCRATCH_H

#include <sys/types.h>

/* Makes the directory, named vmmd-test-TAG-XXXXXX: its path. */
const char *scratch_new(const char *tag);
/* The directory's path (after scratch_new()). */
const char *scratch_dir(void);
/* dir/rel, in one of four buffers that take turns. */
const char *scratch_at(const char *rel);
/* A directory, a file holding content, a symbolic link to target. */
void	 scratch_mkdir(const char *rel, mode_t mode);
void	 scratch_file(const char *rel, mode_t mode, const char *content);
void	 scratch_link(const char *target, const char *rel);
/*
 * Removes the directory and everything in it, whoever owns it and
 * whatever its modes; what cannot go is said in a TAP comment.
 */
void	 scratch_remove(void);

#endif
