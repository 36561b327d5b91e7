/*
 * Writing a snapshot directory (snap-file.h), crash-safe: the manifest
 * is renamed into place last, so that its presence means the data files
 * it describes are whole and synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "snap-err.h"
#include "snap-file.h"
#include "snap-memory.h"

/* zlib's crc32 over any length (its own takes a uInt). */
static uint32_t
snap_crc32(const void *data, size_t size)
{
	const uint8_t *p = data;
	uLong crc = crc32(0, Z_NULL, 0);

	while (size > 0) {
		uInt n = size > (1u << 30) ? (1u << 30) : (uInt)size;

		crc = crc32(crc, p, n);
		p += n;
		size -= n;
	}
	return (uint32_t)crc;
}

/*
 * The manifest for a, with every offset and checksum, checked by the
 * reader's own parser: the writer never writes what a reader refuses.
 */
static int
snap_write_manifest_text(const struct snap_write_args *a, char **text,
    size_t *len, char *err, size_t errlen)
{
	struct snap_manifest m, check;
	uint64_t off = 0;
	size_t i;
	int ret;

	memset(&m, 0, sizeof(m));
	if (a->definition == NULL)
		return snap_fail(-EINVAL, err, errlen, "no VM definition");
	if (a->nregions == 0 || a->nregions > SNAP_MAX_REGIONS)
		return snap_fail(-EINVAL, err, errlen,
		    "%zu memory regions (1 to %d)", a->nregions,
		    SNAP_MAX_REGIONS);
	if (a->nsections > SNAP_MAX_SECTIONS)
		return snap_fail(-E2BIG, err, errlen,
		    "%zu sections, more than %d", a->nsections,
		    SNAP_MAX_SECTIONS);
	if (strlen(a->vmmd_version) >= SNAP_VERSION_MAX)
		return snap_fail(-EINVAL, err, errlen, "version too long");
	strcpy(m.vmmd_version, a->vmmd_version);
	m.definition = a->definition;
	for (i = 0; i < a->nregions; i++) {
		m.regions[i].gpa = a->regions[i].gpa;
		m.regions[i].size = a->regions[i].size;
		m.regions[i].offset = off;
		if (a->regions[i].size > SNAP_MEMORY_MAX)
			return snap_fail(-E2BIG, err, errlen,
			    "memory region %zu too large", i);
		off += a->regions[i].size;
	}
	m.nregions = a->nregions;
	m.memory_file_size = off;
	if (a->nsections > 0 &&
	    (m.sections = calloc(a->nsections, sizeof(*m.sections))) == NULL)
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	off = 0;
	for (i = 0; i < a->nsections; i++) {
		const struct snap_section *s = &a->sections[i];

		if (strlen(s->name) >= SNAP_NAME_MAX ||
		    s->size > SNAP_SECTION_MAX) {
			ret = snap_fail(-E2BIG, err, errlen,
			    "section \"%.64s\": name or size too large",
			    s->name);
			goto out;
		}
		strcpy(m.sections[i].name, s->name);
		m.sections[i].offset = off;
		m.sections[i].size = s->size;
		m.sections[i].crc32 = snap_crc32(s->data, s->size);
		off += s->size;
		if (off > SNAP_STATE_MAX) {
			ret = snap_fail(-E2BIG, err, errlen,
			    "more than %u bytes of state", SNAP_STATE_MAX);
			goto out;
		}
	}
	m.nsections = a->nsections;
	m.state_file_size = off;
	if ((*text = snap_manifest_format(&m, len)) == NULL) {
		ret = snap_fail(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	ret = snap_manifest_parse(*text, *len, &check, err, errlen);
	if (ret < 0) {
		free(*text);
		*text = NULL;
	} else {
		snap_manifest_free(&check);
	}
out:
	free(m.sections);
	return ret;
}

static int
snap_write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* dir/name.tmp, made anew; its fd, or -errno. */
static int
snap_create_tmp(int dirfd, const char *name)
{
	char tmp[64];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	return fd < 0 ? -errno : fd;
}

/* Syncs fd, closes it, renames name.tmp to name. */
static int
snap_commit_tmp(int dirfd, int fd, const char *name)
{
	char tmp[64];
	int ret = 0;

	if (fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	if (ret == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		ret = -errno;
	return ret;
}

static int
snap_write_memory(int dirfd, const struct snap_write_args *a)
{
	uint64_t off = 0;
	size_t i;
	int fd, ret = 0;

	if ((fd = snap_create_tmp(dirfd, SNAP_MEMORY_FILE)) < 0)
		return fd;
	for (i = 0; i < a->nregions; i++)
		off += a->regions[i].size;
	if (ftruncate(fd, (off_t)off) < 0)
		ret = -errno;
	for (i = 0, off = 0; ret == 0 && i < a->nregions; i++) {
		ret = snap_memory_save(fd, off, a->regions[i].host,
		    a->regions[i].size);
		off += a->regions[i].size;
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return snap_commit_tmp(dirfd, fd, SNAP_MEMORY_FILE);
}

static int
snap_write_state(int dirfd, const struct snap_write_args *a)
{
	uint64_t off = 0;
	size_t i;
	int fd, ret = 0;

	if ((fd = snap_create_tmp(dirfd, SNAP_STATE_FILE)) < 0)
		return fd;
	for (i = 0; ret == 0 && i < a->nsections; i++) {
		ret = snap_write_all(fd, a->sections[i].data,
		    a->sections[i].size, off);
		off += a->sections[i].size;
	}
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return snap_commit_tmp(dirfd, fd, SNAP_STATE_FILE);
}

static int
snap_write_manifest(int dirfd, const char *text, size_t len)
{
	int fd, ret;

	if ((fd = snap_create_tmp(dirfd, SNAP_MANIFEST_FILE)) < 0)
		return fd;
	if ((ret = snap_write_all(fd, text, len, 0)) < 0) {
		close(fd);
		return ret;
	}
	return snap_commit_tmp(dirfd, fd, SNAP_MANIFEST_FILE);
}

int
snap_write(const char *dir, const struct snap_write_args *a, char *err,
    size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t len;
	int dirfd, ret;

	if ((ret = snap_write_manifest_text(a, &text, &len, err, errlen)) < 0)
		return ret;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ret = snap_fail(-errno, err, errlen, "mkdir %s: %s", dir,
		    strerror(errno));
		free(text);
		return ret;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		ret = snap_fail(-errno, err, errlen, "%s: %s", dir,
		    strerror(errno));
		free(text);
		return ret;
	}
	if (fstatat(dirfd, SNAP_MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ret = snap_fail(-EEXIST, err, errlen,
		    "%s already holds a snapshot", dir);
		goto out;
	}
	if ((ret = snap_write_memory(dirfd, a)) < 0) {
		snap_fail(ret, err, errlen, "%s/%s: %s", dir, SNAP_MEMORY_FILE,
		    strerror(-ret));
		goto out;
	}
	if ((ret = snap_write_state(dirfd, a)) < 0) {
		snap_fail(ret, err, errlen, "%s/%s: %s", dir, SNAP_STATE_FILE,
		    strerror(-ret));
		goto out;
	}
	if ((ret = snap_write_manifest(dirfd, text, len)) < 0) {
		snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_MANIFEST_FILE, strerror(-ret));
		goto out;
	}
	/* The renames are durable once the directory is. */
	if (fsync(dirfd) < 0)
		ret = snap_fail(-errno, err, errlen, "fsync %s: %s", dir,
		    strerror(errno));
out:
	close(dirfd);
	free(text);
	return ret;
}
