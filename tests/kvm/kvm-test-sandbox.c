/*
 * Least privilege: every worker runs its guest sandboxed (Seccomp 2,
 * NoNewPrivs 1, no capability; as root, a uid of its own from
 * worker_uids, which no other guest gets while it runs, an adopted one
 * included, and a bounded number of tasks), workers cannot signal each
 * other, a worker that makes a forbidden system call (fcntl F_SETOWN,
 * F_SETSIG or O_ASYNC, a fork, truncating its standard error) is
 * reported crashed with the call named while another guest runs on,
 * and a user outside the socket's group cannot reach the control socket.
 *
 * The forbidden call comes from the test build's hook (test-hook.h,
 * -Dtest_hooks=true, which the kvm suite says in VMMD_TEST_HOOKS).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define DEMO_TICK	" UTC\r"
#define DEMO_BOOT	"(from CMOS)"
#define NOBODY		65534
/* This test's worker_uids: room for two guests. */
#define UID_FIRST	91000
#define UID_LAST	91001
#define UID_RANGE	"91000-91001"

static struct h_daemon *d;

/* A worker's real, effective, saved and file system uid (or gids). */
struct h_ids {
	unsigned long id[4];
};

static bool
ids_read(pid_t pid, const char *field, struct h_ids *ids)
{
	char buf[128];

	memset(ids, 0xff, sizeof(*ids));
	return sscanf(h_proc_status(pid, field, buf, sizeof(buf)),
	    "%lu %lu %lu %lu", &ids->id[0], &ids->id[1], &ids->id[2],
	    &ids->id[3]) == 4;
}

/* All four the same: that one, else -1. */
static long
ids_one(const struct h_ids *ids)
{
	return ids->id[0] == ids->id[1] && ids->id[0] == ids->id[2] &&
	    ids->id[0] == ids->id[3] ? (long)ids->id[0] : -1;
}

/* The worker of name's uid, checked to be one of ours; -1 else. */
static long
worker_uid(struct h_conn *c, const char *name, pid_t *pidp)
{
	struct h_ids uids, gids;
	char groups[128];
	pid_t pid = h_vm_pid(c, name);
	long uid;

	if (pidp != NULL)
		*pidp = pid;
	if (!ids_read(pid, "Uid", &uids) || !ids_read(pid, "Gid", &gids))
		return -1;
	uid = ids_one(&uids);
	h_proc_status(pid, "Groups", groups, sizeof(groups));
	tap_ok(uid >= UID_FIRST && uid <= UID_LAST && ids_one(&gids) == uid &&
	    groups[0] == '\0', "%s: worker %d runs as uid %ld of "
	    UID_RANGE ", gid the same, no other groups (Uid %lu %lu %lu %lu, "
	    "Gid %lu, Groups '%s')", name, (int)pid, uid, uids.id[0],
	    uids.id[1], uids.id[2], uids.id[3], gids.id[0], groups);
	return uid;
}

/* The worker's "Max processes" (RLIMIT_NPROC), or -1: unlimited. */
static long
worker_max_tasks(pid_t pid)
{
	char path[64], *limits, *p;
	long n = -1;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	if ((limits = h_read_file(path, NULL)) == NULL)
		return -1;
	if ((p = strstr(limits, "Max processes")) != NULL)
		n = strtol(p + strlen("Max processes"), NULL, 10);
	if (n == 0)
		n = -1;		/* "unlimited" */
	free(limits);
	return n;
}

/*
 * As uid (and gid) of worker self, signal 0 to it and to other: 0 if
 * only self could be reached, else a reason.
 */
static const char *
signal_as(unsigned long uid, pid_t self, pid_t other)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(3);
		if (kill(self, 0) < 0)
			_exit(2);
		if (kill(other, 0) == 0)
			_exit(1);
		_exit(errno == EPERM ? 0 : 4);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status))
		return "the child died";
	switch (WEXITSTATUS(status)) {
	case 0:
		return NULL;
	case 1:
		return "it could signal the other worker";
	case 2:
		return "it could not signal its own worker";
	case 3:
		return "cannot become that uid";
	}
	return "kill(2) failed otherwise than with EPERM";
}

static void
test_confined(struct h_conn *c)
{
	char buf[128];
	struct json_object *r;
	struct h_console *con;
	unsigned long uid;
	long uids[2] = { -1, -1 }, tasks;
	pid_t pid, pids[2] = { 0, 0 };
	const char *why;
	int i;

	for (i = 0; i < 2; i++) {
		const char *name = i == 0 ? "one" : "two";

		tap_ok(h_create(c, name, NULL) == 0 && h_start(c, name) == 0,
		    "%s: created and started", name);
		pid = h_vm_pid(c, name);
		tap_ok(strcmp(h_proc_status(pid, "Seccomp", buf, sizeof(buf)),
		    "2") == 0, "%s: worker %d: Seccomp: 2 (%s)", name,
		    (int)pid, buf);
		tap_ok(strcmp(h_proc_status(pid, "NoNewPrivs", buf,
		    sizeof(buf)), "1") == 0, "%s: NoNewPrivs: 1 (%s)", name,
		    buf);
		h_proc_status(pid, "CapEff", buf, sizeof(buf));
		tap_ok(buf[0] != '\0' && strtoull(buf, NULL, 16) == 0,
		    "%s: CapEff: 0 (%s)", name, buf);
		uid = strtoul(h_proc_status(pid, "Uid", buf, sizeof(buf)),
		    NULL, 10);
		if (geteuid() == 0) {
			uids[i] = worker_uid(c, name, &pids[i]);
			tasks = worker_max_tasks(pid);
			h_proc_status(pid, "Threads", buf, sizeof(buf));
			tap_ok(tasks > 0 && tasks <= 64 && tasks >=
			    strtol(buf, NULL, 10), "%s: at most %ld tasks "
			    "(RLIMIT_NPROC of its uid; %s threads now)", name,
			    tasks, buf);
		} else {
			tap_ok(uid == getuid(), "%s: the worker keeps our "
			    "uid %lu (%s)", name, (unsigned long)getuid(), buf);
			tap_ok(1, "# SKIP the task limit: not root");
		}
	}
	if (geteuid() == 0) {
		tap_ok(uids[0] != uids[1], "one and two: different uids (%ld, "
		    "%ld)", uids[0], uids[1]);
		why = uids[0] < 0 ? "no uid" : signal_as((unsigned long)uids[0],
		    pids[0], pids[1]);
		tap_ok(why == NULL, "as one's uid %ld: kill(2) reaches one's "
		    "worker, not two's (%s)", uids[0], why ?: "EPERM");
		why = uids[1] < 0 ? "no uid" : signal_as((unsigned long)uids[1],
		    pids[1], pids[0]);
		tap_ok(why == NULL, "as two's uid %ld: kill(2) reaches two's "
		    "worker, not one's (%s)", uids[1], why ?: "EPERM");
	} else {
		for (i = 0; i < 3; i++)
			tap_ok(1, "# SKIP a uid per guest: not root");
	}
	/* Sandboxed, the guest still runs and resets. */
	con = h_console_open(d, "one");
	tap_ok(con != NULL && h_expect(con, DEMO_TICK, H_BOOT_MS) == 0,
	    "one: ticking under the sandbox");
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"one\"}");
	tap_ok(h_ret(r) != NULL, "one: vm.reset answered (%s)", h_text(r));
	json_object_put(r);
	if (con != NULL) {
		con->mark = con->len;
		tap_ok(h_expect(con, DEMO_BOOT, H_BOOT_MS) == 0 &&
		    h_expect(con, DEMO_TICK, H_BOOT_MS) == 0,
		    "one: booted and ticking again after a reset (kernel and /dev/kvm "
		    "reached without opening them)");
		h_console_close(con);
	} else {
		tap_ok(0, "one: no console");
	}
	tap_ok(strcmp(h_state(c, "one", buf, sizeof(buf)), "running") == 0,
	    "one: still running (%s)", buf);
}

/*
 * With every uid of worker_uids running a guest, adopted ones too, the
 * next start is refused; the uid of a guest that stopped is the next
 * one's.
 */
static struct h_conn *
test_uid_range(struct h_conn *c)
{
	struct json_object *r;
	pid_t one = h_vm_pid(c, "one"), two = h_vm_pid(c, "two"), pid;
	long uid_one;
	char st[64];
	int i;

	if (geteuid() != 0) {
		for (i = 0; i < 9; i++)
			tap_ok(1, "# SKIP a uid per guest: not root");
		return c;
	}
	uid_one = strtol(h_proc_status(one, "Uid", st, sizeof(st)), NULL, 10);
	tap_ok(h_create(c, "three", NULL) == 0, "three: created");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"three\"}");
	h_check_error(r, "limit_reached", "three: no uid left in "
	    UID_RANGE);
	tap_ok(h_err_desc(r) != NULL && strstr(h_err_desc(r),
	    "worker_uids") != NULL, "the error names the setting (%s)",
	    h_err_desc(r) ?: h_text(r));
	json_object_put(r);
	/* The next vmmd adopts both, and their uids with them. */
	h_close(c);
	h_daemon_kill(d, SIGQUIT);
	if (h_daemon_spawn(d) != 0 || (c = h_connect(d)) == NULL)
		tap_bail("vmmd does not start again");
	tap_ok(h_vm_pid(c, "one") == one && h_vm_pid(c, "two") == two,
	    "one and two adopted (workers %d and %d)", (int)one, (int)two);
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"three\"}");
	h_check_error(r, "limit_reached", "three: still no uid left after "
	    "the adoption");
	json_object_put(r);
	tap_ok(h_stop(c, "one", true, -1, H_REPLY_MS) == 0 &&
	    h_start(c, "three") == 0, "one stopped, three started");
	pid = h_vm_pid(c, "three");
	tap_ok(worker_uid(c, "three", NULL) == uid_one, "three: one's uid "
	    "%ld, the lowest free (worker %d)", uid_one, (int)pid);
	tap_ok(h_stop(c, "two", true, -1, H_REPLY_MS) == 0 &&
	    h_stop(c, "three", true, -1, H_REPLY_MS) == 0, "all stopped");
	return c;
}

/*
 * Every worker of the daemon makes spec's call (test-hook.h) half a
 * second after entering its sandbox: one is reported crashed, the
 * reason naming call.
 */
static void
test_violation_of(const char *spec, const char *call, const char *what)
{
	struct json_object *r, *e, *data;
	struct h_conn *c, *ev;
	const char *reason;
	char st[64], want[64];

	setenv("VMMD_TEST_FORBIDDEN_CALL", spec, 1);
	tap_ok(h_daemon_restart(d, 10000) == 0, "%s: vmmd restarted with "
	    "the call armed (%s)", what, spec);
	unsetenv("VMMD_TEST_FORBIDDEN_CALL");
	c = h_connect(d);
	ev = h_connect(d);
	r = h_call(ev, "events.subscribe", NULL, H_REPLY_MS);
	json_object_put(r);
	tap_ok(h_start(c, "one") == 0, "%s: one started", what);
	e = h_wait_event(ev, "one", "crashed", 10000);
	reason = e != NULL && json_object_object_get_ex(e, "data", &data) ?
	    h_str(data, "reason") : NULL;
	snprintf(want, sizeof(want), "forbidden system call %s)", call);
	tap_ok(reason != NULL && strstr(reason, want) != NULL, "%s: one "
	    "crashed, the reason names %s (%s)", what, call,
	    reason ?: h_text(e));
	json_object_put(e);
	tap_ok(strcmp(h_state(c, "one", st, sizeof(st)), "crashed") == 0,
	    "%s: vm.info says crashed (%s)", what, st);
	h_close(ev);
	h_close(c);
}

static void
test_violation(struct h_conn *c)
{
	static const struct {
		const char *call;
		int nargs, args[3];
		const char *what;
	} calls[] = {
		{ "mount", 0, { 0 }, "mount(2)" },
		/* On standard input, /dev/null: nothing else sees it. */
		{ "fcntl", 3, { 0, F_SETOWN, 1 }, "fcntl F_SETOWN" },
		{ "fcntl", 3, { 0, F_SETSIG, SIGKILL }, "fcntl F_SETSIG" },
		{ "fcntl", 3, { 0, F_SETFL, O_ASYNC },
		    "fcntl F_SETFL O_ASYNC" },
		{ "clone", 1, { SIGCHLD }, "fork (clone SIGCHLD)" },
		{ "ftruncate", 2, { STDERR_FILENO, 0 }, "ftruncate of stderr" },
	};
	size_t i, j;
	char spec[64];
	int n;

	h_close(c);
	if (strcmp(getenv("VMMD_TEST_HOOKS") ?: "", "true") != 0) {
		for (i = 0; i < 4 * sizeof(calls) / sizeof(calls[0]); i++)
			tap_ok(1, "# SKIP a build without test hooks "
			    "(-Dtest_hooks)");
		return;
	}
	h_expect_forbidden();
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		n = snprintf(spec, sizeof(spec), "%s", calls[i].call);
		for (j = 0; j < (size_t)calls[i].nargs; j++)
			n += snprintf(spec + n, sizeof(spec) - (size_t)n,
			    "%c%d", j == 0 ? ':' : ',', calls[i].args[j]);
		test_violation_of(spec, calls[i].call, calls[i].what);
	}
}

/* A user outside the socket's group cannot even connect. */
static void
test_socket_group(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct group *gr = getgrnam("vmm");
	struct stat st;
	int status, fd;
	pid_t pid;

	if (geteuid() != 0) {
		tap_ok(1, "# SKIP needs root, to act as another user");
		tap_ok(1, "# SKIP needs root, to act as another user");
		return;
	}
	tap_ok(stat(d->sock, &st) == 0 && (st.st_mode & 0007) == 0 &&
	    (gr == NULL || st.st_gid == gr->gr_gid), "control socket: no "
	    "access for others (mode %o, gid %u)", st.st_mode & 0777,
	    (unsigned int)st.st_gid);
	/* Only the socket's own mode may stand in the way. */
	if (chmod(d->dir, 0711) < 0)
		tap_bail("chmod %s: %s", d->dir, strerror(errno));
	if (strlen(d->sock) >= sizeof(sa.sun_path))
		tap_bail("%s: too long for a socket address", d->sock);
	memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0)
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			_exit(3);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			_exit(0);
		_exit(errno == EACCES ? 1 : 4);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 1,
	    "uid %d outside group vmm: connect refused with EACCES "
	    "(child status %d)", NOBODY, WIFEXITED(status) ?
	    WEXITSTATUS(status) : -1);
	chmod(d->dir, 0700);
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	/* Two uids only: what a third guest gets is tested too. */
	h_close(c);
	h_daemon_setting(d, "worker_uids", UID_RANGE);
	if (h_daemon_restart(d, 10000) != 0 || (c = h_connect(d)) == NULL)
		tap_bail("vmmd does not start with worker_uids = " UID_RANGE);
	test_socket_group();
	test_confined(c);
	c = test_uid_range(c);
	test_violation(c);
	return h_done();
}
