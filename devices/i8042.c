/*
 * 8042 keyboard controller, PS/2 keyboard and PS/2 mouse.
 *
 * References: IBM Personal System/2 Hardware Interface Technical
 * Reference, chapters "Keyboard/Auxiliary Device Controller" (status
 * register, command byte, controller commands, output port),
 * "Keyboard" (keyboard commands and responses) and "Pointing Device"
 * (mouse commands, data packets); the IntelliMouse extensions (wheel,
 * buttons 4 and 5, selected by sample-rate sequences) from Microsoft's
 * IntelliMouse documentation; and the scan code tables of Microsoft's
 * "Keyboard Scan Code Specification" (revision 1.3a, Appendix "Scan
 * Code Tables") for the set 2 to set 1 translation.
 *
 * Three queues feed the controller's one-byte output buffer: bytes the
 * controller itself answers (command results and the 0xd2/0xd3 loop
 * backs), bytes from the keyboard and bytes from the mouse.  A device's
 * bytes wait in its queue while its interface is disabled, as a real
 * device holds them while the controller inhibits its clock line.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "dev-state.h"
#include "i8042.h"

#define I8042_DATA		0	/* port 0x60 */
#define I8042_STATUS		4	/* port 0x64, read */
#define I8042_COMMAND		4	/* port 0x64, write */
#define I8042_NPORTS		5

/* Status register */
#define STS_OBF			0x01	/* output buffer full */
#define STS_IBF			0x02	/* input buffer full: never */
#define STS_SYS			0x04	/* system flag (command byte bit 2) */
#define STS_A2			0x08	/* last write went to the command port */
#define STS_INH			0x10	/* 1 = keyboard not inhibited (keylock) */
#define STS_AUXB		0x20	/* the output buffer holds mouse data */

/* Command byte (controller RAM byte 0) */
#define CTR_KBDINT		0x01	/* IRQ 1 on keyboard data */
#define CTR_AUXINT		0x02	/* IRQ 12 on mouse data */
#define CTR_SYS			0x04
#define CTR_KBDDIS		0x10	/* keyboard interface disabled */
#define CTR_AUXDIS		0x20	/* auxiliary interface disabled */
#define CTR_XLATE		0x40	/* translate keyboard bytes to set 1 */
/* Left by a PC BIOS that found both devices: translation on, IRQ 1 on. */
#define CTR_DEFAULT		(CTR_KBDINT | CTR_SYS | CTR_XLATE)

/* Output port */
#define OUT_RESET		0x01	/* 0 = system reset asserted */
#define OUT_A20			0x02
#define OUT_KBD_OBF		0x10	/* IRQ 1 */
#define OUT_AUX_OBF		0x20	/* IRQ 12 */
/* Clock and data lines of both interfaces, idle high. */
#define OUT_LINES		0xcc

/* Controller commands */
#define CMD_READ_RAM		0x20	/* 0x20-0x3f: read RAM byte 0-31 */
#define CMD_WRITE_RAM		0x60	/* 0x60-0x7f: write RAM byte 0-31 */
#define CMD_PASSWORD_TEST	0xa4
#define CMD_AUX_DISABLE		0xa7
#define CMD_AUX_ENABLE		0xa8
#define CMD_AUX_TEST		0xa9
#define CMD_SELF_TEST		0xaa
#define CMD_KBD_TEST		0xab
#define CMD_KBD_DISABLE		0xad
#define CMD_KBD_ENABLE		0xae
#define CMD_READ_INPUT		0xc0
#define CMD_READ_OUTPUT		0xd0
#define CMD_WRITE_OUTPUT	0xd1
#define CMD_WRITE_KBD_OBUF	0xd2
#define CMD_WRITE_AUX_OBUF	0xd3
#define CMD_WRITE_AUX		0xd4
#define CMD_A20_DISABLE		0xdd
#define CMD_A20_ENABLE		0xdf
#define CMD_READ_TEST		0xe0
#define CMD_PULSE		0xf0	/* 0xf0-0xff: pulse output bits 3-0 */

#define I8042_SELF_TEST_OK	0x55
#define I8042_NO_PASSWORD	0xf1

/* Keyboard and mouse responses */
#define PS2_ACK			0xfa
#define PS2_RESEND		0xfe
#define PS2_BAT_OK		0xaa
#define KBD_ECHO		0xee
#define KBD_BREAK		0xf0	/* set 2 break prefix */

/* Keyboard commands */
#define KBD_CMD_LEDS		0xed
#define KBD_CMD_ECHO		0xee
#define KBD_CMD_SCANSET		0xf0
#define KBD_CMD_IDENTIFY	0xf2
#define KBD_CMD_TYPEMATIC	0xf3
#define KBD_CMD_ENABLE		0xf4
#define KBD_CMD_DISABLE		0xf5
#define KBD_CMD_DEFAULTS	0xf6
#define KBD_CMD_SET3_FIRST	0xf7	/* 0xf7-0xfa: set 3 key types */
#define KBD_CMD_SET3_LAST	0xfa
#define KBD_CMD_RESEND		0xfe
#define KBD_CMD_RESET		0xff
#define KBD_TYPEMATIC_DEFAULT	0x2b	/* 10.9 characters/s, 500 ms */

/* Mouse commands */
#define AUX_CMD_SCALING_1_1	0xe6
#define AUX_CMD_SCALING_2_1	0xe7
#define AUX_CMD_RESOLUTION	0xe8
#define AUX_CMD_STATUS		0xe9
#define AUX_CMD_STREAM		0xea
#define AUX_CMD_READ_DATA	0xeb
#define AUX_CMD_RESET_WRAP	0xec
#define AUX_CMD_WRAP		0xee
#define AUX_CMD_REMOTE		0xf0
#define AUX_CMD_GET_ID		0xf2
#define AUX_CMD_SAMPLE_RATE	0xf3
#define AUX_CMD_ENABLE		0xf4
#define AUX_CMD_DISABLE		0xf5
#define AUX_CMD_DEFAULTS	0xf6
#define AUX_CMD_RESEND		0xfe
#define AUX_CMD_RESET		0xff
#define AUX_RATE_DEFAULT	100
#define AUX_RESOLUTION_DEFAULT	2	/* 4 counts/mm */

/* Mouse device IDs */
#define AUX_ID_PS2		0x00
#define AUX_ID_WHEEL		0x03	/* IntelliMouse */
#define AUX_ID_5BUTTON		0x04	/* IntelliMouse Explorer */

/* Mouse packet, first byte */
#define AUX_PKT_LEFT		0x01
#define AUX_PKT_RIGHT		0x02
#define AUX_PKT_MIDDLE		0x04
#define AUX_PKT_ONE		0x08	/* always set */
#define AUX_PKT_XSIGN		0x10
#define AUX_PKT_YSIGN		0x20
/* Status request, first byte */
#define AUX_STS_REMOTE		0x40
#define AUX_STS_ENABLED		0x20
#define AUX_STS_SCALING		0x10
#define AUX_STS_LEFT		0x04
#define AUX_STS_MIDDLE		0x02
#define AUX_STS_RIGHT		0x01

/* i8042_mouse() buttons */
#define BTN_LEFT		0x01
#define BTN_RIGHT		0x02
#define BTN_MIDDLE		0x04
#define BTN_SIDE		0x08
#define BTN_EXTRA		0x10

#define I8042_QUEUE_SIZE	64
/*
 * Keys and mouse packets leave this much room in their queue so that
 * the answers to the guest's commands always fit.
 */
#define I8042_QUEUE_RESERVE	16
#define I8042_QUEUE_AUX		0x100	/* controller queue: mouse data */

struct i8042_queue {
	uint16_t buf[I8042_QUEUE_SIZE];
	unsigned int head;
	unsigned int count;
};

struct i8042_kbd {
	bool scanning;
	uint8_t param_for;	/* command waiting for its parameter, or 0 */
	uint8_t set;		/* scancode set: 1 or 2 */
	uint8_t leds;
	uint8_t typematic;
	uint8_t last;		/* last byte sent, for Resend */
};

struct i8042_aux {
	bool reporting;		/* data reporting enabled (0xf4) */
	bool remote;
	bool wrap;
	bool scaling_2_1;
	uint8_t param_for;
	uint8_t id;
	uint8_t rate;
	uint8_t resolution;
	uint8_t rates[3];	/* last three sample rates, newest last */
	uint8_t buttons;	/* i8042_mouse() bits */
	uint8_t last;
};

struct i8042 {
	const struct device_host *host;

	struct i8042_queue ctrl_q;	/* controller answers */
	struct i8042_queue kbd_q;	/* from the keyboard, untranslated */
	struct i8042_queue aux_q;	/* from the mouse */

	uint8_t ram[32];		/* ram[0]: command byte */
	uint8_t pending;		/* command waiting for a data byte */
	uint8_t outport;
	bool a2;

	uint8_t obuf;
	bool obf;
	bool obuf_aux;
	bool xlate_break;		/* 0xf0 swallowed by the translation */

	bool kbd_irq_level;
	bool aux_irq_level;

	struct i8042_kbd kbd;
	struct i8042_aux aux;
};

/*
 * Scan code set 2 to set 1, from the key tables of the Scan Code
 * Specification: each entry is one key's set 2 make code and its set 1
 * make code.  Codes that are no key's pass unchanged (the keyboard's
 * answers 0xaa, 0xab, 0xee, 0xfa, 0xfe, the 0xe0/0xe1 prefixes), except
 * the overrun code and 0x02, which the controller reports as 0x41 like
 * 0x83 (it is what a query of scancode set 2 answers through it).
 */
static const uint8_t i8042_set2_to_set1[0x85] = {
	[0x00] = 0xff,	/* overrun */
	[0x01] = 0x43,	/* F9 */
	[0x02] = 0x41,
	[0x03] = 0x3f,	/* F5 */
	[0x04] = 0x3d,	/* F3 */
	[0x05] = 0x3b,	/* F1 */
	[0x06] = 0x3c,	/* F2 */
	[0x07] = 0x58,	/* F12 */
	[0x08] = 0x64,	/* F13 */
	[0x09] = 0x44,	/* F10 */
	[0x0a] = 0x42,	/* F8 */
	[0x0b] = 0x40,	/* F6 */
	[0x0c] = 0x3e,	/* F4 */
	[0x0d] = 0x0f,	/* Tab */
	[0x0e] = 0x29,	/* ` */
	[0x10] = 0x65,	/* F14 */
	[0x11] = 0x38,	/* left Alt */
	[0x12] = 0x2a,	/* left Shift */
	[0x13] = 0x70,	/* Katakana/Hiragana */
	[0x14] = 0x1d,	/* left Ctrl */
	[0x15] = 0x10,	/* Q */
	[0x16] = 0x02,	/* 1 */
	[0x18] = 0x66,	/* F15 */
	[0x1a] = 0x2c,	/* Z */
	[0x1b] = 0x1f,	/* S */
	[0x1c] = 0x1e,	/* A */
	[0x1d] = 0x11,	/* W */
	[0x1e] = 0x03,	/* 2 */
	[0x1f] = 0x5b,	/* left GUI (after 0xe0) */
	[0x20] = 0x67,	/* F16 */
	[0x21] = 0x2e,	/* C */
	[0x22] = 0x2d,	/* X */
	[0x23] = 0x20,	/* D */
	[0x24] = 0x12,	/* E */
	[0x25] = 0x05,	/* 4 */
	[0x26] = 0x04,	/* 3 */
	[0x27] = 0x5c,	/* right GUI (after 0xe0) */
	[0x28] = 0x68,	/* F17 */
	[0x29] = 0x39,	/* Space */
	[0x2a] = 0x2f,	/* V */
	[0x2b] = 0x21,	/* F */
	[0x2c] = 0x14,	/* T */
	[0x2d] = 0x13,	/* R */
	[0x2e] = 0x06,	/* 5 */
	[0x2f] = 0x5d,	/* Menu (after 0xe0) */
	[0x30] = 0x69,	/* F18 */
	[0x31] = 0x31,	/* N */
	[0x32] = 0x30,	/* B */
	[0x33] = 0x23,	/* H */
	[0x34] = 0x22,	/* G */
	[0x35] = 0x15,	/* Y */
	[0x36] = 0x07,	/* 6 */
	[0x37] = 0x5e,	/* Power (after 0xe0) */
	[0x38] = 0x6a,	/* F19 */
	[0x3a] = 0x32,	/* M */
	[0x3b] = 0x24,	/* J */
	[0x3c] = 0x16,	/* U */
	[0x3d] = 0x08,	/* 7 */
	[0x3e] = 0x09,	/* 8 */
	[0x3f] = 0x5f,	/* Sleep (after 0xe0) */
	[0x40] = 0x6b,	/* F20 */
	[0x41] = 0x33,	/* , */
	[0x42] = 0x25,	/* K */
	[0x43] = 0x17,	/* I */
	[0x44] = 0x18,	/* O */
	[0x45] = 0x0b,	/* 0 */
	[0x46] = 0x0a,	/* 9 */
	[0x48] = 0x6c,	/* F21 */
	[0x49] = 0x34,	/* . */
	[0x4a] = 0x35,	/* / */
	[0x4b] = 0x26,	/* L */
	[0x4c] = 0x27,	/* ; */
	[0x4d] = 0x19,	/* P */
	[0x4e] = 0x0c,	/* - */
	[0x50] = 0x6d,	/* F22 */
	[0x51] = 0x73,	/* Ro (Brazilian /?) */
	[0x52] = 0x28,	/* ' */
	[0x54] = 0x1a,	/* [ */
	[0x55] = 0x0d,	/* = */
	[0x57] = 0x6e,	/* F23 */
	[0x58] = 0x3a,	/* Caps Lock */
	[0x59] = 0x36,	/* right Shift */
	[0x5a] = 0x1c,	/* Enter */
	[0x5b] = 0x1b,	/* ] */
	[0x5d] = 0x2b,	/* \ */
	[0x5e] = 0x63,	/* Wake (after 0xe0) */
	[0x5f] = 0x76,	/* F24 */
	[0x61] = 0x56,	/* the 102nd key, <> */
	[0x64] = 0x79,	/* Henkan */
	[0x66] = 0x0e,	/* Backspace */
	[0x67] = 0x7b,	/* Muhenkan */
	[0x69] = 0x4f,	/* keypad 1 / End */
	[0x6a] = 0x7d,	/* Yen */
	[0x6b] = 0x4b,	/* keypad 4 / Left */
	[0x6c] = 0x47,	/* keypad 7 / Home */
	[0x6d] = 0x7e,	/* keypad , */
	[0x70] = 0x52,	/* keypad 0 / Insert */
	[0x71] = 0x53,	/* keypad . / Delete */
	[0x72] = 0x50,	/* keypad 2 / Down */
	[0x73] = 0x4c,	/* keypad 5 */
	[0x74] = 0x4d,	/* keypad 6 / Right */
	[0x75] = 0x48,	/* keypad 8 / Up */
	[0x76] = 0x01,	/* Esc */
	[0x77] = 0x45,	/* Num Lock */
	[0x78] = 0x57,	/* F11 */
	[0x79] = 0x4e,	/* keypad + */
	[0x7a] = 0x51,	/* keypad 3 / Page Down */
	[0x7b] = 0x4a,	/* keypad - */
	[0x7c] = 0x37,	/* keypad * */
	[0x7d] = 0x49,	/* keypad 9 / Page Up */
	[0x7e] = 0x46,	/* Scroll Lock */
	[0x83] = 0x41,	/* F7 */
	[0x84] = 0x54,	/* Alt+Print Screen (SysRq) */
};

static uint8_t
i8042_xlate_code(uint8_t b)
{
	uint8_t t = 0;

	if (b < sizeof(i8042_set2_to_set1))
		t = i8042_set2_to_set1[b];
	return t != 0 ? t : b;
}

/*
 * One byte through the set 2 to set 1 translation: the 0xf0 break
 * prefix produces nothing and sets bit 7 of the next byte instead.
 * Returns whether *out holds a byte.
 */
static bool
i8042_xlate(uint8_t b, bool *brk, uint8_t *out)
{
	if (b == KBD_BREAK) {
		*brk = true;
		return false;
	}
	*out = i8042_xlate_code(b) | (*brk ? 0x80 : 0);
	*brk = false;
	return true;
}

static unsigned int
i8042_q_space(const struct i8042_queue *q)
{
	return I8042_QUEUE_SIZE - q->count;
}

/* Dropped when full: only a guest that never reads gets there. */
static void
i8042_q_push(struct i8042_queue *q, uint16_t v)
{
	if (q->count >= I8042_QUEUE_SIZE)
		return;
	q->buf[(q->head + q->count) % I8042_QUEUE_SIZE] = v;
	q->count++;
}

static uint16_t
i8042_q_pop(struct i8042_queue *q)
{
	uint16_t v;

	if (q->count == 0)
		return 0;
	v = q->buf[q->head];
	q->head = (q->head + 1) % I8042_QUEUE_SIZE;
	q->count--;
	return v;
}

static void
i8042_q_clear(struct i8042_queue *q)
{
	q->head = 0;
	q->count = 0;
}

static uint8_t
i8042_ctr(const struct i8042 *k)
{
	return k->ram[0];
}

/*
 * IRQ 1 follows "output buffer full with keyboard data" and IRQ 12
 * "output buffer full with mouse data", each gated by its enable bit in
 * the command byte.  Controller answers count as keyboard data.
 */
static void
i8042_update_irq(struct i8042 *k)
{
	bool kbd = k->obf && !k->obuf_aux && (i8042_ctr(k) & CTR_KBDINT);
	bool aux = k->obf && k->obuf_aux && (i8042_ctr(k) & CTR_AUXINT);

	if (kbd != k->kbd_irq_level) {
		k->kbd_irq_level = kbd;
		device_irq_set(k->host, I8042_LINE_KBD, kbd);
	}
	if (aux != k->aux_irq_level) {
		k->aux_irq_level = aux;
		device_irq_set(k->host, I8042_LINE_AUX, aux);
	}
}

/* Move the next byte into an empty output buffer. */
static void
i8042_fill(struct i8042 *k)
{
	uint16_t v;
	uint8_t b;

	if (k->obf)
		return;
	if (k->ctrl_q.count > 0) {
		v = i8042_q_pop(&k->ctrl_q);
		k->obuf = v & 0xff;
		k->obuf_aux = (v & I8042_QUEUE_AUX) != 0;
		k->obf = true;
		return;
	}
	while (!(i8042_ctr(k) & CTR_KBDDIS) && k->kbd_q.count > 0) {
		b = i8042_q_pop(&k->kbd_q) & 0xff;
		if ((i8042_ctr(k) & CTR_XLATE) &&
		    !i8042_xlate(b, &k->xlate_break, &b))
			continue;
		k->obuf = b;
		k->obuf_aux = false;
		k->obf = true;
		return;
	}
	if (!(i8042_ctr(k) & CTR_AUXDIS) && k->aux_q.count > 0) {
		k->obuf = i8042_q_pop(&k->aux_q) & 0xff;
		k->obuf_aux = true;
		k->obf = true;
	}
}

static void
i8042_update(struct i8042 *k)
{
	i8042_fill(k);
	i8042_update_irq(k);
}

static void
i8042_ctrl_reply(struct i8042 *k, uint8_t b)
{
	i8042_q_push(&k->ctrl_q, b);
}

static uint8_t
i8042_status(const struct i8042 *k)
{
	uint8_t s = STS_INH;

	if (k->obf)
		s |= STS_OBF;
	if (k->obf && k->obuf_aux)
		s |= STS_AUXB;
	if (i8042_ctr(k) & CTR_SYS)
		s |= STS_SYS;
	if (k->a2)
		s |= STS_A2;
	return s;
}

static uint8_t
i8042_read_outport(const struct i8042 *k)
{
	uint8_t v = (k->outport & (OUT_RESET | OUT_A20)) | OUT_LINES;

	if (k->obf && !k->obuf_aux)
		v |= OUT_KBD_OBF;
	if (k->obf && k->obuf_aux)
		v |= OUT_AUX_OBF;
	return v;
}

static void
i8042_request_reset(struct i8042 *k)
{
	device_system_request(k->host, DEVICE_REQUEST_RESET);
}

/*
 * Output port bit 0 drives the CPU's reset line, active low: writing it
 * as 0 resets the system, after which it reads 1 again.
 */
static void
i8042_write_outport(struct i8042 *k, uint8_t v)
{
	k->outport = (v & OUT_A20) | OUT_RESET;
	if (!(v & OUT_RESET))
		i8042_request_reset(k);
}

/* ---- keyboard ---------------------------------------------------- */

static void
i8042_kbd_send(struct i8042 *k, uint8_t b)
{
	k->kbd.last = b;
	i8042_q_push(&k->kbd_q, b);
}

static void
i8042_kbd_defaults(struct i8042 *k)
{
	k->kbd.typematic = KBD_TYPEMATIC_DEFAULT;
	k->kbd.param_for = 0;
}

static void
i8042_kbd_power_on(struct i8042 *k)
{
	i8042_q_clear(&k->kbd_q);
	i8042_kbd_defaults(k);
	k->kbd.scanning = true;
	k->kbd.set = 2;
	k->kbd.leds = 0;
	k->kbd.last = PS2_BAT_OK;
}

/* The second byte of a two-byte keyboard command. */
static void
i8042_kbd_param(struct i8042 *k, uint8_t cmd, uint8_t v)
{
	switch (cmd) {
	case KBD_CMD_LEDS:
		k->kbd.leds = v & 0x07;
		i8042_kbd_send(k, PS2_ACK);
		break;
	case KBD_CMD_TYPEMATIC:
		k->kbd.typematic = v & 0x7f;
		i8042_kbd_send(k, PS2_ACK);
		break;
	default:	/* KBD_CMD_SCANSET */
		if (v == 0) {
			i8042_kbd_send(k, PS2_ACK);
			i8042_kbd_send(k, k->kbd.set);
		} else if (v <= 3) {
			/* Set 3 is acknowledged but not offered: a read
			 * back tells the guest it is still in set 2. */
			if (v != 3)
				k->kbd.set = v;
			i8042_kbd_send(k, PS2_ACK);
		} else {
			i8042_kbd_send(k, PS2_RESEND);
		}
		break;
	}
}

/* A byte the guest sends to the keyboard (IBM "Keyboard Commands"). */
static void
i8042_kbd_write(struct i8042 *k, uint8_t v)
{
	uint8_t cmd = k->kbd.param_for;

	if (cmd != 0) {
		k->kbd.param_for = 0;
		i8042_kbd_param(k, cmd, v);
		return;
	}
	switch (v) {
	case KBD_CMD_RESET:
		/* Power-on reset, then the basic assurance test. */
		i8042_kbd_power_on(k);
		i8042_kbd_send(k, PS2_ACK);
		i8042_kbd_send(k, PS2_BAT_OK);
		break;
	case KBD_CMD_RESEND:
		i8042_kbd_send(k, k->kbd.last);
		break;
	case KBD_CMD_DEFAULTS:
		/* Defaults, output buffer cleared, scanning continues. */
		i8042_q_clear(&k->kbd_q);
		i8042_kbd_defaults(k);
		k->kbd.scanning = true;
		i8042_kbd_send(k, PS2_ACK);
		break;
	case KBD_CMD_DISABLE:
		/* Defaults, output buffer cleared, scanning stops. */
		i8042_q_clear(&k->kbd_q);
		i8042_kbd_defaults(k);
		k->kbd.scanning = false;
		i8042_kbd_send(k, PS2_ACK);
		break;
	case KBD_CMD_ENABLE:
		/* Output buffer cleared, scanning starts. */
		i8042_q_clear(&k->kbd_q);
		k->kbd.scanning = true;
		i8042_kbd_send(k, PS2_ACK);
		break;
	case KBD_CMD_IDENTIFY:
		i8042_kbd_send(k, PS2_ACK);
		i8042_kbd_send(k, 0xab);
		i8042_kbd_send(k, 0x83);
		break;
	case KBD_CMD_ECHO:
		i8042_kbd_send(k, KBD_ECHO);
		break;
	case KBD_CMD_LEDS:
	case KBD_CMD_TYPEMATIC:
	case KBD_CMD_SCANSET:
		k->kbd.param_for = v;
		i8042_kbd_send(k, PS2_ACK);
		break;
	default:
		/* Set 3 key-type commands are accepted and ignored. */
		if (v >= KBD_CMD_SET3_FIRST && v <= KBD_CMD_SET3_LAST)
			i8042_kbd_send(k, PS2_ACK);
		else
			i8042_kbd_send(k, PS2_RESEND);
		break;
	}
}

/* ---- mouse ------------------------------------------------------- */

static void
i8042_aux_send(struct i8042 *k, uint8_t b)
{
	k->aux.last = b;
	i8042_q_push(&k->aux_q, b);
}

static void
i8042_aux_defaults(struct i8042 *k)
{
	k->aux.reporting = false;
	k->aux.remote = false;
	k->aux.scaling_2_1 = false;
	k->aux.rate = AUX_RATE_DEFAULT;
	k->aux.resolution = AUX_RESOLUTION_DEFAULT;
	k->aux.param_for = 0;
}

static void
i8042_aux_power_on(struct i8042 *k)
{
	i8042_q_clear(&k->aux_q);
	i8042_aux_defaults(k);
	k->aux.wrap = false;
	k->aux.id = AUX_ID_PS2;
	k->aux.rates[0] = k->aux.rates[1] = k->aux.rates[2] = 0;
	k->aux.last = PS2_BAT_OK;
}

static uint8_t
i8042_aux_buttons(const struct i8042 *k)
{
	uint8_t b = 0;

	if (k->aux.buttons & BTN_LEFT)
		b |= AUX_PKT_LEFT;
	if (k->aux.buttons & BTN_RIGHT)
		b |= AUX_PKT_RIGHT;
	if (k->aux.buttons & BTN_MIDDLE)
		b |= AUX_PKT_MIDDLE;
	return b;
}

static unsigned int
i8042_aux_packet_size(const struct i8042 *k)
{
	return k->aux.id == AUX_ID_PS2 ? 3 : 4;
}

/*
 * One movement packet ("Pointing Device", data report format): 9-bit
 * two's complement X and Y, Y positive upwards; the IntelliMouse adds a
 * fourth byte with the wheel, and in 5-button mode buttons 4 and 5.
 */
static void
i8042_aux_packet(struct i8042 *k, int x, int y, int z)
{
	uint8_t b0 = AUX_PKT_ONE | i8042_aux_buttons(k);
	uint8_t b3;

	if (x < 0)
		b0 |= AUX_PKT_XSIGN;
	if (y < 0)
		b0 |= AUX_PKT_YSIGN;
	i8042_aux_send(k, b0);
	i8042_aux_send(k, (uint8_t)(x & 0xff));
	i8042_aux_send(k, (uint8_t)(y & 0xff));
	if (k->aux.id == AUX_ID_PS2)
		return;
	b3 = (uint8_t)(z & 0xff);
	if (k->aux.id == AUX_ID_5BUTTON) {
		b3 &= 0x0f;
		if (k->aux.buttons & BTN_SIDE)
			b3 |= 0x10;
		if (k->aux.buttons & BTN_EXTRA)
			b3 |= 0x20;
	}
	i8042_aux_send(k, b3);
}

/*
 * The IntelliMouse knocks: sample rates 200, 100, 80 turn a plain mouse
 * into a wheel mouse (ID 3); then 200, 200, 80 into a 5-button one (ID 4).
 */
static void
i8042_aux_sample_rate(struct i8042 *k, uint8_t rate)
{
	uint8_t *r = k->aux.rates;

	k->aux.rate = rate;
	r[0] = r[1];
	r[1] = r[2];
	r[2] = rate;
	if (r[0] == 200 && r[1] == 100 && r[2] == 80 &&
	    k->aux.id == AUX_ID_PS2)
		k->aux.id = AUX_ID_WHEEL;
	else if (r[0] == 200 && r[1] == 200 && r[2] == 80 &&
	    k->aux.id == AUX_ID_WHEEL)
		k->aux.id = AUX_ID_5BUTTON;
}

/* A byte the guest sends to the mouse ("Pointing Device" commands). */
static void
i8042_aux_write(struct i8042 *k, uint8_t v)
{
	uint8_t cmd = k->aux.param_for;
	uint8_t sts;

	/* Wrap mode echoes everything but Reset and Reset Wrap Mode. */
	if (k->aux.wrap && v != AUX_CMD_RESET && v != AUX_CMD_RESET_WRAP) {
		i8042_aux_send(k, v);
		return;
	}
	if (cmd != 0) {
		k->aux.param_for = 0;
		if (cmd == AUX_CMD_SAMPLE_RATE)
			i8042_aux_sample_rate(k, v);
		else
			k->aux.resolution = v & 0x03;
		i8042_aux_send(k, PS2_ACK);
		return;
	}
	switch (v) {
	case AUX_CMD_RESET:
		i8042_aux_power_on(k);
		i8042_aux_send(k, PS2_ACK);
		i8042_aux_send(k, PS2_BAT_OK);
		i8042_aux_send(k, AUX_ID_PS2);
		break;
	case AUX_CMD_RESEND:
		i8042_aux_send(k, k->aux.last);
		break;
	case AUX_CMD_DEFAULTS:
		i8042_aux_defaults(k);
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_DISABLE:
		k->aux.reporting = false;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_ENABLE:
		k->aux.reporting = true;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_SAMPLE_RATE:
	case AUX_CMD_RESOLUTION:
		k->aux.param_for = v;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_GET_ID:
		i8042_aux_send(k, PS2_ACK);
		i8042_aux_send(k, k->aux.id);
		break;
	case AUX_CMD_REMOTE:
		k->aux.remote = true;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_STREAM:
		k->aux.remote = false;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_WRAP:
		k->aux.wrap = true;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_RESET_WRAP:
		k->aux.wrap = false;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_READ_DATA:
		i8042_aux_send(k, PS2_ACK);
		i8042_aux_packet(k, 0, 0, 0);
		break;
	case AUX_CMD_STATUS:
		sts = 0;
		if (k->aux.remote)
			sts |= AUX_STS_REMOTE;
		if (k->aux.reporting)
			sts |= AUX_STS_ENABLED;
		if (k->aux.scaling_2_1)
			sts |= AUX_STS_SCALING;
		if (k->aux.buttons & BTN_LEFT)
			sts |= AUX_STS_LEFT;
		if (k->aux.buttons & BTN_MIDDLE)
			sts |= AUX_STS_MIDDLE;
		if (k->aux.buttons & BTN_RIGHT)
			sts |= AUX_STS_RIGHT;
		i8042_aux_send(k, PS2_ACK);
		i8042_aux_send(k, sts);
		i8042_aux_send(k, k->aux.resolution);
		i8042_aux_send(k, k->aux.rate);
		break;
	case AUX_CMD_SCALING_1_1:
		k->aux.scaling_2_1 = false;
		i8042_aux_send(k, PS2_ACK);
		break;
	case AUX_CMD_SCALING_2_1:
		k->aux.scaling_2_1 = true;
		i8042_aux_send(k, PS2_ACK);
		break;
	default:
		i8042_aux_send(k, PS2_RESEND);
		break;
	}
}

/* ---- controller -------------------------------------------------- */

/* A byte written to port 0x64 ("Keyboard/Auxiliary Device Controller"). */
static void
i8042_command(struct i8042 *k, uint8_t cmd)
{
	k->pending = 0;
	if (cmd >= CMD_READ_RAM && cmd < CMD_READ_RAM + 0x20) {
		i8042_ctrl_reply(k, k->ram[cmd & 0x1f]);
		return;
	}
	if (cmd >= CMD_WRITE_RAM && cmd < CMD_WRITE_RAM + 0x20) {
		k->pending = cmd;
		return;
	}
	if (cmd >= CMD_PULSE) {
		/* Bits 3-0 low pulse the output port bits; bit 0 is the
		 * reset line. */
		if (!(cmd & OUT_RESET))
			i8042_request_reset(k);
		return;
	}
	switch (cmd) {
	case CMD_PASSWORD_TEST:
		i8042_ctrl_reply(k, I8042_NO_PASSWORD);
		break;
	case CMD_AUX_DISABLE:
		k->ram[0] |= CTR_AUXDIS;
		break;
	case CMD_AUX_ENABLE:
		k->ram[0] &= ~CTR_AUXDIS;
		break;
	case CMD_AUX_TEST:
	case CMD_KBD_TEST:
		i8042_ctrl_reply(k, 0x00);	/* no error */
		break;
	case CMD_SELF_TEST:
		/* A passed self test sets the system flag. */
		k->ram[0] |= CTR_SYS;
		i8042_ctrl_reply(k, I8042_SELF_TEST_OK);
		break;
	case CMD_KBD_DISABLE:
		k->ram[0] |= CTR_KBDDIS;
		break;
	case CMD_KBD_ENABLE:
		k->ram[0] &= ~CTR_KBDDIS;
		break;
	case CMD_READ_INPUT:
		/* Bit 7: keyboard not inhibited by the keylock. */
		i8042_ctrl_reply(k, 0x80);
		break;
	case CMD_READ_OUTPUT:
		i8042_ctrl_reply(k, i8042_read_outport(k));
		break;
	case CMD_WRITE_OUTPUT:
	case CMD_WRITE_KBD_OBUF:
	case CMD_WRITE_AUX_OBUF:
	case CMD_WRITE_AUX:
		k->pending = cmd;
		break;
	case CMD_A20_DISABLE:
		k->outport &= ~OUT_A20;
		break;
	case CMD_A20_ENABLE:
		k->outport |= OUT_A20;
		break;
	case CMD_READ_TEST:
		i8042_ctrl_reply(k, 0x00);
		break;
	default:
		break;		/* unknown commands are ignored */
	}
}

/* A byte written to port 0x60. */
static void
i8042_data(struct i8042 *k, uint8_t v)
{
	uint8_t cmd = k->pending;

	k->pending = 0;
	if (cmd >= CMD_WRITE_RAM && cmd < CMD_WRITE_RAM + 0x20) {
		if (cmd == CMD_WRITE_RAM &&
		    ((k->ram[0] ^ v) & CTR_XLATE) != 0)
			k->xlate_break = false;
		k->ram[cmd & 0x1f] = v;
		return;
	}
	switch (cmd) {
	case CMD_WRITE_OUTPUT:
		i8042_write_outport(k, v);
		break;
	case CMD_WRITE_KBD_OBUF:
		/* As if the keyboard sent it; not translated. */
		i8042_q_push(&k->ctrl_q, v);
		break;
	case CMD_WRITE_AUX_OBUF:
		/* As if the mouse sent it. */
		i8042_q_push(&k->ctrl_q, v | I8042_QUEUE_AUX);
		break;
	case CMD_WRITE_AUX:
		i8042_aux_write(k, v);
		break;
	default:
		i8042_kbd_write(k, v);
		break;
	}
}

static uint8_t
i8042_read_data(struct i8042 *k)
{
	uint8_t v = k->obuf;	/* an empty buffer reads its last byte */

	if (!k->obf)
		return v;
	k->obf = false;
	/* Lower the line, then raise it again for the next byte. */
	i8042_update_irq(k);
	i8042_update(k);
	return v;
}

/*
 * Ports 0x60 and 0x64 only; the offsets between them belong to other
 * chips and float high here.  A wider access is a run of byte accesses.
 */
static void
i8042_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct i8042 *k = dev;
	uint8_t *p = data;
	unsigned int i;

	for (i = 0; i < size; i++) {
		if (offset >= I8042_NPORTS || i >= I8042_NPORTS - offset)
			p[i] = 0xff;
		else if (offset + i == I8042_DATA)
			p[i] = i8042_read_data(k);
		else if (offset + i == I8042_STATUS)
			p[i] = i8042_status(k);
		else
			p[i] = 0xff;
	}
}

static void
i8042_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct i8042 *k = dev;
	const uint8_t *p = data;
	unsigned int i;

	for (i = 0; i < size; i++) {
		if (offset >= I8042_NPORTS || i >= I8042_NPORTS - offset)
			continue;
		if (offset + i == I8042_DATA) {
			k->a2 = false;
			i8042_data(k, p[i]);
		} else if (offset + i == I8042_COMMAND) {
			k->a2 = true;
			i8042_command(k, p[i]);
		} else {
			continue;
		}
		i8042_update(k);
	}
}

int
i8042_key(struct i8042 *k, const uint8_t *set2, size_t len)
{
	uint8_t b;
	bool brk = false;
	size_t i;

	if (!k->kbd.scanning)
		return 0;
	if (len > i8042_q_space(&k->kbd_q) ||
	    i8042_q_space(&k->kbd_q) - len < I8042_QUEUE_RESERVE)
		return -ENOSPC;
	for (i = 0; i < len; i++) {
		b = set2[i];
		/* A keyboard switched to set 1 translates by itself. */
		if (k->kbd.set == 1 && !i8042_xlate(b, &brk, &b))
			continue;
		i8042_kbd_send(k, b);
	}
	i8042_update(k);
	return 0;
}

int
i8042_ctrl_alt_del(struct i8042 *k)
{
	/*
	 * Left Ctrl, left Alt, keypad Delete made, then broken in reverse
	 * order; set 1 through the translation: 1d 38 53 d3 b8 9d.
	 */
	static const uint8_t seq[] = {
		0x14, 0x11, 0x71,
		0xf0, 0x71, 0xf0, 0x11, 0xf0, 0x14,
	};

	return i8042_key(k, seq, sizeof(seq));
}

static int
i8042_clamp(long long v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : (int)v;
}

static long long
i8042_packets_for(long long v, long long neg_step, long long pos_step)
{
	if (v < 0)
		return (-v + neg_step - 1) / neg_step;
	return (v + pos_step - 1) / pos_step;
}

int
i8042_mouse(struct i8042 *k, int dx, int dy, int dz, unsigned int buttons)
{
	long long x = dx, y = -(long long)dy, z = dz, n, nz;
	unsigned int psize = i8042_aux_packet_size(k);
	int cx, cy, cz;

	if (!k->aux.reporting || k->aux.remote || k->aux.wrap)
		return 0;
	if (k->aux.id == AUX_ID_PS2)
		z = 0;
	/* Each packet moves at most 255 counts per axis, 7 or 8 clicks. */
	n = i8042_packets_for(x, 256, 255);
	if (i8042_packets_for(y, 256, 255) > n)
		n = i8042_packets_for(y, 256, 255);
	nz = i8042_packets_for(z, 8, 7);
	if (nz > n)
		n = nz;
	if (n == 0)
		n = 1;
	if (i8042_q_space(&k->aux_q) < I8042_QUEUE_RESERVE ||
	    n > (long long)((i8042_q_space(&k->aux_q) - I8042_QUEUE_RESERVE) /
	    psize))
		return -ENOSPC;
	k->aux.buttons = buttons & 0x1f;
	do {
		cx = i8042_clamp(x, -256, 255);
		cy = i8042_clamp(y, -256, 255);
		cz = i8042_clamp(z, -8, 7);
		i8042_aux_packet(k, cx, cy, cz);
		x -= cx;
		y -= cy;
		z -= cz;
	} while (x != 0 || y != 0 || z != 0);
	i8042_update(k);
	return 0;
}

/* The controller and both devices as they come out of power-on. */
static void
i8042_power_on(struct i8042 *k)
{
	i8042_q_clear(&k->ctrl_q);
	k->ram[0] = CTR_DEFAULT;
	k->pending = 0;
	k->outport = OUT_RESET | OUT_A20;
	k->a2 = false;
	k->obf = false;
	k->obuf_aux = false;
	k->xlate_break = false;
	i8042_kbd_power_on(k);
	i8042_aux_power_on(k);
	k->aux.buttons = 0;
	/*
	 * No 0xaa from the keyboard's power-on self test: on a PC the
	 * firmware would have read it, and there is none here.
	 */
	i8042_update(k);
}

struct i8042 *
i8042_new(const struct device_host *host)
{
	struct i8042 *k;

	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return NULL;
	k->host = host;
	i8042_power_on(k);
	return k;
}

void
i8042_free(struct i8042 *k)
{
	free(k);
}

#define I8042_STATE(nm, ty, m, ...)					\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct i8042, m),	\
	    __VA_ARGS__ }

/*
 * The controller, its three queues, the keyboard and the mouse.  The
 * interrupt levels are not saved: they follow from the output buffer
 * and the command byte (i8042_update_irq).
 */
static const struct dev_state_field i8042_state_fields[] = {
	I8042_STATE("ctrl_q_buf", DEV_STATE_ARRAY_U16, ctrl_q.buf,
	    .max = I8042_QUEUE_AUX | 0xff),
	I8042_STATE("ctrl_q_head", DEV_STATE_U32, ctrl_q.head,
	    .max = I8042_QUEUE_SIZE - 1),
	I8042_STATE("ctrl_q_count", DEV_STATE_U32, ctrl_q.count,
	    .max = I8042_QUEUE_SIZE),
	I8042_STATE("kbd_q_buf", DEV_STATE_ARRAY_U16, kbd_q.buf,
	    .max = I8042_QUEUE_AUX | 0xff),
	I8042_STATE("kbd_q_head", DEV_STATE_U32, kbd_q.head,
	    .max = I8042_QUEUE_SIZE - 1),
	I8042_STATE("kbd_q_count", DEV_STATE_U32, kbd_q.count,
	    .max = I8042_QUEUE_SIZE),
	I8042_STATE("aux_q_buf", DEV_STATE_ARRAY_U16, aux_q.buf,
	    .max = I8042_QUEUE_AUX | 0xff),
	I8042_STATE("aux_q_head", DEV_STATE_U32, aux_q.head,
	    .max = I8042_QUEUE_SIZE - 1),
	I8042_STATE("aux_q_count", DEV_STATE_U32, aux_q.count,
	    .max = I8042_QUEUE_SIZE),
	I8042_STATE("ram", DEV_STATE_BYTES, ram),
	I8042_STATE("pending", DEV_STATE_U8, pending),
	I8042_STATE("outport", DEV_STATE_U8, outport),
	I8042_STATE("a2", DEV_STATE_BOOL, a2),
	I8042_STATE("obuf", DEV_STATE_U8, obuf),
	I8042_STATE("obf", DEV_STATE_BOOL, obf),
	I8042_STATE("obuf_aux", DEV_STATE_BOOL, obuf_aux),
	I8042_STATE("xlate_break", DEV_STATE_BOOL, xlate_break),
	I8042_STATE("kbd_scanning", DEV_STATE_BOOL, kbd.scanning),
	I8042_STATE("kbd_param_for", DEV_STATE_U8, kbd.param_for),
	I8042_STATE("kbd_set", DEV_STATE_U8, kbd.set, .max = 2),
	I8042_STATE("kbd_leds", DEV_STATE_U8, kbd.leds),
	I8042_STATE("kbd_typematic", DEV_STATE_U8, kbd.typematic,
	    .max = 0x7f),
	I8042_STATE("kbd_last", DEV_STATE_U8, kbd.last),
	I8042_STATE("aux_reporting", DEV_STATE_BOOL, aux.reporting),
	I8042_STATE("aux_remote", DEV_STATE_BOOL, aux.remote),
	I8042_STATE("aux_wrap", DEV_STATE_BOOL, aux.wrap),
	I8042_STATE("aux_scaling_2_1", DEV_STATE_BOOL, aux.scaling_2_1),
	I8042_STATE("aux_param_for", DEV_STATE_U8, aux.param_for),
	I8042_STATE("aux_id", DEV_STATE_U8, aux.id, .max = AUX_ID_5BUTTON),
	I8042_STATE("aux_rate", DEV_STATE_U8, aux.rate),
	I8042_STATE("aux_resolution", DEV_STATE_U8, aux.resolution),
	I8042_STATE("aux_rates", DEV_STATE_BYTES, aux.rates),
	I8042_STATE("aux_buttons", DEV_STATE_U8, aux.buttons),
	I8042_STATE("aux_last", DEV_STATE_U8, aux.last),
};

static int
i8042_state_check(const void *state, struct dev_state_error *err)
{
	const struct i8042 *k = state;

	if (k->kbd.set != 1 && k->kbd.set != 2)
		return dev_state_fail(err, -EINVAL,
		    "i8042: scancode set %u", k->kbd.set);
	if (k->aux.id != AUX_ID_PS2 && k->aux.id != AUX_ID_WHEEL &&
	    k->aux.id != AUX_ID_5BUTTON)
		return dev_state_fail(err, -EINVAL, "i8042: mouse id %u",
		    k->aux.id);
	return 0;
}

const struct dev_state_table i8042_state_table = {
	DEV_STATE_TABLE("i8042", 1, struct i8042, i8042_state_fields),
	.check = i8042_state_check,
};

static int
i8042_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&i8042_state_table, dev, out);
}

/* The interrupt lines follow the loaded output buffer. */
static int
i8042_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	int rc;

	rc = dev_state_load(&i8042_state_table, dev, buf, len, err);
	if (rc < 0)
		return rc;
	i8042_update_irq(dev);
	return 0;
}

static void
i8042_ops_free(void *dev)
{
	i8042_free(dev);
}

const struct device_ops i8042_device_ops = {
	.name = "i8042",
	.read = i8042_read,
	.write = i8042_write,
	.save = i8042_save,
	.load = i8042_load,
	.free = i8042_ops_free,
};
