/*
 * File access on behalf of a client.
 *
 * vmmd runs as root, but the kernel and initrd of a VM end up in guest
 * memory, which the client controls: a client may only name files it
 * could read itself.  The checks here decide that from a client's
 * credentials (read from its socket), the owner/group/other mode bits
 * and the file's POSIX access ACL, evaluated as the kernel evaluates
 * them, without changing the daemon's own credentials: an ACL entry that
 * denies the client what "other" grants denies it here too, and one that
 * grants it what the mode bits do not grants it here.
 *
 * Capabilities of the client (CAP_DAC_READ_SEARCH and the like) are not
 * known; only uid 0 is exempt, and that decision is the caller's.  Nor
 * are a security module's rules for the client's own processes: the
 * mode bits and the ACL are what counts.
 *
 * Like the other library-like modules this does not log: errors are
 * negative errno values for the caller to report.
 */
#ifndef VMMD_ACCESS_H
#define VMMD_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Who asks: the peer credentials of a client connection, or the owner
 * a definition records when no client asks (autostart).
 */
struct access_cred {
	uid_t uid;
	gid_t gid;			/* primary group */
	const gid_t *groups;		/* supplementary groups */
	size_t ngroups;
	/*
	 * Besides what the bits allow, open only files root owns (for a
	 * definition with no owner): checked by the caller that opens.
	 */
	bool root_files_only;
};

/* Permission bits asked of access_mode_allows(), as in access(2). */
#define ACCESS_READ	04
#define ACCESS_WRITE	02
#define ACCESS_SEARCH	01		/* execute; search for directories */

/* Symbolic links followed in one resolution before giving up. */
#define ACCESS_MAX_SYMLINKS	40

/*
 * Whether the mode bits of st grant every bit of want to cred, by the
 * classic rules: the owner bits if cred's uid owns the file, else the
 * group bits if its primary or a supplementary group is the file's
 * group, else the other bits.  Only one class applies (an owner denied
 * by the owner bits is denied even if "other" may).  uid 0 gets no
 * special treatment here.  That is the whole answer only for a file
 * without an ACL: see access_acl_allows().
 */
bool	access_mode_allows(const struct stat *st,
	    const struct access_cred *cred, unsigned int want);

/*
 * The same for a file with the access ACL acl: the value of its
 * system.posix_acl_access attribute as getxattr(2) gives it (len bytes,
 * the format of linux/posix_acl_xattr.h), NULL for a file without one.
 * Decided as the kernel decides (fs/namei.c acl_permission_check(),
 * fs/posix_acl.c posix_acl_permission()):
 *  - cred's uid owns the file: the owner bits of the mode;
 *  - the group bits of the mode (the ACL's mask) are all clear, or there
 *    is no ACL: the group or other bits, as above (the kernel does not
 *    read the ACL then, so a named entry neither grants nor denies);
 *  - else the entries in order: a named user entry for the uid decides,
 *    limited by the mask; else if the owning group's entry or a named
 *    group's entry that matches one of cred's groups grants all of want
 *    (limited by the mask), granted, and if some matched but none did,
 *    refused; else the other entry.
 * An ACL the kernel could not have given (a bad version or size, an
 * unknown tag, no other entry) grants nothing.
 */
bool	access_acl_allows(const struct stat *st, const void *acl,
	    size_t len, const struct access_cred *cred, unsigned int want);

/*
 * Whether the file open at fd (any descriptor of it, O_PATH too), st
 * its fstat(), grants want to cred, its ACL read from it where the
 * kernel would read it: 0, -EACCES, or the error from reading the ACL
 * (a file whose ACL cannot be read is not accessed).
 */
int	access_fd_allows(int fd, const struct stat *st,
	    const struct access_cred *cred, unsigned int want);

/*
 * Resolve the absolute path as cred would have to: component by
 * component, following symbolic links (at most ACCESS_MAX_SYMLINKS),
 * with search permission for cred on every directory looked into
 * (including those a link leads to) and read permission for cred on
 * what the path names in the end.  With cred NULL nothing is checked.
 *
 * The walk holds a descriptor of each directory it checked and looks up
 * the next name in that very directory (openat/fstatat, never a path
 * that could be re-resolved): renaming a directory or putting a link in
 * its place while the walk runs cannot lead it somewhere unchecked.
 *
 * On success returns an O_PATH descriptor (O_CLOEXEC) of the directory
 * holding what the path names, with its name there in name (NAME_MAX + 1
 * bytes; "." when the path names a directory), *st the fstatat() of it
 * without following links (of any type: the caller decides what it
 * accepts), and, unless resolved is NULL, the path without symbolic
 * links, ".", ".." or repeated slashes in resolved (PATH_MAX bytes).
 *
 * Errors: -EACCES if cred may not search a directory on the way or may
 * not read the final file (which of them is not told: a client learns
 * nothing about what lies behind a directory it cannot search);
 * -EINVAL for a relative path; -ESTALE if a directory (or the final
 * file, whose ACL is read from it) was replaced during the walk;
 * otherwise what the lookups or the reading of an ACL said (-ENOENT,
 * -ENOTDIR, -ELOOP, -ENAMETOOLONG, -EIO, ...).
 */
int	access_resolve(const char *path, const struct access_cred *cred,
	    char *resolved, char *name, struct stat *st);

/*
 * Open name in the directory dirfd, as found by access_resolve()
 * (checked is its st): O_RDONLY | O_CLOEXEC | O_NONBLOCK (a FIFO swapped
 * in must not block the caller) and O_NOFOLLOW, and make sure it is that
 * very file: a regular file with checked's st_dev and st_ino.  With
 * cred, the mode bits and ACL of the opened file must still let cred
 * read it.
 * Returns the descriptor, or -ESTALE if the file is no longer the one
 * checked, -EINVAL if it is not a regular file, -EACCES if cred may no
 * longer read it, or what openat() or fstat() said.
 */
int	access_open(int dirfd, const char *name, const struct stat *checked,
	    const struct access_cred *cred);

/*
 * Both of the above: open the regular file at the absolute path for
 * reading on behalf of cred, or as the daemon itself when cred is NULL
 * (then without any permission check, symbolic links followed by the
 * kernel).  Nothing but a regular file is ever opened.  Returns the
 * descriptor (O_RDONLY, O_CLOEXEC, O_NONBLOCK) or a negative errno as
 * above; -EINVAL means "not a regular file" (or a relative path).
 */
int	access_open_file(const char *path, const struct access_cred *cred);
/*
 * The same for reading and writing (a disk image): cred needs write
 * permission on the file too, and the descriptor is O_RDWR.
 */
int	access_open_file_rw(const char *path, const struct access_cred *cred);
/*
 * The directory at the absolute path, on behalf of cred (NULL: the
 * daemon's own rights): cred needs read and search permission on it,
 * and with write, write permission too (to make files in it).
 * O_RDONLY | O_DIRECTORY | O_CLOEXEC; -ENOTDIR for anything but a
 * directory, else as above.
 */
int	access_open_dir(const char *path, const struct access_cred *cred,
	    bool write);

#endif
