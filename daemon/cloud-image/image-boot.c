/* See image-boot.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bls-entry.h"
#include "grub-cfg.h"
#include "image-boot.h"
#include "image-fs.h"
#include "image-str.h"

/* Text files read from the image (entries, grub.cfg, grubenv), at most. */
#define BOOT_TEXT_MAX		(1024 * 1024)
#define BOOT_MAX_BLS		64

struct boot_ctx {
	const struct image_disk *d;
	struct image_part parts[IMAGE_MAX_PARTS];
	unsigned int nparts;
	struct image_fs *fs[IMAGE_MAX_PARTS];	/* NULL: not one we read */
	int root;				/* -1: none found */
	size_t kernel_max, initrd_max;
	char searched[2048];		/* what was looked for, and where */
	char notes[1024];		/* what was found and not used */
	struct image_boot *out;
};

static void
boot_add(char *buf, size_t size, const char *fmt, ...)
{
	size_t l = strlen(buf);
	va_list ap;

	if (l >= size - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + l, size - l, fmt, ap);
	va_end(ap);
}

static const char *
boot_part_name(const struct boot_ctx *c, unsigned int i, char *buf,
    size_t len)
{
	if (c->parts[i].number == 0)
		snprintf(buf, len, "the disk (%s)", c->parts[i].fstype);
	else
		snprintf(buf, len, "partition %u (%s)", c->parts[i].number,
		    c->parts[i].fstype);
	return buf;
}

static bool
boot_is_ext(const struct boot_ctx *c, unsigned int i)
{
	return c->fs[i] != NULL && strcmp(c->parts[i].fstype, "vfat") != 0;
}

/* "1, 15" for the file systems that pass want(). */
static void
boot_list_parts(const struct boot_ctx *c, bool (*want)(const struct boot_ctx *,
    unsigned int), char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned int i = 0; i < c->nparts; i++)
		if (want(c, i))
			boot_add(buf, len, "%s%s%u", buf[0] != '\0' ? ", " :
			    "", c->parts[i].number == 0 ? "the disk " : "",
			    c->parts[i].number);
	if (buf[0] == '\0')
		snprintf(buf, len, "none");
}

static bool
boot_any_fs(const struct boot_ctx *c, unsigned int i)
{
	return c->fs[i] != NULL;
}

/*
 * The file at path on file system i, whole, at most max bytes, into
 * *buf; where it came from appended to from ("partition 1 (ext4):
 * /boot/vmlinuz-6.1", links resolved).
 */
static int
boot_load(struct boot_ctx *c, unsigned int i, const char *path, size_t max,
    void **buf, size_t *len, char *from, size_t fromlen)
{
	char real[IMAGE_FS_PATH_MAX], name[64];
	enum image_fs_type t;
	uint64_t node;
	int rc;

	if ((rc = image_fs_resolve(c->fs[i], path, false, &node, &t, real,
	    sizeof(real))) < 0)
		return rc;
	if ((rc = image_fs_read_file(c->fs[i], path, max, buf, len)) < 0)
		return rc;
	boot_add(from, fromlen, "%s%s: %s", from[0] != '\0' ? ", " : "",
	    boot_part_name(c, i, name, sizeof(name)), real);
	return 0;
}

/* The initrds (paths on file system i) concatenated into out's. */
static int
boot_load_initrds(struct boot_ctx *c, unsigned int i, char (*paths)[1024],
    unsigned int n, const char *prefix)
{
	struct image_boot *b = c->out;
	char path[IMAGE_FS_PATH_MAX + 8];
	void *one, *all;
	size_t len;
	int rc;

	for (unsigned int k = 0; k < n; k++) {
		snprintf(path, sizeof(path), "%s%s", prefix, paths[k]);
		rc = boot_load(c, i, path, c->initrd_max - b->initrd_len, &one,
		    &len, b->initrd_from, sizeof(b->initrd_from));
		if (rc < 0)
			return rc;
		if ((all = realloc(b->initrd, b->initrd_len + len + 1)) ==
		    NULL) {
			free(one);
			return -ENOMEM;
		}
		memcpy((char *)all + b->initrd_len, one, len);
		b->initrd = all;
		b->initrd_len += len;
		free(one);
	}
	return 0;
}

/* Whether the command line words include one starting with key. */
static bool
boot_has_arg(const char *args, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = args; *p != '\0';) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, kl) == 0)
			return true;
		while (*p != '\0' && *p != ' ')
			p++;
	}
	return false;
}

static void
boot_cmdline(struct boot_ctx *c, const char *args, const char *append)
{
	struct image_boot *b = c->out;

	b->cmdline[0] = '\0';
	if (!boot_has_arg(args, "root=") && c->root >= 0 &&
	    c->parts[c->root].uuid[0] != '\0')
		boot_add(b->cmdline, sizeof(b->cmdline), "root=UUID=%s%s",
		    c->parts[c->root].uuid, boot_has_arg(args, "ro") ||
		    boot_has_arg(args, "rw") ? "" : " ro");
	if (args[0] != '\0')
		boot_add(b->cmdline, sizeof(b->cmdline), "%s%s",
		    b->cmdline[0] != '\0' ? " " : "", args);
	if (append != NULL && append[0] != '\0')
		boot_add(b->cmdline, sizeof(b->cmdline), "%s%s",
		    b->cmdline[0] != '\0' ? " " : "", append);
}

/* A failed choice leaves nothing behind for the next rule. */
static void
boot_reset(struct image_boot *b)
{
	free(b->kernel);
	free(b->initrd);
	b->kernel = b->initrd = NULL;
	b->kernel_len = b->initrd_len = 0;
	b->kernel_from[0] = b->initrd_from[0] = '\0';
}

/*
 * Kernel at kpath and initrds on file system i, the rule's name and
 * why: 0, or -errno with a note of what was missing.
 */
static int
boot_take(struct boot_ctx *c, unsigned int i, const char *kpath,
    char (*initrds)[1024], unsigned int ninitrd, const char *prefix,
    const char *args, const char *append, const char *rule,
    const char *why)
{
	struct image_boot *b = c->out;
	char path[IMAGE_FS_PATH_MAX + 8], name[64];
	int rc;

	snprintf(path, sizeof(path), "%s%s", prefix, kpath);
	rc = boot_load(c, i, path, c->kernel_max, &b->kernel, &b->kernel_len,
	    b->kernel_from, sizeof(b->kernel_from));
	if (rc == 0)
		rc = boot_load_initrds(c, i, initrds, ninitrd, prefix);
	if (rc < 0) {
		boot_add(c->notes, sizeof(c->notes), "%s%s names %s, which "
		    "%s %s (%s)", c->notes[0] != '\0' ? "; " : "", why, path,
		    rc == -EFBIG ? "is too large on" : "cannot be read from",
		    boot_part_name(c, i, name, sizeof(name)), strerror(-rc));
		boot_reset(b);
		return rc;
	}
	boot_cmdline(c, args, append);
	snprintf(b->rule, sizeof(b->rule), "%s", rule);
	snprintf(b->why, sizeof(b->why), "%s", why);
	return 0;
}

/* Rule 1 ------------------------------------------------------------ */

struct boot_bls_scan {
	struct boot_ctx *c;
	unsigned int part;
	const char *dir;
	struct bls_entry *best;
	unsigned int *best_part;
	const char **best_dir;
	struct bls_entry cand;
	unsigned int seen;
};

static int
boot_bls_each(void *arg, const char *name)
{
	struct boot_bls_scan *s = arg;
	size_t n = strlen(name), len;
	char path[IMAGE_FS_PATH_MAX];
	void *text;

	if (n < 6 || strcmp(name + n - 5, ".conf") != 0 ||
	    s->seen++ >= BOOT_MAX_BLS)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	if (image_fs_read_file(s->c->fs[s->part], path, BOOT_TEXT_MAX, &text,
	    &len) < 0)
		return 0;
	if (memchr(text, '\0', len) == NULL &&
	    bls_entry_parse(text, name, &s->cand) == 0 &&
	    (s->best->kernel[0] == '\0' || bls_entry_cmp(&s->cand,
	    s->best) < 0)) {
		*s->best = s->cand;
		*s->best_part = s->part;
		*s->best_dir = s->dir;
	}
	free(text);
	return 0;
}

static int
boot_bls(struct boot_ctx *c, const char *append)
{
	static const char *const dirs[] = { "/loader/entries",
		"/boot/loader/entries" };
	struct bls_entry *best = calloc(2, sizeof(*best));
	struct boot_bls_scan s = { .c = c };
	const char *best_dir = NULL;
	unsigned int best_part = 0;
	char why[512], list[128], title[300];
	int rc = -ENOENT;

	if (best == NULL)
		return -ENOMEM;
	s.best = best;
	s.best_part = &best_part;
	s.best_dir = &best_dir;
	for (unsigned int i = 0; i < c->nparts; i++) {
		if (c->fs[i] == NULL)
			continue;
		for (unsigned int k = 0; k < 2; k++) {
			if (k == 1 && !boot_is_ext(c, i))
				continue;
			s.part = i;
			s.dir = dirs[k];
			s.seen = 0;
			image_fs_list(c->fs[i], dirs[k], boot_bls_each, &s);
		}
	}
	boot_list_parts(c, boot_any_fs, list, sizeof(list));
	boot_add(c->searched, sizeof(c->searched), "Boot Loader "
	    "Specification entries in /loader/entries and "
	    "/boot/loader/entries (file systems on partitions %s)", list);
	if (best->kernel[0] != '\0') {
		snprintf(title, sizeof(title), "%s", best->title[0] != '\0' ?
		    best->title : best->file);
		snprintf(why, sizeof(why), "the Boot Loader Specification "
		    "entry %s/%.200s ('%.200s')", best_dir, best->file, title);
		/* Paths are from the root of the entries' file system; a
		 * /boot inside the root file system is tried too. */
		rc = boot_take(c, best_part, best->kernel, best->initrd,
		    best->ninitrd, "", best->options, append, "bls", why);
		if (rc < 0 && strcmp(best_dir, "/boot/loader/entries") == 0)
			rc = boot_take(c, best_part, best->kernel, best->initrd,
			    best->ninitrd, "/boot", best->options, append,
			    "bls", why);
	}
	free(best);
	return rc;
}

/* Rule 2 ------------------------------------------------------------ */

static int
boot_grub(struct boot_ctx *c, const char *append)
{
	static const char *const dirs[] = { "/boot/grub", "/grub",
		"/boot/grub2", "/grub2" };
	struct grub_entry *e = malloc(sizeof(*e));
	char path[64], reason[256], why[1024], list[128];
	int rc = -ENOENT;

	if (e == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < c->nparts && rc < 0; i++) {
		if (!boot_is_ext(c, i))
			continue;
		for (unsigned int k = 0; k < 4 && rc < 0; k++) {
			void *cfg, *env = NULL;
			size_t len, elen;
			unsigned int at = i;

			snprintf(path, sizeof(path), "%s/grub.cfg", dirs[k]);
			if (image_fs_read_file(c->fs[i], path, BOOT_TEXT_MAX,
			    &cfg, &len) < 0)
				continue;
			snprintf(path, sizeof(path), "%s/grubenv", dirs[k]);
			if (image_fs_read_file(c->fs[i], path, 64 * 1024, &env,
			    &elen) < 0 || memchr(env, '\0', elen) != NULL) {
				free(env);
				env = NULL;
			}
			if (memchr(cfg, '\0', len) != NULL ||
			    grub_cfg_default(cfg, env, e, reason,
			    sizeof(reason)) < 0) {
				boot_add(c->notes, sizeof(c->notes), "%s%s/"
				    "grub.cfg: %s", c->notes[0] != '\0' ?
				    "; " : "", dirs[k], memchr(cfg, '\0',
				    len) != NULL ? "not text" : reason);
				free(cfg);
				free(env);
				continue;
			}
			free(cfg);
			free(env);
			/* Its files are where its "search" put $root. */
			if (e->root_uuid[0] != '\0') {
				for (unsigned int j = 0; j < c->nparts; j++)
					if (boot_is_ext(c, j) && strcasecmp(
					    c->parts[j].uuid, e->root_uuid) == 0)
						at = j;
			}
			snprintf(why, sizeof(why), "GRUB's default entry in "
			    "%s/grub.cfg ('%s', entry %u, %s)", dirs[k],
			    e->title, e->index, reason);
			rc = boot_take(c, at, e->kernel, e->initrd, e->ninitrd,
			    "", e->args, append, "grub", why);
		}
	}
	boot_list_parts(c, boot_is_ext, list, sizeof(list));
	boot_add(c->searched, sizeof(c->searched), "; GRUB's grub.cfg in "
	    "/boot/grub, /grub, /boot/grub2 and /grub2 (ext file systems on "
	    "partitions %s)", list);
	free(e);
	return rc;
}

/* Rule 3 ------------------------------------------------------------ */

static int
boot_links(struct boot_ctx *c, const char *append)
{
	static const char *const dirs[] = { "", "/boot" };
	char kpath[32], initrd[1][1024], why[128], list[128];
	enum image_fs_type t;
	uint64_t node;
	int rc = -ENOENT;

	for (unsigned int i = 0; i < c->nparts && rc < 0; i++) {
		if (!boot_is_ext(c, i))
			continue;
		for (unsigned int k = 0; k < 2 && rc < 0; k++) {
			snprintf(kpath, sizeof(kpath), "%s/vmlinuz", dirs[k]);
			snprintf(initrd[0], sizeof(initrd[0]),
			    "%s/initrd.img", dirs[k]);
			if (image_fs_resolve(c->fs[i], kpath, false, &node, &t,
			    NULL, 0) < 0)
				continue;
			snprintf(why, sizeof(why), "Debian's links %s and %.40s",
			    kpath, initrd[0]);
			rc = boot_take(c, i, kpath, initrd,
			    image_fs_resolve(c->fs[i], initrd[0], false,
			    &node, &t, NULL, 0) == 0 ? 1 : 0, "", "", append,
			    "links", why);
		}
	}
	boot_list_parts(c, boot_is_ext, list, sizeof(list));
	boot_add(c->searched, sizeof(c->searched), "; the links /vmlinuz, "
	    "/initrd.img, /boot/vmlinuz and /boot/initrd.img (partitions "
	    "%s)", list);
	return rc;
}

/* Rule 4 ------------------------------------------------------------ */

struct boot_newest {
	char best[256];
	unsigned int seen;
};

static int
boot_newest_each(void *arg, const char *name)
{
	struct boot_newest *n = arg;

	if (n->seen++ > 4096)
		return 1;
	if (strncmp(name, "vmlinuz-", 8) != 0 || strlen(name) >= 200 ||
	    strcmp(name + strlen(name) - 4, ".old") == 0)
		return 0;
	if (n->best[0] == '\0' || strverscmp(name, n->best) > 0)
		snprintf(n->best, sizeof(n->best), "%s", name);
	return 0;
}

static int
boot_newest(struct boot_ctx *c, const char *append)
{
	static const char *const initrd_forms[] = { "/boot/initrd.img-%s",
		"/boot/initramfs-%s.img", "/boot/initrd-%s" };
	char kpath[300], initrd[1][1024], why[400], list[128];
	enum image_fs_type t;
	uint64_t node;
	int rc = -ENOENT;

	for (unsigned int i = 0; i < c->nparts && rc < 0; i++) {
		struct boot_newest n = { .best = "" };
		unsigned int ninitrd = 0;
		const char *version;

		if (!boot_is_ext(c, i))
			continue;
		image_fs_list(c->fs[i], "/boot", boot_newest_each, &n);
		if (n.best[0] == '\0')
			continue;
		version = n.best + 8;
		snprintf(kpath, sizeof(kpath), "/boot/%s", n.best);
		for (unsigned int k = 0; k < 3 && ninitrd == 0; k++) {
			snprintf(initrd[0], sizeof(initrd[0]),
			    initrd_forms[k], version);
			if (image_fs_resolve(c->fs[i], initrd[0], false,
			    &node, &t, NULL, 0) == 0)
				ninitrd = 1;
		}
		snprintf(why, sizeof(why), "the newest kernel in /boot, "
		    "version %s", version);
		rc = boot_take(c, i, kpath, initrd, ninitrd, "", "", append,
		    "newest", why);
	}
	boot_list_parts(c, boot_is_ext, list, sizeof(list));
	boot_add(c->searched, sizeof(c->searched), "; /boot/vmlinuz-* "
	    "(partitions %s)", list);
	return rc;
}

/* ------------------------------------------------------------------ */

int
image_boot_choose(const struct image_disk *d, const char *append,
    size_t kernel_max, size_t initrd_max, struct image_boot *out, char *err,
    size_t errlen)
{
	struct boot_ctx *c = calloc(1, sizeof(*c));
	enum image_fs_type t;
	uint64_t node;
	char name[64], why[256], skipped[1024] = "";
	int rc;

	memset(out, 0, sizeof(*out));
	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->d = d;
	c->out = out;
	c->root = -1;
	c->kernel_max = kernel_max;
	c->initrd_max = initrd_max;
	if ((rc = image_layout_read(d, c->parts, &c->nparts, err,
	    errlen)) < 0)
		goto out;
	for (unsigned int i = 0; i < c->nparts; i++) {
		rc = image_fs_open(d, &c->parts[i], &c->fs[i], why,
		    sizeof(why));
		if (rc < 0 && c->parts[i].fstype[0] != '\0')
			boot_add(skipped, sizeof(skipped), "%s%s %s%s%s",
			    skipped[0] != '\0' ? "; " : "",
			    boot_part_name(c, i, name, sizeof(name)),
			    rc == -ENOTSUP ? "not read (vmmd reads ext2/3/4 "
			    "and FAT)" : "is damaged", rc != -ENOTSUP &&
			    why[0] != '\0' ? ": " : "", rc != -ENOTSUP ?
			    why : "");
		if (c->root < 0 && c->fs[i] != NULL && boot_is_ext(c, i) &&
		    image_fs_resolve(c->fs[i], "/etc/fstab", false, &node, &t,
		    NULL, 0) == 0)
			c->root = (int)i;
	}
	rc = boot_bls(c, append);
	if (rc < 0 && rc != -ENOMEM)
		rc = boot_grub(c, append);
	if (rc < 0 && rc != -ENOMEM)
		rc = boot_links(c, append);
	if (rc < 0 && rc != -ENOMEM)
		rc = boot_newest(c, append);
	if (rc < 0) {
		snprintf(err, errlen, "%s: no kernel found: searched %s%s%s%s%s",
		    d->name, c->nparts == 0 ? "(no partition or file system "
		    "found) " : "", c->searched, skipped[0] != '\0' ? "; " : "",
		    skipped, c->notes[0] != '\0' ? "; found and not used: " :
		    "");
		boot_add(err, errlen, "%s", c->notes);
		/* Damage met on the way (a directory that loops). */
		for (unsigned int i = 0; i < c->nparts; i++)
			if (c->fs[i] != NULL && c->fs[i]->why[0] != '\0')
				boot_add(err, errlen, "; %s is damaged: %s",
				    boot_part_name(c, i, name, sizeof(name)),
				    c->fs[i]->why);
		rc = rc == -EFBIG || rc == -ENOMEM ? rc : -ENOENT;
		image_boot_free(out);
	}
out:
	/* Names, titles and paths from the image, shown to people. */
	if (rc == 0) {
		image_str_show(out->why, sizeof(out->why));
		image_str_show(out->kernel_from, sizeof(out->kernel_from));
		image_str_show(out->initrd_from, sizeof(out->initrd_from));
	} else if (errlen > 0) {
		image_str_show(err, errlen);
	}
	for (unsigned int i = 0; i < c->nparts; i++)
		image_fs_close(c->fs[i]);
	free(c);
	return rc;
}

void
image_boot_free(struct image_boot *b)
{
	free(b->kernel);
	free(b->initrd);
	b->kernel = b->initrd = NULL;
}
