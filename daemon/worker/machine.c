/*
 * Building, running and tearing down one guest machine.
 *
 * The device table below is the one place that says which chips a guest
 * has and where they sit, so that creation, reset and (later) restore
 * cannot drift apart.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "i8042.h"
#include "kvm.h"
#include "log.h"
#include "machine.h"
#include "rtc.h"
#include "uart.h"

/* Addresses KVM needs for its own use on Intel hosts, below 4 GiB. */
#define MACHINE_TSS_ADDR	0xfffbd000ULL
#define MACHINE_IDMAP_ADDR	0xfffbc000ULL

#define COM1_PORT	0x3f8
#define COM1_IRQ	4
#define RTC_PORT	0x70
#define RTC_IRQ		8
#define I8042_DATA_PORT	0x60
#define I8042_CMD_PORT	0x64
#define I8042_KBD_IRQ	1
#define I8042_AUX_IRQ	12
#define POST_PORT	0x80

const char *
machine_reset_reason_name(enum machine_reset_reason r)
{
	switch (r) {
	case MACHINE_RESET_I8042:
		return "i8042";
	case MACHINE_RESET_TRIPLE_FAULT:
		return "triple_fault";
	case MACHINE_RESET_SYSTEM_EVENT:
		return "system_event";
	case MACHINE_POWEROFF:
		return "poweroff";
	}
	return "unknown";
}

static void
machine_irq_set(void *opaque, unsigned int gsi, bool level)
{
	struct machine *m = opaque;
	int ret;

	ret = kvm_irq_line(m->vm_fd, gsi, level);
	if (ret < 0)
		log_debug("KVM_IRQ_LINE %u: %s", gsi, strerror(-ret));
}

static void
machine_uart_tx(void *opaque, const uint8_t *buf, size_t len)
{
	struct machine *m = opaque;

	m->host.console_tx(m->host.opaque, buf, len);
}

static void
machine_uart_rx_space(void *opaque)
{
	struct machine *m = opaque;

	if (m->host.console_rx_space != NULL)
		m->host.console_rx_space(m->host.opaque);
}

static void
machine_i8042_reset(void *opaque)
{
	machine_hold(opaque, MACHINE_RESET_I8042, NULL);
}

/* Port 0x80: POST codes.  Accepted silently; reads float high. */
static void
post_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	memset(data, 0xff, size);
}

static void
post_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
}

static const struct device_ops post_device_ops = {
	.name = "post",
	.read = post_read,
	.write = post_write,
};

static int
machine_add_devices(struct machine *m, char *err, size_t errlen)
{
	struct uart_config ucfg = {
		.irq = { machine_irq_set, m, COM1_IRQ },
		.tx = machine_uart_tx,
		.rx_space = machine_uart_rx_space,
		.opaque = m,
	};
	struct rtc_config rcfg = {
		.irq = { machine_irq_set, m, RTC_IRQ },
	};
	struct i8042_config kcfg = {
		.kbd_irq = { machine_irq_set, m, I8042_KBD_IRQ },
		.aux_irq = { machine_irq_set, m, I8042_AUX_IRQ },
		.reset_request = machine_i8042_reset,
		.opaque = m,
	};
	struct uart *uart;
	struct rtc *rtc;
	struct i8042 *kbc;
	int ret = 0;

	uart = uart_new(&ucfg);
	rtc = rtc_new(&rcfg);
	kbc = i8042_new(&kcfg);
	if (uart == NULL || rtc == NULL || kbc == NULL) {
		uart_free(uart);
		rtc_free(rtc);
		i8042_free(kbc);
		snprintf(err, errlen, "cannot create devices: out of memory");
		return -ENOMEM;
	}
	vdev_init(&m->uart, &uart_device_ops, uart);
	vdev_init(&m->rtc, &rtc_device_ops, rtc);
	vdev_init(&m->i8042, &i8042_device_ops, kbc);
	vdev_init(&m->port80, &post_device_ops, NULL);

	if ((ret = iobus_register(&m->pio, COM1_PORT, 8, &m->uart, 0)) < 0 ||
	    (ret = iobus_register(&m->pio, RTC_PORT, 2, &m->rtc, 0)) < 0 ||
	    (ret = iobus_register(&m->pio, I8042_DATA_PORT, 1, &m->i8042,
	    0)) < 0 ||
	    (ret = iobus_register(&m->pio, I8042_CMD_PORT, 1, &m->i8042,
	    4)) < 0 ||
	    (ret = iobus_register(&m->pio, POST_PORT, 1, &m->port80, 0)) < 0)
		snprintf(err, errlen, "cannot register devices: %s",
		    strerror(-ret));
	return ret;
}

/*
 * The memory-size bytes a PC BIOS leaves in CMOS (IBM AT layout), for
 * guests that look there rather than at the e820 map.
 */
static void
machine_cmos_memory(struct machine *m)
{
	struct rtc *rtc = m->rtc.state;
	uint64_t ext_kib, above16m, above4g;

	ext_kib = m->mem.low_size > BOOT_HIGH_MEM_START ?
	    (m->mem.low_size - BOOT_HIGH_MEM_START) / 1024 : 0;
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

static int
machine_map_memory(struct machine *m, uint64_t memory_mib, char *err,
    size_t errlen)
{
	uint64_t total = memory_mib << 20;
	uint64_t low = total < BOOT_PCI_HOLE_START ? total : BOOT_PCI_HOLE_START;
	uint64_t high = total - low;
	int ret;

	m->mem.low = mmap(NULL, low, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->mem.low == MAP_FAILED) {
		m->mem.low = NULL;
		snprintf(err, errlen, "cannot allocate %llu MiB of guest RAM: %s",
		    (unsigned long long)memory_mib, strerror(errno));
		return -ENOMEM;
	}
	m->mem.low_size = low;
	m->mem.zeroed = true;
	ret = kvm_set_memory(m->vm_fd, 0, 0, low, m->mem.low);
	if (ret < 0)
		goto fail;
	if (high > 0) {
		m->high = mmap(NULL, high, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m->high == MAP_FAILED) {
			m->high = NULL;
			snprintf(err, errlen,
			    "cannot allocate %llu MiB of guest RAM: %s",
			    (unsigned long long)memory_mib, strerror(errno));
			return -ENOMEM;
		}
		m->mem.high_size = high;
		ret = kvm_set_memory(m->vm_fd, 1, BOOT_HIGH_RAM_START, high,
		    m->high);
		if (ret < 0)
			goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "KVM_SET_USER_MEMORY_REGION: %s", strerror(-ret));
	return ret;
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
	struct kvm_irq_routing *r;
	unsigned int gsi, n = 0;
	int ret;

	r = calloc(1, sizeof(*r) + 64 * sizeof(struct kvm_irq_routing_entry));
	if (r == NULL)
		return -ENOMEM;
	for (gsi = 0; gsi < 16; gsi++) {
		if (gsi == 2)
			continue;
		r->entries[n++] = (struct kvm_irq_routing_entry){
			.gsi = gsi,
			.type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip.irqchip = gsi < 8 ? KVM_IRQCHIP_PIC_MASTER :
			    KVM_IRQCHIP_PIC_SLAVE,
			.u.irqchip.pin = gsi % 8,
		};
	}
	for (gsi = 0; gsi < BOOT_IOAPIC_PINS; gsi++) {
		if (gsi == 2)
			continue;
		r->entries[n++] = (struct kvm_irq_routing_entry){
			.gsi = gsi,
			.type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip.irqchip = KVM_IRQCHIP_IOAPIC,
			.u.irqchip.pin = gsi == 0 ? BOOT_MPTABLE_IRQ0_PIN : gsi,
		};
	}
	r->nr = n;
	ret = kvm_ioctl(m->vm_fd, KVM_SET_GSI_ROUTING, r);
	free(r);
	return ret < 0 ? ret : 0;
}

static int
machine_create_vm(struct machine *m, char *err, size_t errlen)
{
	static const struct {
		long cap;
		const char *name;
	} needed[] = {
		{ KVM_CAP_IRQCHIP, "in-kernel irqchip" },
		{ KVM_CAP_PIT2, "in-kernel PIT" },
		{ KVM_CAP_USER_MEMORY, "user memory" },
		{ KVM_CAP_IMMEDIATE_EXIT, "immediate exit" },
	};
	size_t i;
	int ret;

	m->kvm_fd = kvm_open();
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
	ret = kvm_set_tss_addr(m->vm_fd, MACHINE_TSS_ADDR);
	if (ret < 0) {
		snprintf(err, errlen, "KVM_SET_TSS_ADDR: %s", strerror(-ret));
		return ret;
	}
	/* Only Intel hosts use it; others may refuse and that is fine. */
	kvm_set_identity_map_addr(m->vm_fd, MACHINE_IDMAP_ADDR);
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
	struct boot_cpu boot;
	struct machine *m;
	char why[256];
	unsigned int i;
	int ret;

	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->host = *host;
	m->kvm_fd = m->vm_fd = -1;
	m->nvcpus = cfg->vcpus;
	m->state = MACHINE_RUNNING;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	iobus_init(&m->pio);
	iobus_init(&m->mmio);

	if ((ret = machine_create_vm(m, err, errlen)) < 0 ||
	    (ret = machine_map_memory(m, cfg->memory_mib, err, errlen)) < 0 ||
	    (ret = machine_add_devices(m, err, errlen)) < 0)
		goto fail;
	machine_cmos_memory(m);

	ret = boot_load(&m->mem, &args, &boot, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", cfg->kernel_name != NULL ?
		    cfg->kernel_name : cfg->kernel, why);
		goto fail;
	}

	m->vcpus = calloc(m->nvcpus, sizeof(*m->vcpus));
	if (m->vcpus == NULL) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < m->nvcpus; i++) {
		m->vcpus[i].fd = -1;
		m->vcpus[i].stats.fd = -1;
	}
	for (i = 0; i < m->nvcpus; i++) {
		ret = vcpu_init(&m->vcpus[i], m, i, i == 0 ? &boot : NULL,
		    err, errlen);
		if (ret < 0)
			goto fail;
	}
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

/* Caller holds m->lock. */
static void
machine_kick_all(struct machine *m)
{
	unsigned int i;

	for (i = 0; i < m->nvcpus; i++)
		vcpu_kick(&m->vcpus[i]);
}

static unsigned int
machine_threads(const struct machine *m)
{
	unsigned int i, n = 0;

	for (i = 0; i < m->nvcpus; i++)
		n += m->vcpus[i].thread_started;
	return n;
}

void
machine_pause(struct machine *m)
{
	unsigned int threads = machine_threads(m);

	pthread_mutex_lock(&m->lock);
	if (m->state == MACHINE_RUNNING) {
		__atomic_store_n(&m->state, MACHINE_PAUSED, __ATOMIC_RELEASE);
		machine_kick_all(m);
		while (m->vcpus_parked + m->vcpus_exited < threads)
			pthread_cond_wait(&m->cond, &m->lock);
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * Only while paused: the vCPU threads are parked outside KVM_RUN, so
 * the vCPU ioctls answer at once instead of waiting for an exit.
 */
int
machine_get_vcpu_regs(struct machine *m, unsigned int index,
    struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	int ret = -EBUSY;

	if (index >= m->nvcpus)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	if (m->state == MACHINE_PAUSED)
		ret = vcpu_get_regs(&m->vcpus[index], regs, sregs);
	pthread_mutex_unlock(&m->lock);
	return ret;
}

void
machine_resume(struct machine *m)
{
	pthread_mutex_lock(&m->lock);
	if (m->state == MACHINE_PAUSED) {
		__atomic_store_n(&m->state, MACHINE_RUNNING, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
}

void
machine_hold(struct machine *m, enum machine_reset_reason why,
    const char *fatal)
{
	bool report = false;

	pthread_mutex_lock(&m->lock);
	if (m->state == MACHINE_RUNNING || m->state == MACHINE_PAUSED) {
		__atomic_store_n(&m->state, MACHINE_HELD, __ATOMIC_RELEASE);
		machine_kick_all(m);
	}
	if (m->state == MACHINE_HELD && !m->held_reported) {
		m->held_reported = true;
		report = true;
	}
	pthread_mutex_unlock(&m->lock);

	if (!report)
		return;
	if (fatal != NULL)
		m->host.fatal(m->host.opaque, fatal);
	else
		m->host.reset(m->host.opaque, why);
}

static void
machine_stop_threads(struct machine *m)
{
	unsigned int i;

	pthread_mutex_lock(&m->lock);
	__atomic_store_n(&m->state, MACHINE_STOPPING, __ATOMIC_RELEASE);
	machine_kick_all(m);
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	for (i = 0; i < m->nvcpus; i++) {
		if (m->vcpus[i].thread_started) {
			pthread_join(m->vcpus[i].thread, NULL);
			m->vcpus[i].thread_started = false;
		}
	}
}

void
machine_free(struct machine *m)
{
	unsigned int i;

	if (m == NULL)
		return;
	if (m->vcpus != NULL) {
		machine_stop_threads(m);
		for (i = 0; i < m->nvcpus; i++)
			vcpu_destroy(&m->vcpus[i]);
		free(m->vcpus);
	}
	vdev_destroy(&m->uart);
	vdev_destroy(&m->rtc);
	vdev_destroy(&m->i8042);
	vdev_destroy(&m->port80);
	iobus_destroy(&m->pio);
	iobus_destroy(&m->mmio);
	if (m->mem.low != NULL)
		munmap(m->mem.low, m->mem.low_size);
	if (m->high != NULL)
		munmap(m->high, m->mem.high_size);
	if (m->vm_fd >= 0)
		close(m->vm_fd);
	if (m->kvm_fd >= 0)
		close(m->kvm_fd);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

size_t
machine_console_input(struct machine *m, const uint8_t *buf, size_t len)
{
	size_t n;

	vdev_lock(&m->uart);
	n = uart_receive(m->uart.state, buf, len);
	vdev_unlock(&m->uart);
	return n;
}

int
machine_ctrl_alt_del(struct machine *m)
{
	int ret;

	vdev_lock(&m->i8042);
	ret = i8042_ctrl_alt_del(m->i8042.state);
	vdev_unlock(&m->i8042);
	return ret;
}

void
machine_get_diag(struct machine *m, struct machine_diag *d)
{
	struct kvm_irqchip chip = { .chip_id = KVM_IRQCHIP_IOAPIC };
	unsigned int i;

	memset(d, 0, sizeof(*d));
	vdev_lock(&m->uart);
	uart_get_state(m->uart.state, &d->com1);
	vdev_unlock(&m->uart);
	if (kvm_ioctl(m->vm_fd, KVM_GET_IRQCHIP, &chip) < 0)
		return;
	d->ioapic_valid = true;
	d->ioapic_irr = chip.chip.ioapic.irr;
	for (i = 0; i < BOOT_IOAPIC_PINS; i++)
		d->ioapic_redir[i] = chip.chip.ioapic.redirtbl[i].bits;
}
