/*
 * Unit tests for a firmware VM's boot order: the device names
 * (daemon/common/boot-dev.c), the definition's "boot_order" and
 * "boot_menu" (vmconfig-boot.c), their way to the worker
 * (start-params.c) and the OpenFirmware paths the PC gives them
 * (board-pc.c's board_pc_boot_path()), which must be what SeaBIOS's
 * boot.c builds for the same device, so that its glob matches: the
 * PCI path with the slot in hex, then "/drive@PORT/disk@0" for an AHCI
 * drive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "board.h"
#include "boot-dev.h"
#include "start-params.h"
#include "tap.h"
#include "vmconfig.h"

static void
test_names(void)
{
	static const char *const bad[] = {
		"", "cdrom", "disk8", "disk01", "disk-1", "Disk0", "net0 ",
		"floppy0", "disk10", "cdrom0,",
	};
	struct boot_dev d, devs[BOOT_ORDER_MAX];
	char buf[BOOT_ORDER_TEXT_MAX], name[BOOT_DEV_NAME_MAX];
	unsigned int n;

	tap_ok(boot_dev_parse("cdrom1", &d) == 0 && d.kind == BOOT_DEV_CDROM &&
	    d.index == 1, "cdrom1");
	tap_ok(boot_dev_parse("disk3", &d) == 0 && d.kind == BOOT_DEV_DISK &&
	    d.index == 3, "disk3");
	tap_ok(boot_dev_parse("net7", &d) == 0 && d.kind == BOOT_DEV_NET &&
	    d.index == 7, "net7");
	boot_dev_name(&d, name, sizeof(name));
	tap_ok(strcmp(name, "net7") == 0, "named back: %s", name);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tap_ok(boot_dev_parse(bad[i], &d) == -EINVAL, "refused: '%s'",
		    bad[i]);

	tap_ok(boot_order_parse("cdrom0,disk1,net0", devs, &n) == 0 && n == 3,
	    "a list of three");
	tap_ok(boot_order_text(devs, n, buf, sizeof(buf)) == 0 &&
	    strcmp(buf, "cdrom0,disk1,net0") == 0, "as text: %s", buf);
	tap_ok(boot_order_text(devs, n, buf, 10) == -ENOSPC,
	    "a buffer too small: -ENOSPC");
	tap_ok(boot_order_parse("", devs, &n) == 0 && n == 0, "\"\": none");
	tap_ok(boot_order_parse("disk0,disk0", devs, &n) == -EINVAL,
	    "a device twice refused");
	tap_ok(boot_order_parse("disk0,,net0", devs, &n) == -EINVAL,
	    "an empty name refused");
	tap_ok(boot_order_parse(",disk0", devs, &n) == -EINVAL,
	    "a leading comma refused");
	tap_ok(boot_order_parse("disk0,cdrom0,cdrom1,cdrom2,cdrom3,cdrom4,"
	    "cdrom5,cdrom6,cdrom7,net0,net1,net2,net3", devs, &n) == -EINVAL,
	    "thirteen refused (BOOT_ORDER_MAX %d)", BOOT_ORDER_MAX);
}

static void
expect_path(const struct board_backends *be, const char *name,
    const char *want)
{
	struct boot_dev d;
	char buf[128];
	int rc;

	if (boot_dev_parse(name, &d) < 0)
		tap_bail("%s: not a name", name);
	rc = board_pc_boot_path(be, &d, buf, sizeof(buf));
	if (want == NULL)
		tap_ok(rc == -ENOENT, "%s: not there", name);
	else
		tap_ok(rc == 0 && strcmp(buf, want) == 0, "%s: %s", name,
		    rc == 0 ? buf : strerror(-rc));
}

static void
test_paths(void)
{
	struct board_backends be;
	struct boot_dev d = { BOOT_DEV_DISK, 0 };
	char small[20];

	memset(&be, 0, sizeof(be));
	expect_path(&be, "cdrom0", NULL);
	expect_path(&be, "disk0", NULL);
	expect_path(&be, "net0", NULL);
	be.has_cdrom = true;
	be.ndisks = 3;
	be.disk_sata[1] = true;
	be.nnics = 2;
	/* AHCI in slot 11 (0xb): the CD-ROM on port 0, SATA disk i on i+1. */
	expect_path(&be, "cdrom0", "/pci@i0cf8/pci8086,2922@b/drive@0/disk@0");
	expect_path(&be, "cdrom1", NULL);
	expect_path(&be, "disk0", "/pci@i0cf8/scsi@2/disk@0,0");
	expect_path(&be, "disk1", "/pci@i0cf8/pci8086,2922@b/drive@2/disk@0");
	expect_path(&be, "disk2", "/pci@i0cf8/scsi@4/disk@0,0");
	expect_path(&be, "disk3", NULL);
	expect_path(&be, "net0", "/pci@i0cf8/ethernet@6/ethernet-phy@0");
	expect_path(&be, "net1", "/pci@i0cf8/ethernet@8/ethernet-phy@0");
	expect_path(&be, "net2", NULL);
	tap_ok(board_pc_boot_path(&be, &d, small, sizeof(small)) == -ENOSPC,
	    "a buffer too small: -ENOSPC");
}

/* The order and menu to the worker and back; refused without firmware. */
static void
test_start(void)
{
	struct start_params sp, back;
	struct json_object *o;
	char err[256];

	start_params_init(&sp);
	sp.name = strdup("fw");
	sp.firmware = strdup("/proc/self/fd/7");
	sp.memory_mib = 64;
	sp.vcpus = 1;
	tap_ok(boot_order_parse("net1,cdrom0", sp.boot_order,
	    &sp.nboot_order) == 0, "an order");
	sp.boot_menu_ms = 1234;
	tap_ok(start_params_encode(&sp, &o) == 0, "encoded");
	tap_ok(strcmp(json_object_get_string(json_object_object_get(o,
	    "boot_order")), "net1,cdrom0") == 0, "boot_order as text");
	tap_ok(start_params_decode(o, &back, err, sizeof(err)) == 0 &&
	    back.nboot_order == 2 && back.boot_order[0].kind == BOOT_DEV_NET &&
	    back.boot_order[0].index == 1 &&
	    back.boot_order[1].kind == BOOT_DEV_CDROM &&
	    back.boot_menu_ms == 1234, "decoded the same");
	start_params_free(&back);
	json_object_object_add(o, "boot_order",
	    json_object_new_string("disk0,disk0"));
	tap_ok(start_params_decode(o, &back, err, sizeof(err)) == -EINVAL,
	    "a device twice refused: %s", err);
	start_params_free(&back);
	json_object_put(o);

	free(sp.firmware);
	sp.firmware = NULL;
	sp.kernel = strdup("/proc/self/fd/7");
	tap_ok(start_params_encode(&sp, &o) == 0, "encoded with a kernel");
	tap_ok(start_params_decode(o, &back, err, sizeof(err)) == -EINVAL,
	    "a boot order without firmware refused: %s", err);
	start_params_free(&back);
	json_object_put(o);
	start_params_free(&sp);
}

static int
parse(const char *text, struct vm_def **def, char *err, size_t errlen)
{
	struct json_object *obj = json_tokener_parse(text);
	int rc;

	if (obj == NULL)
		tap_bail("test JSON does not parse: %s", text);
	*def = NULL;
	rc = config_parse(obj, 0, def, err, errlen);
	json_object_put(obj);
	return rc;
}

static void
expect_refused(const char *members, const char *want)
{
	char text[512], err[256] = "";
	struct vm_def *def;

	snprintf(text, sizeof(text), "{\"name\":\"b\",%s}", members);
	tap_ok(parse(text, &def, err, sizeof(err)) == -EINVAL &&
	    strcmp(err, want) == 0, "refused: %s -> \"%s\"", members, err);
	config_def_free(def);
}

static void
test_config(void)
{
	struct json_object *out;
	struct vm_def *def;
	char err[256] = "";
	const char *s;

	tap_ok(parse("{\"name\":\"b\",\"firmware\":\"bios\",\"cdrom\":"
	    "\"/x.iso\",\"disks\":[{\"path\":\"/a.img\"},{\"path\":"
	    "\"/b.img\"}],\"net\":{\"user\":true},\"boot_order\":[\"disk1\","
	    "\"net0\",\"cdrom0\"],\"boot_menu\":0}", &def, err,
	    sizeof(err)) == 0, "a boot order and menu (%s)", err);
	if (def == NULL)
		return;
	tap_ok(def->nboot_order == 3 && def->boot_order[0].kind ==
	    BOOT_DEV_DISK && def->boot_order[0].index == 1 &&
	    def->boot_order[2].kind == BOOT_DEV_CDROM && def->boot_menu &&
	    def->boot_menu_ms == 0, "as given, the menu's wait 0");
	out = config_to_json(def, CONFIG_JSON_SECRETS);
	s = json_object_to_json_string_ext(json_object_object_get(out,
	    "boot_order"), JSON_C_TO_STRING_PLAIN);
	tap_ok(strcmp(s, "[\"disk1\",\"net0\",\"cdrom0\"]") == 0,
	    "written back: %s", s);
	tap_ok(json_object_get_int(json_object_object_get(out, "boot_menu"))
	    == 0 && json_object_object_get(out, "boot_menu") != NULL,
	    "boot_menu 0 written back");
	json_object_put(out);
	config_def_free(def);

	tap_ok(parse("{\"name\":\"b\",\"firmware\":\"bios\"}", &def, err,
	    sizeof(err)) == 0 && !def->boot_menu && def->nboot_order == 0,
	    "none given: no order, no menu");
	out = config_to_json(def, 0);
	tap_ok(json_object_object_get(out, "boot_order") == NULL &&
	    json_object_object_get(out, "boot_menu") == NULL,
	    "and none written");
	json_object_put(out);
	config_def_free(def);

	expect_refused("\"firmware\":\"bios\",\"boot_order\":[\"disk0\"]",
	    "boot_order: the VM has no disk0");
	expect_refused("\"firmware\":\"bios\",\"boot_order\":[\"cdrom0\"]",
	    "boot_order: the VM has no cdrom0");
	expect_refused("\"firmware\":\"bios\",\"disks\":[{\"path\":"
	    "\"/a.img\"}],\"boot_order\":[\"disk0\",\"disk0\"]",
	    "boot_order: disk0 twice");
	expect_refused("\"firmware\":\"bios\",\"boot_order\":[\"usb0\"]",
	    "boot_order: 'usb0' must be cdromN, diskN or netN");
	expect_refused("\"firmware\":\"bios\",\"boot_order\":[1]",
	    "boot_order: entry 0 is not a string");
	expect_refused("\"firmware\":\"bios\",\"boot_order\":\"disk0\"",
	    "boot_order: expected an array of device names");
	expect_refused("\"disks\":[{\"path\":\"/a.img\"}],\"boot_order\":"
	    "[\"disk0\"]", "boot_order: only with firmware");
	expect_refused("\"boot_menu\":10", "boot_menu: only with firmware");
	expect_refused("\"firmware\":\"bios\",\"boot_menu\":-1",
	    "boot_menu: -1 is out of range (0..65535)");
}

int
main(void)
{
	test_names();
	test_paths();
	test_start();
	test_config();
	return tap_done();
}
