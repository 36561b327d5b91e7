/*
 * The DSDT's AML: the PCI root bridge and its interrupt routing, the ISA
 * chips the board has (so that an ACPI operating system enumerates them
 * through PNP as on a PC), and \_S5.  Fixed by pc-layout.h but for the
 * PCI root's memory windows (boot-tables.h): a kernel-loaded guest's are
 * pc-layout.h's, a firmware's cover where the firmware places BARs.
 *
 * The power button is not here: it is ACPI's fixed-feature power button
 * (the FADT's PWR_BUTTON flag clear; PWRBTN_STS in the PM1 event block),
 * which an OS finds without a namespace object.  A PNP0C0C device would
 * be a control-method button, signalled by Notify from a GPE handler:
 * more AML and a GPE block for the same key press.
 *
 * The VM generation ID (Microsoft's "Virtual Machine Generation ID"
 * paper; Linux's drivers/virt/vmgenid.c): a device VGEN whose _CID is
 * "VM_GEN_COUNTER" and whose ADDR names the 16 bytes' address as a
 * package of two 32-bit halves, and GPE 0's handler \_GPE._E00, which
 * notifies it (0x80) when the ID changed.
 */
#include <errno.h>

#include "boot-aml.h"
#include "boot-tables.h"
#include "pc-layout.h"

/* An ISA device with a PNP ID, I/O ranges and an IRQ (or none: ~0U). */
static void
dsdt_isa_device(struct aml *a, const char *name, const char *hid,
    uint16_t io0, uint8_t len0, uint16_t io1, uint8_t len1,
    unsigned int irq)
{
	size_t dev, buf;

	dev = aml_device_begin(a, name);
	aml_name_decl(a, "_HID");
	aml_eisaid(a, hid);
	aml_name_decl(a, "_CRS");
	buf = aml_buffer_begin(a);
	if (len0 > 0)
		aml_res_io(a, io0, len0);
	if (len1 > 0)
		aml_res_io(a, io1, len1);
	if (irq != ~0U)
		aml_res_irq(a, irq);
	aml_res_end(a);
	aml_buffer_end(a, buf);
	aml_end(a, dev);
}

/*
 * _PRT (ACPI 6.4, 6.2.13): for every slot and pin, the global system
 * interrupt PC_PCI_INTX_GSI wires it to (Source 0: a GSI, not a link
 * device).  Address 0xSSSSFFFF: slot S, any function.
 */
static void
dsdt_prt(struct aml *a)
{
	size_t prt, entry;
	unsigned int slot, pin;

	aml_name_decl(a, "_PRT");
	prt = aml_package_begin(a, PC_PCI_SLOTS * 4);
	for (slot = 0; slot < PC_PCI_SLOTS; slot++) {
		for (pin = 0; pin < 4; pin++) {
			entry = aml_package_begin(a, 4);
			aml_integer(a, (uint64_t)slot << 16 | 0xffff);
			aml_integer(a, pin);
			aml_integer(a, 0);
			aml_integer(a, PC_PCI_INTX_GSI(slot, pin));
			aml_end(a, entry);
		}
	}
	aml_end(a, prt);
}

static void
dsdt_pci_root(struct aml *a, const struct boot_dsdt_config *cfg)
{
	size_t dev, buf;

	dev = aml_device_begin(a, "PCI0");
	/* PCI Express root bridge, compatible with a PCI one. */
	aml_name_decl(a, "_HID");
	aml_eisaid(a, "PNP0A08");
	aml_name_decl(a, "_CID");
	aml_eisaid(a, "PNP0A03");
	aml_name_decl(a, "_UID");
	aml_integer(a, 0);
	aml_name_decl(a, "_SEG");
	aml_integer(a, 0);
	aml_name_decl(a, "_BBN");
	aml_integer(a, 0);
	/* Bus 0 only, the configuration ports, the windows. */
	aml_name_decl(a, "_CRS");
	buf = aml_buffer_begin(a);
	aml_res_bus_range(a, 0, 0);
	aml_res_io(a, PC_PCI_CONFIG_ADDR_PORT, 8);
	aml_res_io_window(a, PC_PCI_IO_START, PC_PCI_IO_END - 1);
	aml_res_mem_window(a, cfg->mmio32_min, cfg->mmio32_max);
	if (cfg->mmio64_len != 0)
		aml_res_mem64_window(a, cfg->mmio64_min,
		    cfg->mmio64_min + cfg->mmio64_len - 1);
	aml_res_end(a);
	aml_buffer_end(a, buf);
	dsdt_prt(a);
	aml_end(a, dev);
}

static void
dsdt_vmgenid(struct aml *a, uint64_t addr)
{
	size_t dev, pkg;

	dev = aml_device_begin(a, "VGEN");
	aml_name_decl(a, "_HID");
	aml_string(a, "VMMD0001");
	aml_name_decl(a, "_CID");
	aml_string(a, "VM_GEN_COUNTER");
	aml_name_decl(a, "_DDN");
	aml_string(a, "VM_GEN_COUNTER");
	aml_name_decl(a, "ADDR");
	pkg = aml_package_begin(a, 2);
	aml_integer(a, addr & 0xffffffffu);
	aml_integer(a, addr >> 32);
	aml_end(a, pkg);
	aml_end(a, dev);
}

/* \_GPE._E00: the generation ID changed (edge: one Notify per change). */
static void
dsdt_gpe(struct aml *a)
{
	size_t scope, method;

	scope = aml_scope_begin(a, "\\_GPE");
	method = aml_method_begin(a, "_E00", 0);
	aml_notify(a, "\\_SB.VGEN", 0x80);
	aml_end(a, method);
	aml_end(a, scope);
}

int
boot_dsdt_build(uint8_t *buf, size_t cap, const struct boot_dsdt_config *cfg)
{
	struct aml a;
	size_t sb, pkg;

	aml_init(&a, buf, cap);
	sb = aml_scope_begin(&a, "\\_SB");
	dsdt_pci_root(&a, cfg);
	dsdt_isa_device(&a, "COM1", "PNP0501", PC_COM1_PORT, 8, 0, 0,
	    PC_COM1_IRQ);
	dsdt_isa_device(&a, "RTC", "PNP0B00", PC_RTC_PORT, 2, 0, 0,
	    PC_RTC_IRQ);
	dsdt_isa_device(&a, "KBD", "PNP0303", PC_I8042_DATA_PORT, 1,
	    PC_I8042_CMD_PORT, 1, PC_I8042_KBD_IRQ);
	dsdt_isa_device(&a, "MOU", "PNP0F13", 0, 0, 0, 0, PC_I8042_AUX_IRQ);
	if (cfg->vmgenid_addr != 0)
		dsdt_vmgenid(&a, cfg->vmgenid_addr);
	aml_end(&a, sb);
	if (cfg->vmgenid_addr != 0)
		dsdt_gpe(&a);

	/* \_S5: SLP_TYP for PM1a and PM1b (there is no PM1b). */
	aml_name_decl(&a, "\\_S5");
	pkg = aml_package_begin(&a, 2);
	aml_integer(&a, PC_ACPI_SLP_TYP_S5);
	aml_integer(&a, PC_ACPI_SLP_TYP_S5);
	aml_end(&a, pkg);
	return a.err != 0 ? a.err : (int)a.len;
}

void
boot_dsdt_fw_windows(struct boot_dsdt_config *d, uint64_t low_ram,
    uint64_t high_ram, const struct boot_pci_span *span)
{
	uint64_t lo, hi;

	d->mmio32_min = (uint32_t)low_ram;
	d->mmio32_max = PC_IOAPIC_ADDR - 1;
	if (span->any32 && span->hi32 > d->mmio32_max &&
	    span->hi32 <= UINT32_MAX)
		d->mmio32_max = (uint32_t)span->hi32;
	lo = (PC_HIGH_RAM_START + high_ram + BOOT_MMIO64_ALIGN - 1) &
	    ~(BOOT_MMIO64_ALIGN - 1);
	hi = lo + BOOT_MMIO64_LEN - 1;
	if (span->any64) {
		if (span->lo64 < lo)
			lo = span->lo64 & ~(BOOT_MMIO64_ALIGN - 1);
		/* Inclusive, so that a BAR at the very top cannot wrap. */
		if ((span->hi64 | (BOOT_MMIO64_ALIGN - 1)) > hi)
			hi = span->hi64 | (BOOT_MMIO64_ALIGN - 1);
	}
	d->mmio64_min = lo;
	d->mmio64_len = hi - lo + 1;
}
