/*
 * SMBIOS tables (boot-smbios.c): the 3.0 entry point's checksum and
 * maximum size, and a walk of the structures as dmidecode walks them:
 * every type's formatted length, its strings, the double NUL that ends
 * each, one processor per vCPU, the RAM described in types 16, 17 and
 * 19, the type 127 last and nothing after it.
 */
#include <stdint.h>
#include <string.h>

#include "boot-smbios.h"
#include "boot-tables.h"
#include "tap.h"
#include "unit-util.h"

static uint8_t
sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len-- > 0)
		s += *p++;
	return s;
}

/* String n (from 1) of the structure at p, or NULL. */
static const char *
smbios_str(const uint8_t *p, unsigned int n)
{
	const char *s = (const char *)p + p[1];

	if (n == 0)
		return NULL;
	while (--n > 0) {
		if (*s == '\0')
			return NULL;
		s += strlen(s) + 1;
	}
	return *s != '\0' ? s : NULL;
}

struct walk {
	unsigned int count[128];
	unsigned int bad_len, bad_end;
	int end_last;
	uint64_t mapped_kib, mem_mib, array_kib;
	const uint8_t *sys, *bios;
};

/* The formatted length each type has in SMBIOS 3.0. */
static unsigned int
want_len(uint8_t type)
{
	switch (type) {
	case 0: return 0x18;
	case 1: return 0x1b;
	case 3: return 0x16;
	case 4: return 0x30;
	case 16: return 0x17;
	case 17: return 0x28;
	case 19: return 0x1f;
	case 32: return 0x0b;
	case 127: return 4;
	}
	return 0;
}

static void
walk(const uint8_t *t, size_t len, struct walk *w)
{
	size_t off = 0, end;

	memset(w, 0, sizeof(*w));
	while (off + 4 <= len) {
		const uint8_t *p = t + off;

		if (p[1] != want_len(p[0]))
			w->bad_len++;
		w->count[p[0] & 0x7f]++;
		if (p[0] == 0)
			w->bios = p;
		if (p[0] == 1)
			w->sys = p;
		if (p[0] == 16)
			w->array_kib = get32(p + 7);
		if (p[0] == 17)
			w->mem_mib = get16(p + 0x0c);
		if (p[0] == 19)
			w->mapped_kib += get32(p + 8) - get32(p + 4) + 1;
		/* The strings end at the first double NUL. */
		for (end = off + p[1]; end + 1 < len; end++)
			if (t[end] == 0 && t[end + 1] == 0)
				break;
		if (end + 1 >= len) {
			w->bad_end++;
			return;
		}
		off = end + 2;
		if (p[0] == 127) {
			w->end_last = off == len;
			return;
		}
	}
}

static void
check(unsigned int ncpus, uint64_t low, uint64_t high)
{
	static uint8_t t[BOOT_SMBIOS_TABLES_MAX];
	/*
	 * 01020304-0506-0708-090a-0b0c0d0e0f10 in RFC 4122 order, and as
	 * SMBIOS 2.6 stores it (dmidecode prints the same text from it).
	 */
	static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
	    11, 12, 13, 14, 15, 16 };
	static const uint8_t uuid_smbios[16] = { 4, 3, 2, 1, 6, 5, 8, 7, 9,
	    10, 11, 12, 13, 14, 15, 16 };
	uint8_t a[BOOT_SMBIOS_ANCHOR_LEN];
	struct boot_smbios_config cfg = { ncpus, low, high, uuid, "9.9" };
	struct walk w;
	int len;

	memset(t, 0xee, sizeof(t));
	len = boot_smbios_build(&cfg, t, sizeof(t), a);
	tap_ok(len > 0, "%u CPUs: tables built (%d bytes)", ncpus, len);
	if (len <= 0)
		return;
	tap_ok(memcmp(a, "_SM3_", 5) == 0 && a[6] == 24 && a[7] == 3 &&
	    a[8] == 0 && a[10] == 1 && sum(a, 24) == 0,
	    "anchor: _SM3_, 24 bytes, version 3.0, checksum zero");
	tap_ok(get32(a + 12) == (uint32_t)len && get64(a + 16) == 0,
	    "anchor: maximum size %u is the tables' length, address left to "
	    "the firmware", get32(a + 12));
	walk(t, (size_t)len, &w);
	tap_ok(w.bad_len == 0 && w.bad_end == 0 && w.end_last,
	    "%u CPUs: every structure has its type's length and ends in a "
	    "double NUL; type 127 is last", ncpus);
	tap_ok(w.count[0] == 1 && w.count[1] == 1 && w.count[3] == 1 &&
	    w.count[4] == ncpus && w.count[16] == 1 && w.count[17] == 1 &&
	    w.count[19] == (high != 0 ? 2U : 1U) && w.count[32] == 1 &&
	    w.count[127] == 1,
	    "%u CPUs: types 0, 1, 3, 4 (%u), 16, 17, 19 (%u), 32, 127",
	    ncpus, w.count[4], w.count[19]);
	tap_ok(w.bios != NULL && smbios_str(w.bios, w.bios[4]) != NULL &&
	    strcmp(smbios_str(w.bios, w.bios[4]), "vmmd") == 0 &&
	    smbios_str(w.bios, w.bios[5]) != NULL &&
	    strcmp(smbios_str(w.bios, w.bios[5]), "9.9") == 0,
	    "type 0: vendor vmmd, the version");
	tap_ok(w.sys != NULL && smbios_str(w.sys, w.sys[5]) != NULL &&
	    strcmp(smbios_str(w.sys, w.sys[5]), "vmmd") == 0 &&
	    memcmp(w.sys + 8, uuid_smbios, 16) == 0,
	    "type 1: product vmmd, the UUID in SMBIOS 2.6's byte order");
	tap_ok(w.mapped_kib == (low + high) >> 10 &&
	    w.array_kib == (low + high) >> 10 &&
	    w.mem_mib == (low + high) >> 20,
	    "types 16, 17, 19: %llu KiB of RAM, mapped low and high",
	    (unsigned long long)w.mapped_kib);
}

int
main(void)
{
	uint8_t t[64], a[BOOT_SMBIOS_ANCHOR_LEN];
	struct boot_smbios_config cfg = { 1, 32 << 20, 0, NULL, "1" };

	check(1, 32 << 20, 0);
	check(4, 0xc0000000ULL, 0x40000000ULL);
	check(BOOT_MAX_CPUS, 0xc0000000ULL, 0x400000000ULL);
	TAP_EQ(boot_smbios_build(&cfg, t, sizeof(t), a), -ENOSPC,
	    "no room: -ENOSPC");
	cfg.ncpus = 0;
	TAP_EQ(boot_smbios_build(&cfg, t, sizeof(t), a), -EINVAL,
	    "no CPU: -EINVAL");
	return tap_done();
}
