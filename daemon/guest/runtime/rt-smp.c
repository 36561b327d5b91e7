/*
 * Multiprocessor start-up: find the processors in the MP table (Intel MP
 * specification 1.4, chapter 4) and wake them with INIT-SIPI-SIPI (ibid.,
 * appendix B.4).  An AP starts in real mode at the trampoline from
 * entry.S, copied to TRAMPOLINE_PA, and ends up in smp_ap_main() on its
 * own stack.
 */
#include "rt.h"

#define TRAMPOLINE_PA	0x8000u	/* SIPI vector 0x08 */

#define BDA_EBDA_SEG	0x40e
#define BDA_BASE_KB	0x413

struct mp_floating {
	char sig[4];		/* "_MP_" */
	uint32_t config_pa;
	uint8_t length;		/* in 16-byte units */
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t features[5];
};

struct mp_config {
	char sig[4];		/* "PCMP" */
	uint16_t length;
	uint8_t spec_rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oem_table_pa;
	uint16_t oem_table_size;
	uint16_t entries;
	uint32_t lapic_pa;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
};

struct mp_processor {
	uint8_t type;		/* 0 */
	uint8_t apic_id;
	uint8_t apic_version;
	uint8_t flags;
	uint32_t signature;
	uint32_t features;
	uint32_t reserved[2];
};

#define MP_ENTRY_PROCESSOR	0
#define MP_CPU_ENABLED		0x01

extern const char smp_trampoline[], smp_trampoline_end[];

static smp_ap_fn smp_fn;
static uint8_t smp_cpu_of_apic[256] RT_NOINIT;
static volatile uint32_t smp_cpus_up;

static uint8_t
checksum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (n-- > 0)
		sum += *b++;
	return sum;
}

static const struct mp_floating *
mp_scan(uintptr_t start, size_t len)
{
	const struct mp_floating *mpf;
	uintptr_t pa;

	/* Compare the signature as one word: this loop may run 4096 times. */
	for (pa = start; pa + 16 <= start + len; pa += 16) {
		if (*(const volatile uint32_t *)phys_ptr(pa) != 0x5f504d5f)
			continue;
		mpf = phys_ptr(pa);
		if (mpf->length == 1 && checksum(mpf, 16) == 0)
			return mpf;
	}
	return NULL;
}

static const struct mp_floating *
mp_find(void)
{
	const struct mp_floating *mpf;
	uintptr_t ebda, top;

	ebda = (uintptr_t)*(const uint16_t *)phys_ptr(BDA_EBDA_SEG) << 4;
	if (ebda >= 0x80000 && ebda < 0xa0000 &&
	    (mpf = mp_scan(ebda, 1024)) != NULL)
		return mpf;
	top = (uintptr_t)*(const uint16_t *)phys_ptr(BDA_BASE_KB) * 1024;
	if (top < 0x80000 || top > 0xa0000)
		top = 0xa0000;
	if ((mpf = mp_scan(top - 1024, 1024)) != NULL)
		return mpf;
	if (top != 0xa0000 && (mpf = mp_scan(0x9fc00, 1024)) != NULL)
		return mpf;
	return mp_scan(0xf0000, 0x10000);
}

/*
 * Fill ids with the APIC IDs of the enabled processors in the MP table.
 * Returns their number, or -1 without a (valid) table.
 */
int
mptable_cpus(uint32_t *ids, int max, uint32_t *table_pa)
{
	const struct mp_floating *mpf;
	const struct mp_config *cfg;
	const struct mp_processor *cpu;
	const uint8_t *e, *end;
	int n = 0, i;

	if ((mpf = mp_find()) == NULL || mpf->config_pa == 0)
		return -1;
	cfg = phys_ptr(mpf->config_pa);
	if (memcmp(cfg->sig, "PCMP", 4) != 0 ||
	    checksum(cfg, cfg->length) != 0)
		return -1;
	if (table_pa != NULL)
		*table_pa = (uint32_t)(uintptr_t)mpf;
	e = (const uint8_t *)(cfg + 1);
	end = (const uint8_t *)cfg + cfg->length;
	for (i = 0; i < cfg->entries && e < end; i++) {
		if (*e != MP_ENTRY_PROCESSOR) {
			e += 8;		/* every other base entry */
			continue;
		}
		cpu = (const struct mp_processor *)e;
		if ((cpu->flags & MP_CPU_ENABLED) && n < max)
			ids[n++] = cpu->apic_id;
		e += sizeof(*cpu);
	}
	return n;
}

void smp_ap_main(void);

void
smp_ap_main(void)
{
	uint32_t id;

	trap_load();
	id = lapic_id();
	smp_fn(smp_cpu_of_apic[id & 0xff], id);
	__atomic_add_fetch(&smp_cpus_up, 1, __ATOMIC_RELEASE);
}

/*
 * Start the processors in ids (the caller's own APIC ID is skipped) and
 * wait up to timeout_ms for them to run fn.  The BSP is CPU 0, the others
 * are numbered in the order of ids.  Returns the number of CPUs running,
 * the BSP included.
 */
int
smp_start_aps(const uint32_t *ids, int n, smp_ap_fn fn, unsigned timeout_ms)
{
	uint32_t self = lapic_id(), want = 1;
	unsigned waited;
	int i, pass;

	memcpy(phys_ptr(TRAMPOLINE_PA), smp_trampoline,
	    smp_trampoline_end - smp_trampoline);
	smp_fn = fn;
	memset(smp_cpu_of_apic, 0xff, sizeof(smp_cpu_of_apic));
	smp_cpu_of_apic[self & 0xff] = 0;
	for (i = 0; i < n && want < SMP_MAX_CPUS; i++)
		if (ids[i] != self && ids[i] < 0xff)
			smp_cpu_of_apic[ids[i]] = want++;
	smp_cpus_up = 1;

	for (i = 0; i < n; i++)
		if (ids[i] != self && smp_cpu_of_apic[ids[i] & 0xff] != 0xff)
			lapic_send_ipi(ids[i], ICR_INIT);
	sleep_ms(10);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++)
			if (ids[i] != self &&
			    smp_cpu_of_apic[ids[i] & 0xff] != 0xff)
				lapic_send_ipi(ids[i],
				    ICR_STARTUP | TRAMPOLINE_PA >> 12);
		sleep_us(200);
	}
	for (waited = 0; waited < timeout_ms; waited++) {
		if (__atomic_load_n(&smp_cpus_up, __ATOMIC_ACQUIRE) >= want)
			break;
		sleep_ms(1);
	}
	return (int)__atomic_load_n(&smp_cpus_up, __ATOMIC_ACQUIRE);
}
