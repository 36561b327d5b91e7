/*
 * The PC: the one place that says which chips a guest has, at which
 * ports and on which ISA interrupt lines.  See pc-layout.h for the
 * addresses and the interrupt routing.
 */
#include "board.h"
#include "i8042.h"
#include "pc-layout.h"
#include "pci-host.h"
#include "post.h"
#include "rtc.h"
#include "uart.h"

static void *
board_uart_new(const struct device_host *host, const struct board_backends *be)
{
	return uart_new(host, &be->com1);
}

static void *
board_rtc_new(const struct device_host *host, const struct board_backends *be)
{
	return rtc_new_config(host, &be->rtc);
}

static void *
board_i8042_new(const struct device_host *host,
    const struct board_backends *be)
{
	return i8042_new(host);
}

static void *
board_post_new(const struct device_host *host, const struct board_backends *be)
{
	return post_new(host);
}

static void *
board_pci_host_new(const struct device_host *host,
    const struct board_backends *be)
{
	return pci_host_new(host, &be->pci);
}

const struct board_device board_pc[] = {
	{ .name = "com1", .create = board_uart_new, .ops = &uart_device_ops,
	    .bus = BOARD_PIO, .ranges = { { PC_COM1_PORT, 8, 0 } },
	    .irqs = { PC_COM1_IRQ }, .nirqs = 1 },
	{ .name = "rtc", .create = board_rtc_new, .ops = &rtc_device_ops,
	    .bus = BOARD_PIO, .ranges = { { PC_RTC_PORT, 2, 0 } },
	    .irqs = { PC_RTC_IRQ }, .nirqs = 1 },
	{ .name = "i8042", .create = board_i8042_new,
	    .ops = &i8042_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_I8042_DATA_PORT, 1, 0 },
		{ PC_I8042_CMD_PORT, 1, 4 } },
	    .irqs = { PC_I8042_KBD_IRQ, PC_I8042_AUX_IRQ }, .nirqs = 2 },
	{ .name = "post", .create = board_post_new, .ops = &post_device_ops,
	    .bus = BOARD_PIO, .ranges = { { PC_POST_PORT, 1, 0 } } },
	/* PCI bus 0 and its host bridge in slot 0 (pci-host.h). */
	{ .name = "pci-host", .create = board_pci_host_new,
	    .ops = &pci_host_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_PCI_CONFIG_ADDR_PORT, 8, 0 } } },
};

const size_t board_pc_size = sizeof(board_pc) / sizeof(board_pc[0]);
