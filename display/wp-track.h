/*
 * Event-driven dirty tracking of a memory region with userfaultfd write
 * protection: no polling while nothing is written.
 *
 * After wp_track_arm() every page of the region is write-protected.
 * The first write to a protected page stops the writer (a vCPU thread,
 * or the kernel on its behalf for KVM) and makes wp_track_fd() readable;
 * wp_track_handle(), run on the event loop, records the page as dirty
 * and lifts its protection, which lets the writer go on.  Later writes
 * to that page cost nothing until wp_track_collect() hands over the
 * dirty pages and protects them again.  So a region that is written
 * continuously costs one fault per page per collect, and a region that
 * is not written costs nothing at all.
 *
 * Threads: wp_track_handle() and wp_track_collect() run on one thread
 * (the loop's); writers may be any other thread.  The loop thread must
 * not write to the region itself while it is armed (it would wait for
 * itself).
 */
#ifndef VMMD_WP_TRACK_H
#define VMMD_WP_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wp_track;

/*
 * Track [base, base + len): page-aligned private anonymous memory, len a
 * multiple of the page size.  The region's pages are populated here
 * (each page's first byte is written with its own value: write
 * protection only holds on present pages).  0, or -errno:
 *  -EINVAL     misaligned or empty region;
 *  -EPERM      userfaultfd not allowed to this process (neither the
 *              system call nor /dev/userfaultfd);
 *  -ENOSYS     no userfaultfd in this kernel;
 *  -EOPNOTSUPP no write-protect support (kernel, or memory type).
 * On any error the caller falls back to polling a dirty log.
 */
int wp_track_new(void *base, size_t len, struct wp_track **out);

/* Unregisters the region (its pages are writable again).  NULL is fine. */
void wp_track_free(struct wp_track *wp);

/* Non-blocking, close-on-exec; readable when a write waits. */
int wp_track_fd(const struct wp_track *wp);

/* Pages in the region; the bitmaps have (pages + 63) / 64 words. */
size_t wp_track_pages(const struct wp_track *wp);

/* Protect every page and forget what was dirty.  0 or -errno. */
int wp_track_arm(struct wp_track *wp);
/*
 * Let waiting writers go and lift the protection of every page: writes
 * cost nothing again until the next wp_track_arm() (for when nobody
 * looks at what changes).  0 or -errno.
 */
int wp_track_disarm(struct wp_track *wp);

/*
 * Handle every waiting write: record the page, lift its protection.
 * Returns the number of pages newly found dirty (0 when the fd was not
 * really readable), or -errno.  *first (if not NULL) is set when these
 * are the first dirty pages since the last collect or arm: that is when
 * a consumer's refresh should be scheduled.
 */
int wp_track_handle(struct wp_track *wp, bool *first);

/*
 * OR the dirty pages into bitmap (bit i of word j: page 64 * j + i),
 * protect those pages again and forget them.  Protection comes first,
 * so a write racing with the collect is either in this report or
 * faults for the next one.  0 or -errno.
 */
int wp_track_collect(struct wp_track *wp, uint64_t *bitmap);

#endif
