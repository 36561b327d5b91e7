/*
 * What a disk image's first bytes say it is.  vmmd reads disks as raw
 * or qcow2 images only: an image in another format given as a raw disk
 * would have its metadata read as data by the guest, and written over by
 * its first writes.  This recognises the headers of the formats such an
 * image is likely to be in, so that a caller (the supervisor, when it
 * opens a VM's disks) can refuse it before that happens.
 *
 * A raw disk may begin with any bytes, another format's header
 * included (a guest may have written one): a match is a reason to ask
 * the user, not proof.  Pure and stateless; no logging.
 */
#ifndef VMMD_DISK_FORMAT_H
#define VMMD_DISK_FORMAT_H

#include <stddef.h>

/* Bytes of an image that decide: every header is matched in these. */
#define DISK_FORMAT_PROBE_LEN	512

/*
 * The format whose header buf (the first len bytes of an image, len
 * possibly short of DISK_FORMAT_PROBE_LEN when the image is) begins
 * with, by the name its users know it by ("qcow2", "VMDK", "LUKS", ...),
 * or NULL when it is none of them: raw as far as can be told.
 */
const char	*disk_format_of(const void *buf, size_t len);
/*
 * The same for the image open as fd, read with pread() so that the
 * descriptor's offset stays where it was (a regular file's; the caller
 * opened it).  0 with *namep set (NULL: raw), or -errno when the image
 * cannot be read.
 */
int		 disk_format_probe(int fd, const char **namep);

#endif
