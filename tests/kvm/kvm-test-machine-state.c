/*
 * The whole machine's state survives being written out and read back:
 * the demo guest (it prints the time once a second from its LAPIC
 * timer) is paused, and on each resume the test build's hook
 * (test-hook.h, VMMD_TEST_VCPU_STATE=machine) captures the VM clock,
 * TSC, both PICs, the IOAPIC, the PIT, every vCPU and the board's
 * devices (walked from the board table: UART, RTC, i8042, the PCI host
 * bridge, a virtio-rng function the demo guest leaves alone) into
 * sections,
 * restores junk over them (every IOAPIC pin and PIC line masked, the
 * registers clobbered), reads the sections back and restores them in
 * machine-state.h's order.  The guest goes on ticking, never restarted,
 * and the hook finds the chips as they were and the clock not gone
 * back.
 *
 * VMMD_TEST_VCPU_STATE=machine-clobber in the test's environment makes
 * the hook leave the junk: the test must then fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"
#define HOOK_LINE	"test hook: machine state "
#define ROUNDS		3

int
main(void)
{
	const char *mode = getenv("VMMD_TEST_VCPU_STATE");
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	char st[64], *log;

	h_init();
	if (getenv("VMMD_TEST_HOOKS") == NULL ||
	    strcmp(getenv("VMMD_TEST_HOOKS"), "true") != 0)
		tap_skip_all("the machine state hook needs -Dtest_hooks=true");
	if (mode == NULL)
		setenv("VMMD_TEST_VCPU_STATE", "machine", 1);
	c = h_setup(&d);

	tap_ok(h_create(c, "demo", "\"rng\":true") == 0 &&
	    h_start(c, "demo") == 0, "demo: created with virtio-rng, started");
	if ((con = h_console_open(d, "demo")) == NULL)
		tap_bail("demo: no console");
	tap_ok(h_expect(con, DEMO_BANNER, H_BOOT_MS) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: banner and a tick");

	for (int i = 1; i <= ROUNDS; i++) {
		r = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"demo\"}");
		json_object_put(r);
		h_console_drain(con, 200);
		r = h_callf(c, H_REPLY_MS, "vm.resume",
		    "{\"name\":\"demo\"}");
		tap_ok(h_ret(r) != NULL, "round %d: paused and resumed (%s)",
		    i, h_text(r));
		json_object_put(r);
		tap_ok(h_file_expect(d->log, HOOK_LINE, i, 10000) == 0,
		    "round %d: the hook saved and restored the machine", i);
		con->mark = con->len;
		tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
		    h_expect(con, DEMO_TICK, 5000) == 0,
		    "round %d: the guest ticks on", i);
	}
	h_state(c, "demo", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "demo: still running (%s)", st);
	tap_ok(h_count(con->buf, con->len, DEMO_BANNER) == 1,
	    "demo: never restarted: one banner (%zu)",
	    h_count(con->buf, con->len, DEMO_BANNER));
	log = h_read_file(d->log, NULL);
	tap_ok(log != NULL && strstr(log, "test hook: machine state: ") ==
	    NULL && strstr(log, "NOT back") == NULL,
	    "no step of the hook failed, the chips and clock came back");
	if (log != NULL && (mode = strstr(log, HOOK_LINE)) != NULL)
		tap_diag("%.*s", (int)strcspn(mode, "\n"), mode);
	free(log);
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");
	h_close(c);
	return h_done();
}
