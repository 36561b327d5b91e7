/*
 * userfaultfd write-protect tracking; see wp-track.h for the contract.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wp-track.h"

struct wp_track {
	int fd;
	uint8_t *base;
	size_t len;
	size_t page_size;
	size_t pages;
	uint64_t *dirty;	/* recorded since the last collect */
	size_t ndirty;
};

/* A userfaultfd that handles kernel-mode faults too (KVM writes). */
static int
wp_track_open(void)
{
	int fd, dev, err;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0)
		return fd;
	err = -errno;
	if (err != -EPERM)
		return err;
	/* Not allowed to the system call: the device may be (Linux 6.1). */
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -EPERM;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	err = fd < 0 ? -EPERM : fd;
	close(dev);
	return err;
}

static int
wp_track_protect(struct wp_track *wp, size_t first, size_t count, bool on)
{
	struct uffdio_writeprotect w = {
		.range = {
			.start = (uintptr_t)(wp->base + first * wp->page_size),
			.len = count * wp->page_size,
		},
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	if (ioctl(wp->fd, UFFDIO_WRITEPROTECT, &w) < 0)
		return -errno;
	return 0;
}

int
wp_track_new(void *base, size_t len, struct wp_track **out)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
	};
	struct uffdio_register reg;
	struct wp_track *wp;
	long page_size = sysconf(_SC_PAGESIZE);
	int r;

	*out = NULL;
	if (page_size <= 0 || len == 0 || (uintptr_t)base % (size_t)page_size ||
	    len % (size_t)page_size)
		return -EINVAL;
	wp = calloc(1, sizeof(*wp));
	if (wp == NULL)
		return -ENOMEM;
	wp->base = base;
	wp->len = len;
	wp->page_size = (size_t)page_size;
	wp->pages = len / wp->page_size;
	wp->dirty = calloc((wp->pages + 63) / 64, sizeof(uint64_t));
	if (wp->dirty == NULL) {
		r = -ENOMEM;
		goto free_wp;
	}
	r = wp_track_open();
	if (r < 0)
		goto free_wp;
	wp->fd = r;
	if (ioctl(wp->fd, UFFDIO_API, &api) < 0) {
		r = errno == EINVAL ? -EOPNOTSUPP : -errno;
		goto close_fd;
	}
	if (!(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		r = -EOPNOTSUPP;
		goto close_fd;
	}
	/* Write protection holds on present pages only. */
	for (size_t p = 0; p < wp->pages; p++) {
		volatile uint8_t *b = wp->base + p * wp->page_size;

		*b = *b;
	}
	reg = (struct uffdio_register){
		.range = { .start = (uintptr_t)base, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	if (ioctl(wp->fd, UFFDIO_REGISTER, &reg) < 0) {
		r = errno == EINVAL ? -EOPNOTSUPP : -errno;
		goto close_fd;
	}
	if (!(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT))) {
		r = -EOPNOTSUPP;
		goto unregister;
	}
	*out = wp;
	return 0;

unregister:
	(void)ioctl(wp->fd, UFFDIO_UNREGISTER, &reg.range);
close_fd:
	close(wp->fd);
free_wp:
	free(wp->dirty);
	free(wp);
	return r;
}

void
wp_track_free(struct wp_track *wp)
{
	struct uffdio_range range;

	if (wp == NULL)
		return;
	/* Unprotect first so that no writer stays stopped. */
	(void)wp_track_protect(wp, 0, wp->pages, false);
	range = (struct uffdio_range){ (uintptr_t)wp->base, wp->len };
	(void)ioctl(wp->fd, UFFDIO_UNREGISTER, &range);
	close(wp->fd);
	free(wp->dirty);
	free(wp);
}

int
wp_track_fd(const struct wp_track *wp)
{
	return wp->fd;
}

size_t
wp_track_pages(const struct wp_track *wp)
{
	return wp->pages;
}

int
wp_track_arm(struct wp_track *wp)
{
	memset(wp->dirty, 0, (wp->pages + 63) / 64 * sizeof(uint64_t));
	wp->ndirty = 0;
	return wp_track_protect(wp, 0, wp->pages, true);
}

int
wp_track_disarm(struct wp_track *wp)
{
	int ret;

	/* Unprotecting the range also wakes the writers waiting in it. */
	ret = wp_track_protect(wp, 0, wp->pages, false);
	/* Their messages are stale now: read them and forget. */
	if (ret == 0)
		ret = wp_track_handle(wp, NULL);
	memset(wp->dirty, 0, (wp->pages + 63) / 64 * sizeof(uint64_t));
	wp->ndirty = 0;
	return ret < 0 ? ret : 0;
}

int
wp_track_handle(struct wp_track *wp, bool *first)
{
	struct uffd_msg msg;
	size_t before = wp->ndirty;
	int newly = 0;

	if (first != NULL)
		*first = false;
	for (;;) {
		ssize_t n = read(wp->fd, &msg, sizeof(msg));
		uintptr_t addr;
		size_t page;
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return -errno;
		if (n != sizeof(msg))
			return -EIO;
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP))
			continue;
		addr = (uintptr_t)msg.arg.pagefault.address;
		if (addr < (uintptr_t)wp->base ||
		    addr >= (uintptr_t)wp->base + wp->len)
			continue;
		page = (addr - (uintptr_t)wp->base) / wp->page_size;
		if (!(wp->dirty[page / 64] >> (page % 64) & 1)) {
			wp->dirty[page / 64] |= 1ull << (page % 64);
			wp->ndirty++;
			newly++;
		}
		/* Lifting the protection wakes the writer. */
		r = wp_track_protect(wp, page, 1, false);
		if (r < 0)
			return r;
	}
	if (first != NULL)
		*first = before == 0 && newly > 0;
	return newly;
}

int
wp_track_collect(struct wp_track *wp, uint64_t *bitmap)
{
	size_t words = (wp->pages + 63) / 64;
	int r;

	if (wp->ndirty == 0)
		return 0;
	/* Protect again, in runs of dirty pages, before reporting. */
	for (size_t p = 0; p < wp->pages;) {
		size_t run = 0;

		while (p + run < wp->pages &&
		    (wp->dirty[(p + run) / 64] >> ((p + run) % 64) & 1))
			run++;
		if (run == 0) {
			p++;
			continue;
		}
		r = wp_track_protect(wp, p, run, true);
		if (r < 0)
			return r;
		p += run;
	}
	for (size_t i = 0; i < words; i++)
		bitmap[i] |= wp->dirty[i];
	memset(wp->dirty, 0, words * sizeof(uint64_t));
	wp->ndirty = 0;
	return 0;
}
