/*
 * Least privilege: every worker runs its guest sandboxed (Seccomp 2,
 * NoNewPrivs 1, no capability; as root, another uid), a worker that
 * makes a forbidden system call (fcntl F_SETOWN, F_SETSIG or O_ASYNC, a
 * fork, truncating its standard error) is reported crashed with the
 * call named while another guest runs on, and a user outside the
 * socket's group cannot reach the control socket.
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

static struct h_daemon *d;

static void
test_confined(struct h_conn *c)
{
	char buf[128];
	struct json_object *r;
	struct h_console *con;
	struct passwd *pw;
	unsigned long uid, want;
	pid_t pid;
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
		h_proc_status(pid, "CapBnd", buf, sizeof(buf));
		uid = strtoul(h_proc_status(pid, "Uid", buf, sizeof(buf)),
		    NULL, 10);
		if (geteuid() == 0) {
			pw = getpwnam("vmmd");
			want = pw != NULL ? pw->pw_uid : NOBODY;
			tap_ok(uid == want, "%s: vmmd runs as root, the worker "
			    "as uid %lu (%s)", name, want, buf);
		} else {
			tap_ok(uid == getuid(), "%s: the worker keeps our "
			    "uid %lu (%s)", name, (unsigned long)getuid(), buf);
		}
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
	tap_ok(h_stop(c, "one", true, -1, H_REPLY_MS) == 0 &&
	    h_stop(c, "two", true, -1, H_REPLY_MS) == 0, "both stopped");
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
	test_socket_group();
	test_confined(c);
	test_violation(c);
	return h_done();
}
