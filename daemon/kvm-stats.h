/*
 * KVM's own counters for a vCPU (the binary statistics file of
 * KVM_GET_STATS_FD): exits the kernel handled without us, interrupts it
 * injected, halts.  Read without disturbing the vCPU, so vm.info can
 * show them while the guest runs or hangs.
 */
#ifndef VMMD_KVM_STATS_H
#define VMMD_KVM_STATS_H

#include <stdint.h>

/* The counters reported, by KVM's names; a kernel may lack some. */
#define KVM_STATS_NAMES							\
	"exits", "io_exits", "mmio_exits", "halt_exits", "irq_exits",	\
	"irq_window_exits", "irq_injections", "halt_wakeup",		\
	"insn_emulation", "signal_exits"
#define KVM_STATS_N	10

struct kvm_stats {
	int fd;				/* -1: KVM gives no statistics */
	int64_t offset[KVM_STATS_N];	/* in the file, -1 when absent */
};

extern const char *const kvm_stats_names[KVM_STATS_N];

/* Opens the statistics of vcpu_fd; without them s->fd stays -1. */
int kvm_stats_open(struct kvm_stats *s, int vcpu_fd);
/* values[i] is -1 for a counter the kernel lacks. */
int kvm_stats_read(const struct kvm_stats *s, int64_t *values);
void kvm_stats_close(struct kvm_stats *s);

#endif
