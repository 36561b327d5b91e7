/*
 * The worker's link to the supervisor: a stream socket carrying the
 * control protocol, one JSON object per line, plus descriptors passed
 * with SCM_RIGHTS (client connections for consoles).
 *
 * Reading is our own recvmsg() (a bufferevent would lose the passed
 * descriptors); writing goes through a bufferevent.  All on the loop.
 */
#ifndef VMMD_LINK_H
#define VMMD_LINK_H

#include <stddef.h>
#include <event2/event.h>
#include <json-c/json.h>

#define LINK_MAX_FDS	8

struct link;

struct link_handlers {
	/* One request line (without its newline); the line is borrowed. */
	void (*request)(void *opaque, const char *line, size_t len);
	/* The supervisor closed the link or it failed. */
	void (*closed)(void *opaque);
	void *opaque;
};

/* Takes fd.  NULL on failure, with *errp = -errno. */
struct link *link_new(struct event_base *base, int fd,
    const struct link_handlers *h, int *errp);
/*
 * Send what is queued, waiting up to drain_ms in all, then close.  NULL
 * is fine.
 */
void link_free(struct link *l, int drain_ms);

/*
 * After the loop has ended (the guest is gone): answer the requests
 * that were already sent, i.e. the complete lines read but not handled
 * yet and those among what the socket holds now, without waiting for
 * more.  Their replies go out with link_free()'s drain.  The supervisor
 * counts on it: a worker that exits by itself has answered every
 * request it read.  l may be NULL.
 */
void link_serve_queued(struct link *l);

/* Queue a message; takes msg (NULL is ignored; dropped when l is NULL). */
void link_send(struct link *l, struct json_object *msg);
/* The oldest descriptor passed and not yet taken, or -1 (l may be NULL). */
int link_take_fd(struct link *l);
/*
 * The link's socket, to watch for the supervisor's end while the loop
 * cannot (a migration's stream read at boot); -1 when l is NULL.
 */
int link_fd(const struct link *l);

#endif
