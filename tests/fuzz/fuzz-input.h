/*
 * Reading a libFuzzer input as a sequence of operations: bytes taken
 * from the front, zeroes once it runs out (so every input, however
 * short, is a complete run).
 */
#ifndef VMMD_FUZZ_INPUT_H
#define VMMD_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline uint8_t
fuzz_byte(struct fuzz_in *in)
{
	if (in->left == 0)
		return 0;
	in->left--;
	return *in->p++;
}

/* The next `bytes` bytes (at most 8), little-endian. */
static inline uint64_t
fuzz_uint(struct fuzz_in *in, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v |= (uint64_t)fuzz_byte(in) << (8 * i);
	return v;
}

#endif
