/*
 * The create options of create and run: --kernel, --initrd, --cmdline,
 * --memory, --vcpus, --on-reboot, --lost-tick-policy (or --lost-ticks),
 * --rtc-slices, the
 * display's --vnc, --display, --vnc-password-file, --vnc-no-password
 * and --vnc-web, and the devices' --rng, --balloon, --disk, --net and
 * --vsock, into the arguments of vm.create; a cloud image's --boot, --cloud-init and
 * --ssh-key are create-cloud.c's; --managed, who decides when it runs.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <json-c/json.h>
#include <json-c/json_util.h>

#include "args.h"
#include "boot-dev.h"
#include "create-args.h"
#include "create-cloud.h"
#include "create-options.h"
#include "proto.h"
#include "vmctl.h"

/*
 * An absolute form of a --kernel/--initrd path: the daemon resolves
 * nothing relative to its own directory, so relative paths are resolved
 * here, against ours.
 */
static int
create_args_abspath(const char *path, char **out)
{
	if (path[0] == '/')
		*out = strdup(path);
	else
		*out = realpath(path, NULL);
	return *out != NULL ? 0 : -errno;
}

/* More than any VNC password: a file this long is not one. */
#define CREATE_PASSWORD_READ_MAX	256

/*
 * The VNC password from the file path into args.  The password comes
 * from a file, never from argv, where any user could read it in ps.
 * Returns -1 to go on, else an exit status (after saying why).
 */
static int
create_args_password(struct ctl *ctl, struct json_object *args,
    const char *path)
{
	char buf[CREATE_PASSWORD_READ_MAX + 1];
	size_t len = 0;
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ctl_warnx("%s: --vnc-password-file %s: %s", ctl->cmd->name,
		    path, strerror(errno));
		return CTL_EXIT_FAIL;
	}
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = errno;
			close(fd);
			ctl_warnx("%s: --vnc-password-file %s: %s",
			    ctl->cmd->name, path, strerror(r));
			return CTL_EXIT_FAIL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len > CREATE_PASSWORD_READ_MAX)
		r = -E2BIG;
	else
		r = ctl_password_text(buf, &len);
	if (r == 0) {
		buf[len] = '\0';
		json_object_object_add(args, "vnc_password",
		    json_object_new_string(buf));
	}
	explicit_bzero(buf, sizeof(buf));
	if (r == -ENODATA)
		ctl_warnx("%s: --vnc-password-file %s: the file is empty",
		    ctl->cmd->name, path);
	else if (r == -E2BIG)
		ctl_warnx("%s: --vnc-password-file %s: far longer than a VNC "
		    "password (8 bytes at most)", ctl->cmd->name, path);
	else if (r < 0)
		ctl_warnx("%s: --vnc-password-file %s: the password must be "
		    "one line", ctl->cmd->name, path);
	return r < 0 ? CTL_EXIT_FAIL : -1;
}

/*
 * --disk PATH[,readonly][,serial=ID][,format=raw|qcow2][,backing]
 * [,overlay][,bus=virtio|sata]: one more member of "disks".  The daemon
 * checks the serial, the format and the bus; backing lets a qcow2
 * image's backing file be opened; overlay makes PATH the base of a thin
 * clone.  PATH may be an NBD server's address instead (nbd:unix:/PATH
 * [:EXPORT] or nbd://HOST[:PORT][/EXPORT]), taken as it is, or a Ceph RBD
 * image (rbd:POOL/IMAGE), whose own options (conf=, id=, keyring=, snap=,
 * lock=) join its path, where the daemon reads them (rbd-spec.h).  A
 * path may not contain a comma.  Returns -1 to go on, else
 * an exit status.
 */
static int
create_args_disk(struct ctl *ctl, struct json_object *args, char *spec)
{
	static const char *const rbd_opts[] = { "conf=", "id=", "keyring=",
	    "snap=", "lock=" };
	struct json_object *disks, *disk;
	char *opt, *path, *save = NULL, *rbd = NULL;
	size_t k;
	int r;

	opt = strtok_r(spec, ",", &save);
	if (opt == NULL)
		return ctl_usage(ctl, "--disk: expected PATH[,readonly]"
		    "[,serial=ID][,format=raw|qcow2][,backing][,overlay]"
		    "[,bus=virtio|sata]");
	/* An NBD server's address goes as it is; the daemon checks it. */
	if (strncmp(opt, "nbd:", 4) == 0)
		r = (path = strdup(opt)) != NULL ? 0 : -ENOMEM;
	else if (strncmp(opt, "rbd:", 4) == 0)
		r = (path = rbd = strdup(opt)) != NULL ? 0 : -ENOMEM;
	else
		r = create_args_abspath(opt, &path);
	if (r < 0) {
		ctl_warnx("%s: --disk %s: %s", ctl->cmd->name, opt,
		    strerror(-r));
		return CTL_EXIT_FAIL;
	}
	disk = json_object_new_object();
	while ((opt = strtok_r(NULL, ",", &save)) != NULL) {
		for (k = 0; rbd != NULL && k < sizeof(rbd_opts) /
		    sizeof(rbd_opts[0]); k++)
			if (strncmp(opt, rbd_opts[k], strlen(rbd_opts[k])) == 0)
				break;
		if (rbd != NULL && k < sizeof(rbd_opts) / sizeof(rbd_opts[0])) {
			/* The image's own option: part of its path. */
			char *joined;

			if (asprintf(&joined, "%s,%s", rbd, opt) < 0) {
				free(rbd);
				json_object_put(disk);
				return ctl_error(NULL, NULL, "failed",
				    "out of memory");
			}
			free(rbd);
			path = rbd = joined;
		} else if (strcmp(opt, "readonly") == 0)
			json_object_object_add(disk, "readonly",
			    json_object_new_boolean(1));
		else if (strncmp(opt, "serial=", 7) == 0)
			json_object_object_add(disk, "serial",
			    json_object_new_string(opt + 7));
		else if (strncmp(opt, "format=", 7) == 0)
			json_object_object_add(disk, "format",
			    json_object_new_string(opt + 7));
		else if (strcmp(opt, "backing") == 0)
			json_object_object_add(disk, "backing",
			    json_object_new_boolean(1));
		else if (strcmp(opt, "overlay") == 0)
			json_object_object_add(disk, "overlay",
			    json_object_new_boolean(1));
		else if (strncmp(opt, "bus=", 4) == 0)
			json_object_object_add(disk, "bus",
			    json_object_new_string(opt + 4));
		else {
			free(path);
			json_object_put(disk);
			return ctl_usage(ctl, "--disk: unknown option '%s' "
			    "(readonly, serial=ID, format=raw|qcow2, backing, "
			    "overlay, bus=virtio|sata; an RBD image's conf=FILE, "
			    "id=CLIENT, keyring=FILE, snap=SNAP, lock=on|off)",
			    opt);
		}
	}
	json_object_object_add(disk, "path", json_object_new_string(path));
	free(path);
	if (!json_object_object_get_ex(args, "disks", &disks)) {
		disks = json_object_new_array();
		json_object_object_add(args, "disks", disks);
	}
	json_object_array_add(disks, disk);
	return -1;
}

/*
 * "net" with one more card: the object itself for the first (what
 * daemons that know one card take), an array of them from the second.
 */
static void
create_args_add_net(struct json_object *args, struct json_object *net)
{
	struct json_object *old, *arr;

	if (!json_object_object_get_ex(args, "net", &old)) {
		json_object_object_add(args, "net", net);
		return;
	}
	if (!json_object_is_type(old, json_type_array)) {
		arr = json_object_new_array();
		json_object_array_add(arr, json_object_get(old));
		json_object_object_add(args, "net", arr);
		old = arr;
	}
	json_object_array_add(old, net);
}

/*
 * --net tap=NAME[,mac=MAC] or --net user[,forward=SPEC]...[,mac=MAC]:
 * one more card of "net".  The daemon checks the name, the forwards,
 * the address and the number of cards.  Returns -1 to go on, else an
 * exit status.
 */
int
create_args_net(struct ctl *ctl, struct json_object *args, char *spec)
{
	struct json_object *net, *fw = NULL;
	char *opt, *save = NULL;
	bool user = false;

	net = json_object_new_object();
	for (opt = strtok_r(spec, ",", &save); opt != NULL;
	    opt = strtok_r(NULL, ",", &save)) {
		if (strncmp(opt, "tap=", 4) == 0)
			json_object_object_add(net, "tap",
			    json_object_new_string(opt + 4));
		else if (strncmp(opt, "mac=", 4) == 0)
			json_object_object_add(net, "mac",
			    json_object_new_string(opt + 4));
		else if (strcmp(opt, "user") == 0)
			user = true;
		else if (strncmp(opt, "forward=", 8) == 0) {
			if (fw == NULL)
				fw = json_object_new_array();
			json_object_array_add(fw,
			    json_object_new_string(opt + 8));
		} else {
			json_object_put(net);
			json_object_put(fw);
			return ctl_usage(ctl, "--net: unknown option '%s' "
			    "(tap=NAME, user, forward=SPEC, mac=MAC)", opt);
		}
	}
	if (user == json_object_object_get_ex(net, "tap", NULL) ||
	    (fw != NULL && !user)) {
		json_object_put(net);
		json_object_put(fw);
		return ctl_usage(ctl, "--net: expected tap=NAME[,mac=MAC] or "
		    "user[,forward=PROTO:HOSTADDR:HOSTPORT:GUESTPORT]..."
		    "[,mac=MAC]");
	}
	if (user)
		json_object_object_add(net, "user",
		    json_object_new_boolean(1));
	if (fw != NULL)
		json_object_object_add(net, "forward", fw);
	create_args_add_net(args, net);
	return -1;
}

/*
 * --vsock auto|CID[,socket]: "vsock".  The daemon checks the CID.
 * Returns -1 to go on, else an exit status.
 */
static int
create_args_vsock(struct ctl *ctl, struct json_object *args, char *spec)
{
	struct json_object *vsock = json_object_new_object();
	char *opt, *save = NULL, *end;
	bool first = true;

	for (opt = strtok_r(spec, ",", &save); opt != NULL;
	    opt = strtok_r(NULL, ",", &save), first = false) {
		long long cid;

		if (strcmp(opt, "socket") == 0) {
			json_object_object_add(vsock, "socket",
			    json_object_new_boolean(1));
			continue;
		}
		if (first && strcmp(opt, "auto") == 0)
			continue;
		errno = 0;
		cid = strtoll(opt, &end, 10);
		if (!first || *end != '\0' || errno != 0 || end == opt) {
			json_object_put(vsock);
			return ctl_usage(ctl, "--vsock: expected auto or a CID, "
			    "then ,socket or nothing: '%s'", opt);
		}
		json_object_object_add(vsock, "cid",
		    json_object_new_int64(cid));
	}
	json_object_object_add(args, "vsock", vsock);
	return -1;
}

/*
 * --fs TAG=DIR[,readonly] or --fs TAG=socket:PATH: "fs".  The daemon
 * checks the tag and the paths.  Returns -1 to go on, else an exit
 * status.
 */
static int
create_args_fs(struct ctl *ctl, struct json_object *args, char *spec)
{
	struct json_object *fs;
	char *eq = strchr(spec, '='), *path, *opt;
	bool readonly = false;

	if (eq == NULL || eq == spec || eq[1] == '\0')
		return ctl_usage(ctl, "--fs: expected TAG=DIR[,readonly] or "
		    "TAG=socket:PATH: '%s'", spec);
	*eq = '\0';
	path = eq + 1;
	if ((opt = strrchr(path, ',')) != NULL) {
		if (strcmp(opt, ",readonly") != 0)
			return ctl_usage(ctl, "--fs: expected readonly or "
			    "nothing after the directory: '%s'", opt + 1);
		*opt = '\0';
		readonly = true;
	}
	fs = json_object_new_object();
	json_object_object_add(fs, "tag", json_object_new_string(spec));
	if (strncmp(path, "socket:", 7) == 0) {
		json_object_object_add(fs, "socket",
		    json_object_new_string(path + 7));
	} else {
		char abs[PATH_MAX];

		/* The daemon has another working directory. */
		if (path[0] != '/' && realpath(path, abs) != NULL)
			path = abs;
		json_object_object_add(fs, "dir", json_object_new_string(path));
	}
	if (readonly)
		json_object_object_add(fs, "readonly",
		    json_object_new_boolean(1));
	json_object_object_add(args, "fs", fs);
	return -1;
}

/* Whether s is a SIZE of zero ("0", "00M"), which ctl_parse_size refuses. */
static bool
create_args_zero(const char *s)
{
	size_t n = strspn(s, "0");

	return n > 0 && (s[n] == '\0' || strcasecmp(s + n, "M") == 0 ||
	    strcasecmp(s + n, "MiB") == 0 || strcasecmp(s + n, "G") == 0 ||
	    strcasecmp(s + n, "GiB") == 0);
}

/*
 * --from-file FILE: the definition in FILE (as vmctl export prints it)
 * into *obj.  Returns -1 to go on, else an exit status.
 */
static int
create_args_from_file(struct ctl *ctl, const char *path,
    struct json_object **obj)
{
	*obj = json_object_from_file(path);
	if (*obj == NULL) {
		ctl_warnx("%s: --from-file %s: %s", ctl->cmd->name, path,
		    json_util_get_last_err() ?: "cannot read it");
		return CTL_EXIT_FAIL;
	}
	if (!json_object_is_type(*obj, json_type_object)) {
		json_object_put(*obj);
		ctl_warnx("%s: --from-file %s: not a JSON object (a "
		    "definition, as vmctl export prints it)", ctl->cmd->name,
		    path);
		return CTL_EXIT_FAIL;
	}
	return -1;
}

/*
 * --boot-order LIST: "cdrom0,disk0,net0" as "boot_order"'s array; the
 * daemon says which devices the VM has.
 */
static int
create_args_boot_order(struct ctl *ctl, struct json_object *args,
    const char *list)
{
	struct boot_dev devs[BOOT_ORDER_MAX];
	char name[BOOT_DEV_NAME_MAX];
	struct json_object *a;
	unsigned int n;

	if (boot_order_parse(list, devs, &n) < 0 || n == 0)
		return ctl_usage(ctl, "--boot-order %s: expected devices "
		    "cdromN, diskN, netN, each once, separated by commas",
		    list);
	if ((a = json_object_new_array()) == NULL)
		return CTL_EXIT_FAIL;
	for (unsigned int i = 0; i < n; i++) {
		boot_dev_name(&devs[i], name, sizeof(name));
		json_object_array_add(a, json_object_new_string(name));
	}
	json_object_object_add(args, "boot_order", a);
	return -1;
}

/*
 * One option c of create or run: a create option goes into args, anything
 * else to ctl_common_option().  Returns like the latter: -1 to go on, else
 * an exit status.
 */
static int
create_args_option(struct ctl *ctl, struct json_object *args, int argc,
    char **argv, int c)
{
	const char *key = NULL;
	char *path;
	int64_t n;
	int r;

	switch (c) {
	case 'k':
	case 'i':
	case 'C':
		key = c == 'k' ? "kernel" : c == 'i' ? "initrd" : "cdrom";
		if ((r = create_args_abspath(optarg, &path)) < 0) {
			ctl_warnx("%s: --%s %s: %s", ctl->cmd->name, key, optarg,
			    strerror(-r));
			return CTL_EXIT_FAIL;
		}
		json_object_object_add(args, key,
		    json_object_new_string(path));
		free(path);
		return -1;
	case 'c':
		if (strlen(optarg) > PROTO_CMDLINE_MAX)
			return ctl_usage(ctl, "--cmdline: %zu bytes, at most %d",
			    strlen(optarg), PROTO_CMDLINE_MAX);
		json_object_object_add(args, "cmdline",
		    json_object_new_string(optarg));
		return -1;
	case 'm':
		r = ctl_parse_size(optarg, &n);
		/* Every refusal gives the range, zero and 1T too. */
		if (r == -EINVAL && create_args_zero(optarg))
			n = 0;
		else if (r == -ERANGE)
			n = PROTO_MEMORY_MIB_MAX + 1;
		else if (r < 0)
			return ctl_usage(ctl, "--memory %s: not a size from "
			    "%dM to %dG (MiB, or with M, MiB, G or GiB: "
			    "512M, 2G)", optarg, PROTO_MEMORY_MIB_MIN,
			    PROTO_MEMORY_MIB_MAX / 1024);
		if (n > PROTO_MEMORY_MIB_MAX)
			return ctl_usage(ctl, "--memory %s: at most %dG",
			    optarg, PROTO_MEMORY_MIB_MAX / 1024);
		if (n < PROTO_MEMORY_MIB_MIN)
			return ctl_usage(ctl, "--memory %s: at least %dM",
			    optarg, PROTO_MEMORY_MIB_MIN);
		json_object_object_add(args, "memory_mib",
		    json_object_new_int64(n));
		return -1;
	case 'n':
		if (ctl_parse_number(optarg, 1, INT_MAX, &n) < 0)
			return ctl_usage(ctl, "--vcpus %s: not a positive "
			    "number", optarg);
		if (n > PROTO_VCPUS_MAX)
			return ctl_usage(ctl, "--vcpus %s: at most %d", optarg,
			    PROTO_VCPUS_MAX);
		json_object_object_add(args, "vcpus",
		    json_object_new_int64(n));
		return -1;
	case 'r':
		if (strcmp(optarg, "restart") != 0 &&
		    strcmp(optarg, "stop") != 0)
			return ctl_usage(ctl, "--on-reboot %s: expected "
			    "restart or stop", optarg);
		json_object_object_add(args, "on_reboot",
		    json_object_new_string(optarg));
		return -1;
	case 'L':
		if (strcmp(optarg, "slew") != 0 &&
		    strcmp(optarg, "discard") != 0)
			return ctl_usage(ctl, "--lost-tick-policy %s: "
			    "expected slew or discard", optarg);
		json_object_object_add(args, "lost_tick_policy",
		    json_object_new_string(optarg));
		return -1;
	case 'S':
		if (ctl_parse_number(optarg, 2, 32, &n) < 0)
			return ctl_usage(ctl, "--rtc-slices %s: expected 2 to "
			    "32", optarg);
		json_object_object_add(args, "rtc_slices",
		    json_object_new_int64(n));
		return -1;
	/* --vnc and --display go as they are: the daemon parses them. */
	case 'V':
		json_object_object_add(args, "vnc",
		    json_object_new_string(optarg));
		return -1;
	case 'D':
		json_object_object_add(args, "display",
		    json_object_new_string(optarg));
		return -1;
	case 'P':
		if (json_object_object_get_ex(args, "vnc_password", NULL))
			return ctl_usage(ctl, "--vnc-password-file and "
			    "--vnc-no-password: one or the other");
		return create_args_password(ctl, args, optarg);
	case 'O':
		if (json_object_object_get_ex(args, "vnc_password", NULL))
			return ctl_usage(ctl, "--vnc-password-file and "
			    "--vnc-no-password: one or the other");
		json_object_object_add(args, "vnc_password",
		    json_object_new_boolean(0));
		return -1;
	case 'W':
		json_object_object_add(args, "vnc_web",
		    json_object_new_boolean(1));
		return -1;
	case 'R':
		json_object_object_add(args, "rng", json_object_new_boolean(1));
		return -1;
	case 'A':
		json_object_object_add(args, "balloon",
		    json_object_new_boolean(1));
		return -1;
	case 'G':
		if (strcmp(optarg, "cluster") != 0 &&
		    strcmp(optarg, "vmmd") != 0)
			return ctl_usage(ctl, "--managed %s: expected cluster "
			    "or vmmd", optarg);
		json_object_object_add(args, "managed",
		    json_object_new_string(optarg));
		return -1;
	case 'f':
		if (strcmp(optarg, "bios") != 0 && strcmp(optarg, "uefi") != 0)
			return ctl_usage(ctl, "--firmware %s: expected bios or "
			    "uefi", optarg);
		json_object_object_add(args, "firmware",
		    json_object_new_string(optarg));
		return -1;
	case 'b':
		return create_args_boot_order(ctl, args, optarg);
	case 'M':
		/* SeaBIOS's own wait when none is given. */
		n = 2500;
		if (optarg != NULL && ctl_parse_number(optarg, 0, 65535,
		    &n) < 0)
			return ctl_usage(ctl, "--boot-menu=%s: expected "
			    "milliseconds, 0 to 65535", optarg);
		json_object_object_add(args, "boot_menu",
		    json_object_new_int((int)n));
		return -1;
	case 'd':
		return create_args_disk(ctl, args, optarg);
	case 'N':
		return create_args_net(ctl, args, optarg);
	case 'K':
		return create_args_vsock(ctl, args, optarg);
	case 'Z':
		return create_args_fs(ctl, args, optarg);
	case CREATE_CLOUD_BOOT:
	case CREATE_CLOUD_INIT:
	case CREATE_CLOUD_SSH_KEY:
		return create_cloud_option(ctl, args, c, optarg);
	default:
		return ctl_common_option(ctl, argc, argv, c);
	}
}

int
create_args_parse(struct ctl *ctl, int argc, char **argv,
    struct json_object **argsp, const char **namep, bool *fromp)
{
	/*
	 * The options that may come again: --disk, --net and --ssh-key
	 * add one more each time; the common ones; getopt's complaints.
	 */
	static const int repeatable[] = { 'd', 'N', CREATE_CLOUD_SSH_KEY,
		'h', 'j', 's', '?', ':', 0 };
	struct ctl_seen seen = { 0 };
	struct json_object *args, *file = NULL;
	const char *again, *from = NULL;
	int c, r;

	args = json_object_new_object();
	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING,
	    create_options, NULL)) != -1) {
		if ((again = ctl_option_again(&seen, create_options,
		    repeatable, c)) != NULL) {
			json_object_put(args);
			return ctl_usage(ctl, "--%s: given more than once "
			    "(only --disk, --net and --ssh-key may repeat)",
			    again);
		}
		if (c == 'F') {
			from = optarg;
			continue;
		}
		if ((r = create_args_option(ctl, args, argc, argv, c)) >= 0) {
			json_object_put(args);
			return r;
		}
	}
	if (fromp != NULL)
		*fromp = from != NULL;
	if (from != NULL && (r = create_args_from_file(ctl, from, &file)) >= 0) {
		json_object_put(args);
		return r;
	}
	if (file != NULL) {
		/* The options given change what the file says. */
		json_object_object_foreach(args, key, val)
			json_object_object_add(file, key, json_object_get(val));
		json_object_put(args);
		args = file;
	}
	if (file != NULL && argc - optind == 0 &&
	    json_object_is_type(json_object_object_get(args, "name"),
	    json_type_string)) {
		/* Kept for the caller, which adds "name" again from it
		 * (replacing, and so freeing, the file's string): a copy
		 * that lives as long as vmctl.  A longer name is no VM's. */
		static char name[256];
		const char *s = json_object_get_string(
		    json_object_object_get(args, "name"));

		if (strlen(s) >= sizeof(name)) {
			json_object_put(args);
			return ctl_usage(ctl, "--from-file %s: its name is "
			    "longer than any VM's", from);
		}
		snprintf(name, sizeof(name), "%s", s);
		*namep = name;
		*argsp = args;
		return -1;
	}
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0) {
		json_object_put(args);
		return r;
	}
	*argsp = args;
	*namep = argv[optind];
	return -1;
}
