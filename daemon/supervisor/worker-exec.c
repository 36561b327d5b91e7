/*
 * A worker's process between fork and exec (see worker-exec.h).
 */
#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "worker-exec.h"
#include "worker-fds.h"

void
wexec_child(int sock, int adopt, int report, const int *passed,
    unsigned int npassed, const char *path, char *const argv[])
{
	/* src[i] becomes WLINK_CHANNEL_FD + i: the table's order. */
	static_assert(WLINK_ADOPT_FD == WLINK_CHANNEL_FD + 1 &&
	    WLINK_REPORT_FD == WLINK_CHANNEL_FD + 2 &&
	    WLINK_KVM_FD == WLINK_CHANNEL_FD + 3 &&
	    WLINK_SLOT(WLINK_KERNEL_FD) < WLINK_MAX_PASSED &&
	    WLINK_SLOT(WLINK_INITRD_FD) < WLINK_MAX_PASSED &&
	    WLINK_SLOT(WLINK_TAP_FD(0)) < WLINK_MAX_PASSED &&
	    WLINK_TAP_FD(1) == WLINK_BACKING_FD(WLINK_MAX_BACKING) &&
	    WLINK_SLOT(WLINK_VSOCK_FD) < WLINK_MAX_PASSED &&
	    WLINK_SLOT(WLINK_DISK_FD(0)) < WLINK_MAX_PASSED,
	    "worker-link.h's descriptor table is out of order");
	int src[3 + WLINK_MAX_PASSED], fd, sig, i, n;
	sigset_t none;

	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);	/* SIGPIPE was ignored, for one */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	n = 0;
	src[n++] = sock;
	src[n++] = adopt;
	src[n++] = report;
	for (i = 0; i < (int)npassed; i++)
		src[n++] = passed[i];
	/* First out of the way of every target: a dup2() onto a target
	 * must not close a source still to be moved. */
	for (i = 0; i < n; i++)
		if (src[i] >= 0 && src[i] < WLINK_CHANNEL_FD + n &&
		    (src[i] = fcntl(src[i], F_DUPFD_CLOEXEC,
		    WLINK_CHANNEL_FD + n)) < 0)
			_exit(127);
	for (i = 0; i < n; i++) {
		if (src[i] < 0)		/* a gap in the table stays empty */
			close(WLINK_CHANNEL_FD + i);
		else if (dup2(src[i], WLINK_CHANNEL_FD + i) < 0)
			_exit(127);	/* (dup2 clears CLOEXEC) */
	}
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(127);
	for (i = STDIN_FILENO; i <= STDERR_FILENO; i++) {
		if (i == fd)	/* that stream was closed: it is this one */
			fcntl(i, F_SETFD, 0);
		else if ((i == STDIN_FILENO || fcntl(i, F_GETFD) < 0) &&
		    dup2(fd, i) < 0)
			_exit(127);
	}
	/* Descriptors vmmd itself inherited without CLOEXEC stay here. */
	close_range(WLINK_CHANNEL_FD + n, ~0U, 0);
	execv(path, argv);
	_exit(127);
}
