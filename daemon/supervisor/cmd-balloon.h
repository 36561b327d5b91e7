/*
 * vm.balloon: how much of its RAM a running guest with a balloon should
 * keep (the rest it gives up into the balloon), and how often it is
 * asked for its memory statistics.  The definition keeps none of it:
 * the target lasts until the guest stops (a reset keeps it).
 */
#ifndef VMMD_CMD_BALLOON_H
#define VMMD_CMD_BALLOON_H

#include "control.h"

extern const struct cmd_def cmd_balloon_commands[];

#endif
