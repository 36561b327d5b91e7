/*
 * manifest.json, parsed and validated, and written (snap-manifest.h).
 * Everything in it is hostile input: a snapshot directory may come from
 * another host or have been edited.  Every key is known and typed, every
 * number is bounded before it sizes anything.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "snap-err.h"
#include "snap-manifest.h"

/* Deep enough for any VM definition; json-c's recursion stays small. */
#define SNAP_JSON_DEPTH	32

/*
 * Refuses any key of obj not in keys (NULL-terminated): a reader that
 * skipped what it does not know could restore a guest without state its
 * writer thought essential, so the format's version changes with every
 * key added, and an unknown key means a damaged or foreign manifest.
 */
static int
snap_known_keys(struct json_object *obj, const char *where,
    const char *const *keys, char *err, size_t errlen)
{
	json_object_object_foreach(obj, key, val) {
		size_t i;

		(void)val;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(key, keys[i]) == 0)
				break;
		if (keys[i] == NULL)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: unknown key \"%.64s\"", where, key);
	}
	return 0;
}

static int
snap_get(struct json_object *obj, const char *where, const char *key,
    enum json_type type, struct json_object **out, char *err,
    size_t errlen)
{
	if (!json_object_object_get_ex(obj, key, out))
		return snap_fail(-EINVAL, err, errlen, "%s: no \"%s\"",
		    where, key);
	if (!json_object_is_type(*out, type))
		return snap_fail(-EINVAL, err, errlen,
		    "%s: \"%s\" is not %s", where, key,
		    type == json_type_int ? "an integer" :
		    type == json_type_string ? "a string" :
		    type == json_type_array ? "an array" : "an object");
	return 0;
}

/* An integer in [0, max]: json-c saturates what int64 cannot hold. */
static int
snap_get_u64(struct json_object *obj, const char *where, const char *key,
    uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	struct json_object *v;
	int64_t n;
	int ret;

	if ((ret = snap_get(obj, where, key, json_type_int, &v, err,
	    errlen)) < 0)
		return ret;
	n = json_object_get_int64(v);
	if (n < 0)
		return snap_fail(-EINVAL, err, errlen, "%s: \"%s\" is negative",
		    where, key);
	if ((uint64_t)n > max)
		return snap_fail(-E2BIG, err, errlen,
		    "%s: \"%s\" is %" PRId64 ", more than %" PRIu64,
		    where, key, n, max);
	*out = (uint64_t)n;
	return 0;
}

/* A file name: only the format's own, so nothing points elsewhere. */
static int
snap_check_file(struct json_object *obj, const char *where,
    const char *expect, char *err, size_t errlen)
{
	struct json_object *v;
	int ret;

	if ((ret = snap_get(obj, where, "file", json_type_string, &v, err,
	    errlen)) < 0)
		return ret;
	if (strcmp(json_object_get_string(v), expect) != 0)
		return snap_fail(-EINVAL, err, errlen,
		    "%s: file \"%.64s\" is not \"%s\"", where,
		    json_object_get_string(v), expect);
	return 0;
}

/* Letters, digits and . _ - : / ; 1 to SNAP_NAME_MAX - 1 bytes. */
static bool
snap_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= SNAP_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-' || c == ':' || c == '/'))
			return false;
	}
	return true;
}

static int
snap_parse_memory(struct json_object *mem, struct snap_manifest *m,
    char *err, size_t errlen)
{
	static const char *const keys[] = { "file", "size", "regions", NULL };
	static const char *const rkeys[] = { "guest_address", "size",
	    "offset", NULL };
	struct json_object *regions;
	uint64_t total = 0;
	size_t i, n;
	int ret;

	if ((ret = snap_known_keys(mem, "memory", keys, err, errlen)) < 0 ||
	    (ret = snap_check_file(mem, "memory", SNAP_MEMORY_FILE, err,
	    errlen)) < 0 ||
	    (ret = snap_get_u64(mem, "memory", "size", SNAP_MEMORY_MAX,
	    &m->memory_file_size, err, errlen)) < 0 ||
	    (ret = snap_get(mem, "memory", "regions", json_type_array,
	    &regions, err, errlen)) < 0)
		return ret;
	n = json_object_array_length(regions);
	if (n == 0)
		return snap_fail(-EINVAL, err, errlen, "memory: no regions");
	if (n > SNAP_MAX_REGIONS)
		return snap_fail(-E2BIG, err, errlen,
		    "memory: %zu regions, more than %d", n, SNAP_MAX_REGIONS);
	for (i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(regions, i);
		struct snap_mregion *g = &m->regions[i];
		char where[96];

		snprintf(where, sizeof(where), "memory region %zu", i);
		if (!json_object_is_type(r, json_type_object))
			return snap_fail(-EINVAL, err, errlen,
			    "%s is not an object", where);
		if ((ret = snap_known_keys(r, where, rkeys, err, errlen)) < 0 ||
		    (ret = snap_get_u64(r, where, "guest_address",
		    UINT64_MAX >> 12, &g->gpa, err, errlen)) < 0 ||
		    (ret = snap_get_u64(r, where, "size", SNAP_MEMORY_MAX,
		    &g->size, err, errlen)) < 0 ||
		    (ret = snap_get_u64(r, where, "offset", SNAP_MEMORY_MAX,
		    &g->offset, err, errlen)) < 0)
			return ret;
		if (g->size == 0 || g->gpa % SNAP_PAGE_SIZE != 0 ||
		    g->size % SNAP_PAGE_SIZE != 0 ||
		    g->offset % SNAP_PAGE_SIZE != 0)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: address, size and offset must be non-zero "
			    "multiples of %u", where, SNAP_PAGE_SIZE);
		/* Sums below cannot wrap: each term is under 2^52. */
		total += g->size;
		if (total > SNAP_MEMORY_MAX)
			return snap_fail(-E2BIG, err, errlen,
			    "memory: more than %" PRIu64 " bytes in all",
			    (uint64_t)SNAP_MEMORY_MAX);
		if (g->offset + g->size > m->memory_file_size)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: bytes %" PRIu64 "-%" PRIu64 " are beyond the "
			    "memory file's %" PRIu64, where, g->offset,
			    g->offset + g->size, m->memory_file_size);
		if (i > 0 && (g->gpa < m->regions[i - 1].gpa +
		    m->regions[i - 1].size || g->offset <
		    m->regions[i - 1].offset + m->regions[i - 1].size))
			return snap_fail(-EINVAL, err, errlen,
			    "%s overlaps or precedes region %zu", where, i - 1);
	}
	m->nregions = n;
	return 0;
}

static int
snap_parse_sections(struct json_object *arr, struct snap_manifest *m,
    char *err, size_t errlen)
{
	static const char *const keys[] = { "name", "file", "offset", "size",
	    "crc32", NULL };
	uint64_t end = 0;
	size_t i, j, n;
	int ret;

	n = json_object_array_length(arr);
	if (n > SNAP_MAX_SECTIONS)
		return snap_fail(-E2BIG, err, errlen,
		    "%zu sections, more than %d", n, SNAP_MAX_SECTIONS);
	if (n > 0 && (m->sections = calloc(n, sizeof(*m->sections))) == NULL)
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i);
		struct snap_msection *c = &m->sections[i];
		struct json_object *v;
		const char *str;
		char where[96];
		int len;

		snprintf(where, sizeof(where), "section %zu", i);
		if (!json_object_is_type(s, json_type_object))
			return snap_fail(-EINVAL, err, errlen,
			    "%s is not an object", where);
		if ((ret = snap_known_keys(s, where, keys, err, errlen)) < 0 ||
		    (ret = snap_get(s, where, "name", json_type_string, &v,
		    err, errlen)) < 0)
			return ret;
		str = json_object_get_string(v);
		len = json_object_get_string_len(v);
		if (!snap_name_ok(str, (size_t)len))
			return snap_fail(-EINVAL, err, errlen,
			    "%s: bad name \"%.64s\"", where, str);
		memcpy(c->name, str, (size_t)len);
		snprintf(where, sizeof(where), "section \"%s\"", c->name);
		for (j = 0; j < i; j++)
			if (strcmp(m->sections[j].name, c->name) == 0)
				return snap_fail(-EINVAL, err, errlen,
				    "%s appears twice", where);
		if ((ret = snap_check_file(s, where, SNAP_STATE_FILE, err,
		    errlen)) < 0 ||
		    (ret = snap_get_u64(s, where, "offset", SNAP_STATE_MAX,
		    &c->offset, err, errlen)) < 0 ||
		    (ret = snap_get_u64(s, where, "size", SNAP_SECTION_MAX,
		    &c->size, err, errlen)) < 0 ||
		    (ret = snap_get(s, where, "crc32", json_type_string, &v,
		    err, errlen)) < 0)
			return ret;
		str = json_object_get_string(v);
		if (json_object_get_string_len(v) != 8 ||
		    strspn(str, "0123456789abcdef") != 8)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: crc32 is not 8 lower-case hex digits", where);
		c->crc32 = (uint32_t)strtoul(str, NULL, 16);
		if (c->offset < end)
			return snap_fail(-EINVAL, err, errlen,
			    "%s overlaps or precedes the section before it",
			    where);
		end = c->offset + c->size;
		if (end > m->state_file_size)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: bytes %" PRIu64 "-%" PRIu64 " are beyond the "
			    "state file's %" PRIu64, where, c->offset, end,
			    m->state_file_size);
	}
	m->nsections = n;
	return 0;
}

void
snap_disk_frozen_name(uint32_t index, char *buf, size_t len)
{
	snprintf(buf, len, "disk-%" PRIu32 ".qcow2", index);
}

/*
 * A disk record's rules, for the parser and for the records vmmd adds:
 * where names it in messages, prev the index before it (-1: none).
 */
static int
snap_check_disk(const struct snap_mdisk *d, int64_t prev, const char *where,
    char *err, size_t errlen)
{
	char name[32];
	size_t len = strlen(d->path);

	if (d->index >= SNAP_MAX_DISKS)
		return snap_fail(-E2BIG, err, errlen, "%s: index %" PRIu32
		    ", more than %d", where, d->index, SNAP_MAX_DISKS - 1);
	if ((int64_t)d->index <= prev)
		return snap_fail(-EINVAL, err, errlen, "%s: index %" PRIu32
		    " is not after the disk before it", where, d->index);
	if (d->backing_depth > SNAP_MAX_BACKING)
		return snap_fail(-E2BIG, err, errlen, "%s: backing_depth %"
		    PRIu32 ", more than %d", where, d->backing_depth,
		    SNAP_MAX_BACKING);
	if (d->frozen) {
		snap_disk_frozen_name(d->index, name, sizeof(name));
		if (strcmp(d->path, name) != 0)
			return snap_fail(-EINVAL, err, errlen, "%s: frozen "
			    "image \"%.64s\" is not \"%s\"", where, d->path,
			    name);
		if (!d->qcow2)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: a frozen image is qcow2", where);
		if (d->file_size == 0)
			return snap_fail(-EINVAL, err, errlen,
			    "%s: a frozen image has no file_size", where);
		return 0;
	}
	if (len == 0 || len >= SNAP_DISK_PATH_MAX || d->path[0] != '/')
		return snap_fail(-EINVAL, err, errlen, "%s: the shared disk's "
		    "path is not an absolute path of at most %d bytes", where,
		    SNAP_DISK_PATH_MAX - 1);
	if (d->file_size != 0)
		return snap_fail(-EINVAL, err, errlen,
		    "%s: a shared disk has no file_size", where);
	return 0;
}

static int
snap_parse_disk(struct json_object *o, struct snap_mdisk *d,
    const char *where, char *err, size_t errlen)
{
	static const char *const keys[] = { "index", "bus", "format",
	    "frozen", "shared", "size", "file_size", "backing_depth", NULL };
	struct json_object *v, *fz, *sh;
	uint64_t u;
	const char *str;
	int ret, len;

	if (!json_object_is_type(o, json_type_object))
		return snap_fail(-EINVAL, err, errlen, "%s is not an object",
		    where);
	if ((ret = snap_known_keys(o, where, keys, err, errlen)) < 0 ||
	    (ret = snap_get_u64(o, where, "index", UINT32_MAX, &u, err,
	    errlen)) < 0)
		return ret;
	d->index = (uint32_t)u;
	if ((ret = snap_get(o, where, "bus", json_type_string, &v, err,
	    errlen)) < 0)
		return ret;
	str = json_object_get_string(v);
	if (strcmp(str, "virtio") != 0 && strcmp(str, "sata") != 0)
		return snap_fail(-EINVAL, err, errlen, "%s: bus \"%.16s\" is "
		    "neither \"virtio\" nor \"sata\"", where, str);
	d->sata = str[0] == 's';
	if ((ret = snap_get(o, where, "format", json_type_string, &v, err,
	    errlen)) < 0)
		return ret;
	str = json_object_get_string(v);
	if (strcmp(str, "raw") != 0 && strcmp(str, "qcow2") != 0)
		return snap_fail(-EINVAL, err, errlen, "%s: format \"%.16s\" "
		    "is neither \"raw\" nor \"qcow2\"", where, str);
	d->qcow2 = str[0] == 'q';
	fz = json_object_object_get(o, "frozen");
	sh = json_object_object_get(o, "shared");
	if ((fz != NULL) == (sh != NULL))
		return snap_fail(-EINVAL, err, errlen, "%s: not one of "
		    "\"frozen\" and \"shared\"", where);
	d->frozen = fz != NULL;
	if ((ret = snap_get(o, where, d->frozen ? "frozen" : "shared",
	    json_type_string, &v, err, errlen)) < 0)
		return ret;
	len = json_object_get_string_len(v);
	str = json_object_get_string(v);
	/* A NUL inside would cut the name short of what was checked. */
	if ((size_t)len >= SNAP_DISK_PATH_MAX || memchr(str, '\0',
	    (size_t)len) != NULL)
		return snap_fail(-EINVAL, err, errlen, "%s: a NUL byte or "
		    "more than %d bytes in its path", where,
		    SNAP_DISK_PATH_MAX - 1);
	if ((d->path = strdup(str)) == NULL)
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	if ((ret = snap_get_u64(o, where, "size", SNAP_DISK_SIZE_MAX, &d->size,
	    err, errlen)) < 0 ||
	    (ret = snap_get_u64(o, where, "backing_depth", UINT32_MAX, &u,
	    err, errlen)) < 0)
		return ret;
	d->backing_depth = (uint32_t)u;
	if (json_object_object_get_ex(o, "file_size", NULL) &&
	    (ret = snap_get_u64(o, where, "file_size", SNAP_DISK_SIZE_MAX,
	    &d->file_size, err, errlen)) < 0)
		return ret;
	return 0;
}

static int
snap_parse_disks(struct json_object *arr, struct snap_manifest *m,
    char *err, size_t errlen)
{
	size_t i, n = json_object_array_length(arr);
	int ret;

	if (n > SNAP_MAX_DISKS)
		return snap_fail(-E2BIG, err, errlen,
		    "%zu disks, more than %d", n, SNAP_MAX_DISKS);
	if (n > 0 && (m->disks = calloc(n, sizeof(*m->disks))) == NULL)
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	for (i = 0; i < n; i++) {
		char where[32];

		snprintf(where, sizeof(where), "disk record %zu", i);
		/* Counted as it goes: what it holds is freed on failure. */
		m->ndisks = i + 1;
		if ((ret = snap_parse_disk(json_object_array_get_idx(arr, i),
		    &m->disks[i], where, err, errlen)) < 0 ||
		    (ret = snap_check_disk(&m->disks[i], i > 0 ?
		    (int64_t)m->disks[i - 1].index : -1, where, err,
		    errlen)) < 0)
			return ret;
	}
	return 0;
}

static int
snap_parse_object(struct json_object *root, struct snap_manifest *m,
    char *err, size_t errlen)
{
	static const char *const keys[] = { "format", "format_version",
	    "vmmd_version", "definition", "memory", "state", "sections",
	    "disks", NULL };
	static const char *const skeys[] = { "file", "size", NULL };
	struct json_object *v;
	uint64_t version;
	int ret, len;

	/* What it is and which version first: a newer format may have keys
	 * this reader does not know, and that is the reason to give. */
	if (!json_object_object_get_ex(root, "format", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), SNAP_FORMAT_NAME) != 0)
		return snap_fail(-EINVAL, err, errlen,
		    "not a vmmd snapshot: \"format\" is not \"%s\"",
		    SNAP_FORMAT_NAME);
	if ((ret = snap_get_u64(root, "manifest", "format_version",
	    UINT32_MAX, &version, err, errlen)) < 0)
		return ret == -E2BIG ? snap_fail(-EPROTONOSUPPORT, err, errlen,
		    "snapshot format from a newer vmmd (this one reads "
		    "version %d)", SNAP_FORMAT_VERSION) : ret;
	if (version == 0)
		return snap_fail(-EINVAL, err, errlen,
		    "snapshot format version 0 does not exist");
	if (version > SNAP_FORMAT_VERSION)
		return snap_fail(-EPROTONOSUPPORT, err, errlen,
		    "snapshot format version %" PRIu64 " is from a newer vmmd "
		    "(this one reads version %d)", version,
		    SNAP_FORMAT_VERSION);
	m->format_version = (uint32_t)version;

	if ((ret = snap_known_keys(root, "manifest", keys, err, errlen)) < 0 ||
	    (ret = snap_get(root, "manifest", "vmmd_version",
	    json_type_string, &v, err, errlen)) < 0)
		return ret;
	len = json_object_get_string_len(v);
	if (len == 0 || len >= SNAP_VERSION_MAX ||
	    strspn(json_object_get_string(v), "0123456789abcdefghijklmnopqrs"
	    "tuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-_~") != (size_t)len)
		return snap_fail(-EINVAL, err, errlen,
		    "manifest: \"vmmd_version\" is not a version");
	memcpy(m->vmmd_version, json_object_get_string(v), (size_t)len);

	if ((ret = snap_get(root, "manifest", "definition", json_type_object,
	    &v, err, errlen)) < 0)
		return ret;
	m->definition = json_object_get(v);

	if ((ret = snap_get(root, "manifest", "state", json_type_object, &v,
	    err, errlen)) < 0 ||
	    (ret = snap_known_keys(v, "state", skeys, err, errlen)) < 0 ||
	    (ret = snap_check_file(v, "state", SNAP_STATE_FILE, err,
	    errlen)) < 0 ||
	    (ret = snap_get_u64(v, "state", "size", SNAP_STATE_MAX,
	    &m->state_file_size, err, errlen)) < 0)
		return ret;

	if ((ret = snap_get(root, "manifest", "memory", json_type_object, &v,
	    err, errlen)) < 0 ||
	    (ret = snap_parse_memory(v, m, err, errlen)) < 0)
		return ret;

	if ((ret = snap_get(root, "manifest", "sections", json_type_array, &v,
	    err, errlen)) < 0 ||
	    (ret = snap_parse_sections(v, m, err, errlen)) < 0)
		return ret;

	/* Version 1 has no disks: it recorded none. */
	if (m->format_version < 2) {
		if (json_object_object_get_ex(root, "disks", NULL))
			return snap_fail(-EINVAL, err, errlen, "manifest: "
			    "\"disks\" in a version 1 manifest");
		return 0;
	}
	if ((ret = snap_get(root, "manifest", "disks", json_type_array, &v,
	    err, errlen)) < 0)
		return ret;
	return snap_parse_disks(v, m, err, errlen);
}

int
snap_manifest_parse(const char *text, size_t len, struct snap_manifest *m,
    char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error jerr;
	size_t end;
	int ret;

	memset(m, 0, sizeof(*m));
	if (len > SNAP_MANIFEST_MAX)
		return snap_fail(-E2BIG, err, errlen,
		    "manifest: %zu bytes, more than %u", len,
		    SNAP_MANIFEST_MAX);
	/* json-c stops at a NUL and takes the rest for trailing bytes. */
	if (memchr(text, '\0', len) != NULL)
		return snap_fail(-EINVAL, err, errlen,
		    "manifest: a NUL byte in the text");
	if ((tok = json_tokener_new_ex(SNAP_JSON_DEPTH)) == NULL)
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (root == NULL || jerr != json_tokener_success) {
		json_object_put(root);
		return snap_fail(-EINVAL, err, errlen, "manifest: %s",
		    jerr == json_tokener_continue ? "the JSON is cut short" :
		    jerr == json_tokener_success ? "not a JSON object" :
		    json_tokener_error_desc(jerr));
	}
	/* The text is not NUL-terminated: only its len bytes are read. */
	while (end < len && (text[end] == ' ' || text[end] == '\t' ||
	    text[end] == '\r' || text[end] == '\n'))
		end++;
	if (end != len) {
		json_object_put(root);
		return snap_fail(-EINVAL, err, errlen,
		    "manifest: bytes after the JSON object");
	}
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return snap_fail(-EINVAL, err, errlen,
		    "manifest: not a JSON object");
	}
	ret = snap_parse_object(root, m, err, errlen);
	json_object_put(root);
	if (ret < 0)
		snap_manifest_free(m);
	return ret;
}

int
snap_manifest_check_files(const struct snap_manifest *m,
    uint64_t memory_size, uint64_t state_size, char *err, size_t errlen)
{
	if (memory_size != m->memory_file_size)
		return snap_fail(-EINVAL, err, errlen,
		    "the memory file has %" PRIu64 " bytes, the manifest "
		    "says %" PRIu64, memory_size, m->memory_file_size);
	if (state_size != m->state_file_size)
		return snap_fail(-EINVAL, err, errlen,
		    "the state file has %" PRIu64 " bytes, the manifest "
		    "says %" PRIu64, state_size, m->state_file_size);
	return 0;
}

void
snap_manifest_free(struct snap_manifest *m)
{
	json_object_put(m->definition);
	free(m->sections);
	for (size_t i = 0; i < m->ndisks; i++)
		free(m->disks[i].path);
	free(m->disks);
	memset(m, 0, sizeof(*m));
}

/* obj[key] = v, or false (v released) when memory runs out. */
static bool
snap_add(struct json_object *obj, const char *key, struct json_object *v)
{
	if (v == NULL)
		return false;
	if (json_object_object_add(obj, key, v) < 0) {
		json_object_put(v);
		return false;
	}
	return true;
}

static bool
snap_push(struct json_object *arr, struct json_object *v)
{
	if (v == NULL)
		return false;
	if (json_object_array_add(arr, v) < 0) {
		json_object_put(v);
		return false;
	}
	return true;
}

static struct json_object *
snap_format_memory(const struct snap_manifest *m)
{
	struct json_object *mem = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	size_t i;

	if (mem == NULL || arr == NULL)
		goto fail;
	for (i = 0; i < m->nregions; i++) {
		struct json_object *r = json_object_new_object();
		const struct snap_mregion *g = &m->regions[i];

		if (!snap_push(arr, r) ||
		    !snap_add(r, "guest_address",
		    json_object_new_int64((int64_t)g->gpa)) ||
		    !snap_add(r, "size", json_object_new_int64((int64_t)g->size)) ||
		    !snap_add(r, "offset",
		    json_object_new_int64((int64_t)g->offset)))
			goto fail;
	}
	if (!snap_add(mem, "file", json_object_new_string(SNAP_MEMORY_FILE)) ||
	    !snap_add(mem, "size",
	    json_object_new_int64((int64_t)m->memory_file_size)))
		goto fail;
	if (!snap_add(mem, "regions", arr)) {
		json_object_put(mem);
		return NULL;
	}
	return mem;
fail:
	json_object_put(arr);
	json_object_put(mem);
	return NULL;
}

static struct json_object *
snap_format_sections(const struct snap_manifest *m)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	if (arr == NULL)
		return NULL;
	for (i = 0; i < m->nsections; i++) {
		const struct snap_msection *c = &m->sections[i];
		struct json_object *s = json_object_new_object();
		char crc[9];

		snprintf(crc, sizeof(crc), "%08" PRIx32, c->crc32);
		if (!snap_push(arr, s) ||
		    !snap_add(s, "name", json_object_new_string(c->name)) ||
		    !snap_add(s, "file",
		    json_object_new_string(SNAP_STATE_FILE)) ||
		    !snap_add(s, "offset",
		    json_object_new_int64((int64_t)c->offset)) ||
		    !snap_add(s, "size", json_object_new_int64((int64_t)c->size)) ||
		    !snap_add(s, "crc32", json_object_new_string(crc))) {
			json_object_put(arr);
			return NULL;
		}
	}
	return arr;
}

static struct json_object *
snap_format_state(const struct snap_manifest *m)
{
	struct json_object *state = json_object_new_object();

	if (state == NULL)
		return NULL;
	if (!snap_add(state, "file", json_object_new_string(SNAP_STATE_FILE)) ||
	    !snap_add(state, "size",
	    json_object_new_int64((int64_t)m->state_file_size))) {
		json_object_put(state);
		return NULL;
	}
	return state;
}

static struct json_object *
snap_format_disks(const struct snap_manifest *m)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	if (arr == NULL)
		return NULL;
	for (i = 0; i < m->ndisks; i++) {
		const struct snap_mdisk *d = &m->disks[i];
		struct json_object *o = json_object_new_object();

		if (!snap_push(arr, o) ||
		    !snap_add(o, "index", json_object_new_int64(d->index)) ||
		    !snap_add(o, "bus",
		    json_object_new_string(d->sata ? "sata" : "virtio")) ||
		    !snap_add(o, "format",
		    json_object_new_string(d->qcow2 ? "qcow2" : "raw")) ||
		    !snap_add(o, d->frozen ? "frozen" : "shared",
		    json_object_new_string(d->path)) ||
		    !snap_add(o, "size",
		    json_object_new_int64((int64_t)d->size)) ||
		    (d->frozen && !snap_add(o, "file_size",
		    json_object_new_int64((int64_t)d->file_size))) ||
		    !snap_add(o, "backing_depth",
		    json_object_new_int64(d->backing_depth))) {
			json_object_put(arr);
			return NULL;
		}
	}
	return arr;
}

char *
snap_manifest_format(const struct snap_manifest *m, size_t *len)
{
	struct json_object *root = json_object_new_object();
	const char *s;
	size_t n;
	char *out = NULL;

	if (root == NULL)
		return NULL;
	if (!snap_add(root, "format", json_object_new_string(SNAP_FORMAT_NAME)) ||
	    !snap_add(root, "format_version",
	    json_object_new_int(SNAP_FORMAT_VERSION)) ||
	    !snap_add(root, "vmmd_version",
	    json_object_new_string(m->vmmd_version)) ||
	    !snap_add(root, "definition", json_object_get(m->definition)) ||
	    !snap_add(root, "memory", snap_format_memory(m)) ||
	    !snap_add(root, "state", snap_format_state(m)) ||
	    !snap_add(root, "sections", snap_format_sections(m)) ||
	    !snap_add(root, "disks", snap_format_disks(m)))
		goto done;
	s = json_object_to_json_string_length(root, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (s != NULL && (out = malloc(n + 2)) != NULL) {
		memcpy(out, s, n);
		out[n] = '\n';
		out[n + 1] = '\0';
		*len = n + 1;
	}
done:
	json_object_put(root);
	return out;
}

int
snap_manifest_set_disks(const char *text, size_t len,
    const struct snap_mdisk *disks, size_t n, char **out, size_t *outlen,
    char *err, size_t errlen)
{
	struct snap_mdisk *own = NULL;
	struct snap_manifest m;
	size_t i;
	int ret;

	*out = NULL;
	if ((ret = snap_manifest_parse(text, len, &m, err, errlen)) < 0)
		return ret;
	if (n > SNAP_MAX_DISKS) {
		ret = snap_fail(-E2BIG, err, errlen,
		    "%zu disks, more than %d", n, SNAP_MAX_DISKS);
		goto out;
	}
	for (i = 0; i < n; i++) {
		char where[32];

		snprintf(where, sizeof(where), "disk %" PRIu32,
		    disks[i].index);
		if ((ret = snap_check_disk(&disks[i], i > 0 ?
		    (int64_t)disks[i - 1].index : -1, where, err,
		    errlen)) < 0)
			goto out;
	}
	if (n > 0 && (own = calloc(n, sizeof(*own))) == NULL) {
		ret = snap_fail(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < m.ndisks; i++)
		free(m.disks[i].path);
	free(m.disks);
	m.disks = own;
	m.ndisks = 0;
	for (i = 0; i < n; i++) {
		own[i] = disks[i];
		if ((own[i].path = strdup(disks[i].path)) == NULL) {
			ret = snap_fail(-ENOMEM, err, errlen, "out of memory");
			goto out;
		}
		m.ndisks = i + 1;
	}
	if ((*out = snap_manifest_format(&m, outlen)) == NULL)
		ret = snap_fail(-ENOMEM, err, errlen, "out of memory");
out:
	snap_manifest_free(&m);
	return ret;
}
