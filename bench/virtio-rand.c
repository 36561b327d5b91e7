/*
 * Runs in the reference guest (bench/virtio.sh adds it to the guest's
 * initramfs): COUNT random 4 KiB reads or writes with O_DIRECT on a block
 * device, at 4 KiB-aligned offsets drawn from a PRNG with a fixed seed,
 * so that every VMM sees the same requests in the same order.
 *
 *   virtio-rand r|w DEVICE COUNT SEED
 *
 * Exits 0 when every request moved 4 KiB, 1 otherwise, with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VR_BLOCK	4096

/* xorshift64*: small, and the same sequence everywhere. */
static uint64_t
vr_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

int
main(int argc, char **argv)
{
	uint64_t seed, blocks;
	unsigned long count, i;
	void *buf;
	off_t size;
	ssize_t n;
	int fd, wr;

	if (argc != 5 || (strcmp(argv[1], "r") != 0 &&
	    strcmp(argv[1], "w") != 0)) {
		fprintf(stderr, "usage: virtio-rand r|w DEVICE COUNT SEED\n");
		return 2;
	}
	wr = argv[1][0] == 'w';
	count = strtoul(argv[3], NULL, 0);
	seed = strtoull(argv[4], NULL, 0) | 1;
	if ((fd = open(argv[2], (wr ? O_WRONLY : O_RDONLY) | O_DIRECT)) < 0) {
		fprintf(stderr, "virtio-rand: %s: %s\n", argv[2],
		    strerror(errno));
		return 1;
	}
	if ((size = lseek(fd, 0, SEEK_END)) < VR_BLOCK) {
		fprintf(stderr, "virtio-rand: %s: no size\n", argv[2]);
		return 1;
	}
	blocks = (uint64_t)size / VR_BLOCK;
	if (posix_memalign(&buf, VR_BLOCK, VR_BLOCK) != 0)
		return 1;
	memset(buf, 0xa5, VR_BLOCK);
	for (i = 0; i < count; i++) {
		off_t off = (off_t)(vr_next(&seed) % blocks) * VR_BLOCK;

		n = wr ? pwrite(fd, buf, VR_BLOCK, off) :
		    pread(fd, buf, VR_BLOCK, off);
		if (n != VR_BLOCK) {
			fprintf(stderr, "virtio-rand: %s at %lld: %s\n",
			    wr ? "write" : "read", (long long)off,
			    n < 0 ? strerror(errno) : "short");
			return 1;
		}
	}
	close(fd);
	return 0;
}
