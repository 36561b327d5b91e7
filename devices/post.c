/* See post.h. */
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
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

static const struct dev_state_field post_state_fields[] = {
	{ "last", DEV_STATE_U8, DEV_STATE_AT(struct post, last) },
};

const struct dev_state_table post_state_table = {
	DEV_STATE_TABLE("post", 1, struct post, post_state_fields),
};

static int
post_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&post_state_table, dev, out);
}

static int
post_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	return dev_state_load(&post_state_table, dev, buf, len, err);
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
	.save = post_save,
	.load = post_load,
	.free = post_ops_free,
};
