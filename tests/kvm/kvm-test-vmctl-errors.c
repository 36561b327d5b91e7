/*
 * vmctl's error vocabulary end to end, against a private vmmd: the exit
 * status of each error class whoever finds it, -j errors as one JSON
 * object on stdout, the daemon's words turned into the options', start
 * and stop that are already done, several names, state, list --state,
 * events, vmctl's own failures (1), another user's VM (7), a guest
 * that does not start in time (8), a daemon limit (9), and a host whose
 * /dev/kvm is unusable (kvm_unavailable).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define VMCTL_MS	10000

static struct h_daemon *d;
/*
 * The last vmctl's stdout is one JSON error line and nothing else, of
 * class cls and exit status rc, stderr empty; desc holds want.
 */
static void
json_error(int r, int rc, const char *cls, const char *want,
    const char *what)
{
	struct json_object *o, *e = NULL, *v;
	const char *o_cls = "", *o_desc = "";
	int64_t o_exit = -1;
	size_t len = strlen(h_out());

	o = json_tokener_parse(h_out());
	if (o != NULL && json_object_object_get_ex(o, "error", &e)) {
		if (json_object_object_get_ex(e, "class", &v))
			o_cls = json_object_get_string(v);
		if (json_object_object_get_ex(e, "desc", &v))
			o_desc = json_object_get_string(v);
		if (json_object_object_get_ex(e, "exit", &v))
			o_exit = json_object_get_int64(v);
	}
	tap_ok(r == rc && e != NULL && strcmp(o_cls, cls) == 0 &&
	    o_exit == rc && strstr(o_desc, want) != NULL && *h_err() == '\0' &&
	    len > 0 && strchr(h_out(), '\n') == h_out() + len - 1,
	    "-j %s: exit %d, one JSON line of class %s (%s | %s)", what, r,
	    cls, h_flat(h_out()), h_flat(h_err()));
	json_object_put(o);
}

/* The last vmctl exited rc with want in its one line of stderr. */
static void
text_error(int r, int rc, const char *want, const char *what)
{
	tap_ok(r == rc && strstr(h_err(), want) != NULL &&
	    strchr(h_err(), '\n') == h_err() + strlen(h_err()) - 1 &&
	    *h_out() == '\0', "%s: exit %d, \"%s\" (%s)", what, r, want,
	    h_flat(h_err()));
}

static void
test_classes(const char *hello)
{
	int r;

	tap_ok(h_ctl("create", "web", "--kernel", hello, "--memory", "32M",
	    NULL) == 0, "create web");

	/* usage and invalid_argument: 2, from vmctl or from the daemon. */
	text_error(h_ctl("list", "--bogus", NULL), 2, "unknown option "
	    "'--bogus'", "usage");
	json_error(h_ctl("list", "--bogus", "-j", NULL), 2, "usage",
	    "unknown option", "usage, -j after the error");
	text_error(h_ctl("create", "x", "--memory", "0", NULL), 2,
	    "--memory 0: at least 16M", "--memory 0");
	text_error(h_ctl("create", "x", "--memory", "1T", NULL), 2,
	    "--memory 1T: not a size from 16M to 256G", "--memory 1T");
	json_error(h_ctl("-j", "create", "x", "--memory", "15", NULL), 2,
	    "invalid_argument", "--memory 15: at least 16M",
	    "vmctl's own range check");
	text_error(h_ctl("create", "x", "--kernel", hello, "--vnc-web", NULL),
	    2, "create x: invalid_argument: --vnc-web needs --vnc",
	    "the daemon's refusal in the options' words");
	json_error(h_ctl("-j", "create", "x", "--kernel", hello, "--vnc-web",
	    NULL), 2, "invalid_argument", "--vnc-web needs --vnc",
	    "the daemon's invalid_argument");
	r = h_ctl("create", "a123456789012345678901234567890123456789"
	    "01234567890123456789012345678", "--kernel", hello, NULL);
	text_error(r, 2, "NAME: 1 to 64 letters, digits", "a long name");
	tap_ok(strchr(h_err(), '{') == NULL && strchr(h_err(), '[') == NULL,
	    "a long name: no regular expression (%s)", h_flat(h_err()));

	/* The daemon's classes. */
	text_error(h_ctl("info", "ghost", NULL), 4, "not_found",
	    "not_found");
	json_error(h_ctl("-j", "info", "ghost", NULL), 4, "not_found",
	    "ghost", "not_found");
	text_error(h_ctl("create", "web", "--kernel", hello, NULL), 5,
	    "exists", "exists");
	json_error(h_ctl("-j", "create", "web", "--kernel", hello, NULL), 5,
	    "exists", "web", "exists");
	text_error(h_ctl("pause", "web", NULL), 6, "bad_state: VM 'web' is "
	    "not running (defined)", "bad_state");
	json_error(h_ctl("pause", "web", "--json", NULL), 6, "bad_state",
	    "is not running", "bad_state");

	/* No daemon: connection_failed. */
	{
		char *argv[] = { (char *)h_env("VMCTL_BIN"), "-j", "-s",
		    "/nonexistent/vmmd.sock", "list", NULL };

		h_proc_free(h_ctl_last());
		r = h_run(h_ctl_last(), NULL, VMCTL_MS, argv);
		json_error(r, 3, "connection_failed", "cannot connect",
		    "no daemon");
	}
}

static void
test_state(struct h_conn *c)
{
	int r;

	r = h_ctl("state", "web", NULL);
	tap_ok(r == 0 && strcmp(h_out(), "defined\n") == 0,
	    "state of a defined VM: 'defined', exit 0 (%s)", h_flat(h_out()));
	r = h_ctl("stop", "web", NULL);
	tap_ok(r == 0 && strstr(h_err(), "stop web: not running (defined)") !=
	    NULL && *h_out() == '\0', "stop of a defined VM: exit 0, a note "
	    "(%s)", h_flat(h_err()));
	tap_ok(h_ctl("start", "web", NULL) == 0, "start web");
	r = h_ctl("start", "web", NULL);
	tap_ok(r == 0 && strstr(h_err(), "start web: already running") != NULL,
	    "start of a running VM: exit 0, a note (%s)", h_flat(h_err()));
	r = h_ctl("state", "web", NULL);
	tap_ok(r == 0 && strcmp(h_out(), "running\n") == 0,
	    "state of a running VM: 'running' (%s)", h_flat(h_out()));
	r = h_ctl("-j", "state", "web", NULL);
	tap_ok(r == 0 && strstr(h_out(), "\"state\":\"running\"") != NULL,
	    "state -j (%s)", h_flat(h_out()));
	text_error(h_ctl("state", "ghost", NULL), 4, "not_found",
	    "state of no VM");

	tap_ok(h_ctl("create", "db", "--kernel", h_env("VMMD_GUEST_HELLO"),
	    "--memory", "32M", NULL) == 0, "create db");
	r = h_ctl("list", "--state", "running", NULL);
	tap_ok(r == 0 && strstr(h_out(), "web ") != NULL &&
	    strstr(h_out(), "db ") == NULL, "list --state running: web only "
	    "(%s)", h_flat(h_out()));
	r = h_ctl("-j", "list", "--state", "defined", NULL);
	tap_ok(r == 0 && strstr(h_out(), "\"db\"") != NULL &&
	    strstr(h_out(), "\"web\"") == NULL, "list -j --state defined: db "
	    "only (%s)", h_flat(h_out()));
	text_error(h_ctl("list", "--state", "asleep", NULL), 2,
	    "--state asleep: one of", "list --state asleep");

	/* Several names, each done, each failure named. */
	r = h_ctl("start", "web", "db", NULL);
	tap_ok(r == 0 && h_wait_state(c, "db", "running", H_BOOT_MS) == 0,
	    "start web db: both run (%s)", h_flat(h_err()));
	r = h_ctl("stop", "--force", "web", "ghost", "db", NULL);
	tap_ok(r == 4 && strstr(h_err(), "stop ghost: not_found") != NULL,
	    "stop web ghost db: exit 4, ghost named (%s)", h_flat(h_err()));
	tap_ok(h_wait_state(c, "web", "stopped", H_REPLY_MS) == 0 &&
	    h_wait_state(c, "db", "stopped", H_REPLY_MS) == 0,
	    "stop web ghost db: web and db stopped all the same");
	r = h_ctl("-j", "delete", "web", "ghost", NULL);
	tap_ok(r == 4 && strstr(h_out(), "\"vm\":\"ghost\"") != NULL,
	    "delete -j web ghost: the error names ghost (%s)", h_flat(h_out()));
	r = h_ctl("delete", "db", NULL);
	tap_ok(r == 0, "delete db");
	r = h_ctl("list", NULL);
	tap_ok(r == 0 && strstr(h_out(), "web") == NULL && strstr(h_out(), "db")
	    == NULL, "delete web, then db: both gone (%s)", h_flat(h_out()));
}

/*
 * vmctl events as it runs: events of "ev" only, with -j; synchronised
 * on a VM created and deleted until its event shows, so that nothing
 * depends on how soon the subscription is in place.
 */
static void
test_events(struct h_conn *c, const char *hello)
{
	char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", d->sock, "-j",
	    "events", "ev", NULL };
	char *argv2[] = { (char *)h_env("VMCTL_BIN"), "-s", d->sock,
	    "events", NULL };
	struct h_proc ev = { 0 }, all = { 0 };
	int i, r;

	if (h_spawn(&ev, argv) < 0 || h_spawn(&all, argv2) < 0)
		tap_bail("cannot run vmctl events");
	for (i = 0; i < 100; i++) {
		h_create(c, "ev", "\"kernel\": \"%s\", \"memory_mib\": 32",
		    hello);
		h_delete(c, "ev");
		if (h_proc_expect(&ev, "vm.deleted", 200) == 0 &&
		    h_proc_expect(&all, "vm.deleted", 200) == 0)
			break;
	}
	tap_ok(i < 100, "events: subscribed");
	h_create(c, "other", "\"kernel\": \"%s\", \"memory_mib\": 32",
	    hello);
	tap_ok(h_ctl("create", "ev", "--kernel", hello, "--memory", "32M",
	    NULL) == 0 && h_ctl("start", "ev", NULL) == 0, "start ev");
	r = h_proc_expect(&ev, "\"state\":\"running\"", H_BOOT_MS);
	tap_ok(r == 0 && strstr(ev.obuf, "{\"event\":\"vm.state\"") != NULL,
	    "events -j ev: its vm.state running, one JSON line (%s)",
	    h_flat(ev.obuf));
	tap_ok(strstr(ev.obuf, "other") == NULL, "events ev: not other's");
	r = h_proc_expect(&all, " ev vm.state state=running", H_BOOT_MS);
	tap_ok(r == 0 && strstr(all.obuf, " other vm.created") != NULL,
	    "events: every VM's, one line each (%s)", h_flat(all.obuf));
	kill(ev.pid, SIGTERM);
	kill(all.pid, SIGTERM);
	h_proc_wait(&ev, H_REPLY_MS);
	h_proc_wait(&all, H_REPLY_MS);
	h_proc_free(&ev);
	h_proc_free(&all);
	h_stop(c, "ev", true, 0, H_REPLY_MS);
}

/*
 * vmctl ARGS... (NULL-terminated) as uid and gid 65534 with no groups:
 * a member of the socket's users who owns nothing.  Its output in
 * h_ctl_last().
 */
static int
ctl_nobody(const char *arg, ...)
{
	char *argv[16];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)h_env("VMCTL_BIN");
	argv[n++] = "-s";
	argv[n++] = d->sock;
	va_start(ap, arg);
	for (; arg != NULL && n < 15; arg = va_arg(ap, const char *))
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	h_proc_free(h_ctl_last());
	return h_run_as(h_ctl_last(), 65534, NULL, VMCTL_MS, argv);
}

/*
 * The classes the ones above leave out, each met honestly: 1, a step of
 * vmctl's own that failed (an editor that fails, a password file that
 * is not there); 7, another user's VM; 9, a daemon limit (one worker
 * uid in worker_uids: a second guest finds none left).  The daemon's
 * internal errors (its own files failing it) are not provoked here.
 */
static void
test_other_classes(const char *hello)
{
	int r;

	setenv("EDITOR", "false", 1);
	unsetenv("VISUAL");
	text_error(h_ctl("edit", "other", NULL), 1, "the editor (false) "
	    "failed", "edit with a failing editor");
	json_error(h_ctl("-j", "edit", "other", NULL), 1, "failed",
	    "the editor (false) failed", "edit with a failing editor");
	text_error(h_ctl("create", "pw", "--kernel", hello, "--vnc", "auto",
	    "--vnc-password-file", "/nonexistent/pw", NULL), 1,
	    "--vnc-password-file /nonexistent/pw: No such file",
	    "create with a password file that is not there");

	/* The daemon's directory is mkdtemp's 0700: let uid 65534 reach
	 * the socket (0666 here, instead of group vmm). */
	if (chmod(d->dir, 0711) < 0 || chmod(d->sock, 0666) < 0)
		tap_bail("%s: %s", d->dir, strerror(errno));
	r = ctl_nobody("rename", "other", "mine", NULL);
	text_error(r, 7, "permission_denied: VM 'other' belongs to uid 0",
	    "rename of root's VM by uid 65534");
	json_error(ctl_nobody("-j", "rename", "other", "mine", NULL), 7,
	    "permission_denied", "only its owner or root",
	    "rename of root's VM by uid 65534");

	h_daemon_setting(d, "worker_uids", "1879048192-1879048192");
	tap_ok(h_daemon_restart(d, H_REPLY_MS) == 0, "vmmd restarted with "
	    "one worker uid");
	tap_ok(h_ctl("start", "ev", NULL) == 0, "start ev: the one uid");
	text_error(h_ctl("start", "other", NULL), 9, "limit_reached",
	    "start of a second guest");
	json_error(h_ctl("-j", "start", "other", NULL), 9, "limit_reached",
	    "worker", "start of a second guest");
	tap_ok(h_ctl("stop", "--force", "ev", NULL) == 0, "stop ev");
}

/* Whether a process that is not a zombie is in process group pgid. */
static bool
group_alive(pid_t pgid)
{
	struct dirent *e;
	char path[300], *stat, *p;
	long pgrp;
	bool alive = false;
	DIR *dir;

	if ((dir = opendir("/proc")) == NULL)
		tap_bail("/proc: %s", strerror(errno));
	while (!alive && (e = readdir(dir)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if ((stat = h_read_file(path, NULL)) == NULL)
			continue;
		/* pid (comm) state ppid pgrp ... */
		p = strrchr(stat, ')');
		if (p != NULL && sscanf(p + 1, " %*c %*d %ld", &pgrp) == 1)
			alive = pgrp == pgid && p[2] != 'Z';
		free(stat);
	}
	closedir(dir);
	return alive;
}

/*
 * Within ms, nothing of the worker's process group (the worker, its
 * disk reader) is left; what is left is killed for the next test.
 */
static bool
group_gone(pid_t pgid, int ms)
{
	double deadline = h_now_ms() + ms;

	while (group_alive(pgid)) {
		if (h_now_ms() > deadline) {
			tap_diag("process group %d still there after %d ms",
			    (int)pgid, ms);
			kill(-pgid, SIGKILL);
			return false;
		}
		h_sleep_ms(20);
	}
	return true;
}

/*
 * vmctl ARG (NULL or -j) start slow, its output in h_ctl_last(): its
 * exit status; the worker's pid while it was there in *pid (-1: none
 * seen).
 */
static int
start_slow(struct h_conn *c, const char *arg, pid_t *pid)
{
	char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", d->sock, "start",
	    "slow", NULL, NULL };
	double deadline = h_now_ms() + H_BOOT_MS;

	if (arg != NULL) {
		argv[3] = (char *)arg;
		argv[4] = "start";
		argv[5] = "slow";
	}
	h_proc_free(h_ctl_last());
	if (h_spawn(h_ctl_last(), argv) < 0)
		tap_bail("cannot run vmctl start");
	/* The worker lives for the 2 s of the boot timeout. */
	while ((*pid = h_vm_pid(c, "slow")) <= 0 && h_now_ms() < deadline)
		h_sleep_ms(20);
	return h_proc_wait(h_ctl_last(), 60000);
}

/*
 * 8, timeout: a worker that never reports its guest running, met in a
 * few seconds instead of two minutes.  vmmd restarted with
 * boot_disk_timeout = 2 (vmmd.conf(5)) and the test build's disk reader
 * that never answers (VMMD_TEST_READER=stall) kills the worker of a VM
 * that boots from its disk after 2 s; vmctl start says so, exit 8, and
 * the VM is left crashed with its worker and the worker's reader gone.
 */
static void
test_timeout(void)
{
	const char *disk = getenv("VMMD_BOOT_DISK_GRUB");
	const char *hooks = getenv("VMMD_TEST_HOOKS");
	struct h_conn *c = NULL;
	pid_t pid;
	int i, r;

	if (disk == NULL || hooks == NULL || strcmp(hooks, "true") != 0) {
		for (i = 0; i < 7; i++)
			tap_ok(1, "# SKIP %s", disk == NULL ? "no disk to boot "
			    "from (sfdisk, mkfs.ext4, qemu-img)" : "a build "
			    "without -Dtest_hooks=true");
		return;
	}
	h_daemon_setting(d, "boot_disk_timeout", "2");
	setenv("VMMD_TEST_READER", "stall", 1);
	r = h_daemon_restart(d, H_REPLY_MS);
	unsetenv("VMMD_TEST_READER");
	if (r == 0)
		c = h_connect(d);
	tap_ok(c != NULL, "vmmd restarted with boot_disk_timeout = 2 and a "
	    "disk reader that never answers");
	if (c == NULL)
		tap_bail("vmmd does not come back");
	if (h_create(c, "slow", "\"disks\":[{\"path\":\"%s\","
	    "\"overlay\":true}]", disk) != 0)
		tap_bail("cannot define a VM that boots from its disk");

	r = start_slow(c, NULL, &pid);
	text_error(r, 8, "start slow: timeout: the worker did not start the "
	    "guest within 2 s", "start of a guest that never runs");
	r = h_ctl("state", "slow", NULL);
	tap_ok(r == 0 && strcmp(h_out(), "crashed\n") == 0, "the VM is left "
	    "crashed (%s)", h_flat(h_out()));
	tap_ok(pid > 0 && group_gone(pid, H_REPLY_MS), "its worker (pid %d) "
	    "and the worker's disk reader are gone", (int)pid);

	r = start_slow(c, "-j", &pid);
	json_error(r, 8, "timeout", "did not start the guest within 2 s",
	    "start of a guest that never runs");
	r = h_ctl("state", "slow", NULL);
	tap_ok(r == 0 && strcmp(h_out(), "crashed\n") == 0 && pid > 0 &&
	    group_gone(pid, H_REPLY_MS), "crashed again, its worker (pid %d) "
	    "and reader gone (%s)", (int)pid, h_flat(h_out()));
	tap_ok(h_vm_pid(c, "slow") < 0 && h_delete(c, "slow") == 0,
	    "no worker left: the VM is deleted");
	h_close(c);
}

/*
 * /dev/null over /dev/kvm, in a mount namespace of this test's own
 * (and the vmmd it restarts): vmmd says at start-up that no guest can
 * run, and vm.start is kvm_unavailable, exit 10.
 */
static void
test_no_kvm(void)
{
	int r;

	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("/dev/null", "/dev/kvm", NULL, MS_BIND, NULL) < 0) {
		tap_ok(1, "# SKIP no /dev/kvm to hide: %m (not root?)");
		tap_ok(1, "# SKIP");
		tap_ok(1, "# SKIP");
		return;
	}
	tap_ok(h_daemon_restart(d, H_REPLY_MS) == 0, "vmmd restarted with "
	    "an unusable /dev/kvm");
	tap_ok(h_file_expect(d->log, "no guest can run", 1, H_REPLY_MS) == 0,
	    "vmmd says no guest can run");
	r = h_ctl("start", "ev", NULL);
	text_error(r, 10, "kvm_unavailable", "start without KVM");
	json_error(h_ctl("-j", "start", "ev", NULL), 10, "kvm_unavailable",
	    "/dev/kvm", "start without KVM");
}

int
main(void)
{
	const char *hello;
	struct h_conn *c;

	h_init();
	hello = h_env("VMMD_GUEST_HELLO");
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);
	test_classes(hello);
	test_state(c);
	test_events(c, hello);
	h_close(c);
	test_other_classes(hello);
	test_timeout();
	test_no_kvm();
	h_proc_free(h_ctl_last());
	return h_done();
}
