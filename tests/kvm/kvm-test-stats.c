/*
 * Exit statistics (vm.stats, vmctl stats) with the exits guest: exactly
 * the exits it makes are counted, per vCPU and summed; nothing moves
 * while collection is off; reset zeroes; segments add up to each row;
 * KVM's own statistics come by name; bad requests get clear errors.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define OUTS		1000
#define READS		100
#define AP_OUTS		300
#define ROW_POST	"IO 0x80 out"
#define ROW_MMIO	"MMIO 0xc0000000 read"

/* vm.stats with extra arguments (JSON text, "" for none); the return. */
static struct json_object *
stats(struct h_conn *c, const char *extra)
{
	struct json_object *r, *ret;

	r = h_callf(c, H_REPLY_MS, "vm.stats", "{\"name\":\"st\"%s%s}",
	    *extra ? "," : "", extra);
	ret = h_ret(r);
	if (ret == NULL) {
		tap_diag("vm.stats %s: %s", extra, h_text(r));
		json_object_put(r);
		return NULL;
	}
	json_object_get(ret);
	json_object_put(r);
	return ret;
}

/* The row called name in a return, or NULL. */
static struct json_object *
row(struct json_object *ret, const char *name)
{
	struct json_object *rows, *o;
	size_t i;

	if (ret == NULL || !json_object_object_get_ex(ret, "exits", &rows))
		return NULL;
	for (i = 0; i < json_object_array_length(rows); i++) {
		o = json_object_array_get_idx(rows, i);
		if (strcmp(h_str(o, "name") ?: "", name) == 0)
			return o;
	}
	return NULL;
}

static int64_t
count(struct json_object *ret, const char *name)
{
	return h_int(row(ret, name), "count", 0);
}

static size_t
nrows(struct json_object *ret)
{
	struct json_object *rows;

	if (ret == NULL || !json_object_object_get_ex(ret, "exits", &rows))
		return 0;
	return json_object_array_length(rows);
}

/* The KVM statistics of vCPU i in a vm.stats return with "kvm". */
static struct json_object *
kvm_vcpu(struct json_object *ret, size_t i)
{
	struct json_object *kvm, *v;

	if (ret == NULL || !json_object_object_get_ex(ret, "kvm", &kvm) ||
	    !json_object_object_get_ex(kvm, "vcpus", &v) ||
	    !json_object_is_type(v, json_type_array))
		return NULL;
	return json_object_array_get_idx(v, i);
}

/* k0 before round 3, k1 after it. */
static void
test_kvm_stats(struct json_object *k0, struct json_object *k1)
{
	struct json_object *kvm, *v0 = kvm_vcpu(k0, 0), *v1 = kvm_vcpu(k1, 0);
	int64_t before = h_int(v0, "exits", -1), after = h_int(v1, "exits", -1);

	tap_ok(kvm_vcpu(k1, 1) != NULL && kvm_vcpu(k1, 2) == NULL &&
	    v1 != NULL && json_object_object_length(v1) >= 4,
	    "kvm: a table of counters for each of the 2 vCPUs (%d names)",
	    v1 != NULL ? json_object_object_length(v1) : 0);
	tap_ok(before >= 0 && after - before >= OUTS + READS,
	    "kvm: vCPU 0's exits moved by at least the round's %d (%lld to "
	    "%lld)", OUTS + READS, (long long)before, (long long)after);
	tap_ok(k1 != NULL && json_object_object_get_ex(k1, "kvm", &kvm) &&
	    json_object_is_type(json_object_object_get(kvm, "vm"),
	    json_type_object), "kvm: the VM's statistics");
}

static double
num(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v))
		return NAN;
	return json_object_get_double(v);
}

/* One round of the guest: a byte on its console, then its report. */
static int
round_trip(struct h_console *con, int n)
{
	char line[64];

	snprintf(line, sizeof(line), "exits: round %d done", n);
	if (h_console_write(con, "g", 1) < 0)
		return -1;
	return h_expect(con, line, 30000);
}

/* Every row's segments add up to its time, within rounding. */
static void
check_segments(struct json_object *ret)
{
	struct json_object *rows, *o, *seg;
	double sum, worst = 0;
	size_t i, bad = 0, n = 0;

	if (ret == NULL || !json_object_object_get_ex(ret, "exits", &rows)) {
		tap_ok(0, "segments: a table");
		return;
	}
	for (i = 0; i < json_object_array_length(rows); i++) {
		o = json_object_array_get_idx(rows, i);
		if (!json_object_object_get_ex(o, "segments", &seg)) {
			bad++;
			continue;
		}
		if (num(seg, "count") != num(o, "count")) {
			bad++;
			tap_diag("%s: %.0f exits by segments of %.0f",
			    h_str(o, "name"), num(seg, "count"),
			    num(o, "count"));
		}
		sum = num(seg, "exit_us") + num(seg, "dispatch_us") +
		    num(seg, "handler_us") + num(seg, "irq_us") +
		    num(seg, "reentry_us");
		/* Each figure is rounded to the nanosecond. */
		if (!(fabs(sum - num(o, "sum_us")) <= 0.003)) {
			bad++;
			tap_diag("%s: segments %.3f, row %.3f", h_str(o, "name"),
			    sum, num(o, "sum_us"));
		}
		if (fabs(sum - num(o, "sum_us")) > worst)
			worst = fabs(sum - num(o, "sum_us"));
		n++;
	}
	tap_ok(n > 0 && bad == 0, "segments: every row's segments sum to its "
	    "time (%zu rows, worst %.4f us)", n, worst);
	o = row(ret, ROW_POST);
	tap_ok(o != NULL && json_object_object_get_ex(o, "segments", &seg) &&
	    num(seg, "handler_us") > 0 && num(seg, "exit_us") >= 0 &&
	    num(seg, "reentry_us") > 0,
	    "segments: the POST port's handler and re-entry take time");
}

static void
test_bad(struct h_conn *c)
{
	static const struct {
		const char *args, *cls, *what;
	} bad[] = {
		{ "\"name\":\"st\",\"vcpu\":2", "invalid_argument",
		    "vcpu beyond the guest's" },
		{ "\"name\":\"st\",\"vcpu\":-1", "invalid_argument",
		    "negative vcpu" },
		{ "\"name\":\"st\",\"enable\":\"yes\"", "invalid_argument",
		    "enable not a boolean" },
		{ "\"name\":\"st\",\"sgements\":true", "invalid_argument",
		    "unknown argument" },
		{ "\"name\":\"nosuch\"", "not_found", "no such VM" },
		{ "", "invalid_argument", "no name" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		h_expect_errorf(c, "vm.stats", bad[i].cls, bad[i].what,
		    "{%s}", bad[i].args);
}

static void
test_vmctl(struct h_daemon *d)
{
	char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", d->sock, "stats",
		"st", NULL, NULL, NULL, NULL };
	struct h_proc p;
	int st, i;

	st = h_run(&p, NULL, 10000, argv);
	tap_ok(st == 0 && strstr(p.obuf, ROW_POST) != NULL &&
	    strstr(p.obuf, "post") != NULL &&
	    strstr(p.obuf, "TIMEINGUEST") != NULL &&
	    strstr(p.obuf, "time%") != NULL,
	    "vmctl stats: the table, rows named with their device");
	if (st != 0 || strstr(p.obuf, ROW_POST) == NULL)
		tap_diag("vmctl stats: %d: %s%s", st, h_flat(p.obuf),
		    h_flat(p.ebuf));
	else
		tap_diag("vmctl stats st:\n%s", p.obuf);
	h_proc_free(&p);

	argv[5] = "--segments";
	argv[6] = "--kvm";
	argv[7] = "--enable";
	st = h_run(&p, NULL, 10000, argv);
	argv[7] = NULL;
	tap_ok(st == 0 && strstr(p.obuf, "dispatch") != NULL &&
	    strstr(p.obuf, "on with segments") != NULL &&
	    strstr(p.obuf, "KVM (vCPU)") != NULL,
	    "vmctl stats --segments --kvm --enable: on with segments, "
	    "segments and KVM's statistics");
	if (st == 0)
		tap_diag("vmctl stats st --segments --kvm --enable:\n%s",
		    p.obuf);
	h_proc_free(&p);

	argv[5] = "--vcpu";
	argv[6] = "7";
	st = h_run(&p, NULL, 10000, argv);
	tap_ok(st == 2 && strstr(p.ebuf, "invalid_argument") != NULL,
	    "vmctl stats --vcpu 7 of 2: the daemon's error, status 2");
	h_proc_free(&p);

	argv[5] = "--enable";
	argv[6] = "--disable";
	st = h_run(&p, NULL, 10000, argv);
	tap_ok(st == 2, "vmctl stats --enable --disable: usage error");
	h_proc_free(&p);

	argv[5] = "--watch";
	argv[6] = "0.2";
	if (h_spawn(&p, argv) == 0) {
		/* Three tables, however long a loaded host takes for them. */
		for (i = 0; i < 60 && h_count(p.obuf != NULL ? p.obuf : "",
		    p.olen, "TIMEINGUEST") < 3; i++)
			h_proc_pump(&p, 500);
		kill(p.pid, SIGINT);
		h_proc_wait(&p, 5000);
		tap_ok(h_count(p.obuf, p.olen, "TIMEINGUEST") >= 3,
		    "vmctl stats --watch 0.2: redrawn (%zu tables)",
		    h_count(p.obuf, p.olen, "TIMEINGUEST"));
		h_proc_free(&p);
	} else {
		tap_ok(0, "vmctl stats --watch: started");
	}
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	struct h_console *con;
	struct json_object *ret, *r0, *r1, *v, *k0, *k1;
	char state[32];

	h_init();
	c = h_setup(&d);

	tap_ok(h_create(c, "st", "\"vcpus\":2,\"kernel\":\"%s\","
	    "\"cmdline\":\"outs=%d reads=%d ap_outs=%d\"",
	    h_env("VMMD_GUEST_EXITS"), OUTS, READS, AP_OUTS) == 0,
	    "created a 2-vCPU guest");
	h_expect_error(c, "vm.stats", "{\"name\":\"st\"}", "bad_state",
	    "a stopped VM has no statistics");
	tap_ok(h_start(c, "st") == 0, "started");
	con = h_console_open(d, "st");
	tap_ok(con != NULL && h_expect(con, "exits: ready", H_BOOT_MS) == 0,
	    "the guest is ready");

	ret = stats(c, "");
	tap_ok(ret != NULL && nrows(ret) == 0 &&
	    h_int(json_object_object_get(ret, "guest"), "count", -1) == 0 && json_object_object_get_ex(ret, "enabled", &v) &&
	    !json_object_get_boolean(v),
	    "off by default: no rows, nothing counted");
	json_object_put(ret);

	/* Round 1: on with segments; both vCPUs write to the POST port. */
	ret = stats(c, "\"enable\":true,\"segments\":true");
	tap_ok(ret != NULL && json_object_object_get_ex(ret, "enabled", &v) &&
	    json_object_get_boolean(v) &&
	    json_object_object_get_ex(ret, "segments", &v) &&
	    json_object_get_boolean(v), "enable with segments: on");
	json_object_put(ret);
	tap_ok(con != NULL && round_trip(con, 1) == 0, "round 1 done");
	r0 = stats(c, "\"vcpu\":0");
	r1 = stats(c, "\"vcpu\":1");
	ret = stats(c, "\"segments\":true");
	tap_ok(count(r0, ROW_POST) == OUTS,
	    "vCPU 0: exactly %d port writes (%lld)", OUTS,
	    (long long)count(r0, ROW_POST));
	tap_ok(count(r1, ROW_POST) == AP_OUTS,
	    "vCPU 1: exactly %d port writes (%lld)", AP_OUTS,
	    (long long)count(r1, ROW_POST));
	tap_ok(count(r0, ROW_MMIO) == READS && row(r1, ROW_MMIO) == NULL,
	    "vCPU 0: exactly %d MMIO reads, vCPU 1 none (%lld)", READS,
	    (long long)count(r0, ROW_MMIO));
	tap_ok(count(ret, ROW_POST) == OUTS + AP_OUTS &&
	    count(ret, ROW_MMIO) == READS, "summed: %d and %d",
	    OUTS + AP_OUTS, READS);
	tap_ok(strcmp(h_str(row(ret, ROW_POST), "device") ?: "", "post") == 0 &&
	    strcmp(h_str(row(ret, ROW_POST), "dir") ?: "", "out") == 0,
	    "the port's row names its device and direction");
	v = row(ret, ROW_POST);
	tap_ok(num(v, "min_us") > 0 && num(v, "min_us") <= num(v, "avg_us") &&
	    num(v, "avg_us") <= num(v, "max_us") && num(v, "stddev_us") >= 0 &&
	    fabs(num(v, "avg_us") * (double)count(ret, ROW_POST) -
	    num(v, "sum_us")) < 0.01 * num(v, "sum_us") + 0.01,
	    "min <= avg <= max, avg * count = sum");
	tap_ok(h_int(json_object_object_get(ret, "guest"), "count", 0) > 0 &&
	    num(json_object_object_get(ret, "guest"), "time_pct") > 0,
	    "TIMEINGUEST: the time inside KVM_RUN is counted");
	check_segments(ret);
	json_object_put(r0);
	json_object_put(r1);
	json_object_put(ret);

	/* Round 2: off; the counts stay where they are. */
	r0 = stats(c, "\"enable\":false");
	tap_ok(con != NULL && round_trip(con, 2) == 0, "round 2 done");
	ret = stats(c, "");
	tap_ok(r0 != NULL && ret != NULL &&
	    count(ret, ROW_POST) == OUTS + AP_OUTS &&
	    count(ret, ROW_MMIO) == READS &&
	    h_int(json_object_object_get(ret, "guest"), "count", -1) ==
	    h_int(json_object_object_get(r0, "guest"), "count", -2),
	    "off: the counts do not move");
	json_object_put(r0);
	json_object_put(ret);

	/* Reset, then round 3 on without segments: counted from zero. */
	ret = stats(c, "\"reset\":true");
	tap_ok(ret != NULL && nrows(ret) == 0 &&
	    h_int(json_object_object_get(ret, "guest"), "count", -1) == 0,
	    "reset: zero");
	json_object_put(ret);
	json_object_put(stats(c, "\"enable\":true"));
	k0 = stats(c, "\"kvm\":true");
	tap_ok(con != NULL && round_trip(con, 3) == 0, "round 3 done");
	k1 = stats(c, "\"kvm\":true");
	r0 = stats(c, "\"vcpu\":0,\"segments\":true");
	r1 = stats(c, "\"vcpu\":1");
	tap_ok(count(r0, ROW_POST) == OUTS && count(r0, ROW_MMIO) == READS &&
	    row(r1, ROW_POST) == NULL,
	    "after the reset: vCPU 0 exactly %d and %d, vCPU 1 none", OUTS,
	    READS);
	tap_ok(r0 != NULL && json_object_object_get_ex(r0, "segments", &v) &&
	    !json_object_get_boolean(v) && (v = row(r0, ROW_POST)) != NULL &&
	    json_object_object_get_ex(v, "segments", &v) &&
	    h_int(v, "count", -1) == 0,
	    "without segments: the rows count, no exit by segments");
	json_object_put(r0);
	json_object_put(r1);

	/*
	 * KVM's own statistics, by name: what the binary statistics API
	 * promises (a descriptor table per vCPU and for the VM, values that
	 * move), not one backend's set of names.  "exits" is x86 KVM's
	 * common vCPU counter; which kinds of exit a backend counts apart
	 * (io_exits, mmio_exits, ...) differs between them.
	 */
	test_kvm_stats(k0, k1);
	json_object_put(k0);
	json_object_put(k1);

	test_bad(c);
	test_vmctl(d);

	h_console_close(con);
	tap_ok(h_stop(c, "st", true, -1, H_REPLY_MS) == 0 &&
	    strcmp(h_state(c, "st", state, sizeof(state)), "stopped") == 0,
	    "stopped");
	h_close(c);
	return h_done();
}
