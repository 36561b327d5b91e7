/*
 * An ISO as a CD-ROM that SeaBIOS boots: a VM with "firmware": "bios"
 * and "cdrom" gets an AHCI controller with an ATAPI drive holding the
 * image, and bootorder names that drive first.  The image is made here,
 * into the test's directory: GRUB's El Torito core image (grub-mkimage
 * -O i386-pc-eltorito) with a grub.cfg that puts GRUB on the serial
 * console, echoes a marker and halts, packed by xorriso as a
 * no-emulation boot image.  SeaBIOS says it boots from the CD, then
 * GRUB's marker appears on the serial console.  vmctl create --cdrom
 * makes such a VM, vmctl info names the image, and a relative path is
 * refused.  A disk with "bus": "sata" sits on the same controller: a
 * hybrid image from grub-mkrescue there boots as SeaBIOS's hard disk.
 *
 * Skipped where SeaBIOS, xorriso or GRUB's i386-pc modules are not
 * installed (the nested test host packs none of them).  Real-mode code
 * is emulated on our machines' /dev/kvm (SeaBIOS and GRUB take some
 * 40 s there): the waits are long, and each ends at its event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define BIOS_IMAGE	"/usr/share/seabios/bios-256k.bin"
/* What grub-mkimage -O i386-pc-eltorito puts in front of its core. */
#define GRUB_ELTORITO	"/usr/lib/grub/i386-pc/cdboot.img"
#define BOOTING		"Booting from DVD/CD"
#define BOOTING_HD	"Booting from Hard Disk"
#define MARKER		"VMMD-ISO-OK"
#define BOOT_MS		120000	/* SeaBIOS to its boot message */
#define GRUB_MS		120000	/* then GRUB to its marker */
#define TOOL_MS		60000

static char xorriso[256], grub_mkimage[256], grub_mkrescue[256];

static const char grub_cfg[] =
    "serial --unit=0 --speed=115200\n"
    "terminal_input serial console\n"
    "terminal_output serial console\n"
    "echo " MARKER "\n"
    "halt\n";

/* argv run to its end: 0 when it exited 0, else -1 (its stderr said). */
static int
run(char *const argv[])
{
	struct h_proc p;
	int rc;

	memset(&p, 0, sizeof(p));
	rc = h_run(&p, NULL, TOOL_MS, argv);
	if (rc != 0)
		tap_diag("%s: exit %d: %s", argv[0], rc,
		    h_flat(p.ebuf != NULL ? p.ebuf : ""));
	h_proc_free(&p);
	return rc == 0 ? 0 : -1;
}

/* The El Torito ISO at iso, its tree under the test's directory. */
static int
make_iso(struct h_daemon *d, const char *iso)
{
	char tree[256], grubdir[300], cfg[320], core[320];
	FILE *f;

	snprintf(tree, sizeof(tree), "%s", h_in_dir(d, "iso-tree"));
	snprintf(grubdir, sizeof(grubdir), "%s/boot", tree);
	if (mkdir(tree, 0755) < 0 || mkdir(grubdir, 0755) < 0)
		return -1;
	snprintf(grubdir, sizeof(grubdir), "%s/boot/grub", tree);
	if (mkdir(grubdir, 0755) < 0)
		return -1;
	snprintf(cfg, sizeof(cfg), "%s/grub.cfg", grubdir);
	if ((f = fopen(cfg, "we")) == NULL)
		return -1;
	fputs(grub_cfg, f);
	if (fclose(f) != 0)
		return -1;
	snprintf(core, sizeof(core), "%s/core.img", tree);
	char *mk[] = { grub_mkimage, "-O", "i386-pc-eltorito", "-p",
	    "/boot/grub", "-o", core, "biosdisk", "iso9660", "normal", "echo",
	    "serial", "terminal", "halt", NULL };
	char *pack[] = { xorriso, "-as", "mkisofs", "-quiet", "-b",
	    "core.img", "-no-emul-boot", "-boot-load-size", "4",
	    "-boot-info-table", "-o", (char *)iso, tree, NULL };
	return run(mk) == 0 && run(pack) == 0 ? 0 : -1;
}

/* A hybrid image (MBR and El Torito) of the same tree at path. */
static int
make_hybrid(struct h_daemon *d, const char *path)
{
	char tree[256];
	char *argv[] = { grub_mkrescue, "-o", (char *)path, tree, NULL };

	snprintf(tree, sizeof(tree), "%s", h_in_dir(d, "iso-tree"));
	return run(argv);
}

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
	tap_ok(h_file_expect(log, BOOTING, 1, BOOT_MS) == 0,
	    "SeaBIOS boots from the CD");
	tap_diag("boot message after %.0f ms", h_now_ms() - t0);
	tap_ok(h_file_expect(log, MARKER, 1, GRUB_MS) == 0,
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
	tap_ok(h_file_expect(log, BOOTING_HD, 1, BOOT_MS) == 0,
	    "SeaBIOS boots from the SATA disk");
	tap_diag("boot message after %.0f ms", h_now_ms() - t0);
	tap_ok(h_file_expect(log, MARKER, 1, GRUB_MS) == 0,
	    "GRUB from the disk runs its configuration");
	tap_diag("marker after %.0f ms", h_now_ms() - t0);
	tap_ok(h_stop(c, "sd", true, -1, H_REPLY_MS) == 0, "force stop");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	char iso[256], hybrid[256];

	h_init();
	if (access(BIOS_IMAGE, R_OK) != 0)
		tap_skip_all("%s: not installed (Debian's seabios)",
		    BIOS_IMAGE);
	if (h_which("xorriso", xorriso, sizeof(xorriso)) == NULL)
		tap_skip_all("xorriso: not installed");
	if (h_which("grub-mkimage", grub_mkimage,
	    sizeof(grub_mkimage)) == NULL || access(GRUB_ELTORITO, R_OK) != 0)
		tap_skip_all("grub-mkimage and its i386-pc modules: not "
		    "installed (grub-pc-bin)");
	c = h_setup(&d);
	snprintf(iso, sizeof(iso), "%s", h_in_dir(d, "test.iso"));
	if (make_iso(d, iso) < 0)
		tap_bail("cannot make %s", iso);
	test_refused(c);
	test_vmctl(d, iso);
	test_boot(d, c, iso);
	snprintf(hybrid, sizeof(hybrid), "%s", h_in_dir(d, "hybrid.img"));
	if (h_which("grub-mkrescue", grub_mkrescue,
	    sizeof(grub_mkrescue)) == NULL)
		tap_diag("grub-mkrescue: not installed, no SATA disk");
	else if (make_hybrid(d, hybrid) < 0)
		tap_ok(0, "grub-mkrescue makes a hybrid image");
	else {
		test_vmctl_sata(d, hybrid);
		test_sata(d, c, hybrid);
	}
	h_close(c);
	return h_done();
}
