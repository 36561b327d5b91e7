/*
 * A snapshot directory (README.md): written whole or not at all, and
 * read back only after everything in it has been checked.  No KVM, no
 * process around it: the worker hands it guest RAM regions and section
 * buffers, and gets them back.  Errors are -errno and a sentence for
 * the user in err.
 */
#ifndef VMMD_SNAP_FILE_H
#define VMMD_SNAP_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snap-manifest.h"

struct json_object;

/* Guest RAM: where the guest sees it and where this process has it. */
struct snap_region {
	uint64_t	 gpa;
	uint64_t	 size;
	void		*host;
};

/* One binary section: a device's or a vCPU's state, say. */
struct snap_section {
	const char	*name;		/* snap-manifest.c's name rule */
	const void	*data;
	size_t		 size;
};

struct snap_write_args {
	const char			*vmmd_version;
	struct json_object		*definition;	/* an object, as is */
	const struct snap_region	*regions;	/* in guest order */
	size_t				 nregions;
	const struct snap_section	*sections;
	size_t				 nsections;
};

/*
 * Writes a snapshot into dir (made 0700 if it does not exist), which
 * must not hold one already (-EEXIST).  Data files are written under
 * temporary names, synced and renamed, then manifest.json the same way,
 * then the directory is synced: until the manifest's rename a reader
 * sees no snapshot, after it a whole one.  What the reader would refuse
 * is refused before anything is written (-EINVAL, -E2BIG).  The guest
 * must not run meanwhile.
 */
int	snap_write(const char *dir, const struct snap_write_args *a,
	    char *err, size_t errlen);

/*
 * The same write in three steps, for a writer that cannot name files
 * (the sandboxed worker, whose filter refuses every open): the
 * directory's owner makes the data files (begin: memory.tmp and
 * state.tmp in dirfd, read-write, made anew; -EEXIST where a snapshot
 * is), the writer fills them through their descriptors and gets the
 * manifest's text (data: malloc'ed into *manifest, NULL on failure),
 * and the owner commits (commit).  Commit takes the text as hostile:
 * it parses it as a reader would and compares it with the files'
 * sizes before it syncs the files, renames them, and writes and syncs
 * the manifest and the directory as snap_write() does (the manifest
 * given to uid and gid unless uid is -1); it closes nothing.  Every
 * file is made anew (O_EXCL, its name unlinked first), never opened
 * where it was: a privileged owner writing in a user's directory
 * truncates no file a hard link there leads to.  Abort closes the
 * data files and removes them.  dir names the directory in messages
 * only.  snap_write() is the three in one.
 */
int	snap_write_begin(int dirfd, const char *dir, int *memory_fd,
	    int *state_fd, char *err, size_t errlen);
int	snap_write_data(int memory_fd, int state_fd,
	    const struct snap_write_args *a, char **manifest, size_t *len,
	    char *err, size_t errlen);
int	snap_write_commit(int dirfd, const char *dir, int memory_fd,
	    int state_fd, const char *manifest, size_t len, uid_t uid,
	    gid_t gid, char *err, size_t errlen);
void	snap_write_abort(int dirfd, int *memory_fd, int *state_fd);

struct snap_reader {
	int			memory_fd;
	struct snap_manifest	m;
	uint8_t			*state;		/* the state file, checked */
};

/*
 * Opens the snapshot in dir and checks all of it but the RAM's bytes:
 * the manifest (snap_manifest_parse), the files' sizes, every section's
 * checksum (the state file is read whole and kept), and the memory
 * layout against the one the caller will run (expect: gpa and size; a
 * different layout is -EINVAL naming both).  -ENOENT: no manifest (not
 * a snapshot, or one whose writing did not finish).  expect NULL: no
 * layout to compare (a caller that checks the rest before the machine
 * that will hold the RAM exists).  On success, snap_close() releases r.
 */
int	snap_open(struct snap_reader *r, const char *dir,
	    const struct snap_region *expect, size_t nexpect, char *err,
	    size_t errlen);
/*
 * The same on the three files already open (each taken, even on
 * failure), for a reader that cannot open them by name (the sandboxed
 * worker, given them by vmmd); dir names the snapshot in messages.
 */
int	snap_open_fds(struct snap_reader *r, const char *dir, int manifest_fd,
	    int memory_fd, int state_fd, const struct snap_region *expect,
	    size_t nexpect, char *err, size_t errlen);
/* The checked bytes of the section called name, or NULL if none. */
const void *snap_section(const struct snap_reader *r, const char *name,
	    size_t *size);
/*
 * Region i's RAM into host (the caller's fresh, zeroed RAM of the size
 * snap_open() checked): mapped copy-on-write from the file (map; the
 * snapshot's files must then stay as they are while the guest runs) or
 * read into it (snap-memory.h).
 */
int	snap_restore_memory(const struct snap_reader *r, size_t i,
	    void *host, bool map, char *err, size_t errlen);
void	snap_close(struct snap_reader *r);

#endif
