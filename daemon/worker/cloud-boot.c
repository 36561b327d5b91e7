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

int
cloud_boot_prepare(struct worker *w, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int rc;

	if (w->cloud != NULL)
		return 0;
	if ((rc = module_dir_self(dir, sizeof(dir))) < 0) {
		snprintf(err, errlen, "cannot find the cloud module: "
		    "/proc/self/exe: %s", strerror(-rc));
		return rc;
	}
	return cloud_module_load(dir, &w->cloud, err, errlen);
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
cloud_boot_read_start(struct worker *w, const struct start_boot_disk *bd,
    const int *fds, const enum blk_image_format *formats, unsigned int n,
    char *err, size_t errlen)
{
	size_t initrd_max = ((size_t)w->cfg.memory_mib << 20) /
	    CLOUD_INITRD_SHARE;
	char name[32];
	struct disk_reader_request req = {
		.module = w->cloud,
		.disk_fds = fds,
		.formats = formats,
		.disk_nfds = n,
		.name = name,
		.append = bd->append != NULL ? bd->append : "",
		.kernel_max = CLOUD_KERNEL_MAX,
		/* And never more than an initrd ever is: the reader's
		 * address space is bounded by it. */
		.initrd_max = initrd_max < CLOUD_INITRD_MAX ? initrd_max :
		    CLOUD_INITRD_MAX,
		.unconfined = w->unconfined,
	};

	snprintf(name, sizeof(name), "disk %u", bd->disk);
	return disk_reader_start(&req, &w->reader, err, errlen);
}

int
cloud_boot_read_finish(struct worker *w, struct json_object **choice,
    char *err, size_t errlen)
{
	struct disk_reader_facts facts;
	struct image_boot b;
	char *kpath = NULL, *ipath = NULL;
	char shown[4 * sizeof(b.cmdline)];
	int rc, kfd = -1, ifd = -1;

	rc = disk_reader_finish(w->reader, &b, &kfd, &ifd, &facts, err,
	    errlen);
	w->reader = NULL;
	log_debug("%s: disk read in %ld ms by a reader (uid %u, capabilities "
	    "%#llx, no_new_privs %d, seccomp %d, %d descriptors), at most "
	    "%ld KiB resident", w->name, facts.elapsed_ms,
	    (unsigned int)facts.who.euid, facts.who.cap_eff,
	    facts.who.no_new_privs, facts.who.seccomp, facts.open_fds,
	    facts.max_rss_kib);
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
	log_info("%s: booting %s, chosen by %s (read in %ld ms)", w->name,
	    b.kernel_from, b.why, facts.elapsed_ms);
	if (w->cmdline == NULL || w->kernel_name == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int
cloud_boot_seed(struct worker *w, const struct start_seed *seed, char *iid,
    size_t iidlen, char *err, size_t errlen)
{
	const char *key[WMSG_SEED_KEYS_MAX];
	const struct cloud_module *m;
	struct nocloud_seed s = {
		.hostname = seed->hostname != NULL ? seed->hostname : w->name,
		.user_data = seed->user_data,
		.network_config = seed->network_config,
		.ssh_keys = key,
	};
	unsigned int n = w->cfg.backends.ndisks;
	int fd, rc;

	if (n >= BOARD_MAX_DISKS) {
		snprintf(err, errlen, "seed: no room for it: the VM has %u "
		    "disks already", n);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < seed->nkeys; i++)
		key[s.nkeys++] = seed->ssh_keys[i];
	if ((m = w->cloud) == NULL) {
		snprintf(err, errlen, "seed: the cloud module is not loaded");
		return -EINVAL;
	}
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
