/*
 * Runtime for vmmd's own guests, the shipped demo guest and the test
 * guests of tests/guests/: freestanding 64-bit code entered
 * through the PVH boot protocol (see entry.S).
 *
 * Everything here runs at CPL0.  On a software KVM backend such code is
 * emulated one instruction at a time, so the helpers keep their paths
 * short and wait for interrupts with HLT instead of polling.
 */
#ifndef RT_H
#define RT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_PRINTF(a, b)	__attribute__((format(__printf__, a, b)))
#define RT_NORETURN	__attribute__((noreturn))
/* Not cleared at boot: for buffers that are written before being read. */
#define RT_NOINIT	__attribute__((section(".bss.noinit")))

/* Interrupt vectors used by the runtime. */
#define VEC_IRQ_BASE	0x20	/* ISA IRQ n arrives on VEC_IRQ_BASE + n */
#define VEC_LAPIC_TIMER	0x40
#define VEC_SPURIOUS	0xff

#define SMP_MAX_CPUS	64

/* --- port and memory-mapped I/O ------------------------------------- */

static inline void
outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void
outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint16_t
inw(uint16_t port)
{
	uint16_t v;

	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint8_t
inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void
outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t
inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t
mmio_read32(uintptr_t addr)
{
	return *(volatile uint32_t *)addr;
}

static inline void
mmio_write32(uintptr_t addr, uint32_t v)
{
	*(volatile uint32_t *)addr = v;
}

/*
 * A pointer to a fixed physical address (memory is identity-mapped).
 * Passing the address through an empty asm hides its constant value from
 * the compiler, which would otherwise treat low addresses as bogus.
 */
static inline void *
phys_ptr(uintptr_t addr)
{
	void *p = (void *)addr;

	__asm__("" : "+r"(p));
	return p;
}

static inline void
cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static inline void
cli(void)
{
	__asm__ volatile("cli" ::: "memory");
}

static inline void
sti(void)
{
	__asm__ volatile("sti" ::: "memory");
}

/* Enable interrupts and wait for one (STI's shadow makes this atomic). */
static inline void
idle(void)
{
	__asm__ volatile("sti; hlt" ::: "memory");
}

static inline uint64_t
irq_save(void)
{
	uint64_t flags;

	__asm__ volatile("pushfq; popq %0; cli" : "=r"(flags) : : "memory");
	return flags;
}

static inline void
irq_restore(uint64_t flags)
{
	__asm__ volatile("pushq %0; popfq" : : "r"(flags) : "memory", "cc");
}

static inline uint64_t
rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

RT_NORETURN void halt_forever(void);

/* --- lib.c: the few C library functions the compiler may call ------- */

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);

/* --- serial.c: polled 16550 on COM1 (0x3f8), IRQ 4 ------------------- */

void serial_init(void);
void serial_putc(char c);
bool serial_rx_ready(void);
int serial_getc(void);		/* -1 when nothing is waiting */
int serial_rx_irq_enable(void (*fn)(uint8_t c));

/* --- cons.c: formatted output, serialised between CPUs --------------- */

int cons_printf(const char *fmt, ...) RT_PRINTF(1, 2);
int cons_vprintf(const char *fmt, va_list ap);
void cons_write(const char *s, size_t n);
int cons_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int cons_snprintf(char *buf, size_t size, const char *fmt, ...)
    RT_PRINTF(3, 4);
void cons_break_lock(void);

#define printf cons_printf

/* --- trap.c: IDT, exception reports, interrupt handlers -------------- */

struct trap_frame {
	uint64_t r11, r10, r9, r8, rdi, rsi, rdx, rcx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

typedef void (*trap_handler_fn)(struct trap_frame *f);

void trap_init(void);
void trap_load(void);
void trap_set_handler(uint8_t vector, trap_handler_fn fn);
/* What acknowledges an interrupt without a handler (lapic_enable sets it). */
void trap_set_ack(void (*ack)(void));
RT_NORETURN void trap_triple_fault(void);

/* --- pic.c: the 8259 pair -------------------------------------------- */

void pic_init(void);		/* remap to 0x20/0x28, all masked */
void pic_unmask(unsigned irq);
void pic_mask(unsigned irq);
void pic_eoi(unsigned irq);

/* --- apic.c: local APIC (0xfee00000) and timer, IOAPIC (0xfec00000) -- */

#define ICR_INIT	0x00004500u
#define ICR_STARTUP	0x00004600u

void lapic_enable(void);
uint32_t lapic_id(void);
void lapic_eoi(void);
void lapic_set_lint0_extint(void);
int lapic_send_ipi(uint32_t apic_id, uint32_t icr);
int lapic_timer_calibrate(unsigned ms);
uint32_t lapic_timer_ticks_per_ms(void);
void lapic_timer_oneshot_us(uint64_t us);
void lapic_timer_periodic_ms(uint32_t ms, void (*fn)(void));
void lapic_timer_stop(void);
uint64_t lapic_timer_count(void);	/* its interrupts so far */
/* Interrupts on until done(arg) or us pass: true if done(arg) held. */
bool wait_us(bool (*done)(void *arg), void *arg, uint64_t us);
/* The same without halting: polls, the vCPU busy (apic.c says when). */
bool wait_us_polling(bool (*done)(void *arg), void *arg, uint64_t us);
void sleep_us(uint64_t us);
void sleep_ms(uint64_t ms);

void ioapic_route(unsigned pin, uint8_t vector, uint32_t apic_id);
/*
 * Level-triggered: the line is held until the source is served, and an
 * EOI while it is still asserted delivers it again.  Active low for PCI
 * INTx, active high for the ACPI SCI.
 */
void ioapic_route_level(unsigned pin, uint8_t vector, uint32_t apic_id);
void ioapic_route_level_high(unsigned pin, uint8_t vector, uint32_t apic_id);
void ioapic_mask(unsigned pin);

/* --- irq.c: ISA interrupts through the IOAPIC or the PIC ------------- */

enum irq_mode { IRQ_MODE_IOAPIC, IRQ_MODE_PIC };

void irq_set_mode(enum irq_mode mode);
const char *irq_mode_name(void);
void irq_enable(unsigned irq, void (*fn)(void));
void irq_disable(unsigned irq);

/* --- cmos.c: MC146818 real-time clock -------------------------------- */

struct rtc_time {
	int year, mon, day;	/* 1-based month and day */
	int hour, min, sec;
};

uint8_t cmos_read(uint8_t reg);
void cmos_write(uint8_t reg, uint8_t v);
int cmos_read_time(struct rtc_time *t);
uint8_t cmos_reg_b(void);
bool rtc_time_valid(const struct rtc_time *t);
uint64_t rtc_time_to_epoch(const struct rtc_time *t);
void rtc_time_from_epoch(struct rtc_time *t, uint64_t epoch);
void rtc_time_add_second(struct rtc_time *t);

/* --- i8042.c: PS/2 controller ---------------------------------------- */

struct cad_state {
	bool ctrl, alt;
};

int i8042_kbd_irq_enable(void (*fn)(uint8_t scancode));
void i8042_reset(void);
bool cad_feed(struct cad_state *s, uint8_t scancode);

/* --- fb.c, font.c: the linear framebuffer ----------------------------- */

/*
 * Where the platform puts a display's framebuffer (x8r8g8b8, stride =
 * width * 4).  Must match PC_FRAMEBUFFER_ADDR in daemon/boot/pc-layout.h;
 * guests do not include the daemon's headers.
 */
#define FB_ADDR		0xd0000000ul

/* 0x00rrggbb */
#define FB_RGB(r, g, b)	((uint32_t)(r) << 16 | (uint32_t)(g) << 8 | (b))

struct fb {
	uint32_t *base;		/* NULL: no framebuffer */
	uint64_t phys;
	uint64_t size;		/* bytes of the reserved range */
	uint32_t width, height;
	uint32_t pitch;		/* pixels a line */
};

/*
 * Find the framebuffer: a reserved memory map range at FB_ADDR, of the
 * size "fb=WxH" (default 1024x768) needs, or "fbaddr=0xADDR" (QEMU's
 * std VGA, mode set through its Bochs VBE registers).  NULL when found;
 * otherwise why not, and fb->base stays NULL.
 */
const char *fb_find(struct fb *fb);
/* Draw, clipped to the screen; nothing at all without a framebuffer. */
void fb_fill(const struct fb *fb, uint32_t x, uint32_t y, uint32_t w,
    uint32_t h, uint32_t rgb);
void fb_glyph(const struct fb *fb, uint32_t x, uint32_t y, char c,
    unsigned scale, uint32_t fg, uint32_t bg);
void fb_text(const struct fb *fb, uint32_t x, uint32_t y, const char *s,
    unsigned scale, uint32_t fg, uint32_t bg);

/* A character cell: 5x7 dots and a blank column and row. */
#define FONT_CELL_W	6
#define FONT_CELL_H	8
const uint8_t *font5x7(char c);	/* 7 rows, bit 4 leftmost */

/* --- start.c: boot information --------------------------------------- */

#define HVM_START_MAGIC	0x336ec578u

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

extern uint32_t rt_start_info_pa;	/* EBX at entry */
extern uint64_t rt_entry_tsc;		/* TSC at the first instruction */
extern uint64_t rt_first_byte_tsc;	/* TSC at the first serial byte */

/* bootinfo.c: keep the start info at pa (rt_start, first thing). */
void bootinfo_keep(uint32_t pa);
const struct hvm_start_info *boot_start_info(void);
const char *cmdline(void);
bool cmdline_get(const char *key, char *buf, size_t len);
unsigned long cmdline_get_ulong(const char *key, unsigned long dflt);

void guest_main(void);		/* each guest provides this */

/* --- smp.c: MP table and AP start-up --------------------------------- */

typedef void (*smp_ap_fn)(unsigned cpu, uint32_t apic_id);

int mptable_cpus(uint32_t *ids, int max, uint32_t *table_pa);
int smp_start_aps(const uint32_t *ids, int n, smp_ap_fn fn,
    unsigned timeout_ms);


/* --- PCI and virtio (pci.c) ------------------------------------------ */

uint32_t pci_read32(unsigned slot, unsigned reg);
void pci_write32(unsigned slot, unsigned reg, uint32_t v);
/* The first slot from `from` on with that function 0, or -1. */
int pci_find(uint16_t vendor, uint16_t device, unsigned from);

/* A virtio 1.x PCI function with its BAR 0 placed by vio_find(). */
struct vio {
	unsigned slot;
	uint32_t bar_size;
	unsigned gsi_line;	/* what the interrupt line register said */
	uintptr_t common, isr, device, notify;
	uint32_t notify_mult;
	unsigned msix_cap;	/* 0: none */
	uintptr_t msix_table, msix_pba;	/* in BAR 0 */
};

#define VQ_SIZE		16

struct vq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;		/* 1 NEXT, 2 WRITE, 4 INDIRECT */
	uint16_t next;
};

/* One split queue of VQ_SIZE entries, laid out as the rings need. */
struct vq {
	struct vq_desc desc[VQ_SIZE];
	uint16_t avail_flags;
	uint16_t avail_idx_shared;
	uint16_t avail_ring[VQ_SIZE];
	uint16_t used_event;
	uint8_t pad[4096 - 16 * VQ_SIZE - 6 - 2 * VQ_SIZE];
	uint16_t used_flags;
	uint16_t used_idx;
	struct { uint32_t id, len; } used_ring[VQ_SIZE];
	uint16_t avail_event;
	/* The driver's own. */
	uint16_t avail_idx;
	uint16_t q;
	uintptr_t notify;
} __attribute__((aligned(4096)));

/*
 * Find device type (4 = entropy, 2 = block) in a slot from `from` on and
 * place its BAR 0 at bar_addr: 0 or -1.
 */
int vio_find(struct vio *v, uint16_t type, uint32_t bar_addr, unsigned from);
/* Reset and negotiate VERSION_1 alone: 0, or -1 if refused. */
int vio_start(struct vio *v);
int vio_queue(struct vio *v, unsigned q, struct vq *vq);
void vio_driver_ok(struct vio *v);
uint8_t vio_status(const struct vio *v);
uint8_t vio_isr(const struct vio *v);	/* reading acknowledges */
/*
 * MSI-X (PCI 3.0 6.8.2): the enable and function mask bits; table entry
 * `entry` sends vector to the LAPIC apic_id (fixed, edge), masked or
 * not; the pending bits; which vector queue q (0xffff: none) uses.
 */
void vio_msix_control(struct vio *v, int enable, int function_mask);
void vio_msix_entry(struct vio *v, unsigned entry, uint32_t apic_id,
    uint8_t vector);
void vio_msix_mask(struct vio *v, unsigned entry, int masked);
uint32_t vio_msix_pba(const struct vio *v);
void vio_queue_vector(struct vio *v, unsigned q, uint16_t vector);
/* Offer the chain at head and kick. */
void vq_submit(struct vq *vq, uint16_t head);
uint16_t vq_used(const struct vq *vq);

#endif /* RT_H */
