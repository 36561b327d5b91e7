/*
 * A vhost-user front end (QEMU's docs/interop/vhost-user.rst) as a
 * vhost backend (devices/virtio/vhost-backend.h): a device's queues are
 * served by another process (virtiofsd for virtio-fs) at the other end
 * of a connected Unix stream socket.  Guest RAM must be shareable
 * (machine_config.ram_shared): SET_MEM_TABLE passes the memfd of each
 * region (SCM_RIGHTS), and the backend maps it.  Kicks and interrupts
 * go between the guest and the backend through the eventfds of KVM's
 * ioeventfds and irqfds, never through the worker.
 *
 * Every exchange is bounded: each reply must come within timeout_ms of
 * its request, and be exactly the reply that request has
 * (vhost-user-msg.h).  A reply that is late, malformed or missing, or
 * a socket that fails, breaks the connection for good: every later
 * call fails with the same error (vhost_user_error()), since the two
 * sides no longer agree where a message starts.
 *
 * vhost_user_new() negotiates (GET_FEATURES, GET/SET_PROTOCOL_FEATURES
 * keeping REPLY_ACK, SET_OWNER) and is meant for before the worker's
 * sandbox; afterwards the front end only uses sendmsg(), recvmsg(),
 * poll(), write() and close() on descriptors it has.  start/stop run
 * under the device's lock, on a vCPU thread: a backend that hangs
 * holds that vCPU for at most timeout_ms per message.
 */
#ifndef VMMD_VHOST_USER_H
#define VMMD_VHOST_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost-backend.h"

struct vhost_user;

/* What a front end has done, for diagnostics. */
struct vhost_user_info {
	uint64_t features;		/* the backend's virtio features */
	uint64_t protocol;		/* protocol features in use */
	bool running;			/* serving the queues */
	uint64_t messages;		/* requests sent */
	uint64_t starts;
	int error;			/* 0, or what broke the connection */
	uint32_t error_request;		/* the request it broke on */
};

/*
 * Take fd (a connected stream socket; CLOEXEC) and negotiate: 0, or
 * -errno with a reason in err (fd closed then).  timeout_ms bounds each
 * reply.
 */
int	vhost_user_new(struct vhost_user **out, int fd, int timeout_ms,
	    struct vhost_backend *be, char *err, size_t errlen);
/* After the device that used it is gone.  NULL is fine. */
void	vhost_user_free(struct vhost_user *vu);
/* 0 while the connection is good, else the -errno that broke it. */
int	vhost_user_error(const struct vhost_user *vu);
void	vhost_user_info(const struct vhost_user *vu,
	    struct vhost_user_info *out);
/* The socket, for a caller that watches it for the backend's end. */
int	vhost_user_fd(const struct vhost_user *vu);

#endif
