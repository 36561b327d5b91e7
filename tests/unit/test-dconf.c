/*
 * vmmd's configuration file (daemon-conf.c): the defaults, every
 * setting, comments and blanks, and a clear error with the line number
 * for each kind of bad line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemon-conf.h"
#include "tap.h"

static char path[] = "/tmp/vmmd-test-dconf.XXXXXX";

static int
load_text(struct dconf *c, const char *text, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "we");

	if (fp == NULL || fputs(text, fp) < 0 || fclose(fp) != 0)
		tap_bail("cannot write %s", path);
	return dconf_load(c, path, true, err, errlen);
}

static void
expect_error(const char *text, const char *want)
{
	struct dconf c;
	char err[512] = "", full[600];

	dconf_init(&c);
	snprintf(full, sizeof(full), "%s:%s", path, want);
	tap_ok(load_text(&c, text, err, sizeof(err)) < 0 &&
	    strcmp(err, full) == 0, "error: %s (%s)", want, err);
	dconf_fini(&c);
}

/* tap_allow: which group may use which TAPs. */
static void
test_tap_allow(void)
{
	const struct dconf_tap_rule *r;
	struct dconf c;
	char err[512] = "";

	dconf_init(&c);
	tap_ok(c.ntap_rules == 0, "no tap_allow rule by default");
	tap_ok(load_text(&c, "tap_allow = root:vmtap*\n"
	    "tap_allow = 4242 : lab0\ntap_allow = 4243:*\n", err,
	    sizeof(err)) == 0 && c.ntap_rules == 3,
	    "three rules: a group by name, by number, blanks around ':' "
	    "(%s)", err);
	r = c.tap_rules;
	tap_ok(c.ntap_rules == 3 && r[0].gid == 0 && r[0].prefix &&
	    strcmp(r[0].name, "vmtap") == 0 &&
	    strcmp(r[0].text, "vmtap*") == 0 && r[1].gid == 4242 &&
	    !r[1].prefix && strcmp(r[1].name, "lab0") == 0 &&
	    r[2].gid == 4243 && r[2].prefix && r[2].name[0] == '\0',
	    "read as written, in order");
	if (c.ntap_rules == 3) {
		tap_ok(dconf_tap_matches(&r[0], "vmtap") &&
		    dconf_tap_matches(&r[0], "vmtap-web") &&
		    !dconf_tap_matches(&r[0], "vmta") &&
		    !dconf_tap_matches(&r[0], "xvmtap0"),
		    "vmtap*: names that begin with vmtap, no other");
		tap_ok(dconf_tap_matches(&r[1], "lab0") &&
		    !dconf_tap_matches(&r[1], "lab00") &&
		    !dconf_tap_matches(&r[1], "lab"),
		    "lab0: that name only");
		tap_ok(dconf_tap_matches(&r[2], "anything"), "*: every name");
	}
	dconf_fini(&c);

	expect_error("tap_allow = vmtap*\n", "1: 'vmtap*' is not GROUP:NAME "
	    "(NAME a TAP's name, or a prefix ending in '*')");
	expect_error("tap_allow = a:b:c\n", "1: 'a:b:c' is not GROUP:NAME "
	    "(NAME a TAP's name, or a prefix ending in '*')");
	expect_error("tap_allow = :tap0\n", "1: ':tap0': no group before "
	    "':'");
	expect_error("tap_allow = root:\n", "1: '' is not a TAP's name or a "
	    "prefix (1 to 15 bytes without '/', ':', '%' or blanks, with '*' "
	    "at the end for a prefix)");
	expect_error("tap_allow = root:vm*tap\n", "1: 'vm*tap' is not a "
	    "TAP's name or a prefix (1 to 15 bytes without '/', ':', '%' or "
	    "blanks, with '*' at the end for a prefix)");
	expect_error("tap_allow = root:tap%d\n", "1: 'tap%d' is not a "
	    "TAP's name or a prefix (1 to 15 bytes without '/', ':', '%' or "
	    "blanks, with '*' at the end for a prefix)");
	expect_error("tap_allow = root:a b\n", "1: 'a b' is not a TAP's "
	    "name or a prefix (1 to 15 bytes without '/', ':', '%' or "
	    "blanks, with '*' at the end for a prefix)");
	expect_error("tap_allow = root:sixteen-bytes-xx\n", "1: "
	    "'sixteen-bytes-xx' is not a TAP's name or a prefix (1 to 15 "
	    "bytes without '/', ':', '%' or blanks, with '*' at the end for "
	    "a prefix)");
	expect_error("tap_allow = no-such-group-vmmd:tap0\n", "1: unknown "
	    "group 'no-such-group-vmmd'");
	expect_error("tap_allow = 12x:tap0\n", "1: '12x' is not a group "
	    "number");
}

/* boot_timeout and boot_disk_timeout: 30 s and 120 s, 1 to 3600 s. */
static void
test_boot_timeouts(void)
{
	struct dconf c;
	char err[512] = "";

	dconf_init(&c);
	tap_ok(c.boot_timeout == 30 && c.boot_disk_timeout == 120,
	    "boot timeouts by default: 30 s, 120 s from a disk (%u, %u)",
	    c.boot_timeout, c.boot_disk_timeout);
	tap_ok(load_text(&c, "boot_timeout = 1\nboot_disk_timeout = 3600\n",
	    err, sizeof(err)) == 0 && c.boot_timeout == 1 &&
	    c.boot_disk_timeout == 3600, "boot_timeout 1, boot_disk_timeout "
	    "3600: the bounds (%s)", err);
	tap_ok(dconf_set(&c, "boot_disk_timeout", "45", err, sizeof(err)) ==
	    0 && c.boot_disk_timeout == 45 && c.boot_timeout == 1,
	    "each is set alone");
	dconf_fini(&c);

	expect_error("boot_timeout = 0\n", "1: '0' is not a number of "
	    "seconds from 1 to 3600");
	expect_error("boot_timeout = 3601\n", "1: '3601' is not a number of "
	    "seconds from 1 to 3600");
	expect_error("boot_disk_timeout = 0\n", "1: '0' is not a number of "
	    "seconds from 1 to 3600");
	expect_error("boot_disk_timeout = 2m\n", "1: '2m' is not a number of "
	    "seconds from 1 to 3600");
	expect_error("boot_timeout = -5\n", "1: '-5' is not a number of "
	    "seconds from 1 to 3600");
}

int
main(void)
{
	struct dconf c;
	char err[512] = "";
	int fd;

	if ((fd = mkstemp(path)) < 0)
		tap_bail("mkstemp");
	close(fd);

	tap_ok(dconf_init(&c) == 0 && strcmp(c.socket,
	    VMMD_DEFAULT_SOCKET) == 0 && strcmp(c.statedir,
	    VMMD_DEFAULT_STATEDIR) == 0 && c.shutdown_timeout == 10 &&
	    c.console_log_max == 4 << 20 && c.worker_uid_first == 90000 &&
	    c.worker_uid_last == 99999,
	    "defaults: %s, %s, 10 s, 4 MiB of console log, uids 90000-99999",
	    VMMD_DEFAULT_SOCKET, VMMD_DEFAULT_STATEDIR);
	tap_ok(load_text(&c, "# vmmd\n\n  socket = /run/x/control.sock\n"
	    "state_dir=/srv/vm state\n\tdefault_kernel = /boot/k  \n"
	    "shutdown_timeout = 120\nconsole_log_max = 64K\n"
	    "worker_uids = 70000-70009\n", err,
	    sizeof(err)) == 0,
	    "every setting, comments, blanks (%s)", err);
	tap_ok(strcmp(c.socket, "/run/x/control.sock") == 0 &&
	    strcmp(c.statedir, "/srv/vm state") == 0 &&
	    strcmp(c.kernel, "/boot/k") == 0 && c.shutdown_timeout == 120 &&
	    c.console_log_max == 65536 && c.worker_uid_first == 70000 &&
	    c.worker_uid_last == 70009,
	    "read as written, blanks around the value trimmed");
	tap_ok(dconf_set(&c, "shutdown_timeout", "0", err, sizeof(err)) == 0 &&
	    c.shutdown_timeout == 0, "an option overrides the file");
	tap_ok(dconf_set(&c, "console_log_max", "0", err, sizeof(err)) == 0 &&
	    c.console_log_max == 0 && dconf_set(&c, "console_log_max", "2G",
	    err, sizeof(err)) == 0 && c.console_log_max == 2ULL << 30,
	    "console_log_max: 0 (never rotated), 2G");
	tap_ok(dconf_set(&c, "worker_uids", "1000000-1000000", err,
	    sizeof(err)) == 0 && c.worker_uid_first == 1000000 &&
	    c.worker_uid_last == 1000000, "worker_uids: a range of one (%s)",
	    err);
	dconf_fini(&c);

	test_boot_timeouts();

	dconf_init(&c);
	tap_ok(strcmp(c.virtiofsd, DCONF_VIRTIOFSD) == 0, "virtiofsd: "
	    "Debian's by default");
	tap_ok(load_text(&c, "virtiofsd = /usr/libexec/virtiofsd\n", err,
	    sizeof(err)) == 0 && strcmp(c.virtiofsd,
	    "/usr/libexec/virtiofsd") == 0, "virtiofsd: as written (%s)", err);
	dconf_fini(&c);
	expect_error("virtiofsd = virtiofsd\n", "1: 'virtiofsd' is not an "
	    "absolute path");
	dconf_init(&c);
	tap_ok(strcmp(c.bios, DCONF_BIOS) == 0, "bios: Debian's SeaBIOS "
	    "by default");
	tap_ok(load_text(&c, "bios = /srv/fw/bios.bin\n", err,
	    sizeof(err)) == 0 && strcmp(c.bios, "/srv/fw/bios.bin") == 0,
	    "bios: as written (%s)", err);
	dconf_fini(&c);
	expect_error("bios = fw.bin\n", "1: 'fw.bin' is not an absolute "
	    "path");
	dconf_init(&c);
	tap_ok(strcmp(c.vgabios, DCONF_VGABIOS) == 0, "vgabios: Debian's "
	    "bochs-display VGA BIOS by default");
	tap_ok(load_text(&c, "vgabios = /srv/fw/vga.bin\n", err,
	    sizeof(err)) == 0 && strcmp(c.vgabios, "/srv/fw/vga.bin") == 0,
	    "vgabios: as written (%s)", err);
	dconf_fini(&c);

	dconf_init(&c);
	tap_ok(strcmp(c.ovmf_code, DCONF_OVMF_CODE) == 0 &&
	    strcmp(c.ovmf_vars, DCONF_OVMF_VARS) == 0,
	    "ovmf_code, ovmf_vars: Debian's OVMF_CODE_4M.fd and "
	    "OVMF_VARS_4M.fd by default");
	tap_ok(load_text(&c, "ovmf_code = /srv/fw/code.fd\n"
	    "ovmf_vars = /srv/fw/vars.fd\n", err, sizeof(err)) == 0 &&
	    strcmp(c.ovmf_code, "/srv/fw/code.fd") == 0 &&
	    strcmp(c.ovmf_vars, "/srv/fw/vars.fd") == 0,
	    "ovmf_code, ovmf_vars: as written (%s)", err);
	dconf_fini(&c);
	expect_error("ovmf_vars = vars.fd\n", "1: 'vars.fd' is not an "
	    "absolute path");

	dconf_init(&c);
	tap_ok(dconf_load(&c, "/nonexistent/vmmd.conf", false, err,
	    sizeof(err)) == 0, "no file where none was named: defaults");
	tap_ok(dconf_load(&c, "/nonexistent/vmmd.conf", true, err,
	    sizeof(err)) < 0 && strcmp(err, "/nonexistent/vmmd.conf: No such "
	    "file or directory") == 0, "a file named but missing: %s", err);
	dconf_fini(&c);

	expect_error("socket = /a\nsokcet = /b\n", "2: unknown setting "
	    "'sokcet' (socket, state_dir, default_kernel, shutdown_timeout, "
	    "boot_timeout, boot_disk_timeout, console_log_max, tap_allow, "
	    "worker_uids, metrics_listen, passt, virtiofsd, bios, vgabios, "
	    "ovmf_code, "
	    "ovmf_vars)");
	expect_error("metrics_listen = 9475\n", "1: '9475' is not HOST:PORT "
	    "(127.0.0.1:9475, [::1]:9475)");
	expect_error("metrics_listen = 127.0.0.1:0\n", "1: '127.0.0.1:0' is "
	    "not HOST:PORT (127.0.0.1:9475, [::1]:9475)");
	expect_error("console_log_max = 4 MiB\n", "1: '4 MiB' is not a size "
	    "(bytes, or with K, M or G)");
	expect_error("console_log_max = 4T\n", "1: '4T' is not a size "
	    "(bytes, or with K, M or G)");
	expect_error("worker_uids = 90000\n", "1: '90000' is not a range of "
	    "uids FIRST-LAST, from 1 to 2147483646");
	expect_error("worker_uids = 0-10\n", "1: '0-10' is not a range of "
	    "uids FIRST-LAST, from 1 to 2147483646");
	expect_error("worker_uids = 20-10\n", "1: '20-10' is not a range of "
	    "uids FIRST-LAST, from 1 to 2147483646");
	expect_error("worker_uids = 100- 200\n", "1: '100- 200' is not a "
	    "range of uids FIRST-LAST, from 1 to 2147483646");
	expect_error("worker_uids = 1-4294967295\n", "1: '1-4294967295' is "
	    "not a range of uids FIRST-LAST, from 1 to 2147483646");
	expect_error("worker_uids = 60000-70000\n", "1: '60000-70000' holds "
	    "uid 65534 or 65535 (nobody, and the 16-bit -1)");
	expect_error("socket\n", "1: expected 'key = value'");
	expect_error("socket =\n", "1: 'socket' has no value");
	expect_error("state_dir = var/lib\n", "1: 'var/lib' is not an "
	    "absolute path");
	expect_error("shutdown_timeout = 5s\n", "1: '5s' is not a number of "
	    "seconds from 0 to 3600");
	expect_error("shutdown_timeout = 3601\n", "1: '3601' is not a "
	    "number of seconds from 0 to 3600");
	expect_error("shutdown_timeout = -1\n", "1: '-1' is not a number of "
	    "seconds from 0 to 3600");

	test_tap_allow();
	unlink(path);
	return tap_done();
}
