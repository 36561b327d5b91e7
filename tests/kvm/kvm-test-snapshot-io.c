/*
 * A snapshot never catches a vCPU half-way through an I/O exit: the
 * uartloop guest (tests/guests/uartloop.c) does nothing but port I/O
 * exits, writing a byte to its UART in loopback and reading it back,
 * so a pause finds its vCPU handling an exit nearly as often as inside
 * KVM_RUN.  KVM finishes an exit's instruction (an IN's value into RAX,
 * RIP past it) only when KVM_RUN is entered again: a vCPU parked
 * without that is saved with RIP still on the instruction, and the
 * restored guest runs it a second time against devices that already saw
 * it (a byte more in the FIFO, or one less).  The guest is snapshotted
 * and restored 60 times (a pause catches the vCPU between exit and
 * re-entry a few times in ten here); after each restore it must count on
 * without a FAIL.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define ROUNDS	60
#define OK	" passes ok"

/*
 * The snapshot before round's: the guest runs from round's now.  Sixty
 * of them would fill the nested test host's memory-backed /tmp, and a
 * guest whose mapped memory file cannot grow dies of a SIGBUS.
 */
static void
rm_previous(struct h_daemon *d, int round)
{
	char dir[600];

	if (round == 0)
		return;
	snprintf(dir, sizeof(dir), "%s/%d", h_in_dir(d, "snap"), round - 1);
	if (h_rm_tree(dir) < 0)
		tap_diag("round %d: cannot remove %s", round, dir);
}

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct json_object *r;
	struct h_conn *c;
	char dir[600];
	int round, fails = 0;
	bool ok;

	h_init();
	c = h_setup(&d);
	tap_ok(h_create(c, "w", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_UARTLOOP")) == 0 && h_start(c, "w") == 0,
	    "w: created, started");
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	tap_ok(h_expect(con, "uartloop: ready", H_BOOT_MS) == 0 &&
	    h_expect(con, OK, 10000) == 0, "w: loops on its UART");
	h_console_close(con);

	for (round = 0; round < ROUNDS; round++) {
		snprintf(dir, sizeof(dir), "%s/%d", h_in_dir(d, "snap"),
		    round);
		if (round == 0)
			mkdir(h_in_dir(d, "snap"), 0700);
		if (mkdir(dir, 0700) < 0)
			tap_bail("%s", dir);
		r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"w\","
		    "\"dir\":\"%s\"}", dir);
		ok = h_ret(r) != NULL;
		if (!ok)
			tap_diag("round %d: snapshot: %s", round, h_text(r));
		json_object_put(r);
		r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
		    "\"name\":\"w\"}", dir);
		if (ok && h_ret(r) == NULL) {
			tap_diag("round %d: restore: %s", round, h_text(r));
			ok = false;
		}
		json_object_put(r);
		if (!ok || (con = h_console_open(d, "w")) == NULL) {
			fails++;
			break;
		}
		rm_previous(d, round);
		/* Two reports: the first may have begun before the save. */
		ok = h_expect(con, OK, 10000) == 0 &&
		    h_expect(con, OK, 10000) == 0;
		if (!ok || h_count(con->buf, con->len, "FAIL") != 0) {
			tap_diag("round %d: %.*s", round, (int)con->len,
			    con->buf);
			fails++;
		}
		h_console_close(con);
		if (fails > 0)
			break;		/* the guest halted */
	}
	tap_ok(fails == 0 && round == ROUNDS, "w snapshotted and restored %d "
	    "times: every I/O exit done once%s", round, fails > 0 ?
	    " (the last round failed)" : "");
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	h_close(c);
	return h_done();
}
