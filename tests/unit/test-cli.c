/*
 * The command-line programs speak their users' words, with no daemon
 * to talk to: --help and --version of vmmd and vmctl, a mistyped
 * command answered with the one meant, sizes and counts refused in the
 * units they were given in, and a socket that refuses the user naming
 * the group that may use it.
 *
 *   test-cli VMMD VMCTL
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "tap.h"

static char out[8192], err[8192];

/* Run argv (as uid, unless it is -1); its output in out and err. */
static int
run_as(uid_t uid, char *const argv[])
{
	int po[2], pe[2], status;
	ssize_t n;
	size_t no = 0, ne = 0;
	pid_t pid;

	if (pipe(po) < 0 || pipe(pe) < 0)
		tap_bail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		if (uid != (uid_t)-1 && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	while ((n = read(po[0], out + no, sizeof(out) - 1 - no)) > 0)
		no += (size_t)n;
	while ((n = read(pe[0], err + ne, sizeof(err) - 1 - ne)) > 0)
		ne += (size_t)n;
	out[no] = err[ne] = '\0';
	close(po[0]);
	close(pe[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int
run(char *const argv[])
{
	return run_as((uid_t)-1, argv);
}

/* vmctl with these arguments, on a socket nobody listens on. */
#define VMCTL(...) run((char *const[]){ vmctl, "-s", "/nonexistent/sock", \
	__VA_ARGS__, NULL })

static void
expect_err(int rc, int want_rc, const char *want, const char *what)
{
	tap_ok(rc == want_rc && strstr(err, want) != NULL, "%s: exit %d, "
	    "\"%s\" (%s)", what, rc, want, err);
}

int
main(int argc, char **argv)
{
	char *vmmd, *vmctl, dir[] = "/tmp/vmmd-test-cli.XXXXXX", sock[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int rc, fd;

	if (argc != 3)
		tap_bail("usage: test-cli VMMD VMCTL");
	vmmd = argv[1];
	vmctl = argv[2];

	rc = run((char *const[]){ vmmd, "--version", NULL });
	tap_ok(rc == 0 && strncmp(out, "vmmd " VMMD_VERSION " ",
	    strlen("vmmd " VMMD_VERSION " ")) == 0, "vmmd --version: %s", out);
	rc = run((char *const[]){ vmmd, "--help", NULL });
	tap_ok(rc == 0 && strncmp(out, "usage: vmmd ", 12) == 0 &&
	    strstr(out, "--shutdown-timeout") != NULL && err[0] == '\0',
	    "vmmd --help: usage and options on stdout, exit 0");
	rc = run((char *const[]){ vmmd, "--bogus", NULL });
	tap_ok(rc == 1 && strstr(err, "usage: vmmd ") != NULL,
	    "vmmd --bogus: usage on stderr, exit 1");
	rc = run((char *const[]){ vmmd, "-f", "-c", "/nonexistent/vmmd.conf",
	    NULL });
	tap_ok(rc == 1 && strstr(err, "/nonexistent/vmmd.conf: No such file")
	    != NULL, "vmmd -c with a missing file: %s", err);
	rc = run((char *const[]){ vmmd, "-f", "-c", "/dev/null", "-t", "1h",
	    NULL });
	tap_ok(rc == 1 && strstr(err, "-t 1h: '1h' is not a number of "
	    "seconds") != NULL, "vmmd -t 1h: %s", err);

	rc = run((char *const[]){ vmctl, "--version", NULL });
	tap_ok(rc == 0 && strncmp(out, "vmctl " VMMD_VERSION " ",
	    strlen("vmctl " VMMD_VERSION " ")) == 0,
	    "vmctl --version: %s", out);

	expect_err(VMCTL("strat", "web"), 2, "unknown command 'strat' (did "
	    "you mean 'start'?)", "a swapped pair of letters");
	expect_err(VMCTL("auto", "web", "on"), 2, "(did you mean "
	    "'autostart'?)", "the start of a command");
	expect_err(VMCTL("lsit"), 2, "(did you mean 'list'?)", "list");
	rc = VMCTL("frobnicate");
	tap_ok(rc == 2 && strstr(err, "unknown command 'frobnicate'") !=
	    NULL && strstr(err, "did you mean") == NULL,
	    "nothing near: no guess (%s)", err);
	expect_err(VMCTL("create", "web", "--memory", "300G"), 2,
	    "--memory 300G: at most 256G", "too much memory");
	expect_err(VMCTL("create", "web", "--memory", "8M"), 2,
	    "--memory 8M: at least 16M", "too little memory");
	expect_err(VMCTL("create", "web", "--vcpus", "65"), 2,
	    "--vcpus 65: at most 64", "too many vCPUs");
	expect_err(VMCTL("autostart", "web", "yes"), 2, "'yes': on or off",
	    "autostart yes");
	{
		char longline[3000];

		memset(longline, 'x', sizeof(longline) - 1);
		longline[sizeof(longline) - 1] = '\0';
		expect_err(VMCTL("create", "web", "--cmdline", longline), 2,
		    "--cmdline: 2999 bytes, at most 2048", "a long cmdline");
	}

	/* An option meaning one value, given twice: refused by name. */
	expect_err(VMCTL("create", "web", "--vsock", "auto", "--vsock", "5"),
	    2, "--vsock: given more than once", "--vsock twice");
	expect_err(VMCTL("run", "web", "--memory", "1G", "--memory", "2G"),
	    2, "--memory: given more than once", "--memory twice");
	expect_err(VMCTL("create", "web", "--rng", "--rng"), 2,
	    "--rng: given more than once", "--rng twice");
	expect_err(VMCTL("stop", "web", "--timeout", "1", "--timeout", "2"),
	    2, "--timeout: given more than once", "stop --timeout twice");
	expect_err(VMCTL("stats", "web", "--vcpu", "0", "--vcpu", "1"), 2,
	    "--vcpu: given more than once", "stats --vcpu twice");
	/* --disk and --net repeat: they get as far as the (absent) daemon */
	expect_err(VMCTL("create", "web", "--disk", "/a", "--disk", "/b",
	    "--net", "user", "--net", "tap=t0"), 3, "cannot connect",
	    "--disk and --net twice: accepted");

	/* A socket that refuses: root, as nobody; anyone else, mode 0. */
	if (mkdtemp(dir) == NULL || chmod(dir, 0755) < 0)
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(sock, sizeof(sock), "%s/control.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 1) < 0 || chmod(sock, geteuid() == 0 ? 0660 : 0) < 0)
		tap_bail("socket %s: %s", sock, strerror(errno));
	rc = run_as(geteuid() == 0 ? 65534 : (uid_t)-1,
	    (char *const[]){ vmctl, "-s", sock, "list", NULL });
	expect_err(rc, 3, "Permission denied (only root and the members of "
	    "group " VMMD_GROUP " may use it)", "a socket that refuses");
	close(fd);
	unlink(sock);
	rmdir(dir);
	return tap_done();
}
