/*
 * Logging: stderr in the foreground, syslog otherwise, or a sink the
 * program sets (the supervisor's journal).
 *
 * Used by the supervisor and by the worker, so it knows nothing about
 * either.  Lines are written with one write(2) each so that the
 * supervisor's and its workers' lines do not interleave on a shared
 * stderr.  When that stderr is the journal, each line starts with its
 * syslog priority ("<3>"), which journald turns into PRIORITY=.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

static struct {
	char ident[64];
	int to_stderr;
	int verbose;
	int syslog_open;
	int journal;			/* stderr is the journal */
	log_sink_fn sink;
} log_state = { "vmmd", 1, 0, 0, 0, NULL };

int
log_stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	uintmax_t dev, ino;
	struct stat st;
	char end;

	if (env == NULL ||
	    sscanf(env, "%ju:%ju%c", &dev, &ino, &end) != 2 ||
	    fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

void
log_init(const char *ident, int to_stderr, int verbose)
{
	snprintf(log_state.ident, sizeof(log_state.ident), "%s", ident);
	log_state.verbose = verbose;
	log_state.to_stderr = 1;
	log_state.journal = log_stderr_is_journal();
	if (!to_stderr)
		log_to_syslog();
}

void
log_to_syslog(void)
{
	if (!log_state.syslog_open) {
		openlog(log_state.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
		log_state.syslog_open = 1;
	}
	log_state.to_stderr = 0;
}

void
log_set_sink(log_sink_fn sink)
{
	log_state.sink = sink;
}

int
log_verbose(void)
{
	return log_state.verbose;
}

int
log_stderr_usable(void)
{
	struct stat st, null;

	if (fstat(STDERR_FILENO, &st) < 0)
		return 0;
	if (S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 &&
	    st.st_rdev == null.st_rdev)
		return 0;
	return 1;
}

void
log_vmsg(int priority, const char *fmt, va_list ap)
{
	char line[2048];
	const char *level;
	int saved_errno = errno;
	int n, off;

	if (priority == LOG_DEBUG && !log_state.verbose)
		return;
	if (log_state.sink != NULL) {
		vsnprintf(line, sizeof(line), fmt, ap);
		log_state.sink(priority, log_state.ident, line);
		errno = saved_errno;
		return;
	}
	if (!log_state.to_stderr) {
		vsyslog(priority, fmt, ap);
		errno = saved_errno;
		return;
	}

	switch (priority) {
	case LOG_ERR:
		level = "error: ";
		break;
	case LOG_WARNING:
		level = "warning: ";
		break;
	case LOG_DEBUG:
		level = "debug: ";
		break;
	default:
		level = "";
		break;
	}
	if (log_state.journal)
		off = snprintf(line, sizeof(line), "<%d>%s[%ld]: ", priority,
		    log_state.ident, (long)getpid());
	else
		off = snprintf(line, sizeof(line), "%s[%ld]: %s",
		    log_state.ident, (long)getpid(), level);
	if (off < 0)
		off = 0;
	if ((size_t)off >= sizeof(line) - 1)
		off = sizeof(line) - 2;
	n = vsnprintf(line + off, sizeof(line) - off - 1, fmt, ap);
	if (n < 0)
		n = 0;
	off += n;
	if ((size_t)off > sizeof(line) - 2)
		off = sizeof(line) - 2;
	line[off++] = '\n';
	(void)!write(STDERR_FILENO, line, off);
	errno = saved_errno;
}

#define LOG_FN(fn, prio)						\
void									\
fn(const char *fmt, ...)						\
{									\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	log_vmsg(prio, fmt, ap);					\
	va_end(ap);							\
}

LOG_FN(log_error, LOG_ERR)
LOG_FN(log_warn, LOG_WARNING)
LOG_FN(log_info, LOG_INFO)
LOG_FN(log_debug, LOG_DEBUG)
