/*
 * Client connections vmmd answers itself (see client-answer.h).
 */
#include <stdlib.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "client-answer.h"
#include "log.h"
#include "proto.h"

/* A connection answered by vmmd: written, then closed. */
struct answer {
	TAILQ_ENTRY(answer) entry;
	struct answer_list *list;
	struct bufferevent *bev;
};

static void
answer_free(struct answer *a)
{
	TAILQ_REMOVE(a->list, a, entry);
	bufferevent_free(a->bev);	/* closes the connection */
	free(a);
}

/* All written (the write callback), or the client failed or stalled. */
static void
answer_written(struct bufferevent *bev, void *arg)
{
	answer_free(arg);
}

static void
answer_event(struct bufferevent *bev, short what, void *arg)
{
	answer_free(arg);
}

void
answer_send(struct event_base *base, struct answer_list *list, int fd,
    struct json_object *msg, const void *data, size_t len)
{
	const struct timeval tv = { ANSWER_TIMEOUT, 0 };
	struct answer *a;
	char *line = NULL;
	size_t linelen = 0;

	if (msg != NULL)
		line = proto_serialize(msg, &linelen);
	json_object_put(msg);
	a = calloc(1, sizeof(*a));
	if (line == NULL || a == NULL ||
	    evutil_make_socket_nonblocking(fd) < 0 ||
	    (a->bev = bufferevent_socket_new(base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		log_error("cannot answer a client: out of memory");
		free(line);
		free(a);
		close(fd);
		return;
	}
	a->list = list;
	TAILQ_INSERT_TAIL(list, a, entry);
	if (bufferevent_write(a->bev, line, linelen) < 0 ||
	    (len > 0 && bufferevent_write(a->bev, data, len) < 0)) {
		log_error("cannot answer a client: out of memory");
		free(line);
		answer_free(a);
		return;
	}
	free(line);
	bufferevent_set_timeouts(a->bev, NULL, &tv);
	bufferevent_setcb(a->bev, NULL, answer_written, answer_event, a);
	bufferevent_enable(a->bev, EV_WRITE);
}

void
answer_free_all(struct answer_list *list)
{
	while (!TAILQ_EMPTY(list))
		answer_free(TAILQ_FIRST(list));
}
