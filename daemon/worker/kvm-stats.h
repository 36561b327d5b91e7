/*
 * KVM's own counters for a vCPU (the binary statistics file of
 * KVM_GET_STATS_FD): exits the kernel handled without us, interrupts it
 * injected, halts, directed yields of a spinning vCPU.  They are read
 * without disturbing the vCPU, so vm.info can show them while the guest
 * runs or hangs.  Which counters exist depends on the kernel: every
 * cumulative single-value counter it offers is taken, by its name.
 */
#ifndef VMMD_KVM_STATS_H
#define VMMD_KVM_STATS_H

#include <stddef.h>
#include <stdint.h>

struct kvm_stats {
	int fd;			/* -1: the kernel gives no statistics */
	unsigned int n;		/* counters taken */
	char **names;
	uint32_t *index;	/* each counter's u64 slot in the data block */
	uint64_t *data;		/* the data block, as last read */
	size_t data_size;
	uint32_t data_offset;
};

/* Opens the statistics of vcpu_fd; on failure s->fd is -1. */
int kvm_stats_open(struct kvm_stats *s, int vcpu_fd);
/* Reads all counters at once; then kvm_stats_value(s, i), i < s->n. */
int kvm_stats_read(struct kvm_stats *s);
uint64_t kvm_stats_value(const struct kvm_stats *s, unsigned int i);
void kvm_stats_close(struct kvm_stats *s);

#endif
