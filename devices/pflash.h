/*
 * A CFI parallel flash of the Intel/Sharp command set (CFI primary
 * vendor command set 0x0001), one byte wide: where OVMF keeps its UEFI
 * variables (the VARS image) and finds them again at the next start.
 *
 * The device holds the whole image in memory; register accesses read
 * and change only that copy, so a vCPU never waits on a file.  Every
 * block the guest programs or erases is marked dirty; the worker, which
 * owns the file, copies dirty blocks out (pflash_take_dirty) and writes
 * them with its own fd, off the device's lock.  The device gets no fd,
 * as device.h asks, and the write-back is bounded by the image: at most
 * one write of one block per dirty block, whatever the guest did.
 *
 * Why not a block backend (blk-backend.h): its I/O completes on backend
 * threads and would need the guest to wait for it (a status register
 * that reads busy) or the device to keep a copy anyway for reads in
 * read-array mode.  Keeping the copy is the whole image (540 KiB for
 * OVMF_VARS_4M.fd), so the copy is the model and the file is its
 * backing store, written when the worker chooses.
 *
 * Departures from the datasheets, for the firmware that uses it: clear
 * status (0x50) clears every status bit, "ready" included, which reads
 * again once a program or erase completes; OVMF's flash probe
 * (QemuFlashDetected) wants status 0x00 after clear status.  Program and
 * erase complete within the access that starts them.
 */
#ifndef VMMD_PFLASH_H
#define VMMD_PFLASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

struct pflash;

/* Status register bits (Intel 28F128J3 datasheet, "Status Register"). */
#define PFLASH_SR_READY		0x80	/* SR.7: write state machine ready */
#define PFLASH_SR_ERASE_ERR	0x20	/* SR.5: erase, or bad sequence */
#define PFLASH_SR_PROG_ERR	0x10	/* SR.4: program, or bad sequence */
#define PFLASH_SR_LOCKED	0x02	/* SR.1: the block is protected */

/* What the ID read (0x90) and the CFI query (0x98) answer at 0 and 1. */
#define PFLASH_MANUFACTURER	0x89	/* Intel */
#define PFLASH_DEVICE_ID	0x18

/*
 * The worker's side.  dirty() is called from a register access, under
 * the device's lock, when a block becomes dirty while none was: it must
 * only schedule a write-back (pflash_take_dirty from the event loop),
 * never make one.  May be NULL (nothing is persisted: tests, a
 * read-only image).
 */
struct pflash_backend {
	void (*dirty)(void *opaque);
	void *opaque;
};

/*
 * A flash of size bytes in blocks of block_size (a power of two from
 * 256 bytes to 8 MiB; size a multiple of it, 1 to 65536 blocks: what a
 * CFI erase block region can describe), holding a copy of image.
 * readonly: every program and erase fails with the block protected
 * (SR.1, SR.4 or SR.5).  be is copied; NULL means none.  0 and *out, or -EINVAL (a
 * geometry CFI cannot describe) or -ENOMEM.
 */
int pflash_new(const struct device_host *host, const void *image,
    size_t size, uint32_t block_size, bool readonly,
    const struct pflash_backend *be, struct pflash **out);
void pflash_free(struct pflash *p);

size_t pflash_size(const struct pflash *p);
uint32_t pflash_block_size(const struct pflash *p);

/*
 * Write-back, under the device's lock: copy the dirty block with the
 * lowest offset into buf (block_size bytes), mark it clean, and return
 * its offset in the image; -ENOENT when no block is dirty.  The caller
 * writes buf to the file at that offset once the lock is dropped; if
 * that fails, pflash_mark_dirty() gives the block back, and the next
 * take copies what it holds then.
 */
int64_t pflash_take_dirty(struct pflash *p, void *buf);
/* The block holding offset is dirty again (no dirty() call); 0 or -EINVAL. */
int pflash_mark_dirty(struct pflash *p, uint64_t offset);
/* How many blocks are dirty. */
size_t pflash_dirty_blocks(const struct pflash *p);

/* size bytes from offset 0; accesses of 1, 2, 4 or 8 bytes. */
extern const struct device_ops pflash_device_ops;

#endif
