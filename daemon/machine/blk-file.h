/*
 * A raw disk image file as a block backend (devices/virtio/blk-backend.h).
 *
 * Requests run on a small pool of I/O threads, started as requests
 * arrive (up to BLK_FILE_THREADS) and then parked on a condition
 * variable: an idle disk costs no wake-ups.  Threads rather than
 * io_uring: every operation virtio-blk needs (preadv, pwritev,
 * fdatasync, fallocate) is a plain system call, io_uring is commonly
 * refused by seccomp profiles (container runtimes block it) and would
 * itself punt fdatasync and fallocate to kernel worker threads, and the
 * pool needs no library beyond pthreads.
 *
 * The backend belongs to the worker and outlives guest resets; the
 * device model drains it before it goes.
 */
#ifndef VMMD_BLK_FILE_H
#define VMMD_BLK_FILE_H

#include <stdbool.h>

#include "blk-backend.h"

#define BLK_FILE_THREADS	4

struct blk_file;

/*
 * Take fd (a regular file, opened O_RDWR unless readonly): the image's
 * size is rounded down to whole sectors.  0 or -errno (-EINVAL for an
 * image smaller than one sector); on success the backend owns fd.
 */
int blk_file_new(struct blk_file **out, int fd, bool readonly,
    const char *serial, struct blk_backend *be);
/* Drains, stops the threads, closes the file.  NULL is fine. */
void blk_file_free(struct blk_file *f);

#endif
