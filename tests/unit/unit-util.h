/*
 * Helpers several unit tests need: little-endian field access for the
 * images and tables they build or parse byte by byte, a skipped check,
 * and a deterministic pseudo-random sequence.  Header-only, like tap.h;
 * include it after tap.h.
 */
#ifndef VMMD_UNIT_UTIL_H
#define VMMD_UNIT_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static inline void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static inline uint64_t
get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* One check that cannot run here: counted, and reported as skipped. */
static inline void
tap_skip(const char *why)
{
	tap_count++;
	printf("ok %d # SKIP %s\n", tap_count, why);
	fflush(stdout);
}

/*
 * Deterministic pseudo-random numbers (xorshift64*).  A test seeds
 * rng_state before its first rng() so that every run checks the same
 * sequence.
 */
static uint64_t rng_state;

static inline uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

#endif
