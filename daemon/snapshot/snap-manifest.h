/*
 * A snapshot's manifest (manifest.json; README.md describes the format):
 * its limits, its parsed form, the parser that validates its shape, the
 * check of its ranges against the files' sizes, and its writer.  Pure:
 * no files, no logging; errors are -errno and a sentence for the user.
 */
#ifndef VMMD_SNAP_MANIFEST_H
#define VMMD_SNAP_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

#define SNAP_FORMAT_NAME	"vmmd-snapshot"
/*
 * 2 added "disks"; a version-1 manifest (none) is still read, as one
 * that records no disk.
 */
#define SNAP_FORMAT_VERSION	2

#define SNAP_MANIFEST_FILE	"manifest.json"
#define SNAP_MEMORY_FILE	"memory"
#define SNAP_STATE_FILE		"state"

/*
 * Limits, checked before anything is allocated or read: a manifest of
 * 1 MiB, 8 RAM regions (the PC board has two), 1 TiB of RAM, 1024
 * sections of 16 MiB, 64 MiB of state in all (it is read whole into
 * memory to be checked), names of 63 bytes.
 */
#define SNAP_MANIFEST_MAX	(1u << 20)
#define SNAP_MAX_REGIONS	8
#define SNAP_MEMORY_MAX		(1ull << 40)
#define SNAP_MAX_SECTIONS	1024
#define SNAP_SECTION_MAX	(16u << 20)
#define SNAP_STATE_MAX		(64u << 20)
#define SNAP_NAME_MAX		64
/* Disks a manifest records, and their backing chains' depth. */
#define SNAP_MAX_DISKS		16
#define SNAP_MAX_BACKING	15
/* A shared disk's path, its NUL included. */
#define SNAP_DISK_PATH_MAX	4096
/* A disk's virtual size and a frozen image's bytes: qcow2's own bound. */
#define SNAP_DISK_SIZE_MAX	(1ull << 56)
#define SNAP_VERSION_MAX	64
/* Regions' guest addresses, sizes and file offsets are multiples of it. */
#define SNAP_PAGE_SIZE		4096u

struct snap_mregion {
	uint64_t	gpa;		/* guest physical address */
	uint64_t	size;		/* bytes */
	uint64_t	offset;		/* in the memory file */
};

struct snap_msection {
	char		name[SNAP_NAME_MAX];
	uint64_t	offset;		/* in the state file */
	uint64_t	size;
	uint32_t	crc32;		/* zlib's crc32 of its bytes */
};

/*
 * One of the VM's disks at the snapshot.  A frozen disk is a qcow2
 * image in the snapshot's directory, its name there "disk-N.qcow2" for
 * disk N (the only name a frozen disk may have, so that a manifest
 * names no file outside its directory), file_size its bytes: the disk
 * as the RAM expects it, never written again.  A shared disk (raw, or
 * read-only, or a qcow2 image that is not an overlay of vmmd's) is
 * named by its absolute path: what it holds now is what a restore
 * finds, and file_size is 0.  size is the virtual size the guest sees;
 * backing_depth the images below it in its backing chain.
 */
struct snap_mdisk {
	uint32_t	index;		/* in the definition's disks */
	bool		sata;		/* bus "sata", else "virtio" */
	bool		qcow2;		/* format "qcow2", else "raw" */
	bool		frozen;
	char		*path;		/* owned: frozen's name, or shared's */
	uint64_t	size;
	uint64_t	file_size;
	uint32_t	backing_depth;
};

/* "disk-N.qcow2", a frozen disk's name, into buf (of 32 bytes at least). */
void	snap_disk_frozen_name(uint32_t index, char *buf, size_t len);

struct snap_manifest {
	uint32_t		format_version;
	char			vmmd_version[SNAP_VERSION_MAX];
	struct json_object	*definition;	/* owned; an object */
	uint64_t		memory_file_size;
	uint64_t		state_file_size;
	size_t			nregions;
	struct snap_mregion	regions[SNAP_MAX_REGIONS];
	size_t			nsections;
	struct snap_msection	*sections;	/* owned */
	size_t			ndisks;
	struct snap_mdisk	*disks;		/* owned; by increasing index */
};

/*
 * Parses len bytes of manifest text into m and validates its shape:
 * every key known and of its type, the format ours and not newer, names
 * well formed and unique, every number within the limits above, regions
 * page-aligned, in order and not overlapping in the guest nor in the
 * file, sections inside the state file and not overlapping.  The files'
 * sizes are those the manifest records; snap_manifest_check_files()
 * compares them with the files.  On failure m holds nothing to free.
 * -EINVAL (a malformed or foreign manifest), -EPROTONOSUPPORT (a newer
 * format), -E2BIG (beyond a limit), -ENOMEM.
 */
int	snap_manifest_parse(const char *text, size_t len,
	    struct snap_manifest *m, char *err, size_t errlen);
/* The files as they are against what the manifest records: -EINVAL. */
int	snap_manifest_check_files(const struct snap_manifest *m,
	    uint64_t memory_size, uint64_t state_size, char *err,
	    size_t errlen);
void	snap_manifest_free(struct snap_manifest *m);

/*
 * The manifest's text for m (format_version is written as
 * SNAP_FORMAT_VERSION whatever m says): malloc'ed, NUL-terminated, its
 * length in *len.  m->definition is only referenced.  NULL: -ENOMEM.
 */
char	*snap_manifest_format(const struct snap_manifest *m, size_t *len);

/*
 * The manifest text (of len bytes) with its disks replaced by
 * disks[0 .. n), each checked as the parser checks them: the writer
 * that fills the data files (the worker) does not know the disks' files,
 * their owner (vmmd) adds them before it commits.  The text is parsed
 * as hostile first.  0 with a malloc'ed text in *out (*outlen bytes), or
 * -errno and err as snap_manifest_parse().
 */
int	snap_manifest_set_disks(const char *text, size_t len,
	    const struct snap_mdisk *disks, size_t n, char **out,
	    size_t *outlen, char *err, size_t errlen);

#endif
