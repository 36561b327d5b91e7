/*
 * A firmware VM's boot order and boot menu.  The El Torito CD and the
 * BIOS disk (make-firmware-media.sh; each GRUB echoes its own marker)
 * in one VM: by default SeaBIOS boots the CD; with "boot_order"
 * ["disk0", "cdrom0"] it boots the disk, which bootorder's first line
 * names.  With "boot_menu" SeaBIOS prompts "Press ESC for boot menu."
 * on its serial console; an ESC sent there opens the menu, which lists
 * the disk first, and its second entry boots the CD.  vmctl's
 * --boot-order and --boot-menu make the same definition; a device the
 * VM lacks, a name twice or either option without firmware is refused.
 *
 * Skipped where SeaBIOS is not installed or the media could not be
 * built.  Real-mode code is emulated on our machines' /dev/kvm: the
 * waits are long, and each ends at its event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "harness.h"

#define BOOTING_CD	"Booting from DVD/CD"
#define BOOTING_HD	"Booting from Hard Disk"
#define MARKER_CD	"VMMD-MEDIA-ELTORITO-OK"
#define MARKER_DISK	"VMMD-MEDIA-BIOSDISK-OK"
#define PROMPT		"Press ESC for boot menu"
#define MENU		"Select boot device"
#define BOOT_MS		300000	/* SeaBIOS to its boot message */
#define GRUB_MS		300000	/* then GRUB to its marker */

static const char *iso, *disk;

static int
create(struct h_conn *c, const char *name, const char *extra)
{
	return h_create(c, name, "\"firmware\":\"bios\",\"cdrom\":\"%s\","
	    "\"disks\":[{\"path\":\"%s\",\"readonly\":true,\"format\":"
	    "\"raw\"}]%s", iso, disk, extra);
}

/* Boots name to the first of the two messages; it must be first. */
static void
expect_first(struct h_daemon *d, struct h_conn *c, const char *name,
    const char *want, const char *other, const char *marker)
{
	const char *log = h_console_log(d, name);
	char *text;
	double t0 = h_now_ms();

	tap_ok(h_start(c, name) == 0, "%s: started", name);
	tap_ok(h_vm_log_expect(c, name, log, want, 1, BOOT_MS) == 0,
	    "%s: SeaBIOS says \"%s\"", name, want);
	tap_diag("%s: boot message after %.0f ms", name, h_now_ms() - t0);
	text = h_read_file(log, NULL);
	tap_ok(text != NULL && strstr(text, other) == NULL,
	    "%s: and not \"%s\"", name, other);
	free(text);
	tap_ok(h_vm_log_expect(c, name, log, marker, 1, GRUB_MS) == 0,
	    "%s: GRUB from there runs its configuration", name);
	h_diag_lines(name, log);
	tap_ok(h_stop(c, name, true, -1, H_REPLY_MS) == 0, "%s: force stop",
	    name);
}

static void
test_order(struct h_daemon *d, struct h_conn *c)
{
	tap_ok(create(c, "dflt", "") == 0, "dflt: created, no boot order");
	expect_first(d, c, "dflt", BOOTING_CD, BOOTING_HD, MARKER_CD);
	tap_ok(create(c, "order", ",\"boot_order\":[\"disk0\",\"cdrom0\"]")
	    == 0, "order: created with boot_order disk0, cdrom0");
	expect_first(d, c, "order", BOOTING_HD, BOOTING_CD, MARKER_DISK);
}

/* ESC on the serial console at the prompt; the menu's entry 2. */
static void
test_menu(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "menu");
	struct h_console *con;
	char *text, *m, *one, *two;
	double deadline;

	tap_ok(create(c, "menu", ",\"boot_order\":[\"disk0\",\"cdrom0\"],"
	    "\"boot_menu\":60000") == 0, "menu: created with boot_menu 60000");
	tap_ok(h_start(c, "menu") == 0, "menu: started");
	con = h_console_open(d, "menu");
	tap_ok(con != NULL, "menu: console open");
	if (con == NULL)
		return;
	tap_ok(h_expect(con, PROMPT, BOOT_MS) == 0, "menu: SeaBIOS prompts "
	    "\"%s\"", PROMPT);
	tap_ok(h_console_write(con, "\033", 1) == 0, "menu: ESC sent");
	tap_ok(h_expect(con, MENU, 30000) == 0, "menu: \"%s\"", MENU);
	/*
	 * The list follows the menu's title: wait for its second line to
	 * end (the console log grows in pieces, a line's head first).
	 */
	deadline = h_now_ms() + 30000;
	for (text = NULL;; h_sleep_ms(100)) {
		free(text);
		text = h_read_file(log, NULL);
		m = text != NULL ? strstr(text, MENU) : NULL;
		one = m != NULL ? strstr(m, "1. ") : NULL;
		two = m != NULL ? strstr(m, "2. ") : NULL;
		if ((two != NULL && strchr(two, '\n') != NULL) ||
		    h_now_ms() > deadline)
			break;
	}
	tap_ok(two != NULL && strchr(two, '\n') != NULL,
	    "menu: two entries");
	tap_ok(one != NULL && two != NULL && one < two &&
	    strncmp(one + 3, "Virtio disk", 11) == 0 &&
	    strncmp(two + 3, "DVD/CD", 6) == 0,
	    "menu: the disk first, then the CD (boot_order)");
	free(text);
	tap_ok(h_console_write(con, "2", 1) == 0, "menu: 2 chosen");
	tap_ok(h_vm_log_expect(c, "menu", log, BOOTING_CD, 1, BOOT_MS) == 0,
	    "menu: SeaBIOS boots the CD");
	tap_ok(h_vm_log_expect(c, "menu", log, MARKER_CD, 1, GRUB_MS) == 0,
	    "menu: GRUB from the CD runs its configuration");
	h_diag_lines("menu", log);
	h_console_close(con);
	tap_ok(h_stop(c, "menu", true, -1, H_REPLY_MS) == 0,
	    "menu: force stop");
}

/* The definition vmctl export prints for name, as text: boot_order's. */
static const char *
exported(const char *name, const char *key, char *buf, size_t size)
{
	struct json_object *o = NULL, *v;

	buf[0] = '\0';
	if (h_ctl("export", name, NULL) == 0 &&
	    (o = json_tokener_parse(h_out())) != NULL &&
	    json_object_object_get_ex(o, key, &v))
		snprintf(buf, size, "%s", json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return buf;
}

static void
test_vmctl(struct h_daemon *d)
{
	char buf[256];
	int rc;

	h_ctl_use(d, H_REPLY_MS);
	rc = h_ctl("create", "bov", "--firmware", "bios", "--cdrom", iso,
	    "--disk", disk, "--boot-order", "disk0,cdrom0", "--boot-menu",
	    NULL);
	tap_ok(rc == 0, "vmctl create --boot-order --boot-menu (%s)",
	    h_flat(h_err()));
	tap_ok(strcmp(exported("bov", "boot_order", buf, sizeof(buf)),
	    "[\"disk0\",\"cdrom0\"]") == 0, "export has boot_order %s", buf);
	tap_ok(strcmp(exported("bov", "boot_menu", buf, sizeof(buf)),
	    "2500") == 0, "and boot_menu %s (SeaBIOS's default)", buf);
	tap_ok(h_ctl("delete", "bov", NULL) == 0, "deleted");
	rc = h_ctl("create", "bow", "--firmware", "bios", "--boot-menu=700",
	    NULL);
	tap_ok(rc == 0 && strcmp(exported("bow", "boot_menu", buf,
	    sizeof(buf)), "700") == 0, "--boot-menu=700 is boot_menu %s", buf);
	h_ctl("delete", "bow", NULL);
	tap_ok(h_ctl("create", "box", "--firmware", "bios",
	    "--boot-order", "disk0,disk0", NULL) != 0,
	    "vmctl refuses a device twice");
	tap_ok(h_ctl("create", "box", "--firmware", "bios",
	    "--boot-order", "floppy0", NULL) != 0,
	    "vmctl refuses a device it has no name for");
}

static void
test_refused(struct h_conn *c)
{
	h_expect_error(c, "vm.create", "{\"name\":\"r1\",\"firmware\":"
	    "\"bios\",\"boot_order\":[\"disk0\"]}", "invalid_argument",
	    "a boot order naming a disk the VM lacks");
	h_expect_errorf(c, "vm.create", "invalid_argument", "a device twice",
	    "{\"name\":\"r2\",\"firmware\":\"bios\",\"cdrom\":\"%s\","
	    "\"boot_order\":[\"cdrom0\",\"cdrom0\"]}", iso);
	h_expect_errorf(c, "vm.create", "invalid_argument",
	    "a boot order without firmware", "{\"name\":\"r3\","
	    "\"cdrom\":\"%s\",\"boot_order\":[\"cdrom0\"]}", iso);
	h_expect_error(c, "vm.create", "{\"name\":\"r4\",\"boot_menu\":"
	    "100}", "invalid_argument", "a boot menu without firmware");
	h_expect_error(c, "vm.create", "{\"name\":\"r5\",\"firmware\":"
	    "\"bios\",\"boot_menu\":65536}", "invalid_argument",
	    "a boot menu wait over 65535 ms");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	h_need_seabios(false);
	h_need_media("VMMD_MEDIA_ELTORITO", &iso, "VMMD_MEDIA_BIOSDISK", &disk);
	c = h_setup(&d);
	test_refused(c);
	test_vmctl(d);
	test_menu(d, c);
	test_order(d, c);
	h_close(c);
	return h_done();
}
