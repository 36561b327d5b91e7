/* See lsnapshot.h. */
#include <stdio.h>
#include <stdlib.h>
#include <json-c/json.h>
#include <string.h>
#include <unistd.h>

#include "lsnapshot.h"
#include "tap.h"

/* What the loop writes: "N vmmd-snap-line", N from 1. */
#define LS_WORD		"vmmd-snap-line"
/*
 * The loop: a builtin echo per line, a pause every 100 lines so that the
 * file grows by about 2 KiB a second whatever the machine's speed (the
 * disk is 32 MiB).  Its pid in /tmp/loop.pid.
 */
#define LS_LOOP		"i=0; while :; do i=$((i + 1)); echo \"$i " LS_WORD \
			"\"; [ $((i % 100)) = 0 ] && sleep 1; done " \
			">>/mnt/count & echo $! >/tmp/loop.pid"
/*
 * The file's shape, by awk: lines, the first line that is not "NR WORD"
 * (0: none), and the last number.
 */
#define LS_AWK		"awk 'BEGIN { bad = 0 } { if (!bad && (NF != 2 || " \
			"$1 != NR || $2 != \"" LS_WORD "\")) bad = NR; " \
			"last = $1 } END { print \"lines\", NR, \"bad\", " \
			"bad, \"last\", last }' /mnt/count"

/* "lines L bad B last N" from out; false if absent. */
static bool
ls_shape(const char *out, long *lines, long *bad, long *last)
{
	const char *p = out != NULL ? strstr(out, "lines ") : NULL;

	return p != NULL && sscanf(p, "lines %ld bad %ld last %ld", lines,
	    bad, last) == 3;
}

/* cmd's output when it exits 0, else NULL with a diagnostic. */
static char *
ls_cmd(struct lg_vm *vm, const char *cmd)
{
	return lg_cmd_ok(vm, cmd, LG_CMD_MS);
}

/* The guest's date +%s, or -1. */
static long
ls_date(struct lg_vm *vm)
{
	char *out = ls_cmd(vm, "date +%s");
	long t = out != NULL ? atol(out) : -1;

	free(out);
	return t;
}

/* How many lines the loop wrote so far, or -1. */
static long
ls_lines(struct lg_vm *vm)
{
	char *out = ls_cmd(vm, "wc -l </mnt/count");
	long n = out != NULL ? atol(out) : -1;

	free(out);
	return n;
}

#define LS_CLONES	2

/*
 * The clones' TAPs: each its own, as the recorded one (the snapshot's
 * VM's) may be held; user-mode networking would do as well where passt
 * is installed, which the nested test host is not.
 */
static const char *const ls_clone_taps[LS_CLONES] = { "vmmdclone1",
	"vmmdclone2" };

/*
 * The guest's eth0 as its kernel has it, then again after its driver
 * let go of the device and took it again (reading the MAC from the
 * device's config space as at boot: the kernel that goes on from a
 * snapshot keeps what it read then): "MAC-THEN MAC-NOW", or NULL.
 */
#define LS_REBIND	"d=$(basename $(readlink " \
			"/sys/class/net/eth0/device)) && " \
			"m=$(cat /sys/class/net/eth0/address) && " \
			"echo $d >/sys/bus/virtio/drivers/virtio_net/unbind " \
			"&& echo $d >/sys/bus/virtio/drivers/virtio_net/bind " \
			"&& echo \"mac $m $(cat /sys/class/net/eth0/address)\""

/* name's first card's MAC as vm.info shows it, into mac (or ""). */
static void
ls_vm_mac(struct lg_vm *vm, char *mac, size_t len)
{
	struct json_object *r, *net = NULL;
	const char *s;

	mac[0] = '\0';
	r = h_callf(vm->c, LG_CMD_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm->name);
	if (h_ret(r) != NULL && json_object_object_get_ex(h_ret(r), "net",
	    &net) && json_object_is_type(net, json_type_array))
		net = json_object_array_get_idx(net, 0);
	if (net != NULL && (s = h_str(net, "mac")) != NULL)
		snprintf(mac, len, "%s", s);
	json_object_put(r);
}

/* The clones of the snapshot in dir of vm (stopped): see lsnapshot.h. */
static bool
ls_check_clones(struct lg_vm *vm, lg_check_fn check, const char *dir)
{
	struct lg_vm cl[LS_CLONES];
	char net[64], then[LS_CLONES][32], now[LS_CLONES][32];
	char want[LS_CLONES][32];
	struct h_proc p;
	double t0 = h_now_ms(), t1;
	char *out, st[32];
	bool ok = true;
	int i, rc;

	memset(cl, 0, sizeof(cl));
	for (i = 0; i < LS_CLONES; i++) {
		cl[i].d = vm->d;
		cl[i].c = vm->c;
		snprintf(cl[i].name, sizeof(cl[i].name), "%.50s-c%d",
		    vm->name, i + 1);
		snprintf(net, sizeof(net), "tap=%s", ls_clone_taps[i]);
		t1 = h_now_ms();
		rc = h_vmctl(vm->d, &p, LG_BOOT_MS, "restore", dir, "--as",
		    cl[i].name, "--net", net, NULL);
		ok = check(&cl[i], rc == 0, "vmctl restore DIR --as %s --net "
		    "%s (%.1f s) %s%s", cl[i].name, net, (h_now_ms() - t1) /
		    1e3, p.obuf != NULL ? h_flat(p.obuf) : "", p.ebuf != NULL ?
		    h_flat(p.ebuf) : "") && ok;
		h_proc_free(&p);
	}
	for (i = 0; ok && i < LS_CLONES; i++) {
		then[i][0] = now[i][0] = '\0';
		ls_vm_mac(&cl[i], want[i], sizeof(want[i]));
		ok = lg_attach(&cl[i]) == 0 &&
		    lg_wait_shell(&cl[i], LG_CMD_MS) == 0;
		h_state(vm->c, cl[(i + 1) % LS_CLONES].name, st, sizeof(st));
		if (!check(&cl[i], ok && strcmp(st, "running") == 0,
		    "%s: the shell answers on the console, beside %s (%s)",
		    cl[i].name, cl[(i + 1) % LS_CLONES].name, st)) {
			ok = false;
			break;
		}
		out = ls_cmd(&cl[i], LS_REBIND);
		if (out == NULL || sscanf(strstr(out, "mac ") != NULL ?
		    strstr(out, "mac ") : "", "mac %31s %31s", then[i],
		    now[i]) != 2)
			then[i][0] = now[i][0] = '\0';
		free(out);
		tap_diag("%s: eth0 %s as restored, %s once virtio_net took "
		    "the device again; vm.info: %s", cl[i].name, then[i],
		    now[i], want[i]);
		ok = check(&cl[i], now[i][0] != '\0' && strcmp(now[i],
		    want[i]) == 0, "%s: /sys/class/net/eth0/address is its "
		    "own MAC %s", cl[i].name, now[i]) && ok;
	}
	if (ok)
		check(vm, strcmp(now[0], now[1]) != 0, "the clones' MACs "
		    "differ: %s, %s", now[0], now[1]);
	for (i = 0; i < LS_CLONES; i++) {
		lg_detach(&cl[i]);
		h_stop(vm->c, cl[i].name, true, -1, LG_CMD_MS);
		h_delete(vm->c, cl[i].name);
	}
	tap_diag("snapshot: the clones took %.1f s", (h_now_ms() - t0) / 1e3);
	return ok;
}

bool
ls_check_restore(struct lg_vm *vm, lg_check_fn check, const char *dir)
{
	long before = -1, after = -1, d0, d1, lines = -1, bad = -1, last = -1;
	struct h_proc p;
	double t0;
	char *out;
	bool ok;	/* a check's arguments are evaluated in no order */
	int st;

	/* The file made first: the loop may open it only later. */
	out = ls_cmd(vm, "mke2fs -q /dev/vda && mount -t ext2 /dev/vda /mnt "
	    "&& : >/mnt/count && " LS_LOOP);
	if (!check(vm, out != NULL, "a loop appends numbered lines to a "
	    "file on ext2 on the overlay disk")) {
		free(out);
		return false;
	}
	free(out);
	/* Writing for a while: past its first pause at least. */
	for (t0 = h_now_ms(); h_now_ms() - t0 < LG_CMD_MS &&
	    (before = ls_lines(vm)) >= 0 && before < 150;)
		h_sleep_ms(500);
	d0 = ls_date(vm);
	check(vm, before >= 150 && d0 > 0, "the loop has written %ld lines; "
	    "the guest's date is %ld", before, d0);

	/* The snapshot stops the VM; the loop is in the middle of a line. */
	lg_detach(vm);
	t0 = h_now_ms();
	st = h_vmctl(vm->d, &p, LG_BOOT_MS, "snapshot", vm->name, dir, NULL);
	check(vm, st == 0 && h_wait_state(vm->c, vm->name, "stopped",
	    LG_CMD_MS) == 0, "vmctl snapshot %s DIR: stopped (%.1f s) %s%s",
	    vm->name, (h_now_ms() - t0) / 1e3, p.obuf != NULL ?
	    h_flat(p.obuf) : "", p.ebuf != NULL ? h_flat(p.ebuf) : "");
	h_proc_free(&p);
	if (st != 0)
		return false;

	/* Two clones side by side, then the VM itself. */
	ls_check_clones(vm, check, dir);

	t0 = h_now_ms();
	st = h_vmctl(vm->d, &p, LG_BOOT_MS, "restore", vm->name, dir, NULL);
	check(vm, st == 0, "vmctl restore %s DIR (%.1f s) %s%s", vm->name,
	    (h_now_ms() - t0) / 1e3, p.obuf != NULL ? h_flat(p.obuf) : "",
	    p.ebuf != NULL ? h_flat(p.ebuf) : "");
	h_proc_free(&p);
	if (st != 0)
		return false;
	ok = lg_attach(vm) == 0 && lg_wait_shell(vm, LG_CMD_MS) == 0;
	if (!check(vm, ok, "restored: the shell answers on the console "
	    "(%.1f s after vmctl restore)", (h_now_ms() - t0) / 1e3))
		return false;
	d1 = ls_date(vm);
	check(vm, d1 >= d0, "restored: date did not go backwards (%ld, "
	    "%ld before the snapshot)", d1, d0);
	/* The loop goes on: more lines than before, then it is stopped. */
	for (t0 = h_now_ms(); h_now_ms() - t0 < LG_CMD_MS &&
	    (after = ls_lines(vm)) >= 0 && after <= before + 100;)
		h_sleep_ms(500);
	out = ls_cmd(vm, "kill $(cat /tmp/loop.pid); sleep 1; sync; " LS_AWK);
	ok = ls_shape(out, &lines, &bad, &last);
	check(vm, ok && bad == 0 && lines == last && lines > before + 100,
	    "restored: the loop went on and its file is whole: %ld lines "
	    "numbered 1 to %ld, none broken (first bad line %ld), %ld "
	    "before the snapshot",
	    lines, last, bad, before);
	free(out);
	out = ls_cmd(vm, "umount /mnt");
	free(out);
	return true;
}

void
ls_remove(const char *dir)
{
	static const char *const files[] = { "manifest.json", "memory",
	    "state", "manifest.json.tmp", "memory.tmp", "state.tmp" };
	char path[4096];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
