/*
 * A one-node Ceph cluster for tests, in a directory of the caller's:
 * one monitor and one OSD whose objects live in memory (memstore),
 * authentication off, one pool of size 1, reached on a loopback port.
 * Debian's ceph-mon, ceph-osd and ceph-common (the ceph and rbd
 * commands) run it; nothing else is needed, no manager either.
 *
 * The daemons are children of the calling process: ceph_cluster_stop()
 * kills and reaps them (and is safe to call twice).  Every command and
 * wait is bounded (CEPH_CLUSTER_WAIT_S, generous: a busy machine is
 * slow, not broken), so a cluster that does not come up is a failure
 * with its logs' tails said, never a hung test.
 *
 * Used by the unit suite's RBD backend test and the kvm suite's RBD
 * disk test.
 */
#ifndef VMMD_CEPH_CLUSTER_H
#define VMMD_CEPH_CLUSTER_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define CEPH_CLUSTER_WAIT_S	300
#define CEPH_CLUSTER_POOL	"rbd"

struct ceph_cluster {
	char dir[PATH_MAX - 64];
	char conf[PATH_MAX];		/* dir/ceph.conf */
	char mon_host[64];		/* "v2:127.0.0.1:PORT" */
	pid_t mon, osd;			/* 0: not running */
};

/*
 * The programs the cluster needs, all present: 0; or -ENOENT with the
 * first one missing named in err.
 */
int	ceph_cluster_available(char *err, size_t errlen);

/*
 * A cluster made in dir (which exists and is empty enough), with the
 * pool CEPH_CLUSTER_POOL made and ready for RBD images.  0, or -errno
 * with err saying what failed (the cluster then stopped).
 */
int	ceph_cluster_start(struct ceph_cluster *c, const char *dir,
	    char *err, size_t errlen);

/*
 * Runs prog (ceph, rbd, ...: found on PATH) with "-c CONF" and the
 * NULL-terminated arguments after it, stdout into out (outlen bytes,
 * NUL-terminated; NULL: dropped) and stderr into the cluster's log
 * directory, within CEPH_CLUSTER_WAIT_S.  The command's exit status
 * (0..255), or -errno (-ETIMEDOUT: killed at the bound).
 */
int	ceph_cluster_run(struct ceph_cluster *c, char *out, size_t outlen,
	    const char *prog, ...) __attribute__((sentinel));

/* The daemons killed and reaped. */
void	ceph_cluster_stop(struct ceph_cluster *c);

#endif
