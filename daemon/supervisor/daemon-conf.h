/*
 * vmmd's own configuration: one file of "key = value" lines (see
 * vmmd.conf(5)), whose every setting a command-line option overrides.
 *
 * Like the definitions module this does not log: an error comes back as
 * a negative errno and one line of text ("FILE:LINE: ...") for the
 * caller to report.
 */
#ifndef VMMD_DAEMON_CONF_H
#define VMMD_DAEMON_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <net/if.h>

#define DCONF_SHUTDOWN_TIMEOUT_MAX	3600	/* seconds */
/*
 * How long a worker may take to report its guest running (boot_timeout,
 * seconds) by default; one that reads its kernel and initrd from the
 * guest's disk first (a compressed image, decompressed) may take longer
 * (boot_disk_timeout).  Either may be set from 1 to the maximum.
 */
#define DCONF_BOOT_TIMEOUT		30
#define DCONF_BOOT_DISK_TIMEOUT		120
#define DCONF_BOOT_TIMEOUT_MAX		3600
#define DCONF_LINE_MAX			4096
#define DCONF_CONSOLE_LOG_MAX		(4 * 1024 * 1024)	/* default */
/*
 * The uids workers started as root run as, one per running guest
 * (vmmd.conf(5) worker_uids): above every 16-bit uid (regular users,
 * systemd's dynamic users, nobody), below where useradd(8) begins to
 * hand out subordinate uids (SUB_UID_MIN, 100000) and systemd's
 * container ranges (524288).
 */
#define DCONF_WORKER_UID_FIRST		90000
#define DCONF_WORKER_UID_LAST		99999
/* Past it the signed 32-bit uids end, which some programs need. */
#define DCONF_WORKER_UID_MAX		2147483646u

/*
 * One "tap_allow = GROUP:NAME" line: the members of group gid (by their
 * primary or a supplementary group) may attach their guests to the TAP
 * called name, or to any whose name begins with name when prefix (the
 * line's NAME ended in '*'; "" then is every name).
 */
struct dconf_tap_rule {
	gid_t gid;
	char name[IFNAMSIZ];		/* without the '*' */
	bool prefix;
	char text[IFNAMSIZ + 1];	/* NAME as written, for messages */
};

struct dconf {
	char *socket;			/* control socket */
	char *statedir;			/* definitions, console logs */
	char *kernel;			/* guest of VMs without a kernel */
	unsigned int shutdown_timeout;	/* seconds guests get on SIGTERM */
	unsigned int boot_timeout;	/* seconds to the guest running */
	unsigned int boot_disk_timeout;	/* the same, booting from a disk */
	uint64_t console_log_max;	/* bytes; 0: never rotated */
	struct dconf_tap_rule *tap_rules; /* in file order; none: root only */
	size_t ntap_rules;
	uid_t worker_uid_first;		/* the workers' uids, inclusive */
	uid_t worker_uid_last;
	char *metrics_listen;		/* /metrics over TCP, or NULL: none */
	char *passt;			/* user-mode networking's program */
	char *virtiofsd;		/* shared directories' file server */
	char *bios;			/* "firmware": "bios" VMs' image */
	char *vgabios;			/* their display's ROM */
	char *ovmf_code;		/* "firmware": "uefi" VMs' image */
	char *ovmf_vars;		/* ... and their NVRAM's template */
};

/* Where Debian's passt package puts it. */
#define DCONF_PASST	"/usr/bin/passt"
/* Where Debian's qemu-system-common puts it. */
#define DCONF_VIRTIOFSD	"/usr/lib/qemu/virtiofsd"
/* Debian's seabios package: the image with a 256 KiB layout. */
#define DCONF_BIOS	"/usr/share/seabios/bios-256k.bin"
/* The same package's VGA BIOS for a bochs-display. */
#define DCONF_VGABIOS	"/usr/share/seabios/vgabios-bochs-display.bin"
/* Debian's ovmf package: OVMF's 4 MiB flash, code and variables. */
#define DCONF_OVMF_CODE	"/usr/share/OVMF/OVMF_CODE_4M.fd"
#define DCONF_OVMF_VARS	"/usr/share/OVMF/OVMF_VARS_4M.fd"

/* Fill c with the built-in defaults (paths from the build). */
int	dconf_init(struct dconf *c);
void	dconf_fini(struct dconf *c);

/*
 * Set key to value, as the file's line "key = value" does; an option on
 * the command line calls this after dconf_load().  tap_allow adds a rule
 * each time; a group given by name is looked up here (getgrnam_r(3)).
 */
int	dconf_set(struct dconf *c, const char *key, const char *value,
	    char *err, size_t errlen);

/*
 * Read path.  A file that does not exist is no error unless must_exist
 * (the administrator named it); an unknown key or a bad value is.
 */
int	dconf_load(struct dconf *c, const char *path, bool must_exist,
	    char *err, size_t errlen);

/*
 * Whether name matches rule: equal to its name, or beginning with it
 * for a prefix.
 */
bool	dconf_tap_matches(const struct dconf_tap_rule *rule, const char *name);

#endif
