/*
 * vmctl end to end, the real binary against a private vmmd: exit
 * statuses, human and JSON output, one-line errors, the console from a
 * pipe, run (a transient guest), a display's password, and create's
 * refusals of VMs that could never start.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* What the guests print (tests/guests/). */
#define ECHO_READY	"echo: ready"
#define REBOOT_LINE	"reboot: starting"

#define VMCTL_MS	10000

static struct h_daemon *d;
/* For test descriptions, which must be one line. */
static const char *
flat_out(void)
{
	return h_flat(h_out());
}

static const char *
flat_err(void)
{
	return h_flat(h_err());
}

/* A command that must succeed: exit 0 (stderr shown otherwise). */
static void
ok0(int r, const char *what)
{
	tap_ok(r == 0, "%s: exit 0", what);
	if (r != 0)
		tap_diag("exit %d, stderr: %s", r, h_flat(h_err()));
}

/* stderr is exactly one non-empty line. */
static bool
one_line_err(void)
{
	const char *e = h_err();
	size_t len = strlen(e);

	if (len < 2 || e[len - 1] != '\n' || strchr(e, '\n') != e + len - 1) {
		tap_diag("stderr is not one line: '%s'", h_flat(e));
		return false;
	}
	return true;
}

/* stdout is one JSON object; returns it (caller puts) or NULL. */
static struct json_object *
json_out(void)
{
	struct json_object *o;
	enum json_tokener_error jerr;

	o = json_tokener_parse_verbose(h_out(), &jerr);
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		tap_diag("not a JSON object (%s): '%s'",
		    json_tokener_error_desc(jerr), flat_out());
		json_object_put(o);
		return NULL;
	}
	return o;
}

static void
test_basic(struct h_conn *c)
{
	const char *hello = h_env("VMMD_GUEST_HELLO");
	struct json_object *o, *vms;
	char st[64];
	int r;

	r = h_ctl("create", "web", "--kernel", hello, "--memory", "32M",
	    "--vcpus", "2", "--cmdline", "x=1", "--rtc-slices", "8", NULL);
	ok0(r, "create");
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "defined") == 0, "create: the daemon has it (%s)",
	    st);

	r = h_ctl("list", NULL);
	tap_ok(r == 0 && strstr(h_out(), "NAME") != NULL &&
	    strstr(h_out(), "web") != NULL &&
	    strstr(h_out(), "defined") != NULL,
	    "list: exit 0, a table with web (%s)", flat_out());

	r = h_ctl("info", "web", NULL);
	tap_ok(r == 0 && strstr(h_out(), "name: web\n") != NULL &&
	    strstr(h_out(), "state: defined\n") != NULL &&
	    strstr(h_out(), "vcpus: 2\n") != NULL &&
	    strstr(h_out(), "cmdline: x=1\n") != NULL &&
	    strstr(h_out(), "rtc_slices: 8\n") != NULL,
	    "info: exit 0, name, state, vcpus, cmdline, rtc_slices (%s)",
	    flat_out());

	/* Two cards: a line each in info. */
	r = h_ctl("create", "nics", "--kernel", hello, "--net",
	    "user,mac=52:54:00:12:34:56", "--net",
	    "user,forward=tcp::2222:22", NULL);
	tap_ok(r == 0, "create: two --net, two cards (%s)", flat_out());
	r = h_ctl("info", "nics", NULL);
	tap_ok(r == 0 && strstr(h_out(), "net.0: user, mac 52:54:00:12:34:56\n")
	    != NULL && strstr(h_out(), "net.1: user, mac 52:54:00:12:34:57, "
	    "forward tcp::2222:22\n") != NULL,
	    "info: a line per card, card 1's MAC made from card 0's (%s)",
	    flat_out());
	tap_ok(h_ctl("delete", "nics", NULL) == 0, "delete: the two-card VM");

	r = h_ctl("-j", "list", NULL);
	o = r == 0 ? json_out() : NULL;
	tap_ok(o != NULL && json_object_object_get_ex(o, "vms", &vms) &&
	    json_object_is_type(vms, json_type_array) &&
	    json_object_array_length(vms) == 1 &&
	    strcmp(h_str(json_object_array_get_idx(vms, 0), "name") ?: "",
	    "web") == 0, "-j list: JSON with vms [web]");
	json_object_put(o);

	r = h_ctl("info", "-j", "web", NULL);
	o = r == 0 ? json_out() : NULL;
	tap_ok(o != NULL && strcmp(h_str(o, "name") ?: "", "web") == 0 &&
	    h_int(o, "memory_mib", -1) == 32 && h_int(o, "vcpus", -1) == 2,
	    "info -j: the VM object");
	json_object_put(o);

	r = h_ctl("start", "web", NULL);
	ok0(r, "start");
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "start: running (%s)", st);
	r = h_ctl("-j", "info", "web", NULL);
	o = r == 0 ? json_out() : NULL;
	tap_ok(o != NULL && h_int(o, "pid", -1) > 0 &&
	    strcmp(h_str(o, "state") ?: "", "running") == 0,
	    "-j info of a running VM: state and pid");
	json_object_put(o);
	r = h_ctl("info", "web", NULL);
	tap_ok(r == 0 && strstr(h_out(), "\nuptime: ") != NULL &&
	    strstr(h_out(), "\npid: ") != NULL &&
	    strstr(h_out(), "\nconsole_log: ") != NULL &&
	    strstr(h_out(), "\nexits: ") != NULL &&
	    strstr(h_out(), "stats.") == NULL,
	    "info of a running VM: a summary, no raw statistics (%s)",
	    flat_out());
	r = h_ctl("info", "--stats", "web", NULL);
	tap_ok(r == 0 && strstr(h_out(), "\nstats.vcpu_exits.0.") != NULL,
	    "info --stats: the raw statistics too");

	r = h_ctl("pause", "web", NULL);
	ok0(r, "pause");
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "paused") == 0, "pause: paused (%s)", st);
	r = h_ctl("resume", "web", NULL);
	ok0(r, "resume");
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "resume: running (%s)", st);

	/* Errors: non-zero, one line on stderr, nothing on stdout. */
	r = h_ctl("start", "web", NULL);
	tap_ok(r == 0 && one_line_err() && *h_out() == '\0',
	    "start of a running VM: exit 0, a note on stderr (%s)",
	    flat_err());
	r = h_ctl("delete", "web", NULL);
	tap_ok(r == 6 && one_line_err(),
	    "delete of a running VM: exit 6, one line (%s)", flat_err());

	/* The hello guest ignores Ctrl-Alt-Del: the stop has to kill. */
	r = h_ctl("stop", "web", "--timeout", "1", NULL);
	ok0(r, "stop --timeout 1");
	tap_ok(one_line_err() && strstr(h_err(), "did not shut down in time: "
	    "killed") != NULL, "stop --timeout 1: says the guest was killed "
	    "(%s)", flat_err());
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0, "stop: stopped (%s)", st);
	r = h_ctl("-j", "info", "web", NULL);
	o = r == 0 ? json_out() : NULL;
	tap_ok(o != NULL && strcmp(h_str(o, "reason") ?: "",
	    "killed after the stop timeout") == 0,
	    "info keeps the reason (%s)", o != NULL ? h_text(o) : "-");
	json_object_put(o);
	r = h_ctl("start", "web", NULL);
	ok0(r, "start again");
	r = h_ctl("stop", "--force", "web", NULL);
	ok0(r, "stop --force");
	tap_ok(*h_err() == '\0', "stop --force: no word of a kill asked for");
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0, "stop --force: stopped (%s)", st);

	r = h_ctl("create", "web", "--kernel", hello, NULL);
	tap_ok(r == 5 && one_line_err() && strstr(h_err(), "web") != NULL,
	    "create of an existing name: exit 5, one line naming it (%s)",
	    flat_err());
	r = h_ctl("info", "ghost", NULL);
	tap_ok(r == 4 && one_line_err(), "info of an unknown VM: exit 4, "
	    "one line (%s)", flat_err());
	/* Refused by vmctl itself, in the units the user typed. */
	r = h_ctl("create", "big", "--vcpus", "65", NULL);
	tap_ok(r == 2 && one_line_err() && strstr(h_err(), "--vcpus 65: at "
	    "most 64") != NULL, "create --vcpus 65: exit 2, one line (%s)",
	    flat_err());
	r = h_ctl("create", "fine", "--rtc-slices", "33", NULL);
	tap_ok(r == 2 && one_line_err() && strstr(h_err(), "--rtc-slices") !=
	    NULL, "create --rtc-slices 33: exit 2, one line (%s)",
	    flat_err());
	r = h_ctl("create", "nok", "--kernel", "/proc/self/status", NULL);
	tap_ok(r == 2 && one_line_err(), "create with a non-kernel: exit 2, "
	    "one line (%s)", flat_err());
	r = h_ctl("create", NULL);
	tap_ok(r == 2 && one_line_err(), "create without a name: exit 2, "
	    "one line (%s)", flat_err());
	r = h_ctl("frobnicate", NULL);
	tap_ok(r == 2 && one_line_err(), "unknown command: exit 2, one line "
	    "(%s)", flat_err());
	{
		char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s",
		    "/nonexistent/vmmd.sock", "list", NULL };

		h_proc_free(h_ctl_last());
		r = h_run(h_ctl_last(), NULL, VMCTL_MS, argv);
		tap_ok(r == 3 && one_line_err(), "no daemon at the socket: "
		    "exit 3, one line (%s)", flat_err());
	}
	r = h_ctl("-j", "info", "ghost", NULL);
	tap_ok(r == 4 && *h_err() == '\0' && strstr(h_out(), "\"not_found\"") !=
	    NULL, "-j info of an unknown VM: exit 4, JSON on stdout (%s)",
	    flat_out());

	r = h_ctl("delete", "web", NULL);
	ok0(r, "delete");
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "(not_found)") == 0, "delete: gone (%s)", st);
	r = h_ctl("list", NULL);
	tap_ok(r == 0 && strstr(h_out(), "web") == NULL,
	    "list after delete: no web (%s)", flat_out());
}

static void
test_console(struct h_conn *c)
{
	struct h_proc p;
	char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", d->sock,
	    "console", "echo", NULL };
	int r;

	tap_ok(h_create(c, "echo", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0, "echo: created");
	tap_ok(h_start(c, "echo") == 0, "echo: started");
	h_spawn(&p, argv);
	tap_ok(h_proc_expect(&p, ECHO_READY, H_BOOT_MS) == 0,
	    "console: guest output on stdout");
	if (write(p.in, "via-pipe\n", 9) != 9)
		tap_diag("write to vmctl: %m");
	close(p.in);
	p.in = -1;
	tap_ok(h_proc_expect(&p, "via-pipe", 5000) == 0,
	    "console: stdin reaches the guest, its echo comes back");
	/* After stdin's EOF, vmctl copies output until the VM goes. */
	h_proc_pump(&p, 200);
	tap_ok(p.status == -1, "console: still attached after stdin EOF");
	tap_ok(h_stop(c, "echo", true, -1, H_REPLY_MS) == 0,
	    "echo: force stop");
	r = h_proc_wait(&p, 5000);
	tap_ok(r == 0, "console: exits 0 when the VM stops (%d; stderr %s)",
	    r, p.ebuf ? p.ebuf : "");
	h_proc_free(&p);
}

static void
test_run(struct h_conn *c)
{
	char st[64];
	int r;

	/* The guest resets at once; on_reboot stop ends it, and vmctl. */
	r = h_ctl("run", "--kernel", h_env("VMMD_GUEST_REBOOT"), "--cmdline",
	    "mode=i8042", "--on-reboot", "stop", "--memory", "32", "tr", NULL);
	tap_ok(r == 0, "run: exit 0 once the transient guest stopped");
	tap_ok(strstr(h_out(), REBOOT_LINE) != NULL,
	    "run: guest output on stdout (%s)", flat_out());
	tap_ok(*h_err() == '\0', "run: nothing on stderr (%s)", flat_err());
	h_state(c, "tr", st, sizeof(st));
	tap_ok(strcmp(st, "(not_found)") == 0,
	    "run: the transient VM is gone (%s)", st);
}

/*
 * A display's password: made at the start and shown by display and info
 * alike; none with --vnc-no-password, which --vnc-password-file
 * excludes.
 */
static void
test_display(struct h_conn *c)
{
	const char *fb = h_env("VMMD_GUEST_FB"), *p;
	char pw[16] = "", want[128], file[] = "/tmp/vmctl-pw.XXXXXX";
	struct json_object *o;
	int r, fd;

	r = h_ctl("create", "desk", "--kernel", fb, "--memory", "32M",
	    "--cmdline", "fb=640x480", "--vnc", "auto", "--display", "640x480",
	    NULL);
	ok0(r, "create with a display");
	ok0(h_ctl("start", "desk", NULL), "start it");
	r = h_ctl("display", "desk", NULL);
	p = strstr(h_out(), "\npassword: ");
	if (p != NULL)
		sscanf(p, "\npassword: %15s", pw);
	tap_ok(r == 0 && strncmp(h_out(), "vnc://127.0.0.1:59", 18) == 0 &&
	    strlen(pw) == 8, "display: the address, and the password made at "
	    "the start (%s)", flat_out());
	r = h_ctl("info", "desk", NULL);
	snprintf(want, sizeof(want), "(640x480, 0 viewers, password %s)\n",
	    pw);
	tap_ok(r == 0 && strstr(h_out(), want) != NULL, "info shows the same "
	    "password (%s)", flat_out());
	h_stop(c, "desk", true, -1, H_REPLY_MS);

	r = h_ctl("create", "open", "--kernel", fb, "--memory", "32M",
	    "--cmdline", "fb=640x480", "--vnc", "auto", "--display", "640x480",
	    "--vnc-no-password", NULL);
	ok0(r, "create --vnc-no-password");
	r = h_ctl("-j", "info", "open", NULL);
	o = r == 0 ? json_out() : NULL;
	tap_ok(o != NULL && json_object_object_get_ex(o, "vnc_password",
	    NULL) && !json_object_get_boolean(json_object_object_get(o,
	    "vnc_password")), "its VM object says \"vnc_password\": false");
	json_object_put(o);
	ok0(h_ctl("start", "open", NULL), "start it");
	r = h_ctl("display", "open", NULL);
	tap_ok(r == 0 && strstr(h_out(), "vnc://") != NULL &&
	    strstr(h_out(), "password") == NULL,
	    "display: no password (%s)", flat_out());
	h_stop(c, "open", true, -1, H_REPLY_MS);

	fd = mkstemp(file);
	if (fd >= 0) {
		(void)!write(fd, "s3cret\n", 7);
		close(fd);
	}
	r = h_ctl("create", "both", "--vnc", "auto", "--vnc-password-file",
	    file, "--vnc-no-password", NULL);
	tap_ok(r == 2 && one_line_err() && strstr(h_err(),
	    "--vnc-password-file and --vnc-no-password") != NULL,
	    "--vnc-password-file with --vnc-no-password: exit 2 (%s)",
	    flat_err());
	unlink(file);
}

/* A file of size bytes at path, zero but for a byte at at (if >= 0). */
static void
make_image(const char *path, off_t size, off_t at)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || ftruncate(fd, size) < 0 ||
	    (at >= 0 && pwrite(fd, "U", 1, at) != 1))
		tap_bail("making %s: %s", path, strerror(errno));
	close(fd);
}

/* create as given must succeed; the VM is deleted again. */
static void
created(const char *what, const char *arg, ...)
{
	va_list ap;
	int r;

	h_proc_free(h_ctl_last());
	va_start(ap, arg);
	r = h_vmctlv(d, h_ctl_last(), VMCTL_MS, arg, ap);
	va_end(ap);
	ok0(r, what);
	h_ctl("delete", "ok", NULL);
}

/*
 * create refuses, naming the reason, a VM that could never start: one
 * file as two disks that the guest writes through one of them (by
 * device and inode: a hard link is another path to the same file), a
 * disk boot from a blank image, and a VM without a kernel where the
 * daemon's default guest is missing.
 */
static void
test_refusals(void)
{
	const char *hello = h_env("VMMD_GUEST_HELLO");
	char *demo, a[256], b[256], blank[256], tail[256], head[256], bro[300];
	struct h_daemon *d2;
	struct h_proc p = { 0 };
	int r;

	snprintf(a, sizeof(a), "%s", h_in_dir(d, "a.img"));
	snprintf(b, sizeof(b), "%s", h_in_dir(d, "b.img"));
	snprintf(blank, sizeof(blank), "%s", h_in_dir(d, "blank.img"));
	snprintf(tail, sizeof(tail), "%s", h_in_dir(d, "tail.img"));
	snprintf(head, sizeof(head), "%s", h_in_dir(d, "head.img"));
	snprintf(bro, sizeof(bro), "%s,readonly", b);
	make_image(a, 4 << 20, 0);
	unlink(b);
	if (link(a, b) < 0)
		tap_bail("link %s %s: %s", a, b, strerror(errno));

	r = h_ctl("create", "dup", "--kernel", hello, "--disk", a, "--disk",
	    b, NULL);
	tap_ok(r == 2 && one_line_err() && strstr(h_err(), "same file") !=
	    NULL && strstr(h_err(), "disks 0 and 1") != NULL,
	    "create: one file (two paths) as two written disks, refused (%s)",
	    flat_err());
	r = h_ctl("create", "dup", "--kernel", hello, "--disk", bro,
	    "--disk", a, NULL);
	tap_ok(r == 2 && strstr(h_err(), "same file") != NULL &&
	    strstr(h_err(), "guest writes disk 1") != NULL,
	    "create: written as one disk, read as another, refused (%s)",
	    flat_err());
	snprintf(bro, sizeof(bro), "%s,readonly", a);
	created("create: one file as two read-only disks", "create", "ok",
	    "--kernel", hello, "--disk", bro, "--disk", bro, NULL);

	make_image(blank, 8 << 20, -1);
	make_image(tail, 8 << 20, (8 << 20) - 1);
	make_image(head, 8 << 20, 510);
	r = h_ctl("create", "blank", "--disk", blank, NULL);
	tap_ok(r == 2 && one_line_err() && strstr(h_err(), "blank") != NULL &&
	    strstr(h_err(), "boots from it") != NULL,
	    "create: a disk boot from a blank image, refused (%s)",
	    flat_err());
	created("create: a blank disk and a kernel to boot", "create", "ok",
	    "--kernel", hello, "--disk", blank, NULL);
	created("create: a disk boot, data in the last MiB only", "create",
	    "ok", "--disk", tail, NULL);
	created("create: a disk boot, data in the first sector", "create",
	    "ok", "--disk", head, NULL);

	/* A daemon whose default guest (-g) is not there. */
	if ((demo = strdup(h_env("VMMD_GUEST_DEMO"))) == NULL)
		tap_bail("out of memory");
	setenv("VMMD_GUEST_DEMO", h_in_dir(d, "no-such-guest.elf"), 1);
	d2 = h_daemon_start();
	setenv("VMMD_GUEST_DEMO", demo, 1);
	free(demo);
	r = h_vmctl(d2, &p, VMCTL_MS, "create", "nok", NULL);
	tap_ok(r == 2 && p.ebuf != NULL && strstr(p.ebuf, "has no kernel") !=
	    NULL && strstr(p.ebuf, "-g FILE") != NULL,
	    "create: no kernel and no default guest, refused (%s)",
	    h_flat(p.ebuf ? p.ebuf : ""));
	h_proc_free(&p);
	r = h_vmctl(d2, &p, VMCTL_MS, "create", "nok", "--kernel", hello,
	    NULL);
	tap_ok(r == 0, "create: with a kernel there, made");
	h_proc_free(&p);
	h_daemon_stop(d2, 10000);
}

/*
 * list and info say the same of where the kernel comes from; info's
 * labels are the JSON keys; the old option name still works; user-data
 * is shown as its size and hash, never its text.
 */
static void
test_info_agree(void)
{
	char disk[256], ud[256];
	const char *p;
	int fd;

	snprintf(disk, sizeof(disk), "%s", h_in_dir(d, "boot.img"));
	snprintf(ud, sizeof(ud), "%s", h_in_dir(d, "user-data"));
	make_image(disk, 4 << 20, 510);
	fd = open(ud, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "#cloud-config\npassword: hunter2\n", 32) !=
	    32)
		tap_bail("writing %s", ud);
	close(fd);
	ok0(h_ctl("create", "fromdisk", "--disk", disk, "--cloud-init", ud,
	    "--lost-tick-policy", "discard", NULL), "create a disk boot");
	ok0(h_ctl("create", "dflt", "--lost-ticks", "discard", NULL),
	    "create with the default guest, --lost-ticks (the old name)");
	ok0(h_ctl("list", NULL), "list");
	p = strstr(h_out(), "fromdisk");
	tap_ok(p != NULL && strstr(p, "(first disk)") != NULL &&
	    strstr(h_out(), "(default)") == NULL,
	    "list: the disk boot's kernel is (first disk) (%s)", flat_out());
	p = strstr(h_out(), "dflt");
	tap_ok(p != NULL && strncmp(strchr(p, '\n') - 15, "(default guest)",
	    15) == 0, "list: the other's is (default guest)");
	ok0(h_ctl("info", "fromdisk", NULL), "info");
	tap_ok(strstr(h_out(), "\nkernel: (first disk, chosen at start)\n") !=
	    NULL, "info: kernel from the first disk, as list says (%s)",
	    flat_out());
	tap_ok(strstr(h_out(), "\nlost_tick_policy: discard\n") != NULL,
	    "info: lost_tick_policy, the JSON key and --lost-tick-policy");
	tap_ok(strstr(h_out(), "hunter2") == NULL && strstr(h_out(),
	    "\ncloud_init.user_data_size: 32\n") != NULL && strstr(h_out(),
	    "\ncloud_init.user_data_sha256: ") != NULL,
	    "info: user-data as its size and hash, not its text");
	ok0(h_ctl("-j", "info", "fromdisk", NULL), "-j info");
	tap_ok(strstr(h_out(), "hunter2") == NULL && strstr(h_out(),
	    "user_data_sha256") != NULL, "-j info: no user-data text either");
	ok0(h_ctl("info", "dflt", NULL), "info of the other");
	tap_ok(strstr(h_out(), "\nkernel: (default guest)\n") != NULL &&
	    strstr(h_out(), "\nlost_tick_policy: discard\n") != NULL,
	    "info: (default guest), as list says");
	h_ctl("delete", "fromdisk", NULL);
	h_ctl("delete", "dflt", NULL);
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	h_env("VMCTL_BIN");
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);
	test_basic(c);
	test_console(c);
	test_run(c);
	test_display(c);
	test_refusals();
	test_info_agree();
	h_close(c);
	return h_done();
}
