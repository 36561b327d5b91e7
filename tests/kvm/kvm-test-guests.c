/*
 * Guests that each check one piece of the platform: serial output and
 * the console log (hello), SMP bring-up (smp), the CMOS clock (cmos).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"

/* What the guests print (tests/guests/). */
#define HELLO_LINE	"hello from vmmd test guest"
#define SMP_APIC_FMT	"cpu %d apic_id %d"
#define SMP_DONE	"smp: 2 cpus up"
#define CMOS_KEY	"epoch="

/*
 * vm.start, then the time until the console log file has its first byte
 * (the log is written as output arrives: the closest outside view of the
 * guest's first serial byte).  Returns the reply to vm.start.
 */
static struct json_object *
start_and_time(struct h_daemon *d, struct h_conn *c, const char *name,
    double *first_byte_ms)
{
	const char *log = h_console_log(d, name);
	struct json_object *args;
	struct stat st;
	double t0, deadline;
	int64_t id;

	*first_byte_ms = -1;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	t0 = h_now_ms();
	if ((id = h_send_request(c, "vm.start", args)) == -1)
		return NULL;
	deadline = t0 + H_BOOT_MS;
	while (h_now_ms() < deadline) {
		if (stat(log, &st) == 0 && st.st_size > 0) {
			*first_byte_ms = h_now_ms() - t0;
			break;
		}
		/* 100 µs: fine enough for a figure in milliseconds. */
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	return h_wait_reply(c, id, H_REPLY_MS);
}

static void
test_hello(struct h_daemon *d, struct h_conn *c)
{
	struct h_console *con;
	struct json_object *r;
	double first;

	tap_ok(h_create(c, "hello", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "hello: created");
	r = start_and_time(d, c, "hello", &first);
	tap_ok(h_ret(r) != NULL &&
	    strcmp(h_str(h_ret(r), "state") ?: "", "running") == 0,
	    "hello: vm.start replies with state running");
	if (h_ret(r) == NULL)
		tap_diag("vm.start: %s", h_text(r));
	json_object_put(r);
	tap_ok(first >= 0, "hello: console log has output after vm.start");
	if (first >= 0)
		tap_diag("vm.start sent -> first console byte in the log: "
		    "%.2f ms", first);

	con = h_console_open(d, "hello");
	tap_ok(con != NULL, "hello: console attaches");
	tap_ok(con != NULL && h_expect(con, HELLO_LINE, H_BOOT_MS) == 0,
	    "hello: line on the attached console");
	h_console_close(con);
	tap_ok(h_file_expect(h_console_log(d, "hello"), HELLO_LINE, 1,
	    H_BOOT_MS) == 0, "hello: line in the console log");
	/* The guest halted with interrupts off: the VM is still running. */
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"hello\"}");
	tap_ok(strcmp(h_str(h_ret(r), "state") ?: "", "running") == 0,
	    "hello: halted guest stays running");
	tap_ok(h_int(h_ret(r), "pid", -1) > 0, "hello: vm.info has the "
	    "worker's pid");
	{
		struct json_object *stats = NULL;

		tap_ok(h_ret(r) != NULL && json_object_object_get_ex(h_ret(r),
		    "stats", &stats) && json_object_is_type(stats,
		    json_type_object), "hello: vm.info has the worker's stats");
	}
	if (tap_failed)
		tap_diag("vm.info: %s", h_text(r));
	json_object_put(r);
	tap_ok(h_stop(c, "hello", true, -1, H_REPLY_MS) == 0,
	    "hello: force stop");
}

/*
 * vm.info counts each vCPU's exits twice: those that reached the worker
 * (vcpu_exits) and all of them, as KVM counts (vcpu_kvm).  Every vCPU
 * printed, so each has port-I/O exits, and KVM saw at least as many.
 */
static void
check_exit_stats(struct h_conn *c, const char *name, int nvcpus)
{
	struct json_object *r, *st = NULL, *ours = NULL, *kvm = NULL;
	int i, good = 0;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	if (h_ret(r) != NULL)
		json_object_object_get_ex(h_ret(r), "stats", &st);
	if (st != NULL) {
		json_object_object_get_ex(st, "vcpu_exits", &ours);
		json_object_object_get_ex(st, "vcpu_kvm", &kvm);
	}
	tap_ok(ours != NULL && kvm != NULL &&
	    json_object_array_length(ours) == (size_t)nvcpus &&
	    json_object_array_length(kvm) == (size_t)nvcpus,
	    "%s: vm.info has vcpu_exits and vcpu_kvm for %d vCPUs", name,
	    nvcpus);
	for (i = 0; kvm != NULL && ours != NULL && i < nvcpus &&
	    (size_t)i < json_object_array_length(kvm) &&
	    (size_t)i < json_object_array_length(ours); i++) {
		int64_t io = h_int(json_object_array_get_idx(ours, i), "io", -1);
		int64_t all = h_int(json_object_array_get_idx(kvm, i), "exits",
		    -1);

		if (io > 0 && all >= io)
			good++;
		else
			tap_diag("%s: vCPU %d: %" PRId64 " port-I/O exits, KVM "
			    "counts %" PRId64 " exits", name, i, io, all);
	}
	tap_ok(good == nvcpus, "%s: every vCPU has port-I/O exits, and KVM "
	    "counted at least as many exits", name);
	json_object_put(r);
}

static void
test_smp(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "smp");
	char line[64];
	int i;

	tap_ok(h_create(c, "smp", "\"kernel\":\"%s\",\"vcpus\":2",
	    h_env("VMMD_GUEST_SMP")) == 0, "smp: created with 2 vCPUs");
	tap_ok(h_start(c, "smp") == 0, "smp: started");
	for (i = 0; i < 2; i++) {
		snprintf(line, sizeof(line), SMP_APIC_FMT, i, i);
		tap_ok(h_file_expect(log, line, 1, H_BOOT_MS) == 0,
		    "smp: '%s'", line);
	}
	check_exit_stats(c, "smp", 2);
	tap_ok(h_stop(c, "smp", true, -1, H_REPLY_MS) == 0, "smp: force stop");
}

static void
test_cmos(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "cmos");
	long long epoch = -1;
	time_t now;
	char *buf, *p;

	tap_ok(h_create(c, "cmos", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_CMOS")) == 0, "cmos: created");
	tap_ok(h_start(c, "cmos") == 0, "cmos: started");
	/* The whole number: wait for the end of its line. */
	if (h_file_expect(log, CMOS_KEY, 1, H_BOOT_MS) == 0) {
		double deadline = h_now_ms() + 2000;

		for (;;) {
			buf = h_read_file(log, NULL);
			p = buf ? strstr(buf, CMOS_KEY) : NULL;
			if (p != NULL && strchr(p, '\n') != NULL)
				break;
			free(buf);
			buf = NULL;
			if (h_now_ms() > deadline)
				break;
			h_sleep_ms(20);
		}
		now = time(NULL);
		if (p != NULL) {
			char *end;

			errno = 0;
			epoch = strtoll(p + strlen(CMOS_KEY), &end, 10);
			if (errno != 0 || end == p + strlen(CMOS_KEY))
				epoch = -1;
		}
		free(buf);
		tap_ok(epoch >= 0, "cmos: guest reports %s<number>", CMOS_KEY);
		tap_ok(epoch >= 0 && llabs(epoch - (long long)now) <= 2,
		    "cmos: guest clock %lld within 2 s of host %lld", epoch,
		    (long long)now);
	} else {
		tap_ok(0, "cmos: guest reports %s<number>", CMOS_KEY);
		tap_ok(0, "cmos: guest clock within 2 s of host");
	}
	tap_ok(h_stop(c, "cmos", true, -1, H_REPLY_MS) == 0,
	    "cmos: force stop");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_hello(d, c);
	test_smp(d, c);
	test_cmos(d, c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
