/* See vhost-vsock.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/vhost.h>

#include "vhost-vsock.h"

struct vhost_vsock {
	int fd;
	uint64_t cid;
	uint64_t features;		/* VHOST_GET_FEATURES */
	bool running;
	int kick[VSOCK_BACKEND_QUEUES];	/* while running */
};

static uint64_t
vhost_vsock_features(void *ctx)
{
	return ((struct vhost_vsock *)ctx)->features;
}

static uint64_t
vhost_vsock_cid(void *ctx)
{
	return ((struct vhost_vsock *)ctx)->cid;
}

static int
vhost_vsock_set_call(void *ctx, unsigned int q, int fd)
{
	struct vhost_vsock *v = ctx;
	struct vhost_vring_file f = { .index = q, .fd = fd };

	if (q >= VSOCK_BACKEND_QUEUES)
		return -EINVAL;
	return ioctl(v->fd, VHOST_SET_VRING_CALL, &f) < 0 ? -errno : 0;
}

static void
vhost_vsock_kick(void *ctx, unsigned int q)
{
	struct vhost_vsock *v = ctx;
	uint64_t one = 1;

	if (q < VSOCK_BACKEND_QUEUES && v->running && v->kick[q] >= 0)
		(void)!write(v->kick[q], &one, sizeof(one));
}

/* One ring: its size, where the driver is, where it lies, its eventfds. */
static int
vhost_vsock_ring(struct vhost_vsock *v, unsigned int q,
    const struct vsock_backend_ring *r)
{
	struct vhost_vring_state num = { q, r->size }, base = { q,
	    r->next_avail };
	struct vhost_vring_addr addr = {
		.index = q,
		.desc_user_addr = (uintptr_t)r->desc,
		.avail_user_addr = (uintptr_t)r->avail,
		.used_user_addr = (uintptr_t)r->used,
	};
	struct vhost_vring_file kick = { q, r->kick }, call = { q, r->call };

	if (ioctl(v->fd, VHOST_SET_VRING_NUM, &num) < 0 ||
	    ioctl(v->fd, VHOST_SET_VRING_BASE, &base) < 0 ||
	    ioctl(v->fd, VHOST_SET_VRING_ADDR, &addr) < 0 ||
	    ioctl(v->fd, VHOST_SET_VRING_KICK, &kick) < 0 ||
	    ioctl(v->fd, VHOST_SET_VRING_CALL, &call) < 0)
		return -errno;
	v->kick[q] = r->kick;
	return 0;
}

static int
vhost_vsock_stop(void *ctx, uint16_t next_avail[VSOCK_BACKEND_QUEUES])
{
	struct vhost_vsock *v = ctx;
	int off = 0, ret = 0;

	if (ioctl(v->fd, VHOST_VSOCK_SET_RUNNING, &off) < 0)
		ret = -errno;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++) {
		struct vhost_vring_state base = { .index = q };
		struct vhost_vring_file none = { q, -1 };

		if (ioctl(v->fd, VHOST_GET_VRING_BASE, &base) == 0 &&
		    next_avail != NULL)
			next_avail[q] = (uint16_t)base.num;
		/* The kick eventfds go back to the transport. */
		(void)ioctl(v->fd, VHOST_SET_VRING_KICK, &none);
		(void)ioctl(v->fd, VHOST_SET_VRING_CALL, &none);
		v->kick[q] = -1;
	}
	v->running = false;
	return ret;
}

static int
vhost_vsock_start(void *ctx, const struct vsock_backend_start *s)
{
	struct vhost_vsock *v = ctx;
	struct {
		struct vhost_memory m;
		struct vhost_memory_region r[VSOCK_BACKEND_REGIONS];
	} mem = { .m.nregions = s->nmem };
	uint64_t features = s->features;
	int on = 1, ret;

	if ((features & ~v->features) != 0 || s->nmem > VSOCK_BACKEND_REGIONS)
		return -ENOTSUP;
	for (unsigned int i = 0; i < s->nmem; i++)
		mem.r[i] = (struct vhost_memory_region){
			.guest_phys_addr = s->mem[i].gpa,
			.memory_size = s->mem[i].size,
			.userspace_addr = (uintptr_t)s->mem[i].hva,
		};
	if (ioctl(v->fd, VHOST_SET_FEATURES, &features) < 0 ||
	    ioctl(v->fd, VHOST_SET_MEM_TABLE, &mem) < 0)
		return -errno;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++)
		if ((ret = vhost_vsock_ring(v, q, &s->ring[q])) < 0)
			goto stop;
	if (ioctl(v->fd, VHOST_VSOCK_SET_RUNNING, &on) < 0) {
		ret = -errno;
		goto stop;
	}
	v->running = true;
	return 0;
stop:
	(void)vhost_vsock_stop(v, NULL);
	return ret;
}

static const struct vsock_backend_ops vhost_vsock_ops = {
	.features = vhost_vsock_features,
	.cid = vhost_vsock_cid,
	.start = vhost_vsock_start,
	.set_call = vhost_vsock_set_call,
	.kick = vhost_vsock_kick,
	.stop = vhost_vsock_stop,
};

int
vhost_vsock_new(struct vhost_vsock **out, int fd, uint64_t cid,
    struct vsock_backend *be, char *err, size_t errlen)
{
	struct vhost_vsock *v;
	int ret;

	if (cid < VHOST_VSOCK_CID_MIN || cid > UINT32_MAX - 1) {
		snprintf(err, errlen, "vsock: CID %llu is not a guest's "
		    "(%u to %u)", (unsigned long long)cid,
		    VHOST_VSOCK_CID_MIN, UINT32_MAX - 1);
		return -EINVAL;
	}
	if ((v = calloc(1, sizeof(*v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	v->fd = fd;
	v->cid = cid;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++)
		v->kick[q] = -1;
	if (ioctl(fd, VHOST_SET_OWNER) < 0 ||
	    ioctl(fd, VHOST_GET_FEATURES, &v->features) < 0) {
		ret = -errno;
		snprintf(err, errlen, "vsock: /dev/vhost-vsock: %s",
		    strerror(-ret));
		free(v);
		return ret;
	}
	if (ioctl(fd, VHOST_VSOCK_SET_GUEST_CID, &cid) < 0) {
		ret = -errno;
		snprintf(err, errlen, "vsock: CID %llu: %s",
		    (unsigned long long)cid, ret == -EADDRINUSE ?
		    "another guest of this host has it" : strerror(-ret));
		free(v);
		return ret;
	}
	*be = (struct vsock_backend){ &vhost_vsock_ops, v };
	*out = v;
	return 0;
}

void
vhost_vsock_free(struct vhost_vsock *v)
{
	if (v == NULL)
		return;
	if (v->running)
		(void)vhost_vsock_stop(v, NULL);
	close(v->fd);
	free(v);
}
