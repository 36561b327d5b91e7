/*
 * Unit tests for daemon/disk/disk-format.c: the header of each
 * image format vmmd refuses as a disk, as qemu-img writes it, is named;
 * raw images (zeros, random bytes, text that only begins like a magic,
 * files too short to hold a header) are not.  Images are memfds read
 * through disk_format_probe(), as vm-files.c reads a disk's descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"
#include "unit-util.h"
#include "disk-format.h"

#define IMAGE_SIZE	(1 << 20)

/* An image of IMAGE_SIZE bytes (or len, if larger) beginning with buf. */
static int
image(const void *buf, size_t len, size_t size)
{
	int fd = memfd_create("vmmd-test-disk-format", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    (len > 0 && pwrite(fd, buf, len, 0) != (ssize_t)len))
		tap_bail("memfd: %s", strerror(errno));
	return fd;
}

/* What disk_format_probe() says of an image made of buf: NULL, a name,
 * or "error". */
static const char *
probe(const void *buf, size_t len, size_t size)
{
	const char *name;
	int fd = image(buf, len, size), rc;

	rc = disk_format_probe(fd, &name);
	close(fd);
	return rc < 0 ? "error" : name;
}

static void
expect(const void *buf, size_t len, const char *want, const char *what)
{
	const char *got = probe(buf, len, IMAGE_SIZE);

	if (want == NULL)
		tap_ok(got == NULL, "%s: raw (%s)", what, got ?: "nothing");
	else
		tap_ok(got != NULL && strcmp(got, want) == 0, "%s: %s (%s)",
		    what, want, got ?: "raw");
}

/* The first bytes of each format's image, from qemu-img 7.2 create. */
static void
test_formats(void)
{
	static const uint8_t qcow2[] = "QFI\xfb\0\0\0\3\0\0\0\0\0\0\0\0";
	static const uint8_t qcow[] = "QFI\xfb\0\0\0\1\0\0\0\0\0\0\0\0";
	static const uint8_t qed[] = "QED\0\0\0\1\0\4\0\0\0\1\0\0\0";
	static const uint8_t vmdk[] = "KDMV\1\0\0\0\3\0\0\0\0\x08\0\0";
	static const uint8_t cowd[] = "COWD\1\0\0\0\3\0\0\0";
	static const char desc[] = "# Disk DescriptorFile\nversion=1\n"
	    "CID=7135cee9\nparentCID=ffffffff\n"
	    "createType=\"monolithicFlat\"\n";
	static const uint8_t vhdx[] = "vhdxfileQ\0E\0M\0U\0";
	static const uint8_t vhd[] = "conectix\0\0\0\2\0\1\0\0";
	static const uint8_t luks[] = "LUKS\xba\xbe\0\1aes\0";
	uint8_t vdi[512];

	expect(qcow2, sizeof(qcow2) - 1, "qcow2", "qcow2 (version 3)");
	expect(qcow, sizeof(qcow) - 1, "qcow", "qcow (version 1)");
	expect(qed, sizeof(qed) - 1, "QED", "QED");
	expect(vmdk, sizeof(vmdk) - 1, "VMDK", "VMDK sparse extent");
	expect(cowd, sizeof(cowd) - 1, "VMDK", "VMDK ESX sparse extent");
	expect(desc, sizeof(desc) - 1, "VMDK", "VMDK text descriptor");
	expect(vhdx, sizeof(vhdx) - 1, "VHDX", "VHDX");
	expect(vhd, sizeof(vhd) - 1, "VHD", "dynamic VHD");
	expect(luks, sizeof(luks) - 1, "LUKS", "LUKS");

	memset(vdi, 0, sizeof(vdi));
	memcpy(vdi, "<<< QEMU VM Virtual Disk Image >>>\n", 35);
	put32(vdi + 0x40, 0xbeda107f);
	put32(vdi + 0x44, 0x00010001);
	expect(vdi, sizeof(vdi), "VDI", "VDI");
	/* The banner alone is text a raw disk could begin with. */
	put32(vdi + 0x40, 0);
	expect(vdi, sizeof(vdi), NULL, "VDI's banner without its signature");
	put32(vdi + 0x40, 0xbeda107f);
	memcpy(vdi, "Oracle", 6);
	expect(vdi, sizeof(vdi), NULL, "VDI's signature without its banner");
}

static void
test_raw(void)
{
	uint8_t buf[DISK_FORMAT_PROBE_LEN * 2];
	unsigned int n, raw;
	size_t j;

	expect(NULL, 0, NULL, "zeros (a fresh sparse image)");
	memset(buf, 0xff, sizeof(buf));
	expect(buf, sizeof(buf), NULL, "all ones");
	/* An MBR and a file system's first sector: a partitioned disk. */
	memset(buf, 0, sizeof(buf));
	buf[0] = 0xeb;
	buf[1] = 0x63;
	buf[0x1fe] = 0x55;
	buf[0x1ff] = 0xaa;
	expect(buf, sizeof(buf), NULL, "a disk with an MBR");
	/* Magics cut short, or one byte off. */
	expect("QFI\xfa", 4, NULL, "QFI\\xfa");
	expect("QEDX", 4, NULL, "QEDX");
	expect("vhdxfil", 7, NULL, "vhdxfil");
	expect("LUKS\xba\xbf", 6, NULL, "LUKS\\xba\\xbf");
	expect("# Disk Descriptor", 17, NULL, "half a descriptor's first line");
	rng_state = 0x76a3d6e3c4b1f00dULL;
	for (n = 0, raw = 0; n < 200; n++) {
		for (j = 0; j < sizeof(buf); j += 8)
			put64(buf + j, rng());
		raw += probe(buf, sizeof(buf), IMAGE_SIZE) == NULL;
	}
	tap_ok(raw == n, "random bytes: raw, %u of %u", raw, n);
}

/* Images too short for a header: raw, or the format when its magic fits. */
static void
test_short(void)
{
	const char *got;

	got = probe(NULL, 0, 0);
	tap_ok(got == NULL, "an empty file: raw (%s)", got ?: "nothing");
	got = probe("QFI", 3, 3);
	tap_ok(got == NULL, "a 3-byte file \"QFI\": raw (%s)",
	    got ?: "nothing");
	got = probe("QFI\xfb", 4, 4);
	tap_ok(got != NULL && strcmp(got, "qcow2") == 0,
	    "a 4-byte file with qcow2's magic: qcow2 (%s)", got ?: "raw");
	got = probe("<<< VDI >>>\n", 12, 0x42);
	tap_ok(got == NULL, "a VDI banner in a file ending before the "
	    "signature: raw (%s)", got ?: "nothing");
}

/* The probe reads at offset 0 whatever the descriptor's offset, and
 * leaves it; a descriptor it cannot read is an error. */
static void
test_descriptor(void)
{
	const char *name;
	off_t off;
	int fd, rc;

	fd = image("QFI\xfb\0\0\0\3", 8, IMAGE_SIZE);
	lseek(fd, 4096, SEEK_SET);
	rc = disk_format_probe(fd, &name);
	off = lseek(fd, 0, SEEK_CUR);
	tap_ok(rc == 0 && name != NULL && strcmp(name, "qcow2") == 0,
	    "read at offset 0 from a descriptor at 4096 (%d)", rc);
	tap_ok(off == 4096, "the offset stays (%lld)", (long long)off);
	close(fd);

	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	rc = disk_format_probe(fd, &name);
	tap_ok(rc == -EBADF && name == NULL, "a write-only descriptor: "
	    "-EBADF (%d)", rc);
	close(fd);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = disk_format_probe(fd, &name);
	tap_ok(rc == -EISDIR, "a directory: -EISDIR (%d)", rc);
	close(fd);
}

int
main(void)
{
	test_formats();
	test_raw();
	test_short();
	test_descriptor();
	return tap_done();
}
