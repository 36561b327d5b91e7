/*
 * The qcow2 image creator (daemon/disk/qcow2-create.c) against the
 * format's reference implementation: qemu-img check finds every image
 * clean, qemu-img info shows the size, the backing file and its format
 * as asked, qemu-img compare reads it as its backing file, and QEMU can
 * write to it and leave it clean (qemu-io, where installed).  vmmd's own
 * header parser reads back what was written; bad arguments are refused;
 * the size of an overlay over raw and qcow2 bases is the guest's view.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qcow2-create.h"
#include "qcow2-header.h"
#include "tap.h"
#include "scratch.h"
#include "qemu-img-util.h"

/* Create dir/name over backing: qcow2_create()'s result. */
static int
make(const char *name, uint64_t size, const char *backing,
    const char *format)
{
	int fd, rc;

	fd = open(scratch_at(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	if (fd < 0)
		tap_bail("open %s: %s", scratch_at(name), strerror(errno));
	rc = qcow2_create(fd, size, backing, format);
	close(fd);
	return rc;
}

/* A raw file of size bytes, "vmmd-disk-0" at its start. */
static void
make_raw(const char *name, uint64_t size)
{
	int fd;

	fd = open(scratch_at(name), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    pwrite(fd, "vmmd-disk-0", 11, 0) != 11)
		tap_bail("raw base %s", name);
	close(fd);
}

/*
 * qcow2_create_backing_size() of dir/name in the format qcow2 says:
 * its result, the size in *size, the reason in reason.
 */
static int
backing_size(const char *name, bool qcow2, uint64_t *size, char *reason,
    size_t len)
{
	int fd, rc;

	fd = open(scratch_at(name), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		tap_bail("open %s: %s", scratch_at(name), strerror(errno));
	*size = UINT64_MAX;
	reason[0] = '\0';
	rc = qcow2_create_backing_size(fd, qcow2, size, reason, len);
	close(fd);
	return rc;
}

/* qemu-img info's JSON holds "key": value (as the text is written). */
static int
info_has(const char *info, const char *key, const char *value)
{
	char want[1200];

	snprintf(want, sizeof(want), "\"%s\": %s", key, value);
	return strstr(info, want) != NULL;
}

/* Check the image qemu-img's ways; what of it is: named in the lines. */
static void
check(const char *name, uint64_t size, const char *backing,
    const char *format)
{
	char info[8192], v[1100];
	struct qcow2_header h;
	int fd, rc;

	tap_ok(qimg_run(NULL, 0, "qemu-img check -q '%s'", scratch_at(name))
	    == 0, "%s: qemu-img check finds it clean", name);
	rc = qimg_run(info, sizeof(info), "qemu-img info --output=json "
	    "'%s'", scratch_at(name));
	snprintf(v, sizeof(v), "%" PRIu64, size);
	tap_ok(rc == 0 && info_has(info, "virtual-size", v) &&
	    info_has(info, "cluster-size", "65536") &&
	    info_has(info, "format", "\"qcow2\"") &&
	    info_has(info, "compat", "\"1.1\"") &&
	    info_has(info, "refcount-bits", "16"),
	    "%s: qemu-img info: qcow2 v3, %" PRIu64 " bytes, 64 KiB clusters, "
	    "16-bit refcounts", name, size);
	snprintf(v, sizeof(v), "\"%s\"", backing);
	tap_ok(rc == 0 && info_has(info, "backing-filename", v),
	    "%s: and the backing file %s", name, backing);
	snprintf(v, sizeof(v), "\"%s\"", format);
	tap_ok(rc == 0 && info_has(info, "backing-filename-format", v),
	    "%s: in format %s", name, format);
	if (rc != 0 || !info_has(info, "backing-filename-format", v))
		tap_diag("%s", info);

	fd = open(scratch_at(name), O_RDONLY | O_CLOEXEC);
	rc = fd >= 0 ? qcow2_header_read(fd, &h) : -errno;
	tap_ok(rc == 0 && h.version == 3 && h.size == size &&
	    h.cluster_bits == 16 && h.refcount_order == 4 && h.has_backing &&
	    strcmp(h.backing_file, backing) == 0 &&
	    strcmp(h.backing_format, format) == 0,
	    "%s: vmmd's header parser agrees (%s)", name,
	    rc == -EINVAL ? h.reason : strerror(-rc));
	if (fd >= 0)
		close(fd);
}

int
main(void)
{
	const char *raw, *qcow;
	char out[4096], reason[QCOW2_REASON_MAX];
	uint64_t size;
	int qemu_io;

	if (!qimg_present())
		tap_skip_all("qemu-img is not installed");
	scratch_new("qcow2-create");
	qemu_io = system("qemu-io --version >/dev/null 2>&1") == 0;

	/* Over a raw base of 1 MiB: one L1 cluster, mostly unused. */
	make_raw("base.raw", 1 << 20);
	raw = strdup(scratch_at("base.raw"));
	tap_ok(make("a.qcow2", 1 << 20, raw, "raw") == 0,
	    "an overlay over a raw base");
	check("a.qcow2", 1 << 20, raw, "raw");
	tap_ok(qimg_run(NULL, 0, "qemu-img compare -q '%s' '%s'",
	    scratch_at("a.qcow2"), raw) == 0,
	    "a.qcow2: qemu-img compare reads it as its base");

	/* Over a qcow2 base qemu-img made. */
	if (qimg_run(NULL, 0, "qemu-img create -q -f qcow2 '%s' 3G",
	    scratch_at("base.qcow2")) != 0)
		tap_bail("qemu-img create base.qcow2");
	qcow = strdup(scratch_at("base.qcow2"));
	tap_ok(make("b.qcow2", 3ULL << 30, qcow, "qcow2") == 0,
	    "an overlay over a qcow2 base");
	check("b.qcow2", 3ULL << 30, qcow, "qcow2");

	/* 100 TiB: an L1 table of 25 clusters, all of them counted. */
	tap_ok(make("big.qcow2", 100ULL << 40, raw, "raw") == 0,
	    "an overlay of 100 TiB");
	check("big.qcow2", 100ULL << 40, raw, "raw");

	/* A size that is no whole number of clusters. */
	tap_ok(make("odd.qcow2", 1000448, raw, "raw") == 0,
	    "an overlay of 1000448 bytes");
	check("odd.qcow2", 1000448, raw, "raw");

	/* QEMU writes to it: it grows its tables from ours, and stays clean. */
	if (qemu_io) {
		tap_ok(qimg_run(out, sizeof(out), "qemu-io -f qcow2 -c "
		    "'write -P 0x5a 65536 131072' -c 'write -P 0xa5 "
		    "1099511627776 4096' '%s'", scratch_at("big.qcow2")) == 0,
		    "qemu-io writes to the 100 TiB overlay");
		tap_ok(qimg_run(NULL, 0, "qemu-img check -q '%s'",
		    scratch_at("big.qcow2")) == 0,
		    "and qemu-img check still finds it clean");
		tap_ok(qimg_run(out, sizeof(out), "qemu-img compare -q "
		    "'%s' '%s'", scratch_at("big.qcow2"), raw) == 1,
		    "and it no longer reads as its base");
	} else {
		tap_diag("qemu-io is not installed: no writes by QEMU");
	}

	/* The size an overlay over each base has. */
	tap_ok(backing_size("base.raw", false, &size, reason,
	    sizeof(reason)) == 0 && size == 1 << 20,
	    "a raw base of 1 MiB: an overlay of 1 MiB");
	make_raw("short.raw", (1 << 20) + 1000);
	tap_ok(backing_size("short.raw", false, &size, reason,
	    sizeof(reason)) == 0 && size == (1 << 20) + 512,
	    "a raw base of 1 MiB + 1000 bytes: whole sectors, 1 MiB + 512");
	make_raw("tiny.raw", 511);
	tap_ok(backing_size("tiny.raw", false, &size, reason,
	    sizeof(reason)) == 0 && size == 0,
	    "a raw base of 511 bytes: size 0, for the caller to refuse");
	tap_ok(backing_size("base.qcow2", true, &size, reason,
	    sizeof(reason)) == 0 && size == 3ULL << 30,
	    "a qcow2 base: its header's size, 3 GiB");
	tap_ok(backing_size("b.qcow2", true, &size, reason,
	    sizeof(reason)) == 0 && size == 3ULL << 30,
	    "an overlay as a base: its header's size, 3 GiB");
	tap_ok(backing_size("base.raw", true, &size, reason,
	    sizeof(reason)) == -EINVAL && reason[0] != '\0',
	    "a raw file read as qcow2: -EINVAL, the header parser's reason");
	tap_diag("reason: %s", reason);

	/* What is refused. */
	tap_ok(make("x.qcow2", 0, raw, "raw") == -EINVAL,
	    "a size of 0 is refused");
	tap_ok(make("x.qcow2", QCOW2_MAX_SIZE + 1, raw, "raw") == -EINVAL,
	    "a size beyond 64 PiB is refused");
	tap_ok(make("x.qcow2", 1 << 20, "base.raw", "raw") == -EINVAL,
	    "a relative backing file name is refused");
	tap_ok(make("x.qcow2", 1 << 20, raw, "vmdk") == -EINVAL,
	    "a backing format other than raw and qcow2 is refused");
	free((char *)raw);
	free((char *)qcow);
	return tap_done();
}
