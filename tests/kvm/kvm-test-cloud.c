/*
 * Booting from a disk as a cloud image is booted, with the demo guest
 * standing in for Linux (the linux suite boots a real one): a compressed
 * qcow2 disk whose GRUB configuration names the demo guest as its kernel
 * (make-boot-disk.sh).  A VM with the disk and no kernel boots what
 * GRUB's default entry names, through an overlay, and vm.info and vmctl
 * info say what was chosen and why; the choice survives a restart of
 * vmmd; --kernel still wins; a disk with no kernel is refused naming
 * what was searched; "boot": "disk" needs a disk.  cloud-init's seed:
 * its instance-id changes with its content, it takes a disk slot of its
 * own.  And the cloud module is mapped by the workers that need it
 * only.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define KEY	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKz0 tester@host"

/* Whether pid's memory maps name file. */
static bool
maps_have(pid_t pid, const char *file)
{
	char path[64], *maps;
	size_t len;
	bool has;

	snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	if ((maps = h_read_file(path, &len)) == NULL)
		return false;
	has = strstr(maps, file) != NULL;
	free(maps);
	return has;
}

/*
 * The test build's lines "test hook: WHAT by uid ..." in d's log
 * (test-hook.h): how many, and how many of them show a process with
 * root's uid or gid, a capability, no no_new_privs, (want_filter) no
 * system call filter, or (max_fds >= 0) more descriptors than max_fds,
 * at the moment it read.
 */
static void
reading_confined(struct h_daemon *d, const char *what, bool want_filter,
    int max_fds, unsigned int *seen, unsigned int *bad, char *first,
    size_t firstlen)
{
	unsigned int u[3], g[3];
	unsigned long long eff, prm;
	char needle[64], *log, *p, *eol;
	int nnp, filter, fds;
	long rss;

	*seen = *bad = 0;
	first[0] = '\0';
	snprintf(needle, sizeof(needle), "test hook: %s by uid ", what);
	if ((log = h_read_file(d->log, NULL)) == NULL)
		return;
	for (p = log; (p = strstr(p, needle)) != NULL; p = eol) {
		p += strlen(needle);
		if ((eol = strchr(p, '\n')) == NULL)
			eol = p + strlen(p);
		if (first[0] == '\0')
			snprintf(first, firstlen, "%.*s", (int)(eol - p), p);
		(*seen)++;
		if (sscanf(p, "%u/%u/%u gid %u/%u/%u CapEff %llx CapPrm %llx "
		    "NoNewPrivs %d Seccomp %d MaxRSS %ld KiB Fds %d", &u[0],
		    &u[1], &u[2], &g[0], &g[1], &g[2], &eff, &prm, &nnp,
		    &filter, &rss, &fds) != 12 ||
		    (max_fds >= 0 && fds > max_fds) || u[0] == 0 || u[1] == 0 || u[2] == 0 || g[0] == 0 ||
		    g[1] == 0 || g[2] == 0 || eff != 0 || prm != 0 ||
		    nnp != 1 || (want_filter && filter != 2))
			(*bad)++;
	}
	free(log);
}

/* What read the disks ran with no privilege (the test build says). */
static void
test_confined(struct h_daemon *d)
{
	unsigned int seen, bad;
	char first[256];

	if (getenv("VMMD_TEST_HOOKS") == NULL ||
	    strcmp(getenv("VMMD_TEST_HOOKS"), "true") != 0) {
		tap_diag("no test hooks in this build: nothing says who read "
		    "the disks");
		return;
	}
	reading_confined(d, "disks opened", true, -1, &seen, &bad, first,
	    sizeof(first));
	tap_ok(seen > 0 && bad == 0, "every qcow2 chain was opened by a "
	    "worker with no privilege left and its filter loaded: not root, "
	    "no capability, no_new_privs, seccomp (%u of %u not so; uid %s)",
	    bad, seen, first);
	/* The standard streams, the overlay and its base, the kernel's
	 * and initrd's memory files, libblkid's sketch of the disk. */
	reading_confined(d, "disk read", true, 8, &seen, &bad, first,
	    sizeof(first));
	tap_ok(seen > 0 && bad == 0, "every boot configuration was read by "
	    "a process with no privilege, a system call filter and no "
	    "descriptor of the worker's but its disk's (%u of %u not so; uid "
	    "%s)", bad, seen, first);
}

/*
 * vmmd restarted with the disk reader's test hook set to what (and a
 * deadline of timeout_ms, 0 for the product's), then a start of a VM
 * booting from the disk: its error reply.
 */
static struct json_object *
start_with_reader(struct h_daemon *d, struct h_conn **cp, const char *what,
    int timeout_ms)
{
	const char *disk = getenv("VMMD_BOOT_DISK_GRUB");
	char ms[32];

	h_close(*cp);
	setenv("VMMD_TEST_READER", what, 1);
	snprintf(ms, sizeof(ms), "%d", timeout_ms);
	if (timeout_ms > 0)
		setenv("VMMD_TEST_READER_TIMEOUT_MS", ms, 1);
	if (h_daemon_restart(d, 10000) != 0 || (*cp = h_connect(d)) == NULL)
		tap_bail("vmmd does not come back");
	unsetenv("VMMD_TEST_READER");
	unsetenv("VMMD_TEST_READER_TIMEOUT_MS");
	h_delete(*cp, "bound");
	if (h_create(*cp, "bound", "\"memory_mib\":16,\"disks\":[{\"path\":"
	    "\"%s\",\"overlay\":true}]", disk) != 0)
		tap_bail("cannot define the VM");
	return h_callf(*cp, 120000, "vm.start", "{\"name\":\"bound\"}");
}

/*
 * The reader's bounds: a reader that never answers is killed at its
 * deadline, one that allocates without end fails at its address space
 * limit (not in sanitizer builds, which may not limit it), and neither
 * costs the daemon more than that start.
 */
static void
test_reader_bounds(struct h_daemon *d, struct h_conn **cp)
{
	const char *san = getenv("VMMD_TEST_SANITIZED");
	struct json_object *r;
	const char *desc;
	unsigned int mib = 0;

	r = start_with_reader(d, cp, "stall", 1500);
	desc = h_err_desc(r);
	tap_ok(desc != NULL && strstr(desc, "reading its boot configuration "
	    "took more than 1500 ms: given up") != NULL, "a reader that never "
	    "answers is killed at its deadline: %s", h_text(r));
	json_object_put(r);
	if (san != NULL && strcmp(san, "true") == 0) {
		tap_diag("a sanitizer build: no address space limit to test");
	} else {
		r = start_with_reader(d, cp, "hog", 0);
		desc = h_err_desc(r);
		if (desc != NULL && (desc = strstr(desc, "the reader got ")) !=
		    NULL)
			mib = (unsigned int)strtoul(desc + 15, NULL, 10);
		tap_ok(mib > 0 && mib < 1024 && strcmp(h_err_class(r),
		    "internal") == 0, "a reader that allocates without end "
		    "stops short of 1 GiB (%u MiB): %s", mib, h_text(r));
		json_object_put(r);
	}
	h_close(*cp);
	if (h_daemon_restart(d, 10000) != 0 || (*cp = h_connect(d)) == NULL)
		tap_bail("vmmd does not come back");
	tap_ok(h_create(*cp, "bound2", "\"disks\":[{\"path\":\"%s\","
	    "\"overlay\":true}]", getenv("VMMD_BOOT_DISK_GRUB")) == 0 &&
	    h_start(*cp, "bound2") == 0, "and the next start reads the disk "
	    "as before");
	h_stop(*cp, "bound2", true, -1, H_REPLY_MS);
	h_delete(*cp, "bound2");
	h_delete(*cp, "bound");
}

/* vm.info's member key of member obj ("boot_from"), or "". */
static void
info_member(struct h_conn *c, const char *vm, const char *obj,
    const char *key, char *out, size_t len)
{
	struct json_object *r, *o = NULL;
	const char *s = NULL;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", vm);
	if (obj == NULL)
		s = h_str(h_ret(r), key);
	else if (json_object_object_get_ex(h_ret(r), obj, &o))
		s = h_str(o, key);
	snprintf(out, len, "%s", s != NULL ? s : "");
	json_object_put(r);
}

static void
test_boot(struct h_daemon *d, struct h_conn **cp)
{
	const char *disk = getenv("VMMD_BOOT_DISK_GRUB");
	struct h_conn *c = *cp;
	char rule[64], kernel[512], cmdline[512], iid[256], iid2[256];
	char out[2048];
	struct h_proc p;
	pid_t pid;

	tap_ok(h_create(c, "img", "\"disks\":[{\"path\":\"%s\","
	    "\"overlay\":true}],\"cloud_init\":{\"ssh_keys\":[\"" KEY "\"]}",
	    disk) == 0, "a VM with a cloud-style disk and no kernel is "
	    "defined");
	tap_ok(h_start(c, "img") == 0, "and starts");
	tap_ok(h_file_expect(h_console_log(d, "img"), " UTC", 1, 20000) == 0,
	    "the kernel GRUB's entry names runs (the demo guest ticks)");
	info_member(c, "img", "boot_from", "rule", rule, sizeof(rule));
	info_member(c, "img", "boot_from", "kernel", kernel, sizeof(kernel));
	info_member(c, "img", "boot_from", "cmdline", cmdline,
	    sizeof(cmdline));
	tap_ok(strcmp(rule, "grub") == 0 && strcmp(kernel, "partition 1 "
	    "(ext4): /boot/vmlinuz-demo") == 0, "vm.info: chosen by GRUB's "
	    "default entry: %s, %s", rule, kernel);
	tap_ok(strcmp(cmdline, "root=UUID=0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d "
	    "ro vmmd.from=disk console=ttyS0") == 0, "with the entry's "
	    "command line after the root file system's (it named none) and "
	    "the serial console: '%s'", cmdline);
	info_member(c, "img", NULL, "seed_instance_id", iid, sizeof(iid));
	tap_ok(strncmp(iid, "iid-img-", 8) == 0, "a cloud-init seed, "
	    "instance-id %s", iid);
	pid = h_vm_pid(c, "img");
	tap_ok(pid > 0 && maps_have(pid, "vmmd-cloud.so"),
	    "its worker mapped the cloud module");
	h_vmctl(d, &p, H_REPLY_MS, "info", "img", NULL);
	tap_ok(p.obuf != NULL && strstr(p.obuf, "kernel: partition 1 (ext4): "
	    "/boot/vmlinuz-demo (from the disk: GRUB's default entry") !=
	    NULL && strstr(p.obuf, "seed_instance_id: iid-img-") != NULL,
	    "vmctl info says which kernel and why");
	if (p.obuf == NULL || strstr(p.obuf, "from the disk") == NULL)
		tap_diag("vmctl info: %s", p.obuf != NULL ? p.obuf : "-");
	h_proc_free(&p);

	/* vmmd restarts and adopts it: the choice is still known. */
	h_close(c);
	h_daemon_kill(d, SIGQUIT);
	if (h_daemon_spawn(d) < 0 || (c = *cp = h_connect(d)) == NULL)
		tap_bail("vmmd does not come back");
	info_member(c, "img", "boot_from", "rule", rule, sizeof(rule));
	info_member(c, "img", NULL, "seed_instance_id", iid2, sizeof(iid2));
	tap_ok(h_vm_pid(c, "img") == pid && strcmp(rule, "grub") == 0 &&
	    strcmp(iid, iid2) == 0, "adopted by the next vmmd, which knows "
	    "the choice and the seed (%s, %s)", rule, iid2);
	h_stop(c, "img", true, -1, H_REPLY_MS);

	/* Other seed content: another instance-id. */
	h_delete(c, "img");
	tap_ok(h_create(c, "img", "\"disks\":[{\"path\":\"%s\","
	    "\"overlay\":true}],\"cloud_init\":{\"user_data\":"
	    "\"#cloud-config\\nhostname: x\\n\",\"ssh_keys\":[\"" KEY "\"]}",
	    disk) == 0 && h_start(c, "img") == 0, "again with user-data");
	info_member(c, "img", NULL, "seed_instance_id", iid2, sizeof(iid2));
	tap_ok(iid2[0] != '\0' && strcmp(iid, iid2) != 0,
	    "its instance-id follows the seed's content (%s)", iid2);
	h_stop(c, "img", true, -1, H_REPLY_MS);
	h_delete(c, "img");

	/* --kernel wins: the disk is only a disk then. */
	tap_ok(h_create(c, "kern", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\",\"overlay\":true}]", h_env("VMMD_GUEST_DEMO"), disk) ==
	    0 && h_start(c, "kern") == 0, "with a kernel given, it boots");
	info_member(c, "kern", "boot_from", "rule", rule, sizeof(rule));
	pid = h_vm_pid(c, "kern");
	tap_ok(rule[0] == '\0' && pid > 0 && !maps_have(pid,
	    "vmmd-cloud.so"), "the kernel given, nothing read from the "
	    "disk, no cloud module mapped");
	h_stop(c, "kern", true, -1, H_REPLY_MS);
	h_delete(c, "kern");
	(void)out;
}

/* vm.create with the arguments fmt: refused as invalid, saying why. */
static void __attribute__((format(printf, 3, 4)))
refused(struct h_conn *c, const char *why, const char *fmt, ...)
{
	struct json_object *r;
	char *args;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&args, fmt, ap) < 0)
		tap_bail("out of memory");
	va_end(ap);
	r = h_call(c, "vm.create", json_tokener_parse(args), H_REPLY_MS);
	tap_ok(h_err_class(r) != NULL && strcmp(h_err_class(r),
	    "invalid_argument") == 0 && strstr(h_text(r), why) != NULL,
	    "vm.create refused ('%s'): %s", why, h_text(r));
	json_object_put(r);
	free(args);
}

static void
test_refusals(struct h_conn *c)
{
	const char *empty = getenv("VMMD_BOOT_DISK_EMPTY");
	struct json_object *r;

	tap_ok(h_create(c, "none", "\"disks\":[{\"path\":\"%s\","
	    "\"overlay\":true}]", empty) == 0, "a VM with a disk holding no "
	    "kernel is defined");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"none\"}");
	tap_ok(h_err_class(r) != NULL && strcmp(h_err_class(r),
	    "invalid_argument") == 0 && strstr(h_err_desc(r),
	    "no kernel found") != NULL && strstr(h_err_desc(r), "grub.cfg") !=
	    NULL && strstr(h_err_desc(r), "/boot/vmlinuz-*") != NULL,
	    "and refused at start, naming what was searched: %s", h_text(r));
	json_object_put(r);
	tap_ok(h_vm_pid(c, "none") == -1, "no worker is left");
	h_delete(c, "none");

	refused(c, "needs a disk", "{\"name\":\"nodisk\",\"boot\":"
	    "\"disk\"}");
	refused(c, "give no kernel", "{\"name\":\"both\",\"boot\":\"disk\","
	    "\"kernel\":\"%s\",\"disks\":[{\"path\":\"%s\",\"overlay\":"
	    "true}]}", h_env("VMMD_GUEST_DEMO"), empty);
	refused(c, "not a public key", "{\"name\":\"badkey\",\"cloud_init\":"
	    "{\"ssh_keys\":[\"hello\"]}}");
	refused(c, "at most 4", "{\"name\":\"full\",\"cloud_init\":{},"
	    "\"disks\":[{\"path\":\"%s\",\"overlay\":true},{\"path\":"
	    "\"%s\",\"overlay\":true},{\"path\":\"%s\",\"overlay\":true},"
	    "{\"path\":\"%s\",\"overlay\":true}]}", empty, empty, empty,
	    empty);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	if (getenv("VMMD_BOOT_DISK_GRUB") == NULL ||
	    getenv("VMMD_BOOT_DISK_EMPTY") == NULL)
		tap_skip_all("no boot disks (sfdisk, mkfs.ext4 and qemu-img "
		    "make them at build time)");
	c = h_setup(&d);
	test_boot(d, &c);
	test_refusals(c);
	test_confined(d);
	test_reader_bounds(d, &c);
	h_close(c);
	return h_done();
}
