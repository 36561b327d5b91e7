/*
 * The worker's process from fork to exec: its signals and descriptors
 * put in the places worker-fds.h's table gives them, then vmmd-worker
 * run.  Called by worker-link.c alone, in the child it forked; calls
 * nothing of it.
 */
#ifndef VMMD_WORKER_EXEC_H
#define VMMD_WORKER_EXEC_H

/*
 * Run in the child worker-link.c forked, to exec the worker at path
 * with argv.  Between fork and exec only async-signal-safe calls: the
 * child inherited a copy of an event loop it must not touch.
 *
 * The worker gets sock as WLINK_CHANNEL_FD, adopt as WLINK_ADOPT_FD,
 * report as WLINK_REPORT_FD, then passed[] from WLINK_KVM_FD on (a -1
 * leaves its number closed), and no other descriptor but its standard
 * streams: stdin from /dev/null, and so is a stdout or stderr vmmd does
 * not have, so that every descriptor the worker opens or is given lands
 * past them (its sandbox keeps the standard streams from being written
 * anywhere but at their end: sandbox.c).
 */
void	wexec_child(int sock, int adopt, int report, const int *passed,
	    unsigned int npassed, const char *path, char *const argv[])
	    __attribute__((noreturn));

#endif
