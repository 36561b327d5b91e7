/* The test build's hooks (see test-hook.h). */
#include <stdlib.h>
#include <unistd.h>

#include <seccomp.h>

#include "log.h"
#include "test-hook.h"
#include "worker.h"

static void
test_hook_forbidden_cb(evutil_socket_t fd, short what, void *arg)
{
	int nr = (int)(intptr_t)arg;

	(void)fd;
	(void)what;
	log_info("test hook: system call %d", nr);
	syscall(nr, 0, 0, 0, 0, 0, 0);
	log_error("test hook: system call %d returned", nr);
}

void
test_hook_sandboxed(struct worker *w)
{
	static const struct timeval later = { 0, 500000 };
	const char *name = getenv("VMMD_TEST_FORBIDDEN_CALL");
	int nr;

	if (name == NULL || *name == '\0')
		return;
	nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR || nr < 0) {
		log_error("test hook: no system call '%s'", name);
		return;
	}
	/* Lives as long as the process, which it is meant to end. */
	if (event_base_once(w->base, -1, EV_TIMEOUT, test_hook_forbidden_cb,
	    (void *)(intptr_t)nr, &later) < 0)
		log_error("test hook: cannot arm the timer");
}

pid_t
test_hook_adopt_pid(pid_t pid)
{
	const char *lie = getenv("VMMD_TEST_ADOPT_PID");

	if (lie == NULL || *lie == '\0')
		return pid;
	log_info("test hook: worker.adopt says pid %s", lie);
	return (pid_t)strtol(lie, NULL, 10);
}
