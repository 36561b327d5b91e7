/*
 * Unit tests of VM definitions: every validation rule, the defaults,
 * serialisation, atomic saving and reloading a directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "tap.h"
#include "vmconfig.h"

static char tmpdir[] = "/tmp/test-config.XXXXXX";
static char kernel_path[256];

/* Parse text as a definition; returns config_parse()'s result. */
static int
parse_text(const char *text, unsigned int flags, struct vm_def **def,
    char *err, size_t errlen)
{
	struct json_object *obj;
	int rc;

	obj = json_tokener_parse(text);
	if (obj == NULL)
		tap_bail("test JSON does not parse: %s", text);
	rc = config_parse(obj, flags, def, err, errlen);
	json_object_put(obj);
	return rc;
}

/* Expect text to be refused with exactly want as the error. */
static void
expect_invalid(const char *text, unsigned int flags, const char *want)
{
	struct vm_def *def = NULL;
	char err[512] = "";
	int rc;

	rc = parse_text(text, flags, &def, err, sizeof(err));
	tap_ok(rc == -EINVAL && def == NULL && strcmp(err, want) == 0,
	    "refused: %s -> \"%s\"", text, err);
	config_def_free(def);
}

static void
expect_valid(const char *text, unsigned int flags)
{
	struct vm_def *def = NULL;
	char err[512] = "";
	int rc;

	rc = parse_text(text, flags, &def, err, sizeof(err));
	tap_ok(rc == 0 && def != NULL, "accepted: %.100s%s", text,
	    rc == 0 ? "" : err);
	config_def_free(def);
}

static void
write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
		tap_bail("cannot write %s", path);
}

/*
 * The smallest PVH kernel boot_probe() accepts: one ELF64 program
 * header loading the file at 1 MiB, and a PT_NOTE with the Xen
 * PHYS32_ENTRY note pointing into it.
 */
static void
make_pvh_kernel(const char *path)
{
	uint8_t img[512];
	uint8_t *p;

	memset(img, 0, sizeof(img));
	/* ELF header */
	memcpy(img, "\x7f" "ELF", 4);
	img[4] = 2;			/* ELFCLASS64 */
	img[5] = 1;			/* little endian */
	img[6] = 1;			/* EV_CURRENT */
	img[16] = 2;			/* ET_EXEC */
	img[18] = 62;			/* EM_X86_64 */
	img[20] = 1;			/* e_version */
	img[24] = 0x00; img[25] = 0x00; img[26] = 0x10;	/* e_entry 1 MiB */
	img[32] = 64;			/* e_phoff */
	img[52] = 64;			/* e_ehsize */
	img[54] = 56;			/* e_phentsize */
	img[56] = 2;			/* e_phnum */
	/* PT_LOAD: offset 0, paddr 1 MiB, 512 bytes, 4 KiB in memory */
	p = img + 64;
	p[0] = 1;
	p[4] = 5;			/* R+X */
	p[16 + 2] = 0x10;		/* p_vaddr */
	p[24 + 2] = 0x10;		/* p_paddr */
	p[32 + 1] = 0x02;		/* p_filesz 512 */
	p[40 + 1] = 0x10;		/* p_memsz 4096 */
	p[48 + 1] = 0x10;		/* p_align */
	/* PT_NOTE at offset 256, 20 bytes */
	p = img + 64 + 56;
	p[0] = 4;
	p[8 + 1] = 0x01;		/* p_offset 256 */
	p[32] = 20;			/* p_filesz */
	p[40] = 20;			/* p_memsz */
	p[48] = 4;			/* p_align */
	/* the note: namesz 4, descsz 4, type 18, "Xen\0", entry 1 MiB */
	p = img + 256;
	p[0] = 4;
	p[4] = 4;
	p[8] = 18;
	memcpy(p + 12, "Xen", 4);
	p[16 + 2] = 0x10;
	write_file(path, img, sizeof(img));
}

static void
test_defaults(void)
{
	struct vm_def *def = NULL;
	char err[256];
	int rc;

	rc = parse_text("{\"name\":\"web\"}", CONFIG_CHECK_FILES, &def, err,
	    sizeof(err));
	tap_ok(rc == 0, "a name alone is a valid definition");
	if (rc != 0)
		return;
	tap_ok(strcmp(def->name, "web") == 0 && def->kernel == NULL &&
	    def->initrd == NULL && strcmp(def->cmdline, "") == 0,
	    "defaults: no kernel (the default guest), no initrd, empty cmdline");
	tap_ok(def->memory_mib == 256 && def->vcpus == 1 &&
	    def->on_reboot == VM_ON_REBOOT_RESTART && !def->transient,
	    "defaults: 256 MiB, 1 vCPU, on_reboot restart, not transient");
	tap_ok(def->lost_ticks == VM_LOST_TICKS_SLEW &&
	    def->rtc_backlog_max == 0,
	    "defaults: lost_tick_policy slew, the RTC's own backlog cap");
	config_def_free(def);
	config_def_free(NULL);
}

static void
test_name(void)
{
	char text[256], want[256], n64[65], n65[66];

	expect_valid("{\"name\":\"a\"}", 0);
	expect_valid("{\"name\":\"Web-1.prod_x\"}", 0);
	expect_valid("{\"name\":\"9\"}", 0);
	memset(n64, 'n', 64);
	n64[64] = '\0';
	snprintf(text, sizeof(text), "{\"name\":\"%s\"}", n64);
	expect_valid(text, 0);
	memset(n65, 'n', 65);
	n65[65] = '\0';
	snprintf(text, sizeof(text), "{\"name\":\"%s\"}", n65);
	snprintf(want, sizeof(want), "name: '%s' must match "
	    "[A-Za-z0-9][A-Za-z0-9._-]{0,63}", n65);
	expect_invalid(text, 0, want);

	expect_invalid("{\"name\":\"a b\"}", 0,
	    "name: 'a b' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{\"name\":\"\"}", 0,
	    "name: '' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{\"name\":\".hidden\"}", 0,
	    "name: '.hidden' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{\"name\":\"-x\"}", 0,
	    "name: '-x' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{\"name\":\"_x\"}", 0,
	    "name: '_x' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{\"name\":\"a/b\"}", 0,
	    "name: 'a/b' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{\"name\":\"caf\\u00e9\"}", 0,
	    "name: 'caf\xc3\xa9' must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
	expect_invalid("{}", 0, "name: missing argument");
	expect_invalid("{\"name\":null}", 0, "name: missing argument");
	expect_invalid("{\"name\":7}", 0, "name: expected a string");

	tap_ok(config_name_valid("x.y") && !config_name_valid("x y") &&
	    !config_name_valid(""), "config_name_valid");
}

static void
test_numbers(void)
{
	expect_valid("{\"name\":\"a\",\"memory_mib\":16}", 0);
	expect_valid("{\"name\":\"a\",\"memory_mib\":262144}", 0);
	expect_invalid("{\"name\":\"a\",\"memory_mib\":8}", 0,
	    "memory_mib: 8 is out of range (16..262144)");
	expect_invalid("{\"name\":\"a\",\"memory_mib\":262145}", 0,
	    "memory_mib: 262145 is out of range (16..262144)");
	expect_invalid("{\"name\":\"a\",\"memory_mib\":-1}", 0,
	    "memory_mib: -1 is out of range (16..262144)");
	expect_invalid("{\"name\":\"a\",\"memory_mib\":\"256\"}", 0,
	    "memory_mib: expected an integer");
	expect_invalid("{\"name\":\"a\",\"memory_mib\":256.5}", 0,
	    "memory_mib: expected an integer");

	expect_valid("{\"name\":\"a\",\"vcpus\":1}", 0);
	expect_valid("{\"name\":\"a\",\"vcpus\":64}", 0);
	expect_invalid("{\"name\":\"a\",\"vcpus\":0}", 0,
	    "vcpus: 0 is out of range (1..64)");
	expect_invalid("{\"name\":\"a\",\"vcpus\":65}", 0,
	    "vcpus: 65 is out of range (1..64)");
	expect_invalid("{\"name\":\"a\",\"vcpus\":true}", 0,
	    "vcpus: expected an integer");
}

static void
test_misc_fields(void)
{
	struct vm_def *def = NULL;
	char err[256], *text, *cmd;
	int rc;

	rc = parse_text("{\"name\":\"a\",\"on_reboot\":\"stop\","
	    "\"transient\":true,\"cmdline\":\"console=ttyS0 quiet\"}", 0,
	    &def, err, sizeof(err));
	tap_ok(rc == 0 && def->on_reboot == VM_ON_REBOOT_STOP &&
	    def->transient && strcmp(def->cmdline, "console=ttyS0 quiet") == 0,
	    "on_reboot stop, transient, cmdline");
	config_def_free(def);
	expect_valid("{\"name\":\"a\",\"on_reboot\":\"restart\","
	    "\"transient\":false}", 0);
	expect_invalid("{\"name\":\"a\",\"on_reboot\":\"reboot\"}", 0,
	    "on_reboot: 'reboot' must be \"restart\" or \"stop\"");
	expect_invalid("{\"name\":\"a\",\"on_reboot\":1}", 0,
	    "on_reboot: expected a string");
	expect_invalid("{\"name\":\"a\",\"transient\":\"yes\"}", 0,
	    "transient: expected true or false");
	expect_invalid("{\"name\":\"a\",\"cmdline\":5}", 0,
	    "cmdline: expected a string");

	rc = parse_text("{\"name\":\"a\",\"autostart\":true}", 0, &def,
	    err, sizeof(err));
	tap_ok(rc == 0 && def->autostart, "autostart true");
	if (rc == 0) {
		struct json_object *obj = config_to_json(def, 0);

		tap_ok(obj != NULL && json_object_get_boolean(
		    json_object_object_get(obj, "autostart")),
		    "autostart is shown");
		json_object_put(obj);
	}
	config_def_free(def);
	rc = parse_text("{\"name\":\"a\"}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && !def->autostart, "autostart is off by default");
	config_def_free(def);
	expect_invalid("{\"name\":\"a\",\"autostart\":1}", 0,
	    "autostart: expected true or false");
	expect_invalid("{\"name\":\"a\",\"autostart\":true,"
	    "\"transient\":true}", 0, "autostart: a transient VM is gone "
	    "once it stops and cannot start with the daemon");

	/* cmdline: 2048 bytes fit, 2049 do not. */
	cmd = malloc(2050);
	text = malloc(2200);
	memset(cmd, 'c', 2049);
	cmd[2048] = '\0';
	snprintf(text, 2200, "{\"name\":\"a\",\"cmdline\":\"%s\"}", cmd);
	expect_valid(text, 0);
	cmd[2048] = 'c';
	cmd[2049] = '\0';
	snprintf(text, 2200, "{\"name\":\"a\",\"cmdline\":\"%s\"}", cmd);
	expect_invalid(text, 0, "cmdline: 2049 bytes is longer than 2048");
	free(cmd);
	free(text);

	expect_invalid("{\"name\":\"a\",\"foo\":1}", 0,
	    "unknown argument 'foo'");
	expect_invalid("{\"name\":\"a\",\"state\":\"running\"}", 0,
	    "unknown argument 'state'");
	{
		struct json_object *arr = json_object_new_array();

		rc = config_parse(arr, 0, &def, err, sizeof(err));
		tap_ok(rc == -EINVAL && def == NULL &&
		    strcmp(err, "a definition must be a JSON object") == 0,
		    "a non-object is refused");
		json_object_put(arr);
	}
}

/* balloon: off by default, a boolean, kept, shown only when on. */
static void
test_balloon(void)
{
	struct vm_def *def = NULL;
	struct json_object *obj;
	char err[256];
	int rc;

	rc = parse_text("{\"name\":\"a\",\"balloon\":true}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->balloon && !def->rng, "balloon true");
	if (rc == 0) {
		obj = config_to_json(def, 0);
		tap_ok(json_object_get_boolean(json_object_object_get(obj,
		    "balloon")), "balloon shown");
		json_object_put(obj);
		config_def_free(def);
	}
	rc = parse_text("{\"name\":\"a\",\"balloon\":\"yes\"}", 0, &def,
	    err, sizeof(err));
	tap_ok(rc == -EINVAL && strstr(err, "balloon") != NULL,
	    "balloon must be a boolean: %s", err);
	rc = parse_text("{\"name\":\"a\"}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && !def->balloon, "no balloon by default");
	if (rc == 0) {
		obj = config_to_json(def, 0);
		tap_ok(!json_object_object_get_ex(obj, "balloon", NULL),
		    "and none shown");
		json_object_put(obj);
		config_def_free(def);
	}
}

static void
test_rng(void)
{
	struct vm_def *def = NULL;
	struct json_object *obj;
	char err[256];
	int rc;

	rc = parse_text("{\"name\":\"a\",\"rng\":true}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->rng, "rng true");
	if (rc == 0) {
		obj = config_to_json(def, 0);
		tap_ok(json_object_get_boolean(json_object_object_get(obj,
		    "rng")), "rng shown");
		json_object_put(obj);
		config_def_free(def);
	}
	rc = parse_text("{\"name\":\"a\",\"rng\":1}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == -EINVAL && strstr(err, "rng") != NULL,
	    "rng must be a boolean: %s", err);
	rc = parse_text("{\"name\":\"a\"}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && !def->rng, "no rng by default");
	if (rc == 0)
		config_def_free(def);
	/* Each boolean its own: one that is true says nothing of the
	 * next one given no value. */
	rc = parse_text("{\"name\":\"a\",\"rng\":true}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->rng && !def->autostart && !def->transient,
	    "rng true, and autostart and transient still off");
	if (rc == 0)
		config_def_free(def);
	rc = parse_text("{\"name\":\"a\",\"transient\":true,\"rng\":true}",
	    0, &def, err, sizeof(err));
	tap_ok(rc == 0 && def->rng && def->transient && !def->autostart,
	    "a transient VM with rng: no autostart (%s)", rc == 0 ? "ok" :
	    err);
	if (rc == 0)
		config_def_free(def);
}

static void
test_disks(void)
{
	static const char *const bad[][2] = {
		{ "{\"name\":\"a\",\"disks\":{}}", "disks: expected an array" },
		{ "{\"name\":\"a\",\"disks\":[\"/x\"]}", "disks[0]" },
		{ "{\"name\":\"a\",\"disks\":[{}]}", "disks[0]: path" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"x.img\"}]}",
		    "not an absolute path" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\",\"ro\":1}]}",
		    "ro" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"serial\":\"123456789012345678901\"}]}", "serial" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"serial\":\"a b\"}]}", "serial" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/a\"},"
		    "{\"path\":\"/b\"},{\"path\":\"/c\"},{\"path\":\"/d\"},"
		    "{\"path\":\"/e\"}]}", "at most 4" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"format\":\"vmdk\"}]}",
		    "disks[0]: format: 'vmdk' is not supported" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"backing\":\"yes\"}]}", "backing" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"format\":\"RAW\"}]}", "format: 'RAW'" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"format\":true}]}", "format" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"overlay\":1}]}", "overlay" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"overlay\":true,\"readonly\":true}]}",
		    "disks[0]: overlay: a disk cannot be both" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"bus\":\"scsi\"}]}", "disks[0]: bus: 'scsi' must be" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"/x\","
		    "\"bus\":true}]}", "bus" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":"
		    "\"nbd:unix:run/s\"}]}", "disks[0]: path: nbd:unix: needs" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":"
		    "\"nbd://h:70000/e\"}]}", "disks[0]: path: expected" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"nbd://h/e\","
		    "\"format\":\"qcow2\"}]}", "disks[0]: format: an NBD disk" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"nbd://h/e\","
		    "\"overlay\":true}]}", "disks[0]: overlay: an NBD disk" },
		{ "{\"name\":\"a\",\"boot\":\"disk\",\"disks\":[{\"path\":"
		    "\"nbd://h/e\"}]}", "disks[0]: the kernel is read" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"rbd:vms\"}]}",
		    "disks[0]: path: expected rbd:POOL/IMAGE" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":"
		    "\"rbd:vms/a,conf=ceph.conf\"}]}",
		    "disks[0]: path: conf=: an absolute path" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":"
		    "\"rbd:vms/a,cache=on\"}]}",
		    "disks[0]: path: 'cache=on' is not an option" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"rbd:vms/a\","
		    "\"format\":\"raw\"}]}", "disks[0]: format: an RBD disk" },
		{ "{\"name\":\"a\",\"disks\":[{\"path\":\"rbd:vms/a\","
		    "\"backing\":true}]}", "disks[0]: backing: an RBD disk" },
		{ "{\"name\":\"a\",\"boot\":\"disk\",\"disks\":[{\"path\":"
		    "\"rbd:vms/a\"}]}", "not from an RBD image" },
	};
	struct vm_def *def = NULL, *dup;
	struct json_object *obj, *arr, *fmt0, *fmt1;
	char err[256];
	size_t i;
	int rc;

	rc = parse_text("{\"name\":\"a\",\"disks\":[{\"path\":\"/srv/a.img\"},"
	    "{\"path\":\"/srv/b.img\",\"readonly\":true,"
	    "\"serial\":\"B-0001\"}]}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && def->ndisks == 2 &&
	    strcmp(def->disks[0].path, "/srv/a.img") == 0 &&
	    !def->disks[0].readonly && def->disks[0].serial == NULL &&
	    def->disks[1].readonly &&
	    strcmp(def->disks[1].serial, "B-0001") == 0, "two disks: %s",
	    rc == 0 ? "ok" : err);
	if (rc == 0) {
		dup = config_def_dup(def);
		tap_ok(dup != NULL && dup->ndisks == 2 &&
		    dup->disks[1].serial != def->disks[1].serial &&
		    strcmp(dup->disks[1].serial, "B-0001") == 0,
		    "disks duplicated deeply");
		config_def_free(dup);
		obj = config_to_json(def, 0);
		config_def_free(def);
		rc = config_parse(obj, 0, &def, err, sizeof(err));
		tap_ok(rc == 0 && def->ndisks == 2 && def->disks[1].readonly,
		    "disks round-trip through JSON");
		json_object_put(obj);
		if (rc == 0)
			config_def_free(def);
	}

	/* "format": "raw" is kept, and said only where it was given. */
	rc = parse_text("{\"name\":\"a\",\"disks\":[{\"path\":\"/srv/a.img\"},"
	    "{\"path\":\"/srv/b.qcow2\",\"format\":\"raw\"}]}", 0, &def,
	    err, sizeof(err));
	tap_ok(rc == 0 && def->disks[0].format == VM_DISK_FORMAT_PROBED &&
	    def->disks[1].format == VM_DISK_FORMAT_RAW,
	    "format raw on the second disk only: %s", rc == 0 ? "ok" : err);
	if (rc == 0) {
		dup = config_def_dup(def);
		tap_ok(dup != NULL &&
		    dup->disks[1].format == VM_DISK_FORMAT_RAW,
		    "format duplicated");
		config_def_free(dup);
		obj = config_to_json(def, 0);
		config_def_free(def);
		arr = json_object_object_get(obj, "disks");
		fmt0 = json_object_object_get(json_object_array_get_idx(arr, 0),
		    "format");
		fmt1 = json_object_object_get(json_object_array_get_idx(arr, 1),
		    "format");
		tap_ok(fmt0 == NULL &&
		    strcmp(json_object_get_string(fmt1) ?: "", "raw") == 0,
		    "shown as given: %s", json_object_to_json_string(arr));
		rc = config_parse(obj, 0, &def, err, sizeof(err));
		tap_ok(rc == 0 &&
		    def->disks[0].format == VM_DISK_FORMAT_PROBED &&
		    def->disks[1].format == VM_DISK_FORMAT_RAW,
		    "format round-trips through JSON: %s",
		    rc == 0 ? "ok" : err);
		json_object_put(obj);
		if (rc == 0)
			config_def_free(def);
	}

	/* "overlay": kept, duplicated, and said only where it was given. */
	rc = parse_text("{\"name\":\"a\",\"disks\":[{\"path\":\"/srv/a.img\","
	    "\"overlay\":true},{\"path\":\"/srv/b.img\"}]}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->disks[0].overlay && !def->disks[1].overlay,
	    "overlay on the first disk only: %s", rc == 0 ? "ok" : err);
	if (rc == 0) {
		dup = config_def_dup(def);
		tap_ok(dup != NULL && dup->disks[0].overlay,
		    "overlay duplicated");
		config_def_free(dup);
		obj = config_to_json(def, 0);
		config_def_free(def);
		arr = json_object_object_get(obj, "disks");
		tap_ok(json_object_object_get(json_object_array_get_idx(arr,
		    1), "overlay") == NULL &&
		    json_object_get_boolean(json_object_object_get(
		    json_object_array_get_idx(arr, 0), "overlay")),
		    "shown as given: %s", json_object_to_json_string(arr));
		rc = config_parse(obj, 0, &def, err, sizeof(err));
		tap_ok(rc == 0 && def->disks[0].overlay,
		    "overlay round-trips through JSON: %s",
		    rc == 0 ? "ok" : err);
		json_object_put(obj);
		if (rc == 0)
			config_def_free(def);
	}
	/* An NBD disk: its address kept, raw without saying so. */
	rc = parse_text("{\"name\":\"a\",\"kernel\":\"/k\",\"disks\":"
	    "[{\"path\":\"nbd:unix:/run/s.sock:e\",\"serial\":\"n0\"}]}", 0,
	    &def, err, sizeof(err));
	tap_ok(rc == 0 && def->disks[0].nbd && def->disks[0].format ==
	    VM_DISK_FORMAT_RAW && strcmp(def->disks[0].path,
	    "nbd:unix:/run/s.sock:e") == 0, "an NBD disk: %s",
	    rc == 0 ? "ok" : err);
	if (rc == 0) {
		obj = config_to_json(def, 0);
		config_def_free(def);
		arr = json_object_object_get(obj, "disks");
		rc = config_parse(obj, 0, &def, err, sizeof(err));
		tap_ok(rc == 0 && def->disks[0].nbd && json_object_object_get(
		    json_object_array_get_idx(arr, 0), "format") == NULL,
		    "it round-trips through JSON, with no format: %s",
		    rc == 0 ? json_object_to_json_string(arr) : err);
		json_object_put(obj);
		if (rc == 0)
			config_def_free(def);
	}
	/* An RBD disk: its image and options kept, raw unsaid. */
	rc = parse_text("{\"name\":\"a\",\"kernel\":\"/k\",\"disks\":"
	    "[{\"path\":\"rbd:vms/web,id=vmmd,lock=off\",\"bus\":\"sata\"}]}",
	    0, &def, err, sizeof(err));
	tap_ok(rc == 0 && def->disks[0].rbd && !def->disks[0].nbd &&
	    def->disks[0].sata && def->disks[0].format ==
	    VM_DISK_FORMAT_RAW && strcmp(def->disks[0].path,
	    "rbd:vms/web,id=vmmd,lock=off") == 0, "an RBD disk: %s",
	    rc == 0 ? "ok" : err);
	if (rc == 0) {
		obj = config_to_json(def, 0);
		config_def_free(def);
		arr = json_object_object_get(obj, "disks");
		rc = config_parse(obj, 0, &def, err, sizeof(err));
		tap_ok(rc == 0 && def->disks[0].rbd && json_object_object_get(
		    json_object_array_get_idx(arr, 0), "format") == NULL,
		    "it round-trips through JSON, with no format: %s",
		    rc == 0 ? json_object_to_json_string(arr) : err);
		json_object_put(obj);
		if (rc == 0)
			config_def_free(def);
	}
	/* "bus": "sata" kept, duplicated, and said only where given. */
	rc = parse_text("{\"name\":\"a\",\"disks\":[{\"path\":"
	    "\"/srv/a.img\",\"bus\":\"virtio\"},{\"path\":\"/srv/b.img\","
	    "\"bus\":\"sata\"}]}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && !def->disks[0].sata && def->disks[1].sata,
	    "bus sata on the second disk only: %s", rc == 0 ? "ok" : err);
	if (rc == 0) {
		dup = config_def_dup(def);
		tap_ok(dup != NULL && dup->disks[1].sata, "bus duplicated");
		config_def_free(dup);
		obj = config_to_json(def, 0);
		config_def_free(def);
		arr = json_object_object_get(obj, "disks");
		tap_ok(json_object_object_get(json_object_array_get_idx(arr,
		    0), "bus") == NULL && strcmp(json_object_get_string(
		    json_object_object_get(json_object_array_get_idx(arr, 1),
		    "bus")), "sata") == 0,
		    "bus shown where sata: %s",
		    json_object_to_json_string(arr));
		json_object_put(obj);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = parse_text(bad[i][0], 0, &def, err, sizeof(err));
		tap_ok(rc == -EINVAL && strstr(err, bad[i][1]) != NULL,
		    "refused: %s", err);
		if (rc == 0)
			config_def_free(def);
	}
}

static void
test_net(void)
{
	static const char *const bad[][2] = {
		{ "{\"name\":\"a\",\"net\":\"tap0\"}", "net: expected" },
		{ "{\"name\":\"a\",\"net\":{}}", "tap" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\",\"x\":1}}",
		    "unknown argument 'x'" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"\"}}", "1 to 15" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"0123456789abcdef\"}}",
		    "1 to 15" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"..\"}}", "1 to 15" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"a/b\"}}",
		    "not an interface name" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"a b\"}}",
		    "not an interface name" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\","
		    "\"mac\":\"01:00:5e:00:00:01\"}}", "not a unicast" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\","
		    "\"mac\":\"02:00:00:00:00\"}}", "not a unicast" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\","
		    "\"mac\":\"02:00:00:00:00:0g\"}}", "not a unicast" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\","
		    "\"mac\":\"02:00:00:00:00:001\"}}", "not a unicast" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\","
		    "\"mac\":\" 2:00:00:00:00:01\"}}", "not a unicast" },
	};
	struct vm_def *def = NULL, *other = NULL;
	struct json_object *obj, *net, *mac;
	uint8_t m[6], m2[6];
	char err[256];
	size_t i;
	int rc;

	rc = parse_text("{\"name\":\"a\",\"net\":{\"tap\":\"vm-a\","
	    "\"mac\":\"52:54:00:AB:cd:01\"}}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && strcmp(def->nics[0].tap, "vm-a") == 0 &&
	    def->nics[0].has_mac, "a TAP and a MAC: %s", rc == 0 ? "ok" : err);
	if (rc == 0) {
		config_net_mac(def, 0, m);
		tap_ok(m[0] == 0x52 && m[3] == 0xab && m[5] == 0x01,
		    "the MAC given");
		obj = config_to_json(def, 0);
		tap_ok(json_object_object_get_ex(obj, "net", &net) &&
		    json_object_object_get_ex(net, "mac", &mac) &&
		    strcmp(json_object_get_string(mac), "52:54:00:ab:cd:01") ==
		    0, "shown as it is used");
		json_object_put(obj);
		config_def_free(def);
	}
	rc = parse_text("{\"name\":\"web\",\"net\":{\"tap\":\"t0\"}}", 0,
	    &def, err, sizeof(err));
	tap_ok(rc == 0 && parse_text("{\"name\":\"web2\",\"net\":"
	    "{\"tap\":\"t0\"}}", 0, &other, err, sizeof(err)) == 0,
	    "TAPs without a MAC");
	if (def != NULL && other != NULL) {
		config_net_mac(def, 0, m);
		config_net_mac(def, 0, m2);
		tap_ok(memcmp(m, m2, 6) == 0 && (m[0] & 3) == 2,
		    "a generated MAC: stable, local, unicast");
		config_net_mac(other, 0, m2);
		tap_ok(memcmp(m, m2, 6) != 0, "another name, another MAC");
	}
	config_def_free(def);
	config_def_free(other);
	rc = parse_text("{\"name\":\"a\",\"net\":[{\"tap\":\"t1\","
	    "\"mac\":\"02:00:00:00:00:07\"}]}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && strcmp(def->nics[0].tap, "t1") == 0 &&
	    def->nics[0].has_mac && def->nics[0].mac[5] == 7,
	    "net as an array of one card: %s", rc == 0 ? "ok" : err);
	config_def_free(rc == 0 ? def : NULL);
	rc = parse_text("{\"name\":\"a\",\"net\":[]}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->nics[0].tap[0] == '\0' && !(def->nics[0].user && def->nnics > 0),
	    "net as an empty array: no card");
	config_def_free(rc == 0 ? def : NULL);
	rc = parse_text("{\"name\":\"a\",\"net\":[{\"tap\":\"t1\"},"
	    "{\"user\":true,\"forward\":[\"tcp::2222:22\"]}]}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->nnics == 2 && strcmp(def->nics[0].tap,
	    "t1") == 0 && def->nics[1].user && def->nics[1].nforward == 1,
	    "two cards: %s", rc == 0 ? "ok" : err);
	if (rc == 0) {
		uint8_t m0[6], m1[6];
		struct json_object *j = config_net_json(def);

		config_net_mac(def, 0, m0);
		config_net_mac(def, 1, m1);
		tap_ok(memcmp(m0, m1, 5) == 0 && m1[5] == (uint8_t)(m0[5] + 1),
		    "card 1's MAC follows card 0's");
		tap_ok(json_object_is_type(j, json_type_array) &&
		    json_object_array_length(j) == 2,
		    "two cards are written as an array");
		json_object_put(j);
		config_def_free(def);
	}
	expect_invalid("{\"name\":\"a\",\"net\":[{\"tap\":\"t1\"},"
	    "{\"user\":true},{\"user\":true},{\"user\":true},"
	    "{\"user\":true}]}", 0, "net: 5 cards, at most 4");
	expect_invalid("{\"name\":\"a\",\"net\":[{\"tap\":\"t1\"},"
	    "{\"tap\":\"t1\"}]}", 0, "net[1]: tap t1: already net[0]'s");
	expect_invalid("{\"name\":\"a\",\"net\":[{\"user\":true,"
	    "\"forward\":[\"tcp::2222:22\"]},{\"user\":true,\"forward\":"
	    "[\"tcp:127.0.0.1:2222:23\"]}]}", 0,
	    "net[1]: forward[0]: host port 2222 forwarded twice");
	expect_invalid("{\"name\":\"a\",\"net\":[{\"tap\":\"t1\","
	    "\"mac\":\"52:54:00:00:00:01\"},{\"tap\":\"t2\",\"mac\":"
	    "\"52:54:00:00:00:01\"}]}", 0, "net[1]: the same MAC as net[0]");
	expect_invalid("{\"name\":\"a\",\"net\":[\"t1\"]}", 0,
	    "net[0]: expected an object {\"tap\": ...}");
	rc = parse_text("{\"name\":\"a\"}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && def->nics[0].tap[0] == '\0', "no network by default");
	if (rc == 0)
		config_def_free(def);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		def = NULL;
		rc = parse_text(bad[i][0], 0, &def, err, sizeof(err));
		tap_ok(rc == -EINVAL && strstr(err, bad[i][1]) != NULL,
		    "refused: %s", err);
		if (rc == 0)
			config_def_free(def);
	}
}

/* User-mode networking and its forwards; vsock. */
static void
test_user_net_vsock(void)
{
	static const char *const bad[][2] = {
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"tap\":\"t\"}}",
		    "not both" },
		{ "{\"name\":\"a\",\"net\":{\"tap\":\"t\",\"forward\":[]}}",
		    "only with user-mode" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[\"tcp:127.0.0.1:22:22\"]}}", "below 1024" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[\"sctp::2222:22\"]}}", "expected tcp|udp" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[\"tcp:1.2.3:2222:22\"]}}", "expected tcp|udp" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[\"tcp::2222:0\"]}}", "expected tcp|udp" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[\"tcp::2222:22:1\"]}}", "expected tcp|udp" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[\"tcp::2222:22\",\"tcp:127.0.0.1:2222:80\"]}}",
		    "forwarded twice" },
		{ "{\"name\":\"a\",\"net\":{\"user\":true,\"forward\":"
		    "[2222]}}", "expected a string" },
		{ "{\"name\":\"a\",\"vsock\":{\"cid\":2}}", "out of range" },
		{ "{\"name\":\"a\",\"vsock\":{\"cid\":4294967295}}",
		    "out of range" },
		{ "{\"name\":\"a\",\"vsock\":true}", "expected an object" },
		{ "{\"name\":\"a\",\"vsock\":{\"port\":1}}", "unknown" },
	};
	struct vm_def *def = NULL;
	struct json_object *obj, *o, *fw;
	char err[256];
	int rc;

	rc = parse_text("{\"name\":\"a\",\"net\":{\"user\":true,"
	    "\"forward\":[\"tcp:127.0.0.1:2222:22\",\"udp::5353:53\"]}}",
	    0, &def, err, sizeof(err));
	tap_ok(rc == 0 && (def->nics[0].user && def->nnics > 0) && def->nics[0].tap[0] == '\0' &&
	    def->nics[0].nforward == 2 && !def->nics[0].forward[0].udp &&
	    strcmp(def->nics[0].forward[0].addr, "127.0.0.1") == 0 &&
	    def->nics[0].forward[0].host_port == 2222 &&
	    def->nics[0].forward[0].guest_port == 22 && def->nics[0].forward[1].udp &&
	    def->nics[0].forward[1].addr[0] == '\0', "user-mode networking with "
	    "two forwards: %s", rc == 0 ? "ok" : err);
	if (rc == 0) {
		obj = config_to_json(def, 0);
		tap_ok(json_object_object_get_ex(obj, "net", &o) &&
		    json_object_object_get_ex(o, "forward", &fw) &&
		    strcmp(json_object_get_string(json_object_array_get_idx(fw,
		    1)), "udp::5353:53") == 0 && json_object_object_get_ex(o,
		    "mac", NULL), "written back as given, with its MAC");
		json_object_put(obj);
		config_def_free(def);
	}
	rc = parse_text("{\"name\":\"a\",\"vsock\":{\"cid\":7,"
	    "\"socket\":true}}", 0, &def, err, sizeof(err));
	tap_ok(rc == 0 && def->vsock && def->vsock_cid == 7 &&
	    def->vsock_socket, "vsock with a CID and a socket");
	if (rc == 0)
		config_def_free(def);
	rc = parse_text("{\"name\":\"a\",\"vsock\":{}}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->vsock && def->vsock_cid == 0 &&
	    !def->vsock_socket, "vsock with a CID chosen at start");
	if (rc == 0)
		config_def_free(def);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		def = NULL;
		rc = parse_text(bad[i][0], 0, &def, err, sizeof(err));
		tap_ok(rc == -EINVAL && strstr(err, bad[i][1]) != NULL,
		    "refused: %s", err);
		if (rc == 0)
			config_def_free(def);
	}
}

static void
test_lost_ticks(void)
{
	struct vm_def *def = NULL;
	struct json_object *obj;
	char err[256];
	int rc;

	rc = parse_text("{\"name\":\"a\",\"lost_tick_policy\":\"discard\","
	    "\"rtc_backlog_max\":65536,\"rtc_slices\":8}", 0, &def, err,
	    sizeof(err));
	tap_ok(rc == 0 && def->lost_ticks == VM_LOST_TICKS_DISCARD &&
	    def->rtc_backlog_max == 65536 && def->rtc_slices == 8,
	    "lost_tick_policy discard, rtc_backlog_max 65536, rtc_slices 8");
	if (rc == 0) {
		obj = config_to_json(def, 0);
		tap_ok(strcmp(json_object_get_string(json_object_object_get(obj,
		    "lost_tick_policy")), "discard") == 0 &&
		    json_object_get_int64(json_object_object_get(obj,
		    "rtc_backlog_max")) == 65536 &&
		    json_object_get_int64(json_object_object_get(obj,
		    "rtc_slices")) == 8,
		    "lost_tick_policy, rtc_backlog_max and rtc_slices shown");
		json_object_put(obj);
		config_def_free(def);
	}
	rc = parse_text("{\"name\":\"a\"}", 0, &def, err, sizeof(err));
	if (rc == 0) {
		obj = config_to_json(def, 0);
		tap_ok(strcmp(json_object_get_string(json_object_object_get(obj,
		    "lost_tick_policy")), "slew") == 0 &&
		    !json_object_object_get_ex(obj, "rtc_backlog_max", NULL) &&
		    !json_object_object_get_ex(obj, "rtc_slices", NULL),
		    "default shown as slew; no rtc_backlog_max, rtc_slices "
		    "unless set");
		json_object_put(obj);
		config_def_free(def);
	}
	expect_valid("{\"name\":\"a\",\"lost_tick_policy\":\"slew\","
	    "\"rtc_backlog_max\":1}", 0);
	expect_invalid("{\"name\":\"a\",\"lost_tick_policy\":\"delay\"}", 0,
	    "lost_tick_policy: 'delay' must be \"slew\" or \"discard\"");
	expect_invalid("{\"name\":\"a\",\"lost_tick_policy\":true}", 0,
	    "lost_tick_policy: expected a string");
	expect_invalid("{\"name\":\"a\",\"rtc_backlog_max\":0}", 0,
	    "rtc_backlog_max: 0 is out of range (1..65536)");
	expect_invalid("{\"name\":\"a\",\"rtc_backlog_max\":65537}", 0,
	    "rtc_backlog_max: 65537 is out of range (1..65536)");
	expect_invalid("{\"name\":\"a\",\"rtc_backlog_max\":\"8\"}", 0,
	    "rtc_backlog_max: expected an integer");
	expect_valid("{\"name\":\"a\",\"rtc_slices\":2}", 0);
	expect_valid("{\"name\":\"a\",\"rtc_slices\":32}", 0);
	expect_invalid("{\"name\":\"a\",\"rtc_slices\":1}", 0,
	    "rtc_slices: 1 is out of range (2..32)");
	expect_invalid("{\"name\":\"a\",\"rtc_slices\":33}", 0,
	    "rtc_slices: 33 is out of range (2..32)");
	expect_invalid("{\"name\":\"a\",\"rtc_slices\":8.5}", 0,
	    "rtc_slices: expected an integer");
}

static void
test_files(void)
{
	struct vm_def *def = NULL;
	char text[1024], want[1024], path[512], err[512];
	int rc;

	/* The form of a path is always checked. */
	expect_invalid("{\"name\":\"a\",\"kernel\":\"vmlinuz\"}", 0,
	    "kernel: 'vmlinuz' is not an absolute path");
	expect_invalid("{\"name\":\"a\",\"initrd\":\"x/initrd\"}", 0,
	    "initrd: 'x/initrd' is not an absolute path");
	expect_invalid("{\"name\":\"a\",\"kernel\":3}", 0,
	    "kernel: expected a string");
	expect_valid("{\"name\":\"a\",\"kernel\":null,\"initrd\":null}",
	    CONFIG_CHECK_FILES);

	/* Without CONFIG_CHECK_FILES a vanished kernel still loads. */
	expect_valid("{\"name\":\"a\",\"kernel\":\"/nonexistent/vmlinuz\"}", 0);
	expect_invalid("{\"name\":\"a\",\"kernel\":\"/nonexistent/vmlinuz\"}",
	    CONFIG_CHECK_FILES,
	    "kernel: /nonexistent/vmlinuz: No such file or directory");
	snprintf(text, sizeof(text), "{\"name\":\"a\",\"kernel\":\"%s\"}",
	    tmpdir);
	snprintf(want, sizeof(want), "kernel: %s: not a regular file", tmpdir);
	expect_invalid(text, CONFIG_CHECK_FILES, want);

	/* A text file is no kernel. */
	snprintf(path, sizeof(path), "%s/passwd", tmpdir);
	write_file(path, "root:x:0:0:root:/root:/bin/sh\n", 31);
	snprintf(text, sizeof(text), "{\"name\":\"a\",\"kernel\":\"%s\"}", path);
	rc = parse_text(text, CONFIG_CHECK_FILES, &def, err, sizeof(err));
	snprintf(want, sizeof(want), "kernel: %s: ", path);
	tap_ok(rc == -EINVAL && strncmp(err, want, strlen(want)) == 0 &&
	    strlen(err) > strlen(want), "a text file is not a kernel: %s",
	    err);
	config_def_free(def);

	/* ... but a fine initrd: only readability is checked. */
	snprintf(text, sizeof(text), "{\"name\":\"a\",\"kernel\":\"%s\","
	    "\"initrd\":\"%s\"}", kernel_path, path);
	rc = parse_text(text, CONFIG_CHECK_FILES, &def, err, sizeof(err));
	tap_ok(rc == 0 && strcmp(def->kernel, kernel_path) == 0 &&
	    strcmp(def->initrd, path) == 0, "a PVH kernel and an initrd%s%s",
	    rc ? ": " : "", rc ? err : "");
	config_def_free(def);

	snprintf(text, sizeof(text), "{\"name\":\"a\",\"kernel\":\"%s\","
	    "\"initrd\":\"/nonexistent/initrd\"}", kernel_path);
	expect_invalid(text, CONFIG_CHECK_FILES,
	    "initrd: /nonexistent/initrd: No such file or directory");

	rc = config_check_file("kernel", kernel_path, true, err, sizeof(err));
	tap_ok(rc == 0, "config_check_file accepts the PVH kernel");
	rc = config_check_file("kernel", path, true, err, sizeof(err));
	tap_ok(rc < 0, "config_check_file refuses a text file (%d)", rc);
}

static bool
str_equal(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* Parse text, which must be valid, and return the definition. */
static struct vm_def *
parse_ok(const char *text)
{
	struct vm_def *def = NULL;
	char err[512] = "";

	if (parse_text(text, 0, &def, err, sizeof(err)) != 0)
		tap_diag("%s: %s", text, err);
	return def;
}

/* vnc accepted, read as addr and display (-1: auto). */
static void
expect_vnc(const char *vnc, const char *addr, int display)
{
	struct vm_def *def;
	char text[256];

	snprintf(text, sizeof(text), "{\"name\":\"a\",\"vnc\":\"%s\"}",
	    vnc);
	def = parse_ok(text);
	tap_ok(def != NULL && str_equal(def->vnc_addr, addr) &&
	    def->vnc_display == display, "vnc %s: %s, display %d", vnc,
	    def != NULL && def->vnc_addr ? def->vnc_addr : "-",
	    def != NULL ? def->vnc_display : -2);
	config_def_free(def);
}

/*
 * "uuid": taken in either case and shown in lowercase, refused in any
 * other form; absent, none (create and load give one); and
 * config_uuid_new()'s: version 4, RFC 4122 variant, a new one each time.
 */
static void
test_uuid(void)
{
	static const uint8_t want[16] = { 0x12, 0x34, 0x56, 0x78, 0x9a,
	    0xbc, 0x4d, 0xef, 0x80, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
	    0xcd };
	struct json_object *obj;
	struct vm_def *def, *two;
	const char *s;

	def = parse_ok("{\"name\":\"a\"}");
	tap_ok(def != NULL && !def->has_uuid, "uuid: none unless given");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && !json_object_object_get_ex(obj, "uuid", NULL),
	    "uuid: none, none shown");
	json_object_put(obj);
	config_def_free(def);

	def = parse_ok("{\"name\":\"a\",\"uuid\":"
	    "\"12345678-9ABC-4def-8001-23456789abcd\"}");
	tap_ok(def != NULL && def->has_uuid &&
	    memcmp(def->uuid, want, 16) == 0, "uuid: its 16 bytes in order");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	s = obj != NULL ? json_object_get_string(json_object_object_get(obj,
	    "uuid")) : NULL;
	tap_ok(s != NULL && strcmp(s, "12345678-9abc-4def-8001-23456789abcd")
	    == 0, "uuid: shown in lowercase (%s)", s != NULL ? s : "none");
	json_object_put(obj);
	config_def_free(def);

	expect_invalid("{\"name\":\"a\",\"uuid\":\"12345678-9abc-4def-8001"
	    "-23456789abc\"}", 0, "uuid: '12345678-9abc-4def-8001-23456789abc' "
	    "is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
	expect_invalid("{\"name\":\"a\",\"uuid\":\"12345678-9abc-4def-8001"
	    "-23456789abcde\"}", 0, "uuid: '12345678-9abc-4def-8001-"
	    "23456789abcde' is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-"
	    "xxxxxxxxxxxx)");
	expect_invalid("{\"name\":\"a\",\"uuid\":\"123456789-abc-4def-8001"
	    "-23456789abcd\"}", 0, "uuid: '123456789-abc-4def-8001-"
	    "23456789abcd' is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-"
	    "xxxxxxxxxxxx)");
	expect_invalid("{\"name\":\"a\",\"uuid\":\"g2345678-9abc-4def-8001"
	    "-23456789abcd\"}", 0, "uuid: 'g2345678-9abc-4def-8001-"
	    "23456789abcd' is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-"
	    "xxxxxxxxxxxx)");
	expect_invalid("{\"name\":\"a\",\"uuid\":7}", 0,
	    "uuid: expected a string");

	def = parse_ok("{\"name\":\"a\"}");
	two = parse_ok("{\"name\":\"b\"}");
	tap_ok(def != NULL && two != NULL && config_uuid_new(def) == 0 &&
	    config_uuid_new(two) == 0 && def->has_uuid &&
	    (def->uuid[6] & 0xf0) == 0x40 && (def->uuid[8] & 0xc0) == 0x80,
	    "uuid: a new one is version 4, RFC 4122 variant");
	tap_ok(def != NULL && two != NULL &&
	    memcmp(def->uuid, two->uuid, 16) != 0,
	    "uuid: two new ones differ");
	config_def_free(def);
	config_def_free(two);
}

static void
test_display(void)
{
	struct vm_def *def, *back;
	struct json_object *obj, *v;
	char text[256], err[256];

	/* No display unless asked for. */
	def = parse_ok("{\"name\":\"a\"}");
	tap_ok(def != NULL && def->vnc_addr == NULL && def->width == 0 &&
	    def->vnc_password == NULL && !def->vnc_web,
	    "default: no display");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "vnc", &v) &&
	    v == NULL && !json_object_object_get_ex(obj, "display", NULL) &&
	    !json_object_object_get_ex(obj, "vnc_password", NULL),
	    "without a display: \"vnc\": null and nothing else");
	json_object_put(obj);
	config_def_free(def);
	expect_valid("{\"name\":\"a\",\"vnc\":null,\"display\":null,"
	    "\"vnc_password\":null,\"vnc_web\":false}", 0);

	/* The forms of vnc. */
	expect_vnc("auto", "127.0.0.1", -1);
	expect_vnc("127.0.0.1:0", "127.0.0.1", 0);
	expect_vnc("0.0.0.0:7", "0.0.0.0", 7);
	expect_vnc("localhost:1", "localhost", 1);
	expect_vnc("192.168.1.20:auto", "192.168.1.20", -1);
	expect_vnc("[::1]:0", "::1", 0);
	expect_vnc("[::]:auto", "::", -1);
	expect_vnc("[fe80::1:2]:12", "fe80::1:2", 12);
	expect_vnc("127.0.0.1:59635", "127.0.0.1", 59635);

	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\"}");
	tap_ok(def != NULL && def->width == 1024 && def->height == 768 &&
	    def->vnc_password == NULL && !def->vnc_no_password &&
	    !def->vnc_web, "with vnc: 1024x768, a password made at each "
	    "start, no web client by default");
	config_def_free(def);

	expect_invalid("{\"name\":\"a\",\"vnc\":\"127.0.0.1:59636\"}", 0,
	    "vnc: '127.0.0.1:59636': display 59636 is out of range "
	    "(0..59635: port 5900 + N is beyond 65535)");
	expect_invalid("{\"name\":\"a\",\"vnc\":"
	    "\"127.0.0.1:99999999999999999999999\"}", 0,
	    "vnc: '127.0.0.1:99999999999999999999999': display "
	    "99999999999999999999 is out of range (0..59635: port 5900 + N "
	    "is beyond 65535)");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"127.0.0.1:-1\"}", 0,
	    "vnc: '127.0.0.1:-1': the display '-1' must be a number or auto");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"127.0.0.1:\"}", 0,
	    "vnc: '127.0.0.1:': the display '' must be a number or auto");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"127.0.0.1: 1\"}", 0,
	    "vnc: '127.0.0.1: 1': the display ' 1' must be a number or auto");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"127.0.0.1\"}", 0,
	    "vnc: '127.0.0.1' must be ADDR:N, ADDR:auto or auto");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"\"}", 0,
	    "vnc: '' must be ADDR:N, ADDR:auto or auto");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"127.0.0.256:0\"}", 0,
	    "vnc: '127.0.0.256:0': the address must be an IPv4 address, an "
	    "IPv6 address in brackets, or localhost");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"example.org:0\"}", 0,
	    "vnc: 'example.org:0': the address must be an IPv4 address, an "
	    "IPv6 address in brackets, or localhost");
	expect_invalid("{\"name\":\"a\",\"vnc\":\":0\"}", 0,
	    "vnc: ':0': the address must be an IPv4 address, an IPv6 address "
	    "in brackets, or localhost");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"::1:0\"}", 0,
	    "vnc: '::1:0': an IPv6 address goes in brackets, as in [::1]:0");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"[::1]\"}", 0,
	    "vnc: '[::1]' must be [IPV6]:N or [IPV6]:auto");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"[127.0.0.1]:0\"}", 0,
	    "vnc: '[127.0.0.1]:0': the address must be an IPv4 address, an "
	    "IPv6 address in brackets, or localhost");
	expect_invalid("{\"name\":\"a\",\"vnc\":5900}", 0,
	    "vnc: expected a string");
	expect_invalid("{\"name\":\"a\",\"vnc\":true}", 0,
	    "vnc: expected a string");

	/* display */
	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"1920x1080\"}");
	tap_ok(def != NULL && def->width == 1920 && def->height == 1080,
	    "display 1920x1080");
	config_def_free(def);
	expect_valid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"320x200\"}", 0);
	expect_valid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"4096x2160\"}", 0);
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"319x200\"}", 0,
	    "display: 319x200 is out of range (320x200..4096x2160)");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"4096x2161\"}", 0,
	    "display: 4096x2161 is out of range (320x200..4096x2160)");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"99999999999x768\"}", 0,
	    "display: 99999999999x768 is out of range (320x200..4096x2160)");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"1024*768\"}", 0,
	    "display: '1024*768' must be WIDTHxHEIGHT, as in 1024x768");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"1024x\"}", 0,
	    "display: '1024x' must be WIDTHxHEIGHT, as in 1024x768");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"x768\"}", 0,
	    "display: 'x768' must be WIDTHxHEIGHT, as in 1024x768");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":\"+1024x768\"}", 0,
	    "display: '+1024x768' must be WIDTHxHEIGHT, as in 1024x768");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"display\":[1024,768]}", 0, "display: expected a string");
	tap_ok(4096ULL * 4 * 2160 <= 64ULL << 20,
	    "the largest display fits the 64 MiB framebuffer slot");

	/* vnc_password: 1..8 bytes, never quoted in an error. */
	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":\"12345678\"}");
	tap_ok(def != NULL && str_equal(def->vnc_password, "12345678"),
	    "an 8-byte password");
	config_def_free(def);
	expect_valid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":\"x\"}", 0);
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":\"\"}", 0,
	    "vnc_password: must not be empty (false for no password)");
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":\"s3cr3tpw9\"}", 0,
	    "vnc_password: 9 bytes is longer than 8 (VNC authentication "
	    "uses 8)");
	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":true}");
	tap_ok(def != NULL && def->vnc_password == NULL &&
	    !def->vnc_no_password, "vnc_password true: one made at each "
	    "start, as by default");
	config_def_free(def);
	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":false}");
	tap_ok(def != NULL && def->vnc_password == NULL &&
	    def->vnc_no_password, "vnc_password false: none");
	obj = def != NULL ? config_to_json(def, CONFIG_JSON_SECRETS) : NULL;
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "vnc_password",
	    &v) && json_object_is_type(v, json_type_boolean) &&
	    !json_object_get_boolean(v), "stored form: \"vnc_password\": "
	    "false");
	back = NULL;
	tap_ok(obj != NULL && config_parse(obj, 0, &back, err,
	    sizeof(err)) == 0 && back->vnc_no_password &&
	    back->vnc_password == NULL, "and it loads back as none");
	config_def_free(back);
	json_object_put(obj);
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "vnc_password",
	    &v) && json_object_is_type(v, json_type_boolean) &&
	    !json_object_get_boolean(v), "reply form: \"vnc_password\": "
	    "false");
	json_object_put(obj);
	config_def_free(def);
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_password\":12345}", 0,
	    "vnc_password: expected a string, true or false");

	/* vnc_web */
	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_web\":true}");
	tap_ok(def != NULL && def->vnc_web, "vnc_web true");
	config_def_free(def);
	expect_invalid("{\"name\":\"a\",\"vnc\":\"auto\","
	    "\"vnc_web\":\"yes\"}", 0, "vnc_web: expected true or false");

	/* Display settings without a display are refused, not dropped. */
	expect_invalid("{\"name\":\"a\",\"display\":\"800x600\"}", 0,
	    "display: only with a display: set vnc too");
	expect_invalid("{\"name\":\"a\",\"vnc_password\":\"pw\"}", 0,
	    "vnc_password: only with a display: set vnc too");
	expect_invalid("{\"name\":\"a\",\"vnc_password\":false}", 0,
	    "vnc_password: only with a display: set vnc too");
	expect_invalid("{\"name\":\"a\",\"vnc\":null,\"vnc_web\":true}",
	    0, "vnc_web: only with a display: set vnc too");

	/* Clients see whether there is a password, never what it is. */
	snprintf(text, sizeof(text), "{\"name\":\"a\",\"vnc\":\"[::1]:3\","
	    "\"display\":\"800x600\",\"vnc_password\":\"hunter2\","
	    "\"vnc_web\":true}");
	def = parse_ok(text);
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && strstr(json_object_to_json_string(obj),
	    "hunter2") == NULL && json_object_object_get_ex(obj,
	    "vnc_password", &v) && json_object_is_type(v, json_type_boolean) &&
	    json_object_get_boolean(v), "reply form: \"vnc_password\": true");
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "vnc", &v) &&
	    strcmp(json_object_get_string(v), "[::1]:3") == 0 &&
	    json_object_object_get_ex(obj, "display", &v) &&
	    strcmp(json_object_get_string(v), "800x600") == 0,
	    "vnc and display as they were given");
	json_object_put(obj);
	config_def_free(def);
	def = parse_ok("{\"name\":\"a\",\"vnc\":\"auto\"}");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "vnc_password",
	    &v) && json_object_is_type(v, json_type_boolean) &&
	    json_object_get_boolean(v) && json_object_object_get_ex(obj,
	    "vnc", &v) && strcmp(json_object_get_string(v),
	    "127.0.0.1:auto") == 0,
	    "reply form: \"vnc_password\": true, the password made at each "
	    "start; auto as 127.0.0.1:auto");
	json_object_put(obj);
	obj = def != NULL ? config_to_json(def, CONFIG_JSON_SECRETS) : NULL;
	tap_ok(obj != NULL && !json_object_object_get_ex(obj, "vnc_password",
	    NULL), "stored form: a password made at each start, no member");
	json_object_put(obj);
	config_def_free(def);
}

static bool
defs_equal(const struct vm_def *a, const struct vm_def *b)
{
	return strcmp(a->name, b->name) == 0 &&
	    ((a->kernel == NULL && b->kernel == NULL) ||
	    (a->kernel && b->kernel && strcmp(a->kernel, b->kernel) == 0)) &&
	    ((a->initrd == NULL && b->initrd == NULL) ||
	    (a->initrd && b->initrd && strcmp(a->initrd, b->initrd) == 0)) &&
	    strcmp(a->cmdline, b->cmdline) == 0 &&
	    a->memory_mib == b->memory_mib && a->vcpus == b->vcpus &&
	    a->on_reboot == b->on_reboot && a->transient == b->transient &&
	    str_equal(a->vnc_addr, b->vnc_addr) &&
	    a->vnc_display == b->vnc_display && a->width == b->width &&
	    a->height == b->height &&
	    str_equal(a->vnc_password, b->vnc_password) &&
	    a->vnc_no_password == b->vnc_no_password &&
	    a->vnc_web == b->vnc_web && a->lost_ticks == b->lost_ticks &&
	    a->rtc_backlog_max == b->rtc_backlog_max &&
	    a->rtc_slices == b->rtc_slices;
}

/* Count the entries of dir other than . and .. */
static int
count_entries(const char *dir, int *hidden)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	*hidden = 0;
	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (de->d_name[0] == '.')
			(*hidden)++;
	}
	closedir(d);
	return n;
}

static void
test_roundtrip(void)
{
	struct vm_def *def = NULL, *back = NULL, *dup;
	struct json_object *obj;
	char dir[512], path[600], err[512], text[1024];
	struct stat st;
	int rc, hidden;

	snprintf(dir, sizeof(dir), "%s/vms", tmpdir);
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s", dir);

	snprintf(text, sizeof(text), "{\"name\":\"web\",\"kernel\":\"%s\","
	    "\"cmdline\":\"console=ttyS0 \\\"q\\\" \\\\ x\\n\","
	    "\"memory_mib\":512,\"vcpus\":4,\"on_reboot\":\"stop\","
	    "\"vnc\":\"[::1]:auto\",\"display\":\"800x600\","
	    "\"vnc_password\":\"pw\\\"x\",\"vnc_web\":true,"
	    "\"lost_tick_policy\":\"discard\",\"rtc_backlog_max\":64,"
	    "\"rtc_slices\":8}",
	    kernel_path);
	rc = parse_text(text, CONFIG_CHECK_FILES, &def, err, sizeof(err));
	tap_ok(rc == 0, "definition for the round trip");
	if (rc != 0)
		return;

	obj = config_to_json(def, CONFIG_JSON_SECRETS);
	rc = config_parse(obj, 0, &back, err, sizeof(err));
	tap_ok(rc == 0 && defs_equal(def, back),
	    "config_to_json output parses back to the same definition");
	json_object_put(obj);
	config_def_free(back);

	dup = config_def_dup(def);
	tap_ok(dup != NULL && defs_equal(def, dup) && dup->name != def->name,
	    "config_def_dup");
	config_def_free(dup);

	/* A umask that would let anyone read must not matter. */
	{
		mode_t old = umask(0);

		rc = config_save(dir, def, err, sizeof(err));
		umask(old);
	}
	tap_ok(rc == 0, "save%s%s", rc ? ": " : "", rc ? err : "");
	snprintf(path, sizeof(path), "%s/web.json", dir);
	tap_ok(stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 07777) == 0600,
	    "saved as NAME.json, mode 0600 (%04o)", st.st_mode & 07777);
	tap_ok(count_entries(dir, &hidden) == 1 && hidden == 0,
	    "no temporary file is left behind");

	rc = config_load_file(path, &back, err, sizeof(err));
	tap_ok(rc == 0 && defs_equal(def, back), "loads back identical%s%s",
	    rc ? ": " : "", rc ? err : "");
	config_def_free(back);

	/* Saving again replaces the file in one step, and a file that
	 * was readable by others (an older vmmd's) is so no longer. */
	def->memory_mib = 1024;
	chmod(path, 0644);
	rc = config_save(dir, def, err, sizeof(err));
	tap_ok(rc == 0 && stat(path, &st) == 0 && (st.st_mode & 07777) == 0600,
	    "a second save leaves the file at 0600");
	rc = rc == 0 ? config_load_file(path, &back, err, sizeof(err)) : rc;
	tap_ok(rc == 0 && back->memory_mib == 1024 &&
	    count_entries(dir, &hidden) == 1 && hidden == 0,
	    "a second save replaces the file, again without leftovers");
	config_def_free(back);

	rc = config_save("/nonexistent-dir", def, err, sizeof(err));
	tap_ok(rc == -ENOENT && err[0] != '\0',
	    "saving into a missing directory fails: %s", err);

	rc = config_remove(dir, "web", err, sizeof(err));
	tap_ok(rc == 0 && access(path, F_OK) < 0 && errno == ENOENT,
	    "remove deletes the file");
	rc = config_remove(dir, "web", err, sizeof(err));
	tap_ok(rc == 0, "removing a missing file is fine");
	config_def_free(def);
}

struct reload {
	int ndefs;
	int nerrs;
	char names[8][80];
	char errs[8][600];
};

static void
reload_cb(void *arg, const char *file, struct vm_def *def, const char *err)
{
	struct reload *r = arg;

	if (def != NULL) {
		if (r->ndefs < 8)
			snprintf(r->names[r->ndefs], sizeof(r->names[0]), "%s",
			    def->name);
		r->ndefs++;
		config_def_free(def);
	} else {
		if (r->nerrs < 8)
			snprintf(r->errs[r->nerrs], sizeof(r->errs[0]),
			    "%s: %s", file, err);
		tap_diag("skipped %s: %s", file, err);
		r->nerrs++;
	}
}

static void
test_reload(void)
{
	struct reload r;
	struct vm_def *def = NULL;
	char dir[512], path[600], target[600], err[512];
	static const char good_b[] = "{\"name\":\"b\",\"kernel\":"
	    "\"/gone/vmlinuz\"}";
	static const char bad_utf8[] = "{\"name\":\"utf\",\"cmdline\":"
	    "\"\xed\xa0\x80\"}";
	int rc, i, found;

	snprintf(dir, sizeof(dir), "%s/reload", tmpdir);
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s", dir);

	rc = parse_text("{\"name\":\"a\",\"vcpus\":2}", 0, &def, err,
	    sizeof(err));
	if (rc != 0 || config_save(dir, def, err, sizeof(err)) != 0)
		tap_bail("cannot save a");
	config_def_free(def);

	/* b's kernel has gone: still loads (vm.start reports it). */
	snprintf(path, sizeof(path), "%s/b.json", dir);
	write_file(path, good_b, strlen(good_b));
	snprintf(path, sizeof(path), "%s/corrupt.json", dir);
	write_file(path, "{\"name\": \"corrupt\", ", 20);
	snprintf(path, sizeof(path), "%s/other.json", dir);
	write_file(path, "{\"name\":\"different\"}", 20);
	snprintf(path, sizeof(path), "%s/bad name.json", dir);
	write_file(path, "{\"name\":\"bad name\"}", 19);
	snprintf(path, sizeof(path), "%s/t.json", dir);
	write_file(path, "{\"name\":\"t\",\"transient\":true}", 29);
	snprintf(path, sizeof(path), "%s/range.json", dir);
	write_file(path, "{\"name\":\"range\",\"vcpus\":0}", 26);
	/* A link to a good definition kept elsewhere is not followed. */
	snprintf(path, sizeof(path), "%s/outside.json", tmpdir);
	write_file(path, "{\"name\":\"link\"}", 15);
	snprintf(target, sizeof(target), "%s/link.json", dir);
	if (symlink(path, target) < 0)
		tap_bail("symlink %s", target);
	/* An encoded surrogate in a string: not RFC 3629 UTF-8. */
	snprintf(path, sizeof(path), "%s/utf.json", dir);
	write_file(path, bad_utf8, strlen(bad_utf8));
	snprintf(path, sizeof(path), "%s/.a.json.Xy12Zq", dir);
	write_file(path, "garbage", 7);
	snprintf(path, sizeof(path), "%s/README", dir);
	write_file(path, "not a definition", 16);

	memset(&r, 0, sizeof(r));
	rc = config_load_dir(dir, reload_cb, &r);
	tap_ok(rc == 0, "config_load_dir succeeds despite bad files");
	tap_ok(r.ndefs == 2 && strcmp(r.names[0], "a") == 0 &&
	    strcmp(r.names[1], "b") == 0,
	    "the two good definitions load, in name order");
	tap_ok(r.nerrs == 7, "seven bad files are reported (%d)", r.nerrs);
	found = 0;
	for (i = 0; i < r.nerrs && i < 8; i++) {
		if (strncmp(r.errs[i], "corrupt.json: ", 14) == 0)
			found |= 1;
		if (strcmp(r.errs[i], "link.json: a symbolic link, "
		    "not loaded") == 0)
			found |= 2;
		if (strstr(r.errs[i], "utf.json: invalid UTF-8") == r.errs[i])
			found |= 4;
	}
	tap_ok(found & 1, "the corrupt file is named in its error");
	tap_ok(found & 2, "a symbolic link is refused, by name");
	tap_ok(found & 4, "a definition that is not UTF-8 is refused");
	snprintf(path, sizeof(path), "%s/corrupt.json", dir);
	tap_ok(access(path, F_OK) == 0, "a corrupt file is never deleted");

	rc = config_load_dir("/nonexistent-dir", reload_cb, &r);
	tap_ok(rc == -ENOENT, "a missing directory is an error");
}

/* rm -r of the temporary tree (two levels deep). */
static void
cleanup(const char *dir)
{
	char path[1024];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			cleanup(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* "owner": the stored file's word only; a client's is ignored. */
static void
test_owner(void)
{
	static const char text[] = "{\"name\":\"o\",\"owner\":{\"uid\":1000,"
	    "\"gid\":100,\"groups\":[27,54321]}}";
	struct json_object *obj, *o;
	struct vm_def *def;
	char err[256];

	TAP_EQ(parse_text(text, 0, &def, err, sizeof(err)), 0,
	    "owner from a client: accepted");
	TAP_EQ(def->owner.known, false, "and ignored");
	config_def_free(def);
	TAP_EQ(parse_text(text, CONFIG_OWNER, &def, err, sizeof(err)), 0,
	    "owner from the stored file: read");
	tap_ok(def->owner.known && def->owner.uid == 1000 &&
	    def->owner.gid == 100 && def->owner.ngroups == 2 &&
	    def->owner.groups[1] == 54321, "uid, gid and groups");
	obj = config_to_json(def, CONFIG_JSON_SECRETS);
	tap_ok(json_object_object_get_ex(obj, "owner", &o) &&
	    strcmp(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"uid\":1000,\"gid\":100,\"groups\":[27,54321]}") == 0,
	    "written back as it was");
	json_object_put(obj);
	config_def_free(def);
	expect_invalid("{\"name\":\"o\",\"owner\":{\"uid\":-1,\"gid\":0}}",
	    CONFIG_OWNER, "uid: -1 is out of range (0..4294967294)");
	expect_invalid("{\"name\":\"o\",\"owner\":[]}", CONFIG_OWNER,
	    "owner: must be {\"uid\", \"gid\", \"groups\"}");
	TAP_EQ(parse_text("{\"name\":\"o\"}", CONFIG_OWNER, &def, err,
	    sizeof(err)), 0, "no owner in the file");
	TAP_EQ(def->owner.known, false, "none known: only root's files start");
	config_def_free(def);
}

/*
 * Every optional member, absent after members set to values that are
 * not their defaults, gets its default: nothing a member before it
 * read may carry over (as "rng" once did into "autostart").
 */
#define ABSENT(fn, expr)						\
static bool								\
fn(const struct vm_def *d)						\
{									\
	return expr;							\
}
ABSENT(dflt_kernel, d->kernel == NULL)
ABSENT(dflt_initrd, d->initrd == NULL)
ABSENT(dflt_boot, d->boot == VM_BOOT_UNSET)
ABSENT(dflt_cmdline, strcmp(d->cmdline, "") == 0)
ABSENT(dflt_memory, d->memory_mib == CONFIG_MEMORY_DEFAULT)
ABSENT(dflt_vcpus, d->vcpus == CONFIG_VCPUS_DEFAULT)
ABSENT(dflt_on_reboot, d->on_reboot == VM_ON_REBOOT_RESTART)
ABSENT(dflt_transient, !d->transient)
ABSENT(dflt_rng, !d->rng)
ABSENT(dflt_disks, d->ndisks == 0)
ABSENT(dflt_cloud_init, !d->cloud_init.on)
ABSENT(dflt_autostart, !d->autostart)
ABSENT(dflt_net, d->nnics == 0)
ABSENT(dflt_vsock, !d->vsock)
ABSENT(dflt_owner, !d->owner.known)
ABSENT(dflt_lost_ticks, d->lost_ticks == VM_LOST_TICKS_SLEW)
ABSENT(dflt_backlog, d->rtc_backlog_max == 0)
ABSENT(dflt_slices, d->rtc_slices == 0)
ABSENT(dflt_vnc, d->vnc_addr == NULL && d->width == 0)
ABSENT(dflt_display, d->width == CONFIG_DISPLAY_WIDTH_DEFAULT &&
    d->height == CONFIG_DISPLAY_HEIGHT_DEFAULT)
ABSENT(dflt_password, d->vnc_password == NULL && !d->vnc_no_password)
ABSENT(dflt_web, !d->vnc_web)
/* disks[1], after disks[0] with every member set */
ABSENT(dflt_readonly, d->ndisks == 2 && !d->disks[1].readonly)
ABSENT(dflt_serial, d->ndisks == 2 && d->disks[1].serial == NULL)
ABSENT(dflt_format, d->ndisks == 2 &&
    d->disks[1].format == VM_DISK_FORMAT_PROBED)
ABSENT(dflt_backing, d->ndisks == 2 && !d->disks[1].backing)
ABSENT(dflt_overlay, d->ndisks == 2 && !d->disks[1].overlay)
ABSENT(dflt_cid, d->vsock && d->vsock_cid == 0)
ABSENT(dflt_socket, d->vsock && !d->vsock_socket)
ABSENT(dflt_user_data, d->cloud_init.on && d->cloud_init.user_data == NULL)
ABSENT(dflt_ssh_keys, d->cloud_init.on && d->cloud_init.nkeys == 0)
ABSENT(dflt_network_config, d->cloud_init.on &&
    d->cloud_init.network_config == NULL)
ABSENT(dflt_mac, d->nnics == 1 && !d->nics[0].has_mac)
ABSENT(dflt_forward, d->nics[0].user && d->nics[0].nforward == 0)

struct absent_case {
	const char *in;		/* NULL: the definition; else its member */
	const char *key;
	const char *value;	/* JSON, not the default */
	bool (*is_default)(const struct vm_def *);
};

static const struct absent_case absent_cases[] = {
	{ NULL, "kernel", "\"/boot/k\"", dflt_kernel },
	{ NULL, "initrd", "\"/boot/i\"", dflt_initrd },
	{ NULL, "boot", "\"kernel\"", dflt_boot },
	{ NULL, "cmdline", "\"quiet\"", dflt_cmdline },
	{ NULL, "memory_mib", "512", dflt_memory },
	{ NULL, "vcpus", "3", dflt_vcpus },
	{ NULL, "on_reboot", "\"stop\"", dflt_on_reboot },
	{ NULL, "transient", "true", dflt_transient },
	{ NULL, "rng", "true", dflt_rng },
	{ NULL, "disks", "[{\"path\":\"/d0\",\"readonly\":true,"
	    "\"serial\":\"S0\",\"format\":\"qcow2\",\"backing\":true}]",
	    dflt_disks },
	{ NULL, "cloud_init", "{\"user_data\":\"#cloud-config\\n\","
	    "\"ssh_keys\":[\"ssh-ed25519 AAAA k\"],\"network_config\":\"n\"}",
	    dflt_cloud_init },
	{ NULL, "autostart", "true", dflt_autostart },
	{ NULL, "net", "{\"tap\":\"t0\",\"mac\":\"02:00:00:00:00:01\"}",
	    dflt_net },
	{ NULL, "vsock", "{\"cid\":7,\"socket\":true}", dflt_vsock },
	{ NULL, "owner", "{\"uid\":5,\"gid\":6,\"groups\":[7]}", dflt_owner },
	{ NULL, "lost_tick_policy", "\"discard\"", dflt_lost_ticks },
	{ NULL, "rtc_backlog_max", "100", dflt_backlog },
	{ NULL, "rtc_slices", "8", dflt_slices },
	{ NULL, "vnc", "\"127.0.0.1:3\"", dflt_vnc },
	{ NULL, "display", "\"800x600\"", dflt_display },
	{ NULL, "vnc_password", "\"pw\"", dflt_password },
	{ NULL, "vnc_web", "true", dflt_web },
	{ "disks", "readonly", "true", dflt_readonly },
	{ "disks", "serial", "\"S1\"", dflt_serial },
	{ "disks", "format", "\"raw\"", dflt_format },
	{ "disks", "backing", "true", dflt_backing },
	{ "disks", "overlay", "true", dflt_overlay },
	{ "vsock", "cid", NULL, dflt_cid },
	{ "vsock", "socket", NULL, dflt_socket },
	{ "cloud_init", "user_data", NULL, dflt_user_data },
	{ "cloud_init", "ssh_keys", NULL, dflt_ssh_keys },
	{ "cloud_init", "network_config", NULL, dflt_network_config },
	{ "net", "mac", NULL, dflt_mac },
	{ "net", "forward", "{\"user\":true,\"forward\":"
	    "[\"tcp::2222:22\"]}", dflt_forward },
};

/* Members that cannot go together: the other one is left out. */
static bool
absent_conflict(const char *key, const char *tested)
{
	if (strcmp(tested, "transient") != 0 &&
	    strcmp(key, "autostart") == 0)
		return strcmp(tested, "autostart") != 0;
	if (strcmp(tested, "autostart") == 0 || strcmp(tested, "transient") == 0)
		return false;
	if (strcmp(tested, "vnc") == 0)
		return strcmp(key, "display") == 0 ||
		    strcmp(key, "vnc_password") == 0 ||
		    strcmp(key, "vnc_web") == 0;
	return false;
}

static struct json_object *
absent_value(const char *json)
{
	struct json_object *v = json_tokener_parse(json);

	if (v == NULL)
		tap_bail("test JSON does not parse: %s", json);
	return v;
}

/*
 * The definition with every top-level member set but c's (or, for a
 * member of an object, that object set but for c's key).
 */
static struct json_object *
absent_definition(const struct absent_case *c)
{
	struct json_object *obj = json_object_new_object(), *inner;
	const struct absent_case *t;

	json_object_object_add(obj, "name", json_object_new_string("a"));
	for (t = absent_cases; t->in == NULL; t++) {
		if ((c->in == NULL && strcmp(t->key, c->key) == 0) ||
		    absent_conflict(t->key, c->in == NULL ? c->key : ""))
			continue;
		json_object_object_add(obj, t->key, absent_value(t->value));
	}
	if (c->in == NULL)
		return obj;
	if (strcmp(c->in, "disks") == 0) {
		/* disks[1]: every member but one, after a full disks[0] */
		inner = absent_value(strcmp(c->key, "readonly") == 0 ?
		    "{\"path\":\"/d1\",\"serial\":\"S1\",\"format\":\"raw\","
		    "\"backing\":true,\"overlay\":true}" :
		    "{\"path\":\"/d1\",\"serial\":\"S1\",\"format\":\"raw\","
		    "\"backing\":true,\"readonly\":true}");
		json_object_object_del(inner, c->key);
		json_object_array_add(json_object_object_get(obj, "disks"),
		    inner);
		return obj;
	}
	if (c->value != NULL)
		json_object_object_add(obj, c->in, absent_value(c->value));
	json_object_object_del(json_object_object_get(obj, c->in), c->key);
	return obj;
}

static void
test_absent_defaults(void)
{
	const struct absent_case *c;
	struct json_object *obj;
	struct vm_def *def;
	char err[512];
	int rc;

	for (c = absent_cases; c < absent_cases + sizeof(absent_cases) /
	    sizeof(absent_cases[0]); c++) {
		obj = absent_definition(c);
		def = NULL;
		err[0] = '\0';
		rc = config_parse(obj, CONFIG_OWNER, &def, err, sizeof(err));
		tap_ok(rc == 0 && c->is_default(def), "%s%s%s absent after "
		    "the others set: its default (%s)", c->in ? c->in : "",
		    c->in ? "." : "", c->key, rc == 0 ? "parsed" : err);
		config_def_free(def);
		json_object_put(obj);
	}
}

/* "firmware": "bios" alone, with disks; never with a kernel's members. */
static void
test_firmware(void)
{
	struct json_object *obj, *v;
	struct vm_def *def;

	def = parse_ok("{\"name\":\"f\",\"firmware\":\"bios\","
	    "\"disks\":[{\"path\":\"/d0\"}]}");
	tap_ok(def != NULL && def->firmware == VM_FIRMWARE_BIOS &&
	    config_boot(def) == VM_BOOT_FIRMWARE,
	    "firmware bios: boots firmware, though it has a disk");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "firmware", &v) &&
	    strcmp(json_object_get_string(v), "bios") == 0 &&
	    !json_object_object_get_ex(obj, "boot", NULL),
	    "firmware written back as given");
	json_object_put(obj);
	config_def_free(def);
	def = parse_ok("{\"name\":\"f\",\"firmware\":\"uefi\"}");
	tap_ok(def != NULL && def->firmware == VM_FIRMWARE_UEFI &&
	    config_boot(def) == VM_BOOT_FIRMWARE, "firmware uefi: OVMF");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && json_object_object_get_ex(obj, "firmware", &v) &&
	    strcmp(json_object_get_string(v), "uefi") == 0,
	    "firmware uefi written back as given");
	json_object_put(obj);
	config_def_free(def);
	expect_invalid("{\"name\":\"f\",\"firmware\":\"uefi\","
	    "\"kernel\":\"/boot/k\"}", 0, "firmware: \"uefi\" boots what the "
	    "disks hold: give no kernel");
	def = parse_ok("{\"name\":\"f\"}");
	tap_ok(def != NULL && def->firmware == VM_FIRMWARE_NONE &&
	    config_boot(def) == VM_BOOT_KERNEL, "no firmware by default");
	obj = def != NULL ? config_to_json(def, 0) : NULL;
	tap_ok(obj != NULL && !json_object_object_get_ex(obj, "firmware",
	    NULL), "and none written");
	json_object_put(obj);
	config_def_free(def);

	expect_invalid("{\"name\":\"f\",\"firmware\":\"efi\"}", 0,
	    "firmware: 'efi' must be \"bios\" or \"uefi\"");
	expect_invalid("{\"name\":\"f\",\"firmware\":true}", 0,
	    "firmware: expected a string");
	expect_invalid("{\"name\":\"f\",\"firmware\":\"bios\","
	    "\"kernel\":\"/boot/k\"}", 0, "firmware: \"bios\" boots what the "
	    "disks hold: give no kernel");
	expect_invalid("{\"name\":\"f\",\"firmware\":\"bios\","
	    "\"initrd\":\"/boot/i\"}", 0, "firmware: \"bios\" boots what the "
	    "disks hold: give no initrd");
	expect_invalid("{\"name\":\"f\",\"firmware\":\"bios\","
	    "\"boot\":\"kernel\"}", 0, "firmware: \"bios\" boots what the "
	    "disks hold: give no boot");
	expect_invalid("{\"name\":\"f\",\"firmware\":\"bios\","
	    "\"cmdline\":\"quiet\"}", 0, "firmware: \"bios\" boots what the "
	    "disks hold: give no cmdline");
}

/* SHA-256 against FIPS 180-4's examples, and at the padding's edges. */
static void
test_sha256(void)
{
	static char a1m[1000000];
	char hex[SHA256_HEX_LEN], b55[56], b64[65];

	sha256_hex("", 0, hex);
	tap_ok(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
	    "95991b7852b855") == 0,
	    "sha256 of nothing");
	sha256_hex("abc", 3, hex);
	tap_ok(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb4"
	    "10ff61f20015ad") == 0,
	    "sha256 of abc");
	sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    56, hex);
	tap_ok(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6"
	    "ecedd419db06c1") == 0,
	    "sha256 of two blocks' worth");
	memset(a1m, 'a', sizeof(a1m));
	sha256_hex(a1m, sizeof(a1m), hex);
	tap_ok(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e04"
	    "6d39ccc7112cd0") == 0,
	    "sha256 of a million a's");
	memset(b55, 'a', sizeof(b55));
	sha256_hex(b55, 55, hex);
	tap_ok(strcmp(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c"
	    "9f1e910f734318") == 0,
	    "sha256 of 55 bytes (one block)");
	memset(b64, 'a', sizeof(b64));
	sha256_hex(b64, 64, hex);
	tap_ok(strcmp(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba599"
	    "7337df154668eb") == 0,
	    "sha256 of 64 bytes");
}

/*
 * cloud-init's user-data is shown to clients as its size and hash,
 * never its text; the stored definition keeps it.
 */
static void
test_user_data(void)
{
	struct json_object *obj, *ci, *v;
	struct vm_def *def;
	char err[256];

	TAP_EQ(parse_text("{\"name\":\"u\",\"cloud_init\":{\"user_data\":"
	    "\"abc\"}}", 0, &def, err, sizeof(err)), 0, "user_data: accepted");
	obj = config_to_json(def, 0);
	ci = json_object_object_get(obj, "cloud_init");
	tap_ok(ci != NULL && !json_object_object_get_ex(ci, "user_data",
	    NULL), "shown to clients: no user_data text");
	tap_ok(json_object_object_get_ex(ci, "user_data_size", &v) &&
	    json_object_get_int64(v) == 3, "but its size, 3");
	tap_ok(json_object_object_get_ex(ci, "user_data_sha256", &v) &&
	    strcmp(json_object_get_string(v), "ba7816bf8f01cfea414140de5dae"
	    "2223b00361a396177a9cb410ff61f20015ad") == 0,
	    "and its SHA-256");
	tap_ok(strstr(json_object_to_json_string(obj), "abc") == NULL,
	    "the text nowhere in what clients see");
	json_object_put(obj);
	obj = config_to_json(def, CONFIG_JSON_SECRETS);
	ci = json_object_object_get(obj, "cloud_init");
	tap_ok(json_object_object_get_ex(ci, "user_data", &v) &&
	    strcmp(json_object_get_string(v), "abc") == 0 &&
	    !json_object_object_get_ex(ci, "user_data_size", NULL),
	    "the stored definition keeps the text, as it was given");
	json_object_put(obj);
	config_def_free(def);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL)
		tap_bail("mkdtemp");
	snprintf(kernel_path, sizeof(kernel_path), "%s/pvh.elf", tmpdir);
	make_pvh_kernel(kernel_path);

	test_defaults();
	test_name();
	test_numbers();
	test_misc_fields();
	test_files();
	test_display();
	test_uuid();
	test_lost_ticks();
	test_rng();
	test_balloon();
	test_disks();
	test_net();
	test_user_net_vsock();
	test_roundtrip();
	test_reload();
	test_owner();
	test_absent_defaults();
	test_firmware();
	test_sha256();
	test_user_data();

	cleanup(tmpdir);
	return tap_done();
}
