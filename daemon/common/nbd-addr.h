/*
 * Where an NBD disk's server is, as definitions, vmctl and the
 * supervisor write it in a disk's "path":
 *
 *   nbd:unix:/PATH[:EXPORT]        a Unix stream socket (a path without ':')
 *   nbd://HOST[:PORT][/EXPORT]     TCP; HOST a name, an IPv4 address or
 *                                  an IPv6 one in brackets; PORT 10809
 *
 * No export: the server's default (""). Pure, no allocation.
 */
#ifndef VMMD_NBD_ADDR_H
#define VMMD_NBD_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NBD_ADDR_PATH_MAX	107	/* sun_path, without its NUL */
#define NBD_ADDR_HOST_MAX	253
#define NBD_ADDR_EXPORT_MAX	255

struct nbd_addr {
	bool unix_socket;
	char path[NBD_ADDR_PATH_MAX + 1];	/* unix_socket: absolute */
	char host[NBD_ADDR_HOST_MAX + 1];	/* TCP, brackets removed */
	uint16_t port;				/* TCP */
	char export[NBD_ADDR_EXPORT_MAX + 1];
};

/* Whether s is meant as an NBD address (begins "nbd:"). */
bool nbd_addr_is(const char *s);
/* s into *a: 0, or -EINVAL with err (errlen bytes) saying why. */
int nbd_addr_parse(const char *s, struct nbd_addr *a, char *err,
    size_t errlen);

#endif
