/*
 * What the guest was started with: the PVH start info and a copy of its
 * command line (the start info may live in memory a guest reuses),
 * kept by rt_start() before anything else runs, read by the runtime's
 * parts and the guests.
 */
#include "rt.h"

#define CMDLINE_MAX	2049	/* vmmd allows 2048 bytes */

static char cmdline_buf[CMDLINE_MAX] RT_NOINIT;
static const struct hvm_start_info *start_info;

void
bootinfo_keep(uint32_t pa)
{
	const struct hvm_start_info *si = phys_ptr(pa);
	const char *s;
	size_t i = 0;

	if (pa != 0 && si->magic == HVM_START_MAGIC) {
		start_info = si;
		if (si->cmdline_paddr != 0) {
			s = phys_ptr(si->cmdline_paddr);
			for (i = 0; i < CMDLINE_MAX - 1 && s[i] != '\0'; i++)
				cmdline_buf[i] = s[i];
		}
	}
	cmdline_buf[i] = '\0';
}

const struct hvm_start_info *
boot_start_info(void)
{
	return start_info;
}

const char *
cmdline(void)
{
	return cmdline_buf;
}

/*
 * Find "key=value" among the space-separated words of the command line
 * and copy the value; a bare "key" gives an empty value.
 */
bool
cmdline_get(const char *key, char *buf, size_t len)
{
	const char *p = cmdline_buf;
	size_t klen = strlen(key), n;

	while (*p != '\0') {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, klen) == 0 &&
		    (p[klen] == '=' || p[klen] == ' ' || p[klen] == '\0')) {
			p += klen;
			if (*p == '=')
				p++;
			for (n = 0; p[n] != '\0' && p[n] != ' '; n++)
				if (n + 1 < len)
					buf[n] = p[n];
			if (len > 0)
				buf[n + 1 < len ? n : len - 1] = '\0';
			return true;
		}
		while (*p != '\0' && *p != ' ')
			p++;
	}
	return false;
}

unsigned long
cmdline_get_ulong(const char *key, unsigned long dflt)
{
	char buf[24];
	unsigned long v = 0;
	const char *p;

	if (!cmdline_get(key, buf, sizeof(buf)) || buf[0] == '\0')
		return dflt;
	for (p = buf; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return *p == '\0' ? v : dflt;
}
