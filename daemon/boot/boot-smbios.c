/* See boot-smbios.h.  Section numbers are DSP0134 3.0's. */
#include <errno.h>
#include <string.h>

#include "boot-smbios.h"
#include "boot-tables.h"

#define SMBIOS_VENDOR		"vmmd"
#define SMBIOS_PRODUCT		"vmmd"

struct smbios {
	uint8_t	*p;
	size_t	 len;
	size_t	 cap;
	int	 err;
};

static void
smbios_put(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * One structure: its formatted area (len bytes, with type, length and
 * handle filled in here) and its strings (NULL-ended; numbered from 1
 * in the formatted area), then the double NUL that ends it (6.1.3).
 */
static void
smbios_add(struct smbios *s, uint8_t *f, uint8_t type, uint8_t len,
    uint16_t handle, const char *const *strs)
{
	size_t n = len;
	unsigned int i;

	f[0] = type;
	f[1] = len;
	smbios_put(f + 2, handle, 2);
	for (i = 0; strs != NULL && strs[i] != NULL; i++)
		n += strlen(strs[i]) + 1;
	n += i == 0 ? 2 : 1;
	if (s->err != 0 || n > s->cap - s->len) {
		s->err = -ENOSPC;
		return;
	}
	memcpy(s->p + s->len, f, len);
	s->len += len;
	for (i = 0; strs != NULL && strs[i] != NULL; i++) {
		memcpy(s->p + s->len, strs[i], strlen(strs[i]) + 1);
		s->len += strlen(strs[i]) + 1;
	}
	if (i == 0)
		s->p[s->len++] = 0;
	s->p[s->len++] = 0;
}

/* BIOS Information (7.1): characteristics "not supported" (bit 3). */
static void
smbios_bios(struct smbios *s, const struct boot_smbios_config *cfg)
{
	const char *strs[] = { SMBIOS_VENDOR, cfg->version, "01/01/2026",
	    NULL };
	uint8_t f[0x18] = { 0 };

	f[0x04] = 1;			/* vendor */
	f[0x05] = 2;			/* version */
	smbios_put(f + 0x06, 0xe800, 2);	/* starting segment */
	f[0x08] = 3;			/* release date */
	f[0x09] = 0;			/* ROM size: 64 KiB */
	smbios_put(f + 0x0a, 1U << 3, 8);
	f[0x13] = 1U << 4;		/* a virtual machine (7.1.2.2) */
	f[0x14] = 0;			/* system BIOS release: 0.0 */
	f[0x15] = 0;
	f[0x16] = 0xff;			/* no embedded controller */
	f[0x17] = 0xff;
	smbios_add(s, f, 0, sizeof(f), 0x0000, strs);
}

/* System Information (7.2): wake-up by power switch (6). */
static void
smbios_system(struct smbios *s, const struct boot_smbios_config *cfg)
{
	const char *strs[] = { SMBIOS_VENDOR, SMBIOS_PRODUCT, cfg->version,
	    NULL };
	uint8_t f[0x1b] = { 0 };

	f[0x04] = 1;			/* manufacturer */
	f[0x05] = 2;			/* product */
	f[0x06] = 3;			/* version; no serial number */
	if (cfg->uuid != NULL) {
		/* time_low, time_mid, time_hi_and_version swapped. */
		static const uint8_t from[16] = { 3, 2, 1, 0, 5, 4, 7, 6,
		    8, 9, 10, 11, 12, 13, 14, 15 };
		unsigned int i;

		for (i = 0; i < 16; i++)
			f[0x08 + i] = cfg->uuid[from[i]];
	}
	f[0x18] = 6;
	smbios_add(s, f, 1, sizeof(f), 0x0100, strs);
}

/* System Enclosure (7.4): "Other", every state safe, no lock. */
static void
smbios_chassis(struct smbios *s)
{
	const char *strs[] = { SMBIOS_VENDOR, NULL };
	uint8_t f[0x16] = { 0 };

	f[0x04] = 1;			/* manufacturer */
	f[0x05] = 1;			/* type: other */
	f[0x09] = 3;			/* boot-up state: safe */
	f[0x0a] = 3;			/* power supply: safe */
	f[0x0b] = 3;			/* thermal: safe */
	f[0x0c] = 3;			/* security: none */
	smbios_add(s, f, 3, sizeof(f), 0x0300, strs);
}

/* Processor Information (7.5): one socket of one core per vCPU. */
static void
smbios_cpu(struct smbios *s, unsigned int i)
{
	char socket[16] = "CPU ";
	const char *strs[] = { socket, SMBIOS_VENDOR, NULL };
	uint8_t f[0x30] = { 0 };
	unsigned int n = i, d = 1;

	/* "CPU i", without stdio in a table writer. */
	while (n / d >= 10)
		d *= 10;
	for (n = 4; d > 0; d /= 10)
		socket[n++] = (char)('0' + i / d % 10);
	f[0x04] = 1;			/* socket designation */
	f[0x05] = 3;			/* central processor */
	f[0x06] = 0xfe;			/* family: see family 2 */
	f[0x07] = 2;			/* manufacturer */
	f[0x11] = 0;			/* voltage: unknown */
	smbios_put(f + 0x14, 2000, 2);	/* max speed, MHz */
	smbios_put(f + 0x16, 2000, 2);	/* current speed */
	f[0x18] = 0x41;			/* populated, enabled */
	f[0x19] = 1;			/* upgrade: other */
	smbios_put(f + 0x1a, 0xffff, 2);	/* no caches described */
	smbios_put(f + 0x1c, 0xffff, 2);
	smbios_put(f + 0x1e, 0xffff, 2);
	f[0x23] = 1;			/* cores, enabled, threads */
	f[0x24] = 1;
	f[0x25] = 1;
	smbios_put(f + 0x26, 1U << 2, 2);	/* 64-bit capable */
	smbios_put(f + 0x28, 1, 2);	/* family 2: other */
	smbios_put(f + 0x2a, 1, 2);
	smbios_put(f + 0x2c, 1, 2);
	smbios_put(f + 0x2e, 1, 2);
	smbios_add(s, f, 4, sizeof(f), (uint16_t)(0x0400 + i), strs);
}

/* Physical Memory Array (7.17): system memory, no error correction. */
static void
smbios_mem_array(struct smbios *s, uint64_t ram)
{
	uint8_t f[0x17] = { 0 };
	uint64_t kib = ram >> 10;

	f[0x04] = 1;			/* location: other */
	f[0x05] = 3;			/* use: system memory */
	f[0x06] = 3;			/* error correction: none */
	if (kib < 0x80000000ULL) {
		smbios_put(f + 0x07, kib, 4);
	} else {
		smbios_put(f + 0x07, 0x80000000U, 4);
		smbios_put(f + 0x0f, ram, 8);
	}
	smbios_put(f + 0x0b, 0xfffe, 2);	/* no error information */
	smbios_put(f + 0x0d, 1, 2);	/* one device */
	smbios_add(s, f, 16, sizeof(f), 0x1000, NULL);
}

/* Memory Device (7.18): all of RAM as one RAM device of unknown kind. */
static void
smbios_mem_device(struct smbios *s, uint64_t ram)
{
	const char *strs[] = { "DIMM 0", SMBIOS_VENDOR, NULL };
	uint8_t f[0x28] = { 0 };
	uint64_t mib = ram >> 20;

	smbios_put(f + 0x04, 0x1000, 2);	/* the array */
	smbios_put(f + 0x06, 0xfffe, 2);
	smbios_put(f + 0x08, 0xffff, 2);	/* widths unknown */
	smbios_put(f + 0x0a, 0xffff, 2);
	if (mib < 0x7fff) {
		smbios_put(f + 0x0c, mib, 2);
	} else {
		smbios_put(f + 0x0c, 0x7fff, 2);
		smbios_put(f + 0x1c, mib, 4);
	}
	f[0x0e] = 9;			/* form factor: DIMM */
	f[0x10] = 1;			/* device locator */
	f[0x12] = 7;			/* type: RAM */
	smbios_put(f + 0x13, 1U << 1, 2);	/* detail: other */
	f[0x17] = 2;			/* manufacturer */
	smbios_add(s, f, 17, sizeof(f), 0x1100, strs);
}

/* Memory Array Mapped Address (7.20): [start, start + len). */
static void
smbios_mapped(struct smbios *s, unsigned int i, uint64_t start,
    uint64_t len)
{
	uint8_t f[0x1f] = { 0 };
	uint64_t end = start + len - 1;

	if (end >> 10 < 0xffffffffULL) {
		smbios_put(f + 0x04, start >> 10, 4);
		smbios_put(f + 0x08, end >> 10, 4);
	} else {
		smbios_put(f + 0x04, 0xffffffffU, 4);
		smbios_put(f + 0x08, 0xffffffffU, 4);
		smbios_put(f + 0x0f, start, 8);
		smbios_put(f + 0x17, end, 8);
	}
	smbios_put(f + 0x0c, 0x1000, 2);	/* the array */
	f[0x0e] = 1;			/* partition width */
	smbios_add(s, f, 19, sizeof(f), (uint16_t)(0x1300 + i), NULL);
}

int
boot_smbios_build(const struct boot_smbios_config *cfg, uint8_t *tables,
    size_t cap, uint8_t *anchor)
{
	struct smbios s = { tables, 0, cap, 0 };
	uint8_t f[0x0b] = { 0 }, end[4] = { 0 };
	unsigned int i;

	if (cfg->ncpus < 1 || cfg->ncpus > BOOT_MAX_CPUS || cfg->low_ram == 0)
		return -EINVAL;
	smbios_bios(&s, cfg);
	smbios_system(&s, cfg);
	smbios_chassis(&s);
	for (i = 0; i < cfg->ncpus; i++)
		smbios_cpu(&s, i);
	smbios_mem_array(&s, cfg->low_ram + cfg->high_ram);
	smbios_mem_device(&s, cfg->low_ram + cfg->high_ram);
	smbios_mapped(&s, 0, 0, cfg->low_ram);
	if (cfg->high_ram != 0)
		smbios_mapped(&s, 1, PC_HIGH_RAM_START, cfg->high_ram);
	/* System Boot Information (7.33): no errors detected. */
	smbios_add(&s, f, 32, sizeof(f), 0x2000, NULL);
	smbios_add(&s, end, 127, sizeof(end), 0x7f00, NULL);
	if (s.err != 0)
		return s.err;

	/* The 64-bit entry point (5.2.2). */
	memset(anchor, 0, BOOT_SMBIOS_ANCHOR_LEN);
	memcpy(anchor, "_SM3_", 5);
	anchor[0x06] = BOOT_SMBIOS_ANCHOR_LEN;
	anchor[0x07] = 3;		/* version 3.0 */
	anchor[0x08] = 0;
	anchor[0x09] = 0;		/* docrev */
	anchor[0x0a] = 1;		/* entry point revision */
	smbios_put(anchor + 0x0c, s.len, 4);	/* maximum size */
	anchor[0x05] = boot_checksum(anchor, BOOT_SMBIOS_ANCHOR_LEN);
	return (int)s.len;
}
