/* See guest.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk-reader.h"
#include "nbd-redial.h"
#include "rbd-disk.h"
#include "guest.h"
#include "stats.h"
#include "log.h"
#include "proto.h"
#include "migrate-in.h"
#include "restore.h"
#include "sandbox.h"
#include "test-hook.h"

void
guest_event(struct worker *w, enum wmsg_event event,
    struct json_object *data)
{
	link_send(w->link, proto_event(wmsg_event_name(event), w->name,
	    data));
}

void
guest_state_event(struct worker *w, const char *state)
{
	struct json_object *data = json_object_new_object();

	/* Kept for a supervisor that adopts us (worker.adopt). */
	w->paused = strcmp(state, "paused") == 0;
	wmsg_put_str(data, WMSG_STATE_STATE, state);
	guest_event(w, WMSG_EV_STATE, data);
}

/* --- backends and machine host (vCPU threads, never blocking) ------- */

static void
guest_console_tx(void *opaque, const uint8_t *buf, size_t len)
{
	struct worker *w = opaque;

	console_output(w->console, buf, len);
}

static void
guest_console_rx_space(void *opaque)
{
	struct worker *w = opaque;

	console_rx_space(w->console);
}

static void
guest_machine_reset(void *opaque, enum machine_reset_reason why,
    const char *source)
{
	struct worker *w = opaque;

	pthread_mutex_lock(&w->hold_lock);
	w->hold_reason = why;
	w->hold_source = source;
	pthread_mutex_unlock(&w->hold_lock);
	event_active(w->hold_ev, 0, 0);
}

static void
guest_machine_fatal(void *opaque, const char *why)
{
	struct worker *w = opaque;

	pthread_mutex_lock(&w->hold_lock);
	free(w->hold_fatal);
	w->hold_fatal = strdup(why);
	if (w->hold_fatal == NULL)
		w->hold_fatal = strdup("out of memory");
	pthread_mutex_unlock(&w->hold_lock);
	event_active(w->hold_ev, 0, 0);
}

/* Console clients' input (the loop). */
static size_t
guest_console_input(void *opaque, const uint8_t *buf, size_t len)
{
	struct worker *w = opaque;

	return machine_console_input(w->machine, buf, len);
}

/* --- the display's viewers (the loop) ---------------------------------- */

static void
guest_display_key(void *opaque, const uint8_t *set2, size_t len)
{
	struct worker *w = opaque;

	/* Between two machines (a reset) the key is lost, as on a PC. */
	if (w->machine != NULL)
		(void)machine_keyboard(w->machine, set2, len);
}

static void
guest_display_mouse(void *opaque, int dx, int dy, int dz,
    unsigned int buttons)
{
	struct worker *w = opaque;

	if (w->machine != NULL)
		(void)machine_mouse(w->machine, dx, dy, dz, buttons);
}

static int
guest_display_dirty_log(void *opaque, uint64_t *bitmap, size_t words)
{
	struct worker *w = opaque;

	if (w->machine == NULL)
		return 0;
	return machine_fb_dirty(w->machine, bitmap, words);
}

static int
guest_display_set_dirty_log(void *opaque, bool on)
{
	struct worker *w = opaque;

	/* Without a machine, the next one is built the display's way. */
	if (w->machine == NULL)
		return 0;
	return machine_fb_log(w->machine, on);
}

static int
guest_display_fb_mode(void *opaque, struct machine_fb_mode *mode)
{
	struct worker *w = opaque;

	if (w->machine == NULL)
		return -ENODEV;
	return machine_fb_mode(w->machine, mode);
}

static void
guest_display_clients(void *opaque, unsigned int clients, bool connected)
{
	struct worker *w = opaque;
	struct json_object *data = json_object_new_object();

	wmsg_put_int(data, WMSG_DISPLAY_CLIENTS, clients);
	guest_event(w, connected ? WMSG_EV_DISPLAY_CONNECTED :
	    WMSG_EV_DISPLAY_DISCONNECTED, data);
}

int
guest_display_new(struct worker *w, const struct display_config *cfg,
    char *err, size_t errlen)
{
	struct display_host host = {
		.key = guest_display_key,
		.mouse = guest_display_mouse,
		.dirty_log = guest_display_dirty_log,
		.set_dirty_log = guest_display_set_dirty_log,
		.clients_changed = guest_display_clients,
		.fb_mode = guest_display_fb_mode,
		.opaque = w,
	};
	int ret;

	ret = display_new(w->base, cfg, &host, &w->display, err, errlen);
	if (ret < 0)
		return ret;
	display_machine_fb(w->display, &w->cfg.fb);
	return 0;
}

/* --- building and rebuilding the machine ------------------------------- */

void
guest_teardown(struct worker *w)
{
	/* A migration's thread reads the machine: it ends first. */
	if (w->teardown_hook != NULL)
		w->teardown_hook(w);
	console_set_input(w->console, NULL, NULL);
	/* No vCPU may wait on the framebuffer while we join them. */
	display_quiesce(w->display);
	machine_free(w->machine);
	w->machine = NULL;
	/* Whatever the vCPUs printed last reaches the log and clients. */
	console_flush(w->console);
}

static struct sandbox_config
guest_sandbox_config(const struct worker *w)
{
	return (struct sandbox_config){
		.uid = w->uid,
		.read_files = w->read_files,
		.report_fd = w->report_fd,
	};
}

int
guest_drop_privileges(struct worker *w, char *err, size_t errlen)
{
	struct sandbox_config cfg = guest_sandbox_config(w);
	int ret;

	if (w->unconfined)
		return 0;
	ret = sandbox_drop_privileges(&cfg, err, errlen);
	if (ret == 0)
		log_debug("%s: privileges dropped (uid %u)", w->name,
		    (unsigned int)geteuid());
	return ret;
}

static unsigned int
guest_disk_count(const struct worker *w)
{
	unsigned int i, n = 0;

	for (i = 0; i < BOARD_MAX_DISKS; i++)
		n += w->disks[i] != NULL;
	return n + (w->cdrom != NULL);
}

int
guest_enter_sandbox(struct worker *w, unsigned int ndisks, char *err,
    size_t errlen)
{
	struct sandbox_config cfg = guest_sandbox_config(w);
	int ret;

	if (w->sandboxed || w->unconfined)
		return 0;
	/* Every thread the guest may run: this loop, the vCPUs, the
	 * disks' I/O threads, librbd's.  librbd connects to the cluster's
	 * daemons as it needs them: new TCP connections stay allowed. */
	cfg.threads = 1 + w->cfg.vcpus + ndisks * BLK_FILE_THREADS +
	    rbd_disk_count(w) * BLK_RBD_THREADS;
	cfg.network = rbd_disk_count(w) > 0;
	test_hook_sandboxing(w);
	ret = sandbox_enter(&cfg, err, errlen);
	if (ret < 0)
		return ret;
	w->sandboxed = true;
	w->start.sandboxed = xs_mono_ns();
	log_debug("%s: sandboxed (uid %u)", w->name, (unsigned int)getuid());
	test_hook_sandboxed(w);
	return 0;
}

int
guest_build(struct worker *w, char *err, size_t errlen)
{
	struct machine_host host = {
		.reset = guest_machine_reset,
		.fatal = guest_machine_fatal,
		.opaque = w,
	};
	bool restored;
	int ret;

	w->cfg.base = w->base;
	if (w->display != NULL)
		display_machine_fb(w->display, &w->cfg.fb);
	w->cfg.backends.com1 = (struct uart_backend){
		.tx = guest_console_tx,
		.rx_space = guest_console_rx_space,
		.opaque = w,
	};
	/* The first machine's build is the start's (start-times.h). */
	w->cfg.times = w->booted ? NULL : &w->start.machine;
	ret = machine_new(&w->machine, &w->cfg, &host, err, errlen);
	if (ret < 0)
		return ret;
	stats_machine_built(w);
	test_hook_machine_built(w);
	/* Normally done already (requests.c): the one thing left open
	 * that might still need to be. */
	ret = guest_enter_sandbox(w, guest_disk_count(w), err, errlen);
	if (ret < 0) {
		guest_teardown(w);
		return ret;
	}
	/* From a snapshot or a stream: restored paused, before any vCPU
	 * runs. */
	restored = w->restore != NULL || migrate_in_pending(w);
	if (restored) {
		machine_pause(w->machine);
		ret = w->restore != NULL ? restore_apply(w, err, errlen) :
		    migrate_in_apply(w, err, errlen);
		if (ret < 0) {
			guest_teardown(w);
			return ret;
		}
	}
	ret = machine_start(w->machine);
	if (ret < 0) {
		snprintf(err, errlen, "cannot start vCPU threads: %s",
		    strerror(-ret));
		guest_teardown(w);
		return ret;
	}
	if (restored)
		machine_resume(w->machine);
	console_set_input(w->console, guest_console_input, w);
	display_resume(w->display);
	return 0;
}

void
guest_forget_hold(struct worker *w)
{
	event_del(w->hold_ev);
	pthread_mutex_lock(&w->hold_lock);
	free(w->hold_fatal);
	w->hold_fatal = NULL;
	pthread_mutex_unlock(&w->hold_lock);
}

/*
 * A vCPU or device stopped the machine: a reset, a power-off or a fatal
 * error.  Reset rebuilds the whole machine in this process.
 */
static void
guest_hold_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	enum machine_reset_reason why;
	struct json_object *data;
	const char *source;
	char err[512];
	char *fatal;

	pthread_mutex_lock(&w->hold_lock);
	why = w->hold_reason;
	source = w->hold_source;
	fatal = w->hold_fatal;
	w->hold_fatal = NULL;
	pthread_mutex_unlock(&w->hold_lock);

	guest_teardown(w);
	if (fatal != NULL) {
		log_error("%s: guest stopped: %s", w->name, fatal);
		free(fatal);
		worker_exit(w, 1);
		return;
	}
	if (why == MACHINE_POWEROFF || w->shutdown_pending ||
	    w->reboot_stops) {
		log_info("%s: guest %s, stopping", w->name,
		    why == MACHINE_POWEROFF ? "powered off" : "reset");
		worker_exit(w, 0);
		return;
	}

	w->reboots++;
	data = json_object_new_object();
	wmsg_put_str(data, WMSG_REBOOT_REASON,
	    machine_reset_reason_name(why, source));
	guest_event(w, WMSG_EV_REBOOT, data);
	if (guest_build(w, err, sizeof(err)) < 0) {
		log_error("%s: cannot restart guest: %s", w->name, err);
		worker_exit(w, 1);
		return;
	}
	/* The new machine runs, even if a pause came while the old one
	 * was held: say so, or vmmd would go on calling it paused. */
	guest_state_event(w, "running");
}

int
guest_init(struct worker *w)
{
	pthread_mutex_init(&w->hold_lock, NULL);
	w->hold_ev = event_new(w->base, -1, 0, guest_hold_cb, w);
	return w->hold_ev != NULL ? 0 : -ENOMEM;
}

void
guest_fini(struct worker *w)
{
	display_quiesce(w->display);
	machine_free(w->machine);
	w->machine = NULL;
	/* Viewers go before the framebuffer they look at. */
	display_free(w->display);
	w->display = NULL;
	if (w->console != NULL)
		console_drain(w->console, 1000);
	console_free(w->console);
	w->console = NULL;
	/* A reader still under way (a worker.boot that failed). */
	disk_reader_cancel(w->reader);
	w->reader = NULL;
	/* After the machine: its disks drained into them. */
	for (unsigned int i = 0; i < BOARD_MAX_DISKS; i++) {
		blk_file_free(w->disks[i]);
		w->disks[i] = NULL;
		blk_nbd_free(w->nbd[i]);
		w->nbd[i] = NULL;
		nbd_redial_free(w->nbd_redial[i]);
		w->nbd_redial[i] = NULL;
		rbd_disk_close(w, i);
		json_object_put(w->disk_chain[i]);
		w->disk_chain[i] = NULL;
	}
	blk_file_free(w->cdrom);
	w->cdrom = NULL;
	/* After the machine: what its flash changed is written back. */
	nvram_free(w->nvram);
	w->nvram = NULL;
	for (unsigned int i = 0; i < BOARD_MAX_NICS; i++) {
		net_tap_free(w->net[i]);
		w->net[i] = NULL;
		/* passt sees its link close, and ends. */
		net_stream_free(w->user_net[i]);
		w->user_net[i] = NULL;
	}
	vhost_vsock_free(w->vsock);
	w->vsock = NULL;
	/* virtiofsd sees the connection close, and ends. */
	if (w->fs_ev != NULL)
		event_free(w->fs_ev);
	w->fs_ev = NULL;
	vhost_user_free(w->fs);
	w->fs = NULL;
	if (w->hold_ev != NULL)
		event_free(w->hold_ev);
	free(w->kernel);
	free(w->kernel_name);
	free(w->firmware);
	free(w->vgabios);
	free(w->initrd);
	free(w->cmdline);
	json_object_put(w->boot_facts);
	w->boot_facts = NULL;
	free(w->hold_fatal);
	pthread_mutex_destroy(&w->hold_lock);
}

/* The worker's own figures (figure.h), of a struct worker. */
static const struct figure worker_figure_rows[] = {
	{ "reboots", "vmmd_guest_reboots", FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Resets the guest asked for", FIGURE_AT(struct worker, reboots) },
};

const struct figure_table worker_figures = FIGURE_TABLE(worker_figure_rows);
