/*
 * The machine's KVM memory slots: machine.c places them, ram-log.c
 * logs writes to the RAM ones.
 */
#ifndef VMMD_MACHINE_SLOTS_H
#define VMMD_MACHINE_SLOTS_H

#define MACHINE_SLOT_LOW	0
#define MACHINE_SLOT_HIGH	1
#define MACHINE_SLOT_FB		2
#define MACHINE_SLOT_FIRMWARE	3	/* read-only, at the top of 4 GiB */
#define MACHINE_SLOT_VARS	4	/* read-only, in read-array mode */

#endif
