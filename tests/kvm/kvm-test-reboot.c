/*
 * Guest-initiated resets (the reboot guest: mode=i8042 pulses the reset
 * line through the keyboard controller, mode=triple triple-faults) with
 * on_reboot restart (the guest boots again, the VM keeps running) and
 * stop (the VM stops); and vm.reset from outside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* What the guests print (tests/guests/). */
#define REBOOT_LINE	"reboot: starting"
#define HELLO_LINE	"hello from vmmd test guest"

static void
test_mode(struct h_daemon *d, struct h_conn *c, const char *mode,
    const char *on_reboot)
{
	const char *log;
	char name[64], st[64], *buf;
	size_t len, n;

	snprintf(name, sizeof(name), "rb-%s-%s", mode, on_reboot);
	log = h_console_log(d, name);
	tap_ok(h_create(c, name, "\"kernel\":\"%s\",\"cmdline\":\"mode=%s\","
	    "\"on_reboot\":\"%s\"", h_env("VMMD_GUEST_REBOOT"), mode,
	    on_reboot) == 0, "%s: created", name);
	tap_ok(h_start(c, name) == 0, "%s: started", name);
	if (strcmp(on_reboot, "restart") == 0) {
		tap_ok(h_file_expect(log, REBOOT_LINE, 3, H_BOOT_MS) == 0,
		    "%s: '%s' appears again and again", name, REBOOT_LINE);
		h_state(c, name, st, sizeof(st));
		tap_ok(strcmp(st, "running") == 0, "%s: still running (%s)",
		    name, st);
		tap_ok(h_stop(c, name, true, -1, H_REPLY_MS) == 0,
		    "%s: force stop", name);
	} else {
		tap_ok(h_wait_state(c, name, "stopped", H_BOOT_MS) == 0,
		    "%s: VM stopped on the guest's reset", name);
		buf = h_read_file(log, &len);
		n = h_count(buf, len, REBOOT_LINE);
		free(buf);
		tap_ok(n == 1, "%s: booted once ('%s' %zu times)", name,
		    REBOOT_LINE, n);
		tap_ok(h_vm_pid(c, name) == -1, "%s: no worker left", name);
	}
}

static void
test_vm_reset(struct h_daemon *d, struct h_conn *c)
{
	struct json_object *r;
	const char *log = h_console_log(d, "hello");

	tap_ok(h_create(c, "hello", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "hello: created");
	h_expect_error(c, "vm.reset", "{\"name\":\"hello\"}", "bad_state",
	    "vm.reset of a defined VM");
	tap_ok(h_start(c, "hello") == 0, "hello: started");
	tap_ok(h_file_expect(log, HELLO_LINE, 1, H_BOOT_MS) == 0,
	    "hello: first boot");
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"hello\"}");
	tap_ok(h_ret(r) != NULL, "vm.reset replies (%s)", h_text(r));
	json_object_put(r);
	tap_ok(h_file_expect(log, HELLO_LINE, 2, H_BOOT_MS) == 0,
	    "hello: boots again after vm.reset");
	tap_ok(h_stop(c, "hello", true, -1, H_REPLY_MS) == 0,
	    "hello: force stop");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_mode(d, c, "i8042", "restart");
	test_mode(d, c, "i8042", "stop");
	test_mode(d, c, "triple", "restart");
	test_mode(d, c, "triple", "stop");
	test_vm_reset(d, c);
	h_close(c);
	return h_done();
}
