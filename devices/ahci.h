/*
 * An AHCI 1.3 SATA host bus adapter as Intel's ICH9 presents it (PCI
 * 8086:2922, class 01.06.01), with a disk or an ATAPI CD-ROM drive on
 * each of its ports.
 *
 * The function has one memory BAR, ABAR (BAR 5): the generic host
 * control registers, then 0x80 bytes of registers per port (AHCI 1.3
 * 3.1, 3.3).  A port runs the commands the driver issues in PxCI from
 * the command list at PxCLB (one 32-byte header per slot), each with a
 * command table holding the command FIS, the ATAPI packet and the PRDT
 * that scatters its data over guest memory; the drive's answer comes
 * back as FISes in the received FIS area at PxFB, PxTFD and PxIS.
 *
 * Drives: a disk takes IDENTIFY DEVICE, READ/WRITE DMA (EXT), FLUSH
 * CACHE (EXT) and SET FEATURES; a CD-ROM takes IDENTIFY PACKET DEVICE
 * and PACKET with the commands atapi.h lists, on a read-only image of
 * 2048-byte blocks.  Both sit on the disk backend virtio-blk uses
 * (blk-backend.h), so one image serves either: requests complete
 * through the backend's done(), under the device's lock, in any order;
 * IDENTIFY and the ATAPI commands that return data complete at once.
 *
 * What the guest writes is untrusted: command headers, tables and PRDs
 * outside guest RAM stop the port with Host Bus Fatal Error, a PRDT
 * shorter than the transfer with Overflow, and a command a drive
 * cannot do fails with a task file error (ABRT, or CHECK CONDITION
 * with sense data for ATAPI); the guest recovers by clearing PxCMD.ST
 * as AHCI 1.3 6.2.2 says.  Issue bits beyond CAP.NCS and the registers
 * of ports beyond CAP.NP read as zero and ignore writes.
 *
 * Interrupts: MSI (one message, a capability of its own) once the
 * driver enables it, through the device host's msi() with vector 0;
 * else INTx, line 0, which follows GHC.IE and IS.
 *
 * Plain state under the device's lock (device.h); backend completions
 * take it themselves.
 */
#ifndef VMMD_AHCI_H
#define VMMD_AHCI_H

#include <stdbool.h>

#include "blk-backend.h"
#include "device.h"

#define AHCI_MAX_PORTS		6	/* ICH9's */
#define AHCI_SLOTS		8	/* slots per port: CAP.NCS + 1 */
#define AHCI_MAX_PRDS		64	/* PRDs one command may use */
#define AHCI_BAR		5
#define AHCI_BAR_SIZE		0x1000

enum ahci_drive_type {
	AHCI_DRIVE_NONE,		/* an empty port */
	AHCI_DRIVE_DISK,
	AHCI_DRIVE_CDROM,		/* read-only whatever be says */
};

struct ahci_drive {
	enum ahci_drive_type type;
	/* Outlives the device; a CD-ROM's without ops: no medium. */
	const struct blk_backend *be;
};

struct ahci;

/*
 * An HBA with nports ports (1 to AHCI_MAX_PORTS), port i holding
 * drives[i].  NULL on ENOMEM or a bad argument.
 */
struct ahci *ahci_new(const struct device_host *host,
    const struct ahci_drive *drives, unsigned int nports);
/* Waits for the requests in flight (not under the lock).  NULL is fine. */
void ahci_free(struct ahci *a);

/*
 * A media change in port's CD-ROM drive (atapi.h), under the device's
 * lock: be, when not NULL, replaces the medium (which is ejected
 * first: be outlives the device or the next change), else the tray
 * opens empty.  The guest sees UNIT ATTENTION and the media events.
 * 0; -EINVAL when port holds no CD-ROM; -EBUSY while the guest
 * prevents removal and force is false (it is asked to eject); -EAGAIN
 * while a read of the old medium is in flight (its backend must stay:
 * try again once it completed).
 */
int ahci_media(struct ahci *a, unsigned int port,
    const struct blk_backend *be, bool force);
/*
 * Whether port's CD-ROM drive holds a medium (a load may have emptied
 * it: see ahci.c's state), under the device's lock.  0 or 1; -EINVAL
 * when port holds no CD-ROM.
 */
int ahci_has_medium(const struct ahci *a, unsigned int port);

/* A board entry's ops for what ahci_new() returns. */
extern const struct device_ops ahci_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table ahci_state_table;

#endif
