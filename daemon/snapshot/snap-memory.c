/*
 * Sparse guest RAM in a snapshot's memory file (snap-memory.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snap-manifest.h"
#include "snap-memory.h"

/* Writes coalesce runs of non-zero pages up to this many bytes. */
#define SNAP_RUN_MAX	(1u << 20)

static bool
snap_page_zero(const void *page)
{
	const uint64_t *w = page;
	size_t i;

	for (i = 0; i < SNAP_PAGE_SIZE / sizeof(*w); i++)
		if (w[i] != 0)
			return false;
	return true;
}

static int
snap_pwrite_all(int fd, const uint8_t *buf, uint64_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

int
snap_memory_save(int fd, uint64_t offset, const void *host, uint64_t size)
{
	const uint8_t *base = host;
	uint64_t pos = 0, run = 0, run_len = 0;
	int ret;

	/* A tail shorter than a page is written whole. */
	while (pos < size) {
		uint64_t n = size - pos < SNAP_PAGE_SIZE ? size - pos :
		    SNAP_PAGE_SIZE;
		bool zero = n == SNAP_PAGE_SIZE && snap_page_zero(base + pos);

		if (!zero && run_len > 0 && run + run_len == pos &&
		    run_len + n <= SNAP_RUN_MAX) {
			run_len += n;
		} else if (!zero) {
			if (run_len > 0 && (ret = snap_pwrite_all(fd,
			    base + run, run_len, offset + run)) < 0)
				return ret;
			run = pos;
			run_len = n;
		}
		pos += n;
	}
	if (run_len > 0)
		return snap_pwrite_all(fd, base + run, run_len, offset + run);
	return 0;
}

int
snap_memory_load(int fd, uint64_t offset, void *host, uint64_t size)
{
	uint8_t *base = host;
	uint64_t end = offset + size, pos = offset;

	while (pos < end) {
		off_t data, hole;
		ssize_t n;

		data = lseek(fd, (off_t)pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			return 0;	/* holes to the end of the file */
		if (data < 0)
			return -errno;
		if ((uint64_t)data >= end)
			return 0;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if ((uint64_t)hole > end)
			hole = (off_t)end;
		for (pos = (uint64_t)data; pos < (uint64_t)hole;
		    pos += (uint64_t)n) {
			n = pread(fd, base + (pos - offset),
			    (uint64_t)hole - pos, (off_t)pos);
			if (n < 0 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n < 0)
				return -errno;
			if (n == 0)
				return -EIO;
		}
	}
	return 0;
}

int
snap_memory_map(int fd, uint64_t offset, void *host, uint64_t size)
{
	void *p;

	if ((uintptr_t)host % SNAP_PAGE_SIZE != 0 ||
	    offset % SNAP_PAGE_SIZE != 0)
		return -EINVAL;
	p = mmap(host, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	return 0;
}
