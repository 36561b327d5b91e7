/*
 * vCPU threads: initial register state, the KVM_RUN loop and exit
 * dispatch to the I/O buses.  How they are stopped and parked is the run
 * controller's business (runctl.h): the loop only asks it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm.h"
#include "log.h"
#include "vcpu.h"

#define CR0_PE		(1ULL << 0)
#define CR0_ET		(1ULL << 4)
#define CR0_PG		(1ULL << 31)
#define CR4_PAE		(1ULL << 5)
#define EFER_LME	(1ULL << 8)
#define EFER_LMA	(1ULL << 10)

#define APIC_LVT0	0x350
#define APIC_LVT1	0x360
#define APIC_DM_NMI	0x400
#define APIC_DM_EXTINT	0x700

#define MSR_IA32_MISC_ENABLE	0x1a0
#define MISC_ENABLE_FAST_STRING	(1ULL << 0)

/*
 * Firmware's start: the state a PC's CPU leaves reset in (SDM 3A 9.1.1),
 * said here rather than trusted to be KVM's: real mode, CS f000 with its
 * base at 0xffff0000, so the first fetch is at 0xfffffff0, the top of
 * the firmware image.
 */
static int
vcpu_set_reset_state(struct vcpu *v, const struct boot_cpu *b,
    struct kvm_sregs *sregs)
{
	struct kvm_segment data = {
		.base = 0, .limit = 0xffff, .selector = 0,
		.type = 0x3, .present = 1, .s = 1,
	};
	struct kvm_regs regs;
	int ret;

	sregs->cr0 = 0x60000010;	/* CD, NW, ET */
	sregs->cr3 = sregs->cr4 = 0;
	sregs->efer = 0;
	sregs->cs = (struct kvm_segment){
		.base = 0xffff0000, .limit = 0xffff, .selector = b->code_sel,
		.type = 0xb, .present = 1, .s = 1,
	};
	sregs->ds = sregs->es = sregs->fs = sregs->gs = sregs->ss = data;
	sregs->gdt.base = sregs->idt.base = 0;
	sregs->gdt.limit = sregs->idt.limit = 0xffff;
	ret = kvm_ioctl(v->fd, KVM_SET_SREGS, sregs);
	if (ret < 0)
		return ret;
	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2;
	regs.rip = b->rip;
	return kvm_ioctl(v->fd, KVM_SET_REGS, &regs);
}

static int
vcpu_set_boot_state(struct vcpu *v, const struct boot_cpu *b)
{
	struct kvm_segment code = {
		.base = 0, .limit = 0xffffffff, .selector = b->code_sel,
		.type = 0xb, .present = 1, .s = 1, .db = 1, .g = 1,
	};
	struct kvm_segment data = {
		.base = 0, .limit = 0xffffffff, .selector = b->data_sel,
		.type = 0x3, .present = 1, .s = 1, .db = 1, .g = 1,
	};
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int ret;

	ret = kvm_ioctl(v->fd, KVM_GET_SREGS, &sregs);
	if (ret < 0)
		return ret;
	if (b->mode == BOOT_CPU_RESET)
		return vcpu_set_reset_state(v, b, &sregs);
	sregs.cr0 = CR0_PE | CR0_ET;
	if (b->mode == BOOT_CPU_LONG64) {
		code.db = 0;
		code.l = 1;
		sregs.cr0 |= CR0_PG;
		sregs.cr3 = b->cr3;
		sregs.cr4 |= CR4_PAE;
		sregs.efer |= EFER_LME | EFER_LMA;
	}
	sregs.cs = code;
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = data;
	sregs.gdt.base = b->gdt_base;
	sregs.gdt.limit = b->gdt_limit;
	ret = kvm_ioctl(v->fd, KVM_SET_SREGS, &sregs);
	if (ret < 0)
		return ret;

	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2;
	regs.rip = b->rip;
	regs.rsp = b->rsp;
	regs.rsi = b->rsi;
	regs.rbx = b->rbx;
	return kvm_ioctl(v->fd, KVM_SET_REGS, &regs);
}

/*
 * What firmware does before any OS runs: FPU in its reset state and the
 * local APIC in virtual-wire mode (LINT0 ExtINT for the PIC, LINT1 NMI),
 * so PIC interrupts reach the boot CPU before the guest programs its APIC.
 */
static int
vcpu_set_firmware_state(struct vcpu *v)
{
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	struct kvm_lapic_state lapic;
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry entries[1];
	} msrs = {
		.hdr.nmsrs = 1,
		.entries[0] = { .index = MSR_IA32_MISC_ENABLE,
		    .data = MISC_ENABLE_FAST_STRING },
	};
	uint32_t *lvt;
	int ret;

	ret = kvm_ioctl(v->fd, KVM_SET_FPU, &fpu);
	if (ret < 0)
		return ret;
	ret = kvm_ioctl(v->fd, KVM_GET_LAPIC, &lapic);
	if (ret < 0)
		return ret;
	lvt = (uint32_t *)&lapic.regs[APIC_LVT0];
	*lvt = APIC_DM_EXTINT;
	lvt = (uint32_t *)&lapic.regs[APIC_LVT1];
	*lvt = APIC_DM_NMI;
	ret = kvm_ioctl(v->fd, KVM_SET_LAPIC, &lapic);
	if (ret < 0)
		return ret;
	/*
	 * KVM_SET_MSRS returns how many it set; a host that refuses one is
	 * not fatal, the guest just sees the architectural default.
	 */
	ret = kvm_ioctl(v->fd, KVM_SET_MSRS, &msrs);
	if (ret < 1)
		log_debug("vcpu %u: host refused MSR 0x%x", v->index,
		    msrs.entries[0].index);
	return 0;
}

#define VCPU_EXIT_FIGURE(kind, k)					\
	{ kind, "vmmd_vcpu_exits", FIGURE_COUNTER, FIGURE_UNIT_NONE,	\
	    "vCPU exits handled by vmmd, by kind", .label = "kind",	\
	    FIGURE_AT(struct vcpu, exits[k]) }

static const struct figure vcpu_exit_figure_rows[] = {
	VCPU_EXIT_FIGURE("io", VCPU_EXIT_IO),
	VCPU_EXIT_FIGURE("mmio", VCPU_EXIT_MMIO),
	VCPU_EXIT_FIGURE("hlt", VCPU_EXIT_HLT),
	VCPU_EXIT_FIGURE("shutdown", VCPU_EXIT_SHUTDOWN),
	VCPU_EXIT_FIGURE("system_event", VCPU_EXIT_SYSTEM_EVENT),
	VCPU_EXIT_FIGURE("intr", VCPU_EXIT_INTR),
	VCPU_EXIT_FIGURE("other", VCPU_EXIT_OTHER),
};

_Static_assert(sizeof(vcpu_exit_figure_rows) /
    sizeof(vcpu_exit_figure_rows[0]) == VCPU_EXIT_KINDS,
    "one figure per exit kind");

const struct figure_table vcpu_exit_figures =
    FIGURE_TABLE(vcpu_exit_figure_rows);

void
vcpu_clear(struct vcpu *v)
{
	memset(v, 0, sizeof(*v));
	v->fd = -1;
	v->stats.fd = -1;
	xs_vcpu_init(&v->xs);
}

int
vcpu_init(struct vcpu *v, const struct vcpu_config *cfg, char *err,
    size_t errlen)
{
	unsigned int index = cfg->index;
	int ret, size;

	vcpu_clear(v);
	v->index = index;
	v->pio = cfg->pio;
	v->mmio = cfg->mmio;
	v->rc = cfg->rc;
	v->started_ns = cfg->started_ns;
	v->fd = kvm_create_vcpu(cfg->vm_fd, index);
	if (v->fd < 0) {
		snprintf(err, errlen, "cannot create vCPU %u: %s", index,
		    strerror(-v->fd));
		return v->fd;
	}
	size = kvm_vcpu_mmap_size(cfg->kvm_fd);
	if (size < 0) {
		ret = size;
		snprintf(err, errlen, "KVM_GET_VCPU_MMAP_SIZE: %s",
		    strerror(-ret));
		goto close_fd;
	}
	v->run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd,
	    0);
	if (v->run == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map vCPU %u: %s", index,
		    strerror(errno));
		goto close_fd;
	}
	v->run_size = size;
	v->ctl.run = v->run;
	/* Diagnostics only: a kernel without them runs guests all the same. */
	(void)kvm_stats_open(&v->stats, v->fd);
	ret = cpuid_setup(cfg->kvm_fd, v->fd, index, cfg->nvcpus);
	if (ret < 0) {
		snprintf(err, errlen, "vCPU %u: cannot set CPUID: %s", index,
		    strerror(-ret));
		goto unmap;
	}
	ret = vcpu_set_firmware_state(v);
	if (ret < 0) {
		snprintf(err, errlen, "vCPU %u: cannot set initial state: %s",
		    index, strerror(-ret));
		goto unmap;
	}
	/* Application processors wait for INIT/SIPI, as on a PC. */
	if (cfg->boot != NULL) {
		ret = vcpu_set_boot_state(v, cfg->boot);
		if (ret < 0) {
			snprintf(err, errlen,
			    "vCPU %u: cannot set boot registers: %s", index,
			    strerror(-ret));
			goto unmap;
		}
	}
	return 0;

unmap:
	kvm_stats_close(&v->stats);
	munmap(v->run, v->run_size);
	v->run = v->ctl.run = NULL;
close_fd:
	close(v->fd);
	v->fd = -1;
	return ret;
}

void
vcpu_destroy(struct vcpu *v)
{
	kvm_stats_close(&v->stats);
	if (v->run != NULL)
		munmap(v->run, v->run_size);
	if (v->fd >= 0)
		close(v->fd);
	v->run = v->ctl.run = NULL;
	v->fd = -1;
}

/*
 * One more exit of kind k.  The vCPU's thread is the only writer: a
 * relaxed load and store (no locked instruction) keep readers on other
 * threads from seeing a torn value.
 */
static inline void
vcpu_count(struct vcpu *v, enum vcpu_exit_kind k)
{
	__atomic_store_n(&v->exits[k], __atomic_load_n(&v->exits[k],
	    __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/*
 * The exit handlers come in three copies, chosen once per exit
 * (vcpu_thread): untimed, timed, and timed by segments.  The untimed one
 * reads no clock and touches no statistics, the timed one reads the
 * clock twice (KVM_RUN's return, and its next entry in xs_enter); the
 * compiler folds every "if (timed)" and "if (segs)" away in them.
 */
#define VCPU_INLINE	static inline __attribute__((always_inline))

/* Which device, for the statistics, then the handler's start. */
VCPU_INLINE void
vcpu_time_device(struct vcpu *v, const struct iobus_range *r,
    enum xs_dir dir, uint64_t addr, bool segs)
{
	struct xs_pending *p = &v->xs.p;

	p->dir = dir;
	p->addr = r != NULL ? r->base : addr;
	if (segs) {
		xs_thread_begin(&v->xs);
		p->t_handler = xs_ticks();
	}
}

VCPU_INLINE void
vcpu_time_done(struct vcpu *v, bool segs)
{
	if (segs) {
		v->xs.p.t_done = xs_ticks();
		xs_thread_end();
	}
}

VCPU_INLINE void
vcpu_handle_io(struct vcpu *v, bool timed, bool segs)
{
	struct kvm_run *run = v->run;
	struct iobus *bus = v->pio;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	const struct iobus_range *r;
	bool out = run->io.direction == KVM_EXIT_IO_OUT;
	uint32_t i;

	r = iobus_lookup(bus, run->io.port, run->io.size);
	if (timed)
		vcpu_time_device(v, r, out ? XS_DIR_OUT : XS_DIR_IN,
		    run->io.port, segs);
	for (i = 0; i < run->io.count; i++, data += run->io.size) {
		if (out)
			iobus_range_write(bus, r, run->io.port, data,
			    run->io.size);
		else
			iobus_range_read(bus, r, run->io.port, data,
			    run->io.size);
	}
	if (timed)
		vcpu_time_done(v, segs);
}

VCPU_INLINE void
vcpu_handle_mmio(struct vcpu *v, bool timed, bool segs)
{
	struct kvm_run *run = v->run;
	unsigned int len = run->mmio.len;
	const struct iobus_range *r;
	uint64_t addr = run->mmio.phys_addr;

	if (len > sizeof(run->mmio.data))
		len = sizeof(run->mmio.data);
	r = iobus_lookup(v->mmio, addr, len);
	/* No device: the page, so that one row covers a probe. */
	if (timed)
		vcpu_time_device(v, r, run->mmio.is_write ? XS_DIR_OUT :
		    XS_DIR_IN, addr & ~(uint64_t)0xfff, segs);
	if (run->mmio.is_write)
		iobus_range_write(v->mmio, r, addr, run->mmio.data, len);
	else
		iobus_range_read(v->mmio, r, addr, run->mmio.data, len);
	if (timed)
		vcpu_time_done(v, segs);
}

static void
vcpu_fatal(struct vcpu *v, const char *what)
{
	struct kvm_regs regs;
	char why[256];

	if (kvm_ioctl(v->fd, KVM_GET_REGS, &regs) == 0)
		snprintf(why, sizeof(why), "vCPU %u: %s (rip 0x%llx)",
		    v->index, what, (unsigned long long)regs.rip);
	else
		snprintf(why, sizeof(why), "vCPU %u: %s", v->index, what);
	runctl_hold(v->rc, MACHINE_RESET_TRIPLE_FAULT, NULL, why);
}

/* Only from the vCPU's thread, or while it is kept out of KVM_RUN. */
int
vcpu_get_regs(struct vcpu *v, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	int ret;

	if ((ret = kvm_ioctl(v->fd, KVM_GET_REGS, regs)) < 0)
		return ret;
	return kvm_ioctl(v->fd, KVM_GET_SREGS, sregs);
}

/* The highest vector set in the APIC's 256-bit register at off, or 0. */
static uint8_t
vcpu_apic_top(const struct kvm_lapic_state *l, unsigned int off)
{
	uint32_t w;
	int i;

	/* Eight 32-bit words, 16 bytes apart (SDM vol. 3, 11.8.4). */
	for (i = 7; i >= 0; i--) {
		memcpy(&w, &l->regs[off + 16 * i], 4);
		if (w != 0)
			return (uint8_t)(32 * i + 31 - __builtin_clz(w));
	}
	return 0;
}

static uint32_t
vcpu_apic_reg(const struct kvm_lapic_state *l, unsigned int off)
{
	uint32_t w;

	memcpy(&w, &l->regs[off], 4);
	return w;
}

int
vcpu_get_irq_view(struct vcpu *v, struct vcpu_irq_view *view)
{
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events ev;
	struct kvm_mp_state mp;
	int ret;

	if ((ret = kvm_ioctl(v->fd, KVM_GET_LAPIC, &lapic)) < 0 ||
	    (ret = kvm_ioctl(v->fd, KVM_GET_VCPU_EVENTS, &ev)) < 0 ||
	    (ret = kvm_ioctl(v->fd, KVM_GET_MP_STATE, &mp)) < 0)
		return ret;
	*view = (struct vcpu_irq_view){
		.isr_top = vcpu_apic_top(&lapic, 0x100),
		.irr_top = vcpu_apic_top(&lapic, 0x200),
		.tpr = vcpu_apic_reg(&lapic, 0x80),
		.ppr = vcpu_apic_reg(&lapic, 0xa0),
		.lvtt = vcpu_apic_reg(&lapic, 0x320),
		.tmict = vcpu_apic_reg(&lapic, 0x380),
		.tmcct = vcpu_apic_reg(&lapic, 0x390),
		.injected = ev.interrupt.injected != 0,
		.inject_nr = ev.interrupt.nr,
		.mp_state = mp.mp_state,
	};
	return 0;
}

/*
 * A triple fault resets the machine and with it every trace of the
 * cause: say where the vCPU was first.  It is out of KVM_RUN here, so
 * its registers can be read.  KVM on AMD reinitializes the vCPU before
 * it reports the shutdown (the VMCB is undefined after one): then the
 * registers are those of the reset vector and say nothing.
 */
static void
vcpu_log_triple_fault(struct vcpu *v)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;

	if (vcpu_get_regs(v, &regs, &sregs) < 0) {
		log_warn("vCPU %u: triple fault", v->index);
		return;
	}
	if (sregs.cs.selector == 0xf000 && regs.rip == 0xfff0) {
		log_warn("vCPU %u: triple fault (KVM reset the vCPU before "
		    "reporting it: where it happened is lost)", v->index);
		return;
	}
	log_warn("vCPU %u: triple fault at rip 0x%llx (cs 0x%x, rsp 0x%llx, "
	    "rflags 0x%llx, cr0 0x%llx, cr2 0x%llx, cr3 0x%llx, idt 0x%llx "
	    "limit 0x%x)", v->index, (unsigned long long)regs.rip,
	    sregs.cs.selector, (unsigned long long)regs.rsp,
	    (unsigned long long)regs.rflags, (unsigned long long)sregs.cr0,
	    (unsigned long long)sregs.cr2, (unsigned long long)sregs.cr3,
	    (unsigned long long)sregs.idt.base, sregs.idt.limit);
}

/* The exits that end the run or stop the machine: rare, never inlined. */
static void __attribute__((noinline))
vcpu_dispatch_rare(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	char what[96];

	switch (run->exit_reason) {
	case KVM_EXIT_HLT:
		/* Only without an in-kernel LAPIC; just run again. */
		vcpu_count(v, VCPU_EXIT_HLT);
		break;
	case KVM_EXIT_SHUTDOWN:
		vcpu_count(v, VCPU_EXIT_SHUTDOWN);
		vcpu_log_triple_fault(v);
		runctl_hold(v->rc, MACHINE_RESET_TRIPLE_FAULT, NULL, NULL);
		break;
	case KVM_EXIT_SYSTEM_EVENT:
		vcpu_count(v, VCPU_EXIT_SYSTEM_EVENT);
		if (run->system_event.type == KVM_SYSTEM_EVENT_SHUTDOWN)
			runctl_hold(v->rc, MACHINE_POWEROFF, NULL, NULL);
		else
			runctl_hold(v->rc, MACHINE_RESET_SYSTEM_EVENT, NULL,
			    NULL);
		break;
	case KVM_EXIT_FAIL_ENTRY:
		vcpu_count(v, VCPU_EXIT_OTHER);
		snprintf(what, sizeof(what),
		    "VM entry failed (hardware reason 0x%llx)",
		    (unsigned long long)
		    run->fail_entry.hardware_entry_failure_reason);
		vcpu_fatal(v, what);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		vcpu_count(v, VCPU_EXIT_OTHER);
		snprintf(what, sizeof(what), "KVM internal error %u",
		    run->internal.suberror);
		vcpu_fatal(v, what);
		break;
	default:
		vcpu_count(v, VCPU_EXIT_OTHER);
		snprintf(what, sizeof(what), "unexpected exit reason %u",
		    run->exit_reason);
		vcpu_fatal(v, what);
		break;
	}
}

VCPU_INLINE void
vcpu_dispatch(struct vcpu *v, bool timed, bool segs)
{
	struct kvm_run *run = v->run;
	struct xs_pending *p = &v->xs.p;

	if (timed)
		p->reason = run->exit_reason;
	if (segs)
		p->t_dispatch = p->t_handler = xs_ticks();
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu_count(v, VCPU_EXIT_IO);
		vcpu_handle_io(v, timed, segs);
		return;
	case KVM_EXIT_MMIO:
		vcpu_count(v, VCPU_EXIT_MMIO);
		vcpu_handle_mmio(v, timed, segs);
		return;
	default:
		vcpu_dispatch_rare(v);
		break;
	}
	if (segs)
		p->t_done = xs_ticks();
}

/* How many exits the completion below may bring, at most. */
#define VCPU_FINISH_MAX		16

/*
 * The vCPU leaves the run loop (a pause, a hold, the end): the exit it
 * handled last is finished first.  KVM carries out the rest of an I/O
 * or MMIO exit's instruction (an IN's or a read's value into its
 * register, RIP past the instruction) only when KVM_RUN is entered
 * again, and keeps that pending work where no KVM_GET_* shows it: a
 * vCPU saved before (a snapshot, a migration) has RIP still on the
 * instruction, and once restored runs it a second time against devices
 * that already saw it (a FIFO byte read twice, a register's
 * read-to-clear bits lost).  KVM_RUN with immediate_exit set finishes
 * that work and returns EINTR without running the guest; with nothing
 * pending it returns at once.  An MMIO access split in two exits to us
 * again for its second half, which is handled here like any other.
 * Off the hot path: once per vCPU and pause.
 */
static void
vcpu_finish_exit(struct vcpu *v)
{
	unsigned int i;

	v->run->immediate_exit = 1;
	for (i = 0; i < VCPU_FINISH_MAX; i++) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno != EINTR && errno != EAGAIN)
				log_debug("vCPU %u: finishing its last exit: "
				    "%s", v->index, strerror(errno));
			return;
		}
		vcpu_dispatch(v, false, false);
	}
}

/*
 * One KVM_RUN and its exit; false when the thread must leave the run
 * loop.  timed: collect exit statistics under control word ctl; segs
 * (only with timed): by segments too.
 */
VCPU_INLINE bool
vcpu_run_once(struct vcpu *v, bool timed, bool segs, uint32_t ctl)
{
	struct xs_pending *p = &v->xs.p;
	char what[96];
	int ret;

	if (timed)
		xs_enter(&v->xs, ctl);
	if (!runctl_running(v->rc)) {
		vcpu_finish_exit(v);
		return false;
	}
	ret = ioctl(v->fd, KVM_RUN, 0);
	if (timed)
		p->t_exit = xs_ticks();
	if (ret < 0) {
		if (errno == EINTR || errno == EAGAIN) {
			vcpu_count(v, VCPU_EXIT_INTR);
			if (timed)
				p->reason = KVM_EXIT_INTR;
			if (segs)
				p->t_dispatch = p->t_handler = p->t_done =
				    p->t_exit;
			return true;
		}
		snprintf(what, sizeof(what), "KVM_RUN: %s", strerror(errno));
		vcpu_fatal(v, what);
		return false;
	}
	vcpu_dispatch(v, timed, segs);
	return true;
}

static void *
vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	char name[16];
	sigset_t set;

	/* Signals are the event loop's business, except the kick and the
	 * sandbox's SIGSYS, which must reach its handler from here. */
	sigfillset(&set);
	sigdelset(&set, SIGUSR1);
	sigdelset(&set, SIGSYS);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
	/* By itself (a prctl): naming another thread opens a /proc file,
	 * which the sandbox does not allow. */
	snprintf(name, sizeof(name), "vcpu%u", v->index);
	pthread_setname_np(pthread_self(), name);
	/* Once, before the loop: the loop itself stays untouched. */
	if (v->started_ns != NULL)
		__atomic_store_n(v->started_ns, xs_mono_ns(),
		    __ATOMIC_RELAXED);

	while (runctl_wait_runnable(v->rc, &v->ctl)) {
		for (;;) {
			uint32_t ctl = xs_ctl(&v->xs);

			/* Statistics off: this one branch is all they cost. */
			if (__builtin_expect(ctl & XS_CTL_ON, 0)) {
				if (!(ctl & XS_CTL_SEGMENTS ?
				    vcpu_run_once(v, true, true, ctl) :
				    vcpu_run_once(v, true, false, ctl)))
					break;
			} else if (!vcpu_run_once(v, false, false, 0))
				break;
		}
	}

	runctl_vcpu_exited(v->rc);
	return NULL;
}

static void
vcpu_kick_handler(int sig)
{
	(void)sig;
}

int
vcpu_start(struct vcpu *v)
{
	static const struct sigaction sa = { .sa_handler = vcpu_kick_handler };
	int ret;

	/* No SA_RESTART: the kick must interrupt KVM_RUN. */
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return -errno;
	ret = pthread_create(&v->ctl.thread, NULL, vcpu_thread, v);
	if (ret != 0)
		return -ret;
	v->ctl.thread_started = true;
	return 0;
}
