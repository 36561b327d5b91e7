/*
 * libFuzzer harness for a firmware VM's PIIX functions as a hostile
 * guest drives them: the host bridge's conf1 ports (PAM, SMRAM, the
 * reset control register), the PIIX3 ISA bridge (00:01.0) and the PIIX4
 * PM function (00:01.3), whose PMBA and PMREGMISC move the ACPI PM
 * block around the port bus (daemon/machine/pmio.c), on the unit
 * tests' fake device host.
 *
 * Input: one operation after another until the bytes run out:
 *
 *   op % 4  0  config write: function (bit 3 of the byte: slot 0, else
 *              slot 1), register, size, 4 value bytes
 *           1  config read: function, register, size
 *           2  port write: 2 bytes of port (high bit of op set: that
 *              many bytes past the PM block's current base, mod 16),
 *              size, 4 value bytes
 *           3  port read: port as in 2, size; and 1 ms of VM time
 *
 * After each operation the block must be where pmio_base() says and
 * nowhere else, the function's diagnostics must agree, and it must
 * never sit on the in-kernel PIC and PIT's ports.  A finding is such a
 * disagreement (abort), what ASan/UBSan report, or a crash.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "acpi-pm.h"
#include "board.h"
#include "fake-host.h"
#include "fuzz-input.h"
#include "iobus.h"
#include "pc-layout.h"
#include "pci-host.h"
#include "pcibus.h"
#include "piix3-isa.h"
#include "piix4-pm.h"
#include "pmio.h"

static struct {
	struct fake_host fh;
	struct iobus pio, mmio;
	struct pcibus pb;
	struct pci_host_ops ops;
	struct vdev hv, isa, func, pm, com1;
	struct pmio pmio;
} s;

static void
fuzz_config_written(void *ctx, struct vdev *vdev)
{
	if (vdev == s.pmio.func)
		pmio_update(&s.pmio);
}

static const struct board_device *
fuzz_acpi_pm_entry(void)
{
	for (size_t i = 0; i < board_pc_size; i++)
		if (strcmp(board_pc[i].name, "acpi-pm") == 0)
			return &board_pc[i];
	abort();
}

static void
fuzz_other_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	memset(data, 0, size);
}

static void
fuzz_other_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
}

static const struct device_ops fuzz_other_ops = {
	.name = "com1", .read = fuzz_other_read, .write = fuzz_other_write,
};

struct fuzz_diag {
	struct device_diag d;
	uint64_t pm_io, pm_io_base;
};

static void
fuzz_diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct fuzz_diag *f = (struct fuzz_diag *)d;

	if (strcmp(key, "pm_io") == 0)
		f->pm_io = value;
	else if (strcmp(key, "pm_io_base") == 0)
		f->pm_io_base = value;
}

/* KVM's in-kernel PIC, PIT and ELCR ports (pmio.c keeps off them). */
static bool
fuzz_on_kernel_ports(uint64_t base, uint64_t len)
{
	static const uint16_t ports[][2] = {
		{ 0x20, 0x21 }, { 0x40, 0x43 }, { 0x61, 0x61 },
		{ 0xa0, 0xa1 }, { 0x4d0, 0x4d1 },
	};

	for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++)
		if (base <= ports[i][1] && ports[i][0] < base + len)
			return true;
	return false;
}

/* The block's ranges on the bus, and what everyone says of them. */
static void
fuzz_check(void)
{
	const struct iobus_table *t = iobus_table(&s.pio);
	struct fuzz_diag fd = { .d = { .put = fuzz_diag_put } };
	uint16_t base = 0;
	bool on = pmio_base(&s.pmio, &base);
	size_t i, n = 0;

	for (i = 0; i < t->nranges; i++) {
		if (t->ranges[i].dev != &s.pm)
			continue;
		n++;
		if (!on || (t->ranges[i].base != base &&
		    t->ranges[i].base != base + ACPI_PM_TMR_OFFSET))
			abort();
		if (fuzz_on_kernel_ports(t->ranges[i].base,
		    t->ranges[i].len))
			abort();
	}
	if (n != (on ? 2 : 0))
		abort();
	s.func.ops->diag(s.func.state, &fd.d);
	if (fd.pm_io != on || fd.pm_io_base != (on ? base : 0))
		abort();
}

static uint16_t
fuzz_port(struct fuzz_in *in, uint8_t op)
{
	uint16_t base = 0;

	if ((op & 0x80) != 0) {
		pmio_base(&s.pmio, &base);
		return (uint16_t)(base + (fuzz_byte(in) & 15));
	}
	return (uint16_t)fuzz_uint(in, 2);
}

static unsigned int
fuzz_size(struct fuzz_in *in)
{
	static const unsigned int sizes[] = { 1, 2, 4, 3 };

	return sizes[fuzz_byte(in) & 3];
}

static void
fuzz_config_addr(struct fuzz_in *in)
{
	uint8_t fn = fuzz_byte(in);
	uint32_t a = 0x80000000u | (fn & 8 ? 0 : 1u << 11) |
	    (fn & 7u) << 8 | fuzz_byte(in);

	iobus_write(&s.pio, PC_PCI_CONFIG_ADDR_PORT, &a, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct board_device *bd = fuzz_acpi_pm_entry();
	struct fuzz_in in = { data, size };
	uint32_t v;
	unsigned int sz, i;
	uint16_t port;
	uint8_t op;

	memset(&s, 0, sizeof(s));
	fake_host_init(&s.fh);
	if (iobus_init(&s.pio) < 0 || iobus_init(&s.mmio) < 0)
		abort();
	pcibus_init(&s.pb, &s.pio, &s.mmio);
	pcibus_host_ops(&s.pb, &s.ops);
	vdev_init(&s.hv, &pci_host_device_ops,
	    pci_host_new_rcr(&s.fh.host, &s.ops));
	vdev_init(&s.isa, &piix3_isa_device_ops, piix3_isa_new(&s.fh.host));
	vdev_init(&s.func, &piix4_pm_device_ops, piix4_pm_new(&s.fh.host));
	vdev_init(&s.pm, &acpi_pm_device_ops,
	    acpi_pm_new(&s.fh.host, PC_ACPI_SLP_TYP_S5));
	if (s.hv.state == NULL || s.isa.state == NULL ||
	    s.func.state == NULL || s.pm.state == NULL)
		abort();
	iobus_register(&s.pio, PC_PCI_CONFIG_ADDR_PORT, 8, &s.hv, 0);
	/* Something else the block may run into, as on a PC. */
	vdev_init(&s.com1, &fuzz_other_ops, NULL);
	iobus_register(&s.pio, PC_COM1_PORT, 8, &s.com1, 0);
	for (i = 0; i < BOARD_MAX_RANGES && bd->ranges[i].len > 0; i++)
		iobus_register(&s.pio, bd->ranges[i].base, bd->ranges[i].len,
		    &s.pm, bd->ranges[i].dev_offset);
	if (pcibus_add(&s.pb, 1, 0, &s.isa) < 0 ||
	    pcibus_add(&s.pb, 1, 3, &s.func) < 0)
		abort();
	pmio_init(&s.pmio, &s.pio, &s.pm, bd->ranges, &s.func);
	s.pb.config_written = fuzz_config_written;
	s.pb.config_ctx = NULL;
	pmio_update(&s.pmio);
	fuzz_check();

	while (in.left > 0) {
		op = fuzz_byte(&in);
		switch (op & 3) {
		case 0:
			fuzz_config_addr(&in);
			sz = fuzz_size(&in);
			v = (uint32_t)fuzz_uint(&in, 4);
			iobus_write(&s.pio, PC_PCI_CONFIG_DATA_PORT +
			    (op >> 2 & 3), &v, sz);
			break;
		case 1:
			fuzz_config_addr(&in);
			sz = fuzz_size(&in);
			iobus_read(&s.pio, PC_PCI_CONFIG_DATA_PORT +
			    (op >> 2 & 3), &v, sz);
			break;
		case 2:
			port = fuzz_port(&in, op);
			sz = fuzz_size(&in);
			v = (uint32_t)fuzz_uint(&in, 4);
			iobus_write(&s.pio, port, &v, sz);
			break;
		default:
			port = fuzz_port(&in, op);
			sz = fuzz_size(&in);
			iobus_read(&s.pio, port, &v, sz);
			s.fh.vm_now += 1000000;
			break;
		}
		fuzz_check();
	}

	vdev_destroy(&s.hv);
	vdev_destroy(&s.isa);
	vdev_destroy(&s.func);
	vdev_destroy(&s.pm);
	vdev_destroy(&s.com1);
	iobus_destroy(&s.pio);
	iobus_destroy(&s.mmio);
	return 0;
}
