/*
 * A snapshot holds the guest still until it is written, whatever else
 * is asked meanwhile.  The demo guest is snapshotted (keep_running)
 * while the test build's hook (test-hook.h,
 * VMMD_TEST_SNAPSHOT_BUSY=shutdown) makes the devices answer busy, as a
 * disk request in flight does, until a worker.shutdown has been asked:
 * the snapshot waits in the worker's loop, paused.  A vm.stop without
 * force then asks the worker to resume the guest and to shut it down;
 * it must refuse both (the guest would run, and see the power button,
 * while its state is half saved), the daemon's log saying why.  The
 * snapshot is then written, the stop's timeout ends the VM, and the
 * snapshot restores to a guest that counts on.  A vm.reset meanwhile
 * is refused as well.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "state-rounds.h"

#define REFUSED	"VM 'demo': worker.shutdown: a snapshot is being taken"

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c, *c2;
	struct json_object *r;
	char dir[PATH_MAX], log[PATH_MAX], args[PATH_MAX + 64];
	int64_t id, stop;

	state_rounds_need_hooks("holding a snapshot busy");
	setenv("VMMD_TEST_SNAPSHOT_BUSY", "shutdown", 1);
	h_init();
	c = h_setup(&d);
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	snprintf(log, sizeof(log), "%s", h_in_dir(d, "vmmd.log"));
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	if ((c2 = h_connect(d)) == NULL)
		tap_bail("no second connection");

	con = state_rounds_demo(d, c, "demo", NULL);
	h_console_close(con);

	snprintf(args, sizeof(args), "{\"name\":\"demo\",\"dir\":\"%s\","
	    "\"keep_running\":true}", dir);
	id = h_send_request(c, "vm.snapshot", json_tokener_parse(args));
	tap_ok(id >= 0 && h_wait_state(c2, "demo", "paused", H_REPLY_MS) == 0,
	    "demo: paused by the snapshot");
	r = h_callf(c2, H_REPLY_MS, "vm.reset", "{\"name\":\"demo\"}");
	h_check_error(r, "bad_state", "a reset while the snapshot waits");
	json_object_put(r);

	/* The stop's reply comes once the VM ended: read it later. */
	stop = h_send_request(c2, "vm.stop", json_tokener_parse(
	    "{\"name\":\"demo\",\"timeout\":3}"));
	tap_ok(stop >= 0 && h_file_expect(log, REFUSED, 1, H_REPLY_MS) == 0,
	    "the worker refuses to shut the guest down while the snapshot "
	    "waits");
	r = h_wait_reply(c, id, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "the snapshot is written: %s", h_text(r));
	json_object_put(r);
	r = h_wait_reply(c2, stop, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL && h_wait_state(c, "demo", "stopped",
	    H_REPLY_MS) == 0, "the stop's timeout ends the VM: %s", h_text(r));
	json_object_put(r);

	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"demo\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "demo: restored: %s", h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, "demo")) == NULL)
		tap_bail("demo: no console");
	tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_count(con->buf, con->len, "goodbye") == 0,
	    "restored demo: counts on");
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0,
	    "restored demo: stopped");
	h_close(c2);
	h_close(c);
	return h_done();
}
