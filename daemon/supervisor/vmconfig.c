/*
 * VM definitions: validation and serialisation (their files on disk:
 * vmconfig-store.c).
 *
 * The same parser checks vm.create's arguments and the files reloaded at
 * start, so a file can only hold what a client could have created.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "boot.h"
#include "nbd-addr.h"
#include "rbd-spec.h"
#include "pc-layout.h"
#include "proto.h"
#include "uuid-text.h"
#include "vmconfig.h"
#include "vmconfig-boot.h"
#include "vmconfig-cloud.h"
#include "vmconfig-net.h"
#include "vmconfig-internal.h"

static const char *const config_keys[] = {
	"name", "uuid", "kernel", "initrd", "cmdline", "memory_mib", "vcpus",
	"on_reboot", "transient", "vnc", "display", "vnc_password", "vnc_web",
	"lost_tick_policy", "rtc_backlog_max", "rtc_slices", "rng", "balloon",
	"disks", "autostart", "net", "vsock", "fs", "owner", "boot", "cloud_init",
	"firmware", "cdrom", "boot_order", "boot_menu", "managed", NULL
};

const char *
config_on_reboot_name(enum vm_on_reboot r)
{
	return r == VM_ON_REBOOT_STOP ? "stop" : "restart";
}

const char *
config_lost_ticks_name(enum vm_lost_ticks l)
{
	return l == VM_LOST_TICKS_DISCARD ? "discard" : "slew";
}

bool
config_name_valid(const char *name)
{
	size_t i, len;

	len = strlen(name);
	if (len == 0 || len > CONFIG_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9'))
			continue;
		/* Not first: keeps names from looking like options or
		 * hidden files (".x", "-x"). */
		if (i > 0 && (c == '.' || c == '_' || c == '-'))
			continue;
		return false;
	}
	return true;
}

int
config_check_file(const char *what, const char *path, bool kernel, char *err,
    size_t errlen)
{
	char reason[256];
	struct stat st;
	int fd, rc;

	if (path[0] != '/') {
		config_err(err, errlen, "%s: '%s' is not an absolute path",
		    what, path);
		return -EINVAL;
	}
	/*
	 * Not even opened unless it is a regular file: opening a device
	 * node can have effects of its own (a watchdog starts counting).
	 */
	if (stat(path, &st) < 0) {
		rc = -errno;
		config_err(err, errlen, "%s: %s: %s", what, path,
		    strerror(-rc));
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		config_err(err, errlen, "%s: %s: not a regular file", what,
		    path);
		return -EINVAL;
	}
	/* O_NONBLOCK: a FIFO at that path must not hang the daemon. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		config_err(err, errlen, "%s: %s: %s", what, path,
		    strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		config_err(err, errlen, "%s: %s: %s", what, path,
		    strerror(-rc));
		return rc;
	}
	close(fd);
	if (!S_ISREG(st.st_mode)) {
		config_err(err, errlen, "%s: %s: not a regular file", what,
		    path);
		return -EINVAL;
	}
	if (kernel) {
		reason[0] = '\0';
		rc = boot_probe(path, reason, sizeof(reason));
		if (rc < 0) {
			config_err(err, errlen, "%s: %s: %s", what, path,
			    reason[0] != '\0' ? reason : strerror(-rc));
			return rc;
		}
	}
	return 0;
}

void
config_def_free(struct vm_def *def)
{
	if (def == NULL)
		return;
	free(def->name);
	free(def->kernel);
	free(def->initrd);
	free(def->cdrom);
	free(def->cmdline);
	free(def->vnc_addr);
	free(def->fs_tag);
	free(def->fs_dir);
	free(def->fs_socket);
	for (unsigned int i = 0; i < def->ndisks; i++) {
		free(def->disks[i].path);
		free(def->disks[i].serial);
	}
	if (def->vnc_password != NULL) {
		explicit_bzero(def->vnc_password, strlen(def->vnc_password));
		free(def->vnc_password);
	}
	config_cloud_init_free(&def->cloud_init);
	free(def);
}

static int
config_strdup(char **dst, const char *src)
{
	if (src == NULL) {
		*dst = NULL;
		return 0;
	}
	*dst = strdup(src);
	return *dst == NULL ? -ENOMEM : 0;
}

struct vm_def *
config_def_dup(const struct vm_def *def)
{
	struct vm_def *d;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	*d = *def;
	d->name = d->kernel = d->initrd = d->cmdline = d->cdrom = NULL;
	d->fs_tag = d->fs_dir = d->fs_socket = NULL;
	d->vnc_addr = d->vnc_password = NULL;
	memset(&d->cloud_init, 0, sizeof(d->cloud_init));
	d->ndisks = 0;
	for (; d->ndisks < def->ndisks; d->ndisks++) {
		struct vm_disk *k = &d->disks[d->ndisks];

		k->path = k->serial = NULL;
		if (config_strdup(&k->path, def->disks[d->ndisks].path) < 0 ||
		    config_strdup(&k->serial,
		    def->disks[d->ndisks].serial) < 0) {
			d->ndisks++;
			config_def_free(d);
			return NULL;
		}
	}
	if (config_strdup(&d->name, def->name) < 0 ||
	    config_strdup(&d->kernel, def->kernel) < 0 ||
	    config_strdup(&d->initrd, def->initrd) < 0 ||
	    config_strdup(&d->cdrom, def->cdrom) < 0 ||
	    config_strdup(&d->fs_tag, def->fs_tag) < 0 ||
	    config_strdup(&d->fs_dir, def->fs_dir) < 0 ||
	    config_strdup(&d->fs_socket, def->fs_socket) < 0 ||
	    config_strdup(&d->cmdline, def->cmdline) < 0 ||
	    config_strdup(&d->vnc_addr, def->vnc_addr) < 0 ||
	    config_strdup(&d->vnc_password, def->vnc_password) < 0 ||
	    config_cloud_init_dup(&d->cloud_init, &def->cloud_init) < 0) {
		config_def_free(d);
		return NULL;
	}
	return d;
}

/* A path argument: absent/null is fine; else absolute and sane. */
static int
config_parse_path(struct json_object *obj, const char *key, unsigned int flags,
    char **out, char *err, size_t errlen)
{
	const char *s = NULL;

	if (proto_arg_string(obj, key, 0, &s, err, errlen) < 0)
		return -EINVAL;
	if (s == NULL)
		return 0;
	if (s[0] != '/') {
		config_err(err, errlen, "%s: '%s' is not an absolute path",
		    key, s);
		return -EINVAL;
	}
	if (strlen(s) >= PATH_MAX) {
		config_err(err, errlen, "%s: path is too long", key);
		return -EINVAL;
	}
	if ((flags & CONFIG_CHECK_FILES) &&
	    config_check_file(key, s, strcmp(key, "kernel") == 0, err,
	    errlen) < 0)
		return -EINVAL;
	*out = strdup(s);
	if (*out == NULL) {
		config_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Disks ---------------------------------------------------------------- */

static const char *const config_disk_keys[] = {
	"path", "readonly", "serial", "format", "backing", "overlay", "bus",
	NULL
};

/* "uuid": optional; see struct vm_def. */
static int
config_parse_uuid(struct json_object *obj, struct vm_def *def, char *err,
    size_t errlen)
{
	const char *s;

	if (config_opt_string(obj, "uuid", NULL, &s, err, errlen) < 0)
		return -EINVAL;
	if (s == NULL)
		return 0;
	if (!uuid_text_parse(s, def->uuid)) {
		config_err(err, errlen, "uuid: '%.80s' is not a UUID "
		    "(xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s);
		return -EINVAL;
	}
	def->has_uuid = true;
	return 0;
}

int
config_uuid_new(struct vm_def *def)
{
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(def->uuid)) {
		n = getrandom(def->uuid + got, sizeof(def->uuid) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	uuid_text_make_v4(def->uuid);
	def->has_uuid = true;
	return 0;
}

/*
 * "firmware": "bios" (SeaBIOS) or "uefi" (OVMF).  The firmware finds
 * the guest's boot loader on its disks: a kernel, initrd, command line
 * or "boot" would go unused.
 */
static int
config_parse_firmware(struct json_object *obj, struct vm_def *def,
    char *err, size_t errlen)
{
	const char *s = NULL;

	if (config_opt_string(obj, "firmware", NULL, &s, err, errlen) < 0)
		return -EINVAL;
	if (s == NULL)
		return 0;
	if (strcmp(s, "bios") == 0)
		def->firmware = VM_FIRMWARE_BIOS;
	else if (strcmp(s, "uefi") == 0)
		def->firmware = VM_FIRMWARE_UEFI;
	else {
		config_err(err, errlen, "firmware: '%.80s' must be \"bios\" "
		    "or \"uefi\"", s);
		return -EINVAL;
	}
	if (def->kernel != NULL || def->initrd != NULL ||
	    def->boot != VM_BOOT_UNSET || def->cmdline[0] != '\0') {
		config_err(err, errlen, "firmware: \"%s\" boots what the "
		    "disks hold: give no %s", config_firmware_name(def),
		    def->kernel != NULL ? "kernel" :
		    def->initrd != NULL ? "initrd" :
		    def->boot != VM_BOOT_UNSET ? "boot" : "cmdline");
		return -EINVAL;
	}
	return 0;
}

const char *
config_firmware_name(const struct vm_def *def)
{
	switch (def->firmware) {
	case VM_FIRMWARE_BIOS:
		return "bios";
	case VM_FIRMWARE_UEFI:
		return "uefi";
	case VM_FIRMWARE_NONE:
		break;
	}
	return NULL;
}

enum vm_boot
config_boot(const struct vm_def *def)
{
	if (def->firmware != VM_FIRMWARE_NONE)
		return VM_BOOT_FIRMWARE;
	if (def->boot != VM_BOOT_UNSET)
		return def->boot;
	return def->kernel == NULL && def->ndisks > 0 ? VM_BOOT_DISK :
	    VM_BOOT_KERNEL;
}

const char *
config_disk_format_name(enum vm_disk_format f)
{
	switch (f) {
	case VM_DISK_FORMAT_RAW:
		return "raw";
	case VM_DISK_FORMAT_QCOW2:
		return "qcow2";
	case VM_DISK_FORMAT_PROBED:
		break;
	}
	return NULL;
}

/*
 * One member of "disks": {"path": ..., "readonly": ..., "serial": ...,
 * "format": ..., "backing": ..., "overlay": ..., "bus": ...}.
 */
static int
config_parse_disk(struct json_object *o, unsigned int flags,
    struct vm_disk *disk, char *err, size_t errlen)
{
	const char *serial, *format, *bus;
	struct json_object *po;
	struct nbd_addr addr;
	struct rbd_spec rbd;
	char why[256];
	int rc;
	size_t i;

	if (!json_object_is_type(o, json_type_object)) {
		config_err(err, errlen, "an object {\"path\": ...}");
		return -EINVAL;
	}
	if (proto_args_check(o, config_disk_keys, err, errlen) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(o, "path", &po) &&
	    json_object_is_type(po, json_type_string) &&
	    nbd_addr_is(json_object_get_string(po))) {
		/* An NBD server's address, checked; connected at start. */
		disk->nbd = true;
		if (nbd_addr_parse(json_object_get_string(po), &addr, why,
		    sizeof(why)) < 0) {
			config_err(err, errlen, "path: %s", why);
			return -EINVAL;
		}
		if ((disk->path = strdup(json_object_get_string(po))) ==
		    NULL)
			return -ENOMEM;
	} else if (json_object_object_get_ex(o, "path", &po) &&
	    json_object_is_type(po, json_type_string) &&
	    rbd_spec_is(json_object_get_string(po))) {
		/* A Ceph RBD image, checked; opened by the worker. */
		disk->rbd = true;
		if (rbd_spec_parse(json_object_get_string(po), &rbd, why,
		    sizeof(why)) < 0) {
			config_err(err, errlen, "path: %s", why);
			return -EINVAL;
		}
		if ((disk->path = strdup(json_object_get_string(po))) ==
		    NULL)
			return -ENOMEM;
	} else if ((rc = config_parse_path(o, "path", flags, &disk->path,
	    err, errlen)) < 0)
		return rc;
	if (disk->path == NULL) {
		config_err(err, errlen, "path: missing");
		return -EINVAL;
	}
	if (config_opt_bool(o, "readonly", false, &disk->readonly, why,
	    sizeof(why)) < 0 ||
	    config_opt_string(o, "serial", NULL, &serial, why,
	    sizeof(why)) < 0 ||
	    config_opt_string(o, "format", NULL, &format, why,
	    sizeof(why)) < 0 ||
	    config_opt_bool(o, "backing", false, &disk->backing, why,
	    sizeof(why)) < 0 ||
	    config_opt_bool(o, "overlay", false, &disk->overlay, why,
	    sizeof(why)) < 0 ||
	    config_opt_string(o, "bus", "virtio", &bus, why,
	    sizeof(why)) < 0) {
		config_err(err, errlen, "%s", why);
		return -EINVAL;
	}
	if (strcmp(bus, "sata") != 0 && strcmp(bus, "virtio") != 0) {
		config_err(err, errlen, "bus: '%.40s' must be \"virtio\" or "
		    "\"sata\"", bus);
		return -EINVAL;
	}
	disk->sata = strcmp(bus, "sata") == 0;
	if (disk->readonly && disk->overlay) {
		config_err(err, errlen, "overlay: a disk cannot be both "
		    "\"overlay\" and \"readonly\": an overlay exists to "
		    "take the guest's writes (a read-only disk can share "
		    "%s itself)", disk->path);
		return -EINVAL;
	}
	if (disk->nbd && (format != NULL || disk->backing || disk->overlay)) {
		config_err(err, errlen, "%s: an NBD disk is what its server "
		    "serves: give no format, backing or overlay",
		    format != NULL ? "format" : disk->backing ? "backing" :
		    "overlay");
		return -EINVAL;
	}
	if (disk->rbd && (format != NULL || disk->backing || disk->overlay)) {
		config_err(err, errlen, "%s: an RBD disk is the image the "
		    "cluster serves: give no format, backing or overlay (RBD "
		    "clones and snapshots are made with rbd(8))",
		    format != NULL ? "format" : disk->backing ? "backing" :
		    "overlay");
		return -EINVAL;
	}
	if (disk->nbd || disk->rbd)
		/* The server serves the guest's bytes: raw to vmmd. */
		disk->format = VM_DISK_FORMAT_RAW;
	else if (format == NULL)
		disk->format = VM_DISK_FORMAT_PROBED;
	else if (strcmp(format, "raw") == 0)
		disk->format = VM_DISK_FORMAT_RAW;
	else if (strcmp(format, "qcow2") == 0)
		disk->format = VM_DISK_FORMAT_QCOW2;
	else {
		config_err(err, errlen, "format: '%.32s' is not supported: "
		    "disks are raw or qcow2 images (qemu-img convert -O qcow2 "
		    "makes one)", format);
		return -EINVAL;
	}
	if (serial == NULL)
		return 0;
	if (strlen(serial) == 0 || strlen(serial) > CONFIG_SERIAL_MAX) {
		config_err(err, errlen, "serial: 1 to %d bytes",
		    CONFIG_SERIAL_MAX);
		return -EINVAL;
	}
	for (i = 0; serial[i] != '\0'; i++)
		if (serial[i] < 0x21 || serial[i] > 0x7e || serial[i] == ',') {
			config_err(err, errlen, "serial: printable ASCII "
			    "without blanks or commas");
			return -EINVAL;
		}
	return config_strdup(&disk->serial, serial) < 0 ? -ENOMEM : 0;
}

static int
config_parse_disks(struct json_object *obj, unsigned int flags,
    struct vm_def *def, char *err, size_t errlen)
{
	struct json_object *arr;
	char why[512];
	size_t i, n;
	int rc;

	if (!json_object_object_get_ex(obj, "disks", &arr) || arr == NULL)
		return 0;
	if (!json_object_is_type(arr, json_type_array)) {
		config_err(err, errlen, "disks: expected an array");
		return -EINVAL;
	}
	n = json_object_array_length(arr);
	if (n > CONFIG_DISKS_MAX) {
		config_err(err, errlen, "disks: %zu disks, at most %d", n,
		    CONFIG_DISKS_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		def->ndisks = (unsigned int)i + 1;
		rc = config_parse_disk(json_object_array_get_idx(arr, i), flags,
		    &def->disks[i], why, sizeof(why));
		if (rc < 0) {
			config_err(err, errlen, "disks[%zu]: %s", i, why);
			return rc;
		}
	}
	return 0;
}

struct json_object *
config_disks_json(const struct vm_def *def)
{
	struct json_object *arr = json_object_new_array(), *o;
	unsigned int i;

	for (i = 0; i < def->ndisks; i++) {
		o = json_object_new_object();
		json_object_object_add(o, "path",
		    json_object_new_string(def->disks[i].path));
		json_object_object_add(o, "readonly",
		    json_object_new_boolean(def->disks[i].readonly));
		if (def->disks[i].serial != NULL)
			json_object_object_add(o, "serial",
			    json_object_new_string(def->disks[i].serial));
		/* A network disk's "raw" goes without saying. */
		if (def->disks[i].format != VM_DISK_FORMAT_PROBED &&
		    !def->disks[i].nbd && !def->disks[i].rbd)
			json_object_object_add(o, "format",
			    json_object_new_string(config_disk_format_name(
			    def->disks[i].format)));
		if (def->disks[i].backing)
			json_object_object_add(o, "backing",
			    json_object_new_boolean(1));
		if (def->disks[i].overlay)
			json_object_object_add(o, "overlay",
			    json_object_new_boolean(1));
		if (def->disks[i].sata)
			json_object_object_add(o, "bus",
			    json_object_new_string("sata"));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* vsock ----------------------------------------------------------------- */

static const char *const config_vsock_keys[] = { "cid", "socket", NULL };

/*
 * "vsock": {"cid": N, "socket": BOOL}: a virtio-vsock with the guest's
 * address N (3 to 2^32 - 2), or without "cid" the lowest free one at
 * each start; "socket": also a Unix socket for it under the runtime
 * directory (vmmd(8)).
 */
static int
config_parse_vsock(struct json_object *obj, struct vm_def *def, char *err,
    size_t errlen)
{
	struct json_object *o;
	int64_t cid;
	char why[256];

	if (!json_object_object_get_ex(obj, "vsock", &o) || o == NULL)
		return 0;
	if (!json_object_is_type(o, json_type_object)) {
		config_err(err, errlen, "vsock: expected an object {\"cid\": "
		    "...} ({} for a CID chosen at start)");
		return -EINVAL;
	}
	/* cid 0: none given, the lowest free one at each start */
	if (proto_args_check(o, config_vsock_keys, why, sizeof(why)) < 0 ||
	    config_opt_int(o, "cid", CONFIG_VSOCK_CID_MIN,
	    CONFIG_VSOCK_CID_MAX, 0, &cid, why, sizeof(why)) < 0 ||
	    config_opt_bool(o, "socket", false, &def->vsock_socket, why,
	    sizeof(why)) < 0) {
		config_err(err, errlen, "vsock: %s", why);
		return -EINVAL;
	}
	def->vsock = true;
	def->vsock_cid = (uint32_t)cid;
	return 0;
}

struct json_object *
config_vsock_json(const struct vm_def *def)
{
	struct json_object *o = json_object_new_object();

	if (def->vsock_cid != 0)
		json_object_object_add(o, "cid",
		    json_object_new_int64(def->vsock_cid));
	json_object_object_add(o, "socket",
	    json_object_new_boolean(def->vsock_socket));
	return o;
}

/* fs -------------------------------------------------------------------- */

static const char *const config_fs_keys[] = {
	"tag", "dir", "socket", "readonly", NULL
};

/*
 * "fs": {"tag": T, "dir": PATH, "readonly": BOOL} or {"tag": T,
 * "socket": PATH}: a virtio-fs the guest mounts by tag T (1 to 36
 * bytes), served by a virtiofsd vmmd starts on the directory PATH, or
 * by the vhost-user server listening on the Unix socket PATH.
 */
static int
config_parse_fs(struct json_object *obj, struct vm_def *def, char *err,
    size_t errlen)
{
	struct json_object *o;
	const char *tag;
	char why[256];

	if (!json_object_object_get_ex(obj, "fs", &o) || o == NULL)
		return 0;
	if (!json_object_is_type(o, json_type_object)) {
		config_err(err, errlen, "fs: expected an object {\"tag\": "
		    "..., \"dir\": ...}");
		return -EINVAL;
	}
	if (proto_args_check(o, config_fs_keys, why, sizeof(why)) < 0 ||
	    config_opt_string(o, "tag", NULL, &tag, why, sizeof(why)) < 0 ||
	    config_opt_bool(o, "readonly", false, &def->fs_readonly, why,
	    sizeof(why)) < 0 ||
	    config_parse_path(o, "dir", 0, &def->fs_dir, why,
	    sizeof(why)) < 0 ||
	    config_parse_path(o, "socket", 0, &def->fs_socket, why,
	    sizeof(why)) < 0) {
		config_err(err, errlen, "fs: %s", why);
		return -EINVAL;
	}
	if (tag == NULL || tag[0] == '\0' || strlen(tag) > 36) {
		config_err(err, errlen, "fs: tag: expected 1 to 36 bytes, "
		    "the name the guest mounts the share by");
		return -EINVAL;
	}
	if ((def->fs_dir == NULL) == (def->fs_socket == NULL)) {
		config_err(err, errlen, "fs: expected either \"dir\" or "
		    "\"socket\"");
		return -EINVAL;
	}
	if (def->fs_socket != NULL && def->fs_readonly) {
		config_err(err, errlen, "fs: readonly: the server behind "
		    "the socket decides that");
		return -EINVAL;
	}
	if ((def->fs_tag = strdup(tag)) == NULL) {
		config_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

struct json_object *
config_fs_json(const struct vm_def *def)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "tag", json_object_new_string(def->fs_tag));
	if (def->fs_dir != NULL) {
		json_object_object_add(o, "dir",
		    json_object_new_string(def->fs_dir));
		json_object_object_add(o, "readonly",
		    json_object_new_boolean(def->fs_readonly));
	} else {
		json_object_object_add(o, "socket",
		    json_object_new_string(def->fs_socket));
	}
	return o;
}

/* The display ---------------------------------------------------------- */

/*
 * Decimal digits only (no sign, no blanks), at most max: 0, or -EINVAL
 * (not a number) or -ERANGE.
 */
static int
config_digits(const char *s, size_t len, long max, long *out)
{
	long v = 0;
	size_t i;

	if (len == 0)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v > max)
			continue;	/* keep going: a letter is -EINVAL */
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * "vnc": "ADDR:N", "ADDR:auto" or "auto"; ADDR an IPv4 literal, an IPv6
 * literal in brackets, or "localhost".  Sets def->vnc_addr (without the
 * brackets) and def->vnc_display.
 */
static int
config_parse_vnc(const char *s, struct vm_def *def, char *err,
    size_t errlen)
{
	struct in6_addr a6;
	struct in_addr a4;
	const char *colon, *disp;
	char addr[INET6_ADDRSTRLEN + 1];
	size_t alen;
	long n;
	int rc;

	if (strcmp(s, "auto") == 0) {
		def->vnc_display = CONFIG_VNC_DISPLAY_AUTO;
		def->vnc_addr = strdup(CONFIG_VNC_ADDR_DEFAULT);
		return def->vnc_addr != NULL ? 0 : -ENOMEM;
	}
	if (s[0] == '[') {
		colon = strchr(s, ']');
		if (colon == NULL || colon[1] != ':') {
			config_err(err, errlen, "vnc: '%.80s' must be "
			    "[IPV6]:N or [IPV6]:auto", s);
			return -EINVAL;
		}
		alen = (size_t)(colon - s) - 1;
		disp = colon + 2;
		if (alen == 0 || alen >= sizeof(addr))
			goto bad_addr;
		memcpy(addr, s + 1, alen);
		addr[alen] = '\0';
		if (inet_pton(AF_INET6, addr, &a6) != 1)
			goto bad_addr;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL) {
			config_err(err, errlen, "vnc: '%.80s' must be ADDR:N, "
			    "ADDR:auto or auto", s);
			return -EINVAL;
		}
		if (memchr(s, ':', (size_t)(colon - s)) != NULL) {
			config_err(err, errlen, "vnc: '%.80s': an IPv6 address "
			    "goes in brackets, as in [::1]:0", s);
			return -EINVAL;
		}
		alen = (size_t)(colon - s);
		disp = colon + 1;
		if (alen == 0 || alen >= sizeof(addr))
			goto bad_addr;
		memcpy(addr, s, alen);
		addr[alen] = '\0';
		if (strcmp(addr, "localhost") != 0 &&
		    inet_pton(AF_INET, addr, &a4) != 1)
			goto bad_addr;
	}

	if (strcmp(disp, "auto") == 0)
		def->vnc_display = CONFIG_VNC_DISPLAY_AUTO;
	else {
		rc = config_digits(disp, strlen(disp), LONG_MAX / 10 - 10, &n);
		if (rc == -EINVAL) {
			config_err(err, errlen, "vnc: '%.80s': the display "
			    "'%.20s' must be a number or auto", s, disp);
			return -EINVAL;
		}
		if (rc < 0 || n > CONFIG_VNC_DISPLAY_MAX) {
			config_err(err, errlen, "vnc: '%.80s': display %.20s "
			    "is out of range (0..%d: port %d + N is beyond "
			    "65535)", s, disp, CONFIG_VNC_DISPLAY_MAX,
			    CONFIG_VNC_PORT_BASE);
			return -EINVAL;
		}
		def->vnc_display = (int)n;
	}
	def->vnc_addr = strdup(addr);
	return def->vnc_addr != NULL ? 0 : -ENOMEM;

bad_addr:
	config_err(err, errlen, "vnc: '%.80s': the address must be an IPv4 "
	    "address, an IPv6 address in brackets, or localhost", s);
	return -EINVAL;
}

/* "display": "WIDTHxHEIGHT" within the limits, and within the slot. */
static int
config_parse_display(const char *s, struct vm_def *def, char *err,
    size_t errlen)
{
	const char *x;
	uint64_t size;
	long w, h;

	x = strchr(s, 'x');
	if (x == NULL || config_digits(s, (size_t)(x - s), 100000, &w) ==
	    -EINVAL || config_digits(x + 1, strlen(x + 1), 100000, &h) ==
	    -EINVAL) {
		config_err(err, errlen, "display: '%.80s' must be "
		    "WIDTHxHEIGHT, as in 1024x768", s);
		return -EINVAL;
	}
	if (config_digits(s, (size_t)(x - s), CONFIG_DISPLAY_WIDTH_MAX, &w) <
	    0 || w < CONFIG_DISPLAY_WIDTH_MIN ||
	    config_digits(x + 1, strlen(x + 1), CONFIG_DISPLAY_HEIGHT_MAX,
	    &h) < 0 || h < CONFIG_DISPLAY_HEIGHT_MIN) {
		config_err(err, errlen, "display: %.80s is out of range "
		    "(%dx%d..%dx%d)", s, CONFIG_DISPLAY_WIDTH_MIN,
		    CONFIG_DISPLAY_HEIGHT_MIN, CONFIG_DISPLAY_WIDTH_MAX,
		    CONFIG_DISPLAY_HEIGHT_MAX);
		return -EINVAL;
	}
	/* x8r8g8b8, stride width * 4, whole pages: the slot's size. */
	size = ((uint64_t)w * 4 * (uint64_t)h + 4095) & ~(uint64_t)4095;
	if (size > PC_FRAMEBUFFER_MAX) {
		config_err(err, errlen, "display: %.80s needs %llu bytes, "
		    "more than the framebuffer's %llu MiB", s,
		    (unsigned long long)size,
		    (unsigned long long)(PC_FRAMEBUFFER_MAX >> 20));
		return -EINVAL;
	}
	def->width = (unsigned int)w;
	def->height = (unsigned int)h;
	return 0;
}

/*
 * vnc_password: a string (the password), false (none), true or null
 * (one generated at each start, as when absent).  *given: not absent
 * or null.  0 or -EINVAL.
 */
static int
config_parse_password(struct json_object *obj, const char **password,
    bool *none, bool *given, char *err, size_t errlen)
{
	struct json_object *v;

	*password = NULL;
	*none = *given = false;
	if (!json_object_object_get_ex(obj, "vnc_password", &v) || v == NULL)
		return 0;
	*given = true;
	if (json_object_is_type(v, json_type_boolean)) {
		*none = !json_object_get_boolean(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string)) {
		config_err(err, errlen, "vnc_password: expected a string, "
		    "true or false");
		return -EINVAL;
	}
	return proto_arg_string(obj, "vnc_password", 0, password, err,
	    errlen) < 0 ? -EINVAL : 0;
}

/*
 * vnc, display, vnc_password and vnc_web.  The last three only mean
 * something with a display, so without vnc they are refused rather
 * than silently dropped.  Errors never quote the password.
 */
static int
config_parse_display_members(struct json_object *obj, struct vm_def *def,
    char *err, size_t errlen)
{
	const char *vnc, *display, *password = NULL;
	bool no_password, password_given, web;
	size_t plen;
	int rc;

	if (config_opt_string(obj, "vnc", NULL, &vnc, err, errlen) < 0 ||
	    config_opt_string(obj, "display", NULL, &display, err,
	    errlen) < 0 ||
	    config_parse_password(obj, &password, &no_password,
	    &password_given, err, errlen) < 0 ||
	    config_opt_bool(obj, "vnc_web", false, &web, err, errlen) < 0)
		return -EINVAL;
	if (vnc == NULL) {
		const char *key = display != NULL ? "display" :
		    password_given ? "vnc_password" : web ? "vnc_web" : NULL;

		if (key != NULL) {
			config_err(err, errlen, "%s: only with a display: set "
			    "vnc too", key);
			return -EINVAL;
		}
		return 0;
	}
	if ((rc = config_parse_vnc(vnc, def, err, errlen)) < 0)
		return rc;
	def->width = CONFIG_DISPLAY_WIDTH_DEFAULT;
	def->height = CONFIG_DISPLAY_HEIGHT_DEFAULT;
	if (display != NULL &&
	    (rc = config_parse_display(display, def, err, errlen)) < 0)
		return rc;
	if (password != NULL) {
		plen = strlen(password);
		if (plen == 0) {
			config_err(err, errlen, "vnc_password: must not be "
			    "empty (false for no password)");
			return -EINVAL;
		}
		if (plen > CONFIG_VNC_PASSWORD_MAX) {
			config_err(err, errlen, "vnc_password: %zu bytes is "
			    "longer than %d (VNC authentication uses %d)",
			    plen, CONFIG_VNC_PASSWORD_MAX,
			    CONFIG_VNC_PASSWORD_MAX);
			return -EINVAL;
		}
		if ((def->vnc_password = strdup(password)) == NULL)
			return -ENOMEM;
	}
	def->vnc_no_password = no_password;
	def->vnc_web = web;
	return 0;
}

static const char *const config_owner_keys[] = { "uid", "gid", "groups",
	NULL };

/*
 * "owner": {"uid": N, "gid": N, "groups": [N, ...]}, absent for a
 * definition made before owners were recorded.
 */
static int
config_parse_owner(struct json_object *obj, struct vm_owner *o, char *err,
    size_t errlen)
{
	struct json_object *v, *groups, *g;
	int64_t n;
	size_t i;

	if (!json_object_object_get_ex(obj, "owner", &v))
		return 0;
	if (!json_object_is_type(v, json_type_object) ||
	    proto_args_check(v, config_owner_keys, err, errlen) < 0) {
		config_err(err, errlen, "owner: must be {\"uid\", \"gid\", "
		    "\"groups\"}");
		return -EINVAL;
	}
	if (proto_arg_int(v, "uid", 1, 0, UINT32_MAX - 1, &n, err,
	    errlen) < 0)
		return -EINVAL;
	o->uid = (uid_t)n;
	if (proto_arg_int(v, "gid", 1, 0, UINT32_MAX - 1, &n, err,
	    errlen) < 0)
		return -EINVAL;
	o->gid = (gid_t)n;
	o->ngroups = 0;
	if (json_object_object_get_ex(v, "groups", &groups)) {
		if (!json_object_is_type(groups, json_type_array) ||
		    json_object_array_length(groups) >
		    CONFIG_OWNER_GROUPS_MAX) {
			config_err(err, errlen, "owner: groups must be an "
			    "array of at most %d group ids",
			    CONFIG_OWNER_GROUPS_MAX);
			return -EINVAL;
		}
		for (i = 0; i < json_object_array_length(groups); i++) {
			g = json_object_array_get_idx(groups, i);
			if (!json_object_is_type(g, json_type_int) ||
			    (n = json_object_get_int64(g)) < 0 ||
			    n >= UINT32_MAX) {
				config_err(err, errlen, "owner: groups[%zu] "
				    "is not a group id", i);
				return -EINVAL;
			}
			o->groups[o->ngroups++] = (gid_t)n;
		}
	}
	o->known = true;
	return 0;
}

int
config_parse(struct json_object *obj, unsigned int flags,
    struct vm_def **defp, char *err, size_t errlen)
{
	struct vm_def *def;
	const char *s;
	int64_t n;
	int rc = -EINVAL;

	*defp = NULL;
	if (obj == NULL || !json_object_is_type(obj, json_type_object)) {
		config_err(err, errlen, "a definition must be a JSON object");
		return -EINVAL;
	}
	if (proto_args_check(obj, config_keys, err, errlen) < 0)
		return -EINVAL;

	def = calloc(1, sizeof(*def));
	if (def == NULL) {
		config_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	def->memory_mib = CONFIG_MEMORY_DEFAULT;
	def->vcpus = CONFIG_VCPUS_DEFAULT;
	def->on_reboot = VM_ON_REBOOT_RESTART;

	s = NULL;
	if (proto_arg_string(obj, "name", 1, &s, err, errlen) < 0)
		goto fail;
	if (!config_name_valid(s)) {
		config_err(err, errlen, "name: '%.80s%s' must match %s", s,
		    strlen(s) > 80 ? "..." : "", CONFIG_NAME_PATTERN);
		goto fail;
	}
	if ((def->name = strdup(s)) == NULL)
		goto nomem;
	if (config_parse_uuid(obj, def, err, errlen) < 0)
		goto fail;

	if ((rc = config_parse_path(obj, "kernel", flags, &def->kernel, err,
	    errlen)) < 0)
		goto fail;
	if ((rc = config_parse_path(obj, "initrd", flags, &def->initrd, err,
	    errlen)) < 0)
		goto fail;
	if ((rc = config_parse_path(obj, "cdrom", flags, &def->cdrom, err,
	    errlen)) < 0)
		goto fail;
	rc = -EINVAL;
	if (config_opt_string(obj, "boot", NULL, &s, err, errlen) < 0)
		goto fail;
	if (s != NULL) {
		if (strcmp(s, "disk") == 0)
			def->boot = VM_BOOT_DISK;
		else if (strcmp(s, "kernel") == 0)
			def->boot = VM_BOOT_KERNEL;
		else {
			config_err(err, errlen, "boot: '%.80s' must be "
			    "\"disk\" or \"kernel\"", s);
			goto fail;
		}
	}
	if (def->boot == VM_BOOT_DISK && (def->kernel != NULL ||
	    def->initrd != NULL)) {
		config_err(err, errlen, "boot: \"disk\" takes the kernel and "
		    "initrd from the disk: give no %s", def->kernel != NULL ?
		    "kernel" : "initrd");
		goto fail;
	}

	if (config_opt_string(obj, "cmdline", "", &s, err, errlen) < 0)
		goto fail;
	if (strlen(s) > CONFIG_CMDLINE_MAX) {
		config_err(err, errlen, "cmdline: %zu bytes is longer than %d",
		    strlen(s), CONFIG_CMDLINE_MAX);
		goto fail;
	}
	if ((def->cmdline = strdup(s)) == NULL)
		goto nomem;
	if ((rc = config_parse_firmware(obj, def, err, errlen)) < 0)
		goto fail;
	rc = -EINVAL;

	if (config_opt_int(obj, "memory_mib", CONFIG_MEMORY_MIN,
	    CONFIG_MEMORY_MAX, CONFIG_MEMORY_DEFAULT, &n, err, errlen) < 0)
		goto fail;
	def->memory_mib = (unsigned int)n;

	if (config_opt_int(obj, "vcpus", CONFIG_VCPUS_MIN, CONFIG_VCPUS_MAX,
	    CONFIG_VCPUS_DEFAULT, &n, err, errlen) < 0)
		goto fail;
	def->vcpus = (unsigned int)n;

	if (config_opt_string(obj, "on_reboot", "restart", &s, err, errlen) < 0)
		goto fail;
	if (s != NULL) {
		if (strcmp(s, "restart") == 0)
			def->on_reboot = VM_ON_REBOOT_RESTART;
		else if (strcmp(s, "stop") == 0)
			def->on_reboot = VM_ON_REBOOT_STOP;
		else {
			config_err(err, errlen, "on_reboot: '%.80s' must be "
			    "\"restart\" or \"stop\"", s);
			goto fail;
		}
	}

	if (config_opt_bool(obj, "transient", false, &def->transient, err,
	    errlen) < 0 ||
	    config_opt_bool(obj, "rng", false, &def->rng, err, errlen) < 0 ||
	    config_opt_bool(obj, "balloon", false, &def->balloon, err,
	    errlen) < 0)
		goto fail;

	if ((rc = config_parse_disks(obj, flags, def, err, errlen)) < 0) {
		if (rc == -ENOMEM)
			goto nomem;
		goto fail;
	}
	if (def->boot == VM_BOOT_DISK && def->ndisks == 0) {
		config_err(err, errlen, "boot: \"disk\" needs a disk to "
		    "boot from");
		rc = -EINVAL;
		goto fail;
	}
	if (config_boot(def) == VM_BOOT_DISK &&
	    (def->disks[0].nbd || def->disks[0].rbd)) {
		config_err(err, errlen, "disks[0]: the kernel is read from an "
		    "image file before the guest runs, not from an %s: give "
		    "a kernel, or a firmware", def->disks[0].nbd ?
		    "NBD server" : "RBD image");
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = config_parse_cloud_init(obj, def, err, errlen)) < 0) {
		if (rc == -ENOMEM)
			goto nomem;
		goto fail;
	}
	if (def->cloud_init.on && def->ndisks + 1 > CONFIG_DISKS_MAX) {
		config_err(err, errlen, "cloud_init: its seed is a disk too, "
		    "and a VM has at most %d: give at most %d others",
		    CONFIG_DISKS_MAX, CONFIG_DISKS_MAX - 1);
		rc = -EINVAL;
		goto fail;
	}
	rc = -EINVAL;
	if (config_opt_bool(obj, "autostart", false, &def->autostart, err,
	    errlen) < 0)
		goto fail;
	if (def->autostart && def->transient) {
		config_err(err, errlen, "autostart: a transient VM is gone "
		    "once it stops and cannot start with the daemon");
		goto fail;
	}
	if (config_opt_string(obj, "managed", "vmmd", &s, err, errlen) < 0)
		goto fail;
	if (strcmp(s, "cluster") == 0)
		def->cluster = true;
	else if (strcmp(s, "vmmd") != 0) {
		config_err(err, errlen, "managed: '%s' is neither \"vmmd\" "
		    "nor \"cluster\"", s);
		goto fail;
	}
	if (def->autostart && def->cluster) {
		config_err(err, errlen, "autostart: the VM is managed by a "
		    "cluster, which decides where and when it starts");
		goto fail;
	}
	if (config_parse_net(obj, def, err, errlen) < 0 ||
	    config_parse_vsock(obj, def, err, errlen) < 0 ||
	    config_parse_fs(obj, def, err, errlen) < 0 ||
	    config_parse_boot_order(obj, def, err, errlen) < 0)
		goto fail;
	if ((flags & CONFIG_OWNER) &&
	    config_parse_owner(obj, &def->owner, err, errlen) < 0)
		goto fail;

	if (config_opt_string(obj, "lost_tick_policy", "slew", &s, err,
	    errlen) < 0)
		goto fail;
	if (s != NULL) {
		if (strcmp(s, "slew") == 0)
			def->lost_ticks = VM_LOST_TICKS_SLEW;
		else if (strcmp(s, "discard") == 0)
			def->lost_ticks = VM_LOST_TICKS_DISCARD;
		else {
			config_err(err, errlen, "lost_tick_policy: '%.80s' must "
			    "be \"slew\" or \"discard\"", s);
			goto fail;
		}
	}

	/* 0: none given, the worker's default */
	if (config_opt_int(obj, "rtc_backlog_max", CONFIG_RTC_BACKLOG_MIN,
	    CONFIG_RTC_BACKLOG_MAX, 0, &n, err, errlen) < 0)
		goto fail;
	def->rtc_backlog_max = (unsigned int)n;

	if (config_opt_int(obj, "rtc_slices", CONFIG_RTC_SLICES_MIN,
	    CONFIG_RTC_SLICES_MAX, 0, &n, err, errlen) < 0)
		goto fail;
	def->rtc_slices = (unsigned int)n;

	if ((rc = config_parse_display_members(obj, def, err, errlen)) < 0) {
		if (rc == -ENOMEM)
			goto nomem;
		goto fail;
	}

	*defp = def;
	return 0;

nomem:
	config_err(err, errlen, "out of memory");
	rc = -ENOMEM;
fail:
	config_def_free(def);
	return rc;
}

static struct json_object *
config_json_string_or_null(const char *s)
{
	return s != NULL ? json_object_new_string(s) : NULL;
}

void
config_vnc_string(const struct vm_def *def, char *buf, size_t len)
{
	char disp[16];
	bool v6;

	if (def->vnc_addr == NULL) {
		snprintf(buf, len, "%s", "");
		return;
	}
	if (def->vnc_display == CONFIG_VNC_DISPLAY_AUTO)
		snprintf(disp, sizeof(disp), "auto");
	else
		snprintf(disp, sizeof(disp), "%d", def->vnc_display);
	v6 = strchr(def->vnc_addr, ':') != NULL;
	snprintf(buf, len, "%s%s%s:%s", v6 ? "[" : "", def->vnc_addr,
	    v6 ? "]" : "", disp);
}

static struct json_object *
config_owner_json(const struct vm_owner *o)
{
	struct json_object *obj = json_object_new_object(), *groups;
	unsigned int i;

	json_object_object_add(obj, "uid", json_object_new_int64(o->uid));
	json_object_object_add(obj, "gid", json_object_new_int64(o->gid));
	groups = json_object_new_array();
	for (i = 0; i < o->ngroups; i++)
		json_object_array_add(groups,
		    json_object_new_int64(o->groups[i]));
	json_object_object_add(obj, "groups", groups);
	return obj;
}

struct json_object *
config_to_json(const struct vm_def *def, unsigned int flags)
{
	struct json_object *obj;
	char buf[INET6_ADDRSTRLEN + 32];

	obj = json_object_new_object();
	if (obj == NULL)
		return NULL;
	json_object_object_add(obj, "name", json_object_new_string(def->name));
	if (def->has_uuid) {
		char uuid[UUID_TEXT_LEN + 1];

		uuid_text_format(def->uuid, uuid);
		json_object_object_add(obj, "uuid",
		    json_object_new_string(uuid));
	}
	json_object_object_add(obj, "kernel",
	    config_json_string_or_null(def->kernel));
	json_object_object_add(obj, "initrd",
	    config_json_string_or_null(def->initrd));
	json_object_object_add(obj, "cmdline",
	    json_object_new_string(def->cmdline ? def->cmdline : ""));
	json_object_object_add(obj, "memory_mib",
	    json_object_new_int64(def->memory_mib));
	json_object_object_add(obj, "vcpus", json_object_new_int64(def->vcpus));
	json_object_object_add(obj, "on_reboot",
	    json_object_new_string(config_on_reboot_name(def->on_reboot)));
	json_object_object_add(obj, "transient",
	    json_object_new_boolean(def->transient));
	json_object_object_add(obj, "rng", json_object_new_boolean(def->rng));
	if (def->balloon)
		json_object_object_add(obj, "balloon",
		    json_object_new_boolean(true));
	if (def->ndisks > 0)
		json_object_object_add(obj, "disks", config_disks_json(def));
	json_object_object_add(obj, "autostart",
	    json_object_new_boolean(def->autostart));
	if (def->cluster)
		json_object_object_add(obj, "managed",
		    json_object_new_string("cluster"));
	if (def->owner.known)
		json_object_object_add(obj, "owner",
		    config_owner_json(&def->owner));
	if (def->nnics > 0)
		json_object_object_add(obj, "net", config_net_json(def));
	if (def->vsock)
		json_object_object_add(obj, "vsock", config_vsock_json(def));
	if (def->fs_tag != NULL)
		json_object_object_add(obj, "fs", config_fs_json(def));
	if (def->firmware != VM_FIRMWARE_NONE)
		json_object_object_add(obj, "firmware",
		    json_object_new_string(config_firmware_name(def)));
	if (def->cdrom != NULL)
		json_object_object_add(obj, "cdrom",
		    json_object_new_string(def->cdrom));
	config_boot_order_json(def, obj);
	if (def->boot != VM_BOOT_UNSET)
		json_object_object_add(obj, "boot", json_object_new_string(
		    def->boot == VM_BOOT_DISK ? "disk" : "kernel"));
	if (def->cloud_init.on)
		json_object_object_add(obj, "cloud_init",
		    config_cloud_init_json(def,
		    (flags & CONFIG_JSON_SECRETS) != 0));
	json_object_object_add(obj, "lost_tick_policy",
	    json_object_new_string(config_lost_ticks_name(def->lost_ticks)));
	if (def->rtc_backlog_max != 0)
		json_object_object_add(obj, "rtc_backlog_max",
		    json_object_new_int64(def->rtc_backlog_max));
	if (def->rtc_slices != 0)
		json_object_object_add(obj, "rtc_slices",
		    json_object_new_int64(def->rtc_slices));
	if (def->vnc_addr == NULL) {
		json_object_object_add(obj, "vnc", NULL);
		return obj;
	}
	config_vnc_string(def, buf, sizeof(buf));
	json_object_object_add(obj, "vnc", json_object_new_string(buf));
	snprintf(buf, sizeof(buf), "%ux%u", def->width, def->height);
	json_object_object_add(obj, "display", json_object_new_string(buf));
	if (flags & CONFIG_JSON_SECRETS) {
		if (def->vnc_password != NULL)
			json_object_object_add(obj, "vnc_password",
			    json_object_new_string(def->vnc_password));
		else if (def->vnc_no_password)
			json_object_object_add(obj, "vnc_password",
			    json_object_new_boolean(false));
	} else
		json_object_object_add(obj, "vnc_password",
		    json_object_new_boolean(!def->vnc_no_password));
	json_object_object_add(obj, "vnc_web",
	    json_object_new_boolean(def->vnc_web));
	return obj;
}

const char *const *
config_members(const char *parent)
{
	if (parent == NULL)
		return config_keys;
	if (strcmp(parent, "disks") == 0)
		return config_disk_keys;
	if (strcmp(parent, "net") == 0)
		return config_net_keys();
	if (strcmp(parent, "vsock") == 0)
		return config_vsock_keys;
	if (strcmp(parent, "fs") == 0)
		return config_fs_keys;
	if (strcmp(parent, "cloud_init") == 0)
		return config_cloud_init_keys();
	if (strcmp(parent, "owner") == 0)
		return config_owner_keys;
	return NULL;
}
