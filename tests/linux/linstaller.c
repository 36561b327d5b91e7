/* See linstaller.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "linstaller.h"
#include "tap.h"

#define LI_BIOS		"/usr/share/seabios/bios-256k.bin"
#define LI_MIB		768
/* GRUB's marker, then the kernel's, then the help line the installer's
 * newt frontend draws under every screen, whatever the screen is (a
 * language, or "low memory mode" when memory is short). */
#define LI_GRUB		"VMMD-MEDIA-INSTALLER-OK"
#define LI_KERNEL	"Run /init as init process"
#define LI_SCREEN	"<Tab> moves; <Space> selects; <Enter> activates"

void
li_installer(struct h_daemon *d, struct h_conn *c)
{
	const char *iso = getenv("VMMD_INSTALLER_ISO");
	const char *log = h_console_log(d, "installer");
	double t0;
	bool ok;

	if (iso == NULL || iso[0] == '\0' || access(iso, R_OK) < 0 ||
	    access(LI_BIOS, R_OK) < 0) {
		tap_ok(1, "# SKIP installer: no installer ISO (built where "
		    "debian-installer-12-netboot-amd64 and GRUB's tools are) "
		    "or no SeaBIOS");
		return;
	}
	tap_ok(h_create(c, "installer", "\"memory_mib\":%d,\"firmware\":"
	    "\"bios\",\"cdrom\":\"%s\"", LI_MIB, iso) == 0,
	    "installer: created with firmware bios and the ISO as a CD");
	t0 = h_now_ms();
	tap_ok(h_start(c, "installer") == 0, "installer: started");
	ok = h_file_expect(log, LI_GRUB, 1, LI_SCREEN_MS) == 0;
	tap_ok(ok, "installer: SeaBIOS boots GRUB from the CD (%.1f s)",
	    (h_now_ms() - t0) / 1e3);
	ok = ok && h_file_expect(log, LI_KERNEL, 1, LI_SCREEN_MS) == 0;
	tap_ok(ok, "installer: GRUB loaded its kernel and initrd, which "
	    "runs /init (%.1f s)", (h_now_ms() - t0) / 1e3);
	ok = ok && h_file_expect(log, LI_SCREEN, 1, LI_SCREEN_MS) == 0;
	tap_ok(ok, "installer: its first screen on the serial console "
	    "(%.1f s after vm.start)", (h_now_ms() - t0) / 1e3);
	if (!ok)
		h_diag_lines("installer", log);
	h_stop(c, "installer", true, -1, H_REPLY_MS);
	h_delete(c, "installer");
}
