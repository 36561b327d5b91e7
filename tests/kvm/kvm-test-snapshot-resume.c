/*
 * A snapshot holds the guest still until it is written, and a restored
 * guest's RAM stays out of core files as a started one's does.
 *
 * The demo guest is snapshotted (keep_running) while the test build's
 * hook (test-hook.h, VMMD_TEST_SNAPSHOT_BUSY=resume) makes the devices
 * answer busy, as a disk request in flight does, until a vm.resume has
 * been asked: the snapshot waits in the worker's loop, the VM reads
 * paused, and the vm.resume sent then is refused (the guest must not run
 * while its state is half saved).  The snapshot then completes and the
 * guest counts on, running as keep_running asked.
 *
 * The VM is stopped and restored from that snapshot: the worker's RAM,
 * now a private mapping of the snapshot's memory file, carries
 * MADV_DONTDUMP ("dd" in its VmFlags in /proc/PID/smaps), as the
 * anonymous RAM of a start does.
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


/*
 * How many of pid's mappings of file there are (*maps) and how many of
 * them have flag among their VmFlags (*flagged); false when smaps cannot
 * be read.
 */
static bool
smaps_flag(pid_t pid, const char *file, const char *flag, int *maps,
    int *flagged)
{
	char path[64], line[PATH_MAX + 128], *tok, *save;
	size_t flen = strlen(file);
	bool in = false;
	FILE *f;

	*maps = *flagged = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if ((f = fopen(path, "re")) == NULL) {
		tap_diag("%s: %s", path, strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		size_t len = strcspn(line, "\n");

		line[len] = '\0';
		/* A mapping's first line, "START-END PERMS ... PATH", starts
		 * with a hex digit; its fields ("Rss:", "VmFlags:") do not. */
		if (strchr("0123456789abcdef", line[0]) != NULL &&
		    line[0] != '\0') {
			in = len > flen && strcmp(line + len - flen, file) == 0 &&
			    line[len - flen - 1] == ' ';
			*maps += in;
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			for (tok = strtok_r(line + 8, " ", &save); tok != NULL;
			    tok = strtok_r(NULL, " ", &save))
				if (strcmp(tok, flag) == 0) {
					(*flagged)++;
					break;
				}
			in = false;
		}
	}
	fclose(f);
	return true;
}

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c, *c2;
	struct json_object *r;
	char dir[PATH_MAX], memory[PATH_MAX], args[PATH_MAX + 64], st[64];
	int64_t id;
	int maps = 0, flagged = 0;
	bool read;
	pid_t pid;

	state_rounds_need_hooks("holding a snapshot busy");
	setenv("VMMD_TEST_SNAPSHOT_BUSY", "resume", 1);
	h_init();
	c = h_setup(&d);
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	if ((c2 = h_connect(d)) == NULL)
		tap_bail("no second connection");

	con = state_rounds_demo(d, c, "demo", NULL);

	/* The snapshot waits on the busy devices until a resume comes. */
	snprintf(args, sizeof(args), "{\"name\":\"demo\",\"dir\":\"%s\","
	    "\"keep_running\":true}", dir);
	id = h_send_request(c, "vm.snapshot", json_tokener_parse(args));
	tap_ok(id >= 0 && h_wait_state(c2, "demo", "paused", H_REPLY_MS) == 0,
	    "demo: paused by the snapshot");
	r = h_callf(c2, H_REPLY_MS, "vm.resume", "{\"name\":\"demo\"}");
	h_check_error(r, "bad_state", "a resume while the snapshot waits");
	json_object_put(r);
	r = h_wait_reply(c, id, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL && strcmp(h_str(h_ret(r), "state"),
	    "running") == 0, "the snapshot is written, the guest runs: %s",
	    h_text(r));
	json_object_put(r);
	con->mark = con->len;
	tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: counts on");
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");

	/* Restored: its RAM is the memory file's, and stays out of cores. */
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"demo\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "demo: restored: %s", h_text(r));
	json_object_put(r);
	if (realpath(h_in_dir(d, "snap/memory"), memory) == NULL)
		tap_bail("snap/memory: %s", strerror(errno));
	pid = h_vm_pid(c, "demo");
	read = pid > 0 && smaps_flag(pid, memory, "dd", &maps, &flagged);
	tap_ok(read && maps > 0 && flagged == maps,
	    "restored RAM is not dumped: %d of %d mappings of %s have "
	    "MADV_DONTDUMP", flagged, maps, memory);
	h_state(c, "demo", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "restored demo: running (%s)", st);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0,
	    "restored demo: stopped");
	h_close(c2);
	h_close(c);
	return h_done();
}
