/*
 * A shared directory (virtio-fs) against Debian's virtiofsd, with the
 * demo guest (the data path needs a guest driver).  A VM defined with
 * vmctl create --fs TAG=DIR starts; the worker started virtiofsd on the
 * directory and the vhost-user handshake completed (vm.info's stats.fs:
 * ready, the server's features, its pid alive); the virtio-fs device
 * is on the board; vmctl info shows the share.  A read-only share
 * starts too.  A server killed under the guest shows as gone in vm.info
 * and vmctl info while the guest runs on.  --fs TAG=socket:PATH with a
 * virtiofsd the test runs does the handshake with that server.  The
 * vfs test guest finds the device, and virtiofsd answers its FUSE_INIT
 * on the request queue through guest memory and the irqfd, again after
 * a reset (a new machine, its RAM a new memfd, inside the sandbox); a
 * snapshot of that VM is refused and the guest runs on; once the
 * server is killed, vmmd answers the guest's next request ENOTCONN.
 * vmmd.conf's virtiofsd names the server the worker starts.  Skips
 * where virtiofsd is not installed.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define VIRTIOFSD	"/usr/lib/qemu/virtiofsd"

/* stats.fs of name, into the caller's reply (put it). */
static struct json_object *
fs_stats(struct h_conn *c, const char *name, struct json_object **r)
{
	return h_info_stats(c, name, "fs", NULL, r);
}

/*
 * Kill virtiofsd: with its namespace sandbox the process the worker
 * started waits for a child in a PID namespace of its own, which
 * serves the share: both, children first.
 */
static void
fs_kill_server(pid_t pid)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;

	while (proc != NULL && (e = readdir(proc)) != NULL) {
		char path[300], buf[512], *rp;
		FILE *f;
		int ppid;

		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(buf, sizeof(buf), f) != NULL &&
		    (rp = strrchr(buf, ')')) != NULL &&
		    sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == pid)
			kill((pid_t)atoi(e->d_name), SIGKILL);
		fclose(f);
	}
	if (proc != NULL)
		closedir(proc);
	kill(pid, SIGKILL);
}

static bool
fs_state_is(struct h_conn *c, const char *name, const char *state)
{
	struct json_object *r = NULL, *fs = fs_stats(c, name, &r);
	bool yes = fs != NULL && h_str(fs, "state") != NULL &&
	    strcmp(h_str(fs, "state"), state) == 0;

	json_object_put(r);
	return yes;
}

static void
test_dir(struct h_daemon *d, struct h_conn *c, const char *dir)
{
	struct json_object *r = NULL, *fs, *r2 = NULL;
	int64_t pid;
	int i;

	tap_ok(h_ctl("create", "f1", "--kernel", h_env("VMMD_GUEST_DEMO"),
	    "--fs", "share=", NULL) != 0, "--fs without a directory is "
	    "refused");
	{
		char spec[512];

		snprintf(spec, sizeof(spec), "share=%s", dir);
		tap_ok(h_ctl("create", "f1", "--kernel",
		    h_env("VMMD_GUEST_DEMO"), "--fs", spec, NULL) == 0,
		    "vmctl create --fs share=DIR");
	}
	tap_ok(h_start(c, "f1") == 0, "the VM starts");
	fs = fs_stats(c, "f1", &r);
	tap_ok(fs != NULL && h_str(fs, "state") != NULL &&
	    strcmp(h_str(fs, "state"), "ready") == 0 &&
	    h_str(fs, "error") == NULL, "the handshake with virtiofsd "
	    "completed: %s", r != NULL ? h_text(r) : "no reply");
	pid = fs != NULL ? h_int(fs, "pid", -1) : -1;
	tap_ok(fs != NULL && h_str(fs, "tag") != NULL &&
	    strcmp(h_str(fs, "tag"), "share") == 0 &&
	    strcmp(h_str(fs, "server"), "virtiofsd") == 0 && pid > 0 &&
	    kill((pid_t)pid, 0) == 0, "its tag, and virtiofsd runs (pid "
	    "%lld)", (long long)pid);
	tap_ok(fs != NULL && h_int(fs, "messages", 0) >= 4 &&
	    h_str(fs, "features") != NULL && strcmp(h_str(fs, "features"),
	    "0x0") != 0, "GET_FEATURES, protocol features and SET_OWNER "
	    "went to it (features %s)", fs != NULL ?
	    h_str(fs, "features") : "?");
	json_object_put(r);
	tap_ok(h_info_stats(c, "f1", "devices", "virtio-fs", &r2) != NULL,
	    "the virtio-fs device is on the board");
	json_object_put(r2);
	tap_ok(h_ctl("info", "f1", NULL) == 0 &&
	    strstr(h_out(), "fs share: virtiofsd") != NULL &&
	    strstr(h_out(), ", ready") != NULL, "vmctl info shows the "
	    "share");

	/* The server goes: the share says so, the guest runs on. */
	if (pid > 0)
		fs_kill_server((pid_t)pid);
	for (i = 0; i < 600 && !fs_state_is(c, "f1", "gone"); i++)
		usleep(50 * 1000);
	tap_ok(fs_state_is(c, "f1", "gone"), "a killed virtiofsd shows as "
	    "gone in vm.info");
	tap_ok(h_ctl("info", "f1", NULL) == 0 &&
	    strstr(h_out(), "the server ended") != NULL,
	    "and vmctl info says the share fails");
	tap_ok(h_vm_pid(c, "f1") > 0, "the guest still runs");
	h_stop(c, "f1", true, -1, H_REPLY_MS);

	{
		char spec[512];

		snprintf(spec, sizeof(spec), "ro=%s,readonly", dir);
		tap_ok(h_ctl("create", "f2", "--kernel",
		    h_env("VMMD_GUEST_DEMO"), "--fs", spec, NULL) == 0 &&
		    h_start(c, "f2") == 0 && fs_state_is(c, "f2", "ready"),
		    "a read-only share starts");
	}
	h_stop(c, "f2", true, -1, H_REPLY_MS);
	(void)d;
}

/* The data path: a guest's FUSE_INIT answered by virtiofsd. */
static void
test_guest(struct h_daemon *d, struct h_conn *c, const char *dir)
{
	struct json_object *r, *fs;
	struct h_console *con;
	const char *log;
	char spec[1024];
	int64_t pid;
	int i;

	snprintf(spec, sizeof(spec), "guesttag=%s", dir);
	tap_ok(h_ctl("create", "f4", "--kernel", h_env("VMMD_GUEST_VFS"),
	    "--fs", spec, NULL) == 0 && h_start(c, "f4") == 0,
	    "a VM of the vfs guest starts");
	log = h_console_log(d, "f4");
	tap_ok(h_file_expect(log, "vfs: slot 14, tag guesttag, 1 request "
	    "queues", 1, H_BOOT_MS) == 0, "the guest finds the device in "
	    "slot 14, its tag and one request queue");
	tap_ok(h_file_expect(log, "vfs: FUSE_INIT answered: 7.", 1,
	    H_BOOT_MS) == 0 && h_file_expect(log, "PASS", 1, H_BOOT_MS) == 0,
	    "virtiofsd answers its FUSE_INIT through guest memory, with an "
	    "interrupt");
	tap_ok(fs_state_is(c, "f4", "running"), "vm.info: the server has the "
	    "queues");

	/* A reset builds a new machine, its RAM a new memfd, inside the
	 * worker's sandbox: the server gets the new table. */
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"f4\"}");
	tap_ok(h_ret(r) != NULL, "vm.reset: %s", h_text(r));
	json_object_put(r);
	tap_ok(h_file_expect(log, "PASS", 2, H_BOOT_MS) == 0 &&
	    fs_state_is(c, "f4", "running"), "after the reset the guest's "
	    "FUSE_INIT is answered again");

	/* The server ends: the guest's next request fails, at once. */
	fs = fs_stats(c, "f4", &r);
	pid = fs != NULL ? h_int(fs, "pid", -1) : -1;
	json_object_put(r);
	if (pid > 0)
		fs_kill_server((pid_t)pid);
	for (i = 0; i < 600 && !fs_state_is(c, "f4", "gone"); i++)
		usleep(50 * 1000);
	tap_ok(fs_state_is(c, "f4", "gone"), "the server killed: gone");
	con = h_console_open(d, "f4");
	tap_ok(con != NULL && h_console_write(con, "x", 1) == 0 &&
	    h_file_expect(log, "vfs: FUSE_GETATTR answered: unique 43 "
	    "error -107", 1, H_BOOT_MS) == 0, "the guest's next request "
	    "is answered ENOTCONN by vmmd");
	if (con != NULL)
		h_console_close(con);

	/* The guest's open files are the server's: no snapshot. */
	snprintf(spec, sizeof(spec), "{\"name\":\"f4\",\"dir\":\"%s\","
	    "\"keep_running\":true}", h_in_dir(d, "snap"));
	mkdir(h_in_dir(d, "snap"), 0700);
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "%s", spec);
	tap_ok(h_err_class(r) != NULL &&
	    strcmp(h_err_class(r), "bad_state") == 0 &&
	    strstr(h_text(r), "shares a directory") != NULL &&
	    h_vm_pid(c, "f4") > 0, "a snapshot is refused, the guest runs "
	    "on: %s", h_text(r));
	json_object_put(r);
	h_stop(c, "f4", true, -1, H_REPLY_MS);
}

static void
test_socket(struct h_daemon *d, struct h_conn *c, const char *dir)
{
	char sock[400], spec[600], src[600];
	pid_t pid;
	int i, st;

	snprintf(sock, sizeof(sock), "%s", h_in_dir(d, "fs.sock"));

	snprintf(src, sizeof(src), "source=%s", dir);
	snprintf(spec, sizeof(spec), "--socket-path=%s", sock);
	pid = fork();
	if (pid == 0) {
		execl(VIRTIOFSD, VIRTIOFSD, spec, "-o", src, "-o",
		    "sandbox=namespace", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 600 && access(sock, F_OK) < 0; i++)
		usleep(50 * 1000);
	snprintf(spec, sizeof(spec), "user=socket:%s", sock);
	tap_ok(h_ctl("create", "f3", "--kernel", h_env("VMMD_GUEST_DEMO"),
	    "--fs", spec, NULL) == 0 && h_start(c, "f3") == 0 &&
	    fs_state_is(c, "f3", "ready"), "--fs TAG=socket:PATH: the "
	    "handshake with the user's server completed");
	h_stop(c, "f3", true, -1, H_REPLY_MS);
	/* The server ends when its connection does. */
	for (i = 0; i < 600 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(50 * 1000);
	if (i == 600) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
}

/*
 * vmmd.conf's virtiofsd: the program the worker starts.  A wrapper that
 * leaves a mark and runs Debian's serves the share; a path where there
 * is none fails the start with a clear error, and nothing runs.
 */
static void
test_conf(struct h_daemon *d, struct h_conn **cp, const char *dir)
{
	char wrapper[300], mark[300], spec[512], text[900];
	struct json_object *r;
	FILE *f;

	snprintf(wrapper, sizeof(wrapper), "%s", h_in_dir(d, "fsd.sh"));
	snprintf(mark, sizeof(mark), "%s", h_in_dir(d, "fsd.ran"));
	snprintf(text, sizeof(text), "#!/bin/sh\necho \"$@\" >%s\n"
	    "exec %s \"$@\"\n", mark, VIRTIOFSD);
	if ((f = fopen(wrapper, "we")) == NULL || fputs(text, f) < 0 ||
	    fclose(f) != 0 || chmod(wrapper, 0755) < 0)
		tap_bail("cannot write %s", wrapper);
	h_daemon_setting(d, "virtiofsd", wrapper);
	h_close(*cp);
	if (h_daemon_restart(d, H_REPLY_MS) != 0 ||
	    (*cp = h_connect(d)) == NULL)
		tap_bail("vmmd does not come back with virtiofsd = %s",
		    wrapper);
	h_ctl_use(d, H_REPLY_MS);
	snprintf(spec, sizeof(spec), "conf=%s", dir);
	tap_ok(h_ctl("create", "f5", "--kernel", h_env("VMMD_GUEST_DEMO"),
	    "--fs", spec, NULL) == 0 && h_start(*cp, "f5") == 0 &&
	    fs_state_is(*cp, "f5", "ready") && access(mark, F_OK) == 0,
	    "vmmd.conf's virtiofsd is the server the worker starts");
	h_stop(*cp, "f5", true, -1, H_REPLY_MS);

	h_daemon_setting(d, "virtiofsd", h_in_dir(d, "no-such-server"));
	h_close(*cp);
	if (h_daemon_restart(d, H_REPLY_MS) != 0 ||
	    (*cp = h_connect(d)) == NULL)
		tap_bail("vmmd does not come back with a missing virtiofsd");
	r = h_callf(*cp, H_REPLY_MS, "vm.start", "{\"name\":\"f5\"}");
	tap_ok(h_err_class(r) != NULL && h_vm_pid(*cp, "f5") <= 0 &&
	    strstr(h_text(r), "could not be run") != NULL,
	    "a virtiofsd that is not there fails the start: %s", h_text(r));
	json_object_put(r);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	char dir[400];

	h_init();
	if (access(VIRTIOFSD, X_OK) < 0)
		tap_skip_all("no %s (Debian's qemu-system-common)", VIRTIOFSD);
	c = h_setup(&d);
	h_ctl_use(d, H_REPLY_MS);
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "share"));
	mkdir(dir, 0755);
	test_dir(d, c, dir);
	test_guest(d, c, dir);
	test_socket(d, c, dir);
	test_conf(d, &c, dir);
	h_close(c);
	return h_done();
}
