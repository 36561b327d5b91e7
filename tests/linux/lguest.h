/*
 * Helpers of the linux test suite: driving the reference guest's shell on
 * its serial console (see build-guest.sh), on top of the kvm suite's
 * harness (private daemon, clients, consoles).
 *
 * Commands are sent with markers the guest's shell computes or joins
 * ("=E""ND-7-$?="), so that the terminal's echo of the typed line never
 * matches what is waited for.
 */
#ifndef LINUX_LGUEST_H
#define LINUX_LGUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"

/* What the reference guest's /init prints once its modules are loaded. */
#define LG_BANNER	"vmmd reference guest ready"

/* Deadlines, in milliseconds: the guest may run nested under emulation. */
#define LG_BOOT_MS	240000	/* vm.start to a shell prompt */
#define LG_CMD_MS	60000	/* one short shell command */
#define LG_IDLE_MS	90000	/* no console output for so long: hung */

struct lg_vm {
	struct h_daemon		*d;
	struct h_conn		*c;
	char			 name[64];
	struct h_console	*con;	/* attached console (raw stream) */
	unsigned int		 seq;	/* marker numbers */
	double			 t0;	/* h_now_ms() at its last vm.start */
	unsigned int		 mib;	/* its RAM; 0: the suite's default */
	bool			 dumped;
};

/*
 * The scenario program's test point, for the checks in other files (TAP
 * lines have one counter): a TAP line, and the console log on failure.
 */
typedef bool (*lg_check_fn)(struct lg_vm *vm, bool cond, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

/* VMMD_LINUX_GUEST/file, in one of 4 static buffers. */
const char	*lg_guest_file(const char *file);
/* The guest's default command line (the guest directory's "cmdline"). */
const char	*lg_default_cmdline(void);

/* Attaches a console to the VM (vm.console); 0 or -1 + diag. */
int		 lg_attach(struct lg_vm *);
void		 lg_detach(struct lg_vm *);
/*
 * Waits for needle at or after the console's mark, reading as output
 * arrives; moves the mark past it and returns 0, or -1 (with a diag
 * unless quiet).
 */
int		 lg_expect(struct lg_vm *, const char *needle, int timeout_ms,
		    bool quiet);
/*
 * The same, looking through the kernel's own console messages ("[ 1.234567]
 * ...") that can cut into a line the guest's programs print (boot time).
 * It gives up early when the console stays silent for LG_IDLE_MS: a
 * booting kernel prints all along.
 */
int		 lg_expect_user(struct lg_vm *, const char *needle,
		    int timeout_ms);
/* Sends bytes to the guest's console; 0 or -1. */
int		 lg_send(struct lg_vm *, const char *);
/*
 * Waits until the guest's shell answers (probing every few seconds, as
 * input sent before the shell opened the port may be lost); 0 or -1.
 */
int		 lg_wait_shell(struct lg_vm *, int timeout_ms);
/*
 * Runs cmd in the guest's shell; returns its output (carriage returns
 * removed, malloc'd) and sets *status to its exit status, or NULL.
 */
char		*lg_cmd(struct lg_vm *, const char *cmd, int *status,
		    int timeout_ms);
/*
 * lg_cmd() for a command that must succeed: its output (caller frees)
 * when it exits 0, else NULL after a diagnostic naming it.
 */
char		*lg_cmd_ok(struct lg_vm *, const char *cmd, int timeout_ms);
/* The next marker number (for commands built by the caller). */
unsigned int	 lg_seq(struct lg_vm *);
/*
 * The tail of the VM's console log as TAP diagnostics, once per VM
 * (call when a check failed: it is what the guest said).
 */
void		 lg_dump(struct lg_vm *, const char *why);

/* CRC-32 of buf, as zlib and busybox crc32 compute it. */
uint32_t	 lg_crc32(const void *buf, size_t len);

#endif
