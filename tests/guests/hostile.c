/*
 * hostile: a guest that does what no driver would.  Sweep after sweep,
 * forever, every target below is written with random values and read
 * back, with interrupts off: the I/O ports (4096 a sweep, byte, word
 * and long accesses at random: sixteen sweeps cover 0-0xffff), the
 * framebuffer (where the memory map has one), the local APIC and the
 * IOAPIC (KVM's, but the exits pass through the VMM's run loop), and
 * MMIO nobody maps (the PCI hole, the top of the 4 GiB space): whatever
 * the VMM does with each access, it must neither crash nor stall.  A
 * sweep is small so that progress shows even where every exit is
 * emulated (a few thousand a second in the nested test host).
 *
 * A few writes are left out, and counted, because they would only end
 * the run early in ways the board allows: the i8042's reset pulse
 * (commands 0xf0-0xff to port 0x64) and its output port write (0xd1),
 * ACPI's SLP_EN (bit 13 of the PM1a control block at 0x604: with S5's
 * sleep type a random write powers the guest off in its first sweep),
 * and, on the local APIC, the interrupt command register (an INIT to
 * itself parks the CPU) and unmasked LVT entries (an NMI cannot be
 * masked).  A VM that stops cleanly on a write is an allowed outcome
 * (a power-off register, say); the test accepts it with a reason.
 *
 * Parameters: seed=N (default: from the TSC; printed), targets=LIST
 * (letters, default all: p ports, f framebuffer, a local APIC, i IOAPIC,
 * u unmapped MMIO), fb=WxH as fb.c reads it.
 *
 * Output: "hostile: seed N targets LIST", "hostile: framebuffer ..." or
 * "hostile: no framebuffer (why)", then per sweep "hostile: sweep N:
 * ports 0xFROM-0xTO, W writes, R reads, S skipped, framebuffer
 * ok|none|BAD at 0xADDR"; the
 * framebuffer is RAM, so what was written must read back.  COM1 is set
 * up again before each line (the sweep writes its registers too).
 *
 * Adding a target (virtio queues, once the board has them): one
 * function and one letter in hostile_targets[] below; see README.md.
 */
#include "runtime/rt.h"

#define LAPIC_BASE	0xfee00000ul
#define IOAPIC_BASE	0xfec00000ul
#define PCI_HOLE	0xc0000000ul
#define PORTS_PER_SWEEP	4096
#define TOP_MMIO	0xfff00000ul	/* 512 KiB of it, below KVM's TSS pages */

struct hostile {
	uint64_t rng;
	uint64_t writes, reads, skipped;
	uint32_t port;			/* the next sweep's first port */
	struct fb fb;
	const char *fb_bad;		/* NULL while it reads back */
	uint64_t fb_bad_addr;
};

static uint64_t
hostile_rand(struct hostile *h)
{
	/* xorshift64*: small, and enough to reach every value. */
	h->rng ^= h->rng >> 12;
	h->rng ^= h->rng << 25;
	h->rng ^= h->rng >> 27;
	return h->rng * 0x2545f4914f6cdd1dull;
}

/* The byte of the PM1a control block whose bit 5 is SLP_EN. */
#define PM1A_CNT_HIGH	0x605

/*
 * Writes that would only end the run (see above).  The write's width is
 * chosen later: any write of up to 4 bytes from port that would set
 * SLP_EN counts.
 */
static bool
hostile_port_skip(uint16_t port, uint32_t v)
{
	if (port == 0x64 && ((v & 0xff) >= 0xf0 || (v & 0xff) == 0xd1))
		return true;
	return port <= PM1A_CNT_HIGH && PM1A_CNT_HIGH - port < 4 &&
	    (v >> (8 * (PM1A_CNT_HIGH - port)) & 0x20) != 0;
}

static void
hostile_ports(struct hostile *h)
{
	uint32_t port, end, v;
	uint64_t r;

	end = h->port + PORTS_PER_SWEEP;
	for (port = h->port; port < end; port++) {
		r = hostile_rand(h);
		v = (uint32_t)(r >> 32);
		if (hostile_port_skip((uint16_t)port, v)) {
			h->skipped++;
		} else {
			switch (r & 3) {
			case 0:
			case 1:
				outb((uint16_t)port, (uint8_t)v);
				break;
			case 2:
				outw((uint16_t)port, (uint16_t)v);
				break;
			default:
				outl((uint16_t)port, v);
				break;
			}
			h->writes++;
		}
		switch ((r >> 2) & 3) {
		case 0:
		case 1:
			(void)inb((uint16_t)port);
			break;
		case 2:
			(void)inw((uint16_t)port);
			break;
		default:
			(void)inl((uint16_t)port);
			break;
		}
		h->reads++;
	}
	h->port = end & 0xffff;
}

/* Random words at random places; each must read back (it is RAM). */
static void
hostile_fb(struct hostile *h)
{
	uint64_t words, i, at;
	uint32_t v;

	if (h->fb.base == NULL)
		return;
	words = h->fb.size / 4;
	for (i = 0; i < 4096; i++) {
		at = hostile_rand(h) % words;
		v = (uint32_t)hostile_rand(h);
		mmio_write32((uintptr_t)&h->fb.base[at], v);
		h->writes++;
		h->reads++;
		if (mmio_read32((uintptr_t)&h->fb.base[at]) != v &&
		    h->fb_bad == NULL) {
			h->fb_bad = "BAD";
			h->fb_bad_addr = h->fb.phys + at * 4;
		}
	}
}

/*
 * Every local APIC register read; written with random values except
 * the ICR (0x300, 0x310), and the LVT entries (0x320-0x370) only masked.
 */
static void
hostile_lapic(struct hostile *h)
{
	uint32_t reg, v;

	for (reg = 0; reg < 0x400; reg += 0x10) {
		(void)mmio_read32(LAPIC_BASE + reg);
		h->reads++;
		if (reg == 0x300 || reg == 0x310) {
			h->skipped++;
			continue;
		}
		v = (uint32_t)hostile_rand(h);
		if (reg >= 0x320 && reg <= 0x370)
			v |= 1u << 16;		/* masked */
		mmio_write32(LAPIC_BASE + reg, v);
		h->writes++;
	}
	lapic_enable();			/* back to what the runtime set */
}

/* Random registers through IOREGSEL/IOWIN, redirection entries masked. */
static void
hostile_ioapic(struct hostile *h)
{
	unsigned int i;
	uint32_t sel, v;

	for (i = 0; i < 32; i++) {
		sel = (uint32_t)hostile_rand(h) & 0xff;
		v = (uint32_t)hostile_rand(h);
		if (sel >= 0x10 && (sel & 1) == 0)
			v |= 1u << 16;		/* masked */
		mmio_write32(IOAPIC_BASE, sel);
		mmio_write32(IOAPIC_BASE + 0x10, v);
		(void)mmio_read32(IOAPIC_BASE + 0x10);
		/* Offsets the IOAPIC does not decode, too. */
		mmio_write32(IOAPIC_BASE + ((hostile_rand(h) & 0x3ff) & ~3ul),
		    v);
		(void)mmio_read32(IOAPIC_BASE + ((hostile_rand(h) & 0x3ff) &
		    ~3ul));
		h->writes += 3;
		h->reads += 2;
	}
}

/* MMIO where nothing is mapped: every access is the VMM's to refuse. */
static void
hostile_unmapped(struct hostile *h)
{
	static const uintptr_t bases[] = { PCI_HOLE, TOP_MMIO };
	unsigned int i, b;
	uintptr_t a;

	for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (i = 0; i < 128; i++) {
			a = bases[b] + (hostile_rand(h) & 0x7fffc);
			mmio_write32(a, (uint32_t)hostile_rand(h));
			(void)mmio_read32(a);
			h->writes++;
			h->reads++;
		}
	}
}

static const struct {
	char letter;
	void (*fn)(struct hostile *h);
} hostile_targets[] = {
	{ 'p', hostile_ports },
	{ 'f', hostile_fb },
	{ 'a', hostile_lapic },
	{ 'i', hostile_ioapic },
	{ 'u', hostile_unmapped },
};

static bool
hostile_has(const char *targets, char c)
{
	for (; *targets != '\0'; targets++)
		if (*targets == c)
			return true;
	return false;
}

void
guest_main(void)
{
	struct hostile h = { 0 };
	char targets[16] = "pfaiu";
	const char *why;
	unsigned long sweep;
	unsigned int t, from;

	cli();
	h.rng = cmdline_get_ulong("seed", 0);
	if (h.rng == 0)
		h.rng = rdtsc() | 1;
	cmdline_get("targets", targets, sizeof(targets));
	printf("hostile: seed %lu targets %s\n", (unsigned long)h.rng,
	    targets);
	why = fb_find(&h.fb);
	if (why != NULL)
		printf("hostile: no framebuffer (%s)\n", why);
	else
		printf("hostile: framebuffer %ux%u at 0x%lx\n", h.fb.width,
		    h.fb.height, (unsigned long)h.fb.phys);
	lapic_enable();

	for (sweep = 1; ; sweep++) {
		from = h.port;
		for (t = 0; t < sizeof(hostile_targets) /
		    sizeof(hostile_targets[0]); t++)
			if (hostile_has(targets, hostile_targets[t].letter))
				hostile_targets[t].fn(&h);
		serial_init();
		printf("hostile: sweep %lu: ports 0x%04x-0x%04x, %lu writes, "
		    "%lu reads, %lu skipped, framebuffer %s", sweep, from,
		    (from + PORTS_PER_SWEEP - 1) & 0xffff,
		    (unsigned long)h.writes, (unsigned long)h.reads,
		    (unsigned long)h.skipped, h.fb_bad != NULL ? h.fb_bad :
		    h.fb.base != NULL ? "ok" : "none");
		if (h.fb_bad != NULL)
			printf(" at 0x%lx", (unsigned long)h.fb_bad_addr);
		printf("\n");
	}
}
