/*
 * Writing a snapshot directory (snap-file.h), crash-safe: the manifest
 * is renamed into place last, so that its presence means the data files
 * it describes are whole and synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "snap-err.h"
#include "snap-file.h"
#include "snap-io.h"
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

/* dir/name.tmp, made anew; its fd, or -errno. */
static int
snap_create_tmp(int dirfd, const char *name)
{
	char tmp[64];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	/*
	 * A file made anew, never one already there: in a directory
	 * someone else may write, the name could be a hard link to any
	 * file, which a privileged writer must not truncate.
	 */
	if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	return fd < 0 ? -errno : fd;
}

/* Syncs fd and renames name.tmp to name; fd stays open. */
static int
snap_commit_tmp(int dirfd, int fd, const char *name)
{
	char tmp[64];

	if (fsync(fd) < 0)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		return -errno;
	return 0;
}

static int
snap_write_memory(int fd, const struct snap_write_args *a)
{
	uint64_t off = 0;
	size_t i;
	int ret = 0;

	for (i = 0; i < a->nregions; i++)
		off += a->regions[i].size;
	if (ftruncate(fd, (off_t)off) < 0)
		return -errno;
	for (i = 0, off = 0; ret == 0 && i < a->nregions; i++) {
		ret = snap_memory_save(fd, off, a->regions[i].host,
		    a->regions[i].size);
		off += a->regions[i].size;
	}
	return ret;
}

static int
snap_write_state(int fd, const struct snap_write_args *a)
{
	uint64_t off = 0;
	size_t i;
	int ret = 0;

	for (i = 0; ret == 0 && i < a->nsections; i++) {
		ret = snap_io_all(fd, a->sections[i].data,
		    a->sections[i].size, off, true);
		off += a->sections[i].size;
	}
	return ret;
}

static bool
snap_has_manifest(int dirfd)
{
	struct stat st;

	return fstatat(dirfd, SNAP_MANIFEST_FILE, &st,
	    AT_SYMLINK_NOFOLLOW) == 0;
}

int
snap_write_begin(int dirfd, const char *dir, int *memory_fd, int *state_fd,
    char *err, size_t errlen)
{
	int ret;

	*memory_fd = *state_fd = -1;
	if (snap_has_manifest(dirfd))
		return snap_fail(-EEXIST, err, errlen,
		    "%s already holds a snapshot", dir);
	if ((*memory_fd = snap_create_tmp(dirfd, SNAP_MEMORY_FILE)) < 0) {
		ret = *memory_fd;
		*memory_fd = -1;
		return snap_fail(ret, err, errlen, "%s/%s.tmp: %s", dir,
		    SNAP_MEMORY_FILE, strerror(-ret));
	}
	if ((*state_fd = snap_create_tmp(dirfd, SNAP_STATE_FILE)) < 0) {
		ret = *state_fd;
		*state_fd = -1;
		snap_write_abort(dirfd, memory_fd, state_fd);
		return snap_fail(ret, err, errlen, "%s/%s.tmp: %s", dir,
		    SNAP_STATE_FILE, strerror(-ret));
	}
	return 0;
}

int
snap_write_data(int memory_fd, int state_fd, const struct snap_write_args *a,
    char **manifest, size_t *len, char *err, size_t errlen)
{
	int ret;

	*manifest = NULL;
	if ((ret = snap_write_manifest_text(a, manifest, len, err,
	    errlen)) < 0)
		return ret;
	if ((ret = snap_write_memory(memory_fd, a)) < 0)
		snap_fail(ret, err, errlen, "%s: %s", SNAP_MEMORY_FILE,
		    strerror(-ret));
	else if ((ret = snap_write_state(state_fd, a)) < 0)
		snap_fail(ret, err, errlen, "%s: %s", SNAP_STATE_FILE,
		    strerror(-ret));
	if (ret < 0) {
		free(*manifest);
		*manifest = NULL;
	}
	return ret;
}

/* The size of fd's file, or -errno. */
static int
snap_file_size(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*size = (uint64_t)st.st_size;
	return 0;
}

int
snap_write_commit(int dirfd, const char *dir, int memory_fd, int state_fd,
    const char *manifest, size_t len, uid_t uid, gid_t gid, char *err,
    size_t errlen)
{
	struct snap_manifest m;
	uint64_t msize = 0, ssize = 0;
	int fd, ret;

	/* The text may come from a process that is not trusted. */
	if ((ret = snap_manifest_parse(manifest, len, &m, err, errlen)) < 0)
		return ret;
	if ((ret = snap_file_size(memory_fd, &msize)) < 0 ||
	    (ret = snap_file_size(state_fd, &ssize)) < 0)
		ret = snap_fail(ret, err, errlen, "%s: the data files: %s",
		    dir, strerror(-ret));
	else
		ret = snap_manifest_check_files(&m, msize, ssize, err, errlen);
	snap_manifest_free(&m);
	if (ret < 0)
		return ret;
	if (snap_has_manifest(dirfd))
		return snap_fail(-EEXIST, err, errlen,
		    "%s already holds a snapshot", dir);
	if ((ret = snap_commit_tmp(dirfd, memory_fd, SNAP_MEMORY_FILE)) < 0)
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_MEMORY_FILE, strerror(-ret));
	if ((ret = snap_commit_tmp(dirfd, state_fd, SNAP_STATE_FILE)) < 0)
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_STATE_FILE, strerror(-ret));
	if ((fd = snap_create_tmp(dirfd, SNAP_MANIFEST_FILE)) < 0)
		return snap_fail(fd, err, errlen, "%s/%s.tmp: %s", dir,
		    SNAP_MANIFEST_FILE, strerror(-fd));
	if ((uid != (uid_t)-1 && fchown(fd, uid, gid) < 0 && (ret = -errno)) ||
	    (ret = snap_io_all(fd, manifest, len, 0, true)) < 0 ||
	    (ret = snap_commit_tmp(dirfd, fd, SNAP_MANIFEST_FILE)) < 0) {
		close(fd);
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_MANIFEST_FILE, strerror(-ret));
	}
	close(fd);
	/* The renames are durable once the directory is. */
	if (fsync(dirfd) < 0)
		return snap_fail(-errno, err, errlen, "fsync %s: %s", dir,
		    strerror(errno));
	return 0;
}

void
snap_write_abort(int dirfd, int *memory_fd, int *state_fd)
{
	char tmp[64];

	if (*memory_fd >= 0) {
		close(*memory_fd);
		snprintf(tmp, sizeof(tmp), "%s.tmp", SNAP_MEMORY_FILE);
		unlinkat(dirfd, tmp, 0);
	}
	if (*state_fd >= 0) {
		close(*state_fd);
		snprintf(tmp, sizeof(tmp), "%s.tmp", SNAP_STATE_FILE);
		unlinkat(dirfd, tmp, 0);
	}
	*memory_fd = *state_fd = -1;
}

int
snap_write(const char *dir, const struct snap_write_args *a, char *err,
    size_t errlen)
{
	char *text = NULL;
	size_t len;
	int dirfd, mfd = -1, sfd = -1, ret;

	/* What a reader would refuse is refused before anything exists. */
	if ((ret = snap_write_manifest_text(a, &text, &len, err, errlen)) < 0)
		return ret;
	free(text);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return snap_fail(-errno, err, errlen, "mkdir %s: %s", dir,
		    strerror(errno));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return snap_fail(-errno, err, errlen, "%s: %s", dir,
		    strerror(errno));
	if ((ret = snap_write_begin(dirfd, dir, &mfd, &sfd, err,
	    errlen)) < 0)
		goto out;
	if ((ret = snap_write_data(mfd, sfd, a, &text, &len, err,
	    errlen)) < 0) {
		snap_write_abort(dirfd, &mfd, &sfd);
		goto out;
	}
	ret = snap_write_commit(dirfd, dir, mfd, sfd, text, len, (uid_t)-1,
	    (gid_t)-1, err, errlen);
	free(text);
	/* After a failed commit, what was renamed stays: no manifest. */
	close(mfd);
	close(sfd);
out:
	close(dirfd);
	return ret;
}
