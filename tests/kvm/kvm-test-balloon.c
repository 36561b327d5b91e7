/*
 * The balloon with a test guest that drives it (tests/guests/
 * vballoon.c): pages it inflates and a range it reports free leave the
 * worker's resident memory, a page number outside RAM is counted and
 * refused while the worker lives on, vm.info shows the counters and
 * the guest's statistics (asking it for new ones each time), vm.balloon
 * reaches the guest's num_pages, and bad targets are refused: over the
 * protocol (not a number, larger than RAM, a VM without a balloon or
 * not running) and by vmctl balloon (a SIZE that is not one).  Then a
 * snapshot and restore while the device holds the guest's statistics
 * buffer: the target and the buffer come back with it.  Last, the same
 * with guest RAM shared (a memfd, for a shared directory): what the
 * guest gives up leaves the memfd itself.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define VM		"vbal"
#define MIB		8		/* the guest's mib= */
#define PAGE		4096
#define VMCTL_MS	30000
#define VIRTIOFSD	"/usr/lib/qemu/virtiofsd"

/* stats.devices.virtio-balloon from vm.info (caller puts r). */
static struct json_object *
balloon_stats(struct h_conn *c, struct json_object **r)
{
	struct json_object *st, *o;

	*r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", VM);
	if (!json_object_object_get_ex(h_ret(*r), "stats", &st) ||
	    !json_object_object_get_ex(st, "devices", &o) ||
	    !json_object_object_get_ex(o, "virtio-balloon", &o))
		return NULL;
	return o;
}

/* The worker's VmRSS in KiB, or -1. */
static long
rss_kib(pid_t pid)
{
	char buf[64];

	if (h_proc_status(pid, "VmRSS", buf, sizeof(buf)) == NULL)
		return -1;
	return strtol(buf, NULL, 10);
}

static void
test_bad_input(struct h_conn *c)
{
	h_expect_errorf(c, "vm.balloon", "invalid_argument",
	    "target_mib not a number", "{\"name\":\"%s\",\"target_mib\":"
	    "\"lots\"}", VM);
	h_expect_errorf(c, "vm.balloon", "invalid_argument",
	    "target_mib missing", "{\"name\":\"%s\"}", VM);
	h_expect_errorf(c, "vm.balloon", "invalid_argument",
	    "target_mib 0", "{\"name\":\"%s\",\"target_mib\":0}", VM);
	h_expect_errorf(c, "vm.balloon", "invalid_argument",
	    "target_mib larger than the guest's RAM",
	    "{\"name\":\"%s\",\"target_mib\":65}", VM);
	h_expect_errorf(c, "vm.balloon", "invalid_argument",
	    "stats_interval out of range", "{\"name\":\"%s\",\"target_mib\":"
	    "32,\"stats_interval\":-1}", VM);
	h_expect_errorf(c, "vm.balloon", "invalid_argument",
	    "an unknown argument", "{\"name\":\"%s\",\"target_mib\":32,"
	    "\"size\":1}", VM);
	h_expect_error(c, "vm.balloon", "{\"name\":\"noballoon\","
	    "\"target_mib\":16}", "invalid_argument", "a VM without a balloon");
}

/*
 * A snapshot while the device holds the guest's statistics buffer, and
 * the restore: the target is the saved one, and the buffer goes back
 * to the guest at the first request (Linux would send it no more).
 */
static void
test_snapshot(struct h_daemon *d, struct h_conn *c, struct h_console *con)
{
	const char *dir = h_in_dir(d, "snap");
	struct json_object *r, *b;

	r = h_callf(c, H_REPLY_MS, "vm.balloon", "{\"name\":\"%s\","
	    "\"target_mib\":40}", VM);
	json_object_put(r);
	/* The guest sends its buffer again if it came back: held now. */
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: num_pages 6144", H_REPLY_MS) == 0,
	    "snapshot: the guest reads the target: 6144 pages");
	h_console_close(con);
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"%s\","
	    "\"dir\":\"%s\"}", VM, dir);
	tap_ok(h_ret(r) != NULL, "snapshot: written (%s)", h_text(r));
	json_object_put(r);
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"%s\","
	    "\"dir\":\"%s\"}", VM, dir);
	tap_ok(h_ret(r) != NULL, "snapshot: restored (%s)", h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, VM)) == NULL)
		tap_bail("no console after the restore");
	con->mark = con->len;
	b = balloon_stats(c, &r);
	tap_ok(b != NULL && h_int(b, "target_pages", -1) == 6144,
	    "snapshot: the target restored (%lld)",
	    (long long)h_int(b, "target_pages", -1));
	tap_ok(b != NULL && h_int(b, "stats_requests", -1) == 1,
	    "snapshot: the held buffer given back at the first request "
	    "(%lld)", (long long)h_int(b, "stats_requests", -1));
	json_object_put(r);
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: stats sent again", H_REPLY_MS) == 0 &&
	    h_expect(con, "vballoon: num_pages 6144", H_REPLY_MS) == 0,
	    "snapshot: the restored guest sends its statistics again");

	/* A reset builds the balloon with the restored target. */
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"%s\"}", VM);
	tap_ok(h_ret(r) != NULL, "snapshot: reset (%s)", h_text(r));
	json_object_put(r);
	tap_ok(h_expect(con, "vballoon: touched", H_BOOT_MS) == 0,
	    "snapshot: the guest boots again");
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: inflated", H_REPLY_MS) == 0,
	    "snapshot: and inflates again");
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: num_pages 6144", H_REPLY_MS) == 0,
	    "snapshot: the target survives the reset after the restore");
	h_console_close(con);
}

/*
 * Bytes the worker's guest RAM memfd ("vmmd-guest-ram", a VM with a
 * shared directory) holds: its allocated blocks, whoever maps them.
 * -1 if the worker has none.
 */
static long long
shared_ram_bytes(pid_t pid)
{
	char dir[64], path[320], target[256];
	struct dirent *e;
	struct stat sb;
	long long bytes = -1;
	ssize_t n;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	if ((fds = opendir(dir)) == NULL)
		return -1;
	while (bytes < 0 && (e = readdir(fds)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "/memfd:vmmd-guest-ram", 21) == 0 &&
		    stat(path, &sb) == 0)
			bytes = (long long)sb.st_blocks * 512;
	}
	closedir(fds);
	return bytes;
}

/*
 * The same guest with a shared directory, so that its RAM is a memfd
 * virtiofsd maps too: pages the guest gives up must leave the memfd
 * (MADV_REMOVE), not only the worker's mapping of it, where they would
 * still cost the host.  Skipped without virtiofsd.
 */
static void
test_shared(struct h_daemon *d, struct h_conn *c)
{
	struct h_console *con;
	long long before, after;
	char dir[400];
	pid_t pid;

	if (access(VIRTIOFSD, X_OK) < 0) {
		tap_ok(1, "# SKIP shared RAM: no %s (Debian's "
		    "qemu-system-common)", VIRTIOFSD);
		return;
	}
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "balshare"));
	mkdir(dir, 0755);
	tap_ok(h_create(c, "vbalfs", "\"kernel\":\"%s\",\"memory_mib\":64,"
	    "\"cmdline\":\"mib=%d\",\"balloon\":true,\"fs\":{\"tag\":\"t\","
	    "\"dir\":\"%s\"}", h_env("VMMD_GUEST_VBALLOON"), MIB, dir) == 0 &&
	    h_start(c, "vbalfs") == 0, "shared RAM: a VM with a balloon and "
	    "a shared directory starts");
	if ((con = h_console_open(d, "vbalfs")) == NULL) {
		tap_ok(0, "shared RAM: console open");
		return;
	}
	tap_ok(h_expect(con, "vballoon: touched 8 MiB twice, waiting",
	    H_BOOT_MS) == 0, "shared RAM: the guest touched 16 MiB");
	pid = h_vm_pid(c, "vbalfs");
	before = shared_ram_bytes(pid);
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: inflated 2048 pages, reported 8 MiB",
	    H_REPLY_MS) == 0, "shared RAM: inflated and reported");
	after = shared_ram_bytes(pid);
	tap_diag("worker %ld: its RAM memfd holds %lld KiB before, %lld KiB "
	    "after", (long)pid, before / 1024, after / 1024);
	tap_ok(before > 0 && after >= 0 && before - after >= 12LL << 20,
	    "shared RAM: the memfd gave back at least 12 MiB (%lld KiB)",
	    (before - after) / 1024);
	h_console_close(con);
	tap_ok(h_stop(c, "vbalfs", true, -1, H_REPLY_MS) == 0,
	    "shared RAM: stopped");
}

int
main(void)
{
	struct json_object *r, *b;
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	long before, after;
	double until;
	pid_t pid;
	int rc;

	h_init();
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);
	tap_ok(h_create(c, VM, "\"kernel\":\"%s\",\"memory_mib\":64,"
	    "\"cmdline\":\"mib=%d\",\"balloon\":true",
	    h_env("VMMD_GUEST_VBALLOON"), MIB) == 0, "created with a balloon");
	tap_ok(h_create(c, "noballoon", "\"kernel\":\"%s\",\"memory_mib\":32",
	    h_env("VMMD_GUEST_HELLO")) == 0, "and one without");
	h_expect_errorf(c, "vm.balloon", "bad_state", "a VM not running",
	    "{\"name\":\"%s\",\"target_mib\":32}", VM);
	tap_ok(h_start(c, VM) == 0, "started");
	tap_ok((con = h_console_open(d, VM)) != NULL, "console open");
	if (con == NULL)
		tap_bail("no console");
	tap_ok(h_expect(con, "vballoon: touched 8 MiB twice, waiting",
	    H_BOOT_MS) == 0, "the guest touched 16 MiB");
	pid = h_vm_pid(c, VM);
	before = rss_kib(pid);
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: inflated 2048 pages, reported 8 MiB",
	    H_REPLY_MS) == 0, "inflated and reported");
	after = rss_kib(pid);
	tap_diag("worker %ld: VmRSS %ld KiB before, %ld KiB after (%ld KiB "
	    "given back)", (long)pid, before, after, before - after);
	tap_ok(before > 0 && after > 0 && before - after >= 12 * 1024,
	    "the worker's resident memory went down by at least 12 MiB "
	    "(%ld KiB)", before - after);

	b = balloon_stats(c, &r);
	tap_ok(b != NULL, "vm.info shows the balloon");
	tap_ok(h_int(b, "inflated_pages", -1) == 2048,
	    "2048 pages inflated (%lld)",
	    (long long)h_int(b, "inflated_pages", -1));
	tap_ok(h_int(b, "bad_pfns", -1) == 1,
	    "the page number outside RAM refused (%lld)",
	    (long long)h_int(b, "bad_pfns", -1));
	tap_ok(h_int(b, "reported_bytes", -1) == MIB << 20,
	    "8 MiB reported (%lld)",
	    (long long)h_int(b, "reported_bytes", -1));
	tap_ok(h_int(b, "actual_pages", -1) == 2048,
	    "the guest's actual (%lld)",
	    (long long)h_int(b, "actual_pages", -1));
	tap_ok(h_int(b, "free_memory", -1) == 12345LL * PAGE &&
	    h_int(b, "available_memory", -1) == 23456LL * PAGE &&
	    h_int(b, "total_memory", -1) == 64LL << 20,
	    "the statistics sent before DRIVER_OK (free %lld)",
	    (long long)h_int(b, "free_memory", -1));
	json_object_put(r);

	r = h_callf(c, H_REPLY_MS, "vm.balloon", "{\"name\":\"%s\","
	    "\"target_mib\":48}", VM);
	tap_ok(h_ret(r) != NULL, "vm.balloon to 48 MiB: %s", h_text(r));
	json_object_put(r);
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: stats sent again", H_REPLY_MS) == 0,
	    "vm.info asked the guest for new statistics");
	tap_ok(h_expect(con, "vballoon: num_pages 4096", H_REPLY_MS) == 0,
	    "the guest reads the target: 16 MiB out, 4096 pages");
	/* The kick that brings them is the loop's to take: wait for it. */
	until = h_now_ms() + H_REPLY_MS;
	do {
		b = balloon_stats(c, &r);
		rc = b != NULL && h_int(b, "free_memory", -1) ==
		    54321LL * PAGE;
		json_object_put(r);
		if (!rc)
			h_sleep_ms(50);
	} while (!rc && h_now_ms() < until);
	tap_ok(rc, "vm.info shows the new statistics");

	test_bad_input(c);
	rc = h_ctl("balloon", VM, "lots", NULL);
	tap_ok(rc == 2 && strstr(h_err(), "not a size") != NULL,
	    "vmctl balloon: a SIZE that is not one (%d: %s)", rc,
	    h_flat(h_err()));
	rc = h_ctl("balloon", VM, "65M", NULL);
	tap_ok(rc != 0 && strstr(h_err(), "more than") != NULL,
	    "vmctl balloon: larger than RAM (%d: %s)", rc, h_flat(h_err()));
	rc = h_ctl("balloon", VM, "1G", NULL);
	tap_ok(rc != 0 && strstr(h_err(), "more than") != NULL,
	    "vmctl balloon: 1G of a 64 MiB guest (%d: %s)", rc,
	    h_flat(h_err()));
	rc = h_ctl("balloon", VM, "64M", "--stats-interval", "0", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "keep 64M") != NULL,
	    "vmctl balloon: all of it back (%d: %s)", rc, h_flat(h_out()));
	h_console_write(con, "g", 1);
	tap_ok(h_expect(con, "vballoon: num_pages 0", H_REPLY_MS) == 0,
	    "the guest reads the target: nothing out");
	tap_ok(strcmp(h_state(c, VM, (char[32]){ 0 }, 32) ?: "",
	    "running") == 0, "the worker lives on");

	test_snapshot(d, c, con);
	tap_ok(h_stop(c, VM, true, -1, H_REPLY_MS) == 0, "stopped");
	test_shared(d, c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
