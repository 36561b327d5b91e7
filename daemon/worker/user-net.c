/* See user-net.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/netlink.h>

#include "sandbox.h"
#include "user-net.h"

/* How long a passt that cannot work takes to say so, at most. */
#define USER_NET_SETTLE_MS	300
/* passt's end of the link, as --fd names it. */
#define USER_NET_FD		3

/*
 * Whether fw's host port can be bound now, as passt is about to: a
 * port another program (or another guest's passt) holds is named here,
 * where passt could only say so in the log.  0 or -errno, err set.
 */
static int
user_net_port_free(const struct user_net_forward *fw, char *err,
    size_t errlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons(fw->host_port) };
	int fd, rc = 0, one = 1;

	if (fw->addr[0] != '\0' &&
	    inet_pton(AF_INET, fw->addr, &sin.sin_addr) != 1)
		return 0;	/* an IPv6 address: passt alone checks it */
	fd = socket(AF_INET, (fw->udp ? SOCK_DGRAM : SOCK_STREAM) |
	    SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	/* As passt binds: a port in TIME_WAIT is free. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 &&
	    (errno == EADDRINUSE || errno == EADDRNOTAVAIL ||
	    errno == EACCES)) {
		rc = -errno;
		snprintf(err, errlen, "net: forward %s:%s:%u:%u: the host's "
		    "port cannot be had: %s", fw->udp ? "udp" : "tcp",
		    fw->addr[0] != '\0' ? fw->addr : "*",
		    (unsigned int)fw->host_port, (unsigned int)fw->guest_port,
		    strerror(-rc));
	}
	close(fd);
	return rc;
}

/*
 * passt reads the host's routes and addresses over netlink: where this
 * process may not open such a socket (the shipped systemd unit's
 * RestrictAddressFamilies), say so and how, rather than leave passt to
 * die with a line in the log.  0 or -EPERM, err set.
 */
static int
user_net_can_netlink(char *err, size_t errlen)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EAFNOSUPPORT && errno != EPERM && errno != EACCES)
		return 0;	/* passt will say what else is wrong */
	snprintf(err, errlen, "net: user-mode networking needs netlink "
	    "sockets and namespaces for passt, which this service may not "
	    "have (%s): see \"User-mode networking\" in vmmd(8) for the "
	    "drop-in that allows them", strerror(errno));
	return -EPERM;
}

int
user_net_start(const char *path, uid_t uid,
    const struct user_net_forward *fw, unsigned int nfw, int *sock,
    pid_t *pid, char *err, size_t errlen)
{
	char *argv[9 + 2 * USER_NET_FORWARDS + 1];
	char runas[32], specs[USER_NET_FORWARDS][48];
	unsigned int ac = 0;
	struct pollfd pfd;
	int sv[2], devnull, pidfd, st, rc;
	pid_t child;

	if (nfw > USER_NET_FORWARDS) {
		snprintf(err, errlen, "net: at most %d forwards",
		    USER_NET_FORWARDS);
		return -EINVAL;
	}
	/* Everything the child needs, made before the fork: after it, only
	 * async-signal-safe calls (the worker may have threads). */
	snprintf(runas, sizeof(runas), "%u:%u", (unsigned int)(uid != 0 ?
	    uid : SANDBOX_FALLBACK_ID), (unsigned int)(uid != 0 ? uid :
	    SANDBOX_FALLBACK_ID));
	argv[ac++] = (char *)path;
	argv[ac++] = (char *)"--foreground";
	argv[ac++] = (char *)"--quiet";		/* but its errors: */
	argv[ac++] = (char *)"--stderr";
	argv[ac++] = (char *)"--fd";
	argv[ac++] = (char *)"3";
	argv[ac++] = (char *)"--runas";
	argv[ac++] = runas;
	for (unsigned int i = 0; i < nfw; i++) {
		/* passt's SPEC: [ADDR/]HOSTPORT:GUESTPORT. */
		snprintf(specs[i], sizeof(specs[i]), "%s%s%u:%u", fw[i].addr,
		    fw[i].addr[0] != '\0' ? "/" : "", fw[i].host_port,
		    fw[i].guest_port);
		argv[ac++] = (char *)(fw[i].udp ? "-u" : "-t");
		argv[ac++] = specs[i];
	}
	argv[ac] = NULL;
	if ((rc = user_net_can_netlink(err, errlen)) < 0)
		return rc;
	for (unsigned int i = 0; i < nfw; i++)
		if ((rc = user_net_port_free(&fw[i], err, errlen)) < 0)
			return rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		snprintf(err, errlen, "net: socketpair: %s", strerror(-rc));
		return rc;
	}
	if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "net: /dev/null: %s", strerror(-rc));
		goto close_pair;
	}
	child = fork();
	if (child < 0) {
		rc = -errno;
		snprintf(err, errlen, "net: fork: %s", strerror(-rc));
		close(devnull);
		goto close_pair;
	}
	if (child == 0) {
		/* The child: stdin /dev/null, the worker's stdout and
		 * stderr (its log), the link as fd 3, nothing else. */
		if (dup2(devnull, STDIN_FILENO) < 0 ||
		    (sv[1] == USER_NET_FD ? fcntl(sv[1], F_SETFD, 0) :
		    dup2(sv[1], USER_NET_FD)) < 0)
			_exit(127);
		close_range(USER_NET_FD + 1, ~0U, 0);
		signal(SIGPIPE, SIG_DFL);
		execv(path, argv);
		_exit(127);
	}
	close(devnull);
	close(sv[1]);
	/* One that cannot run (no such program, a port taken) ends now. */
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	if (pidfd >= 0) {
		pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		rc = poll(&pfd, 1, USER_NET_SETTLE_MS);
		close(pidfd);
		if (rc == 1 && waitpid(child, &st, WNOHANG) == child) {
			snprintf(err, errlen, "net: passt (%s) %s %d: see the "
			    "log for what it said", path, WIFEXITED(st) ?
			    "exited with status" : "died of signal",
			    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			close(sv[0]);
			return WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
			    -ENOENT : -EIO;
		}
	}
	*sock = sv[0];
	*pid = child;
	return 0;

close_pair:
	close(sv[0]);
	close(sv[1]);
	return rc;
}
