/*
 * KVM's own counters for a vCPU (the binary statistics file of
 * KVM_GET_STATS_FD): exits the kernel handled without us, interrupts it
 * injected, halts, directed yields of a spinning vCPU.  They are read
 * without disturbing the vCPU, so vm.info can show them while the guest
 * runs or hangs.  Which statistics exist depends on the kernel: every
 * one it offers is taken, by its name, with its type: cumulative
 * counters, instant values, peaks and histograms (kvm_stats_summary).
 * The same file exists for the VM as a whole (its fd from
 * KVM_CREATE_VM), read the same way.
 */
#ifndef VMMD_KVM_STATS_H
#define VMMD_KVM_STATS_H

#include <stddef.h>
#include <stdint.h>

struct kvm_stats {
	int fd;			/* -1: the kernel gives no statistics */
	unsigned int n;		/* statistics taken */
	char **names;
	uint32_t *index;	/* each one's first u64 slot in the data block */
	uint32_t *flags;	/* KVM_STATS_TYPE_* | KVM_STATS_UNIT_* | ... */
	uint32_t *size;		/* values: 1, or a histogram's buckets */
	uint32_t *bucket;	/* a linear histogram's bucket width */
	int16_t *exponent;	/* the unit's power (of 10 or 2): -9 for ns */
	uint64_t *data;		/* the data block, as last read */
	size_t data_size;
	uint32_t data_offset;
};

/* Opens the statistics of a vCPU or VM fd; on failure s->fd is -1. */
int kvm_stats_open(struct kvm_stats *s, int fd);
/* Reads all values at once; then kvm_stats_value(s, i), i < s->n. */
int kvm_stats_read(struct kvm_stats *s);
/* The value of a single-value statistic; a histogram's first bucket. */
uint64_t kvm_stats_value(const struct kvm_stats *s, unsigned int i);
/* A cumulative single-value counter, as vm.info shows them. */
int kvm_stats_is_counter(const struct kvm_stats *s, unsigned int i);
int kvm_stats_is_histogram(const struct kvm_stats *s, unsigned int i);

/*
 * A histogram, summarised: how many samples, and the upper bounds of
 * the buckets that hold the median and the 99th percentile (in the
 * statistic's unit; for the last, open-ended bucket its lower bound).
 */
struct kvm_stats_hist {
	uint64_t samples;
	uint64_t p50;
	uint64_t p99;
};
void kvm_stats_summary(const struct kvm_stats *s, unsigned int i,
    struct kvm_stats_hist *h);
void kvm_stats_close(struct kvm_stats *s);

#endif
