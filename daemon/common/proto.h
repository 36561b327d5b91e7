/*
 * The control protocol: newline-delimited JSON, one object per line.
 *
 *   greeting  {"greeting": {"name": "vmmd", "version": "...",
 *              "protocol": 1, "capabilities": [...]}}
 *   request   {"id": ANY, "command": "vm.start", "arguments": {...}}
 *   reply     {"id": ANY, "return": {...}}
 *   error     {"id": ANY, "error": {"class": "...", "desc": "..."}}
 *   event     {"event": "...", "vm": "...", "data": {...}, "timestamp": N}
 *
 * The supervisor speaks it on its public socket and to its workers over
 * socketpairs; vmctl speaks it as a client.  This module only frames,
 * validates and builds messages: it does no I/O of its own and does not
 * log.
 */
#ifndef VMMD_PROTO_H
#define VMMD_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define PROTO_VERSION		1
#define PROTO_MAX_LINE		(64 * 1024)	/* bytes, newline excluded */

/* vm.create's bounds, which vmctl checks too, in its users' words. */
#define PROTO_MEMORY_MIB_MIN	16
#define PROTO_MEMORY_MIB_MAX	262144		/* 256 GiB */
#define PROTO_VCPUS_MAX		64
#define PROTO_CMDLINE_MAX	2048		/* bytes, without the NUL */

/* Error classes, as they appear in "class".  Non-zero, so that a
 * function can return 0 for success or the class of its error. */
enum proto_error {
	PROTO_ERR_PARSE = 1,		/* "parse_error": not JSON / not an object */
	PROTO_ERR_TOO_LARGE,		/* "too_large": line over PROTO_MAX_LINE */
	PROTO_ERR_BAD_REQUEST,		/* "bad_request": malformed request */
	PROTO_ERR_UNKNOWN_COMMAND,	/* "unknown_command" */
	PROTO_ERR_INVALID_ARGUMENT,	/* "invalid_argument" */
	PROTO_ERR_NOT_FOUND,		/* "not_found": no such VM */
	PROTO_ERR_EXISTS,		/* "exists": name already taken */
	PROTO_ERR_BAD_STATE,		/* "bad_state": not in this state */
	PROTO_ERR_PERMISSION,		/* "permission_denied" */
	PROTO_ERR_TIMEOUT,		/* "timeout" */
	PROTO_ERR_LIMIT,		/* "limit_reached": too many clients */
	PROTO_ERR_INTERNAL,		/* "internal": the daemon's fault */
	PROTO_ERR_KVM_UNAVAILABLE,	/* "kvm_unavailable": no usable
					 * /dev/kvm, no guest can run */
};
#define PROTO_ERR_LAST		PROTO_ERR_KVM_UNAVAILABLE

const char *proto_error_class(enum proto_error e);
/* The enum value for a class name, or -ENOENT if it names none. */
int proto_error_lookup(const char *cls);

/* A parsed request; the json objects are borrowed from root. */
struct proto_request {
	struct json_object *root;	/* owns everything below */
	struct json_object *id;		/* NULL when absent */
	const char *command;
	struct json_object *arguments;	/* always an object (maybe empty) */
};

/*
 * Parse one line (without its newline).  On success returns 0 and the
 * caller frees req->root with json_object_put().  On failure returns the
 * error class as a positive number, fills desc, and sets *id to the
 * request's id when one could be recovered (else NULL; caller puts it).
 */
int proto_parse_request(const char *line, size_t len,
    struct proto_request *req, struct json_object **id, char *desc,
    size_t desclen);

/*
 * Whether text is valid UTF-8 (RFC 3629) whose \u escapes pair their
 * surrogates: 0, or PROTO_ERR_INVALID_ARGUMENT with desc filled.  Every
 * message and every definition file passes through it
 * (proto_parse_object, which returns that error as it is).
 */
int proto_text_check(const char *text, size_t len, char *desc,
    size_t desclen);

/*
 * Parse one line as a JSON object of any kind (reply, event, greeting):
 * 0 with *out set (caller puts it), or PROTO_ERR_PARSE (or
 * PROTO_ERR_INVALID_ARGUMENT for text that is not UTF-8) with desc filled.
 */
int proto_parse_object(const char *line, size_t len,
    struct json_object **out, char *desc, size_t desclen);

/*
 * Builders: each returns a new object the caller owns.  id is borrowed
 * (the message takes its own reference) and may be NULL.
 */
struct json_object *proto_reply(struct json_object *id,
    struct json_object *ret);			/* takes ret (NULL = {}) */
struct json_object *proto_error(struct json_object *id, enum proto_error e,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct json_object *proto_event(const char *event, const char *vm,
    struct json_object *data);			/* takes data (NULL = {}) */
struct json_object *proto_greeting(void);

/* Serialise obj as one line (with '\n'); returns malloc'd string. */
char *proto_serialize(struct json_object *obj, size_t *lenp);

/*
 * Incoming line framing with a size cap.  Feed bytes with
 * proto_lines_feed(); call proto_lines_next() until it returns 0.
 * A line longer than PROTO_MAX_LINE is reported once as too long and its
 * remainder discarded up to the next newline.
 */
struct proto_lines;
struct proto_lines *proto_lines_new(size_t max_line);
void proto_lines_free(struct proto_lines *pl);
int proto_lines_feed(struct proto_lines *pl, const char *buf, size_t len);
/*
 * Returns 1 with *line and *len set (valid until the next call), 0 when no
 * complete line is buffered, or -E2BIG for a line that was too long.
 */
int proto_lines_next(struct proto_lines *pl, const char **line, size_t *len);

/* Argument accessors: 0, or -EINVAL with desc filled ("name: expected
 * a string").  Optional ones leave *out untouched when absent. */
int proto_arg_string(struct json_object *args, const char *key, int required,
    const char **out, char *desc, size_t desclen);
int proto_arg_int(struct json_object *args, const char *key, int required,
    int64_t min, int64_t max, int64_t *out, char *desc, size_t desclen);
int proto_arg_bool(struct json_object *args, const char *key, int required,
    int *out, char *desc, size_t desclen);
/*
 * 0 if every key of args is in the NULL-terminated list keys, else
 * -EINVAL with desc "unknown argument 'foo'".
 */
int proto_args_check(struct json_object *args, const char *const *keys,
    char *desc, size_t desclen);

/*
 * A MAC address as the protocol writes it, six colon-separated pairs of
 * hex digits: 0 with mac filled, or -EINVAL.  Any address; callers
 * decide whether a multicast one will do.
 */
int proto_parse_mac(const char *s, uint8_t mac[6]);


#endif
