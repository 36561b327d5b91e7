/*
 * vmctl: global options and the command table.  Each command parses its
 * own arguments (cmd-*.c) with the helpers of ctl.c; the protocol side
 * is in client.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto.h"
#include "vmctl.h"

static int	cmd_help(struct ctl *, int, char **);

#define CTL_CREATE_HELP							\
	"\n  --from-file FILE    start from the definition in FILE (vmctl "	\
	"export's);\n"							\
	"                      NAME may be left out, other options "	\
	"change it\n"							\
	"  --managed cluster|vmmd\n"					\
	"                      cluster: a cluster manager starts and stops "	\
	"it, never\n"							\
	"                      vmmd on its own (no autostart); vmmd: the "	\
	"default\n"							\
	"  --kernel FILE       bzImage or PVH ELF kernel (default: the "	\
	"daemon's guest)\n"						\
	"  --initrd FILE       initial RAM disk\n"				\
	"  --cmdline STR       kernel command line\n"			\
	"  --memory SIZE       RAM in MiB, or with M, MiB, G, GiB "		\
	"(default 256M)\n"						\
	"  --vcpus N           number of vCPUs (default 1)\n"		\
	"  --on-reboot ACTION  restart (default) or stop when the guest "	\
	"reboots\n"							\
	"  --lost-tick-policy POLICY\n"					\
	"                      RTC ticks the guest missed: slew (default,\n" \
	"                      reinjected) or discard (--lost-ticks: the "	\
	"same)\n"							\
	"  --rtc-slices N      reinject them up to N times a tick period, "	\
	"2-32\n"								\
	"                      (default 32)\n"					\
	"  --vnc ADDR:N|auto   a screen, over VNC on port 5900+N of ADDR "	\
	"(auto:\n"							\
	"                      127.0.0.1, first free port)\n"		\
	"  --display WxH       its size (default 1024x768)\n"		\
	"  --vnc-password-file FILE\n"					\
	"                      viewers must give the password in FILE "	\
	"(1-8 bytes;\n"							\
	"                      default: one made at each start, see "	\
	"display)\n"							\
	"  --vnc-no-password   viewers need none (anyone who reaches "	\
	"the port)\n"							\
	"  --vnc-web           also serve the noVNC browser client\n"	\
	"  --rng               a virtio entropy device (/dev/hwrng)\n"	\
	"  --balloon           a virtio memory balloon (vmctl balloon)\n"	\
	"  --disk PATH[,readonly][,serial=ID][,format=raw|qcow2][,backing]" \
	"[,overlay]\n"							\
	"      [,bus=virtio|sata]\n"						\
	"                      a virtio disk on a raw or qcow2 image "	\
	"(repeatable, up to 4;\n"					\
	"                      format=raw: raw even if its header looks "	\
	"like qcow2's;\n"						\
	"                      backing: open the backing file a qcow2 "	\
	"image names;\n"						\
	"                      overlay: the guest writes to an overlay of "	\
	"vmmd's over\n"							\
	"                      PATH, which is only read: see reset-disk;\n"	\
	"                      bus=sata: a SATA disk on AHCI instead;\n"	\
	"                      PATH nbd:unix:SOCKET[:EXPORT] or "		\
	"nbd://HOST[:PORT]/EXPORT:\n"					\
	"                      an NBD server's export, no format or "	\
	"overlay;\n"							\
	"                      PATH rbd:POOL/IMAGE[,conf=FILE][,id=CLIENT]"	\
	"[,keyring=FILE]\n"						\
	"                      [,snap=SNAP][,lock=off]: a Ceph RBD image, "	\
	"locked at start)\n"						\
	"  --net tap=NAME[,mac=MAC]\n"					\
	"                      a virtio NIC on the TAP NAME (attached, or "	\
	"created)\n"							\
	"  --net user[,forward=PROTO:HOSTADDR:HOSTPORT:GUESTPORT]...[,mac=MAC]\n" \
	"                      a virtio NIC on user-mode networking "	\
	"(passt: DHCP,\n"						\
	"                      DNS, NAT; no root, nothing set up on the "	\
	"host), HOSTPORT\n"						\
	"                      of HOSTADDR (empty: all) forwarded to the "	\
	"guest's\n"							\
	"                      GUESTPORT (tcp:127.0.0.1:2222:22)\n"		\
	"  --vsock auto|CID[,socket]\n"					\
	"                      a virtio-vsock with the guest address CID "	\
	"(auto: the\n"							\
	"                      lowest free one at each start); socket: "	\
	"also a Unix\n"							\
	"                      socket for it, see vmmd(8)\n"			\
	"  --fs TAG=DIR[,readonly] or --fs TAG=socket:PATH\n"		\
	"                      the host directory DIR shared with the guest "	\
	"(virtio-fs,\n"							\
	"                      served by a virtiofsd vmmd starts), or the "	\
	"share of the\n"							\
	"                      vhost-user server on the Unix socket PATH; "	\
	"the guest\n"							\
	"                      mounts it with mount -t virtiofs TAG DIR\n"	\
	"  --boot disk|kernel  where the kernel comes from: the first "	\
	"disk, chosen as\n"						\
	"                      its boot loader would (the default with a "	\
	"disk and no\n"							\
	"                      --kernel), or --kernel (or the daemon's "	\
	"default guest)\n"						\
	"  --firmware bios|uefi\n"						\
	"                      run SeaBIOS (bios) or OVMF (uefi, with UEFI "	\
	"variables\n"							\
	"                      kept with the VM) from power-on, which boot "	\
	"from\n"								\
	"                      the disks, instead of loading a kernel\n"	\
	"  --cdrom ISO         the image as a read-only CD-ROM (SATA), "	\
	"which the\n"							\
	"                      firmware boots first\n"			\
	"  --boot-order LIST   with firmware: the devices it boots first, "	\
	"in order:\n"							\
	"                      cdrom0, diskN, netN (the definition's "	\
	"order), e.g.\n"							\
	"                      disk0,cdrom0\n"					\
	"  --boot-menu[=MS]    with firmware: offer its boot menu, waiting "	\
	"MS\n"								\
	"                      milliseconds for a key (2500)\n"		\
	"  --cloud-init FILE   cloud-init's user-data, in a NoCloud seed "	\
	"vmmd makes\n"							\
	"  --ssh-key FILE      public keys (.pub, authorized_keys) for the "	\
	"image's\n"							\
	"                      default user, in the same seed "		\
	"(repeatable)\n"						\
	"\nRelative paths are made absolute before they are sent.\n"

#define CTL_CONSOLE_HELP						\
	"\nOn a terminal, Ctrl-] detaches.  Otherwise stdin is sent as it "	\
	"is and the\n"							\
	"output copied until the VM stops, even after the end of stdin.\n"

static const struct ctl_command ctl_commands[] = {
	{ "create", cmd_create,
	    "NAME [--from-file FILE] [--managed cluster|vmmd] "
	    "[--kernel FILE] [--initrd FILE] "
	    "[--cmdline STR] "
	    "[--memory SIZE] [--vcpus N] [--on-reboot restart|stop] "
	    "[--lost-tick-policy slew|discard] [--rtc-slices N] "
	    "[--vnc ADDR:N|auto] [--display WxH] [--vnc-password-file FILE] "
	    "[--vnc-no-password] [--vnc-web] [--rng] [--balloon] "
	    "[--disk PATH[,readonly][,serial=ID][,format=raw|qcow2][,backing]"
	    "[,overlay][,bus=virtio|sata]]"
	    "... "
	    "[--net tap=NAME[,mac=MAC]|user[,forward=SPEC]...[,mac=MAC]] "
	    "[--vsock auto|CID[,socket]] "
	    "[--fs TAG=DIR[,readonly]|TAG=socket:PATH] [--boot disk|kernel] "
	    "[--firmware bios|uefi] [--cdrom ISO] [--boot-order LIST] "
	    "[--boot-menu[=MS]] [--cloud-init FILE] "
	    "[--ssh-key FILE]...",
	    "define a VM", CTL_CREATE_HELP },
	{ "start", cmd_start, "NAME... [--console] [--break-lock]",
	    "start VMs, and attach the console of one with --console",
	    "\nA VM that runs already is left as it is: a note, exit "
	    "status 0.\n"
	    "--break-lock: an RBD disk whose exclusive lock another host's "
	    "guest holds\nis taken over, that client blocklisted: only when "
	    "that host is known dead.\n"
	    CTL_CONSOLE_HELP },
	{ "stop", cmd_stop, "NAME... [--force] [--timeout SECONDS]",
	    "shut VMs down",
	    "\nA VM that is not running is left as it is: a note, exit "
	    "status 0.\n"
	    "\n  --force            kill it now instead of asking the guest\n"
	    "  --timeout SECONDS  kill it if the guest has not shut down by "
	    "then\n"
	    "                     (default 30)\n" },
	{ "pause", cmd_pause, "NAME", "pause a running VM", NULL },
	{ "resume", cmd_resume, "NAME", "resume a paused VM", NULL },
	{ "reset", cmd_reset, "NAME", "reset a VM, like its reset button",
	    NULL },
	{ "snapshot", cmd_snapshot, "NAME DIR [--keep-running] [--watch]",
	    "save a running or paused VM into a directory",
	    "\nThe guest is paused, its RAM and state are written into DIR "
	    "(made if it\n"
	    "does not exist; it must not hold a snapshot already), and then "
	    "the VM\n"
	    "is stopped, or with --keep-running resumed (left paused if it "
	    "was).\n"
	    "--watch prints its progress on stderr as vmmd reports it.\n" },
	{ "restore", cmd_restore,
	    "DIR [--as NEWNAME [--net SPEC]...] [--watch]",
	    "start a VM from a snapshot, or a new VM as its clone",
	    "\nThe VM the snapshot in DIR recorded is started from it, made "
	    "from the\n"
	    "recorded definition if no VM has its name; an existing one must "
	    "not run\n"
	    "and have the same definition (memory, vCPUs, devices): vmmd says "
	    "what\n"
	    "differs.  --as NEWNAME makes a new VM, a clone with its own MAC, "
	    "vsock\n"
	    "CID and generation ID; its --net options (as create's) replace "
	    "the\n"
	    "recorded cards' backends, one for each card.  restore NAME DIR "
	    "restores\n"
	    "into the existing VM NAME.  The snapshot is checked whole before "
	    "the guest\n"
	    "starts; its files must stay as they are while the guest runs.  "
	    "--watch\n"
	    "prints its progress on stderr as vmmd reports it.\n" },
	{ "media", cmd_media, "NAME DEVICE --eject|--insert ISO [--force]",
	    "change the medium in a running VM's CD-ROM drive",
	    "\nDEVICE is cdrom0.  --eject takes the medium out (the tray "
	    "opens);\n"
	    "--insert puts ISO in, which vmmd opens with your rights.  The "
	    "guest sees\n"
	    "the change as from a real drive.  While it prevents removal the "
	    "change\n"
	    "is refused unless --force.  The definition's cdrom is what the "
	    "next start\n"
	    "takes.\n" },
	{ "balloon", cmd_balloon, "NAME SIZE [--stats-interval SECONDS]",
	    "set how much memory a running VM with a balloon keeps",
	    "\nThe guest (created with --balloon) gives the rest of its RAM "
	    "up into its\n"
	    "balloon, to the host; SIZE as --memory's, at most the VM's RAM "
	    "(which\n"
	    "gives it all back).  Memory the guest frees goes back to the "
	    "host anyway\n"
	    "(free page reporting).  --stats-interval asks the guest for its "
	    "memory\n"
	    "statistics every SECONDS (0: only when info asks), which info "
	    "shows under\n"
	    "the virtio-balloon device.  The target lasts until the guest "
	    "stops.\n" },
	{ "migrate", cmd_migrate,
	    "NAME --to DEST [--downtime MS] [--watch] | NAME --cancel",
	    "move a running VM to another vmmd while it runs",
	    "\nThe guest's RAM is copied while it runs, in rounds of what it "
	    "wrote since\n"
	    "the last, until the rest fits the downtime (default 300 ms); it "
	    "is then\n"
	    "paused, the rest and its state sent, and it runs on at DEST "
	    "(unix:PATH:\n"
	    "the control socket of a vmmd on this host; ssh://[USER@]HOST"
	    "[/SOCKET]: a\n"
	    "vmmd there, through ssh and vmctl migrate-receive).  The VM is "
	    "then gone\n"
	    "here.  Until it runs there it stays here: a failure leaves it "
	    "running\n"
	    "here.  --watch prints each round.  --cancel stops NAME's "
	    "migration under\n"
	    "way before the switch: the guest runs on here.\n" },
	{ "migrate-receive", cmd_migrate_receive, "",
	    "the receiving end of migrate --to ssh://",
	    "\nRun by vmctl migrate through ssh: reads the VM's definition "
	    "from stdin's\n"
	    "first line, asks vmmd for it, answers on stdout's first line, "
	    "then carries\n"
	    "the stream between stdin and stdout and vmmd.\n" },
	{ "delete", cmd_delete, "NAME... [--remove-data]",
	    "remove VMs that are not running",
	    "\nTheir overlays and console logs are kept, and vmctl says where, "
	    "unless\n"
	    "--remove-data: then they go too.  With --remove-data, the data "
	    "a VM of\n"
	    "that name left when it was deleted goes as well.\n" },
	{ "reset-disk", cmd_reset_disk, "NAME [INDEX]",
	    "throw a stopped VM's changes to its overlay disks away",
	    "\nMakes the overlay of disk INDEX (default: of every overlay "
	    "disk) afresh,\n"
	    "so that the disk reads as its base again.\n" },
	{ "autostart", cmd_autostart, "NAME on|off",
	    "start a VM whenever vmmd starts, or no longer", NULL },
	{ "list", cmd_list, "[--state STATE]", "list the VMs",
	    "\n  --state STATE  only those in STATE: defined, starting, "
	    "running, paused,\n"
	    "                 stopping, stopped or crashed\n" },
	{ "state", cmd_state, "NAME", "print a VM's state", NULL },
	{ "events", cmd_events, "[NAME]",
	    "print the VMs' events (or NAME's) as they come",
	    "\nOne line an event: time, VM, event, then its data as "
	    "key=value; with -j\n"
	    "the event's JSON object, one a line.  Until interrupted.\n" },
	{ "info", cmd_info, "NAME [--stats]", "show a VM's settings and "
	    "state", "\n  --stats   every statistic of the running guest "
	    "too\n" },
	{ "console", cmd_console, "NAME", "attach to a VM's serial console",
	    CTL_CONSOLE_HELP },
	{ "display", cmd_display, "NAME",
	    "show where to point a VNC viewer or a browser",
	    "\nPrints the vnc:// address, then the http:// address of the "
	    "browser client\n"
	    "if it is served (the password in it), the password viewers must "
	    "give, if\n"
	    "any, then the number of viewers connected.\n" },
	{ "screenshot", cmd_screenshot, "NAME FILE",
	    "save a VM's screen as a PNG image",
	    "\nFILE is replaced only once the whole image has arrived.\n" },
	{ "stats", cmd_stats, "NAME [--enable|--disable] [--reset] "
	    "[--vcpu N] [--segments] [--kvm] [--watch SECONDS]",
	    "show where a VM's exits spend their time",
	    "\n  --enable           start collecting exit statistics (the guest "
	    "runs on),\n"
	    "                     by segments too with --segments\n"
	    "  --disable          stop collecting; what was collected stays\n"
	    "  --reset            zero what was collected\n"
	    "  --vcpu N           one vCPU's exits (default: all, summed)\n"
	    "  --segments         each exit's average time split into "
	    "segments:\n"
	    "                     exit, dispatch, handler, irq, reentry\n"
	    "  --kvm              KVM's own statistics too, by name\n"
	    "  --watch SECONDS    redraw every SECONDS until interrupted\n"
	    "\nTimes are in microseconds; rows are sorted by their share of "
	    "the time.\n" },
	{ "run", cmd_run, "[create options] NAME",
	    "create, start and attach a transient VM",
	    CTL_CREATE_HELP CTL_CONSOLE_HELP
	    "\nThe VM is deleted when it stops; when the console ends any "
	    "other way\n"
	    "(Ctrl-], a signal), vmctl kills it.\n" },
	{ "set", cmd_set, "NAME [create options]",
	    "change a stopped VM's settings",
	    "\nThe options are create's (vmctl help create); each one given "
	    "replaces\n"
	    "the setting it makes, whole: the --disk options given are all "
	    "the disks,\n"
	    "--cloud-init and --ssh-key all of cloud-init's seed.  The "
	    "daemon checks\n"
	    "the new definition as create's.  An overlay disk keeps its "
	    "overlay.\n" },
	{ "edit", cmd_edit, "NAME",
	    "change a stopped VM's definition in $EDITOR",
	    "\nThe definition (as export prints it) in $VISUAL, else "
	    "$EDITOR, else vi;\n"
	    "once saved, the daemon checks it and it replaces the old one.  "
	    "If the\n"
	    "daemon refuses it, the file is kept and vmctl says where.\n" },
	{ "rename", cmd_rename, "NAME NEW", "rename a stopped VM",
	    "\nIts overlays and console log follow it; it keeps its MAC "
	    "address.\n" },
	{ "export", cmd_export, "NAME",
	    "print a VM's definition, for create --from-file",
	    "\nThe definition as JSON, without state or owner; vmctl create "
	    "--from-file\n"
	    "takes it back as it is.\n" },
	{ "clone", cmd_clone, "NAME NEW", "copy a stopped VM",
	    "\nNEW gets a copy of each of NAME's overlays (over the same "
	    "base), a MAC\n"
	    "address of its own and, if NAME's vsock CID is fixed, the "
	    "lowest one\n"
	    "free.  A writable disk that is no overlay is refused: both "
	    "would write it.\n" },
	{ "help", cmd_help, "[COMMAND]", "show this help or a command's",
	    NULL },
};
#define CTL_NCOMMANDS	(sizeof(ctl_commands) / sizeof(ctl_commands[0]))

static void
ctl_help(FILE *fp)
{
	size_t i;

	fputs("usage: vmctl [-s SOCKET] [-j|--json] COMMAND [ARGS...]\n"
	    "\n"
	    "Commands:\n", fp);
	for (i = 0; i < CTL_NCOMMANDS; i++)
		fprintf(fp, "  %-12s%s%s\n", ctl_commands[i].name,
		    strlen(ctl_commands[i].name) >= 12 ? " " : "",
		    ctl_commands[i].summary);
	fprintf(fp, "\n"
	    "Options:\n"
	    "  -s, --socket SOCKET  vmmd's control socket (default: "
	    "$VMMD_SOCKET,\n"
	    "                       else %s)\n"
	    "  -j, --json           print the daemon's JSON reply\n"
	    "  -h, --help           show this help\n"
	    "      --version        show vmctl's version\n"
	    "\n"
	    "SIZE is in MiB, or has a suffix M, MiB, G or GiB.  "
	    "'vmctl help COMMAND'\n"
	    "shows a command's arguments; vmctl(1) has the details.\n",
	    VMMD_DEFAULT_SOCKET);
}

static const struct ctl_command *
ctl_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < CTL_NCOMMANDS; i++)
		if (strcmp(ctl_commands[i].name, name) == 0)
			return &ctl_commands[i];
	return NULL;
}

/* Edits (insert, delete, replace, swap two) from a to b, capped. */
static size_t
ctl_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t d[32][32];

	if (la >= 32 || lb >= 32)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

/*
 * The command the user probably meant: the one a word of at least
 * three letters begins, else the nearest within two edits; NULL if
 * none is near.
 */
static const char *
ctl_suggest(const char *name)
{
	const char *best = NULL;
	size_t i, dist, best_dist = 3;

	for (i = 0; i < CTL_NCOMMANDS; i++)
		if (strlen(name) >= 3 &&
		    strncmp(ctl_commands[i].name, name, strlen(name)) == 0)
			return ctl_commands[i].name;
	for (i = 0; i < CTL_NCOMMANDS; i++) {
		dist = ctl_distance(name, ctl_commands[i].name);
		if (dist < best_dist) {
			best_dist = dist;
			best = ctl_commands[i].name;
		}
	}
	return best;
}

/* "unknown command 'strat' (did you mean 'start'?)" */
static int
ctl_unknown_command(struct ctl *ctl, const char *name)
{
	const char *near = ctl_suggest(name);

	if (near != NULL)
		return ctl_syntax(ctl, "unknown command '%s' (did you mean "
		    "'%s'?)", name, near);
	return ctl_syntax(ctl, "unknown command '%s'", name);
}

static int
cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const struct ctl_command *cmd;
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if (argc - optind == 0) {
		ctl_help(stdout);
		return CTL_EXIT_OK;
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "COMMAND")) != 0)
		return r;
	if ((cmd = ctl_lookup(argv[optind])) == NULL) {
		ctl->cmd = NULL;	/* the hint: plain 'vmctl help' */
		return ctl_unknown_command(ctl, argv[optind]);
	}
	ctl_command_help(cmd);
	return CTL_EXIT_OK;
}

static int
ctl_main(int argc, char **argv)
{
	enum { OPT_VERSION = 0x100 };
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ "version",	no_argument,	NULL,	OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl ctl = { .socket = VMMD_DEFAULT_SOCKET };
	const char *env;
	int c, r;

	if ((env = getenv("VMMD_SOCKET")) != NULL && *env != '\0')
		ctl.socket = env;
	opterr = 0;
	/* "+": options end at the command; its own options follow it. */
	while ((c = getopt_long(argc, argv, "+" CTL_COMMON_OPTSTRING,
	    longopts, NULL)) != -1) {
		if (c == OPT_VERSION) {
			printf("vmctl %s (protocol %d)\n", VMMD_VERSION,
			    PROTO_VERSION);
			return CTL_EXIT_OK;
		}
		if (c == 'h') {
			/* No command yet: the help of them all. */
			ctl_help(stdout);
			return CTL_EXIT_OK;
		}
		if ((r = ctl_common_option(&ctl, argc, argv, c)) >= 0)
			return r;
	}
	if (optind == argc)
		return ctl_syntax(&ctl, "no command given");
	if ((ctl.cmd = ctl_lookup(argv[optind])) == NULL)
		return ctl_unknown_command(&ctl, argv[optind]);

	argc -= optind;
	argv += optind;
	optind = 0;		/* restart getopt on the command's arguments */
	r = ctl.cmd->run(&ctl, argc, argv);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		ctl_warnx("writing to stdout: %s", strerror(errno));
		if (r == CTL_EXIT_OK)
			r = CTL_EXIT_FAIL;
	}
	return r;
}

/*
 * -j anywhere on the command line makes errors JSON, those found before
 * getopt reaches it (an unknown option ahead of it) included.
 */
int
main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-j") == 0 ||
		    strcmp(argv[i], "--json") == 0) {
			ctl_json_errors();
			break;
		}
	return ctl_finish(ctl_main(argc, argv));
}
