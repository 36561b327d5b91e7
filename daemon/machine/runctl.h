/*
 * Run control: whether a machine's vCPUs may run, and the handshake that
 * stops them (pause, hold for a reset or a fatal error, stop for good).
 *
 * The machine owns one struct runctl; each vCPU thread uses it, and it
 * knows the vCPUs only as kick targets (their kvm_run and thread), so
 * the vCPU code depends on it and not the other way round.
 *
 * Kicking: the controller sets the state and run->immediate_exit under
 * its lock, then sends SIGUSR1: a vCPU inside KVM_RUN leaves it with
 * EINTR, one about to enter returns at once because of immediate_exit,
 * and either way it then sees the new state under the lock.
 * immediate_exit is cleared only under that lock.
 */
#ifndef VMMD_RUNCTL_H
#define VMMD_RUNCTL_H

#include <pthread.h>
#include <stdbool.h>
#include <linux/kvm.h>

/* Why a machine was held for its host to deal with. */
enum machine_reset_reason {
	MACHINE_RESET_DEVICE,		/* a device's reset line (the i8042) */
	MACHINE_RESET_TRIPLE_FAULT,	/* KVM_EXIT_SHUTDOWN */
	MACHINE_RESET_SYSTEM_EVENT,	/* KVM_EXIT_SYSTEM_EVENT reset */
	MACHINE_POWEROFF,		/* a power-off, from KVM or a device */
};

enum runctl_state {
	RUNCTL_RUNNING,
	RUNCTL_PAUSED,
	RUNCTL_HELD,		/* a reset or fatal error waits for the host */
	RUNCTL_STOPPING,	/* vCPU threads are leaving for good */
};

/* What the controller needs of one vCPU to stop it. */
struct runctl_vcpu {
	struct kvm_run *run;		/* NULL until mapped */
	pthread_t thread;
	bool thread_started;
};

/*
 * The first hold reaches the host, once: reason, the name of what asked
 * (a device's board name, or NULL) and a fatal error text (NULL for a
 * reset or power-off).  Called on the thread that held the machine,
 * without the controller's lock; must not block.
 */
typedef void (*runctl_hold_fn)(void *opaque, enum machine_reset_reason why,
    const char *source, const char *fatal);

struct runctl {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum runctl_state state;	/* set under lock, read atomically */
	unsigned int parked;		/* threads waiting while paused */
	unsigned int exited;
	bool held_reported;
	struct runctl_vcpu **vcpus;	/* kick targets, by vCPU index */
	unsigned int nvcpus;
	runctl_hold_fn hold;
	void *opaque;
};

int	runctl_init(struct runctl *rc, unsigned int nvcpus, runctl_hold_fn hold,
	    void *opaque);
void	runctl_destroy(struct runctl *rc);
/* Register vCPU index's kick target (before its thread starts). */
void	runctl_attach(struct runctl *rc, unsigned int index,
	    struct runctl_vcpu *v);

/* --- the vCPU side --------------------------------------------------- */

/* The run loop's lock-free check: still running? */
static inline bool
runctl_running(struct runctl *rc)
{
	return __atomic_load_n(&rc->state, __ATOMIC_ACQUIRE) == RUNCTL_RUNNING;
}
/* Park while paused or held; false when the thread must leave. */
bool	runctl_wait_runnable(struct runctl *rc, struct runctl_vcpu *v);
/* The vCPU's thread is about to return. */
void	runctl_vcpu_exited(struct runctl *rc);

/* --- the host side --------------------------------------------------- */

/* Waits until every started vCPU is out of KVM_RUN (microseconds). */
void	runctl_pause(struct runctl *rc);
void	runctl_resume(struct runctl *rc);
/* Stop every vCPU and report to the host once (see runctl_hold_fn). */
void	runctl_hold(struct runctl *rc, enum machine_reset_reason why,
	    const char *source, const char *fatal);
/* Make every vCPU thread leave, and join them. */
void	runctl_stop(struct runctl *rc);
/*
 * Run fn(arg) under the lock if the machine is paused (the vCPU threads
 * are parked outside KVM_RUN, so vCPU ioctls answer at once); -EBUSY
 * otherwise.
 */
int	runctl_while_paused(struct runctl *rc, int (*fn)(void *arg), void *arg);

#endif
