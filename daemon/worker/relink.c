/* See relink.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "relink.h"

struct relink {
	struct event_base *base;
	int fd;				/* listening */
	struct link **linkp;
	struct link_handlers h;
	struct event *accept_ev;	/* added only while waiting */
	struct event *lost_ev;		/* frees the lost link, off its stack */
	int waiting;
};

static void
relink_accept_cb(evutil_socket_t fd, short what, void *arg)
{
	struct relink *r = arg;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int cfd, ret;

	cfd = accept4(r->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("accepting a supervisor: %s", strerror(errno));
		return;
	}
	/* The directory keeps others out; this says so in the log. */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		log_warn("refused a supervisor connection (uid %ld)",
		    (long)cred.uid);
		close(cfd);
		return;
	}
	*r->linkp = link_new(r->base, cfd, &r->h, &ret);
	if (*r->linkp == NULL) {
		log_error("link to the new supervisor: %s", strerror(-ret));
		return;
	}
	event_del(r->accept_ev);
	r->waiting = 0;
	log_info("supervisor %ld took over", (long)cred.pid);
}

static void
relink_lost_cb(evutil_socket_t fd, short what, void *arg)
{
	struct relink *r = arg;

	/* Requests and descriptors in flight go with it. */
	link_free(*r->linkp, 0);
	*r->linkp = NULL;
	event_add(r->accept_ev, NULL);
	log_info("supervisor gone: the guest runs on, waiting for the next");
}

void
relink_lost(struct relink *r)
{
	if (r->waiting)
		return;
	r->waiting = 1;
	event_active(r->lost_ev, 0, 0);
}

int
relink_waiting(const struct relink *r)
{
	return r->waiting;
}

struct relink *
relink_new(struct event_base *base, int fd, struct link **linkp,
    const struct link_handlers *h, int *errp)
{
	struct relink *r;
	int acc = 0;
	socklen_t len = sizeof(acc);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) < 0 ||
	    !acc) {
		*errp = -EINVAL;	/* not a listening socket */
		close(fd);
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		*errp = -ENOMEM;
		close(fd);
		return NULL;
	}
	r->base = base;
	r->fd = fd;
	r->linkp = linkp;
	r->h = *h;
	if (evutil_make_socket_nonblocking(fd) < 0 ||
	    evutil_make_socket_closeonexec(fd) < 0) {
		*errp = -errno;
		relink_free(r);
		return NULL;
	}
	r->accept_ev = event_new(base, fd, EV_READ | EV_PERSIST,
	    relink_accept_cb, r);
	r->lost_ev = event_new(base, -1, 0, relink_lost_cb, r);
	if (r->accept_ev == NULL || r->lost_ev == NULL) {
		*errp = -ENOMEM;
		relink_free(r);
		return NULL;
	}
	return r;
}

void
relink_free(struct relink *r)
{
	if (r == NULL)
		return;
	if (r->accept_ev != NULL)
		event_free(r->accept_ev);
	if (r->lost_ev != NULL)
		event_free(r->lost_ev);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}
