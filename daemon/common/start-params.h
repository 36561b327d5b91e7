/*
 * What a guest is started with: the one type that carries worker.boot's
 * arguments from the supervisor, which fills it from the definition and
 * the files it opened (supervisor/vm-start.c), to the worker, which
 * builds the guest from it (worker/requests.c).  On the link it travels
 * as worker.boot's arguments, in worker-msg.h's vocabulary: that table
 * stays the shape check, this type is what both sides read and write.
 *
 * A start_params owns what it points to (its strings, its reference to
 * the definition); start_params_free() releases them and wipes the
 * display password.  Descriptors are numbers the worker inherits, not
 * owned here.  Absent optional parts are NULL strings, false has_*
 * flags, zero counts; the defaults the worker applies are said by each
 * field.
 */
#ifndef VMMD_START_PARAMS_H
#define VMMD_START_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "boot-dev.h"
#include "worker-msg.h"

enum start_format {
	START_FORMAT_RAW,
	START_FORMAT_QCOW2,
	/* the descriptor a connected NBD server, the path its address
	 * (nbd-addr.h, the export's name from it); a disk's top only */
	START_FORMAT_NBD,
	/* the descriptor the cluster's configuration and keyring (a
	 * memory file, supervisor/rbd-conf.h), the path the image
	 * (rbd-spec.h); a disk's top only */
	START_FORMAT_RBD,
};

/* One image of a disk's chain: the descriptor the worker inherits. */
struct start_image {
	int fd;
	char *path;			/* for messages */
	enum start_format format;
};

struct start_disk {
	struct start_image top;		/* an overlay disk's overlay */
	bool readonly;
	/* An RBD disk: its exclusive lock taken from the holder, who is
	 * blocklisted (vm.start's break_lock). */
	bool break_lock;
	bool sata;			/* on AHCI, not a virtio-blk */
	char *serial;			/* NULL: none */
	struct start_image backing[WMSG_BACKING_MAX];	/* from the top */
	unsigned int nbacking;
};

/* One of user-mode networking's port forwards. */
struct start_forward {
	bool udp;
	char addr[16];			/* "": every address */
	uint16_t host_port;
	uint16_t guest_port;
};

/* A network card: a TAP the supervisor attached, or passt to start. */
struct start_nic {
	uint8_t mac[6];			/* unicast */
	bool user;
	int tap_fd;			/* !user: the TAP's descriptor */
	char tap[16];			/* !user: its name, for messages */
	char *passt;			/* user: the program */
	struct start_forward forward[WMSG_FORWARDS_MAX];	/* user */
	unsigned int nforward;
};

struct start_vsock {
	int fd;				/* /dev/vhost-vsock */
	uint32_t cid;
};

/* A shared directory (virtio-fs). */
struct start_fs {
	char tag[37];			/* 1 to 36 bytes */
	int fd;				/* the directory, or with socket the
					   vhost-user socket vmmd connected */
	bool socket;
	bool readonly;			/* the directory's */
	char *virtiofsd;		/* !socket: the program */
};

/*
 * The screen and its VNC server.  port and http_port 0: the first free
 * one; no web_dir: no noVNC (http_port is then left out).
 */
struct start_display {
	char *listen;			/* a literal address; NULL: loopback */
	int port;
	char password[WMSG_PASSWORD_MAX + 1];	/* "": none */
	uint32_t width;			/* absent on the link: 1024 */
	uint32_t height;		/* absent on the link: 768 */
	int http_port;
	char *web_dir;
};

/* The kernel from a disk's own boot configuration (cloud-boot.h). */
struct start_boot_disk {
	unsigned int disk;		/* < the start's ndisks */
	char *append;			/* to its command line; NULL: none */
};

/* cloud-init's seed, made as a disk after the others. */
struct start_seed {
	char *hostname;
	char *user_data;		/* NULL: none */
	char *network_config;		/* NULL: none */
	char *ssh_keys[WMSG_SEED_KEYS_MAX];
	unsigned int nkeys;
};

enum start_on_reboot {
	START_REBOOT_RESTART,
	START_REBOOT_STOP,
};

enum start_lost_ticks {
	START_TICKS_SLEW,
	START_TICKS_DISCARD,
};

struct start_params {
	char *name;
	/*
	 * Exactly one of kernel (a file, /proc/self/fd/N), boot_disk and
	 * firmware (a BIOS image, /proc/self/fd/N, in the kernel's
	 * descriptor slot).
	 */
	char *kernel;
	char *kernel_name;		/* the user's path, for messages */
	char *firmware;
	char *firmware_name;		/* its path, for messages */
	/*
	 * With firmware and a display: the display's VGA BIOS
	 * (/proc/self/fd/N, in the initrd's slot), or NULL: none.
	 */
	char *vgabios;
	char *initrd;			/* NULL: none */
	char *initrd_name;
	char *cmdline;			/* NULL: none ("") */
	bool has_boot_disk;
	struct start_boot_disk boot_disk;
	uint64_t memory_mib;
	unsigned int vcpus;
	bool has_uuid;			/* the VM's UUID, RFC 4122 order */
	uint8_t uuid[16];
	enum start_on_reboot on_reboot;
	/* The RTC's: 0 is the device's own default (rtc.h). */
	enum start_lost_ticks lost_ticks;
	unsigned int rtc_backlog_max;
	unsigned int rtc_slices;
	bool rng;
	bool balloon;			/* a virtio-balloon */
	char *console_log;		/* NULL: none */
	int64_t console_log_max;	/* bytes, 0: never rotated */
	int adopt_fd;			/* -1: none (the guest ends with us) */
	int kvm_fd;			/* -1: the worker opens /dev/kvm */
	/* A CD-ROM: the image's descriptor (read-only), -1: none. */
	int cdrom_fd;
	char *cdrom_name;		/* its path, for messages */
	/*
	 * With firmware: the devices it boots first, in order (none: its
	 * default), and its boot menu's wait in ms (-1: no menu).
	 */
	struct boot_dev boot_order[BOOT_ORDER_MAX];
	unsigned int nboot_order;
	int boot_menu_ms;
	/* OVMF's variables: the NVRAM file's descriptor, -1: none. */
	int nvram_fd;
	char *nvram_name;		/* its path, for messages */
	/*
	 * A snapshot the guest starts from (vm.restore): its manifest,
	 * memory and state files (read-only), all three or none (-1).
	 */
	int snap_fd[3];
	char *snap_name;		/* its directory, for messages */
	/*
	 * A live migration's stream (vm.migrate_in): the guest's RAM and
	 * state arrive there before it runs (worker/migrate-in.c); -1:
	 * none.
	 */
	int migrate_fd;
	int64_t log_start;		/* the run's start in the console log */
	int64_t started_ms;		/* CLOCK_REALTIME; -1: not said */
	int64_t request_ns;		/* CLOCK_MONOTONIC: vm.start came */
	int64_t spawn_ns;		/* the worker was spawned */
	struct json_object *definition;	/* a reference; NULL: none */
	struct start_disk disks[WMSG_DISKS_MAX];
	unsigned int ndisks;
	struct start_nic nics[WMSG_NICS_MAX];
	unsigned int nnics;
	bool has_display;
	struct start_display display;
	bool has_vsock;
	struct start_vsock vsock;
	bool has_fs;
	struct start_fs fs;
	bool has_seed;
	struct start_seed seed;
};

/* An empty start: no parts, every descriptor -1, started_ms -1. */
void	start_params_init(struct start_params *sp);
/* Release what sp owns; sp is left as start_params_init() makes it. */
void	start_params_free(struct start_params *sp);

/*
 * A copy of s into *dst (NULL stays NULL), freeing what *dst held.  0
 * or -ENOMEM.  The fillers' way to give sp its strings.
 */
int	start_params_set(char **dst, const char *s);

/*
 * worker.boot's arguments for sp, in worker-msg.h's vocabulary, into
 * *out (a new object).  The same start always gives the same bytes: the
 * fields in one order, the optional ones only when set.  0 or -ENOMEM.
 */
int	start_params_encode(const struct start_params *sp,
	    struct json_object **out);

/*
 * sp from worker.boot's arguments o (NULL: {}): their shape checked
 * first (wmsg_check(WMSG_S_BOOT)), then what the shape cannot say: one
 * of a kernel and a boot disk, a boot disk that exists, a unicast MAC,
 * a TAP card with both its descriptor and its name.  0, or -EINVAL with
 * err saying why (sp then empty), or -ENOMEM.
 */
int	start_params_decode(struct json_object *o, struct start_params *sp,
	    char *err, size_t errlen);

#endif
