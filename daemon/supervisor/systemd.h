/*
 * The supervisor's link to systemd, and the only file that calls
 * libsystemd: readiness and status (sd_notify), the control socket
 * systemd may pass (sd_listen_fds), the watchdog, and log lines sent to
 * the journal with fields of their own, and whether a stop is a restart.
 * Every function works, and does
 * nothing, when vmmd does not run under systemd.  Event loop thread only.
 */
#ifndef VMMD_SYSTEMD_H
#define VMMD_SYSTEMD_H

#include <stdint.h>

struct event_base;
struct systemd;

/*
 * Read what systemd passed in the environment ($NOTIFY_SOCKET,
 * $WATCHDOG_USEC, $LISTEN_FDS) and take the watchdog and socket
 * variables out of it, so that workers do not see them.  The watchdog
 * pings start here, from a timer on base at half the interval, so that
 * a loop that no longer runs its callbacks stops pinging and systemd
 * restarts the service.  Returns NULL only when out of memory.
 */
struct systemd *systemd_new(struct event_base *base);
void	systemd_free(struct systemd *s);

/* The watchdog interval in microseconds, 0 when there is none. */
uint64_t systemd_watchdog_usec(const struct systemd *s);

/*
 * The listening control socket systemd passed (socket activation):
 * its descriptor, or -1 when none was passed.  More than one, or one
 * that is not a listening AF_UNIX stream socket, is an error: -EINVAL
 * with err set.
 */
int	systemd_listen_fd(struct systemd *s, char *err, size_t errlen);

/*
 * Whether the SIGTERM vmmd got is systemd stopping the service only to
 * start it again (systemctl restart or try-restart, a package upgrade):
 * 1 when the service's pending job is a restart, 0 when it is anything
 * else or there is none (a stop, a system shutdown, a kill by hand),
 * -errno when systemd cannot be asked (not run by systemd, no bus).
 * Asks the service manager over D-Bus, synchronously and for two
 * seconds at most: called once, while vmmd stops.
 */
int	systemd_stop_is_restart(struct systemd *s);

/* READY=1 with the status line; STATUS= alone; STOPPING=1. */
void	systemd_ready(struct systemd *s, const char *status);
void	systemd_status(struct systemd *s, const char *status);
void	systemd_stopping(struct systemd *s, const char *status);

/*
 * When standard error is the journal ($JOURNAL_STREAM names it), send
 * log lines to the journal natively instead: with PRIORITY, and VM=NAME
 * for a line about one VM (one that begins "VM 'NAME': ").  Returns
 * whether it did.
 */
int	systemd_log_to_journal(void);

#endif
