/*
 * An RBD disk's client configuration, read by the supervisor with the
 * rights of the client starting the VM, for the worker, which opens no
 * file by name: the cluster's configuration (the disk's conf=, or
 * /etc/ceph/ceph.conf) and its keyring= if given, one after the other
 * in one sealed memory file.  A keyring is in the configuration's own
 * syntax (a [client.ID] section whose "key" librados takes as a
 * setting), so librados reads both as one configuration; any
 * "keyring" setting in them is overridden by the worker, which never
 * reads a file they name.
 */
#ifndef VMMD_RBD_CONF_H
#define VMMD_RBD_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

struct access_cred;

/* The most a configuration or keyring may hold. */
#define RBD_CONF_MAX	(256u << 10)

/*
 * For the disk whose path is spec (rbd-spec.h) and cred (NULL: as the
 * daemon): *fdp a memory file (CLOEXEC, sealed against writes and
 * growth) holding the configuration and keyring.  check_only
 * (vm.create): only that cred may read them is checked, *fdp -1.  0,
 * or -errno with *cls and err ("disk 0: conf /etc/ceph/x.conf: ...").
 */
int rbd_conf_open(const char *spec, unsigned int disk,
    const struct access_cred *cred, bool check_only, int *fdp,
    enum proto_error *cls, char *err, size_t errlen);

#endif
