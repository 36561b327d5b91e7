/*
 * The VM generation ID (devices/vmgenid.c): its 16 bytes written into
 * guest RAM at its address when published and on every change, nothing
 * around them touched, a change counted; its GUID text; the "vmgenid"
 * section saved, loaded into a fresh device (which does not write RAM:
 * a restore's RAM holds the ID already) and refused when damaged.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "fake-host.h"
#include "tap.h"
#include "vmgenid.h"

#define BASE	0xfe000ULL
#define ADDR	0xff000ULL
#define SIZE	0x4000

static const uint8_t id1[VMGENID_LEN] = {
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
};
static const uint8_t id2[VMGENID_LEN] = {
	0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87,
	0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f,
};

static int
untouched(const struct fake_host *fh)
{
	size_t at = ADDR - BASE;

	for (size_t i = 0; i < SIZE; i++)
		if ((i < at || i >= at + VMGENID_LEN) && fh->mem[i] != 0xa5)
			return 0;
	return 1;
}

int
main(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct dev_state_buf buf = { 0 };
	struct dev_state_error err;
	struct vmgenid *g, *g2;
	uint8_t got[VMGENID_LEN];
	char text[37];

	fh.mem = malloc(SIZE);
	fh.mem_base = BASE;
	fh.mem_size = SIZE;
	if (fh.mem == NULL)
		tap_bail("out of memory");
	memset(fh.mem, 0xa5, SIZE);
	if ((g = vmgenid_new(&fh.host, ADDR, id1)) == NULL)
		tap_bail("out of memory");
	tap_ok(memcmp(fh.mem + (ADDR - BASE), "\xa5\xa5\xa5\xa5", 4) == 0,
	    "created: guest RAM not written yet (the loader comes after)");
	TAP_EQ(vmgenid_publish(g), 0, "published");
	tap_ok(memcmp(fh.mem + (ADDR - BASE), id1, VMGENID_LEN) == 0 &&
	    untouched(&fh), "the 16 bytes at its address, nothing else");
	vmgenid_get(g, got);
	tap_ok(memcmp(got, id1, VMGENID_LEN) == 0, "get: the ID");
	vmgenid_text(id1, text);
	tap_ok(strcmp(text, "04030201-0605-0807-090a-0b0c0d0e0f10") == 0,
	    "its GUID text, the first three fields little endian (%s)",
	    text);

	TAP_EQ(vmgenid_set(g, id2), 0, "changed");
	tap_ok(memcmp(fh.mem + (ADDR - BASE), id2, VMGENID_LEN) == 0 &&
	    untouched(&fh), "the new ID in guest RAM, nothing else");

	TAP_EQ(vmgenid_device_ops.save(g, &buf), 0, "saved");
	memset(fh.mem, 0xa5, SIZE);
	g2 = vmgenid_new(&fh.host, ADDR, id1);
	if (g2 == NULL)
		tap_bail("out of memory");
	TAP_EQ(vmgenid_device_ops.load(g2, buf.data, buf.len, &err), 0,
	    "loaded into a fresh device");
	vmgenid_get(g2, got);
	tap_ok(memcmp(got, id2, VMGENID_LEN) == 0 && untouched(&fh) &&
	    fh.mem[ADDR - BASE] == 0xa5,
	    "the saved ID, guest RAM left to the restore");
	buf.data[buf.len / 2] ^= 0xff;
	tap_ok(vmgenid_device_ops.load(g2, buf.data, buf.len - 1, &err) < 0,
	    "a truncated section is refused (%s)", err.msg);
	vmgenid_get(g2, got);
	tap_ok(memcmp(got, id2, VMGENID_LEN) == 0, "and leaves the device "
	    "as it was");

	fh.mem_size = ADDR - BASE + 8;
	TAP_EQ(vmgenid_set(g, id1), -EFAULT, "an address that is not RAM: "
	    "-EFAULT");
	dev_state_buf_free(&buf);
	vmgenid_free(g2);
	vmgenid_free(g);
	vmgenid_free(NULL);
	free(fh.mem);
	return tap_done();
}
