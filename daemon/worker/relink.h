/*
 * The worker's own socket, on which a new supervisor finds it: a guest
 * outlives the supervisor that started it.
 *
 * vmmd creates the listening socket (RUNDIR/workers/NAME.sock, mode
 * 0600 in a 0700 directory) and passes it with worker.boot.  While a
 * supervisor is linked, nothing here listens (a second connection waits
 * in the backlog); when the link closes, the link is freed and the
 * socket accepts the next supervisor, who gets a new link with the same
 * handlers.  Only a peer with our own uid is taken (or root).  All on
 * the loop thread.
 */
#ifndef VMMD_RELINK_H
#define VMMD_RELINK_H

#include <event2/event.h>

#include "link.h"

struct relink;

/*
 * Takes fd (a listening stream socket; closed on failure).  *linkp is
 * where the worker keeps its current link: relink frees it when it is
 * lost and sets it when a supervisor connects.  NULL with *errp = -errno
 * on failure.
 */
struct relink *relink_new(struct event_base *base, int fd,
    struct link **linkp, const struct link_handlers *h, int *errp);
/*
 * The link was lost (called from its closed handler, so the link is
 * freed later, on the loop): wait for the next supervisor.  Repeated
 * calls before that are harmless.
 */
void relink_lost(struct relink *r);
/* Whether no supervisor is linked now. */
int relink_waiting(const struct relink *r);
/* Closes the socket (the supervisor removes its file).  NULL is fine. */
void relink_free(struct relink *r);

#endif
