/* See lsnapshot.h. */
#include <stdio.h>
#include <stdlib.h>
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
	char *out;
	int st = -1;

	out = lg_cmd(vm, cmd, &st, LG_CMD_MS);
	if (out != NULL && st == 0)
		return out;
	tap_diag("%s: '%s' exited %d: %s", vm->name, cmd, st,
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return NULL;
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

	/*
	 * Clones go here: restoring the same snapshot twice with --as gives
	 * two guests side by side, each to be checked as the one below.
	 */

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
