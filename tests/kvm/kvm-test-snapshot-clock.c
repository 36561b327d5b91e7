/*
 * The guest's clock moves on across a restore: the demo guest is
 * snapshotted (running on), stopped, and restored from that snapshot
 * two seconds later; a second snapshot taken at once records a
 * kvmclock ahead of the first by the host time between the two
 * snapshots (two seconds and more, within generous bounds), not by the
 * few milliseconds the restored guest ran.  The "clock" sections are
 * read from the snapshots' files as vmmd wrote them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "state-rounds.h"
#include "machine-state.h"
#include "snap-file.h"


static double
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The kvmclock (ns) the snapshot in dir recorded; -1 with a diag. */
static int64_t
kvmclock_of(const char *dir)
{
	struct machine_clock_state st;
	struct dev_state_error derr = { "" };
	struct snap_reader r;
	const void *p;
	size_t len;
	char err[256];
	int64_t v = -1;

	if (snap_open(&r, dir, NULL, 0, err, sizeof(err)) < 0) {
		tap_diag("%s: %s", dir, err);
		return -1;
	}
	memset(&st, 0, sizeof(st));
	if ((p = snap_section(&r, "clock", &len)) == NULL)
		tap_diag("%s: no clock section", dir);
	else if (dev_state_load(&machine_clock_table, &st, p, len,
	    &derr) < 0)
		tap_diag("%s: clock: %s", dir, derr.msg);
	else
		v = (int64_t)st.clock;
	snap_close(&r);
	return v;
}

/* vm.snapshot of demo into dir, running on; t0/t1 around it. */
static int64_t
snap(struct h_conn *c, const char *dir, double *t0, double *t1)
{
	struct json_object *r;
	bool ok;

	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	*t0 = wall_ms();
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"demo\","
	    "\"dir\":\"%s\",\"keep_running\":true}", dir);
	*t1 = wall_ms();
	ok = h_ret(r) != NULL;
	tap_ok(ok, "snapshot into %s: %s", dir, ok ? "done" : h_text(r));
	json_object_put(r);
	return ok ? kvmclock_of(dir) : -1;
}

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	double a0, a1, b0, b1, lo, hi, moved;
	int64_t ka, kb;
	char *dir_a, *dir_b;

	h_init();
	c = h_setup(&d);
	dir_a = strdup(h_in_dir(d, "snap-a"));
	dir_b = strdup(h_in_dir(d, "snap-b"));
	if (dir_a == NULL || dir_b == NULL)
		tap_bail("out of memory");
	con = state_rounds_demo(d, c, "demo", NULL);
	h_console_close(con);

	ka = snap(c, dir_a, &a0, &a1);
	tap_ok(ka > 0, "the first snapshot's kvmclock: %lld ns",
	    (long long)ka);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");
	h_sleep_ms(2000);
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\"}", dir_a);
	tap_ok(h_ret(r) != NULL, "demo: restored 2 s later: %s", h_text(r));
	json_object_put(r);
	kb = snap(c, dir_b, &b0, &b1);
	tap_ok(kb > 0, "the second snapshot's kvmclock: %lld ns",
	    (long long)kb);

	/* The host time between the two captures lies in [lo, hi]. */
	lo = b0 - a1;
	hi = b1 - a0;
	moved = (double)(kb - ka) / 1e6;
	tap_ok(kb > ka, "kvmclock never went back");
	tap_ok(moved >= lo - 100 && moved <= hi + 2000,
	    "kvmclock moved on by %.0f ms across the restore; the host's "
	    "time between the snapshots: %.0f to %.0f ms", moved, lo, hi);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");
	free(dir_a);
	free(dir_b);
	h_close(c);
	return h_done();
}
