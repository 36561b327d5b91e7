/*
 * What vm.console replays to a client that attaches: the last
 * CONSOLE_REPLAY_SIZE bytes of the guest's output.  The worker keeps
 * them in its console ring (worker/console.h); the supervisor reads
 * them back from the console log when it answers for a guest that
 * ended (supervisor/console-log.h).  One size, so that a client sees
 * the same tail whichever of the two answers it.
 */
#ifndef VMMD_CONSOLE_REPLAY_H
#define VMMD_CONSOLE_REPLAY_H

#define CONSOLE_REPLAY_SIZE	(64 * 1024)

#endif
