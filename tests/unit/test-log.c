/*
 * What a log line may carry: messages quote guests, disk images and
 * clients, and none of their control characters (an escape sequence for
 * the terminal, a newline that forges a second line) reaches a reader
 * as it is, on any of the log's ways out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "tap.h"

static char sunk[4096];

static void
capture(int priority, const char *ident, const char *msg)
{
	(void)priority;
	(void)ident;
	snprintf(sunk, sizeof(sunk), "%s", msg);
}

/* What one log_info() writes to standard error. */
static void
via_stderr(const char *arg, char *out, size_t outlen)
{
	int fd = memfd_create("log", MFD_CLOEXEC), saved = dup(STDERR_FILENO);
	ssize_t n = -1;

	out[0] = '\0';
	if (fd < 0 || saved < 0 || dup2(fd, STDERR_FILENO) < 0)
		return;
	log_info("title '%s'", arg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, out, outlen - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
}

int
main(void)
{
	static const char hostile[] = "Debian\x1b[2J\nfake: root login\x07"
	    "\xc2\x9b" "31m\xff";
	char line[4096];

	log_init("test", 1, 1);
	via_stderr(hostile, line, sizeof(line));
	tap_ok(strchr(line, '\x1b') == NULL && strchr(line, '\x07') == NULL &&
	    strstr(line, "\xc2\x9b") == NULL && strchr(line, '\xff') == NULL,
	    "standard error: no escape, bell, C1 control or stray byte");
	tap_ok(strchr(line, '\n') == line + strlen(line) - 1,
	    "standard error: one line, whatever the message holds");
	tap_ok(strstr(line, "Debian\\x1b[2J\\x0afake: root login\\x07"
	    "\\xc2\\x9b31m\\xff'") != NULL, "each shown as \\xNN, the rest "
	    "as it was");
	log_set_sink(capture);
	log_warn("%s", hostile);
	tap_ok(strcmp(sunk, "Debian\\x1b[2J\\x0afake: root login\\x07"
	    "\\xc2\\x9b31m\\xff") == 0, "a sink gets the same");
	log_info("caf\xc3\xa9 \xe2\x9c\x93 back\\slash");
	tap_ok(strcmp(sunk, "caf\xc3\xa9 \xe2\x9c\x93 back\\slash") == 0,
	    "text that is already safe is untouched");
	log_set_sink(NULL);
	return tap_done();
}
