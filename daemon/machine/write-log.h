/*
 * The pages of guest RAM the devices write (device_guest_written()),
 * one bit a page per RAM region, for a live migration's rounds: KVM's
 * dirty log (ram-log.h) sees only what the vCPUs write, not a disk's
 * data read into a guest's buffer, a received packet or a used ring.
 *
 * Any thread marks (a vCPU, the loop, a disk's I/O thread), after the
 * write; another takes the bits with the pages' contents behind them
 * (release and acquire), so a page marked is sent again as it was
 * written or later.  The log is the devhost's (devhost.h): while no
 * migration runs, a device's mark costs a test of a NULL pointer.
 */
#ifndef VMMD_WRITE_LOG_H
#define VMMD_WRITE_LOG_H

#include <stddef.h>
#include <stdint.h>

struct devhost_ram;
struct write_log;

/* A log of the nram regions of ram (borrowed, kept by the caller). */
struct write_log *write_log_new(const struct devhost_ram *ram,
	    unsigned int nram);
void	write_log_free(struct write_log *l);
/* Forget every mark (a log made to log again). */
void	write_log_clear(struct write_log *l);
/* The pages of [hva, hva + len) written; outside guest RAM: nothing. */
void	write_log_mark(struct write_log *l, const void *hva, size_t len);
/*
 * The pages marked in the region at guest address gpa, words words of
 * one bit a page, ORed into bitmap and forgotten: 0, or -ENOENT without
 * such a region.
 */
int	write_log_take(struct write_log *l, uint64_t gpa, uint64_t *bitmap,
	    size_t words);

#endif
