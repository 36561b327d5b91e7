/* See nbd-addr.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbd-addr.h"

bool
nbd_addr_is(const char *s)
{
	return strncmp(s, "nbd:", 4) == 0;
}

/* The export's name: printable, within bounds. */
static int
nbd_addr_export(const char *s, struct nbd_addr *a, char *err, size_t errlen)
{
	size_t n = strlen(s);

	if (n > NBD_ADDR_EXPORT_MAX) {
		snprintf(err, errlen, "the export's name is longer than %d "
		    "bytes", NBD_ADDR_EXPORT_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			snprintf(err, errlen, "a control character in the "
			    "export's name");
			return -EINVAL;
		}
	memcpy(a->export, s, n + 1);
	return 0;
}

static int
nbd_addr_unix(const char *s, struct nbd_addr *a, char *err, size_t errlen)
{
	const char *colon = strchr(s, ':');
	size_t n = colon != NULL ? (size_t)(colon - s) : strlen(s);

	a->unix_socket = true;
	if (n == 0 || s[0] != '/') {
		snprintf(err, errlen, "nbd:unix: needs the socket's absolute "
		    "path");
		return -EINVAL;
	}
	if (n > NBD_ADDR_PATH_MAX) {
		snprintf(err, errlen, "the socket's path is longer than %d "
		    "bytes", NBD_ADDR_PATH_MAX);
		return -EINVAL;
	}
	memcpy(a->path, s, n);
	a->path[n] = '\0';
	return colon != NULL ? nbd_addr_export(colon + 1, a, err, errlen) : 0;
}

static int
nbd_addr_tcp(const char *s, struct nbd_addr *a, char *err, size_t errlen)
{
	const char *end, *slash = strchr(s, '/'), *p;
	size_t n;
	char *e;
	unsigned long port;

	if (s[0] == '[') {
		if ((end = strchr(s, ']')) == NULL || (slash != NULL &&
		    end > slash))
			goto bad;
		p = end + 1;
		s++;
	} else {
		end = s + strcspn(s, ":/");
		p = end;
	}
	n = (size_t)(end - s);
	if (n == 0 || n > NBD_ADDR_HOST_MAX)
		goto bad;
	memcpy(a->host, s, n);
	a->host[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!(a->host[i] == '.' || a->host[i] == '-' ||
		    a->host[i] == ':' || a->host[i] == '_' ||
		    (a->host[i] >= '0' && a->host[i] <= '9') ||
		    (a->host[i] >= 'a' && a->host[i] <= 'z') ||
		    (a->host[i] >= 'A' && a->host[i] <= 'Z')))
			goto bad;
	a->port = 10809;
	if (*p == ':') {
		errno = 0;
		port = strtoul(p + 1, &e, 10);
		if (e == p + 1 || errno != 0 || port == 0 || port > 65535 ||
		    (*e != '\0' && *e != '/'))
			goto bad;
		a->port = (uint16_t)port;
		p = e;
	}
	if (*p == '\0')
		return 0;
	if (*p != '/')
		goto bad;
	return nbd_addr_export(p + 1, a, err, errlen);
bad:
	snprintf(err, errlen, "expected nbd://HOST[:PORT][/EXPORT]");
	return -EINVAL;
}

int
nbd_addr_parse(const char *s, struct nbd_addr *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (strncmp(s, "nbd:unix:", 9) == 0)
		return nbd_addr_unix(s + 9, a, err, errlen);
	if (strncmp(s, "nbd://", 6) == 0)
		return nbd_addr_tcp(s + 6, a, err, errlen);
	snprintf(err, errlen, "expected nbd:unix:/PATH[:EXPORT] or "
	    "nbd://HOST[:PORT][/EXPORT]");
	return -EINVAL;
}
