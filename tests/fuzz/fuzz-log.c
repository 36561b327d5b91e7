/*
 * The log of the fuzzers that drive daemon code (log.h): every message
 * is formatted, so that a bad format or argument still shows under the
 * sanitizers, and dropped unless VMMD_FUZZ_LOG is set in the
 * environment (then it goes to stderr).  Millions of runs must not
 * fill a terminal or the system log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

#include "log.h"

static int fuzz_log_on = -1;

void
log_init(const char *ident, int to_stderr, int verbose)
{
}

void
log_to_syslog(void)
{
}

int
log_verbose(void)
{
	return 1;
}

int
log_stderr_usable(void)
{
	return 1;
}

void
log_vmsg(int priority, const char *fmt, va_list ap)
{
	char line[2048];

	if (fuzz_log_on < 0)
		fuzz_log_on = getenv("VMMD_FUZZ_LOG") != NULL;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (fuzz_log_on)
		fprintf(stderr, "vmmd-fuzz: %s\n", line);
}

#define FUZZ_LOG_FN(name, prio)					\
void									\
name(const char *fmt, ...)						\
{									\
	va_list ap;							\
									\
	va_start(ap, fmt);						\
	log_vmsg(prio, fmt, ap);					\
	va_end(ap);							\
}

FUZZ_LOG_FN(log_error, LOG_ERR)
FUZZ_LOG_FN(log_warn, LOG_WARNING)
FUZZ_LOG_FN(log_info, LOG_INFO)
FUZZ_LOG_FN(log_debug, LOG_DEBUG)
