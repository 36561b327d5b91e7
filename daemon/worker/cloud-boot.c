/* See cloud-boot.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blk-file.h"
#include "cloud-boot.h"
#include "cloud-module.h"
#include "disk-reader.h"
#include "log.h"
#include "module-load.h"
#include "test-hook.h"
#include "text-escape.h"
#include "worker-msg.h"

/* A kernel larger than this is no kernel (Debian's are about 8 MiB). */
#define CLOUD_KERNEL_MAX	(64u << 20)
/* An initrd may take at most this share of the guest's memory, */
#define CLOUD_INITRD_SHARE	2
/* and never more than this (Debian's are about 60 MiB). */
#define CLOUD_INITRD_MAX	(512u << 20)

static int
cloud_load(const struct cloud_module **m, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int rc;

	if ((rc = module_dir_self(dir, sizeof(dir))) < 0) {
		snprintf(err, errlen, "cannot find the cloud module: "
		    "/proc/self/exe: %s", strerror(-rc));
		return rc;
	}
	return cloud_module_load(dir, m, err, errlen);
}

static int
cloud_disk_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	return blk_file_read(ctx, buf, len, off);
}

static void
cloud_replace(char **dst, char *src)
{
	free(*dst);
	*dst = src;
}

/* "/proc/self/fd/N" for fd, as the boot loaders read the supervisor's. */
static char *
cloud_fd_path(int fd)
{
	char *path;

	return asprintf(&path, "/proc/self/fd/%d", fd) < 0 ? NULL : path;
}

int
cloud_boot_from_disk(struct worker *w, struct json_object *o,
    struct json_object **choice, char *err, size_t errlen)
{
	unsigned int i = (unsigned int)wmsg_int(o, WMSG_FROM_DISK_INDEX, 0);
	struct disk_reader_request req = {
		.append = wmsg_str(o, WMSG_FROM_DISK_APPEND, ""),
		.kernel_max = CLOUD_KERNEL_MAX,
		.initrd_max = ((size_t)w->cfg.memory_mib << 20) /
		    CLOUD_INITRD_SHARE,
		.unconfined = w->unconfined,
	};
	/* At most half the guest's memory, and no more than an initrd
	 * ever is: the reader's address space is bounded by it. */
	if (req.initrd_max > CLOUD_INITRD_MAX)
		req.initrd_max = CLOUD_INITRD_MAX;
	struct disk_reader_facts facts;
	struct image_boot b;
	struct image_disk d;
	char *kpath = NULL, *ipath = NULL, name[300];
	char shown[4 * sizeof(b.cmdline)];
	int rc, kfd = -1, ifd = -1;

	if (i >= w->cfg.backends.ndisks || w->disks[i] == NULL) {
		snprintf(err, errlen, "boot: no disk %u to boot from", i);
		return -EINVAL;
	}
	if ((rc = cloud_load(&req.module, err, errlen)) < 0)
		return rc;
	snprintf(name, sizeof(name), "disk %u", i);
	d = (struct image_disk){ .read = cloud_disk_read, .ctx = w->disks[i],
	    .size = blk_file_size(w->disks[i]), .name = name };
	req.disk = &d;
	req.disk_fds = w->disk_fds[i];
	req.disk_nfds = w->disk_nfds[i];
	rc = disk_reader_choose(&req, &b, &kfd, &ifd, &facts, err, errlen);
	log_debug("%s: disk %u read in %ld ms by a reader (uid %u, "
	    "capabilities %#llx, no_new_privs %d, seccomp %d), at most %ld "
	    "KiB resident", w->name, i, facts.elapsed_ms,
	    (unsigned int)facts.who.euid, facts.who.cap_eff,
	    facts.who.no_new_privs, facts.who.seccomp, facts.max_rss_kib);
	if (facts.read)
		test_hook_reading("disk read", &facts.who, facts.max_rss_kib,
		    facts.open_fds);
	if (rc < 0)
		return rc == -ENOENT || rc == -EFBIG ? -ENOENT : rc;
	kpath = cloud_fd_path(kfd);
	ipath = ifd >= 0 ? cloud_fd_path(ifd) : NULL;
	if (kpath == NULL || (ifd >= 0 && ipath == NULL)) {
		free(kpath);
		close(kfd);
		if (ifd >= 0)
			close(ifd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* The descriptors stay open for the guest's life: its resets. */
	cloud_replace(&w->kernel, kpath);
	cloud_replace(&w->initrd, ipath);
	cloud_replace(&w->cmdline, strdup(b.cmdline));
	cloud_replace(&w->kernel_name, strdup(b.kernel_from));
	*choice = json_object_new_object();
	json_object_object_add(*choice, "rule", json_object_new_string(
	    b.rule));
	json_object_object_add(*choice, "why", json_object_new_string(b.why));
	json_object_object_add(*choice, "kernel", json_object_new_string(
	    b.kernel_from));
	if (b.initrd_len > 0)
		json_object_object_add(*choice, "initrd",
		    json_object_new_string(b.initrd_from));
	/* Shown, not used: a byte that is no text would make the whole
	 * answer one the supervisor refuses. */
	text_escape(shown, sizeof(shown), b.cmdline, strlen(b.cmdline));
	json_object_object_add(*choice, "cmdline", json_object_new_string(
	    shown));
	log_info("%s: booting %s, chosen by %s", w->name, b.kernel_from,
	    b.why);
	if (w->cmdline == NULL || w->kernel_name == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int
cloud_boot_seed(struct worker *w, struct json_object *o, char *iid,
    size_t iidlen, char *err, size_t errlen)
{
	struct json_object *keys = wmsg_get(o, WMSG_SEED_KEYS);
	const char *key[16];
	const struct cloud_module *m;
	struct nocloud_seed s = {
		.hostname = wmsg_str(o, WMSG_SEED_HOSTNAME, w->name),
		.user_data = wmsg_str(o, WMSG_SEED_USER_DATA, NULL),
		.network_config = wmsg_str(o, WMSG_SEED_NETWORK, NULL),
		.ssh_keys = key,
	};
	unsigned int n = w->cfg.backends.ndisks;
	int fd, rc;

	if (n >= BOARD_MAX_DISKS) {
		snprintf(err, errlen, "seed: no room for it: the VM has %u "
		    "disks already", n);
		return -EINVAL;
	}
	for (size_t i = 0; keys != NULL && i < json_object_array_length(keys) &&
	    i < 16; i++)
		key[s.nkeys++] = wmsg_str(json_object_array_get_idx(keys, i),
		    WMSG_KEY_TEXT, "");
	if ((rc = cloud_load(&m, err, errlen)) < 0)
		return rc;
	if ((fd = memfd_create("cidata", MFD_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "seed: a memory file: %s", strerror(-rc));
		return rc;
	}
	if ((rc = m->seed_write(&s, fd, iid, iidlen, err, errlen)) < 0) {
		close(fd);
		return rc;
	}
	/* Read-only, named as cloud-localds would not: by its serial. */
	if ((rc = blk_file_new(&w->disks[n], fd, true, "cidata",
	    &w->cfg.backends.disk[n])) < 0) {
		snprintf(err, errlen, "seed: as a disk: %s", strerror(-rc));
		close(fd);
		return rc;
	}
	w->disk_chain[n] = json_object_new_array();
	w->cfg.backends.ndisks = n + 1;
	log_info("%s: cloud-init seed %s as disk %u", w->name, iid, n);
	return 0;
}
