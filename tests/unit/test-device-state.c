/*
 * The state sections of the simple devices (uart, rtc, i8042, post,
 * port92, pflash, acpi-pm, fw-cfg, piix3-isa, piix4-pm, bochs-display):
 * each is saved, loaded into a fresh instance on a
 * fresh host and saved again to the same bytes; the loaded device
 * behaves as the one it came from (the UART's FIFO, the RTC's time,
 * alarm and periodic interrupt, the i8042's queued keys); and a section
 * with any bounded field one past its bound, cut short anywhere, or
 * breaking an invariant across fields is refused, the device unchanged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acpi-pm.h"
#include "bochs-display.h"
#include "dev-state.h"
#include "fake-host.h"
#include "fw-cfg.h"
#include "i8042.h"
#include "pflash.h"
#include "pio.h"
#include "piix3-isa.h"
#include "piix4-pm.h"
#include "port92.h"
#include "post.h"
#include "rtc.h"
#include "tap.h"
#include "uart.h"
#include "unit-util.h"

static struct dev_state_buf
save(const struct device_ops *ops, void *dev)
{
	struct dev_state_buf b = { 0 };

	if (ops->save(dev, &b) != 0)
		tap_bail("%s: save failed", ops->name);
	return b;
}

static bool
same(const struct dev_state_buf *a, const struct dev_state_buf *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* Load a's section into b, save b again: the same bytes. */
static void
round_trip(const struct device_ops *ops, void *a, void *b)
{
	struct dev_state_buf s1 = save(ops, a), s2;
	struct dev_state_error e = { "" };
	int rc;

	rc = ops->load(b, s1.data, s1.len, &e);
	tap_ok(rc == 0, "%s: loads into a fresh instance: %d %s", ops->name,
	    rc, e.msg);
	s2 = save(ops, b);
	tap_ok(same(&s1, &s2), "%s: saved again, the same %zu bytes",
	    ops->name, s1.len);
	dev_state_buf_free(&s1);
	dev_state_buf_free(&s2);
}

/* Where field name's value starts in a section, its type and count. */
static uint8_t *
field_value(struct dev_state_buf *b, const char *name, uint8_t *type,
    uint32_t *count)
{
	uint8_t *p = b->data + 4, *end = b->data + b->len;
	size_t es;

	p += 1 + p[0] + 12;
	while (p < end) {
		uint8_t n = p[0];
		bool match = n == strlen(name) && memcmp(p + 1, name, n) == 0;

		p += 1 + n;
		*type = p[0];
		*count = get32(p + 1);
		p += 5;
		if (match)
			return p;
		es = (*type == DEV_STATE_U16 || *type == DEV_STATE_ARRAY_U16) ?
		    2 : (*type == DEV_STATE_U32 ||
		    *type == DEV_STATE_ARRAY_U32) ? 4 :
		    (*type == DEV_STATE_U64 || *type == DEV_STATE_ARRAY_U64) ?
		    8 : 1;
		p += es * *count;
	}
	tap_bail("no field %s", name);
}

static void
put_le(uint8_t *p, uint8_t type, uint64_t v)
{
	switch (type) {
	case DEV_STATE_U16:
	case DEV_STATE_ARRAY_U16:
		put16(p, v);
		break;
	case DEV_STATE_U32:
	case DEV_STATE_ARRAY_U32:
		put32(p, v);
		break;
	case DEV_STATE_U64:
	case DEV_STATE_ARRAY_U64:
		put64(p, v);
		break;
	default:
		*p = v;
	}
}

/*
 * dev's section, with each bounded field one past its bound, and cut
 * at every length: all refused, dev saving the same bytes afterwards.
 */
static void
hostile(const struct device_ops *ops, const struct dev_state_table *t,
    void *dev)
{
	struct dev_state_buf good = save(ops, dev), bad = { 0 }, after;
	struct dev_state_error e;
	unsigned int refused = 0, bounded = 0, cuts_ok = 1;
	uint8_t type;
	uint32_t count;

	for (size_t i = 0; i < t->nfields; i++) {
		const struct dev_state_field *f = &t->fields[i];
		uint64_t over;
		uint8_t *v;

		if (f->type == DEV_STATE_BOOL)
			over = 2;
		else if (f->max != 0)
			over = f->max + 1;
		else
			continue;
		bounded++;
		dev_state_buf_free(&bad);
		if (ops->save(dev, &bad) != 0)
			tap_bail("save");
		v = field_value(&bad, f->name, &type, &count);
		put_le(v, type, over);
		e.msg[0] = '\0';
		if (ops->load(dev, bad.data, bad.len, &e) == -EINVAL)
			refused++;
		else
			tap_diag("%s: %s = %llu was taken", ops->name, f->name,
			    (unsigned long long)over);
	}
	tap_ok(refused == bounded, "%s: each of %u bounded fields refused "
	    "one past its bound", ops->name, bounded);
	for (size_t cut = 0; cut < good.len; cut++)
		if (ops->load(dev, good.data, cut, &e) >= 0)
			cuts_ok = 0;
	tap_ok(cuts_ok, "%s: every truncation refused", ops->name);
	after = save(ops, dev);
	tap_ok(same(&good, &after), "%s: refused loads left it unchanged",
	    ops->name);
	dev_state_buf_free(&good);
	dev_state_buf_free(&bad);
	dev_state_buf_free(&after);
}

/* The section of dev with field name set to v: -errno of its load. */
static int
load_with(const struct device_ops *ops, void *dev, const char *name,
    uint64_t v, struct dev_state_error *e)
{
	struct dev_state_buf b = save(ops, dev);
	uint8_t type;
	uint32_t count;
	uint8_t *p = field_value(&b, name, &type, &count);
	int rc;

	put_le(p, type, v);
	e->msg[0] = '\0';
	rc = ops->load(dev, b.data, b.len, e);
	dev_state_buf_free(&b);
	return rc;
}

static void
test_tables(void)
{
	const struct dev_state_table *t[] = { &uart_state_table,
	    &rtc_state_table, &i8042_state_table, &post_state_table,
	    &port92_state_table, &pflash_state_table, &acpi_pm_state_table,
	    &fw_cfg_state_table, &piix3_isa_state_table,
	    &piix4_pm_state_table, &bochs_display_state_table };
	struct dev_state_error e = { "" };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		tap_ok(dev_state_table_check(t[i], &e) == 0,
		    "%s: its table is sound %s", t[i]->name, e.msg);
}

/* --- uart ------------------------------------------------------------ */

static void
uart_nop_tx(void *opaque, const uint8_t *buf, size_t len)
{
}

static void
uart_count_space(void *opaque)
{
	(*(unsigned int *)opaque)++;
}

static void
test_uart(void)
{
	static struct fake_host fa, fb;
	unsigned int space_a = 0, space_b = 0;
	struct uart_backend be = { uart_nop_tx, uart_count_space, &space_a };
	struct uart *a, *b;
	struct pio pa, pb;
	struct dev_state_error e;
	char ra[8] = "", rb[8] = "";
	bool regs = true;

	fake_host_init(&fa);
	fake_host_init(&fb);
	a = uart_new(&fa.host, &be);
	be.opaque = &space_b;
	b = uart_new(&fb.host, &be);
	pa = (struct pio){ &uart_device_ops, a };
	pb = (struct pio){ &uart_device_ops, b };
	pio_outb(&pa, 2, 0xc1);		/* FIFOs on, trigger 14 */
	pio_outb(&pa, 3, 0x83);		/* DLAB, 8N1 */
	pio_outb(&pa, 0, 0x0c);		/* 9600 baud */
	pio_outb(&pa, 3, 0x03);
	pio_outb(&pa, 7, 0x5a);
	pio_outb(&pa, 4, 0x0b);		/* DTR, RTS, OUT2 */
	pio_outb(&pa, 1, 0x01);		/* ERBFI */
	uart_receive(a, (const uint8_t *)"hello", 5);
	tap_ok(fa.irq[0], "uart: input raised its line");

	round_trip(&uart_device_ops, a, b);
	tap_ok(fb.irq[0], "uart: the loaded one raised its line too");
	tap_ok(space_b == 1, "uart: and told its host it has room");
	for (unsigned int r = 1; r < 8; r++)
		if (pio_inb(&pa, r) != pio_inb(&pb, r))
			regs = false;
	tap_ok(regs, "uart: registers 1 to 7 read the same");
	for (int i = 0; i < 5; i++) {
		ra[i] = pio_inb(&pa, 0);
		rb[i] = pio_inb(&pb, 0);
	}
	tap_ok(strcmp(ra, "hello") == 0 && strcmp(rb, "hello") == 0,
	    "uart: both FIFOs hand out \"%s\", \"%s\"", ra, rb);
	tap_ok(!fa.irq[0] && !fb.irq[0], "uart: both lines low when empty");

	hostile(&uart_device_ops, &uart_state_table, b);
	pio_outb(&pb, 2, 0x00);		/* FIFOs off: room for one byte */
	tap_ok(load_with(&uart_device_ops, b, "rx_count", 2, &e) == -EINVAL,
	    "uart: two bytes in a 16450's receiver: %s", e.msg);
	tap_ok(load_with(&uart_device_ops, b, "rx_trigger", 5, &e) ==
	    -EINVAL, "uart: a trigger level of 5: %s", e.msg);
	tap_ok(load_with(&uart_device_ops, b, "msr", 0, &e) == -EINVAL,
	    "uart: modem lines MCR does not drive: %s", e.msg);
	uart_free(a);
	uart_free(b);
}

/* --- rtc ------------------------------------------------------------- */

static uint8_t
cmos(const struct pio *p, uint8_t idx)
{
	pio_outb(p, 0, idx);
	return pio_inb(p, 1);
}

static void
test_rtc(void)
{
	static struct fake_host fa, fb;
	struct rtc_battery bat_b = { 0 };
	struct rtc_config cfg = RTC_CONFIG_DEFAULT;
	struct dev_state_error e;
	struct rtc *a, *b;
	struct pio pa, pb;
	bool time_same = true;
	unsigned int ra, rb;

	fake_host_init(&fa);
	fake_host_init(&fb);
	fa.wall.tv_sec = fb.wall.tv_sec = 1700000000;
	fa.wall_follows_vm = fb.wall_follows_vm = true;
	fa.vm_now = fb.vm_now = 1000000000;
	a = rtc_new(&fa.host);
	cfg.battery = &bat_b;
	b = rtc_new_config(&fb.host, &cfg);
	pa = (struct pio){ &rtc_device_ops, a };
	pb = (struct pio){ &rtc_device_ops, b };

	/* Set the clock to 12:34:56 and an alarm, 64 Hz ticks under PIE. */
	pio_outb(&pa, 0, 0x0b);
	pio_outb(&pa, 1, 0x82);		/* SET, 24 h, BCD */
	pio_outb(&pa, 0, 0x04);
	pio_outb(&pa, 1, 0x12);
	pio_outb(&pa, 0, 0x02);
	pio_outb(&pa, 1, 0x34);
	pio_outb(&pa, 0, 0x00);
	pio_outb(&pa, 1, 0x56);
	pio_outb(&pa, 0, 0x05);
	pio_outb(&pa, 1, 0x12);
	pio_outb(&pa, 0, 0x03);
	pio_outb(&pa, 1, 0x35);
	pio_outb(&pa, 0, 0x01);
	pio_outb(&pa, 1, 0x00);
	pio_outb(&pa, 0, 0x0a);
	pio_outb(&pa, 1, 0x2a);		/* 64 Hz */
	pio_outb(&pa, 0, 0x0b);
	pio_outb(&pa, 1, 0x62);		/* run, PIE, AIE */
	pio_outb(&pa, 0, 0x40);
	pio_outb(&pa, 1, 0xa5);		/* a CMOS byte */
	/* A tick the guest leaves unread, then three more coalesce. */
	fake_host_advance(&fa, 20000000);
	fa.raise_status = DEVICE_IRQ_COALESCED;
	(void)cmos(&pa, 0x0c);
	fake_host_advance(&fa, 50000000);
	fa.raise_status = DEVICE_IRQ_DELIVERED;
	fb.vm_now = fa.vm_now;
	fb.wall = fa.wall;

	round_trip(&rtc_device_ops, a, b);
	tap_ok(bat_b.valid && bat_b.nvram[0x40 - RTC_NVRAM_FIRST] == 0xa5,
	    "rtc: the loaded CMOS reached the battery");
	for (uint8_t r = 0; r <= 0x0b; r++)
		if (r != 0x0a && cmos(&pa, r) != cmos(&pb, r)) {
			tap_diag("register %#x: %#x, %#x", r, cmos(&pa, r),
			    cmos(&pb, r));
			time_same = false;
		}
	tap_ok(time_same, "rtc: time, alarm and registers read the same");
	tap_ok(cmos(&pb, 0x04) == 0x12 && cmos(&pb, 0x02) == 0x34,
	    "rtc: the loaded clock says 12:34");
	tap_ok(cmos(&pb, 0x40) == 0xa5, "rtc: CMOS byte 0x40 kept");
	tap_ok(fake_host_timers_armed(&fb) == fake_host_timers_armed(&fa) &&
	    fake_host_next_deadline(&fb) == fake_host_next_deadline(&fa),
	    "rtc: the same timers armed (%u, %u), for the same deadline "
	    "(%lld, %lld)", fake_host_timers_armed(&fa),
	    fake_host_timers_armed(&fb),
	    (long long)fake_host_next_deadline(&fa),
	    (long long)fake_host_next_deadline(&fb));
	/* A second on: both see the same ticks, alarm and backlog. */
	ra = fa.rises[0];
	rb = fb.rises[0];
	for (int i = 0; i < 100; i++) {
		fake_host_advance(&fa, 10000000);
		fake_host_advance(&fb, 10000000);
		(void)cmos(&pa, 0x0c);
		(void)cmos(&pb, 0x0c);
	}
	tap_ok(fa.rises[0] - ra == fb.rises[0] - rb && fb.rises[0] - rb >= 64,
	    "rtc: periodic interrupts go on after the load: %u and %u",
	    fa.rises[0] - ra, fb.rises[0] - rb);
	{
		struct rtc_stats sa, sb;

		rtc_get_stats(a, &sa);
		rtc_get_stats(b, &sb);
		tap_ok(sa.reinjected == sb.reinjected && sa.backlog == 0 &&
		    sb.backlog == 0 && sb.coalesced > 0,
		    "rtc: the backlog was reinjected alike: %llu, %llu",
		    (unsigned long long)sa.reinjected,
		    (unsigned long long)sb.reinjected);
	}
	fa.wall.tv_sec = fb.wall.tv_sec = 1700000000 + 60;
	tap_ok(cmos(&pa, 0x02) == cmos(&pb, 0x02), "rtc: a minute later "
	    "both say minute %#x", cmos(&pb, 0x02));

	hostile(&rtc_device_ops, &rtc_state_table, b);
	tap_ok(load_with(&rtc_device_ops, b, "pt_last", 1000000, &e) ==
	    -ERANGE, "rtc: a tick ahead of the VM clock: %s", e.msg);
	tap_ok(load_with(&rtc_device_ops, b, "div_base",
	    (uint64_t)fb.vm_now + 1, &e) == -ERANGE,
	    "rtc: a divider phase in the future: %s", e.msg);
	tap_ok(load_with(&rtc_device_ops, b, "backlog", 1025, &e) == -ERANGE,
	    "rtc: a backlog over the cap: %s", e.msg);
	tap_ok(load_with(&rtc_device_ops, b, "offset_sec",
	    (uint64_t)INT64_MIN, &e) == -ERANGE,
	    "rtc: an offset beyond 2^41 s: %s", e.msg);
	rtc_free(a);
	rtc_free(b);
}

/* --- i8042 ----------------------------------------------------------- */

static void
test_i8042(void)
{
	static struct fake_host fa, fb;
	static const uint8_t keys[] = { 0x1c, 0xf0, 0x1c, 0x32 };
	struct dev_state_error e;
	struct i8042 *a, *b;
	struct pio pa, pb;
	bool same_bytes = true;
	int n = 0;

	fake_host_init(&fa);
	fake_host_init(&fb);
	a = i8042_new(&fa.host);
	b = i8042_new(&fb.host);
	pa = (struct pio){ &i8042_device_ops, a };
	pb = (struct pio){ &i8042_device_ops, b };
	pio_outb(&pa, 4, 0xd4);		/* to the mouse: */
	pio_outb(&pa, 0, 0xf4);		/* enable reporting */
	(void)pio_inb(&pa, 0);		/* its ACK */
	i8042_key(a, keys, sizeof(keys));
	i8042_mouse(a, 5, -3, 0, 1);
	round_trip(&i8042_device_ops, a, b);
	tap_ok(fa.irq[0] == fb.irq[0] && fb.irq[0],
	    "i8042: the keyboard line follows the loaded buffer");
	while ((pio_inb(&pa, 4) & 1) && n < 32) {
		if (pio_inb(&pa, 4) != pio_inb(&pb, 4) ||
		    pio_inb(&pa, 0) != pio_inb(&pb, 0))
			same_bytes = false;
		n++;
	}
	tap_ok(same_bytes && n >= 5 && !(pio_inb(&pb, 4) & 1),
	    "i8042: both hand out the same %d bytes, keys and mouse", n);
	hostile(&i8042_device_ops, &i8042_state_table, b);
	tap_ok(load_with(&i8042_device_ops, b, "kbd_set", 0, &e) == -EINVAL,
	    "i8042: scancode set 0: %s", e.msg);
	tap_ok(load_with(&i8042_device_ops, b, "aux_id", 1, &e) == -EINVAL,
	    "i8042: mouse id 1: %s", e.msg);
	i8042_free(a);
	i8042_free(b);
}

/* --- post, port92, pflash ------------------------------------------- */

static void
test_small(void)
{
	static struct fake_host fh;
	static uint8_t image[2 * 4096];
	struct pflash_store sa, sb;
	struct pflash *fa, *fb;
	struct post *oa, *ob;
	struct port92 *ka, *kb;
	struct pio p;

	fake_host_init(&fh);
	oa = post_new(&fh.host);
	ob = post_new(&fh.host);
	p = (struct pio){ &post_device_ops, oa };
	pio_outb(&p, 0, 0x42);
	round_trip(&post_device_ops, oa, ob);
	hostile(&post_device_ops, &post_state_table, ob);
	post_free(oa);
	post_free(ob);

	ka = port92_new(&fh.host);
	kb = port92_new(&fh.host);
	p = (struct pio){ &port92_device_ops, ka };
	pio_outb(&p, 0, 0x03);
	pio_outb(&p, 0, 0x02);
	round_trip(&port92_device_ops, ka, kb);
	p = (struct pio){ &port92_device_ops, kb };
	tap_ok(pio_inb(&p, 0) == 0x02 && fh.resets == 1,
	    "port92: A20 loaded, no reset asked for by the load");
	hostile(&port92_device_ops, &port92_state_table, kb);
	port92_free(ka);
	port92_free(kb);

	memset(image, 0xff, sizeof(image));
	if (pflash_store_init(&sa, image, sizeof(image), 4096, false) != 0 ||
	    pflash_store_init(&sb, image, sizeof(image), 4096, false) != 0)
		tap_bail("pflash_store_init");
	fa = pflash_new(&fh.host, &sa);
	fb = pflash_new(&fh.host, &sb);
	p = (struct pio){ &pflash_device_ops, fa };
	pio_outb(&p, 0, 0x98);		/* CFI query mode */
	round_trip(&pflash_device_ops, fa, fb);
	p = (struct pio){ &pflash_device_ops, fb };
	tap_ok(pio_inb(&p, 0x10) == 'Q',
	    "pflash: the loaded one answers the CFI query");
	hostile(&pflash_device_ops, &pflash_state_table, fb);
	pflash_free(fa);
	pflash_free(fb);
	pflash_store_fini(&sa);
	pflash_store_fini(&sb);
}

/* --- acpi-pm, fw-cfg ------------------------------------------------ */

/* The section of dev with byte at of field name's value set to v. */
static int
load_with_byte(const struct device_ops *ops, void *dev, const char *name,
    size_t at, uint8_t v, struct dev_state_error *e)
{
	struct dev_state_buf b = save(ops, dev);
	uint8_t type;
	uint32_t count;
	uint8_t *p = field_value(&b, name, &type, &count);
	int rc;

	p[at] = v;
	e->msg[0] = '\0';
	rc = ops->load(dev, b.data, b.len, e);
	dev_state_buf_free(&b);
	return rc;
}

static void
test_acpi_pm(void)
{
	static struct fake_host fa, fb;
	struct dev_state_error e;
	struct acpi_pm *a, *b;
	struct pio p;

	fake_host_init(&fa);
	fake_host_init(&fb);
	a = acpi_pm_new(&fa.host, 5);
	b = acpi_pm_new(&fb.host, 5);
	p = (struct pio){ &acpi_pm_device_ops, a };
	pio_outb(&p, 2, 0x00);
	pio_outb(&p, 3, 0x01);		/* PM1_EN: the power button */
	pio_outb(&p, 5, 3 << 2);	/* SLP_TYP 3, no SLP_EN */
	(void)acpi_pm_power_button(a);
	tap_ok(fa.irq[0], "acpi-pm: the SCI is up before the save");
	round_trip(&acpi_pm_device_ops, a, b);
	p = (struct pio){ &acpi_pm_device_ops, b };
	tap_ok(fb.irq[0] && fb.rises[0] == 1 && pio_inb(&p, 1) == 0x01 &&
	    pio_inb(&p, 3) == 0x01 && pio_inb(&p, 5) == (3 << 2 | 0),
	    "acpi-pm: the loaded one raises its SCI, registers as saved");
	pio_outb(&p, 1, 0x01);		/* write 1 to clear PWRBTN_STS */
	tap_ok(!fb.irq[0], "acpi-pm: and lowers it when the guest clears "
	    "the status");
	hostile(&acpi_pm_device_ops, &acpi_pm_state_table, b);
	tap_ok(load_with(&acpi_pm_device_ops, b, "pm1_sts", 0x0001, &e) ==
	    -EINVAL && load_with(&acpi_pm_device_ops, b, "pm1_en", 0x0200,
	    &e) == -EINVAL, "acpi-pm: bits no register has refused (%s)",
	    e.msg);
	acpi_pm_free(a);
	acpi_pm_free(b);
}

struct fwc_group {
	uint8_t data[4];
	unsigned int calls;
};

static int
fwc_prepare(void *opaque)
{
	struct fwc_group *g = opaque;

	g->calls++;
	memset(g->data, 0xa0 + (int)g->calls, sizeof(g->data));
	return 0;
}

static void
fwc_select(void *fc, uint16_t key)
{
	uint8_t k[2] = { (uint8_t)key, (uint8_t)(key >> 8) };

	fw_cfg_device_ops.write(fc, FW_CFG_SEL_OFFSET, k, 2);
}

static uint8_t
fwc_byte(void *fc)
{
	uint8_t v = 0;

	fw_cfg_device_ops.read(fc, FW_CFG_DATA_OFFSET, &v, 1);
	return v;
}

static void
test_fw_cfg(void)
{
	static struct fake_host fh;
	static const uint8_t plain[3] = { 1, 2, 3 };
	struct fwc_group ga = { .calls = 0 }, gb = { .calls = 0 };
	const struct fw_cfg_item ia[] = {
		{ .name = "plain", .data = plain, .len = sizeof(plain) },
		{ .name = "etc/built", .data = ga.data, .len = sizeof(ga.data),
		    .prepare = fwc_prepare, .opaque = &ga },
	}, ib[] = {
		{ .name = "plain", .data = plain, .len = sizeof(plain) },
		{ .name = "etc/built", .data = gb.data, .len = sizeof(gb.data),
		    .prepare = fwc_prepare, .opaque = &gb },
	};
	const uint16_t built = FW_CFG_FILE_FIRST + 1;
	struct dev_state_error e;
	struct fw_cfg *a, *b;
	uint8_t dma[4] = { 0x12, 0x34, 0x56, 0x78 };

	fake_host_init(&fh);
	a = fw_cfg_new(&fh.host, ia, 2);
	b = fw_cfg_new(&fh.host, ib, 2);
	if (a == NULL || b == NULL)
		tap_bail("fw_cfg_new");
	fwc_select(a, built);
	(void)fwc_byte(a);
	fw_cfg_device_ops.write(a, FW_CFG_DMA_OFFSET, dma, 4);
	round_trip(&fw_cfg_device_ops, a, b);
	tap_ok(gb.calls == 0, "fw-cfg: a load builds nothing yet");
	tap_ok(fwc_byte(b) == 0xa1 && gb.calls == 1 && fwc_byte(b) == 0xa1 &&
	    gb.calls == 1, "fw-cfg: the next read builds the prepared item "
	    "again, once, and goes on at the saved offset");
	fwc_select(b, FW_CFG_FILE_FIRST);
	tap_ok(fwc_byte(b) == 1 && fwc_byte(b) == 2,
	    "fw-cfg: a plain item reads as before");
	fwc_select(b, built);
	hostile(&fw_cfg_device_ops, &fw_cfg_state_table, b);
	tap_ok(load_with(&fw_cfg_device_ops, b, "offset", 5, &e) == -EINVAL,
	    "fw-cfg: an offset past the item's end refused (%s)", e.msg);
	fwc_select(b, FW_CFG_FILE_FIRST);
	/* Entries: signature, id, directory, then "plain". */
	tap_ok(load_with_byte(&fw_cfg_device_ops, b, "prepared",
	    3, 1, &e) == -EINVAL,
	    "fw-cfg: a plain item marked prepared refused (%s)", e.msg);
	fw_cfg_free(a);
	fw_cfg_free(b);
}

/* --- piix3-isa, piix4-pm, bochs-display ------------------------------ */

static void
cfg_write(const struct device_ops *ops, void *dev, unsigned int off,
    uint32_t v, unsigned int size)
{
	(void)pci_config_write(ops->pci(dev), off, &v, size);
}

static uint32_t
cfg_read(const struct device_ops *ops, void *dev, unsigned int off,
    unsigned int size)
{
	uint32_t v = 0;

	pci_config_read(ops->pci(dev), off, &v, size);
	return v;
}

/* The config space's vendor ID byte changed: refused as another's. */
static void
foreign_function(const struct device_ops *ops, void *dev)
{
	struct dev_state_error e;

	tap_ok(load_with_byte(ops, dev, "cfg", 0, 0x42, &e) == -EINVAL,
	    "%s: another function's config space refused (%s)", ops->name,
	    e.msg);
}

static void
dispi(void *b, unsigned int index, uint16_t v)
{
	bochs_display_device_ops.write(b,
	    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + BOCHS_DISPLAY_DISPI +
	    2 * index, &v, 2);
}

static void
test_pci_functions(void)
{
	static struct fake_host fh;
	struct bochs_display_config bc = { .vram_size = 4u << 20 };
	struct bochs_display_mode m;
	struct dev_state_error e;
	struct piix3_isa *ia, *ib;
	struct piix4_pm *pa, *pb;
	struct bochs_display *ba, *bb;
	uint16_t base;

	fake_host_init(&fh);
	ia = piix3_isa_new(&fh.host);
	ib = piix3_isa_new(&fh.host);
	cfg_write(&piix3_isa_device_ops, ia, PIIX3_ISA_PIRQRC, 0x0b0a0b05, 4);
	round_trip(&piix3_isa_device_ops, ia, ib);
	TAP_EQ(cfg_read(&piix3_isa_device_ops, ib, PIIX3_ISA_PIRQRC, 4),
	    0x0b0a0b05, "piix3-isa: the PIRQ routes loaded");
	foreign_function(&piix3_isa_device_ops, ib);
	hostile(&piix3_isa_device_ops, &piix3_isa_state_table, ib);
	piix3_isa_free(ia);
	piix3_isa_free(ib);

	pa = piix4_pm_new(&fh.host);
	pb = piix4_pm_new(&fh.host);
	cfg_write(&piix4_pm_device_ops, pa, PIIX4_PM_PMBA, 0x601, 2);
	cfg_write(&piix4_pm_device_ops, pa, PIIX4_PM_PMREGMISC, 1, 1);
	round_trip(&piix4_pm_device_ops, pa, pb);
	tap_ok(piix4_pm_io(pb, &base) && base == 0x600,
	    "piix4-pm: the PM block decodes at the loaded PMBA");
	foreign_function(&piix4_pm_device_ops, pb);
	hostile(&piix4_pm_device_ops, &piix4_pm_state_table, pb);
	piix4_pm_free(pa);
	piix4_pm_free(pb);

	ba = bochs_display_new(&fh.host, &bc);
	bb = bochs_display_new(&fh.host, &bc);
	if (ba == NULL || bb == NULL)
		tap_bail("bochs_display_new");
	cfg_write(&bochs_display_device_ops, ba, PCI_BAR0, 0xc0000000u, 4);
	dispi(ba, BOCHS_DISPI_XRES, 800);
	dispi(ba, BOCHS_DISPI_YRES, 600);
	dispi(ba, BOCHS_DISPI_ENABLE, BOCHS_DISPI_ENABLED |
	    BOCHS_DISPI_LFB_ENABLED);
	round_trip(&bochs_display_device_ops, ba, bb);
	bochs_display_get_mode(bb, &m);
	tap_ok(m.enabled && m.width == 800 && m.height == 600 &&
	    m.stride == 3200 && cfg_read(&bochs_display_device_ops, bb,
	    PCI_BAR0, 4) == 0xc0000008u, "bochs-display: the loaded one "
	    "shows 800x600, BAR 0 where it was");
	foreign_function(&bochs_display_device_ops, bb);
	hostile(&bochs_display_device_ops, &bochs_display_state_table, bb);
	/* dispi[1] is XRES: 4096 is beyond the display's maximum. */
	tap_ok(load_with_byte(&bochs_display_device_ops, bb, "dispi", 3,
	    0xff, &e) == -EINVAL, "bochs-display: a resolution beyond the "
	    "maximum refused (%s)", e.msg);
	/* dispi[5] is BANK: 64 KiB banks, 4 MiB of memory. */
	tap_ok(load_with_byte(&bochs_display_device_ops, bb, "dispi", 10,
	    64, &e) == -EINVAL, "bochs-display: a bank past the memory "
	    "refused (%s)", e.msg);
	/* dispi[8] is Y_OFFSET: 600 lines below 4 MiB do not fit. */
	tap_ok(load_with_byte(&bochs_display_device_ops, bb, "dispi", 17,
	    0x10, &e) == -EINVAL, "bochs-display: an enabled mode past the "
	    "memory refused (%s)", e.msg);
	tap_ok(load_with_byte(&bochs_display_device_ops, bb, "dispi", 0,
	    0, &e) == -EINVAL, "bochs-display: an unknown DISPI id "
	    "refused (%s)", e.msg);
	bochs_display_get_mode(bb, &m);
	tap_ok(m.enabled && m.width == 800,
	    "bochs-display: still 800x600 after the refusals");
	bochs_display_free(ba);
	bochs_display_free(bb);
}

int
main(void)
{
	test_tables();
	test_uart();
	test_rtc();
	test_i8042();
	test_small();
	test_acpi_pm();
	test_fw_cfg();
	test_pci_functions();
	return tap_done();
}
