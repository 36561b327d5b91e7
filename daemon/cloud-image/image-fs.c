/* See image-fs.h: what every kind of file system shares, the paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image-fs.h"

int
image_fs_open(const struct image_disk *d, const struct image_part *p,
    struct image_fs **out, char *why, size_t whylen)
{
	why[0] = '\0';
	if (strcmp(p->fstype, "ext2") == 0 || strcmp(p->fstype, "ext3") == 0 ||
	    strcmp(p->fstype, "ext4") == 0)
		return image_ext_open(d, p, out, why, whylen);
	if (strcmp(p->fstype, "vfat") == 0)
		return image_fat_open(d, p, out, why, whylen);
	return -ENOTSUP;
}

void
image_fs_close(struct image_fs *fs)
{
	if (fs != NULL)
		fs->ops->close(fs);
}

/*
 * Resolution as a stack of what is left to walk: "rest" holds the
 * components not yet looked up; a link's target is put before them
 * (from the root if it is absolute).  "done" is the path walked so far,
 * for ".." and for the caller.
 */
int
image_fs_resolve(struct image_fs *fs, const char *path, bool nofollow,
    uint64_t *node, enum image_fs_type *type, char *real, size_t reallen)
{
	char rest[IMAGE_FS_PATH_MAX], done[IMAGE_FS_PATH_MAX];
	char link[IMAGE_FS_PATH_MAX], name[256], *slash;
	uint64_t cur = fs->ops->root(fs), next;
	enum image_fs_type t = IMAGE_FS_DIR, nt;
	unsigned int links = 0;
	size_t len;
	int rc;

	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return -ENAMETOOLONG;
	done[0] = '\0';
	for (;;) {
		char *p = rest;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		slash = strchr(p, '/');
		len = slash != NULL ? (size_t)(slash - p) : strlen(p);
		if (len >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, p, len);
		name[len] = '\0';
		memmove(rest, p + len, strlen(p + len) + 1);
		if (t != IMAGE_FS_DIR)
			return -ENOTDIR;
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			/* Walk "done" again without its last part. */
			char again[IMAGE_FS_PATH_MAX];
			char *cut = strrchr(done, '/');

			if (cut != NULL)
				*cut = '\0';
			snprintf(again, sizeof(again), "%s/%s", done, rest);
			if (strlen(again) >= sizeof(rest))
				return -ENAMETOOLONG;
			memcpy(rest, again, strlen(again) + 1);
			done[0] = '\0';
			cur = fs->ops->root(fs);
			t = IMAGE_FS_DIR;
			continue;
		}
		if ((rc = fs->ops->lookup(fs, cur, name, &next, &nt)) < 0)
			return rc;
		if (nt == IMAGE_FS_LINK && (!nofollow || strspn(rest, "/") !=
		    strlen(rest))) {
			if (++links > IMAGE_FS_MAX_LINKS)
				return -ELOOP;
			if ((rc = fs->ops->readlink(fs, next, link,
			    sizeof(link))) < 0)
				return rc;
			if (strlen(link) + strlen(rest) + 2 > sizeof(rest))
				return -ENAMETOOLONG;
			/* target, then what was left after the link. */
			memmove(rest + strlen(link) + 1, rest,
			    strlen(rest) + 1);
			memcpy(rest, link, strlen(link));
			rest[strlen(link)] = '/';
			if (link[0] == '/') {
				done[0] = '\0';
				cur = fs->ops->root(fs);
			}
			t = IMAGE_FS_DIR;
			continue;
		}
		if (strlen(done) + len + 2 > sizeof(done))
			return -ENAMETOOLONG;
		strcat(done, "/");
		strcat(done, name);
		cur = next;
		t = nt;
	}
	*node = cur;
	*type = t;
	if (real != NULL)
		snprintf(real, reallen, "%s", done[0] != '\0' ? done : "/");
	return 0;
}

int
image_fs_read_file(struct image_fs *fs, const char *path, size_t max,
    void **buf, size_t *len)
{
	enum image_fs_type t;
	uint64_t node, size;
	void *b;
	int rc;

	*buf = NULL;
	*len = 0;
	if ((rc = image_fs_resolve(fs, path, false, &node, &t, NULL, 0)) < 0)
		return rc;
	if (t != IMAGE_FS_FILE)
		return t == IMAGE_FS_DIR ? -EISDIR : -EINVAL;
	if ((rc = fs->ops->size(fs, node, &size)) < 0)
		return rc;
	if (size > max)
		return -EFBIG;
	/* One byte more, so that text can be NUL-terminated. */
	if ((b = malloc((size_t)size + 1)) == NULL)
		return -ENOMEM;
	if (size > 0 && (rc = fs->ops->read(fs, node, b, (size_t)size,
	    0)) < 0) {
		free(b);
		return rc;
	}
	((char *)b)[size] = '\0';
	*buf = b;
	*len = (size_t)size;
	return 0;
}

int
image_fs_list(struct image_fs *fs, const char *path,
    int (*cb)(void *arg, const char *name), void *arg)
{
	enum image_fs_type t;
	uint64_t node;
	int rc;

	if ((rc = image_fs_resolve(fs, path, false, &node, &t, NULL, 0)) < 0)
		return rc;
	if (t != IMAGE_FS_DIR)
		return -ENOTDIR;
	return fs->ops->list(fs, node, cb, arg);
}
