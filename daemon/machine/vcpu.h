/*
 * One vCPU: its KVM file descriptor and run structure, its thread with
 * the KVM_RUN loop, and the dispatch of its exits to the I/O buses.
 *
 * A vCPU knows the machine only through what its config hands it: the
 * buses to dispatch to and the run controller to obey.  Its counters are
 * written by its own thread only; readers load them atomically.
 */
#ifndef VMMD_VCPU_H
#define VMMD_VCPU_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

#include "boot.h"
#include "exit-stats.h"
#include "figure.h"
#include "iobus.h"
#include "kvm-stats.h"
#include "runctl.h"

/* Exits that reached user space, by kind. */
enum vcpu_exit_kind {
	VCPU_EXIT_IO,
	VCPU_EXIT_MMIO,
	VCPU_EXIT_HLT,
	VCPU_EXIT_SHUTDOWN,
	VCPU_EXIT_SYSTEM_EVENT,
	VCPU_EXIT_INTR,		/* KVM_RUN interrupted by a signal */
	VCPU_EXIT_OTHER,
	VCPU_EXIT_KINDS
};


struct vcpu_config {
	int kvm_fd;
	int vm_fd;
	unsigned int index;
	unsigned int nvcpus;
	struct iobus *pio;
	struct iobus *mmio;
	struct runctl *rc;
	const struct boot_cpu *boot;	/* the boot CPU's state; NULL for APs */
	/* Where its thread stores when it first enters KVM_RUN, or NULL. */
	int64_t *started_ns;
};

struct vcpu {
	unsigned int index;
	int fd;
	struct kvm_run *run;
	size_t run_size;
	struct runctl_vcpu ctl;		/* what the run controller kicks */
	struct iobus *pio;
	struct iobus *mmio;
	struct runctl *rc;
	uint64_t exits[VCPU_EXIT_KINDS];
	struct kvm_stats stats;		/* the kernel's side of the exits */
	struct xs_vcpu xs;		/* exit timing, when switched on */
	int64_t *started_ns;		/* vcpu_config's */
};

/* exits[] by kind as figures (figure.h) of a struct vcpu. */
extern const struct figure_table vcpu_exit_figures;

/* Marks v unused, so that vcpu_destroy() is safe before vcpu_init(). */
void	vcpu_clear(struct vcpu *v);
/* Creates the vCPU and sets its initial state; its thread does not run. */
int	vcpu_init(struct vcpu *v, const struct vcpu_config *cfg, char *err,
	    size_t errlen);
/* After its thread was joined (runctl_stop). */
void	vcpu_destroy(struct vcpu *v);
int	vcpu_start(struct vcpu *v);
/* Only from the vCPU's thread, or while it is kept out of KVM_RUN. */
int	vcpu_get_regs(struct vcpu *v, struct kvm_regs *regs,
	    struct kvm_sregs *sregs);

/*
 * What stands between a vCPU and its next interrupt, for diagnostics:
 * the local APIC's highest vector in service and requested (0: none),
 * the task and processor priorities, the timer (LVT entry, initial and
 * current count), an interrupt KVM has taken from the APIC but not yet
 * delivered (inject_nr, when injected), and the MP state (halted...).
 */
struct vcpu_irq_view {
	uint8_t isr_top, irr_top;
	uint32_t tpr, ppr, lvtt, tmict, tmcct;
	bool injected;
	uint8_t inject_nr;
	uint32_t mp_state;
};

/* As vcpu_get_regs(). */
int	vcpu_get_irq_view(struct vcpu *v, struct vcpu_irq_view *view);

/* cpuid.c: the guest's CPUID for vCPU index of nvcpus. */
int	cpuid_setup(int kvm_fd, int vcpu_fd, unsigned int index,
	    unsigned int nvcpus);

#endif
