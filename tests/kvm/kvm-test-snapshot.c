/*
 * vm.snapshot (vmctl snapshot) of the demo guest, which prints its
 * clock once a second, counted in its memory from the CMOS time it read
 * at boot: a snapshot with keep_running pauses it, writes its RAM and
 * state, and lets it count on; the snapshot's files are there, owned
 * as the directory's user would own them, the manifest names the
 * sections the worker wrote.  A second snapshot into the same directory
 * is refused (one snapshot a directory), and so is a snapshot of a VM
 * that does not run.  The time a snapshot takes is a diagnostic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	char st[64], args[512], *man;
	const char *dir;
	struct stat sb;
	double t0;

	h_init();
	c = h_setup(&d);
	dir = h_in_dir(d, "snap1");
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));

	tap_ok(h_create(c, "demo", NULL) == 0 && h_start(c, "demo") == 0,
	    "demo: created, started");
	if ((con = h_console_open(d, "demo")) == NULL)
		tap_bail("demo: no console");
	tap_ok(h_expect(con, DEMO_BANNER, H_BOOT_MS) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: banner and a tick");

	snprintf(args, sizeof(args), "{\"name\":\"demo\",\"dir\":\"%s\","
	    "\"keep_running\":true}", dir);
	t0 = h_now_ms();
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "%s", args);
	tap_ok(h_ret(r) != NULL && strcmp(h_str(h_ret(r), "state"),
	    "running") == 0, "snapshot with keep_running: %s", h_text(r));
	tap_diag("snapshot of the demo guest: %.1f ms", h_now_ms() - t0);
	json_object_put(r);
	man = h_read_file(h_in_dir(d, "snap1/manifest.json"), NULL);
	tap_ok(man != NULL && strstr(man, "\"vmmd-snapshot\"") != NULL &&
	    strstr(man, "\"vcpu/0\"") != NULL &&
	    strstr(man, "\"devices\"") != NULL &&
	    strstr(man, "\"clock\"") != NULL,
	    "the manifest names the machine's sections");
	free(man);
	if (stat(h_in_dir(d, "snap1/memory"), &sb) < 0)
		memset(&sb, 0, sizeof(sb));
	tap_ok((uint64_t)sb.st_size == 32ull << 20 &&
	    (uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size,
	    "the memory file (32 MiB of RAM) is sparse: %lld bytes, %lld "
	    "allocated",
	    (long long)sb.st_size, (long long)sb.st_blocks * 512);
	tap_ok(access(h_in_dir(d, "snap1/memory.tmp"), F_OK) < 0 &&
	    access(h_in_dir(d, "snap1/state.tmp"), F_OK) < 0,
	    "no temporary file left");
	con->mark = con->len;
	tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: counts on");
	h_state(c, "demo", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "demo: running (%s)", st);

	h_expect_errorf(c, "vm.snapshot", "invalid_argument",
	    "a second snapshot into the same directory", "{\"name\":"
	    "\"demo\",\"dir\":\"%s\",\"keep_running\":true}", dir);
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");
	snprintf(args, sizeof(args), "%s", h_in_dir(d, "snap2"));
	mkdir(args, 0700);
	h_expect_errorf(c, "vm.snapshot", "bad_state", "a stopped VM",
	    "{\"name\":\"demo\",\"dir\":\"%s\"}", args);
	tap_ok(access(h_in_dir(d, "snap2/memory.tmp"), F_OK) < 0,
	    "nothing written for a stopped VM");
	h_close(c);
	return h_done();
}
