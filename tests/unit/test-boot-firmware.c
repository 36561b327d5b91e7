/*
 * Firmware images (boot-firmware.h): the sizes taken and refused, the
 * layout of a code image and a VARS store below 4 GiB (OVMF's as QEMU
 * maps it), the image's end copied to end at 1 MiB (all of a 256 KiB
 * image, from 0xc0000), the reset state, and fw_cfg's etc/e820 bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot-firmware.h"
#include "scratch.h"
#include "tap.h"
#include "unit-util.h"
#include "guest-ram.h"

/* An image of size bytes whose byte i is (i / 4096 + i) & 0xff. */
static const char *
image(const char *name, size_t size)
{
	const char *path = scratch_at(name);
	uint8_t *buf = malloc(size ? size : 1);
	FILE *f;

	if (buf == NULL)
		tap_bail("out of memory");
	for (size_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(i / 4096 + i);
	f = fopen(path, "w");
	if (f == NULL || fwrite(buf, 1, size, f) != size || fclose(f) != 0)
		tap_bail("cannot write %s", path);
	free(buf);
	return path;
}

static void
test_load(size_t size, uint64_t low_start)
{
	struct boot_mem m = guest_ram_new(4 << 20, 0, 0x5a);
	struct boot_firmware fw;
	struct boot_cpu cpu;
	char err[256] = "", name[32];
	const char *path;
	bool same = true;
	uint64_t low = 0x100000 - low_start;

	snprintf(name, sizeof(name), "bios-%zu.bin", size);
	path = image(name, size);
	tap_ok(boot_firmware_load(&m, path, 0, &fw, &cpu, err, sizeof(err)) ==
	    0,
	    "%zu KiB image loads (%s)", size >> 10, err);
	tap_ok(fw.size == size && fw.image != NULL && fw.image[0] == 0 &&
	    fw.image[size - 1] == (uint8_t)((size - 1) / 4096 + size - 1),
	    "the image is kept whole");
	for (uint64_t i = 0; i < low; i++)
		if (m.low[low_start + i] != (uint8_t)((size - low + i) / 4096 +
		    (size - low + i)))
			same = false;
	tap_ok(same, "its last %llu KiB at 0x%llx-0xfffff",
	    (unsigned long long)low >> 10, (unsigned long long)low_start);
	tap_ok(m.low[low_start - 1] == 0x5a && m.low[0x100000] == 0x5a,
	    "nothing written around it");
	tap_ok(cpu.mode == BOOT_CPU_RESET && cpu.code_sel == 0xf000 &&
	    cpu.rip == 0xfff0, "reset state: f000:fff0");
	boot_firmware_free(&fw);
	guest_ram_free(&m);
}

static void
test_refused(size_t size, uint64_t vars, uint64_t ram, int want,
    const char *what)
{
	struct boot_mem m = guest_ram_new(ram, 0, -1);
	struct boot_firmware fw;
	struct boot_cpu cpu;
	char err[256] = "", name[32];
	int rc;

	snprintf(name, sizeof(name), "bad-%zu.bin", size);
	rc = boot_firmware_load(&m, image(name, size), vars, &fw, &cpu, err,
	    sizeof(err));
	tap_ok(rc == want && fw.image == NULL && err[0] != '\0',
	    "%s: %d (%s)", what, rc, err);
	guest_ram_free(&m);
}

static void
test_e820(void)
{
	struct boot_mem m = { .low_size = 0xc0000000ULL,
	    .high_size = 0x40000000ULL };
	uint8_t out[64];
	size_t n;

	n = boot_firmware_e820(&m, out, sizeof(out));
	tap_ok(n == 3 * BOOT_FW_E820_ENTRY && get64(out) == 0 &&
	    get64(out + 8) == 0xc0000000ULL && get32(out + 16) == 1 &&
	    get64(out + 40) == 0x100000000ULL &&
	    get64(out + 48) == 0x40000000ULL && get32(out + 56) == 1,
	    "etc/e820: low RAM and RAM above 4 GiB, little-endian");
	tap_ok(get64(out + 20) == 0xfeffc000ULL &&
	    get64(out + 28) == 0x4000 && get32(out + 36) == 2,
	    "KVM's identity map and TSS reserved at 0xfeffc000, as QEMU's");
	m.high_size = 0;
	tap_ok(boot_firmware_e820(&m, out, sizeof(out)) ==
	    2 * BOOT_FW_E820_ENTRY, "no high RAM: two entries");
	m.high_size = 1;
	tap_ok(boot_firmware_e820(&m, out, BOOT_FW_E820_ENTRY + 3) ==
	    BOOT_FW_E820_ENTRY, "what does not fit is left out");
}

/* Debian's OVMF_CODE_4M.fd and OVMF_VARS_4M.fd, as QEMU maps them. */
static void
test_layout(void)
{
	struct boot_firmware_layout l;
	char err[256] = "";

	tap_ok(boot_firmware_layout(0x37c000, 0x84000, &l, err,
	    sizeof(err)) == 0 && l.code_base == 0xffc84000ULL &&
	    l.code_size == 0x37c000 && l.vars_base == 0xffc00000ULL &&
	    l.vars_size == 0x84000, "OVMF 4M: CODE at 0xffc84000, VARS at "
	    "0xffc00000 (%s)", err);
	tap_ok(boot_firmware_layout(0x1dc000, 0x20000, &l, err,
	    sizeof(err)) == 0 && l.code_base == 0xffe24000ULL &&
	    l.vars_base == 0xffe04000ULL, "OVMF 2M: VARS at 0xffe04000");
	tap_ok(boot_firmware_layout(0x40000, 0, &l, err, sizeof(err)) == 0 &&
	    l.code_base == 0xfffc0000ULL && l.vars_base == l.code_base &&
	    l.vars_size == 0, "SeaBIOS: no VARS, the image at 0xfffc0000");
	tap_ok(boot_firmware_layout(0xf00000, 0x100000, &l, err,
	    sizeof(err)) == 0 && l.vars_base == 0xff000000ULL,
	    "16 MiB together: down to KVM's pages at 0xff000000");
	err[0] = '\0';
	tap_ok(boot_firmware_layout(0xf00000, 0x101000, &l, err,
	    sizeof(err)) == -ENOEXEC && err[0] != '\0',
	    "over 16 MiB together refused (%s)", err);
	err[0] = '\0';
	tap_ok(boot_firmware_layout(0x37c000, 0x84200, &l, err,
	    sizeof(err)) == -ENOEXEC && err[0] != '\0',
	    "VARS not whole pages refused (%s)", err);
	tap_ok(BOOT_FIRMWARE_TOP - BOOT_FIRMWARE_MAX >=
	    PC_FW_KVM_IDMAP_ADDR + PC_FW_KVM_PAGES_LEN &&
	    PC_KVM_TSS_ADDR + 0x3000 > BOOT_FIRMWARE_TOP - 0x400000,
	    "firmware VMs' KVM pages below the flash; the others' inside it");
}

int
main(void)
{
	scratch_new("boot-firmware");
	test_load(256 << 10, 0xc0000);
	test_load(128 << 10, 0xe0000);
	test_load(64 << 10, 0xf0000);
	test_load(4 << 20, 0xc0000);
	test_refused(0, 0, 4 << 20, -ENOEXEC, "an empty file");
	test_refused((64 << 10) + 512, 0, 4 << 20, -ENOEXEC,
	    "not whole pages");
	test_refused((16 << 20) + (64 << 10), 0, 4 << 20, -ENOEXEC,
	    "larger than the room under 4 GiB");
	test_refused(0x37c000, 0x84000 + (13 << 20), 4 << 20, -ENOEXEC,
	    "with its VARS larger than the room under 4 GiB");
	test_refused(256 << 10, 0, 0x80000, -EFBIG, "RAM ends below 1 MiB");
	test_layout();
	test_e820();
	scratch_remove();
	return tap_done();
}
