/*
 * The reference guest's screen over VNC: a viewer (libvncclient) in the
 * scenario program, typing into the guest's tty0 shell.
 */
#ifndef LDISPLAY_H
#define LDISPLAY_H

#include <stdbool.h>

#include "lguest.h"

/*
 * The checks of a guest booted with a display: fbcon drew on it, a
 * command typed through VNC runs (it writes a marker to the serial
 * port), the refresh exists only while the viewer is connected.  With
 * show, the screen is printed as TAP diagnostics ("# png: " lines of
 * base64) for a person to look at.
 */
void	ld_check_display(struct lg_vm *vm, lg_check_fn check, bool show);

#endif
