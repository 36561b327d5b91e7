/*
 * A disk image as a block backend (devices/virtio/blk-backend.h): a raw
 * file, or any chain of images blk-image.h opens (qcow2 over qcow2 or
 * raw backing images).
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
#include "blk-image.h"

#define BLK_FILE_THREADS	4

struct blk_file;

/*
 * Take fd (a regular file, opened O_RDWR unless readonly): the image's
 * size is rounded down to whole sectors.  0 or -errno (-EINVAL for an
 * image smaller than one sector); on success the backend owns fd.
 */
int blk_file_new(struct blk_file **out, int fd, bool readonly,
    const char *serial, struct blk_backend *be);
/*
 * A backend over img (blk-image.h), whose operations the threads call:
 * its size is rounded down to whole sectors, readonly is the image's.
 * 0 or -errno (-EINVAL for an image smaller than one sector); on success
 * the backend owns img (and through it its fds and backing images).
 */
int blk_file_new_image(struct blk_file **out, struct blk_image *img,
    const char *serial, struct blk_backend *be);
/*
 * A backend over the chain fds[0 .. n): the top image first, then each
 * backing image, fds[i] in formats[i]; see blk_image_open_chain() for
 * what the chain must be.  0, the backend owning every fd; or -errno,
 * every fd still the caller's.
 */
int blk_file_new_chain(struct blk_file **out, const int *fds,
    const enum blk_image_format *formats, unsigned int n, bool readonly,
    const char *serial, struct blk_backend *be);
/*
 * len bytes at off of the image (within its size), read on the calling
 * thread: for a reader of the disk before the guest runs (a boot from
 * the disk), while no request is queued.  0 or -errno.
 */
int blk_file_read(struct blk_file *f, void *buf, size_t len, uint64_t off);
/*
 * Every write completed so far on stable storage, and the image's
 * metadata final (qcow2's freed clusters released): drains the queue,
 * then flushes on the calling thread.  0 or -errno.
 */
int blk_file_flush(struct blk_file *f);
/*
 * A snapshot's freeze: the image f serves (its whole chain) becomes the
 * backing image of the qcow2 image fd (O_RDWR; its header must name a
 * backing file, of the top image's format, and have the same virtual
 * size), which takes every write from now on.  The caller guarantees
 * that nothing submits meanwhile (the guest is paused); the queue is
 * drained and the old top flushed first, then marked read-only, so no
 * write of this process reaches it again.  0, the backend owning fd;
 * or -errno, fd still the caller's and f as it was.
 */
int blk_file_push_top(struct blk_file *f, int fd);
/* The image's size in bytes, as the guest sees it. */
uint64_t blk_file_size(struct blk_file *f);
/* The image's figures.  Any thread. */
void blk_file_stats(struct blk_file *f, struct blk_image_stats *st);
/* Drains, stops the threads, frees the image.  NULL is fine. */
void blk_file_free(struct blk_file *f);

#endif
