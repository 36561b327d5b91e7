/*
 * The supervisor's own duties: definitions survive a daemon restart
 * (and transient ones do not), autostart VMs start with the daemon,
 * a worker that dies is reported as crashed without disturbing
 * another guest, a vmmd that detaches (without -f) leaves the terminal
 * before autostart's workers start, and the directories and console
 * logs vmmd trusts.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* What the guests print (tests/guests/). */
#define DEMO_TICK	" UTC\r"
#define DEMO_CAD	"demo: ctrl-alt-del received"
#define HELLO_LINE	"hello from vmmd test guest"

static bool
same_str(struct json_object *o, const char *key, const char *want)
{
	const char *s = h_str(o, key);

	if (s == NULL || strcmp(s, want) != 0) {
		tap_diag("%s: '%s', wanted '%s'", key, s ? s : "(null)", want);
		return false;
	}
	return true;
}

static bool
same_int(struct json_object *o, const char *key, int64_t want)
{
	int64_t v = h_int(o, key, -1);

	if (v != want) {
		tap_diag("%s: %lld, wanted %lld", key, (long long)v,
		    (long long)want);
		return false;
	}
	return true;
}

static void
test_persistence(struct h_daemon *d, struct h_conn **cp)
{
	const char *hello = h_env("VMMD_GUEST_HELLO");
	struct json_object *r, *vm, *vms;
	struct stat st;
	char path[512];
	double t0;
	pid_t pid;
	int status;
	bool ok;

	tap_ok(h_create(*cp, "keep", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"a=1 b=two\",\"memory_mib\":48,\"vcpus\":2,"
	    "\"on_reboot\":\"stop\"", hello) == 0, "keep: created");
	tap_ok(h_create(*cp, "plain", NULL) == 0,
	    "plain: created (default kernel, vcpus, on_reboot)");
	tap_ok(h_create(*cp, "temp", "\"transient\":true") == 0,
	    "temp: created transient");
	snprintf(path, sizeof(path), "%s/vms/keep.json", d->state);
	tap_ok(stat(path, &st) == 0 && S_ISREG(st.st_mode),
	    "keep: definition file %s", path);
	snprintf(path, sizeof(path), "%s/vms/temp.json", d->state);
	tap_ok(stat(path, &st) == -1, "temp: no definition file");

	/*
	 * Leave the demo running: on SIGTERM the daemon shuts its guests
	 * down (the demo goes on Ctrl-Alt-Del) before it exits.
	 */
	tap_ok(h_start(*cp, "plain") == 0, "plain: started");
	tap_ok(h_file_expect(h_console_log(d, "plain"), DEMO_TICK, 1,
	    H_BOOT_MS) == 0, "plain: demo ticking");
	pid = h_vm_pid(*cp, "plain");

	/* A definition file the daemon cannot use: skipped at start. */
	snprintf(path, sizeof(path), "%s/vms/broken.json", d->state);
	{
		FILE *fp = fopen(path, "we");

		tap_ok(fp != NULL && fputs("{\"name\": \"broken\", \"vcpus\": ",
		    fp) >= 0 && fclose(fp) == 0, "broken.json written");
	}

	h_close(*cp);
	*cp = NULL;
	t0 = h_now_ms();
	status = h_daemon_stop(d, 15000);
	tap_ok(status == 0, "vmmd exits 0 on SIGTERM (status 0x%x)", status);
	tap_diag("SIGTERM to exit with one guest: %.0f ms", h_now_ms() - t0);
	tap_ok(pid > 0 && h_pid_gone(pid, 2000),
	    "plain: its worker is gone with the daemon");
	tap_ok(h_file_expect(h_console_log(d, "plain"), DEMO_CAD, 1, 0) == 0,
	    "plain: the guest was shut down with Ctrl-Alt-Del");
	tap_ok(h_daemon_spawn(d) == 0, "vmmd restarts with the same state "
	    "directory");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");

	r = h_callf(*cp, H_REPLY_MS, "vm.info", "{\"name\":\"broken\"}");
	tap_ok(h_err_class(r) != NULL && strcmp(h_err_class(r),
	    "not_found") == 0, "a broken definition file is skipped (%s)",
	    h_text(r));
	json_object_put(r);

	r = h_callf(*cp, H_REPLY_MS, "vm.info", "{\"name\":\"keep\"}");
	vm = h_ret(r);
	ok = vm != NULL;
	if (!ok)
		tap_diag("vm.info keep: %s", h_text(r));
	tap_ok(ok && same_str(vm, "kernel", hello) &&
	    same_str(vm, "cmdline", "a=1 b=two") &&
	    same_int(vm, "memory_mib", 48) && same_int(vm, "vcpus", 2) &&
	    same_str(vm, "on_reboot", "stop") &&
	    same_str(vm, "state", "defined"),
	    "keep: same settings after the restart, state defined");
	{
		struct json_object *t = NULL;

		tap_ok(ok && json_object_object_get_ex(vm, "transient", &t) &&
		    json_object_is_type(t, json_type_boolean) &&
		    !json_object_get_boolean(t), "keep: transient false");
		tap_ok(ok && !json_object_object_get_ex(vm, "pid", NULL),
		    "keep: no pid");
	}
	json_object_put(r);

	r = h_callf(*cp, H_REPLY_MS, "vm.list", "{}");
	ok = h_ret(r) != NULL &&
	    json_object_object_get_ex(h_ret(r), "vms", &vms) &&
	    json_object_is_type(vms, json_type_array);
	tap_ok(ok && json_object_array_length(vms) == 2 &&
	    same_str(json_object_array_get_idx(vms, 0), "name", "keep") &&
	    same_str(json_object_array_get_idx(vms, 1), "name", "plain"),
	    "vm.list: keep and plain, sorted, no temp (%s)", h_text(r));
	tap_ok(ok && json_object_array_length(vms) == 2 &&
	    same_int(json_object_array_get_idx(vms, 1), "memory_mib", 32) &&
	    same_int(json_object_array_get_idx(vms, 1), "vcpus", 1) &&
	    same_str(json_object_array_get_idx(vms, 1), "on_reboot",
	    "restart") &&
	    same_str(json_object_array_get_idx(vms, 1), "state", "defined"),
	    "plain: defaults kept, state defined again");
	{
		struct json_object *k = NULL;

		tap_ok(ok && json_object_array_length(vms) == 2 &&
		    json_object_object_get_ex(json_object_array_get_idx(vms,
		    1), "kernel", &k) && k == NULL,
		    "plain: kernel still null (the default guest)");
	}
	json_object_put(r);

	/* The restarted daemon can run what it read back. */
	tap_ok(h_start(*cp, "keep") == 0, "keep: starts after the restart");
	tap_ok(h_file_expect(h_console_log(d, "keep"), HELLO_LINE, 1,
	    H_BOOT_MS) == 0, "keep: guest runs");
	tap_ok(h_stop(*cp, "keep", true, -1, H_REPLY_MS) == 0,
	    "keep: stopped");
	tap_ok(h_delete(*cp, "keep") == 0, "keep: deleted");
	snprintf(path, sizeof(path), "%s/vms/keep.json", d->state);
	tap_ok(stat(path, &st) == -1, "keep: definition file removed");
}

/* vm.autostart, and what it means across a daemon restart. */
static void
test_autostart(struct h_daemon *d, struct h_conn **cp)
{
	struct json_object *r;
	char path[512], *file;

	tap_ok(h_create(*cp, "auto", NULL) == 0 &&
	    h_create(*cp, "manual", NULL) == 0 &&
	    h_create(*cp, "fleeting", "\"transient\":true") == 0,
	    "auto, manual and a transient VM created");
	r = h_callf(*cp, H_REPLY_MS, "vm.autostart",
	    "{\"name\":\"auto\",\"autostart\":true}");
	tap_ok(h_ret(r) != NULL && json_object_get_boolean(
	    json_object_object_get(h_ret(r), "autostart")),
	    "vm.autostart on: the reply says so (%s)", h_text(r));
	json_object_put(r);
	snprintf(path, sizeof(path), "%s/vms/auto.json", d->state);
	file = h_read_file(path, NULL);
	tap_ok(file != NULL && strstr(file, "\"autostart\": true") != NULL,
	    "and the definition file at once");
	free(file);
	h_expect_errorf(*cp, "vm.autostart", "invalid_argument",
	    "a transient VM cannot autostart",
	    "{\"name\":\"fleeting\",\"autostart\":true}");
	h_expect_errorf(*cp, "vm.autostart", "invalid_argument",
	    "autostart is required", "{\"name\":\"auto\"}");
	h_expect_errorf(*cp, "vm.autostart", "invalid_argument",
	    "autostart must be a boolean",
	    "{\"name\":\"auto\",\"autostart\":\"yes\"}");
	h_expect_errorf(*cp, "vm.autostart", "not_found", "an unknown VM",
	    "{\"name\":\"nobody\",\"autostart\":true}");

	h_close(*cp);
	tap_ok(h_daemon_restart(d, 15000) == 0, "vmmd restarted");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	tap_ok(h_wait_state(*cp, "auto", "running", H_BOOT_MS) == 0,
	    "auto: running after the restart");
	tap_ok(h_file_expect(h_console_log(d, "auto"), DEMO_TICK, 1,
	    H_BOOT_MS) == 0, "auto: the demo ticks");
	{
		char st[64];

		tap_ok(strcmp(h_state(*cp, "manual", st, sizeof(st)),
		    "defined") == 0, "manual: defined, not started (%s)", st);
	}

	r = h_callf(*cp, H_REPLY_MS, "vm.autostart",
	    "{\"name\":\"auto\",\"autostart\":false}");
	tap_ok(h_ret(r) != NULL, "vm.autostart off while it runs (%s)",
	    h_text(r));
	json_object_put(r);
	h_close(*cp);
	tap_ok(h_daemon_restart(d, 15000) == 0, "vmmd restarted again");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	{
		char st[64];

		tap_ok(strcmp(h_state(*cp, "auto", st, sizeof(st)),
		    "defined") == 0, "auto: no longer started (%s)", st);
	}
	tap_ok(h_delete(*cp, "auto") == 0 && h_delete(*cp, "manual") == 0,
	    "auto and manual deleted");
}

/*
 * A console log beyond console_log_max (vmmd.conf) is moved to NAME.log.1
 * and begun afresh; what a console attached after the guest's end
 * replays still comes from the run.
 */
static void
test_log_rotation(struct h_daemon *d, struct h_conn **cp)
{
	char line[80], path[512];
	struct h_console *con;
	struct stat st, st1;
	int i;

	h_daemon_setting(d, "console_log_max", "256");
	h_close(*cp);
	tap_ok(h_daemon_restart(d, 15000) == 0,
	    "vmmd restarted with console_log_max = 256");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	tap_ok(h_create(*cp, "chatty", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0 && h_start(*cp, "chatty") == 0,
	    "chatty: the echo guest runs");
	con = h_console_open(d, "chatty");
	tap_ok(con != NULL && h_expect(con, "echo: ready", H_BOOT_MS) == 0,
	    "chatty: console attached");
	/*
	 * 720 bytes echoed, sent at once: two rotations.  Slowly: in the
	 * nested test host a byte echoed costs milliseconds.
	 */
	for (i = 0; con != NULL && i < 12; i++) {
		snprintf(line, sizeof(line), "%02d %s\n", i,
		    "the quick brown fox jumps over the lazy dog 0123456789");
		if (h_console_write(con, line, strlen(line)) < 0)
			break;
	}
	tap_ok(i == 12 && h_expect(con, "11 the quick", 3 * H_BOOT_MS) == 0,
	    "chatty: 12 lines echoed");
	if (con != NULL)
		h_console_close(con);
	snprintf(path, sizeof(path), "%s.1", h_console_log(d, "chatty"));
	if (stat(h_console_log(d, "chatty"), &st) < 0)
		st.st_size = -1;
	if (stat(path, &st1) < 0)
		st1.st_size = -1;
	tap_ok(st.st_size >= 0 && st.st_size <= 256 && st1.st_size > 128 &&
	    st1.st_size <= 256, "chatty: log %lld bytes, log.1 %lld bytes, "
	    "both at most 256", (long long)st.st_size, (long long)st1.st_size);
	tap_ok(h_file_expect(h_console_log(d, "chatty"), "11 the quick",
	    1, 0) == 0, "chatty: the last line is in the new log");
	tap_ok(h_stop(*cp, "chatty", true, -1, H_REPLY_MS) == 0 &&
	    h_delete(*cp, "chatty") == 0, "chatty: stopped and deleted");
}

/* A transient VM is deleted when it stops. */
static void
test_transient(struct h_conn *c)
{
	char st[64];

	tap_ok(h_create(c, "once", "\"kernel\":\"%s\",\"transient\":true",
	    h_env("VMMD_GUEST_HELLO")) == 0, "once: created transient");
	tap_ok(h_start(c, "once") == 0, "once: started");
	h_state(c, "once", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "once: running (%s)", st);
	tap_ok(h_stop(c, "once", true, -1, H_REPLY_MS) == 0, "once: stopped");
	h_state(c, "once", st, sizeof(st));
	tap_ok(strcmp(st, "(not_found)") == 0, "once: deleted when it stopped "
	    "(%s)", st);
}

static void
test_crash(struct h_daemon *d, struct h_conn *c)
{
	struct h_conn *ev;
	struct h_console *con;
	struct json_object *r, *e, *data;
	pid_t pid;
	char st[64];

	if ((ev = h_connect(d)) == NULL)
		tap_bail("cannot connect");
	r = h_call(ev, "events.subscribe", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "events.subscribe (%s)", h_text(r));
	json_object_put(r);

	tap_ok(h_create(c, "victim", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "victim: created");
	tap_ok(h_create(c, "bystander", NULL) == 0, "bystander: created");
	tap_ok(h_start(c, "victim") == 0, "victim: started");
	tap_ok(h_start(c, "bystander") == 0, "bystander: started");
	h_file_expect(h_console_log(d, "victim"), HELLO_LINE, 1, H_BOOT_MS);
	con = h_console_open(d, "bystander");
	tap_ok(con != NULL && h_expect(con, DEMO_TICK, H_BOOT_MS) == 0,
	    "bystander: ticking");

	pid = h_vm_pid(c, "victim");
	tap_ok(pid > 0 && pid != h_vm_pid(c, "bystander"),
	    "victim: has a worker pid of its own (%d)", (int)pid);
	if (pid > 0)
		kill(pid, SIGKILL);
	e = h_wait_event(ev, "victim", "crashed", 5000);
	tap_ok(e != NULL, "victim: vm.state crashed event (%s)", h_text(e));
	tap_ok(e != NULL && json_object_object_get_ex(e, "data", &data) &&
	    h_str(data, "reason") != NULL && *h_str(data, "reason") != '\0',
	    "victim: the event gives a reason");
	json_object_put(e);
	h_state(c, "victim", st, sizeof(st));
	tap_ok(strcmp(st, "crashed") == 0, "victim: vm.info says crashed (%s)",
	    st);
	tap_ok(h_vm_pid(c, "victim") == -1, "victim: no pid once crashed");

	h_state(c, "bystander", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "bystander: still running (%s)",
	    st);
	if (con != NULL) {
		con->mark = con->len;
		tap_ok(h_expect(con, DEMO_TICK, 3000) == 0 &&
		    h_expect(con, DEMO_TICK, 3000) == 0,
		    "bystander: console still ticking");
	} else {
		tap_ok(0, "bystander: console still ticking");
	}
	h_console_close(con);

	/* A crashed VM can be started again, and deleted. */
	tap_ok(h_start(c, "victim") == 0, "victim: restarts after the crash");
	tap_ok(h_file_expect(h_console_log(d, "victim"), HELLO_LINE, 2,
	    H_BOOT_MS) == 0, "victim: boots again");
	pid = h_vm_pid(c, "victim");
	if (pid > 0)
		kill(pid, SIGKILL);
	tap_ok(pid > 0 && h_wait_state(c, "victim", "crashed", 5000) == 0,
	    "victim: crashed again");
	tap_ok(h_delete(c, "victim") == 0, "victim: a crashed VM can be "
	    "deleted");
	tap_ok(h_stop(c, "bystander", true, -1, H_REPLY_MS) == 0,
	    "bystander: force stop");
	h_close(ev);
}

/*
 * The daemon killed outright: its worker lives on and the next daemon,
 * started over the stale control socket, adopts it (tests/kvm/
 * test-adopt.c goes further).
 */
static void
test_daemon_killed(struct h_daemon *d, struct h_conn **cp)
{
	struct json_object *r;
	pid_t pid;

	tap_ok(h_create(*cp, "orphan", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "orphan: created");
	tap_ok(h_start(*cp, "orphan") == 0, "orphan: started");
	pid = h_vm_pid(*cp, "orphan");
	h_close(*cp);
	*cp = NULL;
	h_daemon_kill(d, SIGKILL);
	h_sleep_ms(500);
	tap_ok(h_pid_alive(pid), "orphan: the worker outlives its killed "
	    "daemon");
	tap_ok(h_daemon_spawn(d) == 0, "vmmd starts again over the stale "
	    "socket of a killed daemon");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	r = h_callf(*cp, H_REPLY_MS, "vm.info", "{\"name\":\"orphan\"}");
	tap_ok(strcmp(h_str(h_ret(r), "state") ?: "", "running") == 0 &&
	    h_int(h_ret(r), "pid", -1) == pid,
	    "orphan: running again, same worker (%s)", h_text(r));
	json_object_put(r);
	tap_ok(h_stop(*cp, "orphan", true, -1, H_REPLY_MS) == 0 &&
	    h_pid_gone(pid, 3000), "orphan: the adopted worker stops");
	tap_ok(h_start(*cp, "orphan") == 0 &&
	    h_stop(*cp, "orphan", true, -1, H_REPLY_MS) == 0,
	    "orphan: starts and stops again");
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)remove(path);
	return 0;
}

/*
 * vmmd without -f, its standard streams a pipe as a terminal would be,
 * with an autostart VM: once it is ready and detached, nobody holds
 * the pipe any more (EOF), autostart's worker included.
 */
static void
test_detached(void)
{
	static struct h_daemon b;
	struct json_object *r;
	struct h_conn *c;
	char path[512], text[1024], buf[256];
	struct pollfd pfd;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int p[2], fd, status, got = -1;
	pid_t pid, daemon_pid = -1;
	double deadline;

	snprintf(b.dir, sizeof(b.dir), "/tmp/vmmd-kvm-bg-XXXXXX");
	if (mkdtemp(b.dir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(b.sock, sizeof(b.sock), "%s/control.sock", b.dir);
	snprintf(b.state, sizeof(b.state), "%s/state", b.dir);
	snprintf(path, sizeof(path), "%s/vms", b.state);
	if (mkdir(b.state, 0750) < 0 || mkdir(path, 0750) < 0)
		tap_bail("%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/vms/bg.json", b.state);
	snprintf(text, sizeof(text), "{\"name\":\"bg\",\"kernel\":\"%s\","
	    "\"memory_mib\":32,\"autostart\":true,\"owner\":{\"uid\":0,"
	    "\"gid\":0}}\n", h_env("VMMD_GUEST_HELLO"));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) < 0 || write(fd, text, strlen(text)) !=
	    (ssize_t)strlen(text) || close(fd) < 0)
		tap_bail("%s: %s", path, strerror(errno));
	if (pipe2(p, O_CLOEXEC) < 0)
		tap_bail("pipe: %s", strerror(errno));
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(p[1], STDIN_FILENO);
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execl(h_env("VMMD_BIN"), "vmmd", "-c", "/dev/null", "-s",
		    b.sock, "-d", b.state, "-g", h_env("VMMD_GUEST_DEMO"),
		    (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "vmmd without -f: detached, its parent exited 0 (0x%x)", status);
	/* The pipe ends when the last holder lets go of it. */
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	deadline = h_now_ms() + 10000;
	while (h_now_ms() < deadline && poll(&pfd, 1, 100) >= 0)
		if ((pfd.revents & (POLLIN | POLLHUP)) &&
		    (got = (int)read(p[0], buf, sizeof(buf))) <= 0)
			break;
	close(p[0]);
	if ((c = h_connect(&b)) == NULL)
		tap_bail("no detached vmmd at %s", b.sock);
	if (getsockopt(h_conn_fd(c), SOL_SOCKET, SO_PEERCRED, &cred,
	    &len) == 0)
		daemon_pid = cred.pid;
	tap_ok(h_wait_state(c, "bg", "running", 20000) == 0,
	    "its autostart VM runs");
	tap_ok(got == 0, "and nothing, its worker included, holds the "
	    "terminal it was started from (%s)", got == 0 ? "EOF" :
	    "still open after 10 s");
	r = h_callf(c, H_REPLY_MS, "vm.stop",
	    "{\"name\":\"bg\",\"force\":true}");
	json_object_put(r);
	h_close(c);
	if (daemon_pid > 0)
		kill(daemon_pid, SIGTERM);
	tap_ok(daemon_pid > 0 && h_pid_gone(daemon_pid, 20000),
	    "the detached vmmd stops on SIGTERM");
	nftw(b.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A state directory others may write is refused at start, with a message
 * that names it, its owner and its mode; and so is one inside a
 * directory others may write.  Put right, vmmd starts again.
 */
static void
test_unsafe_dirs(struct h_daemon *d, struct h_conn **cp)
{
	char needle[512];
	int st;

	h_close(*cp);
	*cp = NULL;
	st = h_daemon_stop(d, 15000);
	tap_ok(st == 0, "vmmd stopped (status 0x%x)", st);

	if (chmod(d->state, 0757) < 0)
		tap_bail("chmod %s: %s", d->state, strerror(errno));
	st = h_daemon_spawn(d);
	tap_ok(st != 0 && WIFEXITED(d->status) && WEXITSTATUS(d->status) == 1,
	    "a state directory others may write (0757): vmmd does not start "
	    "(status 0x%x)", d->status);
	if (st == 0)
		h_daemon_stop(d, 15000);	/* not refused: stopped */
	/* The owner by name where the user database has it (not in the
	 * nested test host): "root (uid 0)" or "uid 0". */
	snprintf(needle, sizeof(needle), "%s: refused: owned by ", d->state);
	tap_ok(h_file_expect(d->log, needle, 1, 0) == 0 &&
	    (geteuid() != 0 || h_file_expect(d->log, "uid 0), mode 0757",
	    1, 0) == 0 || h_file_expect(d->log, "owned by uid 0, mode 0757",
	    1, 0) == 0) && h_file_expect(d->log, "mode 0757", 1, 0) == 0,
	    "the message names the directory, its owner and its mode");

	if (chmod(d->state, 0750) < 0 || chmod(d->dir, 0777) < 0)
		tap_bail("chmod: %s", strerror(errno));
	st = h_daemon_spawn(d);
	tap_ok(st != 0 && WIFEXITED(d->status) && WEXITSTATUS(d->status) == 1,
	    "a 0750 state directory in a 0777 one: vmmd does not start "
	    "(status 0x%x)", d->status);
	if (st == 0)
		h_daemon_stop(d, 15000);
	snprintf(needle, sizeof(needle), "%s: refused: %s on the way to it",
	    d->state, d->dir);
	tap_ok(h_file_expect(d->log, needle, 1, 0) == 0,
	    "the message names the directory on the way");

	if (chmod(d->dir, 0700) < 0)
		tap_bail("chmod %s: %s", d->dir, strerror(errno));
	tap_ok(h_daemon_spawn(d) == 0, "put right: vmmd starts again");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
}

/* A file of the test's, with text, and whether it still holds just that. */
static void
put_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "we");

	if (fp == NULL || fputs(text, fp) < 0 || fclose(fp) != 0)
		tap_bail("%s: %s", path, strerror(errno));
}

static bool
holds_text(const char *path, const char *text)
{
	char *got = h_read_file(path, NULL);
	bool same = got != NULL && strcmp(got, text) == 0;

	if (!same)
		tap_diag("%s now holds '%s'", path, h_flat(got ?: "(none)"));
	free(got);
	return same;
}

/*
 * A console log (or its .1) that is a symbolic link is not followed:
 * the start is refused, saying so, and the link's target is not
 * written.  Without the link the VM starts.
 */
static void
test_console_symlink(struct h_daemon *d, struct h_conn *c)
{
	static const char untouched[] = "untouched\n";
	const char *names[] = { "the log", "its .1" };
	char target[256], link[512];
	struct json_object *r;
	int i;

	snprintf(target, sizeof(target), "%s/target", d->dir);
	put_text(target, untouched);
	tap_ok(h_create(c, "linked", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "linked: created");
	for (i = 0; i < 2; i++) {
		snprintf(link, sizeof(link), "%s%s", h_console_log(d,
		    "linked"), i == 0 ? "" : ".1");
		/* What a start that followed nothing may have made. */
		unlink(link);
		if (symlink(target, link) < 0)
			tap_bail("symlink %s: %s", link, strerror(errno));
		r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"linked\"}");
		tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r) ?: "",
		    "symbolic link") != NULL, "linked: %s a symbolic link: "
		    "the start is refused (%s)", names[i], h_text(r));
		/* Had it started, the guest's line would come to target. */
		if (h_err_class(r) == NULL)
			h_file_expect(target, HELLO_LINE, 1, H_BOOT_MS);
		json_object_put(r);
		tap_ok(holds_text(target, untouched), "linked: %s a symbolic "
		    "link: its target is not written", names[i]);
		h_stop(c, "linked", true, -1, H_REPLY_MS);
		if (unlink(link) < 0)
			tap_bail("unlink %s: %s", link, strerror(errno));
	}
	tap_ok(h_start(c, "linked") == 0 && h_file_expect(h_console_log(d,
	    "linked"), HELLO_LINE, 1, H_BOOT_MS) == 0,
	    "linked: without the links it starts and logs");
	h_stop(c, "linked", true, -1, H_REPLY_MS);
	tap_ok(h_delete(c, "linked") == 0, "linked: deleted");
	unlink(target);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_persistence(d, &c);
	test_autostart(d, &c);
	test_transient(c);
	test_crash(d, c);
	test_daemon_killed(d, &c);
	test_console_symlink(d, c);
	test_unsafe_dirs(d, &c);
	/* Last: the daemon keeps its tiny console_log_max from here on. */
	test_log_rotation(d, &c);
	test_detached();
	h_close(c);
	tap_ok(h_daemon_alive(d), "vmmd still runs");
	return h_done();
}
