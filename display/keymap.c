/*
 * The keymap as data: one row per keysym, the key's set 2 code and
 * whether it is an extended (E0-prefixed) key.  Make is [E0] code,
 * break is [E0] F0 code.  Print Screen and Pause are sequences of their
 * own (IBM PS/2 keyboard technical reference, scan code set 2).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rfb/keysym.h>

#include "keymap.h"

#define KEYMAP_E0	0x01

struct keymap_key {
	uint32_t keysym;
	uint8_t code;
	uint8_t flags;
};

static const struct keymap_key keymap_us[] = {
	/* Letters; capitals are the same key. */
	{ XK_a, 0x1c, 0 }, { XK_b, 0x32, 0 }, { XK_c, 0x21, 0 },
	{ XK_d, 0x23, 0 }, { XK_e, 0x24, 0 }, { XK_f, 0x2b, 0 },
	{ XK_g, 0x34, 0 }, { XK_h, 0x33, 0 }, { XK_i, 0x43, 0 },
	{ XK_j, 0x3b, 0 }, { XK_k, 0x42, 0 }, { XK_l, 0x4b, 0 },
	{ XK_m, 0x3a, 0 }, { XK_n, 0x31, 0 }, { XK_o, 0x44, 0 },
	{ XK_p, 0x4d, 0 }, { XK_q, 0x15, 0 }, { XK_r, 0x2d, 0 },
	{ XK_s, 0x1b, 0 }, { XK_t, 0x2c, 0 }, { XK_u, 0x3c, 0 },
	{ XK_v, 0x2a, 0 }, { XK_w, 0x1d, 0 }, { XK_x, 0x22, 0 },
	{ XK_y, 0x35, 0 }, { XK_z, 0x1a, 0 },
	/* Digit row, and what Shift makes of it. */
	{ XK_1, 0x16, 0 }, { XK_exclam, 0x16, 0 },
	{ XK_2, 0x1e, 0 }, { XK_at, 0x1e, 0 },
	{ XK_3, 0x26, 0 }, { XK_numbersign, 0x26, 0 },
	{ XK_4, 0x25, 0 }, { XK_dollar, 0x25, 0 },
	{ XK_5, 0x2e, 0 }, { XK_percent, 0x2e, 0 },
	{ XK_6, 0x36, 0 }, { XK_asciicircum, 0x36, 0 },
	{ XK_7, 0x3d, 0 }, { XK_ampersand, 0x3d, 0 },
	{ XK_8, 0x3e, 0 }, { XK_asterisk, 0x3e, 0 },
	{ XK_9, 0x46, 0 }, { XK_parenleft, 0x46, 0 },
	{ XK_0, 0x45, 0 }, { XK_parenright, 0x45, 0 },
	{ XK_minus, 0x4e, 0 }, { XK_underscore, 0x4e, 0 },
	{ XK_equal, 0x55, 0 }, { XK_plus, 0x55, 0 },
	{ XK_grave, 0x0e, 0 }, { XK_asciitilde, 0x0e, 0 },
	/* Punctuation. */
	{ XK_bracketleft, 0x54, 0 }, { XK_braceleft, 0x54, 0 },
	{ XK_bracketright, 0x5b, 0 }, { XK_braceright, 0x5b, 0 },
	{ XK_backslash, 0x5d, 0 }, { XK_bar, 0x5d, 0 },
	{ XK_semicolon, 0x4c, 0 }, { XK_colon, 0x4c, 0 },
	{ XK_apostrophe, 0x52, 0 }, { XK_quotedbl, 0x52, 0 },
	{ XK_comma, 0x41, 0 }, { XK_less, 0x41, 0 },
	{ XK_period, 0x49, 0 }, { XK_greater, 0x49, 0 },
	{ XK_slash, 0x4a, 0 }, { XK_question, 0x4a, 0 },
	{ XK_space, 0x29, 0 },
	/* Editing and control. */
	{ XK_Escape, 0x76, 0 }, { XK_Tab, 0x0d, 0 },
	{ XK_ISO_Left_Tab, 0x0d, 0 }, { XK_BackSpace, 0x66, 0 },
	{ XK_Return, 0x5a, 0 }, { XK_Caps_Lock, 0x58, 0 },
	{ XK_Num_Lock, 0x77, 0 }, { XK_Scroll_Lock, 0x7e, 0 },
	/* Modifiers, left and right. */
	{ XK_Shift_L, 0x12, 0 }, { XK_Shift_R, 0x59, 0 },
	{ XK_Control_L, 0x14, 0 }, { XK_Control_R, 0x14, KEYMAP_E0 },
	{ XK_Alt_L, 0x11, 0 }, { XK_Alt_R, 0x11, KEYMAP_E0 },
	{ XK_Meta_L, 0x11, 0 }, { XK_Meta_R, 0x11, KEYMAP_E0 },
	{ XK_ISO_Level3_Shift, 0x11, KEYMAP_E0 },	/* AltGr */
	{ XK_Super_L, 0x1f, KEYMAP_E0 }, { XK_Super_R, 0x27, KEYMAP_E0 },
	{ XK_Menu, 0x2f, KEYMAP_E0 },
	/* Function keys. */
	{ XK_F1, 0x05, 0 }, { XK_F2, 0x06, 0 }, { XK_F3, 0x04, 0 },
	{ XK_F4, 0x0c, 0 }, { XK_F5, 0x03, 0 }, { XK_F6, 0x0b, 0 },
	{ XK_F7, 0x83, 0 }, { XK_F8, 0x0a, 0 }, { XK_F9, 0x01, 0 },
	{ XK_F10, 0x09, 0 }, { XK_F11, 0x78, 0 }, { XK_F12, 0x07, 0 },
	/* Navigation block: extended keys. */
	{ XK_Insert, 0x70, KEYMAP_E0 }, { XK_Delete, 0x71, KEYMAP_E0 },
	{ XK_Home, 0x6c, KEYMAP_E0 }, { XK_End, 0x69, KEYMAP_E0 },
	{ XK_Page_Up, 0x7d, KEYMAP_E0 }, { XK_Page_Down, 0x7a, KEYMAP_E0 },
	{ XK_Left, 0x6b, KEYMAP_E0 }, { XK_Right, 0x74, KEYMAP_E0 },
	{ XK_Up, 0x75, KEYMAP_E0 }, { XK_Down, 0x72, KEYMAP_E0 },
	/* Keypad, with Num Lock on and off. */
	{ XK_KP_0, 0x70, 0 }, { XK_KP_Insert, 0x70, 0 },
	{ XK_KP_1, 0x69, 0 }, { XK_KP_End, 0x69, 0 },
	{ XK_KP_2, 0x72, 0 }, { XK_KP_Down, 0x72, 0 },
	{ XK_KP_3, 0x7a, 0 }, { XK_KP_Page_Down, 0x7a, 0 },
	{ XK_KP_4, 0x6b, 0 }, { XK_KP_Left, 0x6b, 0 },
	{ XK_KP_5, 0x73, 0 }, { XK_KP_Begin, 0x73, 0 },
	{ XK_KP_6, 0x74, 0 }, { XK_KP_Right, 0x74, 0 },
	{ XK_KP_7, 0x6c, 0 }, { XK_KP_Home, 0x6c, 0 },
	{ XK_KP_8, 0x75, 0 }, { XK_KP_Up, 0x75, 0 },
	{ XK_KP_9, 0x7d, 0 }, { XK_KP_Page_Up, 0x7d, 0 },
	{ XK_KP_Decimal, 0x71, 0 }, { XK_KP_Delete, 0x71, 0 },
	{ XK_KP_Add, 0x79, 0 }, { XK_KP_Subtract, 0x7b, 0 },
	{ XK_KP_Multiply, 0x7c, 0 }, { XK_KP_Divide, 0x4a, KEYMAP_E0 },
	{ XK_KP_Enter, 0x5a, KEYMAP_E0 },
};

/* Print Screen is E0 12 E0 7C (a fake Shift and the key); Pause has
 * only a make code, and sends it whole. */
static const uint8_t keymap_print_make[] = { 0xe0, 0x12, 0xe0, 0x7c };
static const uint8_t keymap_print_break[] = { 0xe0, 0xf0, 0x7c,
	0xe0, 0xf0, 0x12 };
static const uint8_t keymap_pause_make[] = { 0xe1, 0x14, 0x77,
	0xe1, 0xf0, 0x14, 0xf0, 0x77 };

static int
keymap_copy(uint8_t *out, const uint8_t *seq, size_t len)
{
	memcpy(out, seq, len);
	return (int)len;
}

int
keymap_scancodes(uint32_t keysym, bool down, uint8_t out[KEYMAP_MAX_BYTES])
{
	int n = 0;

	if (keysym == XK_Print)
		return down ? keymap_copy(out, keymap_print_make,
		    sizeof(keymap_print_make)) : keymap_copy(out,
		    keymap_print_break, sizeof(keymap_print_break));
	if (keysym == XK_Pause)
		return down ? keymap_copy(out, keymap_pause_make,
		    sizeof(keymap_pause_make)) : 0;
	if (keysym >= XK_A && keysym <= XK_Z)
		keysym += XK_a - XK_A;
	for (size_t i = 0; i < sizeof(keymap_us) / sizeof(keymap_us[0]); i++) {
		const struct keymap_key *k = &keymap_us[i];

		if (k->keysym != keysym)
			continue;
		if (k->flags & KEYMAP_E0)
			out[n++] = 0xe0;
		if (!down)
			out[n++] = 0xf0;
		out[n++] = k->code;
		return n;
	}
	return -ENOENT;
}
