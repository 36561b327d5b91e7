/*
 * The control protocol: framing, request validation and message builders.
 * No I/O and no logging here: the supervisor, its workers and vmctl all
 * link this file.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "proto.h"

/* Deeper nesting than any request needs; json-c's own default is 32. */
#define PROTO_MAX_DEPTH		32

static const char *const proto_error_names[] = {
	[PROTO_ERR_PARSE] = "parse_error",
	[PROTO_ERR_TOO_LARGE] = "too_large",
	[PROTO_ERR_BAD_REQUEST] = "bad_request",
	[PROTO_ERR_UNKNOWN_COMMAND] = "unknown_command",
	[PROTO_ERR_INVALID_ARGUMENT] = "invalid_argument",
	[PROTO_ERR_NOT_FOUND] = "not_found",
	[PROTO_ERR_EXISTS] = "exists",
	[PROTO_ERR_BAD_STATE] = "bad_state",
	[PROTO_ERR_PERMISSION] = "permission_denied",
	[PROTO_ERR_TIMEOUT] = "timeout",
	[PROTO_ERR_LIMIT] = "limit_reached",
	[PROTO_ERR_INTERNAL] = "internal",
	[PROTO_ERR_KVM_UNAVAILABLE] = "kvm_unavailable",
};
#define PROTO_NERRORS	\
	(sizeof(proto_error_names) / sizeof(proto_error_names[0]))

const char *
proto_error_class(enum proto_error e)
{
	if ((unsigned int)e >= PROTO_NERRORS || proto_error_names[e] == NULL)
		return "internal";
	return proto_error_names[e];
}

int
proto_error_lookup(const char *cls)
{
	size_t i;

	if (cls == NULL)
		return -ENOENT;
	for (i = 0; i < PROTO_NERRORS; i++)
		if (proto_error_names[i] != NULL &&
		    strcmp(proto_error_names[i], cls) == 0)
			return (int)i;
	return -ENOENT;
}

static void __attribute__((format(printf, 3, 4)))
proto_desc(char *desc, size_t desclen, const char *fmt, ...)
{
	va_list ap;

	if (desc == NULL || desclen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(desc, desclen, fmt, ap);
	va_end(ap);
}

int
proto_parse_object(const char *line, size_t len, struct json_object **out,
    char *desc, size_t desclen)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	int rc;

	*out = NULL;
	if (len > PROTO_MAX_LINE * 16) {
		/* json-c takes an int length; nothing valid is this big. */
		proto_desc(desc, desclen, "message too large");
		return PROTO_ERR_PARSE;
	}
	/* json-c would stop at a NUL and call the rest trailing garbage. */
	if (memchr(line, '\0', len) != NULL) {
		proto_desc(desc, desclen, "message contains a NUL byte");
		return PROTO_ERR_PARSE;
	}

	/* json-c's own check lets surrogates and overlong forms through. */
	rc = proto_text_check(line, len, desc, desclen);
	if (rc != 0)
		return rc;

	tok = json_tokener_new_ex(PROTO_MAX_DEPTH);
	if (tok == NULL) {
		proto_desc(desc, desclen, "out of memory");
		return PROTO_ERR_PARSE;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue) {
		/* The line is all there is: a NUL tells json-c so. */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
	}
	if (obj == NULL && jerr == json_tokener_success) {
		/* The literal null: valid JSON, but not an object. */
		proto_desc(desc, desclen, "message is not a JSON object");
		json_tokener_free(tok);
		return PROTO_ERR_PARSE;
	}
	if (obj == NULL || jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			proto_desc(desc, desclen, "invalid JSON: %s",
			    len == 0 ? "empty message" :
			    "unexpected end of input");
		else
			proto_desc(desc, desclen, "invalid JSON: %s",
			    json_tokener_error_desc(jerr));
		json_object_put(obj);
		json_tokener_free(tok);
		return PROTO_ERR_PARSE;
	}
	json_tokener_free(tok);

	if (!json_object_is_type(obj, json_type_object)) {
		proto_desc(desc, desclen, "message is not a JSON object");
		json_object_put(obj);
		return PROTO_ERR_PARSE;
	}
	*out = obj;
	return 0;
}

/*
 * Whether v (an id) is free of the NaN and Infinity json-c accepts as
 * numbers; a number too big for a double ("1e400") is still JSON.
 */
static bool
proto_json_is_strict(struct json_object *v, int depth)
{
	const char *s;
	size_t i;

	if (depth > PROTO_MAX_DEPTH)
		return false;
	switch (json_object_get_type(v)) {
	case json_type_double:
		if (isfinite(json_object_get_double(v)))
			return true;
		/* The text as it came in, kept by json-c. */
		s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
		if (s == NULL)
			return false;
		if (*s == '-')
			s++;
		return *s >= '0' && *s <= '9';
	case json_type_array:
		for (i = 0; i < json_object_array_length(v); i++)
			if (!proto_json_is_strict(json_object_array_get_idx(v,
			    i), depth + 1))
				return false;
		return true;
	case json_type_object: {
		json_object_object_foreach(v, key, val) {
			(void)key;
			if (!proto_json_is_strict(val, depth + 1))
				return false;
		}
		return true;
	}
	default:
		return true;
	}
}

int
proto_parse_request(const char *line, size_t len, struct proto_request *req,
    struct json_object **id, char *desc, size_t desclen)
{
	struct json_object *root, *v;
	int rc;

	memset(req, 0, sizeof(*req));
	*id = NULL;

	rc = proto_parse_object(line, len, &root, desc, desclen);
	if (rc != 0)
		return rc;

	/* The id first, so that every later error can carry it. */
	if (json_object_object_get_ex(root, "id", &v))
		req->id = v;		/* NULL for a JSON null */
	if (!proto_json_is_strict(req->id, 0)) {
		/* json-c takes NaN and Infinity; echoed, they would make
		 * the reply itself invalid JSON. */
		req->id = NULL;
		proto_desc(desc, desclen, "\"id\" holds NaN or Infinity, "
		    "which JSON does not have");
		goto bad_request;
	}

	json_object_object_foreach(root, key, val) {
		(void)val;
		if (strcmp(key, "id") != 0 && strcmp(key, "command") != 0 &&
		    strcmp(key, "arguments") != 0) {
			proto_desc(desc, desclen,
			    "unknown member '%s' in request", key);
			goto bad_request;
		}
	}

	if (!json_object_object_get_ex(root, "command", &v) || v == NULL) {
		proto_desc(desc, desclen, "missing \"command\"");
		goto bad_request;
	}
	if (!json_object_is_type(v, json_type_string)) {
		proto_desc(desc, desclen, "\"command\" must be a string");
		goto bad_request;
	}
	req->command = json_object_get_string(v);
	if (strlen(req->command) != (size_t)json_object_get_string_len(v)) {
		/* Else "vm.list\u0000x" would run vm.list. */
		proto_desc(desc, desclen, "\"command\" contains a NUL "
		    "character");
		goto bad_request;
	}

	if (!json_object_object_get_ex(root, "arguments", &v) || v == NULL) {
		/* Absent (or null) arguments mean {}; root keeps it alive. */
		v = json_object_new_object();
		if (v == NULL ||
		    json_object_object_add(root, "arguments", v) != 0) {
			json_object_put(v);
			proto_desc(desc, desclen, "out of memory");
			goto bad_request;
		}
	} else if (!json_object_is_type(v, json_type_object)) {
		proto_desc(desc, desclen, "\"arguments\" must be an object");
		goto bad_request;
	}
	req->arguments = v;
	req->root = root;
	return 0;

bad_request:
	*id = json_object_get(req->id);
	memset(req, 0, sizeof(*req));
	json_object_put(root);
	return PROTO_ERR_BAD_REQUEST;
}

/* Builders ------------------------------------------------------------- */

static struct json_object *
proto_message(struct json_object *id, const char *key, struct json_object *val)
{
	struct json_object *obj;

	obj = json_object_new_object();
	if (obj == NULL) {
		json_object_put(val);
		return NULL;
	}
	json_object_object_add(obj, "id", json_object_get(id));
	json_object_object_add(obj, key, val);
	return obj;
}

struct json_object *
proto_reply(struct json_object *id, struct json_object *ret)
{
	if (ret == NULL)
		ret = json_object_new_object();
	return proto_message(id, "return", ret);
}

/*
 * Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or 0; at most avail bytes are
 * read.
 */
static size_t
proto_utf8_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;		/* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n > avail)
		return 0;
	for (i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

/* The value of the four hex digits at s, or -1. */
static int
proto_hex4(const char *s, size_t avail)
{
	int v = 0, d;
	size_t i;

	if (avail < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = s[i] - '0';
		else if ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'f')
			d = (s[i] | 0x20) - 'a' + 10;
		else
			return -1;
		v = v << 4 | d;
	}
	return v;
}

int
proto_text_check(const char *text, size_t len, char *desc, size_t desclen)
{
	const unsigned char *p = (const unsigned char *)text;
	bool in_string = false;
	size_t i = 0, n;
	int u, lo;

	while (i < len) {
		n = proto_utf8_len(p + i, len - i);
		if (n == 0) {
			proto_desc(desc, desclen, "invalid UTF-8 at byte %zu",
			    i);
			return PROTO_ERR_INVALID_ARGUMENT;
		}
		if (p[i] == '"') {
			in_string = !in_string;
		} else if (in_string && p[i] == '\\' && i + 1 < len) {
			i++;
			if (p[i] == 'u' &&
			    (u = proto_hex4(text + i + 1, len - i - 1)) >= 0) {
				i += 4;
				/*
				 * json-c turns a lone surrogate into U+FFFD:
				 * refuse it rather than store something else
				 * than what was sent.
				 */
				if (u >= 0xdc00 && u <= 0xdfff)
					goto surrogate;
				if (u >= 0xd800 && u <= 0xdbff) {
					if (i + 2 >= len || p[i + 1] != '\\' ||
					    p[i + 2] != 'u' ||
					    (lo = proto_hex4(text + i + 3,
					    len - i - 3)) < 0xdc00 ||
					    lo > 0xdfff)
						goto surrogate;
					i += 6;
				}
			}
		}
		i += n;
	}
	return 0;
surrogate:
	proto_desc(desc, desclen, "lone UTF-16 surrogate in a \\u escape");
	return PROTO_ERR_INVALID_ARGUMENT;
}

/*
 * Descriptions quote what clients sent, cut with "%.100s" or by the
 * buffer's size, which can split a character: such bytes become '?', so
 * that the reply stays valid UTF-8 and clients can parse it.
 */
static void
proto_utf8_scrub(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t n;

	while (*p != '\0') {
		n = proto_utf8_len(p, strlen((const char *)p));
		if (n == 0)
			*p++ = '?';
		else
			p += n;
	}
}

struct json_object *
proto_error(struct json_object *id, enum proto_error e, const char *fmt, ...)
{
	struct json_object *err;
	char desc[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	proto_utf8_scrub(desc);

	err = json_object_new_object();
	if (err == NULL)
		return NULL;
	json_object_object_add(err, "class",
	    json_object_new_string(proto_error_class(e)));
	json_object_object_add(err, "desc", json_object_new_string(desc));
	return proto_message(id, "error", err);
}

struct json_object *
proto_event(const char *event, const char *vm, struct json_object *data)
{
	struct json_object *obj;
	struct timespec ts;
	char tsbuf[64];

	obj = json_object_new_object();
	if (obj == NULL) {
		json_object_put(data);
		return NULL;
	}
	if (data == NULL)
		data = json_object_new_object();
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Microseconds, without the 17 digits a plain double would get. */
	snprintf(tsbuf, sizeof(tsbuf), "%lld.%06ld", (long long)ts.tv_sec,
	    ts.tv_nsec / 1000);

	json_object_object_add(obj, "event", json_object_new_string(event));
	if (vm != NULL)
		json_object_object_add(obj, "vm", json_object_new_string(vm));
	json_object_object_add(obj, "data", data);
	json_object_object_add(obj, "timestamp",
	    json_object_new_double_s((double)ts.tv_sec + ts.tv_nsec / 1e9,
	    tsbuf));
	return obj;
}

struct json_object *
proto_greeting(void)
{
	struct json_object *obj, *g, *caps;

	obj = json_object_new_object();
	g = json_object_new_object();
	caps = json_object_new_array();
	if (obj == NULL || g == NULL || caps == NULL) {
		json_object_put(obj);
		json_object_put(g);
		json_object_put(caps);
		return NULL;
	}
	json_object_array_add(caps, json_object_new_string("console"));
	json_object_array_add(caps, json_object_new_string("events"));
	json_object_array_add(caps, json_object_new_string("display"));
	json_object_object_add(g, "name", json_object_new_string("vmmd"));
	json_object_object_add(g, "version",
	    json_object_new_string(VMMD_VERSION));
	json_object_object_add(g, "protocol",
	    json_object_new_int(PROTO_VERSION));
	json_object_object_add(g, "capabilities", caps);
	json_object_object_add(obj, "greeting", g);
	return obj;
}

char *
proto_serialize(struct json_object *obj, size_t *lenp)
{
	const char *s;
	size_t len;
	char *line;

	/* Control characters, quotes and backslashes are escaped by
	 * json-c, so the result never contains a raw newline. */
	s = json_object_to_json_string_length(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (s == NULL)
		return NULL;
	line = malloc(len + 2);
	if (line == NULL)
		return NULL;
	memcpy(line, s, len);
	line[len] = '\n';
	line[len + 1] = '\0';
	if (lenp != NULL)
		*lenp = len + 1;
	return line;
}

/* Line framing --------------------------------------------------------- */

struct proto_lines {
	char *buf;
	size_t start;		/* first unconsumed byte */
	size_t end;		/* one past the last buffered byte */
	size_t cap;
	size_t scanned;		/* [start, scanned) holds no newline */
	size_t max_line;
	int discarding;		/* dropping the rest of a too-long line */
	int too_long;		/* a too-long line waits to be reported */
};

struct proto_lines *
proto_lines_new(size_t max_line)
{
	struct proto_lines *pl;

	pl = calloc(1, sizeof(*pl));
	if (pl == NULL)
		return NULL;
	pl->max_line = max_line;
	return pl;
}

void
proto_lines_free(struct proto_lines *pl)
{
	if (pl == NULL)
		return;
	free(pl->buf);
	free(pl);
}

/* Drop the partial line at the end of the buffer: it is too long. */
static void
proto_lines_overflow(struct proto_lines *pl)
{
	pl->start = pl->end = pl->scanned = 0;
	pl->discarding = 1;
	pl->too_long = 1;
}

int
proto_lines_feed(struct proto_lines *pl, const char *buf, size_t len)
{
	const char *nl;
	size_t need, pending;
	char *nbuf;

	if (pl->discarding) {
		nl = memchr(buf, '\n', len);
		if (nl == NULL)
			return 0;
		pl->discarding = 0;
		len -= (size_t)(nl + 1 - buf);
		buf = nl + 1;
	}
	if (len == 0)
		return 0;

	/* Compact before growing: consumed lines are dead space. */
	if (pl->start > 0) {
		pending = pl->end - pl->start;
		memmove(pl->buf, pl->buf + pl->start, pending);
		pl->scanned -= pl->start;
		pl->start = 0;
		pl->end = pending;
	}
	need = pl->end + len + 1;	/* +1: room to NUL-terminate a line */
	if (need > pl->cap) {
		size_t ncap = pl->cap ? pl->cap : 4096;

		while (ncap < need)
			ncap *= 2;
		nbuf = realloc(pl->buf, ncap);
		if (nbuf == NULL)
			return -ENOMEM;
		pl->buf = nbuf;
		pl->cap = ncap;
	}
	memcpy(pl->buf + pl->end, buf, len);
	pl->end += len;

	/*
	 * Keep memory bounded: when everything buffered is one partial line
	 * that is already too long, it can be dropped now.  Complete lines
	 * before it (if any) are handled by proto_lines_next().
	 */
	if (pl->end - pl->start > pl->max_line &&
	    memchr(pl->buf + pl->scanned, '\n', pl->end - pl->scanned) == NULL)
		proto_lines_overflow(pl);
	return 0;
}

int
proto_lines_next(struct proto_lines *pl, const char **line, size_t *len)
{
	char *nl;
	size_t n;

	if (pl->too_long) {
		pl->too_long = 0;
		return -E2BIG;
	}
	if (pl->start == pl->end)
		return 0;
	nl = memchr(pl->buf + pl->scanned, '\n', pl->end - pl->scanned);
	if (nl == NULL) {
		pl->scanned = pl->end;
		if (pl->end - pl->start > pl->max_line) {
			proto_lines_overflow(pl);
			pl->too_long = 0;
			return -E2BIG;
		}
		return 0;
	}
	n = (size_t)(nl - (pl->buf + pl->start));
	*nl = '\0';			/* callers may treat it as a C string */
	*line = pl->buf + pl->start;
	*len = n;
	pl->start += n + 1;
	pl->scanned = pl->start;
	if (pl->start == pl->end)
		pl->start = pl->end = pl->scanned = 0;
	if (n > pl->max_line)
		return -E2BIG;
	return 1;
}

/* Argument accessors --------------------------------------------------- */

static int
proto_arg_get(struct json_object *args, const char *key, int required,
    struct json_object **v, char *desc, size_t desclen)
{
	*v = NULL;
	if (args != NULL)
		json_object_object_get_ex(args, key, v);
	/* A JSON null is the same as leaving the argument out. */
	if (*v == NULL) {
		if (required) {
			proto_desc(desc, desclen, "%s: missing argument", key);
			return -EINVAL;
		}
		return 0;
	}
	return 1;
}

int
proto_arg_string(struct json_object *args, const char *key, int required,
    const char **out, char *desc, size_t desclen)
{
	struct json_object *v;
	int rc;

	rc = proto_arg_get(args, key, required, &v, desc, desclen);
	if (rc <= 0)
		return rc;
	if (!json_object_is_type(v, json_type_string)) {
		proto_desc(desc, desclen, "%s: expected a string", key);
		return -EINVAL;
	}
	if (strlen(json_object_get_string(v)) !=
	    (size_t)json_object_get_string_len(v)) {
		proto_desc(desc, desclen, "%s: contains a NUL character", key);
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	return 0;
}

int
proto_arg_int(struct json_object *args, const char *key, int required,
    int64_t min, int64_t max, int64_t *out, char *desc, size_t desclen)
{
	struct json_object *v;
	int64_t n;
	int rc;

	rc = proto_arg_get(args, key, required, &v, desc, desclen);
	if (rc <= 0)
		return rc;
	if (!json_object_is_type(v, json_type_int)) {
		proto_desc(desc, desclen, "%s: expected an integer", key);
		return -EINVAL;
	}
	errno = 0;
	n = json_object_get_int64(v);
	/* json-c clamps values beyond int64; its text shows the real one. */
	if (errno != 0 || n < min || n > max ||
	    (n == INT64_MAX && json_object_get_uint64(v) != (uint64_t)n)) {
		proto_desc(desc, desclen, "%s: %s is out of range (%lld..%lld)",
		    key, json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN), (long long)min, (long long)max);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

int
proto_arg_bool(struct json_object *args, const char *key, int required,
    int *out, char *desc, size_t desclen)
{
	struct json_object *v;
	int rc;

	rc = proto_arg_get(args, key, required, &v, desc, desclen);
	if (rc <= 0)
		return rc;
	if (!json_object_is_type(v, json_type_boolean)) {
		proto_desc(desc, desclen, "%s: expected true or false", key);
		return -EINVAL;
	}
	*out = json_object_get_boolean(v);
	return 0;
}

int
proto_args_check(struct json_object *args, const char *const *keys,
    char *desc, size_t desclen)
{
	size_t i;

	if (args == NULL)
		return 0;
	json_object_object_foreach(args, key, val) {
		(void)val;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], key) == 0)
				break;
		if (keys[i] == NULL) {
			proto_desc(desc, desclen, "unknown argument '%s'", key);
			return -EINVAL;
		}
	}
	return 0;
}

int
proto_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int i, v;
	int used;

	for (i = 0; i < 6; i++) {
		if (!isxdigit((unsigned char)s[0]) ||
		    !isxdigit((unsigned char)s[1]) ||
		    sscanf(s, "%2x%n", &v, &used) != 1 || used != 2)
			return -EINVAL;
		mac[i] = (uint8_t)v;
		s += 2;
		if (*s++ != (i < 5 ? ':' : '\0'))
			return -EINVAL;
	}
	return 0;
}
