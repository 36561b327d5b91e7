/*
 * Unit tests of the control protocol module: request parsing, line
 * framing with its size cap, serialisation and the message builders.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "tap.h"

/* Parse line and check the outcome class (0 = success). */
static int
parse(const char *line, struct proto_request *req, struct json_object **id,
    char *desc, size_t desclen)
{
	return proto_parse_request(line, strlen(line), req, id, desc, desclen);
}

static void
test_error_classes(void)
{
	static const struct {
		enum proto_error e;
		const char *name;
	} classes[] = {
		{ PROTO_ERR_PARSE, "parse_error" },
		{ PROTO_ERR_TOO_LARGE, "too_large" },
		{ PROTO_ERR_BAD_REQUEST, "bad_request" },
		{ PROTO_ERR_UNKNOWN_COMMAND, "unknown_command" },
		{ PROTO_ERR_INVALID_ARGUMENT, "invalid_argument" },
		{ PROTO_ERR_NOT_FOUND, "not_found" },
		{ PROTO_ERR_EXISTS, "exists" },
		{ PROTO_ERR_BAD_STATE, "bad_state" },
		{ PROTO_ERR_PERMISSION, "permission_denied" },
		{ PROTO_ERR_TIMEOUT, "timeout" },
		{ PROTO_ERR_LIMIT, "limit_reached" },
		{ PROTO_ERR_INTERNAL, "internal" },
		{ PROTO_ERR_KVM_UNAVAILABLE, "kvm_unavailable" },
	};
	size_t i;
	int ok = 1;

	for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strcmp(proto_error_class(classes[i].e), classes[i].name) != 0 ||
		    proto_error_lookup(classes[i].name) != (int)classes[i].e ||
		    classes[i].e == 0)
			ok = 0;
	}
	tap_ok(ok, "every error class has its name, both ways, and is not 0");
	tap_ok(proto_error_lookup("nonsense") == -ENOENT &&
	    proto_error_lookup(NULL) == -ENOENT,
	    "unknown class names are not found");
	tap_ok(strcmp(proto_error_class((enum proto_error)999), "internal") == 0,
	    "an out-of-range class reads as internal");
}

static void
test_parse_valid(void)
{
	struct proto_request req;
	struct json_object *id, *v;
	char desc[256];
	int rc;

	rc = parse("{\"id\":1,\"command\":\"vm.start\",\"arguments\":{\"name\":\"web\"}}",
	    &req, &id, desc, sizeof(desc));
	tap_ok(rc == 0, "valid request parses");
	tap_ok(rc == 0 && strcmp(req.command, "vm.start") == 0,
	    "command is returned");
	tap_ok(rc == 0 && json_object_get_int(req.id) == 1 &&
	    json_object_is_type(req.id, json_type_int), "numeric id");
	tap_ok(rc == 0 && json_object_object_get_ex(req.arguments, "name", &v) &&
	    strcmp(json_object_get_string(v), "web") == 0, "arguments object");
	json_object_put(req.root);

	rc = parse("{\"id\":\"abc\",\"command\":\"vm.list\"}", &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == 0 && json_object_is_type(req.id, json_type_string) &&
	    strcmp(json_object_get_string(req.id), "abc") == 0, "string id");
	tap_ok(rc == 0 && json_object_is_type(req.arguments, json_type_object) &&
	    json_object_object_length(req.arguments) == 0,
	    "absent arguments become an empty object");
	json_object_put(req.root);

	rc = parse("{\"id\":null,\"command\":\"vm.list\",\"arguments\":null}",
	    &req, &id, desc, sizeof(desc));
	tap_ok(rc == 0 && req.id == NULL, "null id reads as no id");
	tap_ok(rc == 0 && req.arguments != NULL &&
	    json_object_object_length(req.arguments) == 0,
	    "null arguments become an empty object");
	json_object_put(req.root);

	rc = parse("{\"command\":\"vm.list\"}", &req, &id, desc, sizeof(desc));
	tap_ok(rc == 0 && req.id == NULL, "absent id");
	json_object_put(req.root);

	rc = parse("{\"id\":{\"a\":[1,2]},\"command\":\"x\"}", &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == 0 && json_object_is_type(req.id, json_type_object),
	    "structured id is allowed");
	json_object_put(req.root);

	rc = parse(" \t{\"id\":2,\"command\":\"x\"}  \r", &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == 0, "surrounding whitespace (and a CR) is fine");
	json_object_put(req.root);

	rc = parse("{\"id\":3.5e1,\"command\":\"x\"}", &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == 0 && json_object_is_type(req.id, json_type_double),
	    "floating-point id");
	json_object_put(req.root);
}

static void
expect_error(const char *line, int cls, int want_id, const char *what)
{
	struct proto_request req;
	struct json_object *id = NULL;
	char desc[256] = "";
	int rc;

	rc = proto_parse_request(line, strlen(line), &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == cls && desc[0] != '\0' && req.root == NULL &&
	    (want_id < 0 ? id == NULL :
	    (id != NULL && json_object_get_int(id) == want_id)),
	    "%s -> %s (%s)", what, proto_error_class((enum proto_error)cls),
	    desc);
	json_object_put(id);
}

static void
test_parse_errors(void)
{
	struct proto_request req;
	struct json_object *id;
	char desc[256];
	char line[] = "{\"id\":1,\"command\":\"x\"}";
	static const char utf8_bad[] = "{\"id\":1,\"command\":\"\xff\xfe\"}";
	char *deep;
	size_t i;
	int rc;

	expect_error("", PROTO_ERR_PARSE, -1, "empty line");
	expect_error("garbage", PROTO_ERR_PARSE, -1, "not JSON");
	expect_error("{\"id\":1,", PROTO_ERR_PARSE, -1, "truncated object");
	expect_error("[1,2]", PROTO_ERR_PARSE, -1, "array");
	expect_error("42", PROTO_ERR_PARSE, -1, "number");
	expect_error("\"str\"", PROTO_ERR_PARSE, -1, "string");
	expect_error("null", PROTO_ERR_PARSE, -1, "null");
	expect_error("{\"id\":1,\"command\":\"x\"} {}", PROTO_ERR_PARSE, -1,
	    "trailing data");
	expect_error(utf8_bad, PROTO_ERR_INVALID_ARGUMENT, -1,
	    "invalid UTF-8");
	/* RFC 3629: what json-c's own check lets through. */
	expect_error("{\"id\":1,\"command\":\"\xed\xa0\x80\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "an encoded surrogate");
	expect_error("{\"id\":1,\"command\":\"\xc0\xaf\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "an overlong form");
	expect_error("{\"id\":1,\"command\":\"\xe0\x80\xaf\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "an overlong three-byte form");
	expect_error("{\"id\":1,\"command\":\"\xf4\x90\x80\x80\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "a code point above U+10FFFF");
	expect_error("{\"id\":1,\"command\":\"\xe2\x82\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "a truncated sequence");
	expect_error("{\"id\":1,\"command\":\"x\xf0\x9f\x98",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "a sequence cut by the line's end");
	expect_error("{\"id\":1,\"command\":\"\\ud800\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "a lone high surrogate escape");
	expect_error("{\"id\":1,\"command\":\"\\udc00\\ud800\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "surrogate escapes out of order");
	expect_error("{\"id\":1,\"command\":\"\\ud800\\u0041\"}",
	    PROTO_ERR_INVALID_ARGUMENT, -1, "a high surrogate before a letter");
	rc = parse("{\"id\":1,\"command\":\"\\ud83d\\ude00 \xf0\x9f\x98\x80 "
	    "\\\\ud800 \xc3\xa9\"}", &req, &id, desc, sizeof(desc));
	tap_ok(rc == 0 && strcmp(req.command,
	    "\xf0\x9f\x98\x80 \xf0\x9f\x98\x80 \\ud800 \xc3\xa9") == 0,
	    "paired escapes, four-byte forms and an escaped backslash pass (%s)",
	    rc ? desc : "ok");
	if (rc == 0)
		json_object_put(req.root);
	json_object_put(id);
	expect_error("{\"id\":5}", PROTO_ERR_BAD_REQUEST, 5, "missing command");
	expect_error("{\"id\":6,\"command\":7}", PROTO_ERR_BAD_REQUEST, 6,
	    "command not a string");
	expect_error("{\"id\":7,\"command\":null}", PROTO_ERR_BAD_REQUEST, 7,
	    "command null");
	expect_error("{\"id\":8,\"command\":\"x\",\"arguments\":[]}",
	    PROTO_ERR_BAD_REQUEST, 8, "arguments not an object");
	expect_error("{\"id\":9,\"command\":\"x\",\"arguments\":\"a\"}",
	    PROTO_ERR_BAD_REQUEST, 9, "arguments a string");
	expect_error("{\"id\":10,\"command\":\"x\",\"extra\":1}",
	    PROTO_ERR_BAD_REQUEST, 10, "unknown member");
	expect_error("{\"command\":1}", PROTO_ERR_BAD_REQUEST, -1,
	    "bad request without id");
	expect_error("{\"id\":11,\"command\":\"vm.list\\u0000x\"}",
	    PROTO_ERR_BAD_REQUEST, 11, "NUL character in the command");
	/* json-c reads NaN and Infinity; echoed, the reply is not JSON. */
	expect_error("{\"id\":NaN,\"command\":\"x\"}", PROTO_ERR_BAD_REQUEST,
	    -1, "NaN id");
	expect_error("{\"id\":[1,-Infinity],\"command\":\"x\"}",
	    PROTO_ERR_BAD_REQUEST, -1, "Infinity inside the id");
	rc = parse("{\"id\":1e400,\"command\":\"x\"}", &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == 0, "an id beyond double range is still JSON (%s)",
	    rc ? desc : "ok");
	if (rc == 0)
		json_object_put(req.root);
	json_object_put(id);
	rc = parse("null", &req, &id, desc, sizeof(desc));
	tap_ok(rc == PROTO_ERR_PARSE && strstr(desc, "not a JSON object"),
	    "the literal null is not an object (%s)", desc);

	/* A NUL inside the line must not make json-c stop early. */
	line[sizeof(line) - 2] = '\0';
	rc = proto_parse_request(line, sizeof(line) - 1, &req, &id, desc,
	    sizeof(desc));
	tap_ok(rc == PROTO_ERR_PARSE && id == NULL, "NUL byte in the line (%s)",
	    desc);

	deep = malloc(2 * 200 + 1);
	for (i = 0; i < 200; i++) {
		deep[i] = '[';
		deep[200 + i] = ']';
	}
	deep[400] = '\0';
	rc = proto_parse_request(deep, 400, &req, &id, desc, sizeof(desc));
	tap_ok(rc == PROTO_ERR_PARSE, "deep nesting is refused (%s)", desc);
	free(deep);
}

/* Error descriptions quoting client text stay valid UTF-8. */
static void
test_error_utf8(void)
{
	struct json_object *msg, *back = NULL;
	char *s, desc[256];
	size_t len;

	/* "%.3s" cuts the two-byte e-acute after its first byte. */
	msg = proto_error(NULL, PROTO_ERR_NOT_FOUND, "no VM named '%.3s'",
	    "ab\xc3\xa9");
	s = proto_serialize(msg, &len);
	tap_ok(s != NULL && strstr(s, "'ab?'") != NULL &&
	    proto_parse_object(s, len - 1, &back, desc, sizeof(desc)) == 0,
	    "a cut character becomes '?' (%.*s)", s ? (int)len - 1 : 4,
	    s ? s : "null");
	json_object_put(back);
	free(s);
	json_object_put(msg);

	msg = proto_error(NULL, PROTO_ERR_INTERNAL, "%s",
	    "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\xa0\x80 \xff");
	s = proto_serialize(msg, &len);
	tap_ok(s != NULL && strstr(s, "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 ??? ?") !=
	    NULL, "valid sequences kept, surrogates and stray bytes replaced");
	free(s);
	json_object_put(msg);
}

static void
test_parse_object(void)
{
	struct json_object *obj;
	char desc[128];

	tap_ok(proto_parse_object("{\"event\":\"x\"}", 13, &obj, desc,
	    sizeof(desc)) == 0 && obj != NULL, "proto_parse_object: object");
	json_object_put(obj);
	tap_ok(proto_parse_object("[]", 2, &obj, desc, sizeof(desc)) ==
	    PROTO_ERR_PARSE && obj == NULL, "proto_parse_object: array");
}

/* Framing -------------------------------------------------------------- */

static void
test_lines_basic(void)
{
	struct proto_lines *pl = proto_lines_new(16);
	const char *line;
	size_t len;
	const char *in = "abc\n\nde";
	int rc;

	proto_lines_feed(pl, in, strlen(in));
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 3 && memcmp(line, "abc", 3) == 0 &&
	    line[3] == '\0', "first line, NUL-terminated");
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 0, "empty line");
	tap_ok(proto_lines_next(pl, &line, &len) == 0, "partial line waits");
	proto_lines_feed(pl, "f\n", 2);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 3 && memcmp(line, "def", 3) == 0,
	    "line completed by a later feed");
	tap_ok(proto_lines_next(pl, &line, &len) == 0, "then nothing");
	proto_lines_free(pl);
	proto_lines_free(NULL);
}

static void
test_lines_bytewise(void)
{
	struct proto_lines *pl = proto_lines_new(PROTO_MAX_LINE);
	const char *msg = "{\"id\":1}\n{\"id\":2}\n";
	const char *line;
	size_t i, len;
	int n = 0, ok = 1;

	for (i = 0; i < strlen(msg); i++) {
		proto_lines_feed(pl, msg + i, 1);
		while (proto_lines_next(pl, &line, &len) == 1) {
			n++;
			if (len != 8 || line[6] != '0' + n)
				ok = 0;
		}
	}
	tap_ok(ok && n == 2, "lines fed one byte at a time");
	proto_lines_free(pl);
}

static void
test_lines_cap(void)
{
	struct proto_lines *pl;
	const char *line;
	size_t len, max = PROTO_MAX_LINE;
	char *big;
	int rc;

	big = malloc(max + 100);
	memset(big, 'x', max + 100);

	/* Exactly the cap is fine. */
	pl = proto_lines_new(max);
	proto_lines_feed(pl, big, max);
	proto_lines_feed(pl, "\n", 1);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == max, "a line of exactly %zu bytes passes", max);

	/* One more, newline in the same feed, then a good line. */
	big[max + 1] = '\n';
	memcpy(big + max + 2, "ok\n", 3);
	proto_lines_feed(pl, big, max + 5);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == -E2BIG, "a line of %zu bytes is too long", max + 1);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 2 && memcmp(line, "ok", 2) == 0,
	    "the next line still comes through");
	tap_ok(proto_lines_next(pl, &line, &len) == 0, "and nothing else");
	proto_lines_free(pl);

	/* Too long without a newline yet, in pieces; reported once. */
	memset(big, 'y', max + 100);
	pl = proto_lines_new(max);
	proto_lines_feed(pl, "first\n", 6);
	proto_lines_feed(pl, big, max / 2);
	proto_lines_feed(pl, big, max / 2 + 50);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 5, "a line before the long one comes first");
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == -E2BIG, "the long partial line is reported");
	tap_ok(proto_lines_next(pl, &line, &len) == 0,
	    "only once, while its rest is still coming");
	proto_lines_feed(pl, big, 1000);
	tap_ok(proto_lines_next(pl, &line, &len) == 0,
	    "more of it is discarded silently");
	proto_lines_feed(pl, "yyy\n{\"good\":1}\n", 15);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 10 && memcmp(line, "{\"good\":1}", 10) == 0,
	    "the line after the too-long one is intact");
	tap_ok(proto_lines_next(pl, &line, &len) == 0, "nothing left");
	proto_lines_free(pl);

	/* Overflow detected in one big feed, with no complete line. */
	pl = proto_lines_new(16);
	proto_lines_feed(pl, big, 100);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == -E2BIG, "overflow inside a single feed");
	proto_lines_feed(pl, "\nnext\n", 6);
	rc = proto_lines_next(pl, &line, &len);
	tap_ok(rc == 1 && len == 4 && memcmp(line, "next", 4) == 0,
	    "the following line survives");
	proto_lines_free(pl);
	free(big);
}

/* Serialisation and builders ------------------------------------------- */

static void
test_serialize(void)
{
	struct json_object *obj, *back, *v;
	char *s;
	size_t len;
	const char *tricky = "a\nb\"c\\d/e\x01\t\xc3\xa9";

	obj = json_object_new_object();
	json_object_object_add(obj, "s", json_object_new_string(tricky));
	s = proto_serialize(obj, &len);
	if (s == NULL)
		tap_bail("proto_serialize failed");
	tap_ok(len == strlen(s) && s[len - 1] == '\n' &&
	    memchr(s, '\n', len - 1) == NULL,
	    "serialised as one line ending in a newline: %.*s", (int)len - 1, s);
	tap_ok(strstr(s, "\\n") && strstr(s, "\\\"") &&
	    strstr(s, "\\\\") && strstr(s, "\\u0001") &&
	    strstr(s, "d/e"), "control characters, quotes and backslashes "
	    "are escaped, slashes are not");
	back = json_tokener_parse(s);
	tap_ok(back != NULL && json_object_object_get_ex(back, "s", &v) &&
	    strcmp(json_object_get_string(v), tricky) == 0,
	    "round trip keeps the string");
	json_object_put(back);
	json_object_put(obj);
	free(s);
}

static const char *
member_string(struct json_object *obj, const char *a, const char *b)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, a, &v))
		return NULL;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_get_string(v);
}

static void
test_builders(void)
{
	struct json_object *id, *msg, *v, *data;
	char *s;

	id = json_object_new_int(42);
	msg = proto_reply(id, NULL);
	s = proto_serialize(msg, NULL);
	tap_ok(strcmp(s, "{\"id\":42,\"return\":{}}\n") == 0,
	    "reply with empty return: %.*s", (int)strcspn(s, "\n"), s);
	free(s);
	json_object_put(msg);

	msg = proto_reply(NULL, json_object_new_int(1));
	s = proto_serialize(msg, NULL);
	tap_ok(strcmp(s, "{\"id\":null,\"return\":1}\n") == 0,
	    "reply without id carries id null: %.*s",
	    (int)strcspn(s, "\n"), s);
	free(s);
	json_object_put(msg);

	msg = proto_error(id, PROTO_ERR_NOT_FOUND, "no VM named '%s'", "x\"y");
	tap_ok(json_object_object_get_ex(msg, "id", &v) &&
	    json_object_get_int(v) == 42 &&
	    strcmp(member_string(msg, "error", "class"), "not_found") == 0 &&
	    strcmp(member_string(msg, "error", "desc"), "no VM named 'x\"y'") == 0,
	    "error builder");
	json_object_put(msg);
	json_object_put(id);	/* the builders took their own references */

	data = json_object_new_object();
	json_object_object_add(data, "state", json_object_new_string("running"));
	msg = proto_event("vm.state", "web", data);
	tap_ok(strcmp(member_string(msg, "event", NULL), "vm.state") == 0 &&
	    strcmp(member_string(msg, "vm", NULL), "web") == 0 &&
	    strcmp(member_string(msg, "data", "state"), "running") == 0,
	    "event builder");
	tap_ok(json_object_object_get_ex(msg, "timestamp", &v) &&
	    json_object_is_type(v, json_type_double) &&
	    json_object_get_double(v) > 1e9, "event timestamp in seconds");
	s = proto_serialize(msg, NULL);
	v = json_tokener_parse(s);
	tap_ok(v != NULL && strstr(s, "\"timestamp\":") != NULL &&
	    strstr(s, "\"timestamp\":")[12] >= '1' &&
	    strstr(s, "\"timestamp\":")[12] <= '9',
	    "timestamp serialises as a plain number: %.*s",
	    (int)strcspn(s, "\n"), s);
	json_object_put(v);
	free(s);
	json_object_put(msg);

	msg = proto_event("x", NULL, NULL);
	tap_ok(!json_object_object_get_ex(msg, "vm", NULL) &&
	    json_object_object_get_ex(msg, "data", &v) &&
	    json_object_is_type(v, json_type_object),
	    "event without VM and data");
	json_object_put(msg);

	msg = proto_greeting();
	tap_ok(strcmp(member_string(msg, "greeting", "name"), "vmmd") == 0 &&
	    json_object_object_get_ex(msg, "greeting", &v) &&
	    json_object_object_get_ex(v, "protocol", &v) &&
	    json_object_get_int(v) == PROTO_VERSION, "greeting");
	json_object_put(msg);
}

static void
test_args(void)
{
	struct json_object *args;
	static const char *const keys[] = { "name", "n", "b", NULL };
	const char *s;
	char desc[128];
	int64_t n;
	int b;

	args = json_tokener_parse("{\"name\":\"web\",\"n\":5,\"b\":true,"
	    "\"z\":null,\"f\":1.5,\"str\":\"1\"}");

	s = NULL;
	tap_ok(proto_arg_string(args, "name", 1, &s, desc, sizeof(desc)) == 0 &&
	    strcmp(s, "web") == 0, "string argument");
	s = "keep";
	tap_ok(proto_arg_string(args, "absent", 0, &s, desc, sizeof(desc)) == 0 &&
	    strcmp(s, "keep") == 0, "optional absent string left untouched");
	tap_ok(proto_arg_string(args, "z", 0, &s, desc, sizeof(desc)) == 0 &&
	    strcmp(s, "keep") == 0, "null is the same as absent");
	tap_ok(proto_arg_string(args, "absent", 1, &s, desc, sizeof(desc)) ==
	    -EINVAL && strcmp(desc, "absent: missing argument") == 0,
	    "required string missing: %s", desc);
	tap_ok(proto_arg_string(args, "n", 1, &s, desc, sizeof(desc)) ==
	    -EINVAL && strcmp(desc, "n: expected a string") == 0,
	    "wrong type: %s", desc);

	tap_ok(proto_arg_int(args, "n", 1, 0, 10, &n, desc, sizeof(desc)) == 0 &&
	    n == 5, "integer argument");
	tap_ok(proto_arg_int(args, "n", 1, 6, 10, &n, desc, sizeof(desc)) ==
	    -EINVAL && strcmp(desc, "n: 5 is out of range (6..10)") == 0,
	    "integer out of range: %s", desc);
	tap_ok(proto_arg_int(args, "f", 1, 0, 10, &n, desc, sizeof(desc)) ==
	    -EINVAL && strcmp(desc, "f: expected an integer") == 0,
	    "a float is not an integer");
	tap_ok(proto_arg_int(args, "str", 1, 0, 10, &n, desc, sizeof(desc)) ==
	    -EINVAL, "a string is not an integer");
	n = 77;
	tap_ok(proto_arg_int(args, "absent", 0, 0, 10, &n, desc, sizeof(desc)) ==
	    0 && n == 77, "optional absent integer left untouched");

	tap_ok(proto_arg_bool(args, "b", 1, &b, desc, sizeof(desc)) == 0 &&
	    b == 1, "boolean argument");
	tap_ok(proto_arg_bool(args, "n", 1, &b, desc, sizeof(desc)) == -EINVAL,
	    "a number is not a boolean");

	tap_ok(proto_args_check(args, keys, desc, sizeof(desc)) == -EINVAL &&
	    strcmp(desc, "unknown argument 'z'") == 0,
	    "unknown argument: %s", desc);
	json_object_put(args);

	args = json_tokener_parse("{\"s\":\"a\\u0000b\"}");
	tap_ok(proto_arg_string(args, "s", 1, &s, desc, sizeof(desc)) ==
	    -EINVAL, "a string with a NUL is refused: %s", desc);
	json_object_put(args);
}

int
main(void)
{
	test_error_classes();
	test_parse_valid();
	test_parse_errors();
	test_parse_object();
	test_error_utf8();
	test_lines_basic();
	test_lines_bytewise();
	test_lines_cap();
	test_serialize();
	test_builders();
	test_args();
	return tap_done();
}
