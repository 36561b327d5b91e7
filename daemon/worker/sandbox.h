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

/* The system user a worker started as root becomes (vmmd.8). */
#define SANDBOX_USER		"vmmd"
/* Without it: nobody, which owns nothing a worker could reach. */
#define SANDBOX_FALLBACK_ID	65534

struct sandbox_config {
	const char *user;	/* NULL: SANDBOX_USER */
	/*
	 * Read-only opens stay allowed: the display's web server reads
	 * noVNC's files when a viewer asks for them.  Otherwise no file
	 * can be opened at all (EACCES).
	 */
	bool read_files;
	/*
	 * Where a violation is told before the worker dies by SIGSYS
	 * (the supervisor's end of a pipe), or -1.  Standard error gets
	 * it too.
	 */
	int report_fd;
};

/*
 * Drop the identity (root only), every capability, the bounding set and
 * the ambient set, set no_new_privs and load the system call filter.
 * 0, or a negative errno with a reason in err: the worker must not run
 * a guest then.
 */
int	sandbox_enter(const struct sandbox_config *cfg, char *err,
	    size_t errlen);

/*
 * Leave a sandboxed process with status.  exit(), except in sanitizer
 * builds, whose LeakSanitizer check at exit cannot run sandboxed and is
 * skipped (AddressSanitizer and UBSan still report as errors happen).
 */
void	sandbox_exit(int status) __attribute__((noreturn));

#endif
