/*
 * The vhost-user protocol's messages (QEMU's docs/interop/vhost-user.rst,
 * "Message specification"), encoded and checked without any I/O, so
 * that a fuzzer can drive everything a backend's bytes reach.  The
 * front end that sends and receives them is vhost-user.c.
 *
 * A message is a 12-byte header (request, flags, payload size; all
 * little-endian, as is every payload field) and its payload.  Only the
 * front end's side is here: the requests it sends, and the replies it
 * takes, each checked against the request it answers: the reply flag
 * and version set, the same request code, exactly the payload size
 * that request's reply has.  Anything else is -EPROTO.
 */
#ifndef VMMD_VHOST_USER_MSG_H
#define VMMD_VHOST_USER_MSG_H

#include <stddef.h>
#include <stdint.h>

/* Request codes (front end to backend). */
enum vhost_user_request {
	VHOST_USER_GET_FEATURES = 1,
	VHOST_USER_SET_FEATURES = 2,
	VHOST_USER_SET_OWNER = 3,
	VHOST_USER_RESET_OWNER = 4,
	VHOST_USER_SET_MEM_TABLE = 5,
	VHOST_USER_SET_VRING_NUM = 8,
	VHOST_USER_SET_VRING_ADDR = 9,
	VHOST_USER_SET_VRING_BASE = 10,
	VHOST_USER_GET_VRING_BASE = 11,
	VHOST_USER_SET_VRING_KICK = 12,
	VHOST_USER_SET_VRING_CALL = 13,
	VHOST_USER_SET_VRING_ERR = 14,
	VHOST_USER_GET_PROTOCOL_FEATURES = 15,
	VHOST_USER_SET_PROTOCOL_FEATURES = 16,
	VHOST_USER_GET_QUEUE_NUM = 17,
	VHOST_USER_SET_VRING_ENABLE = 18,
};

#define VHOST_USER_VERSION		0x1u	/* flags bits 0-1 */
#define VHOST_USER_VERSION_MASK		0x3u
#define VHOST_USER_FLAG_REPLY		(1u << 2)
#define VHOST_USER_FLAG_NEED_REPLY	(1u << 3)

/* The virtio feature bit that says the backend has protocol features. */
#define VHOST_USER_F_PROTOCOL_FEATURES	30
/* Protocol feature bits the front end knows. */
#define VHOST_USER_PROTOCOL_F_MQ	0
#define VHOST_USER_PROTOCOL_F_REPLY_ACK	3

/* SET_VRING_KICK/CALL/ERR: the ring in bits 0-7, no descriptor (polling
 * or none) with bit 8. */
#define VHOST_USER_VRING_IDX_MASK	0xffu
#define VHOST_USER_VRING_NOFD		(1u << 8)

#define VHOST_USER_HDR_SIZE		12
#define VHOST_USER_MAX_REGIONS		8	/* SET_MEM_TABLE's */
/* The largest payload either side sends: a full memory table. */
#define VHOST_USER_MAX_PAYLOAD		(8 + VHOST_USER_MAX_REGIONS * 32)
#define VHOST_USER_MAX_MSG		(VHOST_USER_HDR_SIZE + \
	VHOST_USER_MAX_PAYLOAD)

struct vhost_user_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
};

struct vhost_user_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t uaddr;		/* where the front end maps it */
	uint64_t mmap_offset;	/* in the descriptor sent with it */
};

struct vhost_user_vring_addr {
	uint32_t index;
	uint32_t flags;		/* bit 0: log the used ring (never) */
	uint64_t desc, used, avail;	/* front end addresses */
	uint64_t log;
};

/*
 * Encoders: the whole message into buf (VHOST_USER_MAX_MSG bytes will
 * do for any), its length returned, or -EINVAL for arguments out of
 * range.  flags is what the sender adds to the version
 * (VHOST_USER_FLAG_NEED_REPLY or 0).
 */
int	vhost_user_msg_plain(uint8_t *buf, uint32_t req, uint32_t flags);
int	vhost_user_msg_u64(uint8_t *buf, uint32_t req, uint32_t flags,
	    uint64_t v);
int	vhost_user_msg_state(uint8_t *buf, uint32_t req, uint32_t flags,
	    uint32_t index, uint32_t num);
int	vhost_user_msg_addr(uint8_t *buf, uint32_t flags,
	    const struct vhost_user_vring_addr *a);
int	vhost_user_msg_mem(uint8_t *buf, uint32_t flags,
	    const struct vhost_user_region *r, unsigned int n);

/*
 * A header the backend sent, in its first VHOST_USER_HDR_SIZE bytes:
 * decoded into h and checked as a reply to req, whose reply payload is
 * want bytes.  0, or -EPROTO for a reply that is not that one.
 */
int	vhost_user_msg_reply_hdr(const uint8_t *buf, uint32_t req,
	    uint32_t want, struct vhost_user_hdr *h);
/*
 * A whole reply (header and payload, len bytes): checked as the reply
 * to req; the u64 it carries in *v (GET_FEATURES,
 * GET_PROTOCOL_FEATURES, GET_QUEUE_NUM, a REPLY_ACK's status).
 */
int	vhost_user_msg_reply_u64(const uint8_t *buf, size_t len, uint32_t req,
	    uint64_t *v);
/* Likewise for GET_VRING_BASE: the ring it names must be index. */
int	vhost_user_msg_reply_state(const uint8_t *buf, size_t len,
	    uint32_t req, uint32_t index, uint32_t *num);
/* The payload size of req's reply, or 0: the request has none. */
uint32_t vhost_user_msg_reply_size(uint32_t req);
/* A request's name for messages ("SET_MEM_TABLE"), "?" if unknown. */
const char *vhost_user_msg_name(uint32_t req);

#endif
