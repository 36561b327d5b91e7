/* The options of create and run (create-options.h). */
#include "create-cloud.h"
#include "create-options.h"
#include "vmctl.h"

const struct option create_options[] = {
	CTL_COMMON_LONGOPTS,
	{ "kernel",	required_argument,	NULL,	'k' },
	{ "initrd",	required_argument,	NULL,	'i' },
	{ "cmdline",	required_argument,	NULL,	'c' },
	{ "memory",	required_argument,	NULL,	'm' },
	{ "vcpus",	required_argument,	NULL,	'n' },
	{ "on-reboot",	required_argument,	NULL,	'r' },
	{ "lost-tick-policy", required_argument, NULL,	'L' },
	/* Its older name, which scripts may use. */
	{ "lost-ticks",	required_argument,	NULL,	'L' },
	{ "rtc-slices",	required_argument,	NULL,	'S' },
	{ "vnc",	required_argument,	NULL,	'V' },
	{ "display",	required_argument,	NULL,	'D' },
	{ "vnc-password-file", required_argument, NULL,	'P' },
	{ "vnc-no-password", no_argument,	NULL,	'O' },
	{ "vnc-web",	no_argument,		NULL,	'W' },
	{ "rng",	no_argument,		NULL,	'R' },
	{ "balloon",	no_argument,		NULL,	'A' },
	{ "disk",	required_argument,	NULL,	'd' },
	{ "net",	required_argument,	NULL,	'N' },
	{ "vsock",	required_argument,	NULL,	'K' },
	{ "fs",		required_argument,	NULL,	'Z' },
	{ "boot",	required_argument,	NULL,	CREATE_CLOUD_BOOT },
	{ "firmware",	required_argument,	NULL,	'f' },
	{ "cdrom",	required_argument,	NULL,	'C' },
	{ "boot-order",	required_argument,	NULL,	'b' },
	{ "boot-menu",	optional_argument,	NULL,	'M' },
	{ "cloud-init",	required_argument,	NULL,	CREATE_CLOUD_INIT },
	{ "ssh-key",	required_argument,	NULL,	CREATE_CLOUD_SSH_KEY },
	{ "from-file",	required_argument,	NULL,	'F' },
	{ "managed",	required_argument,	NULL,	'G' },
	{ NULL, 0, NULL, 0 },
};
