/*
 * The worker's graceful stop (worker.shutdown): the ACPI power button
 * first, which an ACPI guest turns into an orderly power-off; Ctrl-Alt-Del
 * when the guest has not enabled the button, or has not powered off
 * halfway through the time the supervisor gives it before it kills the
 * worker.  Runs on the loop's thread.
 */
#ifndef VMMD_SHUTDOWN_H
#define VMMD_SHUTDOWN_H

#include "worker.h"

/* What the guest was asked with, for replies and vm.info. */
enum shutdown_stage {
	SHUTDOWN_NONE,
	SHUTDOWN_POWER_BUTTON,
	SHUTDOWN_CTRL_ALT_DEL,
};

const char *shutdown_stage_name(enum shutdown_stage s);

/*
 * Ask the running guest (w->machine) to shut down; timeout_ms is what the
 * supervisor allows it, the fallback comes at half of it.  Asking again
 * while a stop is under way changes nothing.  0, or -errno when the
 * guest cannot be asked at all (err says why).
 */
int	shutdown_begin(struct worker *w, int64_t timeout_ms, char *err,
	    size_t errlen);
/* Cancel the fallback (the guest is gone); at exit, free it. */
void	shutdown_fini(struct worker *w);

#endif
