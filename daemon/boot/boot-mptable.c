/*
 * Intel MultiProcessor Specification, version 1.4 (May 1997), chapter 4:
 * the MP floating pointer structure (4.1) and the MP configuration table
 * (4.2, 4.3): processors, the ISA and PCI buses, the IOAPIC and the
 * wiring of the ISA interrupts and of every PCI slot's INTx pins to it,
 * and of the 8259 and NMI to every local APIC: what the ACPI tables say
 * too (boot-acpi.c, boot-dsdt.c), for guests that read only this.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "boot-tables.h"

#define MP_SPEC_REV		4	/* 1.4 */

struct mp_floating {
	char		signature[4];	/* "_MP_" */
	uint32_t	config_addr;
	uint8_t		length;		/* in 16-byte units: 1 */
	uint8_t		spec_rev;
	uint8_t		checksum;
	uint8_t		feature[5];	/* 0: a configuration table exists */
} __attribute__((packed));
_Static_assert(sizeof(struct mp_floating) == 16, "MP floating pointer");
_Static_assert(offsetof(struct mp_floating, checksum) == 10, "checksum");
_Static_assert(offsetof(struct mp_floating, feature) == 11, "feature");

struct mp_config {
	char		signature[4];	/* "PCMP" */
	uint16_t	length;		/* base table, header included */
	uint8_t		spec_rev;
	uint8_t		checksum;
	char		oem_id[8];
	char		product_id[12];
	uint32_t	oem_table_addr;
	uint16_t	oem_table_size;
	uint16_t	entry_count;
	uint32_t	lapic_addr;
	uint16_t	ext_length;
	uint8_t		ext_checksum;
	uint8_t		reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct mp_config) == 44, "MP config header");
_Static_assert(offsetof(struct mp_config, entry_count) == 34, "entry_count");
_Static_assert(offsetof(struct mp_config, lapic_addr) == 36, "lapic_addr");

#define MP_ENTRY_PROCESSOR	0
#define MP_ENTRY_BUS		1
#define MP_ENTRY_IOAPIC		2
#define MP_ENTRY_IOINT		3
#define MP_ENTRY_LOCALINT	4

struct mp_processor {
	uint8_t		type;
	uint8_t		lapic_id;
	uint8_t		lapic_version;
	uint8_t		flags;
	uint32_t	signature;	/* CPUID.1:EAX stepping/model/family */
	uint32_t	features;	/* CPUID.1:EDX */
	uint32_t	reserved[2];
} __attribute__((packed));
_Static_assert(sizeof(struct mp_processor) == 20, "MP processor entry");

#define MP_CPU_ENABLED		0x01
#define MP_CPU_BSP		0x02

struct mp_bus {
	uint8_t		type;
	uint8_t		bus_id;
	char		bus_type[6];	/* blank padded */
} __attribute__((packed));
_Static_assert(sizeof(struct mp_bus) == 8, "MP bus entry");

struct mp_ioapic {
	uint8_t		type;
	uint8_t		id;
	uint8_t		version;
	uint8_t		flags;
	uint32_t	addr;
} __attribute__((packed));
_Static_assert(sizeof(struct mp_ioapic) == 8, "MP IOAPIC entry");

#define MP_IOAPIC_ENABLED	0x01

/* Same layout for I/O (type 3) and local (type 4) interrupt entries. */
struct mp_intsrc {
	uint8_t		type;
	uint8_t		int_type;
	uint16_t	flags;		/* polarity, trigger: 0 = bus default */
	uint8_t		src_bus;
	uint8_t		src_irq;
	uint8_t		dst_apic;
	uint8_t		dst_pin;
} __attribute__((packed));
_Static_assert(sizeof(struct mp_intsrc) == 8, "MP interrupt entry");

#define MP_INT_INT		0
#define MP_INT_NMI		1
#define MP_INT_EXTINT		3
#define MP_ALL_LAPICS		0xff

#define MP_ISA_BUS		0
#define MP_PCI_BUS		1	/* the MP table's ID for PCI bus 0 */
#define MP_ISA_IRQS		16

#define MP_LAPIC_VERSION	0x14
#define MP_IOAPIC_VERSION	0x11
/* Family 6, and the FPU and APIC feature bits: what an OS may check. */
#define MP_CPU_SIGNATURE	0x600
#define MP_CPU_FEATURES		((1U << 0) | (1U << 9))

/*
 * Header, processors, two buses, IOAPIC, 15 ISA IRQs (all but the
 * cascade), four INTx pins for each PCI slot and two local interrupt
 * entries: 1228 + 20 * ncpus bytes, more than the EBDA's first KiB, so
 * the configuration table goes to BOOT_MPTABLE_ALT_ADDR.
 */
static size_t
mp_config_size(unsigned int ncpus)
{
	return sizeof(struct mp_config) +
	    ncpus * sizeof(struct mp_processor) +
	    2 * sizeof(struct mp_bus) + sizeof(struct mp_ioapic) +
	    (MP_ISA_IRQS - 1) * sizeof(struct mp_intsrc) +
	    PC_PCI_SLOTS * 4 * sizeof(struct mp_intsrc) +
	    2 * sizeof(struct mp_intsrc);
}

int
boot_mptable_write(uint8_t *mem, uint64_t mem_size, uint64_t addr,
    unsigned int ncpus)
{
	struct mp_floating mpf;
	struct mp_config hdr;
	struct mp_processor cpu;
	struct mp_bus bus;
	struct mp_ioapic ioapic;
	struct mp_intsrc in;
	uint64_t cfg_addr;
	uint8_t *p, *cfg;
	size_t cfg_size;
	unsigned int i, count = 0;

	if (ncpus < 1 || ncpus > BOOT_MAX_CPUS || (addr & 15) != 0)
		return -EINVAL;
	cfg_size = mp_config_size(ncpus);
	cfg_addr = BOOT_MPTABLE_ALT_ADDR;
	if (addr > mem_size || sizeof(mpf) > mem_size - addr ||
	    cfg_addr > mem_size || cfg_size > mem_size - cfg_addr)
		return -ENOSPC;
	/* The configuration table is addressed with 32 bits. */
	if (cfg_addr + cfg_size > 0xffffffffULL)
		return -ERANGE;

	cfg = mem + cfg_addr;
	p = cfg + sizeof(hdr);

	for (i = 0; i < ncpus; i++, count++) {
		memset(&cpu, 0, sizeof(cpu));
		cpu.type = MP_ENTRY_PROCESSOR;
		cpu.lapic_id = (uint8_t)i;
		cpu.lapic_version = MP_LAPIC_VERSION;
		cpu.flags = MP_CPU_ENABLED | (i == 0 ? MP_CPU_BSP : 0);
		cpu.signature = MP_CPU_SIGNATURE;
		cpu.features = MP_CPU_FEATURES;
		memcpy(p, &cpu, sizeof(cpu));
		p += sizeof(cpu);
	}

	memset(&bus, 0, sizeof(bus));
	bus.type = MP_ENTRY_BUS;
	bus.bus_id = MP_ISA_BUS;
	memcpy(bus.bus_type, "ISA   ", sizeof(bus.bus_type));
	memcpy(p, &bus, sizeof(bus));
	p += sizeof(bus);
	count++;
	bus.bus_id = MP_PCI_BUS;
	memcpy(bus.bus_type, "PCI   ", sizeof(bus.bus_type));
	memcpy(p, &bus, sizeof(bus));
	p += sizeof(bus);
	count++;

	/* The IOAPIC takes the first ID after the processors'. */
	memset(&ioapic, 0, sizeof(ioapic));
	ioapic.type = MP_ENTRY_IOAPIC;
	ioapic.id = (uint8_t)ncpus;
	ioapic.version = MP_IOAPIC_VERSION;
	ioapic.flags = MP_IOAPIC_ENABLED;
	ioapic.addr = PC_IOAPIC_ADDR;
	memcpy(p, &ioapic, sizeof(ioapic));
	p += sizeof(ioapic);
	count++;

	/*
	 * ISA IRQ n to IOAPIC pin n, except the timer, wired to pin 2 as on
	 * PCs (where pin 0 carries the 8259's output).  IRQ 2 is the 8259
	 * cascade and does not exist on the bus, so pin 2 stays unique.
	 */
	for (i = 0; i < MP_ISA_IRQS; i++) {
		if (i == 2)
			continue;
		memset(&in, 0, sizeof(in));
		in.type = MP_ENTRY_IOINT;
		in.int_type = MP_INT_INT;
		in.src_bus = MP_ISA_BUS;
		in.src_irq = (uint8_t)i;
		in.dst_apic = (uint8_t)ncpus;
		in.dst_pin = (uint8_t)(i == 0 ? PC_IRQ0_IOAPIC_PIN : i);
		/* The SCI: level-triggered, active high, as in the MADT. */
		if (i == PC_ACPI_SCI_IRQ)
			in.flags = BOOT_MPS_ACTIVE_HIGH | BOOT_MPS_LEVEL;
		memcpy(p, &in, sizeof(in));
		p += sizeof(in);
		count++;
	}

	/*
	 * PCI (4.3.4): source IRQ = slot << 2 | pin, to the IOAPIC pin the
	 * swizzle gives; level-triggered, active low, like the _PRT.
	 */
	for (i = 0; i < PC_PCI_SLOTS * 4; i++) {
		memset(&in, 0, sizeof(in));
		in.type = MP_ENTRY_IOINT;
		in.int_type = MP_INT_INT;
		in.flags = BOOT_MPS_ACTIVE_LOW | BOOT_MPS_LEVEL;
		in.src_bus = MP_PCI_BUS;
		in.src_irq = (uint8_t)i;
		in.dst_apic = (uint8_t)ncpus;
		in.dst_pin = (uint8_t)PC_PCI_INTX_GSI(i >> 2, i & 3);
		memcpy(p, &in, sizeof(in));
		p += sizeof(in);
		count++;
	}
	/*
	 * No ExtINT entry on IOAPIC pin 0: the 8259 reaches the CPUs through
	 * LINT0 only (KVM wires nothing to that pin), and Linux warns when
	 * the table claims a connection the hardware does not have.
	 */

	/* Every local APIC: the 8259 on LINT0, NMI on LINT1. */
	memset(&in, 0, sizeof(in));
	in.type = MP_ENTRY_LOCALINT;
	in.int_type = MP_INT_EXTINT;
	in.src_bus = MP_ISA_BUS;
	in.dst_apic = MP_ALL_LAPICS;
	in.dst_pin = 0;
	memcpy(p, &in, sizeof(in));
	p += sizeof(in);
	count++;
	in.int_type = MP_INT_NMI;
	in.dst_pin = 1;
	memcpy(p, &in, sizeof(in));
	p += sizeof(in);
	count++;

	memset(&hdr, 0, sizeof(hdr));
	memcpy(hdr.signature, "PCMP", 4);
	hdr.length = (uint16_t)(p - cfg);
	hdr.spec_rev = MP_SPEC_REV;
	memcpy(hdr.oem_id, "VMMD    ", sizeof(hdr.oem_id));
	memcpy(hdr.product_id, "VMMD VM     ", sizeof(hdr.product_id));
	hdr.entry_count = (uint16_t)count;
	hdr.lapic_addr = PC_LAPIC_ADDR;
	memcpy(cfg, &hdr, sizeof(hdr));
	cfg[offsetof(struct mp_config, checksum)] = boot_checksum(cfg,
	    hdr.length);

	memset(&mpf, 0, sizeof(mpf));
	memcpy(mpf.signature, "_MP_", 4);
	mpf.config_addr = (uint32_t)cfg_addr;
	mpf.length = 1;
	mpf.spec_rev = MP_SPEC_REV;
	memcpy(mem + addr, &mpf, sizeof(mpf));
	mem[addr + offsetof(struct mp_floating, checksum)] =
	    boot_checksum(mem + addr, sizeof(mpf));

	return (int)(sizeof(mpf) + hdr.length);
}
