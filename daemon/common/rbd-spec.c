/* See rbd-spec.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rbd-spec.h"

bool
rbd_spec_is(const char *s)
{
	return strncmp(s, "rbd:", 4) == 0;
}

/* A pool's, image's or snapshot's name of n bytes at s, into dst. */
static int
rbd_spec_name(const char *what, const char *s, size_t n, char *dst,
    char *err, size_t errlen)
{
	if (n == 0) {
		snprintf(err, errlen, "no %s name (rbd:POOL/IMAGE"
		    "[,conf=FILE][,id=CLIENT][,keyring=FILE][,snap=SNAP]"
		    "[,lock=on|off])", what);
		return -EINVAL;
	}
	if (n > RBD_SPEC_NAME_MAX) {
		snprintf(err, errlen, "the %s name is longer than %d bytes",
		    what, RBD_SPEC_NAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f ||
		    s[i] == '/' || s[i] == '@') {
			snprintf(err, errlen, "the %s name has a character "
			    "it cannot have (0x%02x): printable ASCII without "
			    "spaces, '/', '@' or ','", what,
			    (unsigned char)s[i]);
			return -EINVAL;
		}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

static int
rbd_spec_path(const char *what, const char *s, size_t n, char *dst,
    char *err, size_t errlen)
{
	if (n == 0 || s[0] != '/') {
		snprintf(err, errlen, "%s=: an absolute path, not '%.*s'",
		    what, (int)(n > 64 ? 64 : n), s);
		return -EINVAL;
	}
	if (n > RBD_SPEC_PATH_MAX) {
		snprintf(err, errlen, "%s=: longer than %d bytes", what,
		    RBD_SPEC_PATH_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			snprintf(err, errlen, "%s=: a control character in "
			    "the path", what);
			return -EINVAL;
		}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

static int
rbd_spec_id(const char *s, size_t n, char *dst, char *err, size_t errlen)
{
	if (n == 0 || n > RBD_SPEC_ID_MAX) {
		snprintf(err, errlen, "id=: 1 to %d bytes", RBD_SPEC_ID_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		    s[i] == '_' || s[i] == '-')) {
			snprintf(err, errlen, "id=: letters, digits, '.', '_' "
			    "and '-' only (the user without \"client.\")");
			return -EINVAL;
		}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

/* One ",key=value" option of n bytes at s. */
static int
rbd_spec_option(const char *s, size_t n, struct rbd_spec *r,
    unsigned int *seen, char *err, size_t errlen)
{
	static const char *const keys[] = { "conf", "id", "keyring", "snap",
	    "lock" };
	const char *eq = memchr(s, '=', n);
	size_t k, klen = eq != NULL ? (size_t)(eq - s) : n;
	const char *v = eq != NULL ? eq + 1 : s + n;
	size_t vlen = n - klen - (eq != NULL);

	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (strlen(keys[k]) == klen && memcmp(keys[k], s, klen) == 0)
			break;
	if (k == sizeof(keys) / sizeof(keys[0]) || eq == NULL) {
		snprintf(err, errlen, "'%.*s' is not an option of an RBD "
		    "disk (conf=FILE, id=CLIENT, keyring=FILE, snap=SNAP, "
		    "lock=on|off)", (int)(n > 64 ? 64 : n), s);
		return -EINVAL;
	}
	if (*seen & (1u << k)) {
		snprintf(err, errlen, "%s= given twice", keys[k]);
		return -EINVAL;
	}
	*seen |= 1u << k;
	switch (k) {
	case 0:
		return rbd_spec_path("conf", v, vlen, r->conf, err, errlen);
	case 1:
		return rbd_spec_id(v, vlen, r->id, err, errlen);
	case 2:
		return rbd_spec_path("keyring", v, vlen, r->keyring, err,
		    errlen);
	case 3:
		return rbd_spec_name("snapshot", v, vlen, r->snap, err,
		    errlen);
	default:
		if (vlen == 2 && memcmp(v, "on", 2) == 0)
			r->lock = true;
		else if (vlen == 3 && memcmp(v, "off", 3) == 0)
			r->lock = false;
		else {
			snprintf(err, errlen, "lock=: on or off");
			return -EINVAL;
		}
		return 0;
	}
}

int
rbd_spec_parse(const char *s, struct rbd_spec *r, char *err, size_t errlen)
{
	const char *p, *slash, *end;
	unsigned int seen = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->lock = true;
	if (!rbd_spec_is(s)) {
		snprintf(err, errlen, "an RBD disk begins \"rbd:\"");
		return -EINVAL;
	}
	p = s + 4;
	end = p + strcspn(p, ",");
	slash = memchr(p, '/', (size_t)(end - p));
	if (slash == NULL) {
		snprintf(err, errlen, "expected rbd:POOL/IMAGE, not '%.64s'",
		    s);
		return -EINVAL;
	}
	if ((rc = rbd_spec_name("pool", p, (size_t)(slash - p), r->pool,
	    err, errlen)) < 0 ||
	    (rc = rbd_spec_name("image", slash + 1,
	    (size_t)(end - slash - 1), r->image, err, errlen)) < 0)
		return rc;
	while (*end == ',') {
		p = end + 1;
		end = p + strcspn(p, ",");
		if ((rc = rbd_spec_option(p, (size_t)(end - p), r, &seen,
		    err, errlen)) < 0)
			return rc;
	}
	return 0;
}
