/*
 * vmmd under a service manager, without one: systemd-socket-activate
 * (Debian's systemd package) makes the control socket and passes it,
 * and this test owns the $NOTIFY_SOCKET vmmd reports to.  Checked:
 * the first client is served on the passed socket, READY=1 comes with
 * a STATUS= line, the watchdog pings at half of $WATCHDOG_USEC, a
 * daemon whose loop stalls (SIGSTOP) stops pinging and pings again
 * once it runs, and SIGTERM brings STOPPING=1 and exit status 0.
 *
 * No KVM is needed: no guest starts.  $VMMD_TEST_VMMD is the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define WATCHDOG_USEC	400000		/* pings every 200 ms */
#define ACTIVATE	"/usr/bin/systemd-socket-activate"

static char dir[] = "/tmp/vmmd-test-systemd.XXXXXX";

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int
bind_unix(int type, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		tap_bail("bind %s: %s", path, strerror(errno));
	return fd;
}

/*
 * Read notifications for up to ms: stop at the first one containing
 * want (copied to out) and return 1; count WATCHDOG=1 ones in *pings.
 */
static int
notify_wait(int fd, const char *want, int ms, char *out, size_t outlen,
    int *pings)
{
	long long end = now_ms() + ms;
	char buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	for (;;) {
		long long left = end - now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return 0;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			return 0;
		buf[n] = '\0';
		if (pings != NULL && strstr(buf, "WATCHDOG=1") != NULL)
			(*pings)++;
		if (want != NULL && strstr(buf, want) != NULL) {
			if (out != NULL)
				snprintf(out, outlen, "%s", buf);
			return 1;
		}
	}
}

/* Connect and read the greeting line. */
static int
client_greeting(const char *path, char *line, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t off = 0;
	ssize_t n;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	while (off < len - 1 && (n = read(fd, line + off, 1)) == 1 &&
	    line[off] != '\n')
		off++;
	line[off] = '\0';
	close(fd);
	return 0;
}

int
main(void)
{
	const char *vmmd = getenv("VMMD_TEST_VMMD");
	char nsock[64], csock[64], state[64], usec[32], msg[4096];
	char line[1024];
	int nfd, status, pings;
	pid_t pid;

	if (access(ACTIVATE, X_OK) < 0)
		tap_skip_all("%s: not installed (Debian's systemd)", ACTIVATE);
	if (vmmd == NULL)
		tap_bail("VMMD_TEST_VMMD is not set");
	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(nsock, sizeof(nsock), "%s/notify", dir);
	snprintf(csock, sizeof(csock), "%s/control.sock", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(usec, sizeof(usec), "%d", WATCHDOG_USEC);
	nfd = bind_unix(SOCK_DGRAM, nsock);

	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* systemd-socket-activate execs vmmd: the same pid. */
		setenv("NOTIFY_SOCKET", nsock, 1);
		setenv("WATCHDOG_USEC", usec, 1);
		if (getenv("VMMD_TEST_VERBOSE") == NULL)
			dup2(null, STDERR_FILENO);
		execl(ACTIVATE, ACTIVATE, "-E", "NOTIFY_SOCKET", "-E",
		    "WATCHDOG_USEC", "-l", csock, vmmd, "-f", "-s", csock,
		    "-d", state, "-c", "/dev/null", (char *)NULL);
		_exit(127);
	}

	/* systemd-socket-activate listens before it runs vmmd. */
	for (int i = 0; i < 100 && access(csock, F_OK) < 0; i++)
		usleep(50000);
	tap_ok(client_greeting(csock, line, sizeof(line)) == 0 &&
	    strstr(line, "\"version\"") != NULL,
	    "the first client activates vmmd and gets its greeting");
	tap_ok(notify_wait(nfd, "READY=1", 10000, msg, sizeof(msg), NULL),
	    "READY=1");
	tap_ok(strstr(msg, "STATUS=0 VMs defined, 0 guests running") != NULL,
	    "READY=1 comes with a status line");
	tap_ok(access(state, F_OK) == 0, "the state directory exists");

	pings = 0;
	notify_wait(nfd, NULL, 1500, NULL, 0, &pings);
	tap_ok(pings >= 4 && pings <= 9,
	    "the watchdog pings at half the interval (%d in 1.5 s)", pings);

	kill(pid, SIGSTOP);
	usleep(100000);
	pings = 0;
	while (notify_wait(nfd, "WATCHDOG=1", 0, NULL, 0, NULL))
		;		/* sent before the stop */
	notify_wait(nfd, NULL, 1200, NULL, 0, &pings);
	tap_ok(pings == 0, "a stalled daemon stops pinging (%d pings)",
	    pings);
	kill(pid, SIGCONT);
	tap_ok(notify_wait(nfd, "WATCHDOG=1", 1000, NULL, 0, NULL),
	    "and pings again once its loop runs");

	kill(pid, SIGTERM);
	tap_ok(notify_wait(nfd, "STOPPING=1", 5000, msg, sizeof(msg), NULL),
	    "SIGTERM: STOPPING=1");
	tap_ok(strstr(msg, "STATUS=stopping: 0 guests running") != NULL,
	    "with a status line");
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "vmmd exits 0 (status %#x)", status);
	tap_ok(access(csock, F_OK) == 0,
	    "the socket it was passed is left to its owner");

	close(nfd);
	snprintf(line, sizeof(line), "rm -rf '%s'", dir);
	if (system(line) != 0)
		tap_diag("cannot remove %s", dir);
	return tap_done();
}
