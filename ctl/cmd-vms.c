/*
 * The VM life-cycle commands: create, start, stop, pause, resume, reset,
 * delete, reset-disk, autostart, list and info.  Each one is a single request; the human output
 * is generic over the VM object's members, so that a member the daemon
 * adds later still shows up.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "client.h"
#include "console-attach.h"
#include "create-args.h"
#include "text-escape.h"
#include "vmctl.h"

/* "verb name", the prefix of this command's messages. */
static void
vm_what(struct ctl *ctl, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", ctl->cmd->name, name);
}

/* A scalar member as text; NULL when absent or null. */
static const char *
vm_scalar(struct json_object *v)
{
	if (v == NULL)
		return NULL;
	if (json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v) ? "yes" : "no";
	/* Strings as they are, numbers as JSON writes them. */
	return json_object_get_string(v);
}

static const char *
vm_member(struct json_object *vm, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(vm, key, &v))
		return NULL;
	return vm_scalar(v);
}

static const char *
vm_memory(struct json_object *vm, char *buf, size_t len)
{
	struct json_object *v;

	if (!json_object_object_get_ex(vm, "memory_mib", &v) ||
	    !json_object_is_type(v, json_type_int))
		return vm_scalar(v);
	ctl_format_mib(json_object_get_int64(v), buf, len);
	return buf;
}

/*
 * After command failed on name with bad_state: whether the VM is where
 * it was asked to go already (vm.start: running; vm.stop: not running).
 * Then the request succeeded, with a note on stderr, and *info is the
 * VM's vm.info (the caller puts it).  The daemon keeps refusing with
 * bad_state, a stable answer for other clients; vmctl(1) says so.
 */
static bool
vms_already(struct client *cl, const char *what, const char *command,
    const char *name, struct json_object **info)
{
	struct json_object *args;
	const char *state;
	bool start = strcmp(command, "vm.start") == 0;

	if ((!start && strcmp(command, "vm.stop") != 0) ||
	    strcmp(client_error_class(cl), "bad_state") != 0)
		return false;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	if (client_call(cl, what, "vm.info", args, info, CLIENT_QUIET) != 0)
		return false;
	state = vm_member(*info, "state");
	if (state != NULL && start && strcmp(state, "running") == 0) {
		ctl_note("%s: already running", what);
		return true;
	}
	if (state != NULL && !start && (strcmp(state, "defined") == 0 ||
	    strcmp(state, "stopped") == 0 || strcmp(state, "crashed") == 0)) {
		ctl_note("%s: not running (%s)", what, state);
		return true;
	}
	json_object_put(*info);
	*info = NULL;
	return false;
}

/*
 * Sends command {name, ...args} (args taken) on cl and prints the reply
 * with show (human) or as JSON with -j; an error names the VM when
 * several are asked for (multi).  Returns the exit status.
 */
static int
vms_call(struct ctl *ctl, struct client *cl, const char *command,
    const char *name, struct json_object *args,
    void (*show)(struct json_object *), int flags, bool multi)
{
	struct json_object *ret;
	char what[128];
	int r;

	if (args == NULL)
		args = json_object_new_object();
	if (name != NULL)
		json_object_object_add(args, "name",
		    json_object_new_string(name));
	vm_what(ctl, name != NULL ? name : "", what, sizeof(what));
	if (name == NULL)
		snprintf(what, sizeof(what), "%s", ctl->cmd->name);
	r = client_call(cl, what, command, args, &ret, flags | CLIENT_QUIET);
	if (r != 0 && client_error_class(cl)[0] != '\0' &&
	    !vms_already(cl, what, command, name, &ret))
		return ctl_error(multi ? name : NULL, what,
		    client_error_class(cl), client_error_desc(cl));
	else if (r != 0 && ret == NULL)
		return r;
	if (ctl->json)
		ctl_print_json(ret);
	else if (show != NULL)
		show(ret);
	json_object_put(ret);
	return CTL_EXIT_OK;
}

/* vms_call() on a connection of its own. */
static int
vms_request_flags(struct ctl *ctl, const char *command, const char *name,
    struct json_object *args, void (*show)(struct json_object *),
    int flags)
{
	struct client *cl;
	int r;

	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		return r;
	}
	r = vms_call(ctl, cl, command, name, args, show, flags, false);
	client_free(cl);
	return r;
}

static int
vms_request(struct ctl *ctl, const char *command, const char *name,
    struct json_object *args, void (*show)(struct json_object *))
{
	return vms_request_flags(ctl, command, name, args, show, 0);
}

/*
 * command for each NAME from optind on, in order, with the same args
 * (taken), each one reported; one connection.  Returns the exit status
 * of the first that failed, or 0.
 */
static int
vms_each(struct ctl *ctl, int argc, char **argv, const char *command,
    struct json_object *args, void (*show)(struct json_object *))
{
	struct json_object *copy;
	struct client *cl;
	int i, r, first = CTL_EXIT_OK;

	if (argc - optind < 1) {
		json_object_put(args);
		return ctl_syntax(ctl, "missing NAME");
	}
	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		return r;
	}
	for (i = optind; i < argc; i++) {
		copy = NULL;
		if (args != NULL && json_object_deep_copy(args, &copy,
		    NULL) < 0) {
			r = ctl_error(NULL, NULL, "failed", "out of memory");
			break;
		}
		r = vms_call(ctl, cl, command, argv[i], copy, show, 0,
		    argc - optind > 1);
		if (r != CTL_EXIT_OK && first == CTL_EXIT_OK)
			first = r;
		if (r == CTL_EXIT_CONN)
			break;
	}
	client_free(cl);
	json_object_put(args);
	return first != CTL_EXIT_OK ? first : r;
}

/* A create --from-file that found the VM as the file defines it. */
static void
create_show(struct json_object *vm)
{
	struct json_object *v;
	const char *name = vm_member(vm, "name");

	if (json_object_object_get_ex(vm, "existed", &v) &&
	    json_object_get_boolean(v))
		ctl_note("create %s: exists already, as defined",
		    name != NULL ? name : "");
}

/*
 * With --from-file, creating a VM that exists with that very definition
 * succeeds (vm.create's exist_ok), so that a script (a cluster's
 * resource agent) may define its VM at every start; another definition
 * under that name is still refused.
 */
int
cmd_create(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args;
	const char *name;
	bool from;
	int r;

	if ((r = create_args_parse(ctl, argc, argv, &args, &name, &from)) >= 0)
		return r;
	if (from)
		json_object_object_add(args, "exist_ok",
		    json_object_new_boolean(1));
	return vms_request_flags(ctl, "vm.create", name, args, create_show,
	    CLIENT_CLI_WORDS);
}

int
cmd_start(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_CONSOLE = 0x100, OPT_BREAK_LOCK };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "console",	no_argument,	NULL,	OPT_CONSOLE },
		{ "break-lock",	no_argument,	NULL,	OPT_BREAK_LOCK },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *args;
	struct client *cl;
	char what[128];
	enum console_end end = CONSOLE_FAILED;
	int c, r, console = 0, signo = 0, break_lock = 0;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_CONSOLE)
			console = 1;
		else if (c == OPT_BREAK_LOCK)
			break_lock = 1;
		else if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if (!console) {
		args = json_object_new_object();
		if (break_lock)
			json_object_object_add(args, "break_lock",
			    json_object_new_boolean(1));
		return vms_each(ctl, argc, argv, "vm.start", args, NULL);
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
		return r;

	/* vm.start, then vm.console on the same connection. */
	vm_what(ctl, argv[optind], what, sizeof(what));
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name",
	    json_object_new_string(argv[optind]));
	if (break_lock)
		json_object_object_add(args, "break_lock",
		    json_object_new_boolean(1));
	r = client_call(cl, what, "vm.start", args, NULL, 0);
	if (r == 0)
		r = console_attach(cl, what, argv[optind], &end, &signo);
	client_free(cl);
	return console_finish(r, end, signo);
}

/* A guest that had to be killed is not silently "stopped". */
static void
stop_show(struct json_object *vm)
{
	struct json_object *k;
	const char *name = vm_member(vm, "name");

	if (json_object_object_get_ex(vm, "killed", &k) &&
	    json_object_get_boolean(k))
		ctl_warnx("stop %s: the guest did not shut down in time: "
		    "killed", name != NULL ? name : "");
}

int
cmd_stop(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_FORCE = 0x100, OPT_TIMEOUT };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "force",	no_argument,		NULL,	OPT_FORCE },
		{ "timeout",	required_argument,	NULL,	OPT_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	static const int flags[] = { OPT_FORCE, 'h', 'j', 's', '?', ':', 0 };
	struct ctl_seen seen = { 0 };
	struct json_object *args;
	const char *again;
	int64_t timeout;
	int c, r;

	args = json_object_new_object();
	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if ((again = ctl_option_again(&seen, longopts, flags, c)) !=
		    NULL) {
			json_object_put(args);
			return ctl_usage(ctl, "--%s: given more than once",
			    again);
		}
		switch (c) {
		case OPT_FORCE:
			json_object_object_add(args, "force",
			    json_object_new_boolean(1));
			continue;
		case OPT_TIMEOUT:
			if (ctl_parse_number(optarg, 0, INT_MAX, &timeout) < 0) {
				json_object_put(args);
				return ctl_usage(ctl, "--timeout %s: not a "
				    "number of seconds", optarg);
			}
			json_object_object_add(args, "timeout",
			    json_object_new_int64(timeout));
			continue;
		}
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0) {
			json_object_put(args);
			return r;
		}
	}
	return vms_each(ctl, argc, argv, "vm.stop", args, stop_show);
}

static int
vm_simple(struct ctl *ctl, int argc, char **argv, const char *command,
    void (*show)(struct json_object *))
{
	const char *name;
	int r;

	if ((r = ctl_name_only(ctl, argc, argv, &name)) >= 0)
		return r;
	return vms_request(ctl, command, name, NULL, show);
}

int
cmd_pause(struct ctl *ctl, int argc, char **argv)
{
	return vm_simple(ctl, argc, argv, "vm.pause", NULL);
}

int
cmd_resume(struct ctl *ctl, int argc, char **argv)
{
	return vm_simple(ctl, argc, argv, "vm.resume", NULL);
}

int
cmd_reset(struct ctl *ctl, int argc, char **argv)
{
	return vm_simple(ctl, argc, argv, "vm.reset", NULL);
}

/* What delete removed and what it kept, one path a line. */
static void
delete_show(struct json_object *ret)
{
	static const char *const keys[] = { "removed", "kept" };
	struct json_object *a;
	size_t i, k;

	for (k = 0; k < 2; k++) {
		if (!json_object_object_get_ex(ret, keys[k], &a) ||
		    !json_object_is_type(a, json_type_array))
			continue;
		for (i = 0; i < json_object_array_length(a); i++)
			printf("%s: %s\n", keys[k], json_object_get_string(
			    json_object_array_get_idx(a, i)));
	}
}

/* delete NAME... [--remove-data]: the data is kept unless asked. */
int
cmd_delete(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_REMOVE_DATA = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "remove-data", no_argument,	NULL,	OPT_REMOVE_DATA },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *args;
	int c, r;

	args = json_object_new_object();
	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_REMOVE_DATA)
			json_object_object_add(args, "remove_data",
			    json_object_new_boolean(1));
		else if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0) {
			json_object_put(args);
			return r;
		}
	}
	return vms_each(ctl, argc, argv, "vm.delete", args, delete_show);
}

int
cmd_reset_disk(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args;
	char *end;
	long n;
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if (argc - optind == 1)
		return vms_request(ctl, "vm.reset_disk", argv[optind], NULL,
		    NULL);
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME and INDEX")) != 0)
		return r;
	errno = 0;
	n = strtol(argv[optind + 1], &end, 10);
	if (errno != 0 || end == argv[optind + 1] || *end != '\0' || n < 0 ||
	    n > INT_MAX)
		return ctl_usage(ctl, "'%s': a disk's index (0, 1, ...)",
		    argv[optind + 1]);
	args = json_object_new_object();
	json_object_object_add(args, "disk", json_object_new_int64(n));
	return vms_request(ctl, "vm.reset_disk", argv[optind], args, NULL);
}

int
cmd_autostart(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args;
	const char *onoff;
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME and on or off"))
	    != 0)
		return r;
	onoff = argv[optind + 1];
	if (strcmp(onoff, "on") != 0 && strcmp(onoff, "off") != 0)
		return ctl_usage(ctl, "'%s': on or off", onoff);
	args = json_object_new_object();
	json_object_object_add(args, "autostart",
	    json_object_new_boolean(strcmp(onoff, "on") == 0));
	return vms_request(ctl, "vm.autostart", argv[optind], args, NULL);
}

/*
 * Whether a VM without a kernel file boots from its first disk (vmmd-vm(5)
 * "boot": "disk", or unset with a disk), rather than the daemon's default
 * guest: list and info say the same.
 */
static bool
vm_boots_from_disk(struct json_object *vm)
{
	const char *boot = vm_member(vm, "boot");

	return (boot != NULL && strcmp(boot, "disk") == 0) ||
	    (boot == NULL && json_object_object_get_ex(vm, "disks", NULL));
}

/* --- list -------------------------------------------------------------- */

enum { LIST_NAME, LIST_STATE, LIST_VCPUS, LIST_MEMORY, LIST_KERNEL,
	LIST_NCOLS };

static const char *const list_header[LIST_NCOLS] = {
	"NAME", "STATE", "VCPUS", "MEMORY", "KERNEL",
};

/* One row of the table; mem is the buffer for the memory column. */
static void
list_row(struct json_object *vm, const char *cols[LIST_NCOLS], char *mem,
    size_t memlen)
{
	const char *s;

	cols[LIST_NAME] = (s = vm_member(vm, "name")) ? s : "?";
	cols[LIST_STATE] = (s = vm_member(vm, "state")) ? s : "?";
	cols[LIST_VCPUS] = (s = vm_member(vm, "vcpus")) ? s : "-";
	cols[LIST_MEMORY] = (s = vm_memory(vm, mem, memlen)) ? s : "-";
	cols[LIST_KERNEL] = (s = vm_member(vm, "kernel")) ? s :
	    vm_member(vm, "firmware") != NULL ? "(firmware)" :
	    vm_boots_from_disk(vm) ? "(first disk)" : "(default guest)";
}

static void
list_show(struct json_object *ret)
{
	struct json_object *vms;
	const char *cols[LIST_NCOLS];
	size_t i, n, width[LIST_NCOLS];
	char mem[32];
	int j;

	if (!json_object_object_get_ex(ret, "vms", &vms) ||
	    !json_object_is_type(vms, json_type_array))
		n = 0;
	else
		n = json_object_array_length(vms);
	for (j = 0; j < LIST_NCOLS; j++)
		width[j] = strlen(list_header[j]);
	for (i = 0; i < n; i++) {
		list_row(json_object_array_get_idx(vms, i), cols, mem,
		    sizeof(mem));
		for (j = 0; j < LIST_NCOLS; j++)
			if (strlen(cols[j]) > width[j])
				width[j] = strlen(cols[j]);
	}
	for (i = 0; i <= n; i++) {
		if (i == 0)
			memcpy(cols, list_header, sizeof(cols));
		else
			list_row(json_object_array_get_idx(vms, i - 1), cols,
			    mem, sizeof(mem));
		for (j = 0; j < LIST_NCOLS - 1; j++)
			printf("%-*s  ", (int)width[j], cols[j]);
		printf("%s\n", cols[j]);
	}
}

/* The states a VM object may name, as vmmd-protocol(7) lists them. */
static const char *const list_states[] = {
	"defined", "starting", "running", "paused", "stopping", "stopped",
	"crashed", NULL
};

/* The --state filter, and -j: what list prints (one list a run). */
static const char *list_state;
static int list_json;

static void
list_filtered(struct json_object *ret)
{
	struct json_object *vms, *keep, *vm;
	const char *s;
	size_t i;

	if (list_state != NULL &&
	    json_object_object_get_ex(ret, "vms", &vms) &&
	    json_object_is_type(vms, json_type_array)) {
		keep = json_object_new_array();
		for (i = 0; i < json_object_array_length(vms); i++) {
			vm = json_object_array_get_idx(vms, i);
			if ((s = vm_member(vm, "state")) != NULL &&
			    strcmp(s, list_state) == 0)
				json_object_array_add(keep,
				    json_object_get(vm));
		}
		json_object_object_add(ret, "vms", keep);
	}
	if (list_json)
		ctl_print_json(ret);
	else
		list_show(ret);
}

int
cmd_list(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_STATE = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "state",	required_argument,	NULL,	OPT_STATE },
		{ NULL, 0, NULL, 0 },
	};
	size_t i;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c != OPT_STATE) {
			if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
				return r;
			continue;
		}
		for (i = 0; list_states[i] != NULL; i++)
			if (strcmp(list_states[i], optarg) == 0)
				break;
		if (list_states[i] == NULL)
			return ctl_usage(ctl, "--state %s: one of defined, "
			    "starting, running, paused, stopping, stopped, "
			    "crashed", optarg);
		list_state = list_states[i];
	}
	if ((r = ctl_positional(ctl, argc, argv, 0, "")) != 0)
		return r;
	/* The filter applies to the JSON too: vms_request prints none. */
	list_json = ctl->json;
	ctl->json = 0;
	return vms_request(ctl, "vm.list", NULL, NULL, list_filtered);
}

/* --- info -------------------------------------------------------------- */

/* The definition's members, in this order, as "label: value". */
static const struct {
	const char *key;
	const char *label;
	const char *null;		/* shown for null */
} info_keys[] = {
	{ "name",	"name",		"-" },
	{ "uuid",	"uuid",		"-" },
	{ "state",	"state",	"-" },
	{ "reason",	"reason",	"-" },
	{ "uptime",	"uptime",	"-" },	/* seconds, of the worker */
	{ "pid",	"pid",		"-" },
	/* Shown only when true. */
	{ "worker_replaced", "worker",	"-" },
	{ "vsock_cid",	"vsock_cid",	"-" },	/* while it runs */
	{ "autostart",	"autostart",	"-" },
	{ "kernel",	"kernel",	"(default guest)" },
	{ "initrd",	"initrd",	"(none)" },
	{ "cdrom",	"cdrom",	"(none)" },
	{ "firmware",	"firmware",	"(none)" },
	{ "firmware_image", "firmware_image", "-" },
	{ "nvram",	"nvram",	"-" },	/* "uefi" VMs */
	{ "cmdline",	"cmdline",	"" },
	{ "memory_mib",	"memory",	"-" },
	{ "vcpus",	"vcpus",	"-" },
	{ "on_reboot",	"on_reboot",	"-" },
	{ "lost_tick_policy", "lost_tick_policy", "-" },
	{ "transient",	"transient",	"-" },
	{ "vnc",	"display",	"(none)" },
	{ "console_log", "console_log",	"-" },
};
#define INFO_NKEYS	(sizeof(info_keys) / sizeof(info_keys[0]))

/* Members the summary shows within others' lines, or not at all. */
static const char *const info_folded[] = {
	"display", "vnc_password", "vnc_web", "stats", NULL
};

/*
 * value on stdout, its control characters and invalid UTF-8 as \xNN:
 * values may come from a guest's disk (the command line its boot
 * configuration gave) and must not drive the terminal.
 */
static void
info_put(const char *value)
{
	size_t len = strlen(value), size = len * 4 + 1;
	char small[512], *buf = small;

	if (size > sizeof(small) && (buf = malloc(size)) == NULL) {
		buf = small;
		size = sizeof(small);
	}
	text_escape(buf, buf == small ? sizeof(small) : size, value, len);
	fputs(buf, stdout);
	if (buf != small)
		free(buf);
}

/* "label: value", the value as info_put() shows it. */
static void
info_line(const char *label, const char *value)
{
	printf("%s: ", label);
	info_put(value);
	putchar('\n');
}

/* Any other member as "prefix.key: value" lines, objects flattened. */
static void
info_generic(const char *prefix, const char *key, struct json_object *v)
{
	char name[256];
	size_t i;

	snprintf(name, sizeof(name), "%s%s%s", prefix,
	    prefix[0] != '\0' ? "." : "", key);
	if (json_object_is_type(v, json_type_object)) {
		json_object_object_foreach(v, k, sub)
			info_generic(name, k, sub);
		return;
	}
	if (!json_object_is_type(v, json_type_array)) {
		info_line(name, v != NULL ? vm_scalar(v) : "-");
		return;
	}
	for (i = 0; i < json_object_array_length(v); i++) {
		struct json_object *e = json_object_array_get_idx(v, i);

		if (json_object_is_type(e, json_type_object) ||
		    json_object_is_type(e, json_type_array))
			break;
	}
	if (i < json_object_array_length(v)) {
		/* Nested structures (one per vCPU...): "key.N.member". */
		for (i = 0; i < json_object_array_length(v); i++) {
			char idx[24];

			snprintf(idx, sizeof(idx), "%zu", i);
			info_generic(name, idx, json_object_array_get_idx(v, i));
		}
		return;
	}
	printf("%s:", name);
	for (i = 0; i < json_object_array_length(v); i++) {
		const char *s = vm_scalar(json_object_array_get_idx(v, i));

		fputs(i > 0 ? ", " : " ", stdout);
		info_put(s != NULL ? s : "-");
	}
	putchar('\n');
}

/*
 * More than one network card: a line each, "net.N: tap T, mac M" or
 * "net.N: user, mac M, forward F, F"; one card is an object, which
 * info_generic() shows as it always did.
 */
static void
info_nics(struct json_object *v)
{
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		struct json_object *card = json_object_array_get_idx(v, i), *fw;
		const char *tap = vm_member(card, "tap");
		const char *mac = vm_member(card, "mac");

		printf("net.%zu: ", i);
		if (tap != NULL) {
			fputs("tap ", stdout);
			info_put(tap);
		} else
			fputs("user", stdout);
		fputs(", mac ", stdout);
		info_put(mac != NULL ? mac : "-");
		if (json_object_object_get_ex(card, "forward", &fw) &&
		    json_object_is_type(fw, json_type_array))
			for (size_t k = 0; k < json_object_array_length(fw);
			    k++) {
				const char *f = vm_scalar(
				    json_object_array_get_idx(fw, k));

				fputs(k == 0 ? ", forward " : ", ", stdout);
				info_put(f != NULL ? f : "-");
			}
		putchar('\n');
	}
}

/* "3 d 04:05:06", "04:05:06". */
static const char *
info_uptime(int64_t s, char *buf, size_t len)
{
	if (s >= 86400)
		snprintf(buf, len, "%" PRId64 " d %02d:%02d:%02d", s / 86400,
		    (int)(s % 86400 / 3600), (int)(s % 3600 / 60),
		    (int)(s % 60));
	else
		snprintf(buf, len, "%02d:%02d:%02d", (int)(s / 3600),
		    (int)(s % 3600 / 60), (int)(s % 60));
	return buf;
}

/* "vnc 127.0.0.1:auto (1024x768, 1 viewer, password k3JdP9xq)". */
static const char *
info_display(struct json_object *vm, struct json_object *stats, char *buf,
    size_t len)
{
	struct json_object *disp, *v;
	const char *vnc = vm_member(vm, "vnc"), *size;
	int n;

	if (vnc == NULL)
		return NULL;
	size = vm_member(vm, "display");
	n = snprintf(buf, len, "vnc %s (%s", vnc, size != NULL ? size : "?");
	if (n > 0 && (size_t)n < len && stats != NULL &&
	    json_object_object_get_ex(stats, "display", &disp) &&
	    json_object_object_get_ex(disp, "clients", &v)) {
		int64_t c = json_object_get_int64(v);

		n += snprintf(buf + n, len - (size_t)n, ", %" PRId64
		    " viewer%s", c, c == 1 ? "" : "s");
	}
	if (n > 0 && (size_t)n < len && stats != NULL &&
	    json_object_object_get_ex(stats, "display", &disp) &&
	    json_object_object_get_ex(disp, "password", &v) &&
	    json_object_is_type(v, json_type_string))
		n += snprintf(buf + n, len - (size_t)n, ", password %s",
		    json_object_get_string(v));
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ")");
	return buf;
}

/* A size in bytes, as "N.N KiB", "N.N MiB" or "N.N GiB", into buf. */
static const char *
info_bytes(uint64_t n, char *buf, size_t len)
{
	if (n >= 1024ULL * 1024 * 1024)
		snprintf(buf, len, "%.1f GiB", (double)n / (1024 * 1024 * 1024));
	else if (n >= 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", (double)n / (1024 * 1024));
	else
		snprintf(buf, len, "%.1f KiB", (double)n / 1024);
	return buf;
}

/* The console log's path, with its size when we may see it. */
static const char *
info_console_log(const char *path, char *buf, size_t len)
{
	struct stat st;
	char size[32];

	if (path == NULL)
		return NULL;
	if (stat(path, &st) < 0) {
		snprintf(buf, len, "%s", path);
		return buf;
	}
	snprintf(buf, len, "%s (%s)", path, info_bytes((uint64_t)st.st_size,
	    size, sizeof(size)));
	return buf;
}

/*
 * Each disk's image as the worker reads it (stats.disks, vm.info): one
 * line a disk, its format, sizes, backing files and metadata cache.
 */
static void
info_disks(struct json_object *stats)
{
	struct json_object *disks, *d, *v, *chain;
	const char *format;
	char size[32], alloc[32];
	size_t i, k;

	if (!json_object_object_get_ex(stats, "disks", &disks) ||
	    !json_object_is_type(disks, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(disks); i++) {
		d = json_object_array_get_idx(disks, i);
		format = vm_member(d, "format");
		printf("disk %zu: %s, %s", i, format != NULL ? format : "?",
		    info_bytes(json_object_object_get_ex(d, "size", &v) ?
		    (uint64_t)json_object_get_int64(v) : 0, size,
		    sizeof(size)));
		/* An NBD disk's server keeps its allocation to itself. */
		if (json_object_object_get_ex(d, "allocated", &v))
			printf(", %s allocated", info_bytes(
			    (uint64_t)json_object_get_int64(v), alloc,
			    sizeof(alloc)));
		if (json_object_object_get_ex(d, "backing", &chain) &&
		    json_object_is_type(chain, json_type_array))
			for (k = 0; k < json_object_array_length(chain); k++)
				printf(", over %s", json_object_get_string(
				    json_object_array_get_idx(chain, k)));
		if (format != NULL && strcmp(format, "qcow2") == 0)
			printf(", metadata cache %s hits %s misses",
			    vm_member(d, "cache_hits") ?: "?",
			    vm_member(d, "cache_misses") ?: "?");
		if (format != NULL && strcmp(format, "nbd") == 0)
			printf(", %s, %s reads, %s writes, %s errors, %s "
			    "reconnects", vm_member(d, "state") ?: "?",
			    vm_member(d, "reads") ?: "?",
			    vm_member(d, "writes") ?: "?",
			    vm_member(d, "errors") ?: "?",
			    vm_member(d, "reconnects") ?: "?");
		if (format != NULL && strcmp(format, "rbd") == 0)
			printf(", %s, %s, %s reads, %s writes, %s errors, "
			    "as %s", vm_member(d, "state") ?: "?",
			    json_object_object_get_ex(d, "locked", &v) &&
			    json_object_get_boolean(v) ? "locked" :
			    "not locked", vm_member(d, "reads") ?: "?",
			    vm_member(d, "writes") ?: "?",
			    vm_member(d, "errors") ?: "?",
			    vm_member(d, "client") ?: "?");
		if (json_object_object_get_ex(d, "broken", &v) &&
		    json_object_get_boolean(v))
			printf(", DAMAGED: its writes fail");
		printf("\n");
	}
}

/*
 * The shared directory and its file server (stats.fs, vm.info): one
 * line, its state said plainly when the server failed or went away.
 */
static void
info_fs(struct json_object *stats)
{
	struct json_object *fs;
	const char *state;

	if (!json_object_object_get_ex(stats, "fs", &fs) ||
	    !json_object_is_type(fs, json_type_object))
		return;
	state = vm_member(fs, "state");
	printf("fs %s: %s", vm_member(fs, "tag") ?: "?",
	    vm_member(fs, "server") ?: "?");
	if (vm_member(fs, "pid") != NULL)
		printf(" (pid %s)", vm_member(fs, "pid"));
	printf(", %s%s", state != NULL ? state : "?",
	    vm_member(fs, "readonly") != NULL &&
	    strcmp(vm_member(fs, "readonly"), "true") == 0 ?
	    ", read-only" : "");
	if (state != NULL && strcmp(state, "gone") == 0)
		printf(": the server ended, the guest's requests on the "
		    "share fail");
	if (vm_member(fs, "error") != NULL)
		printf(": %s, the guest's requests on the share fail",
		    vm_member(fs, "error"));
	printf("\n");
}

/* The sum of an object's numbers. */
static uint64_t
info_sum(struct json_object *o)
{
	uint64_t sum = 0;

	if (!json_object_is_type(o, json_type_object))
		return 0;
	json_object_object_foreach(o, k, v) {
		(void)k;
		sum += (uint64_t)json_object_get_int64(v);
	}
	return sum;
}

/* One line for the exits the VMM handled: all, then per vCPU. */
static void
info_exits(struct json_object *stats)
{
	struct json_object *vcpus;
	uint64_t all = 0;
	size_t i, n;

	if (!json_object_object_get_ex(stats, "vcpu_exits", &vcpus) ||
	    !json_object_is_type(vcpus, json_type_array))
		return;
	n = json_object_array_length(vcpus);
	for (i = 0; i < n; i++)
		all += info_sum(json_object_array_get_idx(vcpus, i));
	printf("exits: %" PRIu64, all);
	for (i = 0; i < n; i++)
		printf("%svCPU %zu: %" PRIu64, i == 0 ? " (" : ", ", i,
		    info_sum(json_object_array_get_idx(vcpus, i)));
	printf("%s\n", n > 0 ? ")" : "");
}

static bool
info_is_folded(const char *key)
{
	size_t i;

	for (i = 0; info_folded[i] != NULL; i++)
		if (strcmp(info_folded[i], key) == 0)
			return true;
	for (i = 0; i < INFO_NKEYS; i++)
		if (strcmp(info_keys[i].key, key) == 0)
			return true;
	return false;
}

/*
 * No kernel file: what the disk's boot configuration gave, while the
 * guest runs ("boot_from"), or where it will come from.
 */
static const char *
info_kernel(struct json_object *vm, char *buf, size_t len)
{
	struct json_object *b;

	if (json_object_object_get_ex(vm, "boot_from", &b) && b != NULL) {
		snprintf(buf, len, "%s (from the disk: %s)",
		    vm_member(b, "kernel") != NULL ? vm_member(b, "kernel") :
		    "?", vm_member(b, "why") != NULL ? vm_member(b, "why") :
		    "?");
		return buf;
	}
	if (vm_member(vm, "firmware") != NULL)
		return "(none: the firmware boots from the disks)";
	if (vm_boots_from_disk(vm))
		return "(first disk, chosen at start)";
	return NULL;
}

/*
 * A summary: the settings, the state and why, uptime, pid, display,
 * console log, and the exits the VMM handled; with raw, every statistic
 * of the worker as well.
 */
static void
info_print(struct json_object *vm, bool raw)
{
	struct json_object *v, *b, *stats = NULL;
	const char *s;
	char buf[PATH_MAX + 64];
	size_t i;

	json_object_object_get_ex(vm, "stats", &stats);
	for (i = 0; i < INFO_NKEYS; i++) {
		if (!json_object_object_get_ex(vm, info_keys[i].key, &v) &&
		    strcmp(info_keys[i].key, "vnc") != 0)
			continue;
		if (strcmp(info_keys[i].key, "worker_replaced") == 0) {
			if (!json_object_get_boolean(v))
				continue;
			s = "replaced since it started: the guest's next start"
			    " runs the installed one";
		} else if (strcmp(info_keys[i].key, "memory_mib") == 0)
			s = vm_memory(vm, buf, sizeof(buf));
		else if (strcmp(info_keys[i].key, "uptime") == 0)
			s = info_uptime(json_object_get_int64(v), buf,
			    sizeof(buf));
		else if (strcmp(info_keys[i].key, "vnc") == 0)
			s = info_display(vm, stats, buf, sizeof(buf));
		else if (strcmp(info_keys[i].key, "console_log") == 0)
			s = info_console_log(vm_scalar(v), buf, sizeof(buf));
		else if (strcmp(info_keys[i].key, "kernel") == 0 && v == NULL)
			s = info_kernel(vm, buf, sizeof(buf));
		else if ((strcmp(info_keys[i].key, "initrd") == 0 ||
		    strcmp(info_keys[i].key, "cmdline") == 0) &&
		    json_object_object_get_ex(vm, "boot_from", &b) &&
		    b != NULL)
			/* What the disk gave rather than the definition. */
			s = vm_member(b, info_keys[i].key);
		else
			s = vm_scalar(v);
		info_line(info_keys[i].label, s != NULL ? s :
		    info_keys[i].null);
	}
	json_object_object_foreach(vm, key, val) {
		if (info_is_folded(key))
			continue;
		if (strcmp(key, "net") == 0 &&
		    json_object_is_type(val, json_type_array))
			info_nics(val);
		else
			info_generic("", key, val);
	}
	if (stats == NULL)
		return;
	if (json_object_object_get_ex(stats, "reboots", &v))
		printf("reboots: %s\n", vm_scalar(v));
	/* The guest's VM generation ID: new at each restore. */
	if (json_object_object_get_ex(stats, "generation_id", &v))
		printf("generation_id: %s\n", vm_scalar(v));
	info_disks(stats);
	info_fs(stats);
	info_exits(stats);
	/* The worker's statistics last: they are the long part. */
	if (raw)
		info_generic("", "stats", stats);
}

static void
info_show(struct json_object *vm)
{
	info_print(vm, false);
}

static void
info_show_raw(struct json_object *vm)
{
	info_print(vm, true);
}

int
cmd_info(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_STATS = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "stats",	no_argument,	NULL,	OPT_STATS },
		{ NULL, 0, NULL, 0 },
	};
	bool raw = false;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_STATS)
			raw = true;
		else if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
		return r;
	return vms_request(ctl, "vm.info", argv[optind], NULL,
	    raw ? info_show_raw : info_show);
}
