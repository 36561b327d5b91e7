/*
 * The PIIX's reset ports: system control port A (devices/port92.c) and
 * the reset control register at 0xcf9 in the PCI host bridge's ports
 * (devices/pci/pci-host.c).  Each resets the machine on a rising edge of
 * its reset bit, never when firmware writes back what it read; the A20
 * and the RCR's other bits read back; a host bridge made without the
 * RCR keeps 0xcf9 as it was (ones, writes ignored); a dword at 0xcf8 is
 * still CONFIG_ADDRESS.
 */
#include <stdint.h>
#include <string.h>

#include "fake-host.h"
#include "pci-host.h"
#include "port92.h"
#include "tap.h"
#include "unit-util.h"

static uint8_t
rd8(const struct device_ops *ops, void *dev, uint64_t off)
{
	uint8_t b = 0x5a;

	ops->read(dev, off, &b, 1);
	return b;
}

static void
wr8(const struct device_ops *ops, void *dev, uint64_t off, uint8_t v)
{
	ops->write(dev, off, &v, 1);
}

static void
test_port92(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	const struct device_ops *ops = &port92_device_ops;
	struct port92 *p = port92_new(&fh.host);
	uint8_t v;
	int i;

	if (p == NULL)
		tap_bail("out of memory");
	TAP_EQ(rd8(ops, p, 0), 0, "port92: power-on 0: no reset bit to echo");
	/* What SeaBIOS does to open A20, hundreds of times a boot. */
	for (i = 0; i < 300; i++) {
		v = rd8(ops, p, 0);
		wr8(ops, p, 0, (uint8_t)((v & ~PORT92_A20) | PORT92_A20));
	}
	tap_ok(rd8(ops, p, 0) == PORT92_A20 && fh.resets == 0,
	    "port92: A20 opens and reads back, read-modify-write never "
	    "resets (%u)", fh.resets);
	wr8(ops, p, 0, 0xfc);
	TAP_EQ(rd8(ops, p, 0), 0, "port92: other bits read 0");
	wr8(ops, p, 0, PORT92_A20 | PORT92_FAST_RESET);
	TAP_EQ(fh.resets, 1, "port92: setting the fast reset bit resets");
	TAP_EQ(rd8(ops, p, 0), PORT92_A20 | PORT92_FAST_RESET,
	    "port92: and reads back until the reset");
	wr8(ops, p, 0, PORT92_A20 | PORT92_FAST_RESET);
	TAP_EQ(fh.resets, 1, "port92: writing it back set does not again");
	wr8(ops, p, 0, 0);
	wr8(ops, p, 0, PORT92_FAST_RESET);
	TAP_EQ(fh.resets, 2, "port92: cleared then set: another reset");
	port92_free(p);
}

static int
no_slot_read(void *ctx, unsigned int slot, unsigned int fn,
    unsigned int offset, void *data, unsigned int size)
{
	return -ENODEV;
}

static int
no_slot_write(void *ctx, unsigned int slot, unsigned int fn,
    unsigned int offset, const void *data, unsigned int size)
{
	return -ENODEV;
}

static void
test_rcr(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	const struct device_ops *ops = &pci_host_device_ops;
	struct pci_host_ops slots = { .read = no_slot_read,
	    .write = no_slot_write };
	struct pci_host *ph = pci_host_new_rcr(&fh.host, &slots), *plain;
	uint8_t b[4];
	uint32_t v;

	plain = pci_host_new(&fh.host, &slots);
	if (ph == NULL || plain == NULL)
		tap_bail("out of memory");
	TAP_EQ(rd8(ops, ph, 1), 0, "rcr: power-on 0");
	wr8(ops, ph, 1, 0x02);
	tap_ok(rd8(ops, ph, 1) == 0x02 && fh.resets == 0,
	    "rcr: SRST alone reads back, no reset");
	wr8(ops, ph, 1, 0x06);
	TAP_EQ(fh.resets, 1, "rcr: RCPU set resets (SeaBIOS: 0x02, 0x06)");
	wr8(ops, ph, 1, 0x06);
	TAP_EQ(fh.resets, 1, "rcr: RCPU written back set: no second reset");
	wr8(ops, ph, 1, 0xf1);
	TAP_EQ(rd8(ops, ph, 1), 0, "rcr: bits 0 and 4-7 do not exist");
	wr8(ops, ph, 1, 0x0e);
	TAP_EQ(fh.resets, 2, "rcr: a full reset (OVMF's 0x0e) too");

	/* CONFIG_ADDRESS is untouched by the RCR, and the RCR by it. */
	put32(b, 0x80001800);
	ops->write(ph, 0, b, 4);
	memset(b, 0, sizeof(b));
	ops->read(ph, 0, b, 4);
	v = get32(b);
	tap_ok(v == 0x80001800 && rd8(ops, ph, 1) == 0x0e,
	    "rcr: dword CONFIG_ADDRESS beside it (0x%x)", v);
	b[0] = b[1] = 0x06;
	ops->write(ph, 1, b, 2);
	TAP_EQ(fh.resets, 2, "rcr: only byte accesses reach it");

	/* Without it: as before, ones and ignored writes. */
	wr8(ops, plain, 1, 0x06);
	tap_ok(rd8(ops, plain, 1) == 0xff && fh.resets == 2,
	    "plain host bridge: 0xcf9 reads ones, resets nothing");
	pci_host_free(plain);
	pci_host_free(ph);
}

int
main(void)
{
	test_port92();
	test_rcr();
	return tap_done();
}
