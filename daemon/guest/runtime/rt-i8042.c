/*
 * The 8042 keyboard controller: enough to take keyboard interrupts and
 * to reset the machine (command 0xfe pulses the CPU reset line).
 */
#include "rt.h"

#define I8042_DATA	0x60
#define I8042_STATUS	0x64
#define I8042_CMD	0x64

#define STS_OBF		0x01	/* output buffer full: data for us */
#define STS_IBF		0x02	/* input buffer full: controller busy */
#define STS_AUX		0x20	/* the byte came from the mouse */

#define CMD_READ_CTR	0x20
#define CMD_WRITE_CTR	0x60
#define CMD_RESET	0xfe

#define CTR_KBD_INT	0x01
#define CTR_KBD_DISABLE	0x10
#define CTR_XLATE	0x40	/* translate to scan code set 1 */

#define SPINS		10000

static void (*i8042_kbd_fn)(uint8_t);

static int
i8042_wait_write(void)
{
	int i;

	for (i = 0; i < SPINS; i++)
		if ((inb(I8042_STATUS) & STS_IBF) == 0)
			return 0;
	return -1;
}

static int
i8042_wait_read(void)
{
	int i;

	for (i = 0; i < SPINS; i++)
		if (inb(I8042_STATUS) & STS_OBF)
			return 0;
	return -1;
}

static void
i8042_kbd_irq(void)
{
	uint8_t sts;
	int i;

	for (i = 0; i < 16; i++) {
		sts = inb(I8042_STATUS);
		if ((sts & STS_OBF) == 0)
			break;
		if (sts & STS_AUX)
			(void)inb(I8042_DATA);
		else
			i8042_kbd_fn(inb(I8042_DATA));
	}
}

/*
 * Turn on the keyboard interrupt and set-1 translation in the
 * controller's command byte, then deliver every scan code to fn from the
 * IRQ 1 handler.  Returns -1 if the controller does not answer.
 */
int
i8042_kbd_irq_enable(void (*fn)(uint8_t scancode))
{
	uint8_t ctr;
	int i;

	i8042_kbd_fn = fn;
	for (i = 0; i < 16 && (inb(I8042_STATUS) & STS_OBF); i++)
		(void)inb(I8042_DATA);
	if (i8042_wait_write() != 0)
		return -1;
	outb(I8042_CMD, CMD_READ_CTR);
	if (i8042_wait_read() != 0)
		return -1;
	ctr = inb(I8042_DATA);
	ctr = (ctr | CTR_KBD_INT | CTR_XLATE) & ~CTR_KBD_DISABLE;
	irq_enable(1, i8042_kbd_irq);
	if (i8042_wait_write() != 0)
		return -1;
	outb(I8042_CMD, CMD_WRITE_CTR);
	if (i8042_wait_write() != 0)
		return -1;
	outb(I8042_DATA, ctr);
	return 0;
}

/* Returns only if the machine did not reset. */
void
i8042_reset(void)
{
	(void)i8042_wait_write();
	outb(I8042_CMD, CMD_RESET);
}

/*
 * Track Ctrl and Alt (left or right: the right keys come as e0 1d and
 * e0 38) and report Delete (53, or e0 53 on the edit pad) while both are
 * held.  Set 1: a break code is the make code with bit 7 set.
 */
bool
cad_feed(struct cad_state *s, uint8_t sc)
{
	bool make = (sc & 0x80) == 0;

	if (sc == 0xe0 || sc == 0xe1)
		return false;	/* prefixes: the next byte says it all */
	switch (sc & 0x7f) {
	case 0x1d:
		s->ctrl = make;
		break;
	case 0x38:
		s->alt = make;
		break;
	case 0x53:
		return make && s->ctrl && s->alt;
	default:
		break;
	}
	return false;
}
