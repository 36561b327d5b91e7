/*
 * Guests outlive the supervisor.  Three guests (two echo guests, one of
 * them transient, and the fb guest with a VNC display):
 *
 * - a worker killed outright is reported crashed; the other guests run
 *   on and the control socket answers throughout;
 * - vmmd killed outright (twice over) and started again adopts every
 *   guest: running, same worker pids and start times, the transient one
 *   from the definition its worker kept; a console opened before the
 *   kill still works, new consoles and VNC viewers work, vm.info's
 *   statistics come from the worker;
 * - SIGQUIT makes vmmd exit and leave the guests for the next one;
 * - an adopted worker that dies is seen (it is not vmmd's child) and
 *   reported crashed; vm.stop stops adopted guests and their sockets go;
 * - the socket of a worker that died while no vmmd ran is removed;
 * - a worker that gives another process's pid is not adopted;
 * - a worker that gives another uid or a vsock CID it does not have is
 *   adopted with what the kernel and vmmd's own record of its start
 *   say, and one whose record is gone (an older vmmd started it) is
 *   adopted believing only the kernel's uid.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "hviewer.h"

#define ECHO_READY	"echo: ready"
#define W		640
#define H		480
#define RED		0xff0000u	/* tests/guests/fb.c's top left */

static const char *const names[] = { "e1", "e2", "fb" };
#define NVMS	3

struct seen {
	pid_t pid;
	int64_t started;
};

/* voluntary_ctxt_switches of pid's main thread (its event loop). */
static long
loop_wakeups(pid_t pid)
{
	char path[64], *st, *p;
	long n = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
	    (int)pid);
	if ((st = h_read_file(path, NULL)) == NULL)
		return -1;
	if ((p = strstr(st, "\nvoluntary_ctxt_switches:")) != NULL)
		n = strtol(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
	free(st);
	return n;
}

/* vm.info of name: state, pid and start time into *s; the state. */
static const char *
info(struct h_conn *c, const char *name, struct seen *s, char *st,
    size_t len)
{
	struct json_object *r;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	snprintf(st, len, "%s", h_str(h_ret(r), "state") ?: "(none)");
	s->pid = (pid_t)h_int(h_ret(r), "pid", -1);
	s->started = h_int(h_ret(r), "started", -1);
	json_object_put(r);
	return st;
}

/* The number of files with suffix in the daemon's workers directory. */
static int
worker_files(struct h_daemon *d, const char *suffix)
{
	struct dirent *de;
	char dir[256];
	size_t len;
	int n = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/workers", d->dir);
	if ((dp = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(dp)) != NULL) {
		len = strlen(de->d_name);
		n += de->d_name[0] != '.' && len > strlen(suffix) &&
		    strcmp(de->d_name + len - strlen(suffix), suffix) == 0;
	}
	closedir(dp);
	return n;
}

/* The worker sockets; each has its record (NAME.json) beside it. */
static int
worker_sockets(struct h_daemon *d)
{
	int n = worker_files(d, ".sock");

	return n == worker_files(d, ".json") ? n : -1000 - n;
}

static bool
console_echoes(struct h_console *con, const char *word)
{
	return con != NULL &&
	    h_console_write(con, word, strlen(word)) == 0 &&
	    h_expect(con, word, 10000) == 0;
}

static void
setup(struct h_conn *c, struct h_daemon *d, struct seen *s)
{
	struct h_console *con;
	char st[32];
	int i;

	tap_ok(h_create(c, "e1", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0 &&
	    h_create(c, "e2", "\"kernel\":\"%s\",\"transient\":true",
	    h_env("VMMD_GUEST_ECHO")) == 0 &&
	    h_create(c, "fb", "\"kernel\":\"%s\",\"cmdline\":\"fb=%dx%d\","
	    "\"vnc\":\"auto\",\"display\":\"%dx%d\"", h_env("VMMD_GUEST_FB"),
	    W, H, W, H) == 0, "three VMs created (e2 transient)");
	for (i = 0; i < NVMS; i++)
		tap_ok(h_start(c, names[i]) == 0, "%s: started", names[i]);
	for (i = 0; i < 2; i++) {
		con = h_console_open(d, names[i]);
		tap_ok(con != NULL && h_expect(con, ECHO_READY, H_BOOT_MS) ==
		    0, "%s: echo guest ready", names[i]);
		h_console_close(con);
	}
	for (i = 0; i < NVMS; i++)
		info(c, names[i], &s[i], st, sizeof(st));
	tap_ok(worker_sockets(d) == NVMS, "one worker socket per guest (%d)",
	    worker_sockets(d));
}

/* A worker killed: crashed; the others run; the socket answers. */
static void
test_worker_killed(struct h_conn *c, struct h_daemon *d, struct seen *s)
{
	struct json_object *r;
	struct seen x;
	char st[32];

	kill(s[0].pid, SIGKILL);
	tap_ok(h_wait_state(c, "e1", "crashed", 10000) == 0,
	    "e1: killed worker reported crashed");
	r = h_call(c, "vm.list", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "vm.list answers meanwhile");
	json_object_put(r);
	tap_ok(strcmp(info(c, "e2", &x, st, sizeof(st)), "running") == 0 &&
	    x.pid == s[1].pid && strcmp(info(c, "fb", &x, st, sizeof(st)),
	    "running") == 0 && x.pid == s[2].pid,
	    "the other guests run on, same workers");
	tap_ok(worker_sockets(d) == NVMS - 1, "its socket is gone (%d left)",
	    worker_sockets(d));
	tap_ok(h_start(c, "e1") == 0, "e1: starts again");
	info(c, "e1", &s[0], st, sizeof(st));
}

/* vmmd dies by sig and is started again: every guest is adopted. */
static void
test_supervisor_dies(struct h_daemon *d, struct h_conn **cp, struct seen *s,
    int sig, int round)
{
	struct h_console *old, *con;
	struct json_object *r, *stats;
	struct vview v = { 0 };
	struct seen x;
	char st[32], word[64], pw[64];
	double deadline;
	long wakeups;
	bool same = true;
	int i, port;

	/* A console client attached before: it belongs to the worker. */
	old = h_console_open(d, "e2");
	tap_ok(old != NULL, "round %d: e2: a console attached", round);
	if (old != NULL)
		h_console_drain(old, 200);
	h_close(*cp);
	*cp = NULL;
	h_daemon_kill(d, sig);
	h_sleep_ms(500);
	for (i = 0; i < NVMS; i++)
		same &= h_pid_alive(s[i].pid);
	tap_ok(same, "round %d: every worker outlives vmmd (%s)", round,
	    strsignal(sig));
	/* Waiting for the next vmmd costs nothing: no timer, no wake-up. */
	wakeups = loop_wakeups(s[1].pid);
	h_sleep_ms(1000);
	wakeups = loop_wakeups(s[1].pid) - wakeups;
	tap_ok(wakeups == 0, "round %d: e2's idle loop, waiting: %ld wake-ups "
	    "in 1 s", round, wakeups);
	snprintf(word, sizeof(word), "orphaned-%d", round);
	tap_ok(console_echoes(old, word), "round %d: a console attached "
	    "before works while no vmmd runs", round);

	tap_ok(h_daemon_spawn(d) == 0, "round %d: vmmd starts again", round);
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	for (i = 0; i < NVMS; i++) {
		info(*cp, names[i], &x, st, sizeof(st));
		tap_ok(strcmp(st, "running") == 0 && x.pid == s[i].pid &&
		    x.started == s[i].started, "round %d: %s adopted: %s, "
		    "pid %d (was %d), started %lld (was %lld)", round,
		    names[i], st, (int)x.pid, (int)s[i].pid,
		    (long long)x.started, (long long)s[i].started);
	}
	r = h_callf(*cp, H_REPLY_MS, "vm.info", "{\"name\":\"e2\"}");
	tap_ok(json_object_get_boolean(json_object_object_get(h_ret(r),
	    "transient")), "round %d: e2 still transient (%s)", round,
	    h_text(r));
	json_object_put(r);
	r = h_callf(*cp, H_REPLY_MS, "vm.info", "{\"name\":\"e1\"}");
	tap_ok(json_object_object_get_ex(h_ret(r), "stats", &stats),
	    "round %d: vm.info has the worker's statistics", round);
	json_object_put(r);

	snprintf(word, sizeof(word), "after-%d", round);
	tap_ok(console_echoes(old, word), "round %d: the old console still "
	    "works", round);
	h_console_close(old);
	for (i = 0; i < 2; i++) {
		con = h_console_open(d, names[i]);
		snprintf(word, sizeof(word), "ping-%s-%d", names[i], round);
		tap_ok(console_echoes(con, word), "round %d: %s: a new "
		    "console works", round, names[i]);
		h_console_close(con);
	}
	/* The password made at the start, which the adopted worker
	 * still knows. */
	port = viewer_display(*cp, "fb", pw, sizeof(pw));
	tap_ok(port > 0 && viewer_open(&v, port, pw[0] != '\0' ? pw : NULL),
	    "round %d: fb: a VNC viewer connects with vm.display's password "
	    "(port %d)", round, port);
	if (v.client != NULL) {
		tap_ok(viewer_wait_updates(&v, 1, 20000), "round %d: fb: it "
		    "gets the screen (%u updates)", round, v.updates);
		/* The first update may come before the picture does (the
		 * display test sees that too): wait for the picture. */
		deadline = h_now_ms() + 20000;
		while (vview_pixel(&v, W / 4, H / 4) != RED &&
		    h_now_ms() < deadline && viewer_pump(&v, 100))
			;
		tap_ok(vview_pixel(&v, W / 4, H / 4) == RED,
		    "round %d: fb: the guest's drawing (%06x, %u updates)",
		    round, vview_pixel(&v, W / 4, H / 4), v.updates);
	}
	if (v.client != NULL)
		vview_close(&v);
}

/* An adopted worker that dies is no child of ours: still seen. */
static void
test_adopted_dies(struct h_conn *c, struct h_daemon *d, struct seen *s)
{
	struct json_object *r;
	char st[32];

	kill(s[0].pid, SIGKILL);
	tap_ok(h_wait_state(c, "e1", "crashed", 10000) == 0,
	    "e1: an adopted worker killed is reported crashed");
	tap_ok(h_start(c, "e1") == 0, "e1: starts again");
	info(c, "e1", &s[0], st, sizeof(st));
	r = h_call(c, "vm.list", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "vm.list answers");
	json_object_put(r);
}

static void
test_stop_all(struct h_conn *c, struct h_daemon *d, struct seen *s)
{
	char st[64];
	int i;

	for (i = 0; i < NVMS; i++)
		tap_ok(h_stop(c, names[i], true, -1, H_REPLY_MS) == 0 &&
		    h_pid_gone(s[i].pid, 5000), "%s: vm.stop stops it", names[i]);
	h_state(c, "e2", st, sizeof(st));
	tap_ok(strcmp(st, "(not_found)") == 0, "e2: transient, gone (%s)",
	    st);
	tap_ok(worker_sockets(d) == 0, "no worker socket left (%d)",
	    worker_sockets(d));
}

/* A worker that died while no vmmd ran: its socket is cleaned up. */
static void
test_stale(struct h_daemon *d, struct h_conn **cp)
{
	struct seen x;
	char st[32];

	tap_ok(h_start(*cp, "e1") == 0, "e1: started once more");
	info(*cp, "e1", &x, st, sizeof(st));
	h_close(*cp);
	*cp = NULL;
	h_daemon_kill(d, SIGQUIT);
	kill(x.pid, SIGKILL);
	tap_ok(h_pid_gone(x.pid, 5000), "e1: its worker killed while no "
	    "vmmd runs");
	tap_ok(worker_sockets(d) == 1, "its socket is still there");
	tap_ok(h_daemon_spawn(d) == 0, "vmmd starts again");
	if ((*cp = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	tap_ok(strcmp(info(*cp, "e1", &x, st, sizeof(st)), "defined") == 0,
	    "e1: defined (%s)", st);
	tap_ok(worker_sockets(d) == 0, "the stale socket is removed (%d)",
	    worker_sockets(d));
}

/*
 * A worker whose answer to worker.adopt names another process (a test
 * build's worker told to by VMMD_TEST_ADOPT_PID, as a worker taken over
 * by its guest could) is not adopted: vmmd takes the pid from the
 * kernel, says why in its log, and never signals the process named,
 * not even on a forced stop.  On a daemon of its own.
 */
static void
test_liar(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	struct seen x;
	char st[32], buf[160];
	pid_t victim, worker;

	if (strcmp(getenv("VMMD_TEST_HOOKS") ?: "", "true") != 0) {
		tap_ok(1, "# SKIP a lying worker: not a -Dtest_hooks=true "
		    "build");
		return;
	}
	if ((victim = fork()) < 0)
		tap_bail("fork: %s", strerror(errno));
	if (victim == 0) {
		for (;;)
			pause();
	}
	snprintf(buf, sizeof(buf), "%ld", (long)victim);
	setenv("VMMD_TEST_ADOPT_PID", buf, 1);
	c = h_setup(&d);
	unsetenv("VMMD_TEST_ADOPT_PID");
	tap_ok(h_create(c, "liar", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0 && h_start(c, "liar") == 0,
	    "liar: started");
	worker = h_vm_pid(c, "liar");
	h_close(c);
	h_daemon_kill(d, SIGKILL);
	tap_ok(h_daemon_spawn(d) == 0, "liar: vmmd starts again");
	if ((c = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	info(c, "liar", &x, st, sizeof(st));
	tap_ok(strcmp(st, "defined") == 0 && x.pid != victim,
	    "liar: not adopted (%s, pid %d; it said %d, it is %d)", st,
	    (int)x.pid, (int)victim, (int)worker);
	snprintf(buf, sizeof(buf), "the worker says it is pid %ld, but its "
	    "answer came from pid %ld: left alone", (long)victim,
	    (long)worker);
	tap_ok(h_file_expect(d->log, buf, 1, 0) == 0,
	    "liar: the log says why");
	h_stop(c, "liar", true, -1, H_REPLY_MS);
	tap_ok(h_pid_alive(victim), "liar: the process it named lives on "
	    "after vm.stop --force");
	tap_ok(h_pid_alive(worker), "liar: the worker itself is left alone");
	h_close(c);
	if (worker > 0)
		kill(worker, SIGKILL);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	h_pid_gone(worker, 5000);
}

#define LIAR_RANGE	"92000-92001"
#define LIAR_CID	"7"

/* The real uid of pid, or -1. */
static long
uid_of(pid_t pid)
{
	char buf[128];

	return pid > 0 && h_proc_status(pid, "Uid", buf, sizeof(buf))[0] !=
	    '\0' ? strtol(buf, NULL, 10) : -1;
}

/* vm.info's vsock_cid of name, -1 if it has none. */
static long
vm_cid(struct h_conn *c, const char *name)
{
	struct json_object *r;
	long cid;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	cid = (long)h_int(h_ret(r), "vsock_cid", -1);
	json_object_put(r);
	return cid;
}

/*
 * Workers that say they run as the other uid of worker_uids, and have
 * vsock CID 7 though they have no vsock (the test build's
 * VMMD_TEST_ADOPT_UID and VMMD_TEST_ADOPT_CID), are adopted with the
 * uid the kernel gives and the CID vmmd's record of their start gives:
 * had vmmd believed the uid, it would give a third guest the uid of
 * the first.  The record of the second is removed first, as if an
 * older vmmd had started it: it is adopted all the same, its uid the
 * kernel's, its CID not believed.  On a daemon of its own.
 */
static void
test_liar_ids(void)
{
	struct json_object *r;
	struct h_daemon *d;
	struct h_conn *c;
	struct seen x = { 0 };
	char st[32], buf[256];
	pid_t lu, old;
	long uid_lu, uid_old;

	if (strcmp(getenv("VMMD_TEST_HOOKS") ?: "", "true") != 0 ||
	    geteuid() != 0) {
		tap_ok(1, "# SKIP workers that lie about their uid and CID: "
		    "not root, or not a -Dtest_hooks=true build");
		return;
	}
	c = h_setup(&d);
	h_close(c);
	h_daemon_setting(d, "worker_uids", LIAR_RANGE);
	setenv("VMMD_TEST_ADOPT_UID", "92001", 1);
	setenv("VMMD_TEST_ADOPT_CID", LIAR_CID, 1);
	if (h_daemon_restart(d, 10000) != 0 || (c = h_connect(d)) == NULL)
		tap_bail("vmmd does not start with worker_uids = "
		    LIAR_RANGE);
	unsetenv("VMMD_TEST_ADOPT_UID");
	unsetenv("VMMD_TEST_ADOPT_CID");
	tap_ok(h_create(c, "lu", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0 && h_start(c, "lu") == 0 &&
	    h_create(c, "old", "\"kernel\":\"%s\",\"transient\":true",
	    h_env("VMMD_GUEST_ECHO")) == 0 && h_start(c, "old") == 0,
	    "lu and old (transient): started");
	lu = h_vm_pid(c, "lu");
	old = h_vm_pid(c, "old");
	uid_lu = uid_of(lu);
	uid_old = uid_of(old);
	tap_ok(uid_lu == 92000 && uid_old == 92001, "lu runs as uid %ld, "
	    "old as %ld", uid_lu, uid_old);
	h_close(c);
	h_daemon_kill(d, SIGKILL);
	snprintf(buf, sizeof(buf), "%s/workers/old.json", d->dir);
	tap_ok(unlink(buf) == 0, "old: the record of its start removed (%s)",
	    strerror(errno));
	tap_ok(h_daemon_spawn(d) == 0, "vmmd starts again");
	if ((c = h_connect(d)) == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	info(c, "lu", &x, st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0 && x.pid == lu,
	    "lu: adopted (%s, pid %d)", st, (int)x.pid);
	info(c, "old", &x, st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0 && x.pid == old,
	    "old: adopted without a record (%s, pid %d)", st, (int)x.pid);
	tap_ok(vm_cid(c, "lu") == -1 && vm_cid(c, "old") == -1,
	    "neither has the vsock CID it claims (%ld, %ld)",
	    vm_cid(c, "lu"), vm_cid(c, "old"));
	snprintf(buf, sizeof(buf), "says it runs as uid 92001, the kernel "
	    "says %ld: the kernel believed", uid_lu);
	tap_ok(h_file_expect(d->log, buf, 1, 0) == 0, "lu: the log says "
	    "its uid was not believed");
	tap_ok(h_file_expect(d->log, "says its vsock CID is " LIAR_CID
	    ", it was started with 0: 0 kept", 1, 0) == 0,
	    "lu: the log says its CID was not believed");
	tap_ok(h_file_expect(d->log, "has no record of its start", 1,
	    0) == 0, "old: the log says it has no record");
	/* Both uids of the range are taken, whatever the workers say. */
	tap_ok(h_create(c, "third", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0, "third: created");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"third\"}");
	h_check_error(r, "limit_reached", "third: no uid left in "
	    LIAR_RANGE " (it would share lu's)");
	if (h_ret(r) != NULL) {
		json_object_put(r);
		tap_diag("third runs as uid %ld, lu as %ld",
		    uid_of(h_vm_pid(c, "third")), uid_lu);
		h_stop(c, "third", true, -1, H_REPLY_MS);
	} else
		json_object_put(r);
	tap_ok(h_stop(c, "lu", true, -1, H_REPLY_MS) == 0 &&
	    h_stop(c, "old", true, -1, H_REPLY_MS) == 0 &&
	    h_pid_gone(lu, 5000) && h_pid_gone(old, 5000),
	    "lu and old stop");
	tap_ok(worker_sockets(d) == 0, "no worker socket or record left (%d)",
	    worker_sockets(d));
	h_close(c);
}

int
main(void)
{
	struct seen s[NVMS];
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	setup(c, d, s);
	test_worker_killed(c, d, s);
	test_supervisor_dies(d, &c, s, SIGKILL, 1);
	test_supervisor_dies(d, &c, s, SIGKILL, 2);
	test_adopted_dies(c, d, s);
	test_supervisor_dies(d, &c, s, SIGQUIT, 3);
	test_stop_all(c, d, s);
	test_stale(d, &c);
	h_close(c);
	tap_ok(h_daemon_alive(d), "vmmd still runs");
	test_liar();
	test_liar_ids();
	return h_done();
}
