/*
 * Client connections vmmd answers itself, where a worker would have
 * (vm.console after the guest's end, a handover the worker refused):
 * one message line and any data after it are written on the
 * connection, which is closed once that is written, once the client
 * fails, or after ANSWER_TIMEOUT, whichever comes first.  Everything
 * runs on the supervisor's loop and never blocks it.
 */
#ifndef VMMD_CLIENT_ANSWER_H
#define VMMD_CLIENT_ANSWER_H

#include <stddef.h>
#include <sys/queue.h>
#include <event2/event.h>
#include <json-c/json.h>

/* How long a client has to take an answer vmmd writes itself. */
#define ANSWER_TIMEOUT		30	/* seconds */

/* The answers being written, owned by whoever made the list. */
struct answer;
TAILQ_HEAD(answer_list, answer);

/*
 * Write msg (taken) and then len bytes of data (copied) on the client
 * connection fd (taken), on base's loop, and close it when done.  A
 * failure (out of memory, a NULL msg among it) is logged and closes fd.
 */
void	answer_send(struct event_base *base, struct answer_list *list,
	    int fd, struct json_object *msg, const void *data, size_t len);
/* Close every connection of list, written or not (shutting down). */
void	answer_free_all(struct answer_list *list);

#endif
