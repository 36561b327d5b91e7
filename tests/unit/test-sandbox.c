/*
 * Unit tests for daemon/worker/sandbox.c, without KVM: the worker's
 * filter is loaded in a forked child, which then does what a worker
 * does (allowed calls), what it must not (a refused open, a forbidden
 * call), and the parent checks from the outside what the kernel says
 * about the child (/proc/PID/status) and how it died.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "tap.h"

/* What the child does once sandboxed. */
enum child_act {
	ACT_ALLOWED,		/* allowed calls, then wait for the parent */
	ACT_OPEN,		/* open a file: refused, not fatal */
	ACT_READ_FILES,		/* with read_files: reading only */
	ACT_FORBIDDEN,		/* mount(2): fatal */
	ACT_FORBIDDEN_THREAD,	/* the same from a second thread */
};

struct child {
	pid_t pid;
	int report;		/* the sandbox's report, read end */
	int ctl;		/* a socket to the child */
};

static void *
child_thread(void *arg)
{
	(void)arg;
	mount("none", "/", "tmpfs", 0, NULL);
	return NULL;
}

/* The child: exit status 10 + step where a step failed. */
static void __attribute__((noreturn))
child_run(enum child_act act, int report, int ctl)
{
	const struct rlimit nocore = { 0, 0 };
	struct sandbox_config cfg = {
		.report_fd = report,
		.read_files = act == ACT_READ_FILES,
	};
	char err[256], byte = 'r', buf[16];
	pthread_t t;
	int fd;

	setrlimit(RLIMIT_CORE, &nocore);	/* SIGSYS would dump one */
	if (sandbox_enter(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "# %s\n", err);
		_exit(10);
	}
	switch (act) {
	case ACT_ALLOWED:
		/* What a worker does all day: memory, time, its sockets. */
		free(malloc(1 << 20));
		if (getpid() <= 0 || clock_gettime(CLOCK_MONOTONIC,
		    &(struct timespec){ 0 }) < 0)
			_exit(11);
		if (write(ctl, &byte, 1) != 1 || read(ctl, buf, 1) != 1)
			_exit(12);
		_exit(0);
	case ACT_OPEN:
		fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		if (fd >= 0 || errno != EACCES)
			_exit(13);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 || errno != EACCES)
			_exit(14);
		if (access("/etc/hostname", R_OK) == 0 || errno != EACCES)
			_exit(23);
		_exit(0);
	case ACT_READ_FILES:
		fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(19);
		close(fd);
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0 || errno != EACCES)
			_exit(20);
		fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EACCES)
			_exit(21);
		fd = open("/dev/null", O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EACCES)
			_exit(22);
		_exit(0);
	case ACT_FORBIDDEN:
		mount("none", "/", "tmpfs", 0, NULL);
		_exit(15);
	case ACT_FORBIDDEN_THREAD:
		if (pthread_create(&t, NULL, child_thread, NULL) != 0)
			_exit(16);
		pthread_join(t, NULL);
		_exit(17);
	}
	_exit(18);
}

static int
child_start(struct child *c, enum child_act act)
{
	int pipefd[2], sv[2];

	if (pipe2(pipefd, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fflush(stdout);
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		close(pipefd[0]);
		close(sv[0]);
		child_run(act, pipefd[1], sv[1]);
	}
	close(pipefd[1]);
	close(sv[1]);
	c->report = pipefd[0];
	c->ctl = sv[0];
	return 0;
}

static int
child_wait(struct child *c, char *report, size_t len)
{
	ssize_t n;
	int status;

	while (waitpid(c->pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	n = read(c->report, report, len - 1);
	report[n > 0 ? n : 0] = '\0';
	close(c->report);
	close(c->ctl);
	return status;
}

/* A field of /proc/PID/status, as text. */
static int
status_field(pid_t pid, const char *field, char *out, size_t len)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	FILE *f;
	int found = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			snprintf(out, len, "%s", line + flen + 1 +
			    strspn(line + flen + 1, " \t"));
			out[strcspn(out, "\n")] = '\0';
			found = 0;
			break;
		}
	fclose(f);
	return found;
}

static void
test_allowed(void)
{
	char seccomp[32] = "", nnp[32] = "", capeff[32] = "", capbnd[32] = "";
	char uid[64] = "", report[64], byte;
	struct child c;
	int status;

	if (child_start(&c, ACT_ALLOWED) < 0)
		tap_bail("fork: %s", strerror(errno));
	tap_ok(read(c.ctl, &byte, 1) == 1, "the sandboxed child runs");
	status_field(c.pid, "Seccomp", seccomp, sizeof(seccomp));
	status_field(c.pid, "NoNewPrivs", nnp, sizeof(nnp));
	status_field(c.pid, "CapEff", capeff, sizeof(capeff));
	status_field(c.pid, "CapBnd", capbnd, sizeof(capbnd));
	status_field(c.pid, "Uid", uid, sizeof(uid));
	tap_ok(strcmp(seccomp, "2") == 0, "Seccomp: 2 (filter) (%s)",
	    seccomp);
	tap_ok(strcmp(nnp, "1") == 0, "NoNewPrivs: 1 (%s)", nnp);
	tap_ok(strtoull(capeff, NULL, 16) == 0, "CapEff: 0 (%s)", capeff);
	if (geteuid() == 0) {
		tap_ok(strtoull(capbnd, NULL, 16) == 0,
		    "as root: an empty bounding set (%s)", capbnd);
		tap_ok(strtoul(uid, NULL, 10) != 0,
		    "as root: an unprivileged uid (%s)", uid);
	} else {
		tap_ok(1, "# SKIP the bounding set: not root");
		tap_ok(1, "# SKIP the uid: not root");
	}
	byte = 'g';
	tap_ok(write(c.ctl, &byte, 1) == 1, "told to finish");
	status = child_wait(&c, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "allowed calls only: exits 0, reports nothing "
	    "(status 0x%x)", status);
}

/* A child that does act and is not talked to: its wait status. */
static int
child_run_to_end(enum child_act act, char *report, size_t len)
{
	struct child c;

	if (child_start(&c, act) < 0)
		tap_bail("fork: %s", strerror(errno));
	return child_wait(&c, report, len);
}

static void
test_refused(void)
{
	char report[64];
	int status = child_run_to_end(ACT_OPEN, report, sizeof(report));

	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "open(), access() and socket() fail with EACCES, not "
	    "fatal (status 0x%x)", status);
	status = child_run_to_end(ACT_READ_FILES, report, sizeof(report));
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    report[0] == '\0', "read_files: read-only opens work, writing "
	    "and creating ones fail with EACCES (status 0x%x)", status);
}

static void
test_forbidden(enum child_act act, const char *where)
{
	char report[64];
	int status = child_run_to_end(act, report, sizeof(report));

	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
	    "%s: mount() kills it by SIGSYS (status 0x%x)", where, status);
	tap_ok(strcmp(report, "mount") == 0, "%s: the call is named on "
	    "the report pipe ('%s')", where, report);
}

int
main(void)
{
	test_allowed();
	test_refused();
	test_forbidden(ACT_FORBIDDEN, "the main thread");
	test_forbidden(ACT_FORBIDDEN_THREAD, "another thread");
	return tap_done();
}
