/*
 * COM1's input by IRQ 4: every byte received handed to a guest's function
 * from the interrupt handler.  Above serial.c (it reads the bytes) and
 * irq.c (it routes the line).
 */
#include "rt.h"
#include "serial-regs.h"

static void (*serial_rx_fn)(uint8_t);

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
