/*
 * COM1: a 16550A at 0x3f8 driven by polling for output, and by polling
 * for input (register layout as in the PC16550D datasheet, sec. 8); input
 * by IRQ 4 is serial-rx.c's.
 */
#include "rt.h"

#include "serial-regs.h"

/* Bounds a wait for THRE so that a missing UART cannot hang the guest. */
#define THRE_SPINS	100000

uint64_t rt_first_byte_tsc;

void
serial_init(void)
{
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, LCR_DLAB);
	outb(COM1 + UART_DLL, 1);		/* 115200 baud */
	outb(COM1 + UART_DLM, 0);
	outb(COM1 + UART_LCR, LCR_8N1);
	outb(COM1 + UART_FCR, 0x07);		/* FIFOs on and cleared */
	outb(COM1 + UART_MCR, MCR_DTR | MCR_RTS);
}

void
serial_putc(char c)
{
	int i;

	for (i = 0; i < THRE_SPINS; i++)
		if (inb(COM1 + UART_LSR) & LSR_THRE)
			break;
	if (rt_first_byte_tsc == 0)
		rt_first_byte_tsc = rdtsc();
	outb(COM1 + UART_THR, (uint8_t)c);
}

bool
serial_rx_ready(void)
{
	return (inb(COM1 + UART_LSR) & LSR_DR) != 0;
}

int
serial_getc(void)
{
	if (!serial_rx_ready())
		return -1;
	return inb(COM1 + UART_RBR);
}
