/*
 * PCI state for snapshots: a function's config space loads into a fresh
 * function (pci_config_load) only where its read-only bits match, the
 * machine's bus then maps its BARs where the loaded config says
 * (pcibus_sync), and the host bridge's section ("pci-host") brings
 * CONFIG_ADDRESS and the reset control register back, refusing bits a
 * bridge does not have.  And every device of the PC board saves and
 * loads itself (machine_devices_save refuses a snapshot of a machine
 * with a device present that does not).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "dev-state.h"
#include "iobus.h"
#include "pcibus.h"
#include "pci-config.h"
#include "pci-host.h"
#include "tap.h"

struct toy {
	struct pci_config pc;
	unsigned int reads;
};

static void
toy_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	((struct toy *)dev)->reads++;
	memset(data, 0x5a, size);
}

static void
toy_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
}

static struct pci_config *
toy_pci(void *dev)
{
	return &((struct toy *)dev)->pc;
}

static const struct device_ops toy_ops = {
	.name = "toy", .read = toy_read, .write = toy_write, .pci = toy_pci,
};

static const struct pci_ids ids = {
	.vendor = 0x1af4, .device = 0x1044, .class_code = 0x00ff00,
	.int_pin = 1,
};

/* A machine's PCI side: buses, bridge, a toy function in slot 3. */
struct board {
	struct iobus pio, mmio;
	struct pcibus pb;
	struct pci_host *ph;
	struct vdev hv, tv;
	struct toy toy;
};

static void
board_init(struct board *b, bool rcr)
{
	struct pci_host_ops ops;

	memset(b, 0, sizeof(*b));
	if (iobus_init(&b->pio) < 0 || iobus_init(&b->mmio) < 0)
		tap_bail("buses");
	pcibus_init(&b->pb, &b->pio, &b->mmio);
	pcibus_host_ops(&b->pb, &ops);
	b->ph = rcr ? pci_host_new_rcr(NULL, &ops) : pci_host_new(NULL, &ops);
	vdev_init(&b->hv, &pci_host_device_ops, b->ph);
	iobus_register(&b->pio, 0xcf8, 8, &b->hv, 0);
	pci_config_init(&b->toy.pc, &ids);
	pci_config_add_bar(&b->toy.pc, 0, PCI_BAR_MEM32, 0x1000);
	pci_config_add_bar(&b->toy.pc, 1, PCI_BAR_IO, 0x20);
	vdev_init(&b->tv, &toy_ops, &b->toy);
	if (pcibus_add(&b->pb, 3, 0, &b->tv) < 0)
		tap_bail("slot 3");
}

static void
conf_write(struct board *b, unsigned int reg, uint32_t v, unsigned int size)
{
	uint32_t a = 0x80000000u | 3u << 11 | (reg & ~3u);

	iobus_write(&b->pio, 0xcf8, &a, 4);
	iobus_write(&b->pio, 0xcfc + (reg & 3), &v, size);
}

int
main(void)
{
	static struct board b1, b2, b3;
	struct dev_state_buf s = { 0 };
	struct dev_state_error e = { "" };
	uint8_t saved[PCI_CONFIG_SIZE], rcr = 0x02;
	uint32_t v;
	int rc;

	board_init(&b1, true);
	board_init(&b2, true);
	board_init(&b3, false);
	conf_write(&b1, 0x10, 0xc0000000, 4);
	conf_write(&b1, 0x14, 0xc040, 4);
	conf_write(&b1, 0x3c, 11, 1);
	conf_write(&b1, 0x04, PCI_COMMAND_MEMORY | PCI_COMMAND_IO, 2);
	iobus_write(&b1.pio, 0xcf9, &rcr, 1);
	TAP_EQ(iobus_read(&b1.mmio, 0xc0000010, &v, 4), 0, "BAR0 decodes");

	memcpy(saved, b1.toy.pc.cfg, sizeof(saved));
	TAP_EQ(iobus_read(&b2.mmio, 0xc0000010, &v, 4), -ENOENT,
	    "nothing decodes on a fresh board");
	rc = pci_config_load(&b2.toy.pc, saved, &e);
	tap_ok(rc == 0 && memcmp(b2.toy.pc.cfg, saved, sizeof(saved)) == 0,
	    "config space loaded: %d %s", rc, e.msg);
	TAP_EQ(iobus_read(&b2.mmio, 0xc0000010, &v, 4), -ENOENT,
	    "not mapped before pcibus_sync");
	pcibus_sync(&b2.pb);
	tap_ok(iobus_read(&b2.mmio, 0xc0000010, &v, 4) == 0 &&
	    b2.toy.reads == 1, "after: BAR0 decodes where the config says");
	TAP_EQ(iobus_read(&b2.pio, 0xc05f, &v, 1), 0, "and the I/O BAR");
	pcibus_sync(&b2.pb);
	TAP_EQ(b2.pb.map_failures, 0, "a second sync maps nothing twice");

	saved[PCI_DEVICE_ID] ^= 1;
	rc = pci_config_load(&b3.toy.pc, saved, &e);
	tap_ok(rc == -EINVAL && strstr(e.msg, "byte 0x2") != NULL &&
	    b3.toy.pc.cfg[PCI_DEVICE_ID] == 0x44,
	    "another device ID refused, the function untouched: %s", e.msg);
	saved[PCI_DEVICE_ID] ^= 1;
	saved[PCI_STATUS] |= PCI_STATUS_INTERRUPT;
	TAP_EQ(pci_config_load(&b3.toy.pc, saved, &e), 0,
	    "the INTx status bit is the device's: taken");

	TAP_EQ(pci_host_device_ops.save(b1.ph, &s), 0, "bridge saved");
	rc = pci_host_device_ops.load(b2.ph, s.data, s.len, &e);
	TAP_EQ(rc, 0, "and loaded %s", e.msg);
	iobus_read(&b2.pio, 0xcf8, &v, 4);
	TAP_EQ(v, 0x80001800 | 0x04, "CONFIG_ADDRESS back");
	v = 0;
	iobus_read(&b2.pio, 0xcf9, &v, 1);
	TAP_EQ(v, 0x02, "the reset control register back");
	rc = pci_host_device_ops.load(b3.ph, s.data, s.len, &e);
	tap_ok(rc == -EINVAL && strstr(e.msg, "reset_control") != NULL,
	    "a reset control register for a bridge without one: %s", e.msg);
	dev_state_buf_free(&s);
	for (size_t i = 0; i < board_pc_size; i++)
		tap_ok(board_pc[i].ops->save != NULL &&
		    board_pc[i].ops->load != NULL,
		    "board device %s saves and loads itself", board_pc[i].name);
	return tap_done();
}
