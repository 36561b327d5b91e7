/*
 * Number and size arguments of vmctl.  Strict on purpose: a typo in a
 * memory size should be an error, not a guest with the wrong amount of
 * RAM, so anything strtoll would silently skip or truncate is refused.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "args.h"

/* Leading decimal digits of s into *out, capped at max; returns the end. */
static const char *
args_digits(const char *s, int64_t max, int64_t *out, int *overflow)
{
	int64_t v = 0;

	*overflow = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (max - (*s - '0')) / 10)
			*overflow = 1;
		else
			v = v * 10 + (*s - '0');
	}
	*out = v;
	return s;
}

int
ctl_parse_number(const char *s, int64_t min, int64_t max, int64_t *out)
{
	const char *end;
	int64_t v;
	int overflow;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	end = args_digits(s, INT64_MAX, &v, &overflow);
	if (*end != '\0')
		return -EINVAL;
	if (overflow || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int
ctl_parse_size(const char *s, int64_t *mibp)
{
	static const struct {
		const char	*suffix;
		int64_t		 mib;
	} units[] = {
		{ "", 1 },
		{ "M", 1 },
		{ "MiB", 1 },
		{ "G", 1024 },
		{ "GiB", 1024 },
	};
	const char *end;
	int64_t v;
	size_t i;
	int overflow;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	end = args_digits(s, INT64_MAX, &v, &overflow);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcasecmp(end, units[i].suffix) == 0)
			break;
	if (i == sizeof(units) / sizeof(units[0]))
		return -EINVAL;
	if (v == 0 && !overflow)
		return -EINVAL;
	if (overflow || v > CTL_SIZE_MAX_MIB / units[i].mib)
		return -ERANGE;
	*mibp = v * units[i].mib;
	return 0;
}

void
ctl_format_mib(int64_t mib, char *buf, size_t len)
{
	if (mib != 0 && mib % 1024 == 0)
		snprintf(buf, len, "%" PRId64 "G", mib / 1024);
	else
		snprintf(buf, len, "%" PRId64 "M", mib);
}

int
ctl_password_text(const char *buf, size_t *lenp)
{
	size_t len = *lenp;

	if (len > 0 && buf[len - 1] == '\n') {
		len--;
		if (len > 0 && buf[len - 1] == '\r')
			len--;
	}
	if (len == 0)
		return -ENODATA;
	if (memchr(buf, '\0', len) != NULL || memchr(buf, '\n', len) != NULL ||
	    memchr(buf, '\r', len) != NULL)
		return -EINVAL;
	*lenp = len;
	return 0;
}

int
ctl_temp_beside(const char *path, char *buf, size_t size)
{
	const char *slash, *base;
	int n;

	if (path[0] == '\0' || path[strlen(path) - 1] == '/')
		return -EINVAL;
	slash = strrchr(path, '/');
	base = slash != NULL ? slash + 1 : path;
	n = snprintf(buf, size, "%.*s.%s.XXXXXX", (int)(base - path), path,
	    base);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

const char *
ctl_option_again(struct ctl_seen *s, const struct option *opts,
    const int *repeatable, int c)
{
	if (c <= 0 || c >= (int)sizeof(s->seen))
		return NULL;
	for (; *repeatable != 0; repeatable++)
		if (*repeatable == c)
			return NULL;
	if (!s->seen[c]) {
		s->seen[c] = true;
		return NULL;
	}
	for (; opts->name != NULL; opts++)
		if (opts->flag == NULL && opts->val == c)
			return opts->name;
	return NULL;
}
