/*
 * Firmware images (boot-firmware.h): the sizes taken and refused, the
 * image's end copied to end at 1 MiB (all of a 256 KiB image, from
 * 0xc0000), the reset state, and fw_cfg's etc/e820 bytes.
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
	tap_ok(boot_firmware_load(&m, path, &fw, &cpu, err, sizeof(err)) == 0,
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
test_refused(size_t size, uint64_t ram, int want, const char *what)
{
	struct boot_mem m = guest_ram_new(ram, 0, -1);
	struct boot_firmware fw;
	struct boot_cpu cpu;
	char err[256] = "", name[32];
	int rc;

	snprintf(name, sizeof(name), "bad-%zu.bin", size);
	rc = boot_firmware_load(&m, image(name, size), &fw, &cpu, err,
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
	tap_ok(n == 2 * BOOT_FW_E820_ENTRY && get64(out) == 0 &&
	    get64(out + 8) == 0xc0000000ULL && get32(out + 16) == 1 &&
	    get64(out + 20) == 0x100000000ULL &&
	    get64(out + 28) == 0x40000000ULL && get32(out + 36) == 1,
	    "etc/e820: low RAM and RAM above 4 GiB, little-endian");
	m.high_size = 0;
	tap_ok(boot_firmware_e820(&m, out, sizeof(out)) == BOOT_FW_E820_ENTRY,
	    "no high RAM: one entry");
	m.high_size = 1;
	tap_ok(boot_firmware_e820(&m, out, BOOT_FW_E820_ENTRY + 3) ==
	    BOOT_FW_E820_ENTRY, "what does not fit is left out");
}

int
main(void)
{
	scratch_new("boot-firmware");
	test_load(256 << 10, 0xc0000);
	test_load(128 << 10, 0xe0000);
	test_load(64 << 10, 0xf0000);
	test_refused(0, 4 << 20, -ENOEXEC, "an empty file");
	test_refused((64 << 10) + 512, 4 << 20, -ENOEXEC,
	    "not a multiple of 64 KiB");
	test_refused(512 << 10, 4 << 20, -ENOEXEC,
	    "larger than the room under 4 GiB");
	test_refused(256 << 10, 0x80000, -EFBIG, "RAM ends below 1 MiB");
	test_e820();
	scratch_remove();
	return tap_done();
}
