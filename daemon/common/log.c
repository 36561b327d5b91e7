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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "text-escape.h"

static struct {
	char ident[64];
	int to_stderr;
	int verbose;
	int syslog_open;
	int journal;			/* stderr is the journal */
	log_sink_fn sink;
	int journal_fd;			/* log_to_journal(), or -1 */
	char vm[256];			/* its VM= field, "" for none */
} log_state = { "vmmd", 1, 0, 0, 0, NULL, -1, "" };

#define LOG_JOURNAL_SOCKET	"/run/systemd/journal/socket"

int
log_to_journal(const char *vm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, LOG_JOURNAL_SOCKET, sizeof(LOG_JOURNAL_SOCKET));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* The field's value on one line: no newline can end it early. */
	snprintf(log_state.vm, sizeof(log_state.vm), "%s", vm ? vm : "");
	for (char *p = log_state.vm; *p != '\0'; p++)
		if (*p == '\n')
			*p = ' ';
	if (log_state.journal_fd >= 0)
		close(log_state.journal_fd);
	log_state.journal_fd = fd;
	return 0;
}

/*
 * One datagram of the journal's native protocol: KEY=VALUE lines, the
 * message in the binary form (its length first) so that it may hold
 * anything.  0, or -1 when the journal did not take it.
 */
static int
log_journal_send(int priority, const char *msg)
{
	char buf[2048 + 512];
	uint64_t n = strlen(msg);
	int off;

	off = snprintf(buf, sizeof(buf), "PRIORITY=%d\nSYSLOG_IDENTIFIER=%s\n"
	    "SYSLOG_PID=%ld\n%s%s%sMESSAGE\n", priority, log_state.ident,
	    (long)getpid(), log_state.vm[0] ? "VM=" : "", log_state.vm,
	    log_state.vm[0] ? "\n" : "");
	if (off < 0 || (size_t)off + 8 + n + 1 > sizeof(buf))
		return -1;
	/* Little-endian, as sd_journal_sendv() writes it. */
	for (int i = 0; i < 8; i++)
		buf[off + i] = (char)((n >> (8 * i)) & 0xff);
	memcpy(buf + off + 8, msg, n);
	buf[off + 8 + n] = '\n';
	return write(log_state.journal_fd, buf, (size_t)off + 8 + n + 1) < 0 ?
	    -1 : 0;
}

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

/*
 * Every line is made safe for a terminal and for its reader first:
 * messages quote what guests, disk images and clients wrote, and a
 * control character there (an escape sequence, a newline that would
 * forge a second line) goes out as \xNN (text-escape.h).
 */
void
log_vmsg(int priority, const char *fmt, va_list ap)
{
	char raw[2048], msg[2048], line[2048 + 128];
	const char *level;
	int saved_errno = errno;
	int n;

	if (priority == LOG_DEBUG && !log_state.verbose)
		return;
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	text_escape(msg, sizeof(msg), raw, n < 0 ? 0 :
	    (size_t)n < sizeof(raw) ? (size_t)n : sizeof(raw) - 1);
	if (log_state.journal_fd >= 0) {
		if (log_journal_send(priority, msg) == 0) {
			errno = saved_errno;
			return;
		}
		/* Not taken: stderr. */
		fprintf(stderr, "%s[%ld]: %s\n", log_state.ident,
		    (long)getpid(), msg);
		errno = saved_errno;
		return;
	}
	if (log_state.sink != NULL) {
		log_state.sink(priority, log_state.ident, msg);
		errno = saved_errno;
		return;
	}
	if (!log_state.to_stderr) {
		syslog(priority, "%s", msg);
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
	/* One write: lines of several processes on one stderr stay whole. */
	if (log_state.journal)
		n = snprintf(line, sizeof(line), "<%d>%s[%ld]: %s\n",
		    priority, log_state.ident, (long)getpid(), msg);
	else
		n = snprintf(line, sizeof(line), "%s[%ld]: %s%s\n",
		    log_state.ident, (long)getpid(), level, msg);
	if (n > 0 && (size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n);
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
