/*
 * VM definitions (vmconfig.c): validation of a definition object (the
 * arguments of vm.create, and the files under STATEDIR/vms),
 * serialisation, and atomic persistence as one NAME.json file per VM.
 *
 * Not named config.h: that name belongs to the header meson generates
 * (VMMD_VERSION and the install paths), which every directory includes.
 *
 * Like the protocol module this does not log: errors come back as a
 * negative errno plus one line of text for the caller to report.
 */
#ifndef VMMD_VMCONFIG_H
#define VMMD_VMCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "boot-dev.h"

#include "proto.h"

#define CONFIG_NAME_MAX		64
#define CONFIG_NAME_PATTERN	"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
#define CONFIG_CMDLINE_MAX	PROTO_CMDLINE_MAX
#define CONFIG_MEMORY_MIN	PROTO_MEMORY_MIB_MIN	/* MiB */
#define CONFIG_MEMORY_MAX	PROTO_MEMORY_MIB_MAX
#define CONFIG_MEMORY_DEFAULT	256
#define CONFIG_VCPUS_MIN	1
#define CONFIG_VCPUS_MAX	PROTO_VCPUS_MAX
#define CONFIG_VCPUS_DEFAULT	1
#define CONFIG_FILE_MAX		(1024 * 1024)	/* a definition file */

/* The display (vnc, display, vnc_password, vnc_web). */
#define CONFIG_VNC_ADDR_DEFAULT	"127.0.0.1"
#define CONFIG_VNC_PORT_BASE	5900	/* display N listens on 5900 + N */
#define CONFIG_VNC_HTTP_BASE	5800	/* and serves noVNC on 5800 + N */
#define CONFIG_VNC_DISPLAY_AUTO	(-1)	/* the first free port */
#define CONFIG_VNC_DISPLAY_MAX	(65535 - CONFIG_VNC_PORT_BASE)
#define CONFIG_VNC_PASSWORD_MAX	8	/* bytes: VNC's DES key */
#define CONFIG_DISPLAY_WIDTH_MIN	320
#define CONFIG_DISPLAY_WIDTH_MAX	4096
#define CONFIG_DISPLAY_HEIGHT_MIN	200
#define CONFIG_DISPLAY_HEIGHT_MAX	2160
#define CONFIG_DISPLAY_WIDTH_DEFAULT	1024
#define CONFIG_DISPLAY_HEIGHT_DEFAULT	768

/*
 * The RTC's periodic ticks that could not be delivered (lost_tick_policy,
 * rtc_backlog_max, rtc_slices): reinjected (slew) or only counted
 * (discard).
 */
enum vm_lost_ticks {
	VM_LOST_TICKS_SLEW,
	VM_LOST_TICKS_DISCARD,
};
#define CONFIG_RTC_BACKLOG_MIN	1	/* ticks */
#define CONFIG_RTC_BACKLOG_MAX	65536
/* Reinjection divides a tick period into at most this many slices. */
#define CONFIG_RTC_SLICES_MIN	2
#define CONFIG_RTC_SLICES_MAX	32

/* Disks: virtio-blk on raw image files. */
#define CONFIG_DISKS_MAX	4
#define CONFIG_SERIAL_MAX	20	/* bytes: virtio-blk's ID */

/* The network: virtio-net on a TAP interface. */
#define CONFIG_TAP_NAME_MAX	15	/* bytes: IFNAMSIZ - 1 */
/*
 * Network cards a VM may have: "net" is one card's object or an array
 * of at most this many (worker-msg.h's WMSG_NICS_MAX, the board's).
 */
#define CONFIG_NICS_MAX		4
/* User-mode networking's port forwards, at most. */
#define CONFIG_FORWARDS_MAX	16

/*
 * "PROTO:HOSTADDR:HOSTPORT:GUESTPORT": connections to HOSTADDR (an IPv4
 * address, or empty for all) at HOSTPORT on the host reach the guest's
 * GUESTPORT.
 */
struct vm_forward {
	bool udp;			/* else tcp */
	char addr[16];			/* dotted quad, or "" */
	uint16_t host_port;		/* 1024 and up: passt runs unprivileged */
	uint16_t guest_port;
};

/* A guest's vsock address: 2 is the host's, 0, 1 and 2^32 - 1 reserved. */
#define CONFIG_VSOCK_CID_MIN	3
#define CONFIG_VSOCK_CID_MAX	4294967294LL

/*
 * What a disk's image is taken for ("format").  One given without a
 * format is taken for what its header shows at vm.create, which records
 * it (vm_files_record_formats()): a guest can write its raw disk's
 * header, so a start goes by the record, not by the header.  An image
 * whose header is another format's (disk-format.h), which the guest
 * would read as data and overwrite, is refused.
 */
enum vm_disk_format {
	/* no "format": raw or qcow2 by its header; after vm.create, only in
	 * a definition from an older vmmd (no backing file then) */
	VM_DISK_FORMAT_PROBED,
	VM_DISK_FORMAT_RAW,	/* "raw": raw, whatever it begins with */
	VM_DISK_FORMAT_QCOW2,	/* "qcow2": must be one */
};

struct vm_disk {
	/*
	 * Absolute; or, nbd set, an NBD server's address (nbd-addr.h),
	 * which the supervisor connects at start with the rights of the
	 * client starting the VM: format raw, never backing or overlay.
	 */
	char *path;
	bool nbd;
	/*
	 * path an RBD image (rbd-spec.h): the worker connects to the
	 * cluster, with the configuration and keyring the supervisor read
	 * for the client starting the VM; format raw, never backing or
	 * overlay.
	 */
	bool rbd;
	bool readonly;
	char *serial;		/* printable ASCII, or NULL */
	enum vm_disk_format format;
	/*
	 * A qcow2 image may name a backing file; it is opened (with the
	 * rights of the client starting the VM) only when the definition
	 * says so: the name comes from inside the image.
	 */
	bool backing;
	/*
	 * A thin clone: the guest sees a qcow2 overlay of the daemon's
	 * (disk-overlay.h) over path, its base, which is only read.  The
	 * base's own backing chain is opened as if "backing" were given:
	 * the client named the base.  Never readonly.
	 */
	bool overlay;
	/* "bus": "sata": on the AHCI controller, else a virtio-blk. */
	bool sata;
};

/* The format's name in definitions ("raw", "qcow2"), NULL if probed. */
const char *config_disk_format_name(enum vm_disk_format f);

/* Supplementary groups kept of a VM's owner. */
#define CONFIG_OWNER_GROUPS_MAX	64

/*
 * Who created a VM: the client's uid, primary group and supplementary
 * groups at vm.create.  Whenever no client asks (autostart), the VM's
 * files are opened with these rights; a definition without one (made
 * before owners were recorded) opens only files root owns.
 */
struct vm_owner {
	bool known;
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[CONFIG_OWNER_GROUPS_MAX];
};

enum vm_on_reboot {
	VM_ON_REBOOT_RESTART,
	VM_ON_REBOOT_STOP,
};

/*
 * Where the kernel comes from ("boot"): a file on the host (the
 * definition's kernel, or the daemon's default guest), or the first
 * disk, chosen as its own boot loader would (vmmd-vm(5)).  Unset: from
 * the disk when there is one and no kernel is given.
 */
enum vm_boot {
	VM_BOOT_UNSET,
	VM_BOOT_KERNEL,
	VM_BOOT_DISK,
	VM_BOOT_FIRMWARE,	/* never given: what "firmware" makes it */
};

/*
 * Firmware the guest runs from power-on ("firmware"), instead of vmmd
 * loading a kernel: "bios" is SeaBIOS, "uefi" OVMF with the VM's own
 * UEFI variables (an NVRAM file kept with the VM, made from the
 * template), the files vmmd.conf(5) names.
 */
enum vm_firmware {
	VM_FIRMWARE_NONE,
	VM_FIRMWARE_BIOS,
	VM_FIRMWARE_UEFI,
};

/* cloud-init's NoCloud seed ("cloud_init"): bounds of what it holds. */
#define CONFIG_USER_DATA_MAX	(32 * 1024)	/* bytes */
#define CONFIG_SSH_KEYS_MAX	16
#define CONFIG_SSH_KEY_MAX	4096		/* bytes, one key */
#define CONFIG_NETWORK_CONFIG_MAX (8 * 1024)

struct vm_cloud_init {
	bool on;		/* the VM has a seed */
	char *user_data;	/* the user's file, or NULL */
	char *ssh_keys[CONFIG_SSH_KEYS_MAX];
	unsigned int nkeys;
	char *network_config;	/* or NULL */
};

/*
 * One network card: a TAP (tap, its name) or user-mode networking
 * (user, tap ""): passt, with these host ports forwarded to the
 * guest's; and the guest's MAC, given or made (config_net_mac()).
 */
struct vm_nic {
	char tap[CONFIG_TAP_NAME_MAX + 1];
	bool has_mac;
	uint8_t mac[6];
	bool user;
	struct vm_forward forward[CONFIG_FORWARDS_MAX];
	unsigned int nforward;
};

struct vm_def {
	char *name;
	/*
	 * The VM's UUID (RFC 4122 order), what firmware shows the guest
	 * (SMBIOS): given at creation or made then (config_uuid_new()),
	 * kept for the VM's life; a clone gets its own.  Only a definition
	 * stored before UUIDs existed lacks one, until it is loaded.
	 */
	bool has_uuid;
	uint8_t uuid[16];
	char *kernel;		/* absolute path; NULL = the default guest */
	char *initrd;		/* absolute path or NULL */
	char *cmdline;		/* never NULL ("" by default) */
	unsigned int memory_mib;
	unsigned int vcpus;
	enum vm_on_reboot on_reboot;
	bool transient;
	bool rng;		/* a virtio entropy device */
	bool balloon;		/* a virtio memory balloon */
	struct vm_disk disks[CONFIG_DISKS_MAX];
	unsigned int ndisks;
	/* The network cards, in order: card 0 is the first virtio-net. */
	struct vm_nic nics[CONFIG_NICS_MAX];
	unsigned int nnics;
	/*
	 * virtio-vsock: the guest's CID (0: the lowest free one at each
	 * start), and a Unix socket for it beside the control socket.
	 */
	bool vsock;
	uint32_t vsock_cid;
	bool vsock_socket;
	/*
	 * A shared directory (virtio-fs) when fs_tag is set: the tag the
	 * guest mounts it by, and either fs_dir (virtiofsd started on it,
	 * read-only with fs_readonly) or fs_socket (a vhost-user file
	 * server the user runs).
	 */
	char *fs_tag;
	char *fs_dir;
	char *fs_socket;
	bool fs_readonly;
	enum vm_boot boot;	/* as given; config_boot() says which */
	enum vm_firmware firmware;	/* no kernel, initrd, cmdline, boot */
	/* An ISO image as a read-only CD-ROM on AHCI ("cdrom"); NULL: none. */
	char *cdrom;
	/*
	 * With firmware: the devices it tries first, in order
	 * ("boot_order", boot-dev.h's names; none: the CD-ROM, then the
	 * firmware's own order), and its boot menu ("boot_menu": shown,
	 * waiting boot_menu_ms for a key, when boot_menu).
	 */
	struct boot_dev boot_order[BOOT_ORDER_MAX];
	unsigned int nboot_order;
	bool boot_menu;
	unsigned int boot_menu_ms;
	struct vm_cloud_init cloud_init;
	bool autostart;		/* started when vmmd starts */
	/*
	 * "managed": "cluster": a cluster manager (Pacemaker, through the
	 * ocf:vmmd:vm agent) decides where and when the VM runs; vmmd never
	 * starts it on its own, so it can never have autostart.
	 */
	bool cluster;
	struct vm_owner owner;
	enum vm_lost_ticks lost_ticks;
	unsigned int rtc_backlog_max;	/* 0: the worker's default */
	unsigned int rtc_slices;	/* 0: the worker's default (32) */

	/*
	 * The display.  vnc_addr is NULL when the VM has none; then the
	 * members below it are unset (0, NULL, false).  vnc_addr is an
	 * IPv4 or IPv6 literal (without brackets) or "localhost".
	 */
	char *vnc_addr;
	int vnc_display;	/* N (port 5900 + N), or ..._DISPLAY_AUTO */
	unsigned int width;	/* pixels */
	unsigned int height;
	/*
	 * Viewers' password: vnc_password (1..8 bytes, never logged) when
	 * the definition gives one; else none with vnc_no_password
	 * ("vnc_password": false), else one generated at each start (the
	 * default).
	 */
	char *vnc_password;
	bool vnc_no_password;
	bool vnc_web;		/* also serve noVNC over HTTP */
};

/* A new random (version 4) UUID for def: 0, or -errno (getrandom). */
int config_uuid_new(struct vm_def *def);

/* Where def's kernel comes from, "boot" unset resolved. */
enum vm_boot config_boot(const struct vm_def *def);
/* "bios" or "uefi", as the definition says; NULL: no firmware. */
const char *config_firmware_name(const struct vm_def *def);

/* Flags of config_parse(). */
#define CONFIG_CHECK_FILES	0x1	/* kernel/initrd must exist and load */
/*
 * Take "owner" as it is: only for the daemon's own stored definitions.
 * Without it "owner" is accepted and ignored (a client's or a worker's
 * word on who owns a VM counts for nothing).
 */
#define CONFIG_OWNER		0x2

/*
 * Validate obj (a JSON object) as a definition and fill in defaults.
 * Returns 0 with *defp set, or -EINVAL with err describing the first
 * problem ("memory_mib: 8 is out of range (16..262144)").  Without
 * CONFIG_CHECK_FILES only the form of the paths is checked, so that a
 * definition whose kernel went away still loads.
 */
int	config_parse(struct json_object *obj, unsigned int flags,
	    struct vm_def **defp, char *err, size_t errlen);
void	config_def_free(struct vm_def *def);
struct vm_def *config_def_dup(const struct vm_def *def);

/* Flags of config_to_json(). */
#define CONFIG_JSON_SECRETS	0x1	/* vnc_password, user_data as they are */

/*
 * The definition as a JSON object.  With CONFIG_JSON_SECRETS it is what
 * config_parse() accepts back (the stored file); without, it is what
 * clients are shown: "vnc_password" is true (viewers need a password)
 * or false, never the value; cloud-init's user-data as its size and
 * SHA-256, never its text.
 */
struct json_object *config_to_json(const struct vm_def *def,
    unsigned int flags);

/*
 * The "vnc" member as config_parse() reads it back ("127.0.0.1:0",
 * "[::1]:auto"), into buf; "" when the VM has no display.
 */
void	config_vnc_string(const struct vm_def *def, char *buf, size_t len);

/* The "disks" member: [{"path": ..., "readonly": ..., "serial": ...,
 * "format": "raw", "backing": true, "overlay": true}], format, backing
 * and overlay only when given. */
struct json_object *config_disks_json(const struct vm_def *def);
/*
 * Card i's MAC: the definition's, or one made: card 0's from the VM's
 * name (the same name, the same address), locally administered and
 * unicast; card i's from card 0's, its last byte plus i.
 */
void config_net_mac(const struct vm_def *def, unsigned int i,
	    uint8_t mac[6]);
/* Card i's MAC as text, xx:xx:xx:xx:xx:xx. */
void	config_net_mac_text(const struct vm_def *def, unsigned int i,
	    char buf[18]);
/*
 * "net" as vm.info and the definition file show it: one card's object
 * {"tap", "mac"} or {"user", "forward", "mac"} (as readers from before
 * more cards expect), an array of them for more cards.
 */
struct json_object *config_net_json(const struct vm_def *def);
/* A forward as its definition writes it: "tcp:127.0.0.1:2222:22". */
void	config_forward_text(const struct vm_forward *f, char *buf, size_t len);
/* "fs" as config_to_json() writes it. */
struct json_object *config_fs_json(const struct vm_def *def);
/* "vsock" as config_to_json() writes it. */
struct json_object *config_vsock_json(const struct vm_def *def);


const char *config_on_reboot_name(enum vm_on_reboot r);
/* "slew" or "discard", as lost_tick_policy says it. */
const char *config_lost_ticks_name(enum vm_lost_ticks l);

/*
 * The members a definition may have (parent NULL), or an object member
 * of it ("disks", "net", "vsock", "cloud_init", "owner"): the
 * NULL-terminated table config_parse() checks with, so that a test can
 * hold the manuals to it; NULL for any other parent.
 */
const char *const *config_members(const char *parent);

/* Whether name matches CONFIG_NAME_PATTERN. */
bool	config_name_valid(const char *name);

/*
 * Check that path is an absolute path to a readable regular file (and
 * for a kernel, that boot_probe() accepts it).  what ("kernel") starts
 * the error text: "kernel: /x: No such file or directory".
 */
int	config_check_file(const char *what, const char *path, bool kernel,
	    char *err, size_t errlen);

/* The definitions' files (vmconfig-store.c), for every user of these. */
#include "vmconfig-store.h"

#endif
