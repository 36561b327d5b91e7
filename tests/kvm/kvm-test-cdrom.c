/*
 * An ISO as a CD-ROM that SeaBIOS boots: a VM with "firmware": "bios"
 * and "cdrom" gets an AHCI controller with an ATAPI drive holding the
 * image, and bootorder names that drive first.  The images are made at
 * build time (make-firmware-media.sh, named by VMMD_MEDIA_ELTORITO and
 * VMMD_MEDIA_HYBRID): GRUB's El Torito core image (grub-mkimage -O
 * i386-pc-eltorito) packed by xorriso as a no-emulation boot image, and
 * grub-mkrescue's hybrid image; each GRUB puts itself on the serial
 * console, echoes its marker and halts.  SeaBIOS says it boots from the
 * CD, then GRUB's marker appears on the serial console.  vmctl create
 * --cdrom makes such a VM, vmctl info names the image, and a relative
 * path is refused.  A disk with "bus": "sata" sits on the same
 * controller: the hybrid image there boots as SeaBIOS's hard disk.
 *
 * Skipped where SeaBIOS is not installed or the media could not be
 * built (their tools absent); kvm-nested.sh packs both into the nested
 * test host.  Real-mode code is emulated on our machines' /dev/kvm
 * (SeaBIOS and GRUB take some 40 s there): the waits are long, and each
 * ends at its event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define BOOTING		"Booting from DVD/CD"
#define BOOTING_HD	"Booting from Hard Disk"
#define MARKER		"VMMD-MEDIA-ELTORITO-OK"
#define MARKER_HYBRID	"VMMD-MEDIA-HYBRID-OK"
#define BOOT_MS		300000	/* SeaBIOS to its boot message */
#define GRUB_MS		300000	/* then GRUB to its marker */

/* vmctl create --cdrom, what info says, a relative path refused. */
static void
test_vmctl(struct h_daemon *d, const char *iso)
{
	int rc;

	h_ctl_use(d, H_REPLY_MS);
	rc = h_ctl("create", "cdv", "--firmware", "bios", "--cdrom", iso,
	    "--memory", "32", NULL);
	tap_ok(rc == 0, "vmctl create --cdrom (%s)", h_flat(h_err()));
	tap_ok(h_ctl("info", "cdv", NULL) == 0 && strstr(h_out(), "cdrom") !=
	    NULL && strstr(h_out(), iso) != NULL,
	    "vmctl info names the CD-ROM's image");
	tap_ok(h_ctl("export", "cdv", NULL) == 0 &&
	    strstr(h_out(), "\"cdrom\"") != NULL, "export has \"cdrom\"");
	tap_ok(h_ctl("delete", "cdv", NULL) == 0, "deleted");
}

/* --disk PATH,bus=sata, as export shows it. */
static void
test_vmctl_sata(struct h_daemon *d, const char *img)
{
	char spec[320];
	int rc;

	snprintf(spec, sizeof(spec), "%s,readonly,format=raw,bus=sata", img);
	rc = h_ctl("create", "sdv", "--firmware", "bios", "--disk", spec,
	    "--memory", "32", NULL);
	tap_ok(rc == 0, "vmctl create --disk ...,bus=sata (%s)",
	    h_flat(h_err()));
	tap_ok(h_ctl("export", "sdv", NULL) == 0 &&
	    strstr(h_out(), "\"bus\": \"sata\"") != NULL,
	    "export has \"bus\": \"sata\"");
	tap_ok(h_ctl("delete", "sdv", NULL) == 0, "deleted");
}

static void
test_refused(struct h_conn *c)
{
	h_expect_error(c, "vm.create", "{\"name\":\"cdr\",\"firmware\":"
	    "\"bios\",\"cdrom\":\"test.iso\"}", "invalid_argument",
	    "a relative cdrom path");
	h_expect_error(c, "vm.create", "{\"name\":\"cdn\",\"firmware\":"
	    "\"bios\",\"cdrom\":\"/nonexistent/test.iso\"}", "invalid_argument",
	    "a cdrom that does not exist");
	h_expect_error(c, "vm.create", "{\"name\":\"cdb\",\"disks\":"
	    "[{\"path\":\"/nonexistent/d.img\",\"bus\":\"scsi\"}]}",
	    "invalid_argument", "a disk on a bus other than virtio or sata");
}

static void
test_boot(struct h_daemon *d, struct h_conn *c, const char *iso)
{
	const char *log = h_console_log(d, "cd");
	double t0;

	tap_ok(h_create(c, "cd", "\"firmware\":\"bios\","
	    "\"cdrom\":\"%s\"", iso) == 0, "created with firmware bios and "
	    "a cdrom");
	t0 = h_now_ms();
	tap_ok(h_start(c, "cd") == 0, "started");
	tap_ok(h_vm_log_expect(c, "cd", log, BOOTING, 1, BOOT_MS) == 0,
	    "SeaBIOS boots from the CD");
	tap_diag("boot message after %.0f ms", h_now_ms() - t0);
	tap_ok(h_vm_log_expect(c, "cd", log, MARKER, 1, GRUB_MS) == 0,
	    "GRUB from the ISO runs its configuration");
	tap_diag("marker after %.0f ms", h_now_ms() - t0);
	h_diag_lines("console", log);
	tap_ok(h_stop(c, "cd", true, -1, H_REPLY_MS) == 0, "force stop");
}

/* The hybrid image as a read-only SATA disk: SeaBIOS boots it. */
static void
test_sata(struct h_daemon *d, struct h_conn *c, const char *img)
{
	const char *log = h_console_log(d, "sd");
	double t0;

	tap_ok(h_create(c, "sd", "\"firmware\":\"bios\",\"disks\":[{"
	    "\"path\":\"%s\",\"readonly\":true,\"format\":\"raw\","
	    "\"bus\":\"sata\"}]", img) == 0,
	    "created with a SATA disk");
	t0 = h_now_ms();
	tap_ok(h_start(c, "sd") == 0, "started");
	tap_ok(h_vm_log_expect(c, "sd", log, BOOTING_HD, 1, BOOT_MS) == 0,
	    "SeaBIOS boots from the SATA disk");
	tap_diag("boot message after %.0f ms", h_now_ms() - t0);
	tap_ok(h_vm_log_expect(c, "sd", log, MARKER_HYBRID, 1, GRUB_MS) == 0,
	    "GRUB from the disk runs its configuration");
	tap_diag("marker after %.0f ms", h_now_ms() - t0);
	tap_ok(h_stop(c, "sd", true, -1, H_REPLY_MS) == 0, "force stop");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	const char *iso, *hybrid;

	h_init();
	h_need_seabios(false);
	h_need_media("VMMD_MEDIA_ELTORITO", &iso, "VMMD_MEDIA_HYBRID", &hybrid);
	c = h_setup(&d);
	test_refused(c);
	test_vmctl(d, iso);
	test_boot(d, c, iso);
	test_vmctl_sata(d, hybrid);
	test_sata(d, c, hybrid);
	h_close(c);
	return h_done();
}
