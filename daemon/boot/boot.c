/*
 * Direct kernel boot: format detection, the boot_load/boot_probe entry
 * points, and helpers the loaders share (file reading with bounds checks,
 * command line, initrd placement).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "boot-internal.h"

/* BIOS data area words some operating systems read to find the EBDA. */
#define BDA_EBDA_SEGMENT	0x40e
#define BDA_BASE_MEM_KIB	0x413

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

int
boot_file_open(struct boot_file *f, const char *path, const char *what,
    char *err, size_t errlen)
{
	struct stat st;
	int r;

	memset(f, 0, sizeof(*f));
	/* O_NONBLOCK: a FIFO swapped in after the caller's checks must
	 * not hang vmmd, which probes kernels on its event loop. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
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

enum boot_format
boot_detect(const struct boot_file *f)
{
	static const uint8_t elfmag[4] = { 0x7f, 'E', 'L', 'F' };

	if (f->head_len >= 4 && memcmp(f->head, elfmag, 4) == 0)
		return BOOT_FORMAT_ELF;
	/* "HdrS" at 0x202 marks every kernel with boot protocol 2.00+. */
	if (f->head_len >= 0x206 && memcmp(f->head + 0x202, "HdrS", 4) == 0)
		return BOOT_FORMAT_BZIMAGE;
	return BOOT_FORMAT_UNKNOWN;
}

int
boot_mem_check(const struct boot_mem *mem, char *err, size_t errlen)
{
	if (mem == NULL || mem->low == NULL)
		return boot_fail(err, errlen, -EINVAL, "no guest RAM mapped");
	if (mem->low_size < BOOT_MIN_LOW_SIZE)
		return boot_fail(err, errlen, -EINVAL,
		    "guest RAM of %llu KiB is too small: %llu KiB needed",
		    (unsigned long long)mem->low_size / 1024,
		    BOOT_MIN_LOW_SIZE / 1024);
	if (mem->low_size > BOOT_PCI_HOLE_START)
		return boot_fail(err, errlen, -EINVAL,
		    "low guest RAM reaches into the PCI hole at 0x%llx",
		    BOOT_PCI_HOLE_START);
	return 0;
}

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

int
boot_probe(const char *path, char *err, size_t errlen)
{
	struct boot_file f;
	int r;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (path == NULL)
		return boot_fail(err, errlen, -EINVAL, "no kernel given");
	r = boot_file_open(&f, path, "kernel", err, errlen);
	if (r < 0)
		return r;
	switch (boot_detect(&f)) {
	case BOOT_FORMAT_BZIMAGE:
		r = boot_bzimage_probe(&f, err, errlen);
		break;
	case BOOT_FORMAT_ELF:
		r = boot_pvh_probe(&f, err, errlen);
		break;
	default:
		r = boot_fail(err, errlen, -ENOEXEC,
		    "kernel is not a bzImage or PVH ELF image");
		break;
	}
	boot_file_close(&f);
	return r;
}

int
boot_load(const struct boot_mem *mem, const struct boot_args *args,
    struct boot_cpu *cpu, char *err, size_t errlen)
{
	struct boot_file f;
	uint16_t v;
	int r;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (args == NULL || args->kernel == NULL)
		return boot_fail(err, errlen, -EINVAL, "no kernel given");
	if (args->ncpus < 1 || args->ncpus > BOOT_MAX_CPUS)
		return boot_fail(err, errlen, -EINVAL,
		    "%u vCPUs: between 1 and %d are supported", args->ncpus,
		    BOOT_MAX_CPUS);
	r = boot_mem_check(mem, err, errlen);
	if (r < 0)
		return r;
	r = boot_file_open(&f, args->kernel, "kernel", err, errlen);
	if (r < 0)
		return r;

	/*
	 * Start from a clean loader area, so that loading again into RAM a
	 * guest has used (a reset) gives the same result as a fresh boot.
	 */
	if (!mem->zeroed) {
		memset(mem->low, 0, BOOT_AREA_END);
		memset(mem->low + BOOT_EBDA_START, 0,
		    BOOT_HIGH_MEM_START - BOOT_EBDA_START);
	}
	memset(cpu, 0, sizeof(*cpu));

	switch (boot_detect(&f)) {
	case BOOT_FORMAT_BZIMAGE:
		r = boot_bzimage_load(mem, &f, args, cpu, err, errlen);
		break;
	case BOOT_FORMAT_ELF:
		r = boot_pvh_load(mem, &f, args, cpu, err, errlen);
		break;
	default:
		r = boot_fail(err, errlen, -ENOEXEC,
		    "kernel is not a bzImage or PVH ELF image");
		break;
	}
	boot_file_close(&f);
	if (r < 0)
		return r;

	/* Where a PC BIOS would say the EBDA is and how much base RAM. */
	v = (uint16_t)(BOOT_EBDA_START >> 4);
	memcpy(mem->low + BDA_EBDA_SEGMENT, &v, sizeof(v));
	v = (uint16_t)(BOOT_LOW_MEM_END / 1024);
	memcpy(mem->low + BDA_BASE_MEM_KIB, &v, sizeof(v));

	r = boot_mptable_write(mem->low, mem->low_size, BOOT_EBDA_START,
	    args->ncpus);
	if (r < 0)
		return boot_fail(err, errlen, r, "cannot write the MP table: %s",
		    strerror(-r));
	return 0;
}
