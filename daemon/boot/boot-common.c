/*
 * What both entry protocols write the same way: the command line and the
 * initrd; and the check of the framebuffer both describe.  Called by
 * boot.c and the loaders; calls only boot-file.c.
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
		r = boot_fail(err, errlen, -EFBIG,
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

/*
 * What the platform keeps in the PCI hole besides the framebuffer: the
 * chips' conventional 1 MiB windows (pc-layout.h) and the pages KVM
 * takes for itself on Intel hosts.
 */
static const struct {
	const char	*name;
	uint64_t	 addr;
	uint64_t	 size;
} boot_fb_clashes[] = {
	{ "the IOAPIC", PC_IOAPIC_ADDR, 0x100000 },
	{ "the local APIC", PC_LAPIC_ADDR, 0x100000 },
	{ "KVM's identity map and TSS pages", PC_KVM_IDMAP_ADDR,
	    PC_KVM_TSS_ADDR + 3 * 4096 - PC_KVM_IDMAP_ADDR },
};

int
boot_fb_check(const struct boot_mem *mem, const struct boot_fb *fb,
    char *err, size_t errlen)
{
	uint64_t need, end, high_end;
	size_t i;

	if (fb->base == 0)
		return 0;
	if (fb->width == 0 || fb->height == 0)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer of %ux%u pixels: width and height must be "
		    "at least 1", fb->width, fb->height);
	if (fb->stride % 4 != 0 || fb->stride / 4 < fb->width)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer stride of %u bytes does not hold a line of "
		    "%u pixels at 4 bytes each", fb->stride, fb->width);
	if (fb->stride > 0xffff)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer stride of %u bytes: at most 65535 "
		    "(screen_info's lfb_linelength is 16 bits)", fb->stride);
	if (fb->height > 0xffff)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer height of %u lines: at most 65535 "
		    "(screen_info's lfb_height is 16 bits)", fb->height);
	need = (uint64_t)fb->stride * fb->height;
	if (fb->size < need)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer of %llu bytes is smaller than its %u lines "
		    "of %u bytes (%llu)", (unsigned long long)fb->size,
		    fb->height, fb->stride, (unsigned long long)need);
	if (fb->size > PC_FRAMEBUFFER_MAX)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer of %llu bytes is larger than the %llu MiB "
		    "maximum", (unsigned long long)fb->size,
		    PC_FRAMEBUFFER_MAX >> 20);
	if ((fb->base | fb->size) & 0xfffULL)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer at 0x%llx of 0x%llx bytes is not "
		    "page-aligned", (unsigned long long)fb->base,
		    (unsigned long long)fb->size);
	end = fb->base + fb->size;
	if (end < fb->base)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer at 0x%llx wraps around the address space",
		    (unsigned long long)fb->base);
	if (fb->base < mem->low_size)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer at 0x%llx overlaps low RAM (below 0x%llx)",
		    (unsigned long long)fb->base,
		    (unsigned long long)mem->low_size);
	high_end = PC_HIGH_RAM_START + mem->high_size;
	if (fb->base >= PC_HIGH_RAM_START) {
		/* Above 4 GiB: only past the end of the high RAM. */
		if (mem->high_size > 0 && fb->base < high_end)
			return boot_fail(err, errlen, -EINVAL,
			    "framebuffer at 0x%llx overlaps high RAM "
			    "(0x%llx-0x%llx)", (unsigned long long)fb->base,
			    PC_HIGH_RAM_START,
			    (unsigned long long)high_end - 1);
		return 0;
	}
	if (fb->base < PC_PCI_HOLE_START || end > PC_HIGH_RAM_START)
		return boot_fail(err, errlen, -EINVAL,
		    "framebuffer at 0x%llx-0x%llx is not in the PCI hole "
		    "(0x%llx-0x%llx)", (unsigned long long)fb->base,
		    (unsigned long long)end - 1, PC_PCI_HOLE_START,
		    PC_HIGH_RAM_START - 1);
	for (i = 0; i < sizeof(boot_fb_clashes) / sizeof(boot_fb_clashes[0]);
	    i++)
		if (fb->base < boot_fb_clashes[i].addr +
		    boot_fb_clashes[i].size && end > boot_fb_clashes[i].addr)
			return boot_fail(err, errlen, -EINVAL,
			    "framebuffer at 0x%llx-0x%llx overlaps %s at "
			    "0x%llx", (unsigned long long)fb->base,
			    (unsigned long long)end - 1,
			    boot_fb_clashes[i].name,
			    (unsigned long long)boot_fb_clashes[i].addr);
	return 0;
}
