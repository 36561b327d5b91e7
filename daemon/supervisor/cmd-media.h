/*
 * vm.media: a running guest's CD-ROM changes its medium, ejected or an
 * image inserted (opened with the client's rights and passed to the
 * worker, as the VM's other files are).  The definition keeps its
 * "cdrom": the change lasts until the guest stops.
 */
#ifndef VMMD_CMD_MEDIA_H
#define VMMD_CMD_MEDIA_H

#include "control.h"

extern const struct cmd_def cmd_media_commands[];

#endif
