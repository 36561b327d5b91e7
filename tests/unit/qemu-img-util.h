/*
 * Running qemu-img (Debian's qemu-utils) from a unit test: the qcow2
 * tests check vmmd's reading and writing against the images and the
 * verdicts of the format's reference implementation.  Header-only, like
 * tap.h; include it after tap.h.
 */
#ifndef VMMD_QEMU_IMG_UTIL_H
#define VMMD_QEMU_IMG_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Whether qemu-img runs at all: a test skips as a whole without it. */
static inline bool
qimg_present(void)
{
	return system("qemu-img --version >/dev/null 2>&1") == 0;
}

/*
 * Run the shell command fmt (qemu-img and friends), its output kept in
 * out (NUL-terminated, cut at outlen) when out is not NULL, else shown
 * as a diagnostic when the command fails.  Its exit status, or -1.
 */
static inline int __attribute__((format(printf, 3, 4)))
qimg_run(char *out, size_t outlen, const char *fmt, ...)
{
	char *cmd = NULL, *full = NULL, buf[4096], sink;
	size_t got = 0, n;
	va_list ap;
	FILE *p;
	int st;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		cmd = NULL;
	va_end(ap);
	if (cmd == NULL || asprintf(&full, "%s 2>&1", cmd) < 0) {
		free(cmd);
		return -1;
	}
	if ((p = popen(full, "r")) == NULL) {
		free(cmd);
		free(full);
		return -1;
	}
	if (out == NULL) {
		out = buf;
		outlen = sizeof(buf);
	}
	while (outlen > 0 && got < outlen - 1 &&
	    (n = fread(out + got, 1, outlen - 1 - got, p)) > 0)
		got += n;
	while (fread(&sink, 1, 1, p) == 1)
		;		/* what does not fit */
	if (outlen > 0)
		out[got < outlen ? got : outlen - 1] = '\0';
	st = pclose(p);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (st != 0 && out == buf)
		tap_diag("%s: status %d\n%s", cmd, st, buf);
	free(cmd);
	free(full);
	return st;
}

#endif
