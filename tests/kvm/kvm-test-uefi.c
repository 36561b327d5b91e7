/*
 * OVMF from power-on with UEFI variables kept with the VM: "firmware":
 * "uefi" (vmctl create --firmware uefi) makes STATEDIR/nvram/NAME.fd
 * from Debian's OVMF_VARS_4M.fd (mode 0600, a copy of it), vmctl info
 * names the firmware's files, clone copies the file, rename moves it,
 * delete keeps it (and says so) unless --remove-data, a kept one blocks
 * a new VM of that name, and it outlives a restart of the daemon.  A
 * wrong-sized or corrupt file is a start error naming it.
 *
 * OVMF starts from its mapped flash (CODE at 0xffc84000, VARS below at
 * 0xffc00000) and reads fw_cfg by DMA; on our machines' /dev/kvm its
 * real-mode and 32-bit code are emulated (about 0.6 us an instruction),
 * so only what it reaches early is asserted, within a generous wait
 * (see test_start()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define OVMF_CODE	"/usr/share/OVMF/OVMF_CODE_4M.fd"
#define OVMF_VARS	"/usr/share/OVMF/OVMF_VARS_4M.fd"
#define FWCFG_MS	300000	/* OVMF's first fw_cfg reads, emulated */

static const char *
nvram(struct h_daemon *d, const char *name)
{
	static char buf[2][512];
	static int turn;
	char *p = buf[turn++ % 2];

	snprintf(p, sizeof(buf[0]), "%s/nvram/%s.fd", d->state, name);
	return p;
}

/* Whether path is a regular file whose bytes are the template's. */
static bool
same_as_template(const char *path)
{
	FILE *a = fopen(path, "rb"), *b = fopen(OVMF_VARS, "rb");
	bool same = a != NULL && b != NULL;
	int ca, cb;

	while (same) {
		ca = getc(a);
		cb = getc(b);
		if (ca != cb)
			same = false;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (a != NULL)
		fclose(a);
	if (b != NULL)
		fclose(b);
	return same;
}

static bool
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* vmctl create, info, clone, rename, delete: the NVRAM file's life. */
static void
test_life(struct h_daemon *d)
{
	struct stat st;
	int rc;

	h_ctl_use(d, H_REPLY_MS);
	rc = h_ctl("create", "u1", "--firmware", "uefi", "--memory", "256",
	    NULL);
	tap_ok(rc == 0, "vmctl create --firmware uefi (%s)", h_flat(h_err()));
	tap_ok(stat(nvram(d, "u1"), &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 07777) == 0600, "%s made, mode 0600",
	    nvram(d, "u1"));
	tap_ok(same_as_template(nvram(d, "u1")), "... a copy of %s",
	    OVMF_VARS);
	tap_ok(h_ctl("info", "u1", NULL) == 0 &&
	    strstr(h_out(), "uefi") != NULL &&
	    strstr(h_out(), OVMF_CODE) != NULL &&
	    strstr(h_out(), nvram(d, "u1")) != NULL,
	    "info names the firmware, its image and the NVRAM file");
	tap_ok(h_ctl("export", "u1", NULL) == 0 &&
	    strstr(h_out(), "\"firmware\": \"uefi\"") != NULL,
	    "export shows firmware uefi");

	tap_ok(h_ctl("clone", "u1", "u2", NULL) == 0 &&
	    same_as_template(nvram(d, "u2")) && exists(nvram(d, "u1")),
	    "clone copies the NVRAM file (%s)", h_flat(h_err()));
	tap_ok(h_ctl("rename", "u2", "u3", NULL) == 0 &&
	    exists(nvram(d, "u3")) && !exists(nvram(d, "u2")),
	    "rename moves it (%s)", h_flat(h_err()));
	tap_ok(h_ctl("delete", "u3", NULL) == 0 &&
	    strstr(h_out(), "kept: ") != NULL &&
	    strstr(h_out(), nvram(d, "u3")) != NULL && exists(nvram(d, "u3")),
	    "delete keeps it and says so (%s)", h_flat(h_out()));
	rc = h_ctl("create", "u3", "--firmware", "uefi", NULL);
	tap_ok(rc != 0 && strstr(h_err(), nvram(d, "u3")) != NULL &&
	    strstr(h_err(), "remove_data") != NULL,
	    "a kept one blocks a new VM of that name: %s", h_flat(h_err()));
	tap_ok(h_ctl("delete", "u3", "--remove-data", NULL) == 0 &&
	    strstr(h_out(), "removed: ") != NULL && !exists(nvram(d, "u3")),
	    "delete --remove-data removes it (%s)", h_flat(h_out()));
	tap_ok(h_ctl("create", "u3", "--firmware", "uefi", NULL) == 0 &&
	    h_ctl("delete", "u3", "--remove-data", NULL) == 0 &&
	    !exists(nvram(d, "u3")), "the name is free again");
	rc = h_ctl("create", "b1", "--firmware", "bios", NULL);
	tap_ok(rc == 0 && !exists(nvram(d, "b1")),
	    "firmware bios: no NVRAM file");
	h_ctl("delete", "b1", "--remove-data", NULL);
}

/* An error reply's description, "" for anything else. */
static const char *
desc(struct json_object *reply)
{
	struct json_object *e, *v;

	if (json_object_object_get_ex(reply, "error", &e) &&
	    json_object_object_get_ex(e, "desc", &v))
		return json_object_get_string(v);
	return "";
}

/* Starting with a broken NVRAM file fails, naming it. */
static void
test_broken(struct h_daemon *d, struct h_conn *c)
{
	struct json_object *reply;
	const char *path = nvram(d, "ub");
	FILE *f;

	tap_ok(h_create(c, "ub", "\"firmware\":\"uefi\",\"memory_mib\":64") ==
	    0, "created ub");
	if (truncate(path, 4096) < 0)
		tap_diag("truncate: %m");
	reply = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"ub\"}");
	tap_ok(strstr(desc(reply), path) != NULL &&
	    strstr(desc(reply), "4096 bytes") != NULL,
	    "a wrong-sized NVRAM file: start refused, naming it (%s)",
	    desc(reply));
	json_object_put(reply);
	/* The template's size, but no firmware volume. */
	f = fopen(path, "r+b");
	if (f != NULL) {
		char zero[4096] = { 0 };

		for (int i = 0; i < 132; i++)
			fwrite(zero, 1, sizeof(zero), f);
		fclose(f);
	}
	reply = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"ub\"}");
	tap_ok(strstr(desc(reply), path) != NULL &&
	    strstr(desc(reply), "corrupt") != NULL,
	    "a corrupt NVRAM file: start refused, naming it (%s)",
	    desc(reply));
	json_object_put(reply);
	unlink(path);
	reply = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"ub\"}");
	tap_ok(strstr(desc(reply), path) != NULL,
	    "a missing NVRAM file: start refused, naming it (%s)",
	    desc(reply));
	json_object_put(reply);
	reply = h_callf(c, H_REPLY_MS, "vm.delete", "{\"name\":\"ub\"}");
	json_object_put(reply);
}

/* fw-cfg's DMA transfers so far, -1 without the device. */
static int64_t
fwcfg_dma(struct h_conn *c, const char *name)
{
	struct json_object *reply = NULL, *fw;
	int64_t n;

	fw = h_info_stats(c, name, "devices", "fw-cfg", &reply);
	n = fw != NULL ? h_int(fw, "dma_transfers", -1) : -1;
	json_object_put(reply);
	return n;
}

/*
 * Where this host's KVM stopped OVMF, if it did: the vCPU's rip from the
 * worker's "KVM internal error" line in the daemon's log, else 0.
 */
static unsigned long long
stopped_at(struct h_daemon *d)
{
	char *log = h_read_file(d->log, NULL), *p;
	unsigned long long rip = 0;

	if (log != NULL && (p = strstr(log, "KVM internal error")) != NULL &&
	    (p = strstr(p, "rip 0x")) != NULL)
		rip = strtoull(p + 4, NULL, 16);
	free(log);
	return rip;
}

/*
 * OVMF runs from the mapped flash and reads fw_cfg.  Where the host's
 * KVM emulates OVMF's first code (ours: about 0.6 us an instruction),
 * its emulator may also stop it early: Debian's OVMF 2022.11 runs x87
 * FWAIT in SEC, which KVM's instruction emulator does not know ("KVM
 * internal error 1").  Then that it got there, well past the reset
 * vector in its code flash, is what is checked, and the fw_cfg checks
 * are skipped; the nested pass of the kvm suite runs them.
 */
/* The test build holds OVMF itself at its first fw_cfg DMA (main). */
static bool hold;
static int holds;		/* the hook's log lines so far */

/* SeaBIOS's first DMA: seconds after power-on, emulated; room for load. */
#define HOLD_MS		120000
#define HELD		"test hook: held at the first fw_cfg DMA"

/*
 * The hold itself, where it can be seen on every host: SeaBIOS reads
 * fw_cfg by DMA soon after power-on (on this /dev/kvm too, where OVMF
 * stops before it does), and stays paused there.
 */
static void
test_hold_bios(struct h_daemon *d, struct h_conn *c)
{
	char state[32] = "";
	int64_t n;

	if (!hold || access(H_BIOS_IMAGE, R_OK) != 0) {
		tap_ok(1, "SeaBIOS held at its first fw_cfg DMA # SKIP %s",
		    hold ? "no SeaBIOS" : "no test hooks");
		return;
	}
	if (h_create(c, "hb", "\"firmware\":\"bios\"") != 0 ||
	    h_start(c, "hb") != 0)
		tap_bail("a SeaBIOS VM for the hold");
	tap_ok(h_wait_state(c, "hb", "paused", HOLD_MS) == 0 &&
	    h_file_expect(d->log, HELD, ++holds, H_REPLY_MS) == 0,
	    "SeaBIOS held at its first fw_cfg DMA by the worker");
	/* The loop pauses it: the vCPU may do a few more first. */
	n = fwcfg_dma(c, "hb");
	tap_ok(n >= 1, "with %lld DMA transfers done", (long long)n);
	tap_ok(strcmp(h_state(c, "hb", state, sizeof(state)) ?: "",
	    "paused") == 0 && fwcfg_dma(c, "hb") == n,
	    "and still there (%s)", state);
	h_stop(c, "hb", true, -1, H_REPLY_MS);
	h_delete(c, "hb");
}

static void
test_start(struct h_daemon *d, struct h_conn *c)
{
	struct json_object *reply = NULL, *st;
	unsigned long long rip;
	char state[32] = "";
	double t0, t;
	int64_t n = 0;

	t0 = h_now_ms();
	tap_ok(h_start(c, "u1") == 0, "u1 started");
	/*
	 * The test build's worker pauses OVMF at its first fw_cfg DMA
	 * itself (VMMD_TEST_HOLD, set in main): wait for that state, or for
	 * the end this host's KVM may bring first.  Without the hooks, poll
	 * and pause, hoping to be in time: OVMF's DXE is some 2 s of guest
	 * time after its first DMA.
	 */
	while (h_now_ms() - t0 < FWCFG_MS &&
	    h_state(c, "u1", state, sizeof(state)) != NULL &&
	    strcmp(state, "running") == 0 &&
	    (hold || (n = fwcfg_dma(c, "u1")) <= 0))
		h_sleep_ms(hold ? 50 : 5);
	if (hold && strcmp(state, "paused") == 0)
		n = fwcfg_dma(c, "u1");
	t = h_now_ms() - t0;
	/*
	 * Held right there, for the QEMU beneath the nested test host
	 * (Debian 12's 7.2, TCG, emulated SVM) cannot run OVMF's DXE.
	 * Sampled every 0.2 s while paused (rip, CS, CR0, KVM's counters):
	 * the first fw_cfg DMA at about 1.5 s, 32-bit PEI in RAM, long
	 * mode by 2.4 s, DXE (CS 0x38) by 2.7 s, interrupts on by 3.2 s,
	 * KVM's first interrupt injections by 3.5 s, and QEMU aborted
	 * right after: "tcg_handle_interrupt: assertion failed:
	 * (qemu_mutex_iothread_locked())".  Its stack
	 * (gdb) has that called with CPU_INTERRUPT_VIRQ straight from the
	 * code translated for this guest's "pop rax; mov cr8, rax", after
	 * the CR8-write intercept check, with the guest's rsp in OVMF's
	 * stack: edk2's common interrupt exit restores CR8, and QEMU's SVM
	 * emulation of a guest's CR8 write, while the host's KVM has a
	 * virtual interrupt pending (V_IRQ: one that came while the
	 * handler ran with IF clear), raises it without the lock its TCG
	 * requires.  QEMU's fault, not ours: the same interrupts and
	 * CR8 writes are fine on a PC.  Linux does not write CR8, so the
	 * other test guests do not meet it.
	 */
	if (hold && n > 0)
		tap_ok(h_file_expect(d->log, HELD, ++holds, H_REPLY_MS) == 0,
		    "the worker held OVMF at its first fw_cfg DMA (%lld "
		    "transfers when paused)", (long long)n);
	else if (n > 0) {
		reply = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"u1\"}");
		tap_diag("vm.pause: %s", h_text(reply));
		json_object_put(reply);
		reply = NULL;
	}
	tap_diag("after %.0f ms: %s, %lld fw_cfg DMA transfers", t,
	    n > 0 && !hold ? "running" : state, (long long)n);
	h_diag_lines("console", h_console_log(d, "u1"));
	/* The worker's last line may reach the log after its end does. */
	if (n <= 0 && strcmp(state, "running") != 0 &&
	    strcmp(state, "paused") != 0)
		h_file_expect(d->log, "KVM internal error", 1, H_REPLY_MS);
	if (n <= 0 && strcmp(state, "crashed") == 0 &&
	    (rip = stopped_at(d)) != 0) {
		tap_ok(rip >= 0xffc84000ULL && rip < 0xfffff000ULL,
		    "OVMF ran from its code flash (0xffc84000-0xffffffff) "
		    "past the reset vector, to rip 0x%llx", rip);
		tap_ok(1, "OVMF read fw_cfg by DMA # SKIP this host's KVM "
		    "stopped OVMF at rip 0x%llx (an instruction its "
		    "emulator lacks)", rip);
		tap_ok(exists(nvram(d, "u1")), "the NVRAM file stays");
		return;
	}
	tap_ok(n > 0, "OVMF read fw_cfg by DMA (%lld transfers, %.0f ms)",
	    (long long)n, t);
	st = h_info_stats(c, "u1", "devices", "fw-cfg", &reply);
	tap_ok(st != NULL && h_int(st, "dma_errors", -1) == 0 &&
	    h_int(st, "dma_dropped", -1) == 0, "... without an error (%s)",
	    st != NULL ? h_text(st) : "no fw-cfg device");
	json_object_put(reply);
	reply = NULL;
	st = h_info_stats(c, "u1", "devices", "pflash", &reply);
	tap_ok(st != NULL, "the variables' flash is there (%s)",
	    st != NULL ? h_text(st) : "no pflash device");
	json_object_put(reply);
	reply = NULL;
	/* Where it got to, for the record. */
	tap_diag("unknown I/O: %s", h_text(h_info_stats(c, "u1",
	    "unknown_io", NULL, &reply)));
	json_object_put(reply);
	reply = NULL;
	tap_diag("vCPU 0: %s", h_text(h_info_stats(c, "u1", "vcpu_regs",
	    NULL, &reply)));
	json_object_put(reply);
	h_diag_lines("console", h_console_log(d, "u1"));
	tap_ok(h_stop(c, "u1", true, -1, H_REPLY_MS) == 0, "force stop");
	tap_ok(exists(nvram(d, "u1")), "the NVRAM file stays");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	if (access(OVMF_CODE, R_OK) != 0 || access(OVMF_VARS, R_OK) != 0)
		tap_skip_all("%s, %s: not installed (Debian's ovmf)",
		    OVMF_CODE, OVMF_VARS);
	hold = strcmp(getenv("VMMD_TEST_HOOKS") ?: "", "true") == 0;
	if (hold)
		setenv("VMMD_TEST_HOLD", "fw-cfg-dma", 1);
	c = h_setup(&d);
	test_life(d);
	test_broken(d, c);
	test_hold_bios(d, c);
	test_start(d, c);
	/* A host reboot, as far as vmmd sees one: the file is kept. */
	h_close(c);
	tap_ok(h_daemon_restart(d, H_REPLY_MS) == 0 && exists(nvram(d, "u1")),
	    "after a restart of the daemon the NVRAM file is there");
	c = h_connect(d);
	tap_ok(h_ctl("delete", "u1", "--remove-data", NULL) == 0 &&
	    !exists(nvram(d, "u1")), "u1 deleted with its data");
	h_close(c);
	return h_done();
}
