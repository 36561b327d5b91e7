/*
 * A guest runs the worker program it started with, also once that
 * program is replaced (a package upgrade renames a new vmmd-worker into
 * place), and vmctl info says so until the guest's next start.  vmmd
 * runs from a directory of the test's own, with a copy of vmmd-worker
 * beside it (vmmd starts the worker beside its own binary), so that the
 * copy can be replaced under a running guest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define VMCTL_MS	10000
#define REPLACED	"\nworker: replaced since it started"

/* Copies src to dst (mode 0755) through a temporary name: a new inode. */
static int
copy_in(const char *src, const char *dst)
{
	char tmp[512], *text;
	size_t len;
	FILE *f;
	int ok;

	if ((text = h_read_file(src, &len)) == NULL)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.new", dst);
	f = fopen(tmp, "we");
	ok = f != NULL && fwrite(text, 1, len, f) == len;
	if (f != NULL && fclose(f) != 0)
		ok = 0;
	free(text);
	if (!ok || chmod(tmp, 0755) < 0 || rename(tmp, dst) < 0) {
		tap_diag("%s: %s", dst, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int
main(void)
{
	char dir[] = "/tmp/vmmd-replaced-XXXXXX", vmmd[512], worker[512];
	struct h_daemon *d;
	struct h_conn *c;
	const char *line;
	pid_t pid;
	int rc;

	h_init();
	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(vmmd, sizeof(vmmd), "%s/vmmd", dir);
	snprintf(worker, sizeof(worker), "%s/vmmd-worker", dir);
	if (copy_in(h_env("VMMD_BIN"), vmmd) < 0 ||
	    copy_in(h_env("VMMD_WORKER_BIN"), worker) < 0)
		tap_bail("cannot copy vmmd and vmmd-worker to %s", dir);
	setenv("VMMD_BIN", vmmd, 1);
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);

	tap_ok(h_create(c, "r", NULL) == 0 && h_start(c, "r") == 0 &&
	    h_wait_state(c, "r", "running", H_REPLY_MS) == 0, "r: running");
	pid = h_vm_pid(c, "r");
	tap_ok(h_ctl("info", "r", NULL) == 0 &&
	    strstr(h_out(), "\nworker:") == NULL,
	    "vmctl info: no worker line while the program is the one it runs");
	tap_ok(copy_in(h_env("VMMD_WORKER_BIN"), worker) == 0,
	    "vmmd-worker replaced by a new file under the running guest");
	rc = h_ctl("info", "r", NULL);
	line = strstr(h_out(), "\nworker:");
	tap_ok(rc == 0 && strstr(h_out(), REPLACED) != NULL &&
	    h_vm_pid(c, "r") == pid, "vmctl info, the same worker %d: %.*s",
	    (int)pid, line != NULL ? (int)strcspn(line + 1, "\n") : 14,
	    line != NULL ? line + 1 : "no worker line");
	tap_ok(h_stop(c, "r", true, 10, H_REPLY_MS) == 0 &&
	    h_wait_state(c, "r", "stopped", H_REPLY_MS) == 0 &&
	    h_start(c, "r") == 0 &&
	    h_wait_state(c, "r", "running", H_REPLY_MS) == 0 &&
	    h_ctl("info", "r", NULL) == 0 &&
	    strstr(h_out(), "\nworker:") == NULL,
	    "after its next start, on the new program, no worker line");
	h_stop(c, "r", true, 10, H_REPLY_MS);

	h_close(c);
	h_daemon_stop(d, H_REPLY_MS);
	unlink(vmmd);
	unlink(worker);
	rmdir(dir);
	return h_done();
}
