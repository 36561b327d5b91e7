/*
 * vmctl: the command-line client of vmmd.  Shared declarations of the
 * command table, the global options and the exit statuses; the helpers
 * every command uses (ctl.c) and the commands (cmd-*.c).
 *
 * Who calls whom, top to bottom, with no way back up:
 *   vmctl.c                       the command table
 *   cmd-vms.c cmd-console.c cmd-run.c cmd-display.c cmd-stats.c
 *   cmd-edit.c
 *                                 one file per command group
 *   create-args.c create-options.c console-attach.c
 *                                 what two commands share
 *   stats-table.c                 vmctl stats' tables
 *   client.c args.c ctl.c         the protocol, parsing, messages
 */
#ifndef VMCTL_H
#define VMCTL_H

#include <json-c/json.h>

/*
 * Exit statuses, one per error class whoever found the error (vmctl's
 * own checks or the daemon), documented in vmctl(1): ctl_exit_status().
 */
enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAIL = 1,	/* internal, a local failure, any other class */
	CTL_EXIT_USAGE = 2,	/* usage, invalid_argument: a bad command line */
	CTL_EXIT_CONN = 3,	/* connection_failed: no vmmd, or it went away */
	CTL_EXIT_NOT_FOUND = 4,	/* not_found */
	CTL_EXIT_EXISTS = 5,	/* exists */
	CTL_EXIT_BAD_STATE = 6,	/* bad_state */
	CTL_EXIT_PERMISSION = 7, /* permission_denied */
	CTL_EXIT_TIMEOUT = 8,	/* timeout */
	CTL_EXIT_LIMIT = 9,	/* limit_reached */
	CTL_EXIT_KVM = 10,	/* kvm_unavailable */
};

struct ctl;

struct ctl_command {
	const char	*name;
	int		(*run)(struct ctl *, int, char **);
	const char	*synopsis;	/* arguments after the command name */
	const char	*summary;
	const char	*help;		/* more for 'vmctl help NAME', or NULL */
};

/* What every command gets: the global options and its table entry. */
struct ctl {
	const char			*socket;
	int				 json;
	const struct ctl_command	*cmd;
};

/*
 * ctl.c.  Messages on stderr, "vmctl: " prefixed, one line each.  With
 * -j errors go to stdout instead, each as one JSON object
 * {"error": {"class", "desc", "exit"[, "vm"]}}: once ctl_json_errors()
 * was called, ctl_warnx() holds its messages back, and ctl_finish()
 * turns them into that object when vmctl fails without having reported
 * one (else prints them as they were, warnings of a success).
 */
void	ctl_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
/* A note on stderr, -j or not: not an error. */
void	ctl_note(const char *, ...) __attribute__((format(printf, 1, 2)));
void	ctl_json_errors(void);
int	ctl_finish(int);
/* The exit status of an error class ("not_found"); unknown ones: 1. */
int	ctl_exit_status(const char *);
/*
 * Reports an error of class cls about VM vm (NULL: none), as
 * "vmctl: WHAT: CLASS: DESC" (what may be NULL) or as JSON; returns
 * its exit status.
 */
int	ctl_error(const char *, const char *, const char *, const char *);
/*
 * A bad value on the command line (class invalid_argument), or a
 * command line that cannot be parsed (ctl_syntax: class usage), for
 * the current command; both return CTL_EXIT_USAGE.
 */
int	ctl_usage(struct ctl *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	ctl_syntax(struct ctl *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
/* The --help output of the current command. */
void	ctl_command_help(const struct ctl_command *);

/*
 * Per-command option parsing.  Every command also accepts the global
 * -j/--json, -s/--socket and -h/--help after its name; these helpers
 * deal with them and with getopt's error cases.
 */
#define CTL_COMMON_OPTSTRING	":hjs:"
#define CTL_COMMON_LONGOPTS						\
	{ "help",	no_argument,		NULL,	'h' },		\
	{ "json",	no_argument,		NULL,	'j' },		\
	{ "socket",	required_argument,	NULL,	's' }

/*
 * Handles the option c returned by getopt_long (a common one or an error
 * case): returns -1 when it was handled and parsing goes on, or an exit
 * status (CTL_EXIT_OK after --help, CTL_EXIT_USAGE) to return at once.
 * ctl->cmd is set: vmctl.c answers a -h that comes before any command.
 */
int	ctl_common_option(struct ctl *, int, char **, int);

/*
 * The whole option parsing of a command that has only the common
 * options: returns -1 to go on with its positional arguments (from
 * optind), or an exit status as ctl_common_option().
 */
int	ctl_common_options(struct ctl *, int, char **);
/* A reply's object for -j: pretty on a terminal, one line for scripts. */
void	ctl_print_json(struct json_object *);

/*
 * Checks that exactly n positional arguments remain after the options
 * (from optind); returns 0 or a usage error status.  what names them.
 */
int	ctl_positional(struct ctl *, int, char **, int, const char *);

/*
 * The whole parsing of a command that takes only NAME: sets *name and
 * returns -1, or returns an exit status.
 */
int	ctl_name_only(struct ctl *, int, char **, const char **);

/* Commands, in cmd-*.c. */
int	cmd_create(struct ctl *, int, char **);
int	cmd_start(struct ctl *, int, char **);
int	cmd_stop(struct ctl *, int, char **);
int	cmd_pause(struct ctl *, int, char **);
int	cmd_snapshot(struct ctl *, int, char **);
int	cmd_restore(struct ctl *, int, char **);
int	cmd_media(struct ctl *, int, char **);
int	cmd_balloon(struct ctl *, int, char **);
int	cmd_migrate(struct ctl *, int, char **);
int	cmd_migrate_receive(struct ctl *, int, char **);
int	cmd_resume(struct ctl *, int, char **);
int	cmd_reset(struct ctl *, int, char **);
int	cmd_delete(struct ctl *, int, char **);
int	cmd_reset_disk(struct ctl *, int, char **);
int	cmd_autostart(struct ctl *, int, char **);
int	cmd_list(struct ctl *, int, char **);
int	cmd_info(struct ctl *, int, char **);
int	cmd_console(struct ctl *, int, char **);
int	cmd_run(struct ctl *, int, char **);
int	cmd_display(struct ctl *, int, char **);
int	cmd_screenshot(struct ctl *, int, char **);
int	cmd_stats(struct ctl *, int, char **);
int	cmd_state(struct ctl *, int, char **);
int	cmd_events(struct ctl *, int, char **);
int	cmd_set(struct ctl *, int, char **);
int	cmd_edit(struct ctl *, int, char **);
int	cmd_rename(struct ctl *, int, char **);
int	cmd_export(struct ctl *, int, char **);
int	cmd_clone(struct ctl *, int, char **);

#endif
