/*
 * vm.snapshot (vmctl snapshot) of the demo guest, which prints its
 * clock once a second, counted in its memory from the CMOS time it read
 * at boot: a snapshot with keep_running pauses it, writes its RAM and
 * state, and lets it count on; the snapshot's files are there, owned
 * as the directory's user would own them, the manifest names the
 * sections the worker wrote.  A second snapshot into the same directory
 * is refused (one snapshot a directory), and so is a snapshot of a VM
 * that does not run.
 *
 * Then vm.restore of the stopped VM from that snapshot: the guest does
 * not boot again (no banner) and its clock goes on from the snapshot's
 * count, behind the count the guest reached before it was stopped.  A
 * snapshot with one byte of its state file flipped is refused with a
 * checksum error and nothing starts; so is the snapshot restored into
 * a VM with another memory size, saying what differs.  The time a
 * snapshot takes and the time from vm.restore to a running guest are
 * diagnostics.  Then the same through vmctl, whose snapshot without
 * --keep-running stops the VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "state-rounds.h"

#define TICK_PREFIX	"demo: 2"

/*
 * The last (last) or first tick in buf from at on, as seconds of the
 * day plus 86400 times the day of the month; -1 if none.
 */
static long
tick_at(const char *buf, size_t from, bool last)
{
	const char *p = buf + from, *q, *hit = NULL;
	int y, mo, dd, hh, mm, ss;

	while ((q = strstr(p, TICK_PREFIX)) != NULL) {
		/* Not the boot's "demo: clock ..." line: a date right away. */
		if (sscanf(q, "demo: %d-%d-%d %d:%d:%d UTC", &y, &mo, &dd, &hh,
		    &mm, &ss) == 6) {
			hit = q;
			if (!last)
				break;
		}
		p = q + 1;
	}
	if (hit == NULL || sscanf(hit, "demo: %d-%d-%d %d:%d:%d UTC", &y,
	    &mo, &dd, &hh, &mm, &ss) != 6)
		return -1;
	return (long)dd * 86400 + hh * 3600 + mm * 60 + ss;
}

/*
 * A copy of snapshot from in to, one byte of its state file flipped.
 * In C: the nested test host's busybox cp and dd lack GNU's options.
 */
static void
copy_damaged(const char *from, const char *to)
{
	static const char *const names[] = { "manifest.json", "memory",
	    "state" };
	char src[1024], path[1024];
	unsigned char b;
	int fd;

	if (mkdir(to, 0700) != 0)
		tap_bail("mkdir %s: %s", to, strerror(errno));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(src, sizeof(src), "%s/%s", from, names[i]);
		snprintf(path, sizeof(path), "%s/%s", to, names[i]);
		h_copy_file(src, path, 0600);
	}
	snprintf(path, sizeof(path), "%s/state", to);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 ||
	    pread(fd, &b, 1, 100) != 1)
		tap_bail("%s: %s", path, strerror(errno));
	b ^= 0xff;
	if (pwrite(fd, &b, 1, 100) != 1)
		tap_bail("%s: %s", path, strerror(errno));
	close(fd);
}

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	char st[64], args[512], *man;
	char *dir;
	struct stat sb;
	long snapped, stopped, first;
	double t0;
	int rc;

	h_init();
	c = h_setup(&d);
	dir = strdup(h_in_dir(d, "snap1"));
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));

	con = state_rounds_demo(d, c, "demo", NULL);

	snprintf(args, sizeof(args), "{\"name\":\"demo\",\"dir\":\"%s\","
	    "\"keep_running\":true}", dir);
	/* The guest's count when it is paused: the last tick printed,
	 * or one more if it ticks before the pause. */
	snapped = tick_at(con->buf, 0, true);
	t0 = h_now_ms();
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "%s", args);
	tap_ok(h_ret(r) != NULL && strcmp(h_str(h_ret(r), "state"),
	    "running") == 0, "snapshot with keep_running: %s", h_text(r));
	tap_diag("snapshot of the demo guest: %.1f ms", h_now_ms() - t0);
	json_object_put(r);
	man = h_read_file(h_in_dir(d, "snap1/manifest.json"), NULL);
	tap_ok(man != NULL && strstr(man, "\"vmmd-snapshot\"") != NULL &&
	    strstr(man, "\"vcpu/0\"") != NULL &&
	    strstr(man, "\"devices\"") != NULL &&
	    strstr(man, "\"clock\"") != NULL,
	    "the manifest names the machine's sections");
	free(man);
	if (stat(h_in_dir(d, "snap1/memory"), &sb) < 0)
		memset(&sb, 0, sizeof(sb));
	tap_ok((uint64_t)sb.st_size == 32ull << 20 &&
	    (uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size,
	    "the memory file (32 MiB of RAM) is sparse: %lld bytes, %lld "
	    "allocated",
	    (long long)sb.st_size, (long long)sb.st_blocks * 512);
	tap_ok(access(h_in_dir(d, "snap1/memory.tmp"), F_OK) < 0 &&
	    access(h_in_dir(d, "snap1/state.tmp"), F_OK) < 0,
	    "no temporary file left");
	con->mark = con->len;
	tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: counts on");
	stopped = tick_at(con->buf, 0, true);
	h_state(c, "demo", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "demo: running (%s)", st);

	h_expect_errorf(c, "vm.snapshot", "invalid_argument",
	    "a second snapshot into the same directory", "{\"name\":"
	    "\"demo\",\"dir\":\"%s\",\"keep_running\":true}", dir);
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");
	snprintf(args, sizeof(args), "%s", h_in_dir(d, "snap2"));
	mkdir(args, 0700);
	h_expect_errorf(c, "vm.snapshot", "bad_state", "a stopped VM",
	    "{\"name\":\"demo\",\"dir\":\"%s\"}", args);
	tap_ok(access(h_in_dir(d, "snap2/memory.tmp"), F_OK) < 0,
	    "nothing written for a stopped VM");

	/* Restored: the count goes on from the snapshot's. */
	t0 = h_now_ms();
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"demo\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "demo: restored: %s", h_text(r));
	tap_diag("vm.restore to a running demo guest: %.1f ms",
	    h_now_ms() - t0);
	json_object_put(r);
	if ((con = h_console_open(d, "demo")) == NULL)
		tap_bail("demo: no console after the restore");
	con->mark = con->len;
	tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "restored demo: ticks");
	first = tick_at(con->buf, 0, false);
	/* A boot would start again from the CMOS clock, ahead of both. */
	tap_ok(first >= 0 && first > snapped && first < stopped,
	    "restored demo: counts on from the snapshot's %ld (first %ld, "
	    "%ld when stopped)", snapped, first, stopped);
	tap_ok(h_count(con->buf, con->len, DEMO_BANNER) == 0,
	    "restored demo: did not boot again (no banner)");
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0,
	    "restored demo: stopped");

	/* A flipped byte: refused, nothing started. */
	copy_damaged(dir, h_in_dir(d, "snap3"));
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"demo\","
	    "\"dir\":\"%s\"}", h_in_dir(d, "snap3"));
	tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r), "checksum") !=
	    NULL, "a damaged snapshot is refused: %s", h_text(r));
	json_object_put(r);
	h_state(c, "demo", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0, "demo: nothing started (%s)", st);

	/* Another memory size: refused, saying so. */
	tap_ok(h_create(c, "big", "\"memory_mib\":64") == 0, "big: created");
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"big\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r), "memory") !=
	    NULL, "a snapshot of another memory size is refused: %s",
	    h_text(r));
	json_object_put(r);
	h_state(c, "big", st, sizeof(st));
	tap_ok(strcmp(st, "running") != 0, "big: not started (%s)", st);

	/* The same through vmctl: restore, then a snapshot that stops. */
	h_ctl_use(d, H_BOOT_MS);
	/* vmctl first: the arguments' order of evaluation is not C's to say. */
	rc = h_ctl("restore", "demo", dir, NULL);
	tap_ok(rc == 0 &&
	    strcmp(h_state(c, "demo", st, sizeof(st)), "running") == 0,
	    "vmctl restore: %s%s", h_out(), h_err());
	rc = h_ctl("snapshot", "demo", h_in_dir(d, "snap4"), NULL);
	tap_ok(rc == 0 &&
	    access(h_in_dir(d, "snap4/manifest.json"), F_OK) == 0,
	    "vmctl snapshot without --keep-running: %s%s", h_out(), h_err());
	tap_ok(h_wait_state(c, "demo", "stopped", H_REPLY_MS) == 0,
	    "demo: stopped after the snapshot");
	free(dir);
	h_close(c);
	return h_done();
}
