/*
 * Private interface between the boot loader files: the loader table's
 * entry, kernel files read with bounds checks, the command line and
 * initrd placement, and the x86 tables that both entry protocols need.
 */
#ifndef VMMD_BOOT_INTERNAL_H
#define VMMD_BOOT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot.h"

/*
 * Enough of the start of a kernel file to recognise its format and parse
 * the bzImage setup header (which ends before 0x300) or an ELF header.
 */
#define BOOT_HEAD_SIZE		1024

/* An open kernel or initrd file. */
struct boot_file {
	int		 fd;
	uint64_t	 size;
	uint8_t		 head[BOOT_HEAD_SIZE];
	size_t		 head_len;	/* bytes of head[] that are valid */
};

/* boot-file.c.
 * Write a one-line reason into err and return code (a negative errno). */
int	boot_fail(char *err, size_t errlen, int code, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));

int	boot_file_open(struct boot_file *f, const char *path, const char *what,
	    char *err, size_t errlen);
void	boot_file_close(struct boot_file *f);
/* Read exactly len bytes at off; a file shorter than that is an error. */
int	boot_file_read(const struct boot_file *f, void *buf, uint64_t len,
	    uint64_t off, char *err, size_t errlen);

/* Little-endian field access on byte buffers (file images are LE). */
static inline uint16_t
boot_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
boot_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static inline uint64_t
boot_le64(const uint8_t *p)
{
	return (uint64_t)boot_le32(p) | (uint64_t)boot_le32(p + 4) << 32;
}

/* Is [addr, addr + len) inside the low RAM mapping? Overflow-safe. */
static inline int
boot_mem_fits(const struct boot_mem *mem, uint64_t addr, uint64_t len)
{
	return addr <= mem->low_size && len <= mem->low_size - addr;
}

/* boot-common.c.
 * Write the command line (NULL means empty) at BOOT_CMDLINE_ADDR.  limit
 * is the longest string the kernel accepts, without the final NUL.
 */
int	boot_cmdline_write(const struct boot_mem *mem, const char *cmdline,
	    uint64_t limit, char *err, size_t errlen);

/*
 * Load the initrd named path as high as possible, page aligned, with its
 * last byte below top (exclusive end) and its start at or above floor.
 * Returns its guest address and size.
 */
int	boot_initrd_load(const struct boot_mem *mem, const char *path,
	    uint64_t floor, uint64_t top, uint64_t *addr, uint64_t *size,
	    char *err, size_t errlen);

/*
 * Check the framebuffer a caller asks the loaders to describe (nothing
 * to check when fb->base is 0: no display).  Its geometry must be
 * consistent (width and height at least 1; stride a multiple of 4 of at
 * least width * 4 bytes and at most 65535, screen_info's 16-bit
 * lfb_linelength; size page-aligned, at least stride * height and at
 * most PC_FRAMEBUFFER_MAX) and its page-aligned range must lie in the
 * PCI hole below 4 GiB or above the high RAM, clear of RAM, the IOAPIC,
 * the local APIC and KVM's own pages.  -EINVAL with the reason in err.
 */
int	boot_fb_check(const struct boot_mem *mem, const struct boot_fb *fb,
	    char *err, size_t errlen);

/* boot-e820.c.
 * Insert an entry into a map sorted by address (as boot_e820_build makes
 * it), keeping it sorted.  The new entry must not overlap another one.
 * Returns the new count, or -ENOSPC when the map already has
 * BOOT_E820_MAX entries, -EINVAL when it overlaps or is empty.
 */
int	boot_e820_insert(struct boot_e820 map[BOOT_E820_MAX], unsigned int n,
	    uint64_t addr, uint64_t size, uint32_t type);
/* The most entries boot_e820_build makes (base, EBDA, BIOS, RAM, high). */
#define BOOT_E820_BUILT_MAX	5

/* boot-x86.c: the GDT at BOOT_GDT_ADDR and the identity page tables. */
void	boot_x86_write_gdt(const struct boot_mem *mem, int long_mode,
	    struct boot_cpu *cpu);
void	boot_x86_write_page_tables(const struct boot_mem *mem,
	    struct boot_cpu *cpu);

/*
 * A kernel format.  boot.c asks each loader of its table in turn whether
 * it recognises the file (a look at f->head only, no I/O); the first that
 * does owns the file, and its probe or load answers for it.
 *
 * probe validates the file without touching guest RAM; load also writes
 * the kernel and its boot data into mem (whose loader area boot.c has
 * cleared) and fills cpu (zeroed).  Both return 0 or a negative errno
 * with a reason in err; -ENOEXEC means the file is of this format but
 * cannot be booted.
 */
struct boot_loader {
	const char	*name;		/* the format, as people call it */
	bool		(*recognises)(const struct boot_file *f);
	int		(*probe)(const struct boot_file *f, char *err,
			    size_t errlen);
	int		(*load)(const struct boot_mem *mem,
			    const struct boot_file *f,
			    const struct boot_args *args, struct boot_cpu *cpu,
			    char *err, size_t errlen);
};

extern const struct boot_loader boot_loader_bzimage;	/* boot-bzimage.c */
extern const struct boot_loader boot_loader_pvh;	/* boot-pvh.c */

#endif