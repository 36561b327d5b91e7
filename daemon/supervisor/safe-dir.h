/*
 * The directories vmmd trusts: its state directory (definitions, which
 * it starts guests from, and console logs) and the runtime directory
 * (the control socket, the workers' sockets).  vmmd opens, creates,
 * binds and removes files in them by name, as root: whoever could
 * change what a name there leads to could have vmmd write, read or
 * start what they like.  So each is checked before use, and refused
 * unless only root and vmmd's own user can change it:
 *
 * - the directory and every directory on the way to it is owned by root
 *   or by vmmd's effective uid;
 * - the directory is writable by neither its group nor others (it may
 *   be readable and searchable by them: the runtime directory under
 *   systemd is 0755, the state directory 0750);
 * - a directory on the way may be writable by others only if it has the
 *   sticky bit (/tmp): others may add names there, but not rename or
 *   remove the entry of root's (or ours) that the path goes through;
 * - a symbolic link on the way is owned by root or vmmd's user, and is
 *   followed, with the same checks on every directory it leads through.
 *
 * The group bits are the ACL mask when a directory has an access ACL,
 * so a named user or group entry that grants write shows as group
 * write and is refused too.  Once a path passes, no one else can change
 * any directory on it: looking names up in it again later (by path) is
 * safe, which is what the rest of vmmd does.
 *
 * Library-like: no logging; the caller reports err.
 */
#ifndef VMMD_SAFE_DIR_H
#define VMMD_SAFE_DIR_H

#include <stddef.h>

/* Symbolic links followed on the way before giving up. */
#define SAFEDIR_MAX_SYMLINKS	40

/*
 * Check the absolute path as above.  0 if it is safe, with an O_PATH
 * descriptor (O_CLOEXEC) of the directory itself in *dirfdp unless
 * dirfdp is NULL; else -errno and err says which directory is refused,
 * its owner and its mode (or why the walk failed): -EPERM for an owner
 * or mode refused, -ENOTDIR, -ENOENT, -ELOOP, -EINVAL (a relative path)
 * and what the lookups said otherwise.
 */
int	safedir_check(const char *path, int *dirfdp, char *err,
	    size_t errlen);

#endif
