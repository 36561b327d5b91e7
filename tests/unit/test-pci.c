/*
 * PCI: configuration mechanism #1 through the host bridge, empty slots,
 * BAR sizing (6.2.5.1), read-only registers, the capability list, and
 * BARs that the guest places, enables, moves and disables while the
 * machine's buses follow; multi-function slots; the 440FX's PAM and
 * SMRAM registers on a firmware VM's host bridge.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "iobus.h"
#include "pcibus.h"
#include "pci-config.h"
#include "pci-host.h"
#include "tap.h"

/* A PCI function with three BARs that records its last access. */
struct toy {
	struct pci_config pc;
	uint64_t last_offset;
	unsigned int accesses;
};

static void
toy_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct toy *t = dev;

	t->last_offset = offset;
	t->accesses++;
	memset(data, 0x5a, size);
}

static void
toy_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	toy_read(dev, offset, (void *)(uintptr_t)data, 0);
}

static struct pci_config *
toy_pci(void *dev)
{
	return &((struct toy *)dev)->pc;
}

static const struct device_ops toy_ops = {
	.name = "toy",
	.read = toy_read,
	.write = toy_write,
	.pci = toy_pci,
};

static struct iobus pio, mmio;

static void
conf_addr(unsigned int slot, unsigned int fn, unsigned int reg)
{
	uint32_t a = 0x80000000u | slot << 11 | fn << 8 | reg;

	iobus_write(&pio, 0xcf8, &a, 4);
}

static uint32_t
conf_read_fn(unsigned int slot, unsigned int fn, unsigned int reg,
    unsigned int size)
{
	uint32_t v = 0;

	conf_addr(slot, fn, reg & ~3u);
	iobus_read(&pio, 0xcfc + (reg & 3), &v, size);
	return v;
}

static uint32_t
conf_read(unsigned int slot, unsigned int reg, unsigned int size)
{
	return conf_read_fn(slot, 0, reg, size);
}

static void
conf_write_fn(unsigned int slot, unsigned int fn, unsigned int reg,
    uint32_t v, unsigned int size)
{
	conf_addr(slot, fn, reg & ~3u);
	iobus_write(&pio, 0xcfc + (reg & 3), &v, size);
}

static void
conf_write(unsigned int slot, unsigned int reg, uint32_t v, unsigned int size)
{
	conf_write_fn(slot, 0, reg, v, size);
}

/*
 * Whether the guest reads slot's function fn exactly as pc holds it,
 * all 256 bytes.
 */
static bool
conf_same(unsigned int slot, unsigned int fn, const struct pci_config *pc)
{
	uint32_t v;

	for (unsigned int r = 0; r < PCI_CONFIG_SIZE; r += 4) {
		v = conf_read_fn(slot, fn, r, 4);
		if (memcmp(&v, &pc->cfg[r], 4) != 0)
			return false;
	}
	return true;
}

/*
 * Functions 1-7: decoded, each its own config space; function 0 of a
 * slot with more than one is marked multi-function, whichever came
 * first, and a slot with function 0 alone is not.
 */
static void
test_multi_function(struct pcibus *pb, struct toy *single)
{
	static const struct pci_ids ids0 = {
		.vendor = 0x8086, .device = 0x7000, .class_code = 0x060100,
	}, ids3 = {
		.vendor = 0x8086, .device = 0x7113, .class_code = 0x068000,
		.int_pin = 1,
	};
	struct toy f0 = { 0 }, f3 = { 0 };
	struct pci_config before;
	struct vdev v0, v3;

	pci_config_init(&f0.pc, &ids0);
	pci_config_init(&f3.pc, &ids3);
	TAP_EQ(pci_config_add_bar(&f3.pc, 4, PCI_BAR_IO, 0x10), 0,
	    "function 3's I/O BAR");
	vdev_init(&v0, &toy_ops, &f0);
	vdev_init(&v3, &toy_ops, &f3);
	TAP_EQ(pcibus_add(pb, 9, 8, &v3), -EINVAL, "function 8 refused");
	TAP_EQ(pcibus_add(pb, 9, 3, &v3), 0, "function 3 of slot 9");
	TAP_EQ(pcibus_add(pb, 9, 3, &v3), -EBUSY, "function taken");
	TAP_EQ(conf_read_fn(9, 3, 0, 4), 0x71138086, "function 3 decodes");
	TAP_EQ(conf_read_fn(9, 0, 0, 4), 0xffffffff, "function 0 still absent");
	before = f0.pc;
	TAP_EQ(pcibus_add(pb, 9, 0, &v0), 0, "then function 0");
	TAP_EQ(conf_read_fn(9, 0, 0, 4), 0x70008086, "function 0 decodes");
	TAP_EQ(conf_read_fn(9, 0, PCI_HEADER_TYPE, 1), 0x80,
	    "function 0 says multi-function");
	TAP_EQ(conf_read_fn(9, 3, PCI_HEADER_TYPE, 1), 0,
	    "function 3 does not");
	before.cfg[PCI_HEADER_TYPE] = 0x80;
	tap_ok(conf_same(9, 0, &before), "nothing else changed in function 0");
	conf_write_fn(9, 0, PCI_HEADER_TYPE, 0, 1);
	TAP_EQ(conf_read_fn(9, 0, PCI_HEADER_TYPE, 1), 0x80,
	    "the header type is read-only");
	TAP_EQ(conf_read_fn(9, 3, 0x3c, 1), PC_PCI_INTX_GSI(9, 0),
	    "function 3's interrupt line is its slot's INTA# GSI");
	TAP_EQ(conf_read_fn(9, 1, 0, 4), 0xffffffff, "function 1 absent");
	TAP_EQ(conf_read_fn(9, 7, 0, 4), 0xffffffff, "function 7 absent");
	TAP_EQ(conf_read_fn(0, 1, 0, 4), 0xffffffff,
	    "the host bridge's slot has no function 1");
	conf_write_fn(9, 3, 0x20, 0xd000, 4);
	conf_write_fn(9, 3, 0x04, PCI_COMMAND_IO, 2);
	TAP_EQ(iobus_read(&pio, 0xd004, &(uint32_t){ 0 }, 4), 0,
	    "function 3's BAR decodes");
	TAP_EQ(f3.last_offset, PCI_BAR_OFFSET(4) + 4, "at its offset");
	TAP_EQ(conf_read_fn(9, 0, 0x04, 2), 0, "function 0 untouched");
	conf_write_fn(9, 3, 0x04, 0, 2);
	TAP_EQ(iobus_read(&pio, 0xd004, &(uint32_t){ 0 }, 4), -ENOENT,
	    "and stops");

	TAP_EQ(conf_read(3, PCI_HEADER_TYPE, 1), 0,
	    "a slot with function 0 alone is single-function");
	tap_ok(conf_same(3, 0, &single->pc),
	    "and reads exactly its config space");
	vdev_destroy(&v0);
	vdev_destroy(&v3);
}

/* Config register reg of the host bridge ph, through its own ops. */
static uint32_t
bridge_read(struct pci_host *ph, unsigned int reg, unsigned int size)
{
	uint32_t a = 0x80000000u | (reg & ~3u), v = 0;

	pci_host_device_ops.write(ph, 0, &a, 4);
	pci_host_device_ops.read(ph, 4 + (reg & 3), &v, size);
	return v;
}

static void
bridge_write(struct pci_host *ph, unsigned int reg, uint32_t v,
    unsigned int size)
{
	uint32_t a = 0x80000000u | (reg & ~3u);

	pci_host_device_ops.write(ph, 0, &a, 4);
	pci_host_device_ops.write(ph, 4 + (reg & 3), &v, size);
}

/*
 * PAM0-6 and SMRAM keep their defined bits on the bridge firmware VMs
 * get; the plain bridge keeps nothing there, as before.
 */
static void
test_pam(const struct pci_host_ops *ops)
{
	struct pci_host *fw = pci_host_new_rcr(NULL, ops);
	struct pci_host *plain = pci_host_new(NULL, ops);
	unsigned int r;
	bool all = true;

	if (fw == NULL || plain == NULL)
		tap_bail("out of memory");
	TAP_EQ(bridge_read(fw, 0x59, 1), 0, "PAM0 at power-on");
	bridge_write(fw, 0x59, 0x30, 1);
	TAP_EQ(bridge_read(fw, 0x59, 1), 0x30, "PAM0 reads back");
	bridge_write(fw, 0x59, 0xff, 1);
	TAP_EQ(bridge_read(fw, 0x59, 1), 0x30,
	    "PAM0 keeps only its upper nibble's enables");
	for (r = 0x5a; r <= 0x5f; r++) {
		bridge_write(fw, r, 0x33, 1);
		all = all && bridge_read(fw, r, 1) == 0x33;
	}
	tap_ok(all, "PAM1-6 read back 0x33");
	bridge_write(fw, 0x5c, 0x11111111, 4);
	TAP_EQ(bridge_read(fw, 0x5c, 4), 0x11111111,
	    "PAM3-6 as a dword (0x11: DRAM, read-only)");
	TAP_EQ(bridge_read(fw, 0x58, 4), 0x33333000,
	    "PAM0-2 beside, 0x58 still 0");
	TAP_EQ(bridge_read(fw, 0x72, 1), 0x02, "SMRAM at power-on: 0xa0000");
	bridge_write(fw, 0x72, 0x4a, 1);
	TAP_EQ(bridge_read(fw, 0x72, 1), 0x4a,
	    "SMRAM D_OPEN|G_SMRAME reads back");
	bridge_write(fw, 0x72, 0x07, 1);
	TAP_EQ(bridge_read(fw, 0x72, 1), 0x02, "C_BASE_SEG is fixed");
	TAP_EQ(bridge_read(fw, 0, 4), 0x12378086, "still the 440FX");

	bridge_write(plain, 0x59, 0x30, 1);
	bridge_write(plain, 0x72, 0x4a, 1);
	tap_ok(bridge_read(plain, 0x59, 1) == 0 &&
	    bridge_read(plain, 0x72, 1) == 0,
	    "without firmware: PAM and SMRAM read 0, as ever");
	pci_host_free(fw);
	pci_host_free(plain);
}

/*
 * Where the memory BARs are placed, for the firmware's ACPI windows:
 * decoding off or on (firmware may place a BAR it never enables), I/O
 * BARs not counted, a MEM64 above 4 GiB apart from those below.  The
 * toy in slot 3: BAR0 4 KiB at 0xc0001000, BAR2 16 KiB at 0xc0008000.
 */
static void
test_spans(struct pcibus *pb)
{
	struct pcibus_span lo, hi;

	pcibus_mem_spans(pb, &lo, &hi);
	tap_ok(lo.any && lo.lo == 0xc0001000 && lo.hi == 0xc000bfff &&
	    !hi.any, "spans: 0x%llx-0x%llx below 4 GiB, decoding off",
	    (unsigned long long)lo.lo, (unsigned long long)lo.hi);
	conf_write(3, 0x18, 0, 4);
	conf_write(3, 0x1c, 0x80, 4);
	pcibus_mem_spans(pb, &lo, &hi);
	tap_ok(lo.any && lo.lo == 0xc0001000 && lo.hi == 0xc0001fff &&
	    hi.any && hi.lo == 0x8000000000ULL && hi.hi == 0x8000003fffULL,
	    "spans: the MEM64 BAR moved to 512 GiB counts above 4 GiB");
	conf_write(3, 0x10, 0, 4);
	conf_write(3, 0x18, 0, 4);
	conf_write(3, 0x1c, 0, 4);
	pcibus_mem_spans(pb, &lo, &hi);
	tap_ok(!lo.any && !hi.any, "spans: BARs at 0 are not placed");
}

int
main(void)
{
	static const struct pci_ids ids = {
		.vendor = 0x1af4, .device = 0x1044, .class_code = 0x00ff00,
		.revision = 1, .subsys_vendor = 0x1af4, .subsys = 0x44,
		.int_pin = 1,
	};
	struct pci_host_ops ops;
	struct pci_host *ph;
	struct pcibus pb;
	struct vdev hv, tv;
	struct toy toy = { 0 };
	uint8_t buf[4];
	uint32_t v;
	int cap;

	TAP_EQ(iobus_init(&pio), 0, "port bus");
	TAP_EQ(iobus_init(&mmio), 0, "MMIO bus");
	pcibus_init(&pb, &pio, &mmio);
	pcibus_host_ops(&pb, &ops);
	ph = pci_host_new(NULL, &ops);
	vdev_init(&hv, &pci_host_device_ops, ph);
	TAP_EQ(iobus_register(&pio, 0xcf8, 8, &hv, 0), 0, "conf1 ports");

	pci_config_init(&toy.pc, &ids);
	TAP_EQ(pci_config_add_bar(&toy.pc, 0, PCI_BAR_MEM32, 0x1000), 0,
	    "MEM32 BAR");
	TAP_EQ(pci_config_add_bar(&toy.pc, 1, PCI_BAR_IO, 0x20), 0, "I/O BAR");
	TAP_EQ(pci_config_add_bar(&toy.pc, 2, PCI_BAR_MEM64, 0x4000), 0,
	    "MEM64 BAR");
	TAP_EQ(pci_config_add_bar(&toy.pc, 3, PCI_BAR_MEM32, 0x1000), -EINVAL,
	    "the upper half of a MEM64 BAR is taken");
	TAP_EQ(pci_config_add_bar(&toy.pc, 4, PCI_BAR_MEM32, 0x1800), -EINVAL,
	    "BAR sizes are powers of two");
	TAP_EQ(pci_config_add_bar(&toy.pc, 5, PCI_BAR_MEM64, 0x1000), -EINVAL,
	    "MEM64 needs a BAR after it");
	cap = pci_config_add_cap(&toy.pc, PCI_CAP_ID_VNDR, 6);
	TAP_EQ(cap, 0x40, "first capability at 0x40");
	TAP_EQ(pci_config_add_cap(&toy.pc, PCI_CAP_ID_MSIX, 12), 0x48,
	    "second one dword aligned");
	vdev_init(&tv, &toy_ops, &toy);
	TAP_EQ(pcibus_add(&pb, 3, 0, &tv), 0, "function in slot 3");
	TAP_EQ(pcibus_add(&pb, 3, 0, &tv), -EBUSY, "slot taken");
	TAP_EQ(pcibus_add(&pb, 0, 0, &tv), -EINVAL, "slot 0 is the bridge's");
	TAP_EQ(pcibus_add(&pb, 0, 1, &tv), -EINVAL,
	    "slot 0 has no other functions");

	/* Mechanism #1. */
	TAP_EQ(conf_read(0, 0, 4), 0x12378086, "host bridge IDs");
	TAP_EQ(conf_read(0, 0x08, 4) >> 8, 0x060000, "host bridge class");
	TAP_EQ(conf_read(5, 0, 4), 0xffffffff, "empty slot reads all ones");
	conf_addr(3, 1, 0);
	iobus_read(&pio, 0xcfc, &v, 4);
	TAP_EQ(v, 0xffffffff, "function 1 absent");
	v = 3 << 11;
	iobus_write(&pio, 0xcf8, &v, 4);
	iobus_read(&pio, 0xcfc, &v, 4);
	TAP_EQ(v, 0xffffffff, "enable bit clear: no cycle");
	v = 0x80000000u | 1 << 16 | 3 << 11;
	iobus_write(&pio, 0xcf8, &v, 4);
	iobus_read(&pio, 0xcfc, &v, 4);
	TAP_EQ(v, 0xffffffff, "bus 1 absent");
	iobus_read(&pio, 0xcf8, &v, 4);
	TAP_EQ(v, 0x80011800, "address register reads back");
	TAP_EQ(conf_read(3, 0, 4), 0x10441af4, "function IDs");
	TAP_EQ(conf_read(3, 2, 2), 0x1044, "word access at offset 2");
	TAP_EQ(conf_read(3, 0x3d, 1), 1, "INTA#");
	TAP_EQ(conf_read(3, 0x3c, 1), PC_PCI_INTX_GSI(3, 0),
	    "interrupt line preset to the swizzled GSI");
	TAP_EQ(conf_read(3, 0x06, 2) & PCI_STATUS_CAP_LIST, PCI_STATUS_CAP_LIST,
	    "capability list flagged");
	TAP_EQ(conf_read(3, 0x34, 1), 0x40, "capability pointer");
	TAP_EQ(conf_read(3, 0x41, 1), 0x48, "chained");
	TAP_EQ(conf_read(3, 0x49, 1), 0, "list ends");
	conf_write(3, 0, 0xdeadbeef, 4);
	TAP_EQ(conf_read(3, 0, 4), 0x10441af4, "IDs read-only");
	conf_write(3, 0x04, 0xffff, 2);
	TAP_EQ(conf_read(3, 0x04, 2), 0x0407,
	    "only the enables and INTx disable stick");
	conf_write(3, 0x04, 0, 2);
	memset(buf, 0, sizeof(buf));
	tap_ok(pci_config_write(&toy.pc, 1, buf, 2) == false &&
	    conf_read(3, 0, 4) == 0x10441af4, "unaligned access ignored");

	/* Sizing. */
	conf_write(3, 0x10, 0xffffffff, 4);
	TAP_EQ(conf_read(3, 0x10, 4), 0xfffff000, "MEM32 BAR size 4 KiB");
	conf_write(3, 0x14, 0xffffffff, 4);
	TAP_EQ(conf_read(3, 0x14, 4), 0x0000ffe1, "I/O BAR size 32");
	conf_write(3, 0x18, 0xffffffff, 4);
	conf_write(3, 0x1c, 0xffffffff, 4);
	TAP_EQ(conf_read(3, 0x18, 4), 0xffffc004, "MEM64 low: 16 KiB, 64-bit");
	TAP_EQ(conf_read(3, 0x1c, 4), 0xffffffff, "MEM64 high");
	TAP_EQ(conf_read(3, 0x20, 4), 0, "unused BAR reads 0");
	TAP_EQ(iobus_table(&mmio)->nranges, 0, "sizing maps nothing");

	/* Placing, enabling, moving, disabling. */
	conf_write(3, 0x10, 0xc0000000, 4);
	conf_write(3, 0x14, 0xc040, 4);
	conf_write(3, 0x18, 0x00000000, 4);
	conf_write(3, 0x1c, 0x1, 4);
	TAP_EQ(iobus_read(&mmio, 0xc0000010, &v, 4), -ENOENT,
	    "no decode before COMMAND.MEM");
	conf_write(3, 0x04, PCI_COMMAND_MEMORY | PCI_COMMAND_IO, 2);
	TAP_EQ(iobus_read(&mmio, 0xc0000010, &v, 4), 0, "BAR0 decodes");
	TAP_EQ(toy.last_offset, PCI_BAR_OFFSET(0) + 0x10, "BAR0 offset");
	TAP_EQ(iobus_read(&pio, 0xc05f, buf, 1), 0, "I/O BAR decodes");
	TAP_EQ(toy.last_offset, PCI_BAR_OFFSET(1) + 0x1f, "BAR1 offset");
	TAP_EQ(iobus_read(&mmio, 0x100003ff8ULL, &v, 4), 0,
	    "MEM64 BAR above 4 GiB decodes");
	TAP_EQ(toy.last_offset, PCI_BAR_OFFSET(2) + 0x3ff8, "BAR2 offset");
	conf_write(3, 0x10, 0xc0001000, 4);
	TAP_EQ(iobus_read(&mmio, 0xc0000010, &v, 4), -ENOENT, "old place gone");
	TAP_EQ(iobus_read(&mmio, 0xc0001010, &v, 4), 0, "moved while enabled");
	conf_write(3, 0x10, 0xc0001234, 4);
	TAP_EQ(conf_read(3, 0x10, 4), 0xc0001000, "low bits stay size-aligned");
	conf_write(3, 0x18, 0xc0001000, 4);
	conf_write(3, 0x1c, 0, 4);
	TAP_EQ(pb.map_failures, 1, "a BAR over another is refused, counted");
	TAP_EQ(iobus_read(&mmio, 0x100003ff8ULL, &v, 4), -ENOENT,
	    "and not left at its old place");
	conf_write(3, 0x18, 0xc0008000, 4);
	TAP_EQ(iobus_read(&mmio, 0xc0008000, &v, 4), 0, "placed again");
	conf_write(3, 0x04, 0, 2);
	TAP_EQ(iobus_table(&mmio)->nranges + iobus_table(&pio)->nranges, 1,
	    "decode off: only the conf1 ports remain");
	test_spans(&pb);
	test_multi_function(&pb, &toy);
	test_pam(&ops);

	vdev_destroy(&hv);
	iobus_destroy(&pio);
	iobus_destroy(&mmio);
	return tap_done();
}
