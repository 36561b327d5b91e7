/*
 * vmctl migrate NAME --to unix:PATH [--downtime MS] [--watch]: the
 * running guest moved live to the vmmd whose control socket is PATH.
 *
 * vmctl carries the stream: it asks the target for the VM
 * (vm.migrate_in with the definition vm.export gives, as this user:
 * the target checks that the user may create it there and opens its
 * files with the user's rights), then the source (vm.migrate_out);
 * each daemon answers and hands the connection to its worker, and
 * vmctl copies the bytes between the two connections until the source
 * reports the end in a "vm.migration" event, which a third connection
 * listens for (with the rounds under --watch).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>

#include "client.h"
#include "vmctl.h"

#define MIGRATE_BUF	(256 * 1024)

/* All of len bytes of buf onto fd: 0, or -errno. */
static int
migrate_write(int fd, const uint8_t *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int64_t
migrate_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ?
	    json_object_get_int64(v) : 0;
}

static void
migrate_print_round(const char *name, struct json_object *d)
{
	struct json_object *v;

	printf("%s: round %" PRId64 ": %" PRId64 " pages sent, %" PRId64
	    " dirty, %.1f MiB/s, downtime would be %" PRId64 " ms\n", name,
	    migrate_int(d, "round"), migrate_int(d, "pages_sent"),
	    migrate_int(d, "dirty_pages"),
	    json_object_object_get_ex(d, "rate_mib_s", &v) ?
	    json_object_get_double(v) : 0.0,
	    migrate_int(d, "expected_downtime_ms"));
	fflush(stdout);
}

/*
 * Copies the stream both ways between src and dst (the two handed-over
 * connections) until ev (subscribed) says how it ended: 0 with *done
 * the final event's data (the caller puts it), or an exit status.
 */
static int
migrate_relay(struct ctl *ctl, const char *name, int src, int dst,
    struct client *ev, bool watch, struct json_object **done)
{
	struct pollfd p[3];
	struct json_object *e, *v, *d;
	uint8_t *buf = malloc(MIGRATE_BUF);
	bool src_open = true, dst_open = true;
	ssize_t n;
	int r, i;

	if (buf == NULL)
		return ctl_error(name, "migrate", "internal", "out of memory");
	for (;;) {
		p[0] = (struct pollfd){ .fd = src_open ? src : -1,
		    .events = POLLIN };
		p[1] = (struct pollfd){ .fd = dst_open ? dst : -1,
		    .events = POLLIN };
		p[2] = (struct pollfd){ .fd = client_fd(ev), .events = POLLIN };
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return ctl_error(name, "migrate", "internal",
			    strerror(errno));
		}
		for (i = 0; i < 2; i++) {
			int from = i == 0 ? src : dst, to = i == 0 ? dst : src;

			if (p[i].revents == 0)
				continue;
			n = read(from, buf, MIGRATE_BUF);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			/*
			 * One side ended (or cannot take more): the other
			 * is told by its end too, and the source's worker
			 * reports what that means.
			 */
			if (n <= 0 || migrate_write(to, buf, (size_t)n) < 0) {
				shutdown(src, SHUT_RDWR);
				shutdown(dst, SHUT_RDWR);
				src_open = dst_open = false;
			}
		}
		if (p[2].revents == 0)
			continue;
		if ((r = client_next_event(ev, "migrate", &e)) != 0) {
			free(buf);
			return r;
		}
		d = NULL;
		if (json_object_object_get_ex(e, "event", &v) &&
		    strcmp(json_object_get_string(v), "vm.migration") == 0 &&
		    json_object_object_get_ex(e, "vm", &v) &&
		    strcmp(json_object_get_string(v), name) == 0)
			json_object_object_get_ex(e, "data", &d);
		if (d != NULL && json_object_object_get_ex(d, "phase", &v)) {
			const char *phase = json_object_get_string(v);

			if (strcmp(phase, "round") == 0 && watch) {
				if (ctl->json)
					printf("%s\n", json_object_to_json_string_ext(
					    e, JSON_C_TO_STRING_PLAIN));
				else
					migrate_print_round(name, d);
				fflush(stdout);
			} else if (strcmp(phase, "round") != 0) {
				*done = json_object_get(d);
				json_object_put(e);
				free(buf);
				return 0;
			}
		}
		json_object_put(e);
	}
}

/* VM name's definition from the source, as vm.create takes it. */
static int
migrate_definition(struct client *cl, const char *what, const char *name,
    struct json_object **def)
{
	struct json_object *args = json_object_new_object(), *ret, *d;
	int r;

	json_object_object_add(args, "name", json_object_new_string(name));
	if ((r = client_call(cl, what, "vm.export", args, &ret, 0)) != 0)
		return r;
	if (!json_object_object_get_ex(ret, "definition", &d)) {
		json_object_put(ret);
		return ctl_error(name, what, "internal", "vm.export gave no "
		    "definition");
	}
	*def = json_object_get(d);
	json_object_put(ret);
	return 0;
}

int
cmd_migrate(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_TO = 0x100, OPT_DOWNTIME, OPT_WATCH };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "to",		required_argument,	NULL,	OPT_TO },
		{ "downtime",	required_argument,	NULL,	OPT_DOWNTIME },
		{ "watch",	no_argument,		NULL,	OPT_WATCH },
		{ NULL, 0, NULL, 0 },
	};
	struct client *ev = NULL, *src = NULL, *dst = NULL;
	struct json_object *def = NULL, *args, *done = NULL, *v;
	const char *to = NULL, *name;
	char what[512], *end;
	long downtime = 300;
	bool watch = false;
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1) {
		switch (c) {
		case OPT_TO:
			to = optarg;
			continue;
		case OPT_DOWNTIME:
			errno = 0;
			downtime = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || downtime < 1 ||
			    downtime > 60000)
				return ctl_usage(ctl, "--downtime: %s: not a "
				    "number of ms from 1 to 60000", optarg);
			continue;
		case OPT_WATCH:
			watch = true;
			continue;
		}
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
		return r;
	name = argv[optind];
	if (to == NULL)
		return ctl_usage(ctl, "--to DEST is needed (unix:PATH)");
	if (strncmp(to, "unix:", 5) != 0 || to[5] == '\0')
		return ctl_usage(ctl, "--to %s: not unix:PATH (the target "
		    "vmmd's control socket)", to);
	snprintf(what, sizeof(what), "migrate %s", name);
	signal(SIGPIPE, SIG_IGN);

	/* Events first: none of this migration's may be missed. */
	if ((r = client_open(ctl->socket, &ev)) != 0)
		return r;
	if ((r = migrate_definition(ev, what, name, &def)) != 0 ||
	    (r = client_call(ev, what, "events.subscribe", NULL, NULL,
	    0)) != 0)
		goto out;
	if ((r = client_open(to + 5, &dst)) != 0)
		goto out;
	args = json_object_new_object();
	json_object_object_add(args, "definition", json_object_get(def));
	if ((r = client_call(dst, what, "vm.migrate_in", args, NULL, 0)) != 0)
		goto out;
	if ((r = client_open(ctl->socket, &src)) != 0)
		goto out;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	json_object_object_add(args, "downtime_ms",
	    json_object_new_int64(downtime));
	if ((r = client_call(src, what, "vm.migrate_out", args, NULL,
	    0)) != 0)
		goto out;
	if ((r = migrate_relay(ctl, name, client_fd(src), client_fd(dst), ev,
	    watch, &done)) != 0)
		goto out;
	if (json_object_object_get_ex(done, "phase", &v) &&
	    strcmp(json_object_get_string(v), "done") != 0) {
		r = ctl_error(name, what, "bad_state",
		    json_object_object_get_ex(done, "error", &v) ?
		    json_object_get_string(v) : "failed");
		goto out;
	}
	if (ctl->json)
		ctl_print_json(done);
	else {
		printf("%s: migrated to %s: %" PRId64 " rounds, %" PRId64
		    " pages, %" PRId64 " bytes in %" PRId64 " ms, downtime %"
		    PRId64 " ms\n", name, to, migrate_int(done, "round"),
		    migrate_int(done, "pages_sent"), migrate_int(done, "bytes"),
		    migrate_int(done, "total_ms"),
		    migrate_int(done, "downtime_ms"));
		if (json_object_object_get_ex(done, "converged", &v) &&
		    !json_object_get_boolean(v))
			printf("%s: the guest wrote faster than the stream "
			    "carried it: paused after %" PRId64 " rounds\n",
			    name, migrate_int(done, "round"));
	}
	r = CTL_EXIT_OK;
out:
	json_object_put(done);
	json_object_put(def);
	client_free(src);
	client_free(dst);
	client_free(ev);
	return r;
}
