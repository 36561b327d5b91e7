/*
 * NBD addresses as a disk's "path" names them (daemon/common/nbd-addr.c):
 * Unix sockets with or without an export, TCP hosts by name, IPv4 and
 * bracketed IPv6 address, with or without a port and an export; and
 * what is refused, with a reason: a relative or over-long socket path,
 * a port out of range, an empty host, control characters in an export.
 */
#include <errno.h>
#include <string.h>

#include "nbd-addr.h"
#include "tap.h"

static void
good(const char *s, bool unix_socket, const char *where, unsigned int port,
    const char *export)
{
	struct nbd_addr a;
	char err[256] = "";
	int rc = nbd_addr_parse(s, &a, err, sizeof(err));

	tap_ok(rc == 0 && nbd_addr_is(s) && a.unix_socket == unix_socket &&
	    strcmp(unix_socket ? a.path : a.host, where) == 0 &&
	    (unix_socket || a.port == port) && strcmp(a.export, export) == 0,
	    "%s: %s %s %u export '%s' %s", s, unix_socket ? "unix" : "tcp",
	    unix_socket ? a.path : a.host, a.port, a.export, err);
}

static void
bad(const char *s, const char *why)
{
	struct nbd_addr a;
	char err[256] = "";
	int rc = nbd_addr_parse(s, &a, err, sizeof(err));

	tap_ok(rc == -EINVAL && strstr(err, why) != NULL, "%s refused: %s", s,
	    err);
}

int
main(void)
{
	char longpath[200];

	good("nbd:unix:/run/nbd.sock", true, "/run/nbd.sock", 0, "");
	good("nbd:unix:/run/nbd.sock:disk0", true, "/run/nbd.sock", 0,
	    "disk0");
	good("nbd:unix:/s:a:b", true, "/s", 0, "a:b");
	good("nbd://storage.example", false, "storage.example", 10809, "");
	good("nbd://10.0.0.2:10810/vol", false, "10.0.0.2", 10810, "vol");
	good("nbd://[fd00::2]/vol/a", false, "fd00::2", 10809, "vol/a");
	good("nbd://[::1]:999", false, "::1", 999, "");
	tap_ok(!nbd_addr_is("/srv/nbd:x.img"), "a file's path is no NBD "
	    "address");
	bad("nbd:unix:run/nbd.sock", "absolute");
	bad("nbd:unix:", "absolute");
	memset(longpath, 'a', sizeof(longpath));
	memcpy(longpath, "nbd:unix:/", 10);
	longpath[sizeof(longpath) - 1] = '\0';
	bad(longpath, "longer than");
	bad("nbd://h:0/x", "nbd://HOST");
	bad("nbd://h:65536", "nbd://HOST");
	bad("nbd://h:12x", "nbd://HOST");
	bad("nbd:///x", "nbd://HOST");
	bad("nbd://[::1/x", "nbd://HOST");
	bad("nbd://a b/x", "nbd://HOST");
	bad("nbd://h/ex\tport", "control character");
	bad("nbd:tcp:h", "expected");
	return tap_done();
}
