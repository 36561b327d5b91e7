/*
 * One guest machine: a KVM VM with its memory, in-kernel interrupt
 * controllers and PIT, the devices of its board on the I/O buses, and
 * one thread per vCPU.
 *
 * The machine never talks to the outside world itself: its devices
 * reach the worker's backends (the console) through what the worker
 * handed over in machine_config, and resets, power-offs and fatal
 * errors go to the worker through machine_host, called from whatever
 * thread held the machine (usually a vCPU's) and never blocking.
 *
 * Threads: machine_new(), machine_free() and the machine_* calls below
 * run on the worker's event loop thread; device timers run there too.
 */
#ifndef VMMD_MACHINE_H
#define VMMD_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <event2/event.h>
#include <linux/kvm.h>

#include "board.h"
#include "boot.h"
#include "devhost.h"
#include "iobus.h"
#include "kvm-stats.h"
#include "pcibus.h"
#include "pmio.h"
#include "runctl.h"
#include "vcpu.h"

/* The reason's name for events: "triple_fault", or source if given. */
const char *machine_reset_reason_name(enum machine_reset_reason r,
    const char *source);

struct machine_host {
	/* why, and for a device's request the device's name (else NULL) */
	void (*reset)(void *opaque, enum machine_reset_reason why,
	    const char *source);
	void (*fatal)(void *opaque, const char *why);
	void *opaque;
};

/*
 * The display's framebuffer, owned by the worker (it outlives resets):
 * mapped into its own memory slot, at PC_FRAMEBUFFER_ADDR for a guest
 * whose kernel vmmd loads; for a guest that boots firmware, it is the
 * memory of a bochs-display and the slot lies wherever the guest puts
 * that device's BAR 0 (machine_fb_place()); size must then be a power
 * of two from 1 MiB.  hva NULL: no display.  With dirty_log the slot
 * logs writes for machine_fb_dirty(); without, the owner tracks them
 * itself.
 */
struct machine_fb {
	void *hva;
	uint64_t size;		/* page-aligned */
	uint32_t width;
	uint32_t height;
	uint32_t stride;
	bool dirty_log;
};

/*
 * When machine_new() reached each step, and vCPU 0's thread its first
 * KVM_RUN (CLOCK_MONOTONIC ns, xs_mono_ns(); 0: not yet): where a start
 * goes (the worker's start-times.h).  first_run is stored atomically by
 * that thread.
 */
struct machine_times {
	int64_t begin;		/* machine_new() called */
	int64_t vm;		/* the VM, its memory and devices made */
	int64_t loaded;		/* the kernel loaded, the vCPUs made */
	int64_t first_run;	/* vCPU 0's thread about to run it */
};

struct machine_config {
	struct event_base *base;	/* the worker's loop */
	/* An open /dev/kvm the machine duplicates (the worker's, which
	 * cannot open files once sandboxed), or -1: open it. */
	int kvm_fd;
	/*
	 * A firmware image (/proc/self/fd/N) the guest boots instead of a
	 * kernel (firmware.h), or NULL: the kernel.
	 */
	const char *firmware;
	/*
	 * With firmware and a framebuffer: the bochs-display's VGA BIOS
	 * (/proc/self/fd/N), read at every build, or NULL: a ROM-less one.
	 */
	const char *vgabios;
	/*
	 * With firmware: the devices it boots first (none: the CD-ROM
	 * when there is one, then its own order), and its boot menu
	 * (shown when boot_menu, waiting boot_menu_ms for a key).
	 */
	struct boot_dev boot_order[BOOT_ORDER_MAX];
	unsigned int nboot_order;
	bool boot_menu;
	unsigned int boot_menu_ms;
	/* With firmware: the VM's UUID for SMBIOS (16 bytes), or NULL. */
	const uint8_t *uuid;
	const char *kernel;		/* what is loaded: /proc/self/fd/N */
	const char *initrd;
	const char *kernel_name;	/* for messages; NULL = kernel */
	const char *cmdline;
	uint64_t memory_mib;
	/*
	 * Guest RAM one memfd mapped MAP_SHARED, whose file the devices'
	 * memory regions carry (device_mem_region.fd), for a VM with a
	 * vhost-user device whose backend maps it; else (false) anonymous
	 * private memory, which nothing else can map.
	 */
	bool ram_shared;
	unsigned int vcpus;
	struct board_backends backends;	/* owned by the worker */
	struct machine_fb fb;
	/* Filled in as this machine is built and first run, or NULL. */
	struct machine_times *times;
};

/* A device of the board, as the machine holds it. */
struct machine_device {
	const struct board_device *bd;
	struct vdev vdev;		/* state and lock */
	struct devhost_device host;
};

struct machine {
	struct machine_host host;
	struct board_backends backends;
	struct machine_fb fb;
	uint64_t *fb_dirty_bits;	/* KVM_GET_DIRTY_LOG's, one per machine */
	/*
	 * Where the framebuffer's slot is.  fb_lock orders a vCPU moving
	 * it (machine_fb_place()) against the loop's dirty log calls.
	 */
	pthread_mutex_t fb_lock;
	uint64_t fb_gpa;
	bool fb_mapped;
	bool fb_movable;		/* a bochs-display's BAR 0 */
	bool fb_moved;			/* its dirty log started over */
	uint64_t fb_moves;		/* slots placed or removed */
	uint64_t fb_place_failures;	/* places KVM refused */
	struct machine_device *fb_dev;	/* the bochs-display, or NULL */
	uint8_t *vgabios;		/* its ROM image, or NULL */
	size_t vgabios_len;
	struct event_base *base;
	int kvm_fd;
	int vm_fd;

	struct boot_mem mem;
	uint8_t *high;		/* RAM above 4 GiB, or NULL */
	int ram_fd;		/* shareable RAM's memfd (low, then high), or -1 */
	struct firmware *fw;	/* a firmware's image and fw_cfg, or NULL */

	struct iobus pio;
	struct iobus mmio;
	struct pcibus pci;		/* slots 1-31 of bus 0 */
	struct pmio pmio;		/* where the ACPI PM block decodes */
	struct devhost *dh;
	struct irqroute *irqroute;	/* GSI routing: board pins and MSI */
	struct machine_device *devs;	/* in board order */
	size_t ndevs;

	struct runctl rc;
	unsigned int nvcpus;
	struct vcpu *vcpus;
	struct kvm_stats vm_stats;	/* KVM's for the VM; fd -1 if none */
};

/* The accesses no device took (pio, mmio) as figures (figure.h) of a
 * struct machine. */
extern const struct figure_table machine_unknown_io_figures;
/* Where a movable framebuffer is, and its moves (figure.h), of a struct
 * machine. */
extern const struct figure_table machine_fb_figures;

/*
 * Build the machine and load the kernel; vCPUs do not run yet.  On
 * failure returns -errno with a reason in err: -ENOEXEC/-EINVAL and
 * friends for a bad kernel or definition, other values for host errors.
 */
int machine_new(struct machine **out, const struct machine_config *cfg,
    const struct machine_host *host, char *err, size_t errlen);
/* Stops the vCPU threads if any, then releases everything.  NULL is fine. */
void machine_free(struct machine *m);
/*
 * Guest RAM's pages were replaced (a restore maps the snapshot's memory
 * file over them, snap-memory.h): gives the new mappings the advice the
 * machine gave its own, so that RAM stays out of the worker's core
 * files.  Best effort, as at the start.
 */
void machine_ram_remapped(struct machine *m);
/*
 * Guest RAM is a shared memfd (machine_config.ram_shared): a restore
 * must copy a snapshot's memory into it rather than map its file
 * privately over it, which would hide the guest's pages from the
 * backend that maps the memfd.
 */
bool machine_ram_shared(const struct machine *m);

int machine_start(struct machine *m);
/*
 * Pausing waits for every vCPU to leave KVM_RUN (a matter of
 * microseconds), hands the devices the doorbell rings the loop has not
 * taken yet (devhost_device_take_rings()) and stops the VM clock;
 * resuming restarts both.
 */
void machine_pause(struct machine *m);
void machine_resume(struct machine *m);
/*
 * A vCPU's registers and its interrupt view (vcpu.h; NULL: not
 * wanted), for diagnostics; -EBUSY unless paused.
 */
int machine_get_vcpu_regs(struct machine *m, unsigned int index,
    struct kvm_regs *regs, struct kvm_sregs *sregs,
    struct vcpu_irq_view *irq);

/*
 * The board name of the device whose range starts at addr on the port
 * (pio) or MMIO bus, or NULL.
 */
const char *machine_device_at(struct machine *m, bool pio, uint64_t addr);

/* The board's device called name, or NULL. */
struct machine_device *machine_device(struct machine *m, const char *name);

/*
 * Each network card announced on its link (net-announce.h: a RARP from
 * its MAC), for a guest that just arrived by migration; under each
 * card's lock, from the worker's loop.  How many announces went out.
 */
int machine_net_announce(struct machine *m);
/*
 * The shared directory's server ended: its virtio-fs answers the guest's
 * requests itself from now on, each failing (virtio_fs_backend_gone()).
 * From the worker's loop.  0, or -ENODEV without such a device.
 */
int machine_fs_backend_gone(struct machine *m);

/*
 * The balloon (virtio-balloon.h), under its lock, from the worker's
 * loop; -ENODEV when the guest has none.  machine_balloon() sets its
 * target, pages 4 KiB pages for the guest to give up, and with
 * stats_period_ns >= 0 how often to ask for statistics (0: only when
 * asked); machine_balloon_stats() asks the guest for new ones now (0,
 * or -EAGAIN: the guest has not given its buffer back yet).
 */
int machine_balloon(struct machine *m, uint32_t pages,
    int64_t stats_period_ns);
int machine_balloon_stats(struct machine *m);
/* The balloon's target now (a restored one's is the snapshot's). */
int machine_balloon_target(struct machine *m, uint32_t *pages);

/*
 * A media change in the CD-ROM drive (ahci_media(): be NULL ejects),
 * under the AHCI controller's lock, from the worker's loop.  0, or
 * ahci_media()'s -errno; -ENODEV without a controller.
 */
int machine_cdrom_media(struct machine *m, const struct blk_backend *be,
    bool force);
/* Whether the CD-ROM drive holds a medium: 0, 1; -ENODEV without one. */
int machine_cdrom_present(struct machine *m);

/*
 * The ACPI PM1a event block's port (control block at +4, PM timer at
 * +8): true and *base, false while it decodes nowhere (a firmware VM's
 * before firmware enables it).  Any thread; see pmio.h.
 */
bool machine_pm_base(struct machine *m, uint16_t *base);

/* Host-side device input; each takes the device's lock. */
size_t machine_console_input(struct machine *m, const uint8_t *buf,
    size_t len);
int machine_ctrl_alt_del(struct machine *m);
/*
 * Press the ACPI power button: 0 if the guest enabled it (an ACPI
 * operating system listens), -ENOTCONN if it did not (the press is
 * latched all the same, should it enable the button later).
 */
int machine_power_button(struct machine *m);

/*
 * The VM generation ID (vmgenid.h) of a kernel-loaded VM: into id, 0;
 * -ENODEV where the board has none (firmware VMs).
 */
int machine_vmgenid(struct machine *m, uint8_t id[16]);
/*
 * A new generation ID: written into guest RAM and announced by the
 * ACPI GPE the DSDT's \_GPE._E00 turns into Notify(VGEN, 0x80).  For a
 * restored guest, before it runs.  0, -ENODEV (none) or -EFAULT.
 */
int machine_vmgenid_change(struct machine *m, const uint8_t id[16]);
/* Set 2 scancodes from a host keyboard: 0 or -ENOSPC (see i8042.h). */
int machine_keyboard(struct machine *m, const uint8_t *set2, size_t len);
/* Relative mouse movement and buttons (see i8042_mouse()). */
int machine_mouse(struct machine *m, int dx, int dy, int dz,
    unsigned int buttons);
/*
 * OR the framebuffer pages written since the last call into bitmap (one
 * bit a page), for a framebuffer with dirty_log.  0 or -errno.
 */
int machine_fb_dirty(struct machine *m, uint64_t *bitmap, size_t words);
/* Start or stop logging writes to the framebuffer's slot.  0 or -errno. */
int machine_fb_log(struct machine *m, bool on);
/*
 * Map the framebuffer's slot at gpa (on), or nowhere: the one place
 * where the slot moves.  For a movable framebuffer, from the vCPU
 * that moved the BAR; the next machine_fb_dirty() reports every page.
 * 0, or -errno (KVM refused the place: the BAR then shows nothing).
 */
int machine_fb_place(struct machine *m, bool on, uint64_t gpa);

/* The picture the guest shows in the framebuffer. */
struct machine_fb_mode {
	bool enabled;		/* false: nothing set (yet) */
	uint32_t width, height, stride;
	uint64_t offset;	/* of the top left pixel in the framebuffer */
};
/*
 * For a movable framebuffer, the mode its device has now; for a fixed
 * one, the machine_fb geometry (enabled, offset 0).  -ENODEV: none.
 */
int machine_fb_mode(struct machine *m, struct machine_fb_mode *mode);

/* Each device's diagnostics (device_ops.diag), under its lock. */
void machine_device_diag(struct machine *m, struct machine_device *md,
    struct device_diag *d);

/* The IOAPIC's state, for diagnostics; -errno if KVM would not tell. */
struct machine_ioapic {
	uint32_t irr;
	uint64_t redir[PC_IOAPIC_PINS];
};
int machine_get_ioapic(struct machine *m, struct machine_ioapic *io);

/*
 * vCPU index's state (vcpu-state.h), read or written while the machine
 * is paused: -EBUSY otherwise, -EINVAL for no such vCPU, or the -errno
 * of the part KVM failed, err saying which.
 */
struct vcpu_state;
int machine_vcpu_state_get(struct machine *m, unsigned int index,
    struct vcpu_state *st, char *err, size_t errlen);
int machine_vcpu_state_set(struct machine *m, unsigned int index,
    const struct vcpu_state *st, char *err, size_t errlen);

/*
 * The machine's own state (machine-state.h), read while the machine is
 * paused; and a restore of it with each vCPU's (vcpus[i] for vCPU i,
 * all of them) and the devices' (devs, devs_len bytes of what
 * machine_devices_save wrote; NULL: the devices as they are) in
 * machine-state.h's order.  0, -EBUSY when the machine is not paused,
 * or the -errno of the part refused, err saying which.
 */
struct machine_state;
int machine_own_state_get(struct machine *m, struct machine_state *st,
    char *err, size_t errlen);
int machine_restore(struct machine *m, const struct machine_state *st,
    struct vcpu_state *const *vcpus, const void *devs, size_t devs_len,
    char *err, size_t errlen);

/*
 * The board's devices present, walked in board order, each as a
 * section "device" naming it around what its save wrote; the vCPUs
 * paused.  A save fails with the device's -errno (-EBUSY: work in
 * flight it cannot name, to be waited for), or -EOPNOTSUPP for a
 * device present without save and load ops (err naming it: a snapshot
 * never leaves a device out); a load
 * refuses a state for another board, or one a device refuses, with err
 * naming the device, and then maps the PCI BARs anew (pcibus_sync).
 */
/*
 * The devices' VM clock (devhost.h: host time the machine ran, in ns),
 * read; and set while paused, before the devices' state is loaded, to
 * the one their saved deadlines count in: 0 or -EBUSY.
 */
int64_t machine_devices_clock(struct machine *m);
int machine_devices_clock_set(struct machine *m, int64_t ns);

struct dev_state_buf;
int machine_devices_save(struct machine *m, struct dev_state_buf *out,
    char *err, size_t errlen);
int machine_devices_load(struct machine *m, const void *buf, size_t len,
    char *err, size_t errlen);

/*
 * The test build's hold of a firmware (the worker's test-hook.h):
 * fn(opaque) at the guest's first fw_cfg DMA transfer, on that vCPU's
 * thread under the device's lock (fw-cfg.h).  No effect on a machine
 * without fw_cfg.  Right after machine_new(), before the vCPUs run.
 */
void	machine_on_fw_cfg_dma(struct machine *m, void (*fn)(void *),
	    void *opaque);

#endif
