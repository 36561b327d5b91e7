/* See nbd-dial.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nbd-addr.h"
#include "nbd-connect.h"
#include "nbd-dial.h"

struct nbd_dial {
	struct event_base *base;
	unsigned int disk;
	char *addr;
	struct addrinfo *res;		/* TCP: the addresses */
	struct addrinfo *next;		/* the next one to try */
	int fd;				/* the socket connecting, or -1 */
	struct event *wait;		/* fd writable, or its bound */
	/* The outcome, handed over by done from the loop. */
	struct event *done;
	int result;			/* the connected socket, or -1 */
	char err[512];
	nbd_dial_cb cb;
	void *arg;
};

static void	nbd_dial_try(struct nbd_dial *nd, int rc);

static void
nbd_dial_fire(evutil_socket_t unused, short what, void *arg)
{
	struct nbd_dial *nd = arg;
	int fd = nd->result;

	nd->result = -1;
	nd->cb(nd, fd, fd < 0 ? nd->err : NULL, nd->arg);
}

/* The outcome, passed on from the loop's next turn. */
static void
nbd_dial_finish(struct nbd_dial *nd, int fd)
{
	nd->result = fd;
	event_active(nd->done, 0, 0);
}

/* nd->fd writable (its connect ended) or its bound passed. */
static void
nbd_dial_ready(evutil_socket_t fd, short what, void *arg)
{
	struct nbd_dial *nd = arg;
	int rc;

	event_free(nd->wait);
	nd->wait = NULL;
	rc = (what & EV_TIMEOUT) ? -ETIMEDOUT : nbd_connect_end(fd);
	if (rc == 0) {
		nd->fd = -1;
		nbd_dial_finish(nd, fd);
		return;
	}
	close(nd->fd);
	nd->fd = -1;
	nbd_dial_try(nd, rc);
}

/* The next address, as nbd_connect() tries them one after the other;
 * rc: the last one's failure, for when none is left. */
static void
nbd_dial_try(struct nbd_dial *nd, int rc)
{
	const struct timeval bound = {
		.tv_sec = NBD_CONNECT_TIMEOUT_MS / 1000,
		.tv_usec = NBD_CONNECT_TIMEOUT_MS % 1000 * 1000,
	};
	struct addrinfo *ai;
	int fd = -1;

	while ((ai = nd->next) != NULL) {
		nd->next = ai->ai_next;
		rc = nbd_connect_open(ai, &fd);
		if (rc == 0) {
			nbd_dial_finish(nd, fd);
			return;
		}
		if (rc != -EINPROGRESS)
			continue;
		/* The loop completes it: fd writable, or the bound. */
		nd->wait = event_new(nd->base, fd, EV_WRITE, nbd_dial_ready,
		    nd);
		if (nd->wait != NULL && event_add(nd->wait, &bound) == 0) {
			nd->fd = fd;
			return;
		}
		if (nd->wait != NULL)
			event_free(nd->wait);
		nd->wait = NULL;
		rc = -ENOMEM;
		close(fd);
	}
	snprintf(nd->err, sizeof(nd->err), "disk %u: %s: cannot connect: %s",
	    nd->disk, nd->addr, strerror(-rc));
	nbd_dial_finish(nd, -1);
}

/* TCP: the host's addresses (a name blocks here: nbd-dial.h), then
 * the first connect. */
static void
nbd_dial_tcp(struct nbd_dial *nd, const struct nbd_addr *a)
{
	char why[256];

	if (nbd_connect_lookup(a, &nd->res, why, sizeof(why)) < 0) {
		snprintf(nd->err, sizeof(nd->err), "disk %u: %s: cannot "
		    "connect: %s", nd->disk, nd->addr, why);
		nbd_dial_finish(nd, -1);
		return;
	}
	nd->next = nd->res;
	nbd_dial_try(nd, -EHOSTUNREACH);
}

int
nbd_dial_start(struct event_base *base, const char *addr, unsigned int disk,
    const struct access_cred *cred, nbd_dial_cb cb, void *arg,
    struct nbd_dial **ndp)
{
	struct nbd_dial *nd;
	struct nbd_addr a;
	enum proto_error cls;
	int fd = -1;

	if ((nd = calloc(1, sizeof(*nd))) == NULL)
		return -ENOMEM;
	nd->base = base;
	nd->disk = disk;
	nd->fd = nd->result = -1;
	nd->cb = cb;
	nd->arg = arg;
	if ((nd->addr = strdup(addr)) == NULL ||
	    (nd->done = event_new(base, -1, 0, nbd_dial_fire, nd)) == NULL) {
		nbd_dial_free(nd);
		return -ENOMEM;
	}
	*ndp = nd;
	if (nbd_addr_parse(addr, &a, nd->err, sizeof(nd->err)) == 0 &&
	    !a.unix_socket) {
		nbd_dial_tcp(nd, &a);
		return 0;
	}
	/* A Unix socket, or an address nbd_connect() says what is wrong
	 * with: at once. */
	if (nbd_connect(addr, disk, cred, false, &fd, &cls, nd->err,
	    sizeof(nd->err)) < 0)
		fd = -1;
	nbd_dial_finish(nd, fd);
	return 0;
}

unsigned int
nbd_dial_disk(const struct nbd_dial *nd)
{
	return nd->disk;
}

void
nbd_dial_free(struct nbd_dial *nd)
{
	if (nd == NULL)
		return;
	if (nd->wait != NULL)
		event_free(nd->wait);
	if (nd->done != NULL)
		event_free(nd->done);
	if (nd->fd >= 0)
		close(nd->fd);
	if (nd->result >= 0)
		close(nd->result);
	if (nd->res != NULL)
		freeaddrinfo(nd->res);
	free(nd->addr);
	free(nd);
}
