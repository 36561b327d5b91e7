/*
 * The descriptor numbers a worker inherits from the supervisor: shared
 * by the link that lays them out (worker-link.c, vm-start.c) and the
 * child that puts them there before exec (worker-exec.c).  Constants
 * only.
 */
#ifndef VMMD_WORKER_FDS_H
#define VMMD_WORKER_FDS_H

/*
 * The worker's descriptors, the one table of them.  wlink_spawn() puts
 * the first three there itself: its end of the socketpair, the socket a
 * later supervisor adopts it on (worker-sock.h), the write end of the
 * pipe its sandbox names a forbidden system call on.  The owner's files
 * follow, each kind at its own number whether or not the ones before it
 * are there: wlink_spawn()'s passed[WLINK_SLOT(fd)] becomes fd, -1
 * leaving that number closed.
 */
#define WLINK_CHANNEL_FD	3
#define WLINK_ADOPT_FD		4
#define WLINK_REPORT_FD		5
#define WLINK_KVM_FD		6	/* /dev/kvm */
#define WLINK_KERNEL_FD		7
#define WLINK_INITRD_FD		8	/* if the VM has one; else a firmware VM's VGA BIOS */
/* card 0's TAP, if it has one; cards 1-3's follow the backing files */
#define WLINK_TAP0_FD		9
#define WLINK_VSOCK_FD		10	/* /dev/vhost-vsock, if it has vsock */
#define WLINK_DISK_FD(i)	(11 + (i))	/* the VM's disks, in order */
#define WLINK_MAX_DISKS		4
/* The disks' backing files, disk by disk, each chain from the top. */
#define WLINK_BACKING_FD(k)	(WLINK_DISK_FD(WLINK_MAX_DISKS) + (k))
#define WLINK_MAX_BACKING	(WLINK_MAX_DISKS * 15)
/* Card i's TAP (a card with user-mode networking leaves it closed). */
#define WLINK_MAX_NICS		4
#define WLINK_TAP_FD(i)		((i) == 0 ? WLINK_TAP0_FD :		\
	WLINK_BACKING_FD(WLINK_MAX_BACKING) + (i) - 1)
/* The CD-ROM's image, if the VM has one (read-only). */
#define WLINK_CDROM_FD		WLINK_TAP_FD(WLINK_MAX_NICS)
/* The NVRAM file of a "uefi" VM (read-write: its UEFI variables). */
#define WLINK_NVRAM_FD		(WLINK_CDROM_FD + 1)
/* A snapshot's manifest, memory and state files (vm.restore), i 0-2. */
#define WLINK_SNAP_FD(i)	(WLINK_NVRAM_FD + 1 + (i))
/* A live migration's stream the guest arrives on (vm.migrate_in). */
#define WLINK_MIGRATE_FD	WLINK_SNAP_FD(3)
/* A shared directory, or the vhost-user socket of its server. */
#define WLINK_FS_FD		(WLINK_MIGRATE_FD + 1)
#define WLINK_SLOT(fd)		((fd) - WLINK_KVM_FD)
#define WLINK_MAX_PASSED	WLINK_SLOT(WLINK_FS_FD + 1)

#endif
