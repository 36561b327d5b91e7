/*
 * The bottom of the boot loaders: failure reasons, and kernel and initrd
 * files opened and read with bounds checks.  Calls nothing else of
 * daemon/boot, so that boot.c and every loader can use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "boot-internal.h"

int
boot_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/*
 * A path that names one of our own descriptors ("/proc/self/fd/N", as
 * the supervisor hands kernels to the worker) is read through a
 * duplicate of it: a sandboxed worker can open no file, not even that
 * one, and reads at explicit offsets only, so a shared offset is fine.
 * -1 for any other path.
 */
static int
boot_file_own_fd(const char *path)
{
	static const char prefix[] = "/proc/self/fd/";
	char *end;
	long fd;

	if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	path += sizeof(prefix) - 1;
	if (*path < '0' || *path > '9')
		return -1;
	fd = strtol(path, &end, 10);
	if (*end != '\0' || fd < 0 || fd > INT_MAX ||
	    fcntl((int)fd, F_GETFD) < 0)
		return -1;
	return (int)fd;
}

int
boot_file_open(struct boot_file *f, const char *path, const char *what,
    char *err, size_t errlen)
{
	struct stat st;
	int r, own;

	memset(f, 0, sizeof(*f));
	own = boot_file_own_fd(path);
	/* O_NONBLOCK: a FIFO swapped in after the caller's checks must
	 * not hang vmmd, which probes kernels on its event loop. */
	if (own >= 0)
		f->fd = fcntl(own, F_DUPFD_CLOEXEC, 0);
	else
		f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
		    O_NONBLOCK);
	if (f->fd < 0) {
		r = -errno;
		return boot_fail(err, errlen, r, "cannot open %s: %s", what,
		    strerror(-r));
	}
	if (fstat(f->fd, &st) < 0) {
		r = -errno;
		boot_fail(err, errlen, r, "cannot stat %s: %s", what,
		    strerror(-r));
		goto close_fd;
	}
	if (S_ISDIR(st.st_mode)) {
		r = boot_fail(err, errlen, -EISDIR, "%s is a directory", what);
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		r = boot_fail(err, errlen, -EINVAL,
		    "%s is not a regular file", what);
		goto close_fd;
	}
	f->size = (uint64_t)st.st_size;
	f->head_len = f->size < BOOT_HEAD_SIZE ? (size_t)f->size :
	    BOOT_HEAD_SIZE;
	r = boot_file_read(f, f->head, f->head_len, 0, err, errlen);
	if (r < 0)
		goto close_fd;
	return 0;

close_fd:
	close(f->fd);
	f->fd = -1;
	return r;
}

void
boot_file_close(struct boot_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

int
boot_file_read(const struct boot_file *f, void *buf, uint64_t len,
    uint64_t off, char *err, size_t errlen)
{
	uint8_t *p = buf;
	ssize_t n;

	if (off > f->size || len > f->size - off)
		return boot_fail(err, errlen, -ENOEXEC,
		    "file is truncated: %llu bytes at offset %llu needed, "
		    "the file has %llu", (unsigned long long)len,
		    (unsigned long long)off, (unsigned long long)f->size);
	while (len > 0) {
		n = pread(f->fd, p, len > 0x40000000 ? 0x40000000 : len,
		    (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return boot_fail(err, errlen, -errno,
			    "read error: %s", strerror(errno));
		}
		/* The file shrank since we looked at its size. */
		if (n == 0)
			return boot_fail(err, errlen, -EIO,
			    "file ended early while reading it");
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}
