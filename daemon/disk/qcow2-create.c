/*
 * Writing an empty qcow2 image over a backing file (see qcow2-create.h).
 * Section names are docs/interop/qcow2.txt's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qcow2-create.h"
#include "qcow2-header.h"

#define QCOW2_CREATE_CLUSTER	(1U << QCOW2_CREATE_CLUSTER_BITS)
/* "Header": version 3 without the optional fields (compression_type). */
#define QCOW2_CREATE_HDR_LEN	104
/* "Header extensions": the backing file format name string. */
#define QCOW2_CREATE_EXT_BACKING_FMT	0xe2792acaU
/* Where the tables go (cluster numbers, as qemu-img puts them). */
#define QCOW2_CREATE_REFTABLE	1
#define QCOW2_CREATE_REFBLOCK	2
#define QCOW2_CREATE_L1		3

/* All of buf at off, or -errno. */
static int
qcow2_create_pwrite(int fd, const uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/*
 * Cluster 0: "Header" (version 3), then the "Header extensions" (the
 * backing file format, the end marker), then the backing file's name,
 * which "should be stored in the remaining space between the end of the
 * header extension area and the end of the first cluster".
 */
static void
qcow2_create_header(uint8_t *c, uint64_t size, uint32_t l1_size,
    const char *backing, const char *backing_format)
{
	size_t blen = strlen(backing), flen = strlen(backing_format);
	size_t p;

	qcow2_put_be32(c + 0, QCOW2_MAGIC);
	qcow2_put_be32(c + 4, 3);
	/* backing_file_offset and _size: filled in below */
	qcow2_put_be32(c + 20, QCOW2_CREATE_CLUSTER_BITS);
	qcow2_put_be64(c + 24, size);
	qcow2_put_be32(c + 32, 0);			/* no encryption */
	qcow2_put_be32(c + QCOW2_OFF_L1_SIZE, l1_size);
	qcow2_put_be64(c + QCOW2_OFF_L1_OFFSET,
	    (uint64_t)QCOW2_CREATE_L1 * QCOW2_CREATE_CLUSTER);
	qcow2_put_be64(c + QCOW2_OFF_REFTABLE_OFFSET,
	    (uint64_t)QCOW2_CREATE_REFTABLE * QCOW2_CREATE_CLUSTER);
	qcow2_put_be32(c + QCOW2_OFF_REFTABLE_CLUSTERS, 1);
	qcow2_put_be32(c + 60, 0);			/* no snapshots */
	qcow2_put_be64(c + 64, 0);
	/* No incompatible, compatible or autoclear features: 72..95 = 0. */
	qcow2_put_be32(c + 96, QCOW2_CREATE_REFCOUNT_ORDER);
	qcow2_put_be32(c + 100, QCOW2_CREATE_HDR_LEN);

	p = QCOW2_CREATE_HDR_LEN;
	qcow2_put_be32(c + p, QCOW2_CREATE_EXT_BACKING_FMT);
	qcow2_put_be32(c + p + 4, (uint32_t)flen);
	memcpy(c + p + 8, backing_format, flen);
	/* "Padding to round up the header extension size to the next
	 * multiple of 8": zeros, as the buffer is. */
	p += 8 + ((flen + 7) & ~(size_t)7);
	p += 8;		/* the end of the extension area: type 0, length 0 */

	qcow2_put_be64(c + 8, p);
	qcow2_put_be32(c + 16, (uint32_t)blen);
	memcpy(c + p, backing, blen);
}

int
qcow2_create(int fd, uint64_t size, const char *backing,
    const char *backing_format)
{
	/* "Cluster mapping": one L2 table maps this much of the disk. */
	const uint64_t l2_span = (uint64_t)QCOW2_CREATE_CLUSTER *
	    (QCOW2_CREATE_CLUSTER / sizeof(uint64_t));
	uint64_t l1_size, l1_clusters, nclusters;
	uint8_t *c;
	int rc;

	if (size == 0 || size > QCOW2_MAX_SIZE || backing == NULL ||
	    backing[0] != '/' || strlen(backing) > QCOW2_MAX_BACKING_NAME ||
	    backing_format == NULL || (strcmp(backing_format, "raw") != 0 &&
	    strcmp(backing_format, "qcow2") != 0))
		return -EINVAL;
	l1_size = (size + l2_span - 1) / l2_span;
	if (l1_size * sizeof(uint64_t) > QCOW2_MAX_L1_BYTES)
		return -EINVAL;
	l1_clusters = (l1_size * sizeof(uint64_t) + QCOW2_CREATE_CLUSTER - 1) /
	    QCOW2_CREATE_CLUSTER;
	nclusters = QCOW2_CREATE_L1 + l1_clusters;
	/* "Host cluster management": one refcount block covers them all
	 * (cluster_size * 8 / refcount_bits entries; 515 at most here). */
	if (nclusters > QCOW2_CREATE_CLUSTER * 8 /
	    (1U << QCOW2_CREATE_REFCOUNT_ORDER))
		return -EINVAL;

	if ((c = calloc(1, QCOW2_CREATE_CLUSTER)) == NULL)
		return -ENOMEM;
	qcow2_create_header(c, size, (uint32_t)l1_size, backing,
	    backing_format);
	rc = qcow2_create_pwrite(fd, c, QCOW2_CREATE_CLUSTER, 0);

	/* "Refcount table entry": the block's offset; nothing else. */
	memset(c, 0, QCOW2_CREATE_CLUSTER);
	qcow2_put_be64(c, (uint64_t)QCOW2_CREATE_REFBLOCK *
	    QCOW2_CREATE_CLUSTER);
	if (rc == 0)
		rc = qcow2_create_pwrite(fd, c, QCOW2_CREATE_CLUSTER,
		    (uint64_t)QCOW2_CREATE_REFTABLE * QCOW2_CREATE_CLUSTER);

	/* "Refcount block entry": 16 bits, big-endian, 1 per cluster used. */
	memset(c, 0, QCOW2_CREATE_CLUSTER);
	for (uint64_t i = 0; i < nclusters; i++)
		c[2 * i + 1] = 1;
	if (rc == 0)
		rc = qcow2_create_pwrite(fd, c, QCOW2_CREATE_CLUSTER,
		    (uint64_t)QCOW2_CREATE_REFBLOCK * QCOW2_CREATE_CLUSTER);
	free(c);

	/* The L1 table: zeros, which the file's end gives without writes. */
	if (rc == 0 && ftruncate(fd, (off_t)(nclusters *
	    QCOW2_CREATE_CLUSTER)) < 0)
		rc = -errno;
	return rc;
}

int
qcow2_create_backing_size(int fd, bool backing_qcow2, uint64_t *size,
    char *reason, size_t reasonlen)
{
	struct qcow2_header h;
	struct stat st;
	int rc;

	if (backing_qcow2) {
		if ((rc = qcow2_header_read(fd, &h)) < 0) {
			snprintf(reason, reasonlen, "%s",
			    rc == -EINVAL ? h.reason : strerror(-rc));
			return rc;
		}
		*size = h.size;
		return 0;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(reason, reasonlen, "%s", strerror(-rc));
		return rc;
	}
	*size = (uint64_t)st.st_size & ~(uint64_t)511;
	return 0;
}
