/*
 * MP table (Intel MultiProcessor Specification 1.4, chapter 4) and the
 * e820 memory map.  The table is parsed here from raw bytes as an
 * operating system would: floating pointer, header, then entries by type.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "tap.h"
#include "unit-util.h"

#define MEM_SIZE	(2 * 1024 * 1024)
#define FILL		0x5a

static uint8_t
sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len-- > 0)
		s += *p++;
	return s;
}

static int
untouched(const uint8_t *mem, size_t from, size_t to)
{
	for (; from < to; from++)
		if (mem[from] != FILL)
			return 0;
	return 1;
}

static void
check_table(unsigned int ncpus)
{
	uint8_t *mem = malloc(MEM_SIZE), *mpf, *cfg, *e, *end;
	unsigned int i, ncpu = 0, nbus = 0, nioapic = 0, nioint = 0;
	unsigned int nlocal = 0, nunknown = 0, bsp = 0, cpu_ok = 1;
	unsigned int int_ok = 1, extint_on_ioapic = 0, lint0 = 0, lint1 = 0;
	unsigned int ioapic_ok = 0, bus_ok = 0, npci = 0, pci_ok = 1;
	uint64_t pci_seen[2] = { 0, 0 };
	uint32_t cfg_addr, pins = 0, irqs = 0;
	uint16_t len;
	int r;

	if (mem == NULL)
		tap_bail("out of memory");
	memset(mem, FILL, MEM_SIZE);
	r = boot_mptable_write(mem, MEM_SIZE, 0x9fc00, ncpus);
	tap_ok(r > 0, "%u CPUs: written (%d bytes)", ncpus, r);
	if (r <= 0)
		goto out;

	mpf = mem + 0x9fc00;
	tap_ok(memcmp(mpf, "_MP_", 4) == 0 && mpf[8] == 1 && mpf[9] == 4 &&
	    sum(mpf, 16) == 0 && mpf[11] == 0 && mpf[12] == 0,
	    "%u CPUs: floating pointer: signature, length 1, rev 1.4, "
	    "checksum, config table present", ncpus);
	cfg_addr = get32(mpf + 4);
	cfg = mem + cfg_addr;
	len = get16(cfg + 4);
	tap_ok(cfg_addr == 0xf0000 && cfg_addr + len <= 0x100000,
	    "%u CPUs: config table at 0xf0000", ncpus);
	tap_ok(memcmp(cfg, "PCMP", 4) == 0 && cfg[6] == 4 &&
	    sum(cfg, len) == 0,
	    "%u CPUs: config header: signature, rev 1.4, checksum", ncpus);
	TAP_EQ(r, 16 + len, "%u CPUs: returned size", ncpus);
	TAP_EQ(get32(cfg + 36), 0xfee00000U, "%u CPUs: local APIC address",
	    ncpus);
	tap_ok(get16(cfg + 40) == 0 && cfg[42] == 0,
	    "%u CPUs: no extended table", ncpus);
	TAP_EQ(get16(cfg + 34), ncpus + 2 + 1 + 15 + 128 + 2,
	    "%u CPUs: entry count", ncpus);

	e = cfg + 44;
	end = cfg + len;
	for (i = 0; i < get16(cfg + 34) && e < end; i++) {
		switch (e[0]) {
		case 0:
			if (e[1] != ncpu || e[2] != 0x14 ||
			    !(e[3] & 1) || ((e[3] & 2) != 0) != (ncpu == 0))
				cpu_ok = 0;
			if (e[3] & 2)
				bsp++;
			ncpu++;
			e += 20;
			continue;
		case 1:
			if ((e[1] == 0 && memcmp(e + 2, "ISA   ", 6) == 0) ||
			    (e[1] == 1 && memcmp(e + 2, "PCI   ", 6) == 0))
				bus_ok |= 1U << e[1];
			nbus++;
			break;
		case 2:
			ioapic_ok = e[1] == ncpus && e[2] == 0x11 &&
			    (e[3] & 1) && get32(e + 4) == 0xfec00000U;
			nioapic++;
			break;
		case 3:
			/*
			 * PCI bus 1: slot << 2 | pin on the swizzled pin,
			 * level-triggered and active low.
			 */
			if (e[4] == 1) {
				npci++;
				if (e[1] != 0 || get16(e + 2) != 0xf ||
				    e[6] != ncpus || e[5] >= 128 ||
				    e[7] != 16 + (((e[5] >> 2) + (e[5] & 3)) & 3) ||
				    (pci_seen[e[5] >> 6] & 1ULL << (e[5] & 63)))
					pci_ok = 0;
				pci_seen[e[5] >> 6] |= 1ULL << (e[5] & 63);
				break;
			}
			nioint++;
			/*
			 * ISA bus 0: conforming polarity and trigger, but
			 * the SCI (IRQ 9), level-triggered and active high.
			 */
			if (get16(e + 2) != (e[5] == 9 ? 0xd : 0) ||
			    e[4] != 0 || e[6] != ncpus || e[7] >= 24) {
				int_ok = 0;
				break;
			}
			if (pins & 1U << e[7])
				int_ok = 0;	/* two sources on a pin */
			pins |= 1U << e[7];
			if (e[1] == 3) {
				extint_on_ioapic = 1;
				break;
			}
			if (e[1] != 0 || e[5] >= 16)
				int_ok = 0;
			else
				irqs |= 1U << e[5];
			if (e[5] == 0 && e[7] != 2)
				int_ok = 0;
			if (e[5] != 0 && e[7] != e[5])
				int_ok = 0;
			break;
		case 4:
			nlocal++;
			if (e[1] == 3 && e[6] == 0xff && e[7] == 0)
				lint0++;
			if (e[1] == 1 && e[6] == 0xff && e[7] == 1)
				lint1++;
			break;
		default:
			nunknown++;
			e = end;
			continue;
		}
		e += 8;
	}
	tap_ok(e == end && nunknown == 0,
	    "%u CPUs: entries fill the table exactly", ncpus);
	tap_ok(ncpu == ncpus && cpu_ok && bsp == 1,
	    "%u CPUs: processor entries: APIC ID = index, version 0x14, "
	    "enabled, BSP on 0 only", ncpus);
	tap_ok(nbus == 2 && bus_ok == 3, "%u CPUs: ISA bus 0, PCI bus 1",
	    ncpus);
	tap_ok(npci == 128 && pci_ok, "%u CPUs: 4 INTx entries for each of "
	    "the 32 PCI slots, swizzled onto pins 16-19, level, active low",
	    ncpus);
	tap_ok(nioapic == 1 && ioapic_ok,
	    "%u CPUs: IOAPIC id %u, version 0x11, at 0xfec00000", ncpus,
	    ncpus);
	tap_ok(nioint == 15 && int_ok && !extint_on_ioapic && irqs == 0xfffb,
	    "%u CPUs: ISA IRQs 0-15 but 2: IRQ0 on pin 2, others on their "
	    "own pin, the SCI level-triggered; no ExtINT on the IOAPIC",
	    ncpus);
	tap_ok(nlocal == 2 && lint0 == 1 && lint1 == 1,
	    "%u CPUs: ExtINT to LINT0, NMI to LINT1 of every LAPIC", ncpus);
	tap_ok(untouched(mem, 0, 0x9fc00) &&
	    untouched(mem, 0x9fc00 + 16, 0xf0000) &&
	    untouched(mem, 0xf0000 + len, MEM_SIZE),
	    "%u CPUs: nothing written outside the table", ncpus);
out:
	free(mem);
}

static void
test_mptable_errors(void)
{
	uint8_t *mem = calloc(1, MEM_SIZE);

	if (mem == NULL)
		tap_bail("out of memory");
	TAP_EQ(boot_mptable_write(mem, MEM_SIZE, 0x9fc00, 0), -EINVAL,
	    "0 CPUs refused");
	TAP_EQ(boot_mptable_write(mem, MEM_SIZE, 0x9fc00, BOOT_MAX_CPUS + 1),
	    -EINVAL, "%d CPUs refused", BOOT_MAX_CPUS + 1);
	TAP_EQ(boot_mptable_write(mem, MEM_SIZE, 0x9fc08, 1), -EINVAL,
	    "unaligned floating pointer refused");
	TAP_EQ(boot_mptable_write(mem, 0x9fc08, 0x9fc00, 1), -ENOSPC,
	    "no room for the floating pointer");
	TAP_EQ(boot_mptable_write(mem, 0xa0000, 0x9fc00, 1), -ENOSPC,
	    "the table needs 0xf0000 mapped");
	TAP_EQ(boot_mptable_write(mem, 0xf0100, 0x9fc00, 1), -ENOSPC,
	    "and room there");
	tap_ok(boot_mptable_write(mem, 0x100000, 0x9fc00, 254) > 0,
	    "254 CPUs fit below 1 MiB");
	free(mem);
}

static void
test_e820(void)
{
	struct boot_e820 map[BOOT_E820_MAX];
	struct boot_mem m = { .low = NULL, .low_size = 256ULL << 20 };
	unsigned int n, i;
	int ok;

	n = boot_e820_build(&m, map);
	TAP_EQ(n, 4U, "e820 without high memory: 4 entries");
	tap_ok(map[0].addr == 0 && map[0].size == 0x9fc00 &&
	    map[0].type == BOOT_E820_RAM, "e820: base memory RAM");
	tap_ok(map[1].addr == 0x9fc00 && map[1].size == 0x400 &&
	    map[1].type == BOOT_E820_RESERVED, "e820: EBDA reserved");
	tap_ok(map[2].addr == 0xe0000 && map[2].size == 0x20000 &&
	    map[2].type == BOOT_E820_RESERVED, "e820: ACPI tables and BIOS area reserved");
	tap_ok(map[3].addr == 0x100000 && map[3].size == (256ULL << 20) -
	    0x100000 && map[3].type == BOOT_E820_RAM, "e820: RAM from 1 MiB");

	m.low_size = 3ULL << 30;
	m.high_size = 5ULL << 30;
	n = boot_e820_build(&m, map);
	TAP_EQ(n, 5U, "e820 with high memory: 5 entries");
	tap_ok(map[3].addr == 0x100000 && map[3].size == (3ULL << 30) -
	    0x100000, "e820: low RAM up to 3 GiB");
	tap_ok(map[4].addr == 1ULL << 32 && map[4].size == 5ULL << 30 &&
	    map[4].type == BOOT_E820_RAM, "e820: 5 GiB of RAM at 4 GiB");
	ok = 1;
	for (i = 1; i < n; i++)
		if (map[i].addr < map[i - 1].addr + map[i - 1].size)
			ok = 0;
	tap_ok(ok, "e820: sorted, no overlaps");
}

int
main(void)
{
	static const unsigned int counts[] = { 1, 2, 40, 41, 64, 254 };
	unsigned int i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		check_table(counts[i]);
	test_mptable_errors();
	test_e820();
	return tap_done();
}
