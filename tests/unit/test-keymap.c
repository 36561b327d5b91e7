/* Keysym to PS/2 set 2 tables. */
#include <errno.h>
#include <string.h>

#include <rfb/keysym.h>

#include "tap.h"
#include "keymap.h"

static int
seq_is(uint32_t keysym, bool down, const uint8_t *want, int len)
{
	uint8_t out[KEYMAP_MAX_BYTES];
	int n = keymap_scancodes(keysym, down, out);

	return n == len && memcmp(out, want, (size_t)len) == 0;
}

#define SEQ(ks, down, ...) seq_is(ks, down, (const uint8_t[]){ __VA_ARGS__ }, \
	sizeof((const uint8_t[]){ __VA_ARGS__ }))

int
main(void)
{
	uint8_t out[KEYMAP_MAX_BYTES], brk[KEYMAP_MAX_BYTES];
	bool all = true, pairs = true;
	uint32_t missing = 0;

	tap_ok(SEQ(XK_a, true, 0x1c) && SEQ(XK_a, false, 0xf0, 0x1c), "a");
	tap_ok(SEQ(XK_A, true, 0x1c), "A is the a key");
	tap_ok(SEQ(XK_exclam, true, 0x16), "! is the 1 key");
	tap_ok(SEQ(XK_Return, true, 0x5a) && SEQ(XK_Return, false, 0xf0, 0x5a),
	    "Enter");
	tap_ok(SEQ(XK_KP_Enter, true, 0xe0, 0x5a) &&
	    SEQ(XK_KP_Enter, false, 0xe0, 0xf0, 0x5a),
	    "keypad Enter is E0 5A, not the main Enter");
	tap_ok(SEQ(XK_Left, true, 0xe0, 0x6b) &&
	    SEQ(XK_Left, false, 0xe0, 0xf0, 0x6b), "Left arrow E0 6B");
	tap_ok(SEQ(XK_KP_Left, true, 0x6b), "keypad 4 / Left is 6B");
	tap_ok(SEQ(XK_F12, true, 0x07) && SEQ(XK_F7, true, 0x83), "F12, F7");
	tap_ok(SEQ(XK_Control_L, true, 0x14) && SEQ(XK_Control_R, true, 0xe0, 0x14),
	    "both Ctrls");
	tap_ok(SEQ(XK_Alt_L, true, 0x11) && SEQ(XK_Alt_R, true, 0xe0, 0x11),
	    "both Alts");
	tap_ok(SEQ(XK_Shift_L, true, 0x12) && SEQ(XK_Shift_R, true, 0x59),
	    "both Shifts");
	tap_ok(SEQ(XK_Super_L, true, 0xe0, 0x1f) && SEQ(XK_Super_R, true, 0xe0, 0x27),
	    "both Supers");
	tap_ok(SEQ(XK_Delete, true, 0xe0, 0x71) && SEQ(XK_KP_Delete, true, 0x71),
	    "Delete and keypad Delete");
	tap_ok(SEQ(XK_Pause, true, 0xe1, 0x14, 0x77, 0xe1, 0xf0, 0x14, 0xf0, 0x77) &&
	    keymap_scancodes(XK_Pause, false, out) == 0,
	    "Pause: whole sequence on press, nothing on release");
	tap_ok(SEQ(XK_Print, true, 0xe0, 0x12, 0xe0, 0x7c) &&
	    SEQ(XK_Print, false, 0xe0, 0xf0, 0x7c, 0xe0, 0xf0, 0x12),
	    "Print Screen");
	{
		/* Ctrl-Alt-Del from a viewer: three makes, three breaks. */
		static const uint32_t cad[] = { XK_Control_L, XK_Alt_L, XK_Delete };
		static const uint8_t want[] = { 0x14, 0x11, 0xe0, 0x71,
			0xe0, 0xf0, 0x71, 0xf0, 0x11, 0xf0, 0x14 };
		uint8_t got[32];
		size_t len = 0;

		for (int i = 0; i < 6; i++) {
			int n = keymap_scancodes(cad[i < 3 ? i : 5 - i], i < 3,
			    got + len);

			len += n > 0 ? (size_t)n : 0;
		}
		tap_ok(len == sizeof(want) && memcmp(got, want, len) == 0,
		    "Ctrl-Alt-Delete");
	}
	tap_ok(keymap_scancodes(0x20ac, true, out) == -ENOENT,
	    "a keysym with no key: -ENOENT");

	for (uint32_t ks = 0x20; ks <= 0x7e; ks++) {
		int m = keymap_scancodes(ks, true, out);
		int b = keymap_scancodes(ks, false, brk);

		if (m <= 0) {
			all = false;
			missing = ks;
			continue;
		}
		/* Break = make with F0 before the last byte. */
		pairs &= b == m + 1 && memcmp(brk, out, (size_t)m - 1) == 0 &&
		    brk[m - 1] == 0xf0 && brk[m] == out[m - 1];
	}
	tap_ok(all, "every printable ASCII keysym has a key (missing 0x%x)",
	    missing);
	tap_ok(pairs, "and make/break pairs match");
	return tap_done();
}
