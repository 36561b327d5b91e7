/*
 * uartloop: port I/O exit after exit, each one's effect checked.  COM1
 * in loopback (MCR bit 4) hands every byte written to THR back in RBR,
 * through its receive FIFO.  The guest keeps one byte ahead: each pass
 * writes byte N + 1 and reads byte N back, so the FIFO holds two bytes
 * at every read; every pass is two exits to the VMM, an OUT and an IN,
 * whose effects the next pass sees.  An exit carried out twice (a
 * snapshot whose vCPU was saved before KVM finished the instruction,
 * which a restore then runs again) shows: an OUT twice leaves a byte
 * more in the FIFO, an IN twice takes the next byte, and an IN whose
 * value never reached RAX reads as another byte (uartloop_read()).
 * Every 1000 passes it leaves loopback to say so.
 *
 * Output:
 *   uartloop: ready
 *   uartloop: N passes ok       every 1000 passes
 *   FAIL: pass N: wrote 0xAA, read 0xBB (LSR 0xLL)   and it halts
 */
#include "runtime/rt.h"

#define COM1		0x3f8
#define UART_FCR	2
#define UART_MCR	4
#define UART_LSR	5
#define MCR_LOOP	0x10
#define LSR_DR		0x01
#define PASSES		1000

/*
 * RBR, with RAX holding other than what is expected until the IN writes
 * it: an IN whose value never reached the register reads as ~want.
 */
static inline uint8_t
uartloop_read(uint8_t want)
{
	uint8_t v;

	__asm__ volatile("inb %w1, %b0" : "=a"(v) : "Nd"((uint16_t)COM1),
	    "0"((uint8_t)~want));
	return v;
}

void
guest_main(void)
{
	uint8_t mcr = inb(COM1 + UART_MCR), wrote, got, lsr;
	uint64_t n = 0;
	unsigned int i;

	/* A FIFO: two bytes in it at every read. */
	outb(COM1 + UART_FCR, 0x07);
	printf("uartloop: ready\n");
	for (;;) {
		outb(COM1 + UART_MCR, mcr | MCR_LOOP);
		outb(COM1, (uint8_t)n);
		for (i = 0; i < PASSES; i++, n++) {
			outb(COM1, (uint8_t)(n + 1));
			wrote = (uint8_t)n;
			got = uartloop_read(wrote);
			if (got != wrote)
				break;
		}
		lsr = inb(COM1 + UART_LSR);
		/* What a failure left in the FIFO goes before the output. */
		while (inb(COM1 + UART_LSR) & LSR_DR)
			(void)inb(COM1);
		outb(COM1 + UART_MCR, mcr);
		if (i < PASSES) {
			printf("FAIL: pass %lu: wrote 0x%x, read 0x%x (LSR 0x%x)\n",
			    n, wrote, got, lsr);
			halt_forever();
		}
		printf("uartloop: %lu passes ok\n", n);
	}
}
