/*
 * demo: the guest users see when they start a VM without a kernel.
 * It shows the time once a second (local APIC timer, seeded from the
 * CMOS clock), echoes what is typed on the console, and shuts down on
 * Ctrl-Alt-Del, which is what "vmctl stop" sends.  Between events the CPU
 * halts, and each event is a few dozen lines of work.
 *
 * With a display (a reserved memory map range at the platform's
 * framebuffer address, see runtime/rt-fb.c; "fb=WxH" if not 1024x768) it
 * also draws: a title, the clock in big digits and the date under it,
 * and a line of what is typed on the serial console or the keyboard
 * (Enter starts the line again).  Only what changes is redrawn: a
 * second usually costs one digit.  Without one it draws nothing.
 *
 * Output:
 *   vmmd demo guest ... (banner)
 *   demo: clock 2026-11-30 06:30:00 UTC (from CMOS)
 *   demo: display WxH at 0xADDR  (only with a framebuffer)
 *   demo: 2026-11-30 06:30:01 UTC    (every second)
 *   demo: ctrl-alt-del received, goodbye
 */
#include "runtime/rt.h"

/* Re-read the CMOS clock this often, so timer drift cannot accumulate. */
#define RESYNC_SECONDS	600

static struct rtc_time now;
static unsigned since_sync;
static struct cad_state cad;
static volatile bool cad_seen;

/* --- the screen ------------------------------------------------------- */

#define BG		FB_RGB(0x10, 0x18, 0x30)
#define TITLE_FG	FB_RGB(0xff, 0xff, 0xff)
#define CLOCK_FG	FB_RGB(0x7f, 0xdb, 0xff)
#define DATE_FG		FB_RGB(0xc0, 0xc0, 0xc0)
#define HINT_FG		FB_RGB(0x80, 0x90, 0xa0)
#define TYPED_FG	FB_RGB(0xff, 0xe0, 0x70)

#define TITLE		"VMMD DEMO GUEST"
#define HINT		"TYPE ON THE KEYBOARD OR THE SERIAL CONSOLE:"
#define LINE_MAX	512

/* Where things go, from the screen's size (see demo_screen_init). */
struct demo_screen {
	struct fb fb;
	unsigned clock_scale, date_scale, text_scale;
	uint32_t clock_x, clock_y, date_x, date_y, line_x, line_y;
	unsigned line_cap, line_len;	/* characters */
	char clock[9], date[16];	/* what is on the screen now */
};

static struct demo_screen scr;

/* The width of n characters at scale s. */
static uint32_t
text_w(size_t n, unsigned s)
{
	return (uint32_t)n * FONT_CELL_W * s;
}

static uint32_t
centre(uint32_t width, uint32_t w)
{
	return w < width ? (width - w) / 2 : 0;
}

/* Draw only the characters of s that differ from shown, then keep s. */
static void
demo_draw_changes(uint32_t x, uint32_t y, unsigned scale, uint32_t fg,
    const char *s, char *shown, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size && s[i] != '\0'; i++) {
		if (s[i] != shown[i])
			fb_glyph(&scr.fb, x + text_w(i, scale), y, s[i], scale,
			    fg, BG);
		shown[i] = s[i];
	}
	shown[i] = '\0';
}

static void
demo_draw_time(void)
{
	char clock[9], date[16];

	if (scr.fb.base == NULL)
		return;
	cons_snprintf(clock, sizeof(clock), "%02d:%02d:%02d", now.hour,
	    now.min, now.sec);
	cons_snprintf(date, sizeof(date), "%04d-%02d-%02d UTC", now.year,
	    now.mon, now.day);
	demo_draw_changes(scr.clock_x, scr.clock_y, scr.clock_scale, CLOCK_FG,
	    clock, scr.clock, sizeof(scr.clock));
	demo_draw_changes(scr.date_x, scr.date_y, scr.date_scale, DATE_FG,
	    date, scr.date, sizeof(scr.date));
}

static void
demo_cursor(char c)
{
	if (scr.line_len < scr.line_cap)
		fb_glyph(&scr.fb, scr.line_x + text_w(scr.line_len,
		    scr.text_scale), scr.line_y, c, scr.text_scale, TYPED_FG,
		    BG);
}

/* A character typed: Enter ('\r') starts again, '\b' takes one back. */
static void
demo_type(char c)
{
	const struct fb *fb = &scr.fb;

	if (fb->base == NULL)
		return;
	if (c == '\r' || (c >= 0x20 && c < 0x7f &&
	    scr.line_len + 1 >= scr.line_cap)) {
		fb_fill(fb, scr.line_x, scr.line_y,
		    text_w(scr.line_cap, scr.text_scale),
		    FONT_CELL_H * scr.text_scale, BG);
		scr.line_len = 0;
		if (c == '\r') {
			demo_cursor('_');
			return;
		}
	}
	if (c == '\b') {
		if (scr.line_len == 0)
			return;
		demo_cursor(' ');
		scr.line_len--;
	} else if (c >= 0x20 && c < 0x7f) {
		demo_cursor(c);
		scr.line_len++;
	} else {
		return;
	}
	demo_cursor('_');
}

/*
 * Lay the screen out for its size and draw what does not change.  One
 * fill of the whole screen (after a reset it may hold the last picture),
 * then a few lines of text.
 */
static void
demo_screen_init(void)
{
	struct fb *fb = &scr.fb;
	unsigned ts;
	uint32_t w, h, lh;

	if (fb_find(fb) != NULL)
		return;
	w = fb->width;
	h = fb->height;
	printf("demo: display %ux%u at 0x%lx\n", w, h, fb->phys);

	scr.clock_scale = w / 80 < 1 ? 1 : w / 80 > 16 ? 16 : w / 80;
	scr.date_scale = scr.clock_scale / 4 < 1 ? 1 : scr.clock_scale / 4;
	scr.text_scale = w >= 640 ? 2 : 1;
	ts = w / 256 < 1 ? 1 : w / 256 > 6 ? 6 : w / 256;

	scr.clock_x = centre(w, text_w(8, scr.clock_scale));
	scr.clock_y = centre(h, FONT_CELL_H * scr.clock_scale);
	scr.date_x = centre(w, text_w(14, scr.date_scale));
	scr.date_y = scr.clock_y + FONT_CELL_H * (scr.clock_scale + 1);
	lh = FONT_CELL_H * scr.text_scale;
	scr.line_x = lh;
	scr.line_y = h > 2 * lh ? h - 2 * lh : 0;
	scr.line_cap = (w - 2 * scr.line_x) / text_w(1, scr.text_scale);
	if (scr.line_cap > LINE_MAX)
		scr.line_cap = LINE_MAX;
	memset(scr.clock, 0, sizeof(scr.clock));
	memset(scr.date, 0, sizeof(scr.date));

	fb_fill(fb, 0, 0, w, h, BG);
	fb_text(fb, centre(w, text_w(sizeof(TITLE) - 1, ts)), h / 8, TITLE,
	    ts, TITLE_FG, BG);
	if (scr.line_y > lh + lh / 2)
		fb_text(fb, scr.line_x, scr.line_y - lh - lh / 2, HINT,
		    scr.text_scale, HINT_FG, BG);
	demo_cursor('_');
	demo_draw_time();
}

/* --- the keyboard: scan code set 1 (translated), US layout ----------- */

static const char kbd_plain[0x3a] =
    "\0\0" "1234567890-=" "\b\t" "qwertyuiop[]" "\r\0"
    "asdfghjkl;'`" "\0\\" "zxcvbnm,./" "\0*\0 ";
static const char kbd_shift[0x3a] =
    "\0\0" "!@#$%^&*()_+" "\b\t" "QWERTYUIOP{}" "\r\0"
    "ASDFGHJKL:\"~" "\0|" "ZXCVBNM<>?" "\0*\0 ";

static bool kbd_lshift, kbd_rshift, kbd_e0;

static char
kbd_char(uint8_t sc)
{
	bool make = (sc & 0x80) == 0, e0 = kbd_e0;
	uint8_t code = sc & 0x7f;

	kbd_e0 = sc == 0xe0;
	if (sc == 0xe0 || sc == 0xe1)
		return 0;
	/* After e0: keypad Enter types; fake shifts and the rest do not. */
	if (e0)
		return make && code == 0x1c ? '\r' : 0;
	if (code == 0x2a)
		kbd_lshift = make;
	else if (code == 0x36)
		kbd_rshift = make;
	if (!make || code >= sizeof(kbd_plain) || cad.ctrl || cad.alt)
		return 0;
	return (kbd_lshift || kbd_rshift ? kbd_shift : kbd_plain)[code];
}

static void
demo_tick(void)
{
	struct rtc_time t;

	rtc_time_add_second(&now);
	if (++since_sync >= RESYNC_SECONDS) {
		since_sync = 0;
		if (cmos_read_time(&t) == 0 && rtc_time_valid(&t))
			now = t;
	}
	printf("demo: %04d-%02d-%02d %02d:%02d:%02d UTC\n", now.year, now.mon,
	    now.day, now.hour, now.min, now.sec);
	demo_draw_time();
}

static void
demo_rx(uint8_t c)
{
	if (c == '\r')
		cons_write("\r\n", 2);
	else if (c == 0x7f || c == '\b')
		cons_write("\b \b", 3);
	else
		cons_write((const char *)&c, 1);
	demo_type(c == 0x7f ? '\b' : (char)c);
}

static void
demo_key(uint8_t sc)
{
	char c;

	if (cad_feed(&cad, sc))
		cad_seen = true;
	if ((c = kbd_char(sc)) != 0)
		demo_type(c);
}

void
guest_main(void)
{
	printf("\n"
	    "vmmd demo guest\n"
	    "  A tiny guest kernel: it prints the time once a second, echoes\n"
	    "  what you type, and shuts down cleanly on Ctrl-Alt-Del\n"
	    "  (\"vmctl stop\" sends one).\n"
	    "  Detach from \"vmctl console\" with Ctrl-].\n"
	    "\n");
	if (cmos_read_time(&now) != 0 || !rtc_time_valid(&now)) {
		printf("demo: CMOS clock unreadable, counting from 1970\n");
		rtc_time_from_epoch(&now, 0);
	} else {
		printf("demo: clock %04d-%02d-%02d %02d:%02d:%02d UTC "
		    "(from CMOS)\n", now.year, now.mon, now.day, now.hour,
		    now.min, now.sec);
	}

	demo_screen_init();

	if (lapic_timer_calibrate(50) != 0)
		printf("demo: timer calibration failed, assuming 1 GHz\n");
	serial_rx_irq_enable(demo_rx);
	if (i8042_kbd_irq_enable(demo_key) != 0)
		printf("demo: keyboard controller not responding\n");
	lapic_timer_periodic_ms(1000, demo_tick);

	for (;;) {
		cli();
		if (cad_seen)
			break;
		idle();
	}
	lapic_timer_stop();
	sti();
	printf("\ndemo: ctrl-alt-del received, goodbye\n");
	i8042_reset();
	sleep_ms(1000);
	printf("FAIL: still running 1 s after the i8042 reset\n");
}
