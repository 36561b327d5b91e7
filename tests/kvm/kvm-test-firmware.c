/*
 * Firmware from power-on: a VM with "firmware": "bios" and no disk runs
 * Debian's SeaBIOS, which finds fw_cfg (the host bridge's subsystem,
 * the signature, DMA), prints its banner on the serial console (fw_cfg's
 * etc/sercon-port) and the VM's UUID it reads from SMBIOS (in the byte
 * order SMBIOS 2.6 gives it: as vm.info shows it), and then says it has
 * nothing to boot, and again
 * after a reset.  Definitions that mix firmware with a kernel are
 * refused, as is vmctl's --firmware with anything but bios or uefi.  Port 0x92
 * and the reset control register at 0xcf9 are there, and SeaBIOS's
 * A20 read-modify-writes reset nothing.  SeaBIOS finds the PIIX4 PM
 * function at 00:01.3 and places the ACPI PM block at 0x600 (its choice
 * when a table loader is there).  SeaBIOS
 * takes its ACPI tables from fw_cfg's table loader (and so builds none
 * of its own): the loader is read, then the two files its commands
 * allocate, and the tables are built once, at the first of those
 * selects.
 *
 * Real-mode code is emulated on our machines' /dev/kvm (about 0.6 us an
 * instruction; SeaBIOS's POST is some 6 M of them): the waits are long.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define BANNER		"SeaBIOS (version"
#define NOTHING		"No bootable device"
/*
 * SeaBIOS and the VGA BIOS to their last word: a second or two where
 * /dev/kvm opens; in the nested test host, where real-mode code runs
 * emulated twice over, over 120 s was seen on a busy machine.  Only a
 * hang should reach the limit.
 */
#define POST_MS		300000	/* banner, then the verdict */

static void
test_refused(struct h_conn *c)
{
	h_expect_errorf(c, "vm.create", "invalid_argument",
	    "firmware with a kernel", "{\"name\":\"fk\",\"firmware\":\"bios\","
	    "\"kernel\":\"%s\"}", h_env("VMMD_GUEST_HELLO"));
	h_expect_error(c, "vm.create", "{\"name\":\"fb\",\"firmware\":"
	    "\"bios\",\"boot\":\"disk\"}", "invalid_argument",
	    "firmware with boot");
	h_expect_error(c, "vm.create", "{\"name\":\"fc\",\"firmware\":"
	    "\"bios\",\"cmdline\":\"quiet\"}", "invalid_argument",
	    "firmware with a command line");
	h_expect_error(c, "vm.create", "{\"name\":\"fu\",\"firmware\":"
	    "\"coreboot\"}", "invalid_argument",
	    "firmware other than bios and uefi");
}

/*
 * SeaBIOS selects etc/acpi/tables and etc/acpi/rsdp only because the
 * commands of etc/table-loader allocate them: three selects of the
 * files fw_cfg prepares, and one build of them.
 */
static void
test_loader_read(struct json_object *fw, const char *who)
{
	tap_ok(fw != NULL && h_int(fw, "prepared_selects", 0) >= 3 &&
	    h_int(fw, "prepare_calls", 0) == 1 &&
	    h_int(fw, "prepare_errors", -1) == 0,
	    "%s ran the table loader, ACPI built once (%s)", who,
	    fw != NULL ? h_text(fw) : "no fw-cfg device");
}

static void
test_post(struct h_daemon *d, struct h_conn *c)
{
	struct json_object *reply = NULL, *fw;
	const char *log = h_console_log(d, "bios");
	char uuid[64];
	double t0;

	tap_ok(h_create(c, "bios", "\"firmware\":\"bios\"") == 0,
	    "created with firmware bios");
	t0 = h_now_ms();
	tap_ok(h_start(c, "bios") == 0, "started");
	tap_ok(h_vm_log_expect(c, "bios", log, BANNER, 1, POST_MS) == 0,
	    "SeaBIOS's banner on the serial console");
	tap_diag("banner after %.0f ms", h_now_ms() - t0);
	/*
	 * SeaBIOS prints SMBIOS's system UUID, reading it in SMBIOS 2.6's
	 * byte order: the text vm.info shows, if the bytes are right.
	 */
	reply = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"bios\"}");
	snprintf(uuid, sizeof(uuid), "Machine UUID %s",
	    h_str(h_ret(reply), "uuid") ?: "(none in vm.info)");
	json_object_put(reply);
	reply = NULL;
	tap_ok(h_vm_log_expect(c, "bios", log, uuid, 1, POST_MS) == 0,
	    "SeaBIOS shows the VM's UUID from SMBIOS (%s)", uuid);
	tap_ok(h_vm_log_expect(c, "bios", log, NOTHING, 1, POST_MS) == 0,
	    "SeaBIOS finds nothing to boot");
	tap_diag("verdict after %.0f ms", h_now_ms() - t0);
	/* Its serial screen, for whoever reads the log. */
	h_diag_lines("console", log);

	fw = h_info_stats(c, "bios", "devices", "fw-cfg", &reply);
	tap_ok(fw != NULL && h_int(fw, "dma_transfers", 0) > 0 &&
	    h_int(fw, "dma_errors", -1) == 0 &&
	    h_int(fw, "dma_dropped", -1) == 0,
	    "SeaBIOS read fw_cfg by DMA, without an error (%s)",
	    fw != NULL ? h_text(fw) : "no fw-cfg device");
	test_loader_read(fw, "SeaBIOS");
	json_object_put(reply);
	reply = NULL;
	/*
	 * Port 0x92 reads what was written: SeaBIOS's read-modify-writes
	 * of A20, hundreds a boot, never set the fast reset bit.
	 */
	fw = h_info_stats(c, "bios", "devices", "port92", &reply);
	tap_ok(fw != NULL && h_int(fw, "fast_resets", -1) == 0,
	    "port 0x92 there, not one fast reset (%s)",
	    fw != NULL ? h_text(fw) : "no port92 device");
	json_object_put(reply);
	reply = NULL;
	fw = h_info_stats(c, "bios", "devices", "pci-host", &reply);
	tap_ok(fw != NULL && h_str(fw, "reset_control") != NULL &&
	    h_int(fw, "rcr_resets", -1) == 0,
	    "reset control register at 0xcf9, not used (%s)",
	    fw != NULL ? h_text(fw) : "no pci-host device");
	json_object_put(reply);
	reply = NULL;
	/*
	 * SeaBIOS's piix4_pm_setup(): PMBA = base | 1, PMREGMISC = 1; the
	 * base is 0xb000, or 0x600 where fw_cfg has etc/table-loader (as
	 * vmmd's has: QEMU's tables put the PM block there); from then on
	 * its timer reads PMBA + 8, not the TSC.
	 */
	fw = h_info_stats(c, "bios", "devices", "piix4-pm", &reply);
	tap_ok(fw != NULL && h_str(fw, "pmba") != NULL &&
	    strcmp(h_str(fw, "pmba"), "0x601") == 0 &&
	    h_str(fw, "pm_io_base") != NULL &&
	    strcmp(h_str(fw, "pm_io_base"), "0x600") == 0 &&
	    h_int(fw, "pm_io_failures", -1) == 0,
	    "SeaBIOS placed the PM block at 0x600 through 00:01.3 (%s)",
	    fw != NULL ? h_text(fw) : "no piix4-pm device");
	json_object_put(reply);
	reply = NULL;
	/*
	 * Whether it then reads the timer there depends on the host: a
	 * CPUID with the invariant TSC (which the vCPU passes on from
	 * KVM) keeps SeaBIOS on the TSC.  Shown, not checked.
	 */
	tap_diag("acpi-pm: %s", h_text(h_info_stats(c, "bios", "devices",
	    "acpi-pm", &reply)));
	json_object_put(reply);
	reply = NULL;
	tap_diag("unknown I/O: %s", h_text(h_info_stats(c, "bios",
	    "unknown_io", NULL, &reply)));
	json_object_put(reply);

	/* A reset copies the image below 1 MiB again: SeaBIOS restarts. */
	reply = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"bios\"}");
	tap_ok(h_ret(reply) != NULL, "vm.reset (%s)",
	    h_ret(reply) != NULL ? "done" : h_text(reply));
	json_object_put(reply);
	tap_ok(h_vm_log_expect(c, "bios", log, BANNER, 2, POST_MS) == 0 &&
	    h_vm_log_expect(c, "bios", log, NOTHING, 2, POST_MS) == 0,
	    "after the reset SeaBIOS runs again, to the same verdict");
	fw = h_info_stats(c, "bios", "devices", "fw-cfg", &reply);
	test_loader_read(fw, "after the reset, SeaBIOS");
	json_object_put(reply);
	tap_ok(h_stop(c, "bios", true, -1, H_REPLY_MS) == 0, "force stop");
}

/* vmctl's --firmware, and what list and export say of it. */
static void
test_vmctl(struct h_daemon *d)
{
	int rc;

	h_ctl_use(d, H_REPLY_MS);
	rc = h_ctl("create", "fv", "--firmware", "bios", "--memory", "32",
	    NULL);
	tap_ok(rc == 0, "vmctl create --firmware bios (%s)", h_flat(h_err()));
	tap_ok(h_ctl("export", "fv", NULL) == 0 &&
	    strstr(h_out(), "\"firmware\": \"bios\"") != NULL,
	    "export shows firmware bios");
	tap_ok(h_ctl("list", NULL) == 0 && strstr(h_out(), "(firmware)") !=
	    NULL, "list: no kernel, the firmware");
	rc = h_ctl("create", "fx", "--firmware", "coreboot", NULL);
	tap_ok(rc != 0 && strstr(h_err(), "--firmware coreboot: expected "
	    "bios or uefi") != NULL, "--firmware coreboot refused: %s",
	    h_flat(h_err()));
	tap_ok(h_ctl("delete", "fv", NULL) == 0, "deleted");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	h_need_seabios(false);
	c = h_setup(&d);
	test_refused(c);
	test_vmctl(d);
	test_post(d, c);
	h_close(c);
	return h_done();
}
