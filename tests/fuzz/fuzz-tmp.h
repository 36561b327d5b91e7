/*
 * A private scratch directory for the fuzzers that write files:
 * /dev/shm where it is writable (definitions are fsynced: memory makes
 * that cheap), else $TMPDIR, else /tmp.  Aborts if it cannot be made.
 */
#ifndef VMMD_FUZZ_TMP_H
#define VMMD_FUZZ_TMP_H

#include <stddef.h>

/* Make DIR/vmmd-fuzz-NAME.XXXXXX; its path goes to buf. */
void	fuzz_tmp_dir(const char *name, char *buf, size_t len);

#endif
