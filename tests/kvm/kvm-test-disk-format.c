/*
 * Disks in image formats vmmd does not read: a VMDK image given as a
 * disk is refused at vm.create, by vmctl and over JSON, with the format
 * named and the image left as it was; "format": "qcow2" on it is refused
 * too; with "format": "raw" it is taken as raw, and that survives a
 * restart of vmmd.  vm.create records the format it found: a raw image
 * that became a VMDK one later is still read as raw (a header that
 * comes later may be the guest's); only a definition from an older
 * vmmd, which records none, has its image probed, and refused, at
 * vm.start.  The image is made by qemu-img where it is installed (package
 * qemu-utils), which then checks it too; elsewhere from the header
 * qemu-img writes.  (qcow2 images, which vmmd reads: kvm-test-qcow2.c.)
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define VMCTL_MS	10000
#define QEMU_IMG_MS	20000

static struct h_daemon *d;
static char qemu_img[256];	/* "" when not installed */

/* qemu-img in $PATH, into qemu_img. */
static void
find_qemu_img(void)
{
	if (h_which("qemu-img", qemu_img, sizeof(qemu_img)) == NULL)
		qemu_img[0] = '\0';
}

/* Runs argv (NULL-terminated) to its end: the exit status; output in p. */
static int
run(struct h_proc *p, char *const argv[], int ms)
{
	memset(p, 0, sizeof(*p));
	return h_run(p, NULL, ms, argv);
}

/* vmctl -s SOCK args... (NULL-terminated): the exit status, stderr
 * into err on one line. */
static int
vmctl(char *err, size_t errlen, const char *arg, ...)
{
	struct h_proc p;
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = h_vmctlv(d, &p, VMCTL_MS, arg, ap);
	va_end(ap);
	snprintf(err, errlen, "%s", h_flat(p.ebuf != NULL ? p.ebuf : ""));
	h_proc_free(&p);
	return rc;
}

/*
 * A VMDK image (a monolithic sparse extent) of 64 MiB at path:
 * qemu-img's, or without it a file that begins with the header's magic
 * and version (the rest, which only qemu-img would check, left out).
 */
static int
make_vmdk(const char *path)
{
	static const unsigned char hdr[] = {
		'K', 'D', 'M', 'V', 1, 0, 0, 0,	/* magic, version 1 */
	};
	char *argv[] = { qemu_img, "create", "-q", "-f", "vmdk",
	    (char *)path, "64M", NULL };
	struct h_proc p;
	int fd, rc;

	if (qemu_img[0] != '\0') {
		rc = run(&p, argv, QEMU_IMG_MS);
		if (rc != 0)
			tap_diag("qemu-img create: exit %d: %s", rc,
			    h_flat(p.ebuf != NULL ? p.ebuf : ""));
		h_proc_free(&p);
		return rc == 0 ? 0 : -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	rc = fd >= 0 && pwrite(fd, hdr, sizeof(hdr), 0) == sizeof(hdr) &&
	    ftruncate(fd, 4 << 16) == 0 ? 0 : -1;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The image at path is byte for byte was, and qemu-img checks it. */
static void
expect_intact(const char *path, const char *was, size_t waslen,
    const char *what)
{
	char *argv[] = { qemu_img, "check", "-q", (char *)path, NULL };
	struct h_proc p;
	size_t len;
	char *now;
	int rc;

	now = h_read_file(path, &len);
	tap_ok(now != NULL && len == waslen && memcmp(now, was, len) == 0,
	    "%s: the image is unchanged (%zu bytes)", what, len);
	free(now);
	if (qemu_img[0] == '\0') {
		tap_ok(1, "# SKIP qemu-img is not installed (qemu-utils)");
		return;
	}
	rc = run(&p, argv, QEMU_IMG_MS);
	tap_ok(rc == 0, "%s: qemu-img check passes (exit %d%s%s)", what, rc,
	    p.ebuf != NULL && *p.ebuf != '\0' ? ": " : "",
	    h_flat(p.ebuf != NULL ? p.ebuf : ""));
	h_proc_free(&p);
}

/*
 * Take "format" out of the disks of VM name's stored definition, as a
 * vmmd that did not record it wrote it (vmmd stopped): 0 or -1.
 */
static int
forget_format(struct h_daemon *d, const char *name)
{
	struct json_object *def, *disks;
	char path[512];
	int rc;

	snprintf(path, sizeof(path), "%s/vms/%s.json", d->state, name);
	if ((def = json_object_from_file(path)) == NULL)
		return -1;
	disks = json_object_object_get(def, "disks");
	for (size_t i = 0; disks != NULL &&
	    i < json_object_array_length(disks); i++)
		json_object_object_del(json_object_array_get_idx(disks, i),
		    "format");
	rc = json_object_to_file(path, def) == 0 ? 0 : -1;
	json_object_put(def);
	return rc;
}

/* A refusal names the image, its format and how to say it is raw. */
static bool
names_vmdk(const char *desc, const char *path)
{
	return desc != NULL && strstr(desc, path) != NULL &&
	    strstr(desc, "a VMDK image") != NULL &&
	    strstr(desc, "format=raw") != NULL &&
	    strstr(desc, "\"format\": \"raw\"") != NULL;
}

int
main(void)
{
	const char *echo;
	char img[256], raw[256], tmp[256], disk[300], err[1024];
	char state[32], *was;
	struct json_object *r, *disks;
	struct h_conn *c;
	size_t waslen;
	int fd;

	h_init();
	find_qemu_img();
	if (qemu_img[0] == '\0')
		tap_diag("qemu-img not found: the VMDK image is written "
		    "here, and not checked");
	c = h_setup(&d);
	echo = h_env("VMMD_GUEST_ECHO");
	snprintf(img, sizeof(img), "%s/guest.vmdk", d->dir);
	snprintf(raw, sizeof(raw), "%s/guest.img", d->dir);
	snprintf(tmp, sizeof(tmp), "%s/new.vmdk", d->dir);
	if (make_vmdk(img) < 0 || (was = h_read_file(img, &waslen)) == NULL)
		tap_bail("cannot make a VMDK image at %s", img);
	tap_ok(1, "a VMDK image of %zu bytes%s", waslen,
	    qemu_img[0] != '\0' ? ", by qemu-img" : "");

	/* At create: vmctl and JSON. */
	snprintf(disk, sizeof(disk), "%s", img);
	tap_ok(vmctl(err, sizeof(err), "create", "q", "--kernel", echo,
	    "--memory", "32", "--disk", disk, NULL) == 2 &&
	    names_vmdk(err, img),
	    "vmctl create --disk IMAGE.vmdk: refused, the format named and "
	    "format=raw offered: %s", err);
	tap_ok(strcmp(h_state(c, "q", state, sizeof(state)),
	    "(not_found)") == 0, "and no VM made (%s)", state);
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"q\","
	    "\"memory_mib\":32,\"disks\":[{\"path\":\"%s\"}]}", img);
	if (h_check_error(r, "invalid_argument", "vm.create with the VMDK "
	    "image"))
		tap_ok(names_vmdk(h_err_desc(r), img), "in words: %s",
		    h_err_desc(r));
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"q\","
	    "\"memory_mib\":32,\"disks\":[{\"path\":\"%s\","
	    "\"readonly\":true}]}", img);
	h_check_error(r, "invalid_argument", "read-only, refused too");
	json_object_put(r);
	snprintf(disk, sizeof(disk), "%s,format=qcow2", img);
	tap_ok(vmctl(err, sizeof(err), "create", "q", "--kernel", echo,
	    "--memory", "32", "--disk", disk, NULL) == 2 &&
	    strstr(err, img) != NULL &&
	    strstr(err, "not a qcow2 image") != NULL &&
	    strstr(err, "VMDK") != NULL,
	    "format=qcow2 on it: refused, said so: %s", err);
	expect_intact(img, was, waslen, "refused at create");

	/*
	 * At start: the file a definition names became a VMDK image.  The
	 * definition recorded at create what the image was, raw, and that
	 * decides at every start, not a header that came later (its
	 * guest's, maybe).
	 */
	fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	tap_ok(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "a raw image");
	if (fd >= 0)
		close(fd);
	tap_ok(h_create(c, "swapped", "\"kernel\":\"%s\",\"disks\":"
	    "[{\"path\":\"%s\"}]", echo, raw) == 0,
	    "a VM on the raw image: created");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"swapped\"}");
	disks = json_object_object_get(h_ret(r), "disks");
	tap_ok(strcmp(h_str(json_object_array_get_idx(disks, 0), "format") ?:
	    "", "raw") == 0, "its definition records format raw: %s",
	    disks != NULL ? json_object_to_json_string(disks) : "no disks");
	json_object_put(r);
	tap_ok(make_vmdk(tmp) == 0 && rename(tmp, raw) == 0,
	    "the raw image replaced by a VMDK one");
	free(was);
	if ((was = h_read_file(raw, &waslen)) == NULL)
		tap_bail("cannot read %s", raw);
	tap_ok(h_start(c, "swapped") == 0 && h_file_expect(h_console_log(d,
	    "swapped"), "echo: ready", 1, H_BOOT_MS) == 0,
	    "it starts, the image read as the raw one recorded");
	tap_ok(h_stop(c, "swapped", true, -1, H_REPLY_MS) == 0, "stopped");

	/* A definition from an older vmmd records none: probed at start. */
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0 && forget_format(d, "swapped") ==
	    0 && h_daemon_spawn(d) == 0,
	    "vmmd restarted with the definition's format taken out");
	c = h_connect(d);
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"swapped\"}");
	if (h_check_error(r, "invalid_argument", "vm.start on it"))
		tap_ok(names_vmdk(h_err_desc(r), raw), "in words: %s",
		    h_err_desc(r));
	json_object_put(r);
	tap_ok(strcmp(h_state(c, "swapped", state, sizeof(state)),
	    "defined") == 0, "the VM stays defined (%s)", state);
	tap_ok(vmctl(err, sizeof(err), "start", "swapped", NULL) == 2 &&
	    names_vmdk(err, raw),
	    "vmctl start: refused the same way: %s", err);
	expect_intact(raw, was, waslen, "refused at start");
	free(was);

	/* Said to be raw: it is. */
	if ((was = h_read_file(img, &waslen)) == NULL)
		tap_bail("cannot read %s", img);
	snprintf(disk, sizeof(disk), "%s,format=raw", img);
	tap_ok(vmctl(err, sizeof(err), "create", "asraw", "--kernel", echo,
	    "--memory", "32", "--disk", disk, NULL) == 0,
	    "vmctl create --disk IMAGE,format=raw: created (%s)", err);
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"asraw\"}");
	disks = json_object_object_get(h_ret(r), "disks");
	tap_ok(strcmp(h_str(json_object_array_get_idx(disks, 0), "format") ?:
	    "", "raw") == 0, "vm.info shows it: %s",
	    disks != NULL ? json_object_to_json_string(disks) : "no disks");
	json_object_put(r);
	tap_ok(h_daemon_restart(d, 10000) == 0, "vmmd restarted");
	h_close(c);
	c = h_connect(d);
	tap_ok(h_start(c, "asraw") == 0,
	    "the definition kept format raw: it starts after the restart");
	tap_ok(h_file_expect(h_console_log(d, "asraw"), "echo: ready", 1,
	    H_BOOT_MS) == 0, "the guest runs");
	tap_ok(h_stop(c, "asraw", true, -1, H_REPLY_MS) == 0, "stopped");
	/* vmmd wrote nothing to it, and the echo guest does not either. */
	expect_intact(img, was, waslen, "after a run as raw");
	free(was);

	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
