/*
 * The disk reader: the kernel, initrd and command line a guest's disk's
 * own boot configuration names (the cloud module's boot_choose), read in
 * a process of its own, because a disk is the guest's to write and every
 * byte of it is hostile (libblkid, libext2fs, the FAT, GRUB and BLS
 * readers, the qcow2 layer and its decompressors all parse it).
 *
 * The worker has dropped its privileges before it gets here (sandbox.h:
 * sandbox_drop_privileges): the reader forked from it runs as the
 * guest's uid with no capability and no_new_privs, and before it reads a
 * byte it also loads the reader's system call filter (no file by name,
 * no socket, no process) and limits its address space and processor
 * time.  Its parent waits for it with a deadline and kills it past it.
 * What the reader found comes back in a shared page and two memory
 * files the parent made before the fork; the parent checks it all as
 * it would a stranger's answer.
 *
 * Threads: the worker's loop thread, while the guest is being set up,
 * before any disk of the worker's is open or any vCPU runs: the reader
 * opens the disk's chain itself, as a copy of a process with no other
 * thread working (glibc's fork() leaves malloc usable in the child).
 */
#ifndef VMMD_DISK_READER_H
#define VMMD_DISK_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "blk-image.h"
#include "cloud-module.h"
#include "sandbox.h"

/*
 * How long a reader may take, at most (wall clock): under the
 * supervisor's deadline for a start from a disk (120 s), so that its
 * error is the one the user reads, and generous, since an emulated host
 * decompresses a kernel and initrd slowly.
 */
#define DISK_READER_TIMEOUT_MS		100000
/* Its processor time, at most (RLIMIT_CPU, seconds). */
#define DISK_READER_CPU_S		100
/*
 * Its address space beyond what the worker had mapped when it forked
 * and the kernel and initrd it may read: what libblkid, libext2fs and
 * the readers may allocate on top.  A file system that asks for more
 * (a superblock claiming millions of groups) fails with ENOMEM there
 * instead of growing the host's memory.
 */
#define DISK_READER_HEAP		(256u << 20)

/* How confined the reader was when it first read its disk. */
struct disk_reader_facts {
	bool read;			/* it read at least once: who is set */
	struct sandbox_facts who;
	int open_fds;			/* descriptors it held then */
	long max_rss_kib;		/* the reader's peak, from wait4() */
	long elapsed_ms;
};

struct disk_reader_request {
	const struct cloud_module *module;	/* loaded by the caller */
	/* The disk's chain as worker.boot gives it (blk-chain.h): the
	 * reader opens it itself, read-only.  Every other descriptor it
	 * inherited (the link to vmmd, the console log, the TAP...) it
	 * closes before it reads. */
	const int *disk_fds;
	const enum blk_image_format *formats;
	unsigned int disk_nfds;
	const char *name;		/* for messages: "disk 0" */
	const char *append;
	size_t kernel_max, initrd_max;
	bool unconfined;		/* -U: no system call filter (debugging) */
};

struct disk_reader;

/*
 * Fork a reader that runs boot_choose on the disk req names, and return
 * at once: the caller may load its own filter meanwhile (the one it
 * runs the guest under allows disk_reader_finish()).  0 with *out set,
 * or -errno with err filled.
 */
int	disk_reader_start(const struct disk_reader_request *req,
	    struct disk_reader **out, char *err, size_t errlen);

/*
 * Wait for r's answer (it is killed past its deadline), then free r.
 * On success, 0 with *out filled as boot_choose fills it (out->kernel
 * and out->initrd NULL: the bytes are in *kernel_fd and *initrd_fd,
 * memory files sealed against change, -1 for no initrd).  Else -errno
 * with err filled: boot_choose's own errors as it returns them,
 * -ETIMEDOUT past the deadline, -ENOMEM past the memory bound, -EIO for
 * a reader that died otherwise or answered nonsense.  facts: how the
 * reader ran, filled in either case.  NULL r: nothing to wait for.
 */
int	disk_reader_finish(struct disk_reader *r, struct image_boot *out,
	    int *kernel_fd, int *initrd_fd, struct disk_reader_facts *facts,
	    char *err, size_t errlen);

/* Kill r's reader, reap it, free r.  NULL is fine. */
void	disk_reader_cancel(struct disk_reader *r);

#endif
