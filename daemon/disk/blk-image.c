/*
 * What every image format shares (see blk-image.h): walking
 * scatter-gather vectors.
 */
#include <errno.h>
#include <string.h>

#include "blk-image.h"

size_t
blk_iov_size(const struct iovec *iov, unsigned int niov)
{
	size_t n = 0;

	for (unsigned int i = 0; i < niov; i++)
		n += iov[i].iov_len;
	return n;
}

unsigned int
blk_iov_slice(const struct iovec *iov, unsigned int niov, size_t off,
    size_t len, struct iovec *out, unsigned int max, size_t *taken)
{
	unsigned int i = 0, n = 0;
	size_t got = 0;

	while (i < niov && off >= iov[i].iov_len)
		off -= iov[i++].iov_len;
	for (; i < niov && got < len && n < max; i++, off = 0) {
		size_t l = iov[i].iov_len - off;

		if (l > len - got)
			l = len - got;
		if (l == 0)
			continue;
		out[n].iov_base = (uint8_t *)iov[i].iov_base + off;
		out[n++].iov_len = l;
		got += l;
	}
	*taken = got;
	return n;
}

/* Call fn on each piece of [off, off + len) of the vector. */
static void
blk_iov_each(const struct iovec *iov, unsigned int niov, size_t off,
    size_t len, void (*fn)(void *seg, size_t l, size_t at, void *arg),
    void *arg)
{
	size_t at = 0;

	for (unsigned int i = 0; i < niov && at < len; i++) {
		size_t l;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		l = iov[i].iov_len - off;
		if (l > len - at)
			l = len - at;
		fn((uint8_t *)iov[i].iov_base + off, l, at, arg);
		at += l;
		off = 0;
	}
}

static void
blk_iov_set(void *seg, size_t l, size_t at, void *arg)
{
	memset(seg, *(int *)arg, l);
}

static void
blk_iov_get(void *seg, size_t l, size_t at, void *arg)
{
	memcpy((uint8_t *)arg + at, seg, l);
}

static void
blk_iov_put(void *seg, size_t l, size_t at, void *arg)
{
	memcpy(seg, (const uint8_t *)arg + at, l);
}

void
blk_iov_memset(const struct iovec *iov, unsigned int niov, size_t off, int c,
    size_t len)
{
	blk_iov_each(iov, niov, off, len, blk_iov_set, &c);
}

void
blk_iov_to_buf(const struct iovec *iov, unsigned int niov, size_t off,
    void *buf, size_t len)
{
	blk_iov_each(iov, niov, off, len, blk_iov_get, buf);
}

void
blk_iov_from_buf(const struct iovec *iov, unsigned int niov, size_t off,
    const void *buf, size_t len)
{
	blk_iov_each(iov, niov, off, len, blk_iov_put, (void *)buf);
}
