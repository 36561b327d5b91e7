/*
 * Logging the guest's writes to its RAM (a live migration's rounds):
 * KVM_MEM_LOG_DIRTY_PAGES on the RAM slots while on, nothing at all
 * otherwise (a VM never migrated pays nothing).  KVM logs only what the
 * vCPUs write: the pages the devices write themselves (a disk's data
 * read into the guest's buffers, a used ring) come from the devhost's
 * log (devhost_write_log(), write-log.h), which is on at the same time.
 */
#ifndef VMMD_RAM_LOG_H
#define VMMD_RAM_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct machine;

/* The RAM regions: 1 (low) or 2 (and high). */
size_t	ram_log_regions(const struct machine *m);
/* Region i: where the guest sees it, its size, where we have it. */
void	ram_log_region(const struct machine *m, size_t i, uint64_t *gpa,
	    uint64_t *size, uint8_t **host);
/*
 * Start or stop logging on every RAM region: 0 or -errno (on: what was
 * started is stopped again).  The loop's thread.
 */
int	ram_log_set(struct machine *m, bool on);
/*
 * Region i's pages written since logging started or since the last
 * call, by the vCPUs or the devices, one bit a page into bitmap (words: (size / 4096 + 63) / 64),
 * and forget them.  Any thread while logging is on; 0 or -errno.
 */
int	ram_log_get(struct machine *m, size_t i, uint64_t *bitmap);

#endif
