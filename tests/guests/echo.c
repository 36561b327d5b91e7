/*
 * echo: send every byte received on COM1 straight back, unchanged.
 * Input is interrupt driven (IRQ 4; "irq=pic" routes it through the
 * 8259 instead of the IOAPIC); between interrupts the CPU halts.
 *
 * Output: "echo: ready (irq via ioapic|pic)", then the echoed bytes.
 */
#include "runtime/rt.h"

static void
echo_byte(uint8_t c)
{
	cons_write((const char *)&c, 1);
}

void
guest_main(void)
{
	serial_rx_irq_enable(echo_byte);
	printf("echo: ready (irq via %s)\n", irq_mode_name());
	for (;;)
		idle();
}
