/*
 * The PIIX functions of a firmware VM's slot 1: the PIIX3 ISA bridge
 * (00:01.0) and the PIIX4 power-management function (00:01.3), reached
 * through the host bridge as firmware reaches them; and the ACPI PM
 * block that follows the PIIX4's PMBA on the port bus (pmio.h): moved,
 * disabled, refused over other ports, and powering off through its
 * moved control block; and where the board puts them.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "acpi-pm.h"
#include "board.h"
#include "dev-state.h"
#include "fake-host.h"
#include "iobus.h"
#include "pc-layout.h"
#include "pci-host.h"
#include "pcibus.h"
#include "piix3-isa.h"
#include "piix4-pm.h"
#include "pmio.h"
#include "tap.h"

static struct iobus pio, mmio;

static uint32_t
cfg_read(unsigned int fn, unsigned int reg, unsigned int size)
{
	uint32_t a = 0x80000000u | 1u << 11 | fn << 8 | (reg & ~3u), v = 0;

	iobus_write(&pio, PC_PCI_CONFIG_ADDR_PORT, &a, 4);
	iobus_read(&pio, PC_PCI_CONFIG_DATA_PORT + (reg & 3), &v, size);
	return v;
}

static void
cfg_write(unsigned int fn, unsigned int reg, uint32_t v, unsigned int size)
{
	uint32_t a = 0x80000000u | 1u << 11 | fn << 8 | (reg & ~3u);

	iobus_write(&pio, PC_PCI_CONFIG_ADDR_PORT, &a, 4);
	iobus_write(&pio, PC_PCI_CONFIG_DATA_PORT + (reg & 3), &v, size);
}

/* A port read: the value, or ~0 when nothing decodes there. */
static uint32_t
port_read(uint16_t port, unsigned int size)
{
	uint32_t v = 0;

	if (iobus_read(&pio, port, &v, size) < 0)
		return ~0u;
	return v;
}

static bool
decodes(uint16_t port)
{
	uint8_t b;

	return iobus_read(&pio, port, &b, 1) == 0;
}

/* Something else on the port bus, for the PM block to run into. */
static void
other_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	memset(data, 0x5a, size);
}

static void
other_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
}

static const struct device_ops other_ops = {
	.name = "other", .read = other_read, .write = other_write,
};

/* The PIIX4 function's diagnostics, by key. */
struct diag_keys {
	struct device_diag d;
	uint64_t pm_io, pm_io_base, pm_io_failures;
};

static void
diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_keys *k = (struct diag_keys *)d;

	if (strcmp(key, "pm_io") == 0)
		k->pm_io = value;
	else if (strcmp(key, "pm_io_base") == 0)
		k->pm_io_base = value;
	else if (strcmp(key, "pm_io_failures") == 0)
		k->pm_io_failures = value;
}

static struct diag_keys
pm_diag(struct vdev *func)
{
	struct diag_keys k = { .d = { .put = diag_put } };

	func->ops->diag(func->state, &k.d);
	return k;
}

static struct pmio pmio;

/* What the machine does after each config write (machine.c). */
static void
config_written(void *ctx, struct vdev *vdev)
{
	if (vdev == pmio.func)
		pmio_update(&pmio);
}

static const struct board_device *
board_entry(const char *name)
{
	for (size_t i = 0; i < board_pc_size; i++)
		if (strcmp(board_pc[i].name, name) == 0)
			return &board_pc[i];
	tap_bail("no %s on the board", name);
	return NULL;
}

/*
 * What the machine is told of the route registers: each write that
 * touches one passes its link's value on, and a loaded state passes
 * all four, so the routing follows the registers after a restore.
 */
static void
test_isa_routes(struct fake_host *fh, struct vdev *isa)
{
	struct dev_state_buf buf = { 0 };
	struct fake_host fh2 = FAKE_HOST_INITIALIZER(fh2);
	struct dev_state_error err = { { 0 } };
	unsigned int calls;
	void *copy;

	cfg_write(0, PIIX3_ISA_PIRQRC, 0x80808080, 4);
	calls = fh->pirq_calls;
	cfg_write(0, PIIX3_ISA_PIRQRC, 0x0b0b0a0a, 4);
	TAP_EQ(fh->pirq_calls - calls, 4, "a dword write: four links told");
	tap_ok(fh->pirq[0] == 0x0a && fh->pirq[1] == 0x0a &&
	    fh->pirq[2] == 0x0b && fh->pirq[3] == 0x0b,
	    "the host gets SeaBIOS's routes: 10, 10, 11, 11");
	calls = fh->pirq_calls;
	cfg_write(0, PIIX3_ISA_PIRQRC + 2, 0x05, 1);
	TAP_EQ(fh->pirq_calls - calls, 1, "a byte write: one link told");
	TAP_EQ(fh->pirq[2], 0x05, "PIRQC re-routed at run time to IRQ 5");
	cfg_write(0, PIIX3_ISA_PIRQRC + 3, 0xf9, 1);
	TAP_EQ(fh->pirq[3], 0x89, "bits 6:4 never reach the host");
	calls = fh->pirq_calls;
	cfg_write(0, 0x5c, 0xffffffff, 4);
	cfg_write(0, 0x64, 0xffffffff, 4);
	TAP_EQ(fh->pirq_calls, calls, "writes beside the routes tell nothing");
	cfg_write(0, 0x62, 0x0a0b, 2);
	tap_ok(fh->pirq[2] == 0x0b && fh->pirq[3] == 0x0a,
	    "a word write at 0x62: PIRQC and PIRQD");

	TAP_EQ(isa->ops->save(isa->state, &buf), 0, "PIIX3 state saved");
	copy = piix3_isa_new(&fh2.host);
	if (copy == NULL)
		tap_bail("out of memory");
	/* As the bus made it: function 0 of a multi-function slot. */
	piix3_isa_device_ops.pci(copy)->cfg[PCI_HEADER_TYPE] |=
	    PCI_HEADER_TYPE_MULTI;
	TAP_EQ(isa->ops->load(copy, buf.data, buf.len, &err), 0,
	    "and loaded into a fresh PIIX3");
	if (err.msg[0] != '\0')
		tap_diag("%s", err.msg);
	tap_ok(fh2.pirq_calls == 4 && fh2.pirq[0] == 0x0a &&
	    fh2.pirq[1] == 0x0a && fh2.pirq[2] == 0x0b && fh2.pirq[3] == 0x0a,
	    "the load tells the machine all four routes");
	piix3_isa_free(copy);
	dev_state_buf_free(&buf);
	cfg_write(0, PIIX3_ISA_PIRQRC, 0x80808080, 4);
}

static void
test_isa(void)
{
	bool all = true;

	TAP_EQ(cfg_read(0, 0, 4), 0x70008086,
	    "00:01.0 is the PIIX3 ISA bridge");
	TAP_EQ(cfg_read(0, 0x08, 4) >> 8, 0x060100, "class: ISA bridge");
	TAP_EQ(cfg_read(0, PCI_HEADER_TYPE, 1), 0x80,
	    "function 0 of a multi-function slot");
	TAP_EQ(cfg_read(0, 0x2c, 4), 0x11001af4, "subsystem 1af4:1100");
	TAP_EQ(cfg_read(0, PIIX3_ISA_PIRQRC, 4), 0x80808080,
	    "PIRQA-D routes disabled at power-on");
	cfg_write(0, PIIX3_ISA_PIRQRC, 0x0b0b0a0a, 4);
	TAP_EQ(cfg_read(0, PIIX3_ISA_PIRQRC, 4), 0x0b0b0a0a,
	    "routes read back as SeaBIOS writes them (10, 10, 11, 11)");
	cfg_write(0, PIIX3_ISA_PIRQRC + 1, PIIX3_ISA_PIRQ_OFF, 1);
	TAP_EQ(cfg_read(0, PIIX3_ISA_PIRQRC + 1, 1), 0x80,
	    "PIRQB disabled again");
	cfg_write(0, PIIX3_ISA_PIRQRC + 3, 0xff, 1);
	TAP_EQ(cfg_read(0, PIIX3_ISA_PIRQRC + 3, 1), 0x8f,
	    "reserved bits 6:4 read 0");
	TAP_EQ(cfg_read(0, 0x4c, 1), 0x4d, "IORT's reset value");
	cfg_write(0, 0x4c, 0x20, 1);
	cfg_write(0, 0x69, 0x10, 1);
	cfg_write(0, 0xa2, 0x5a5a, 2);
	all = cfg_read(0, 0x4c, 1) == 0x20 && cfg_read(0, 0x69, 1) == 0x10 &&
	    cfg_read(0, 0xa2, 2) == 0x5a5a;
	tap_ok(all, "IORT, TOM, SMIEN read back");
	cfg_write(0, 0x90, 0xffffffff, 4);
	TAP_EQ(cfg_read(0, 0x90, 4), 0, "registers outside the file keep 0");
	cfg_write(0, 0x00, 0, 4);
	TAP_EQ(cfg_read(0, 0, 4), 0x70008086, "IDs read-only");
	TAP_EQ(cfg_read(1, 0, 4), 0xffffffff, "no IDE function (00:01.1)");
}

static void
test_pm_config(void)
{
	TAP_EQ(cfg_read(3, 0, 4), 0x71138086,
	    "00:01.3 is the PIIX4 PM function");
	TAP_EQ(cfg_read(3, 0x08, 4), 0x06800003, "class 0680, revision 3");
	TAP_EQ(cfg_read(3, PCI_HEADER_TYPE, 1), 0, "no multi-function bit");
	TAP_EQ(cfg_read(3, PIIX4_PM_PMBA, 4), 1, "PMBA: 0, I/O indicator 1");
	cfg_write(3, PIIX4_PM_PMBA, 0xffffffff, 4);
	TAP_EQ(cfg_read(3, PIIX4_PM_PMBA, 4), 0xffc1, "PMBA: bits 15:6 only");
	TAP_EQ(cfg_read(3, PIIX4_PM_PMREGMISC, 1), 0, "PM I/O disabled");
	cfg_write(3, PIIX4_PM_PMREGMISC, 0xfe, 1);
	TAP_EQ(cfg_read(3, PIIX4_PM_PMREGMISC, 1), 0, "only bit 0 sticks");
	cfg_write(3, PIIX4_PM_SMBBA, 0xb101, 4);
	TAP_EQ(cfg_read(3, PIIX4_PM_SMBBA, 4), 0, "no SMBus: its base reads 0");
	TAP_EQ(cfg_read(3, PIIX4_PM_DEVACTB, 4), 0x02000000,
	    "DEVACTB: APMC_EN, SMM needs no setting up");
	cfg_write(3, PIIX4_PM_DEVACTB, 0, 4);
	TAP_EQ(cfg_read(3, PIIX4_PM_DEVACTB, 4), 0x02000000, "and stays");
	cfg_write(3, PCI_INTERRUPT_LINE, 9, 1);
	TAP_EQ(cfg_read(3, PCI_INTERRUPT_LINE, 1), 9,
	    "interrupt line keeps SeaBIOS's 9");
	TAP_EQ(cfg_read(3, PCI_INTERRUPT_PIN, 1), 0, "no interrupt pin");
}

static void
test_pm_block(struct fake_host *fh, struct vdev *func)
{
	uint16_t base = 0;
	bool on;

	cfg_write(3, PIIX4_PM_PMBA, 0, 4);
	tap_ok(!decodes(PC_ACPI_PM1A_EVT_PORT) &&
	    !decodes(PC_ACPI_PM1A_CNT_PORT) && !decodes(PC_ACPI_PM_TMR_PORT),
	    "firmware VM: no PM block at 0x600 before firmware enables it");
	on = pmio_base(&pmio, &base);
	tap_ok(!on, "the getter says: nowhere");

	/* SeaBIOS: PMBA = 0xb000 | 1, then PMREGMISC = 1. */
	cfg_write(3, PIIX4_PM_PMBA, 0xb001, 4);
	tap_ok(!decodes(0xb000), "PMBA alone enables nothing");
	cfg_write(3, PIIX4_PM_PMREGMISC, PIIX4_PM_PMIOSE, 1);
	TAP_EQ(port_read(0xb004, 2), 1, "PM1_CNT at PMBA + 4 (SCI_EN)");
	fh->vm_now = 1000000000;
	TAP_EQ(port_read(0xb008, 4), ACPI_PM_TMR_HZ,
	    "PM timer at PMBA + 8: 1 s of ticks");
	TAP_EQ(port_read(0xb000, 4), 0, "PM1 status and enable at PMBA");
	TAP_EQ(port_read(0xb00c, 4), 0, "GPE0 status and enable at PMBA + 0xc");
	tap_ok(!decodes(0xb006) && !decodes(0xb010) && !decodes(0x600) &&
	    !decodes(0x608) && !decodes(0x60c), "only the block's own ports");
	on = pmio_base(&pmio, &base);
	tap_ok(on && base == 0xb000, "the getter says 0xb000");
	TAP_EQ(pm_diag(func).pm_io_base, 0xb000, "diagnostics: pm_io_base");
	TAP_EQ(pm_diag(func).pm_io, 1, "diagnostics: pm_io");

	/* OVMF's S5: SLP_TYP 5 | SLP_EN at PMBA + 4. */
	iobus_write(&pio, 0xb004, &(uint16_t){ 5 << 10 | 1 << 13 }, 2);
	TAP_EQ(fh->poweroffs, 1, "S5 through the moved control block");

	cfg_write(3, PIIX4_PM_PMBA, 0xb041, 4);
	tap_ok(!decodes(0xb000) && !decodes(0xb008) &&
	    port_read(0xb044, 2) == (1 | 5 << 10) && decodes(0xb048),
	    "moved while enabled: old ports gone, the state came along");
	cfg_write(3, PIIX4_PM_PMBA, 0xc001, 4);
	tap_ok(!decodes(0xb044) && port_read(0xc004, 2) == 0x5a5a,
	    "a PMBA over another device's ports is not mapped");
	TAP_EQ(pm_diag(func).pm_io_failures, 1, "and counted");
	TAP_EQ(pm_diag(func).pm_io, 0, "diagnostics: pm_io off");
	on = pmio_base(&pmio, &base);
	tap_ok(!on, "the getter says: nowhere");
	cfg_write(3, PCI_INTERRUPT_LINE, 9, 1);
	TAP_EQ(pm_diag(func).pm_io_failures, 1,
	    "other writes do not count the same refusal again");
	cfg_write(3, PIIX4_PM_PMBA, 0x0041, 4);
	tap_ok(!decodes(0x44) && !decodes(0x48),
	    "nor over the in-kernel PIT (0x40-0x43)");
	TAP_EQ(pm_diag(func).pm_io_failures, 2, "counted too");
	cfg_write(3, PIIX4_PM_PMBA, 0x0601, 4);
	TAP_EQ(port_read(0x604, 2), 1 | 5 << 10, "back at 0x600 when asked");
	cfg_write(3, PIIX4_PM_PMREGMISC, 0, 1);
	tap_ok(!decodes(0x600) && !decodes(0x604) && !decodes(0x608),
	    "disabled: decodes nowhere");
	TAP_EQ(pm_diag(func).pm_io_base, 0, "diagnostics: no base");
	cfg_write(3, PIIX4_PM_PMREGMISC, PIIX4_PM_PMIOSE, 1);
	TAP_EQ(port_read(0x608, 4), ACPI_PM_TMR_HZ, "enabled again");
	TAP_EQ(pm_diag(func).pm_io_failures, 2, "no failure on the way");
}

/* A VM without firmware: the block stays at 0x600 and says so. */
static void
test_fixed(struct vdev *pm, const struct board_device *bd)
{
	struct pmio fixed;
	uint16_t base = 0;

	pmio_init(&fixed, &pio, pm, bd->ranges, NULL);
	pmio_update(&fixed);
	tap_ok(pmio_base(&fixed, &base) && base == PC_ACPI_PM1A_EVT_PORT,
	    "without firmware: the getter says 0x600");
	TAP_EQ(bd->ranges[0].base, PC_ACPI_PM1A_EVT_PORT,
	    "the board's acpi-pm ranges start at the PM1a event block");
}

/*
 * The board's PCI functions for a definition with every device: no two
 * in one place; the PIIX in slot 1 and virtio-rng in slot 12 with
 * firmware, virtio-rng in slot 1 and no PIIX without.
 */
static void
test_board(bool firmware)
{
	static const struct fw_cfg_item item;
	struct board_backends be = {
		.rng = true, .ndisks = BOARD_MAX_DISKS,
		.nnics = BOARD_MAX_NICS, .has_vsock = true, .has_cdrom = true,
		.fw_cfg = firmware ? &item : NULL,
	};
	bool used[PC_PCI_SLOTS][PCIBUS_FUNCTIONS] = { { false } };
	unsigned int rng = 0, piix = 0;
	bool clash = false;
	const struct board_device *b;

	for (size_t i = 0; i < board_pc_size; i++) {
		b = &board_pc[i];
		if (b->bus != BOARD_PCI ||
		    (b->present != NULL && !b->present(&be)))
			continue;
		clash = clash || used[b->pci_slot][b->pci_fn];
		used[b->pci_slot][b->pci_fn] = true;
		if (strcmp(b->name, "virtio-rng") == 0)
			rng = b->pci_slot;
		if (strncmp(b->name, "piix", 4) == 0)
			piix |= 1u << b->pci_fn;
	}
	tap_ok(!clash, "%s: one PCI function per slot and function",
	    firmware ? "firmware" : "no firmware");
	TAP_EQ(rng, firmware ? 12 : 1, "%s: virtio-rng's slot",
	    firmware ? "firmware" : "no firmware");
	TAP_EQ(piix, firmware ? 1u << 0 | 1u << 3 : 0,
	    "%s: the PIIX functions", firmware ? "firmware" : "no firmware");
	tap_ok(firmware || !used[1][3],
	    "no firmware: slot 1 holds one function");
}

int
main(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	const struct board_device *bd = board_entry("acpi-pm");
	struct pci_host_ops ops;
	struct pcibus pb;
	struct vdev hv, isa, func, pm, other;
	unsigned int i;

	if (iobus_init(&pio) < 0 || iobus_init(&mmio) < 0)
		tap_bail("iobus_init");
	pcibus_init(&pb, &pio, &mmio);
	pcibus_host_ops(&pb, &ops);
	vdev_init(&hv, &pci_host_device_ops, pci_host_new_rcr(&fh.host, &ops));
	vdev_init(&isa, &piix3_isa_device_ops, piix3_isa_new(&fh.host));
	vdev_init(&func, &piix4_pm_device_ops, piix4_pm_new(&fh.host));
	vdev_init(&pm, &acpi_pm_device_ops,
	    acpi_pm_new(&fh.host, PC_ACPI_SLP_TYP_S5));
	vdev_init(&other, &other_ops, NULL);
	if (hv.state == NULL || isa.state == NULL || func.state == NULL ||
	    pm.state == NULL)
		tap_bail("out of memory");
	TAP_EQ(iobus_register(&pio, PC_PCI_CONFIG_ADDR_PORT, 8, &hv, 0), 0,
	    "conf1 ports");
	TAP_EQ(iobus_register(&pio, 0xc000, 0x20, &other, 0), 0,
	    "another device at 0xc000");
	/* As the machine builds it: the board's ranges, then the PIIX4. */
	for (i = 0; i < BOARD_MAX_RANGES && bd->ranges[i].len > 0; i++)
		iobus_register(&pio, bd->ranges[i].base, bd->ranges[i].len,
		    &pm, bd->ranges[i].dev_offset);
	TAP_EQ(pcibus_add(&pb, 1, 3, &func), 0, "PIIX4 PM at 00:01.3");
	TAP_EQ(pcibus_add(&pb, 1, 0, &isa), 0, "PIIX3 ISA at 00:01.0");
	test_fixed(&pm, bd);
	pmio_init(&pmio, &pio, &pm, bd->ranges, &func);
	pb.config_written = config_written;
	pmio_update(&pmio);

	test_board(false);
	test_board(true);
	test_isa();
	test_isa_routes(&fh, &isa);
	test_pm_config();
	test_pm_block(&fh, &func);

	vdev_destroy(&hv);
	vdev_destroy(&isa);
	vdev_destroy(&func);
	vdev_destroy(&pm);
	iobus_destroy(&pio);
	iobus_destroy(&mmio);
	return tap_done();
}
