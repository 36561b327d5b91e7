/*
 * The linux suite's scenarios: the reference guest (Debian's kernel and a
 * busybox initramfs, see build-guest.sh) under a private vmmd, checked on
 * its serial console.  Runs where /dev/kvm can run a stock kernel: inside
 * the nested test host (run.sh boots it) or directly on a host with
 * hardware virtualization.
 *
 *   linux-scenarios [STEP...]
 *
 * Without arguments every step runs.  Steps: bzimage (boot the bzImage:
 * CPUs, memory, e820 map, command line), date, stream, input, pause, rtc
 * (hwclock, the RTC's interrupts, a clock set with hwclock -w checked
 * after the reboot), reboot, stop, stats (all on the bzImage guest; with
 * stats, exit statistics are on from vm.start), pvh (the PVH vmlinux, and
 * reboot with on_reboot stop), display (the bzImage guest with a screen, over
 * VNC; "screen" also prints its screenshot as base64 diagnostics), disk
 * (virtio over PCI: a file system made, written and read back across
 * two boots on a virtio disk, and /dev/hwrng from virtio-rng), qcow2
 * (two guests at once on qcow2 overlays of a compressed qcow2 image made
 * from the disk step's, which it runs too; a power cycle; qemu-img check
 * and compare afterwards), net
 * (virtio-net on a TAP in the scenarios' own network namespace: ping and
 * 1 MiB over TCP each way, see lnet.h), vsock (lvsock.h), usernet
 * (virtio-net on passt: DHCP, a forward in and the gateway out, a vmmd
 * restart, see lusernet.h), cloud (Debian's cloud image from its disk,
 * cloud-init and ssh through passt, two at once: lcloud.h), installer
 * (Debian's netboot installer from an ISO as a CD under SeaBIOS, to its
 * first screen: linstaller.h), snapshot (a guest on an overlay disk with
 * a network card snapshotted while it writes a file, stopped, restored:
 * lsnapshot.h), balloon (a 768 MiB guest with a balloon: 400 MiB taken,
 * freed and given back to the host by free page reporting, taken again;
 * its statistics in vm.info; vmctl balloon: lballoon.h), fs (a host
 * directory shared by virtio-fs, read-only too: lfs.h), migrate (the
 * guest on a disk both vmmd see, pinging and writing a file, migrated
 * over ssh:// to a second vmmd in a second network namespace:
 * lmigrate.h).
 *
 * Environment (meson or run.sh sets it): VMMD_BIN, VMMD_GUEST_DEMO,
 * VMCTL_BIN, VMMD_LINUX_GUEST (the directory build-guest.sh made);
 * VMMD_LINUX_CMDLINE replaces the guest's default command line.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <sys/resource.h>

#include "lballoon.h"
#include "ldisplay.h"
#include "lguest.h"
#include "lcloud.h"
#include "linstaller.h"
#include "lnet.h"
#include "lusernet.h"
#include "lfs.h"
#include "lvsock.h"
#include "lrtc.h"
#include "lmigrate.h"
#include "lsnapshot.h"

#define GUEST_MIB	256
#define GUEST_CPUS	2
#define STREAM_KIB	1024		/* of console output, in 64-byte lines */
#define STREAM_TAIL	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01"
#define STREAM_MS	600000
#define STALL_MS	30000		/* no output for so long: stalled */
#define INPUT_LINES	1024		/* of 64 bytes typed: 64 KiB */
#define STOP_TIMEOUT_S	120		/* vm.stop's grace period */
/* The kernel prints it once per boot, on a line of its own. */
#define BOOT_LINE	"Run /init as init process"
#define ACPID_LINE	"acpid: power button, powering off"
#define POWER_DOWN	"reboot: Power down"

static int	 nsteps;
static char	**steps;
/*
 * Switch exit statistics on, by segments, right after vm.start (the
 * stats step).
 */
static bool	 stats_from_start;

/* The stream's size: 1 MiB, or VMMD_LINUX_STREAM_KIB to experiment. */
static unsigned int
stream_lines(void)
{
	const char *v = getenv("VMMD_LINUX_STREAM_KIB");
	char *end;
	long kib = STREAM_KIB;

	if (v != NULL && *v != '\0') {
		kib = strtol(v, &end, 10);
		if (*end != '\0' || kib < 1 || kib > 64 * 1024)
			tap_bail("VMMD_LINUX_STREAM_KIB=%s: want 1 to 65536", v);
	}
	return (unsigned int)kib * 16;
}

static bool
want(const char *step)
{
	int i;

	if (nsteps == 0)
		return true;
	for (i = 0; i < nsteps; i++)
		if (strcmp(steps[i], step) == 0)
			return true;
	return false;
}

/* A check: TAP line, and the guest's console log when it failed. */
static bool
check(struct lg_vm *vm, bool cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool
check(struct lg_vm *vm, bool cond, const char *fmt, ...)
{
	char desc[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	tap_ok(cond, "%s: %s", vm->name, desc);
	if (!cond)
		lg_dump(vm, desc);
	return cond;
}

/* Text of several lines as diagnostics, one per line. */
static void
diag_lines(struct lg_vm *vm, const char *what, const char *text)
{
	const char *p, *nl;

	tap_diag("%s: %s:", vm->name, what);
	for (p = text; *p != '\0'; p = *nl ? nl + 1 : nl) {
		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		tap_diag("  %.*s", (int)(nl - p), p);
	}
}

/*
 * vm.info's "stats" (owned by *reply, which the caller puts), or NULL
 * with a diagnostic.
 */
static struct json_object *
vm_stats(struct lg_vm *vm, const char *when, struct json_object **reply)
{
	struct json_object *st;

	*reply = h_callf(vm->c, H_REPLY_MS, "vm.info",
	    "{\"name\":\"%s\"}", vm->name);
	if (json_object_object_get_ex(h_ret(*reply), "stats", &st))
		return st;
	tap_diag("%s: no stats %s", vm->name, when);
	return NULL;
}

/*
 * The VM's "stats" from vm.info, for diagnostics: a line per member,
 * and per vCPU for the per-vCPU arrays, so that none is cut short.
 */
static void
show_stats(struct lg_vm *vm, const char *when)
{
	struct json_object *r, *st;
	size_t i;

	if ((st = vm_stats(vm, when, &r)) == NULL) {
		json_object_put(r);
		return;
	}
	tap_diag("%s: stats %s:", vm->name, when);
	json_object_object_foreach(st, key, val) {
		if (!json_object_is_type(val, json_type_array)) {
			tap_diag("  %s: %s", key, json_object_to_json_string_ext(
			    val, JSON_C_TO_STRING_PLAIN));
			continue;
		}
		for (i = 0; i < json_object_array_length(val); i++)
			tap_diag("  %s[%zu]: %s", key, i,
			    json_object_to_json_string_ext(
			    json_object_array_get_idx(val, i),
			    JSON_C_TO_STRING_PLAIN));
	}
	json_object_put(r);
}

/*
 * Debian's virtio_pci driver takes MSI-X: the device's interrupts went
 * through its vectors' KVM routes and irqfds, none by KVM_SIGNAL_MSI.
 */
static void
check_msix(struct lg_vm *vm, const char *device)
{
	struct json_object *r, *o;
	long long irqfd = -1, signalled = -1, routes = -1;

	r = h_callf(vm->c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm->name);
	if (json_object_object_get_ex(h_ret(r), "stats", &o) &&
	    json_object_object_get_ex(o, "devices", &o) &&
	    json_object_object_get_ex(o, device, &o)) {
		irqfd = h_int(o, "msi_irqfd", -1);
		signalled = h_int(o, "msi_signalled", -1);
		routes = h_int(o, "msi_routes", -1);
	}
	json_object_put(r);
	check(vm, irqfd > 0 && signalled == 0 && routes > 0,
	    "%s: %lld MSI-X interrupts through irqfds, %lld by "
	    "KVM_SIGNAL_MSI, %lld vectors routed", device, irqfd, signalled,
	    routes);
}

/* stats.a.b as an integer, or -1. */
static int64_t
stat_at(struct json_object *st, const char *a, const char *b)
{
	struct json_object *o;

	if (!json_object_object_get_ex(st, a, &o))
		return -1;
	if (b != NULL && !json_object_object_get_ex(o, b, &o))
		return -1;
	return json_object_get_int64(o);
}

/* devices.com1.KEY as the worker shows it (a number or "0x..."). */
static const char *
uart_reg(struct json_object *st, const char *key)
{
	struct json_object *o;

	if (!json_object_object_get_ex(st, "devices", &o) ||
	    !json_object_object_get_ex(o, "com1", &o) ||
	    !json_object_object_get_ex(o, key, &o))
		return "?";
	return json_object_get_string(o);
}

/*
 * One line of where each layer of the console path stands: the guest's
 * UART (bytes written to THR, rises of its interrupt line, THRE
 * interrupts its driver took, IER and the line now), the worker's
 * console (bytes it logged), the client (bytes this program got), KVM's
 * exits.  Printed as the stream goes, so that if everything stops, the
 * last lines still say which layer stopped first.
 */
static void
show_path(struct lg_vm *vm, const char *when, size_t got)
{
	struct json_object *r, *st, *kvm;
	int64_t exits = 0;
	size_t i;

	if ((st = vm_stats(vm, when, &r)) == NULL) {
		json_object_put(r);
		return;
	}
	if (json_object_object_get_ex(st, "vcpu_kvm", &kvm))
		for (i = 0; i < json_object_array_length(kvm); i++)
			exits += h_int(json_object_array_get_idx(kvm, i),
			    "exits", 0);
	tap_diag("%s: %s: uart tx_bytes %s irq_rises %s thre_taken %s "
	    "ier %s iir %s irq_level %s; worker console bytes_out %" PRId64
	    "; client got %zu; KVM exits %" PRId64, vm->name, when,
	    uart_reg(st, "tx_bytes"), uart_reg(st, "irq_rises"),
	    uart_reg(st, "thre_taken"), uart_reg(st, "ier"),
	    uart_reg(st, "iir"), uart_reg(st, "irq_level"),
	    stat_at(st, "console", "bytes_out"), got, exits);
	json_object_put(r);
}

/* The last bytes the console brought, as one printable line. */
static void
show_console_tail(struct lg_vm *vm)
{
	char tail[81];
	size_t n = vm->con->len < 80 ? vm->con->len : 80;

	memcpy(tail, vm->con->buf + vm->con->len - n, n);
	tail[n] = '\0';
	tap_diag("%s: the console's last bytes: %s", vm->name, h_flat(tail));
}

/* Runs a shell command; each line of its output becomes a diagnostic. */
static void
diag_command(struct lg_vm *vm, const char *what, const char *cmd)
{
	char line[512];
	FILE *f;

	if ((f = popen(cmd, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		tap_diag("%s: %s: %s", vm->name, what, line);
	}
	pclose(f);
}

/* vmmd's log lines of note: resets, triple faults, warnings, errors. */
static void
show_daemon_log(struct lg_vm *vm)
{
	char cmd[320];

	snprintf(cmd, sizeof(cmd), "grep -E 'reset|triple|warning|error' "
	    "'%s' | tail -n 20", vm->d->log);
	diag_command(vm, "vmmd log", cmd);
}

/*
 * What each thread of the VM's worker is doing, as the kernel under it
 * sees it: name, state and where it sleeps.  A vCPU thread asleep in
 * KVM is a halted vCPU; one asleep anywhere else is stuck in vmmd.
 */
static void
show_worker_threads(struct lg_vm *vm)
{
	char cmd[256];
	pid_t pid = h_vm_pid(vm->c, vm->name);

	if (pid <= 0)
		return;
	snprintf(cmd, sizeof(cmd), "cd /proc/%d/task 2>/dev/null && "
	    "for t in *; do echo \"$t $(cat $t/comm) $(cut -d' ' -f3 $t/stat)"
	    " $(cat $t/wchan)\"; done", (int)pid);
	diag_command(vm, "worker thread", cmd);
}

/*
 * Where each vCPU stands, three times 300 ms apart: pause, vm.info's
 * vcpu_regs, resume.  A rip that does not move is a vCPU spinning.
 */
static void
sample_vcpus(struct lg_vm *vm)
{
	struct json_object *r, *st, *regs;
	size_t i;
	int k;

	for (k = 0; k < 3; k++) {
		json_object_put(h_callf(vm->c, H_REPLY_MS, "vm.pause",
		    "{\"name\":\"%s\"}", vm->name));
		r = h_callf(vm->c, H_REPLY_MS, "vm.info",
		    "{\"name\":\"%s\"}", vm->name);
		if (json_object_object_get_ex(h_ret(r), "stats", &st) &&
		    json_object_object_get_ex(st, "vcpu_regs", &regs))
			for (i = 0; i < json_object_array_length(regs); i++)
				tap_diag("%s: vCPU %zu at %s", vm->name, i,
				    json_object_to_json_string_ext(
				    json_object_array_get_idx(regs, i),
				    JSON_C_TO_STRING_PLAIN));
		json_object_put(r);
		json_object_put(h_callf(vm->c, H_REPLY_MS, "vm.resume",
		    "{\"name\":\"%s\"}", vm->name));
		h_sleep_ms(300);
	}
}

/*
 * Where the vCPUs' exits went for one second, from the kvm_exit
 * tracepoint of the kernel the scenarios run on (where tracefs can be
 * had): reason and guest address, the most frequent first.  Tells a
 * guest spinning on a lock from one waiting for an interrupt.
 */
static void
trace_exits(struct lg_vm *vm)
{
	static const char cmd[] =
	    "t=/sys/kernel/tracing; "
	    "[ -f $t/trace ] || mount -t tracefs tracefs $t 2>/dev/null; "
	    "e=$t/events/kvm/kvm_exit/enable; [ -w $e ] || exit 0; "
	    "echo >$t/trace; echo 1 >$e; sleep 1; echo 0 >$e; "
	    "grep -o 'vcpu [0-9]* reason [A-Za-z_0-9]* rip 0x[0-9a-f]*' "
	    "$t/trace | sort | uniq -c | sort -rn | head -n 12";

	diag_command(vm, "kvm_exit in 1 s", cmd);
}

/* The guest resets the worker has seen (vm.info's stats), or -1. */
static int64_t
vm_resets(struct lg_vm *vm)
{
	struct json_object *r, *st;
	int64_t n = -1;

	r = h_callf(vm->c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm->name);
	if (json_object_object_get_ex(h_ret(r), "stats", &st))
		n = h_int(st, "reboots", -1);
	json_object_put(r);
	return n;
}

/*
 * A guest that resets on its own (a triple fault, say) makes the steps
 * after it meaningless: say so where it happened (a line only then).
 */
static void
no_reset(struct lg_vm *vm, const char *during, int64_t *resets)
{
	int64_t n = vm_resets(vm);

	if (n > *resets)
		check(vm, false, "the guest reset %" PRId64 " time(s) on its own "
		    "during %s (vmmd's log says why)", n - *resets, during);
	*resets = n;
}

/* ------------------------------------------------------------------ */
/* Boot and what the guest sees */

/*
 * Keeps the kernel's messages (but emergencies) off the console from now
 * on, so that none cuts into what the scenarios wait for; dmesg has them.
 */
static bool
quiet_kernel(struct lg_vm *vm)
{
	char *out;
	bool ok;
	int st;

	out = lg_cmd(vm, "dmesg -n 1", &st, LG_CMD_MS);
	ok = out != NULL && st == 0;
	free(out);
	return check(vm, ok, "dmesg -n 1 (status %d)", st);
}

/*
 * Creates and starts name with kernel (a file of the guest directory)
 * and attaches its console; boot_end() then waits for the guest.  Two
 * guests boot at once with boot_begin() for each, then boot_end() for
 * each: a console's output waits in its connection meanwhile.
 */
static bool
boot_begin(struct lg_vm *vm, const char *kernel, const char *on_reboot,
    const char *cmdline, const char *extra)
{
	unsigned int mib = vm->mib != 0 ? vm->mib : GUEST_MIB;
	double t0;
	int r;

	r = h_create(vm->c, vm->name, "\"kernel\":\"%s\",\"initrd\":\"%s\","
	    "\"cmdline\":\"%s\",\"memory_mib\":%u,\"vcpus\":%d,"
	    "\"on_reboot\":\"%s\"%s", lg_guest_file(kernel),
	    lg_guest_file("initramfs.cpio.gz"), cmdline, mib,
	    GUEST_CPUS, on_reboot, extra);
	if (!check(vm, r == 0, "created (%s, %d vCPUs, %u MiB, on_reboot %s)",
	    kernel, GUEST_CPUS, mib, on_reboot))
		return false;
	t0 = h_now_ms();
	vm->t0 = t0;
	r = h_start(vm->c, vm->name);
	if (!check(vm, r == 0, "vm.start replies (%.1f s)",
	    (h_now_ms() - t0) / 1e3))
		return false;
	if (stats_from_start) {
		struct json_object *st = h_callf(vm->c, H_REPLY_MS,
		    "vm.stats", "{\"name\":\"%s\",\"enable\":true,"
		    "\"segments\":true}", vm->name);

		check(vm, h_ret(st) != NULL, "exit statistics on from the "
		    "start");
		json_object_put(st);
	}
	return check(vm, lg_attach(vm) == 0, "console attached");
}

/*
 * Waits for the banner and the shell of a guest boot_begin() started,
 * within LG_BOOT_MS of its vm.start, and quiets its kernel.
 */
static bool
boot_end(struct lg_vm *vm)
{
	double t0 = vm->t0;
	int64_t resets;
	int left, r;

	left = LG_BOOT_MS - (int)(h_now_ms() - t0);
	r = lg_expect_user(vm, LG_BANNER, left > LG_CMD_MS ? left : LG_CMD_MS);
	if (!check(vm, r == 0, "boots to the initramfs' banner (%.1f s)",
	    (h_now_ms() - t0) / 1e3)) {
		show_stats(vm, "when the boot failed");
		return false;
	}
	r = lg_wait_shell(vm, LG_BOOT_MS - (int)(h_now_ms() - t0));
	if (!check(vm, r == 0, "shell on the serial console answers "
	    "(%.1f s after vm.start)", (h_now_ms() - t0) / 1e3))
		return false;
	resets = 0;
	no_reset(vm, "its boot", &resets);
	return quiet_kernel(vm);
}

static bool
boot_with(struct lg_vm *vm, const char *kernel, const char *on_reboot,
    const char *cmdline, const char *extra)
{
	return boot_begin(vm, kernel, on_reboot, cmdline, extra) &&
	    boot_end(vm);
}

static bool
boot(struct lg_vm *vm, const char *kernel, const char *on_reboot,
    const char *cmdline)
{
	return boot_with(vm, kernel, on_reboot, cmdline, "");
}

/* Parses "BIOS-e820: [mem 0xA-0xB] usable" lines; usable bytes. */
static uint64_t
e820_usable(const char *log, int *nentries, bool *from_zero)
{
	const char *p = log;
	uint64_t usable = 0, a, b;
	char type[32];

	*nentries = 0;
	*from_zero = false;
	while ((p = strstr(p, "BIOS-e820: [mem ")) != NULL) {
		p += strlen("BIOS-e820: [mem ");
		if (sscanf(p, "%" SCNx64 "-%" SCNx64 "] %31s", &a, &b,
		    type) != 3)
			continue;
		(*nentries)++;
		if (strcmp(type, "usable") == 0 && b >= a) {
			usable += b - a + 1;
			if (a == 0)
				*from_zero = true;
		}
	}
	return usable;
}

static void
check_platform(struct lg_vm *vm, const char *cmdline)
{
	char *out, *p, want_line[2300];
	uint64_t usable;
	unsigned long avail, total;
	long kib;
	int st, n;
	bool zero;

	out = lg_cmd(vm, "grep -c ^processor /proc/cpuinfo", &st, LG_CMD_MS);
	n = out ? atoi(out) : -1;
	check(vm, n == GUEST_CPUS, "/proc/cpuinfo shows %d CPUs (want %d)",
	    n, GUEST_CPUS);
	free(out);

	out = lg_cmd(vm, "free -k | grep ^Mem:", &st, LG_CMD_MS);
	kib = out && strncmp(out, "Mem:", 4) == 0 ? atol(out + 4) : -1;
	/* What the kernel keeps for itself is not in free's total. */
	check(vm, kib > (GUEST_MIB - 96) * 1024L && kib <= GUEST_MIB * 1024L,
	    "free shows %ld KiB total of %d MiB", kib, GUEST_MIB);
	free(out);

	out = lg_cmd(vm, "dmesg | grep -e BIOS-e820 -e 'Command line:' -e "
	    "'Memory: ' -e 'ACPI' -e 'Power Button'", &st, LG_CMD_MS);
	if (out == NULL) {
		check(vm, false, "dmesg answers");
		return;
	}
	diag_lines(vm, "guest kernel log", out);
	usable = e820_usable(out, &n, &zero);
	/* Only the legacy hole below 1 MiB may be missing from the RAM. */
	check(vm, n > 0 && zero && usable <= (uint64_t)GUEST_MIB << 20 &&
	    usable >= ((uint64_t)GUEST_MIB << 20) - (1 << 20),
	    "kernel log shows the e820 map (%d entries, %" PRIu64 " KiB "
	    "usable from 0)", n, usable >> 10);
	p = strstr(out, "Memory: ");
	avail = total = 0;
	if (p != NULL)
		sscanf(p, "Memory: %luK/%luK", &avail, &total);
	check(vm, total > (GUEST_MIB - 1) * 1024UL &&
	    total <= GUEST_MIB * 1024UL,
	    "kernel counts %luK of RAM (%luK available)", total, avail);
	/* Both loaders point the kernel at the RSDP (acpi_rsdp_addr, PVH's
	 * rsdp_paddr); the tables and the power button work. */
	check(vm, strstr(out, "A valid RSDP was not found") == NULL &&
	    strstr(out, "ACPI: RSDP 0x00000000000E0000") != NULL &&
	    strstr(out, "ACPI: Using IOAPIC for interrupt routing") != NULL,
	    "kernel log: ACPI found at 0xe0000, interrupts through the IOAPIC");
	check(vm, strstr(out, "ACPI Error") == NULL &&
	    strstr(out, "ACPI BIOS Error") == NULL &&
	    strstr(out, "ACPI Warning") == NULL,
	    "kernel log: no ACPI error or warning");
	check(vm, strstr(out, "input: Power Button as") != NULL,
	    "kernel log: the ACPI power button is an input device");
	snprintf(want_line, sizeof(want_line), "Command line: %s\n", cmdline);
	check(vm, strstr(out, want_line) != NULL,
	    "kernel log shows the command line vmmd gave it");
	free(out);
}

static void
check_date(struct lg_vm *vm)
{
	time_t t0, t1;
	char *out;
	long g;
	int st;

	/* The guest read its clock between t0 and t1 (whole seconds). */
	t0 = time(NULL);
	out = lg_cmd(vm, "date +%s", &st, LG_CMD_MS);
	t1 = time(NULL);
	g = out != NULL ? atol(out) : -1;
	check(vm, g >= (long)t0 - 2 && g <= (long)t1 + 2,
	    "date in the guest (%ld) within 2 s of the host's (%ld..%ld)",
	    g, (long)t0, (long)t1);
	free(out);
}

/* ------------------------------------------------------------------ */
/* User and system CPU time this process has used, in seconds. */
static double
cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The stream's console output, as the guest makes it. */

static char *
stream_expected(size_t *lenp)
{
	unsigned int i, lines = stream_lines();
	size_t len = (size_t)lines * 64, o = 0;
	char *buf = malloc(len + 1);

	if (buf == NULL)
		tap_bail("out of memory");
	for (i = 0; i < lines; i++)
		o += (size_t)snprintf(buf + o, len + 1 - o, "%08d %s\n", i,
		    STREAM_TAIL);
	*lenp = o;
	return buf;
}

/* Compares what arrived between the markers with the expected bytes. */
static bool
stream_compare(struct lg_vm *vm, const char *where, const char *hay,
    size_t haylen, const char *begin, const char *end, const char *exp,
    size_t explen)
{
	const char *b, *e;
	size_t len, i;

	b = memmem(hay, haylen, begin, strlen(begin));
	if (b == NULL)
		return check(vm, false, "the stream in %s: no start marker",
		    where);
	b += strlen(begin);
	e = memmem(b, haylen - (size_t)(b - hay), end, strlen(end));
	if (e == NULL)
		return check(vm, false, "the stream in %s: no end marker",
		    where);
	len = (size_t)(e - b);
	for (i = 0; i < len && i < explen && b[i] == exp[i]; i++)
		;
	if (len == explen && i == len)
		return check(vm, true, "the stream intact in %s (%zu bytes, "
		    "CRC-32 %08x)", where, len, lg_crc32(b, len));
	tap_diag("%s: %zu bytes between the markers, want %zu; first "
	    "difference at byte %zu", where, len, explen, i);
	{
		char got[48], wnt[48];
		size_t n = len - i < 40 ? len - i : 40;

		memcpy(got, b + i, n);
		got[n] = '\0';
		n = explen - i < 40 ? explen - i : 40;
		memcpy(wnt, exp + i, n);
		wnt[n] = '\0';
		tap_diag("  got:  %s", h_flat(got));
		tap_diag("  want: %s", h_flat(wnt));
	}
	return check(vm, false, "the stream intact in %s", where);
}

static void
check_stream(struct lg_vm *vm)
{
	char cmd[512], begin[32], end[32], *exp, *out, *log;
	const char *vmctl = getenv("VMCTL_BIN");
	size_t explen, loglen;
	unsigned int n;
	unsigned long crc, size;
	struct h_proc p = { .pid = 0 };
	double t0, dt, shown, moved, cpu0;
	size_t start, last;
	int stalls = 0;
	bool have_vmctl = vmctl != NULL && *vmctl != '\0';
	int st, r;

	exp = stream_expected(&explen);
	snprintf(cmd, sizeof(cmd), "awk 'BEGIN { for (i = 0; i < %u; i++) "
	    "printf \"%%08d %s\\n\", i }' >/tmp/stream; crc32 /tmp/stream; "
	    "wc -c </tmp/stream",
	    (unsigned int)(explen / 64), STREAM_TAIL);
	out = lg_cmd(vm, cmd, &st, LG_CMD_MS);
	crc = size = 0;
	if (out != NULL)
		sscanf(out, "%lx %*s %lu", &crc, &size);
	free(out);
	if (!check(vm, st == 0 && crc == lg_crc32(exp, explen) &&
	    size == explen, "the guest made the %zu KiB pattern (CRC-32 "
	    "%08lx, %lu bytes; want %08x, %zu)", explen / 1024, crc, size,
	    lg_crc32(exp, explen), explen)) {
		free(exp);
		return;
	}

	if (have_vmctl) {
		char *argv[] = { (char *)vmctl, "-s", vm->d->sock, "console",
		    vm->name, NULL };
		char seen[32];

		h_spawn(&p, argv);
		/* Attached once the replay shows the last command's end. */
		snprintf(seen, sizeof(seen), "=END-%u-", vm->seq);
		if (h_proc_expect(&p, seen, LG_CMD_MS) != 0)
			tap_diag("vmctl console: no replay of '%s'", seen);
	} else {
		tap_diag("VMCTL_BIN not set: no vmctl console attached");
	}

	/*
	 * Raw output (no \n -> \r\n) so the bytes must arrive as they are;
	 * the kernel's own messages kept off the console meanwhile.  The
	 * soft-lockup watchdog is off during the stream: every byte is a VM
	 * exit, which under emulated nested virtualization costs tens of
	 * microseconds, so the printing CPU can spend more than its 20 s
	 * threshold in the serial driver, and the watchdog's emergency
	 * message (which dmesg -n cannot silence) would land in the stream.
	 */
	n = lg_seq(vm);
	snprintf(begin, sizeof(begin), "=START-%u=\n", n);
	snprintf(end, sizeof(end), "=STOP-%u=", n);
	snprintf(cmd, sizeof(cmd), "dmesg -n 1; "
	    "echo 0 >/proc/sys/kernel/soft_watchdog; stty -opost; echo "
	    "=S\"\"TART-%u=; cat /tmp/stream; echo =S\"\"TOP-%u=; stty opost; "
	    "echo 1 >/proc/sys/kernel/soft_watchdog\n", n, n);
	show_stats(vm, "before the stream");
	cpu0 = cpu_seconds();
	t0 = h_now_ms();
	lg_send(vm, cmd);
	r = -1;
	start = last = vm->con->len;
	shown = moved = t0;
	while (h_now_ms() - t0 < STREAM_MS) {
		/* The end marker is not in what was searched already. */
		if (vm->con->len > vm->con->mark + strlen(end))
			vm->con->mark = vm->con->len - strlen(end) + 1;
		r = lg_expect(vm, end, 1000, true);
		if (have_vmctl)
			h_proc_pump(&p, 0);
		if (r == 0 || vm->con->eof)
			break;
		if (vm->con->len != last) {
			last = vm->con->len;
			moved = h_now_ms();
		} else if (h_now_ms() - moved >= STALL_MS) {
			/*
			 * A key press makes the guest's UART driver look at
			 * the transmitter again: if output resumes, the
			 * transmitter's interrupt was what went missing.
			 */
			stalls++;
			tap_diag("%s: the stream stalled at %zu bytes for %d s; "
			    "sending a newline", vm->name, last - start,
			    STALL_MS / 1000);
			show_path(vm, "at the stall", vm->con->len);
			show_console_tail(vm);
			show_stats(vm, "at the stall");
			trace_exits(vm);
			show_worker_threads(vm);
			show_daemon_log(vm);
			sample_vcpus(vm);
			lg_send(vm, "\n");
			moved = h_now_ms();
			if (stalls == 2)
				break;
		}
		if (h_now_ms() - shown >= 30000) {
			shown = h_now_ms();
			tap_diag("%s: %zu bytes of the stream after %.0f s",
			    vm->name, vm->con->len - start, (shown - t0) / 1e3);
			show_path(vm, "path", vm->con->len);
		}
	}
	check(vm, stalls == 0, "the stream never stalled for %d s (%d times)",
	    STALL_MS / 1000, stalls);
	dt = (h_now_ms() - t0) / 1e3;
	/* The reader shares the test host's CPUs with the guest. */
	tap_diag("%s: this program used %.1f s of CPU while the stream ran",
	    vm->name, cpu_seconds() - cpu0);
	show_path(vm, "after the stream", vm->con->len);
	show_stats(vm, "after the stream");
	if (check(vm, r == 0, "the stream printed by the guest arrives "
	    "(%zu bytes in %.1f s, %.1f KiB/s)", vm->con->len - start, dt,
	    (vm->con->len - start) / 1024.0 / dt)) {
		stream_compare(vm, "the attached console", vm->con->buf,
		    vm->con->len, begin, end, exp, explen);
		/* The log is written by the worker's loop: let it catch up. */
		h_file_expect(h_console_log(vm->d, vm->name), end, 1, 10000);
		log = h_read_file(h_console_log(vm->d, vm->name), &loglen);
		stream_compare(vm, "the console log", log ? log : "", loglen,
		    begin, end, exp, explen);
		free(log);
	}
	if (have_vmctl) {
		if (h_proc_expect(&p, end, 30000) == 0)
			stream_compare(vm, "a vmctl console", p.obuf, p.olen,
			    begin, end, exp, explen);
		else
			check(vm, false, "the stream at a vmctl console");
		h_proc_free(&p);
	}
	free(exp);
	/* The shell is still there, and the terminal cooked again. */
	out = lg_cmd(vm, "echo ok", &st, LG_CMD_MS);
	check(vm, out != NULL && strcmp(out, "ok\n") == 0,
	    "shell answers after the stream");
	free(out);
}

/*
 * The other way: INPUT_LINES lines typed into "cat >FILE" (no echo), then
 * the guest's CRC-32 of what it received.
 */
static void
check_input(struct lg_vm *vm)
{
	char cmd[256], line[80], mark[32], *out, *exp;
	size_t explen, o = 0;
	unsigned long crc = 0, size = 0;
	unsigned int n;
	double t0, dt;
	int i, st, r;

	explen = (size_t)INPUT_LINES * 64;
	if ((exp = malloc(explen + 1)) == NULL)
		tap_bail("out of memory");
	for (i = 0; i < INPUT_LINES; i++)
		o += (size_t)snprintf(exp + o, explen + 1 - o, "%08d %s\n", i,
		    STREAM_TAIL);
	n = lg_seq(vm);
	snprintf(cmd, sizeof(cmd), "stty -echo; echo =I\"\"N-%u=; cat "
	    ">/tmp/input; stty echo\n", n);
	snprintf(mark, sizeof(mark), "=IN-%u=", n);
	t0 = h_now_ms();
	if (lg_send(vm, cmd) != 0 || lg_expect(vm, mark, LG_CMD_MS,
	    false) != 0) {
		check(vm, false, "cat ready for input");
		free(exp);
		return;
	}
	/* Line by line: the console's own flow control does the pacing. */
	for (i = 0, r = 0; i < INPUT_LINES && r == 0; i++) {
		memcpy(line, exp + (size_t)i * 64, 64);
		r = h_console_write(vm->con, line, 64);
	}
	/* Ctrl-D at the start of a line: end of file for cat. */
	if (r == 0)
		r = h_console_write(vm->con, "\x04", 1);
	out = r == 0 ? lg_cmd(vm, "crc32 /tmp/input; wc -c </tmp/input", &st,
	    STREAM_MS) : NULL;
	dt = (h_now_ms() - t0) / 1e3;
	if (out != NULL)
		sscanf(out, "%lx %*s %lu", &crc, &size);
	check(vm, out != NULL && crc == lg_crc32(exp, explen) &&
	    size == explen, "%zu bytes typed arrive intact (CRC-32 %08lx, %lu "
	    "bytes; want %08x; %.1f s, %.1f KiB/s)", explen, crc, size,
	    lg_crc32(exp, explen), dt, explen / 1024.0 / dt);
	free(out);
	free(exp);
}

/* ------------------------------------------------------------------ */
/* Lifecycle */

static void
check_pause(struct lg_vm *vm)
{
	struct json_object *r;
	char st[64], cmd[64], mark[32];
	unsigned int n = lg_seq(vm);
	bool quiet;

	r = h_callf(vm->c, H_REPLY_MS, "vm.pause", "{\"name\":\"%s\"}",
	    vm->name);
	if (h_ret(r) == NULL)
		tap_diag("vm.pause: %s", h_text(r));
	check(vm, h_ret(r) != NULL && strcmp(h_state(vm->c, vm->name, st,
	    sizeof(st)), "paused") == 0, "vm.pause: state %s", st);
	json_object_put(r);
	/* Typed while paused: must be answered only after resume. */
	snprintf(cmd, sizeof(cmd), "echo =P\"\"AUSED-%u=\n", n);
	snprintf(mark, sizeof(mark), "=PAUSED-%u=", n);
	lg_send(vm, cmd);
	quiet = lg_expect(vm, mark, 3000, true) != 0;
	check(vm, quiet, "no answer while paused (3 s)");
	r = h_callf(vm->c, H_REPLY_MS, "vm.resume", "{\"name\":\"%s\"}",
	    vm->name);
	if (h_ret(r) == NULL)
		tap_diag("vm.resume: %s", h_text(r));
	check(vm, h_ret(r) != NULL && strcmp(h_state(vm->c, vm->name, st,
	    sizeof(st)), "running") == 0, "vm.resume: state %s", st);
	json_object_put(r);
	check(vm, !quiet || lg_expect(vm, mark, LG_CMD_MS, false) == 0,
	    "input typed while paused is answered after resume");
	check(vm, lg_wait_shell(vm, LG_CMD_MS) == 0,
	    "shell alive after pause and resume");
}

/* Occurrences of needle in the VM's console log. */
static size_t
log_count(struct lg_vm *vm, const char *needle)
{
	size_t len, n;
	char *log = h_read_file(h_console_log(vm->d, vm->name), &len);

	n = h_count(log, len, needle);
	free(log);
	return n;
}

static void
check_reboot_restart(struct lg_vm *vm)
{
	char st[64];
	double t0 = h_now_ms();
	size_t boots = log_count(vm, BOOT_LINE);
	int r;

	lg_send(vm, "reboot\n");
	r = lg_expect_user(vm, LG_BANNER, LG_BOOT_MS);
	check(vm, r == 0, "'reboot' in the guest: boots again (banner after "
	    "%.1f s)", (h_now_ms() - t0) / 1e3);
	if (r != 0)
		return;
	check(vm, log_count(vm, BOOT_LINE) == boots + 1,
	    "the kernel booted %zu times", boots + 1);
	check(vm, lg_wait_shell(vm, LG_BOOT_MS) == 0 && quiet_kernel(vm),
	    "shell answers after the reboot (%.1f s)",
	    (h_now_ms() - t0) / 1e3);
	check(vm, strcmp(h_state(vm->c, vm->name, st, sizeof(st)),
	    "running") == 0, "still running after the reboot (%s)", st);
}

static void
check_vmctl_stop(struct lg_vm *vm)
{
	const char *vmctl = getenv("VMCTL_BIN");
	char timeout[16], st[64];
	struct h_proc p;
	size_t resets = log_count(vm, "Restarting system");
	double t0, dt;
	int r;

	snprintf(timeout, sizeof(timeout), "%d", STOP_TIMEOUT_S);
	t0 = h_now_ms();
	if (vmctl != NULL && *vmctl != '\0') {
		char *argv[] = { (char *)vmctl, "-s", vm->d->sock, "stop",
		    "--timeout", timeout, vm->name, NULL };

		r = h_run(&p, NULL, (STOP_TIMEOUT_S + 30) * 1000, argv);
		if (r != 0)
			tap_diag("vmctl stop: status %d, stdout %s, stderr %s",
			    r, h_flat(p.obuf), h_flat(p.ebuf));
		h_proc_free(&p);
	} else {
		r = h_stop(vm->c, vm->name, false, STOP_TIMEOUT_S,
		    (STOP_TIMEOUT_S + 30) * 1000);
	}
	dt = (h_now_ms() - t0) / 1e3;
	check(vm, r == 0 && strcmp(h_state(vm->c, vm->name, st, sizeof(st)),
	    "stopped") == 0, "%s stop: state %s (%.1f s)",
	    vmctl ? "vmctl" : "vm.", st, dt);
	/*
	 * The power button: acpid ran poweroff, the kernel entered S5,
	 * before the Ctrl-Alt-Del that half of the timeout would bring.
	 */
	check(vm, dt < STOP_TIMEOUT_S / 2 && log_count(vm, ACPID_LINE) == 1 &&
	    log_count(vm, POWER_DOWN) == 1 &&
	    log_count(vm, "Restarting system") == resets,
	    "stopped through the power button (the guest powered itself "
	    "off in %.1f s, no Ctrl-Alt-Del)", dt);
}

static void
check_reboot_stop(struct lg_vm *vm)
{
	double t0 = h_now_ms();
	size_t boots = log_count(vm, BOOT_LINE);
	int r;

	lg_send(vm, "reboot\n");
	r = h_wait_state(vm->c, vm->name, "stopped", LG_BOOT_MS);
	check(vm, r == 0, "'reboot' with on_reboot stop: VM stopped (%.1f s)",
	    (h_now_ms() - t0) / 1e3);
	check(vm, log_count(vm, "Restarting system") == 1 &&
	    log_count(vm, BOOT_LINE) == boots,
	    "the guest restarted itself once and did not boot again");
}

/* poweroff in the guest: the kernel enters S5 and the VM is stopped. */
static void
check_poweroff(struct lg_vm *vm)
{
	double t0 = h_now_ms();
	int r;

	lg_send(vm, "poweroff\n");
	r = h_wait_state(vm->c, vm->name, "stopped", LG_BOOT_MS);
	check(vm, r == 0, "'poweroff' in the guest: VM stopped (%.1f s)",
	    (h_now_ms() - t0) / 1e3);
	check(vm, log_count(vm, POWER_DOWN) == 1 &&
	    log_count(vm, "Restarting system") == 0,
	    "the kernel powered down through ACPI, no restart");
}

/* ------------------------------------------------------------------ */

/* Whatever happened, the VM does not outlive its scenario. */
static void
finish(struct lg_vm *vm)
{
	char st[64];

	h_state(vm->c, vm->name, st, sizeof(st));
	if (strcmp(st, "running") == 0 || strcmp(st, "paused") == 0 ||
	    strcmp(st, "starting") == 0 || strcmp(st, "stopping") == 0)
		h_stop(vm->c, vm->name, true, -1, H_REPLY_MS);
	lg_detach(vm);
}

static const char *
cmdline_for(const char *tag)
{
	static char buf[2100];
	const char *base = getenv("VMMD_LINUX_CMDLINE");

	if (base == NULL || *base == '\0')
		base = lg_default_cmdline();
	snprintf(buf, sizeof(buf), "%s vmmd.test=%s", base, tag);
	return buf;
}

/* vmctl stats NAME ARG, its output as diagnostics; its exit status. */
static int
show_vmctl_stats(struct lg_vm *vm, const char *what, const char *arg)
{
	char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", vm->d->sock,
		"stats", vm->name, (char *)arg, NULL };
	struct h_proc p;
	int st;

	st = h_run(&p, NULL, H_REPLY_MS, argv);
	tap_diag("%s: vmctl stats %s%s%s (%s):", vm->name, vm->name,
	    arg != NULL ? " " : "", arg != NULL ? arg : "", what);
	diag_lines(vm, what, p.obuf != NULL ? p.obuf : "");
	if (st != 0)
		diag_lines(vm, "its errors", p.ebuf != NULL ? p.ebuf : "");
	h_proc_free(&p);
	return st;
}

/* The count of a row of a vm.stats return, 0 if none. */
static int64_t
stats_count(struct json_object *ret, const char *name, const char **dev)
{
	struct json_object *rows, *o;
	size_t i;

	if (!json_object_object_get_ex(ret, "exits", &rows))
		return 0;
	for (i = 0; i < json_object_array_length(rows); i++) {
		o = json_object_array_get_idx(rows, i);
		if (strcmp(h_str(o, "name") ?: "", name) != 0)
			continue;
		if (dev != NULL)
			*dev = h_str(o, "device");
		return h_int(o, "count", 0);
	}
	return 0;
}

/* Every vCPU's "exits" of KVM's statistics, summed; -1 if none. */
static int64_t
stats_kvm_exits(struct json_object *ret)
{
	struct json_object *kvm, *vcpus;
	int64_t sum = -1;
	size_t i;

	if (!json_object_object_get_ex(ret, "kvm", &kvm) ||
	    !json_object_object_get_ex(kvm, "vcpus", &vcpus))
		return -1;
	for (i = 0; i < json_object_array_length(vcpus); i++)
		sum = (sum < 0 ? 0 : sum) + h_int(json_object_array_get_idx(
		    vcpus, i), "exits", 0);
	return sum;
}

/*
 * Exit statistics of the booted guest (on since vm.start): the table of
 * its boot; then the serial port's exits while the guest prints a known
 * amount, and KVM's own counters moving.
 */
static void
check_stats(struct lg_vm *vm)
{
	struct json_object *r, *ret;
	const char *dev = NULL;
	int64_t thr, kvm0, kvm1;
	char *out;
	size_t len;
	int st;

	r = h_callf(vm->c, H_REPLY_MS, "vm.stats", "{\"name\":\"%s\"}",
	    vm->name);
	ret = h_ret(r);
	thr = stats_count(ret, "IO 0x3f8 out", &dev);
	check(vm, thr > 0 && dev != NULL && strcmp(dev, "com1") == 0 &&
	    h_int(json_object_object_get(ret, "guest"), "count", 0) > thr,
	    "stats of the boot: %" PRId64 " writes to the serial port (%s), "
	    "and the time in the guest", thr, dev != NULL ? dev : "no device");
	json_object_put(r);
	check(vm, show_vmctl_stats(vm, "the boot", NULL) == 0,
	    "vmctl stats: the table of the boot");
	show_vmctl_stats(vm, "the boot", "--segments");

	r = h_callf(vm->c, H_REPLY_MS, "vm.stats", "{\"name\":\"%s\","
	    "\"reset\":true,\"kvm\":true}", vm->name);
	kvm0 = stats_kvm_exits(h_ret(r));
	json_object_put(r);
	/* 500 lines of 4 bytes or fewer and their newlines, and the echo. */
	out = lg_cmd(vm, "seq 1 500", &st, 60000);
	len = out != NULL ? strlen(out) : 0;
	free(out);
	r = h_callf(vm->c, H_REPLY_MS, "vm.stats", "{\"name\":\"%s\","
	    "\"kvm\":true}", vm->name);
	ret = h_ret(r);
	thr = stats_count(ret, "IO 0x3f8 out", NULL);
	kvm1 = stats_kvm_exits(ret);
	check(vm, st == 0 && len > 1800 && thr >= (int64_t)len,
	    "while the guest prints %zu bytes: %" PRId64 " serial port "
	    "writes", len, thr);
	check(vm, kvm0 > 0 && kvm1 > kvm0,
	    "KVM's own exit counters move (%" PRId64 " -> %" PRId64 ")",
	    kvm0, kvm1);
	json_object_put(r);
	show_vmctl_stats(vm, "printing seq 1 500", "--kvm");
}

static void
scenario_bzimage(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-bzimage" };
	struct lr_clock clock;
	char cmdline[2100];
	int64_t resets;
	bool clock_set = false;

	snprintf(cmdline, sizeof(cmdline), "%s", cmdline_for("bzimage"));
	stats_from_start = want("stats");
	if (!boot(&vm, "vmlinuz", "restart", cmdline))
		goto out;
	resets = vm_resets(&vm);
	if (want("stats"))
		check_stats(&vm);
	if (want("bzimage"))
		check_platform(&vm, cmdline);
	no_reset(&vm, "the platform checks", &resets);
	if (want("date"))
		check_date(&vm);
	no_reset(&vm, "the date check", &resets);
	if (want("stream"))
		check_stream(&vm);
	if (want("input"))
		check_input(&vm);
	no_reset(&vm, "the console streams", &resets);
	if (want("pause"))
		check_pause(&vm);
	no_reset(&vm, "pause and resume", &resets);
	if (want("rtc")) {
		lr_check_read(&vm, check);
		lr_check_irq(&vm, check);
		clock_set = lr_set_clock(&vm, check, &clock);
		no_reset(&vm, "the RTC checks", &resets);
	}
	/* The clock the rtc step set is read back after this reboot. */
	if (want("reboot") || clock_set)
		check_reboot_restart(&vm);
	if (clock_set)
		lr_check_clock_kept(&vm, check, &clock);
	if (want("stop"))
		check_vmctl_stop(&vm);
out:
	finish(&vm);
}

static void
scenario_pvh(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-pvh" };
	char cmdline[2100];
	int64_t resets;

	snprintf(cmdline, sizeof(cmdline), "%s", cmdline_for("pvh"));
	if (!boot(&vm, "vmlinux", "stop", cmdline))
		goto out;
	resets = vm_resets(&vm);
	check_platform(&vm, cmdline);
	no_reset(&vm, "the platform checks", &resets);
	check_reboot_stop(&vm);
out:
	finish(&vm);
}

/*
 * The reference guest with a screen: fbcon on vesafb, a shell on tty0.
 * Then it powers itself off (on_reboot restart: a reset would not stop
 * it), a display and its write-protected framebuffer notwithstanding.
 */
static void
scenario_display(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-display" };
	char cmdline[2200];

	/* The serial port stays the last console: /dev/console. */
	snprintf(cmdline, sizeof(cmdline), "console=tty0 %s",
	    cmdline_for("display"));
	if (boot_with(&vm, "vmlinuz", "restart", cmdline,
	    ",\"vnc\":\"auto\",\"display\":\"1024x768\"")) {
		ld_check_display(&vm, check, nsteps > 0 && want("screen"));
		if (want("poweroff"))
			check_poweroff(&vm);
	}
	finish(&vm);
}

/* The first word of a line of out that holds needle, into buf. */
static bool
word_of(const char *out, const char *needle, char *buf, size_t len)
{
	const char *p = out != NULL ? strstr(out, needle) : NULL;
	size_t n;

	if (p == NULL)
		return false;
	while (p > out && p[-1] != '\n')
		p--;
	n = strcspn(p, " \t\r\n");
	if (n == 0 || n >= len)
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return true;
}

/*
 * What the disk scenario leaves for the qcow2 one: its raw image (an
 * ext2 file system with /file, 1 MiB of random bytes, and /text, 1 MiB
 * of text that compresses well) and the two files' checksums; an empty
 * path when it has none.
 */
static char	disk_image[64];
static char	disk_sum_file[64], disk_sum_text[64];

/*
 * virtio over PCI with the reference guest: a disk and an entropy
 * device.  The first boot finds the disk with its serial, makes an ext2
 * file system, writes two files and notes their checksums, reads
 * /dev/hwrng and halts; the second boot mounts the disk and finds the
 * same files.  With the qcow2 step the image stays for it.
 */
static void
scenario_disk(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-disk" };
	char image[] = "/tmp/vmmd-deb-disk-XXXXXX", extra[512];
	char sum1[64] = "", sum2[64] = "", text1[64] = "", text2[64] = "";
	char *out;
	int fd;

	fd = mkstemp(image);
	if (!check(&vm, fd >= 0 && ftruncate(fd, 32 << 20) == 0,
	    "a 32 MiB raw image"))
		return;
	close(fd);
	snprintf(extra, sizeof(extra), ",\"rng\":true,\"disks\":["
	    "{\"path\":\"%s\",\"serial\":\"vmmd-disk-1\"}]", image);
	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("disk"), extra))
		goto out;
	out = lg_cmd_ok(&vm, "cat /sys/block/vda/serial /sys/block/vda/size",
	    LG_CMD_MS);
	check(&vm, out != NULL && strstr(out, "vmmd-disk-1") != NULL &&
	    strstr(out, "65536") != NULL,
	    "the guest sees vda: 65536 sectors, serial vmmd-disk-1");
	free(out);
	out = lg_cmd_ok(&vm, "head -c 4096 /dev/hwrng | wc -c", LG_CMD_MS);
	check(&vm, out != NULL && strstr(out, "4096") != NULL,
	    "/dev/hwrng gives 4096 bytes");
	free(out);
	out = lg_cmd_ok(&vm, "mke2fs /dev/vda >/dev/null && mount -t ext2 /dev/vda "
	    "/mnt && dd if=/dev/urandom of=/mnt/file bs=4k count=256 "
	    "2>/dev/null && yes vmmd-qcow2-base | head -c 1048576 >/mnt/text "
	    "&& sync && md5sum /mnt/file /mnt/text && umount /mnt",
	    LG_BOOT_MS);
	check(&vm, word_of(out, "/mnt/file", sum1, sizeof(sum1)) &&
	    word_of(out, "/mnt/text", text1, sizeof(text1)),
	    "ext2 made on vda, 1 MiB of random bytes and 1 MiB of text "
	    "written: %s, %s", sum1, text1);
	free(out);
	lg_send(&vm, "poweroff -f\n");
	h_sleep_ms(3000);
	h_stop(c, vm.name, true, -1, H_REPLY_MS);
	lg_detach(&vm);
	check(&vm, h_wait_state(c, vm.name, "stopped", LG_CMD_MS) == 0,
	    "first boot over");

	if (!check(&vm, h_start(c, vm.name) == 0 && lg_attach(&vm) == 0 &&
	    lg_expect_user(&vm, LG_BANNER, LG_BOOT_MS) == 0 &&
	    lg_wait_shell(&vm, LG_BOOT_MS) == 0, "second boot"))
		goto out;
	out = lg_cmd_ok(&vm, "mount -t ext2 /dev/vda /mnt && md5sum /mnt/file "
	    "/mnt/text && umount /mnt", LG_BOOT_MS);
	check(&vm, word_of(out, "/mnt/file", sum2, sizeof(sum2)) &&
	    strcmp(sum1, sum2) == 0 &&
	    word_of(out, "/mnt/text", text2, sizeof(text2)) &&
	    strcmp(text1, text2) == 0,
	    "the second boot reads the files back intact (%s, %s)", sum2,
	    text2);
	free(out);
	check_msix(&vm, "disk0");
	show_stats(&vm, "after the disk checks");
out:
	finish(&vm);
	if (want("qcow2") && sum1[0] != '\0' && text1[0] != '\0') {
		snprintf(disk_image, sizeof(disk_image), "%s", image);
		snprintf(disk_sum_file, sizeof(disk_sum_file), "%s", sum1);
		snprintf(disk_sum_text, sizeof(disk_sum_text), "%s", text1);
	} else {
		unlink(image);
	}
}

/* ------------------------------------------------------------------ */
/* qcow2: overlays of a compressed image (see scenario_qcow2) */

#define QEMU_IMG_MS	120000

static char	qemu_img_path[512];

/*
 * qemu-img with the NULL-terminated arguments: its exit status, and its
 * standard output in *out (malloc'd, caller frees) when out is not NULL.
 * A failure other than compare's "images differ" (1) comes with its
 * standard error as a diagnostic.
 */
static int
qemu_img(char **out, const char *arg, ...)
{
	char *argv[16];
	struct h_proc p;
	va_list ap;
	int n = 0, rc;

	argv[n++] = qemu_img_path;
	va_start(ap, arg);
	for (; arg != NULL && n < 15; arg = va_arg(ap, const char *))
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	memset(&p, 0, sizeof(p));
	rc = h_run(&p, NULL, QEMU_IMG_MS, argv);
	if (rc != 0 && (rc != 1 || strcmp(argv[1], "compare") != 0))
		tap_diag("qemu-img %s: exit %d: %s", argv[1], rc,
		    h_flat(p.ebuf != NULL ? p.ebuf : ""));
	if (out != NULL)
		*out = strdup(p.obuf != NULL ? p.obuf : "");
	h_proc_free(&p);
	return rc;
}

/* The mount point's files' checksums, in the guest, into sums[]. */
static bool
guest_sums(struct lg_vm *vm, const char *cmd, const char *const *files,
    char sums[][64], int nfiles)
{
	char needle[32], *out;
	bool ok;
	int i;

	out = lg_cmd_ok(vm, cmd, LG_BOOT_MS);
	ok = out != NULL;
	for (i = 0; i < nfiles; i++) {
		snprintf(needle, sizeof(needle), "/mnt/%s", files[i]);
		sums[i][0] = '\0';
		ok = word_of(out, needle, sums[i], 64) && ok;
	}
	free(out);
	return ok;
}

/*
 * The qcow2 disk of vm, as vm.info's stats show it once the guest has
 * written to it: its tables were looked up.
 */
static void
check_qcow2_info(struct lg_vm *vm)
{
	struct json_object *r, *st, *disks, *disk = NULL;

	if ((st = vm_stats(vm, "for its disk", &r)) != NULL &&
	    json_object_object_get_ex(st, "disks", &disks))
		disk = json_object_array_get_idx(disks, 0);
	check(vm, disk != NULL && strcmp(h_str(disk, "format") ?: "",
	    "qcow2") == 0 && h_int(disk, "backing_images", -1) == 1 &&
	    h_int(disk, "cache_hits", -1) + h_int(disk, "cache_misses", -1) >
	    0 && !json_object_get_boolean(json_object_object_get(disk,
	    "broken")), "vm.info: a qcow2 disk over one backing image, its "
	    "tables used, not broken: %s",
	    disk != NULL ? h_text(disk) : "none");
	json_object_put(r);
}

/*
 * qcow2 with the reference guest, on the raw image the disk scenario
 * left (ext2 with /file and /text): qemu-img converts it into a
 * compressed qcow2 base and makes two qcow2 overlays of it, and two
 * guests boot at once, each on one overlay ("backing": true lets vmmd
 * open the base, read-only).  Both read the base's files through their
 * overlays; q1 writes a file of its own and overwrites 16 KiB inside
 * /text (copy-on-write of a compressed cluster) while q2 writes another
 * file; q2 drops its caches and reads its file back, q1 is stopped and
 * started again (a power cycle) and reads everything back.  Once both
 * are stopped, qemu-img check finds both overlays clean and qemu-img
 * compare finds the base still the same as the raw image, which is
 * untouched byte for byte.
 */
static void
scenario_qcow2(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm q1 = { .d = d, .c = c, .name = "deb-qcow2-1" };
	struct lg_vm q2 = { .d = d, .c = c, .name = "deb-qcow2-2" };
	static const char *const base_files[] = { "file", "text" };
	static const char *const q1_files[] = { "file", "text", "own" };
	static const char *const q2_files[] = { "file", "text", "own",
	    "expected" };
	char base[80], over1[80], over2[80], extra[512], st[64];
	char s1[3][64], s2[4][64], s3[3][64], got[2][64];
	char *was = NULL, *now = NULL, *out = NULL;
	size_t was_len = 0, now_len = 0;
	const char *pct;
	bool started = false, both = false;
	int i;

	if (h_which("qemu-img", qemu_img_path, sizeof(qemu_img_path)) ==
	    NULL) {
		tap_diag("qcow2: qemu-img is not installed (qemu-utils): "
		    "no qcow2 step");
		return;
	}
	if (!check(&q1, disk_image[0] != '\0', "the disk scenario's raw "
	    "image with its ext2 file system"))
		return;
	snprintf(base, sizeof(base), "%s-base.qcow2", disk_image);
	snprintf(over1, sizeof(over1), "%s-over1.qcow2", disk_image);
	snprintf(over2, sizeof(over2), "%s-over2.qcow2", disk_image);
	if (!check(&q1, qemu_img(NULL, "convert", "-q", "-c", "-O", "qcow2",
	    disk_image, base, NULL) == 0 && qemu_img(NULL, "create", "-q",
	    "-f", "qcow2", "-b", base, "-F", "qcow2", over1, NULL) == 0 &&
	    qemu_img(NULL, "create", "-q", "-f", "qcow2", "-b", base, "-F",
	    "qcow2", over2, NULL) == 0, "qemu-img: a compressed qcow2 base "
	    "(convert -c) and two overlays of it"))
		goto out;
	qemu_img(&out, "check", base, NULL);
	pct = out != NULL ? strstr(out, "% compressed") : NULL;
	while (pct != NULL && pct > out && pct[-1] != ' ')
		pct--;
	check(&q1, pct != NULL && strtod(pct, NULL) > 0,
	    "qemu-img check: the base has compressed clusters (%.*s%%)",
	    pct != NULL ? (int)strcspn(pct, "%") : 4, pct ? pct : "none");
	free(out);
	was = h_read_file(base, &was_len);

	snprintf(extra, sizeof(extra), ",\"disks\":[{\"path\":\"%s\","
	    "\"backing\":true,\"serial\":\"vmmd-qcow2-1\"}]", over1);
	started = true;
	if (!boot_begin(&q1, "vmlinuz", "stop", cmdline_for("qcow2"), extra))
		goto out;
	snprintf(extra, sizeof(extra), ",\"disks\":[{\"path\":\"%s\","
	    "\"backing\":true,\"serial\":\"vmmd-qcow2-2\"}]", over2);
	both = boot_begin(&q2, "vmlinuz", "stop", cmdline_for("qcow2"), extra);
	if (!boot_end(&q1) || !both || !boot_end(&q2))
		goto out;

	/* Both read the base through their overlays. */
	check(&q1, guest_sums(&q1, "mount -t ext2 /dev/vda /mnt && md5sum "
	    "/mnt/file /mnt/text", base_files, got, 2) &&
	    strcmp(got[0], disk_sum_file) == 0 &&
	    strcmp(got[1], disk_sum_text) == 0,
	    "reads the base's files through its overlay (%s, %s)", got[0],
	    got[1]);
	check(&q2, guest_sums(&q2, "mount -t ext2 /dev/vda /mnt && md5sum "
	    "/mnt/file /mnt/text", base_files, got, 2) &&
	    strcmp(got[0], disk_sum_file) == 0 &&
	    strcmp(got[1], disk_sum_text) == 0,
	    "and so does the second guest at the same time (%s, %s)", got[0],
	    got[1]);

	/*
	 * q2 writes 2 MiB of known text in the background while q1 writes
	 * 1 MiB of random bytes and 16 KiB into /text; then each drops its
	 * caches and reads back.
	 */
	free(lg_cmd_ok(&q2, "{ (yes vmmd-qcow2-guest-2 | head -c 2097152 "
	    ">/mnt/own; sync) >/dev/null 2>&1 & }", LG_CMD_MS));
	check(&q1, guest_sums(&q1, "dd if=/dev/urandom of=/mnt/own bs=4k "
	    "count=256 2>/dev/null && dd if=/dev/zero of=/mnt/text bs=4k "
	    "count=4 seek=37 conv=notrunc 2>/dev/null && sync && "
	    "echo 3 >/proc/sys/vm/drop_caches && md5sum /mnt/file /mnt/text "
	    "/mnt/own", q1_files, s1, 3) && strcmp(s1[0], disk_sum_file) ==
	    0 && strcmp(s1[1], disk_sum_text) != 0,
	    "writes 1 MiB and 16 KiB over the compressed base's /text (%s, "
	    "%s, %s)", s1[0], s1[1], s1[2]);
	check_qcow2_info(&q1);
	check(&q2, guest_sums(&q2, "wait; sync && "
	    "echo 3 >/proc/sys/vm/drop_caches && yes vmmd-qcow2-guest-2 | "
	    "head -c 2097152 | md5sum | sed 's,-$,/mnt/expected,' && "
	    "md5sum /mnt/file /mnt/text /mnt/own", q2_files, s2, 4) &&
	    strcmp(s2[0], disk_sum_file) == 0 &&
	    strcmp(s2[1], disk_sum_text) == 0 && strcmp(s2[2], s2[3]) == 0,
	    "meanwhile writes 2 MiB, reads it back intact (%s) and the base "
	    "unchanged", s2[2]);

	/* q1's power cycle. */
	free(lg_cmd_ok(&q1, "umount /mnt", LG_CMD_MS));
	check(&q1, h_stop(c, q1.name, false, STOP_TIMEOUT_S,
	    (STOP_TIMEOUT_S + 30) * 1000) == 0 && strcmp(h_state(c, q1.name,
	    st, sizeof(st)), "stopped") == 0, "vm.stop: powered off (%s)",
	    st);
	lg_detach(&q1);
	if (check(&q1, h_start(c, q1.name) == 0 && lg_attach(&q1) == 0 &&
	    lg_expect_user(&q1, LG_BANNER, LG_BOOT_MS) == 0 &&
	    lg_wait_shell(&q1, LG_BOOT_MS) == 0, "vm.start: boots again") &&
	    quiet_kernel(&q1))
		check(&q1, guest_sums(&q1, "mount -t ext2 /dev/vda /mnt && "
		    "md5sum /mnt/file /mnt/text /mnt/own && umount /mnt",
		    q1_files, s3, 3) && strcmp(s3[0], s1[0]) == 0 &&
		    strcmp(s3[1], s1[1]) == 0 && strcmp(s3[2], s1[2]) == 0,
		    "after the power cycle reads back what it wrote and the "
		    "base (%s, %s, %s)", s3[0], s3[1], s3[2]);
	free(lg_cmd_ok(&q2, "umount /mnt", LG_CMD_MS));
	check_poweroff(&q2);

out:
	finish(&q1);
	finish(&q2);
	if (started)
		check(&q1, h_wait_state(c, q1.name, "stopped", LG_CMD_MS) ==
		    0 && (!both || h_wait_state(c, q2.name, "stopped",
		    LG_CMD_MS) == 0), "the guests stopped");
	if (both) {
		check(&q1, qemu_img(NULL, "check", "-q", over1, NULL) == 0,
		    "qemu-img check finds its overlay clean");
		check(&q2, qemu_img(NULL, "check", "-q", over2, NULL) == 0,
		    "qemu-img check finds its overlay clean");
		check(&q1, qemu_img(NULL, "compare", "-q", "-f", "qcow2",
		    "-F", "qcow2", over1, base, NULL) == 1,
		    "qemu-img compare: its overlay differs from the base");
	}
	if (was != NULL) {
		now = h_read_file(base, &now_len);
		check(&q1, now != NULL && now_len == was_len &&
		    memcmp(now, was, now_len) == 0 && qemu_img(NULL,
		    "compare", "-q", "-f", "qcow2", "-F", "raw", base,
		    disk_image, NULL) == 0, "the base is untouched byte for "
		    "byte, and qemu-img compare finds it the same as the raw "
		    "image");
	}
	free(was);
	free(now);
	for (i = 0; i < 3; i++)
		unlink(i == 0 ? base : i == 1 ? over1 : over2);
	unlink(disk_image);
	disk_image[0] = '\0';
}

/* virtio-net on two TAPs vmmd creates: see lnet.h. */
static void
scenario_net(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-net" };
	char extra[256];

	snprintf(extra, sizeof(extra), ",\"net\":[{\"tap\":\"%s\","
	    "\"mac\":\"02:00:00:00:00:0f\"},{\"tap\":\"%s\","
	    "\"mac\":\"%s\"}]", LN_TAP, LN_TAP1, LN_MAC1);
	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("net"), extra))
		goto out;
	if (ln_host_up(&vm, check))
		ln_check_guest(&vm, check);
	ln_check_second(&vm, check);
	check_msix(&vm, "virtio-net");
	show_stats(&vm, "after the network checks");
out:
	finish(&vm);
}

/*
 * A snapshot of the bzImage guest on an overlay disk of a 32 MiB raw
 * base, with a network card on a TAP, taken while a shell loop writes a
 * file, then restored (lsnapshot.h); the snapshot's directory and the
 * base go afterwards.
 */
static void
scenario_snapshot(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-snap" };
	char base[] = "/tmp/vmmd-deb-snap-XXXXXX", extra[512];
	char dir[] = "/tmp/vmmd-deb-snapdir-XXXXXX";
	double t0 = h_now_ms();
	int fd;

	fd = mkstemp(base);
	if (!check(&vm, fd >= 0 && ftruncate(fd, 32 << 20) == 0 &&
	    mkdtemp(dir) != NULL, "a 32 MiB raw base and a directory for "
	    "the snapshot"))
		goto out;
	snprintf(extra, sizeof(extra), ",\"disks\":[{\"path\":\"%s\","
	    "\"overlay\":true}],\"net\":[{\"tap\":\"%s\","
	    "\"mac\":\"02:00:00:00:00:1f\"}]", base, LN_TAP);
	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("snapshot"), extra))
		goto out;
	ls_check_restore(&vm, check, dir);
out:
	finish(&vm);
	h_delete(c, vm.name);
	if (fd >= 0) {
		close(fd);
		unlink(base);
	}
	ls_remove(dir);
	tap_diag("snapshot: the step took %.1f s", (h_now_ms() - t0) / 1e3);
}

/*
 * Live migration over SSH (lmigrate.h): the bzImage guest on a 32 MiB
 * raw disk both vmmd see at its path, with a card on a TAP, moved to a
 * second vmmd in a namespace of its own, and checked there.
 */
static void
scenario_migrate(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-mig" };
	char disk[] = "/tmp/vmmd-deb-mig-XXXXXX", extra[512];
	struct lm_far far = { .ns_here = -1, .ns_far = -1 };
	const char *missing = lm_missing();
	double t0 = h_now_ms();
	bool ok = false;
	int fd;

	if (missing != NULL) {
		tap_ok(1, "# SKIP migrate: %s", missing);
		return;
	}
	fd = mkstemp(disk);
	if (!check(&vm, fd >= 0 && ftruncate(fd, 32 << 20) == 0,
	    "a 32 MiB raw disk, at the same path for both vmmd"))
		goto out;
	if (!lm_far_start(&far, &vm, check))
		goto out;
	snprintf(extra, sizeof(extra), ",\"disks\":[{\"path\":\"%s\","
	    "\"format\":\"raw\"}],\"net\":[{\"tap\":\"%s\","
	    "\"mac\":\"%s\"}]", disk, LN_TAP, LM_GUEST_MAC);
	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("migrate"), extra))
		goto out;
	ok = lm_check_migrate(&vm, check, &far);
out:
	finish(&vm);
	h_delete(vm.c, vm.name);
	lm_far_stop(&far, !ok);
	if (fd >= 0) {
		close(fd);
		unlink(disk);
	}
	tap_diag("migrate: the step took %.1f s", (h_now_ms() - t0) / 1e3);
}

/*
 * The passt the worker of vm started (its child of that name; passt.avx2
 * where passt found the CPU has AVX2), or -1.
 */
static pid_t
passt_of(struct lg_vm *vm)
{
	pid_t worker = h_vm_pid(vm->c, vm->name), found = -1;
	char path[300], comm[32], buf[512], *p;
	long ppid;
	DIR *dir;
	FILE *f;
	struct dirent *e;

	if (worker < 0 || (dir = opendir("/proc")) == NULL)
		return -1;
	while (found < 0 && (e = readdir(dir)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		/* pid (comm) state ppid: comm may hold spaces. */
		if (fgets(buf, sizeof(buf), f) != NULL &&
		    (p = strrchr(buf, ')')) != NULL &&
		    sscanf(p + 1, " %*c %ld", &ppid) == 1 && ppid == worker &&
		    sscanf(buf, "%*d (%31[^)])", comm) == 1 &&
		    (strcmp(comm, "passt") == 0 ||
		    strcmp(comm, "passt.avx2") == 0))
			found = (pid_t)atol(e->d_name);
		fclose(f);
	}
	closedir(dir);
	return found;
}

/*
 * User-mode networking (lusernet.h): the guest on passt with a forward,
 * DHCP and 1 MiB each way; a second VM asking for the same host port is
 * refused, naming it; passt is the guest's uid, survives a restart of
 * vmmd with the guest and forwards as before, and ends with the guest.
 */
static void
scenario_usernet(struct h_daemon *d, struct h_conn **cp)
{
	struct h_conn *c = *cp;
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-user" };
	struct json_object *r;
	char extra[256], uid[64] = "", fwd_port[16];
	pid_t passt, again;
	int uplink, fd;

	/* vmmd.conf's default; quickstart.sh installs it. */
	if (access("/usr/bin/passt", X_OK) < 0) {
		tap_ok(1, "# SKIP usernet: passt is not installed");
		return;
	}
	uplink = lu_uplink();
	if (!check(&vm, uplink >= 0, "an uplink for passt: %s with %s/24, "
	    "default route through %s (%s)", LU_UPLINK, LU_HOST_ADDR,
	    LU_GATEWAY, uplink >= 0 ? "ok" : strerror(-uplink)))
		return;
	snprintf(extra, sizeof(extra), ",\"net\":{\"user\":true,"
	    "\"mac\":\"02:00:00:00:00:1f\",\"forward\":[\"tcp:127.0.0.1:"
	    "%d:%d\"]}", LU_FWD_PORT, LU_GUEST_PORT);
	snprintf(fwd_port, sizeof(fwd_port), "%d", LU_FWD_PORT);
	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("usernet"), extra))
		goto out;
	passt = passt_of(&vm);
	h_proc_status(passt, "Uid", uid, sizeof(uid));
	check(&vm, passt > 0 && uid[0] != '\0' && uid[0] != '0',
	    "passt runs as the worker's child, not as root (pid %ld, "
	    "uids %s)", (long)passt, uid);
	if (!lu_check_guest(&vm, check)) {
		show_stats(&vm, "after the failed checks");
		h_dump_logs();
	}
	check_msix(&vm, "virtio-net");

	tap_ok(h_create(c, "user2", "\"kernel\":\"%s\"%s",
	    h_env("VMMD_GUEST_DEMO"), extra) == 0, "usernet: a second VM "
	    "with the same forward is defined");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"user2\"}");
	tap_ok(h_err_class(r) != NULL && strcmp(h_err_class(r),
	    "bad_state") == 0 && strstr(h_text(r),
	    fwd_port) != NULL && strstr(h_text(r),
	    "in use") != NULL, "usernet: and refused to start, naming the "
	    "port: %s", h_text(r));
	json_object_put(r);
	h_delete(c, "user2");

	/* vmmd restarts, leaving its guests (SIGQUIT); they and their
	 * passt go on under the next one. */
	lg_detach(&vm);
	h_close(c);
	h_daemon_kill(d, SIGQUIT);
	tap_ok(h_daemon_spawn(d) == 0 &&
	    (c = vm.c = *cp = h_connect(d)) != NULL, "usernet: vmmd restarted");
	if (c == NULL)
		tap_bail("cannot connect to vmmd after its restart");
	again = passt_of(&vm);
	if (!check(&vm, again == passt && lg_attach(&vm) == 0,
	    "the guest's passt is the same after the restart (pid %ld)",
	    (long)again))
		h_dump_logs();
	lu_check_forward(&vm, check, 64 << 10, "after vmmd restarted");
	show_stats(&vm, "after the user network checks");
	h_stop(c, vm.name, true, -1, H_REPLY_MS);
	check(&vm, passt > 0 && h_pid_gone(passt, 10000),
	    "passt ended with the guest");
	fd = ln_listen("127.0.0.1", LU_FWD_PORT);
	check(&vm, fd >= 0, "and the forward's port is free again (%s)",
	    fd >= 0 ? "bound" : strerror(-fd));
	if (fd >= 0)
		close(fd);
out:
	finish(&vm);
	close(uplink);
}

/*
 * cloud (lcloud.h): Debian's cloud image booted from its disk through an
 * overlay, GRUB's choice, cloud-init's seed with an SSH key and passt's
 * forward; two VMs of the same base at once, each reached with ssh,
 * its hostname its VM's name and cloud-init done.
 */
static void
scenario_cloud(struct h_daemon *d, struct h_conn *c)
{
	const char *image = getenv("VMMD_CLOUD_IMAGE");
	struct lc_vm vms[2] = { { .name = "web", .port = 2222 },
	    { .name = "web2", .port = 2223 } };
	char dir[] = "/tmp/vmmd-cloud-XXXXXX", pub[64], rule[32] = "";
	char kernel[300] = "";
	struct json_object *r, *b;
	bool up;
	int uplink;

	if (image == NULL || image[0] == '\0' || access(image, R_OK) < 0 ||
	    access("/usr/bin/passt", X_OK) < 0) {
		tap_ok(1, "# SKIP cloud: no cloud image (VMMD_CLOUD_IMAGE: "
		    "tests/linux/build-cloud-image.sh) or no passt");
		return;
	}
	uplink = lu_uplink();
	tap_ok(uplink >= 0 && mkdtemp(dir) != NULL && lc_keypair(dir) == 0,
	    "cloud: an uplink for passt and an SSH key pair");
	snprintf(pub, sizeof(pub), "%s/id.pub", dir);
	for (unsigned int i = 0; i < 2; i++)
		tap_ok(lc_create_start(d, &vms[i], image, pub, 512),
		    "cloud: vmctl create %s --disk IMAGE,overlay --ssh-key "
		    "KEY --net user,forward=tcp:127.0.0.1:%d:22, then vmctl "
		    "start (%.1f s)", vms[i].name, vms[i].port,
		    (h_now_ms() - vms[i].t_start) / 1e3);
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"web\"}");
	if (json_object_object_get_ex(h_ret(r), "boot_from", &b)) {
		snprintf(rule, sizeof(rule), "%s", h_str(b, "rule") != NULL ?
		    h_str(b, "rule") : "");
		snprintf(kernel, sizeof(kernel), "%s", h_str(b, "kernel") !=
		    NULL ? h_str(b, "kernel") : "");
		tap_diag("web: boot_from %s", json_object_to_json_string(b));
	}
	json_object_put(r);
	tap_ok(strcmp(rule, "grub") == 0 && strstr(kernel, "partition 1 "
	    "(ext4): /boot/vmlinuz-") != NULL, "cloud: the kernel GRUB's "
	    "default entry names (%s, %s)", rule, kernel);

	up = lc_ssh_all(d, vms, 2, dir, "hostname; id -un; "
	    "cloud-init status --wait; sudo -n grep -hE -A 30 "
	    "'WARNING|ERROR' /var/log/cloud-init.log | cut -c 1-200 | "
	    "tail -n 12; true", h_now_ms() + LC_SSH_MS);
	for (unsigned int i = 0; i < 2; i++) {
		char want[80];

		snprintf(want, sizeof(want), "%s\ndebian\n", vms[i].name);
		tap_ok(vms[i].t_ssh != 0 && strncmp(vms[i].out, want,
		    strlen(want)) == 0 && strstr(vms[i].out, "status: done") !=
		    NULL, "cloud: ssh -p %d debian@127.0.0.1 %.0f s after "
		    "vm.start: hostname, user and cloud-init: %s", vms[i].port,
		    vms[i].t_ssh != 0 ? (vms[i].t_ssh - vms[i].t_start) / 1e3 :
		    -1.0, h_flat(vms[i].out));
		if (!up)
			lc_console_tail(d, vms[i].name, 60);
	}
	for (unsigned int i = 0; i < 2; i++) {
		h_stop(c, vms[i].name, true, -1, H_REPLY_MS);
		h_delete(c, vms[i].name);
	}
	if (uplink >= 0)
		close(uplink);
}

/*
 * After megabytes crossed: the device started its backend once and no
 * data queue's kick reached the worker (every one went to vhost through
 * the handed doorbells): the kicks it saw are the event queue's, a few.
 */
static void
check_vsock_path(struct lg_vm *vm)
{
	struct json_object *r, *o;
	long long started = -1, kicks = -1, bells = -1, passed = -1;

	r = h_callf(vm->c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm->name);
	if (json_object_object_get_ex(h_ret(r), "stats", &o) &&
	    json_object_object_get_ex(o, "devices", &o) &&
	    json_object_object_get_ex(o, "virtio-vsock", &o)) {
		started = h_int(o, "starts", -1);
		kicks = h_int(o, "kicks", -1);
		bells = h_int(o, "doorbell_kicks", -1);
		passed = h_int(o, "kicks_passed", -1);
		tap_diag("virtio-vsock: %s", json_object_to_json_string(o));
	}
	json_object_put(r);
	check(vm, started == 1 && passed == 0 && kicks >= 0 && kicks <= 4,
	    "vsock: vhost served the queues: 1 start, %lld kicks reached "
	    "the worker in all (%lld by doorbell; the event queue's), none "
	    "of the data queues' (%lld passed on)", kicks, bells, passed);
}

/*
 * virtio-vsock (lvsock.h), then CIDs: a second VM (the demo guest) gets
 * another one, a third that names the first's is refused while the
 * first runs.
 */
static void
scenario_vsock(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-vsock" };
	struct json_object *r;
	const char *sock;
	int64_t cid = -1, cid2 = -1;
	char sockbuf[4096] = "";

	if (access("/dev/vhost-vsock", R_OK | W_OK) < 0) {
		tap_ok(1, "# SKIP vsock: no /dev/vhost-vsock on this host");
		return;
	}
	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("vsock"),
	    ",\"vsock\":{\"socket\":true}"))
		goto out;
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm.name);
	cid = h_int(h_ret(r), "vsock_cid", -1);
	sock = h_str(h_ret(r), "vsock_socket");
	snprintf(sockbuf, sizeof(sockbuf), "%s", sock != NULL ? sock : "");
	json_object_put(r);
	check(&vm, cid >= 3 && sockbuf[0] != '\0', "vsock: vm.info shows "
	    "the guest's CID (%lld) and its socket (%s)", (long long)cid,
	    sockbuf);
	if (cid >= 3 && sockbuf[0] != '\0')
		lv_check_guest(&vm, check, (uint32_t)cid, sockbuf);
	check_vsock_path(&vm);

	/* Another guest, another CID; the first's, refused. */
	tap_ok(h_create(c, "vs2", "\"kernel\":\"%s\",\"vsock\":{}",
	    h_env("VMMD_GUEST_DEMO")) == 0 && h_start(c, "vs2") == 0,
	    "vsock: a second VM with vsock starts");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"vs2\"}");
	cid2 = h_int(h_ret(r), "vsock_cid", -1);
	json_object_put(r);
	tap_ok(cid2 >= 3 && cid2 != cid, "vsock: with a CID of its own "
	    "(%lld, the first %lld)", (long long)cid2, (long long)cid);
	tap_ok(h_create(c, "vs3", "\"kernel\":\"%s\",\"vsock\":"
	    "{\"cid\":%lld}", h_env("VMMD_GUEST_DEMO"), (long long)cid) == 0,
	    "vsock: a third VM naming the first's CID is defined");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"vs3\"}");
	tap_ok(h_err_class(r) != NULL && strcmp(h_err_class(r),
	    "bad_state") == 0 && strstr(h_text(r), vm.name) != NULL,
	    "vsock: and refused to start while it runs: %s", h_text(r));
	json_object_put(r);
	h_stop(c, "vs2", true, -1, H_REPLY_MS);
	h_delete(c, "vs2");
	h_delete(c, "vs3");
	show_stats(&vm, "after the vsock checks");
out:
	finish(&vm);
	tap_ok(sockbuf[0] == '\0' || access(sockbuf, F_OK) < 0,
	    "vsock: the socket went with the VM");
}

/*
 * After 128 MiB crossed the share: the device started its backend once
 * and no request queue's kick reached the worker (virtiofsd took every
 * one through the ioeventfds handed to it), the server running (it has
 * the queues).
 */
static void
check_fs_path(struct lg_vm *vm)
{
	struct json_object *r, *o, *dev;
	long long started = -1, passed = -1, failed = -1;
	const char *state = NULL;

	r = h_callf(vm->c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm->name);
	if (json_object_object_get_ex(h_ret(r), "stats", &o)) {
		struct json_object *fs;

		if (json_object_object_get_ex(o, "fs", &fs))
			state = h_str(fs, "state");
		if (json_object_object_get_ex(o, "devices", &dev) &&
		    json_object_object_get_ex(dev, "virtio-fs", &dev)) {
			started = h_int(dev, "starts", -1);
			passed = h_int(dev, "kicks_passed", -1);
			failed = h_int(dev, "failed", -1);
			tap_diag("virtio-fs: %s",
			    json_object_to_json_string(dev));
		}
	}
	check(vm, started == 1 && passed == 0 && failed == 0 &&
	    state != NULL && strcmp(state, "running") == 0, "fs: virtiofsd "
	    "served the queues: 1 start, %lld kicks passed on by the worker, "
	    "%lld requests failed, the server %s", passed, failed,
	    state != NULL ? state : "?");
	json_object_put(r);
}

/*
 * virtio-fs (lfs.h): a writable share, then the same directory
 * read-only in a second boot.
 */
static void
scenario_fs(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm rw = { .d = d, .c = c, .name = "deb-fs" };
	struct lg_vm ro = { .d = d, .c = c, .name = "deb-fsro" };
	char dir[400], extra[600];

	if (access("/usr/lib/qemu/virtiofsd", X_OK) < 0) {
		tap_ok(1, "# SKIP fs: no /usr/lib/qemu/virtiofsd on this "
		    "host (Debian's qemu-system-common)");
		return;
	}
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "fs-share"));
	if (lf_prepare(dir) < 0) {
		tap_ok(0, "fs: the share's files on the host");
		return;
	}
	snprintf(extra, sizeof(extra), ",\"fs\":{\"tag\":\"" LF_TAG
	    "\",\"dir\":\"%s\"}", dir);
	if (boot_with(&rw, "vmlinuz", "stop", cmdline_for("fs"), extra)) {
		lf_check_writable(&rw, check, dir);
		check_fs_path(&rw);
	}
	finish(&rw);
	h_delete(c, rw.name);

	snprintf(extra, sizeof(extra), ",\"fs\":{\"tag\":\"" LF_TAG
	    "\",\"dir\":\"%s\",\"readonly\":true}", dir);
	if (boot_with(&ro, "vmlinuz", "stop", cmdline_for("fsro"), extra))
		lf_check_readonly(&ro, check, dir);
	finish(&ro);
	h_delete(c, ro.name);
}

/*
 * The memory balloon (lballoon.h): a guest of LB_GUEST_MIB with a
 * balloon, memory taken and freed in it, the worker's RSS followed.
 */
static void
scenario_balloon(struct h_daemon *d, struct h_conn *c)
{
	struct lg_vm vm = { .d = d, .c = c, .name = "deb-balloon",
	    .mib = LB_GUEST_MIB };
	double t0 = h_now_ms();

	if (!boot_with(&vm, "vmlinuz", "stop", cmdline_for("balloon"),
	    ",\"balloon\":true"))
		goto out;
	lb_check_guest(&vm, check);
	show_stats(&vm, "after the balloon checks");
out:
	finish(&vm);
	h_delete(c, vm.name);
	tap_diag("balloon: the step took %.1f s", (h_now_ms() - t0) / 1e3);
}

int
main(int argc, char **argv)
{
	struct h_daemon *d;
	struct h_conn *c;
	double t0;
	int r;

	nsteps = argc - 1;
	steps = argv + 1;
	h_init();
	h_env("VMMD_LINUX_GUEST");
	/* Before vmmd: its TAP is made in the namespace it runs in. */
	if ((want("net") || want("usernet") || want("cloud") ||
	    want("snapshot") || want("migrate")) &&
	    (r = ln_enter()) < 0)
		tap_bail("a network namespace for the net steps: %s",
		    strerror(-r));
	t0 = h_now_ms();
	d = h_daemon_start();
	if ((c = h_connect(d)) == NULL)
		tap_bail("cannot connect to vmmd");
	if (want("bzimage") || want("date") || want("stream") ||
	    want("input") || want("pause") || want("rtc") || want("reboot") ||
	    want("stop") || want("stats"))
		scenario_bzimage(d, c);
	if (want("pvh"))
		scenario_pvh(d, c);
	if (want("display") || want("screen") || want("poweroff"))
		scenario_display(d, c);
	if (want("disk") || want("qcow2"))
		scenario_disk(d, c);
	if (want("qcow2"))
		scenario_qcow2(d, c);
	if (want("net"))
		scenario_net(d, c);
	if (want("vsock"))
		scenario_vsock(d, c);
	if (want("fs"))
		scenario_fs(d, c);
	if (want("usernet"))
		scenario_usernet(d, &c);
	if (want("cloud"))
		scenario_cloud(d, c);
	if (want("installer"))
		li_installer(d, c);
	if (want("snapshot"))
		scenario_snapshot(d, c);
	if (want("balloon"))
		scenario_balloon(d, c);
	if (want("migrate"))
		scenario_migrate(d, c);
	tap_diag("scenarios took %.1f s", (h_now_ms() - t0) / 1e3);
	h_close(c);
	return h_done();
}
