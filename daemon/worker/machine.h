/*
 * One guest machine: a KVM VM with its memory, in-kernel interrupt
 * controllers and PIT, the user-space devices on the I/O buses, and one
 * thread per vCPU.
 *
 * The machine never talks to the outside world itself.  Console output,
 * free space in the console receiver, reset requests and fatal errors go
 * to the host (the worker) through callbacks, which are called from vCPU
 * threads and must not block.
 */
#ifndef VMMD_MACHINE_H
#define VMMD_MACHINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

#include "boot.h"
#include "iobus.h"
#include "kvm-stats.h"
#include "uart.h"

enum machine_reset_reason {
	MACHINE_RESET_I8042,		/* keyboard controller reset line */
	MACHINE_RESET_TRIPLE_FAULT,	/* KVM_EXIT_SHUTDOWN */
	MACHINE_RESET_SYSTEM_EVENT,	/* KVM_EXIT_SYSTEM_EVENT reset */
	MACHINE_POWEROFF,		/* KVM_EXIT_SYSTEM_EVENT shutdown */
};

const char *machine_reset_reason_name(enum machine_reset_reason r);

struct machine_host {
	void (*console_tx)(void *opaque, const uint8_t *buf, size_t len);
	void (*console_rx_space)(void *opaque);
	void (*reset)(void *opaque, enum machine_reset_reason why);
	void (*fatal)(void *opaque, const char *why);
	void *opaque;
};

struct machine_config {
	const char *kernel;		/* what is loaded: /proc/self/fd/N */
	const char *initrd;
	const char *kernel_name;	/* for messages; NULL = kernel */
	const char *cmdline;
	uint64_t memory_mib;
	unsigned int vcpus;
};

/* Exit counters, per vCPU; written by the vCPU thread only. */
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

struct machine;

struct vcpu {
	struct machine *machine;
	unsigned int index;
	int fd;
	struct kvm_run *run;
	size_t run_size;
	pthread_t thread;
	bool thread_started;
	uint64_t exits[VCPU_EXIT_KINDS];
	struct kvm_stats stats;		/* the kernel's side of the exits */
};

enum machine_run_state {
	MACHINE_RUNNING,
	MACHINE_PAUSED,
	MACHINE_HELD,		/* a reset or fatal error waits for the host */
	MACHINE_STOPPING,	/* vCPU threads are leaving for good */
};

struct machine {
	struct machine_host host;
	int kvm_fd;
	int vm_fd;

	struct boot_mem mem;
	uint8_t *high;		/* RAM above 4 GiB, or NULL */

	struct iobus pio;
	struct iobus mmio;
	struct vdev uart;
	struct vdev rtc;
	struct vdev i8042;
	struct vdev port80;

	unsigned int nvcpus;
	struct vcpu *vcpus;

	/* Run control, shared with the vCPU threads. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum machine_run_state state;
	unsigned int vcpus_parked;	/* threads waiting while paused */
	unsigned int vcpus_exited;
	bool held_reported;
};

/*
 * Build the machine and load the kernel; vCPUs do not run yet.  On
 * failure returns -errno with a reason in err: -ENOEXEC/-EINVAL and
 * friends for a bad kernel or definition, other values for host errors.
 */
int machine_new(struct machine **out, const struct machine_config *cfg,
    const struct machine_host *host, char *err, size_t errlen);
/* Stops the vCPU threads if any, then releases everything.  NULL is fine. */
void machine_free(struct machine *m);

int machine_start(struct machine *m);
/* Pausing waits for every vCPU to leave KVM_RUN (a matter of microseconds). */
void machine_pause(struct machine *m);
void machine_resume(struct machine *m);
/* A vCPU's registers, for diagnostics; -EBUSY unless paused. */
int machine_get_vcpu_regs(struct machine *m, unsigned int index,
    struct kvm_regs *regs, struct kvm_sregs *sregs);

/* Host-side device input; each takes the device's lock. */
size_t machine_console_input(struct machine *m, const uint8_t *buf,
    size_t len);
int machine_ctrl_alt_del(struct machine *m);

/* Device and interrupt-controller state, for diagnostics (vm.info). */
struct machine_diag {
	struct uart_state com1;
	bool ioapic_valid;
	uint32_t ioapic_irr;
	uint64_t ioapic_redir[BOOT_IOAPIC_PINS];
};
void machine_get_diag(struct machine *m, struct machine_diag *d);

/* Exposed for vcpu.c. */
int vcpu_init(struct vcpu *v, struct machine *m, unsigned int index,
    const struct boot_cpu *boot, char *err, size_t errlen);
void vcpu_destroy(struct vcpu *v);
int vcpu_start(struct vcpu *v);
void vcpu_kick(struct vcpu *v);
int vcpu_get_regs(struct vcpu *v, struct kvm_regs *regs,
    struct kvm_sregs *sregs);
int cpuid_setup(struct vcpu *v, unsigned int nvcpus);
/*
 * Called from a vCPU thread: stop every vCPU and hand the machine to the
 * host (reset or fatal).  Only the first caller reaches the host.
 */
void machine_hold(struct machine *m, enum machine_reset_reason why,
    const char *fatal);

#endif
