/*
 * The supervisor's link to systemd through libsystemd (see systemd.h).
 *
 * sd_notify() reads $NOTIFY_SOCKET at every call, so the variable stays
 * in vmmd's environment; workers remove it from theirs (only vmmd, the
 * main process, speaks to the service manager).  The watchdog and
 * socket-activation variables are taken out of the environment as soon
 * as they are read: they describe vmmd alone.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>

#include <event2/event.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-login.h>

#include "log.h"
#include "systemd.h"

struct systemd {
	struct event *watchdog_ev;	/* NULL without a watchdog */
	uint64_t watchdog_usec;
	bool notify;			/* $NOTIFY_SOCKET was set */
};

static void
systemd_watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	sd_notify(0, "WATCHDOG=1");
}

struct systemd *
systemd_new(struct event_base *base)
{
	struct systemd *s;
	struct timeval tv;
	uint64_t half;
	int rc;

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->notify = getenv("NOTIFY_SOCKET") != NULL;
	rc = sd_watchdog_enabled(1, &s->watchdog_usec);
	if (rc < 0)
		log_warn("watchdog: %s", strerror(-rc));
	if (rc <= 0) {
		s->watchdog_usec = 0;
		return s;
	}
	/*
	 * The one timer the supervisor keeps while nothing happens: the
	 * administrator asked for it with WatchdogSec=.
	 */
	half = s->watchdog_usec / 2;
	tv.tv_sec = (time_t)(half / 1000000);
	tv.tv_usec = (suseconds_t)(half % 1000000);
	s->watchdog_ev = event_new(base, -1, EV_PERSIST, systemd_watchdog_cb,
	    s);
	if (s->watchdog_ev == NULL || event_add(s->watchdog_ev, &tv) < 0) {
		systemd_free(s);
		return NULL;
	}
	log_debug("watchdog: pinging every %ju us", (uintmax_t)half);
	return s;
}

void
systemd_free(struct systemd *s)
{
	if (s == NULL)
		return;
	if (s->watchdog_ev != NULL)
		event_free(s->watchdog_ev);
	free(s);
}

uint64_t
systemd_watchdog_usec(const struct systemd *s)
{
	return s->watchdog_usec;
}

int
systemd_listen_fd(struct systemd *s, char *err, size_t errlen)
{
	int n, fd = SD_LISTEN_FDS_START;

	n = sd_listen_fds(1);
	if (n < 0) {
		snprintf(err, errlen, "sockets passed by systemd: %s",
		    strerror(-n));
		return -EINVAL;
	}
	if (n == 0)
		return -1;
	if (n > 1) {
		snprintf(err, errlen, "systemd passed %d sockets: vmmd "
		    "listens on one (ListenStream= once in vmmd.socket)", n);
		return -EINVAL;
	}
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
		snprintf(err, errlen, "the socket systemd passed is not a "
		    "listening AF_UNIX stream socket");
		return -EINVAL;
	}
	return fd;
}

static void
systemd_notify(struct systemd *s, const char *what, const char *status)
{
	int rc;

	if (!s->notify)
		return;
	if (what != NULL)
		rc = sd_notifyf(0, "%s\nSTATUS=%s", what, status);
	else
		rc = sd_notifyf(0, "STATUS=%s", status);
	if (rc < 0)
		log_warn("sd_notify: %s", strerror(-rc));
}

void
systemd_ready(struct systemd *s, const char *status)
{
	systemd_notify(s, "READY=1", status);
}

void
systemd_status(struct systemd *s, const char *status)
{
	systemd_notify(s, NULL, status);
}

void
systemd_stopping(struct systemd *s, const char *status)
{
	systemd_notify(s, "STOPPING=1", status);
}

/*
 * A connection to the service manager: its private socket first (vmmd
 * runs as root, and PID 1 answers there even on a system without a
 * D-Bus daemon, as systemctl does), the system bus otherwise.
 */
static int
systemd_bus_open(sd_bus **busp)
{
	sd_bus *bus = NULL;
	int rc;

	rc = sd_bus_new(&bus);
	if (rc < 0)
		return rc;
	rc = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
	if (rc >= 0)
		rc = sd_bus_start(bus);
	if (rc < 0) {
		sd_bus_unref(bus);
		rc = sd_bus_open_system(&bus);
		if (rc < 0)
			return rc;
	}
	(void)sd_bus_set_method_call_timeout(bus, 2 * 1000000);
	*busp = bus;
	return 0;
}

int
systemd_stop_is_restart(struct systemd *s)
{
	static const char dest[] = "org.freedesktop.systemd1";
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	char *unit = NULL, *unit_path = NULL, *type = NULL;
	const char *job_path;
	sd_bus *bus = NULL;
	uint32_t job_id;
	int rc;

	/* Only a service systemd started has a job to look at. */
	if (!s->notify)
		return -ENOTSUP;
	if ((rc = sd_pid_get_unit(0, &unit)) < 0 ||
	    (rc = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit,
	    &unit_path)) < 0 || (rc = systemd_bus_open(&bus)) < 0)
		goto out;
	rc = sd_bus_get_property(bus, dest, unit_path,
	    "org.freedesktop.systemd1.Unit", "Job", &error, &reply, "(uo)");
	if (rc < 0 || (rc = sd_bus_message_read(reply, "(uo)", &job_id,
	    &job_path)) < 0)
		goto out;
	rc = 0;
	if (job_id == 0)
		goto out;
	/*
	 * A restart job keeps its type while it stops the unit and turns
	 * into a start job after; try-restart of a running unit collapses
	 * into restart.
	 */
	rc = sd_bus_get_property_string(bus, dest, job_path,
	    "org.freedesktop.systemd1.Job", "JobType", &error, &type);
	if (rc >= 0)
		rc = strcmp(type, "restart") == 0 ||
		    strcmp(type, "try-restart") == 0;
out:
	if (rc < 0)
		log_warn("cannot ask systemd whether %s restarts: %s",
		    unit != NULL ? unit : "the service",
		    error.message != NULL ? error.message : strerror(-rc));
	else
		log_debug("%s: %s job", unit, type != NULL ? type : "no");
	sd_bus_error_free(&error);
	sd_bus_message_unref(reply);
	sd_bus_flush_close_unref(bus);
	free(type);
	free(unit_path);
	free(unit);
	return rc;
}

/* "VM 'NAME': ..." names the VM the line is about. */
static size_t
systemd_vm_name(const char *msg, const char **name)
{
	const char *end;

	if (strncmp(msg, "VM '", 4) != 0 ||
	    (end = strstr(msg + 4, "': ")) == NULL)
		return 0;
	*name = msg + 4;
	return (size_t)(end - *name);
}

static void
systemd_journal_sink(int priority, const char *ident, const char *msg)
{
	const char *vm = NULL;
	size_t len;

	len = systemd_vm_name(msg, &vm);
	if (len > 0)
		sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority,
		    "SYSLOG_IDENTIFIER=%s", ident, "VM=%.*s", (int)len, vm,
		    NULL);
	else
		sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority,
		    "SYSLOG_IDENTIFIER=%s", ident, NULL);
}

int
systemd_log_to_journal(void)
{
	if (!log_stderr_is_journal())
		return 0;
	log_set_sink(systemd_journal_sink);
	return 1;
}
