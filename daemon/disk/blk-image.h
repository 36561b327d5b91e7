/*
 * A disk image, whatever its format, as synchronous byte-addressed
 * operations: what blk-file.c's I/O threads call for each request.  The
 * formats: raw (blk-raw.c) and qcow2 (blk-qcow2.c), each of which may
 * sit on a backing image of either format (qcow2 only reads it).
 *
 * Threads: every operation may be called from several threads at once
 * (blk-file.c runs up to BLK_FILE_THREADS); each format does its own
 * locking.  free is called once, when no operation runs.
 *
 * Ownership: an image owns its file descriptor and its backing image;
 * freeing the top of a chain frees the whole chain.
 */
#ifndef VMMD_BLK_IMAGE_H
#define VMMD_BLK_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* The longest chain (top image and backing images) vmmd opens. */
#define BLK_IMAGE_MAX_CHAIN	16

enum blk_image_format {
	BLK_IMAGE_RAW,
	BLK_IMAGE_QCOW2,
};

struct blk_image_stats {
	const char *format;		/* "raw", "qcow2" */
	uint64_t allocated;		/* bytes of the file on disk */
	uint64_t cache_hits;		/* metadata tables found cached */
	uint64_t cache_misses;		/* ... and read from the file */
	unsigned int chain;		/* backing images below this one */
	bool broken;			/* damage found: writes fail */
};

struct blk_image;

/*
 * Every operation returns 0 when every byte was moved, or -errno; a
 * range must lie inside the image (-EIO otherwise).  A read-only image
 * fails write, discard and write_zeroes with -EROFS.
 */
struct blk_image_ops {
	int (*read)(struct blk_image *img, const struct iovec *iov,
	    unsigned int niov, uint64_t off);
	int (*write)(struct blk_image *img, const struct iovec *iov,
	    unsigned int niov, uint64_t off);
	/* Completed writes reach stable storage (fdatasync). */
	int (*flush)(struct blk_image *img);
	/* Advisory: the range may read as anything afterwards. */
	int (*discard)(struct blk_image *img, uint64_t off, uint64_t len);
	/* The range reads as zeroes; may_unmap: its space may be freed. */
	int (*write_zeroes)(struct blk_image *img, uint64_t off,
	    uint64_t len, bool may_unmap);
	void (*stats)(struct blk_image *img, struct blk_image_stats *st);
	/* Hand the fd back: free will not close it (an open unwinding). */
	void (*disown)(struct blk_image *img);
	void (*free)(struct blk_image *img);
};

/* Embedded first in each format's own state. */
struct blk_image {
	const struct blk_image_ops *ops;
	uint64_t size;			/* bytes the guest sees */
	bool readonly;
	struct blk_image *backing;	/* owned; NULL: none */
};

/* Free img and its backing images; NULL is fine. */
static inline void
blk_image_free(struct blk_image *img)
{
	if (img != NULL)
		img->ops->free(img);
}


/*
 * Scatter-gather helpers for the formats: the bytes [off, off + len) of
 * a vector, len within its total.
 */
size_t	blk_iov_size(const struct iovec *iov, unsigned int niov);
/*
 * The segments covering [off, off + len), at most max of them, in out:
 * their number; *taken is the bytes they cover (less than len only when
 * max ran out).
 */
unsigned int blk_iov_slice(const struct iovec *iov, unsigned int niov,
	    size_t off, size_t len, struct iovec *out, unsigned int max,
	    size_t *taken);
void	blk_iov_memset(const struct iovec *iov, unsigned int niov,
	    size_t off, int c, size_t len);
void	blk_iov_to_buf(const struct iovec *iov, unsigned int niov,
	    size_t off, void *buf, size_t len);
void	blk_iov_from_buf(const struct iovec *iov, unsigned int niov,
	    size_t off, const void *buf, size_t len);

#endif
