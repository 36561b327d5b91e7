/*
 * The console logs of the VMs' runs, as the supervisor reads them: a
 * worker writes (and rotates) DIR/NAME.log, DIR being STATEDIR/console;
 * when a guest has ended before a vm.console client could be handed to
 * its worker, vmmd answers the client from the log as the worker would
 * have just before the end: the reply, the last CONSOLE_REPLAY_SIZE
 * bytes the run printed (console-replay.h), then EOF.
 */
#ifndef VMMD_CONSOLE_LOG_H
#define VMMD_CONSOLE_LOG_H

#include <stddef.h>
#include <sys/types.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "client-answer.h"
#include "console-replay.h"

/* DIR/NAME.log (its rotated part: PATH.1) in buf: 0 or -ENAMETOOLONG. */
int	console_log_path(const char *dir, const char *name, char *buf,
	    size_t size);
/*
 * The last CONSOLE_REPLAY_SIZE bytes of NAME's log from offset start
 * on (what a run printed), in *bufp (malloc'd; NULL if none) and *lenp.
 * A log shorter than start was rotated since: the run goes on from its
 * beginning.
 */
void	console_log_tail(const char *dir, const char *name, off_t start,
	    void **bufp, size_t *lenp);
/*
 * Answer the vm.console request id on the connection fd (taken), for
 * the run of NAME that began at log_start in its log: the reply and
 * the run's last output, then EOF (client-answer.h, on list).
 */
void	console_log_answer(struct event_base *base, struct answer_list *list,
	    const char *dir, const char *name, off_t log_start, int fd,
	    struct json_object *id);

#endif
