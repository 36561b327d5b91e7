/*
 * Reading a snapshot directory (snap-file.h): everything but the RAM's
 * bytes is checked in snap_open(), before the caller uses any of it.
 * The RAM is not checksummed: a lazy restore never reads most of it,
 * and a checksum would cost a read of all of it on every restore.
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
#include "snap-io.h"
#include "snap-memory.h"

/* dir/name, a regular file not reached through a link: fd and stat. */
static int
snap_open_file(int dirfd, const char *name, struct stat *st)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* The manifest at fd (taken), parsed. */
static int
snap_read_manifest(struct snap_reader *r, int fd, const char *dir,
    char *err, size_t errlen)
{
	struct stat st;
	char *text;
	int ret;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = fstat(fd, &st) < 0 ? -errno : -EINVAL;
		close(fd);
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_MANIFEST_FILE, ret == -EINVAL ?
		    "not a regular file" : strerror(-ret));
	}
	if ((uint64_t)st.st_size > SNAP_MANIFEST_MAX) {
		close(fd);
		return snap_fail(-E2BIG, err, errlen,
		    "%s/%s: more than %u bytes", dir, SNAP_MANIFEST_FILE,
		    SNAP_MANIFEST_MAX);
	}
	if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	}
	ret = snap_io_all(fd, text, (size_t)st.st_size, 0, false);
	close(fd);
	if (ret < 0) {
		free(text);
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_MANIFEST_FILE, strerror(-ret));
	}
	ret = snap_manifest_parse(text, (size_t)st.st_size, &r->m, err,
	    errlen);
	free(text);
	return ret;
}

/* The state file, read whole, and every section's checksum. */
static int
snap_read_state(struct snap_reader *r, int fd, const char *dir,
    uint64_t *size, char *err, size_t errlen)
{
	struct stat st;
	size_t i;
	int ret;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = fstat(fd, &st) < 0 ? -errno : -EINVAL;
		close(fd);
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_STATE_FILE, ret == -EINVAL ? "not a regular file" :
		    strerror(-ret));
	}
	*size = (uint64_t)st.st_size;
	/* Sized by the manifest, which bounds it, not by the file. */
	if (*size != r->m.state_file_size) {
		close(fd);
		return 0;	/* snap_manifest_check_files() says why */
	}
	if ((r->state = malloc(*size > 0 ? *size : 1)) == NULL) {
		close(fd);
		return snap_fail(-ENOMEM, err, errlen, "out of memory");
	}
	ret = snap_io_all(fd, r->state, *size, 0, false);
	close(fd);
	if (ret < 0)
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_STATE_FILE, strerror(-ret));
	for (i = 0; i < r->m.nsections; i++) {
		const struct snap_msection *s = &r->m.sections[i];
		uLong crc = crc32(0, Z_NULL, 0);

		/* Sections are at most SNAP_SECTION_MAX: one call. */
		crc = crc32(crc, r->state + s->offset, (uInt)s->size);
		if ((uint32_t)crc != s->crc32)
			return snap_fail(-EBADMSG, err, errlen,
			    "section \"%s\": checksum %08" PRIx32 ", the "
			    "manifest says %08" PRIx32, s->name,
			    (uint32_t)crc, s->crc32);
	}
	return 0;
}

static int
snap_check_layout(const struct snap_manifest *m,
    const struct snap_region *expect, size_t nexpect, char *err,
    size_t errlen)
{
	uint64_t have = 0, want = 0;
	size_t i;

	if (expect == NULL)
		return 0;
	for (i = 0; i < m->nregions; i++)
		have += m->regions[i].size;
	for (i = 0; i < nexpect; i++)
		want += expect[i].size;
	if (have != want)
		return snap_fail(-EINVAL, err, errlen,
		    "the snapshot has %" PRIu64 " MiB of RAM, this VM %"
		    PRIu64 " MiB", have >> 20, want >> 20);
	if (nexpect != m->nregions)
		return snap_fail(-EINVAL, err, errlen,
		    "the snapshot's RAM is in %zu regions, this VM's in %zu",
		    m->nregions, nexpect);
	for (i = 0; i < nexpect; i++)
		if (expect[i].gpa != m->regions[i].gpa ||
		    expect[i].size != m->regions[i].size)
			return snap_fail(-EINVAL, err, errlen,
			    "RAM region %zu: the snapshot's is %#" PRIx64
			    "+%#" PRIx64 ", this VM's %#" PRIx64 "+%#" PRIx64,
			    i, m->regions[i].gpa, m->regions[i].size,
			    expect[i].gpa, expect[i].size);
	return 0;
}

int
snap_open_fds(struct snap_reader *r, const char *dir, int manifest_fd,
    int memory_fd, int state_fd, const struct snap_region *expect,
    size_t nexpect, char *err, size_t errlen)
{
	struct stat st;
	uint64_t state_size = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	r->memory_fd = memory_fd;
	if ((ret = snap_read_manifest(r, manifest_fd, dir, err,
	    errlen)) < 0) {
		close(state_fd);
		goto fail;
	}
	if (fstat(memory_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = fstat(memory_fd, &st) < 0 ? -errno : -EINVAL;
		close(state_fd);
		snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    SNAP_MEMORY_FILE, ret == -EINVAL ? "not a regular file" :
		    strerror(-ret));
		goto fail;
	}
	if ((ret = snap_read_state(r, state_fd, dir, &state_size, err,
	    errlen)) < 0 ||
	    (ret = snap_manifest_check_files(&r->m, (uint64_t)st.st_size,
	    state_size, err, errlen)) < 0 ||
	    (ret = snap_check_layout(&r->m, expect, nexpect, err,
	    errlen)) < 0)
		goto fail;
	return 0;
fail:
	snap_close(r);
	return ret;
}

int
snap_open(struct snap_reader *r, const char *dir,
    const struct snap_region *expect, size_t nexpect, char *err,
    size_t errlen)
{
	struct stat st;
	int dirfd, fd[3], ret, i, k;
	static const char *const names[3] = { SNAP_MANIFEST_FILE,
	    SNAP_MEMORY_FILE, SNAP_STATE_FILE };

	memset(r, 0, sizeof(*r));
	r->memory_fd = -1;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return snap_fail(-errno, err, errlen, "%s: %s", dir,
		    strerror(errno));
	for (i = 0; i < 3; i++)
		if ((fd[i] = snap_open_file(dirfd, names[i], &st)) < 0)
			break;
	if (i < 3) {
		ret = fd[i];
		for (k = 0; k < i; k++)
			close(fd[k]);
		close(dirfd);
		if (ret == -ENOENT && i == 0)
			return snap_fail(-ENOENT, err, errlen,
			    "%s: no %s: not a snapshot, or one whose writing "
			    "did not finish", dir, SNAP_MANIFEST_FILE);
		return snap_fail(ret, err, errlen, "%s/%s: %s", dir,
		    names[i], ret == -EINVAL ? "not a regular file" :
		    strerror(-ret));
	}
	close(dirfd);
	return snap_open_fds(r, dir, fd[0], fd[1], fd[2], expect, nexpect,
	    err, errlen);
}

const void *
snap_section(const struct snap_reader *r, const char *name, size_t *size)
{
	size_t i;

	for (i = 0; i < r->m.nsections; i++)
		if (strcmp(r->m.sections[i].name, name) == 0) {
			*size = (size_t)r->m.sections[i].size;
			return r->state + r->m.sections[i].offset;
		}
	return NULL;
}

int
snap_restore_memory(const struct snap_reader *r, size_t i, void *host,
    bool map, char *err, size_t errlen)
{
	const struct snap_mregion *g;
	int ret;

	if (i >= r->m.nregions)
		return snap_fail(-EINVAL, err, errlen, "no RAM region %zu", i);
	g = &r->m.regions[i];
	ret = map ? snap_memory_map(r->memory_fd, g->offset, host, g->size) :
	    snap_memory_load(r->memory_fd, g->offset, host, g->size);
	if (ret < 0)
		return snap_fail(ret, err, errlen, "restoring RAM region %zu: "
		    "%s", i, strerror(-ret));
	return 0;
}

void
snap_close(struct snap_reader *r)
{
	if (r->memory_fd >= 0)
		close(r->memory_fd);
	r->memory_fd = -1;
	free(r->state);
	r->state = NULL;
	snap_manifest_free(&r->m);
}
