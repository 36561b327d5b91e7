/*
 * vmctl snapshot NAME DIR [--keep-running]: vm.snapshot into DIR, made
 * here with the user's own rights if it does not exist (vmmd writes
 * into it only what the user may write there), named to vmmd by its
 * absolute path.  vmctl restore NAME DIR: vm.restore from it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "client.h"
#include "vmctl.h"

/*
 * Calls method (vm.snapshot or vm.restore) on vmmd with the arguments
 * name, dir (absolute) and, when keep_running >= 0, keep_running; what
 * names the call in errors.  On success *ret holds the reply (the
 * caller's to put), printed already under --json; else the exit code.
 */
static int
cmd_snapshot_call(struct ctl *ctl, const char *what, const char *method,
    const char *name, const char *dir, int keep_running,
    struct json_object **ret)
{
	struct json_object *args;
	struct client *cl;
	int r;

	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	json_object_object_add(args, "dir", json_object_new_string(dir));
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
	enum { OPT_KEEP_RUNNING = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "keep-running", no_argument,	NULL,	OPT_KEEP_RUNNING },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *ret = NULL;
	char dir[PATH_MAX], what[PATH_MAX + 64];
	bool keep = false;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_KEEP_RUNNING) {
			keep = true;
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
	    dir, keep, &ret)) != 0)
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

/* vmctl restore NAME DIR: vm.restore, DIR named by its absolute path. */
int
cmd_restore(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *ret = NULL;
	char dir[PATH_MAX], what[PATH_MAX + 64];
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME DIR")) != 0)
		return r;
	snprintf(what, sizeof(what), "restore %s", argv[optind]);
	if (realpath(argv[optind + 1], dir) == NULL)
		return ctl_error(NULL, what, "failed", strerror(errno));
	if ((r = cmd_snapshot_call(ctl, what, "vm.restore", argv[optind],
	    dir, -1, &ret)) != 0)
		return r;
	if (!ctl->json)
		printf("%s: restored from %s, running\n", argv[optind], dir);
	json_object_put(ret);
	return CTL_EXIT_OK;
}
