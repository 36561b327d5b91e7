/*
 * The display commands: display (where to point a viewer) and
 * screenshot (the guest's screen into a PNG file).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "args.h"
#include "client.h"
#include "vmctl.h"

/* How long a screenshot may stall before vmctl gives up, in ms. */
#define DISPLAY_READ_TIMEOUT	(30 * 1000)
/* No screen's PNG comes near this: a larger size is a broken reply. */
#define DISPLAY_PNG_MAX		((int64_t)1 << 30)

static const char *
display_string(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int
cmd_display(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args, *ret, *v;
	struct client *cl;
	const char *name, *s;
	char what[128];
	int r;

	if ((r = ctl_name_only(ctl, argc, argv, &name)) >= 0)
		return r;
	snprintf(what, sizeof(what), "display %s", name);
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	r = client_call(cl, what, "vm.display", args, &ret, 0);
	client_free(cl);
	if (r != 0)
		return r;
	if (ctl->json) {
		ctl_print_json(ret);
		json_object_put(ret);
		return CTL_EXIT_OK;
	}
	/* One address a line, the viewer's first: easy to cut and paste. */
	if ((s = display_string(ret, "vnc")) != NULL)
		printf("%s\n", s);
	if ((s = display_string(ret, "http")) != NULL)
		printf("%s\n", s);
	if ((s = display_string(ret, "password")) != NULL)
		printf("password: %s\n", s);
	if (json_object_object_get_ex(ret, "clients", &v) &&
	    json_object_is_type(v, json_type_int))
		printf("clients: %" PRId64 "\n", json_object_get_int64(v));
	json_object_put(ret);
	return CTL_EXIT_OK;
}

/*
 * Exactly len bytes from fd into out; a connection that closes or
 * stalls before is an error.  0 or -errno (-EPIPE: closed early,
 * -ETIMEDOUT: stalled).
 */
static int
display_copy(int fd, int out, int64_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[65536];
	ssize_t n, w;
	size_t chunk, off;
	int r;

	while (len > 0) {
		r = poll(&pfd, 1, DISPLAY_READ_TIMEOUT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		chunk = len < (int64_t)sizeof(buf) ? (size_t)len : sizeof(buf);
		n = read(fd, buf, chunk);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		for (off = 0; off < (size_t)n; off += (size_t)w) {
			w = write(out, buf + off, (size_t)n - off);
			if (w < 0 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w < 0)
				return -errno;
		}
		len -= n;
	}
	return 0;
}

/*
 * A temporary file beside path, for the image: created before anything
 * is asked of the daemon, so that a path that cannot be written costs
 * no screenshot.  The descriptor, or an exit status negated (after
 * saying what failed).
 */
static int
display_open_temp(const char *what, const char *path, char *tmp,
    size_t tmplen)
{
	mode_t mask;
	int out, r;

	if ((r = ctl_temp_beside(path, tmp, tmplen)) < 0) {
		ctl_warnx("%s: %s: %s", what, path, r == -EINVAL ?
		    "not a file name" : strerror(-r));
		return -CTL_EXIT_USAGE;
	}
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0) {
		/* The directory is what is wrong: name the user's path. */
		ctl_warnx("%s: %s: %s", what, path, strerror(errno));
		return -CTL_EXIT_FAIL;
	}
	/* mkostemp() makes it 0600; an image is an ordinary file. */
	mask = umask(0);
	umask(mask);
	if (fchmod(out, 0666 & ~mask) < 0) {
		ctl_warnx("%s: %s: %s", what, tmp, strerror(errno));
		close(out);
		unlink(tmp);
		return -CTL_EXIT_FAIL;
	}
	return out;
}

/*
 * The PNG of len bytes on fd into out, the temporary file tmp, then
 * renamed over path only when complete, so that a failure never leaves
 * half an image (nor spoils an older file at path).  tmp is gone either
 * way, and out closed.  Returns an exit status, after saying what
 * failed.
 */
static int
display_save(const char *what, int fd, int64_t len, int out,
    const char *tmp, const char *path)
{
	int r;

	if ((r = display_copy(fd, out, len)) < 0) {
		if (r == -EPIPE)
			ctl_warnx("%s: the connection closed before the "
			    "%" PRId64 "-byte image was complete", what, len);
		else if (r == -ETIMEDOUT)
			ctl_warnx("%s: no data for %d seconds", what,
			    DISPLAY_READ_TIMEOUT / 1000);
		else
			ctl_warnx("%s: %s", what, strerror(-r));
		goto unlink_tmp;
	}
	if (fsync(out) < 0 || close(out) < 0) {
		r = -errno;
		out = -1;
		ctl_warnx("%s: %s: %s", what, tmp, strerror(-r));
		goto unlink_tmp;
	}
	out = -1;
	if (rename(tmp, path) < 0) {
		ctl_warnx("%s: %s: %s", what, path, strerror(errno));
		goto unlink_tmp;
	}
	return CTL_EXIT_OK;

unlink_tmp:
	if (out >= 0)
		close(out);
	unlink(tmp);
	return CTL_EXIT_FAIL;
}

int
cmd_screenshot(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args, *ret, *v;
	struct client *cl;
	const char *name, *path, *fmt;
	char what[128], tmp[4096];
	int64_t size = -1;
	int out, r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 2, "NAME FILE")) != 0)
		return r;
	name = argv[optind];
	path = argv[optind + 1];
	snprintf(what, sizeof(what), "screenshot %s", name);
	if ((out = display_open_temp(what, path, tmp, sizeof(tmp))) < 0)
		return -out;
	if ((r = client_open(ctl->socket, &cl)) != 0)
		goto unlink_tmp;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	/* The reply line, then the image on the same connection. */
	r = client_call(cl, what, "vm.screenshot", args, &ret, 0);
	if (r != 0) {
		client_free(cl);
		goto unlink_tmp;
	}
	fmt = display_string(ret, "format");
	if (json_object_object_get_ex(ret, "size", &v) &&
	    json_object_is_type(v, json_type_int))
		size = json_object_get_int64(v);
	if (fmt == NULL || strcmp(fmt, "png") != 0 || size < 0 ||
	    size > DISPLAY_PNG_MAX) {
		ctl_warnx("%s: unexpected reply: %s", what,
		    json_object_to_json_string_ext(ret,
		    JSON_C_TO_STRING_PLAIN));
		r = CTL_EXIT_FAIL;
		close(out);
		unlink(tmp);
	} else
		r = display_save(what, client_fd(cl), size, out, tmp, path);
	if (r == CTL_EXIT_OK && ctl->json)
		ctl_print_json(ret);
	json_object_put(ret);
	client_free(cl);
	return r;

unlink_tmp:
	close(out);
	unlink(tmp);
	return r;
}
