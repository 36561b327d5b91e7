/*
 * Recognising the headers of image formats that are not raw (see
 * disk-format.h).  Each is the format's own magic at offset 0, as
 * qemu-img writes it and QEMU's probes look for it; VDI's is a text
 * banner a raw disk could begin with, so its binary signature is
 * checked too.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "disk-format.h"

/*
 * A format: its magic at offset 0 and, where that is text other data
 * could begin with, a binary signature further on as well.
 */
struct disk_format {
	const char *name;
	const char *magic;
	size_t len;
	size_t sig_off;
	const char *sig;
	size_t sig_len;		/* 0: no signature */
};

#define DISK_FORMAT(name, magic)	{ name, magic, sizeof(magic) - 1, \
	0, NULL, 0 }

static const struct disk_format disk_formats[] = {
	/* qcow (version 1) has the same magic: told apart below. */
	DISK_FORMAT("qcow2", "QFI\xfb"),
	DISK_FORMAT("QED", "QED\0"),
	/* A sparse or stream-optimised extent, an ESX one, a descriptor. */
	DISK_FORMAT("VMDK", "KDMV"),
	DISK_FORMAT("VMDK", "COWD"),
	DISK_FORMAT("VMDK", "# Disk DescriptorFile"),
	{ "VDI", "<<< ", 4, 0x40, "\x7f\x10\xda\xbe", 4 },
	DISK_FORMAT("VHDX", "vhdxfile"),
	/* A dynamic VHD's copy of its footer (a fixed one's is at its end,
	 * after raw data). */
	DISK_FORMAT("VHD", "conectix"),
	DISK_FORMAT("LUKS", "LUKS\xba\xbe"),
};

const char *
disk_format_of(const void *buf, size_t len)
{
	const struct disk_format *f;
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < sizeof(disk_formats) / sizeof(disk_formats[0]); i++) {
		f = &disk_formats[i];
		if (len < f->len || memcmp(p, f->magic, f->len) != 0)
			continue;
		if (f->sig_len > 0 && (len < f->sig_off + f->sig_len ||
		    memcmp(p + f->sig_off, f->sig, f->sig_len) != 0))
			continue;
		/* The version, big-endian at 4: 1 is qcow, 2 and 3 qcow2. */
		if (strcmp(f->name, "qcow2") == 0 && len >= 8 &&
		    p[4] == 0 && p[5] == 0 && p[6] == 0 && p[7] == 1)
			return "qcow";
		return f->name;
	}
	return NULL;
}

int
disk_format_probe(int fd, const char **namep)
{
	uint8_t buf[DISK_FORMAT_PROBE_LEN];
	size_t got = 0;
	ssize_t n;

	*namep = NULL;
	while (got < sizeof(buf)) {
		n = pread(fd, buf + got, sizeof(buf) - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;		/* a short image: what there is */
		got += (size_t)n;
	}
	*namep = disk_format_of(buf, got);
	return 0;
}
