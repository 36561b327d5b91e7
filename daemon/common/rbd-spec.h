/*
 * A Ceph RBD disk as definitions, vmctl and the supervisor write it in
 * a disk's "path":
 *
 *   rbd:POOL/IMAGE[,conf=FILE][,id=CLIENT][,keyring=FILE][,snap=SNAP]
 *       [,lock=on|off]
 *
 * conf: the cluster's configuration (absolute; none: /etc/ceph/ceph.conf)
 * and keyring (absolute; none: the configuration's or auth none), both
 * read by the supervisor with the rights of the client starting the VM;
 * id: the cephx user without "client." (none: admin); snap: a snapshot,
 * which the guest sees read-only; lock: the image's exclusive lock,
 * taken at start (on, the default) or not (off: the image is shared, as
 * a cluster file system's would be).  Each option at most once.
 *
 * Names: pool, image and snapshot printable ASCII without spaces,
 * '/', '@' or ','; the user letters, digits, '.', '_' and '-'.  Pure,
 * no allocation.
 */
#ifndef VMMD_RBD_SPEC_H
#define VMMD_RBD_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#define RBD_SPEC_NAME_MAX	255	/* pool, image, snapshot */
#define RBD_SPEC_ID_MAX		64
#define RBD_SPEC_PATH_MAX	4095
#define RBD_SPEC_DEFAULT_CONF	"/etc/ceph/ceph.conf"

struct rbd_spec {
	char pool[RBD_SPEC_NAME_MAX + 1];
	char image[RBD_SPEC_NAME_MAX + 1];
	char snap[RBD_SPEC_NAME_MAX + 1];	/* "": the image's head */
	char id[RBD_SPEC_ID_MAX + 1];		/* "": admin */
	char conf[RBD_SPEC_PATH_MAX + 1];	/* "": the default */
	char keyring[RBD_SPEC_PATH_MAX + 1];	/* "": none */
	bool lock;				/* default true */
};

/* Whether s is meant as an RBD disk (begins "rbd:"). */
bool rbd_spec_is(const char *s);
/* s into *r: 0, or -EINVAL with err (errlen bytes) saying why. */
int rbd_spec_parse(const char *s, struct rbd_spec *r, char *err,
    size_t errlen);

#endif
