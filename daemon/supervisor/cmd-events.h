/* The events.* commands: events.subscribe. */
#ifndef VMMD_CMD_EVENTS_H
#define VMMD_CMD_EVENTS_H

#include "control.h"

extern const struct cmd_def cmd_events_commands[];

#endif
