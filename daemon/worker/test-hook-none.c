/* The product's test hooks: none (see test-hook.h). */
#include "test-hook.h"

void
test_hook_sandboxed(struct worker *w)
{
	(void)w;
}

pid_t
test_hook_adopt_pid(pid_t pid)
{
	return pid;
}

void
test_hook_reading(const char *what, const struct sandbox_facts *f,
    long max_rss_kib, int open_fds)
{
	(void)what;
	(void)f;
	(void)max_rss_kib;
	(void)open_fds;
}

void
test_hook_sending(struct json_object *msg)
{
	(void)msg;
}

int
test_hook_reader_timeout_ms(int ms)
{
	return ms;
}

int
test_hook_reader(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

int
test_hook_snapshot_busy(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

void
test_hook_resume_asked(void)
{
}

void
test_hook_shutdown_asked(void)
{
}

void
test_hook_snapshot_late(void)
{
}

void
test_hook_disk_made(unsigned int i, struct blk_backend *be,
    bool restored)
{
	(void)i;
	(void)be;
	(void)restored;
}

void
test_hook_resuming(struct worker *w)
{
	(void)w;
}

void
test_hook_machine_built(struct worker *w)
{
	(void)w;
}

void
test_hook_sandboxing(struct worker *w)
{
	(void)w;
}

void
test_hook_migrate_frame(void)
{
}
