/*
 * Least privilege: every worker runs its guest sandboxed (Seccomp 2,
 * NoNewPrivs 1, no capability; as root, another uid), a worker that
 * makes a forbidden system call is reported crashed with the call named
 * while another guest runs on, and a user outside the socket's group
 * cannot reach the control socket.
 *
 * The forbidden call comes from the test build's hook (test-hook.h,
 * -Dtest_hooks=true, which the kvm suite says in VMMD_TEST_HOOKS).
 */
#include <errno.h>
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

static void
test_violation(struct h_conn *c)
{
	struct json_object *r, *e, *data;
	struct h_conn *ev;
	const char *reason;
	char st[64];

	if (strcmp(getenv("VMMD_TEST_HOOKS") ?: "", "true") != 0) {
		for (int i = 0; i < 4; i++)
			tap_ok(1, "# SKIP a build without test hooks "
			    "(-Dtest_hooks)");
		h_close(c);
		return;
	}
	/* Every worker of this daemon makes mount(2) half a second after
	 * entering its sandbox. */
	h_expect_forbidden();
	setenv("VMMD_TEST_FORBIDDEN_CALL", "mount", 1);
	tap_ok(h_daemon_restart(d, 10000) == 0, "vmmd restarted with the "
	    "forbidden call armed");
	unsetenv("VMMD_TEST_FORBIDDEN_CALL");
	h_close(c);
	c = h_connect(d);
	ev = h_connect(d);
	r = h_call(ev, "events.subscribe", NULL, H_REPLY_MS);
	json_object_put(r);
	tap_ok(h_start(c, "one") == 0, "one: started");
	e = h_wait_event(ev, "one", "crashed", 10000);
	reason = e != NULL && json_object_object_get_ex(e, "data", &data) ?
	    h_str(data, "reason") : NULL;
	tap_ok(reason != NULL && strstr(reason, "forbidden system call "
	    "mount") != NULL, "one: crashed, the reason names the call (%s)",
	    reason ?: h_text(e));
	json_object_put(e);
	tap_ok(strcmp(h_state(c, "one", st, sizeof(st)), "crashed") == 0,
	    "one: vm.info says crashed (%s)", st);
	h_close(ev);
	h_close(c);
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
