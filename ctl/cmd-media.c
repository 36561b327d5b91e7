/*
 * vmctl media NAME DEVICE --eject | --insert ISO [--force]: vm.media,
 * a running guest's CD-ROM ejected or given ISO (named to vmmd by its
 * absolute path, which vmmd opens with the user's rights).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "client.h"
#include "vmctl.h"

int
cmd_media(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_EJECT = 0x100, OPT_INSERT, OPT_FORCE };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "eject",	no_argument,		NULL,	OPT_EJECT },
		{ "insert",	required_argument,	NULL,	OPT_INSERT },
		{ "force",	no_argument,		NULL,	OPT_FORCE },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *args, *ret = NULL;
	char iso[PATH_MAX], what[PATH_MAX + 64];
	const char *insert = NULL;
	bool eject = false, force = false;
	struct client *cl;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_EJECT)
			eject = true;
		else if (c == OPT_INSERT)
			insert = optarg;
		else if (c == OPT_FORCE)
			force = true;
		else if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME DEVICE")) != 0)
		return r;
	if (eject == (insert != NULL))
		return ctl_usage(ctl, "--eject or --insert ISO, one of them");
	snprintf(what, sizeof(what), "media %s", argv[optind]);
	if (insert != NULL && realpath(insert, iso) == NULL)
		return ctl_error(NULL, what, "failed", strerror(errno));
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name",
	    json_object_new_string(argv[optind]));
	json_object_object_add(args, "device",
	    json_object_new_string(argv[optind + 1]));
	if (eject)
		json_object_object_add(args, "eject",
		    json_object_new_boolean(1));
	else
		json_object_object_add(args, "insert",
		    json_object_new_string(iso));
	if (force)
		json_object_object_add(args, "force",
		    json_object_new_boolean(1));
	r = client_call(cl, what, "vm.media", args, &ret, 0);
	client_free(cl);
	if (r != 0)
		return r;
	if (ctl->json)
		ctl_print_json(ret);
	else if (eject)
		printf("%s: %s ejected\n", argv[optind], argv[optind + 1]);
	else
		printf("%s: %s holds %s\n", argv[optind], argv[optind + 1],
		    iso);
	json_object_put(ret);
	return CTL_EXIT_OK;
}
