/*
 * vmctl migrate NAME --to DEST [--downtime MS] [--watch]: the running
 * guest moved live to the vmmd at DEST: unix:PATH, its control socket
 * here, or ssh://[USER@]HOST[/SOCKET], through the user's own SSH to a
 * vmctl migrate-receive there (as zfs send | ssh zfs recv: keys,
 * encryption and host checks are SSH's).
 *
 * vmctl carries the stream: it asks the target for the VM
 * (vm.migrate_in with the definition vm.export gives, as this user:
 * the target checks that the user may create it there and opens its
 * files with the user's rights), then the source (vm.migrate_out);
 * each daemon answers and hands the connection to its worker, and
 * vmctl copies the bytes between the two connections until the source
 * reports the end in a "vm.migration" event, which a third connection
 * listens for (with the rounds under --watch).
 *
 * vmctl migrate NAME --cancel: vm.migrate_cancel, for a migration
 * another vmctl carries; that one then fails, saying "cancelled".
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
#include <sys/wait.h>
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
 * Copies the stream both ways: a_in to b_out and b_in to a_out (the
 * two handed-over connections, or SSH's pipes), until ev (subscribed;
 * NULL: none) says how it ended, with *done its data (the caller puts
 * it): 0, or an exit status.  Without ev, until either side ends: 0.
 */
static int
migrate_relay(struct ctl *ctl, const char *name, int a_in, int a_out,
    int b_in, int b_out, struct client *ev, bool watch,
    struct json_object **done)
{
	struct pollfd p[3];
	struct json_object *e, *v, *d;
	uint8_t *buf = malloc(MIGRATE_BUF);
	bool open = true;
	ssize_t n;
	int r, i;

	if (buf == NULL)
		return ctl_error(name, "migrate", "internal", "out of memory");
	for (;;) {
		p[0] = (struct pollfd){ .fd = open ? a_in : -1,
		    .events = POLLIN };
		p[1] = (struct pollfd){ .fd = open ? b_in : -1,
		    .events = POLLIN };
		p[2] = (struct pollfd){ .fd = ev != NULL ? client_fd(ev) : -1,
		    .events = POLLIN };
		if (!open && ev == NULL)
			break;
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return ctl_error(name, "migrate", "internal",
			    strerror(errno));
		}
		for (i = 0; i < 2 && open; i++) {
			int from = i == 0 ? a_in : b_in;
			int to = i == 0 ? b_out : a_out;

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
				shutdown(a_out, SHUT_WR);
				shutdown(b_out, SHUT_WR);
				shutdown(a_in, SHUT_RD);
				shutdown(b_in, SHUT_RD);
				open = false;
			}
		}
		if (ev == NULL || p[2].revents == 0)
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
	free(buf);
	return 0;
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

/* Where the stream goes: a target vmmd's connection, or SSH's pipes. */
struct migrate_target {
	int fd;
	struct client *cl;	/* unix: the connection */
	pid_t ssh;		/* ssh: the process, else 0 */
};

static void
migrate_target_close(struct migrate_target *t)
{
	int st;

	if (t->cl != NULL)
		client_free(t->cl);
	else if (t->fd >= 0)
		close(t->fd);
	if (t->ssh > 0)
		while (waitpid(t->ssh, &st, 0) < 0 && errno == EINTR)
			;
	t->fd = -1;
	t->cl = NULL;
	t->ssh = 0;
}

/* One line from fd, a byte at a time (what follows is the stream). */
static int
migrate_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len) {
		r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	return -1;
}

/* All of s and a newline onto fd: 0 or -1. */
static int
migrate_write_line(int fd, const char *s)
{
	if (migrate_write(fd, (const uint8_t *)s, strlen(s)) < 0 ||
	    migrate_write(fd, (const uint8_t *)"\n", 1) < 0)
		return -1;
	return 0;
}

/* The most words $VMCTL_SSH may have (program and options). */
#define MIGRATE_SSH_WORDS	32

/*
 * $VMCTL_SSH's words (split at blanks, no quoting: as rsync's -e),
 * or "ssh", into argv with room for two more and the NULL, in buf:
 * how many, or -1 when there are too many or none.
 */
static int
migrate_ssh_words(const char *ssh, char *buf, size_t len,
    char *argv[MIGRATE_SSH_WORDS + 3])
{
	char *p, *save = NULL;
	int n = 0;

	if (ssh == NULL || ssh[strspn(ssh, " \t")] == '\0')
		ssh = "ssh";
	if (snprintf(buf, len, "%s", ssh) >= (int)len)
		return -1;
	for (p = strtok_r(buf, " \t", &save); p != NULL;
	    p = strtok_r(NULL, " \t", &save)) {
		if (n == MIGRATE_SSH_WORDS)
			return -1;
		argv[n++] = p;
	}
	return n > 0 ? n : -1;
}

/*
 * ssh://[USER@]HOST[/SOCKET]: "ssh HOST vmctl [-s /SOCKET]
 * migrate-receive" on a socketpair ($VMCTL_SSH instead of ssh: a
 * program and its options, split at blanks), the
 * definition its first line and its answer the first line back (a
 * reply as vmmd's: "return" or "error").  0 with t set, or an exit
 * status.
 */
static int
migrate_target_ssh(const char *dest, struct json_object *def,
    const char *name, const char *what, struct migrate_target *t)
{
	const char *sock, *host = dest + 6;
	struct json_object *msg, *args, *v, *e;
	char hostbuf[256], cmd[512], line[4096], words[1024];
	char *argv[MIGRATE_SSH_WORDS + 3];
	int sv[2], argc;
	pid_t pid;

	if ((argc = migrate_ssh_words(getenv("VMCTL_SSH"), words,
	    sizeof(words), argv)) < 0)
		return ctl_error(name, what, "invalid_argument", "VMCTL_SSH: "
		    "a program and its options, at most 32 words in 1023 "
		    "bytes");
	sock = strchr(host, '/');
	snprintf(hostbuf, sizeof(hostbuf), "%.*s", sock != NULL ?
	    (int)(sock - host) : (int)strlen(host), host);
	if (hostbuf[0] == '\0' || hostbuf[0] == '-' ||
	    strspn(hostbuf, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
	    "TUVWXYZ0123456789.-_@:[]") != strlen(hostbuf) ||
	    (sock != NULL && strspn(sock, "abcdefghijklmnopqrstuvwxyzABCDEF"
	    "GHIJKLMNOPQRSTUVWXYZ0123456789./_-") != strlen(sock)))
		return ctl_error(name, what, "invalid_argument", "--to: not "
		    "ssh://[USER@]HOST[/SOCKET] (letters, digits and . _ - "
		    "only)");
	/* The remote shell reads it: only the characters checked above. */
	snprintf(cmd, sizeof(cmd), "vmctl%s%s migrate-receive",
	    sock != NULL ? " -s " : "", sock != NULL ? sock : "");
	argv[argc++] = hostbuf;
	argv[argc++] = cmd;
	argv[argc] = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return ctl_error(name, what, "internal", strerror(errno));
	if ((pid = fork()) < 0) {
		close(sv[0]);
		close(sv[1]);
		return ctl_error(name, what, "internal", strerror(errno));
	}
	if (pid == 0) {
		if (dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "vmctl: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	*t = (struct migrate_target){ .fd = sv[0], .ssh = pid };
	args = json_object_new_object();
	json_object_object_add(args, "definition", json_object_get(def));
	if (migrate_write_line(t->fd, json_object_to_json_string_ext(args,
	    JSON_C_TO_STRING_PLAIN)) < 0 ||
	    migrate_read_line(t->fd, line, sizeof(line)) < 0) {
		json_object_put(args);
		migrate_target_close(t);
		return ctl_error(name, what, "connection_failed", "ssh: the "
		    "remote vmctl migrate-receive did not answer");
	}
	json_object_put(args);
	if ((msg = json_tokener_parse(line)) == NULL ||
	    !json_object_is_type(msg, json_type_object)) {
		json_object_put(msg);
		migrate_target_close(t);
		return ctl_error(name, what, "connection_failed", "ssh: the "
		    "remote vmctl migrate-receive answered no reply");
	}
	if (json_object_object_get_ex(msg, "error", &e)) {
		int r = ctl_error(name, what, json_object_object_get_ex(e,
		    "class", &v) ? json_object_get_string(v) : "internal",
		    json_object_object_get_ex(e, "desc", &v) ?
		    json_object_get_string(v) : "refused");

		json_object_put(msg);
		migrate_target_close(t);
		return r;
	}
	json_object_put(msg);
	return 0;
}

/* unix:PATH: vm.migrate_in on PATH's vmmd.  0 or an exit status. */
static int
migrate_target_unix(const char *dest, struct json_object *def,
    const char *what, struct migrate_target *t)
{
	struct json_object *args;
	int r;

	*t = (struct migrate_target){ .fd = -1 };
	if ((r = client_open(dest + 5, &t->cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "definition", json_object_get(def));
	if ((r = client_call(t->cl, what, "vm.migrate_in", args, NULL,
	    0)) != 0) {
		migrate_target_close(t);
		return r;
	}
	t->fd = client_fd(t->cl);
	return 0;
}

/*
 * vmctl migrate-receive: the far end of --to ssh://: the definition
 * from stdin's first line to vm.migrate_in here, vmmd's reply (or the
 * error) onto stdout's first line, then the stream between stdin and
 * stdout and vmmd's connection until either ends.
 */
int
cmd_migrate_receive(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *in, *def, *args, *out, *err;
	struct client *cl = NULL;
	char line[65536];
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 0, "")) != 0)
		return r;
	signal(SIGPIPE, SIG_IGN);
	if (migrate_read_line(0, line, sizeof(line)) < 0 ||
	    (in = json_tokener_parse(line)) == NULL)
		return ctl_error(NULL, "migrate-receive", "invalid_argument",
		    "no definition on the first line of stdin");
	if (!json_object_object_get_ex(in, "definition", &def)) {
		json_object_put(in);
		return ctl_error(NULL, "migrate-receive", "invalid_argument",
		    "no definition on the first line of stdin");
	}
	args = json_object_new_object();
	json_object_object_add(args, "definition", json_object_get(def));
	json_object_put(in);
	out = json_object_new_object();
	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		err = json_object_new_object();
		json_object_object_add(err, "class",
		    json_object_new_string("connection_failed"));
		json_object_object_add(err, "desc",
		    json_object_new_string("no vmmd there"));
		json_object_object_add(out, "error", err);
	} else if ((r = client_call(cl, "migrate-receive", "vm.migrate_in",
	    args, NULL, CLIENT_QUIET)) != 0) {
		err = json_object_new_object();
		json_object_object_add(err, "class", json_object_new_string(
		    client_error_class(cl)[0] != '\0' ?
		    client_error_class(cl) : "connection_failed"));
		json_object_object_add(err, "desc", json_object_new_string(
		    client_error_desc(cl)));
		json_object_object_add(out, "error", err);
	} else
		json_object_object_add(out, "return",
		    json_object_new_object());
	if (migrate_write_line(1, json_object_to_json_string_ext(out,
	    JSON_C_TO_STRING_PLAIN)) < 0 && r == 0)
		r = CTL_EXIT_CONN;
	json_object_put(out);
	if (r == 0)
		r = migrate_relay(ctl, "migrate-receive", 0, 1, client_fd(cl),
		    client_fd(cl), NULL, false, NULL);
	client_free(cl);
	return r;
}

/* --cancel: vm.migrate_cancel.  An exit status. */
static int
migrate_cancel(struct ctl *ctl, const char *name, const char *what)
{
	struct json_object *args = json_object_new_object(), *ret = NULL;
	struct client *cl = NULL;
	int r;

	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		return r;
	}
	json_object_object_add(args, "name", json_object_new_string(name));
	if ((r = client_call(cl, what, "vm.migrate_cancel", args, &ret,
	    0)) == 0) {
		if (ctl->json)
			ctl_print_json(ret);
		else
			printf("%s: migration cancelled: the guest runs on "
			    "here\n", name);
		r = CTL_EXIT_OK;
	}
	json_object_put(ret);
	client_free(cl);
	return r;
}

int
cmd_migrate(struct ctl *ctl, int argc, char **argv)
{
	enum { OPT_TO = 0x100, OPT_DOWNTIME, OPT_WATCH, OPT_CANCEL };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "to",		required_argument,	NULL,	OPT_TO },
		{ "downtime",	required_argument,	NULL,	OPT_DOWNTIME },
		{ "watch",	no_argument,		NULL,	OPT_WATCH },
		{ "cancel",	no_argument,		NULL,	OPT_CANCEL },
		{ NULL, 0, NULL, 0 },
	};
	struct migrate_target target = { .fd = -1 };
	struct client *ev = NULL, *src = NULL;
	struct json_object *def = NULL, *args, *done = NULL, *v;
	const char *to = NULL, *name;
	char what[512], *end;
	long downtime = 300;
	bool watch = false, cancel = false, timed = false;
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
			timed = true;
			continue;
		case OPT_WATCH:
			watch = true;
			continue;
		case OPT_CANCEL:
			cancel = true;
			continue;
		}
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
		return r;
	name = argv[optind];
	snprintf(what, sizeof(what), "migrate %s", name);
	if (cancel && (to != NULL || watch || timed))
		return ctl_usage(ctl, "--cancel takes no --to, --downtime or "
		    "--watch");
	if (cancel)
		return migrate_cancel(ctl, name, what);
	if (to == NULL)
		return ctl_usage(ctl, "--to DEST is needed (unix:PATH)");
	if ((strncmp(to, "unix:", 5) != 0 || to[5] == '\0') &&
	    (strncmp(to, "ssh://", 6) != 0 || to[6] == '\0'))
		return ctl_usage(ctl, "--to %s: neither unix:PATH (a vmmd's "
		    "control socket here) nor ssh://[USER@]HOST[/SOCKET]", to);
	signal(SIGPIPE, SIG_IGN);

	/* Events first: none of this migration's may be missed. */
	if ((r = client_open(ctl->socket, &ev)) != 0)
		return r;
	if ((r = migrate_definition(ev, what, name, &def)) != 0 ||
	    (r = client_call(ev, what, "events.subscribe", NULL, NULL,
	    0)) != 0)
		goto out;
	r = to[0] == 'u' ? migrate_target_unix(to, def, what, &target) :
	    migrate_target_ssh(to, def, name, what, &target);
	if (r != 0)
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
	if ((r = migrate_relay(ctl, name, client_fd(src), client_fd(src),
	    target.fd, target.fd, ev, watch, &done)) != 0)
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
		if (json_object_object_get_ex(done, "answer_ms", &v))
			printf("%s: downtime: %" PRId64 " ms pausing and "
			    "saving the devices, %" PRId64 " ms sending the "
			    "rest, %" PRId64 " ms until the target ran it\n",
			    name, migrate_int(done, "pause_ms"),
			    migrate_int(done, "send_ms"),
			    migrate_int(done, "answer_ms"));
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
	migrate_target_close(&target);
	client_free(ev);
	return r;
}
