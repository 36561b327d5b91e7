/*
 * vmctl's side of the control protocol: connect, check the greeting, send
 * one request at a time and wait for its reply.  Failures are reported on
 * stderr here, as one line, so that every command reports them alike.
 */
#ifndef VMCTL_CLIENT_H
#define VMCTL_CLIENT_H

#include <json-c/json.h>

struct client;

/* How long vmctl waits for the greeting before giving up, in ms. */
#define CLIENT_GREETING_TIMEOUT	(30 * 1000)

/*
 * Connects to the socket at path and reads the greeting.  Returns 0, or
 * an exit status (CTL_EXIT_CONN) after reporting why.
 */
int	client_open(const char *, struct client **);
void	client_free(struct client *);

/* Flags of client_call(). */
#define CLIENT_QUIET	0x1	/* do not report error replies */
#define CLIENT_CLI_WORDS 0x2	/* the request is vmctl's options: say so
				 * in its error (cli-words.h) */

/*
 * Sends command with args (taken; NULL = {}) and waits for its reply,
 * skipping event lines.  Returns 0 with *ret set to the "return" object
 * (the caller puts it; ret may be NULL), the exit status of its class for
 * an error reply (reported as "vmctl: WHAT: CLASS: DESC" unless
 * CLIENT_QUIET), or CTL_EXIT_CONN when the connection failed (always
 * reported).
 *
 * Lines are read up to their newline and never beyond, so that when the
 * reply switches the connection to a byte stream (vm.console), every
 * byte after the reply line is still in the socket.
 */
int	client_call(struct client *, const char *, const char *,
	    struct json_object *, struct json_object **, int);

/*
 * After events.subscribe: waits for the next event line and sets *ev to
 * it (the caller puts it); other lines are skipped.  Returns 0, or
 * CTL_EXIT_CONN (reported, what its prefix) when the connection ends.
 */
int	client_next_event(struct client *, const char *,
	    struct json_object **);

/*
 * fn (NULL: none) is shown each event line client_call() meets while it
 * waits for its reply (after events.subscribe), with arg; the event is
 * put after it returns.
 */
void	client_on_event(struct client *,
	    void (*)(struct json_object *, void *), void *);

/* The class ("bad_state") and desc of the last error reply, or "". */
const char *client_error_class(const struct client *);
const char *client_error_desc(const struct client *);

/* Reports "vmctl: WHAT: CLASS: DESC" (ctl_error()); its exit status. */
int	client_report_error(const char *, const char *, const char *);

/* The connected socket, for the console's byte stream. */
int	client_fd(const struct client *);
const char *client_path(const struct client *);

#endif
