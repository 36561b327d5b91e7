/*
 * A worker that dies in the middle of a snapshot takes only its guest
 * with it.  The test build's hook (VMMD_TEST_SNAPSHOT_LATE, test-hook.h)
 * holds the worker in its save for a minute, long enough to kill it
 * there: vmmd must answer the snapshot with an error, say the VM
 * crashed, leave no half-written snapshot, go on answering, and start
 * the VM again.  (vmmd once freed the request's state before answering
 * from it, and died of the worker's death.)
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "state-rounds.h"

#define LATE	"test hook: the snapshot starts"

int
main(void)
{
	struct json_object *args, *r;
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	char dir[600], st[64];
	int64_t id;
	pid_t pid;

	state_rounds_need_hooks("holding a snapshot in the worker");
	setenv("VMMD_TEST_SNAPSHOT_LATE", "60000", 1);
	h_init();
	c = h_setup(&d);
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	if (mkdir(dir, 0700) < 0)
		tap_bail("%s", dir);
	tap_ok(h_create(c, "w", NULL) == 0 && h_start(c, "w") == 0,
	    "w: created, started");
	pid = h_vm_pid(c, "w");
	tap_ok(pid > 0, "w: its worker (%d)", (int)pid);

	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string("w"));
	json_object_object_add(args, "dir", json_object_new_string(dir));
	id = h_send_request(c, "vm.snapshot", args);
	tap_ok(id >= 0 && h_file_expect(d->log, LATE, 1, H_REPLY_MS) == 0,
	    "w: its worker is in the snapshot");
	if (pid > 0)
		kill(pid, SIGKILL);
	r = h_wait_reply(c, id, H_REPLY_MS);
	tap_ok(h_err_class(r) != NULL && h_err_desc(r) != NULL,
	    "the snapshot fails with a reason: %s", h_text(r));
	json_object_put(r);
	r = h_call(c, "vm.list", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "vmmd answers on: %s", h_text(r));
	json_object_put(r);
	tap_ok(h_daemon_alive(d), "vmmd still runs");
	h_state(c, "w", st, sizeof(st));
	tap_ok(strcmp(st, "crashed") == 0, "w: crashed (%s)", st);
	tap_ok(h_dir_count(dir) == 0, "nothing left in the snapshot's "
	    "directory (%d entries)", h_dir_count(dir));

	tap_ok(h_start(c, "w") == 0, "w: starts again");
	con = h_console_open(d, "w");
	tap_ok(con != NULL && h_expect(con, "demo: ", H_BOOT_MS) == 0,
	    "w: runs");
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	h_close(c);
	return h_done();
}
