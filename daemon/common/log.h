/*
 * Process-wide logging for vmmd and its workers: to stderr when running
 * in the foreground, else to syslog.  This is the one place that holds
 * process-global state on purpose: a process has one log.
 */
#ifndef VMMD_LOG_H
#define VMMD_LOG_H

#include <stdarg.h>

/*
 * ident names the process in every line ("vmmd", "vmmd-worker[web]");
 * to_stderr selects stderr over syslog; verbose enables debug lines.
 * Logging before log_init() goes to stderr.
 */
void	log_init(const char *ident, int to_stderr, int verbose);
/* Switch to syslog after daemonizing (keeps ident and verbosity). */
void	log_to_syslog(void);
int	log_verbose(void);
/*
 * Whether standard error is the journal's stream ($JOURNAL_STREAM
 * names its device and inode, as systemd.exec(5) describes).
 */
int	log_stderr_is_journal(void);
/*
 * From now on, give every line (formatted, without ident or newline)
 * to sink instead of writing it; NULL writes again.
 */
typedef void (*log_sink_fn)(int priority, const char *ident,
    const char *msg);
void	log_set_sink(log_sink_fn sink);
/*
 * Whether standard error goes anywhere (not closed, not /dev/null): a
 * child of a daemonized vmmd inherits /dev/null and should use syslog.
 */
int	log_stderr_usable(void);

/*
 * Send every line from now on to the journal's native socket
 * (/run/systemd/journal/socket), one datagram each with PRIORITY=,
 * SYSLOG_IDENTIFIER=, and the field VM=vm when vm is not NULL.  The
 * socket is connected here, so that a process sandboxed later (which
 * may write but not connect) keeps logging; it outlives whoever started
 * the process.  A line the journal does not take goes to stderr.  0 or
 * -errno (the lines go where they went before).
 */
int	log_to_journal(const char *vm);

void	log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_vmsg(int priority, const char *fmt, va_list ap)
	    __attribute__((format(printf, 2, 0)));

#endif
