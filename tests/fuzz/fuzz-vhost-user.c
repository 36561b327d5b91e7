/*
 * libFuzzer: what a vhost-user backend sends, as the front end
 * (daemon/machine/vhost-user.c, vhost-user-msg.c) takes it.
 *
 * Input: a flags byte, then the backend's bytes.
 *   flags bit 0: the bytes go to the codec alone: each reply checker
 *                (GET_FEATURES, GET_PROTOCOL_FEATURES, GET_VRING_BASE
 *                of ring 0, a REPLY_ACK of SET_OWNER) on the bytes
 *   else:        the bytes are all the backend ever says, waiting on
 *                the other end of a socket pair it then hangs up:
 *                negotiation, a start of two rings over a memfd, a
 *                register kick, a call change and a stop, as far as the
 *                replies carry (a short reply is a hang-up, never a
 *                wait)
 * Besides not crashing: a broken connection stays broken (every later
 * request fails with the same error), and a check that accepts a reply
 * accepts only one exactly as long as the request's reply.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vhost-user-msg.h"
#include "vhost-user.h"

#define RAM	(64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *ram;
static int ram_fd = -1, kick[2], call;

static void
fuzz_codec(const uint8_t *p, size_t n)
{
	static const uint32_t reqs[] = {
		VHOST_USER_GET_FEATURES, VHOST_USER_GET_PROTOCOL_FEATURES,
		VHOST_USER_SET_OWNER,
	};
	struct vhost_user_hdr h;
	uint64_t v;
	uint32_t num;

	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++)
		if (vhost_user_msg_reply_u64(p, n, reqs[i], &v) == 0 &&
		    n != VHOST_USER_HDR_SIZE + 8)
			abort();
	if (vhost_user_msg_reply_state(p, n, VHOST_USER_GET_VRING_BASE, 0,
	    &num) == 0 && n != VHOST_USER_HDR_SIZE + 8)
		abort();
	if (n >= VHOST_USER_HDR_SIZE &&
	    vhost_user_msg_reply_hdr(p, VHOST_USER_GET_FEATURES, 8, &h) == 0 &&
	    (h.size != 8 || !(h.flags & VHOST_USER_FLAG_REPLY)))
		abort();
}

static void
fuzz_setup(void)
{
	if (ram_fd >= 0)
		return;
	ram_fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	if (ram_fd < 0 || ftruncate(ram_fd, RAM) < 0)
		abort();
	ram = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd, 0);
	if (ram == MAP_FAILED)
		abort();
	kick[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	kick[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static void
fuzz_front_end(const uint8_t *p, size_t n)
{
	struct vhost_backend_start s = {
		.features = 1ull << 32,
		.nmem = 1,
		.mem = { { 0, RAM, NULL, -1, 0 } },
		.nrings = 2,
	};
	struct vhost_user *vu;
	struct vhost_backend be;
	uint16_t next[VHOST_BACKEND_QUEUES];
	char err[256];
	int sv[2], ret, e;

	fuzz_setup();
	s.mem[0].hva = ram;
	s.mem[0].fd = ram_fd;
	for (unsigned int q = 0; q < 2; q++)
		s.ring[q] = (struct vhost_backend_ring){ 256,
		    ram + 0x1000 * q, ram + 0x1000 * q + 0x800,
		    ram + 0x4000 + 0x1000 * q, 0, kick[q], q ? -1 : call };
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	/* Everything fits the socket's buffer: the front end never waits. */
	if (n > 0 && write(sv[1], p, n) != (ssize_t)n)
		abort();
	shutdown(sv[1], SHUT_WR);
	ret = vhost_user_new(&vu, sv[0], 10000, &be, err, sizeof(err));
	if (ret == 0) {
		s.features &= be.ops->features(be.ctx);
		ret = be.ops->start(be.ctx, &s);
		be.ops->kick(be.ctx, 1);
		(void)be.ops->set_call(be.ctx, 1, call);
		(void)be.ops->stop(be.ctx, next);
		e = vhost_user_error(vu);
		if (e < 0 && be.ops->set_call(be.ctx, 0, -1) != e)
			abort();
		vhost_user_free(vu);
	}
	close(sv[1]);
	(void)ret;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_codec(data + 1, size - 1);
	else
		fuzz_front_end(data + 1, size - 1);
	return 0;
}
