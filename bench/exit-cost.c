/*
 * What one port I/O exit costs, in several alternating rounds in one run
 * (the machine is shared and noisy):
 *   (a) a bare KVM_RUN loop: this program, a VM of its own and a guest
 *       of two instructions (out 0x80; jmp back) - the floor;
 *   (b) vmmd with exit statistics off and (c) on: the exits test guest
 *       (tests/guests/exits.c) writing N times to port 0x80;
 *   (d) QEMU (VMMD_BENCH_QEMU, -enable-kvm -M pc) on the same guest.
 * The guests time their loop of writes with the TSC; the floor is timed
 * here, around its KVM_RUN calls, with the same TSC.  Prints the time
 * per exit of each, the ratios to the floor, and the segments of one
 * exit inside vmmd as vm.stats measures them.  A figure, not a test.
 *
 *   VMMD_BIN=... VMMD_GUEST_EXITS=... [VMMD_BENCH_QEMU=qemu-system-x86_64]
 *   bench/exit-cost [ROUNDS [N]]
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "harness.h"
#include "tap.h"

#define MAX_ROUNDS	16
#define PORT		0x80

enum { FLOOR, OFF, ON, QEMU, NKINDS };

static const char *const kind_names[NKINDS] = {
	"(a) bare KVM_RUN loop", "(b) vmmd, stats off", "(c) vmmd, stats on",
	"(d) QEMU -M pc",
};

static double
tsc_hz(void)
{
	double t0 = h_now_ms(), t1;
	uint64_t c0 = __builtin_ia32_rdtsc(), c1;

	h_sleep_ms(500);
	c1 = __builtin_ia32_rdtsc();
	t1 = h_now_ms();
	return (double)(c1 - c0) * 1000.0 / (t1 - t0);
}

/* (a): TSC cycles per exit over n exits, or -1. */
static double
floor_run(unsigned long n)
{
	/* Real mode at 0x1000: out 0x80, al; jmp $-2. */
	static const uint8_t code[] = { 0xe6, PORT, 0xeb, 0xfc };
	struct kvm_userspace_memory_region mr = { 0 };
	struct kvm_sregs sregs;
	struct kvm_regs regs = { .rip = 0x1000, .rflags = 0x2 };
	struct kvm_run *run = MAP_FAILED;
	int kvm = -1, vm = -1, vcpu = -1, size;
	uint8_t *mem = MAP_FAILED;
	unsigned long i;
	uint64_t c0 = 0, c1;
	double ret = -1;

	if ((kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0 ||
	    (vm = ioctl(kvm, KVM_CREATE_VM, 0)) < 0)
		goto out;
	mem = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		goto out;
	memcpy(mem + 0x1000, code, sizeof(code));
	mr.memory_size = 0x10000;
	mr.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &mr) < 0 ||
	    (vcpu = ioctl(vm, KVM_CREATE_VCPU, 0)) < 0 ||
	    (size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0)
		goto out;
	run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    vcpu, 0);
	if (run == MAP_FAILED || ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		goto out;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0 ||
	    ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		goto out;
	/* 1000 to warm up, then n timed. */
	for (i = 0; i < n + 1000; i++) {
		if (i == 1000)
			c0 = __builtin_ia32_rdtsc();
		if (ioctl(vcpu, KVM_RUN, 0) < 0 ||
		    run->exit_reason != KVM_EXIT_IO || run->io.port != PORT) {
			tap_diag("floor: exit %u at %lu", run->exit_reason, i);
			goto out;
		}
	}
	c1 = __builtin_ia32_rdtsc();
	ret = (double)(c1 - c0) / (double)n;
out:
	if (run != MAP_FAILED)
		munmap(run, (size_t)size);
	if (mem != MAP_FAILED)
		munmap(mem, 0x10000);
	if (vcpu >= 0)
		close(vcpu);
	if (vm >= 0)
		close(vm);
	if (kvm >= 0)
		close(kvm);
	return ret;
}

/* The cycles a round of the exits guest reports after text, or -1. */
static double
guest_cycles(const char *text, const char *after)
{
	const char *p = strstr(text, after);

	if (p == NULL || strstr(p, " cycles") == NULL)
		return -1;
	return strtod(p + strlen(after), NULL);
}

/*
 * (b), (c): one round on the running guest, statistics off, on, or on
 * with segments (seg set: then the reply with them); cycles per exit,
 * or -1.
 */
static double
vmmd_round(struct h_conn *c, struct h_console *con, int round, bool on,
    unsigned long n, struct json_object **seg)
{
	struct json_object *r;
	char want[64];
	size_t from;

	r = h_callf(c, H_REPLY_MS, "vm.stats",
	    "{\"name\":\"ex\",\"enable\":%s,\"segments\":%s,"
	    "\"reset\":true}", on ? "true" : "false",
	    on && seg != NULL ? "true" : "false");
	if (h_ret(r) == NULL) {
		tap_diag("vm.stats: %s", h_text(r));
		json_object_put(r);
		return -1;
	}
	json_object_put(r);
	snprintf(want, sizeof(want), "exits: round %d done: ", round);
	from = con->mark;
	if (h_console_write(con, "g", 1) < 0 ||
	    h_expect(con, want, 600000) < 0 ||
	    h_expect(con, " cycles", 10000) < 0)
		return -1;
	if (on && seg != NULL) {
		json_object_put(*seg);
		*seg = h_callf(c, H_REPLY_MS, "vm.stats",
		    "{\"name\":\"ex\",\"segments\":true,\"vcpu\":0}");
	}
	return guest_cycles(con->buf + from, want) / (double)n;
}

/* (d): QEMU boots the guest for one automatic round; cycles, or -1. */
static double
qemu_round(const char *qemu, const char *guest, unsigned long n)
{
	char append[128], serial[128], path[] = "/tmp/exit-cost-qemu.log";
	char *argv[] = { (char *)qemu, "-enable-kvm", "-M", "pc", "-cpu",
		"host", "-m", "32", "-nodefaults", "-display", "none",
		"-monitor", "none", "-serial", serial, "-kernel",
		(char *)guest, "-append", append, NULL };
	double deadline, ret = -1;
	char *text;
	pid_t pid;

	snprintf(append, sizeof(append),
	    "outs=%lu reads=0 ap_outs=0 auto=1", n);
	snprintf(serial, sizeof(serial), "file:%s", path);
	unlink(path);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		execvp(qemu, argv);
		_exit(127);
	}
	deadline = h_now_ms() + 600000;
	while (h_now_ms() < deadline) {
		text = h_read_file(path, NULL);
		if (text != NULL)
			ret = guest_cycles(text, "exits: round 1 done: ");
		free(text);
		if (ret >= 0)
			break;
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			pid = -1;
			break;
		}
		h_sleep_ms(200);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ret < 0 ? -1 : ret / (double)n;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median (or with lowest, the minimum) of the figures that came. */
static double
median(const double *v, int n, bool lowest)
{
	double s[MAX_ROUNDS];
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (v[i] >= 0)
			s[k++] = v[i];
	if (k == 0)
		return -1;
	qsort(s, (size_t)k, sizeof(s[0]), cmp_double);
	if (lowest)
		return s[0];
	return k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

/* The segments of the port's row, averaged per exit. */
static void
print_segments(struct json_object *reply, double per_us)
{
	static const char *const segs[] = { "exit", "dispatch", "handler",
		"irq", "reentry" };
	struct json_object *rows, *row = NULL, *seg, *o, *v;
	double count, total = 0, x;
	char key[32];
	size_t i;

	if (!json_object_object_get_ex(h_ret(reply), "exits", &rows))
		return;
	for (i = 0; i < json_object_array_length(rows); i++) {
		o = json_object_array_get_idx(rows, i);
		if (strcmp(h_str(o, "name") ?: "", "IO 0x80 out") == 0)
			row = o;
	}
	if (row == NULL || !json_object_object_get_ex(row, "segments", &seg))
		return;
	count = (double)h_int(seg, "count", 1);
	tap_diag("one IO 0x80 out exit inside vmmd (stats on with segments, "
	    "a round more, averages over %.0f exits, from vm.stats):", count);
	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "%s_us", segs[i]);
		json_object_object_get_ex(seg, key, &v);
		x = json_object_get_double(v) / count;
		total += x;
		tap_diag("  %-9s %9.3f us", segs[i], x);
	}
	tap_diag("  %-9s %9.3f us (vmmd's side of the exit; the guest saw "
	    "%.3f us a round trip)", "total", total, per_us);
	json_object_object_get_ex(h_ret(reply), "guest", &o);
	if (o != NULL && json_object_object_get_ex(o, "avg_us", &v))
		tap_diag("  %-9s %9.3f us a KVM_RUN (TIMEINGUEST)", "in KVM",
		    json_object_get_double(v));
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000;
	const char *qemu = getenv("VMMD_BENCH_QEMU"), *guest;
	double per[NKINDS][MAX_ROUNDS], med[NKINDS], low[NKINDS], hz, x;
	struct json_object *seg = NULL;
	struct h_daemon *d;
	struct h_conn *c;
	struct h_console *con;
	int r, k, ok = 1;
	char line[256];

	if (rounds < 1 || rounds > MAX_ROUNDS || n < 100) {
		fprintf(stderr, "usage: exit-cost [ROUNDS (1-%d) [N >= 100]]\n",
		    MAX_ROUNDS);
		return 2;
	}
	h_init();
	guest = h_env("VMMD_GUEST_EXITS");
	hz = tsc_hz();
	c = h_setup(&d);
	snprintf(line, sizeof(line), "\"kernel\":\"%s\",\"cmdline\":"
	    "\"outs=%lu reads=0 ap_outs=0\"", guest, n);
	if (h_create(c, "ex", "%s", line) < 0 || h_start(c, "ex") < 0 ||
	    (con = h_console_open(d, "ex")) == NULL ||
	    h_expect(con, "exits: ready", H_BOOT_MS) < 0) {
		tap_ok(0, "the exits guest runs under vmmd");
		return h_done();
	}
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < NKINDS; k++)
			per[k][r] = -1;
		per[FLOOR][r] = floor_run(n);
		per[OFF][r] = vmmd_round(c, con, 2 * r + 1, false, n, NULL);
		per[ON][r] = vmmd_round(c, con, 2 * r + 2, true, n, NULL);
		if (qemu != NULL && *qemu != '\0')
			per[QEMU][r] = qemu_round(qemu, guest, n);
		tap_diag("round %d: %.0f, %.0f, %.0f, %.0f cycles an exit",
		    r + 1, per[FLOOR][r], per[OFF][r], per[ON][r],
		    per[QEMU][r]);
	}
	tap_diag("%s", "");
	tap_diag("port 0x80 writes: %lu an exit loop, %d rounds alternating "
	    "a b c d; TSC %.3f GHz", n, rounds, hz / 1e9);
	if (getenv("VMMD_BENCH_EMULATED") != NULL) {
		tap_diag("TIMES ARE EMULATED: this runs in the nested test "
		    "host under QEMU's TCG;");
		tap_diag("compare them only with each other, in this table.");
	} else {
		/*
		 * Where CPL0 code is emulated (a software KVM backend),
		 * each guest instruction costs as much as a tenth of an
		 * exit: (a) runs two real-mode instructions an exit, the
		 * exits guest's C loop a few more, which (a) does not pay.
		 * (b) against (d) is the same guest on both VMMs.
		 */
		tap_diag("(a) loops on 2 guest instructions an exit, (b)-(d) "
		    "on the exits guest's loop: compare (b) with (d) for "
		    "the VMMs alone.");
	}
	snprintf(line, sizeof(line), "%-24s", "us per exit");
	for (r = 0; r < rounds; r++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
		    "  round%-3d", r + 1);
	tap_diag("%s    median  vs (a)       min  vs (a)", line);
	for (k = 0; k < NKINDS; k++) {
		med[k] = median(per[k], rounds, false);
		low[k] = median(per[k], rounds, true);
		snprintf(line, sizeof(line), "%-24s", kind_names[k]);
		for (r = 0; r < rounds; r++)
			snprintf(line + strlen(line),
			    sizeof(line) - strlen(line), "  %8.3f",
			    per[k][r] < 0 ? NAN : per[k][r] * 1e6 / hz);
		tap_diag("%s  %8.3f  %6.3f  %8.3f  %6.3f", line,
		    med[k] < 0 ? NAN : med[k] * 1e6 / hz,
		    med[k] < 0 || med[FLOOR] <= 0 ? NAN : med[k] / med[FLOOR],
		    low[k] < 0 ? NAN : low[k] * 1e6 / hz,
		    low[k] < 0 || low[FLOOR] <= 0 ? NAN : low[k] / low[FLOOR]);
		if (med[k] < 0 && (k != QEMU || qemu != NULL))
			ok = 0;
	}
	if (med[OFF] > 0 && med[ON] > 0 && med[FLOOR] > 0)
		tap_diag("stats on vs off: %+.1f%% an exit by the medians, "
		    "%+.1f%% by the minima (target: under 2%%); off vs the "
		    "floor: %+.1f%%, %+.1f%% (target: within 3%%)",
		    (med[ON] / med[OFF] - 1) * 100,
		    (low[ON] / low[OFF] - 1) * 100,
		    (med[OFF] / med[FLOOR] - 1) * 100,
		    (low[OFF] / low[FLOOR] - 1) * 100);
	tap_diag("%s", "");
	/* One round more, by segments (they cost three clock reads more). */
	x = vmmd_round(c, con, 2 * rounds + 1, true, n, &seg);
	if (seg != NULL && x > 0)
		print_segments(seg, x * 1e6 / hz);
	json_object_put(seg);
	h_console_close(con);
	tap_ok(ok, "every part ran");
	return h_done();
}
