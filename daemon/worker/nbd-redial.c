/* See nbd-redial.h. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "link.h"
#include "nbd-redial.h"
#include "proto.h"
#include "worker-msg.h"

struct nbd_redial {
	struct worker *w;
	unsigned int disk;
	int efd;			/* the thread's ask, to the loop */
	struct event *ev;
	pthread_mutex_t lock;		/* all below */
	pthread_cond_t answered;
	bool waiting;			/* a thread waits for an answer */
	bool has_answer;
	int answer;			/* a descriptor, or -errno */
};

/* On the loop: the thread asked; tell the supervisor. */
static void
nbd_redial_ask(evutil_socket_t fd, short what, void *arg)
{
	struct nbd_redial *r = arg;
	struct json_object *data;
	uint64_t v;

	(void)what;
	if (read(fd, &v, sizeof(v)) < 0)
		return;
	if ((data = json_object_new_object()) == NULL)
		return;
	wmsg_put_int(data, WMSG_NBD_REDIAL_DISK, r->disk);
	link_send(r->w->link, proto_event(wmsg_event_name(WMSG_EV_NBD_REDIAL),
	    r->w->name, data));
}

int
nbd_redial_new(struct worker *w, unsigned int disk, struct nbd_redial **out)
{
	struct nbd_redial *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return -ENOMEM;
	r->w = w;
	r->disk = disk;
	r->efd = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->answered, NULL);
	if ((r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 || (r->ev = event_new(w->base, r->efd,
	    EV_READ | EV_PERSIST, nbd_redial_ask, r)) == NULL ||
	    event_add(r->ev, NULL) < 0) {
		int e = r->efd < 0 ? -errno : -ENOMEM;

		nbd_redial_free(r);
		return e;
	}
	*out = r;
	return 0;
}

int
nbd_redial_connect(void *arg)
{
	struct nbd_redial *r = arg;
	struct timespec ts;
	uint64_t one = 1;
	int ret;

	pthread_mutex_lock(&r->lock);
	if (r->has_answer && r->answer >= 0)
		close(r->answer);	/* a late one, from an earlier ask */
	r->has_answer = false;
	r->waiting = true;
	if (write(r->efd, &one, sizeof(one)) < 0) {
		r->waiting = false;
		pthread_mutex_unlock(&r->lock);
		return -errno;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += NBD_REDIAL_WAIT_MS / 1000;
	while (!r->has_answer)
		if (pthread_cond_timedwait(&r->answered, &r->lock, &ts) ==
		    ETIMEDOUT)
			break;
	ret = r->has_answer ? r->answer : -ETIMEDOUT;
	r->has_answer = false;
	r->waiting = false;
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void
nbd_redial_answer(struct nbd_redial *r, int fd)
{
	pthread_mutex_lock(&r->lock);
	if (!r->waiting) {
		pthread_mutex_unlock(&r->lock);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (r->has_answer && r->answer >= 0)
		close(r->answer);
	r->answer = fd;
	r->has_answer = true;
	pthread_cond_signal(&r->answered);
	pthread_mutex_unlock(&r->lock);
}

void
nbd_redial_free(struct nbd_redial *r)
{
	if (r == NULL)
		return;
	if (r->ev != NULL)
		event_free(r->ev);
	if (r->efd >= 0)
		close(r->efd);
	if (r->has_answer && r->answer >= 0)
		close(r->answer);
	pthread_cond_destroy(&r->answered);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
