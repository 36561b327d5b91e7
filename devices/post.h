/*
 * Port 0x80, where PC firmware and kernels write POST codes (and Linux
 * its I/O delays).  Writes are accepted and dropped; reads float high.
 */
#ifndef VMMD_POST_H
#define VMMD_POST_H

#include "dev-state.h"
#include "device.h"

struct post;

/* NULL on ENOMEM. */
struct post *post_new(const struct device_host *host);
void post_free(struct post *p);

extern const struct device_ops post_device_ops;
/* Its state section (dev-state.h), for tests and fuzzers. */
extern const struct dev_state_table post_state_table;

#endif
