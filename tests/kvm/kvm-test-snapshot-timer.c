/*
 * A snapshot keeps a vCPU's TSC deadline: the tscdl guest
 * (tests/guests/tscdl.c) arms the local APIC timer in TSC-deadline mode
 * about a second ahead and halts until it fires.  Snapshotted while it
 * waits, and restored, it must get that interrupt and go on.  KVM takes
 * a write of IA32_TSC_DEADLINE only while the APIC timer is in
 * TSC-deadline mode: a restore that sets the MSRs before the local
 * APIC drops the deadline, and the guest waits for ever (as a Linux
 * guest's idle CPU waits for its next tick, and a task sleeping on it
 * with it).  Three rounds, each snapshot taken in the next wait.
 */
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "harness.h"

#define ROUNDS	3

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct json_object *r;
	struct h_conn *c;
	char dir[600];
	int round;
	bool ok;

	h_init();
	c = h_setup(&d);
	tap_ok(h_create(c, "w", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_TSCDL")) == 0 && h_start(c, "w") == 0,
	    "w: created, started");
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	if (h_find(con, "tscdl: no TSC deadline timer", 2000) == 0) {
		tap_skip_all("KVM offers no TSC deadline timer here");
		return 77;
	}
	tap_ok(h_expect(con, "tscdl: round 1 fired", H_BOOT_MS) == 0,
	    "w: its TSC deadline fires");
	mkdir(h_in_dir(d, "snap"), 0700);
	for (round = 2; round < 2 + ROUNDS; round++) {
		snprintf(dir, sizeof(dir), "%s/%d", h_in_dir(d, "snap"),
		    round);
		if (mkdir(dir, 0700) < 0)
			tap_bail("%s", dir);
		/* The snapshot in the wait: the guest halts, armed. */
		ok = h_expect(con, " armed", 10000) == 0;
		h_console_close(con);
		r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"w\","
		    "\"dir\":\"%s\"}", dir);
		ok = h_ret(r) != NULL && ok;
		json_object_put(r);
		r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
		    "\"name\":\"w\"}", dir);
		ok = h_ret(r) != NULL && ok;
		json_object_put(r);
		if ((con = h_console_open(d, "w")) == NULL)
			tap_bail("w: no console");
		/* Whichever round it waits in (the deadline may have come
		 * before the save), the restored guest's fires. */
		tap_ok(ok && h_expect(con, " fired", 20000) == 0,
		    "round %d: snapshotted while it waits, restored: the "
		    "deadline fires", round);
	}
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	h_close(c);
	return h_done();
}
