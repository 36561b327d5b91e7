/*
 * Helpers of the linux test suite; see lguest.h.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lguest.h"

#define LG_PROBE_MS	3000	/* between shell probes */
#define LG_DUMP_LINES	400	/* console log lines shown on failure */

const char *
lg_guest_file(const char *file)
{
	static char bufs[4][512];
	static unsigned int next;
	char *p = bufs[next++ % 4];

	snprintf(p, sizeof(bufs[0]), "%s/%s", h_env("VMMD_LINUX_GUEST"),
	    file);
	return p;
}

const char *
lg_default_cmdline(void)
{
	static char *cmdline;
	size_t len;

	if (cmdline != NULL)
		return cmdline;
	if ((cmdline = h_read_file(lg_guest_file("cmdline"), &len)) == NULL)
		cmdline = strdup("console=ttyS0 panic=-1");
	else
		cmdline[strcspn(cmdline, "\r\n")] = '\0';
	return cmdline;
}

int
lg_attach(struct lg_vm *vm)
{
	lg_detach(vm);
	if ((vm->con = h_console_open(vm->d, vm->name)) == NULL)
		return -1;
	return 0;
}

void
lg_detach(struct lg_vm *vm)
{
	h_console_close(vm->con);
	vm->con = NULL;
}

int
lg_expect(struct lg_vm *vm, const char *needle, int timeout_ms, bool quiet)
{
	struct h_console *con = vm->con;

	if (con == NULL)
		return -1;
	if (h_find(con, needle, timeout_ms) == 0)
		return 0;
	if (!quiet)
		tap_diag("%s: no '%s' on the console within %d ms%s (%zu bytes "
		    "read)", vm->name, needle, timeout_ms,
		    con->eof ? " (console closed)" : "", con->len);
	return -1;
}

/*
 * Length of the kernel console message starting at p ("[%5u.%06u] text"
 * up to and with its newline), 0 if p does not start one, or -1 if it may
 * but is not complete yet.
 */
static ssize_t
lg_kmsg_len(const char *p, const char *end)
{
	const char *q = p + 1, *nl;
	int digits;

	if (p == end || *p != '[')
		return 0;
	while (q < end && *q == ' ')
		q++;
	for (digits = 0; q < end && *q >= '0' && *q <= '9'; q++)
		digits++;
	if (q < end && (digits == 0 || *q != '.'))
		return 0;
	for (q++, digits = 0; q < end && *q >= '0' && *q <= '9'; q++)
		digits++;
	if (q < end && (digits != 6 || *q != ']'))
		return 0;
	if (q >= end || (nl = memchr(q, '\n', (size_t)(end - q))) == NULL)
		return -1;
	return nl + 1 - p;
}

int
lg_expect_user(struct lg_vm *vm, const char *needle, int timeout_ms)
{
	struct h_console *con = vm->con;
	double deadline = h_now_ms() + timeout_ms;
	double active = h_now_ms();
	bool idle = false;
	size_t seen = (size_t)-1;
	size_t nlen = strlen(needle), i, o, *pos = NULL;
	char *text = NULL;
	const char *hit;
	ssize_t k;
	double left;

	if (con == NULL)
		return -1;
	for (;;) {
		if (con->len == seen)
			goto wait;
		seen = con->len;
		/* The output since the mark without the kernel's lines. */
		free(text);
		free(pos);
		text = malloc(con->len - con->mark + 1);
		pos = malloc((con->len - con->mark + 1) * sizeof(*pos));
		if (text == NULL || pos == NULL)
			tap_bail("out of memory");
		for (i = con->mark, o = 0; i < con->len; ) {
			k = lg_kmsg_len(con->buf + i, con->buf + con->len);
			if (k < 0)
				break;
			if (k > 0) {
				i += (size_t)k;
				continue;
			}
			pos[o] = i;
			text[o++] = con->buf[i++];
		}
		if (o >= nlen && (hit = memmem(text, o, needle, nlen)) != NULL) {
			con->mark = pos[(size_t)(hit - text) + nlen - 1] + 1;
			free(text);
			free(pos);
			return 0;
		}
wait:
		left = deadline - h_now_ms();
		if (con->eof || left <= 0)
			break;
		if (h_now_ms() - active >= LG_IDLE_MS) {
			idle = true;
			break;
		}
		if (h_console_read(con, left < 1000 ? (int)left + 1 : 1000) > 0)
			active = h_now_ms();
	}
	free(text);
	free(pos);
	if (idle)
		tap_diag("%s: no '%s' on the console, which has been silent for "
		    "%d s (%zu bytes read)", vm->name, needle, LG_IDLE_MS / 1000,
		    con->len);
	else
		tap_diag("%s: no '%s' on the console within %d ms%s (%zu "
		    "bytes read)", vm->name, needle, timeout_ms,
		    con->eof ? " (console closed)" : "", con->len);
	return -1;
}

int
lg_send(struct lg_vm *vm, const char *s)
{
	if (vm->con == NULL)
		return -1;
	return h_console_write(vm->con, s, strlen(s));
}

unsigned int
lg_seq(struct lg_vm *vm)
{
	return ++vm->seq;
}

int
lg_wait_shell(struct lg_vm *vm, int timeout_ms)
{
	double deadline = h_now_ms() + timeout_ms;
	char cmd[64], mark[32];
	unsigned int n = lg_seq(vm);
	int left;

	snprintf(cmd, sizeof(cmd), "echo =R\"\"DY-%u=\n", n);
	snprintf(mark, sizeof(mark), "=RDY-%u=", n);
	for (;;) {
		if (lg_send(vm, cmd) != 0)
			return -1;
		left = (int)(deadline - h_now_ms());
		if (left <= 0)
			break;
		if (lg_expect(vm, mark, left < LG_PROBE_MS ? left :
		    LG_PROBE_MS, true) == 0)
			return 0;
		if (vm->con->eof)
			break;
	}
	tap_diag("%s: the shell did not answer within %d ms%s", vm->name,
	    timeout_ms, vm->con->eof ? " (console closed)" : "");
	return -1;
}

char *
lg_cmd(struct lg_vm *vm, const char *cmd, int *status, int timeout_ms)
{
	double deadline = h_now_ms() + timeout_ms;
	char *line, *out, begin[32], end[32];
	unsigned int n = lg_seq(vm);
	size_t start, stop, i, o;
	int r;

	*status = -1;
	snprintf(begin, sizeof(begin), "=BEG-%u=", n);
	snprintf(end, sizeof(end), "=END-%u-", n);
	if (asprintf(&line, "echo =B\"\"EG-%u=; %s; echo =E\"\"ND-%u-$?=\n",
	    n, cmd, n) == -1)
		tap_bail("out of memory");
	r = lg_send(vm, line);
	free(line);
	if (r != 0 || lg_expect(vm, begin, timeout_ms, false) != 0)
		return NULL;
	start = vm->con->mark;
	if (lg_expect(vm, end, (int)(deadline - h_now_ms()) + 1, false) != 0)
		return NULL;
	stop = vm->con->mark - strlen(end);
	/* The exit status and the closing '=' follow the marker. */
	if (lg_expect(vm, "=", 5000, false) != 0)
		return NULL;
	*status = atoi(vm->con->buf + stop + strlen(end));
	if ((out = malloc(stop - start + 1)) == NULL)
		tap_bail("out of memory");
	/* Output starts after the line end of the BEGIN marker's echo. */
	for (i = start, o = 0; i < stop; i++) {
		if (vm->con->buf[i] == '\r')
			continue;
		out[o++] = vm->con->buf[i];
	}
	out[o] = '\0';
	if (out[0] == '\n')
		memmove(out, out + 1, o);
	return out;
}

void
lg_dump(struct lg_vm *vm, const char *why)
{
	const char *path;
	char *log, *p, *nl;
	size_t len, lines = 0, skip = 0;

	if (vm->dumped)
		return;
	vm->dumped = true;
	path = h_console_log(vm->d, vm->name);
	if ((log = h_read_file(path, &len)) == NULL) {
		tap_diag("%s: no console log (%s)", vm->name, path);
		return;
	}
	for (p = log; (p = memchr(p, '\n', len - (size_t)(p - log))) != NULL;
	    p++)
		lines++;
	if (lines > LG_DUMP_LINES)
		skip = lines - LG_DUMP_LINES;
	tap_diag("---- %s: console log %s (%zu lines%s), because %s ----",
	    vm->name, path, lines, skip ? ", tail" : "", why);
	for (p = log; p < log + len; p = nl + 1) {
		nl = memchr(p, '\n', len - (size_t)(p - log));
		if (nl == NULL)
			nl = log + len;
		if (skip > 0) {
			skip--;
			continue;
		}
		*nl = '\0';
		if (nl > p && nl[-1] == '\r')
			nl[-1] = '\0';
		tap_diag("| %s", h_flat(p));
	}
	free(log);
}

uint32_t
lg_crc32(const void *buf, size_t len)
{
	static uint32_t tab[256];
	const unsigned char *p = buf;
	uint32_t crc = 0xffffffffu;
	size_t i;
	int k;

	if (tab[1] == 0) {
		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;

			for (k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			tab[i] = c;
		}
	}
	for (i = 0; i < len; i++)
		crc = tab[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

char *
lg_cmd_ok(struct lg_vm *vm, const char *cmd, int timeout_ms)
{
	char *out;
	int st = -1;

	out = lg_cmd(vm, cmd, &st, timeout_ms);
	if (out != NULL && st == 0)
		return out;
	tap_diag("%s: '%s' exited %d: %s", vm->name, cmd, st,
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return NULL;
}
