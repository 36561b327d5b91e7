/*
 * 8042 keyboard controller with a PS/2 keyboard and a PS/2 mouse
 * (IntelliMouse Explorer compatible: wheel and five buttons).
 *
 * Each byte a device sends sits in its own queue until the controller's
 * one-byte output buffer is free and that device's interface is enabled;
 * it then raises IRQ 1 or IRQ 12 (when enabled in the command byte).
 * Reading port 0x60 takes the byte and moves the next one in, lowering
 * and raising the line again so that an edge-triggered interrupt
 * controller sees one edge per byte.
 */
#ifndef VMMD_I8042_H
#define VMMD_I8042_H

#include <stddef.h>
#include <stdint.h>

#include "dev-state.h"
#include "device.h"

struct i8042;

/* The device host's interrupt lines. */
#define I8042_LINE_KBD	0	/* IRQ 1 */
#define I8042_LINE_AUX	1	/* IRQ 12 */

/*
 * NULL on ENOMEM.  host must outlive the controller.  A guest that asks
 * for a system reset (command 0xfe or any pulse command with bit 0
 * clear, or output port bit 0 written as 0) makes a
 * DEVICE_REQUEST_RESET.
 */
struct i8042 *i8042_new(const struct device_host *host);
void i8042_free(struct i8042 *kbc);

/*
 * Queue Ctrl, Alt and keypad Delete pressed then released.  Through the
 * controller's translation (the default) the guest reads the set 1
 * bytes 1d 38 53 d3 b8 9d.  0, or -ENOSPC if the keyboard's queue cannot
 * take the whole sequence (nothing is queued then).
 */
int i8042_ctrl_alt_del(struct i8042 *kbc);

/*
 * Raw scancode set 2 bytes from the host keyboard, all or nothing:
 * 0, or -ENOSPC.  The controller translates them to set 1 when the
 * command byte's XLATE bit is on; a guest that selected set 1 on the
 * keyboard gets set 1 from the keyboard itself.  Keys pressed while the
 * guest has disabled the keyboard (command 0xf5) are dropped and 0 is
 * returned, as a real keyboard does not scan then.
 */
int i8042_key(struct i8042 *kbc, const uint8_t *set2, size_t len);

/*
 * Mouse movement: dx to the right, dy downwards (screen coordinates),
 * dz wheel clicks, positive downwards (towards the user).  buttons: bit
 * 0 left, 1 right, 2 middle, 3 side (4th), 4 extra (5th).  Large moves
 * are split into several packets.  Only while the guest has enabled
 * data reporting in stream mode; otherwise the movement is dropped and
 * 0 returned.  0, or -ENOSPC (nothing queued).
 */
int i8042_mouse(struct i8042 *kbc, int dx, int dy, int dz,
    unsigned int buttons);

/* Registered at 0x60 (offset 0, data) and 0x64 (offset 4, status/command). */
extern const struct device_ops i8042_device_ops;
/* Its state section (dev-state.h), for tests and fuzzers. */
extern const struct dev_state_table i8042_state_table;

#endif
