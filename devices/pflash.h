/*
 * A CFI parallel flash of the Intel/Sharp command set (CFI primary
 * vendor command set 0x0001), one byte wide: where OVMF keeps its UEFI
 * variables (the VARS image) and finds them again at the next start.
 *
 * The whole image is in memory, in a store the worker keeps across
 * guest resets (struct pflash_store below); register accesses read and
 * change only that, so a vCPU never waits on a file.  Every block the
 * guest programs or erases is marked dirty; the worker, which owns the
 * file, copies dirty blocks out (pflash_store_take_dirty) and writes
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

#include "dev-state.h"
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
 * The flash's contents: what the worker keeps while the machine is
 * rebuilt (a guest reset rebuilds the flash on the same store), as the
 * RTC's battery.  The image and the bitmap of the blocks changed since
 * the worker last took them (to write them to its file) live here, so
 * nothing is lost with a device: a flash writes every program and erase
 * through to its store, under the device's lock.
 *
 * dirty(opaque), when set, is called under a flash's lock, from a
 * register access (a vCPU thread), when a block becomes dirty while
 * none was: it must only schedule a write-back (pflash_store_take_dirty
 * on the worker's loop), never make one.
 *
 * One flash at a time uses a store (a new one made before the old is
 * freed takes it over); flashes are made and freed on the loop's
 * thread, and the store's functions run there too.
 */
struct pflash_store {
	uint8_t *image;
	size_t size;
	uint32_t block_size;
	size_t nblocks;
	bool readonly;		/* every program and erase fails */
	void (*dirty)(void *opaque);
	void *opaque;
	/*
	 * array(array_opaque, on), when set, is called under the flash's
	 * lock, from a register access, as reads leave read-array mode (on
	 * false: from then on they must reach the flash's read()) and come
	 * back to it (on true: they may read image directly, as a
	 * read-only memory slot over it does).  A flash starts in
	 * read-array mode, with no call.  Set by whoever maps the image.
	 */
	void (*array)(void *array_opaque, bool on);
	void *array_opaque;
	/* The flash's: */
	uint64_t *bitmap;	/* one bit a dirty block */
	size_t ndirty;
	const struct device_host *host;	/* of the flash using it, or NULL */
	const struct pflash *user;
};

/*
 * A store of size bytes in blocks of block_size (a power of two from
 * 256 bytes to 8 MiB; size a multiple of it, 1 to 65536 blocks: what a
 * CFI erase block region can describe), holding a copy of image, no
 * block dirty.  Its image starts on a page (4 KiB), so that it can be
 * mapped into a guest.  readonly: every program and erase fails with the block
 * protected (SR.1, SR.4 or SR.5).  0, or -EINVAL (a geometry CFI cannot
 * describe) or -ENOMEM.  dirty and opaque are the caller's to set.
 */
int pflash_store_init(struct pflash_store *s, const void *image,
    size_t size, uint32_t block_size, bool readonly);
/* Free what init allocated; no flash may use s any more.  NULL is fine. */
void pflash_store_fini(struct pflash_store *s);

/*
 * Write-back, on the loop's thread with no lock held (the store takes
 * the lock of the flash using it, if any): copy the dirty block with the
 * lowest offset into buf (block_size bytes), mark it clean, and return
 * its offset in the image; -ENOENT when no block is dirty.  The caller
 * then writes buf to its file at that offset; if that fails,
 * pflash_store_mark_dirty() gives the block back, and the next take
 * copies what it holds then.
 */
int64_t pflash_store_take_dirty(struct pflash_store *s, void *buf);
/* The block holding offset is dirty again (no dirty() call); 0 or
 * -EINVAL.  As pflash_store_take_dirty(). */
int pflash_store_mark_dirty(struct pflash_store *s, uint64_t offset);

/*
 * A flash on store s, in read-array mode, status ready.  NULL on
 * ENOMEM.  host and s outlive it.
 */
struct pflash *pflash_new(const struct device_host *host,
    struct pflash_store *s);
void pflash_free(struct pflash *p);

/* The store's size from offset 0; accesses of 1, 2, 4 or 8 bytes. */
extern const struct device_ops pflash_device_ops;
/* Its state section (dev-state.h), for tests and fuzzers. */
extern const struct dev_state_table pflash_state_table;

#endif
