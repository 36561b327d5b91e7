/*
 * vmctl balloon NAME SIZE [--stats-interval SECONDS]: vm.balloon, how
 * much of its RAM a running guest with a balloon should keep.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "args.h"
#include "client.h"
#include "vmctl.h"

int
cmd_balloon(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_STATS_INTERVAL = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "stats-interval", required_argument, NULL,
		    OPT_STATS_INTERVAL },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *args, *ret = NULL;
	int64_t mib, every = -1;
	char what[128], size[32];
	struct client *cl;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if (c == OPT_STATS_INTERVAL) {
			if (ctl_parse_number(optarg, 0, 86400, &every) < 0)
				return ctl_usage(ctl, "--stats-interval %s: "
				    "not a number of seconds from 0 to 86400",
				    optarg);
		} else if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME SIZE")) != 0)
		return r;
	if (ctl_parse_size(argv[optind + 1], &mib) < 0)
		return ctl_usage(ctl, "SIZE %s: not a size of memory (MiB, or "
		    "with M, MiB, G or GiB: 512M, 2G)", argv[optind + 1]);
	snprintf(what, sizeof(what), "balloon %s", argv[optind]);
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name",
	    json_object_new_string(argv[optind]));
	json_object_object_add(args, "target_mib",
	    json_object_new_int64(mib));
	if (every >= 0)
		json_object_object_add(args, "stats_interval",
		    json_object_new_int64(every));
	r = client_call(cl, what, "vm.balloon", args, &ret, 0);
	client_free(cl);
	if (r != 0)
		return r;
	if (ctl->json)
		ctl_print_json(ret);
	else {
		ctl_format_mib(mib, size, sizeof(size));
		printf("%s: the guest is asked to keep %s\n", argv[optind],
		    size);
	}
	json_object_put(ret);
	return CTL_EXIT_OK;
}
