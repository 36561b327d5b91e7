/* The i8042 keyboard controller, keyboard and mouse (fuzz-device.h). */
#include "fuzz-device.h"
#include "i8042.h"

static void *
fuzz_i8042_create(struct fake_host *fh)
{
	return i8042_new(&fh->host);
}

/* Keys, mouse movement and Ctrl-Alt-Del from a viewer. */
static void
fuzz_i8042_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	switch (sel % 3) {
	case 0:
		i8042_key(dev, data, len);
		break;
	case 1:
		if (len >= 4)
			i8042_mouse(dev, (int8_t)data[0] * 37,
			    (int8_t)data[1] * 37, (int8_t)data[2],
			    data[3]);
		break;
	default:
		i8042_ctrl_alt_del(dev);
		break;
	}
}

/* Data at 0x60 (offset 0), command/status at 0x64 (offset 4). */
const struct fuzz_device fuzz_device_desc = {
	.ops = &i8042_device_ops,
	.ranges = { { 0, 1 }, { 4, 1 } },
	.nranges = 2,
	.create = fuzz_i8042_create,
	.input = fuzz_i8042_input,
};
