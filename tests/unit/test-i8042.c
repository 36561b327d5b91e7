/*
 * i8042: Linux's controller probe, keyboard and mouse commands, the
 * set 2 to set 1 translation, Ctrl-Alt-Del, reset requests, and one
 * interrupt edge per byte.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "i8042.h"
#include "fake-host.h"
#include "pio.h"
#include "tap.h"
#include "unit-util.h"

#define DATA	0
#define CMDREG	4

#define STS_OBF		0x01
#define STS_IBF		0x02
#define STS_SYS		0x04
#define STS_A2		0x08
#define STS_INH		0x10
#define STS_AUXB	0x20

#define CTR_KBDINT	0x01
#define CTR_AUXINT	0x02
#define CTR_KBDDIS	0x10
#define CTR_AUXDIS	0x20
#define CTR_XLATE	0x40

/* The fake host's lines, as the controller drives them. */
#define IRQ1	I8042_LINE_KBD
#define IRQ12	I8042_LINE_AUX

struct host {
	struct fake_host fh;
	struct i8042 *k;
	struct pio io;		/* port I/O to it */
};

static void
host_init(struct host *h)
{
	memset(h, 0, sizeof(*h));
	fake_host_init(&h->fh);
	h->k = i8042_new(&h->fh.host);
	h->io = (struct pio){ &i8042_device_ops, h->k };
	if (h->k == NULL)
		tap_bail("i8042_new failed");
}

static void
host_fini(struct host *h)
{
	i8042_device_ops.free(h->k);
}

/* Read what is queued: up to max bytes, each with its AUXB bit. */
static size_t
drain(struct host *h, uint8_t *buf, bool *aux, size_t max)
{
	size_t n = 0;
	uint8_t s;

	while (n < max && ((s = pio_inb(&h->io, CMDREG)) & STS_OBF)) {
		if (aux != NULL)
			aux[n] = (s & STS_AUXB) != 0;
		buf[n++] = pio_inb(&h->io, DATA);
	}
	return n;
}

static bool
drain_is(struct host *h, const uint8_t *want, size_t len)
{
	uint8_t got[256];
	size_t n = drain(h, got, NULL, sizeof(got));

	return n == len && (len == 0 || memcmp(got, want, len) == 0);
}

/*
 * i8042_command() from Linux: command word 0xPRCC, P parameters, R
 * results.  -1 when a result is missing, or an AUX_LOOP result is not
 * marked as mouse data.
 */
static int
linux_command(struct host *h, unsigned int command, uint8_t *param)
{
	unsigned int i, np = (command >> 12) & 0xf, nr = (command >> 8) & 0xf;
	uint8_t s;

	pio_outb(&h->io, CMDREG, command & 0xff);
	for (i = 0; i < np; i++)
		pio_outb(&h->io, DATA, param[i]);
	for (i = 0; i < nr; i++) {
		s = pio_inb(&h->io, CMDREG);
		if (!(s & STS_OBF))
			return -1;
		if ((command & 0xff) == 0xd3 && !(s & STS_AUXB))
			return -1;
		param[i] = pio_inb(&h->io, DATA);
	}
	return 0;
}

/* Send a byte to the keyboard (or, aux, the mouse). */
static void
dev_send(struct host *h, bool aux, uint8_t b)
{
	if (aux)
		pio_outb(&h->io, CMDREG, 0xd4);
	pio_outb(&h->io, DATA, b);
}

static void
test_power_on(void)
{
	struct host h;
	uint8_t s, p;

	host_init(&h);
	s = pio_inb(&h.io, CMDREG);
	TAP_EQ(s & (STS_OBF | STS_IBF), 0, "power on: buffers empty");
	TAP_EQ(s & (STS_SYS | STS_INH), STS_SYS | STS_INH,
	    "power on: system flag, keyboard not inhibited");
	TAP_EQ(h.fh.rises[IRQ1] + h.fh.rises[IRQ12], 0,
	    "power on: no interrupt");
	TAP_EQ(linux_command(&h, 0x0120, &p), 0, "read command byte");
	TAP_EQ(p, 0x45, "command byte: XLATE, SYS, KBDINT");
	TAP_EQ(pio_inb(&h.io, CMDREG) & STS_A2, STS_A2,
	    "A2 set after a command");
	pio_outb(&h.io, DATA, 0xee);
	TAP_EQ(pio_inb(&h.io, CMDREG) & STS_A2, 0, "A2 clear after data");
	TAP_EQ(pio_inb(&h.io, DATA), 0xee, "keyboard echo");
	host_fini(&h);
}

/* The sequence of i8042_controller_check/selftest/init/check_aux. */
static void
test_linux_probe(void)
{
	struct host h;
	uint8_t p, ctr, ctr2;
	unsigned int edges;

	host_init(&h);
	drain(&h, &p, NULL, 1);
	TAP_EQ(linux_command(&h, 0x01aa, &p) == 0 && p == 0x55, 1,
	    "self test: 0x55");
	TAP_EQ(h.fh.irq[IRQ1], false, "self test result read: IRQ 1 low again");
	TAP_EQ(linux_command(&h, 0x0120, &ctr) == 0 &&
	    linux_command(&h, 0x0120, &ctr2) == 0 && ctr == ctr2, 1,
	    "command byte reads the same twice");
	ctr |= CTR_KBDDIS;
	ctr &= ~CTR_KBDINT;
	TAP_EQ(linux_command(&h, 0x1060, &ctr), 0, "write command byte");
	TAP_EQ(linux_command(&h, 0x0120, &p) == 0 && p == ctr, 1,
	    "command byte reads back");

	/* i8042_check_aux */
	p = 0x5a;
	TAP_EQ(linux_command(&h, 0x11d3, &p) == 0 && p == 0x5a, 1,
	    "AUX_LOOP 0x5a: echoed as mouse data");
	TAP_EQ(linux_command(&h, 0x00a7, &p), 0, "AUX disable");
	TAP_EQ(linux_command(&h, 0x0120, &p) == 0 && (p & CTR_AUXDIS), 1,
	    "AUXDIS set");
	TAP_EQ(linux_command(&h, 0x00a8, &p), 0, "AUX enable");
	TAP_EQ(linux_command(&h, 0x0120, &p) == 0 && !(p & CTR_AUXDIS), 1,
	    "AUXDIS clear");
	/* IRQ 12 delivery test */
	ctr = p & ~CTR_AUXDIS;
	ctr |= CTR_AUXINT;
	linux_command(&h, 0x1060, &ctr);
	edges = h.fh.rises[IRQ12];
	p = 0xa5;
	linux_command(&h, 0x10d3, &p);
	TAP_EQ(h.fh.rises[IRQ12], edges + 1, "AUX_LOOP 0xa5 raises IRQ 12");
	TAP_EQ(pio_inb(&h.io, CMDREG) & (STS_OBF | STS_AUXB),
	    STS_OBF | STS_AUXB, "status OBF|AUXB");
	TAP_EQ(pio_inb(&h.io, DATA), 0xa5, "0xa5 read by the irq handler");
	TAP_EQ(h.fh.irq[IRQ12], false, "IRQ 12 low after the read");
	/* Active multiplexing probe: a plain loop answers 0xa4, no mux. */
	p = 0xf0;
	linux_command(&h, 0x11d3, &p);
	TAP_EQ(p, 0xf0, "mux probe 0xf0 looped");
	p = 0x56;
	linux_command(&h, 0x11d3, &p);
	p = 0xa4;
	linux_command(&h, 0x11d3, &p);
	TAP_EQ(p, 0xa4, "mux probe: 0xa4 comes back, so not a mux");
	TAP_EQ(linux_command(&h, 0x01a9, &p) == 0 && p == 0, 1,
	    "AUX interface test: 0");
	TAP_EQ(linux_command(&h, 0x01ab, &p) == 0 && p == 0, 1,
	    "KBD interface test: 0");

	/* i8042_enable_kbd_port, then atkbd_probe */
	ctr &= ~CTR_KBDDIS;
	ctr |= CTR_KBDINT;
	linux_command(&h, 0x1060, &ctr);
	edges = h.fh.rises[IRQ1];
	dev_send(&h, false, 0xf2);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xab, 0x41 }, 3), true,
	    "identify through translation: fa ab 41");
	TAP_EQ(h.fh.rises[IRQ1], edges + 3, "one IRQ 1 edge per byte");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_keyboard(void)
{
	struct host h;
	uint8_t ctr = 0x05;	/* no translation */

	host_init(&h);
	linux_command(&h, 0x1060, &ctr);
	dev_send(&h, false, 0xff);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xaa }, 2), true,
	    "reset: fa aa");
	dev_send(&h, false, 0xf2);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xab, 0x83 }, 3), true,
	    "identify: fa ab 83");
	dev_send(&h, false, 0xed);
	dev_send(&h, false, 0x07);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xfa }, 2), true,
	    "set LEDs: fa fa");
	dev_send(&h, false, 0xf3);
	dev_send(&h, false, 0x20);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xfa }, 2), true,
	    "typematic: fa fa");
	dev_send(&h, false, 0xf0);
	dev_send(&h, false, 0x00);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xfa, 0x02 }, 3), true,
	    "get scancode set: 2");
	dev_send(&h, false, 0xf5);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa }, 1), true, "disable");
	TAP_EQ(i8042_key(h.k, (const uint8_t[]){ 0x1c }, 1), 0,
	    "key while disabled: 0");
	TAP_EQ(drain_is(&h, NULL, 0), true, "and dropped");
	dev_send(&h, false, 0xf4);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa }, 1), true, "enable");
	dev_send(&h, false, 0xf6);
	dev_send(&h, false, 0xee);
	dev_send(&h, false, 0x01);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xee, 0xfe }, 3), true,
	    "defaults fa, echo ee, unknown fe");
	dev_send(&h, false, 0xfe);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfe }, 1), true,
	    "resend repeats the last byte");

	/* Keyboard switched to set 1 translates by itself. */
	dev_send(&h, false, 0xf0);
	dev_send(&h, false, 0x01);
	drain(&h, (uint8_t[4]){ 0 }, NULL, 4);
	i8042_key(h.k, (const uint8_t[]){ 0x1c, 0xf0, 0x1c, 0xe0, 0x75,
	    0xe0, 0xf0, 0x75 }, 8);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0x1e, 0x9e, 0xe0, 0x48, 0xe0,
	    0xc8 }, 6), true, "set 1 keyboard: A, Up as 1e 9e e0 48 e0 c8");
	dev_send(&h, false, 0xf0);
	dev_send(&h, false, 0x03);
	dev_send(&h, false, 0xf0);
	dev_send(&h, false, 0x00);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xfa, 0xfa, 0xfa, 0x01 },
	    5), true, "set 3 refused quietly: still set 1");

	/* Keyboard interface disabled: keys wait, then come. */
	dev_send(&h, false, 0xff);
	drain(&h, (uint8_t[4]){ 0 }, NULL, 4);
	pio_outb(&h.io, CMDREG, 0xad);
	i8042_key(h.k, (const uint8_t[]){ 0x1c, 0xf0, 0x1c }, 3);
	TAP_EQ(pio_inb(&h.io, CMDREG) & STS_OBF, 0,
	    "interface disabled: held back");
	pio_outb(&h.io, CMDREG, 0xae);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0x1c, 0xf0, 0x1c }, 3), true,
	    "interface enabled: delivered, set 2 untranslated");

	/* Output port write through 0xd2: keyboard data, untranslated. */
	ctr = 0x45;
	linux_command(&h, 0x1060, &ctr);
	pio_outb(&h.io, CMDREG, 0xd2);
	pio_outb(&h.io, DATA, 0x1c);
	TAP_EQ(pio_inb(&h.io, CMDREG) & (STS_OBF | STS_AUXB), STS_OBF,
	    "0xd2: keyboard data");
	TAP_EQ(pio_inb(&h.io, DATA), 0x1c, "0xd2: byte as written");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_translation(void)
{
	static const struct {
		uint8_t set2[8];
		size_t n2;
		uint8_t set1[8];
		size_t n1;
		const char *what;
	} t[] = {
		{ { 0x1c, 0xf0, 0x1c }, 3, { 0x1e, 0x9e }, 2, "A" },
		{ { 0x76, 0xf0, 0x76 }, 3, { 0x01, 0x81 }, 2, "Esc" },
		{ { 0x5a }, 1, { 0x1c }, 1, "Enter" },
		{ { 0x83 }, 1, { 0x41 }, 1, "F7" },
		{ { 0x07, 0x78 }, 2, { 0x58, 0x57 }, 2, "F12 F11" },
		{ { 0xe0, 0x14, 0xe0, 0xf0, 0x14 }, 5, { 0xe0, 0x1d, 0xe0,
		    0x9d }, 4, "right Ctrl" },
		{ { 0xe0, 0x71 }, 2, { 0xe0, 0x53 }, 2, "Delete" },
		{ { 0xe1, 0x14, 0x77, 0xe1, 0xf0, 0x14, 0xf0, 0x77 }, 8,
		    { 0xe1, 0x1d, 0x45, 0xe1, 0x9d, 0xc5 }, 6, "Pause" },
		{ { 0x61 }, 1, { 0x56 }, 1, "102nd key" },
		{ { 0xe0, 0x1f }, 2, { 0xe0, 0x5b }, 2, "left GUI" },
	};
	struct host h;
	unsigned int i, j, bad = 0;
	uint8_t got[4];

	host_init(&h);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		i8042_key(h.k, t[i].set2, t[i].n2);
		TAP_EQ(drain_is(&h, t[i].set1, t[i].n1), true,
		    "translated: %s", t[i].what);
	}
	/* Every set 2 make code of a key, made and broken. */
	for (i = 1; i < 0x80; i++) {
		i8042_key(h.k, (const uint8_t[]){ (uint8_t)i, 0xf0,
		    (uint8_t)i }, 3);
		if (drain(&h, got, NULL, 4) != 2 || got[1] != (got[0] | 0x80))
			bad++;
	}
	TAP_EQ(bad, 0, "every code: break = make | 0x80, 2 bytes");
	/* Distinct keys stay distinct. */
	for (i = 1, bad = 0; i < 0x80; i++) {
		uint8_t a = 0, b = 0;

		i8042_key(h.k, (const uint8_t[]){ (uint8_t)i }, 1);
		drain(&h, &a, NULL, 1);
		for (j = i + 1; j < 0x80; j++) {
			i8042_key(h.k, (const uint8_t[]){ (uint8_t)j }, 1);
			drain(&h, &b, NULL, 1);
			/* Codes that are no key's pass unchanged. */
			if (a == b && a != i && b != j)
				bad++;
		}
	}
	TAP_EQ(bad, 0, "no two key codes translate alike");
	host_fini(&h);
}

static void
test_ctrl_alt_del(void)
{
	static const uint8_t set1[] = { 0x1d, 0x38, 0x53, 0xd3, 0xb8, 0x9d };
	static const uint8_t set2[] = { 0x14, 0x11, 0x71, 0xf0, 0x71, 0xf0,
	    0x11, 0xf0, 0x14 };
	struct host h;
	uint8_t buf[16], ctr;
	unsigned int i, edges, ok = 1;
	size_t n;
	int ret;

	host_init(&h);
	edges = h.fh.rises[IRQ1];
	TAP_EQ(i8042_ctrl_alt_del(h.k), 0, "ctrl-alt-del queued");
	/* As a guest's IRQ 1 handler: one byte per interrupt. */
	for (n = 0; n < sizeof(buf) && h.fh.irq[IRQ1]; n++) {
		if (h.fh.rises[IRQ1] != edges + n + 1)
			ok = 0;
		buf[n] = pio_inb(&h.io, DATA);
	}
	TAP_EQ(n == sizeof(set1) && memcmp(buf, set1, n) == 0, 1,
	    "XLATE: 1d 38 53 d3 b8 9d");
	TAP_EQ(ok && h.fh.rises[IRQ1] == edges + 6, 1,
	    "each byte its own IRQ 1 edge");

	ctr = 0x05;
	linux_command(&h, 0x1060, &ctr);
	i8042_ctrl_alt_del(h.k);
	TAP_EQ(drain_is(&h, set2, sizeof(set2)), true,
	    "no XLATE: 14 11 71 f0 71 f0 11 f0 14");

	/* Queue limits: refused whole, never cut. */
	pio_outb(&h.io, CMDREG, 0xad);
	for (i = 0; i < 100; i++)
		if ((ret = i8042_ctrl_alt_del(h.k)) != 0)
			break;
	TAP_EQ(ret, -ENOSPC, "full keyboard queue: -ENOSPC (after %u)", i);
	pio_outb(&h.io, CMDREG, 0xae);
	n = drain(&h, buf, NULL, 1);
	for (n = 0; pio_inb(&h.io, CMDREG) & STS_OBF; n++)
		pio_inb(&h.io, DATA);
	TAP_EQ((n + 1) % sizeof(set2), 0, "only whole sequences were queued");
	dev_send(&h, false, 0xee);
	TAP_EQ(pio_inb(&h.io, DATA), 0xee, "keyboard still answers");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_reset_requests(void)
{
	struct host h;
	uint8_t p;
	unsigned int i;

	host_init(&h);
	pio_outb(&h.io, CMDREG, 0xfe);
	TAP_EQ(h.fh.resets, 1, "0xfe: reset requested");
	pio_outb(&h.io, CMDREG, 0xff);
	TAP_EQ(h.fh.resets, 1, "0xff: no reset (no bit pulsed)");
	for (i = 0xf0; i < 0xff; i += 2)
		pio_outb(&h.io, CMDREG, (uint8_t)i);
	TAP_EQ(h.fh.resets, 9, "every even pulse command resets");
	pio_outb(&h.io, CMDREG, 0xf1);
	TAP_EQ(h.fh.resets, 9, "0xf1 does not");
	TAP_EQ(linux_command(&h, 0x01d0, &p), 0, "read output port");
	TAP_EQ(p & 0x03, 0x03, "output port: reset line high, A20 on");
	p = 0xdd;
	linux_command(&h, 0x10d1, &p);
	TAP_EQ(h.fh.resets, 9, "0xd1 with bit 0 set: no reset");
	linux_command(&h, 0x01d0, &p);
	TAP_EQ(p & 0x03, 0x01, "output port: A20 off as written");
	p = 0xfe;
	linux_command(&h, 0x10d1, &p);
	TAP_EQ(h.fh.resets, 10, "0xd1 with bit 0 clear: reset requested");
	host_fini(&h);
}

static void
test_mouse(void)
{
	struct host h;
	uint8_t buf[64], ctr = 0x47;
	bool aux[64];
	size_t n, i;
	int ok;

	host_init(&h);
	linux_command(&h, 0x1060, &ctr);
	dev_send(&h, true, 0xff);
	n = drain(&h, buf, aux, sizeof(buf));
	TAP_EQ(n == 3 && buf[0] == 0xfa && buf[1] == 0xaa && buf[2] == 0x00 &&
	    aux[0] && aux[1] && aux[2], 1, "mouse reset: fa aa 00 as aux data");
	TAP_EQ(h.fh.rises[IRQ12], 3, "three IRQ 12 edges");
	TAP_EQ(h.fh.rises[IRQ1], 0, "no IRQ 1");
	dev_send(&h, true, 0xf2);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0x00 }, 2), true,
	    "get ID: 0");
	TAP_EQ(i8042_mouse(h.k, 5, 5, 0, 0), 0, "movement while disabled: 0");
	TAP_EQ(drain_is(&h, NULL, 0), true, "and dropped");

	/* IntelliMouse knock, then the Explorer knock. */
	dev_send(&h, true, 0xf3);
	dev_send(&h, true, 200);
	dev_send(&h, true, 0xf3);
	dev_send(&h, true, 100);
	dev_send(&h, true, 0xf3);
	dev_send(&h, true, 80);
	dev_send(&h, true, 0xf2);
	n = drain(&h, buf, NULL, sizeof(buf));
	TAP_EQ(n == 8 && buf[7] == 0x03, 1, "200,100,80: ID 3 (wheel)");
	dev_send(&h, true, 0xf3);
	dev_send(&h, true, 200);
	dev_send(&h, true, 0xf3);
	dev_send(&h, true, 200);
	dev_send(&h, true, 0xf3);
	dev_send(&h, true, 80);
	dev_send(&h, true, 0xf2);
	n = drain(&h, buf, NULL, sizeof(buf));
	TAP_EQ(n == 8 && buf[7] == 0x04, 1, "200,200,80: ID 4 (5 buttons)");

	dev_send(&h, true, 0xe8);
	dev_send(&h, true, 0x03);
	dev_send(&h, true, 0xe7);
	dev_send(&h, true, 0xea);
	dev_send(&h, true, 0xf4);
	dev_send(&h, true, 0xe9);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0xfa, 0xfa, 0xfa, 0xfa,
	    0xfa, 0x30, 0x03, 80 }, 9), true,
	    "resolution, scaling 2:1, stream, enable, status 30 03 50");
	dev_send(&h, true, 0xe6);
	drain(&h, buf, NULL, sizeof(buf));

	TAP_EQ(i8042_mouse(h.k, 10, -5, 1, 0x01 | 0x08), 0, "move");
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0x09, 10, 5, 0x11 }, 4), true,
	    "packet: left, +10 right, +5 up, wheel 1, button 4");
	i8042_mouse(h.k, -3, 7, -2, 0x02);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0x3a, 0xfd, 0xf9, 0x0e }, 4),
	    true, "packet: right button, -3, -7, wheel -2");
	TAP_EQ(i8042_mouse(h.k, 600, 0, 0, 0), 0, "long move");
	n = drain(&h, buf, NULL, sizeof(buf));
	TAP_EQ(n == 12 && buf[1] == 255 && buf[5] == 255 && buf[9] == 90, 1,
	    "split into 255 + 255 + 90");
	TAP_EQ(i8042_mouse(h.k, 1000000, 0, 0, 0), -ENOSPC,
	    "huge move: -ENOSPC");
	TAP_EQ(drain_is(&h, NULL, 0), true, "and nothing queued");
	for (i = 0, ok = 0; i < 100; i++)
		if (i8042_mouse(h.k, 1, 1, 0, 0) == -ENOSPC)
			ok = 1;
	TAP_EQ(ok, 1, "queue fills: -ENOSPC");
	dev_send(&h, true, 0xf5);
	n = drain(&h, buf, aux, sizeof(buf));
	TAP_EQ(n % 4 == 1 && buf[n - 1] == 0xfa, 1,
	    "whole packets, then the answer to a command (%zu bytes)", n);

	/* Wrap mode echoes. */
	dev_send(&h, true, 0xee);
	dev_send(&h, true, 0x12);
	dev_send(&h, true, 0xec);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfa, 0x12, 0xfa }, 3), true,
	    "wrap mode echo, reset wrap");
	dev_send(&h, true, 0x00);
	TAP_EQ(drain_is(&h, (const uint8_t[]){ 0xfe }, 1), true,
	    "unknown mouse command: fe");

	/* Aux interface disabled holds mouse data back. */
	dev_send(&h, true, 0xf4);
	drain(&h, buf, NULL, sizeof(buf));
	pio_outb(&h.io, CMDREG, 0xa7);
	i8042_mouse(h.k, 1, 0, 0, 0);
	TAP_EQ(pio_inb(&h.io, CMDREG) & STS_OBF, 0, "aux disabled: held back");
	pio_outb(&h.io, CMDREG, 0xa8);
	TAP_EQ(drain(&h, buf, NULL, sizeof(buf)), 4, "aux enabled: delivered");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_access_sizes(void)
{
	struct host h;
	uint8_t buf[8];
	uint16_t w = 0xaaaa;

	host_init(&h);
	pio_outb(&h.io, CMDREG, 0xaa);
	i8042_device_ops.read(h.k, 0, buf, 8);
	TAP_EQ(buf[0] == 0x55 && buf[1] == 0xff && buf[3] == 0xff &&
	    (buf[4] & STS_INH) && buf[5] == 0xff, 1,
	    "8-byte read at 0x60: data, ff, ff, ff, status, ff...");
	i8042_device_ops.read(h.k, 4, buf, 2);
	TAP_EQ(buf[1], 0xff, "2-byte read at 0x64: status, then ff");
	i8042_device_ops.write(h.k, 4, &w, 2);
	TAP_EQ(pio_inb(&h.io, DATA), 0x55,
	    "2-byte write at 0x64: 0xaa command");
	i8042_device_ops.read(h.k, UINT64_MAX, buf, 8);
	i8042_device_ops.write(h.k, UINT64_MAX - 2, buf, 8);
	TAP_EQ(buf[0], 0xff, "far offsets: all ones, no crash");
	host_fini(&h);
}

static void
test_fuzz(void)
{
	struct host h;
	uint8_t buf[8], s;
	unsigned int i, j, bad_sts = 0, bad_irq = 0;
	uint64_t off;
	size_t n;

	rng_state = 0x5555aaaa3333ccccULL;
	host_init(&h);
	for (i = 0; i < 300000; i++) {
		switch (rng() % 10) {
		case 0:
		case 1:
			off = rng() % 8 == 0 ? rng() : rng() % 6;
			i8042_device_ops.read(h.k, off, buf,
			    (unsigned int)(rng() % 9));
			break;
		case 2:
		case 3:
		case 4:
			off = rng() % 8 == 0 ? rng() : (rng() % 2) * 4;
			for (j = 0; j < 8; j++)
				buf[j] = (uint8_t)rng();
			/* Keep resets rare, and the pulse commands too. */
			if (off == 4 && buf[0] >= 0xf0 && rng() % 16)
				buf[0] = 0xaa;
			i8042_device_ops.write(h.k, off,
			    buf, (unsigned int)(rng() % 3));
			break;
		case 5:
			for (j = 0; j < 8; j++)
				buf[j] = (uint8_t)rng();
			(void)i8042_key(h.k, buf, rng() % 9);
			break;
		case 6:
			(void)i8042_mouse(h.k, (int)(int32_t)rng() >> (rng() % 32),
			    (int)(int32_t)rng() >> (rng() % 32),
			    (int)(int32_t)rng() >> (rng() % 32),
			    (unsigned int)rng());
			break;
		case 7:
			(void)i8042_ctrl_alt_del(h.k);
			break;
		default:
			s = pio_inb(&h.io, CMDREG);
			if ((s & (STS_IBF | 0xc0)) != 0 || !(s & STS_INH) ||
			    ((s & STS_AUXB) && !(s & STS_OBF)))
				bad_sts++;
			if ((h.fh.irq[IRQ1] && (s & (STS_OBF | STS_AUXB)) != STS_OBF) ||
			    (h.fh.irq[IRQ12] && (s & (STS_OBF | STS_AUXB)) !=
			    (STS_OBF | STS_AUXB)))
				bad_irq++;
			break;
		}
	}
	TAP_EQ(bad_sts, 0, "fuzz: status sane (no IBF, AUXB only with OBF)");
	TAP_EQ(bad_irq, 0, "fuzz: IRQ lines only with matching data");
	TAP_EQ(h.fh.irq_bad, 0, "fuzz: irq set() only on changes");
	tap_diag("fuzz: %u reset requests", h.fh.resets);
	/* Everything queued comes out in bounded time. */
	pio_outb(&h.io, CMDREG, 0xae);
	pio_outb(&h.io, CMDREG, 0xa8);
	for (n = 0; n < 10000 && (pio_inb(&h.io, CMDREG) & STS_OBF); n++)
		pio_inb(&h.io, DATA);
	TAP_EQ(n <= 3 * 64 + 1, 1,
	    "fuzz: at most 3 queues of 64 bytes (%zu)", n);
	TAP_EQ(h.fh.irq[IRQ1] || h.fh.irq[IRQ12], false,
	    "fuzz: drained, lines low");
	host_fini(&h);
}

int
main(void)
{
	test_power_on();
	test_linux_probe();
	test_keyboard();
	test_translation();
	test_ctrl_alt_del();
	test_reset_requests();
	test_mouse();
	test_access_sizes();
	test_fuzz();
	i8042_free(NULL);
	return tap_done();
}
