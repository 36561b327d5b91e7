/*
 * vmctl's argument helpers: SIZE and number parsing, MiB formatting,
 * the password file's text and the screenshot's temporary name.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "tap.h"

static void
size_ok(const char *s, int64_t want)
{
	int64_t mib = -1;
	int r;

	r = ctl_parse_size(s, &mib);
	tap_ok(r == 0 && mib == want, "size '%s' = %lld MiB (got %d, %lld)",
	    s, (long long)want, r, (long long)mib);
}

static void
size_bad(const char *s, int want)
{
	int64_t mib = 12345;
	int r;

	r = ctl_parse_size(s, &mib);
	tap_ok(r == want && mib == 12345, "size '%s' refused with %s (got %d)",
	    s, want == -ERANGE ? "ERANGE" : "EINVAL", r);
}

static void
number(const char *s, int64_t min, int64_t max, int want, int64_t wantv)
{
	int64_t v = -7;
	int r;

	r = ctl_parse_number(s, min, max, &v);
	tap_ok(r == want && (r != 0 || v == wantv),
	    "number '%s' in [%lld, %lld]: %d (got %d, %lld)", s,
	    (long long)min, (long long)max, want, r, (long long)v);
}

static void
format(int64_t mib, const char *want)
{
	char buf[32];

	ctl_format_mib(mib, buf, sizeof(buf));
	tap_ok(strcmp(buf, want) == 0, "format %lld MiB = %s (got %s)",
	    (long long)mib, want, buf);
}

static void
password(const char *buf, size_t len, int want, size_t wantlen)
{
	size_t l = len;
	int r;

	r = ctl_password_text(buf, &l);
	tap_ok(r == want && (r != 0 || l == wantlen),
	    "password file of %zu bytes: %d, %zu (got %d, %zu)", len, want,
	    wantlen, r, l);
}

static void
temp_name(const char *path, int want, const char *wantname)
{
	char buf[64] = "";
	int r;

	r = ctl_temp_beside(path, buf, sizeof(buf));
	tap_ok(r == want && (r != 0 || strcmp(buf, wantname) == 0),
	    "temporary beside '%s': %d '%s' (got %d '%s')", path, want,
	    wantname ? wantname : "", r, buf);
}

static void
test_display_helpers(void)
{
	password("s3cret", 6, 0, 6);
	password("s3cret\n", 7, 0, 6);
	password("s3cret\r\n", 8, 0, 6);
	password("123456789", 9, 0, 9);		/* the daemon says no */
	password("pw\n\n", 4, -EINVAL, 0);
	password("a\nb", 3, -EINVAL, 0);
	password("a\rb\n", 4, -EINVAL, 0);
	password("a\0b", 3, -EINVAL, 0);
	password("", 0, -ENODATA, 0);
	password("\n", 1, -ENODATA, 0);
	password("\r\n", 2, -ENODATA, 0);
	password(" \n", 2, 0, 1);		/* blanks are characters */

	temp_name("shot.png", 0, ".shot.png.XXXXXX");
	temp_name("/tmp/shot.png", 0, "/tmp/.shot.png.XXXXXX");
	temp_name("a/b/c", 0, "a/b/.c.XXXXXX");
	temp_name("/x", 0, "/.x.XXXXXX");
	temp_name("", -EINVAL, NULL);
	temp_name("dir/", -EINVAL, NULL);
	temp_name("/", -EINVAL, NULL);
	temp_name("/a/very/long/directory/name/that/does/not/fit/in/"
	    "sixty-four/x.png", -ENAMETOOLONG, NULL);
}

/* Options meaning one setting are refused the second time, by name. */
static void
test_option_again(void)
{
	static const struct option opts[] = {
		{ "json",	no_argument,		NULL,	'j' },
		{ "memory",	required_argument,	NULL,	'm' },
		{ "net",	required_argument,	NULL,	'N' },
		{ "vsock",	required_argument,	NULL,	'K' },
		{ "timeout",	required_argument,	NULL,	0x101 },
		{ NULL, 0, NULL, 0 },
	};
	static const int repeatable[] = { 'N', 'j', 0 };
	struct ctl_seen seen = { 0 };
	const char *r;

	tap_ok(ctl_option_again(&seen, opts, repeatable, 'm') == NULL &&
	    ctl_option_again(&seen, opts, repeatable, 'K') == NULL &&
	    ctl_option_again(&seen, opts, repeatable, 0x101) == NULL,
	    "each option once: accepted");
	r = ctl_option_again(&seen, opts, repeatable, 'K');
	tap_ok(r != NULL && strcmp(r, "vsock") == 0,
	    "--vsock twice: refused as 'vsock' (got %s)", r ? r : "NULL");
	r = ctl_option_again(&seen, opts, repeatable, 'm');
	tap_ok(r != NULL && strcmp(r, "memory") == 0,
	    "--memory twice: refused as 'memory' (got %s)", r ? r : "NULL");
	r = ctl_option_again(&seen, opts, repeatable, 0x101);
	tap_ok(r != NULL && strcmp(r, "timeout") == 0,
	    "a long-only option twice: refused by name (got %s)",
	    r ? r : "NULL");
	tap_ok(ctl_option_again(&seen, opts, repeatable, 'N') == NULL &&
	    ctl_option_again(&seen, opts, repeatable, 'N') == NULL &&
	    ctl_option_again(&seen, opts, repeatable, 'N') == NULL,
	    "--net may repeat");
	tap_ok(ctl_option_again(&seen, opts, repeatable, 'j') == NULL &&
	    ctl_option_again(&seen, opts, repeatable, 'j') == NULL,
	    "a repeatable flag may repeat");
}

int
main(void)
{
	size_ok("256", 256);
	size_ok("1", 1);
	size_ok("0256", 256);
	size_ok("512M", 512);
	size_ok("512m", 512);
	size_ok("512MiB", 512);
	size_ok("512mib", 512);
	size_ok("2G", 2048);
	size_ok("2g", 2048);
	size_ok("2GiB", 2048);
	size_ok("2147483647", INT32_MAX);
	size_ok("2097151G", (int64_t)2097151 * 1024);

	size_bad("", -EINVAL);
	size_bad("0", -EINVAL);
	size_bad("0G", -EINVAL);
	size_bad("000M", -EINVAL);
	size_bad("M", -EINVAL);
	size_bad("G", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad(" 1", -EINVAL);
	size_bad("1 ", -EINVAL);
	size_bad("1 G", -EINVAL);
	size_bad("1.5G", -EINVAL);
	size_bad("1,5G", -EINVAL);
	size_bad("0x100", -EINVAL);
	size_bad("1K", -EINVAL);
	size_bad("1024KiB", -EINVAL);
	size_bad("1T", -EINVAL);
	size_bad("1MB", -EINVAL);
	size_bad("1GB", -EINVAL);
	size_bad("1Gi", -EINVAL);
	size_bad("1GiBs", -EINVAL);
	size_bad("12abc", -EINVAL);
	size_bad("2147483648", -ERANGE);
	size_bad("2097152G", -ERANGE);
	size_bad("99999999999999999999999", -ERANGE);
	size_bad("99999999999999999999999G", -ERANGE);
	size_bad("99999999999999999999999X", -EINVAL);

	number("1", 1, 64, 0, 1);
	number("64", 1, 64, 0, 64);
	number("0", 0, 3600, 0, 0);
	number("007", 0, 10, 0, 7);
	number("0", 1, 64, -ERANGE, 0);
	number("65", 1, 64, -ERANGE, 0);
	number("9223372036854775807", 0, INT64_MAX, 0, INT64_MAX);
	number("9223372036854775808", 0, INT64_MAX, -ERANGE, 0);
	number("", 0, 10, -EINVAL, 0);
	number("-1", 0, 10, -EINVAL, 0);
	number("+1", 0, 10, -EINVAL, 0);
	number(" 1", 0, 10, -EINVAL, 0);
	number("1s", 0, 10, -EINVAL, 0);
	number("1.0", 0, 10, -EINVAL, 0);

	format(256, "256M");
	format(1024, "1G");
	format(1536, "1536M");
	format(262144, "256G");
	format(1, "1M");
	format(0, "0M");

	test_display_helpers();
	test_option_again();
	return tap_done();
}
