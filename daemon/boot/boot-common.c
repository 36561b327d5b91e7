/*
 * What both entry protocols write the same way: the command line and the
 * initrd.  Called by the loaders; calls only boot-file.c.
 */
#include <errno.h>
#include <string.h>

#include "boot.h"
#include "boot-internal.h"

int
boot_cmdline_write(const struct boot_mem *mem, const char *cmdline,
    uint64_t limit, char *err, size_t errlen)
{
	size_t len;

	if (cmdline == NULL)
		cmdline = "";
	if (limit > BOOT_CMDLINE_MAX - 1)
		limit = BOOT_CMDLINE_MAX - 1;
	len = strlen(cmdline);
	if (len > limit)
		return boot_fail(err, errlen, -E2BIG,
		    "command line longer than the kernel's limit of %llu "
		    "bytes", (unsigned long long)limit);
	memcpy(mem->low + BOOT_CMDLINE_ADDR, cmdline, len + 1);
	return 0;
}

int
boot_initrd_load(const struct boot_mem *mem, const char *path,
    uint64_t floor, uint64_t top, uint64_t *addr, uint64_t *size,
    char *err, size_t errlen)
{
	struct boot_file f;
	uint64_t at;
	int r;

	r = boot_file_open(&f, path, "initrd", err, errlen);
	if (r < 0)
		return r;
	if (f.size == 0) {
		r = boot_fail(err, errlen, -EINVAL, "initrd is empty");
		goto close_file;
	}
	if (top > mem->low_size)
		top = mem->low_size;
	/* As high as possible, page aligned: out of the kernel's way. */
	if (f.size > top || ((top - f.size) & ~0xfffULL) < floor) {
		r = boot_fail(err, errlen, -ENOMEM,
		    "initrd does not fit below 0x%llx: %llu bytes, and only "
		    "%llu free above the kernel's end at 0x%llx",
		    (unsigned long long)top, (unsigned long long)f.size,
		    (unsigned long long)(top > floor ? top - floor : 0),
		    (unsigned long long)floor);
		goto close_file;
	}
	at = (top - f.size) & ~0xfffULL;
	r = boot_file_read(&f, mem->low + at, f.size, 0, err, errlen);
	if (r < 0) {
		boot_fail(err, errlen, r, "cannot read initrd: %s",
		    strerror(-r));
		goto close_file;
	}
	*addr = at;
	*size = f.size;
	r = 0;

close_file:
	boot_file_close(&f);
	return r;
}
