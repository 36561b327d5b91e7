/*
 * The worker's system call filter as rules (see sandbox-rules.h).
 *
 * The filter is an allow-list: anything not named below raises SIGSYS
 * (SCMP_ACT_TRAP), whose handler (sandbox.c) names the call on standard
 * error and to the supervisor, then lets the signal kill the worker, so
 * that vmmd reports the VM crashed with the call named.  Only the calls
 * that name files or reach new sockets (open, socket, connect) fail
 * with EACCES instead: libraries may try them opportunistically (a
 * syslog reconnect), and a refusal is what they expect then.
 *
 * The list is organised by purpose, one table per purpose: whoever adds
 * a device that needs a new call adds it to the table it belongs to and
 * says why there.  Calls whose arguments decide (ioctl, fcntl, clone,
 * the ones that take a descriptor which must not be a standard stream)
 * are in sandbox_add_conditional().
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <linux/sockios.h>
#include <linux/userfaultfd.h>
#include <linux/vhost.h>

#include "sandbox-rules.h"

/* The clone() flags that would make new namespaces. */
#define SANDBOX_CLONE_NS	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | \
	CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)

/* --- the allow-list, by purpose ---------------------------------------- */

/* Memory: malloc, thread stacks, guest RAM (rebuilt at each reset);
 * mmap() is conditional (sandbox_fd_calls[]). */
static const int sandbox_memory[] = {
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(mprotect), SCMP_SYS(madvise),
};

/* Threads: vCPU threads come and go with each machine (clone() is
 * conditional: threads only); their locks, the kick signal (SIGUSR1)
 * that interrupts KVM_RUN. */
static const int sandbox_threads[] = {
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(futex),
	SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq), SCMP_SYS(gettid), SCMP_SYS(getpid),
	SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
	SCMP_SYS(restart_syscall),
};

/* Questions about who we are: logging, libraries, how confined we are
 * (sandbox_look()).  They change nothing. */
static const int sandbox_identity[] = {
	SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
	SCMP_SYS(getegid), SCMP_SYS(getresuid), SCMP_SYS(getresgid),
	SCMP_SYS(getppid), SCMP_SYS(uname), SCMP_SYS(getrlimit),
	SCMP_SYS(getrusage), SCMP_SYS(sysinfo), SCMP_SYS(capget),
};

/* The disk reader a guest booting from its disk waits for while it
 * sets up (disk-reader.c): by the pidfd made before the filter, which
 * reaches that child and nothing else. */
static const int sandbox_children[] = {
	SCMP_SYS(waitid), SCMP_SYS(pidfd_send_signal),
};

/* Time: the VM clock, device timers, libevent's clock. */
static const int sandbox_time[] = {
	SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday), SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep),
};

/* The event loop (libevent: epoll, its wake-up fd), the display's
 * select() on libvncserver's sockets, screenshots into a memfd. */
static const int sandbox_loop[] = {
	SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_pwait2), SCMP_SYS(poll),
	SCMP_SYS(ppoll), SCMP_SYS(select), SCMP_SYS(pselect6),
	SCMP_SYS(pipe2), SCMP_SYS(memfd_create),
};

/* Devices: the virtio doorbells' eventfds, made whenever a driver
 * enables a queue (devhost.c, KVM_IOEVENTFD; KVM_IRQFD takes them too),
 * virtio-rng's entropy, and the device timers' timerfd (devhost.c: made
 * with each machine, at every guest reset too; re-armed from the loop
 * and the vCPUs). */
static const int sandbox_devices[] = {
	SCMP_SYS(eventfd2), SCMP_SYS(getrandom),
	SCMP_SYS(timerfd_create), SCMP_SYS(timerfd_settime),
};

/* Descriptors already open: the link, consoles, the log and its old
 * copy, kernel and initrd (read again at each reset), KVM's statistics,
 * memfds, the TAP (frames in by read, out by writev: net-tap.c).  What
 * writes elsewhere than at the end, or moves the offset, is conditional
 * (sandbox_fd_calls[]), and so is fcntl(). */
static const int sandbox_fds[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(close), SCMP_SYS(fstat),
	SCMP_SYS(dup), SCMP_SYS(dup3),	/* newfstatat, statx: sandbox_add_stat() */
};

/* Disks: the I/O threads (blk-file.c) on the descriptors vmmd passed;
 * pwritev() and fallocate() are conditional (sandbox_fd_calls[]). */
static const int sandbox_disks[] = {
	SCMP_SYS(preadv), SCMP_SYS(fdatasync),
};

/* Sockets already bound or connected: the supervisor's (SCM_RIGHTS),
 * the next supervisor accepted on the adoption socket (relink.c, which
 * checks its SO_PEERCRED), console clients, VNC viewers accepted on the
 * display's listeners, syslog. */
static const int sandbox_sockets[] = {
	SCMP_SYS(accept), SCMP_SYS(accept4), SCMP_SYS(recvfrom),
	SCMP_SYS(recvmsg), SCMP_SYS(sendto), SCMP_SYS(sendmsg),
	SCMP_SYS(shutdown), SCMP_SYS(getsockopt), SCMP_SYS(setsockopt),
	SCMP_SYS(getsockname), SCMP_SYS(getpeername),
	/* A connected pair reaches nothing: the display hands each new
	 * viewer to libvncserver on one (vnc.c). */
	SCMP_SYS(socketpair),
};

/*
 * The sanitizers' runtime, in ASan builds only (the kvm suite runs one):
 * its error reports read /proc/self and the binary to symbolize.  Never
 * in a build that ships.  LeakSanitizer's exit check cannot run
 * sandboxed at all (its tracer attaches to every thread): see
 * sandbox_exit().
 */
#ifdef SANDBOX_SANITIZERS
static const int sandbox_sanitizers[] = {
	SCMP_SYS(prctl), SCMP_SYS(getdents64), SCMP_SYS(readlink),
	SCMP_SYS(readlinkat), SCMP_SYS(pipe), SCMP_SYS(sigaltstack),
	SCMP_SYS(openat),
	SCMP_SYS(open),		/* their internal_open() on x86-64 */
};
#else
static const int sandbox_sanitizers[] = { -1 };
#endif

/* Files read on demand: noVNC's, by the display's web server. */
static const int sandbox_read_files[] = {
	SCMP_SYS(getdents64),
};

/*
 * ioctl: by the type byte of the request (_IOC_TYPE), plus a few
 * exact requests.  KVM's (0xAE) cover the system, VM and vCPU
 * descriptors, KVM_IRQFD, KVM_IOEVENTFD, KVM_SET_GSI_ROUTING, the PCI
 * devices' KVM_SIGNAL_MSI and KVM_GET_STATS_FD.  The TAP's type ('T')
 * is the terminals' too and holds TUNSETIFF: only the exact requests.
 */
static const unsigned long sandbox_ioctl_types[] = {
	KVMIO,		/* /dev/kvm, the VM, the vCPUs */
	UFFDIO,		/* the display's write-protect tracking */
};
static const unsigned long sandbox_ioctls[] = {
	FIONREAD,	/* the link: how much came with a descriptor; the
			   display: what libvncserver left unread (vnc.c) */
	FIONBIO,	/* libvncserver makes sockets non-blocking */
	SIOCOUTQ,	/* the display: a viewer's unsent bytes */
	TCGETS,		/* isatty() in stdio and libraries: ENOTTY */
	TUNSETOFFLOAD,	/* the TAP: the offloads virtio-net's driver took
			   (TUNGETIFF and TUNSETVNETHDRSZ come before) */
	/* vhost-vsock, as each machine's driver starts and stops it
	 * (vhost-vsock.c; VHOST_SET_OWNER and the CID come before) */
	VHOST_SET_FEATURES, VHOST_SET_MEM_TABLE, VHOST_SET_VRING_NUM,
	VHOST_SET_VRING_BASE, VHOST_GET_VRING_BASE, VHOST_SET_VRING_ADDR,
	VHOST_SET_VRING_KICK, VHOST_SET_VRING_CALL, VHOST_VSOCK_SET_RUNNING,
};

/*
 * fcntl: only these commands.  Not F_SETOWN, F_SETOWN_EX, F_SETSIG, nor
 * F_SETFL with O_ASYNC: together they make the kernel send a signal of
 * the caller's choice (SIGKILL too) to any process its uid may signal,
 * whenever the descriptor becomes ready.  Not the locks either: a
 * worker's disk shares its open file with the supervisor's, whose OFD
 * lock keeps other VMs off the image (F_OFD_SETLK with F_UNLCK would
 * drop it).  What uses them: libevent and libvncserver make sockets
 * non-blocking and close-on-exec, kvm.c marks KVM's descriptors
 * close-on-exec, machine.c duplicates /dev/kvm for each machine,
 * net-tap.c makes the TAP non-blocking.
 */
static const unsigned long sandbox_fcntls[] = {
	F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC,
	F_SETFL,	/* without O_ASYNC: sandbox_add_conditional() */
	F_ADD_SEALS,	/* the disk reader's memory files, sealed */
};

/*
 * Calls that change a file elsewhere than at its end, or move its
 * offset: allowed on every descriptor but the standard streams, which
 * the worker inherited from vmmd and shares with it (vmmd's log file,
 * when it is one, opened for appending: a worker may add lines to it,
 * never overwrite or truncate them).  arg is the descriptor's argument.
 * What uses them: the disks' I/O threads (pwritev, fallocate), the
 * console log's rotation (ftruncate, copy_file_range, pwrite: console.c),
 * screenshots in a memfd (lseek), guest RAM, thread stacks and KVM's
 * vCPU structures (mmap, whose anonymous mappings pass -1).
 */
static const struct {
	int nr;
	unsigned int arg;
} sandbox_fd_calls[] = {
	{ SCMP_SYS(pwrite64), 0 },
	{ SCMP_SYS(pwritev), 0 },
	{ SCMP_SYS(ftruncate), 0 },
	{ SCMP_SYS(fallocate), 0 },
	{ SCMP_SYS(copy_file_range), 2 },	/* the file written */
	{ SCMP_SYS(lseek), 0 },
	{ SCMP_SYS(mmap), 4 },
};

/* The clone() flags of a thread, and those it must not have. */
#define SANDBOX_CLONE_THREAD	(CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
#define SANDBOX_CLONE_CHECKED	(SANDBOX_CLONE_THREAD | SANDBOX_CLONE_NS)

/*
 * Calls that fail with EACCES (see the top of the file): files by name
 * (access() is what libgcrypt asks when a VNC password is first
 * checked), new sockets.
 */
static const int sandbox_refused[] = {
	SCMP_SYS(open), SCMP_SYS(creat), SCMP_SYS(access),
	SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(stat),
	SCMP_SYS(lstat), SCMP_SYS(readlink), SCMP_SYS(readlinkat),
	SCMP_SYS(bind), SCMP_SYS(listen),
};

/* Refused too, unless the network is allowed (sandbox_add_network()). */
static const int sandbox_refused_net[] = {
	SCMP_SYS(socket), SCMP_SYS(connect),
};

static const struct {
	const char *purpose;
	const int *calls;
	size_t n;
} sandbox_tables[] = {
#define SANDBOX_TABLE(t)	{ #t, t, sizeof(t) / sizeof(t[0]) }
	SANDBOX_TABLE(sandbox_memory),
	SANDBOX_TABLE(sandbox_threads),
	SANDBOX_TABLE(sandbox_identity),
	SANDBOX_TABLE(sandbox_time),
	SANDBOX_TABLE(sandbox_loop),
	SANDBOX_TABLE(sandbox_devices),
	SANDBOX_TABLE(sandbox_fds),
	SANDBOX_TABLE(sandbox_disks),
	SANDBOX_TABLE(sandbox_sockets),
	SANDBOX_TABLE(sandbox_children),
#undef SANDBOX_TABLE
};

/*
 * The disk reader (disk-reader.c): libblkid, libext2fs, the FAT, GRUB
 * and BLS readers and the qcow2 layer under them, in a process of its
 * own that reads the disks' descriptors, copies what it probes into a
 * memory file (image-layout.c's sketch) and writes the kernel and initrd
 * into the memory files its parent made.  Questions about itself
 * (capget, prctl's PR_GET_*) let it say how confined it is.
 */
static const int sandbox_reader[] = {
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(mprotect), SCMP_SYS(madvise),
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(futex),
	SCMP_SYS(gettid), SCMP_SYS(getpid), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall),
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(preadv), SCMP_SYS(close),
	SCMP_SYS(fstat),	/* newfstatat, statx: sandbox_add_stat() */
	SCMP_SYS(memfd_create), SCMP_SYS(getrandom), SCMP_SYS(capget),
	SCMP_SYS(fadvise64),	/* libblkid, on its sketch */
};

/* What the reader may do to descriptors past the standard streams: its
 * sketch and the memory files it fills. */
static const int sandbox_reader_fd_calls[] = {
	SCMP_SYS(pwrite64), SCMP_SYS(pwritev), SCMP_SYS(ftruncate),
	SCMP_SYS(lseek),
};

/* --- the filter --------------------------------------------------------- */

static bool
sandbox_sanitizer_call(int nr)
{
	size_t i;

	for (i = 0; sandbox_sanitized && i < sizeof(sandbox_sanitizers) /
	    sizeof(sandbox_sanitizers[0]); i++)
		if (sandbox_sanitizers[i] == nr)
			return true;
	return false;
}

static int
sandbox_add_calls(scmp_filter_ctx ctx, uint32_t action, const int *calls,
    size_t n, const char *purpose, char *err, size_t errlen)
{
	size_t i;
	int r;

	for (i = 0; i < n; i++) {
		if (action != SCMP_ACT_ALLOW &&
		    sandbox_sanitizer_call(calls[i]))
			continue;	/* allowed instead */
		r = seccomp_rule_add(ctx, action, calls[i], 0);
		if (r < 0) {
			snprintf(err, errlen, "sandbox: %s: system call %d: "
			    "%s", purpose, calls[i], strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * fstat() as glibc makes it, newfstatat(fd, "", buf, AT_EMPTY_PATH),
 * and statx() of a descriptor likewise: allowed.  The same calls with
 * a path fail with EACCES, as open() does, so that a confined process
 * cannot even learn whether a file exists (by_name: allowed, for a
 * filter that may open files to read anyway, and the sanitizers'
 * runtime).
 */
static int
sandbox_add_stat(scmp_filter_ctx ctx, bool by_name, char *err,
    size_t errlen)
{
	/* Each call and the argument that holds its flags. */
	static const struct {
		int nr;
		unsigned int flags_arg;
	} calls[] = {
		{ SCMP_SYS(newfstatat), 3 },
		{ SCMP_SYS(statx), 2 },
	};
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < sizeof(calls) / sizeof(calls[0]); i++) {
		if (by_name || sandbox_sanitized) {
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i].nr,
			    0);
			continue;
		}
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i].nr, 1,
		    SCMP_CMP(calls[i].flags_arg, SCMP_CMP_MASKED_EQ,
		    AT_EMPTY_PATH, AT_EMPTY_PATH));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
			    calls[i].nr, 1, SCMP_CMP(calls[i].flags_arg,
			    SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0));
	}
	if (r < 0)
		snprintf(err, errlen, "sandbox: stat rule: %s", strerror(-r));
	return r;
}

/* The calls whose arguments decide. */
static int
sandbox_add_conditional(scmp_filter_ctx ctx, bool read_files,
    uint32_t self_pid, char *err, size_t errlen)
{
	const char *what = "ioctl";
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < sizeof(sandbox_ioctl_types) /
	    sizeof(sandbox_ioctl_types[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00,
		    sandbox_ioctl_types[i] << 8));
	for (i = 0; r == 0 && i < sizeof(sandbox_ioctls) /
	    sizeof(sandbox_ioctls[0]); i++)
		/* datum_b spelt out (unused by EQ): clang's
		 * -Wmissing-field-initializers sees the compound literal. */
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_EQ, sandbox_ioctls[i], 0));
	if (r == 0) {
		what = "fcntl";
		for (i = 0; r == 0 && i < sizeof(sandbox_fcntls) /
		    sizeof(sandbox_fcntls[0]); i++)
			r = sandbox_fcntls[i] == F_SETFL ?
			    seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
			    SCMP_SYS(fcntl), 2, SCMP_A1(SCMP_CMP_EQ, F_SETFL,
			    0), SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0)) :
			    seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
			    SCMP_SYS(fcntl), 1, SCMP_A1(SCMP_CMP_EQ,
			    sandbox_fcntls[i], 0));
	}
	/* Past the standard streams (an anonymous mmap() passes -1, which
	 * compares as the largest number). */
	for (i = 0; r == 0 && i < sizeof(sandbox_fd_calls) /
	    sizeof(sandbox_fd_calls[0]); i++) {
		what = "descriptor";
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    sandbox_fd_calls[i].nr, 1, SCMP_CMP(sandbox_fd_calls[i].arg,
		    SCMP_CMP_GT, STDERR_FILENO, 0));
	}
	/* Private mappings change no file, whatever they map (some code
	 * passes 0 with MAP_ANONYMOUS). */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
		    SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED, 0));
	/* What a pipe or terminal would answer: libc may ask where a
	 * standard stream stands, it cannot move it. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ESPIPE),
		    SCMP_SYS(lseek), 1, SCMP_A0(SCMP_CMP_LE, STDERR_FILENO,
		    0));
	/*
	 * Threads only: no new process (fork, vfork, a clone() without
	 * CLONE_THREAD), which would be one more task to bound and one
	 * the supervisor knows nothing of, and no new namespaces.
	 * clone3() takes its flags in memory the filter cannot read, so
	 * it fails with ENOSYS and glibc falls back to clone(), whose
	 * flags it checks.
	 */
	if (r == 0) {
		what = "clone";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
		    SCMP_SYS(clone3), 0);
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, SANDBOX_CLONE_CHECKED,
		    SANDBOX_CLONE_THREAD));
	/* Signals only to ourselves: a raise(), abort(), the vCPU kick,
	 * and the SIGSYS handler's own. */
	if (r == 0) {
		what = "tgkill";
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		    SCMP_A0(SCMP_CMP_EQ, self_pid, 0));
	}
	/* getrlimit() as glibc makes it: our own limits, read only. */
	if (r == 0) {
		what = "prlimit64";
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64),
		    2, SCMP_A0(SCMP_CMP_EQ, 0, 0),
		    SCMP_A2(SCMP_CMP_EQ, 0, 0));
	}
	if (sandbox_sanitized)
		goto out;	/* prctl and openat: sandbox_sanitizers[] */
	/* vCPU threads name themselves; how confined we are is asked. */
	if (r == 0) {
		what = "prctl";
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME, 0));
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SCMP_A0(SCMP_CMP_EQ, PR_GET_NO_NEW_PRIVS, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SCMP_A0(SCMP_CMP_EQ, PR_GET_SECCOMP, 0));
	/* openat: read-only with read_files, refused otherwise. */
	if (r == 0 && read_files) {
		what = "openat";
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT |
		    O_TRUNC, O_RDONLY));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
			    SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
			    O_ACCMODE, O_WRONLY));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
			    SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
			    O_ACCMODE, O_RDWR));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
			    SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
			    O_CREAT, O_CREAT));
		if (r == 0)
			r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW,
			    sandbox_read_files, sizeof(sandbox_read_files) /
			    sizeof(sandbox_read_files[0]), "read_files",
			    err, errlen);
	} else if (r == 0) {
		what = "openat";
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
		    SCMP_SYS(openat), 0);
	}
out:
	if (r < 0 && err[0] == '\0')
		snprintf(err, errlen, "sandbox: %s rule: %s", what,
		    strerror(-r));
	return r;
}

/*
 * A guest with Ceph RBD disks: librbd connects to monitors and OSDs as
 * it needs them, from its own threads, long after the sandbox closed in
 * (an OSD first addressed, a connection lost and made again), so the
 * supervisor cannot connect for it as it does for NBD.  What librbd
 * does on its sockets once they exist (sendmsg, read, recvmsg,
 * setsockopt, getsockname, shutdown, epoll) every worker may already;
 * what it adds is only this: TCP sockets of AF_INET and AF_INET6, and
 * connect().  Other socket families stay refused (EACCES), so no Unix
 * socket of the host (the supervisor's control socket, D-Bus, journald)
 * can be reached; bind and listen stay refused.  connect()'s address
 * is in memory the filter cannot read: the socket's family is what
 * bounds it.
 */
static int
sandbox_add_network(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	int r, fam;

	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
	    SCMP_A0(SCMP_CMP_EQ, AF_INET, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, AF_INET6, 0));
	/* Every other family, one rule each below and between them. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
		    SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_LT, AF_INET, 0));
	for (fam = AF_INET + 1; r == 0 && fam < AF_INET6; fam++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
		    SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ,
		    (scmp_datum_t)fam, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
		    SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GT, AF_INET6, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(connect), 0);
	/* Ceph's messenger makes its epoll sets the old way (as
	 * epoll_create1(0) does: nothing more). */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    SCMP_SYS(epoll_create), 0);
	if (r < 0)
		snprintf(err, errlen, "sandbox: network rule: %s",
		    strerror(-r));
	return r;
}

/* A new context that traps what it does not allow, or NULL. */
static scmp_filter_ctx
sandbox_ctx_new(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);

	err[0] = '\0';
	if (ctx == NULL)
		snprintf(err, errlen, "sandbox: seccomp_init failed");
	return ctx;
}

int
sandbox_rules_build_reader(scmp_filter_ctx *out, uint32_t self_pid,
    char *err, size_t errlen)
{
	scmp_filter_ctx ctx = sandbox_ctx_new(err, errlen);
	const char *what = "reader";
	size_t i;
	int r;

	if (ctx == NULL)
		return -ENOMEM;
	r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW, sandbox_reader,
	    sizeof(sandbox_reader) / sizeof(sandbox_reader[0]), what, err,
	    errlen);
	if (r == 0)
		r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW, sandbox_identity,
		    sizeof(sandbox_identity) / sizeof(sandbox_identity[0]),
		    what, err, errlen);
	if (r == 0)
		r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW, sandbox_time,
		    sizeof(sandbox_time) / sizeof(sandbox_time[0]), what, err,
		    errlen);
	if (r == 0 && sandbox_sanitized)
		r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW, sandbox_sanitizers,
		    sizeof(sandbox_sanitizers) / sizeof(sandbox_sanitizers[0]),
		    "sanitizers", err, errlen);
	/* No file by name, no socket: what a library tries and gets
	 * refused (as in the worker's filter). */
	if (r == 0)
		r = sandbox_add_calls(ctx, SCMP_ACT_ERRNO(EACCES),
		    sandbox_refused, sizeof(sandbox_refused) /
		    sizeof(sandbox_refused[0]), what, err, errlen);
	if (r == 0)
		r = sandbox_add_calls(ctx, SCMP_ACT_ERRNO(EACCES),
		    sandbox_refused_net, sizeof(sandbox_refused_net) /
		    sizeof(sandbox_refused_net[0]), what, err, errlen);
	if (r == 0 && !sandbox_sanitized)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES),
		    SCMP_SYS(openat), 0);
	if (r == 0)
		r = sandbox_add_stat(ctx, false, err, errlen);
	for (i = 0; r == 0 && i < sizeof(sandbox_reader_fd_calls) /
	    sizeof(sandbox_reader_fd_calls[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    sandbox_reader_fd_calls[i], 1, SCMP_A0(SCMP_CMP_GT,
		    STDERR_FILENO, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ESPIPE),
		    SCMP_SYS(lseek), 1, SCMP_A0(SCMP_CMP_LE, STDERR_FILENO,
		    0));
	/* Private mappings only: the sketch is read, never mapped shared. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
		    SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED, 0));
	/* isatty() and the like: no terminal here. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY),
		    SCMP_SYS(ioctl), 0);
	for (i = 0; r == 0 && i < sizeof(sandbox_fcntls) /
	    sizeof(sandbox_fcntls[0]); i++)
		if (sandbox_fcntls[i] != F_SETFL)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
			    SCMP_SYS(fcntl), 1, SCMP_A1(SCMP_CMP_EQ,
			    sandbox_fcntls[i], 0));
	/* Signals to itself only: abort(), the SIGSYS handler's own. */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		    SCMP_A0(SCMP_CMP_EQ, self_pid, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64),
		    2, SCMP_A0(SCMP_CMP_EQ, 0, 0),
		    SCMP_A2(SCMP_CMP_EQ, 0, 0));
	/* How confined it is, asked, never changed. */
	if (r == 0 && !sandbox_sanitized)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SCMP_A0(SCMP_CMP_EQ, PR_GET_NO_NEW_PRIVS, 0));
	if (r == 0 && !sandbox_sanitized)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SCMP_A0(SCMP_CMP_EQ, PR_GET_SECCOMP, 0));
	if (r < 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "sandbox: reader rule: %s",
			    strerror(-r));
		seccomp_release(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

int
sandbox_rules_build(scmp_filter_ctx *out, bool read_files, bool network,
    uint32_t self_pid, char *err, size_t errlen)
{
	scmp_filter_ctx ctx;
	size_t i;
	int r;

	if ((ctx = sandbox_ctx_new(err, errlen)) == NULL)
		return -ENOMEM;
	/* Every system call runs the filter: a binary search over the
	 * call numbers rather than a list, and KVM_RUN's ioctl first. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r == 0)
		r = seccomp_syscall_priority(ctx, SCMP_SYS(ioctl), 255);
	if (r < 0)
		snprintf(err, errlen, "sandbox: filter attributes: %s",
		    strerror(-r));
	for (i = 0; r == 0 && i < sizeof(sandbox_tables) /
	    sizeof(sandbox_tables[0]); i++)
		r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW,
		    sandbox_tables[i].calls, sandbox_tables[i].n,
		    sandbox_tables[i].purpose, err, errlen);
	if (r == 0 && sandbox_sanitized)
		r = sandbox_add_calls(ctx, SCMP_ACT_ALLOW, sandbox_sanitizers,
		    sizeof(sandbox_sanitizers) / sizeof(sandbox_sanitizers[0]),
		    "sanitizers", err, errlen);
	if (r == 0)
		r = sandbox_add_calls(ctx, SCMP_ACT_ERRNO(EACCES),
		    sandbox_refused, sizeof(sandbox_refused) /
		    sizeof(sandbox_refused[0]), "refused", err, errlen);
	if (r == 0 && network)
		r = sandbox_add_network(ctx, err, errlen);
	else if (r == 0)
		r = sandbox_add_calls(ctx, SCMP_ACT_ERRNO(EACCES),
		    sandbox_refused_net, sizeof(sandbox_refused_net) /
		    sizeof(sandbox_refused_net[0]), "refused", err, errlen);
	if (r == 0)
		r = sandbox_add_stat(ctx, read_files, err, errlen);
	if (r == 0)
		r = sandbox_add_conditional(ctx, read_files, self_pid, err,
		    errlen);
	if (r < 0) {
		seccomp_release(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}
