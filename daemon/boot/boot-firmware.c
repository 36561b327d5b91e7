/* See boot-firmware.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "boot-firmware.h"
#include "boot-internal.h"

int
boot_firmware_layout(uint64_t code_size, uint64_t vars_size,
    struct boot_firmware_layout *l, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	if (code_size < BOOT_FIRMWARE_MIN ||
	    code_size % BOOT_FIRMWARE_ALIGN != 0 ||
	    code_size > BOOT_FIRMWARE_MAX)
		return boot_fail(err, errlen, -ENOEXEC, "not a firmware "
		    "image: %llu bytes, not whole 4 KiB pages from 64 to "
		    "%llu KiB", (unsigned long long)code_size,
		    (unsigned long long)BOOT_FIRMWARE_MAX >> 10);
	if (vars_size % BOOT_FIRMWARE_ALIGN != 0)
		return boot_fail(err, errlen, -ENOEXEC, "UEFI variables of "
		    "%llu bytes: not whole 4 KiB pages",
		    (unsigned long long)vars_size);
	if (vars_size > BOOT_FIRMWARE_MAX - code_size)
		return boot_fail(err, errlen, -ENOEXEC, "firmware image "
		    "(%llu KiB) and UEFI variables (%llu KiB) together over "
		    "%llu KiB", (unsigned long long)code_size >> 10,
		    (unsigned long long)vars_size >> 10,
		    (unsigned long long)BOOT_FIRMWARE_MAX >> 10);
	l->code_size = code_size;
	l->code_base = BOOT_FIRMWARE_TOP - code_size;
	l->vars_size = vars_size;
	l->vars_base = l->code_base - vars_size;
	return 0;
}

int
boot_firmware_load(const struct boot_mem *mem, const char *path,
    uint64_t vars_size, struct boot_firmware *fw, struct boot_cpu *cpu,
    char *err, size_t errlen)
{
	struct boot_file f;
	uint64_t low;
	void *p;
	int r;

	fw->image = NULL;
	fw->size = 0;
	r = boot_file_open(&f, path, "firmware", err, errlen);
	if (r < 0)
		return r;
	r = boot_firmware_layout(f.size, vars_size, &fw->layout, err, errlen);
	if (r < 0)
		goto close;
	low = f.size < BOOT_FIRMWARE_LOW_MAX ? f.size : BOOT_FIRMWARE_LOW_MAX;
	if (!boot_mem_fits(mem, BOOT_FIRMWARE_LOW_END - low, low)) {
		r = boot_fail(err, errlen, -EFBIG, "guest RAM ends below "
		    "1 MiB: no room for the firmware");
		goto close;
	}
	p = mmap(NULL, f.size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		r = boot_fail(err, errlen, -ENOMEM, "cannot map %llu bytes "
		    "for the firmware", (unsigned long long)f.size);
		goto close;
	}
	r = boot_file_read(&f, p, f.size, 0, err, errlen);
	/* The guest's copy at 4 GiB is read-only: so is ours. */
	if (r == 0 && mprotect(p, f.size, PROT_READ) < 0)
		r = boot_fail(err, errlen, -errno, "mprotect: %s",
		    strerror(errno));
	if (r < 0) {
		munmap(p, f.size);
		goto close;
	}
	fw->image = p;
	fw->size = f.size;
	/* The image's end, where the reset vector is, ends at 1 MiB. */
	memcpy(mem->low + BOOT_FIRMWARE_LOW_END - low,
	    fw->image + fw->size - low, low);

	/* The PC's reset state: the vCPU's own, said once here. */
	memset(cpu, 0, sizeof(*cpu));
	cpu->mode = BOOT_CPU_RESET;
	cpu->rip = 0xfff0;
	cpu->code_sel = 0xf000;
close:
	boot_file_close(&f);
	return r;
}

void
boot_firmware_free(struct boot_firmware *fw)
{
	if (fw->image != NULL)
		munmap(fw->image, fw->size);
	fw->image = NULL;
	fw->size = 0;
}

static size_t
boot_fw_e820_put(uint8_t *out, size_t outlen, size_t at, uint64_t addr,
    uint64_t size, uint32_t type)
{
	uint8_t *e = out + at;

	if (size == 0 || outlen - at < BOOT_FW_E820_ENTRY)
		return at;
	for (int i = 0; i < 8; i++) {
		e[i] = (uint8_t)(addr >> (8 * i));
		e[8 + i] = (uint8_t)(size >> (8 * i));
	}
	for (int i = 0; i < 4; i++)
		e[16 + i] = (uint8_t)(type >> (8 * i));
	return at + BOOT_FW_E820_ENTRY;
}

size_t
boot_firmware_e820(const struct boot_mem *mem, uint8_t *out, size_t outlen)
{
	size_t n;

	n = boot_fw_e820_put(out, outlen, 0, 0, mem->low_size,
	    BOOT_E820_RAM);
	n = boot_fw_e820_put(out, outlen, n, PC_FW_KVM_IDMAP_ADDR,
	    PC_FW_KVM_PAGES_LEN, BOOT_E820_RESERVED);
	if (mem->high_size > 0)
		n = boot_fw_e820_put(out, outlen, n, PC_HIGH_RAM_START,
		    mem->high_size, BOOT_E820_RAM);
	return n;
}

int
boot_firmware_rom(const char *path, uint8_t **rom, size_t *len, char *err,
    size_t errlen)
{
	struct boot_file f;
	uint8_t *p;
	int r;

	*rom = NULL;
	*len = 0;
	r = boot_file_open(&f, path, "option ROM", err, errlen);
	if (r < 0)
		return r;
	if (f.size < 2 || f.size > BOOT_FIRMWARE_ROM_MAX ||
	    f.head[0] != 0x55 || f.head[1] != 0xaa) {
		r = boot_fail(err, errlen, -ENOEXEC, "not an option ROM: "
		    "%llu bytes%s", (unsigned long long)f.size,
		    f.size >= 2 && f.size <= BOOT_FIRMWARE_ROM_MAX ?
		    ", no 55 aa signature" : "");
		goto close;
	}
	if ((p = malloc(f.size)) == NULL) {
		r = boot_fail(err, errlen, -ENOMEM, "out of memory");
		goto close;
	}
	r = boot_file_read(&f, p, f.size, 0, err, errlen);
	if (r < 0) {
		free(p);
		goto close;
	}
	*rom = p;
	*len = (size_t)f.size;
close:
	boot_file_close(&f);
	return r;
}
