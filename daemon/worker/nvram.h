/*
 * A VM's UEFI variables on the worker's side: its NVRAM file (the
 * supervisor's STATEDIR/nvram/NAME.fd, opened read-write and passed in)
 * read into the pflash store the firmware's flash is built on, and the
 * blocks the guest changes written back to the file from the event
 * loop, never on a vCPU's path.
 *
 * The store outlives guest resets: each machine builds its flash on
 * nvram_store().  Writing back takes the flash's lock only to copy one
 * block out (devices/pflash.h).  A block whose write fails is given
 * back and tried again a second later, and at nvram_free(), which
 * writes back whatever is left once the machine is gone.
 */
#ifndef VMMD_WORKER_NVRAM_H
#define VMMD_WORKER_NVRAM_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "pflash.h"

struct nvram;

/* Largest NVRAM file taken: OVMF's are 128 KiB and 528 KiB. */
#define NVRAM_BLOCK_SIZE	4096u	/* OVMF's flash blocks */
#define NVRAM_SIZE_MAX		(64u << 20)

/*
 * Read the file fd (which nvram_new owns from then on, closed at
 * nvram_free or on failure) into a store of block_size blocks (4096 for
 * OVMF).  readonly: the guest can change nothing, and nothing is
 * written.  0 and *out, or -errno: -EINVAL for a file that is empty,
 * larger than NVRAM_SIZE_MAX or not whole blocks.
 */
int nvram_new(struct event_base *base, int fd, uint32_t block_size,
    bool readonly, struct nvram **out);
/* What to build the flash on; valid until nvram_free(). */
struct pflash_store *nvram_store(struct nvram *n);
/*
 * Write every dirty block back now, then fdatasync: 0, or the first
 * -errno (the blocks not written are dirty again).  Loop thread, no
 * lock held.
 */
int nvram_flush(struct nvram *n);
/* Blocks written back, and writes that failed, so far. */
uint64_t nvram_blocks_written(const struct nvram *n);
uint64_t nvram_write_errors(const struct nvram *n);
/*
 * The variables in a snapshot: the image as it is in memory now (blocks
 * not yet written back included), as sections "nvram" appended to out
 * (nvram_state_table's, pieces of the image in order): 0 or -ENOMEM.
 * Loop thread, the vCPUs paused.
 */
struct dev_state_buf;
struct dev_state_error;
extern const struct dev_state_table nvram_state_table;
int nvram_save(struct nvram *n, struct dev_state_buf *out);
/*
 * Read what nvram_save wrote (len bytes, its sections and nothing
 * else) over the image: 0, or -errno with err saying why and the image
 * untouched (an image of another size, a piece out of place, a damaged
 * section).  The blocks that change are written back to the file, so
 * that the restored variables are the file's too.  Loop thread, the
 * vCPUs paused.
 */
int nvram_load(struct nvram *n, const void *buf, size_t len,
    struct dev_state_error *err);
/*
 * Write back what is left and close the file; no flash may use the
 * store any more.  NULL is fine.
 */
void nvram_free(struct nvram *n);

#endif
