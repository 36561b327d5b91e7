/* See worker-msg.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "worker-msg.h"

struct wmsg_field_def {
	const char *name;
	enum wmsg_shape shape;		/* the object it belongs to */
	enum wmsg_type type;
	bool required;
	int64_t min, max;
	enum wmsg_shape of;		/* OBJECT, ARRAY: the entries' shape */
	const char *const *values;	/* STRING: the only ones allowed */
};

#define WMSG_FIELD_ROW(id, sh, nm, ty, req, lo, hi, sub, vals)		\
	[WMSG_##id] = { .name = nm, .shape = WMSG_S_##sh,			\
	    .type = WMSG_##ty, .required = req, .min = lo, .max = hi,	\
	    .of = WMSG_S_##sub, .values = WMSG_V_##vals },
static const struct wmsg_field_def wmsg_fields[WMSG_NFIELDS] = {
	WMSG_FIELDS(WMSG_FIELD_ROW)
};
#undef WMSG_FIELD_ROW

static const struct wmsg_request_def wmsg_requests[WMSG_NREQUESTS] = {
	[WMSG_REQ_BOOT] = { "worker.boot", false, WMSG_S_BOOT,
	    WMSG_S_BOOT_REPLY },
	[WMSG_REQ_PAUSE] = { "worker.pause", false, WMSG_S_NONE, WMSG_S_NONE },
	[WMSG_REQ_RESUME] = { "worker.resume", false, WMSG_S_NONE, WMSG_S_NONE },
	[WMSG_REQ_RESET] = { "worker.reset", false, WMSG_S_NONE, WMSG_S_NONE },
	[WMSG_REQ_SHUTDOWN] = { "worker.shutdown", false, WMSG_S_SHUTDOWN,
	    WMSG_S_SHUTDOWN_REPLY },
	[WMSG_REQ_INFO] = { "worker.info", false, WMSG_S_NONE, WMSG_S_OPAQUE },
	[WMSG_REQ_STATS] = { "worker.stats", false, WMSG_S_STATS,
	    WMSG_S_OPAQUE },
	[WMSG_REQ_CONSOLE] = { "worker.console", true, WMSG_S_CLIENT,
	    WMSG_S_NONE },
	[WMSG_REQ_DISPLAY] = { "worker.display", false, WMSG_S_NONE,
	    WMSG_S_OPAQUE },
	[WMSG_REQ_SCREENSHOT] = { "worker.screenshot", true, WMSG_S_CLIENT,
	    WMSG_S_NONE },
	[WMSG_REQ_ADOPT] = { "worker.adopt", false, WMSG_S_NONE,
	    WMSG_S_ADOPT_REPLY },
	[WMSG_REQ_METRICS] = { "worker.metrics", false, WMSG_S_NONE,
	    WMSG_S_OPAQUE },
	[WMSG_REQ_SNAPSHOT] = { "worker.snapshot", 2, WMSG_S_SNAPSHOT,
	    WMSG_S_SNAPSHOT_REPLY },
	[WMSG_REQ_MEDIA_EJECT] = { "worker.media_eject", 0, WMSG_S_MEDIA,
	    WMSG_S_NONE },
	[WMSG_REQ_MEDIA_INSERT] = { "worker.media_insert", 1, WMSG_S_MEDIA,
	    WMSG_S_NONE },
	[WMSG_REQ_MIGRATE_OUT] = { "worker.migrate_out", 1,
	    WMSG_S_MIGRATE_OUT, WMSG_S_OPAQUE },
	[WMSG_REQ_DISK_PUSH] = { "worker.disk_push", 1, WMSG_S_DISK_PUSH,
	    WMSG_S_NONE },
	[WMSG_REQ_MIGRATE_CANCEL] = { "worker.migrate_cancel", 0,
	    WMSG_S_NONE, WMSG_S_NONE },
	[WMSG_REQ_NBD_FD] = { "worker.nbd_fd", 1, WMSG_S_NBD_FD,
	    WMSG_S_NONE },
	[WMSG_REQ_NBD_REFUSED] = { "worker.nbd_refused", 0, WMSG_S_NBD_FD,
	    WMSG_S_NONE },
	[WMSG_REQ_BALLOON] = { "worker.balloon", 0, WMSG_S_BALLOON,
	    WMSG_S_NONE },
};

static const struct {
	const char *name;
	enum wmsg_shape data;
} wmsg_events[WMSG_NEVENTS] = {
	[WMSG_EV_STATE] = { "vm.state", WMSG_S_STATE_EVENT },
	[WMSG_EV_DISPLAY_CONNECTED] = { "display.connected",
	    WMSG_S_DISPLAY_EVENT },
	[WMSG_EV_DISPLAY_DISCONNECTED] = { "display.disconnected",
	    WMSG_S_DISPLAY_EVENT },
	[WMSG_EV_REBOOT] = { "vm.reboot", WMSG_S_REBOOT_EVENT },
	[WMSG_EV_EXIT] = { "worker.exit", WMSG_S_EXIT_EVENT },
	[WMSG_EV_MIGRATION] = { "vm.migration", WMSG_S_OPAQUE },
	[WMSG_EV_NBD_REDIAL] = { "disk.nbd_redial",
	    WMSG_S_NBD_REDIAL_EVENT },
};

const struct wmsg_request_def *
wmsg_request_def(enum wmsg_request r)
{
	return &wmsg_requests[r];
}

int
wmsg_request_lookup(const char *name)
{
	for (int i = 0; i < WMSG_NREQUESTS; i++)
		if (strcmp(wmsg_requests[i].name, name) == 0)
			return i;
	return -ENOENT;
}

const char *
wmsg_event_name(enum wmsg_event e)
{
	return wmsg_events[e].name;
}

enum wmsg_shape
wmsg_event_shape(enum wmsg_event e)
{
	return wmsg_events[e].data;
}

int
wmsg_event_lookup(const char *name)
{
	for (int i = 0; i < WMSG_NEVENTS; i++)
		if (strcmp(wmsg_events[i].name, name) == 0)
			return i;
	return -ENOENT;
}

const char *
wmsg_name(enum wmsg_field f)
{
	return wmsg_fields[f].name;
}

/* The field of shape s named name, or -ENOENT. */
static int
wmsg_find(enum wmsg_shape s, const char *name)
{
	for (int i = 0; i < WMSG_NFIELDS; i++)
		if (wmsg_fields[i].shape == s &&
		    strcmp(wmsg_fields[i].name, name) == 0)
			return i;
	return -ENOENT;
}

static int wmsg_check_at(enum wmsg_shape s, struct json_object *o,
    const char *where, char *err, size_t errlen);

/* One present field's value, v non-NULL.  where prefixes err. */
static int
wmsg_check_value(const struct wmsg_field_def *fd, struct json_object *o,
    struct json_object *v, const char *where, char *err, size_t errlen)
{
	char msg[256], inner[128];
	const char *s;
	int64_t n;
	size_t len, i;

	msg[0] = '\0';
	switch (fd->type) {
	case WMSG_STRING:
		if (!json_object_is_type(v, json_type_string)) {
			snprintf(msg, sizeof(msg), "expected a string");
			break;
		}
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (strlen(s) != len)
			snprintf(msg, sizeof(msg), "contains a NUL byte");
		else if ((int64_t)len < fd->min || (int64_t)len > fd->max)
			snprintf(msg, sizeof(msg), "%zu bytes long (%lld..%lld "
			    "allowed)", len, (long long)fd->min,
			    (long long)fd->max);
		else if (fd->values != NULL) {
			for (i = 0; fd->values[i] != NULL; i++)
				if (strcmp(fd->values[i], s) == 0)
					break;
			if (fd->values[i] == NULL)
				snprintf(msg, sizeof(msg), "'%s' is none of "
				    "the values it may take", s);
		}
		break;
	case WMSG_INT:
		/* proto's own check: its range and its wording. */
		if (proto_arg_int(o, fd->name, 1, fd->min, fd->max, &n, msg,
		    sizeof(msg)) < 0) {
			snprintf(err, errlen, "%s%s", where, msg);
			return -EINVAL;
		}
		return 0;
	case WMSG_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			snprintf(msg, sizeof(msg), "expected true or false");
		break;
	case WMSG_OBJECT:
		if (!json_object_is_type(v, json_type_object)) {
			snprintf(msg, sizeof(msg), "expected an object");
			break;
		}
		if (fd->of == WMSG_S_OPAQUE)
			return 0;
		snprintf(inner, sizeof(inner), "%s%s: ", where, fd->name);
		return wmsg_check_at(fd->of, v, inner, err, errlen);
	case WMSG_ARRAY:
		if (!json_object_is_type(v, json_type_array)) {
			snprintf(msg, sizeof(msg), "expected an array");
			break;
		}
		len = json_object_array_length(v);
		if ((int64_t)len > fd->max) {
			snprintf(msg, sizeof(msg), "%zu entries (at most "
			    "%lld)", len, (long long)fd->max);
			break;
		}
		for (i = 0; i < len; i++) {
			struct json_object *e = json_object_array_get_idx(v, i);

			snprintf(inner, sizeof(inner), "%s%s[%zu]: ", where,
			    fd->name, i);
			if (e == NULL || !json_object_is_type(e,
			    json_type_object)) {
				snprintf(err, errlen, "%sexpected an object",
				    inner);
				return -EINVAL;
			}
			if (wmsg_check_at(fd->of, e, inner, err, errlen) < 0)
				return -EINVAL;
		}
		break;
	case WMSG_ANY:
		break;
	}
	if (msg[0] != '\0') {
		snprintf(err, errlen, "%s%s: %s", where, fd->name, msg);
		return -EINVAL;
	}
	return 0;
}

static int
wmsg_check_at(enum wmsg_shape s, struct json_object *o, const char *where,
    char *err, size_t errlen)
{
	struct json_object *v;
	int i;

	if (o != NULL && !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "%sexpected an object", where);
		return -EINVAL;
	}
	if (s == WMSG_S_OPAQUE || o == NULL)
		;	/* any members; or none, and only required ones fail */
	else {
		json_object_object_foreach(o, key, val) {
			(void)val;
			if (wmsg_find(s, key) < 0) {
				snprintf(err, errlen, "%sunknown argument "
				    "'%s'", where, key);
				return -EINVAL;
			}
		}
	}
	for (i = 0; i < WMSG_NFIELDS; i++) {
		const struct wmsg_field_def *fd = &wmsg_fields[i];

		if (fd->shape != s)
			continue;
		v = NULL;
		if (o != NULL)
			json_object_object_get_ex(o, fd->name, &v);
		if (v == NULL) {
			if (fd->required) {
				snprintf(err, errlen, "%s%s: missing argument",
				    where, fd->name);
				return -EINVAL;
			}
			continue;
		}
		if (wmsg_check_value(fd, o, v, where, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

int
wmsg_check(enum wmsg_shape s, struct json_object *o, char *err,
    size_t errlen)
{
	return wmsg_check_at(s, o, "", err, errlen);
}

static struct json_object *
wmsg_value(struct json_object *o, enum wmsg_field f)
{
	struct json_object *v = NULL;

	if (o != NULL)
		json_object_object_get_ex(o, wmsg_fields[f].name, &v);
	return v;
}

const char *
wmsg_str(struct json_object *o, enum wmsg_field f, const char *dflt)
{
	struct json_object *v = wmsg_value(o, f);

	return v != NULL && json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : dflt;
}

int64_t
wmsg_int(struct json_object *o, enum wmsg_field f, int64_t dflt)
{
	struct json_object *v = wmsg_value(o, f);

	return v != NULL && json_object_is_type(v, json_type_int) ?
	    json_object_get_int64(v) : dflt;
}

bool
wmsg_bool(struct json_object *o, enum wmsg_field f, bool dflt)
{
	struct json_object *v = wmsg_value(o, f);

	return v != NULL && json_object_is_type(v, json_type_boolean) ?
	    json_object_get_boolean(v) : dflt;
}

struct json_object *
wmsg_get(struct json_object *o, enum wmsg_field f)
{
	return wmsg_value(o, f);
}

int
wmsg_put(struct json_object *o, enum wmsg_field f, struct json_object *value)
{
	if (value == NULL)
		return 0;
	if (json_object_object_add(o, wmsg_fields[f].name, value) < 0) {
		json_object_put(value);
		return -ENOMEM;
	}
	return 0;
}

int
wmsg_put_str(struct json_object *o, enum wmsg_field f, const char *s)
{
	struct json_object *v;

	if (s == NULL)
		return 0;
	if ((v = json_object_new_string(s)) == NULL)
		return -ENOMEM;
	return wmsg_put(o, f, v);
}

int
wmsg_put_int(struct json_object *o, enum wmsg_field f, int64_t n)
{
	struct json_object *v = json_object_new_int64(n);

	return v == NULL ? -ENOMEM : wmsg_put(o, f, v);
}

int
wmsg_put_bool(struct json_object *o, enum wmsg_field f, bool b)
{
	struct json_object *v = json_object_new_boolean(b);

	return v == NULL ? -ENOMEM : wmsg_put(o, f, v);
}
