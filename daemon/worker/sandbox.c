/*
 * The worker's sandbox (see sandbox.h).
 *
 * The system call filter is sandbox-rules.c's, compiled into classic
 * BPF when vmmd is built (sandbox-gen.c writes sandbox-filters.h): a
 * worker loads it as it is, with only its own pid written in, and
 * neither links libseccomp nor builds anything at each start.
 *
 * The SIGSYS handler runs on whichever thread made the call, often a
 * vCPU thread: it uses only async-signal-safe calls, and the names it
 * prints come from the table the build made.  The report descriptor is
 * the only state of this file; it is set once, before the filter
 * exists, and only read afterwards.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "log.h"
#include "sandbox.h"
#include "sandbox-filters.h"

/* The filter allows the sanitizers' runtime: this is their build. */
static const bool sandbox_sanitized = SANDBOX_FILTER_SANITIZED;

static int sandbox_report_fd = -1;

/* --- the violation report (a signal handler: async-signal-safe only) --- */

static size_t
sandbox_append(char *buf, size_t at, size_t len, const char *s)
{
	while (*s != '\0' && at + 1 < len)
		buf[at++] = *s++;
	buf[at] = '\0';
	return at;
}

static size_t
sandbox_append_uint(char *buf, size_t at, size_t len, unsigned int v)
{
	char digits[12];
	int i = (int)sizeof(digits) - 1;

	digits[i] = '\0';
	do {
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0 && i > 0);
	return sandbox_append(buf, at, len, digits + i);
}

static void
sandbox_sigsys(int sig, siginfo_t *si, void *uctx)
{
	static const struct sigaction dfl = { .sa_handler = SIG_DFL };
	unsigned int nr = (unsigned int)si->si_syscall;
	char name[48], line[128];
	size_t n;

	(void)uctx;
	if (nr < SANDBOX_NAMES && sandbox_names[nr] != NULL)
		n = sandbox_append(name, 0, sizeof(name), sandbox_names[nr]);
	else
		n = sandbox_append_uint(name, sandbox_append(name, 0,
		    sizeof(name), "#"), sizeof(name), nr);
	if (sandbox_report_fd >= 0)
		(void)!write(sandbox_report_fd, name, n);
	n = sandbox_append(line, 0, sizeof(line),
	    "vmmd-worker: sandbox: forbidden system call ");
	n = sandbox_append(line, n, sizeof(line), name);
	n = sandbox_append(line, n, sizeof(line), ", dying by SIGSYS\n");
	(void)!write(STDERR_FILENO, line, n);
	/* Pending until the handler returns, when the default action (a
	 * core dump, without guest memory) ends every thread. */
	sigaction(sig, &dfl, NULL);
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static int
sandbox_handler_install(int report_fd)
{
	struct sigaction sa = {
		.sa_sigaction = sandbox_sigsys,
		.sa_flags = SA_SIGINFO,
	};
	sandbox_report_fd = report_fd;
	sigfillset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL) < 0 ? -errno : 0;
}

/* --- identity and capabilities ----------------------------------------- */

/*
 * The tasks of our uid, counted by the kernel against RLIMIT_NPROC:
 * only with a uid of our own, where they are this worker's threads and
 * nothing else's.  prlimit(), whose system call the unit's filter
 * allows (setrlimit(2)'s is in the ~@resources it refuses); lowering a
 * limit needs no privilege.
 */
static int
sandbox_limit_tasks(const struct sandbox_config *cfg, char *err,
    size_t errlen)
{
	struct rlimit rl;

	if (cfg->uid == 0 || cfg->threads == 0)
		return 0;
	rl.rlim_cur = rl.rlim_max = 2 * (rlim_t)cfg->threads +
	    SANDBOX_SPARE_TASKS;
	if (prlimit(0, RLIMIT_NPROC, &rl, NULL) < 0) {
		snprintf(err, errlen, "sandbox: limiting the guest's tasks to "
		    "%llu: %s", (unsigned long long)rl.rlim_max,
		    strerror(errno));
		return -errno;
	}
	return 0;
}

static int
sandbox_drop_identity(const struct sandbox_config *cfg, char *err,
    size_t errlen)
{
	uid_t uid = cfg->uid != 0 ? cfg->uid : SANDBOX_FALLBACK_ID;
	/* What getres*id() report; -1 where a failed call filled nothing. */
	uid_t ruid = (uid_t)-1, euid = (uid_t)-1, suid = (uid_t)-1;
	gid_t gid = (gid_t)uid, rgid = (gid_t)-1, egid = (gid_t)-1;
	gid_t sgid = (gid_t)-1;
	int cap, r;

	if (geteuid() != 0)
		return 0;	/* an ordinary user's worker: nothing to give up */
	if (cfg->uid == 0)
		log_warn("sandbox: no uid of its own given: running the guest "
		    "as uid %u, shared with other processes",
		    (unsigned int)uid);
	/*
	 * The bounding set, while we may (CAP_SETPCAP): each capability
	 * the kernel knows, one call each, until it knows no more
	 * (EINVAL); dropping one that is not there succeeds.
	 */
	for (cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; cap++)
		;
	if (errno != EINVAL || cap == 0) {
		r = errno != EINVAL ? -errno : -EPERM;
		snprintf(err, errlen, "sandbox: dropping capability %d from "
		    "the bounding set: %s", cap, strerror(-r));
		return r;
	}
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(uid, uid, uid) < 0) {
		snprintf(err, errlen, "sandbox: becoming uid %u gid %u: %s",
		    (unsigned int)uid, (unsigned int)gid, strerror(errno));
		return -errno;
	}
	if (getresuid(&ruid, &euid, &suid) < 0 || ruid != uid ||
	    euid != uid || suid != uid || getresgid(&rgid, &egid,
	    &sgid) < 0 || rgid != gid || egid != gid || sgid != gid) {
		snprintf(err, errlen, "sandbox: still uid %u gid %u after "
		    "setresuid", (unsigned int)euid, (unsigned int)egid);
		return -EPERM;
	}
	return 0;
}

/* No capability left, whoever we run as (file or ambient ones too). */
static int
sandbox_drop_caps(char *err, size_t errlen)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	/* EINVAL: a kernel without ambient capabilities has none. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL) {
		snprintf(err, errlen, "sandbox: clearing ambient "
		    "capabilities: %s", strerror(errno));
		return -errno;
	}
	if (syscall(SYS_capset, &hdr, data) < 0) {
		snprintf(err, errlen, "sandbox: capset: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* --- the filter --------------------------------------------------------- */

/*
 * The filter the build made for this worker, with its pid written in
 * (signals to itself only), on every thread (TSYNC: there is one).
 */
static int
sandbox_filter_load(const struct sandbox_filter *f, char *err,
    size_t errlen)
{
	struct sock_filter prog[SANDBOX_FILTER_MAX];
	struct sock_fprog fprog = { .len = (unsigned short)f->len,
	    .filter = prog };

	memcpy(prog, f->insns, f->len * sizeof(prog[0]));
	prog[f->pid_at].k = (uint32_t)getpid();
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0) {
		int r = -errno;

		snprintf(err, errlen, "sandbox: loading the filter: %s",
		    strerror(-r));
		return r;
	}
	return 0;
}

void
sandbox_look(struct sandbox_facts *f)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	getresuid(&f->ruid, &f->euid, &f->suid);
	getresgid(&f->rgid, &f->egid, &f->sgid);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) == 0) {
		f->cap_eff = data[0].effective |
		    (unsigned long long)data[1].effective << 32;
		f->cap_prm = data[0].permitted |
		    (unsigned long long)data[1].permitted << 32;
	} else
		f->cap_eff = f->cap_prm = ~0ULL;
	f->no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	f->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
}

int
sandbox_syscall_number(const char *name)
{
	for (int nr = 0; nr < SANDBOX_NAMES; nr++)
		if (sandbox_names[nr] != NULL &&
		    strcmp(sandbox_names[nr], name) == 0)
			return nr;
	return -ENOENT;
}

/* No way back to more rights through exec, from now on. */
static int
sandbox_no_new_privs(char *err, size_t errlen)
{
	int r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		snprintf(err, errlen, "sandbox: no_new_privs: %s",
		    strerror(-r));
		return r;
	}
	return 0;
}

int
sandbox_drop_privileges(const struct sandbox_config *cfg, char *err,
    size_t errlen)
{
	int r;

	r = sandbox_drop_identity(cfg, err, errlen);
	if (r < 0)
		return r;
	r = sandbox_drop_caps(err, errlen);
	if (r < 0)
		return r;
	return sandbox_no_new_privs(err, errlen);
}

static int
sandbox_install(int report_fd, char *err, size_t errlen)
{
	int r = sandbox_handler_install(report_fd);

	if (r < 0)
		snprintf(err, errlen, "sandbox: SIGSYS handler: %s",
		    strerror(-r));
	return r;
}

int
sandbox_enter(const struct sandbox_config *cfg, char *err, size_t errlen)
{
	int r;

	if ((r = sandbox_install(cfg->report_fd, err, errlen)) < 0 ||
	    (r = sandbox_drop_privileges(cfg, err, errlen)) < 0 ||
	    (r = sandbox_limit_tasks(cfg, err, errlen)) < 0)
		return r;
	if (cfg->network)
		return sandbox_filter_load(cfg->read_files ?
		    &sandbox_filter_net_read_files : &sandbox_filter_net, err,
		    errlen);
	return sandbox_filter_load(cfg->read_files ?
	    &sandbox_filter_read_files : &sandbox_filter_plain, err, errlen);
}

int
sandbox_enter_reader(char *err, size_t errlen)
{
	int r;

	/* A reader's death is its parent's to report, not the
	 * supervisor's: nothing goes to the report descriptor. */
	if ((r = sandbox_install(-1, err, errlen)) < 0 ||
	    (r = sandbox_no_new_privs(err, errlen)) < 0)
		return r;
	return sandbox_filter_load(&sandbox_filter_reader, err, errlen);
}

bool
sandbox_sanitized_build(void)
{
	return sandbox_sanitized;
}

void
sandbox_exit(int status)
{
	if (sandbox_sanitized) {
		/* No leak check: it would die on the filter. */
		fflush(NULL);
		_exit(status);
	}
	exit(status);
}
