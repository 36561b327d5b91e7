/*
 * The console's byte stream: after the vm.console reply the connection is
 * a raw byte stream to and from the guest's COM1.  stdin goes to the
 * guest and the guest's output to stdout, byte for byte.  On a terminal,
 * stdin is put in raw mode and Ctrl-] detaches; from a pipe or file
 * everything is sent and the output is copied until the guest side
 * closes.
 */
#include <sys/socket.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "client.h"
#include "console-attach.h"
#include "vmctl.h"

#define CONSOLE_ESCAPE	0x1d		/* Ctrl-] */
#define CONSOLE_BUFSZ	16384

/*
 * Process-wide on purpose: a signal handler can only reach globals, and
 * the terminal must also be restored from atexit() should anything exit
 * while it is raw.
 */
static volatile sig_atomic_t	console_signo;
static struct termios		console_saved;
static int			console_raw;

/* The signals that end the console (and stop a transient guest). */
static const int console_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
#define CONSOLE_NSIGNALS	(sizeof(console_signals) / sizeof(int))

static struct console_sigs {
	int			caught;
	struct sigaction	old[CONSOLE_NSIGNALS];
	sigset_t		oldmask;
	sigset_t		waitmask;	/* oldmask less ours */
} console_sigs;

struct console_buf {
	size_t	off, len;
	char	data[CONSOLE_BUFSZ];
};

static void
console_on_signal(int signo)
{
	console_signo = signo;
}

/*
 * Catches the terminating signals into console_signo.  They stay blocked
 * except inside ppoll(), so that none can slip in between the check and
 * the wait.  A signal the caller ignores (nohup) stays ignored.
 */
void
console_catch(void)
{
	struct console_sigs *cs = &console_sigs;
	struct sigaction sa;
	sigset_t block;
	size_t i;

	if (cs->caught)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = console_on_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (i = 0; i < CONSOLE_NSIGNALS; i++)
		sigaddset(&block, console_signals[i]);
	sigprocmask(SIG_BLOCK, &block, &cs->oldmask);
	console_signo = 0;
	for (i = 0; i < CONSOLE_NSIGNALS; i++) {
		sigaction(console_signals[i], NULL, &cs->old[i]);
		if (cs->old[i].sa_handler != SIG_IGN)
			sigaction(console_signals[i], &sa, NULL);
	}
	cs->waitmask = cs->oldmask;
	for (i = 0; i < CONSOLE_NSIGNALS; i++)
		sigdelset(&cs->waitmask, console_signals[i]);
	cs->caught = 1;
}

static void
console_release(void)
{
	struct console_sigs *cs = &console_sigs;
	size_t i;

	if (!cs->caught)
		return;
	for (i = 0; i < CONSOLE_NSIGNALS; i++)
		sigaction(console_signals[i], &cs->old[i], NULL);
	sigprocmask(SIG_SETMASK, &cs->oldmask, NULL);
	cs->caught = 0;
}

static void
console_restore(void)
{
	if (!console_raw)
		return;
	tcsetattr(STDIN_FILENO, TCSANOW, &console_saved);
	console_raw = 0;
}

static int
console_make_raw(void)
{
	static int registered;
	struct termios raw;

	if (tcgetattr(STDIN_FILENO, &console_saved) < 0)
		return -errno;
	if (!registered) {
		atexit(console_restore);
		registered = 1;
	}
	raw = console_saved;
	cfmakeraw(&raw);
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) < 0)
		return -errno;
	console_raw = 1;
	return 0;
}

/*
 * The copying loop.  Each direction has one buffer, refilled only once
 * it has been written out completely, so a slow reader on either side
 * holds the other side back instead of losing bytes.  stdin and stdout
 * are left blocking (they may be shared with the shell), hence writes to
 * stdout of at most PIPE_BUF bytes, which poll() promises room for on a
 * pipe; the socket is ours and used with MSG_DONTWAIT.
 */
static enum console_end
console_proxy(int sock, int tty, const char *what, const sigset_t *waitmask,
    int *lastp)
{
	struct console_buf in, out;		/* stdin → sock → stdout */
	struct pollfd fds[3];
	int in_open = 1, sock_rd = 1, sock_wr = 1;
	ssize_t n;
	size_t len;
	char *esc;

	in.off = in.len = out.off = out.len = 0;
	for (;;) {
		if (console_signo != 0)
			return CONSOLE_SIGNALLED;
		if (!sock_wr)
			in.len = 0;	/* nobody to send it to */
		if (!sock_rd && out.len == 0)
			return CONSOLE_CLOSED;

		fds[0].fd = in_open && in.len == 0 ? STDIN_FILENO : -1;
		fds[0].events = POLLIN;
		fds[1].events = 0;
		if (sock_rd && out.len == 0)
			fds[1].events |= POLLIN;
		if (sock_wr && in.len > 0)
			fds[1].events |= POLLOUT;
		fds[1].fd = fds[1].events != 0 ? sock : -1;
		fds[2].fd = out.len > 0 ? STDOUT_FILENO : -1;
		fds[2].events = POLLOUT;
		if (ppoll(fds, 3, NULL, waitmask) < 0) {
			if (errno == EINTR)
				continue;
			ctl_warnx("%s: poll: %s", what, strerror(errno));
			return CONSOLE_FAILED;
		}

		if (fds[0].revents & POLLNVAL) {
			in_open = 0;		/* stdin closed: as at EOF */
		} else if (fds[0].revents != 0) {
			n = read(STDIN_FILENO, in.data, sizeof(in.data));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				;			/* poll again */
			else if (n < 0 && !tty) {
				ctl_warnx("%s: reading stdin: %s", what,
				    strerror(errno));
				return CONSOLE_FAILED;
			} else if (n <= 0 && tty) {
				return CONSOLE_DETACHED;	/* hung up */
			} else if (n == 0) {
				/* Keep printing until the guest side ends. */
				in_open = 0;
			} else if (tty && (esc = memchr(in.data,
			    CONSOLE_ESCAPE, (size_t)n)) != NULL) {
				/* What came before the escape, if it fits. */
				if (esc > in.data && sock_wr)
					(void)send(sock, in.data,
					    (size_t)(esc - in.data),
					    MSG_DONTWAIT | MSG_NOSIGNAL);
				return CONSOLE_DETACHED;
			} else {
				in.off = 0;
				in.len = (size_t)n;
			}
		}

		if ((fds[1].events & POLLOUT) && fds[1].revents != 0) {
			n = send(sock, in.data + in.off, in.len,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n >= 0) {
				in.off += (size_t)n;
				in.len -= (size_t)n;
			} else if (errno == EPIPE || errno == ECONNRESET) {
				sock_wr = 0;	/* the reading side tells why */
			} else if (errno != EINTR && errno != EAGAIN) {
				ctl_warnx("%s: sending to the console: %s",
				    what, strerror(errno));
				return CONSOLE_FAILED;
			}
		}

		if ((fds[1].events & POLLIN) && fds[1].revents != 0) {
			n = recv(sock, out.data, sizeof(out.data),
			    MSG_DONTWAIT);
			if (n > 0) {
				out.off = 0;
				out.len = (size_t)n;
			} else if (n == 0 || errno == ECONNRESET) {
				sock_rd = 0;
			} else if (errno != EINTR && errno != EAGAIN) {
				ctl_warnx("%s: reading the console: %s", what,
				    strerror(errno));
				return CONSOLE_FAILED;
			}
		}

		if (fds[2].revents != 0) {
			len = out.len < PIPE_BUF ? out.len : PIPE_BUF;
			n = write(STDOUT_FILENO, out.data + out.off, len);
			if (n > 0) {
				out.off += (size_t)n;
				out.len -= (size_t)n;
				*lastp = (unsigned char)out.data[out.off - 1];
			} else if (n < 0 && errno == EPIPE) {
				return CONSOLE_DETACHED;  /* reader went away */
			} else if (n < 0 && errno != EINTR &&
			    errno != EAGAIN) {
				ctl_warnx("%s: writing to stdout: %s", what,
				    strerror(errno));
				return CONSOLE_FAILED;
			}
		}
	}
}

int
console_attach(struct client *cl, const char *what, const char *name,
    enum console_end *endp, int *signop)
{
	struct json_object *args;
	enum console_end end;
	int r, tty, last = '\n';

	*endp = CONSOLE_FAILED;
	*signop = 0;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	if ((r = client_call(cl, what, "vm.console", args, NULL, 0)) != 0)
		return r;

	/* stdout may be a pipe whose reader leaves: see EPIPE, not die. */
	signal(SIGPIPE, SIG_IGN);
	tty = isatty(STDIN_FILENO);
	console_catch();
	if (tty) {
		fprintf(stderr, "Connected to %s's console; escape character "
		    "is ^]\n", name);
		if ((r = console_make_raw()) < 0) {
			console_release();
			ctl_warnx("%s: cannot make the terminal raw: %s", what,
			    strerror(-r));
			return CTL_EXIT_FAIL;
		}
	}
	end = console_proxy(client_fd(cl), tty, what, &console_sigs.waitmask,
	    &last);
	console_restore();
	*signop = console_signo;

	if (tty && end != CONSOLE_FAILED) {
		/* Our line starts at the left margin, not after the guest's. */
		if (last != '\n' && isatty(STDOUT_FILENO))
			fputc('\n', stderr);
		if (end == CONSOLE_CLOSED)
			fputs("Connection closed\n", stderr);
		else if (end == CONSOLE_DETACHED)
			fprintf(stderr, "Detached from %s's console\n", name);
	}
	*endp = end;
	return end == CONSOLE_FAILED ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

/* Dies of signo the default way, now that cleanup is done. */
static int
console_reraise(int signo)
{
	sigset_t set;

	signal(signo, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	fflush(stdout);
	raise(signo);
	return 128 + signo;
}

int
console_finish(int status, enum console_end end, int signo)
{
	console_release();
	if (status == 0 && end == CONSOLE_SIGNALLED)
		return console_reraise(signo);
	return status;
}
