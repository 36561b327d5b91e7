/*
 * Compressed qcow2 clusters ("Compressed Clusters Descriptor" in
 * docs/interop/qcow2.txt): raw deflate with a 4 KiB window (qemu-img's
 * zlib type, windowBits -12), or a zstd frame.  The compressed bytes may
 * be followed by unrelated ones (the rest of the last sector): both stop
 * once a whole cluster is out.  Pure; any thread.
 */
#ifndef VMMD_QCOW2_DECOMPRESS_H
#define VMMD_QCOW2_DECOMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "qcow2-header.h"

/* 0 with out[0 .. outlen) filled, or -EIO when in does not make that. */
int	qcow2_decompress(enum qcow2_compression type, const uint8_t *in,
	    size_t inlen, uint8_t *out, size_t outlen);

#endif
