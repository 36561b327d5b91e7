/*
 * Live migration of the reference guest over SSH (the linux suite's
 * migrate step).  Two vmmd in two network namespaces: the scenarios'
 * own (the source, where the guest boots) and a second one (the
 * target), joined by a veth pair, with an sshd of the test's (Debian's
 * binary, carried into the test host: its host key, an authorized key
 * and a configuration of the test's own) listening in the target's.
 * Each namespace has a TAP named LN_TAP with the same host address and
 * the same MAC, as two hosts on one link: the target's made beforehand
 * (persistent), so that it is up when the guest arrives.
 *
 * The guest, on a raw disk both vmmd see at the same path, writes
 * numbered lines to a file on ext2 and pings the host, while `vmctl
 * migrate NAME --to ssh://root@ADDR/SOCKET --watch` moves it (VMCTL_SSH
 * gives ssh the test's configuration; sshd runs this build's vmctl
 * first in PATH).  Then, on the target: the shell answers, the ping
 * lost few replies and goes on, the file is whole (no gap, no repeat),
 * the guest's date did not go backwards; rounds, pages and downtime
 * are printed.
 */
#ifndef LMIGRATE_H
#define LMIGRATE_H

#include <stdbool.h>

#include "lguest.h"

/* The guest's card's MAC, and the hosts' side's, in both namespaces. */
#define LM_GUEST_MAC	"02:00:00:00:00:2f"
#define LM_HOST_MAC	"02:00:00:00:01:01"

/* The target's namespace: its vmmd, sshd and what they need. */
struct lm_far {
	int		 ns_here;	/* the scenarios' namespace, or -1 */
	int		 ns_far;	/* the target's, or -1 */
	struct h_daemon	*d;		/* its vmmd */
	struct h_conn	*c;
	struct h_proc	 sshd;		/* its stderr: its log (-e) */
	bool		 sshd_run;
	char		 dir[64];	/* keys, configurations */
};

/*
 * What the step needs and this host lacks (sshd, ssh, ssh-keygen, the
 * sshd user), as a reason to skip, or NULL.
 */
const char	*lm_missing(void);
/*
 * The target's side, from the scenarios' namespace (vmmd running there
 * already): whether it is all up (the checks say what failed).
 */
bool		 lm_far_start(struct lm_far *f, struct lg_vm *vm,
		    lg_check_fn check);
/* Its sshd stopped (its log shown when failed), its files removed. */
void		 lm_far_stop(struct lm_far *f, bool failed);
/*
 * The migration of vm (booted on the source, its disk vda empty, its
 * card on LN_TAP) to f, and the checks on the target; vm then is the
 * target's.  Whether it got through.
 */
bool		 lm_check_migrate(struct lg_vm *vm, lg_check_fn check,
		    struct lm_far *f);

#endif
