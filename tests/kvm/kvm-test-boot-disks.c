/*
 * SeaBIOS boots from disks on every bus a VM has: the BIOS disk image
 * (an MBR, GRUB's boot.img and core.img, a FAT partition holding its
 * grub.cfg) as a virtio-blk disk and as a SATA disk on the AHCI
 * controller, and grub-mkrescue's hybrid ISO as a virtio-blk disk.  The
 * media are made at build time (make-firmware-media.sh, named by
 * VMMD_MEDIA_BIOSDISK and VMMD_MEDIA_HYBRID); each GRUB echoes its own
 * marker on the serial console and halts.  SeaBIOS says it boots from
 * the hard disk, then the marker appears: SeaBIOS read the MBR and
 * GRUB's core through the disk's bus, and GRUB read its file system
 * through SeaBIOS's int 13h.
 *
 * Skipped where SeaBIOS is not installed or the media could not be
 * built.  Real-mode code is emulated on our machines' /dev/kvm (SeaBIOS
 * and GRUB take some 20-40 s a boot there): the waits are long, and
 * each ends at its event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define BOOTING_HD	"Booting from Hard Disk"
#define MARKER_DISK	"VMMD-MEDIA-BIOSDISK-OK"
#define MARKER_HYBRID	"VMMD-MEDIA-HYBRID-OK"
#define BOOT_MS		300000	/* SeaBIOS to its boot message */
#define GRUB_MS		300000	/* then GRUB to its marker */

/* A VM with image as its one read-only disk on bus boots to marker. */
static void
test_boot(struct h_daemon *d, struct h_conn *c, const char *name,
    const char *image, const char *bus, const char *marker)
{
	const char *log = h_console_log(d, name);
	double t0;

	tap_ok(h_create(c, name, "\"firmware\":\"bios\",\"disks\":[{"
	    "\"path\":\"%s\",\"readonly\":true,\"format\":\"raw\","
	    "\"bus\":\"%s\"}]", image, bus) == 0,
	    "%s: created with firmware bios and a %s disk", name, bus);
	t0 = h_now_ms();
	tap_ok(h_start(c, name) == 0, "%s: started", name);
	tap_ok(h_vm_log_expect(c, name, log, BOOTING_HD, 1, BOOT_MS) == 0,
	    "%s: SeaBIOS boots from the %s disk", name, bus);
	tap_diag("%s: boot message after %.0f ms", name, h_now_ms() - t0);
	tap_ok(h_vm_log_expect(c, name, log, marker, 1, GRUB_MS) == 0,
	    "%s: GRUB from the %s disk runs its configuration", name, bus);
	tap_diag("%s: marker after %.0f ms", name, h_now_ms() - t0);
	h_diag_lines(name, log);
	tap_ok(h_stop(c, name, true, -1, H_REPLY_MS) == 0, "%s: force stop",
	    name);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	const char *disk, *hybrid;

	h_init();
	h_need_seabios(false);
	h_need_media("VMMD_MEDIA_BIOSDISK", &disk, "VMMD_MEDIA_HYBRID",
	    &hybrid);
	c = h_setup(&d);
	test_boot(d, c, "vdisk", disk, "virtio", MARKER_DISK);
	test_boot(d, c, "sdisk", disk, "sata", MARKER_DISK);
	test_boot(d, c, "vhybrid", hybrid, "virtio", MARKER_HYBRID);
	h_close(c);
	return h_done();
}
