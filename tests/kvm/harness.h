/*
 * Harness of the kvm test suite: a private vmmd per test program, JSON
 * clients, consoles, and waits that always have a deadline.
 *
 * Every helper either returns a failure the test can report with tap_ok,
 * or (for setup the rest of a test cannot do without) bails out.  When a
 * test program fails, exits early or bails out, the daemon's log
 * (daemon and worker stderr) is printed as TAP diagnostics; the daemons
 * and their workers are killed and the temporary directory removed at
 * exit in every case (kept, and named, when VMMD_TEST_KEEP is set).
 *
 * Environment (set by tests/kvm/meson.build): VMMD_BIN, VMMD_WORKER_BIN
 * (vmmd finds it next to itself; checked here), VMCTL_BIN, and
 * VMMD_GUEST_<NAME> for each test guest (DEMO is vmmd's default guest).
 */
#ifndef KVM_HARNESS_H
#define KVM_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "tap.h"

/* Deadlines used throughout, in milliseconds. */
#define H_REPLY_MS	30000	/* any request that is not a stop */
#define H_BOOT_MS	60000	/* from vm.start to a guest's first lines, and
				   to what it prints next: generous, for the
				   nested test host on a busy machine */
/*
 * Waits for something that must happen (h_expect, h_file_expect,
 * h_proc_expect, h_wait_state) never give up sooner than this, whatever
 * the caller asked: a bound guards against a hang, not against a slow
 * host, and each returns as soon as what it waits for is there.
 */
#define H_EVENT_MIN_MS	20000

static inline int
h_event_ms(int timeout_ms)
{
	return timeout_ms > H_EVENT_MIN_MS ? timeout_ms : H_EVENT_MIN_MS;
}

/* ------------------------------------------------------------------ */
/* Environment */

/*
 * Call first.  Skips the whole program (TAP "1..0 # SKIP") when
 * /dev/kvm is absent; bails out when it exists but cannot be opened.
 * Installs the cleanup.
 */
void		 h_init(void);
/* An environment variable meson must set (bails out when missing). */
const char	*h_env(const char *);
/*
 * The firmware tests' files: Debian's SeaBIOS, and its VGA BIOS for the
 * display tests.  h_need_seabios() skips the whole program unless
 * H_BIOS_IMAGE (and H_VGA_IMAGE when vga) can be read.
 */
#define H_BIOS_IMAGE	"/usr/share/seabios/bios-256k.bin"
#define H_VGA_IMAGE	"/usr/share/seabios/vgabios-bochs-display.bin"
void		 h_need_seabios(bool vga);
/*
 * The two boot media the build made, named by the environment variables
 * env1 and env2 (VMMD_MEDIA_*): their paths in *p1 and *p2.  Skips the
 * whole program when the build did not make them; bails out when they
 * cannot be read.
 */
void		 h_need_media(const char *env1, const char **p1,
		    const char *env2, const char **p2);
/* CLOCK_MONOTONIC in milliseconds (double: sub-ms precision). */
double		 h_now_ms(void);
void		 h_sleep_ms(int);

/*
 * End of a test program: like tap_done(), but checks first that no
 * worker of any daemon was killed by its sandbox (h_check_forbidden(): a
 * forbidden system call is a hole in the allow-list, whatever the test
 * did), and prints the daemon logs when something failed (h_finish(),
 * which a program that prints no TAP calls alone).  Use as
 * "return h_done();".
 */
void		 h_check_forbidden(void);
void		 h_finish(int failed);
#define h_done()	(h_check_forbidden(), h_finish(tap_failed), tap_done())
/* For a test that makes workers die by their sandbox on purpose: the
 * daemons' logs may name forbidden calls. */
void		 h_expect_forbidden(void);

/*
 * Print every daemon's log as TAP diagnostics: what the last call did
 * not print (its last lines only, when there are many).
 */
void		 h_dump_logs(void);

/* ------------------------------------------------------------------ */
/* The daemon */

struct h_daemon {
	char	 dir[128];	/* private temporary directory */
	char	 sock[192];	/* DIR/control.sock */
	char	 state[192];	/* DIR/state */
	char	 log[192];	/* DIR/vmmd.log: stderr of vmmd and workers */
	char	 conf[192];	/* DIR/vmmd.conf: empty unless a test sets */
	pid_t	 pid;		/* 0 when not running */
	int	 status;	/* wait status of the last exit */
	size_t	 log_shown;	/* lines of log h_dump_logs() printed */
};

/* Starts vmmd -f -s DIR/control.sock -d DIR/state -g DEMO; bails out. */
struct h_daemon	*h_daemon_start(void);
/*
 * The start of most test programs: h_daemon_start() and a client
 * connected to it (bails out when it cannot connect).  Sets *d.
 */
struct h_conn	*h_setup(struct h_daemon **d);
/* Appends "key = value" to DIR/vmmd.conf, for the next (re)start. */
void		 h_daemon_setting(struct h_daemon *, const char *key,
		    const char *value);
/* (Re)starts the daemon with the same directories; 0 or -1. */
int		 h_daemon_spawn(struct h_daemon *);
/*
 * SIGTERM, then waits up to timeout_ms for the exit (SIGKILL to the whole
 * process group after that).  Returns the wait status, or -1 if it had
 * to be killed.
 */
int		 h_daemon_stop(struct h_daemon *, int timeout_ms);
/*
 * Sends sig to the daemon alone (not to its workers, which outlive it
 * unless it stops them) and reaps it: the wait status, or -1.
 */
int		 h_daemon_kill(struct h_daemon *, int sig);
/* Whether pid runs (a zombie does not). */
bool		 h_pid_alive(pid_t);
/* Whether pid is gone (or a zombie) within ms; diag if not. */
bool		 h_pid_gone(pid_t, int ms);
/* h_daemon_stop, then h_daemon_spawn; 0 or -1. */
int		 h_daemon_restart(struct h_daemon *, int timeout_ms);
/* Whether the daemon process still runs (reaps it if it exited). */
bool		 h_daemon_alive(struct h_daemon *);
/* STATEDIR/console/NAME.log, in a static buffer. */
const char	*h_console_log(struct h_daemon *, const char *);
struct h_proc;

/* The test's directory's file name, in one of four buffers by turns. */
const char	*h_in_dir(const struct h_daemon *, const char *name);
/*
 * vmctl -s SOCK ARGS... (NULL-terminated) to its end, as h_run: p
 * filled (free with h_proc_free), its exit status returned.
 */
int		 h_vmctl(const struct h_daemon *, struct h_proc *p,
		    int timeout_ms, const char *arg, ...);
int		 h_vmctlv(const struct h_daemon *, struct h_proc *p,
		    int timeout_ms, const char *arg, va_list ap);
/*
 * For a test that runs vmctl many times, one run kept at a time:
 * h_ctl_use() names the daemon and each run's time limit; h_ctl() runs
 * vmctl -s SOCK ARGS... (NULL-terminated) and returns its exit status,
 * its output kept until the next run (h_ctl_last(), freed there);
 * h_out() and h_err() are its stdout and stderr, "" for none.
 */
void		 h_ctl_use(const struct h_daemon *, int timeout_ms);
int		 h_ctl(const char *arg, ...);
struct h_proc	*h_ctl_last(void);
const char	*h_out(void);
const char	*h_err(void);

/* ------------------------------------------------------------------ */
/* Clients */

struct h_conn;

/* Connects and reads the greeting (deadline H_REPLY_MS); NULL + diag. */
struct h_conn	*h_connect(struct h_daemon *);
/* Connects only: the raw socket (CLOEXEC), or -1 + diag. */
int		 h_connect_fd(struct h_daemon *);
/*
 * A client on fd, a socket already connected to vmmd (by a child with
 * other credentials, say): reads the greeting as h_connect().  Takes fd
 * (closed on failure); NULL + diag on failure.
 */
struct h_conn	*h_conn_adopt(int fd);
void		 h_close(struct h_conn *);
int		 h_conn_fd(struct h_conn *);
struct json_object *h_greeting(struct h_conn *);

/* Sends raw bytes (all of them); 0 or -1. */
int		 h_send(struct h_conn *, const void *, size_t);
/*
 * The next message (reply, error or event) within timeout_ms, or NULL on
 * timeout, EOF or an unparsable line (diag says which).  Queued events
 * come first.  Caller puts it.
 */
struct json_object *h_read_msg(struct h_conn *, int timeout_ms);
/* Next event (queued or new) within timeout_ms; caller puts it. */
struct json_object *h_read_event(struct h_conn *, int timeout_ms);

/*
 * Sends {"id":N,"command":cmd,"arguments":args} (args taken; NULL = none)
 * and returns the reply with that id (events met are queued), or NULL on
 * timeout/EOF, or when c is NULL (a connection that failed).  Caller puts
 * it.
 */
struct json_object *h_call(struct h_conn *, const char *cmd,
		    struct json_object *args, int timeout_ms);
/* Same with the arguments given as printf-formatted JSON text. */
struct json_object *h_callf(struct h_conn *, int timeout_ms, const char *cmd,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Sends a request without waiting; returns its id or -1. */
int64_t		 h_send_request(struct h_conn *, const char *cmd,
		    struct json_object *args);
/* Waits for the reply to id (as h_call). */
struct json_object *h_wait_reply(struct h_conn *, int64_t id, int timeout_ms);

/* Reply inspection (NULL-safe). */
const char	*h_err_class(struct json_object *);	/* NULL: no error */
const char	*h_err_desc(struct json_object *);
struct json_object *h_ret(struct json_object *);	/* "return" or NULL */
const char	*h_str(struct json_object *, const char *key);
int64_t		 h_int(struct json_object *, const char *key, int64_t dflt);
/* s on one line, control bytes escaped, truncated (4 static buffers). */
const char	*h_flat(const char *);
/* One-line text of a reply for diagnostics (static buffer). */
const char	*h_text(struct json_object *);

/*
 * One test point: reply is an error of class cls with a sensible
 * description (one line, not empty); what names the test point.
 */
bool		 h_check_error(struct json_object *, const char *cls,
		    const char *what);
/* cmd with args (JSON text of its arguments) must fail that way. */
void		 h_expect_error(struct h_conn *, const char *cmd,
		    const char *args, const char *cls, const char *what);
/* The same with the arguments as printf-formatted JSON text. */
void		 h_expect_errorf(struct h_conn *, const char *cmd,
		    const char *cls, const char *what, const char *fmt, ...)
		    __attribute__((format(printf, 5, 6)));

/* ------------------------------------------------------------------ */
/* VM helpers: 0 on success; -1 with a diagnostic otherwise. */

/*
 * vm.create {"name":name,"memory_mib":32, <extra>} where extra is the
 * printf-formatted rest of the JSON object ("" or "\"vcpus\":2,...").
 */
int		 h_create(struct h_conn *, const char *name, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
int		 h_start(struct h_conn *, const char *name);
/* timeout_s < 0: leave the daemon's default. */
int		 h_stop(struct h_conn *, const char *name, bool force,
		    int timeout_s, int reply_ms);
/* vm.delete with remove_data: the VM and its overlays and log go. */
int		 h_delete(struct h_conn *, const char *name);
/* The VM's state into buf ("" when it cannot be had). */
const char	*h_state(struct h_conn *, const char *name, char *, size_t);
/* Polls vm.info until state (or timeout); 0 or -1 (diag: last state). */
int		 h_wait_state(struct h_conn *, const char *name,
		    const char *state, int timeout_ms);
/* The worker's pid from vm.info, or -1 (quietly: tests expect both). */
pid_t		 h_vm_pid(struct h_conn *, const char *name);
/* A field of /proc/PID/status ("Seccomp", "Uid") into out, "" if absent. */
const char	*h_proc_status(pid_t pid, const char *field, char *out,
		    size_t len);
/* The VM's worker runs under its system call filter (Seccomp: 2); the
 * field's value (or why not) into out for the message. */
bool		 h_vm_filtered(struct h_conn *, const char *name, char *out,
		    size_t len);
/*
 * vm.info's stats.GROUP, or stats.GROUP.NAME (NULL: the group itself),
 * say stats.devices.rtc; NULL when absent.  *reply is the reply it
 * lives in: the caller puts it, whatever was returned.
 */
struct json_object *h_info_stats(struct h_conn *, const char *vm,
		    const char *group, const char *name,
		    struct json_object **reply);
/* The RTC's periodic tick counters (stats.devices.rtc); -1 if absent. */
struct h_rtc_ticks {
	int64_t raised, delivered, coalesced, reinjected, dropped;
	int64_t backlog, backlog_high, max_slices;
};
void		 h_rtc_ticks(struct json_object *rtc, struct h_rtc_ticks *);
/*
 * Waits on a connection that did events.subscribe for a vm.state event
 * of name with state; returns the event (caller puts) or NULL.
 */
struct json_object *h_wait_event(struct h_conn *, const char *name,
		    const char *state, int timeout_ms);

/* ------------------------------------------------------------------ */
/* Consoles */

struct h_console {
	int	 fd;
	char	*buf;		/* everything read so far, NUL-terminated */
	size_t	 len, cap;
	size_t	 mark;		/* h_expect searches from here */
	bool	 eof;
	struct h_daemon *d;	/* whose VM: h_expect()'s diagnostics */
	char	 vm[64];
};

/*
 * vm.console on a new connection: waits for the reply line (reading it a
 * byte at a time so that no console byte is taken with it), then the
 * connection is raw.  NULL + diag on failure.
 */
struct h_console *h_console_open(struct h_daemon *, const char *name);
void		 h_console_close(struct h_console *);
/*
 * vm.screenshot on a connection of its own: the reply, then exactly its
 * "size" bytes of PNG, in *png (malloc'ed; the caller frees it).  0, or
 * -1 + diag.
 */
int		 h_screenshot(struct h_daemon *, const char *name,
		    unsigned char **png, size_t *len);
/*
 * h_screenshot() decoded: *w x *h pixels, 0xaarrggbb words, in *pixels
 * (malloc'ed, NULL when nothing was decoded; the caller frees it).  0,
 * or -1 + diag.
 */
int		 h_screenshot_pixels(struct h_daemon *, const char *name,
		    uint32_t **pixels, uint32_t *w, uint32_t *h);
/* vm.info's stats.display member for name (the caller puts it), or NULL. */
struct json_object *h_display_stats(struct h_conn *, const char *name);
int		 h_console_write(struct h_console *, const void *, size_t);
/* Reads what arrives for ms milliseconds; the number of new bytes. */
/* One read of what is there within ms; bytes added (0: none or EOF). */
size_t		 h_console_read(struct h_console *, int ms);
size_t		 h_console_drain(struct h_console *, int ms);
/*
 * Waits until needle appears at or after the mark; on success moves the
 * mark past it and returns 0, else -1 (diag shows the tail read and,
 * the console still open, h_vm_diag()).
 */
int		 h_expect(struct h_console *, const char *needle,
		    int timeout_ms);
/* The same, silent (for callers that explain a miss themselves). */
int		 h_find(struct h_console *, const char *needle,
		    int timeout_ms);

/* Occurrences of needle in hay[0..len). */
size_t		 h_count(const char *hay, size_t len, const char *needle);
/* Removes path and all below it, as far as it can; 0, or -1 if it stays. */
int		 h_rm_tree(const char *path);
/* Entries of directory path other than . and .., or -1. */
int		 h_dir_count(const char *path);
/* A whole file, NUL-terminated (NULL if it cannot be read). */
char		*h_read_file(const char *path, size_t *lenp);
/*
 * A copy of the file from at to (made, or emptied), mode mode; runs of
 * zero bytes stay holes, so a sparse file (a snapshot's memory) costs
 * what it holds.  Bails out on failure.
 */
void		 h_copy_file(const char *from, const char *to, mode_t mode);
/* Each line of path as a diagnostic, "# what: LINE" (shown flat). */
void		 h_diag_lines(const char *what, const char *path);
/* Waits until path holds needle at least count times; 0 or -1. */
int		 h_file_expect(const char *path, const char *needle,
		    size_t count, int timeout_ms);
/*
 * What vm is doing, as diagnostics: vCPU 0's KVM counters, each
 * device's figures, the worker's threads.  h_expect() shows them when
 * a console it reads stays silent.
 */
void		 h_vm_diag(struct h_daemon *, const char *vm);
/*
 * h_file_expect on a VM's console log; when it fails, also h_vm_diag():
 * where a firmware that never got there spent its time.  In the nested
 * test host, a vCPU found stuck in real mode (harness.c says how it is
 * told, and why) has its VM reset and waited for once more.
 */
int		 h_vm_log_expect(struct h_conn *, const char *vm,
		    const char *path, const char *needle, size_t count,
		    int timeout_ms);

/* ------------------------------------------------------------------ */
/* Child programs (vmctl) */

struct h_proc {
	pid_t	 pid;
	int	 in, out, err;	/* our ends, -1 when closed */
	char	*obuf, *ebuf;	/* collected output, NUL-terminated */
	size_t	 olen, elen;
	size_t	 ocap, ecap;
	int	 status;	/* wait status once reaped, else -1 */
};

/* Starts argv (NULL-terminated) with pipes on stdin/stdout/stderr. */
int		 h_spawn(struct h_proc *, char *const argv[]);
/* The same as uid, gid uid and no groups ((uid_t)-1: as we are). */
int		 h_spawn_as(struct h_proc *, uid_t uid, char *const argv[]);
/* Reads the child's output for up to ms (stops early at EOF on both). */
void		 h_proc_pump(struct h_proc *, int ms);
/* Waits until stdout holds needle; 0 or -1. */
int		 h_proc_expect(struct h_proc *, const char *needle,
		    int timeout_ms);
/*
 * Closes stdin, collects output and reaps within timeout_ms (SIGKILL
 * after that).  Returns the exit status, 128+signal, or -1 if killed.
 */
int		 h_proc_wait(struct h_proc *, int timeout_ms);
void		 h_proc_free(struct h_proc *);
/*
 * Runs argv to completion with input on stdin (may be NULL); fills p
 * (free with h_proc_free) and returns as h_proc_wait.
 */
int		 h_run(struct h_proc *, const char *input, int timeout_ms,
		    char *const argv[]);
int		 h_run_as(struct h_proc *, uid_t uid, const char *input,
		    int timeout_ms, char *const argv[]);
/*
 * The program prog as found in $PATH (/usr/bin:/bin without one), in a
 * buffer of the caller's; NULL when it is not installed.
 */
const char	*h_which(const char *prog, char *buf, size_t len);

#endif
