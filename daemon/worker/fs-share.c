/* See fs-share.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-share.h"

/* In the child: the share, and the socket it listens on. */
#define FS_SHARE_DIR_FD		3
#define FS_SHARE_LISTEN_FD	4
/* How long a server that cannot work takes to say so, at most. */
#define FS_SHARE_SETTLE_MS	300

/* Make the server's fds 3 and 4 from a and b (async-signal-safe). */
static int
fs_share_place(int a, int b)
{
	/* Out of the way first: b may be 3, a may be 4. */
	int ta = fcntl(a, F_DUPFD, 10), tb = fcntl(b, F_DUPFD, 10);

	if (ta < 0 || tb < 0 || dup2(ta, FS_SHARE_DIR_FD) < 0 ||
	    dup2(tb, FS_SHARE_LISTEN_FD) < 0)
		return -1;
	return 0;
}

/* The share bound read-only over itself, in a mount namespace the
 * child alone has (async-signal-safe). */
static int
fs_share_readonly(const char *dir)
{
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY,
	    NULL) < 0)
		return -1;
	return 0;
}

int
fs_share_start(const char *path, int dir_fd, bool readonly, int *sock,
    pid_t *pid, char *err, size_t errlen)
{
	char tmpl[] = "/tmp/vmmd-fs.XXXXXX", dir[64], source[80];
	char fdarg[32];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *argv[] = { (char *)path, fdarg, (char *)"-o", source,
	    (char *)"-o", (char *)"sandbox=namespace", (char *)"-o",
	    (char *)"cache=auto", NULL };
	struct pollfd pfd;
	int lfd = -1, cfd = -1, devnull = -1, pidfd, st, rc;
	pid_t child;

	/* Everything the child needs, made before the fork: after it,
	 * only async-signal-safe calls (the worker may have threads). */
	snprintf(fdarg, sizeof(fdarg), "--fd=%d", FS_SHARE_LISTEN_FD);
	snprintf(dir, sizeof(dir), "/proc/self/fd/%d", dir_fd);
	if (realpath(dir, source + 7) == NULL) {
		rc = -errno;
		snprintf(err, errlen, "fs: the shared directory: %s",
		    strerror(-rc));
		close(dir_fd);
		return rc;
	}
	memcpy(source, "source=", 7);
	if (mkdtemp(tmpl) == NULL) {
		rc = -errno;
		snprintf(err, errlen, "fs: %s: %s", tmpl, strerror(-rc));
		close(dir_fd);
		return rc;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", tmpl);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (lfd < 0 || cfd < 0 || devnull < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 1) < 0 ||
	    connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "fs: the server's socket: %s",
		    strerror(-rc));
		goto fail;
	}
	/* Connected (the backlog holds it): no one else can reach it. */
	unlink(sa.sun_path);
	rmdir(tmpl);
	tmpl[0] = '\0';
	child = fork();
	if (child < 0) {
		rc = -errno;
		snprintf(err, errlen, "fs: fork: %s", strerror(-rc));
		goto fail;
	}
	if (child == 0) {
		/* stdin /dev/null, the worker's stdout and stderr (its
		 * log), the share as fd 3, the socket as 4, nothing else. */
		if (dup2(devnull, STDIN_FILENO) < 0 ||
		    fs_share_place(dir_fd, lfd) < 0 ||
		    (readonly && fs_share_readonly(source + 7) < 0))
			_exit(126);
		close_range(FS_SHARE_LISTEN_FD + 1, ~0U, 0);
		signal(SIGPIPE, SIG_DFL);
		execv(path, argv);
		_exit(127);
	}
	close(devnull);
	close(lfd);
	close(dir_fd);
	/* One that cannot run (no such program, no namespaces) ends now. */
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	if (pidfd >= 0) {
		pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		rc = poll(&pfd, 1, FS_SHARE_SETTLE_MS);
		close(pidfd);
		if (rc == 1 && waitpid(child, &st, WNOHANG) == child) {
			snprintf(err, errlen, "fs: %s %s %d%s", path,
			    WIFEXITED(st) ? "exited with status" :
			    "died of signal", WIFEXITED(st) ? WEXITSTATUS(st) :
			    WTERMSIG(st), !WIFEXITED(st) ? ": see the log "
			    "for what it said" : WEXITSTATUS(st) == 126 ?
			    " (cannot make the share read-only)" :
			    WEXITSTATUS(st) == 127 ? " (it could not be run: "
			    "no such program, or not executable; vmmd.conf's "
			    "virtiofsd names it)" : ": see the log for what "
			    "it said");
			close(cfd);
			return WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
			    -ENOENT : -EIO;
		}
	}
	*sock = cfd;
	*pid = child;
	return 0;

fail:
	if (tmpl[0] != '\0') {
		unlink(sa.sun_path);
		rmdir(tmpl);
	}
	if (devnull >= 0)
		close(devnull);
	if (lfd >= 0)
		close(lfd);
	if (cfd >= 0)
		close(cfd);
	close(dir_fd);
	return rc;
}
