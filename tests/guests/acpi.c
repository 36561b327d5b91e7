/*
 * acpi: find the ACPI tables as an operating system does, check them,
 * then take the power button's SCI and power off through \_S5.
 *
 * The RSDP comes from hvm_start_info and must also be where a scan of
 * 0xe0000-0xfffff finds it; every table's checksum is checked on the
 * way (XSDT, FADT, MADT, DSDT), the MADT's enabled processors counted,
 * and \_S5's SLP_TYP read from the DSDT's AML.  Then PWRBTN_EN is set
 * and the SCI routed level-triggered through the IOAPIC.
 *
 * Command line: button=s5 (default) powers off on the button;
 * button=ignore clears the button's status and goes on running (and
 * resets on Ctrl-Alt-Del, as the cad guest does).  pmtimer=N (seconds,
 * default 0: none) first counts the FADT's PM timer across N seconds of
 * the RTC, and fails unless it ran at 3.579545 MHz within 10%.
 *
 * Output:
 *   acpi: rsdp 0xADDR, N tables
 *   acpi: madt N cpus
 *   acpi: fadt sci N pm1a_evt 0xPORT pm1a_cnt 0xPORT sci_en N
 *   acpi: s5 slp_typ N
 *   acpi: pm timer 0xPORT, N bits                      (pmtimer=N)
 *   acpi: pm timer LO..HI ticks in N rtc seconds, ok   (pmtimer=N)
 *   acpi: ready
 *   acpi: sci pm1_sts 0xSSSS
 *   acpi: power button, entering S5 | acpi: power button ignored
 *   acpi: ctrl-alt-del                  (button=ignore)
 *   FAIL: reason
 */
#include "runtime/rt.h"

#define PM1_PWRBTN	0x0100
#define PM1_SCI_EN	0x0001
#define PM1_SLP_EN	0x2000

struct acpi_hdr {
	char sig[4];
	uint32_t len;
	uint8_t rev, sum;
	char oem[6], table[8];
	uint32_t oem_rev, creator, creator_rev;
} __attribute__((packed));

#define PM_TMR_HZ	3579545ULL
#define FADT_TMR_VAL_EXT	(1U << 8)

static uint16_t pm1a_evt, pm1a_cnt, pm_tmr;
static uint32_t pm_tmr_mask;
static uint64_t pm_ticks;	/* the timer's count, unwrapped */
static uint32_t pm_last;
static unsigned int s5_typ;
static bool ignore_button;
static volatile bool s5_due, cad_seen;
static struct cad_state cad;

RT_NORETURN static void
fail(const char *why, uint64_t what)
{
	printf("FAIL: %s (0x%llx)\n", why, (unsigned long long)what);
	halt_forever();
}

static uint8_t
sum(const uint8_t *p, uint32_t len)
{
	uint8_t s = 0;

	while (len-- > 0)
		s += *p++;
	return s;
}

static const uint8_t *
table(uint64_t pa, const char *sig)
{
	const struct acpi_hdr *h = phys_ptr((uintptr_t)pa);

	if (pa == 0 || memcmp(h->sig, sig, 4) != 0)
		fail(sig, pa);
	if (h->len < sizeof(*h) || sum((const uint8_t *)h, h->len) != 0)
		fail("bad checksum", pa);
	return (const uint8_t *)h;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* \_S5's first element: Name(_S5_, Package(n) { typ, ... }). */
static void
find_s5(const uint8_t *dsdt)
{
	uint32_t len = le32(dsdt + 4), i;
	const uint8_t *p;

	for (i = 36; i + 8 < len; i++) {
		if (memcmp(dsdt + i, "_S5_", 4) != 0)
			continue;
		p = dsdt + i + 4;
		if (p[0] != 0x12 || (p[1] & 0xc0) != 0)
			fail("_S5_ is not a small package", i);
		p += 3;		/* PackageOp, PkgLength, NumElements */
		if (p[0] == 0x00 || p[0] == 0x01)
			s5_typ = p[0];
		else if (p[0] == 0x0a)
			s5_typ = p[1];
		else
			fail("_S5_'s SLP_TYP is not a byte", p[0]);
		return;
	}
	fail("no _S5_ in the DSDT", len);
}

static void
walk_tables(void)
{
	const struct hvm_start_info *si = boot_start_info();
	const uint8_t *rsdp = NULL, *xsdt, *t, *fadt = NULL, *madt = NULL;
	uint32_t n, i, off, cpus = 0;
	uintptr_t a;

	for (a = 0xe0000; a < 0x100000; a += 16)
		if (memcmp(phys_ptr(a), "RSD PTR ", 8) == 0) {
			rsdp = phys_ptr(a);
			break;
		}
	if (rsdp == NULL)
		fail("no RSDP in 0xe0000-0xfffff", 0);
	if (si->rsdp_paddr != a)
		fail("hvm_start_info's rsdp_paddr is not the RSDP",
		    si->rsdp_paddr);
	if (sum(rsdp, 20) != 0 || rsdp[15] < 2 || sum(rsdp, 36) != 0)
		fail("RSDP checksum or revision", a);
	xsdt = table(le64(rsdp + 24), "XSDT");
	n = (le32(xsdt + 4) - 36) / 8;
	printf("acpi: rsdp 0x%lx, %u tables\n", (unsigned long)a, n);
	for (i = 0; i < n; i++) {
		t = phys_ptr((uintptr_t)le64(xsdt + 36 + 8 * i));
		if (memcmp(t, "FACP", 4) == 0)
			fadt = table((uintptr_t)t, "FACP");
		else if (memcmp(t, "APIC", 4) == 0)
			madt = table((uintptr_t)t, "APIC");
		else
			table((uintptr_t)t, (const char *)t);
	}
	if (fadt == NULL || madt == NULL)
		fail("no FADT or no MADT", n);

	for (off = 44; off + 2 <= le32(madt + 4) && madt[off + 1] >= 2;
	    off += madt[off + 1])
		if (madt[off] == 0 && (le32(madt + off + 4) & 1) != 0)
			cpus++;
	printf("acpi: madt %u cpus\n", cpus);

	pm1a_evt = (uint16_t)le32(fadt + 56);
	pm1a_cnt = (uint16_t)le32(fadt + 64);
	printf("acpi: fadt sci %u pm1a_evt 0x%x pm1a_cnt 0x%x sci_en %u\n",
	    fadt[46] | fadt[47] << 8, pm1a_evt, pm1a_cnt,
	    inw(pm1a_cnt) & PM1_SCI_EN);
	if ((fadt[46] | fadt[47] << 8) != 9 || pm1a_evt == 0 ||
	    pm1a_cnt == 0)
		fail("FADT: SCI or PM1a blocks", fadt[46]);
	find_s5(table(le64(fadt + 140), "DSDT"));
	printf("acpi: s5 slp_typ %u\n", s5_typ);
	pm_tmr = fadt[91] == 4 ? (uint16_t)le32(fadt + 76) : 0;
	pm_tmr_mask = (le32(fadt + 112) & FADT_TMR_VAL_EXT) != 0 ?
	    0xffffffffU : 0xffffffU;
}

/*
 * The PM timer's count so far, unwrapped: read often enough (far more
 * often than every 4.7 s) that it never wraps twice between two reads.
 */
static uint64_t
pm_now(void)
{
	uint32_t v = inl(pm_tmr);

	if ((v & ~pm_tmr_mask) != 0)
		fail("PM timer: bits above its width set", v);
	pm_ticks += (v - pm_last) & pm_tmr_mask;
	pm_last = v;
	return pm_ticks;
}

/*
 * The PM timer against the RTC over secs seconds.  Each poll reads the
 * timer, the RTC's seconds, the timer again: a seconds edge seen lies
 * between the timer's first read of the poll before and its second read
 * of this one.  So the ticks between two edges lie in [lo, hi], however
 * long the vCPU was kept off the CPU meanwhile (that widens the bracket,
 * never moves the truth out of it); a bracket wider than a tenth of
 * the interval is measured again, up to five times.
 */
static void
check_pm_timer(unsigned int secs)
{
	uint64_t want = secs * PM_TMR_HZ, a, b, prev_a, e1lo = 0, e1hi = 0;
	uint64_t lo = 0, hi = 0, start;
	unsigned int tries, edges;
	uint8_t sec, s;

	if (pm_tmr == 0)
		fail("no PM timer in the FADT", 0);
	printf("acpi: pm timer 0x%x, %u bits\n", pm_tmr,
	    pm_tmr_mask == 0xffffffffU ? 32 : 24);
	pm_last = inl(pm_tmr) & pm_tmr_mask;
	for (tries = 0; tries < 5; tries++) {
		edges = 0;
		start = prev_a = pm_now();
		sec = cmos_read(0);
		while (edges <= secs) {
			a = pm_now();
			s = cmos_read(0);
			b = pm_now();
			if (s != sec) {
				if (edges == 0) {
					e1lo = prev_a;
					e1hi = b;
				} else if (edges == secs) {
					lo = prev_a > e1hi ? prev_a - e1hi : 0;
					hi = b - e1lo;
				}
				edges++;
				sec = s;
			}
			prev_a = a;
			if (pm_ticks - start > 2 * want + 4 * PM_TMR_HZ)
				fail("PM timer: the RTC's seconds stand still",
				    pm_ticks - start);
		}
		if (hi - lo <= want / 10)
			break;
		printf("acpi: pm timer %llu..%llu ticks: too wide, again\n",
		    (unsigned long long)lo, (unsigned long long)hi);
	}
	printf("acpi: pm timer %llu..%llu ticks in %u rtc seconds",
	    (unsigned long long)lo, (unsigned long long)hi, secs);
	if (hi < want - want / 10 || lo > want + want / 10) {
		printf("\n");
		fail("PM timer: not 3579545 ticks a second", lo);
	}
	printf(", ok\n");
}

/* The SCI: level-triggered, so it must be served before the EOI. */
static void
sci(void)
{
	uint16_t sts = inw(pm1a_evt);

	printf("acpi: sci pm1_sts 0x%04x\n", sts);
	if ((sts & PM1_PWRBTN) == 0)
		return;
	outw(pm1a_evt, PM1_PWRBTN);
	if (ignore_button)
		printf("acpi: power button ignored\n");
	else
		s5_due = true;
}

static void
key(uint8_t sc)
{
	if (cad_feed(&cad, sc))
		cad_seen = true;
}

void
guest_main(void)
{
	char mode[16];

	if (cmdline_get("button", mode, sizeof(mode)))
		ignore_button = strcmp(mode, "ignore") == 0;
	walk_tables();
	if (cmdline_get_ulong("pmtimer", 0) > 0)
		check_pm_timer((unsigned int)cmdline_get_ulong("pmtimer", 0));
	if (ignore_button)
		i8042_kbd_irq_enable(key);
	irq_enable(9, sci);
	ioapic_route_level_high(9, VEC_IRQ_BASE + 9, lapic_id());
	outw(pm1a_evt + 2, PM1_PWRBTN);
	if (inw(pm1a_evt + 2) != PM1_PWRBTN)
		fail("PWRBTN_EN does not stick", inw(pm1a_evt + 2));
	printf("acpi: ready\n");
	for (;;) {
		cli();
		if (s5_due || cad_seen)
			break;
		idle();
	}
	sti();
	if (cad_seen) {
		printf("acpi: ctrl-alt-del\n");
		i8042_reset();
	} else {
		printf("acpi: power button, entering S5\n");
		outw(pm1a_cnt, (uint16_t)(s5_typ << 10 | PM1_SLP_EN));
	}
	sleep_ms(1000);
	printf("FAIL: still running 1 s after asking to stop\n");
}
