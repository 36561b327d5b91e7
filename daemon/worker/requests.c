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
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
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
#include "stats.h"
#include "shutdown.h"
#include "test-hook.h"

#define WORKER_SHUTDOWN_TIMEOUT_DEFAULT	30	/* seconds */

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

/*
 * worker.boot's disks: [{"fd": N, "path": PATH, "readonly": B,
 * "serial": ID}], descriptors the supervisor opened with the rights of
 * the client who started the VM.  Each becomes a backend that outlives
 * guest resets.
 */
static int
worker_disks(struct worker *w, struct json_object *args, char *err,
    size_t errlen)
{
	struct json_object *arr, *o;
	const char *name, *serial;
	int64_t fd;
	int ro, ret;
	size_t i, n;

	if (!json_object_object_get_ex(args, "disks", &arr) || arr == NULL)
		return 0;
	if (!json_object_is_type(arr, json_type_array) ||
	    (n = json_object_array_length(arr)) > BOARD_MAX_DISKS) {
		snprintf(err, errlen, "disks: an array of at most %d",
		    BOARD_MAX_DISKS);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(arr, i);
		name = serial = NULL;
		ro = 0;
		if (proto_arg_int(o, "fd", 1, 3, INT32_MAX, &fd, err,
		    errlen) < 0 ||
		    proto_arg_string(o, "path", 1, &name, err, errlen) < 0 ||
		    proto_arg_bool(o, "readonly", 0, &ro, err, errlen) < 0 ||
		    proto_arg_string(o, "serial", 0, &serial, err, errlen) < 0)
			return -EINVAL;
		ret = blk_file_new(&w->disks[i], (int)fd, ro != 0, serial,
		    &w->cfg.backends.disk[i]);
		if (ret < 0) {
			snprintf(err, errlen, "disk %s: %s", name,
			    ret == -EINVAL ? "not a raw image of at least "
			    "one sector" : strerror(-ret));
			return ret;
		}
		w->cfg.backends.ndisks = (unsigned int)i + 1;
	}
	return 0;
}

/*
 * worker.boot's net: {"fd": N, "tap": NAME, "mac": MAC}, a TAP the
 * supervisor attached (see net-tap.h), for a virtio-net.
 */
static int
worker_net(struct worker *w, struct json_object *args, char *err,
    size_t errlen)
{
	struct json_object *o;
	const char *tap, *mac;
	char name[IFNAMSIZ];
	uint8_t addr[6];
	int64_t fd;
	int ret;

	if (!json_object_object_get_ex(args, "net", &o) || o == NULL)
		return 0;
	if (proto_arg_int(o, "fd", 1, 3, INT32_MAX, &fd, err, errlen) < 0 ||
	    proto_arg_string(o, "tap", 1, &tap, err, errlen) < 0 ||
	    proto_arg_string(o, "mac", 1, &mac, err, errlen) < 0)
		return -EINVAL;
	if (proto_parse_mac(mac, addr) < 0 || (addr[0] & 1)) {
		snprintf(err, errlen, "net: mac: expected a unicast address "
		    "as xx:xx:xx:xx:xx:xx");
		return -EINVAL;
	}
	ret = net_tap_new(&w->net, w->base, (int)fd, addr,
	    &w->cfg.backends.net, name);
	if (ret < 0) {
		snprintf(err, errlen, "net: tap %s: %s", tap,
		    ret == -EINVAL ? "not a TAP device with virtio headers" :
		    strerror(-ret));
		return ret;
	}
	w->cfg.backends.has_net = true;
	log_debug("%s: net on tap %s, mac %s", w->name, name, mac);
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
	int64_t memory_mib = 0, vcpus = 0, backlog_max = 0, slices = 0;
	int64_t log_max = 0;
	int64_t adopt_fd = -1, log_start = 0, started_ms = w->started_ms;
	int64_t kvm_fd = -1;
	struct json_object *definition = NULL;
	int rng = 0;
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
	    &backlog_max, err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "rtc_slices", 0, RTC_SLICES_MIN,
	    RTC_SLICES_MAX, &slices, err, sizeof(err)) < 0 ||
	    proto_arg_bool(r->args, "rng", 0, &rng, err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "console_log_max", 0, 0, INT64_MAX,
	    &log_max, err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "adopt_fd", 0, 3, 1023, &adopt_fd, err,
	    sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "kvm_fd", 0, 3, 1023, &kvm_fd, err,
	    sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "log_start", 0, 0, INT64_MAX, &log_start,
	    err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "started_ms", 0, 0, INT64_MAX, &started_ms,
	    err, sizeof(err)) < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);
	if (json_object_object_get_ex(r->args, "definition", &definition) &&
	    !json_object_is_type(definition, json_type_object))
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "definition: expected an object");
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
	if (slices != 0)
		w->cfg.backends.rtc.max_slices = (unsigned int)slices;
	w->cfg.backends.rtc.battery = &w->rtc_battery;
	w->cfg.backends.rng = rng != 0;
	if ((ret = worker_disks(w, r->args, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	if ((ret = worker_net(w, r->args, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	w->reboot_stops = strcmp(on_reboot, "stop") == 0;
	w->log_start = log_start;
	w->started_ms = started_ms;
	json_object_put(w->definition);
	w->definition = json_object_get(definition);
	/*
	 * The socket a later supervisor adopts us on: from now on the
	 * guest outlives the link.  Without one (or if it is no listening
	 * socket) the guest ends with its supervisor, as it always did.
	 */
	if (adopt_fd >= 0 && w->relink == NULL) {
		w->relink = relink_new(w->base, (int)adopt_fd, &w->link,
		    &w->link_handlers, &ret);
		if (w->relink == NULL)
			log_warn("%s: adoption socket %lld: %s: the guest "
			    "will not outlive vmmd", w->name,
			    (long long)adopt_fd, strerror(-ret));
	}

	/*
	 * Kept for every machine of this guest: once sandboxed, the
	 * worker cannot open it again.  vmmd passes it (kvm_fd); a worker
	 * started by hand opens it itself.
	 */
	if (w->kvm_fd < 0 && kvm_fd >= 0) {
		if (kvm_check((int)kvm_fd) < 0)
			return worker_error(r, PROTO_ERR_INTERNAL, "kvm_fd: "
			    "not /dev/kvm, or a KVM of another API version");
		w->kvm_fd = (int)kvm_fd;
	}
	if (w->kvm_fd < 0 && (w->kvm_fd = kvm_open()) < 0) {
		ret = w->kvm_fd;
		w->kvm_fd = -1;
		snprintf(err, sizeof(err), "cannot open /dev/kvm: %s",
		    strerror(-ret));
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	w->cfg.kvm_fd = w->kvm_fd;
	w->read_files = has_display && dcfg.web_dir != NULL;
	w->console = console_new(w->base, log_path, (uint64_t)log_max, &ret);
	if (w->console == NULL) {
		snprintf(err, sizeof(err), "console log %s: %s",
		    log_path ? log_path : "-", ret == -ELOOP ?
		    "it (or its .1) is a symbolic link: not followed" :
		    ret == -EINVAL ? "it (or its .1) is not a regular file" :
		    strerror(-ret));
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

/*
 * worker.shutdown {"timeout": seconds}: the supervisor's deadline, half
 * of which the guest gets to answer the power button (default 30 s).
 */
static struct json_object *
worker_cmd_shutdown(struct worker_request *r)
{
	static const char *const keys[] = { "timeout", NULL };
	struct json_object *reply, *ret_obj;
	int64_t timeout = WORKER_SHUTDOWN_TIMEOUT_DEFAULT;
	char err[128];
	int ret;

	/* Already down: what was asked for. */
	if (r->w->ended && r->w->booted)
		return worker_ok(r, NULL);
	if (!worker_need_machine(r, &reply))
		return reply;
	if (proto_args_check(r->args, keys, err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "timeout", 0, 1, INT32_MAX, &timeout,
	    err, sizeof(err)) < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);
	r->w->shutdown_pending = true;
	/* A paused guest can react to neither the button nor the keys. */
	machine_resume(r->w->machine);
	display_resume(r->w->display);
	ret = shutdown_begin(r->w, timeout * 1000, err, sizeof(err));
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	ret_obj = json_object_new_object();
	json_object_object_add(ret_obj, "method", json_object_new_string(
	    shutdown_stage_name(r->w->shutdown_stage)));
	return worker_ok(r, ret_obj);
}

static struct json_object *
worker_cmd_info(struct worker_request *r)
{
	return worker_ok(r, info_json(r->w));
}

static struct json_object *
worker_cmd_stats(struct worker_request *r)
{
	static const char *const keys[] = {
		"enable", "reset", "vcpu", "segments", "kvm", NULL,
	};
	struct stats_request sr = { .enable = -1, .vcpu = -1 };
	struct json_object *reply, *ret;
	int reset = 0, segments = 0, kvm = 0, ret_code;
	int64_t vcpu = -1;
	char err[256];

	if (proto_args_check(r->args, keys, err, sizeof(err)) < 0 ||
	    proto_arg_bool(r->args, "enable", 0, &sr.enable, err,
	    sizeof(err)) < 0 ||
	    proto_arg_bool(r->args, "reset", 0, &reset, err,
	    sizeof(err)) < 0 ||
	    proto_arg_bool(r->args, "segments", 0, &segments, err,
	    sizeof(err)) < 0 ||
	    proto_arg_bool(r->args, "kvm", 0, &kvm, err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "vcpu", 0, 0, 63, &vcpu, err,
	    sizeof(err)) < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);
	if (!worker_need_machine(r, &reply))
		return reply;
	sr.reset = reset != 0;
	sr.segments = segments != 0;
	sr.kvm = kvm != 0;
	sr.vcpu = (int)vcpu;
	ret_code = stats_json(r->w, &sr, &ret, err, sizeof(err));
	if (ret_code < 0)
		return worker_error(r, ret_code == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	return worker_ok(r, ret);
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

/*
 * What a supervisor that adopts a running worker needs to take it on:
 * the guest's state, when the worker started, where the run's console
 * output began, and the definition the supervisor booted it with (a
 * transient VM has no other copy).
 */
static struct json_object *
worker_cmd_adopt(struct worker_request *r)
{
	struct worker *w = r->w;
	struct json_object *ret;

	if (!w->booted || w->ended)
		return worker_error(r, PROTO_ERR_BAD_STATE, w->ended ?
		    "guest has stopped" : "guest not booted");
	if ((ret = json_object_new_object()) == NULL)
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	json_object_object_add(ret, "name", json_object_new_string(w->name));
	json_object_object_add(ret, "state", json_object_new_string(
	    w->shutdown_pending ? "stopping" : w->paused ? "paused" :
	    "running"));
	json_object_object_add(ret, "pid", json_object_new_int64(
	    test_hook_adopt_pid(getpid())));
	/* The next supervisor hands out no other guest this uid. */
	json_object_object_add(ret, "uid", json_object_new_int64(getuid()));
	json_object_object_add(ret, "started_ms",
	    json_object_new_int64(w->started_ms));
	json_object_object_add(ret, "log_start",
	    json_object_new_int64(w->log_start));
	json_object_object_add(ret, "definition",
	    json_object_get(w->definition));
	return worker_ok(r, ret);
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
	{ "worker.stats", worker_cmd_stats, false },
	{ "worker.console", worker_cmd_console, true },
	{ "worker.display", worker_cmd_display, false },
	{ "worker.screenshot", worker_cmd_screenshot, true },
	{ "worker.adopt", worker_cmd_adopt, false },
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

