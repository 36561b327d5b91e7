/* See vhost-user-msg.h. */
#include <errno.h>
#include <string.h>

#include "vhost-user-msg.h"

static void
put32(uint8_t *p, uint32_t v)
{
	for (unsigned int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (unsigned int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static int
vhost_user_msg_hdr(uint8_t *buf, uint32_t req, uint32_t flags, uint32_t size)
{
	if ((flags & ~VHOST_USER_FLAG_NEED_REPLY) != 0)
		return -EINVAL;
	put32(buf, req);
	put32(buf + 4, VHOST_USER_VERSION | flags);
	put32(buf + 8, size);
	return VHOST_USER_HDR_SIZE + (int)size;
}

int
vhost_user_msg_plain(uint8_t *buf, uint32_t req, uint32_t flags)
{
	return vhost_user_msg_hdr(buf, req, flags, 0);
}

int
vhost_user_msg_u64(uint8_t *buf, uint32_t req, uint32_t flags, uint64_t v)
{
	put64(buf + VHOST_USER_HDR_SIZE, v);
	return vhost_user_msg_hdr(buf, req, flags, 8);
}

int
vhost_user_msg_state(uint8_t *buf, uint32_t req, uint32_t flags,
    uint32_t index, uint32_t num)
{
	put32(buf + VHOST_USER_HDR_SIZE, index);
	put32(buf + VHOST_USER_HDR_SIZE + 4, num);
	return vhost_user_msg_hdr(buf, req, flags, 8);
}

int
vhost_user_msg_addr(uint8_t *buf, uint32_t flags,
    const struct vhost_user_vring_addr *a)
{
	uint8_t *p = buf + VHOST_USER_HDR_SIZE;

	put32(p, a->index);
	put32(p + 4, a->flags);
	put64(p + 8, a->desc);
	put64(p + 16, a->used);
	put64(p + 24, a->avail);
	put64(p + 32, a->log);
	return vhost_user_msg_hdr(buf, VHOST_USER_SET_VRING_ADDR, flags, 40);
}

int
vhost_user_msg_mem(uint8_t *buf, uint32_t flags,
    const struct vhost_user_region *r, unsigned int n)
{
	uint8_t *p = buf + VHOST_USER_HDR_SIZE;

	if (n == 0 || n > VHOST_USER_MAX_REGIONS)
		return -EINVAL;
	put32(p, n);
	put32(p + 4, 0);		/* padding */
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *q = p + 8 + 32 * i;

		put64(q, r[i].gpa);
		put64(q + 8, r[i].size);
		put64(q + 16, r[i].uaddr);
		put64(q + 24, r[i].mmap_offset);
	}
	return vhost_user_msg_hdr(buf, VHOST_USER_SET_MEM_TABLE, flags,
	    8 + 32 * n);
}

uint32_t
vhost_user_msg_reply_size(uint32_t req)
{
	switch (req) {
	case VHOST_USER_GET_FEATURES:
	case VHOST_USER_GET_PROTOCOL_FEATURES:
	case VHOST_USER_GET_QUEUE_NUM:
		return 8;
	case VHOST_USER_GET_VRING_BASE:
		return 8;		/* struct vhost_vring_state */
	default:
		return 0;
	}
}

int
vhost_user_msg_reply_hdr(const uint8_t *buf, uint32_t req, uint32_t want,
    struct vhost_user_hdr *h)
{
	h->request = get32(buf);
	h->flags = get32(buf + 4);
	h->size = get32(buf + 8);
	/* Bits beyond the version and reply flag are not a backend's to
	 * set in a reply (NEED_REPLY is the front end's). */
	if (h->request != req ||
	    (h->flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION ||
	    (h->flags & ~(VHOST_USER_VERSION_MASK | VHOST_USER_FLAG_REPLY)) ||
	    !(h->flags & VHOST_USER_FLAG_REPLY) || h->size != want)
		return -EPROTO;
	return 0;
}

int
vhost_user_msg_reply_u64(const uint8_t *buf, size_t len, uint32_t req,
    uint64_t *v)
{
	struct vhost_user_hdr h;

	if (len != VHOST_USER_HDR_SIZE + 8 ||
	    vhost_user_msg_reply_hdr(buf, req, 8, &h) < 0)
		return -EPROTO;
	*v = get64(buf + VHOST_USER_HDR_SIZE);
	return 0;
}

int
vhost_user_msg_reply_state(const uint8_t *buf, size_t len, uint32_t req,
    uint32_t index, uint32_t *num)
{
	struct vhost_user_hdr h;

	if (len != VHOST_USER_HDR_SIZE + 8 ||
	    vhost_user_msg_reply_hdr(buf, req, 8, &h) < 0 ||
	    get32(buf + VHOST_USER_HDR_SIZE) != index)
		return -EPROTO;
	*num = get32(buf + VHOST_USER_HDR_SIZE + 4);
	return 0;
}

const char *
vhost_user_msg_name(uint32_t req)
{
	static const char *const names[] = {
		[VHOST_USER_GET_FEATURES] = "GET_FEATURES",
		[VHOST_USER_SET_FEATURES] = "SET_FEATURES",
		[VHOST_USER_SET_OWNER] = "SET_OWNER",
		[VHOST_USER_RESET_OWNER] = "RESET_OWNER",
		[VHOST_USER_SET_MEM_TABLE] = "SET_MEM_TABLE",
		[VHOST_USER_SET_VRING_NUM] = "SET_VRING_NUM",
		[VHOST_USER_SET_VRING_ADDR] = "SET_VRING_ADDR",
		[VHOST_USER_SET_VRING_BASE] = "SET_VRING_BASE",
		[VHOST_USER_GET_VRING_BASE] = "GET_VRING_BASE",
		[VHOST_USER_SET_VRING_KICK] = "SET_VRING_KICK",
		[VHOST_USER_SET_VRING_CALL] = "SET_VRING_CALL",
		[VHOST_USER_SET_VRING_ERR] = "SET_VRING_ERR",
		[VHOST_USER_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
		[VHOST_USER_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
		[VHOST_USER_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
		[VHOST_USER_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
	};

	if (req >= sizeof(names) / sizeof(names[0]) || names[req] == NULL)
		return "?";
	return names[req];
}
