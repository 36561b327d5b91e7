/*
 * libFuzzer: the control protocol's request parser and line framer
 * (daemon/common/proto.c), what every client and every worker message
 * goes through first.
 *
 * The input is a byte stream as a client would send it, fed to the
 * framer in two pieces (split where the first byte says).  Every line
 * is parsed as a request and as a plain object.  Besides not crashing,
 * what vmmd would answer must itself be a valid message: the reply
 * (echoing the id and the arguments) or the error reply (echoing the
 * id and a description that may quote the input) is serialised and
 * must parse again, strict UTF-8 included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* msg (taken) must serialise to one line that parses back. */
static void
fuzz_proto_roundtrip(struct json_object *msg, const char *what)
{
	struct json_object *back;
	char desc[512], *line;
	size_t len;

	if (msg == NULL)
		abort();
	line = proto_serialize(msg, &len);
	json_object_put(msg);
	if (line == NULL)
		abort();
	if (len == 0 || line[len - 1] != '\n' ||
	    memchr(line, '\n', len - 1) != NULL) {
		fprintf(stderr, "%s: not one line: %s", what, line);
		abort();
	}
	if (proto_parse_object(line, len - 1, &back, desc,
	    sizeof(desc)) != 0) {
		fprintf(stderr, "%s does not parse back (%s): %s", what, desc,
		    line);
		abort();
	}
	json_object_put(back);
	free(line);
}

static void
fuzz_proto_line(const char *line, size_t len)
{
	struct proto_request req;
	struct json_object *id, *obj;
	char desc[512];
	int rc;

	rc = proto_parse_request(line, len, &req, &id, desc, sizeof(desc));
	if (rc == 0) {
		if (req.command == NULL || req.arguments == NULL ||
		    !json_object_is_type(req.arguments, json_type_object))
			abort();
		fuzz_proto_roundtrip(proto_reply(req.id,
		    json_object_get(req.arguments)), "reply");
		fuzz_proto_roundtrip(proto_error(req.id,
		    PROTO_ERR_UNKNOWN_COMMAND, "unknown command '%.100s'",
		    req.command), "unknown_command error");
		json_object_put(req.root);
	} else {
		if (rc < PROTO_ERR_PARSE || rc > PROTO_ERR_INTERNAL)
			abort();
		fuzz_proto_roundtrip(proto_error(id, (enum proto_error)rc,
		    "%s", desc), "error reply");
		json_object_put(id);
	}

	if (proto_parse_object(line, len, &obj, desc, sizeof(desc)) == 0)
		fuzz_proto_roundtrip(obj, "object");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_lines *pl;
	const char *line;
	size_t len, split;
	int rc, piece;

	if (size == 0)
		return 0;
	split = data[0] % size;
	data++;
	size--;
	if (split > size)
		split = size;
	pl = proto_lines_new(4096);	/* small: too_large is reachable */
	if (pl == NULL)
		abort();
	for (piece = 0; piece < 2; piece++) {
		const uint8_t *p = piece == 0 ? data : data + split;
		size_t n = piece == 0 ? split : size - split;

		if (proto_lines_feed(pl, (const char *)p, n) < 0)
			abort();
		while ((rc = proto_lines_next(pl, &line, &len)) != 0) {
			if (rc == 1 && len > 4096)
				abort();
			if (rc == 1)
				fuzz_proto_line(line, len);
		}
	}
	proto_lines_free(pl);
	return 0;
}
