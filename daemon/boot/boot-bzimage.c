/*
 * Linux bzImage loader, 64-bit boot protocol (Linux's
 * Documentation/arch/x86/boot.rst, "64-bit Boot Protocol"; boot_params
 * layout in Documentation/arch/x86/zero-page.rst).
 *
 * The real-mode setup code is never run: we fill boot_params ourselves
 * and enter the protected-mode kernel's 64-bit entry point, 0x200 bytes
 * past its start, in long mode with identity-mapped page tables.
 *
 * The protected-mode kernel is loaded at 1 MiB, the protocol's
 * traditional address.  That works for both kinds of kernel: a
 * non-relocatable one moves itself to pref_address; a relocatable one
 * decompresses at its load address rounded up to kernel_alignment but
 * never below LOAD_PHYSICAL_ADDR, which is what pref_address holds.
 * Either way the kernel then occupies init_size bytes from
 * max(roundup(1 MiB, kernel_alignment), pref_address), and that is what
 * has to fit in RAM and stay clear of the initrd.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "boot.h"
#include "boot-internal.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "boot_params are written in host byte order: x86 hosts only"
#endif

/* The setup header: file offset 0x1f1, and the same in boot_params. */
struct bz_setup_header {
	uint8_t		setup_sects;
	uint16_t	root_flags;
	uint32_t	syssize;
	uint16_t	ram_size;
	uint16_t	vid_mode;
	uint16_t	root_dev;
	uint16_t	boot_flag;
	uint16_t	jump;
	uint32_t	header;
	uint16_t	version;
	uint32_t	realmode_swtch;
	uint16_t	start_sys_seg;
	uint16_t	kernel_version;
	uint8_t		type_of_loader;
	uint8_t		loadflags;
	uint16_t	setup_move_size;
	uint32_t	code32_start;
	uint32_t	ramdisk_image;
	uint32_t	ramdisk_size;
	uint32_t	bootsect_kludge;
	uint16_t	heap_end_ptr;
	uint8_t		ext_loader_ver;
	uint8_t		ext_loader_type;
	uint32_t	cmd_line_ptr;
	uint32_t	initrd_addr_max;
	uint32_t	kernel_alignment;
	uint8_t		relocatable_kernel;
	uint8_t		min_alignment;
	uint16_t	xloadflags;
	uint32_t	cmdline_size;
	uint32_t	hardware_subarch;
	uint64_t	hardware_subarch_data;
	uint32_t	payload_offset;
	uint32_t	payload_length;
	uint64_t	setup_data;
	uint64_t	pref_address;
	uint32_t	init_size;
	uint32_t	handover_offset;
	uint32_t	kernel_info_offset;
} __attribute__((packed));

#define HDR_OFFSET	0x1f1
#define HDR_AT(field, off) \
	_Static_assert(HDR_OFFSET + offsetof(struct bz_setup_header, field) == \
	    (off), #field " is at " #off)
HDR_AT(setup_sects, 0x1f1);
HDR_AT(syssize, 0x1f4);
HDR_AT(vid_mode, 0x1fa);
HDR_AT(boot_flag, 0x1fe);
HDR_AT(jump, 0x200);
HDR_AT(header, 0x202);
HDR_AT(version, 0x206);
HDR_AT(type_of_loader, 0x210);
HDR_AT(loadflags, 0x211);
HDR_AT(code32_start, 0x214);
HDR_AT(ramdisk_image, 0x218);
HDR_AT(ramdisk_size, 0x21c);
HDR_AT(heap_end_ptr, 0x224);
HDR_AT(cmd_line_ptr, 0x228);
HDR_AT(initrd_addr_max, 0x22c);
HDR_AT(kernel_alignment, 0x230);
HDR_AT(relocatable_kernel, 0x234);
HDR_AT(xloadflags, 0x236);
HDR_AT(cmdline_size, 0x238);
HDR_AT(payload_offset, 0x248);
HDR_AT(setup_data, 0x250);
HDR_AT(pref_address, 0x258);
HDR_AT(init_size, 0x260);
HDR_AT(kernel_info_offset, 0x268);
_Static_assert(HDR_OFFSET + sizeof(struct bz_setup_header) == 0x26c,
    "setup header ends at 0x26c");

/*
 * screen_info, at offset 0 of boot_params (Linux's
 * include/uapi/linux/screen_info.h).  The loader fills it only to
 * describe a linear framebuffer, as the setup code's VESA driver would
 * have (arch/x86/boot/video-vesa.c): orig_video_isVGA = VIDEO_TYPE_VLFB,
 * lfb_size in 64 KiB units.
 */
struct bz_screen_info {
	uint8_t		orig_x;
	uint8_t		orig_y;
	uint16_t	ext_mem_k;
	uint16_t	orig_video_page;
	uint8_t		orig_video_mode;
	uint8_t		orig_video_cols;
	uint8_t		flags;
	uint8_t		unused2;
	uint16_t	orig_video_ega_bx;
	uint16_t	unused3;
	uint8_t		orig_video_lines;
	uint8_t		orig_video_isVGA;
	uint16_t	orig_video_points;
	uint16_t	lfb_width;
	uint16_t	lfb_height;
	uint16_t	lfb_depth;
	uint32_t	lfb_base;
	uint32_t	lfb_size;
	uint16_t	cl_magic;
	uint16_t	cl_offset;
	uint16_t	lfb_linelength;
	uint8_t		red_size;
	uint8_t		red_pos;
	uint8_t		green_size;
	uint8_t		green_pos;
	uint8_t		blue_size;
	uint8_t		blue_pos;
	uint8_t		rsvd_size;
	uint8_t		rsvd_pos;
	uint16_t	vesapm_seg;
	uint16_t	vesapm_off;
	uint16_t	pages;
	uint16_t	vesa_attributes;
	uint32_t	capabilities;
	uint32_t	ext_lfb_base;
	uint8_t		reserved[2];
} __attribute__((packed));

#define SI_AT(field, off) \
	_Static_assert(offsetof(struct bz_screen_info, field) == (off), \
	    #field " is at " #off)
SI_AT(orig_video_cols, 0x07);
SI_AT(orig_video_lines, 0x0e);
SI_AT(orig_video_isVGA, 0x0f);
SI_AT(orig_video_points, 0x10);
SI_AT(lfb_width, 0x12);
SI_AT(lfb_height, 0x14);
SI_AT(lfb_depth, 0x16);
SI_AT(lfb_base, 0x18);
SI_AT(lfb_size, 0x1c);
SI_AT(lfb_linelength, 0x24);
SI_AT(red_size, 0x26);
SI_AT(rsvd_pos, 0x2d);
SI_AT(vesapm_seg, 0x2e);
SI_AT(pages, 0x32);
SI_AT(capabilities, 0x36);
SI_AT(ext_lfb_base, 0x3a);
_Static_assert(sizeof(struct bz_screen_info) == 0x40, "screen_info");

/* VESA VGA in graphic mode; ext_lfb_base is valid; an 8x16 text font. */
#define VIDEO_TYPE_VLFB			0x23
#define VIDEO_CAPABILITY_64BIT_BASE	(1U << 1)
#define BZ_FONT_WIDTH			8
#define BZ_FONT_HEIGHT			16

struct bz_e820 {
	uint64_t	addr;
	uint64_t	size;
	uint32_t	type;
} __attribute__((packed));
_Static_assert(sizeof(struct bz_e820) == 20, "e820 entry");

#define BZ_E820_MAX	128

/* The zero page, with just the fields a loader fills named. */
struct bz_boot_params {
	struct bz_screen_info screen_info;
	uint8_t		apm_bios_info[0x14];
	uint8_t		pad_054[4];
	uint64_t	tboot_addr;
	uint8_t		ist_info[0x10];
	uint64_t	acpi_rsdp_addr;
	uint8_t		pad_078[8];
	uint8_t		hd0_info[0x10];
	uint8_t		hd1_info[0x10];
	uint8_t		sys_desc_table[0x10];
	uint8_t		olpc_ofw_header[0x10];
	uint32_t	ext_ramdisk_image;
	uint32_t	ext_ramdisk_size;
	uint32_t	ext_cmd_line_ptr;
	uint8_t		pad_0cc[0x1e0 - 0xcc];
	uint32_t	alt_mem_k;
	uint32_t	scratch;
	uint8_t		e820_entries;
	uint8_t		eddbuf_entries;
	uint8_t		edd_mbr_sig_buf_entries;
	uint8_t		kbd_status;
	uint8_t		secure_boot;
	uint8_t		pad_1ed[2];
	uint8_t		sentinel;
	uint8_t		pad_1f0;
	struct bz_setup_header hdr;
	uint8_t		pad_26c[0x290 - 0x26c];
	uint32_t	edd_mbr_sig_buffer[16];
	struct bz_e820	e820_table[BZ_E820_MAX];
	uint8_t		pad_cd0[0x1000 - 0xcd0];
} __attribute__((packed));

#define BP_AT(field, off) \
	_Static_assert(offsetof(struct bz_boot_params, field) == (off), \
	    #field " is at " #off)
BP_AT(screen_info, 0x000);
BP_AT(apm_bios_info, 0x040);
BP_AT(acpi_rsdp_addr, 0x070);
BP_AT(ext_ramdisk_image, 0x0c0);
BP_AT(ext_ramdisk_size, 0x0c4);
BP_AT(ext_cmd_line_ptr, 0x0c8);
BP_AT(alt_mem_k, 0x1e0);
BP_AT(e820_entries, 0x1e8);
BP_AT(sentinel, 0x1ef);
BP_AT(hdr, HDR_OFFSET);
BP_AT(edd_mbr_sig_buffer, 0x290);
BP_AT(e820_table, 0x2d0);
_Static_assert(sizeof(struct bz_boot_params) == 4096, "boot_params");
_Static_assert(BOOT_ZERO_PAGE_ADDR + 4096 <= BOOT_STACK_TOP - 4096,
    "zero page overlaps the scratch stack");

#define BZ_BOOT_FLAG		0xaa55
#define BZ_PROTOCOL_MIN		0x020c	/* 2.12: xloadflags */
#define BZ_LOADED_HIGH		0x01
#define BZ_CAN_USE_HEAP		0x80
#define BZ_XLF_KERNEL_64	0x0001
#define BZ_LOADER_UNDEFINED	0xff	/* type_of_loader: no assigned ID */
#define BZ_ENTRY64_OFFSET	0x200
/* Setup heap end as the protocol's example loaders use (setup + stack). */
#define BZ_HEAP_END		0xfe00
/* The protocol's default for kernels that do not say (before 2.03). */
#define BZ_INITRD_ADDR_MAX_DEFAULT 0x37ffffffU

/* What the loader needs from the file, checked. */
struct bz_image {
	struct bz_setup_header hdr;
	size_t		hdr_len;	/* setup header bytes the file has */
	uint64_t	setup_size;	/* boot sector + setup code */
	uint64_t	kernel_size;	/* protected-mode kernel */
};

static int
bz_parse(const struct boot_file *f, struct bz_image *bz, char *err,
    size_t errlen)
{
	struct bz_setup_header *h = &bz->hdr;
	size_t end;
	unsigned int sects;

	memset(bz, 0, sizeof(*bz));
	if (f->head_len < 0x202)
		return boot_fail(err, errlen, -ENOEXEC,
		    "bzImage is truncated: %llu bytes",
		    (unsigned long long)f->size);
	/*
	 * The header runs from 0x1f1 to the target of the jump at 0x200
	 * (0x202 plus the byte at 0x201); take what we know of it.
	 */
	end = 0x202 + (size_t)f->head[0x201];
	if (end > HDR_OFFSET + sizeof(*h))
		end = HDR_OFFSET + sizeof(*h);
	if (end > f->head_len)
		return boot_fail(err, errlen, -ENOEXEC,
		    "bzImage is truncated in its setup header");
	bz->hdr_len = end - HDR_OFFSET;
	memcpy(h, f->head + HDR_OFFSET, bz->hdr_len);

	if (h->boot_flag != BZ_BOOT_FLAG)
		return boot_fail(err, errlen, -ENOEXEC,
		    "kernel is not a bzImage: boot sector signature 0x%04x, "
		    "0xaa55 expected", h->boot_flag);
	if (h->version < BZ_PROTOCOL_MIN)
		return boot_fail(err, errlen, -ENOEXEC,
		    "boot protocol %u.%02u is too old: 2.12 or later needed",
		    h->version >> 8, h->version & 0xff);
	/* 2.12 kernels have the header through init_size at least. */
	if (end < HDR_OFFSET + offsetof(struct bz_setup_header, init_size) +
	    sizeof(h->init_size))
		return boot_fail(err, errlen, -ENOEXEC,
		    "bzImage setup header is too short (%zu bytes) for "
		    "protocol %u.%02u", bz->hdr_len, h->version >> 8,
		    h->version & 0xff);
	if (!(h->xloadflags & BZ_XLF_KERNEL_64))
		return boot_fail(err, errlen, -ENOEXEC,
		    "kernel has no 64-bit entry point (XLF_KERNEL_64 is not "
		    "set in xloadflags)");
	if (!(h->loadflags & BZ_LOADED_HIGH))
		return boot_fail(err, errlen, -ENOEXEC,
		    "kernel is a zImage (not loaded high): not supported");

	sects = h->setup_sects != 0 ? h->setup_sects : 4;
	bz->setup_size = (sects + 1ULL) * 512;
	if (bz->setup_size >= f->size)
		return boot_fail(err, errlen, -ENOEXEC,
		    "bzImage is truncated: its setup code ends at %llu, the "
		    "file has %llu bytes", (unsigned long long)bz->setup_size,
		    (unsigned long long)f->size);
	bz->kernel_size = f->size - bz->setup_size;
	/* syssize counts 16-byte units, the last one possibly partial. */
	if (h->syssize == 0 || (uint64_t)h->syssize * 16 >
	    bz->kernel_size + 15)
		return boot_fail(err, errlen, -ENOEXEC,
		    "bzImage is truncated: the kernel is %llu bytes, the "
		    "file has %llu after the setup code",
		    (unsigned long long)h->syssize * 16,
		    (unsigned long long)bz->kernel_size);
	if (h->init_size == 0)
		return boot_fail(err, errlen, -ENOEXEC,
		    "bzImage setup header has no init_size");
	return 0;
}

/* Where the running kernel will live; see the comment at the top. */
static void
bz_footprint(const struct bz_image *bz, uint64_t *start, uint64_t *end)
{
	const struct bz_setup_header *h = &bz->hdr;
	uint64_t align, base, pref;

	pref = h->pref_address;
	base = BOOT_KERNEL_ADDR;
	if (h->relocatable_kernel) {
		align = h->kernel_alignment;
		/* Not a power of two: the kernel would not boot anyway. */
		if (align != 0 && (align & (align - 1)) == 0)
			base = (base + align - 1) & ~(align - 1);
		if (pref > base)
			base = pref;
	} else if (pref != 0)
		base = pref;
	*start = base;
	*end = base + h->init_size;
}

/*
 * Describe fb (checked by boot_fb_check; base != 0) in screen_info the way
 * the setup code's VESA driver does for a linear graphics mode: the
 * kernel's sysfb then registers a simple-framebuffer (x8r8g8b8 is a
 * format it knows) or a vesa-framebuffer device, and fbcon runs on it.
 *
 * lfb_size counts 64 KiB units for VIDEO_TYPE_VLFB and is rounded up:
 * sysfb refuses a framebuffer whose lines reach beyond lfb_size, and maps
 * only those lines; vesafb maps at most twice the visible lines, cut at
 * lfb_size.  The text geometry (orig_video_cols/lines/points) is what an
 * 8x16 font gives on that many pixels, at most 255 each, for code that
 * still reads it.
 */
static void
bz_screen_info(struct bz_screen_info *si, const struct boot_fb *fb)
{
	uint64_t units = (fb->size + 0xffffULL) >> 16;
	uint32_t cols = fb->width / BZ_FONT_WIDTH;
	uint32_t lines = fb->height / BZ_FONT_HEIGHT;

	memset(si, 0, sizeof(*si));
	si->orig_video_isVGA = VIDEO_TYPE_VLFB;
	si->orig_video_cols = (uint8_t)(cols > 255 ? 255 : cols);
	si->orig_video_lines = (uint8_t)(lines > 255 ? 255 : lines);
	si->orig_video_points = BZ_FONT_HEIGHT;
	si->lfb_width = (uint16_t)fb->width;
	si->lfb_height = (uint16_t)fb->height;
	si->lfb_depth = 32;
	si->lfb_base = (uint32_t)fb->base;
	si->lfb_size = (uint32_t)units;
	si->lfb_linelength = (uint16_t)fb->stride;
	/* x8r8g8b8: bits 23:16 red, 15:8 green, 7:0 blue, 31:24 unused. */
	si->red_size = 8;
	si->red_pos = 16;
	si->green_size = 8;
	si->green_pos = 8;
	si->blue_size = 8;
	si->blue_pos = 0;
	si->rsvd_size = 8;
	si->rsvd_pos = 24;
	/*
	 * One image page.  No VBE protected-mode interface (vesapm_seg 0),
	 * so vesafb neither pans nor sets a palette through the BIOS.
	 */
	si->pages = 1;
	if (fb->base >> 32 != 0) {
		si->ext_lfb_base = (uint32_t)(fb->base >> 32);
		si->capabilities = VIDEO_CAPABILITY_64BIT_BASE;
	}
}

/* "HdrS" at 0x202 marks every kernel with boot protocol 2.00+. */
static bool
bz_recognises(const struct boot_file *f)
{
	return f->head_len >= 0x206 && memcmp(f->head + 0x202, "HdrS", 4) == 0;
}

static int
bz_probe(const struct boot_file *f, char *err, size_t errlen)
{
	struct bz_image bz;
	uint64_t start, end;
	int r;

	r = bz_parse(f, &bz, err, errlen);
	if (r < 0)
		return r;
	bz_footprint(&bz, &start, &end);
	if (end > PC_PCI_HOLE_START)
		return boot_fail(err, errlen, -ENOEXEC,
		    "kernel needs RAM up to 0x%llx, beyond what it can be "
		    "given below 0x%llx", (unsigned long long)end,
		    PC_PCI_HOLE_START);
	return 0;
}

static int
bz_load(const struct boot_mem *mem, const struct boot_file *f,
    const struct boot_args *args, struct boot_cpu *cpu, char *err,
    size_t errlen)
{
	struct bz_boot_params *bp;
	struct boot_e820 map[BOOT_E820_MAX];
	struct bz_image bz;
	uint64_t start, end, kend, top, initrd_addr = 0, initrd_size = 0;
	unsigned int i, n;
	int r;

	r = bz_parse(f, &bz, err, errlen);
	if (r < 0)
		return r;

	bz_footprint(&bz, &start, &end);
	kend = BOOT_KERNEL_ADDR + bz.kernel_size;
	if (end > kend)
		kend = end;
	if (kend > mem->low_size)
		return boot_fail(err, errlen, -EFBIG,
		    "kernel needs RAM up to 0x%llx (%llu MiB), the guest has "
		    "%llu MiB below 0x%llx", (unsigned long long)kend,
		    (unsigned long long)(kend + 0xfffff) >> 20,
		    (unsigned long long)mem->low_size >> 20,
		    PC_PCI_HOLE_START);

	r = boot_cmdline_write(mem, args->cmdline, bz.hdr.cmdline_size, err,
	    errlen);
	if (r < 0)
		return r;

	r = boot_file_read(f, mem->low + BOOT_KERNEL_ADDR, bz.kernel_size,
	    bz.setup_size, err, errlen);
	if (r < 0)
		return r;

	if (args->initrd != NULL) {
		top = bz.hdr.initrd_addr_max != 0 ? bz.hdr.initrd_addr_max :
		    BZ_INITRD_ADDR_MAX_DEFAULT;
		r = boot_initrd_load(mem, args->initrd, kend, top + 1ULL,
		    &initrd_addr, &initrd_size, err, errlen);
		if (r < 0)
			return r;
	}

	/*
	 * Build the zero page in place: all zero (screen_info too, when
	 * there is no display: orig_video_isVGA 0, no console the kernel
	 * could find there), then the setup header as the file has it, then
	 * what the loader is to fill in.
	 */
	bp = (struct bz_boot_params *)(void *)(mem->low + BOOT_ZERO_PAGE_ADDR);
	memset(bp, 0, sizeof(*bp));
	memcpy(&bp->hdr, &bz.hdr, bz.hdr_len);
	bp->hdr.type_of_loader = BZ_LOADER_UNDEFINED;
	bp->hdr.loadflags |= BZ_CAN_USE_HEAP;
	bp->hdr.heap_end_ptr = BZ_HEAP_END;
	bp->hdr.code32_start = BOOT_KERNEL_ADDR;
	bp->hdr.cmd_line_ptr = (uint32_t)BOOT_CMDLINE_ADDR;
	bp->ext_cmd_line_ptr = (uint32_t)(BOOT_CMDLINE_ADDR >> 32);
	bp->hdr.ramdisk_image = (uint32_t)initrd_addr;
	bp->hdr.ramdisk_size = (uint32_t)initrd_size;
	bp->ext_ramdisk_image = (uint32_t)(initrd_addr >> 32);
	bp->ext_ramdisk_size = (uint32_t)(initrd_size >> 32);
	if (args->fb.base != 0)
		bz_screen_info(&bp->screen_info, &args->fb);

	n = boot_e820_build(mem, map);
	for (i = 0; i < n; i++) {
		bp->e820_table[i].addr = map[i].addr;
		bp->e820_table[i].size = map[i].size;
		bp->e820_table[i].type = map[i].type;
	}
	bp->e820_entries = (uint8_t)n;
	/* boot.c writes the tables once the loader is done. */
	bp->acpi_rsdp_addr = BOOT_ACPI_RSDP_ADDR;

	boot_x86_write_gdt(mem, 1, cpu);
	boot_x86_write_page_tables(mem, cpu);
	cpu->mode = BOOT_CPU_LONG64;
	cpu->rip = BOOT_KERNEL_ADDR + BZ_ENTRY64_OFFSET;
	cpu->rsi = BOOT_ZERO_PAGE_ADDR;
	cpu->rsp = BOOT_STACK_TOP;
	return 0;
}

const struct boot_loader boot_loader_bzimage = {
	.name = "bzImage",
	.recognises = bz_recognises,
	.probe = bz_probe,
	.load = bz_load,
};
