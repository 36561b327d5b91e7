/*
 * vmctl's connection to vmmd.  One request is outstanding at a time, so
 * a reply is recognised by its id alone and anything else on the line
 * (events) is skipped.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-words.h"
#include "client.h"
#include "config.h"
#include "proto.h"
#include "vmctl.h"

struct client {
	int			 fd;
	char			*path;
	struct proto_lines	*lines;
	int			 partial;	/* an unfinished line is buffered */
	int64_t			 next_id;
	char			 errclass[64];
	char			 errdesc[512];
	/* client_on_event(): event lines client_call() meets. */
	void			(*on_event)(struct json_object *, void *);
	void			*on_event_arg;
};

void
client_on_event(struct client *cl, void (*fn)(struct json_object *, void *),
    void *arg)
{
	cl->on_event = fn;
	cl->on_event_arg = arg;
}

int
client_report_error(const char *what, const char *cls, const char *desc)
{
	return ctl_error(NULL, what, cls, desc);
}

static int
client_connect(const char *path, int *fdp)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int error = errno;

		close(fd);
		return -error;
	}
	*fdp = fd;
	return 0;
}

/*
 * Reads the next line; returns 1 with *line and *len set, 0 at the end
 * of the stream, or -errno (-ETIMEDOUT when timeout ms passed without a byte,
 * -E2BIG for an overlong line).  The socket is peeked first and consumed
 * only up to the first newline, so nothing after the line is taken.
 */
static int
client_read_line(struct client *cl, int timeout, const char **line,
    size_t *len)
{
	char buf[4096], *nl;
	ssize_t n;
	size_t take;
	int r;

	for (;;) {
		r = proto_lines_next(cl->lines, line, len);
		if (r != 0)
			return r;
		if (timeout >= 0) {
			struct pollfd pfd = { .fd = cl->fd, .events = POLLIN };

			r = poll(&pfd, 1, timeout);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (r == 0)
				return -ETIMEDOUT;
		}
		n = recv(cl->fd, buf, sizeof(buf), MSG_PEEK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		nl = memchr(buf, '\n', (size_t)n);
		take = nl != NULL ? (size_t)(nl - buf) + 1 : (size_t)n;
		do
			n = recv(cl->fd, buf, take, 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		cl->partial = buf[n - 1] != '\n';
		r = proto_lines_feed(cl->lines, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

/* The member key of obj if it has type type, else NULL. */
static struct json_object *
client_member(struct json_object *obj, const char *key, enum json_type type)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

static const char *
client_member_string(struct json_object *obj, const char *key,
    const char *dflt)
{
	struct json_object *v;

	v = client_member(obj, key, json_type_string);
	return v != NULL ? json_object_get_string(v) : dflt;
}

static int
client_greeting(struct client *cl)
{
	struct json_object *msg, *g, *err, *v;
	const char *line;
	char desc[256];
	size_t len;
	int r;

	r = client_read_line(cl, CLIENT_GREETING_TIMEOUT, &line, &len);
	if (r == 0) {
		ctl_warnx("%s: the connection closed before vmmd's greeting",
		    cl->path);
		return CTL_EXIT_CONN;
	}
	if (r == -ETIMEDOUT) {
		ctl_warnx("%s: no greeting from vmmd within %d s", cl->path,
		    CLIENT_GREETING_TIMEOUT / 1000);
		return CTL_EXIT_CONN;
	}
	if (r < 0 && r != -E2BIG) {
		ctl_warnx("%s: reading vmmd's greeting: %s", cl->path,
		    strerror(-r));
		return CTL_EXIT_CONN;
	}
	/* The object tells success, not the status: PROTO_ERR_PARSE is 0. */
	msg = NULL;
	if (r > 0)
		(void)proto_parse_object(line, len, &msg, desc, sizeof(desc));
	if (msg == NULL) {
		ctl_warnx("%s: not a vmmd socket (no JSON greeting)",
		    cl->path);
		return CTL_EXIT_CONN;
	}
	/* A daemon that refuses the connection says why instead. */
	if ((err = client_member(msg, "error", json_type_object)) != NULL) {
		r = client_report_error(cl->path,
		    client_member_string(err, "class", "error"),
		    client_member_string(err, "desc", "(no description)"));
		json_object_put(msg);
		return r != CTL_EXIT_FAIL ? r : CTL_EXIT_CONN;
	}
	g = client_member(msg, "greeting", json_type_object);
	v = g != NULL ? client_member(g, "protocol", json_type_int) : NULL;
	if (v == NULL) {
		ctl_warnx("%s: not a vmmd socket (unexpected greeting)",
		    cl->path);
		json_object_put(msg);
		return CTL_EXIT_CONN;
	}
	if (json_object_get_int64(v) != PROTO_VERSION) {
		ctl_warnx("%s: vmmd speaks protocol %" PRId64 ", this vmctl "
		    "speaks protocol %d", cl->path, json_object_get_int64(v),
		    PROTO_VERSION);
		json_object_put(msg);
		return CTL_EXIT_CONN;
	}
	json_object_put(msg);
	return 0;
}

int
client_open(const char *path, struct client **clp)
{
	struct client *cl;
	int r;

	cl = calloc(1, sizeof(*cl));
	if (cl == NULL || (cl->path = strdup(path)) == NULL ||
	    (cl->lines = proto_lines_new(PROTO_MAX_LINE)) == NULL) {
		ctl_warnx("%s", strerror(ENOMEM));
		goto fail_alloc;
	}
	cl->fd = -1;
	cl->next_id = 1;
	r = client_connect(path, &cl->fd);
	if (r < 0) {
		const char *hint = "";

		if (r == -ENOENT || r == -ECONNREFUSED)
			hint = " (is vmmd running?)";
		else if (r == -EACCES || r == -EPERM)
			hint = " (only root and the members of group "
			    VMMD_GROUP " may use it)";
		ctl_warnx("cannot connect to %s: %s%s", path, strerror(-r),
		    hint);
		client_free(cl);
		return CTL_EXIT_CONN;
	}
	r = client_greeting(cl);
	if (r != 0) {
		client_free(cl);
		return r;
	}
	*clp = cl;
	return 0;

fail_alloc:
	if (cl != NULL) {
		free(cl->path);
		free(cl);
	}
	return CTL_EXIT_FAIL;
}

void
client_free(struct client *cl)
{
	if (cl == NULL)
		return;
	if (cl->fd >= 0)
		close(cl->fd);
	proto_lines_free(cl->lines);
	free(cl->path);
	free(cl);
}

static int
client_write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether msg is the reply to request id (a reply without id counts). */
static int
client_is_reply(struct json_object *msg, int64_t id)
{
	struct json_object *v;

	if (!json_object_object_get_ex(msg, "id", &v) || v == NULL)
		return 1;
	return json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) == id;
}

int
client_call(struct client *cl, const char *what, const char *command,
    struct json_object *args, struct json_object **retp, int flags)
{
	struct json_object *req, *msg, *v;
	const char *line;
	char desc[256], *s;
	size_t len;
	int64_t id;
	int r;

	cl->errclass[0] = cl->errdesc[0] = '\0';
	if (retp != NULL)
		*retp = NULL;
	id = cl->next_id++;
	req = json_object_new_object();
	if (req == NULL) {
		json_object_put(args);
		ctl_warnx("%s: %s", what, strerror(ENOMEM));
		return CTL_EXIT_FAIL;
	}
	json_object_object_add(req, "id", json_object_new_int64(id));
	json_object_object_add(req, "command",
	    json_object_new_string(command));
	json_object_object_add(req, "arguments",
	    args != NULL ? args : json_object_new_object());
	s = proto_serialize(req, &len);
	json_object_put(req);
	if (s == NULL) {
		ctl_warnx("%s: %s", what, strerror(ENOMEM));
		return CTL_EXIT_FAIL;
	}
	r = client_write_all(cl->fd, s, len);
	free(s);
	if (r < 0) {
		ctl_warnx("%s: sending to vmmd: %s", what, strerror(-r));
		return CTL_EXIT_CONN;
	}

	for (;;) {
		r = client_read_line(cl, -1, &line, &len);
		if (r == 0) {
			ctl_warnx("%s: vmmd closed the connection %s", what,
			    cl->partial ? "in the middle of its reply" :
			    "before replying");
			return CTL_EXIT_CONN;
		}
		if (r == -E2BIG) {
			ctl_warnx("%s: vmmd sent a line over %d bytes", what,
			    PROTO_MAX_LINE);
			return CTL_EXIT_CONN;
		}
		if (r < 0) {
			ctl_warnx("%s: reading from vmmd: %s", what,
			    strerror(-r));
			return CTL_EXIT_CONN;
		}
		msg = NULL;	/* as for the greeting: trust the object */
		(void)proto_parse_object(line, len, &msg, desc, sizeof(desc));
		if (msg == NULL) {
			ctl_warnx("%s: vmmd sent a bad line: %s", what, desc);
			return CTL_EXIT_CONN;
		}
		if (json_object_object_get_ex(msg, "event", NULL) &&
		    cl->on_event != NULL)
			cl->on_event(msg, cl->on_event_arg);
		if (json_object_object_get_ex(msg, "event", NULL) ||
		    !client_is_reply(msg, id)) {
			json_object_put(msg);
			continue;
		}
		if ((v = client_member(msg, "error", json_type_object)) !=
		    NULL) {
			snprintf(cl->errclass, sizeof(cl->errclass), "%s",
			    client_member_string(v, "class", "error"));
			snprintf(cl->errdesc, sizeof(cl->errdesc), "%s",
			    client_member_string(v, "desc",
			    "(no description)"));
			if (flags & CLIENT_CLI_WORDS)
				cli_words(cl->errdesc, sizeof(cl->errdesc));
			json_object_put(msg);
			if (!(flags & CLIENT_QUIET))
				return client_report_error(what, cl->errclass,
				    cl->errdesc);
			return ctl_exit_status(cl->errclass);
		}
		if (json_object_object_get_ex(msg, "return", &v)) {
			if (retp != NULL)
				*retp = json_object_get(v);
			json_object_put(msg);
			return 0;
		}
		r = json_object_object_get_ex(msg, "id", NULL);
		json_object_put(msg);
		if (r) {
			ctl_warnx("%s: vmmd's reply has neither \"return\" "
			    "nor \"error\"", what);
			return CTL_EXIT_CONN;
		}
		/* No id and no error: not for us; skip it. */
	}
}

const char *
client_error_class(const struct client *cl)
{
	return cl->errclass;
}

const char *
client_error_desc(const struct client *cl)
{
	return cl->errdesc;
}

int
client_fd(const struct client *cl)
{
	return cl->fd;
}

const char *
client_path(const struct client *cl)
{
	return cl->path;
}

int
client_next_event(struct client *cl, const char *what,
    struct json_object **evp)
{
	struct json_object *msg;
	const char *line;
	char desc[256];
	size_t len;
	int r;

	for (;;) {
		r = client_read_line(cl, -1, &line, &len);
		if (r == 0) {
			ctl_warnx("%s: vmmd closed the connection", what);
			return CTL_EXIT_CONN;
		}
		if (r < 0) {
			ctl_warnx("%s: reading from vmmd: %s", what,
			    strerror(-r));
			return CTL_EXIT_CONN;
		}
		msg = NULL;
		(void)proto_parse_object(line, len, &msg, desc, sizeof(desc));
		if (msg == NULL) {
			ctl_warnx("%s: vmmd sent a bad line: %s", what, desc);
			return CTL_EXIT_CONN;
		}
		if (client_member(msg, "event", json_type_string) != NULL) {
			*evp = msg;
			return 0;
		}
		json_object_put(msg);	/* not an event: not ours */
	}
}
