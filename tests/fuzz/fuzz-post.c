/* Port 0x80, the POST code port (fuzz-device.h). */
#include "fuzz-device.h"
#include "post.h"

static void *
fuzz_post_create(struct fake_host *fh)
{
	return post_new(&fh->host);
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &post_device_ops,
	.ranges = { { 0, 1 } },
	.nranges = 1,
	.create = fuzz_post_create,
};
