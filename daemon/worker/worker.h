/*
 * vmmd-worker's state: one guest, run for the supervisor.
 *
 * Files: vmmd-worker.c sets the process up and runs the loop; link.c talks to
 * the supervisor; requests.c answers its requests; guest.c builds,
 * rebuilds and tears down the machine with the backends that outlive it;
 * info.c describes it all for vm.info.  Everything runs on the loop's
 * thread except where a comment says otherwise.
 */
#ifndef VMMD_WORKER_H
#define VMMD_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <event2/event.h>

#include "console.h"
#include "blk-file.h"
#include "blk-nbd.h"
#include "guest-display.h"
#include "link.h"
#include "machine.h"
#include "nvram.h"
#include "net-stream.h"
#include "net-tap.h"
#include "vhost-user.h"
#include "vhost-vsock.h"
#include "relink.h"
#include "start-times.h"

struct cloud_module;
struct migrate_out;
struct disk_reader;
struct snapshot_job;

/* The file server of a shared directory when the start names none. */
#define WORKER_VIRTIOFSD	"/usr/lib/qemu/virtiofsd"
/*
 * The longest a vhost-user backend may take to answer one message: a
 * vCPU that starts the device waits that long at worst for a backend
 * that hangs, which then fails the device rather than the worker.
 */
#define WORKER_FS_TIMEOUT_MS	10000

struct worker {
	struct event_base *base;
	const char *name;
	struct link *link;		/* NULL while no supervisor is linked */
	struct relink *relink;		/* NULL: the guest dies with the link */
	struct link_handlers link_handlers;	/* main's, for every link */
	int64_t started_ms;		/* CLOCK_REALTIME of the start (vmmd's) */
	struct start_times start;	/* where the start's time went */

	/* The guest's definition, from worker.boot. */
	struct machine_config cfg;
	char *kernel, *initrd, *cmdline;
	char *kernel_name;		/* the user's path, for messages */
	/* A firmware image booted instead (kernel_name then names it). */
	char *firmware;
	char *vgabios;			/* its display's ROM, or NULL */
	uint8_t uuid[16];		/* the VM's, when cfg.uuid points here */
	bool reboot_stops;
	bool paused;			/* as last reported in vm.state */
	int64_t log_start;		/* the run's start in the console log */
	struct json_object *definition;	/* the supervisor's, kept for it */
	/* The cloud module (cloud-boot.h), loaded before the sandbox for
	 * a guest that boots from its disk or has a seed; NULL: none. */
	const struct cloud_module *cloud;
	/* The disk reader under way during worker.boot, or NULL. */
	struct disk_reader *reader;
	/* worker.boot's answer on the kernel chosen from the disk and the
	 * seed (NULL: neither), kept for worker.adopt. */
	struct json_object *boot_facts;
	bool shutdown_pending;
	/* How worker.shutdown asked the guest (enum shutdown_stage), and
	 * the Ctrl-Alt-Del that follows an unanswered power button. */
	int shutdown_stage;
	struct event *shutdown_ev;
	bool booted;
	bool ended;	/* the loop is over: answering what is queued */

	/* The machine, rebuilt at each reset, and what outlives it. */
	struct machine *machine;
	struct console *console;
	struct display *display;	/* NULL: the guest has no screen */
	struct rtc_battery rtc_battery;	/* the clock the guest set, NVRAM */
	/* cfg.backends.disk: an image's, or (NULL there) an NBD server's */
	struct blk_file *disks[BOARD_MAX_DISKS];
	struct blk_nbd *nbd[BOARD_MAX_DISKS];
	/* An NBD disk's way to a new connection (nbd-redial.h). */
	struct nbd_redial *nbd_redial[BOARD_MAX_DISKS];
	/* An RBD image's, through the RBD module (loaded for the first
	 * one, before the sandbox). */
	struct blk_rbd *rbd[BOARD_MAX_DISKS];
	const struct rbd_module *rbd_mod;
	/* Each disk's backing files' paths, top first (JSON strings). */
	struct json_object *disk_chain[BOARD_MAX_DISKS];
	struct blk_file *cdrom;		/* cfg.backends.cdrom, or NULL */
	struct nvram *nvram;		/* cfg.backends.pflash's, or NULL */
	/* Card i, cfg.backends.net[i]: a TAP, or passt (user-net.h). */
	struct net_tap *net[BOARD_MAX_NICS];
	struct net_stream *user_net[BOARD_MAX_NICS];
	struct vhost_vsock *vsock;	/* cfg.backends.vsock */
	/* The shared directory's server, cfg.backends.fs (fs-share.h). */
	struct vhost_user *fs;
	char fs_tag[37];		/* cfg.backends.fs_tag */
	pid_t fs_pid;			/* the virtiofsd started, or 0 */
	bool fs_readonly;
	bool fs_socket;			/* a server the user runs */
	struct event *fs_ev;		/* its connection's end */
	/* The snapshot the first machine starts from (restore.h), or NULL. */
	struct restore *restore;
	/*
	 * The snapshot being taken (snapshot.h), or NULL: until it is
	 * written the guest stays paused, whoever asks to resume it.
	 */
	struct snapshot_job *snapshot;
	/* The stream the first machine arrives on (migrate-in.h), or -1. */
	int migrate_fd;
	/* When its last frame was read (CLOCK_MONOTONIC, ns): the log says
	 * how long the target took from there until the guest ran. */
	int64_t migrate_end_ns;
	/* The migration under way to another host (migrate-out.h). */
	struct migrate_out *migrate_out;
	/*
	 * Run first by guest_teardown() when set: migrate-out.c sets it to
	 * migrate_out_cancel() while a migration's thread reads the
	 * machine, so that the thread ends before the machine goes (a hook,
	 * not a call: migrate-out.c itself calls into guest.c).  Loop
	 * thread.
	 */
	void	(*teardown_hook)(struct worker *);
	bool migrated;		/* it ended: the guest runs there now */
	uint64_t reboots;
	/*
	 * Exit statistics (stats.c): wanted on, with segments, ticks to
	 * time, since when.
	 */
	bool xs_on;
	bool xs_segments;
	struct xs_clock xs_clock;
	int64_t xs_since_ns;

	/* Set by whichever thread held the machine, handled on the loop. */
	struct event *hold_ev;
	pthread_mutex_t hold_lock;
	enum machine_reset_reason hold_reason;
	const char *hold_source;	/* static storage (a board name) */
	char *hold_fatal;

	/* Least privilege (sandbox.h), entered once the first machine
	 * is built; /dev/kvm stays open for the machines after it. */
	int kvm_fd;
	int report_fd;			/* violations go there, or -1 */
	bool unconfined;		/* -U: no sandbox (debugging) */
	bool read_files;		/* the display serves noVNC's files */
	uid_t uid;			/* -u: the guest's own uid, or 0 */
	bool sandboxed;

	int exit_status;
};

/* End the loop; the process exits with status. */
static inline void
worker_exit(struct worker *w, int status)
{
	w->exit_status = status;
	event_base_loopexit(w->base, NULL);
}

#endif
