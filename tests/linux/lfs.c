/* See lfs.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lfs.h"
#include "tap.h"

#define LF_MNT		"/mnt/" LF_TAG
#define LF_BIG		(64u << 20)	/* bytes each way */
#define LF_HELLO	"written by the host\n"
#define LF_GUEST_TEXT	"written by the guest\n"
/*
 * 64 MiB through a guest nested under emulation: dd from urandom and
 * CRC-32 over FUSE took tens of seconds; four times a short command's
 * bound.
 */
#define LF_BIG_MS	(4 * LG_CMD_MS)

/* path's whole contents (malloc'd, NUL-terminated) and length, or NULL. */
static char *
lf_slurp(const char *path, size_t *lenp)
{
	struct stat sb;
	char *buf;
	size_t got = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &sb) < 0 || (buf = malloc((size_t)sb.st_size + 1)) ==
	    NULL) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)sb.st_size &&
	    (n = read(fd, buf + got, (size_t)sb.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	*lenp = got;
	return buf;
}

static int
lf_write(const char *path, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) < 0)
		return -1;
	while (len > 0 && (n = write(fd, p, len)) > 0) {
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0 || len != 0)
		return -1;
	return 0;
}

/* The host's 64 MiB: a xorshift stream, the same each run. */
static unsigned char *
lf_pattern(void)
{
	unsigned char *buf = malloc(LF_BIG);
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; buf != NULL && i < LF_BIG; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
	return buf;
}

static const char *
lf_path(const char *dir, const char *name)
{
	static char buf[4][512];
	static unsigned int n;

	snprintf(buf[n % 4], sizeof(buf[0]), "%s/%s", dir, name);
	return buf[n++ % 4];
}

int
lf_prepare(const char *dir)
{
	unsigned char *big;
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		tap_diag("mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	if ((big = lf_pattern()) == NULL)
		return -1;
	r = lf_write(lf_path(dir, "hello"), LF_HELLO, strlen(LF_HELLO));
	if (r == 0)
		r = lf_write(lf_path(dir, "big-host"), big, LF_BIG);
	if (r < 0)
		tap_diag("writing the share's files in %s: %s", dir,
		    strerror(errno));
	free(big);
	return r;
}

/* "CRC LEN" (busybox crc32's "crc file" line) in out: the CRC, or -1. */
static long long
lf_guest_crc(const char *out)
{
	unsigned long crc;

	return out != NULL && sscanf(out, "%lx", &crc) == 1 ?
	    (long long)crc : -1;
}

/* Mounts the share in the guest: whether it did. */
static bool
lf_mount(struct lg_vm *vm, lg_check_fn check, const char *opts)
{
	char cmd[256], *out;
	int st = -1;
	bool ok;

	snprintf(cmd, sizeof(cmd), "mkdir -p " LF_MNT " && mount -t virtiofs "
	    "%s" LF_TAG " " LF_MNT " && grep ' " LF_MNT " ' /proc/mounts",
	    opts);
	out = lg_cmd(vm, cmd, &st, LG_CMD_MS);
	ok = check(vm, st == 0 && out != NULL && strstr(out, "virtiofs") !=
	    NULL, "fs: mount -t virtiofs %s " LF_MNT ": %s", LF_TAG,
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return ok;
}

static bool
lf_umount(struct lg_vm *vm, lg_check_fn check)
{
	char *out;
	int st = -1;
	bool ok;

	out = lg_cmd(vm, "umount " LF_MNT, &st, LG_CMD_MS);
	ok = check(vm, st == 0, "fs: umount " LF_MNT " (status %d: %s)", st,
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return ok;
}

/* Host to guest: the small file, then 64 MiB by CRC-32. */
static bool
lf_host_to_guest(struct lg_vm *vm, lg_check_fn check)
{
	unsigned char *big = lf_pattern();
	uint32_t want = big != NULL ? lg_crc32(big, LF_BIG) : 0;
	long long crc;
	char *out;
	int st = -1;
	bool ok;

	free(big);
	out = lg_cmd(vm, "cat " LF_MNT "/hello", &st, LG_CMD_MS);
	ok = check(vm, st == 0 && out != NULL && strstr(out, LF_HELLO) !=
	    NULL, "fs: the guest reads the file the host wrote: %s",
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	out = lg_cmd(vm, "crc32 " LF_MNT "/big-host", &st, LF_BIG_MS);
	crc = lf_guest_crc(out);
	ok &= check(vm, st == 0 && crc == (long long)want, "fs: and the "
	    "host's 64 MiB, whole (CRC-32 %08llx, the host's %08x)", crc,
	    want);
	free(out);
	return ok;
}

/* Guest to host: a small file, fsync, 64 MiB by CRC-32. */
static bool
lf_guest_to_host(struct lg_vm *vm, lg_check_fn check, const char *dir)
{
	char *out, *text, *big;
	size_t len = 0, biglen = 0;
	long long crc;
	struct stat sb;
	int st = -1;
	bool ok;

	out = lg_cmd(vm, "printf '" LF_GUEST_TEXT "' >" LF_MNT "/from-guest "
	    "&& dd if=/dev/zero of=" LF_MNT "/synced bs=4096 count=16 "
	    "conv=fsync 2>&1", &st, LG_CMD_MS);
	text = lf_slurp(lf_path(dir, "from-guest"), &len);
	ok = check(vm, st == 0 && text != NULL &&
	    strcmp(text, LF_GUEST_TEXT) == 0, "fs: the host reads the file "
	    "the guest wrote: %s", text != NULL ? h_flat(text) : "(none)");
	ok &= check(vm, st == 0 && stat(lf_path(dir, "synced"), &sb) == 0 &&
	    sb.st_size == 65536, "fs: dd conv=fsync in the guest succeeds and "
	    "the host sees its 64 KiB: %s", out != NULL ? h_flat(out) : "");
	free(text);
	free(out);

	out = lg_cmd(vm, "dd if=/dev/urandom of=" LF_MNT "/big-guest bs=1M "
	    "count=64 conv=fsync 2>/dev/null && crc32 " LF_MNT "/big-guest",
	    &st, LF_BIG_MS);
	crc = lf_guest_crc(out);
	big = lf_slurp(lf_path(dir, "big-guest"), &biglen);
	ok &= check(vm, st == 0 && big != NULL && biglen == LF_BIG &&
	    crc >= 0 && lg_crc32(big, biglen) == (uint32_t)crc, "fs: the "
	    "guest's 64 MiB reach the host whole (%zu bytes, CRC-32 %08x; "
	    "the guest's %08llx)", biglen, big != NULL ?
	    lg_crc32(big, biglen) : 0, crc);
	free(big);
	free(out);
	return ok;
}

/* A rename on each side, seen from the other. */
static bool
lf_renames(struct lg_vm *vm, lg_check_fn check, const char *dir)
{
	char *out;
	int st = -1;
	bool ok;

	out = lg_cmd(vm, "mv " LF_MNT "/from-guest " LF_MNT "/guest-renamed",
	    &st, LG_CMD_MS);
	ok = check(vm, st == 0 && access(lf_path(dir, "guest-renamed"),
	    F_OK) == 0 && access(lf_path(dir, "from-guest"), F_OK) < 0,
	    "fs: the guest's rename shows on the host (status %d)", st);
	free(out);
	if (rename(lf_path(dir, "hello"), lf_path(dir, "host-renamed")) < 0)
		tap_diag("rename on the host: %s", strerror(errno));
	out = lg_cmd(vm, "ls " LF_MNT " | tr '\\n' ' '; echo; cat "
	    LF_MNT "/host-renamed", &st, LG_CMD_MS);
	ok &= check(vm, st == 0 && out != NULL &&
	    strstr(out, "host-renamed") != NULL &&
	    strstr(out, LF_HELLO) != NULL && strstr(out, " hello ") == NULL,
	    "fs: the host's rename shows in the guest: %s",
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return ok;
}

bool
lf_check_writable(struct lg_vm *vm, lg_check_fn check, const char *dir)
{
	bool ok;

	if (!lf_mount(vm, check, ""))
		return false;
	ok = lf_host_to_guest(vm, check);
	ok &= lf_guest_to_host(vm, check, dir);
	ok &= lf_renames(vm, check, dir);
	ok &= lf_umount(vm, check);
	return ok;
}

bool
lf_check_readonly(struct lg_vm *vm, lg_check_fn check, const char *dir)
{
	char *out;
	int st = -1;
	bool ok;

	if (!lf_mount(vm, check, ""))
		return false;
	out = lg_cmd(vm, "cat " LF_MNT "/host-renamed", &st, LG_CMD_MS);
	ok = check(vm, st == 0 && out != NULL && strstr(out, LF_HELLO) !=
	    NULL, "fs: read-only: the guest reads the share: %s",
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	out = lg_cmd(vm, "echo no >" LF_MNT "/refused", &st, LG_CMD_MS);
	ok &= check(vm, st != 0 && out != NULL &&
	    strstr(out, "Read-only file system") != NULL &&
	    access(lf_path(dir, "refused"), F_OK) < 0, "fs: read-only: the "
	    "guest's write fails and leaves nothing: %s",
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	out = lg_cmd(vm, "rm " LF_MNT "/host-renamed", &st, LG_CMD_MS);
	ok &= check(vm, st != 0 && access(lf_path(dir, "host-renamed"),
	    F_OK) == 0, "fs: read-only: so does its unlink: %s",
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	ok &= lf_umount(vm, check);
	return ok;
}
