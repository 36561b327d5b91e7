/*
 * Changing a VM without losing it, through vmctl: export then create
 * --from-file gives the same definition; set changes the memory of a
 * stopped VM (the started guest has it) and is refused while it runs;
 * edit through $EDITOR, its file kept when the daemon refuses it; rename
 * keeps the console log and the VM starts under its new name; clone of
 * a VM with an overlay disk copies the overlay (the two then go their
 * own ways), with a MAC and a vsock CID of its own; delete keeps the
 * overlay and console log unless --remove-data, and says which.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vblk-disks.h"

#define VMCTL_MS	30000
#define ECHO_READY	"echo: ready"

static struct h_daemon *d;
/* A command that must succeed; its stderr said otherwise. */
static bool
ok0(int rc)
{
	if (rc != 0)
		tap_diag("exit %d: %s", rc, h_flat(h_err()));
	return rc == 0;
}

static const char *
overlay(const char *vm, int n)
{
	static char buf[4][512];
	static int turn;
	char *b = buf[turn++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/disks/%s.%d.qcow2", d->state, vm, n);
	return b;
}

static bool
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* vm.info's member key of VM name (a copy), or "" */
static const char *
info_member(struct h_conn *c, const char *name, const char *key,
    const char *sub)
{
	static char buf[256];
	struct json_object *r, *v;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	v = json_object_object_get(h_ret(r), key);
	if (sub != NULL)
		v = json_object_object_get(v, sub);
	snprintf(buf, sizeof(buf), "%s", v != NULL ?
	    json_object_get_string(v) : "");
	json_object_put(r);
	return buf;
}

static void
test_export(void)
{
	const char *file = h_in_dir(d, "e.json");
	char *first;
	FILE *fp;

	tap_ok(ok0(h_ctl("create", "e", "--memory", "48", "--vcpus", "2",
	    "--cmdline", "a b", "--rng", "--net", "user,mac=52:54:00:12:34:56",
	    "--vsock", "9", "--on-reboot", "stop", "--lost-ticks", "discard",
	    "--kernel", h_env("VMMD_GUEST_ECHO"), NULL)), "create e");
	tap_ok(ok0(h_ctl("export", "e", NULL)) &&
	    strstr(h_out(), "\"memory_mib\": 48") != NULL &&
	    strstr(h_out(), "\"state\"") == NULL &&
	    strstr(h_out(), "\"owner\"") == NULL,
	    "export prints the definition, without state or owner");
	first = strdup(h_out());
	fp = fopen(file, "w");
	if (fp == NULL || fputs(first, fp) < 0 || fclose(fp) != 0)
		tap_bail("cannot write %s", file);
	tap_ok(ok0(h_ctl("delete", "e", NULL)) &&
	    ok0(h_ctl("create", "--from-file", file, NULL)),
	    "delete e, create --from-file its export");
	tap_ok(ok0(h_ctl("export", "e", NULL)) && strcmp(h_out(), first) == 0,
	    "export of the new e is the same, byte for byte");
	tap_ok(ok0(h_ctl("create", "e2", "--from-file", file, "--memory",
	    "64", NULL)) && ok0(h_ctl("export", "e2", NULL)) &&
	    strstr(h_out(), "\"memory_mib\": 64") != NULL &&
	    strstr(h_out(), "\"cmdline\": \"a b\"") != NULL,
	    "create NAME --from-file FILE --memory: a copy, changed");
	free(first);
	tap_ok(ok0(h_ctl("delete", "e2", NULL)), "delete e2");
}

static void
test_set_edit(struct h_conn *c)
{
	char tmp[512], *p;
	bool ok;

	tap_ok(ok0(h_ctl("create", "s", "--memory", "32", "--kernel",
	    h_env("VMMD_GUEST_ECHO"), NULL)), "create s");
	tap_ok(ok0(h_ctl("set", "s", "--memory", "64", "--vcpus", "2",
	    NULL)) && strcmp(info_member(c, "s", "memory_mib", NULL), "64")
	    == 0 && strcmp(info_member(c, "s", "vcpus", NULL), "2") == 0,
	    "set s --memory 64 --vcpus 2");
	tap_ok(h_start(c, "s") == 0 && h_file_expect(h_console_log(d, "s"),
	    ECHO_READY, 1, 10000) == 0, "s starts");
	tap_ok(strcmp(info_member(c, "s", "memory_mib", NULL), "64") == 0 &&
	    strcmp(info_member(c, "s", "state", NULL), "running") == 0,
	    "the running guest has 64 MiB");
	ok = h_ctl("set", "s", "--memory", "96", NULL) == 6 &&
	    strstr(h_err(), "bad_state") != NULL &&
	    strstr(h_err(), "only while it is stopped") != NULL;
	tap_ok(ok, "set of a running VM is refused: %s", h_flat(h_err()));
	setenv("EDITOR", "sed -i s/\\\"memory_mib\\\":\\ 64/\\\"memory_mib\\\":\\ 72/",
	    1);
	unsetenv("VISUAL");
	ok = h_ctl("edit", "s", NULL) == 6 && strstr(h_err(), "bad_state") &&
	    strstr(h_err(), "kept in") != NULL;
	tap_ok(ok, "and so is edit's: %s", h_flat(h_err()));
	tap_ok(h_stop(c, "s", true, -1, H_REPLY_MS) == 0, "s stopped");

	setenv("EDITOR", "sed -i s/\\\"memory_mib\\\":\\ 64/\\\"memory_mib\\\":\\ 80/",
	    1);
	unsetenv("VISUAL");
	tap_ok(ok0(h_ctl("edit", "s", NULL)) &&
	    strcmp(info_member(c, "s", "memory_mib", NULL), "80") == 0,
	    "edit s in $EDITOR: memory 80");
	setenv("EDITOR", "sed -i s/\\\"memory_mib\\\":\\ 80/\\\"memory_mib\\\":\\ 5/",
	    1);
	tmp[0] = '\0';
	if (h_ctl("edit", "s", NULL) == 2 &&
	    (p = strstr(h_err(), "kept in ")) != NULL) {
		snprintf(tmp, sizeof(tmp), "%s", p + 8);
		tmp[strcspn(tmp, "\n")] = '\0';
	}
	tap_ok(tmp[0] != '\0' && strstr(h_err(), "memory_mib") != NULL &&
	    exists(tmp) &&
	    strcmp(info_member(c, "s", "memory_mib", NULL), "80") == 0,
	    "a definition the daemon refuses changes nothing, its file "
	    "kept: %s", h_flat(h_err()));
	if (tmp[0] != '\0')
		unlink(tmp);
	unsetenv("EDITOR");
}

static void
test_rename(struct h_conn *c)
{
	tap_ok(ok0(h_ctl("rename", "s", "r", NULL)) &&
	    !exists(h_console_log(d, "s")) &&
	    h_file_expect(h_console_log(d, "r"), ECHO_READY, 1, 1000) == 0,
	    "rename s r: the console log follows");
	tap_ok(h_ctl("info", "s", NULL) == 4 && ok0(h_ctl("info", "r", NULL)),
	    "s is gone, r is there");
	tap_ok(h_start(c, "r") == 0 && h_file_expect(h_console_log(d, "r"),
	    ECHO_READY, 2, 10000) == 0 &&
	    strcmp(info_member(c, "r", "memory_mib", NULL), "80") == 0,
	    "r starts, and writes to the same log");
	tap_ok(h_ctl("rename", "r", "r2", NULL) == 6 &&
	    strstr(h_err(), "bad_state") != NULL, "rename of a running VM is "
	    "refused: %s", h_flat(h_err()));
	tap_ok(h_stop(c, "r", true, -1, H_REPLY_MS) == 0, "r stopped");
}

static void
test_clone(struct h_conn *c)
{
	char base[512], ro[512], diskarg[600], roarg[600];
	struct stat a, b;
	bool ok;

	/* h_in_dir()'s buffers are reused: copies. */
	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(ro, sizeof(ro), "%s", h_in_dir(d, "ro.raw"));
	tap_ok(vdisk_make_base(base, 0644) == 0 &&
	    vdisk_make_base(ro, 0644) == 0, "a base and a read-only disk");
	snprintf(diskarg, sizeof(diskarg), "%s,overlay", base);
	snprintf(roarg, sizeof(roarg), "%s,readonly", ro);
	tap_ok(ok0(h_ctl("create", "o", "--memory", "32", "--kernel",
	    h_env("VMMD_GUEST_VBLK"), "--disk", diskarg, "--disk", roarg,
	    NULL)), "create o on an overlay of the base");
	tap_ok(h_start(c, "o") == 0 && vdisk_guest_passes(d, "o", 1) &&
	    h_stop(c, "o", true, -1, H_REPLY_MS) == 0 &&
	    vdisk_holds_writes(overlay("o", 0), h_in_dir(d, "conv.raw")),
	    "o's guest wrote to its overlay");
	tap_ok(ok0(h_ctl("clone", "o", "o2", NULL)) &&
	    stat(overlay("o", 0), &a) == 0 && stat(overlay("o2", 0), &b) == 0 &&
	    a.st_ino != b.st_ino &&
	    vdisk_holds_writes(overlay("o2", 0), h_in_dir(d, "conv.raw")),
	    "clone o o2: a copy of the overlay, with o's writes");
	tap_ok(ok0(h_ctl("reset-disk", "o", NULL)) &&
	    vdisk_qemu_img("compare", "-q", overlay("o", 0), base, NULL) == 0 &&
	    vdisk_holds_writes(overlay("o2", 0), h_in_dir(d, "conv.raw")),
	    "o's overlay reset: o2's keeps its data");
	tap_ok(h_start(c, "o2") == 0 && h_file_expect(h_console_log(d, "o2"),
	    "vblk", 1, 10000) == 0 && h_stop(c, "o2", true, -1,
	    H_REPLY_MS) == 0 &&
	    vdisk_qemu_img("compare", "-q", overlay("o", 0), base, NULL) == 0,
	    "o2 runs on its own overlay; o's still reads as the base");

	tap_ok(ok0(h_ctl("create", "n", "--net",
	    "user,mac=52:54:00:00:00:01", "--vsock", "20", NULL)) &&
	    ok0(h_ctl("clone", "n", "n2", NULL)), "clone of a VM with a NIC "
	    "and a fixed vsock CID");
	tap_ok(strcmp(info_member(c, "n2", "net", "mac"), "") != 0 &&
	    strcmp(info_member(c, "n2", "net", "mac"), "52:54:00:00:00:01") != 0,
	    "a MAC of its own: %s", info_member(c, "n2", "net", "mac"));
	tap_ok(strcmp(info_member(c, "n", "vsock", "cid"), "20") == 0 &&
	    strcmp(info_member(c, "n2", "vsock", "cid"), "") != 0 &&
	    strcmp(info_member(c, "n2", "vsock", "cid"), "20") != 0,
	    "a CID of its own: %s", info_member(c, "n2", "vsock", "cid"));

	tap_ok(vdisk_make_base(h_in_dir(d, "w.raw"), 0644) == 0 &&
	    ok0(h_ctl("create", "w", "--disk", h_in_dir(d, "w.raw"), NULL)),
	    "create w on a writable disk");
	ok = h_ctl("clone", "w", "w2", NULL) == 2 &&
	    strstr(h_err(), "written by VM 'w'") != NULL;
	tap_ok(ok, "which is not cloned: %s", h_flat(h_err()));
}

static void
test_delete(struct h_conn *c)
{
	char want[600], log1[600];
	int fd;

	(void)c;
	/* The worker makes the rotated log at each start, empty until a
	 * rotation: not data. */
	snprintf(log1, sizeof(log1), "%s.1", h_console_log(d, "o2"));
	if ((fd = open(log1, O_WRONLY | O_CREAT | O_CLOEXEC, 0640)) >= 0)
		close(fd);
	snprintf(want, sizeof(want), "kept: %s\n", overlay("o2", 0));
	tap_ok(ok0(h_ctl("delete", "o2", NULL)) && exists(overlay("o2", 0)) &&
	    strstr(h_out(), want) != NULL && exists(h_console_log(d, "o2")),
	    "delete keeps the overlay and the console log, and says so: %s",
	    h_flat(h_out()));
	tap_ok(strstr(h_out(), ".log.1") == NULL && !exists(log1),
	    "an empty rotated log is neither listed nor kept: %s",
	    h_flat(h_out()));
	snprintf(want, sizeof(want), "%s,overlay", h_in_dir(d, "base.raw"));
	tap_ok(h_ctl("create", "o2", "--disk", want, NULL) == 5 &&
	    strstr(h_err(), "exists") != NULL &&
	    strstr(h_err(), "kept") != NULL,
	    "a new VM does not overwrite a kept overlay: %s", h_flat(h_err()));
	snprintf(want, sizeof(want), "removed: %s\n", overlay("o2", 0));
	tap_ok(ok0(h_ctl("delete", "--remove-data", "o2", NULL)) &&
	    !exists(overlay("o2", 0)) && strstr(h_out(), want) != NULL &&
	    !exists(h_console_log(d, "o2")),
	    "delete --remove-data of the name removes what it left");
	tap_ok(h_ctl("delete", "--remove-data", "o2", NULL) == 4 &&
	    strstr(h_err(), "not_found") != NULL, "then nothing is left");
	tap_ok(ok0(h_ctl("delete", "o", "--remove-data", NULL)) &&
	    !exists(overlay("o", 0)) && strstr(h_out(), "removed: ") != NULL,
	    "delete --remove-data removes the overlay with the VM");
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	if (vdisk_qemu_img_path() == NULL)
		tap_skip_all("qemu-img is not installed (qemu-utils)");
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);
	test_export();
	test_set_edit(c);
	test_rename(c);
	test_clone(c);
	test_delete(c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
