/*
 * ACPI end to end: the acpi guest walks the tables vmmd wrote (every
 * checksum, one MADT processor per vCPU), enables the power button and
 * takes its SCI when `vmctl stop` presses it, then powers off through
 * \_S5: the VM is stopped without Ctrl-Alt-Del.  A guest that enables
 * the button and ignores it gets Ctrl-Alt-Del halfway through the stop
 * timeout, and stops through that.  The PM timer the FADT names counts
 * 3.579545 MHz against the RTC's seconds, as the guest measures it.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define ACPI_READY	"acpi: ready"
#define ACPI_S5		"acpi: power button, entering S5"
#define ACPI_IGNORED	"acpi: power button ignored"
#define ACPI_CAD	"acpi: ctrl-alt-del"

#define VMCTL_MS	60000

static struct h_daemon *d;

/* How often needle is in the console log now (quietly: 0 is expected). */
static size_t
log_count(const char *log, const char *needle)
{
	size_t len, n;
	char *text = h_read_file(log, &len);

	n = text != NULL ? h_count(text, len, needle) : 0;
	free(text);
	return n;
}

/* vmctl -s SOCK stop NAME --timeout T: its exit status. */
static int
vmctl_stop(const char *name, const char *timeout)
{
	struct h_proc p = { 0 };
	char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", d->sock, "stop",
	    (char *)name, "--timeout", (char *)timeout, NULL };
	int r;

	r = h_run(&p, NULL, VMCTL_MS, argv);
	if (r != 0)
		tap_diag("vmctl stop %s: exit %d: %s", name, r,
		    h_flat(p.ebuf ? p.ebuf : ""));
	h_proc_free(&p);
	return r;
}

/* stats.devices["acpi-pm"][key] and stats.shutdown from vm.info. */
static void
info(struct h_conn *c, const char *name, const char *key, char *val,
    size_t vlen, char *stage, size_t slen)
{
	struct json_object *r, *st, *devs, *pm;
	const char *s;

	val[0] = stage[0] = '\0';
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	if (json_object_object_get_ex(h_ret(r), "stats", &st)) {
		if (json_object_object_get_ex(st, "devices", &devs) &&
		    json_object_object_get_ex(devs, "acpi-pm", &pm)) {
			s = h_str(pm, key);
			if (s == NULL)
				s = json_object_to_json_string(
				    json_object_object_get(pm, key));
			snprintf(val, vlen, "%s", s);
		}
		if ((s = h_str(st, "shutdown")) != NULL)
			snprintf(stage, slen, "%s", s);
	}
	json_object_put(r);
}

static void
test_tables(struct h_conn *c, int vcpus)
{
	char name[32], line[64], val[32], stage[32];
	const char *log;

	snprintf(name, sizeof(name), "acpi%d", vcpus);
	log = h_console_log(d, name);
	tap_ok(h_create(c, name, "\"kernel\":\"%s\",\"vcpus\":%d",
	    h_env("VMMD_GUEST_ACPI"), vcpus) == 0, "%s: created", name);
	tap_ok(h_start(c, name) == 0, "%s: started", name);
	tap_ok(h_file_expect(log, ACPI_READY, 1, H_BOOT_MS) == 0,
	    "%s: tables found and checked, power button enabled", name);
	snprintf(line, sizeof(line), "acpi: madt %d cpus", vcpus);
	tap_ok(h_file_expect(log, line, 1, 1000) == 0,
	    "%s: the MADT lists %d processors", name, vcpus);
	tap_ok(h_file_expect(log, "sci 9 pm1a_evt 0x600 pm1a_cnt 0x604 "
	    "sci_en 1", 1, 1000) == 0,
	    "%s: FADT: SCI 9, PM1a blocks, always in ACPI mode", name);
	info(c, name, "pm1_en", val, sizeof(val), stage, sizeof(stage));
	tap_ok(strcmp(val, "0x100") == 0 && strcmp(stage, "none") == 0,
	    "%s: vm.info: PWRBTN_EN set (%s), no stop under way (%s)", name,
	    val, stage);

	tap_ok(vmctl_stop(name, "30") == 0, "%s: vmctl stop", name);
	tap_ok(h_file_expect(log, "acpi: sci pm1_sts 0x0100", 1, 1000) == 0,
	    "%s: the guest took the SCI with PWRBTN_STS", name);
	tap_ok(h_file_expect(log, ACPI_S5, 1, 1000) == 0,
	    "%s: and entered S5", name);
	h_state(c, name, val, sizeof(val));
	tap_ok(strcmp(val, "stopped") == 0, "%s: stopped (%s)", name, val);
	tap_ok(log_count(log, ACPI_CAD) == 0 && log_count(log, "FAIL") == 0,
	    "%s: no Ctrl-Alt-Del, no failure", name);
}

static void
test_ignored(struct h_conn *c)
{
	const char *log = h_console_log(d, "deaf");
	char val[32];
	double t0, dt;

	tap_ok(h_create(c, "deaf", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"button=ignore\"", h_env("VMMD_GUEST_ACPI")) == 0,
	    "deaf: created");
	tap_ok(h_start(c, "deaf") == 0, "deaf: started");
	tap_ok(h_file_expect(log, ACPI_READY, 1, H_BOOT_MS) == 0,
	    "deaf: ready");
	t0 = h_now_ms();
	/* The keys come after half of the 8 s. */
	tap_ok(vmctl_stop("deaf", "8") == 0, "deaf: vmctl stop --timeout 8");
	dt = h_now_ms() - t0;
	tap_ok(h_file_expect(log, ACPI_IGNORED, 1, 1000) == 0,
	    "deaf: the button was pressed and ignored");
	tap_ok(h_file_expect(log, ACPI_CAD, 1, 1000) == 0,
	    "deaf: then Ctrl-Alt-Del came");
	tap_diag("deaf: stopped after %.0f ms", dt);
	h_state(c, "deaf", val, sizeof(val));
	tap_ok(strcmp(val, "stopped") == 0, "deaf: stopped (%s), not killed",
	    val);
	tap_ok(log_count(log, "FAIL") == 0, "deaf: no failure");
}

/* The guest's measurement, for the log: the line that says "ok". */
static void
diag_line(const char *log, const char *needle)
{
	size_t len;
	char *text = h_read_file(log, &len), *p, *e;

	if (text != NULL && (p = strstr(text, needle)) != NULL) {
		while (p > text && p[-1] != '\n')
			p--;
		e = strchr(p, '\n');
		tap_diag("%.*s", (int)(e != NULL ? e - p : (ptrdiff_t)strlen(p)),
		    p);
	}
	free(text);
}

static void
test_pm_timer(struct h_conn *c)
{
	const char *log = h_console_log(d, "pmtmr");
	char val[32], stage[32];
	bool ok;

	tap_ok(h_create(c, "pmtmr", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"pmtimer=2\"", h_env("VMMD_GUEST_ACPI")) == 0,
	    "pmtmr: created");
	tap_ok(h_start(c, "pmtmr") == 0, "pmtmr: started");
	/* Right after the tables, unless the guest failed there. */
	ok = h_file_expect(log, "acpi: s5 slp_typ", 1, H_BOOT_MS) == 0 &&
	    h_file_expect(log, "acpi: pm timer 0x608, 24 bits", 1,
	    1000) == 0;
	tap_ok(ok, "pmtmr: FADT: a 24-bit PM timer at 0x608");
	/* Two RTC seconds, up to five times if the host kept it waiting. */
	ok = ok && h_file_expect(log, ACPI_READY, 1, 60000) == 0 &&
	    log_count(log, "rtc seconds, ok") == 1;
	tap_ok(ok, "pmtmr: it counts 3579545 ticks a second of the RTC, "
	    "+-10%%");
	diag_line(log, "rtc seconds");
	info(c, "pmtmr", "timer_reads", val, sizeof(val), stage,
	    sizeof(stage));
	tap_ok(strtoull(val, NULL, 10) > 0, "pmtmr: vm.info: %s timer reads",
	    val);
	/* A guest that failed has halted: it would not hear the button. */
	if (ok)
		tap_ok(vmctl_stop("pmtmr", "30") == 0, "pmtmr: vmctl stop");
	else
		tap_ok(h_stop(c, "pmtmr", true, -1, H_REPLY_MS) == 0,
		    "pmtmr: force stop");
	tap_ok(log_count(log, "FAIL") == 0, "pmtmr: no failure");
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_tables(c, 1);
	test_tables(c, 3);
	test_ignored(c);
	test_pm_timer(c);
	h_close(c);
	return h_done();
}
