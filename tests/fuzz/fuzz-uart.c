/* The 16550A UART's registers (fuzz-device.h). */
#include "fuzz-device.h"
#include "uart.h"

static void
fuzz_uart_tx(void *opaque, const uint8_t *buf, size_t len)
{
}

static void
fuzz_uart_rx_space(void *opaque)
{
}

static const struct uart_backend fuzz_uart_backend = {
	.tx = fuzz_uart_tx,
	.rx_space = fuzz_uart_rx_space,
};

static void *
fuzz_uart_create(struct fake_host *fh)
{
	return uart_new(&fh->host, &fuzz_uart_backend);
}

/* Bytes from the console; the receiver takes what it has room for. */
static void
fuzz_uart_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	uart_receive(dev, data, len);
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &uart_device_ops,
	.ranges = { { 0, 8 } },
	.nranges = 1,
	.create = fuzz_uart_create,
	.input = fuzz_uart_input,
};
