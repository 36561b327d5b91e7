/*
 * One libFuzzer driver for every device's register interface: a fuzz
 * input is a sequence of port reads and writes, VM time passing (the
 * device's timers fire), host-side input and interrupt answers, against
 * one device on the unit tests' fake device host (tests/unit/fake-host.h).
 *
 * Each fuzz-DEVICE.c describes its device with one struct fuzz_device
 * and defines fuzz_device_desc; fuzz-device.c does the rest.  Accesses
 * are the ones the I/O bus can deliver: an offset inside one of the
 * device's ranges (as the PC board table registers it) and a size of 1,
 * 2 or 4 that does not run past the range's end.
 */
#ifndef VMMD_FUZZ_DEVICE_H
#define VMMD_FUZZ_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "fake-host.h"

#define FUZZ_DEVICE_RANGES	2

struct fuzz_device_range {
	uint64_t offset;	/* device offset of the range's first port */
	uint64_t len;
};

struct fuzz_device {
	const struct device_ops *ops;
	struct fuzz_device_range ranges[FUZZ_DEVICE_RANGES];
	unsigned int nranges;
	/* Make the device on fh; NULL on failure (the run then aborts). */
	void *(*create)(struct fake_host *fh);
	/*
	 * Host-side input (a key, bytes from the console, ...): sel picks
	 * what, data/len is the rest of the operation.  May be NULL.
	 */
	void (*input)(void *dev, struct fake_host *fh, uint8_t sel,
	    const uint8_t *data, size_t len);
};

extern const struct fuzz_device fuzz_device_desc;

#endif
