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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

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

/*
 * A qcow2 image encrypted with LUKS, as far as a reader that refuses
 * it can tell: qemu-img's own empty image with the encryption method
 * set to 2 (LUKS) and a "Full disk encryption header" extension naming
 * a LUKS header (offset, length) put before its other extensions.
 * Not qemu-img's "-o encrypt.format=luks": that calibrates its PBKDF
 * against the thread's CPU time, which moves in scheduler ticks on
 * these machines, and under load it fails at random ("Unable to get
 * accurate CPU usage").  0, or -1 after a diagnostic.
 */
static inline int
qimg_make_luks(const char *dir, const char *name)
{
	uint8_t c[4096], fde[24] = {
		0x05, 0x37, 0xbe, 0x77,	/* type */
		0, 0, 0, 16,		/* length: offset and length */
		0, 0, 0, 0, 0, 0x04, 0, 0,	/* at 256 KiB, */
		0, 0, 0, 0, 0, 0x1f, 0x90, 0,	/* 2016 KiB: qemu-img's */
	};
	char path[4096];
	uint32_t hlen;
	int fd, ok;

	if (qimg_run(NULL, 0, "cd '%s' && qemu-img create -q -f qcow2 '%s' "
	    "1M", dir, name) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return -1;
	ok = pread(fd, c, sizeof(c), 0) == (ssize_t)sizeof(c);
	hlen = (uint32_t)c[100] << 24 | (uint32_t)c[101] << 16 |
	    (uint32_t)c[102] << 8 | c[103];
	ok = ok && hlen >= 104 && hlen + sizeof(fde) < sizeof(c);
	if (ok) {
		memmove(c + hlen + sizeof(fde), c + hlen,
		    sizeof(c) - hlen - sizeof(fde));
		memcpy(c + hlen, fde, sizeof(fde));
		c[35] = 2;		/* crypt_method: LUKS */
		ok = pwrite(fd, c, sizeof(c), 0) == (ssize_t)sizeof(c);
	}
	close(fd);
	if (!ok)
		tap_diag("%s: cannot make it encrypted", path);
	return ok ? 0 : -1;
}

#endif
