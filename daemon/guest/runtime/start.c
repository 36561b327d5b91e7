/*
 * C entry of the bootstrap processor: bring up the console, keep the
 * command line (bootinfo.c), make interrupts safe, and run the guest.
 */
#include "rt.h"

void rt_start(void);

void
rt_start(void)
{
	char mode[8];

	serial_init();
	bootinfo_keep(rt_start_info_pa);
	pic_init();
	trap_init();
	lapic_enable();
	if (cmdline_get("irq", mode, sizeof(mode)) && strcmp(mode, "pic") == 0)
		irq_set_mode(IRQ_MODE_PIC);
	if (boot_start_info() == NULL)
		printf("rt: no PVH start info (ebx=0x%x)\n", rt_start_info_pa);
	guest_main();
	halt_forever();
}
