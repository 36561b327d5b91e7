/*
 * Debian's netboot installer from an ISO as a CD-ROM under SeaBIOS: the
 * installer's kernel and initrd (debian-installer-12-netboot-amd64) in a
 * hybrid ISO made at build time by grub-mkrescue
 * (tests/kvm/make-firmware-media.sh installer, VMMD_INSTALLER_ISO), whose
 * GRUB boots them with console=ttyS0.  A VM with "firmware": "bios" and
 * the ISO as its "cdrom" reaches the installer's first screen, drawn by
 * its newt frontend on the serial console.
 */
#ifndef LINSTALLER_H
#define LINSTALLER_H

#include "harness.h"

/* From vm.start to the installer's first screen, at most (nested). */
#define LI_SCREEN_MS	(10 * 60 * 1000)

/* The scenario's TAP lines; a skip where no ISO was built. */
void	li_installer(struct h_daemon *d, struct h_conn *c);

#endif
