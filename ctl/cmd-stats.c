/*
 * vmctl stats: a guest's exit timing statistics (vm.stats): switch
 * collection on or off, reset it, show the table once or redraw it in
 * place every few seconds, like kvm_stat.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "client.h"
#include "stats-table.h"
#include "vmctl.h"

#define STATS_WATCH_MAX		3600.0	/* seconds */

static void
stats_show(struct ctl *ctl, struct json_object *ret, int segments)
{
	if (ctl->json) {
		ctl_print_json(ret);
		return;
	}
	stats_table_print(stdout, ret, segments);
	stats_kvm_print(stdout, ret);
}

/* key: true when set; absent otherwise (the daemon's default). */
static void
stats_flag(struct json_object *args, const char *key, int set)
{
	if (set)
		json_object_object_add(args, key, json_object_new_boolean(1));
}

static void
stats_nap(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Requests on one connection, args first (taken), then every watch
 * seconds the same view without switching or resetting again.
 */
static int
stats_loop(struct ctl *ctl, const char *name, struct json_object *args,
    int segments, double watch)
{
	struct json_object *ret, *view = NULL;
	struct client *cl;
	char what[128];
	int r, tty = isatty(STDOUT_FILENO);

	snprintf(what, sizeof(what), "stats %s", name);
	if (json_object_deep_copy(args, &view, NULL) != 0) {
		json_object_put(args);
		ctl_warnx("%s: out of memory", what);
		return CTL_EXIT_FAIL;
	}
	json_object_object_del(view, "enable");
	json_object_object_del(view, "reset");
	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		json_object_put(view);
		return r;
	}
	for (;;) {
		r = client_call(cl, what, "vm.stats", args, &ret, 0);
		if (r != 0)
			break;
		if (watch > 0 && tty && !ctl->json)
			fputs("\033[H\033[J", stdout);	/* redraw in place */
		stats_show(ctl, ret, segments);
		json_object_put(ret);
		fflush(stdout);
		if (watch <= 0)
			break;
		stats_nap(watch);
		args = json_object_get(view);
	}
	json_object_put(view);
	client_free(cl);
	return r;
}

int
cmd_stats(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_ENABLE = 0x100, OPT_DISABLE, OPT_RESET, OPT_VCPU,
		OPT_SEGMENTS, OPT_KVM, OPT_WATCH };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "enable",	no_argument,		NULL,	OPT_ENABLE },
		{ "disable",	no_argument,		NULL,	OPT_DISABLE },
		{ "reset",	no_argument,		NULL,	OPT_RESET },
		{ "vcpu",	required_argument,	NULL,	OPT_VCPU },
		{ "segments",	no_argument,		NULL,	OPT_SEGMENTS },
		{ "kvm",	no_argument,		NULL,	OPT_KVM },
		{ "watch",	required_argument,	NULL,	OPT_WATCH },
		{ NULL, 0, NULL, 0 },
	};
	/* a flag twice says the same; a value twice is refused */
	static const int flags[] = { OPT_ENABLE, OPT_DISABLE, OPT_RESET,
		OPT_SEGMENTS, OPT_KVM, 'h', 'j', 's', '?', ':', 0 };
	struct ctl_seen seen = { 0 };
	struct json_object *args;
	const char *again;
	int64_t vcpu = -1;
	int c, r, enable = -1, reset = 0, segments = 0, kvm = 0;
	double watch = 0;
	char *end;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		if ((again = ctl_option_again(&seen, longopts, flags, c)) !=
		    NULL)
			return ctl_usage(ctl, "--%s: given more than once",
			    again);
		switch (c) {
		case OPT_ENABLE:
		case OPT_DISABLE:
			if (enable >= 0 && enable != (c == OPT_ENABLE))
				return ctl_usage(ctl, "--enable and --disable "
				    "exclude each other");
			enable = c == OPT_ENABLE;
			continue;
		case OPT_RESET:
			reset = 1;
			continue;
		case OPT_SEGMENTS:
			segments = 1;
			continue;
		case OPT_KVM:
			kvm = 1;
			continue;
		case OPT_VCPU:
			if (ctl_parse_number(optarg, 0, 63, &vcpu) < 0)
				return ctl_usage(ctl, "--vcpu %s: not a vCPU "
				    "number (0 to 63)", optarg);
			continue;
		case OPT_WATCH:
			errno = 0;
			watch = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    !isfinite(watch) || watch < 0.1 ||
			    watch > STATS_WATCH_MAX)
				return ctl_usage(ctl, "--watch %s: not a number "
				    "of seconds (0.1 to 3600)", optarg);
			continue;
		}
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
		return r;

	args = json_object_new_object();
	json_object_object_add(args, "name",
	    json_object_new_string(argv[optind]));
	if (enable >= 0)
		json_object_object_add(args, "enable",
		    json_object_new_boolean(enable));
	if (vcpu >= 0)
		json_object_object_add(args, "vcpu",
		    json_object_new_int64(vcpu));
	stats_flag(args, "reset", reset);
	stats_flag(args, "segments", segments);
	stats_flag(args, "kvm", kvm);
	return stats_loop(ctl, argv[optind], args, segments, watch);
}
