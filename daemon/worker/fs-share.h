/*
 * A shared directory's file server: the worker starts one virtiofsd
 * (QEMU's, Debian's /usr/lib/qemu/virtiofsd) per share while it sets
 * the guest up, before its sandbox (which allows no new process), and
 * connects to it: the socket it returns carries the vhost-user protocol
 * (daemon/machine/vhost-user.h).
 *
 * The directory comes as a descriptor the supervisor opened with the
 * starting client's rights; the server gets it as its source through
 * /proc/self/fd.  It listens on a socket the worker bound in a
 * directory of its own (mode 0700, gone once connected), so that no
 * other process can reach the share.  It runs as root, as its own
 * sandbox needs (-o sandbox=namespace: mount, PID and network
 * namespaces, pivot_root into the share), and serves the guest's
 * requests with the guest's uids, as QEMU's does.  A read-only share is
 * the directory bound read-only in a mount namespace of the server's
 * (that virtiofsd has no option for it).  Its life is the guest's: it
 * ends when the connection closes, whether the guest stopped or the
 * worker died.
 */
#ifndef VMMD_FS_SHARE_H
#define VMMD_FS_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Start the server (the program at path) on dir_fd (taken: closed
 * here, whatever the outcome), read-only if asked: the connected
 * socket in *sock (CLOEXEC), its pid in *pid.  A server that exits
 * at once is an error whose reason it wrote to its standard error, the
 * worker's log.  0 or -errno, err set.
 */
int	fs_share_start(const char *path, int dir_fd, bool readonly,
	    int *sock, pid_t *pid, char *err, size_t errlen);

#endif
