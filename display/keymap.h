/*
 * X11 keysyms (what an RFB KeyEvent carries) to PS/2 scancode set 2,
 * for a US keyboard: letters, digits, punctuation, the keypad, F1-F12,
 * both of each modifier, the navigation block, Print Screen and Pause.
 *
 * A viewer sends the symbol it typed and the modifiers as keys of their
 * own: '!' arrives as Shift down, exclam, Shift up.  So shifted symbols
 * and capital letters map to their key ('!' to the '1' key), and the
 * guest applies Shift itself.
 */
#ifndef VMMD_KEYMAP_H
#define VMMD_KEYMAP_H

#include <stdbool.h>
#include <stdint.h>

/* The longest sequence: Pause's make code. */
#define KEYMAP_MAX_BYTES	8

/*
 * Write the set 2 bytes for keysym pressed (down) or released into out.
 * Returns how many (0 for the release of Pause, which has no break
 * code), or -ENOENT for a keysym with no key on the keyboard.
 */
int keymap_scancodes(uint32_t keysym, bool down,
    uint8_t out[KEYMAP_MAX_BYTES]);

#endif
