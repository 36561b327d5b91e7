/* See post.h. */
#include <stdlib.h>
#include <string.h>

#include "post.h"

struct post {
	uint8_t last;		/* the last code written, for diagnostics */
};

static void
post_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	memset(data, 0xff, size);
}

static void
post_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct post *p = dev;

	if (size > 0)
		p->last = *(const uint8_t *)data;
}

static void
post_diag(void *dev, struct device_diag *d)
{
	struct post *p = dev;

	device_diag_put(d, "last", p->last, DEVICE_DIAG_HEX);
}

struct post *
post_new(const struct device_host *host)
{
	return calloc(1, sizeof(struct post));
}

void
post_free(struct post *p)
{
	free(p);
}

static void
post_ops_free(void *dev)
{
	post_free(dev);
}

const struct device_ops post_device_ops = {
	.name = "post",
	.read = post_read,
	.write = post_write,
	.diag = post_diag,
	.free = post_ops_free,
};
