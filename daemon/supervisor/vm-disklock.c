/*
 * vmmd's handles on the written disks' locks (vm-disklock.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "vm-disklock.h"
#include "vm-files.h"

void
vm_disklock_init(struct vm_disklock *l)
{
	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		l->fd[i] = -1;
		l->pending[i] = false;
	}
}

void
vm_disklock_keep(struct vm_disklock *l, const struct vm_def *def,
    const struct vm_files *f)
{
	vm_disklock_release(l);
	for (unsigned int i = 0; i < f->ndisks && i < def->ndisks; i++)
		if (!def->disks[i].readonly && !def->disks[i].nbd &&
		    !def->disks[i].rbd && f->disk_fd[i] >= 0) {
			l->fd[i] = fcntl(f->disk_fd[i], F_DUPFD_CLOEXEC, 0);
			l->pending[i] = l->fd[i] >= 0 && f->lock_later[i];
		}
}

int
vm_disklock_take(struct vm_disklock *l)
{
	struct flock lk;
	int left = 0, rc = 0;

	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		if (!l->pending[i] || l->fd[i] < 0)
			continue;
		memset(&lk, 0, sizeof(lk));
		lk.l_type = F_WRLCK;
		lk.l_whence = SEEK_SET;		/* all of it */
		if (fcntl(l->fd[i], F_OFD_SETLK, &lk) == 0)
			l->pending[i] = false;
		else if (errno == EAGAIN || errno == EACCES)
			left++;
		else {
			rc = -errno;
			l->pending[i] = false;
		}
	}
	return rc < 0 ? rc : left;
}

void
vm_disklock_drop(struct vm_disklock *l)
{
	struct flock lk;

	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		if (l->fd[i] < 0)
			continue;
		memset(&lk, 0, sizeof(lk));
		lk.l_type = F_UNLCK;
		lk.l_whence = SEEK_SET;
		/* The worker's descriptor is the same open file: its lock. */
		(void)fcntl(l->fd[i], F_OFD_SETLK, &lk);
	}
	vm_disklock_release(l);
}

int
vm_disklock_pushed(struct vm_disklock *l, unsigned int i, int new_fd)
{
	struct flock lk;
	int rc = 0;

	if (i >= CONFIG_DISKS_MAX)
		return -EINVAL;
	if (l->fd[i] < 0)
		return -EBADF;
	memset(&lk, 0, sizeof(lk));
	lk.l_type = F_RDLCK;
	lk.l_whence = SEEK_SET;		/* all of it, as it was locked */
	if (fcntl(l->fd[i], F_OFD_SETLK, &lk) < 0)
		rc = -errno;
	close(l->fd[i]);
	l->fd[i] = -1;
	if (rc == 0 && (l->fd[i] = fcntl(new_fd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = -errno;
	return rc;
}

void
vm_disklock_release(struct vm_disklock *l)
{
	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		if (l->fd[i] >= 0)
			close(l->fd[i]);
		l->fd[i] = -1;
		l->pending[i] = false;
	}
}
