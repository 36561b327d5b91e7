/* See nvram.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev-state.h"
#include "log.h"
#include "nvram.h"

/*
 * The variables in a snapshot: sections "nvram", each a piece of the
 * image of at most NVRAM_PIECE bytes at its offset, in order (a field
 * holds at most DEV_STATE_VALUE_MAX bytes; OVMF's images take one).
 */
#define NVRAM_PIECE	DEV_STATE_VALUE_MAX

struct nvram_piece {
	uint64_t offset;
	uint32_t len;
	uint8_t data[NVRAM_PIECE];
};

static const struct dev_state_field nvram_piece_fields[] = {
	{ "offset", DEV_STATE_U64, DEV_STATE_AT(struct nvram_piece, offset),
	    .max = NVRAM_SIZE_MAX - 1 },
	{ "image", DEV_STATE_BYTES, DEV_STATE_VARLEN,
	    DEV_STATE_AT(struct nvram_piece, data),
	    .count_offset = offsetof(struct nvram_piece, len) },
};

const struct dev_state_table nvram_state_table = {
	DEV_STATE_TABLE("nvram", 1, struct nvram_piece, nvram_piece_fields),
};

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

int
nvram_save(struct nvram *n, struct dev_state_buf *out)
{
	struct pflash_store *s = &n->store;
	struct nvram_piece *pc = malloc(sizeof(*pc));
	size_t off;
	int rc = 0;

	if (pc == NULL)
		return -ENOMEM;
	if (s->host != NULL)
		device_lock(s->host);
	for (off = 0; rc == 0 && off < s->size; off += NVRAM_PIECE) {
		pc->offset = off;
		pc->len = (uint32_t)(s->size - off < NVRAM_PIECE ?
		    s->size - off : NVRAM_PIECE);
		memcpy(pc->data, s->image + off, pc->len);
		rc = dev_state_save(&nvram_state_table, pc, out);
	}
	if (s->host != NULL)
		device_unlock(s->host);
	free(pc);
	return rc;
}

int
nvram_load(struct nvram *n, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct pflash_store *s = &n->store;
	struct nvram_piece *pc = malloc(sizeof(*pc));
	uint8_t *image = malloc(s->size);
	bool *changed = calloc(s->nblocks, sizeof(*changed));
	const uint8_t *p = buf;
	size_t off = 0, at = 0, want, b;
	long sl;
	int rc = 0;

	if (pc == NULL || image == NULL || changed == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	while (rc == 0 && off < s->size) {
		want = s->size - off < NVRAM_PIECE ? s->size - off :
		    NVRAM_PIECE;
		sl = at < len ? dev_state_section_len(p + at, len - at) : -1;
		if (sl < 0) {
			rc = dev_state_fail(err, -EBADMSG, "nvram: the image "
			    "stops at %zu of %zu bytes", off, s->size);
			break;
		}
		rc = dev_state_load(&nvram_state_table, pc, p + at,
		    (size_t)sl, err);
		if (rc == 0 && (pc->offset != off || pc->len != want))
			rc = dev_state_fail(err, -EINVAL, "nvram: %u bytes at "
			    "%llu where the image's %zu bytes at %zu come",
			    pc->len, (unsigned long long)pc->offset, want,
			    off);
		if (rc == 0)
			memcpy(image + off, pc->data, want);
		off += want;
		at += (size_t)sl;
	}
	if (rc == 0 && at != len)
		rc = dev_state_fail(err, -EINVAL, "nvram: more than the "
		    "image's %zu bytes", s->size);
	if (rc < 0)
		goto out;
	/*
	 * The image in place, then each block that changed is written back
	 * to the file (a read-only store's never is).
	 */
	if (s->host != NULL)
		device_lock(s->host);
	for (b = 0; b < s->nblocks; b++) {
		off = b * s->block_size;
		changed[b] = memcmp(s->image + off, image + off,
		    s->block_size) != 0;
		if (changed[b])
			memcpy(s->image + off, image + off, s->block_size);
	}
	if (s->host != NULL)
		device_unlock(s->host);
	for (b = 0; b < s->nblocks && !s->readonly; b++)
		if (changed[b])
			(void)pflash_store_mark_dirty(s, b * s->block_size);
	if (!s->readonly)
		event_active(n->flush_ev, 0, 0);
out:
	free(changed);
	free(image);
	free(pc);
	return rc;
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
