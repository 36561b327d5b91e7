/*
 * The system calls a disk format costs: rewrite every byte of an
 * allocated image (raw, or qcow2 with no backing image) in requests of
 * a given size through the format layer, as blk-file's threads would.
 * Run it under strace -c -f (blk-rewrite.sh) to count them per MiB.
 *
 *   blk-rewrite raw|qcow2 IMAGE REQUEST_BYTES
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blk-chain.h"
#include "blk-image.h"

int
main(int argc, char **argv)
{
	enum blk_image_format fmt;
	struct blk_image *img;
	struct iovec iov;
	size_t req;
	uint8_t *buf;
	int fd, ret;

	if (argc != 4) {
		fprintf(stderr, "usage: %s raw|qcow2 IMAGE REQUEST_BYTES\n",
		    argv[0]);
		return 2;
	}
	fmt = strcmp(argv[1], "qcow2") == 0 ? BLK_IMAGE_QCOW2 : BLK_IMAGE_RAW;
	req = strtoul(argv[3], NULL, 0);
	if ((fd = open(argv[2], O_RDWR | O_CLOEXEC)) < 0 ||
	    (buf = malloc(req)) == NULL) {
		perror(argv[2]);
		return 1;
	}
	if ((ret = blk_image_open_chain(&fd, &fmt, 1, false, &img)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[2], strerror(-ret));
		return 1;
	}
	memset(buf, 0x5a, req);
	iov = (struct iovec){ buf, req };
	for (uint64_t off = 0; off + req <= img->size; off += req)
		if ((ret = img->ops->write(img, &iov, 1, off)) < 0) {
			fprintf(stderr, "write: %s\n", strerror(-ret));
			return 1;
		}
	printf("%s: %llu MiB rewritten in %zu-byte requests\n", argv[1],
	    (unsigned long long)(img->size >> 20), req);
	blk_image_free(img);
	free(buf);
	return 0;
}
