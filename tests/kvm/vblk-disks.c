/* See vblk-disks.h. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "vblk-disks.h"

#define VDISK_QEMU_IMG_MS	30000

const char *
vdisk_qemu_img_path(void)
{
	static char path[512];
	static int looked;

	if (!looked)
		looked = h_which("qemu-img", path, sizeof(path)) != NULL ? 1 :
		    -1;
	return looked > 0 ? path : NULL;
}

int
vdisk_qemu_img(const char *arg, ...)
{
	char *argv[24];
	struct h_proc p;
	va_list ap;
	int n = 0, rc;

	if (vdisk_qemu_img_path() == NULL)
		return -1;
	argv[n++] = (char *)vdisk_qemu_img_path();
	va_start(ap, arg);
	for (; arg != NULL && n < 23; arg = va_arg(ap, const char *))
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	memset(&p, 0, sizeof(p));
	rc = h_run(&p, NULL, VDISK_QEMU_IMG_MS, argv);
	if (rc != 0)
		tap_diag("qemu-img %s: exit %d: %s %s", argv[1], rc,
		    h_flat(p.obuf != NULL ? p.obuf : ""),
		    h_flat(p.ebuf != NULL ? p.ebuf : ""));
	h_proc_free(&p);
	return rc;
}

int
vdisk_make_base(const char *path, mode_t mode)
{
	uint8_t sec[512];
	int fd, ok;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	memset(sec, 0xff, sizeof(sec));
	ok = fd >= 0 && fchmod(fd, mode) == 0 &&
	    ftruncate(fd, VDISK_BASE_BYTES) == 0 &&
	    pwrite(fd, "vmmd-disk-0", 11, 0) == 11 &&
	    pwrite(fd, sec, sizeof(sec), 1536) == (ssize_t)sizeof(sec);
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

bool
vdisk_guest_passes(struct h_daemon *d, const char *vm, int run)
{
	const char *log = h_console_log(d, vm);

	return h_file_expect(log, "vblk: sector 0 says vmmd-disk-0", run,
	    H_BOOT_MS) == 0 && h_file_expect(log, "vblk: wrote, flushed and "
	    "read back 1024 bytes", run, H_BOOT_MS) == 0 &&
	    h_file_expect(log, "PASS", run, H_BOOT_MS) == 0;
}

bool
vdisk_holds_writes(const char *image, const char *scratch)
{
	uint8_t buf[2048];
	int fd, good, i;

	if (vdisk_qemu_img("check", "-q", image, NULL) != 0 ||
	    vdisk_qemu_img("convert", "-O", "raw", image, scratch, NULL) != 0)
		return false;
	fd = open(scratch, O_RDONLY | O_CLOEXEC);
	good = fd >= 0 && pread(fd, buf, sizeof(buf), 0) ==
	    (ssize_t)sizeof(buf) && memcmp(buf, "vmmd-disk-0", 11) == 0;
	for (i = 0; good && i < 1024; i++)
		good = buf[512 + i] == (uint8_t)(i ^ 0x5a);
	for (i = 1536; good && i < 2048; i++)
		good = buf[i] == 0;
	if (fd >= 0)
		close(fd);
	unlink(scratch);
	return good;
}
