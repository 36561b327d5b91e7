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

/*
 * Sends command with args (taken; NULL = {}) and waits for its reply,
 * skipping event lines.  Returns 0 with *ret set to the "return" object
 * (the caller puts it; ret may be NULL), CTL_EXIT_FAIL for an error reply
 * (reported as "vmctl: WHAT: CLASS: DESC" unless CLIENT_QUIET), or
 * CTL_EXIT_CONN when the connection failed (always reported).
 *
 * Lines are read up to their newline and never beyond, so that when the
 * reply switches the connection to a byte stream (vm.console), every
 * byte after the reply line is still in the socket.
 */
int	client_call(struct client *, const char *, const char *,
	    struct json_object *, struct json_object **, int);

/* The class ("bad_state") and desc of the last error reply, or "". */
const char *client_error_class(const struct client *);
const char *client_error_desc(const struct client *);

/* Prints "vmctl: WHAT: CLASS: DESC" on one line. */
void	client_report_error(const char *, const char *, const char *);

/* The connected socket, for the console's byte stream. */
int	client_fd(const struct client *);
const char *client_path(const struct client *);

#endif
