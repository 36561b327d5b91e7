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

int
cmd_snapshot(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_KEEP_RUNNING = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "keep-running", no_argument,	NULL,	OPT_KEEP_RUNNING },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *args, *ret = NULL;
	char dir[PATH_MAX], what[PATH_MAX + 64];
	struct client *cl;
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
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name",
	    json_object_new_string(argv[optind]));
	json_object_object_add(args, "dir", json_object_new_string(dir));
	json_object_object_add(args, "keep_running",
	    json_object_new_boolean(keep));
	r = client_call(cl, what, "vm.snapshot", args, &ret, 0);
	client_free(cl);
	if (r != 0)
		return r;
	if (ctl->json)
		ctl_print_json(ret);
	else
		printf("%s: snapshot in %s, the VM %s\n", argv[optind], dir,
		    keep ? "running on" : "stopped");
	json_object_put(ret);
	return CTL_EXIT_OK;
}

/* vmctl restore NAME DIR: vm.restore, DIR named by its absolute path. */
int
cmd_restore(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args, *ret = NULL;
	char dir[PATH_MAX], what[PATH_MAX + 64];
	struct client *cl;
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME DIR")) != 0)
		return r;
	snprintf(what, sizeof(what), "restore %s", argv[optind]);
	if (realpath(argv[optind + 1], dir) == NULL)
		return ctl_error(NULL, what, "failed", strerror(errno));
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name",
	    json_object_new_string(argv[optind]));
	json_object_object_add(args, "dir", json_object_new_string(dir));
	r = client_call(cl, what, "vm.restore", args, &ret, 0);
	client_free(cl);
	if (r != 0)
		return r;
	if (ctl->json)
		ctl_print_json(ret);
	else
		printf("%s: restored from %s, running\n", argv[optind], dir);
	json_object_put(ret);
	return CTL_EXIT_OK;
}
