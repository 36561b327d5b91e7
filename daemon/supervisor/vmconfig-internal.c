/*
 * What the files of VM definitions share (see vmconfig-internal.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "proto.h"
#include "vmconfig-internal.h"

void
config_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int
config_opt_bool(struct json_object *obj, const char *key, bool dflt,
    bool *out, char *err, size_t errlen)
{
	int b = dflt;

	if (proto_arg_bool(obj, key, 0, &b, err, errlen) < 0)
		return -EINVAL;
	*out = b != 0;
	return 0;
}

int
config_opt_int(struct json_object *obj, const char *key, int64_t min,
    int64_t max, int64_t dflt, int64_t *out, char *err, size_t errlen)
{
	int64_t n = dflt;

	if (proto_arg_int(obj, key, 0, min, max, &n, err, errlen) < 0)
		return -EINVAL;
	*out = n;
	return 0;
}

int
config_opt_string(struct json_object *obj, const char *key,
    const char *dflt, const char **out, char *err, size_t errlen)
{
	const char *s = dflt;

	if (proto_arg_string(obj, key, 0, &s, err, errlen) < 0)
		return -EINVAL;
	*out = s;
	return 0;
}
