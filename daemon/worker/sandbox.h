/*
 * The worker's sandbox: what a worker may still do once its guest is set
 * up.  The KVM VM and its vCPUs exist, guest memory is mapped, the
 * console log, the display's sockets and /dev/kvm are open: from then on
 * the worker needs no privilege, no file name and only the system calls
 * of a running guest.  sandbox_enter() takes everything else away, for
 * good, from the calling process and every thread it starts later.
 *
 * Called on the loop's thread while it is the only thread (before the
 * first vCPU thread starts): capabilities, the bounding set and the
 * identity are per thread.
 */
#ifndef VMMD_SANDBOX_H
#define VMMD_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/types.h>

/*
 * A worker started as root and given no uid of its own: nobody, which
 * owns nothing a worker could reach (but is shared with whatever else
 * runs as nobody).
 */
#define SANDBOX_FALLBACK_ID	65534
/* Tasks past twice the guest's threads (see struct sandbox_config). */
#define SANDBOX_SPARE_TASKS	16

struct sandbox_config {
	/*
	 * Started as root: the uid, and the gid of the same number, that
	 * the worker becomes, one no other process runs as (the supervisor
	 * hands out one per guest, vmmd.conf(5) worker_uids); 0: none was
	 * given, SANDBOX_FALLBACK_ID.  Ignored unless started as root.
	 */
	uid_t uid;
	/*
	 * The threads the guest runs at most (its loop, vCPUs, I/O
	 * threads).  With a uid of its own the worker's RLIMIT_NPROC,
	 * which counts the tasks of its real uid, becomes twice that plus
	 * SANDBOX_SPARE_TASKS: a joined thread still counts for a moment
	 * after pthread_join() returns, and a reset joins every vCPU thread
	 * and starts new ones at once.  0: no limit set.
	 */
	unsigned int threads;
	/*
	 * Read-only opens stay allowed: the display's web server reads
	 * noVNC's files when a viewer asks for them.  Otherwise no file
	 * can be opened at all (EACCES).
	 */
	bool read_files;
	/*
	 * New TCP connections stay allowed (socket() of AF_INET and
	 * AF_INET6, connect()): a guest with Ceph RBD disks, whose librbd
	 * connects to the cluster's daemons as it needs them.  Otherwise
	 * socket() and connect() fail with EACCES.
	 */
	bool network;
	/*
	 * Where a violation is told before the worker dies by SIGSYS
	 * (the supervisor's end of a pipe), or -1.  Standard error gets
	 * it too.
	 */
	int report_fd;
};

/*
 * Give up every privilege for good: the identity (root only: cfg->uid,
 * see struct sandbox_config), the bounding set, every capability
 * (ambient ones too) and, with no_new_privs, any way back through
 * exec.  What the worker does before it reads a byte of a guest's disk
 * (a disk image is the guest's to write): from then on nothing it parses
 * runs with more rights than the guest's own uid.  Files already open
 * stay usable; passt can still be started (as the same uid).  Calling
 * it again changes nothing.  0, or a negative errno with a reason in
 * err: the worker must not read the disks then.
 */
int	sandbox_drop_privileges(const struct sandbox_config *cfg, char *err,
	    size_t errlen);

/*
 * sandbox_drop_privileges() if not done yet, the task limit and the
 * guest's system call filter.  0, or a negative errno with a reason in
 * err: the worker must not run a guest then.
 */
int	sandbox_enter(const struct sandbox_config *cfg, char *err,
	    size_t errlen);

/*
 * The disk reader's filter (disk-reader.h), in a process that has
 * dropped its privileges already: reading and writing descriptors it
 * has, memory, memory files, and questions about itself; no file by
 * name, no socket, no new process or thread, no signal but to itself.
 * A forbidden call kills the process by SIGSYS after naming it on
 * standard error.  0, or a negative errno with a reason in err.
 */
int	sandbox_enter_reader(char *err, size_t errlen);

/* How confined the calling thread is, as the kernel says. */
struct sandbox_facts {
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	unsigned long long cap_eff, cap_prm;	/* capget(); ~0: unknown */
	int no_new_privs;		/* prctl(PR_GET_NO_NEW_PRIVS) */
	int seccomp;			/* prctl(PR_GET_SECCOMP): 2, a filter */
};

/* Ask: only calls every filter here allows. */
void	sandbox_look(struct sandbox_facts *f);

/* Whether this is a sanitizer build (whose shadow memory no address
 * space limit leaves room for). */
bool	sandbox_sanitized_build(void);

/* The number of the system call called name, or -ENOENT. */
int	sandbox_syscall_number(const char *name);

/*
 * Leave a sandboxed process with status.  exit(), except in sanitizer
 * builds, whose LeakSanitizer check at exit cannot run sandboxed and is
 * skipped (AddressSanitizer and UBSan still report as errors happen).
 */
void	sandbox_exit(int status) __attribute__((noreturn));

#endif
