/*
 * The console's byte stream: after the vm.console reply, stdin goes to
 * the guest's COM1 and its output to stdout.  Used by the console, start
 * --console and run commands; calls only client.c and ctl.c.
 *
 * The terminating signals (SIGHUP, SIGINT, SIGQUIT, SIGTERM) are caught
 * from console_catch(), which console_attach() calls if need be, and stay
 * caught and blocked after it returns, so that cleanup such as stopping a
 * transient VM is not cut short by a second signal (timeout(1) signals
 * the whole process group).  console_finish() puts them back and
 * dies of the signal that came, if any.
 */
#ifndef VMCTL_CONSOLE_H
#define VMCTL_CONSOLE_H

struct client;

enum console_end {
	CONSOLE_CLOSED,		/* the guest side closed: VM stopped */
	CONSOLE_DETACHED,	/* escape typed, tty hung up, stdout gone */
	CONSOLE_SIGNALLED,	/* a terminating signal arrived */
	CONSOLE_FAILED,		/* no console, or an I/O error (reported) */
};

/*
 * Sends vm.console for name on cl (a connection that is still speaking
 * JSON) and, once the reply came, proxies stdin to the console and the
 * console to stdout until the guest side closes, the user detaches or a
 * terminating signal arrives.  what is the message prefix ("console web").
 * Returns an exit status; *end says how the console ended and *signo
 * which signal ended it.
 */
int	console_attach(struct client *, const char *, const char *,
	    enum console_end *, int *);

void	console_catch(void);

/*
 * The end of a command that attached: releases the signals and, when the
 * command succeeded (status 0) but a signal ended the console, dies of
 * signo the default way.  Returns the exit status to return.
 */
int	console_finish(int, enum console_end, int);

#endif
