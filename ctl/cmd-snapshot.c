/*
 * vmctl snapshot NAME DIR [--keep-running]: vm.snapshot into DIR, made
 * here with the user's own rights if it does not exist (vmmd writes
 * into it only what the user may write there), named to vmmd by its
 * absolute path.  vmctl restore DIR [--as NEWNAME] (or the older
 * vmctl restore NAME DIR): vm.restore from it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "client.h"
#include "create-args.h"
#include "vmctl.h"

/* --watch: a vm.progress event of the call's VM, on stderr. */
static void
cmd_snapshot_event(struct json_object *ev, void *arg)
{
	const char *vm = arg;
	struct json_object *o, *data;
	const char *name, *phase;

	if (!json_object_object_get_ex(ev, "event", &o) ||
	    strcmp(json_object_get_string(o), "vm.progress") != 0 ||
	    !json_object_object_get_ex(ev, "vm", &o) ||
	    (name = json_object_get_string(o)) == NULL ||
	    (vm != NULL && strcmp(name, vm) != 0) ||
	    !json_object_object_get_ex(ev, "data", &data) ||
	    !json_object_object_get_ex(data, "phase", &o) ||
	    (phase = json_object_get_string(o)) == NULL)
		return;
	if (json_object_object_get_ex(data, "bytes", &o)) {
		int64_t bytes = json_object_get_int64(o), total = 0;

		if (json_object_object_get_ex(data, "total", &o))
			total = json_object_get_int64(o);
		fprintf(stderr, "%s: %s: %lld of %lld KiB\n", name, phase,
		    (long long)(bytes >> 10), (long long)(total >> 10));
	} else
		fprintf(stderr, "%s: %s\n", name, phase);
}

/*
 * Calls method (vm.snapshot or vm.restore) on vmmd with the arguments
 * name (unless NULL), as (unless NULL), dir (absolute), settings
 * (unless NULL; the reference is taken) and, when keep_running >= 0,
 * keep_running; what names the call in errors.  With
 * watch, the call's progress events are printed on stderr as they come
 * (those of the VM name or as names; every one when both are NULL).  On
 * success *ret holds the reply (the caller's to put), printed already
 * under --json; else the exit code.
 */
static int
cmd_snapshot_call(struct ctl *ctl, const char *what, const char *method,
    const char *name, const char *as, const char *dir,
    struct json_object *settings, int keep_running, bool watch,
    struct json_object **ret)
{
	struct json_object *args;
	struct client *cl;
	int r;

	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(settings);
		return r;
	}
	if (watch) {
		if ((r = client_call(cl, what, "events.subscribe", NULL, NULL,
		    0)) != 0) {
			json_object_put(settings);
			client_free(cl);
			return r;
		}
		client_on_event(cl, cmd_snapshot_event, (void *)(uintptr_t)
		    (name != NULL ? name : as));
	}
	args = json_object_new_object();
	if (name != NULL)
		json_object_object_add(args, "name",
		    json_object_new_string(name));
	if (as != NULL)
		json_object_object_add(args, "as", json_object_new_string(as));
	json_object_object_add(args, "dir", json_object_new_string(dir));
	if (settings != NULL)
		json_object_object_add(args, "settings", settings);
	if (keep_running >= 0)
		json_object_object_add(args, "keep_running",
		    json_object_new_boolean(keep_running));
	r = client_call(cl, what, method, args, ret, 0);
	client_free(cl);
	if (r == 0 && ctl->json)
		ctl_print_json(*ret);
	return r;
}

int
cmd_snapshot(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_KEEP_RUNNING = 0x100, OPT_WATCH };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "keep-running", no_argument,	NULL,	OPT_KEEP_RUNNING },
		{ "watch",	no_argument,	NULL,	OPT_WATCH },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *ret = NULL;
	char dir[PATH_MAX], what[PATH_MAX + 64];
	bool keep = false, watch = false;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_KEEP_RUNNING) {
			keep = true;
			continue;
		}
		if (c == OPT_WATCH) {
			watch = true;
			continue;
		}
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME DIR")) != 0)
		return r;
	snprintf(what, sizeof(what), "snapshot %s", argv[optind]);
	if (mkdir(argv[optind + 1], 0700) < 0 && errno != EEXIST)
		return ctl_error(NULL, what, "failed", strerror(errno));
	if (realpath(argv[optind + 1], dir) == NULL)
		return ctl_error(NULL, what, "failed", strerror(errno));
	if ((r = cmd_snapshot_call(ctl, what, "vm.snapshot", argv[optind],
	    NULL, dir, NULL, keep, watch, &ret)) != 0)
		return r;
	if (!ctl->json) {
		struct json_object *disks = json_object_object_get(ret,
		    "snapshot_disks");

		printf("%s: snapshot in %s, the VM %s\n", argv[optind], dir,
		    keep ? "running on" : "stopped");
		/* What the snapshot holds of each disk, and what it shares. */
		for (size_t i = 0; json_object_is_type(disks, json_type_array) &&
		    i < json_object_array_length(disks); i++)
			printf("  %s\n", json_object_get_string(
			    json_object_array_get_idx(disks, i)));
	}
	json_object_put(ret);
	return CTL_EXIT_OK;
}

/*
 * vmctl restore DIR [--as NEWNAME [--net SPEC]...]: vm.restore, DIR
 * named by its absolute path, --net as create's into "settings" (the
 * clone's cards' backends); the older vmctl restore NAME DIR restores
 * into the existing VM NAME.
 */
int
cmd_restore(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_AS = 0x100, OPT_WATCH, OPT_NET };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "as",		required_argument, NULL, OPT_AS },
		{ "net",	required_argument, NULL, OPT_NET },
		{ "watch",	no_argument,	NULL,	OPT_WATCH },
		{ NULL, 0, NULL, 0 },
	};
	bool watch = false;
	struct json_object *ret = NULL, *o, *settings = NULL;
	const char *as = NULL, *name = NULL, *path, *shown;
	char dir[PATH_MAX], what[PATH_MAX + 64];
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_AS) {
			as = optarg;
			continue;
		}
		if (c == OPT_WATCH) {
			watch = true;
			continue;
		}
		if (c == OPT_NET) {
			if (settings == NULL)
				settings = json_object_new_object();
			if ((r = create_args_net(ctl, settings, optarg)) >= 0) {
				json_object_put(settings);
				return r;
			}
			continue;
		}
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0) {
			json_object_put(settings);
			return r;
		}
	}
	if (settings != NULL && as == NULL) {
		json_object_put(settings);
		return ctl_usage(ctl, "--net: only with --as (a clone's "
		    "network cards)");
	}
	if (argc - optind == 2 && as == NULL) {
		name = argv[optind];
		path = argv[optind + 1];
	} else {
		if ((r = ctl_positional(ctl, argc, argv, 1, "DIR")) != 0) {
			json_object_put(settings);
			return r;
		}
		path = argv[optind];
	}
	snprintf(what, sizeof(what), "restore %s", name != NULL ? name :
	    as != NULL ? as : path);
	if (realpath(path, dir) == NULL) {
		json_object_put(settings);
		return ctl_error(NULL, what, "failed", strerror(errno));
	}
	if ((r = cmd_snapshot_call(ctl, what, "vm.restore", name, as, dir,
	    settings, -1, watch, &ret)) != 0)
		return r;
	if (!ctl->json) {
		shown = json_object_object_get_ex(ret, "name", &o) ?
		    json_object_get_string(o) : name != NULL ? name : "?";
		printf("%s: restored from %s, running\n", shown, dir);
	}
	json_object_put(ret);
	return CTL_EXIT_OK;
}
