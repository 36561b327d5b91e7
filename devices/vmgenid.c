/* See vmgenid.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "vmgenid.h"

struct vmgenid {
	const struct device_host *host;
	uint64_t addr;
	uint8_t id[VMGENID_LEN];
	uint64_t changes;	/* vmgenid_set() calls, for diagnostics */
};

struct vmgenid *
vmgenid_new(const struct device_host *host, uint64_t addr,
    const uint8_t id[VMGENID_LEN])
{
	struct vmgenid *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->host = host;
	g->addr = addr;
	memcpy(g->id, id, VMGENID_LEN);
	return g;
}

void
vmgenid_free(struct vmgenid *g)
{
	free(g);
}

int
vmgenid_publish(struct vmgenid *g)
{
	uint8_t *p = device_guest_mem(g->host, g->addr, VMGENID_LEN);

	if (p == NULL)
		return -EFAULT;
	memcpy(p, g->id, VMGENID_LEN);
	device_guest_written(g->host, p, VMGENID_LEN);
	return 0;
}

int
vmgenid_set(struct vmgenid *g, const uint8_t id[VMGENID_LEN])
{
	memcpy(g->id, id, VMGENID_LEN);
	g->changes++;
	return vmgenid_publish(g);
}

void
vmgenid_get(const struct vmgenid *g, uint8_t id[VMGENID_LEN])
{
	memcpy(id, g->id, VMGENID_LEN);
}

void
vmgenid_text(const uint8_t b[VMGENID_LEN], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", b[3], b[2], b[1], b[0], b[5], b[4],
	    b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void
vmgenid_diag(void *dev, struct device_diag *d)
{
	struct vmgenid *g = dev;

	device_diag_put(d, "addr", g->addr, DEVICE_DIAG_HEX);
	device_diag_put(d, "changes", g->changes, DEVICE_DIAG_UINT);
}

/*
 * The ID and the count of changes.  The address is the board's, not
 * state.  A load does not write guest RAM: the restored RAM holds the
 * ID already, and a restore then sets a new one (vmgenid_set()).
 */
static const struct dev_state_field vmgenid_state_fields[] = {
	{ "id", DEV_STATE_BYTES, DEV_STATE_AT(struct vmgenid, id) },
	{ "changes", DEV_STATE_U64, DEV_STATE_AT(struct vmgenid, changes) },
};

const struct dev_state_table vmgenid_state_table = {
	DEV_STATE_TABLE("vmgenid", 1, struct vmgenid, vmgenid_state_fields),
};

static int
vmgenid_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&vmgenid_state_table, dev, out);
}

static int
vmgenid_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	return dev_state_load(&vmgenid_state_table, dev, buf, len, err);
}

static void
vmgenid_ops_free(void *dev)
{
	vmgenid_free(dev);
}

const struct device_ops vmgenid_device_ops = {
	.name = "vmgenid",
	.diag = vmgenid_diag,
	.save = vmgenid_save,
	.load = vmgenid_load,
	.free = vmgenid_ops_free,
};
