/*
 * The supervisor-worker link's vocabulary, defined once: every request
 * the supervisor sends a worker, what each takes and answers, every
 * event a worker sends, and each field's name, type and bounds.  Both
 * sides build and read messages through this table only, and each
 * checks what it receives against it before it looks inside: a worker
 * checks a request's arguments (wmsg_check() on its shape), the
 * supervisor a reply or an event.  vmmd-protocol(7), "THE WORKER LINK",
 * describes the same messages for a reader.
 *
 * The framing is the control protocol's (proto.h): one JSON object per
 * line, requests {"id", "command", "arguments"}, replies {"id",
 * "return"} or {"id", "error"}, events {"event", "vm", "data"}.  The
 * descriptors a request takes (wmsg_request_def.takes_fd) travel as
 * SCM_RIGHTS with its line; those a worker keeps for its life are
 * inherited at its start and named by number in worker.boot.
 *
 * A field's bounds: an integer's range, inclusive; a string's length in
 * bytes; an array's number of entries.  A JSON null counts as absent.
 * An object or array of objects has a shape of its own; WMSG_S_OPAQUE is
 * any object, checked by whoever takes it apart (a definition by
 * vmconfig, the statistics by the client that asked).
 */
#ifndef VMMD_WORKER_MSG_H
#define VMMD_WORKER_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "boot-dev.h"
#include "proto.h"

/* Bounds the worker's machine has too (its requests.c asserts them). */
#define WMSG_DISKS_MAX		4
#define WMSG_BACKING_MAX	15	/* backing files under one disk */
#define WMSG_NICS_MAX		4	/* network cards */
#define WMSG_FORWARDS_MAX	16	/* a card's port forwards */
#define WMSG_SEED_KEYS_MAX	16	/* a seed's SSH keys */
#define WMSG_PASSWORD_MAX	8	/* all that VNC authentication uses */
#define WMSG_RTC_SLICES_MIN	2
#define WMSG_RTC_SLICES_MAX	32
#define WMSG_PATH_MAX		4095
/* The longest period of a balloon's statistics requests, in seconds. */
#define WMSG_BALLOON_INTERVAL_MAX	86400
#define WMSG_FD_MAX		1023
#define WMSG_REQ_FDS_MAX	2	/* descriptors on one request */

enum wmsg_type {
	WMSG_STRING,
	WMSG_INT,
	WMSG_BOOL,
	WMSG_OBJECT,		/* of the field's shape */
	WMSG_ARRAY,		/* of objects of the field's shape */
	WMSG_ANY,		/* any JSON value, passed through */
};

/* What an object holds: its fields are those listed with its shape. */
enum wmsg_shape {
	WMSG_S_NONE,		/* no fields at all: {} or absent */
	WMSG_S_OPAQUE,		/* any object */
	WMSG_S_BOOT,
	WMSG_S_BOOT_DISK,
	WMSG_S_BACKING,
	WMSG_S_BOOT_NET,
	WMSG_S_NET_FORWARD,
	WMSG_S_BOOT_VSOCK,
	WMSG_S_BOOT_FS,
	WMSG_S_BOOT_FROM_DISK,
	WMSG_S_BOOT_SEED,
	WMSG_S_SEED_KEY,
	WMSG_S_BOOT_REPLY,
	WMSG_S_BOOT_DISPLAY,
	WMSG_S_SHUTDOWN,
	WMSG_S_SHUTDOWN_REPLY,
	WMSG_S_STATS,
	WMSG_S_CLIENT,		/* worker.console, worker.screenshot */
	WMSG_S_ADOPT_REPLY,
	WMSG_S_STATE_EVENT,
	WMSG_S_DISPLAY_EVENT,
	WMSG_S_REBOOT_EVENT,
	WMSG_S_EXIT_EVENT,
	WMSG_S_SNAPSHOT,
	WMSG_S_SNAPSHOT_REPLY,
	WMSG_S_MEDIA,
	WMSG_S_MIGRATE_OUT,
	WMSG_S_DISK_PUSH,
	WMSG_S_NBD_REDIAL_EVENT,
	WMSG_S_NBD_FD,
	WMSG_S_BALLOON,
	WMSG_S_NSHAPES
};

/* String fields with a fixed set of values (NULL-terminated lists). */
#define WMSG_V_NONE		NULL
#define WMSG_V_ON_REBOOT	((const char *const[]){ "restart", "stop", \
				    NULL })
#define WMSG_V_LOST_TICKS	((const char *const[]){ "slew", "discard", \
				    NULL })
#define WMSG_V_DISK_FORMAT	((const char *const[]){ "raw", "qcow2", \
				    "nbd", "rbd", NULL })
#define WMSG_V_FWD_PROTO	((const char *const[]){ "tcp", "udp", NULL })
#define WMSG_V_ADOPT_STATE	((const char *const[]){ "running", "paused", \
				    "stopping", NULL })
#define WMSG_V_GUEST_STATE	((const char *const[]){ "running", "paused", \
				    NULL })

/*
 * Every field: F(id, shape, "name", type, required, min, max, of, values)
 * makes WMSG_<id>.  of is the shape (WMSG_S_<of>) of an object or array
 * field's entries (NONE otherwise).
 */
#define WMSG_FIELDS(F)							\
	/* worker.boot: the guest, the files vmmd opened for it */	\
	F(BOOT_NAME, BOOT, "name", STRING, 0, 1, 255, NONE, NONE)	\
	/* a kernel file, or (boot_disk) the disk's own choice */	\
	F(BOOT_KERNEL, BOOT, "kernel", STRING, 0, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(BOOT_KERNEL_NAME, BOOT, "kernel_name", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* or a firmware image (SeaBIOS) booted instead of a kernel */	\
	F(BOOT_FIRMWARE, BOOT, "firmware", STRING, 0, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(BOOT_FIRMWARE_NAME, BOOT, "firmware_name", STRING, 0, 1,	\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* and its display's VGA BIOS, for a firmware with a display */	\
	F(BOOT_VGABIOS, BOOT, "vgabios", STRING, 0, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(BOOT_INITRD, BOOT, "initrd", STRING, 0, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(BOOT_INITRD_NAME, BOOT, "initrd_name", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	F(BOOT_CMDLINE, BOOT, "cmdline", STRING, 0, 0,			\
	    PROTO_CMDLINE_MAX, NONE, NONE)				\
	F(BOOT_MEMORY_MIB, BOOT, "memory_mib", INT, 1,			\
	    PROTO_MEMORY_MIB_MIN, PROTO_MEMORY_MIB_MAX, NONE, NONE)	\
	F(BOOT_VCPUS, BOOT, "vcpus", INT, 1, 1, PROTO_VCPUS_MAX, NONE,	\
	    NONE)							\
	/* the VM's UUID (uuid-text.h), for a firmware's SMBIOS */	\
	F(BOOT_UUID, BOOT, "uuid", STRING, 0, 36, 36, NONE, NONE)	\
	F(BOOT_ON_REBOOT, BOOT, "on_reboot", STRING, 0, 1, 16, NONE,	\
	    ON_REBOOT)							\
	F(BOOT_LOST_TICKS, BOOT, "lost_tick_policy", STRING, 0, 1, 16,	\
	    NONE, LOST_TICKS)						\
	F(BOOT_RTC_BACKLOG_MAX, BOOT, "rtc_backlog_max", INT, 0, 0,	\
	    65536, NONE, NONE)						\
	F(BOOT_RTC_SLICES, BOOT, "rtc_slices", INT, 0,			\
	    WMSG_RTC_SLICES_MIN, WMSG_RTC_SLICES_MAX, NONE, NONE)	\
	F(BOOT_RNG, BOOT, "rng", BOOL, 0, 0, 0, NONE, NONE)		\
	F(BOOT_BALLOON, BOOT, "balloon", BOOL, 0, 0, 0, NONE, NONE)	\
	F(BOOT_CONSOLE_LOG, BOOT, "console_log", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	F(BOOT_CONSOLE_LOG_MAX, BOOT, "console_log_max", INT, 0, 0,	\
	    INT64_MAX, NONE, NONE)					\
	F(BOOT_ADOPT_FD, BOOT, "adopt_fd", INT, 0, 3, WMSG_FD_MAX,	\
	    NONE, NONE)							\
	F(BOOT_KVM_FD, BOOT, "kvm_fd", INT, 0, 3, WMSG_FD_MAX, NONE,	\
	    NONE)							\
	/* an ISO image (raw, read-only) as a CD-ROM on AHCI */	\
	F(BOOT_CDROM_FD, BOOT, "cdrom_fd", INT, 0, 3, WMSG_FD_MAX,	\
	    NONE, NONE)							\
	F(BOOT_CDROM_NAME, BOOT, "cdrom_name", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* firmware's boot order (boot-dev.h's names) and menu */	\
	F(BOOT_ORDER, BOOT, "boot_order", STRING, 0, 1,			\
	    BOOT_ORDER_TEXT_MAX, NONE, NONE)				\
	F(BOOT_MENU_MS, BOOT, "boot_menu_ms", INT, 0, 0, 65535, NONE,	\
	    NONE)							\
	/* OVMF's variables: the VM's NVRAM file (read-write) */	\
	F(BOOT_NVRAM_FD, BOOT, "nvram_fd", INT, 0, 3, WMSG_FD_MAX,	\
	    NONE, NONE)							\
	F(BOOT_NVRAM_NAME, BOOT, "nvram_name", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* a snapshot to restore (vm.restore): its three files, read-only */ \
	F(BOOT_SNAP_MANIFEST_FD, BOOT, "snapshot_manifest_fd", INT, 0, 3, \
	    WMSG_FD_MAX, NONE, NONE)					\
	F(BOOT_SNAP_MEMORY_FD, BOOT, "snapshot_memory_fd", INT, 0, 3,	\
	    WMSG_FD_MAX, NONE, NONE)					\
	F(BOOT_SNAP_STATE_FD, BOOT, "snapshot_state_fd", INT, 0, 3,	\
	    WMSG_FD_MAX, NONE, NONE)					\
	F(BOOT_SNAP_NAME, BOOT, "snapshot_name", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* a live migration's stream the guest arrives on (read-write) */ \
	F(BOOT_MIGRATE_FD, BOOT, "migrate_fd", INT, 0, 3, WMSG_FD_MAX,	\
	    NONE, NONE)							\
	F(BOOT_LOG_START, BOOT, "log_start", INT, 0, 0, INT64_MAX,	\
	    NONE, NONE)							\
	F(BOOT_STARTED_MS, BOOT, "started_ms", INT, 0, 0, INT64_MAX,	\
	    NONE, NONE)							\
	F(BOOT_REQUEST_NS, BOOT, "request_ns", INT, 0, 0, INT64_MAX,	\
	    NONE, NONE)							\
	F(BOOT_SPAWN_NS, BOOT, "spawn_ns", INT, 0, 0, INT64_MAX,	\
	    NONE, NONE)							\
	F(BOOT_DEFINITION, BOOT, "definition", OBJECT, 0, 0, 0, OPAQUE,	\
	    NONE)							\
	F(BOOT_DISKS, BOOT, "disks", ARRAY, 0, 0, WMSG_DISKS_MAX,	\
	    BOOT_DISK, NONE)						\
	F(BOOT_NET, BOOT, "net", ARRAY, 0, 0, WMSG_NICS_MAX, BOOT_NET,	\
	    NONE)							\
	F(BOOT_DISPLAY, BOOT, "display", OBJECT, 0, 0, 0,		\
	    BOOT_DISPLAY, NONE)						\
	F(BOOT_VSOCK, BOOT, "vsock", OBJECT, 0, 0, 0, BOOT_VSOCK, NONE)	\
	F(BOOT_FS, BOOT, "fs", OBJECT, 0, 0, 0, BOOT_FS, NONE)	\
	F(BOOT_FROM_DISK, BOOT, "boot_disk", OBJECT, 0, 0, 0,		\
	    BOOT_FROM_DISK, NONE)					\
	F(BOOT_SEED, BOOT, "seed", OBJECT, 0, 0, 0, BOOT_SEED, NONE)	\
	/* worker.boot's boot_disk: which disk, what to add to the	\
	 * command line its boot configuration gives */			\
	F(FROM_DISK_INDEX, BOOT_FROM_DISK, "disk", INT, 1, 0,		\
	    WMSG_DISKS_MAX - 1, NONE, NONE)				\
	F(FROM_DISK_APPEND, BOOT_FROM_DISK, "append", STRING, 0, 0,	\
	    PROTO_CMDLINE_MAX, NONE, NONE)				\
	/* worker.boot's seed: cloud-init's, made as a disk after the	\
	 * others (daemon/cloud-image/nocloud-seed.h) */		\
	F(SEED_HOSTNAME, BOOT_SEED, "hostname", STRING, 1, 1, 255,	\
	    NONE, NONE)							\
	F(SEED_USER_DATA, BOOT_SEED, "user_data", STRING, 0, 0,		\
	    32768, NONE, NONE)						\
	F(SEED_NETWORK, BOOT_SEED, "network_config", STRING, 0, 0,	\
	    8192, NONE, NONE)						\
	F(SEED_KEYS, BOOT_SEED, "ssh_keys", ARRAY, 0, 0,		\
	    WMSG_SEED_KEYS_MAX, SEED_KEY, NONE)				\
	F(KEY_TEXT, SEED_KEY, "key", STRING, 1, 1, 4096, NONE, NONE)	\
	/* worker.boot's answer: where the kernel came from, the seed */	\
	F(BOOTED_FROM, BOOT_REPLY, "boot_from", OBJECT, 0, 0, 0,	\
	    OPAQUE, NONE)						\
	F(BOOTED_SEED, BOOT_REPLY, "seed_instance_id", STRING, 0, 1,	\
	    255, NONE, NONE)						\
	/* each of worker.boot's disks */				\
	F(DISK_FD, BOOT_DISK, "fd", INT, 1, 3, WMSG_FD_MAX, NONE, NONE)	\
	F(DISK_PATH, BOOT_DISK, "path", STRING, 1, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(DISK_READONLY, BOOT_DISK, "readonly", BOOL, 0, 0, 0, NONE,	\
	    NONE)							\
	F(DISK_SERIAL, BOOT_DISK, "serial", STRING, 0, 0, 20, NONE,	\
	    NONE)							\
	F(DISK_FORMAT, BOOT_DISK, "format", STRING, 0, 1, 16, NONE,	\
	    DISK_FORMAT)						\
	F(DISK_BACKING, BOOT_DISK, "backing", ARRAY, 0, 0,		\
	    WMSG_BACKING_MAX, BACKING, NONE)				\
	/* on the AHCI controller rather than a virtio-blk */		\
	F(DISK_SATA, BOOT_DISK, "sata", BOOL, 0, 0, 0, NONE, NONE)	\
	/* an RBD disk's lock taken from its holder (vm.start's) */	\
	F(DISK_BREAK_LOCK, BOOT_DISK, "break_lock", BOOL, 0, 0, 0,	\
	    NONE, NONE)							\
	/* a qcow2 disk's backing files, from the top */		\
	F(BACKING_FD, BACKING, "fd", INT, 1, 3, WMSG_FD_MAX, NONE, NONE)	\
	F(BACKING_PATH, BACKING, "path", STRING, 1, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(BACKING_FORMAT, BACKING, "format", STRING, 1, 1, 16, NONE,	\
	    DISK_FORMAT)						\
	/* worker.boot's net: a TAP vmmd attached, or passt to start */	\
	F(NET_FD, BOOT_NET, "fd", INT, 0, 3, WMSG_FD_MAX, NONE, NONE)	\
	F(NET_TAP, BOOT_NET, "tap", STRING, 0, 1, 15, NONE, NONE)	\
	F(NET_MAC, BOOT_NET, "mac", STRING, 1, 17, 17, NONE, NONE)	\
	F(NET_USER, BOOT_NET, "user", BOOL, 0, 0, 0, NONE, NONE)	\
	F(NET_PASST, BOOT_NET, "passt", STRING, 0, 1, WMSG_PATH_MAX,	\
	    NONE, NONE)							\
	F(NET_FORWARD, BOOT_NET, "forward", ARRAY, 0, 0,		\
	    WMSG_FORWARDS_MAX, NET_FORWARD, NONE)			\
	/* each of user-mode networking's port forwards */		\
	F(FWD_PROTO, NET_FORWARD, "proto", STRING, 1, 3, 3, NONE,	\
	    FWD_PROTO)							\
	F(FWD_ADDR, NET_FORWARD, "host_addr", STRING, 0, 0, 15, NONE,	\
	    NONE)							\
	F(FWD_HOST_PORT, NET_FORWARD, "host_port", INT, 1, 1024, 65535,	\
	    NONE, NONE)							\
	F(FWD_GUEST_PORT, NET_FORWARD, "guest_port", INT, 1, 1, 65535,	\
	    NONE, NONE)							\
	/* worker.boot's vsock: /dev/vhost-vsock vmmd opened, the CID */\
	F(VSOCK_FD, BOOT_VSOCK, "fd", INT, 1, 3, WMSG_FD_MAX, NONE, NONE)	\
	F(VSOCK_CID, BOOT_VSOCK, "cid", INT, 1, 3, UINT32_MAX - 1, NONE,	\
	    NONE)							\
	/* worker.boot's fs: a shared directory, its tag, and either	\
	 * the directory (a descriptor, virtiofsd to start on it) or	\
	 * a vhost-user socket vmmd connected (socket true) */		\
	F(FS_TAG, BOOT_FS, "tag", STRING, 1, 1, 36, NONE, NONE)	\
	F(FS_FD, BOOT_FS, "fd", INT, 1, 3, WMSG_FD_MAX, NONE, NONE)	\
	F(FS_SOCKET, BOOT_FS, "socket", BOOL, 0, 0, 0, NONE, NONE)	\
	F(FS_READONLY, BOOT_FS, "readonly", BOOL, 0, 0, 0, NONE, NONE)	\
	F(FS_VIRTIOFSD, BOOT_FS, "virtiofsd", STRING, 0, 1,		\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* worker.boot's display */					\
	F(DISPLAY_LISTEN, BOOT_DISPLAY, "listen", STRING, 0, 1, 255,	\
	    NONE, NONE)							\
	F(DISPLAY_PORT, BOOT_DISPLAY, "port", INT, 0, 0, 65535, NONE,	\
	    NONE)							\
	F(DISPLAY_PASSWORD, BOOT_DISPLAY, "password", STRING, 0, 1,	\
	    WMSG_PASSWORD_MAX, NONE, NONE)				\
	F(DISPLAY_WIDTH, BOOT_DISPLAY, "width", INT, 0, 320, 16384,	\
	    NONE, NONE)							\
	F(DISPLAY_HEIGHT, BOOT_DISPLAY, "height", INT, 0, 200, 16384,	\
	    NONE, NONE)							\
	F(DISPLAY_HTTP_PORT, BOOT_DISPLAY, "http_port", INT, 0, 0,	\
	    65535, NONE, NONE)						\
	F(DISPLAY_WEB_DIR, BOOT_DISPLAY, "web_dir", STRING, 0, 1,	\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* worker.shutdown and its answer */				\
	F(SHUTDOWN_TIMEOUT, SHUTDOWN, "timeout", INT, 0, 1, INT32_MAX,	\
	    NONE, NONE)							\
	F(SHUTDOWN_METHOD, SHUTDOWN_REPLY, "method", STRING, 1, 1, 32,	\
	    NONE, NONE)							\
	/* worker.stats: vm.stats's own arguments, passed on */		\
	F(STATS_ENABLE, STATS, "enable", BOOL, 0, 0, 0, NONE, NONE)	\
	F(STATS_RESET, STATS, "reset", BOOL, 0, 0, 0, NONE, NONE)	\
	F(STATS_VCPU, STATS, "vcpu", INT, 0, 0, PROTO_VCPUS_MAX - 1,	\
	    NONE, NONE)							\
	F(STATS_SEGMENTS, STATS, "segments", BOOL, 0, 0, 0, NONE, NONE)	\
	F(STATS_KVM, STATS, "kvm", BOOL, 0, 0, 0, NONE, NONE)		\
	/* worker.console, worker.screenshot: the client's request id */\
	F(CLIENT_ID, CLIENT, "client_id", ANY, 0, 0, 0, NONE, NONE)	\
	/* worker.adopt's answer: what a new supervisor takes on */	\
	F(ADOPT_NAME, ADOPT_REPLY, "name", STRING, 1, 1, 255, NONE,	\
	    NONE)							\
	F(ADOPT_STATE, ADOPT_REPLY, "state", STRING, 1, 1, 16, NONE,	\
	    ADOPT_STATE)						\
	F(ADOPT_PID, ADOPT_REPLY, "pid", INT, 1, 1, INT32_MAX, NONE,	\
	    NONE)							\
	F(ADOPT_UID, ADOPT_REPLY, "uid", INT, 0, 0, UINT32_MAX - 1,	\
	    NONE, NONE)							\
	F(ADOPT_STARTED_MS, ADOPT_REPLY, "started_ms", INT, 0, 0,	\
	    INT64_MAX, NONE, NONE)					\
	F(ADOPT_LOG_START, ADOPT_REPLY, "log_start", INT, 0, 0,	\
	    INT64_MAX, NONE, NONE)					\
	F(ADOPT_VSOCK_CID, ADOPT_REPLY, "vsock_cid", INT, 0, 3,	\
	    UINT32_MAX - 1, NONE, NONE)					\
	F(ADOPT_BOOT_FROM, ADOPT_REPLY, "boot_from", OBJECT, 0, 0, 0,	\
	    OPAQUE, NONE)						\
	F(ADOPT_SEED, ADOPT_REPLY, "seed_instance_id", STRING, 0, 1,	\
	    255, NONE, NONE)						\
	F(ADOPT_DEFINITION, ADOPT_REPLY, "definition", OBJECT, 0, 0, 0,	\
	    OPAQUE, NONE)						\
	/* the events' data */						\
	F(STATE_STATE, STATE_EVENT, "state", STRING, 1, 1, 16, NONE,	\
	    GUEST_STATE)						\
	F(DISPLAY_CLIENTS, DISPLAY_EVENT, "clients", INT, 1, 0,		\
	    INT32_MAX, NONE, NONE)					\
	F(REBOOT_REASON, REBOOT_EVENT, "reason", STRING, 1, 1, 64,	\
	    NONE, NONE)							\
	F(EXIT_STATUS, EXIT_EVENT, "status", INT, 1, 0, 255, NONE, NONE) \
	/* worker.snapshot: run again afterwards (if it ran before) */	\
	F(SNAPSHOT_RESUME, SNAPSHOT, "resume", BOOL, 0, 0, 0, NONE,	\
	    NONE)							\
	/* its answer: the manifest's text, for vmmd to commit */	\
	F(SNAPSHOT_MANIFEST, SNAPSHOT_REPLY, "manifest", STRING, 1, 2,	\
	    PROTO_MAX_LINE, NONE, NONE)					\
	/* worker.media_eject, worker.media_insert: which drive */	\
	F(MEDIA_DEVICE, MEDIA, "device", STRING, 1, 1,			\
	    BOOT_DEV_NAME_MAX - 1, NONE, NONE)				\
	/* even while the guest prevents removal */			\
	F(MEDIA_FORCE, MEDIA, "force", BOOL, 0, 0, 0, NONE, NONE)	\
	/* the inserted image's path, for messages */			\
	F(MEDIA_NAME, MEDIA, "name", STRING, 0, 1, WMSG_PATH_MAX, NONE,	\
	    NONE)							\
	/* worker.balloon: the guest's memory with the balloon's	\
	 * target reached, and how often to ask for statistics (s) */	\
	F(BALLOON_TARGET_MIB, BALLOON, "target_mib", INT, 1, 1,	\
	    PROTO_MEMORY_MIB_MAX, NONE, NONE)				\
	F(BALLOON_STATS_INTERVAL, BALLOON, "stats_interval", INT, 0, 0, \
	    WMSG_BALLOON_INTERVAL_MAX, NONE, NONE)			\
	/* worker.migrate_out: the pause the guest may see, at most */	\
	F(MIGRATE_DOWNTIME_MS, MIGRATE_OUT, "downtime_ms", INT, 0, 1,	\
	    60000, NONE, NONE)				\
	/* worker.disk_push: which disk, and the path of the image	\
	 * that becomes its backing (for vm.info's chain) */		\
	F(DISK_PUSH_DISK, DISK_PUSH, "disk", INT, 1, 0,		\
	    WMSG_DISKS_MAX - 1, NONE, NONE)				\
	F(DISK_PUSH_BACKING, DISK_PUSH, "backing", STRING, 1, 1,	\
	    WMSG_PATH_MAX, NONE, NONE)					\
	/* disk.nbd_redial: which NBD disk lost its server */		\
	F(NBD_REDIAL_DISK, NBD_REDIAL_EVENT, "disk", INT, 1, 0,	\
	    WMSG_DISKS_MAX - 1, NONE, NONE)				\
	/* worker.nbd_fd: which disk the passed connection is for;	\
	 * worker.nbd_refused: which has none, and why */		\
	F(NBD_FD_DISK, NBD_FD, "disk", INT, 1, 0, WMSG_DISKS_MAX - 1,	\
	    NONE, NONE)							\
	F(NBD_FD_ERROR, NBD_FD, "error", STRING, 0, 1, 512, NONE, NONE)

#define WMSG_FIELD_ENUM(id, ...)	WMSG_##id,
enum wmsg_field {
	WMSG_FIELDS(WMSG_FIELD_ENUM)
	WMSG_NFIELDS
};
#undef WMSG_FIELD_ENUM

/* The supervisor's requests. */
enum wmsg_request {
	WMSG_REQ_BOOT,		/* build the guest and run it */
	WMSG_REQ_PAUSE,
	WMSG_REQ_RESUME,
	WMSG_REQ_RESET,		/* a hard reset: a new machine */
	WMSG_REQ_SHUTDOWN,	/* power button, then Ctrl-Alt-Del */
	WMSG_REQ_INFO,		/* vm.info's "stats" */
	WMSG_REQ_STATS,		/* vm.stats */
	WMSG_REQ_CONSOLE,	/* attach the passed client connection */
	WMSG_REQ_DISPLAY,	/* vm.display */
	WMSG_REQ_SCREENSHOT,	/* a PNG onto the passed connection */
	WMSG_REQ_ADOPT,		/* what a new supervisor takes on */
	WMSG_REQ_METRICS,	/* the numbers of a /metrics scrape */
	WMSG_REQ_SNAPSHOT,	/* RAM and state into the two passed files */
	WMSG_REQ_MEDIA_EJECT,	/* a CD-ROM's medium out */
	WMSG_REQ_MEDIA_INSERT,	/* the passed image in */
	WMSG_REQ_MIGRATE_OUT,	/* the guest onto the passed stream */
	WMSG_REQ_DISK_PUSH,	/* a paused guest's disk onto a new top */
	WMSG_REQ_MIGRATE_CANCEL, /* the migration out stops, the guest here */
	WMSG_REQ_NBD_FD,	/* an NBD disk's new connection */
	WMSG_REQ_NBD_REFUSED,	/* none: why */
	WMSG_REQ_BALLOON,	/* the balloon's target */
	WMSG_NREQUESTS
};

struct wmsg_request_def {
	const char *name;		/* "worker.boot" */
	/* How many descriptors come with it: a client connection
	 * (worker.console), a snapshot's two data files. */
	uint8_t takes_fd;
	enum wmsg_shape args;
	enum wmsg_shape reply;
};

/* The worker's events. */
enum wmsg_event {
	WMSG_EV_STATE,			/* "vm.state": running or paused */
	WMSG_EV_DISPLAY_CONNECTED,
	WMSG_EV_DISPLAY_DISCONNECTED,
	WMSG_EV_REBOOT,			/* the guest reset itself */
	WMSG_EV_EXIT,			/* "worker.exit": its last words */
	WMSG_EV_MIGRATION,		/* a live migration's progress */
	WMSG_EV_NBD_REDIAL,		/* an NBD disk needs a connection */
	WMSG_NEVENTS
};

const struct wmsg_request_def *wmsg_request_def(enum wmsg_request r);
/* The request named name, or -ENOENT. */
int wmsg_request_lookup(const char *name);

const char *wmsg_event_name(enum wmsg_event e);
enum wmsg_shape wmsg_event_shape(enum wmsg_event e);
/* The event named name, or -ENOENT. */
int wmsg_event_lookup(const char *name);

/* A field's name on the wire. */
const char *wmsg_name(enum wmsg_field f);

/*
 * Whether o (NULL: an empty object) has shape s: every field of the
 * right type within its bounds, the required ones present, no others,
 * and the same for each nested object.  0, or -EINVAL with err naming
 * the field ("display: port: 70000 is out of range (0..65535)").
 */
int wmsg_check(enum wmsg_shape s, struct json_object *o, char *err,
    size_t errlen);

/*
 * Reading a checked object: a field's value, or dflt when it is absent
 * (or null).  The field must be of the type asked for.
 */
const char *wmsg_str(struct json_object *o, enum wmsg_field f,
    const char *dflt);
int64_t wmsg_int(struct json_object *o, enum wmsg_field f, int64_t dflt);
bool wmsg_bool(struct json_object *o, enum wmsg_field f, bool dflt);
/* An OBJECT, ARRAY or ANY field, borrowed from o, or NULL. */
struct json_object *wmsg_get(struct json_object *o, enum wmsg_field f);

/*
 * Building: add field f to o.  wmsg_put() takes value (NULL: the field
 * is left out); wmsg_put_str() leaves a NULL string out.  0, or -ENOMEM
 * (value is put either way).
 */
int wmsg_put(struct json_object *o, enum wmsg_field f,
    struct json_object *value);
int wmsg_put_str(struct json_object *o, enum wmsg_field f, const char *s);
int wmsg_put_int(struct json_object *o, enum wmsg_field f, int64_t v);
int wmsg_put_bool(struct json_object *o, enum wmsg_field f, bool v);

#endif
