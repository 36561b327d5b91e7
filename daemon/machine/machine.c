/*
 * Building, running and tearing down one guest machine.
 *
 * Which devices a machine has, where they sit and which interrupt lines
 * they drive is the board table's business (board.h): the machine walks
 * it to build its devices and to describe them, so that creation,
 * diagnostics and (later) restore cannot drift apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acpi-pm.h"
#include "ahci.h"
#include "vmgenid.h"
#include "bochs-display.h"
#include "exit-stats.h"
#include "firmware.h"
#include "i8042.h"
#include "kvm.h"
#include "log.h"
#include "machine-state.h"
#include "machine.h"
#include "machine-slots.h"
#include "pc-layout.h"
#include "rtc.h"
#include "uart.h"
#include "vcpu-state.h"

const char *
machine_reset_reason_name(enum machine_reset_reason r, const char *source)
{
	if (source != NULL)
		return source;
	switch (r) {
	case MACHINE_RESET_DEVICE:
		return "device";
	case MACHINE_RESET_TRIPLE_FAULT:
		return "triple_fault";
	case MACHINE_RESET_SYSTEM_EVENT:
		return "system_event";
	case MACHINE_POWEROFF:
		return "poweroff";
	}
	return "unknown";
}


/* The run controller's report: the machine is held, tell the host. */
static void
machine_held(void *opaque, enum machine_reset_reason why, const char *source,
    const char *fatal)
{
	struct machine *m = opaque;

	if (fatal != NULL)
		m->host.fatal(m->host.opaque, fatal);
	else
		m->host.reset(m->host.opaque, why, source);
}

/* A device's reset line or power switch (under its lock, any thread). */
static void
machine_system_request(void *opaque, const char *device,
    enum device_system_request req)
{
	struct machine *m = opaque;

	runctl_hold(&m->rc, req == DEVICE_REQUEST_POWEROFF ?
	    MACHINE_POWEROFF : MACHINE_RESET_DEVICE, device, NULL);
}

/* The PCI bus moved a device's BAR: its doorbells follow. */
static void
machine_bar_moved(void *ctx, struct vdev *vdev, unsigned int bar, bool on,
    uint64_t base)
{
	struct machine_device *md = (struct machine_device *)((char *)vdev -
	    offsetof(struct machine_device, vdev));
	struct machine *m = ctx;

	devhost_device_bar(&md->host, bar, on, base);
	/* The bochs-display's memory follows its BAR. */
	if (md == m->fb_dev && bar == BOCHS_DISPLAY_FB_BAR)
		(void)machine_fb_place(m, on, base);
}

static int
machine_add_device(struct machine *m, struct machine_device *md,
    const struct board_device *bd, char *err, size_t errlen)
{
	struct iobus *bus = bd->bus == BOARD_PIO ? &m->pio : &m->mmio;
	const struct board_range *ranges = bd->ranges;
	struct board_range r[BOARD_MAX_RANGES] = { { 0 } };
	void *state;
	unsigned int i;
	int ret;

	md->bd = bd;
	vdev_init(&md->vdev, bd->ops, NULL);
	devhost_device_init(&md->host, m->dh, bd->name, &md->vdev.lock,
	    bd->irqs, bd->nirqs);
	state = bd->create(&md->host.host, &m->backends);
	if (state == NULL) {
		snprintf(err, errlen, "cannot create %s: out of memory",
		    bd->name);
		return -ENOMEM;
	}
	md->vdev.state = state;
	if (bd->bus == BOARD_PCI) {
		ret = pcibus_add(&m->pci, bd->pci_slot, bd->pci_fn,
		    &md->vdev);
		if (ret < 0)
			snprintf(err, errlen,
			    "cannot put %s in PCI slot %u function %u: %s",
			    bd->name, bd->pci_slot, bd->pci_fn, strerror(-ret));
		return ret;
	}
	if (bd->place != NULL) {
		r[0] = bd->place(&m->backends);
		ranges = r;
	}
	for (i = 0; i < BOARD_MAX_RANGES && ranges[i].len > 0; i++) {
		ret = iobus_register(bus, ranges[i].base, ranges[i].len,
		    &md->vdev, ranges[i].dev_offset);
		if (ret < 0) {
			snprintf(err, errlen,
			    "cannot register %s at 0x%llx: %s", bd->name,
			    (unsigned long long)ranges[i].base,
			    strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* A function's config space was written: the PM block may move. */
static void
machine_config_written(void *ctx, struct vdev *vdev)
{
	struct machine *m = ctx;

	if (vdev == m->pmio.func)
		pmio_update(&m->pmio);
}

/*
 * The ACPI PM block stays where the board put it, unless a PIIX4 PM
 * function (firmware VMs) places it.
 */
static int
machine_add_pmio(struct machine *m, char *err, size_t errlen)
{
	struct machine_device *pm = machine_device(m, "acpi-pm");
	struct machine_device *func = machine_device(m, "piix4-pm");

	if (pm == NULL) {
		snprintf(err, errlen, "the board has no acpi-pm");
		return -EINVAL;
	}
	pmio_init(&m->pmio, &m->pio, &pm->vdev, pm->bd->ranges,
	    func != NULL ? &func->vdev : NULL);
	if (func != NULL) {
		m->pci.config_written = machine_config_written;
		m->pci.config_ctx = m;
		/* Disabled at power-on: off the board's ports. */
		pmio_update(&m->pmio);
	}
	return 0;
}

bool
machine_pm_base(struct machine *m, uint16_t *base)
{
	return pmio_base(&m->pmio, base);
}

static int
machine_add_devices(struct machine *m, char *err, size_t errlen)
{
	struct devhost_ram ram[2] = {
		{ 0, m->mem.low_size, m->mem.low, m->ram_fd, 0 },
		{ PC_HIGH_RAM_START, m->mem.high_size, m->high, m->ram_fd,
		    m->mem.low_size },
	};
	struct devhost_config hc = {
		.vm_fd = m->vm_fd,
		.irqroute = m->irqroute,
		.ram = ram,
		.nram = m->high != NULL ? 2 : 1,
		.system_request = machine_system_request,
		.opaque = m,
	};
	size_t i;
	int ret;

	hc.base = m->base;
	ret = devhost_new(&m->dh, &hc);
	if (ret < 0) {
		snprintf(err, errlen, "cannot create the device host: %s",
		    strerror(-ret));
		return ret;
	}
	pcibus_init(&m->pci, &m->pio, &m->mmio);
	m->pci.bar_moved = machine_bar_moved;
	m->pci.bar_ctx = m;
	pcibus_host_ops(&m->pci, &m->backends.pci);
	m->devs = calloc(board_pc_size, sizeof(*m->devs));
	if (m->devs == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < board_pc_size; i++) {
		if (board_pc[i].present != NULL &&
		    !board_pc[i].present(&m->backends))
			continue;
		ret = machine_add_device(m, &m->devs[m->ndevs++], &board_pc[i],
		    err, errlen);
		if (ret < 0)
			return ret;
		if (board_pc[i].ops == &bochs_display_device_ops)
			m->fb_dev = &m->devs[m->ndevs - 1];
	}
	return machine_add_pmio(m, err, errlen);
}

const char *
machine_device_at(struct machine *m, bool pio, uint64_t addr)
{
	const struct iobus_range *r;
	size_t i;

	r = iobus_lookup(pio ? &m->pio : &m->mmio, addr, 1);
	if (r == NULL || r->base != addr)
		return NULL;
	for (i = 0; i < m->ndevs; i++)
		if (&m->devs[i].vdev == r->dev)
			return m->devs[i].bd->name;
	return NULL;
}

struct machine_device *
machine_device(struct machine *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->ndevs; i++)
		if (strcmp(m->devs[i].bd->name, name) == 0)
			return &m->devs[i];
	return NULL;
}

/*
 * The memory-size bytes a PC BIOS leaves in CMOS (IBM AT layout), for
 * guests that look there rather than at the e820 map.
 */
static void
machine_cmos_memory(struct machine *m)
{
	struct rtc *rtc = machine_device(m, "rtc")->vdev.state;
	uint64_t ext_kib, above16m, above4g;

	ext_kib = m->mem.low_size > PC_HIGH_MEM_START ?
	    (m->mem.low_size - PC_HIGH_MEM_START) / 1024 : 0;
	if (ext_kib > 0xffff)
		ext_kib = 0xffff;
	above16m = m->mem.low_size > (16ULL << 20) ?
	    (m->mem.low_size - (16ULL << 20)) >> 16 : 0;
	if (above16m > 0xffff)
		above16m = 0xffff;
	above4g = m->mem.high_size >> 16;

	rtc_cmos_set(rtc, 0x15, 640 & 0xff);
	rtc_cmos_set(rtc, 0x16, 640 >> 8);
	rtc_cmos_set(rtc, 0x17, ext_kib & 0xff);
	rtc_cmos_set(rtc, 0x18, ext_kib >> 8);
	rtc_cmos_set(rtc, 0x30, ext_kib & 0xff);
	rtc_cmos_set(rtc, 0x31, ext_kib >> 8);
	rtc_cmos_set(rtc, 0x34, above16m & 0xff);
	rtc_cmos_set(rtc, 0x35, above16m >> 8);
	rtc_cmos_set(rtc, 0x5b, above4g & 0xff);
	rtc_cmos_set(rtc, 0x5c, (above4g >> 8) & 0xff);
	rtc_cmos_set(rtc, 0x5d, (above4g >> 16) & 0xff);
}

/*
 * Guest RAM stays out of the worker's core files: it is the guest's data
 * (keys, documents), not the worker's, and can be gigabytes.  A kernel
 * that refuses is no reason not to run the guest.
 */
static void
machine_no_dump(void *addr, uint64_t len)
{
	if (madvise(addr, len, MADV_DONTDUMP) < 0)
		log_warn("madvise(MADV_DONTDUMP) of guest RAM: %s",
		    strerror(errno));
}

void
machine_ram_remapped(struct machine *m)
{
	if (m->mem.low != NULL)
		machine_no_dump(m->mem.low, m->mem.low_size);
	if (m->high != NULL)
		machine_no_dump(m->high, m->mem.high_size);
}

/*
 * One range of guest RAM: anonymous and private, or for shareable RAM
 * the range of m->ram_fd that starts at offset, mapped shared so that a
 * vhost-user backend mapping the same file sees the guest's writes.
 */
static void *
machine_map_range(struct machine *m, uint64_t len, uint64_t offset)
{
	void *p;

	if (m->ram_fd < 0)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	else
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_NORESERVE, m->ram_fd, (off_t)offset);
	return p == MAP_FAILED ? NULL : p;
}

static int
machine_map_memory(struct machine *m, uint64_t memory_mib, bool shared,
    char *err, size_t errlen)
{
	uint64_t total = memory_mib << 20;
	uint64_t low = total < PC_PCI_HOLE_START ? total : PC_PCI_HOLE_START;
	uint64_t high = total - low;
	int ret;

	/* A memfd's pages are allocated on first touch, as anonymous
	 * memory's: the file's size costs nothing. */
	if (shared) {
		m->ram_fd = memfd_create("vmmd-guest-ram", MFD_CLOEXEC);
		if (m->ram_fd < 0 || ftruncate(m->ram_fd, (off_t)total) < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot make %llu MiB of "
			    "shareable guest RAM: %s",
			    (unsigned long long)memory_mib, strerror(-ret));
			return ret;
		}
	}
	if ((m->mem.low = machine_map_range(m, low, 0)) == NULL) {
		snprintf(err, errlen, "cannot allocate %llu MiB of guest RAM: %s",
		    (unsigned long long)memory_mib, strerror(errno));
		return -ENOMEM;
	}
	m->mem.low_size = low;
	m->mem.zeroed = true;
	machine_no_dump(m->mem.low, low);
	ret = kvm_set_memory(m->vm_fd, MACHINE_SLOT_LOW, 0, low, m->mem.low);
	if (ret < 0)
		goto fail;
	if (high > 0) {
		if ((m->high = machine_map_range(m, high, low)) == NULL) {
			snprintf(err, errlen,
			    "cannot allocate %llu MiB of guest RAM: %s",
			    (unsigned long long)memory_mib, strerror(errno));
			return -ENOMEM;
		}
		m->mem.high_size = high;
		machine_no_dump(m->high, high);
		ret = kvm_set_memory(m->vm_fd, MACHINE_SLOT_HIGH,
		    PC_HIGH_RAM_START, high, m->high);
		if (ret < 0)
			goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "KVM_SET_USER_MEMORY_REGION: %s", strerror(-ret));
	return ret;
}

bool
machine_ram_shared(const struct machine *m)
{
	return m->ram_fd >= 0;
}

/*
 * Interrupt routing as on a PC: ISA IRQ n drives PIC input n and IOAPIC
 * pin n, except that IRQ0 (the PIT) is wired to IOAPIC pin 2 and IRQ2 is
 * the PICs' cascade.  KVM's default routing maps GSI 0 to pin 0, which
 * would contradict the MP table.
 */
static int
machine_set_irq_routing(struct machine *m)
{
	struct kvm_irq_routing_entry base[16 + PC_IOAPIC_PINS];
	unsigned int gsi, n = 0;

	for (gsi = 0; gsi < 16; gsi++) {
		if (gsi == PC_IRQ_CASCADE)
			continue;
		base[n++] = (struct kvm_irq_routing_entry){
			.gsi = gsi,
			.type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip.irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER :
			    KVM_IRQCHIP_PIC_SLAVE,
			.u.irqchip.pin = gsi % 8,
		};
	}
	for (gsi = 0; gsi < PC_IOAPIC_PINS; gsi++) {
		if (gsi == PC_IRQ_CASCADE)
			continue;
		base[n++] = (struct kvm_irq_routing_entry){
			.gsi = gsi,
			.type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip.irqchip = KVM_IRQCHIP_IOAPIC,
			.u.irqchip.pin = gsi == 0 ? PC_IRQ0_IOAPIC_PIN : gsi,
		};
	}
	/* MSI routes join these as the guest programs its devices. */
	return irqroute_new(&m->irqroute, m->vm_fd, base, n);
}

/*
 * The display's framebuffer, in a slot of its own in the PCI hole; for
 * a guest that boots firmware, the bochs-display's memory (board-pc.c),
 * mapped where the firmware places its BAR.
 */
static int
machine_map_fb(struct machine *m, const struct machine_config *cfg,
    char *err, size_t errlen)
{
	char why[256];
	int ret;

	if (m->fb.hva == NULL)
		return 0;
	m->fb_movable = cfg->firmware != NULL;
	if (m->fb.size == 0 || m->fb.size > PC_FRAMEBUFFER_MAX ||
	    m->fb.size % 4096 != 0 || (m->fb_movable &&
	    (m->fb.size < (1u << 20) ||
	    (m->fb.size & (m->fb.size - 1)) != 0))) {
		snprintf(err, errlen, "framebuffer of %llu bytes",
		    (unsigned long long)m->fb.size);
		return -EINVAL;
	}
	/* Where KVM_GET_DIRTY_LOG writes, once per refresh while polled. */
	m->fb_dirty_bits = calloc((m->fb.size / 4096 + 63) / 64, sizeof(uint64_t));
	if (m->fb_dirty_bits == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (m->fb_movable) {
		/* Firmware takes the definition's size from the EDID. */
		m->backends.bochs = (struct bochs_display_config){
			.vram_size = m->fb.size,
			.edid_width = m->fb.width,
			.edid_height = m->fb.height,
		};
		m->backends.has_bochs = true;
		if (cfg->vgabios == NULL)
			return 0;
		ret = boot_firmware_rom(cfg->vgabios, &m->vgabios,
		    &m->vgabios_len, why, sizeof(why));
		if (ret < 0) {
			snprintf(err, errlen, "VGA BIOS: %s", why);
			return ret;
		}
		m->backends.bochs.rom = m->vgabios;
		m->backends.bochs.rom_len = m->vgabios_len;
		return 0;
	}
	ret = machine_fb_place(m, true, PC_FRAMEBUFFER_ADDR);
	if (ret < 0)
		snprintf(err, errlen, "cannot map the framebuffer: %s",
		    strerror(-ret));
	return ret;
}

static int
machine_create_vm(struct machine *m, int kvm_fd, bool firmware, char *err,
    size_t errlen)
{
	static const struct {
		long cap;
		const char *name;
	} needed[] = {
		{ KVM_CAP_IRQCHIP, "in-kernel irqchip" },
		{ KVM_CAP_PIT2, "in-kernel PIT" },
		{ KVM_CAP_USER_MEMORY, "user memory" },
		{ KVM_CAP_IMMEDIATE_EXIT, "immediate exit" },
		{ KVM_CAP_IRQ_INJECT_STATUS, "interrupt injection status" },
	};
	size_t i;
	int ret;

	m->kvm_fd = kvm_fd >= 0 ?
	    fcntl(kvm_fd, F_DUPFD_CLOEXEC, 0) : kvm_open();
	if (kvm_fd >= 0 && m->kvm_fd < 0)
		m->kvm_fd = -errno;
	if (m->kvm_fd < 0) {
		ret = m->kvm_fd;
		snprintf(err, errlen, "cannot open /dev/kvm: %s", strerror(-ret));
		return ret;
	}
	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (kvm_check_extension(m->kvm_fd, needed[i].cap) <= 0) {
			snprintf(err, errlen, "host KVM lacks %s",
			    needed[i].name);
			return -ENOTSUP;
		}
	}
	m->vm_fd = kvm_create_vm(m->kvm_fd);
	if (m->vm_fd < 0) {
		ret = m->vm_fd;
		snprintf(err, errlen, "KVM_CREATE_VM: %s", strerror(-ret));
		return ret;
	}
	ret = kvm_set_tss_addr(m->vm_fd, firmware ? PC_FW_KVM_TSS_ADDR :
	    PC_KVM_TSS_ADDR);
	if (ret < 0) {
		snprintf(err, errlen, "KVM_SET_TSS_ADDR: %s", strerror(-ret));
		return ret;
	}
	/* Diagnostics only, like each vCPU's. */
	(void)kvm_stats_open(&m->vm_stats, m->vm_fd);
	/* Only Intel hosts use it; others may refuse and that is fine. */
	kvm_set_identity_map_addr(m->vm_fd, firmware ? PC_FW_KVM_IDMAP_ADDR :
	    PC_KVM_IDMAP_ADDR);
	return 0;
}

/*
 * The in-kernel PIC, IOAPIC, LAPICs and PIT, and the GSI routing: after
 * the memory slots.  Each slot installed waits for readers of the VM's
 * SRCU, and once the irqchip exists the first one waited a whole grace
 * period here (4.5 to 12 ms on a native /dev/kvm, against 0.05 ms
 * before it): most of a start.
 */
static int
machine_create_irqchip(struct machine *m, char *err, size_t errlen)
{
	int ret;

	ret = kvm_create_irqchip(m->vm_fd);
	if (ret < 0) {
		snprintf(err, errlen, "KVM_CREATE_IRQCHIP: %s", strerror(-ret));
		return ret;
	}
	ret = machine_set_irq_routing(m);
	if (ret < 0) {
		snprintf(err, errlen, "KVM_SET_GSI_ROUTING: %s", strerror(-ret));
		return ret;
	}
	ret = kvm_create_pit2(m->vm_fd);
	if (ret < 0) {
		snprintf(err, errlen, "KVM_CREATE_PIT2: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * The PM I/O base the firmware programmed, for its ACPI tables: the
 * PIIX4 PM function's PMBA once the firmware enabled PM I/O there
 * (SeaBIOS and OVMF do before they read the tables); else where a VM
 * without firmware has the block, which is then on no port at all.
 */
static uint16_t
machine_acpi_pm_base(void *opaque)
{
	struct machine *m = opaque;
	uint16_t base;

	if (machine_pm_base(m, &base))
		return base;
	return PC_ACPI_PM1A_EVT_PORT;
}

int
machine_cdrom_media(struct machine *m, const struct blk_backend *be,
    bool force)
{
	struct machine_device *md = machine_device(m, "ahci");
	int ret;

	if (md == NULL || md->vdev.state == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	ret = ahci_media(md->vdev.state, BOARD_PC_CDROM_PORT, be, force);
	vdev_unlock(&md->vdev);
	return ret;
}

int
machine_cdrom_present(struct machine *m)
{
	struct machine_device *md = machine_device(m, "ahci");
	int ret;

	if (md == NULL || md->vdev.state == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	ret = ahci_has_medium(md->vdev.state, BOARD_PC_CDROM_PORT);
	vdev_unlock(&md->vdev);
	return ret == -EINVAL ? -ENODEV : ret;
}

/*
 * The firmware's bootorder for cfg: its boot order's device paths, a
 * line each; without one, the CD-ROM when there is one.  0, or -ENOENT
 * naming a device the guest does not have in err.
 */
static int
machine_bootorder(const struct machine_config *cfg, char *buf, size_t size,
    char *err, size_t errlen)
{
	static const struct boot_dev cdrom0 = { BOOT_DEV_CDROM, 0 };
	const struct boot_dev *devs = cfg->boot_order;
	unsigned int n = cfg->nboot_order;
	size_t used = 0;
	char name[BOOT_DEV_NAME_MAX];
	int ret;

	buf[0] = '\0';
	if (n == 0 && cfg->backends.has_cdrom) {
		devs = &cdrom0;
		n = 1;
	}
	for (unsigned int i = 0; i < n; i++) {
		ret = board_pc_boot_path(&cfg->backends, &devs[i], buf + used,
		    size - used - 1);
		if (ret < 0) {
			boot_dev_name(&devs[i], name, sizeof(name));
			snprintf(err, errlen, "boot order: %s %s", name,
			    ret == -ENOENT ? "is not there" : "does not fit");
			return ret;
		}
		used += strlen(buf + used);
		buf[used++] = '\n';
		buf[used] = '\0';
	}
	return 0;
}

/* Where the BARs are, for the firmware's DSDT (a vCPU, at its select). */
static void
machine_pci_span(void *opaque, struct boot_pci_span *span)
{
	struct machine *m = opaque;
	struct pcibus_span below, above;

	pcibus_mem_spans(&m->pci, &below, &above);
	*span = (struct boot_pci_span){
		.any32 = below.any, .lo32 = below.lo, .hi32 = below.hi,
		.any64 = above.any, .lo64 = above.lo, .hi64 = above.hi,
	};
}

/*
 * A guest that boots firmware: its image and the fw_cfg device's items
 * (in m->backends, so before the devices are made), and the vCPU's
 * reset state into boot.  Nothing without cfg->firmware.
 */
static int
machine_load_firmware(struct machine *m, const struct machine_config *cfg,
    struct boot_cpu *boot, char *err, size_t errlen)
{
	char why[256], order[FIRMWARE_BOOTORDER_MAX];
	struct firmware_boot fb = { .order = order, .menu = cfg->boot_menu,
	    .menu_ms = cfg->boot_menu_ms };
	int ret;

	if (cfg->firmware == NULL)
		return 0;
	ret = machine_bootorder(cfg, order, sizeof(order), err, errlen);
	if (ret < 0)
		return ret;
	m->fw = calloc(1, sizeof(*m->fw));
	if (m->fw == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = firmware_load(m->fw, m->vm_fd, MACHINE_SLOT_FIRMWARE, &m->mem,
	    cfg->firmware, cfg->backends.pflash, MACHINE_SLOT_VARS, m->nvcpus,
	    &fb, boot, why, sizeof(why));
	if (ret < 0) {
		free(m->fw);
		m->fw = NULL;
		snprintf(err, errlen, "%s: %s", cfg->kernel_name != NULL ?
		    cfg->kernel_name : cfg->firmware, why);
		return ret;
	}
	firmware_set_pm_base(m->fw, machine_acpi_pm_base, m);
	firmware_set_pci_span(m->fw, machine_pci_span, m);
	if (cfg->uuid != NULL)
		firmware_set_uuid(m->fw, cfg->uuid);
	m->backends.fw_cfg = m->fw->items;
	m->backends.nfw_cfg = m->fw->nitems;
	m->backends.pflash_base = m->fw->image.layout.vars_base;
	return 0;
}

/* The VM generation ID into guest RAM, if the board has one. */
static int
machine_vmgenid_publish(struct machine *m)
{
	struct machine_device *md = machine_device(m, "vmgenid");
	int ret;

	if (md == NULL)
		return 0;
	vdev_lock(&md->vdev);
	ret = vmgenid_publish(md->vdev.state);
	vdev_unlock(&md->vdev);
	return ret;
}

int
machine_new(struct machine **out, const struct machine_config *cfg,
    const struct machine_host *host, char *err, size_t errlen)
{
	struct boot_args args = {
		.kernel = cfg->kernel,
		.initrd = cfg->initrd,
		.cmdline = cfg->cmdline,
		.ncpus = cfg->vcpus,
	};
	struct vcpu_config vc;
	struct boot_cpu boot;
	struct machine *m;
	char why[256];
	unsigned int i;
	int ret;

	if (cfg->times != NULL)
		cfg->times->begin = xs_mono_ns();
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->host = *host;
	m->backends = cfg->backends;
	m->fb = cfg->fb;
	pthread_mutex_init(&m->fb_lock, NULL);
	if (m->fb.hva != NULL)
		args.fb = (struct boot_fb){
			.base = PC_FRAMEBUFFER_ADDR,
			.size = m->fb.size,
			.width = m->fb.width,
			.height = m->fb.height,
			.stride = m->fb.stride,
		};
	m->base = cfg->base;
	m->kvm_fd = m->vm_fd = m->ram_fd = -1;
	m->vm_stats.fd = -1;
	m->nvcpus = cfg->vcpus;
	if ((ret = iobus_init(&m->pio)) < 0 ||
	    (ret = iobus_init(&m->mmio)) < 0 ||
	    (ret = runctl_init(&m->rc, m->nvcpus, machine_held, m)) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	m->vcpus = calloc(m->nvcpus, sizeof(*m->vcpus));
	if (m->vcpus == NULL) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < m->nvcpus; i++)
		vcpu_clear(&m->vcpus[i]);

	if ((ret = machine_create_vm(m, cfg->kvm_fd,
	    cfg->firmware != NULL, err, errlen)) < 0 ||
	    (ret = machine_map_memory(m, cfg->memory_mib, cfg->ram_shared,
	    err, errlen)) < 0 ||
	    (ret = machine_map_fb(m, cfg, err, errlen)) < 0 ||
	    (ret = machine_load_firmware(m, cfg, &boot, err, errlen)) < 0 ||
	    (ret = machine_create_irqchip(m, err, errlen)) < 0 ||
	    (ret = machine_add_devices(m, err, errlen)) < 0)
		goto fail;
	machine_cmos_memory(m);
	if (cfg->times != NULL)
		cfg->times->vm = xs_mono_ns();

	ret = m->fw != NULL ? 0 :
	    boot_load(&m->mem, &args, &boot, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", cfg->kernel_name != NULL ?
		    cfg->kernel_name : cfg->kernel, why);
		goto fail;
	}
	/* Over what the loader wrote: the reserved page is the ID's. */
	if ((ret = machine_vmgenid_publish(m)) < 0) {
		snprintf(err, errlen, "the VM generation ID: %s",
		    strerror(-ret));
		goto fail;
	}

	vc = (struct vcpu_config){
		.kvm_fd = m->kvm_fd,
		.vm_fd = m->vm_fd,
		.nvcpus = m->nvcpus,
		.pio = &m->pio,
		.mmio = &m->mmio,
		.rc = &m->rc,
	};
	for (i = 0; i < m->nvcpus; i++) {
		vc.index = i;
		vc.started_ns = i == 0 && cfg->times != NULL ?
		    &cfg->times->first_run : NULL;
		/* Application processors wait for INIT/SIPI, as on a PC. */
		vc.boot = i == 0 ? &boot : NULL;
		ret = vcpu_init(&m->vcpus[i], &vc, err, errlen);
		if (ret < 0)
			goto fail;
		runctl_attach(&m->rc, i, &m->vcpus[i].ctl);
	}
	if (cfg->times != NULL)
		cfg->times->loaded = xs_mono_ns();
	*out = m;
	return 0;

fail:
	machine_free(m);
	return ret;
}

int
machine_start(struct machine *m)
{
	unsigned int i;
	int ret;

	for (i = 0; i < m->nvcpus; i++) {
		ret = vcpu_start(&m->vcpus[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void
machine_pause(struct machine *m)
{
	runctl_pause(&m->rc);
	/* The vCPUs are stopped: the kicks they made reach the devices
	 * before anything saves their state. */
	for (size_t i = 0; i < m->ndevs; i++)
		if (m->devs[i].vdev.state != NULL)
			devhost_device_take_rings(&m->devs[i].host);
	devhost_pause(m->dh);
}

void
machine_resume(struct machine *m)
{
	devhost_resume(m->dh);
	runctl_resume(&m->rc);
}

struct machine_regs_read {
	struct vcpu *v;
	struct kvm_regs *regs;
	struct kvm_sregs *sregs;
	struct vcpu_irq_view *irq;
};

static int
machine_read_regs(void *arg)
{
	struct machine_regs_read *r = arg;

	int ret = vcpu_get_regs(r->v, r->regs, r->sregs);

	return ret < 0 || r->irq == NULL ? ret :
	    vcpu_get_irq_view(r->v, r->irq);
}

int
machine_get_vcpu_regs(struct machine *m, unsigned int index,
    struct kvm_regs *regs, struct kvm_sregs *sregs,
    struct vcpu_irq_view *irq)
{
	struct machine_regs_read r = { NULL, regs, sregs, irq };

	if (index >= m->nvcpus)
		return -EINVAL;
	r.v = &m->vcpus[index];
	return runctl_while_paused(&m->rc, machine_read_regs, &r);
}

void
machine_free(struct machine *m)
{
	unsigned int i;
	size_t d;

	if (m == NULL)
		return;
	if (m->vcpus != NULL) {
		runctl_stop(&m->rc);
		for (i = 0; i < m->nvcpus; i++)
			vcpu_destroy(&m->vcpus[i]);
		free(m->vcpus);
	}
	/* Devices free their timers, so before the device host. */
	for (d = 0; d < m->ndevs; d++) {
		vdev_destroy(&m->devs[d].vdev);
		devhost_device_fini(&m->devs[d].host);
	}
	free(m->devs);
	devhost_free(m->dh);
	irqroute_free(m->irqroute);
	iobus_destroy(&m->pio);
	iobus_destroy(&m->mmio);
	if (m->mem.low != NULL)
		munmap(m->mem.low, m->mem.low_size);
	if (m->high != NULL)
		munmap(m->high, m->mem.high_size);
	if (m->ram_fd >= 0)
		close(m->ram_fd);
	free(m->fb_dirty_bits);
	free(m->vgabios);
	pthread_mutex_destroy(&m->fb_lock);
	kvm_stats_close(&m->vm_stats);
	if (m->vm_fd >= 0)
		close(m->vm_fd);
	if (m->kvm_fd >= 0)
		close(m->kvm_fd);
	/* Its slot went with the VM. */
	if (m->fw != NULL) {
		firmware_free(m->fw);
		free(m->fw);
	}
	runctl_destroy(&m->rc);
	free(m);
}

size_t
machine_console_input(struct machine *m, const uint8_t *buf, size_t len)
{
	struct machine_device *md = machine_device(m, "com1");
	size_t n;

	vdev_lock(&md->vdev);
	n = uart_receive(md->vdev.state, buf, len);
	vdev_unlock(&md->vdev);
	return n;
}

int
machine_ctrl_alt_del(struct machine *m)
{
	struct machine_device *md = machine_device(m, "i8042");
	int ret;

	vdev_lock(&md->vdev);
	ret = i8042_ctrl_alt_del(md->vdev.state);
	vdev_unlock(&md->vdev);
	return ret;
}

int
machine_power_button(struct machine *m)
{
	struct machine_device *md = machine_device(m, "acpi-pm");
	bool listening;

	vdev_lock(&md->vdev);
	listening = acpi_pm_power_button(md->vdev.state);
	vdev_unlock(&md->vdev);
	return listening ? 0 : -ENOTCONN;
}

int
machine_vmgenid(struct machine *m, uint8_t id[16])
{
	struct machine_device *md = machine_device(m, "vmgenid");

	if (md == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	vmgenid_get(md->vdev.state, id);
	vdev_unlock(&md->vdev);
	return 0;
}

int
machine_vmgenid_change(struct machine *m, const uint8_t id[16])
{
	struct machine_device *md = machine_device(m, "vmgenid");
	struct machine_device *pm = machine_device(m, "acpi-pm");
	int ret;

	if (md == NULL || pm == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	ret = vmgenid_set(md->vdev.state, id);
	vdev_unlock(&md->vdev);
	if (ret < 0)
		return ret;
	/* Whether the guest listens or not: it reads the ID when it does. */
	vdev_lock(&pm->vdev);
	(void)acpi_pm_gpe(pm->vdev.state, PC_ACPI_GPE_VMGENID);
	vdev_unlock(&pm->vdev);
	return 0;
}

int
machine_keyboard(struct machine *m, const uint8_t *set2, size_t len)
{
	struct machine_device *md = machine_device(m, "i8042");
	int ret;

	vdev_lock(&md->vdev);
	ret = i8042_key(md->vdev.state, set2, len);
	vdev_unlock(&md->vdev);
	return ret;
}

int
machine_mouse(struct machine *m, int dx, int dy, int dz, unsigned int buttons)
{
	struct machine_device *md = machine_device(m, "i8042");
	int ret;

	vdev_lock(&md->vdev);
	ret = i8042_mouse(md->vdev.state, dx, dy, dz, buttons);
	vdev_unlock(&md->vdev);
	return ret;
}

/*
 * The loop's side of fb_lock.  A vCPU moving the slot holds it across
 * KVM_SET_USER_MEMORY_REGION, which waits for every vCPU to leave KVM;
 * one may be stopped on a write-protect fault only the loop resolves
 * (guest-display.h), so the loop never waits for the lock: -EAGAIN,
 * and the display tries again at its next refresh.
 */
static int
machine_fb_trylock(struct machine *m)
{
	return pthread_mutex_trylock(&m->fb_lock) == 0 ? 0 : -EAGAIN;
}

int
machine_fb_dirty(struct machine *m, uint64_t *bitmap, size_t words)
{
	size_t n = (m->fb.size / 4096 + 63) / 64, i;
	int ret = 0;

	if (m->fb.hva == NULL || !m->fb.dirty_log)
		return -ENODEV;
	if (words < n)
		return -EINVAL;
	if ((ret = machine_fb_trylock(m)) < 0)
		return ret;
	if (m->fb_moved) {
		/* Writes before the move went with the old slot. */
		for (i = 0; i < n; i++)
			bitmap[i] = ~0ULL;
		m->fb_moved = false;
	}
	if (m->fb_mapped)
		ret = kvm_get_dirty_log(m->vm_fd, MACHINE_SLOT_FB,
		    m->fb_dirty_bits);
	for (i = 0; ret == 0 && m->fb_mapped && i < n; i++)
		bitmap[i] |= m->fb_dirty_bits[i];
	pthread_mutex_unlock(&m->fb_lock);
	return ret;
}

int
machine_fb_log(struct machine *m, bool on)
{
	int ret = 0;

	if (m->fb.hva == NULL)
		return -ENODEV;
	if ((ret = machine_fb_trylock(m)) < 0)
		return ret;
	if (m->fb.dirty_log != on && m->fb_mapped)
		ret = kvm_set_memory_flags(m->vm_fd, MACHINE_SLOT_FB,
		    m->fb_gpa, m->fb.size, m->fb.hva,
		    on ? KVM_MEM_LOG_DIRTY_PAGES : 0);
	if (ret == 0)
		m->fb.dirty_log = on;
	pthread_mutex_unlock(&m->fb_lock);
	return ret;
}

int
machine_fb_place(struct machine *m, bool on, uint64_t gpa)
{
	int ret = 0;

	if (m->fb.hva == NULL)
		return -ENODEV;
	pthread_mutex_lock(&m->fb_lock);
	if (m->fb_mapped && on && gpa == m->fb_gpa)
		goto out;
	if (m->fb_mapped) {
		/* A slot of size 0 is no slot (KVM's API). */
		ret = kvm_set_memory_flags(m->vm_fd, MACHINE_SLOT_FB,
		    m->fb_gpa, 0, m->fb.hva, 0);
		if (ret < 0)
			goto out;
		m->fb_mapped = false;
		m->fb_moves++;
	}
	if (on) {
		ret = kvm_set_memory_flags(m->vm_fd, MACHINE_SLOT_FB, gpa,
		    m->fb.size, m->fb.hva,
		    m->fb.dirty_log ? KVM_MEM_LOG_DIRTY_PAGES : 0);
		if (ret < 0) {
			m->fb_place_failures++;
			goto out;
		}
		m->fb_gpa = gpa;
		m->fb_mapped = true;
		m->fb_moves++;
	}
	m->fb_moved = m->fb_movable;
out:
	pthread_mutex_unlock(&m->fb_lock);
	return ret;
}

/* Racy by nature (a vCPU may move it): for diagnostics. */
static uint64_t
machine_fb_address(const void *src)
{
	const struct machine *m = src;

	return __atomic_load_n(&m->fb_mapped, __ATOMIC_RELAXED) ?
	    __atomic_load_n(&m->fb_gpa, __ATOMIC_RELAXED) : 0;
}

int
machine_fb_mode(struct machine *m, struct machine_fb_mode *mode)
{
	struct bochs_display_mode bm;

	if (m->fb.hva == NULL)
		return -ENODEV;
	if (m->fb_dev == NULL) {
		*mode = (struct machine_fb_mode){ true, m->fb.width,
		    m->fb.height, m->fb.stride, 0 };
		return 0;
	}
	vdev_lock(&m->fb_dev->vdev);
	bochs_display_get_mode(m->fb_dev->vdev.state, &bm);
	vdev_unlock(&m->fb_dev->vdev);
	*mode = (struct machine_fb_mode){ bm.enabled, bm.width, bm.height,
	    bm.stride, bm.offset };
	return 0;
}

void
machine_device_diag(struct machine *m, struct machine_device *md,
    struct device_diag *d)
{
	if (md->bd->ops->diag == NULL)
		return;
	vdev_lock(&md->vdev);
	md->bd->ops->diag(md->vdev.state, d);
	if (md->bd->bus == BOARD_PCI)
		devhost_device_diag(&md->host, d);
	vdev_unlock(&md->vdev);
}

int
machine_get_ioapic(struct machine *m, struct machine_ioapic *io)
{
	struct kvm_irqchip chip = { .chip_id = KVM_IRQCHIP_IOAPIC };
	unsigned int i;
	int ret;

	if ((ret = kvm_ioctl(m->vm_fd, KVM_GET_IRQCHIP, &chip)) < 0)
		return ret;
	io->irr = chip.chip.ioapic.irr;
	for (i = 0; i < PC_IOAPIC_PINS; i++)
		io->redir[i] = chip.chip.ioapic.redirtbl[i].bits;
	return 0;
}

#define MACHINE_IO_FIGURE(key, help, member)				\
	{ key, NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE, help,		\
	    FIGURE_AT(struct machine, member) }

static const struct figure machine_unknown_io_rows[] = {
	MACHINE_IO_FIGURE("pio_reads", "Port reads no device took",
	    pio.unknown_reads),
	MACHINE_IO_FIGURE("pio_writes", "Port writes no device took",
	    pio.unknown_writes),
	MACHINE_IO_FIGURE("mmio_reads", "MMIO reads no device took",
	    mmio.unknown_reads),
	MACHINE_IO_FIGURE("mmio_writes", "MMIO writes no device took",
	    mmio.unknown_writes),
};

const struct figure_table machine_unknown_io_figures =
    FIGURE_TABLE(machine_unknown_io_rows);

struct machine_vcpu_state_io {
	struct machine *m;
	struct vcpu *v;
	struct vcpu_state *get;
	const struct vcpu_state *set;
	char *err;
	size_t errlen;
};

static int
machine_vcpu_state_io(void *arg)
{
	struct machine_vcpu_state_io *io = arg;

	if (io->get != NULL)
		return vcpu_state_capture(io->m->kvm_fd, io->m->vm_fd,
		    io->v->fd, io->get, io->err, io->errlen);
	return vcpu_state_restore(io->m->vm_fd, io->v->fd, io->set, io->err,
	    io->errlen);
}

static int
machine_vcpu_state_run(struct machine *m, unsigned int index,
    struct machine_vcpu_state_io *io)
{
	int rc;

	if (index >= m->nvcpus) {
		snprintf(io->err, io->errlen, "no vCPU %u", index);
		return -EINVAL;
	}
	io->m = m;
	io->v = &m->vcpus[index];
	rc = runctl_while_paused(&m->rc, machine_vcpu_state_io, io);
	if (rc == -EBUSY)
		snprintf(io->err, io->errlen, "the machine is not paused");
	return rc;
}

int
machine_vcpu_state_get(struct machine *m, unsigned int index,
    struct vcpu_state *st, char *err, size_t errlen)
{
	struct machine_vcpu_state_io io = { .get = st, .err = err,
	    .errlen = errlen };

	return machine_vcpu_state_run(m, index, &io);
}

int
machine_vcpu_state_set(struct machine *m, unsigned int index,
    const struct vcpu_state *st, char *err, size_t errlen)
{
	struct machine_vcpu_state_io io = { .set = st, .err = err,
	    .errlen = errlen };

	return machine_vcpu_state_run(m, index, &io);
}

static const struct figure machine_fb_rows[] = {
	{ "address", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Where the framebuffer's slot is (0: nowhere)", NULL, 0, 0,
	    machine_fb_address, 0, NULL },
	{ "moves", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Framebuffer slots placed or removed", NULL,
	    FIGURE_AT(struct machine, fb_moves) },
	{ "place_failures", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Framebuffer places KVM refused", NULL,
	    FIGURE_AT(struct machine, fb_place_failures) },
};

const struct figure_table machine_fb_figures = FIGURE_TABLE(machine_fb_rows);

/*
 * The board's devices in a snapshot: in board order, each device
 * present (each must have save and load ops) as one section "device"
 * that names it and holds what its save wrote (one section or
 * several).  The board table is the one list walked both ways; a state
 * for another board (another device, or one more or fewer) is refused
 * by name.
 */
struct machine_device_state {
	uint32_t namelen;
	uint8_t name[DEV_STATE_NAME_MAX];
	uint32_t len;
	uint8_t state[DEV_STATE_VALUE_MAX];
};

static const struct dev_state_field machine_device_state_fields[] = {
	{ .name = "name", .type = DEV_STATE_BYTES, .flags = DEV_STATE_VARLEN,
	    DEV_STATE_AT(struct machine_device_state, name),
	    .count_offset = offsetof(struct machine_device_state, namelen) },
	{ .name = "state", .type = DEV_STATE_BYTES, .flags = DEV_STATE_VARLEN,
	    DEV_STATE_AT(struct machine_device_state, state),
	    .count_offset = offsetof(struct machine_device_state, len) },
};

static const struct dev_state_table machine_device_state_table = {
	DEV_STATE_TABLE("device", 1, struct machine_device_state,
	    machine_device_state_fields),
};

/*
 * Whether the board device md is present, and so has a section: 0 or 1,
 * or -EOPNOTSUPP (err naming it) when it is present but cannot save or
 * load itself, so that a snapshot never silently leaves a device out.
 */
static int
machine_device_keeps_state(const struct machine_device *md, char *err,
    size_t errlen)
{
	if (md->vdev.state == NULL)
		return 0;
	if (md->bd->ops->save == NULL || md->bd->ops->load == NULL) {
		snprintf(err, errlen, "%s: the device cannot save its state",
		    md->bd->name);
		return -EOPNOTSUPP;
	}
	return 1;
}

int64_t
machine_devices_clock(struct machine *m)
{
	return devhost_vm_clock(m->dh);
}

int
machine_devices_clock_set(struct machine *m, int64_t ns)
{
	return devhost_set_vm_clock(m->dh, ns);
}

int
machine_devices_save(struct machine *m, struct dev_state_buf *out,
    char *err, size_t errlen)
{
	struct machine_device_state *st = malloc(sizeof(*st));
	struct dev_state_buf one = { 0 };
	struct machine_device *md;
	size_t i;
	int rc = 0;

	if (st == NULL)
		return -ENOMEM;
	for (i = 0; rc == 0 && i < m->ndevs; i++) {
		md = &m->devs[i];
		if ((rc = machine_device_keeps_state(md, err, errlen)) <= 0)
			continue;
		one.len = 0;
		vdev_lock(&md->vdev);
		rc = md->bd->ops->save(md->vdev.state, &one);
		vdev_unlock(&md->vdev);
		if (rc == 0 && one.len > sizeof(st->state))
			rc = -E2BIG;
		if (rc < 0) {
			snprintf(err, errlen, "%s: %s", md->bd->name,
			    strerror(-rc));
			break;
		}
		st->namelen = (uint32_t)strlen(md->bd->name);
		memcpy(st->name, md->bd->name, st->namelen);
		st->len = (uint32_t)one.len;
		memcpy(st->state, one.data, one.len);
		rc = dev_state_save(&machine_device_state_table, st, out);
	}
	dev_state_buf_free(&one);
	free(st);
	return rc;
}

int
machine_devices_load(struct machine *m, const void *buf, size_t len,
    char *err, size_t errlen)
{
	struct machine_device_state *st = malloc(sizeof(*st));
	struct dev_state_error derr = { "" };
	const uint8_t *p = buf;
	struct machine_device *md;
	size_t i, at = 0;
	long n;
	int rc = 0;

	if (st == NULL)
		return -ENOMEM;
	for (i = 0; i < m->ndevs; i++) {
		md = &m->devs[i];
		if ((rc = machine_device_keeps_state(md, err, errlen)) < 0)
			break;
		if (rc == 0)
			continue;
		rc = 0;
		n = at < len ? dev_state_section_len(p + at, len - at) : -1;
		if (n < 0) {
			snprintf(err, errlen, "no state for %s", md->bd->name);
			rc = -ENOENT;
			break;
		}
		rc = dev_state_load(&machine_device_state_table, st, p + at,
		    (size_t)n, &derr);
		if (rc == 0 && (st->namelen != strlen(md->bd->name) ||
		    memcmp(st->name, md->bd->name, st->namelen) != 0)) {
			snprintf(derr.msg, sizeof(derr.msg), "the state of "
			    "%.*s where the board has %s", (int)st->namelen,
			    (const char *)st->name, md->bd->name);
			rc = -EINVAL;
		}
		if (rc == 0) {
			vdev_lock(&md->vdev);
			rc = md->bd->ops->load(md->vdev.state, st->state,
			    st->len, &derr);
			vdev_unlock(&md->vdev);
		}
		if (rc < 0) {
			snprintf(err, errlen, "%s: %s", md->bd->name,
			    derr.msg);
			break;
		}
		at += (size_t)n;
	}
	if (rc == 0 && at != len) {
		snprintf(err, errlen, "state for more devices than the board "
		    "has");
		rc = -EINVAL;
	}
	free(st);
	/* Each BAR where its loaded config space says (and doorbells). */
	if (rc == 0)
		pcibus_sync(&m->pci);
	return rc;
}

struct machine_restore_io {
	struct machine *m;
	struct machine_state *get;
	const struct machine_state *set;
	struct vcpu_state *const *vcpus;
	const void *devs;
	size_t devs_len;
	char *err;
	size_t errlen;
};

static int
machine_restore_io(void *arg)
{
	struct machine_restore_io *io = arg;
	struct machine *m = io->m;
	int fds[MACHINE_STATE_VCPUS_MAX];
	unsigned int i;
	int rc;

	if (m->nvcpus > MACHINE_STATE_VCPUS_MAX) {
		snprintf(io->err, io->errlen, "%u vCPUs", m->nvcpus);
		return -E2BIG;
	}
	for (i = 0; i < m->nvcpus; i++)
		fds[i] = m->vcpus[i].fd;
	if (io->get != NULL)
		return machine_state_capture(m->vm_fd, fds, m->nvcpus, io->get,
		    io->err, io->errlen);
	/* The order machine-state.h gives. */
	if ((rc = machine_state_restore_clock(m->vm_fd, fds, m->nvcpus,
	    &io->set->clock, io->err, io->errlen)) < 0 ||
	    (rc = machine_state_restore_chips(m->vm_fd, io->set, io->err,
	    io->errlen)) < 0)
		return rc;
	if (io->devs != NULL && (rc = machine_devices_load(m, io->devs,
	    io->devs_len, io->err, io->errlen)) < 0)
		return rc;
	for (i = 0; i < m->nvcpus; i++) {
		rc = vcpu_state_restore(m->vm_fd, fds[i], io->vcpus[i],
		    io->err, io->errlen);
		if (rc < 0)
			return rc;
	}
	return machine_state_restore_tsc(m->vm_fd, fds, m->nvcpus,
	    &io->set->clock, io->err, io->errlen);
}

int
machine_own_state_get(struct machine *m, struct machine_state *st, char *err,
    size_t errlen)
{
	struct machine_restore_io io = { .m = m, .get = st, .err = err,
	    .errlen = errlen };
	int rc;

	rc = runctl_while_paused(&m->rc, machine_restore_io, &io);
	if (rc == -EBUSY)
		snprintf(err, errlen, "the machine is not paused");
	return rc;
}

int
machine_restore(struct machine *m, const struct machine_state *st,
    struct vcpu_state *const *vcpus, const void *devs, size_t devs_len,
    char *err, size_t errlen)
{
	struct machine_restore_io io = { .m = m, .set = st, .vcpus = vcpus,
	    .devs = devs, .devs_len = devs_len, .err = err,
	    .errlen = errlen };
	int rc;

	rc = runctl_while_paused(&m->rc, machine_restore_io, &io);
	if (rc == -EBUSY)
		snprintf(err, errlen, "the machine is not paused");
	return rc;
}

void
machine_on_fw_cfg_dma(struct machine *m, void (*fn)(void *), void *opaque)
{
	size_t i;

	for (i = 0; i < m->ndevs; i++) {
		if (m->devs[i].bd->ops != &fw_cfg_device_ops)
			continue;
		vdev_lock(&m->devs[i].vdev);
		fw_cfg_on_first_dma(m->devs[i].vdev.state, fn, opaque);
		vdev_unlock(&m->devs[i].vdev);
	}
}
