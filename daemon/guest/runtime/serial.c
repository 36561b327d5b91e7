/*
 * COM1: a 16550A at 0x3f8 driven by polling for output, and by polling or
 * IRQ 4 for input (register layout as in the PC16550D datasheet, sec. 8).
 */
#include "rt.h"

#define COM1		0x3f8
#define UART_RBR	0	/* receive buffer (DLAB = 0) */
#define UART_THR	0	/* transmit holding (DLAB = 0) */
#define UART_DLL	0	/* divisor latch low (DLAB = 1) */
#define UART_IER	1
#define UART_DLM	1
#define UART_IIR	2
#define UART_FCR	2
#define UART_LCR	3
#define UART_MCR	4
#define UART_LSR	5
#define UART_MSR	6

#define IER_RDA		0x01	/* received data available */
#define LCR_8N1		0x03
#define LCR_DLAB	0x80
#define MCR_DTR		0x01
#define MCR_RTS		0x02
#define MCR_OUT2	0x08	/* gates the interrupt line on a PC */
#define LSR_DR		0x01
#define LSR_THRE	0x20

/* Bounds a wait for THRE so that a missing UART cannot hang the guest. */
#define THRE_SPINS	100000

uint64_t rt_first_byte_tsc;

static void (*serial_rx_fn)(uint8_t);

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

static void
serial_irq(void)
{
	int c;

	/* Drain everything: one interrupt may stand for a FIFO's worth. */
	while ((c = serial_getc()) >= 0)
		serial_rx_fn((uint8_t)c);
}

/*
 * Deliver every received byte to fn from the IRQ 4 handler.  OUT2 must be
 * set for the UART's interrupt to reach the interrupt controller.
 */
int
serial_rx_irq_enable(void (*fn)(uint8_t c))
{
	int i;

	serial_rx_fn = fn;
	for (i = 0; i < 64 && serial_getc() >= 0; i++)
		;
	(void)inb(COM1 + UART_IIR);
	(void)inb(COM1 + UART_MSR);
	irq_enable(4, serial_irq);
	outb(COM1 + UART_MCR, MCR_DTR | MCR_RTS | MCR_OUT2);
	outb(COM1 + UART_IER, IER_RDA);
	return 0;
}
