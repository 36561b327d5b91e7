/* See nbd-connect.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "access.h"
#include "nbd-addr.h"
#include "nbd-connect.h"

int
nbd_connect_begin(int fd, const struct sockaddr *sa, socklen_t len)
{
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if (connect(fd, sa, len) < 0)
		return -errno;		/* -EINPROGRESS: wait, then end */
	return nbd_connect_end(fd);
}

int
nbd_connect_end(int fd)
{
	socklen_t elen = sizeof(int);
	int fl, e = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
		return -errno;
	if (e != 0)
		return -e;
	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* The connect() begun on fd, waited for up to NBD_CONNECT_TIMEOUT_MS. */
static int
nbd_connect_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int r;

	do
		r = poll(&p, 1, NBD_CONNECT_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	return nbd_connect_end(fd);
}

/* A connect() of fd to sa, bounded by NBD_CONNECT_TIMEOUT_MS. */
static int
nbd_connect_bounded(int fd, const struct sockaddr *sa, socklen_t len)
{
	int rc = nbd_connect_begin(fd, sa, len);

	return rc == -EINPROGRESS ? nbd_connect_wait(fd) : rc;
}

int
nbd_connect_lookup(const struct nbd_addr *a, struct addrinfo **res,
    char *why, size_t whylen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_ADDRCONFIG,
	};
	char port[8];
	int g;

	snprintf(port, sizeof(port), "%u", a->port);
	if ((g = getaddrinfo(a->host, port, &hints, res)) != 0) {
		*res = NULL;
		snprintf(why, whylen, "%s", gai_strerror(g));
		return -EHOSTUNREACH;
	}
	return 0;
}

int
nbd_connect_open(const struct addrinfo *ai, int *fdp)
{
	int fd, rc;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
	    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	rc = nbd_connect_begin(fd, ai->ai_addr, ai->ai_addrlen);
	if (rc == 0 || rc == -EINPROGRESS)
		*fdp = fd;
	else
		close(fd);
	return rc;
}

/*
 * The Unix socket at path, as cred may reach it: the walk checks every
 * directory and the socket itself (read and write), and the connect
 * goes through the very inode checked (/proc/self/fd of an O_PATH
 * descriptor), so that nothing swapped in on the way is connected.
 */
static int
nbd_connect_unix(const char *path, const struct access_cred *cred,
    bool check_only, int *fdp)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char name[NAME_MAX + 1];
	struct stat st, st2;
	int dirfd, pfd = -1, fd = -1, rc;

	dirfd = access_resolve(path, cred, NULL, name, &st);
	if (dirfd < 0)
		return dirfd;
	rc = -ENOTSOCK;
	if (!S_ISSOCK(st.st_mode))
		goto out;
	pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st2) < 0) {
		rc = -errno;
		goto out;
	}
	rc = -ESTALE;
	if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)
		goto out;
	if (cred != NULL && (rc = access_fd_allows(pfd, &st2, cred,
	    ACCESS_READ | ACCESS_WRITE)) < 0)
		goto out;
	rc = 0;
	if (check_only)
		goto out;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", pfd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = nbd_connect_bounded(fd, (struct sockaddr *)&sun, sizeof(sun));
	if (rc == 0) {
		*fdp = fd;
		fd = -1;
	}
out:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	close(dirfd);
	return rc;
}

static int
nbd_connect_tcp(const struct nbd_addr *a, int *fdp, char *why,
    size_t whylen)
{
	struct addrinfo *res, *ai;
	int fd = -1, rc;

	if ((rc = nbd_connect_lookup(a, &res, why, whylen)) < 0)
		return rc;
	rc = -EHOSTUNREACH;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((rc = nbd_connect_open(ai, &fd)) == -EINPROGRESS)
			rc = nbd_connect_wait(fd);
		if (rc == 0) {
			*fdp = fd;
			break;
		}
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (rc < 0)
		snprintf(why, whylen, "%s", strerror(-rc));
	return rc;
}

int
nbd_connect(const char *addr, unsigned int disk,
    const struct access_cred *cred, bool check_only, int *fdp,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct nbd_addr a;
	char why[256];
	int rc;

	*fdp = -1;
	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (nbd_addr_parse(addr, &a, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "disk %u: %s: %s", disk, addr, why);
		return -EINVAL;
	}
	if (!a.unix_socket) {
		if (check_only)
			return 0;
		rc = nbd_connect_tcp(&a, fdp, why, sizeof(why));
		if (rc < 0) {
			*cls = PROTO_ERR_INTERNAL;
			snprintf(err, errlen, "disk %u: %s: cannot connect: %s",
			    disk, addr, why);
		}
		return rc;
	}
	rc = nbd_connect_unix(a.path, cred, check_only, fdp);
	/* At vm.create the server may well come later. */
	if (rc == -ENOENT && check_only)
		return 0;
	if (rc == -EACCES && cred != NULL) {
		*cls = PROTO_ERR_PERMISSION;
		snprintf(err, errlen, "disk %u: %s: not reachable by uid %lu",
		    disk, addr, (unsigned long)cred->uid);
	} else if (rc == -ENOTSOCK)
		snprintf(err, errlen, "disk %u: %s: not a socket", disk, addr);
	else if (rc < 0) {
		if (!check_only)
			*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "disk %u: %s: %s%s", disk, addr,
		    check_only ? "" : "cannot connect: ", strerror(-rc));
	}
	return rc;
}
