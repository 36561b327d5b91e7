/* See port92.h.  Intel PIIX4 datasheet: Port 92h (PIIX3 has the same). */
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "port92.h"

#define PORT92_BITS	(PORT92_A20 | PORT92_FAST_RESET)

struct port92 {
	const struct device_host *host;
	uint8_t value;
	uint64_t resets;	/* fast resets asked for */
};

static void
port92_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct port92 *p = dev;

	memset(data, 0, size);
	if (offset == 0 && size > 0)
		*(uint8_t *)data = p->value;
}

static void
port92_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct port92 *p = dev;
	uint8_t v;

	if (offset != 0 || size == 0)
		return;
	v = *(const uint8_t *)data & PORT92_BITS;
	/* A rising edge only: writing the bit back as read does nothing. */
	if ((v & PORT92_FAST_RESET) != 0 &&
	    (p->value & PORT92_FAST_RESET) == 0) {
		p->resets++;
		device_system_request(p->host, DEVICE_REQUEST_RESET);
	}
	p->value = v;
}

static const struct figure port92_figure_rows[] = {
	{ "fast_resets", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Resets asked for through port 0x92",
	    FIGURE_AT(struct port92, resets) },
};

static const struct figure_table port92_figures =
    FIGURE_TABLE(port92_figure_rows);

static void
port92_diag(void *dev, struct device_diag *d)
{
	struct port92 *p = dev;

	device_diag_put(d, "value", p->value, DEVICE_DIAG_HEX);
	device_diag_figures(d, &port92_figures, p);
}

struct port92 *
port92_new(const struct device_host *host)
{
	struct port92 *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->host = host;
	return p;
}

void
port92_free(struct port92 *p)
{
	free(p);
}

/*
 * The register; a fast reset the value shows was asked for already, so
 * loading it asks for none (only a rising edge does).
 */
static const struct dev_state_field port92_state_fields[] = {
	{ "value", DEV_STATE_U8, DEV_STATE_AT(struct port92, value),
	    .max = PORT92_BITS },
	{ "fast_resets", DEV_STATE_U64, DEV_STATE_AT(struct port92, resets) },
};

const struct dev_state_table port92_state_table = {
	DEV_STATE_TABLE("port92", 1, struct port92, port92_state_fields),
};

static int
port92_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&port92_state_table, dev, out);
}

static int
port92_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	return dev_state_load(&port92_state_table, dev, buf, len, err);
}

static void
port92_ops_free(void *dev)
{
	port92_free(dev);
}

const struct device_ops port92_device_ops = {
	.name = "port92",
	.read = port92_read,
	.write = port92_write,
	.diag = port92_diag,
	.save = port92_save,
	.load = port92_load,
	.free = port92_ops_free,
};
