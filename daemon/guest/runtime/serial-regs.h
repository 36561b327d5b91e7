/*
 * COM1's 16550A registers and bits (PC16550D datasheet, sec. 8), for the
 * runtime's serial.c and serial-rx.c alone.
 */
#ifndef RT_SERIAL_REGS_H
#define RT_SERIAL_REGS_H

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

#endif
