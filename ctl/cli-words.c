/*
 * vm.create's members and the options of create and run that set them
 * (create-args.c, create-cloud.c), to word the daemon's refusals the
 * way the user wrote the command.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-words.h"

/* Longest first where one member is the start of another's path. */
static const struct {
	const char	*member;	/* as the daemon's message begins */
	const char	*option;
} cli_words_table[] = {
	{ "cloud_init: ssh_keys",	"--ssh-key" },
	{ "cloud_init: user_data",	"--cloud-init" },
	{ "cloud_init",			"--cloud-init" },
	{ "kernel",			"--kernel" },
	{ "initrd",			"--initrd" },
	{ "cmdline",			"--cmdline" },
	{ "memory_mib",			"--memory" },
	{ "vcpus",			"--vcpus" },
	{ "on_reboot",			"--on-reboot" },
	{ "lost_tick_policy",		"--lost-ticks" },
	{ "rtc_slices",			"--rtc-slices" },
	{ "vnc_password",		"--vnc-password-file" },
	{ "vnc_web",			"--vnc-web" },
	{ "vnc",			"--vnc" },
	{ "display",			"--display" },
	{ "rng",			"--rng" },
	{ "balloon",			"--balloon" },
	{ "disks",			"--disk" },
	{ "net",			"--net" },
	{ "vsock",			"--vsock" },
	{ "fs",				"--fs" },
	{ "boot",			"--boot" },
	{ "firmware",			"--firmware" },
	{ "cdrom",			"--cdrom" },
	{ "boot_order",			"--boot-order" },
	{ "boot_menu",			"--boot-menu" },
	{ "name",			"NAME" },
};
#define CLI_WORDS_N	(sizeof(cli_words_table) / sizeof(cli_words_table[0]))

#define CLI_WORDS_DISPLAY	": only with a display: set vnc too"

void
cli_words(char *desc, size_t len)
{
	char out[1024], *rest, *end;
	const char *opt = NULL;
	size_t i, n = 0;
	unsigned long idx;

	for (i = 0; i < CLI_WORDS_N; i++) {
		n = strlen(cli_words_table[i].member);
		if (strncmp(desc, cli_words_table[i].member, n) == 0 &&
		    (desc[n] == ':' || desc[n] == '[')) {
			opt = cli_words_table[i].option;
			break;
		}
	}
	if (opt == NULL)
		return;
	rest = desc + n;

	/* "vnc_web: only with a display: set vnc too" */
	if (strcmp(rest, CLI_WORDS_DISPLAY) == 0) {
		snprintf(out, sizeof(out), "%s needs --vnc", opt);
	} else if (strcmp(opt, "NAME") == 0 && strstr(rest, "must match")) {
		/* The daemon gives a regular expression. */
		snprintf(out, sizeof(out), "NAME: 1 to 64 letters, digits, "
		    "'.', '_' or '-', the first a letter or a digit");
	} else if (*rest == '[') {
		/* "disks[1]: ..." is the second --disk. */
		idx = strtoul(rest + 1, &end, 10);
		if (*end != ']' || idx > 99)
			return;
		snprintf(out, sizeof(out), "%s number %lu%s", opt, idx + 1,
		    end + 1);
	} else
		snprintf(out, sizeof(out), "%s%s", opt, rest);
	snprintf(desc, len, "%s", out);
}
