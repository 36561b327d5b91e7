/*
 * The PC: the one place that says which chips a guest has, at which
 * ports and on which ISA interrupt lines.  See pc-layout.h for the
 * addresses and the interrupt routing.
 */
#include "acpi-pm.h"
#include "board.h"
#include "i8042.h"
#include "pc-layout.h"
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
board_acpi_pm_new(const struct device_host *host,
    const struct board_backends *be)
{
	return acpi_pm_new(host, PC_ACPI_SLP_TYP_S5);
}

const struct board_device board_pc[] = {
	/* name     create           ops                bus
	 *          ranges {base, len, offset}          irqs      n */
	{ "com1", board_uart_new, &uart_device_ops, BOARD_PIO,
	    { { PC_COM1_PORT, 8, 0 } }, { PC_COM1_IRQ }, 1 },
	{ "rtc", board_rtc_new, &rtc_device_ops, BOARD_PIO,
	    { { PC_RTC_PORT, 2, 0 } }, { PC_RTC_IRQ }, 1 },
	{ "i8042", board_i8042_new, &i8042_device_ops, BOARD_PIO,
	    { { PC_I8042_DATA_PORT, 1, 0 }, { PC_I8042_CMD_PORT, 1, 4 } },
	    { PC_I8042_KBD_IRQ, PC_I8042_AUX_IRQ }, 2 },
	{ "post", board_post_new, &post_device_ops, BOARD_PIO,
	    { { PC_POST_PORT, 1, 0 } }, { 0 }, 0 },
	/* The PM1a event block, then the control block right after it. */
	{ "acpi-pm", board_acpi_pm_new, &acpi_pm_device_ops, BOARD_PIO,
	    { { PC_ACPI_PM1A_EVT_PORT, ACPI_PM_LEN, 0 } },
	    { PC_ACPI_SCI_IRQ }, 1 },
};

const size_t board_pc_size = sizeof(board_pc) / sizeof(board_pc[0]);
