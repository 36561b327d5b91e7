/*
 * Pause and resume (the demo guest ticks once a second), and the three
 * ways of stopping: a guest that shuts down on Ctrl-Alt-Del (cad), a
 * forced stop, and a stop whose timeout runs out on a guest that ignores
 * Ctrl-Alt-Del (hello halts with interrupts off).  And a disk image
 * that one guest writes is not another's to start with.
 */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* What the guests print (tests/guests/). */
#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"
#define CAD_READY	"cad: ready"
#define CAD_LINE	"cad: ctrl-alt-del"
#define HELLO_LINE	"hello from vmmd test guest"

static bool
is_state(struct json_object *reply, const char *state)
{
	const char *s = h_str(h_ret(reply), "state");

	return s != NULL && strcmp(s, state) == 0;
}

/*
 * vm.info's "start": every step of a start that printed, each of them
 * timed, and the total their sum (each rounded down to a microsecond).
 */
static void
check_start_times(struct h_conn *c, const char *name)
{
	static const char *const steps[] = {
		"supervisor_us", "exec_us", "link_us", "sandbox_us",
		"backends_us", "machine_us", "load_us", "thread_us",
		"guest_us",
	};
	struct json_object *r, *stats = NULL, *start = NULL;
	int64_t sum = 0, total;
	size_t i, seen = 0;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	if (json_object_object_get_ex(h_ret(r), "stats", &stats))
		json_object_object_get_ex(stats, "start", &start);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int64_t us = h_int(start, steps[i], -1);

		seen += us >= 0;
		sum += us > 0 ? us : 0;
	}
	total = h_int(start, "total_us", -1);
	tap_ok(seen == sizeof(steps) / sizeof(steps[0]) && total > 0 &&
	    total >= sum && total <= sum + (int64_t)seen,
	    "%s: vm.info's start has its %zu steps, summing to the total: %s",
	    name, seen, start != NULL ? json_object_to_json_string(start) :
	    "none");
	json_object_put(r);
}

/*
 * How many vCPUs the demo's vm.info gives registers for (with a rip,
 * and the local APIC's priorities, timer and the MP state).
 */
static int
vcpu_regs_count(struct h_conn *c)
{
	struct json_object *r, *st, *regs;
	int i, n = 0;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"demo\"}");
	if (json_object_object_get_ex(h_ret(r), "stats", &st) &&
	    json_object_object_get_ex(st, "vcpu_regs", &regs))
		for (i = 0; i < (int)json_object_array_length(regs); i++) {
			struct json_object *v, *apic;

			v = json_object_array_get_idx(regs, i);
			if (strncmp(h_str(v, "rip") ?: "", "0x", 2) == 0 &&
			    json_object_object_get_ex(v, "apic", &apic) &&
			    strncmp(h_str(apic, "ppr") ?: "", "0x", 2) == 0 &&
			    strncmp(h_str(apic, "lvt_timer") ?: "", "0x",
			    2) == 0 && h_int(apic, "mp_state", -1) >= 0)
				n++;
		}
	json_object_put(r);
	return n;
}

/*
 * Whether the worker's mapping of mib MiB (the guest's RAM) is kept out
 * of core files: VmFlags "dd" in /proc/PID/smaps.
 */
static bool
ram_not_dumped(pid_t pid, unsigned int mib)
{
	char path[64], line[512];
	bool in_ram = false, dd = false;
	unsigned long kb;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "Size: %lu kB", &kb) == 1)
			in_ram = kb == mib * 1024UL;
		else if (in_ram && strncmp(line, "VmFlags:", 8) == 0) {
			dd = strstr(line, " dd") != NULL;
			break;
		}
	}
	fclose(f);
	return dd;
}

static void
test_pause_resume(struct h_daemon *d, struct h_conn *c)
{
	struct h_console *con;
	struct json_object *r;
	size_t n;
	char st[64];

	/* No kernel: the daemon's default guest (the demo). */
	tap_ok(h_create(c, "demo", NULL) == 0, "demo: created without kernel");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"demo\"}");
	{
		struct json_object *k = NULL;

		tap_ok(h_ret(r) != NULL && json_object_object_get_ex(h_ret(r),
		    "kernel", &k) && k == NULL,
		    "demo: kernel is null in vm.info");
	}
	json_object_put(r);
	tap_ok(h_start(c, "demo") == 0, "demo: started");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"demo\"}");
	tap_ok(ram_not_dumped(h_vm_pid(c, "demo"), (unsigned int)
	    json_object_get_int(json_object_object_get(h_ret(r),
	    "memory_mib"))), "demo: its RAM is kept out of core files");
	json_object_put(r);
	if ((con = h_console_open(d, "demo")) == NULL) {
		tap_ok(0, "demo: console attaches");
		return;
	}
	tap_ok(h_expect(con, DEMO_BANNER, H_BOOT_MS) == 0, "demo: banner");
	tap_ok(h_expect(con, DEMO_TICK, 3000) == 0 &&
	    h_expect(con, DEMO_TICK, 3000) == 0, "demo: ticks");

	r = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"demo\"}");
	tap_ok(is_state(r, "paused"), "vm.pause replies state paused (%s)",
	    h_text(r));
	json_object_put(r);
	h_state(c, "demo", st, sizeof(st));
	tap_ok(strcmp(st, "paused") == 0, "vm.info says paused (%s)", st);
	h_expect_error(c, "vm.pause", "{\"name\":\"demo\"}", "bad_state",
	    "vm.pause when paused");

	tap_ok(vcpu_regs_count(c) == 1, "paused: vm.info shows where the "
	    "vCPU stands (vcpu_regs with rip and apic)");

	/* Whatever was on its way before the pause, then silence. */
	h_console_drain(con, 300);
	n = h_console_drain(con, 2500);
	tap_ok(n == 0, "paused: no output for 2.5 s (%zu bytes)", n);

	/* A paused VM's console can be attached: it gets the replay. */
	{
		struct h_console *pc = h_console_open(d, "demo");

		tap_ok(pc != NULL && h_expect(pc, DEMO_BANNER, 3000) == 0,
		    "paused: a console attaches and gets the replay");
		h_console_close(pc);
	}

	r = h_callf(c, H_REPLY_MS, "vm.resume", "{\"name\":\"demo\"}");
	tap_ok(is_state(r, "running"), "vm.resume replies state running (%s)",
	    h_text(r));
	json_object_put(r);
	tap_ok(vcpu_regs_count(c) == 0, "running: no vcpu_regs in vm.info");
	con->mark = con->len;
	tap_ok(h_expect(con, DEMO_TICK, 3000) == 0,
	    "resumed: ticks again");
	h_expect_error(c, "vm.resume", "{\"name\":\"demo\"}", "bad_state",
	    "vm.resume when running");
	tap_ok(h_count(con->buf, con->len, DEMO_BANNER) == 1,
	    "resumed, not restarted: one banner (%zu)",
	    h_count(con->buf, con->len, DEMO_BANNER));
	h_console_close(con);

	/* A paused VM can be stopped. */
	r = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"demo\"}");
	json_object_put(r);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0 &&
	    h_wait_state(c, "demo", "stopped", 1000) == 0,
	    "a paused VM stops with force");
}

/* vm.stop and the time it took; the reply must say stopped. */
static double
timed_stop(struct h_conn *c, const char *name, const char *extra,
    int reply_ms, bool *ok)
{
	struct json_object *r;
	double t0 = h_now_ms(), dt;

	r = h_callf(c, reply_ms, "vm.stop", "{\"name\":\"%s\"%s}", name,
	    extra);
	dt = h_now_ms() - t0;
	*ok = is_state(r, "stopped");
	if (!*ok)
		tap_diag("vm.stop %s: %s", name, h_text(r));
	json_object_put(r);
	return dt;
}

static void
test_stop(struct h_daemon *d, struct h_conn *c, struct h_conn *ev)
{
	struct json_object *e;
	double dt;
	bool ok;
	char st[64];

	/* cad: shuts down on Ctrl-Alt-Del. */
	tap_ok(h_create(c, "cad", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_CAD")) == 0, "cad: created");
	tap_ok(h_start(c, "cad") == 0, "cad: started");
	tap_ok(h_file_expect(h_console_log(d, "cad"), CAD_READY, 1,
	    H_BOOT_MS) == 0, "cad: ready");
	dt = timed_stop(c, "cad", "", 20000, &ok);
	tap_ok(ok, "cad: vm.stop replies state stopped");
	tap_ok(dt < 5000, "cad: stopped well before the 30 s timeout "
	    "(%.0f ms)", dt);
	tap_diag("cad: vm.stop took %.1f ms", dt);
	tap_ok(h_file_expect(h_console_log(d, "cad"), CAD_LINE, 1,
	    1000) == 0, "cad: guest saw Ctrl-Alt-Del");
	e = h_wait_event(ev, "cad", "stopped", 2000);
	tap_ok(e != NULL, "cad: vm.state stopped event (%s)", h_text(e));
	{
		struct json_object *ts = NULL;
		double now = (double)time(NULL);

		tap_ok(e != NULL && h_str(e, "event") &&
		    strcmp(h_str(e, "event"), "vm.state") == 0 &&
		    json_object_object_get_ex(e, "timestamp", &ts) &&
		    (json_object_is_type(ts, json_type_double) ||
		    json_object_is_type(ts, json_type_int)) &&
		    fabs(json_object_get_double(ts) - now) < 5,
		    "cad: event has event, vm, data and a current timestamp");
	}
	json_object_put(e);
	h_state(c, "cad", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0, "cad: vm.info says stopped (%s)",
	    st);

	/* hello ignores Ctrl-Alt-Del: force kills it at once. */
	tap_ok(h_create(c, "hello", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "hello: created");
	tap_ok(h_start(c, "hello") == 0, "hello: started");
	h_file_expect(h_console_log(d, "hello"), HELLO_LINE, 1, H_BOOT_MS);
	check_start_times(c, "hello");
	dt = timed_stop(c, "hello", ",\"force\":true", 10000, &ok);
	tap_ok(ok, "hello: vm.stop force replies state stopped");
	tap_ok(dt < 2000, "hello: forced stop is prompt (%.0f ms)", dt);
	h_state(c, "hello", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0, "hello: vm.info says stopped (%s)",
	    st);
	tap_ok(h_vm_pid(c, "hello") == -1, "hello: no pid once stopped");

	/* ... and a 1 s timeout kills it after about 1 s. */
	tap_ok(h_start(c, "hello") == 0, "hello: started again");
	h_file_expect(h_console_log(d, "hello"), HELLO_LINE, 2, H_BOOT_MS);
	dt = timed_stop(c, "hello", ",\"timeout\":1", 10000, &ok);
	tap_ok(ok, "hello: vm.stop timeout 1 replies state stopped");
	tap_ok(dt >= 900 && dt < 3000, "hello: stopped after about the "
	    "timeout (%.0f ms)", dt);
	h_state(c, "hello", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0,
	    "hello: stopped, not crashed, after the timeout (%s)", st);

	/* A stopped VM can be deleted. */
	tap_ok(h_delete(c, "hello") == 0, "hello: deleted once stopped");
	h_state(c, "hello", st, sizeof(st));
	tap_ok(strcmp(st, "(not_found)") == 0, "hello: gone (%s)", st);
}

/*
 * vm.pause and vm.reset sent together with a forced stop: whichever wins,
 * the loser is told bad_state (the VM stopped), never internal.
 */
static void
test_race_with_stop(struct h_daemon *d, struct h_conn *c)
{
	static const char *const cmds[] = { "vm.pause", "vm.reset" };
	struct json_object *args, *r;
	struct h_conn *c2;
	const char *cls;
	int64_t id;
	int i, wrong = 0, lost = 0;
	char st[64];

	if ((c2 = h_connect(d)) == NULL)
		tap_bail("cannot connect to vmmd");
	tap_ok(h_create(c, "race", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "race: created");
	for (i = 0; i < 10; i++) {
		if (h_start(c, "race") != 0)
			break;
		args = json_object_new_object();
		json_object_object_add(args, "name",
		    json_object_new_string("race"));
		id = h_send_request(c2, cmds[i % 2], args);	/* takes args */
		if (h_stop(c, "race", true, -1, H_REPLY_MS) != 0)
			break;
		r = h_wait_reply(c2, id, H_REPLY_MS);
		cls = h_err_class(r);
		if (cls != NULL && strcmp(cls, "bad_state") != 0) {
			tap_diag("%s racing a stop: %s", cmds[i % 2],
			    h_text(r));
			wrong++;
		}
		lost += cls != NULL;
		json_object_put(r);
		if (h_wait_state(c, "race", "stopped", 3000) != 0)
			break;
	}
	tap_ok(i == 10 && wrong == 0, "race: 10 rounds, every loser told "
	    "bad_state (%d of them), none internal (%d)", lost, wrong);
	h_state(c, "race", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0 && h_delete(c, "race") == 0,
	    "race: stopped, deleted (%s)", st);
	h_close(c2);
}

/*
 * Two demo guests naming one image: the second start is refused while
 * the first writes it, and goes through once the first is stopped;
 * read-only, they share it.
 */
static void
test_disk_lock(struct h_conn *c)
{
	char img[] = "/tmp/vmmd-lock-XXXXXX", st[32];
	int fd;

	fd = mkstemp(img);
	tap_ok(fd >= 0 && ftruncate(fd, 65536) == 0, "lock: image %s", img);
	if (fd >= 0)
		close(fd);
	/* The demo guest, the image only a disk ("boot": from a kernel). */
	tap_ok(h_create(c, "lk1", "\"boot\":\"kernel\",\"disks\":[{"
	    "\"path\":\"%s\"}]", img) == 0 && h_create(c, "lk2",
	    "\"boot\":\"kernel\",\"disks\":[{\"path\":\"%s\"}]", img) == 0 &&
	    h_create(c, "lk3", "\"boot\":\"kernel\",\"disks\":[{\"path\":"
	    "\"%s\",\"readonly\":true}]", img) == 0 && h_create(c, "lk4",
	    "\"boot\":\"kernel\",\"disks\":[{\"path\":\"%s\","
	    "\"readonly\":true}]", img) == 0,
	    "lock: four VMs on one image, two of them read-only");
	tap_ok(h_start(c, "lk1") == 0, "lock: lk1 started");
	h_expect_errorf(c, "vm.start", "bad_state", "lock: lk2 refused while "
	    "lk1 writes the image", "{\"name\":\"lk2\"}");
	h_expect_errorf(c, "vm.start", "bad_state", "lock: lk3 too, read-only",
	    "{\"name\":\"lk3\"}");
	h_state(c, "lk2", st, sizeof(st));
	tap_ok(strcmp(st, "defined") == 0, "lock: lk2 left defined (%s)", st);
	tap_ok(h_stop(c, "lk1", true, -1, H_REPLY_MS) == 0 &&
	    h_start(c, "lk2") == 0, "lock: lk1 stopped, lk2 starts");
	tap_ok(h_stop(c, "lk2", true, -1, H_REPLY_MS) == 0 &&
	    h_start(c, "lk3") == 0 && h_start(c, "lk4") == 0,
	    "lock: then lk3 and lk4 share it read-only");
	h_expect_errorf(c, "vm.start", "bad_state", "lock: and keep lk1 out",
	    "{\"name\":\"lk1\"}");
	tap_ok(h_stop(c, "lk3", true, -1, H_REPLY_MS) == 0 &&
	    h_stop(c, "lk4", true, -1, H_REPLY_MS) == 0 &&
	    h_delete(c, "lk1") == 0 && h_delete(c, "lk2") == 0 &&
	    h_delete(c, "lk3") == 0 && h_delete(c, "lk4") == 0,
	    "lock: stopped and deleted");
	unlink(img);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c, *ev;
	struct json_object *r;

	h_init();
	c = h_setup(&d);
	if ((ev = h_connect(d)) == NULL)
		tap_bail("cannot connect to vmmd");
	r = h_call(ev, "events.subscribe", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "events.subscribe (%s)", h_text(r));
	json_object_put(r);

	test_pause_resume(d, c);
	test_stop(d, c, ev);
	test_race_with_stop(d, c);
	test_disk_lock(c);
	h_close(ev);
	h_close(c);
	return h_done();
}
