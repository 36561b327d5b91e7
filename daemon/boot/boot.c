/*
 * Direct kernel boot: the boot_load/boot_probe entry points.  They open
 * the kernel, walk the table of loaders for the first that recognises
 * it, and leave the format's work to that loader; what a PC BIOS would
 * have left in memory (BIOS data area, MP table, ACPI tables) is written
 * here, the same for every format.
 *
 * Layers, top to bottom, with no call back up: boot.c; the loaders
 * (boot-bzimage.c, boot-pvh.c); what they share (boot-common.c,
 * boot-x86.c, boot-e820.c, boot-mptable.c, boot-acpi.c with boot-dsdt.c
 * and boot-aml.c); boot-file.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "boot.h"
#include "boot-internal.h"

/* BIOS data area words some operating systems read to find the EBDA. */
#define BDA_EBDA_SEGMENT	0x40e
#define BDA_BASE_MEM_KIB	0x413

/*
 * The loaders in the order they are asked.  PVH first: a file that starts
 * with the ELF magic is an ELF file, whatever lies at the bzImage
 * header's offset.
 */
static const struct boot_loader *const boot_loaders[] = {
	&boot_loader_pvh,
	&boot_loader_bzimage,
};
#define BOOT_NLOADERS	(sizeof(boot_loaders) / sizeof(boot_loaders[0]))

/*
 * The loader that recognises f, or NULL with the reason in err (-ENOEXEC
 * as the error to return).
 */
static const struct boot_loader *
boot_find_loader(const struct boot_file *f, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < BOOT_NLOADERS; i++)
		if (boot_loaders[i]->recognises(f))
			return boot_loaders[i];
	boot_fail(err, errlen, -ENOEXEC,
	    "kernel is not a bzImage or PVH ELF image");
	return NULL;
}

/*
 * Check the memory description the caller gave us: low RAM mapped,
 * large enough for the fixed layout, and not reaching into the PCI hole.
 */
static int
boot_mem_check(const struct boot_mem *mem, char *err, size_t errlen)
{
	if (mem == NULL || mem->low == NULL)
		return boot_fail(err, errlen, -EINVAL, "no guest RAM mapped");
	if (mem->low_size < BOOT_MIN_LOW_SIZE)
		return boot_fail(err, errlen, -EINVAL,
		    "guest RAM of %llu KiB is too small: %llu KiB needed",
		    (unsigned long long)mem->low_size / 1024,
		    BOOT_MIN_LOW_SIZE / 1024);
	if (mem->low_size > PC_PCI_HOLE_START)
		return boot_fail(err, errlen, -EINVAL,
		    "low guest RAM reaches into the PCI hole at 0x%llx",
		    PC_PCI_HOLE_START);
	return 0;
}

int
boot_probe(const char *path, char *err, size_t errlen)
{
	const struct boot_loader *loader;
	struct boot_file f;
	int r;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (path == NULL)
		return boot_fail(err, errlen, -EINVAL, "no kernel given");
	r = boot_file_open(&f, path, "kernel", err, errlen);
	if (r < 0)
		return r;
	if ((loader = boot_find_loader(&f, err, errlen)) != NULL)
		r = loader->probe(&f, err, errlen);
	else
		r = -ENOEXEC;
	boot_file_close(&f);
	return r;
}

int
boot_load(const struct boot_mem *mem, const struct boot_args *args,
    struct boot_cpu *cpu, char *err, size_t errlen)
{
	const struct boot_loader *loader;
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
	r = boot_fb_check(mem, &args->fb, err, errlen);
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
		memset(mem->low + PC_EBDA_START, 0,
		    PC_HIGH_MEM_START - PC_EBDA_START);
	}
	memset(cpu, 0, sizeof(*cpu));

	if ((loader = boot_find_loader(&f, err, errlen)) != NULL)
		r = loader->load(mem, &f, args, cpu, err, errlen);
	else
		r = -ENOEXEC;
	boot_file_close(&f);
	if (r < 0)
		return r;

	/* Where a PC BIOS would say the EBDA is and how much base RAM. */
	v = (uint16_t)(PC_EBDA_START >> 4);
	memcpy(mem->low + BDA_EBDA_SEGMENT, &v, sizeof(v));
	v = (uint16_t)(PC_LOW_MEM_END / 1024);
	memcpy(mem->low + BDA_BASE_MEM_KIB, &v, sizeof(v));

	r = boot_mptable_write(mem->low, mem->low_size, PC_EBDA_START,
	    args->ncpus);
	if (r < 0)
		return boot_fail(err, errlen, r, "cannot write the MP table: %s",
		    strerror(-r));
	r = boot_acpi_write(mem->low, mem->low_size, args->ncpus);
	if (r < 0)
		return boot_fail(err, errlen, r,
		    "cannot write the ACPI tables: %s", strerror(-r));
	return 0;
}
