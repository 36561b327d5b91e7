/* See shutdown.h. */
#include <errno.h>
#include <stdio.h>

#include "log.h"
#include "shutdown.h"

const char *
shutdown_stage_name(enum shutdown_stage s)
{
	switch (s) {
	case SHUTDOWN_POWER_BUTTON:
		return "power-button";
	case SHUTDOWN_CTRL_ALT_DEL:
		return "ctrl-alt-del";
	default:
		return "none";
	}
}

static int
shutdown_ctrl_alt_del(struct worker *w, char *err, size_t errlen)
{
	int ret;

	if (w->machine == NULL)
		return 0;
	ret = machine_ctrl_alt_del(w->machine);
	if (ret < 0) {
		snprintf(err, errlen, "keyboard buffer full");
		return ret;
	}
	w->shutdown_stage = SHUTDOWN_CTRL_ALT_DEL;
	return 0;
}

/* The guest did not power off after the button: the keys, then. */
static void
shutdown_fallback_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	char err[64];

	if (w->machine == NULL || w->shutdown_stage != SHUTDOWN_POWER_BUTTON)
		return;
	log_info("%s: no power-off after the power button, sending "
	    "Ctrl-Alt-Del", w->name);
	if (shutdown_ctrl_alt_del(w, err, sizeof(err)) < 0)
		log_warn("%s: cannot send Ctrl-Alt-Del: %s", w->name, err);
}

int
shutdown_begin(struct worker *w, int64_t timeout_ms, char *err,
    size_t errlen)
{
	struct timeval tv;

	if (w->shutdown_stage != SHUTDOWN_NONE)
		return 0;
	if (machine_power_button(w->machine) < 0) {
		/* No ACPI driver listens: the keys straight away. */
		return shutdown_ctrl_alt_del(w, err, errlen);
	}
	w->shutdown_stage = SHUTDOWN_POWER_BUTTON;
	if (w->shutdown_ev == NULL) {
		w->shutdown_ev = evtimer_new(w->base, shutdown_fallback_cb, w);
		if (w->shutdown_ev == NULL) {
			/* The button is pressed; the kill still comes. */
			log_warn("%s: no memory for the Ctrl-Alt-Del fallback",
			    w->name);
			return 0;
		}
	}
	timeout_ms /= 2;
	tv.tv_sec = (time_t)(timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(timeout_ms % 1000 * 1000);
	evtimer_add(w->shutdown_ev, &tv);
	return 0;
}

void
shutdown_fini(struct worker *w)
{
	if (w->shutdown_ev != NULL)
		event_free(w->shutdown_ev);
	w->shutdown_ev = NULL;
}
