/* See nvram.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "nvram.h"

struct nvram {
	struct pflash_store store;
	int fd;
	struct event *flush_ev;	/* made active by a dirty flash; a timer
				 * again after a failed write */
	uint8_t *buf;		/* one block */
	bool failing;		/* the last flush failed: said once */
	uint64_t written;
	uint64_t errors;
};

/* Under the flash's lock, on a vCPU thread: only schedule. */
static void
nvram_dirty(void *opaque)
{
	struct nvram *n = opaque;

	event_active(n->flush_ev, 0, 0);
}

static int
nvram_write(int fd, const uint8_t *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t r = pwrite(fd, buf, len, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		buf += r;
		len -= (size_t)r;
		off += r;
	}
	return 0;
}

int
nvram_flush(struct nvram *n)
{
	uint32_t bs = n->store.block_size;
	unsigned int done = 0;
	int64_t off;
	int rc = 0, r;

	while ((off = pflash_store_take_dirty(&n->store, n->buf)) >= 0) {
		if ((r = nvram_write(n->fd, n->buf, bs, off)) < 0) {
			/* Given back; the others of this round too. */
			pflash_store_mark_dirty(&n->store, (uint64_t)off);
			n->errors++;
			rc = r;
			break;
		}
		n->written++;
		done++;
	}
	if (rc == 0 && done > 0 && fdatasync(n->fd) < 0) {
		rc = -errno;
		n->errors++;
	}
	return rc;
}

static void
nvram_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct nvram *n = arg;
	const struct timeval retry = { 1, 0 };
	int rc = nvram_flush(n);

	if (rc < 0) {
		if (!n->failing)
			log_warn("UEFI variables: writing back: %s (tried "
			    "again every second)", strerror(-rc));
		n->failing = true;
		evtimer_add(n->flush_ev, &retry);
	} else if (n->failing) {
		log_info("UEFI variables: written back again");
		n->failing = false;
	}
}

static int
nvram_read(int fd, uint8_t *buf, size_t len)
{
	off_t off = 0;

	while (len > 0) {
		ssize_t r = pread(fd, buf, len, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;	/* shrank under us */
		buf += r;
		len -= (size_t)r;
		off += r;
	}
	return 0;
}

int
nvram_new(struct event_base *base, int fd, uint32_t block_size,
    bool readonly, struct nvram **out)
{
	struct nvram *n;
	struct stat st;
	uint8_t *image = NULL;
	int rc;

	if ((n = calloc(1, sizeof(*n))) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	n->fd = fd;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto free_n;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > NVRAM_SIZE_MAX || block_size == 0 ||
	    (uint64_t)st.st_size % block_size != 0) {
		rc = -EINVAL;
		goto free_n;
	}
	if ((image = malloc((size_t)st.st_size)) == NULL ||
	    (n->buf = malloc(block_size)) == NULL) {
		rc = -ENOMEM;
		goto free_image;
	}
	if ((rc = nvram_read(fd, image, (size_t)st.st_size)) < 0 ||
	    (rc = pflash_store_init(&n->store, image, (size_t)st.st_size,
	    block_size, readonly)) < 0)
		goto free_image;
	free(image);
	n->flush_ev = evtimer_new(base, nvram_flush_cb, n);
	if (n->flush_ev == NULL) {
		rc = -ENOMEM;
		goto fini_store;
	}
	n->store.dirty = nvram_dirty;
	n->store.opaque = n;
	*out = n;
	return 0;

fini_store:
	pflash_store_fini(&n->store);
free_image:
	free(image);
free_n:
	free(n->buf);
	close(n->fd);
	free(n);
	return rc;
}

struct pflash_store *
nvram_store(struct nvram *n)
{
	return &n->store;
}

uint64_t
nvram_blocks_written(const struct nvram *n)
{
	return n->written;
}

uint64_t
nvram_write_errors(const struct nvram *n)
{
	return n->errors;
}

void
nvram_free(struct nvram *n)
{
	int rc;

	if (n == NULL)
		return;
	if ((rc = nvram_flush(n)) < 0)
		log_error("UEFI variables: %zu blocks lost: %s",
		    n->store.ndirty, strerror(-rc));
	event_free(n->flush_ev);
	pflash_store_fini(&n->store);
	free(n->buf);
	close(n->fd);
	free(n);
}
