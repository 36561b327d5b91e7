/*
 * The guest's life in the worker: building the machine with the worker's
 * backends, handling what stops it (reset, power-off, fatal error) and
 * rebuilding it, so that consoles stay attached and the log continues
 * across guest reboots.
 */
#ifndef VMMD_GUEST_H
#define VMMD_GUEST_H

#include <stddef.h>
#include <json-c/json.h>

#include "worker.h"
#include "worker-msg.h"

/* Set up what the guest needs on the loop (once, at start-up). */
int	guest_init(struct worker *w);
void	guest_fini(struct worker *w);

/* The guest's screen, before the first guest_build(); -errno and err. */
int	guest_display_new(struct worker *w, const struct display_config *cfg,
	    char *err, size_t errlen);

/*
 * Give up every privilege before reading anything the guest wrote
 * (sandbox_drop_privileges() in sandbox.h), once; nothing with -U.
 * -errno and err on failure: the guest must not start then.
 */
int	guest_drop_privileges(struct worker *w, char *err, size_t errlen);

/*
 * The filter of a running guest (sandbox_enter() in sandbox.h), once,
 * for a guest with ndisks disks; nothing with -U.  Before the worker
 * opens the disks and builds the first machine: from then on it can
 * open no file by name.  -errno and err on failure.
 */
int	guest_enter_sandbox(struct worker *w, unsigned int ndisks, char *err,
	    size_t errlen);

/* Build and start the machine from w->cfg; -errno and err on failure. */
int	guest_build(struct worker *w, char *err, size_t errlen);
/* Stop and free the machine (none is fine), flushing its console. */
void	guest_teardown(struct worker *w);
/* Drop a reset or fatal error the old machine reported. */
void	guest_forget_hold(struct worker *w);

/* Events to the supervisor about this guest; data is taken. */
void	guest_event(struct worker *w, enum wmsg_event event,
	    struct json_object *data);
void	guest_state_event(struct worker *w, const char *state);

/* The worker's own figures (figure.h): reboots. */
extern const struct figure_table worker_figures;

#endif
