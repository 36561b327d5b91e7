/*
 * The supervisor's requests to the worker: one table entry and one
 * handler each.  Every request gets exactly one reply on the link.  A
 * request that passes a client connection and gets an error reply has
 * had nothing written to that connection: the supervisor may answer
 * the client itself.
 *
 * Requests also come after the guest is gone (w->ended), those queued
 * when the loop ended: the console still attaches, for the last output;
 * what needs the machine says it has stopped.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest.h"
#include "info.h"
#include "kvm.h"
#include "log.h"
#include "proto.h"
#include "requests.h"

struct worker_request {
	struct worker *w;
	struct json_object *id;
	struct json_object *args;
	int fd;			/* passed descriptor, or -1 */
};

typedef struct json_object *(*worker_handler)(struct worker_request *r);

static struct json_object *
worker_error(struct worker_request *r, enum proto_error e, const char *desc)
{
	return proto_error(r->id, e, "%s", desc);
}

static struct json_object *
worker_ok(struct worker_request *r, struct json_object *ret)
{
	return proto_reply(r->id, ret);
}

static char *
worker_strdup_or_null(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

/*
 * worker.boot's "display": {"listen", "port", "password", "width",
 * "height", "http_port", "web_dir"}.  0 without one (*has cleared), or
 * -EINVAL with err.
 */
static int
worker_display_args(struct json_object *args, struct display_config *cfg,
    bool *has, char *err, size_t errlen)
{
	static const char *const keys[] = {
		"listen", "port", "password", "width", "height", "http_port",
		"web_dir", NULL,
	};
	struct json_object *o;
	int64_t port = 0, http_port = 0, width = 1024, height = 768;
	int ret;

	*has = false;
	if (!json_object_object_get_ex(args, "display", &o) || o == NULL)
		return 0;
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "display: expected an object");
		return -EINVAL;
	}
	memset(cfg, 0, sizeof(*cfg));
	if ((ret = proto_args_check(o, keys, err, errlen)) < 0 ||
	    (ret = proto_arg_string(o, "listen", 0, &cfg->listen, err,
	    errlen)) < 0 ||
	    (ret = proto_arg_int(o, "port", 0, 0, 65535, &port, err,
	    errlen)) < 0 ||
	    (ret = proto_arg_string(o, "password", 0, &cfg->password, err,
	    errlen)) < 0 ||
	    (ret = proto_arg_int(o, "width", 0, 320, 16384, &width, err,
	    errlen)) < 0 ||
	    (ret = proto_arg_int(o, "height", 0, 200, 16384, &height, err,
	    errlen)) < 0 ||
	    (ret = proto_arg_int(o, "http_port", 0, 0, 65535, &http_port,
	    err, errlen)) < 0 ||
	    (ret = proto_arg_string(o, "web_dir", 0, &cfg->web_dir, err,
	    errlen)) < 0)
		return ret;
	cfg->port = (int)port;
	cfg->http_port = (int)http_port;
	cfg->width = (uint32_t)width;
	cfg->height = (uint32_t)height;
	*has = true;
	return 0;
}

static struct json_object *
worker_cmd_boot(struct worker_request *r)
{
	struct worker *w = r->w;
	const char *kernel = NULL, *initrd = NULL, *cmdline = "";
	const char *kernel_name = NULL, *initrd_name = NULL;
	const char *on_reboot = "restart", *log_path = NULL;
	const char *lost_ticks = "slew";
	int64_t memory_mib = 0, vcpus = 0, backlog_max = 0;
	struct display_config dcfg;
	bool has_display;
	char err[512];
	int ret;

	if (w->ended)
		return worker_error(r, PROTO_ERR_BAD_STATE, "worker exiting");
	if (w->booted)
		return worker_error(r, PROTO_ERR_BAD_STATE, "already booted");
	if (worker_display_args(r->args, &dcfg, &has_display, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "kernel", 1, &kernel, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "initrd", 0, &initrd, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "kernel_name", 0, &kernel_name, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "initrd_name", 0, &initrd_name, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "cmdline", 0, &cmdline, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "on_reboot", 0, &on_reboot, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "console_log", 0, &log_path, err,
	    sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "memory_mib", 1, 16, 262144, &memory_mib,
	    err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "vcpus", 1, 1, 64, &vcpus, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "lost_tick_policy", 0, &lost_ticks, err,
	    sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "rtc_backlog_max", 0, 0, 65536,
	    &backlog_max, err, sizeof(err)) < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);
	if (strcmp(lost_ticks, "slew") != 0 &&
	    strcmp(lost_ticks, "discard") != 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "lost_tick_policy: expected \"slew\" or \"discard\"");

	/*
	 * kernel and initrd are normally /proc/self/fd/N: descriptors the
	 * supervisor opened after checking them and left to us, so that
	 * every (re)boot loads those very files.  Messages name the paths
	 * the user gave (kernel_name), not those.
	 */
	w->kernel = worker_strdup_or_null(kernel);
	w->initrd = worker_strdup_or_null(initrd);
	w->cmdline = worker_strdup_or_null(cmdline);
	w->kernel_name = worker_strdup_or_null(kernel_name != NULL ?
	    kernel_name : kernel);
	if (w->kernel == NULL || w->cmdline == NULL ||
	    w->kernel_name == NULL || (initrd != NULL && w->initrd == NULL))
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	log_debug("%s: kernel %s, initrd %s", w->name, w->kernel_name,
	    initrd_name != NULL ? initrd_name : initrd != NULL ? initrd :
	    "none");
	w->cfg = (struct machine_config){
		.kernel = w->kernel,
		.initrd = w->initrd,
		.kernel_name = w->kernel_name,
		.cmdline = w->cmdline,
		.memory_mib = memory_mib,
		.vcpus = vcpus,
	};
	/* The battery starts new: the first machine fills it in. */
	w->cfg.backends.rtc = RTC_CONFIG_DEFAULT;
	w->cfg.backends.rtc.lost_ticks = strcmp(lost_ticks, "discard") == 0 ?
	    RTC_LOST_TICKS_DISCARD : RTC_LOST_TICKS_SLEW;
	w->cfg.backends.rtc.backlog_max = (unsigned int)backlog_max;
	w->cfg.backends.rtc.battery = &w->rtc_battery;
	w->reboot_stops = strcmp(on_reboot, "stop") == 0;

	/* Kept for every machine of this guest: once sandboxed, the
	 * worker cannot open it again. */
	if (w->kvm_fd < 0 && (w->kvm_fd = kvm_open()) < 0) {
		ret = w->kvm_fd;
		w->kvm_fd = -1;
		snprintf(err, sizeof(err), "cannot open /dev/kvm: %s",
		    strerror(-ret));
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	w->cfg.kvm_fd = w->kvm_fd;
	w->read_files = has_display && dcfg.web_dir != NULL;
	w->console = console_new(w->base, log_path, &ret);
	if (w->console == NULL) {
		snprintf(err, sizeof(err), "console log %s: %s",
		    log_path ? log_path : "-", strerror(-ret));
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	if (has_display &&
	    (ret = guest_display_new(w, &dcfg, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL || ret == -EADDRINUSE ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	ret = guest_build(w, err, sizeof(err));
	if (ret < 0) {
		/* A kernel we cannot load is the caller's problem. */
		bool bad_input = ret == -ENOEXEC || ret == -EINVAL ||
		    ret == -ENOENT || ret == -EACCES || ret == -E2BIG ||
		    ret == -EFBIG || ret == -ENOSPC || ret == -EISDIR;
		return worker_error(r, bad_input ? PROTO_ERR_INVALID_ARGUMENT :
		    PROTO_ERR_INTERNAL, err);
	}
	w->booted = true;
	log_info("%s: guest running (%u vCPUs, %llu MiB)", w->name,
	    w->cfg.vcpus, (unsigned long long)w->cfg.memory_mib);
	return worker_ok(r, NULL);
}

static bool
worker_need_machine(struct worker_request *r, struct json_object **reply)
{
	if (r->w->machine != NULL)
		return true;
	*reply = worker_error(r, PROTO_ERR_BAD_STATE,
	    r->w->ended ? "guest has stopped" :
	    r->w->booted ? "guest is restarting" : "guest not booted");
	return false;
}

static struct json_object *
worker_cmd_pause(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	/* vCPUs blocked on the framebuffer must get out to park. */
	display_quiesce(r->w->display);
	machine_pause(r->w->machine);
	guest_state_event(r->w, "paused");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_resume(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	machine_resume(r->w->machine);
	display_resume(r->w->display);
	guest_state_event(r->w, "running");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_reset(struct worker_request *r)
{
	struct worker *w = r->w;
	struct json_object *reply;
	char err[512];

	if (!worker_need_machine(r, &reply))
		return reply;
	guest_teardown(w);
	/* A reset or power-off the old machine reported is moot now. */
	guest_forget_hold(w);
	if (guest_build(w, err, sizeof(err)) < 0) {
		log_error("%s: cannot reset guest: %s", w->name, err);
		worker_exit(w, 1);
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	w->reboots++;
	/* A vm.pause handled just before left vmmd calling it paused. */
	guest_state_event(w, "running");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_shutdown(struct worker_request *r)
{
	struct json_object *reply;
	int ret;

	/* Already down: what was asked for. */
	if (r->w->ended && r->w->booted)
		return worker_ok(r, NULL);
	if (!worker_need_machine(r, &reply))
		return reply;
	r->w->shutdown_pending = true;
	/* A paused guest cannot react to the keys. */
	machine_resume(r->w->machine);
	display_resume(r->w->display);
	ret = machine_ctrl_alt_del(r->w->machine);
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL,
		    "keyboard buffer full");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_info(struct worker_request *r)
{
	return worker_ok(r, info_json(r->w));
}

static struct json_object *
worker_cmd_console(struct worker_request *r)
{
	struct json_object *client_id = NULL;
	int ret;

	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_BAD_REQUEST,
		    "worker.console needs a descriptor");
	if (r->w->console == NULL) {
		close(r->fd);
		r->fd = -1;
		return worker_error(r, PROTO_ERR_BAD_STATE, "guest not booted");
	}
	json_object_object_get_ex(r->args, "client_id", &client_id);
	ret = console_attach(r->w->console, r->fd, client_id);
	r->fd = -1;
	if (ret == -EUSERS)
		return proto_error(r->id, PROTO_ERR_LIMIT, "%d console "
		    "clients are attached already, the most a VM serves",
		    CONSOLE_CLIENTS_MAX);
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, strerror(-ret));
	return worker_ok(r, NULL);
}

static bool
worker_need_display(struct worker_request *r, struct json_object **reply)
{
	if (r->w->display != NULL)
		return true;
	*reply = worker_error(r, PROTO_ERR_BAD_STATE, "VM has no display");
	return false;
}

static struct json_object *
worker_cmd_display(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_display(r, &reply))
		return reply;
	return worker_ok(r, display_info_json(r->w->display));
}

/* Like worker.console: the reply to the client goes on its connection. */
static struct json_object *
worker_cmd_screenshot(struct worker_request *r)
{
	struct json_object *client_id = NULL, *reply;
	int ret;

	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_BAD_REQUEST,
		    "worker.screenshot needs a descriptor");
	if (!worker_need_display(r, &reply)) {
		close(r->fd);
		r->fd = -1;
		return reply;
	}
	/* The image would not get out: the display goes with the process. */
	if (r->w->ended) {
		close(r->fd);
		r->fd = -1;
		return worker_error(r, PROTO_ERR_BAD_STATE,
		    "guest has stopped");
	}
	json_object_object_get_ex(r->args, "client_id", &client_id);
	ret = display_screenshot(r->w->display, r->fd, client_id);
	r->fd = -1;
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, strerror(-ret));
	return worker_ok(r, NULL);
}

static const struct {
	const char *name;
	worker_handler fn;
	bool takes_fd;
} worker_commands[] = {
	{ "worker.boot", worker_cmd_boot, false },
	{ "worker.pause", worker_cmd_pause, false },
	{ "worker.resume", worker_cmd_resume, false },
	{ "worker.reset", worker_cmd_reset, false },
	{ "worker.shutdown", worker_cmd_shutdown, false },
	{ "worker.info", worker_cmd_info, false },
	{ "worker.console", worker_cmd_console, true },
	{ "worker.display", worker_cmd_display, false },
	{ "worker.screenshot", worker_cmd_screenshot, true },
};

void
requests_handle(struct worker *w, const char *line, size_t len)
{
	struct proto_request req;
	struct worker_request r = { .w = w, .fd = -1 };
	struct json_object *id = NULL, *reply = NULL;
	char desc[256];
	size_t i;
	int ret;

	ret = proto_parse_request(line, len, &req, &id, desc, sizeof(desc));
	if (ret != 0) {
		link_send(w->link, proto_error(id, ret, "%s", desc));
		json_object_put(id);
		return;
	}
	r.id = req.id;
	r.args = req.arguments;
	for (i = 0; i < sizeof(worker_commands) / sizeof(worker_commands[0]);
	    i++) {
		if (strcmp(req.command, worker_commands[i].name) != 0)
			continue;
		if (worker_commands[i].takes_fd)
			r.fd = link_take_fd(w->link);
		reply = worker_commands[i].fn(&r);
		break;
	}
	if (r.fd >= 0)
		close(r.fd);
	if (i == sizeof(worker_commands) / sizeof(worker_commands[0]))
		reply = proto_error(req.id, PROTO_ERR_UNKNOWN_COMMAND,
		    "unknown command '%s'",
		    req.command);
	link_send(w->link, reply);
	json_object_put(req.root);
}

