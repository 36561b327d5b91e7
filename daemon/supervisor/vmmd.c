/*
 * vmmd: the supervisor.  Options, state directories, daemonizing,
 * readiness notification, signals, and the event loop that everything
 * else runs on.  It wires the layers together: the VM list reports to
 * the control socket's subscribers through the hooks set here, and the
 * control socket serves the command tables listed here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "cmd-events.h"
#include "cmd-migrate.h"
#include "cmd-snapshot.h"
#include "cmd-balloon.h"
#include "cmd-media.h"
#include "cmd-vm.h"
#include "cmd-vm-edit.h"
#include "config.h"
#include "control.h"
#include "daemon-conf.h"
#include "disk-overlay.h"
#include "log.h"
#include "metrics.h"
#include "safe-dir.h"
#include "systemd.h"
#include "access.h"
#include "vm.h"
#include "vm-nvram.h"
#include "vmconfig.h"
#include "vm-files.h"
#include "vsock-proxy.h"
#include "worker-sock.h"

#define MAIN_CONFIG_FILE	VMMD_SYSCONFDIR "/vmmd/vmmd.conf"

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: vmmd [-fUVv] [-c config] [-d statedir] [-g kernel] "
	    "[-s socket] [-t seconds]\n");
	if (status == 0)
		printf("\n"
		    "  -c, --config FILE        settings (default "
		    MAIN_CONFIG_FILE ")\n"
		    "  -d, --state-dir DIR      definitions and console logs\n"
		    "  -f, --foreground         stay in the foreground, log "
		    "to stderr\n"
		    "  -g, --default-kernel F   guest of VMs without a "
		    "kernel\n"
		    "  -s, --socket PATH        control socket\n"
		    "  -t, --shutdown-timeout S seconds guests get to shut "
		    "down on SIGTERM\n"
		    "  -U, --unconfined         workers without their sandbox "
		    "(debugging)\n"
		    "      --console-log-max N  rotate console logs beyond N "
		    "bytes (K, M, G)\n"
		    "      --worker-uids A-B    uids of the guests' workers "
		    "(as root)\n"
		    "  -v, --verbose            debug lines too\n"
		    "  -V, --version            print the version and exit\n"
		    "  -h, --help               this help\n"
		    "\nSee vmmd(8) and vmmd.conf(5).\n");
	exit(status);
}

/* Paths are made absolute before the daemon changes to "/". */
static char *
main_abspath(const char *path)
{
	char cwd[PATH_MAX], *out;

	if (path[0] == '/')
		return strdup(path);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return NULL;
	if (asprintf(&out, "%s/%s", cwd, path) < 0)
		return NULL;
	return out;
}

/* Create dir (and missing parents, 0755) and give dir itself mode. */
static int
main_mkdir(const char *dir, mode_t mode)
{
	char *tmp, *p;
	struct stat st;
	int rc = 0, fd;

	if ((tmp = strdup(dir)) == NULL)
		return -ENOMEM;
	for (p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			log_error("%s: %s", tmp, strerror(errno));
			goto out;
		}
		*p = '/';
	}
	if (mkdir(dir, mode) == 0) {
		/*
		 * mkdir's mode went through the umask.  Set through a
		 * descriptor, never following a link: the directory is
		 * checked only afterwards (main_check_dirs()), and where
		 * others may write its parent, they may have put one in its
		 * place.
		 */
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd < 0 || fchmod(fd, mode) < 0) {
			rc = -errno;
			log_error("chmod %s: %s", dir, strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	} else if (errno != EEXIST) {
		rc = -errno;
		log_error("%s: %s", dir, strerror(errno));
	} else if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		log_error("%s: not a directory", dir);
	}
out:
	free(tmp);
	return rc;
}

/*
 * Every directory vmmd keeps files in and finds them by name, made by
 * main_mkdir() or found: vmmd does not start unless only root and its
 * own user can change them (safe-dir.h).  The socket's directory is
 * checked here too, for a socket systemd passed; control.c checks it
 * again where it binds one itself.
 */
static int
main_check_dirs(const struct vmmd *d, const char *socket_path)
{
	char err[2 * PATH_MAX], *copy;
	const char *dirs[7];
	size_t i;
	int rc = 0;

	if ((copy = strdup(socket_path)) == NULL) {
		log_error("out of memory");
		return -ENOMEM;
	}
	dirs[0] = d->statedir;
	dirs[1] = d->vmsdir;
	dirs[2] = d->consoledir;
	dirs[3] = dirname(copy);
	dirs[4] = d->workersdir;
	dirs[5] = d->disksdir;
	dirs[6] = d->nvramdir;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && rc == 0; i++)
		if ((rc = safedir_check(dirs[i], NULL, err, sizeof(err))) < 0)
			log_error("%s", err);
	free(copy);
	return rc;
}

/*
 * Fork into the background.  The parent waits until the child says it
 * is ready (the socket listens) and exits 0, or 1 if the child died
 * first, so that "vmmd && vmctl ..." works.  Returns the child's end
 * of the readiness pipe.
 */
static int
main_daemonize(void)
{
	int pfd[2];
	char c;
	pid_t pid;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		log_error("pipe: %s", strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		log_error("fork: %s", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		close(pfd[1]);
		while ((n = read(pfd[0], &c, 1)) < 0 && errno == EINTR)
			;
		_exit(n == 1 ? 0 : 1);
	}
	close(pfd[0]);
	if (setsid() < 0)
		log_warn("setsid: %s", strerror(errno));
	if (chdir("/") < 0)
		log_warn("chdir /: %s", strerror(errno));
	return pfd[1];
}

/*
 * Every client and every worker link is a descriptor: the soft limit's
 * usual 1024 would refuse clients long before CONTROL_MAX_CLIENTS, so it
 * is raised to the hard limit (the service manager's LimitNOFILE).
 */
static void
main_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("raising the open files limit: %s", strerror(errno));
}

static void
main_detach_stdio(void)
{
	int fd;

	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

struct main_state {
	struct vmmd d;
	struct systemd *sd;
	struct metrics *metrics;	/* /metrics; NULL if it could not be */
	unsigned int shutdown_timeout;	/* seconds guests get on SIGTERM */
	struct event *term_ev, *int_ev, *quit_ev;
};

/* "N guests running": systemctl status shows it. */
static void
main_status(struct main_state *ms, const char *what)
{
	char msg[128];
	unsigned int n = vm_list_workers(&ms->d);

	snprintf(msg, sizeof(msg), "%s%u guest%s running", what, n,
	    n == 1 ? "" : "s");
	if (strcmp(what, "") == 0)
		systemd_status(ms->sd, msg);
	else
		systemd_stopping(ms->sd, msg);
}

/* Every command the control socket serves. */
static const struct cmd_def *const main_commands[] = {
	cmd_vm_commands,
	cmd_vm_edit_commands,
	cmd_events_commands,
	cmd_snapshot_commands,
	cmd_media_commands,
	cmd_balloon_commands,
	cmd_migrate_commands,
	NULL,
};

static void
main_vm_idle(struct vmmd *d)
{
	event_base_loopexit(d->base, NULL);
}

static void
main_vm_event(struct vmmd *d, struct json_object *ev)
{
	struct main_state *ms = (struct main_state *)
	    ((char *)d - offsetof(struct main_state, d));
	struct json_object *name;

	if (json_object_object_get_ex(ev, "event", &name) &&
	    strcmp(json_object_get_string(name), "vm.state") == 0)
		main_status(ms, d->shutting_down ? "stopping: " : "");
	control_broadcast(d->ctl, ev);
}

/*
 * Exit at once and leave every guest running, for the next vmmd to
 * adopt (a restart or an upgrade that must not touch guests).
 */
static void
main_release(struct main_state *ms, const char *why)
{
	struct vmmd *d = &ms->d;

	log_info("%s: exiting, %u guest%s left running for the next vmmd",
	    why, vm_list_workers(d), vm_list_workers(d) == 1 ? "" : "s");
	main_status(ms, "exiting, leaving ");
	vm_list_release(d);
	event_base_loopexit(d->base, NULL);
}

/*
 * SIGTERM, SIGINT: shut every guest down and exit, unless systemd only
 * restarts the service (the next vmmd adopts the guests, as after
 * SIGQUIT).  Twice: kill the guests still running.
 */
static void
main_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct main_state *ms = arg;
	struct vmmd *d = &ms->d;

	if (d->shutting_down) {
		log_info("%s again: killing every guest now", strsignal(sig));
		vm_list_kill_all(d);
		return;
	}
	if (sig == SIGTERM && systemd_stop_is_restart(ms->sd) > 0) {
		main_release(ms, "systemd restarts vmmd");
		return;
	}
	log_info("%s: stopping %u guest%s and exiting", strsignal(sig),
	    vm_list_workers(d), vm_list_workers(d) == 1 ? "" : "s");
	d->shutting_down = true;
	main_status(ms, "stopping: ");
	/* No new clients and no new work; the socket goes away now. */
	control_free(d->ctl);
	d->ctl = NULL;
	vm_list_stop_all(d, ms->shutdown_timeout);
	if (vm_list_workers(d) == 0)
		event_base_loopexit(d->base, NULL);
}

static void
main_quit_cb(evutil_socket_t sig, short what, void *arg)
{
	main_release(arg, strsignal(sig));
}

static void
main_reload_cb(void *arg, const char *file, struct vm_def *def,
    const char *err)
{
	struct vmmd *d = arg;
	char why[512];

	if (def == NULL) {
		log_warn("%s/%s: skipped: %s", d->vmsdir, file, err);
		return;
	}
	/* Stored before VMs had UUIDs: one now, the same from here on. */
	if (!def->has_uuid) {
		if (config_uuid_new(def) < 0)
			log_warn("VM '%s': no UUID could be made", def->name);
		else if (config_save(d->vmsdir, def, why, sizeof(why)) < 0)
			log_warn("VM '%s': saving its new UUID: %s", def->name,
			    why);
		else
			log_info("VM '%s': given a UUID", def->name);
	}
	if (vm_add(d, def) == NULL)
		log_error("%s/%s: out of memory", d->vmsdir, file);
	else
		log_debug("loaded VM '%s'", def->name);
}

/*
 * Start the VMs whose definitions say so, with their owners' rights on
 * their files, through the same checked path walk a client's start
 * takes (never root's: a path an owner controls may lead anywhere by
 * the time vmmd starts); a definition with no owner opens only files
 * root owns.  They boot on their own from here; one that cannot start
 * is reported and left defined.
 */
static void
main_autostart(struct vmmd *d)
{
	struct access_cred cred;
	enum proto_error cls;
	char err[1024];
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry) {
		/* An adopted guest runs already. */
		if (!vm->def->autostart || !vm_at_rest(vm))
			continue;
		vm_owner_cred(vm->def, &cred);
		if (vm_start(vm, &cred, false, NULL, &cls, err, sizeof(err)) < 0)
			log_error("VM '%s': autostart: %s", vm->def->name,
			    err);
		else
			log_info("VM '%s': autostart", vm->def->name);
	}
}

static void
main_adopt_cb(void *arg, struct wsock_found *f)
{
	struct vmmd *d = arg;

	if (vm_adopt(d, f) == 0)
		d->counters.adoptions++;
}

/* The workers' sockets live beside the control socket (the runtime
 * directory, /run/vmmd by default): they mean nothing after a reboot. */
static int
main_workersdir(const char *socket_path, char **out)
{
	char *copy, *dir;
	int rc;

	if ((copy = strdup(socket_path)) == NULL)
		return -ENOMEM;
	dir = dirname(copy);
	rc = asprintf(out, "%s/workers", dir) < 0 ? -ENOMEM : 0;
	free(copy);
	return rc;
}

/* The vsock sockets' keeper, in the control socket's directory. */
static struct vsock_proxy *
main_vsock_proxy(struct event_base *base, const char *socket_path)
{
	struct vsock_proxy *p;
	struct group *gr = getgrnam(VMMD_GROUP);
	char *copy;

	if ((copy = strdup(socket_path)) == NULL)
		return NULL;
	p = vsock_proxy_new(base, dirname(copy), gr != NULL ? gr->gr_gid :
	    (gid_t)-1);
	free(copy);
	return p;
}

static char *
main_worker_self(void)
{
	char exe[PATH_MAX], *dir, *out;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return NULL;
	exe[n] = '\0';
	dir = dirname(exe);
	if (asprintf(&out, "%s/vmmd-worker", dir) < 0)
		return NULL;
	return out;
}

/*
 * The configuration file, then the command line over it.  Exits on a
 * bad option or setting: nothing has started yet.
 */
static void
main_options(int argc, char *argv[], struct dconf *conf, bool *foreground,
    bool *verbose, bool *unconfined)
{
	enum { OPT_CONSOLE_LOG_MAX = 0x100, OPT_WORKER_UIDS };
	static const struct option longopts[] = {
		{ "console-log-max", required_argument, NULL,
		    OPT_CONSOLE_LOG_MAX },
		{ "worker-uids", required_argument, NULL, OPT_WORKER_UIDS },
		{ "config", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "default-kernel", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "socket", required_argument, NULL, 's' },
		{ "shutdown-timeout", required_argument, NULL, 't' },
		{ "unconfined", no_argument, NULL, 'U' },
		{ "version", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	static const char shortopts[] = "c:d:fg:hs:t:UVv";
	const char *file = MAIN_CONFIG_FILE, *key;
	char err[1024], *abs;
	bool named = false;
	int ch;

	/* First pass: only which file, and --help/--version. */
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1)
		switch (ch) {
		case 'c':
			file = optarg;
			named = true;
			break;
		case 'h':
			usage(0);
		case 'V':
			printf("vmmd %s (protocol %d)\n", VMMD_VERSION,
			    PROTO_VERSION);
			exit(0);
		case '?':
			usage(1);
		}
	if (optind != argc)
		usage(1);
	if (dconf_init(conf) < 0 ||
	    dconf_load(conf, file, named, err, sizeof(err)) < 0) {
		log_error("%s", err);
		exit(1);
	}
	optind = 1;
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			key = "state_dir";
			break;
		case 'f':
			*foreground = true;
			continue;
		case 'g':
			key = "default_kernel";
			break;
		case 's':
			key = "socket";
			break;
		case 't':
			key = "shutdown_timeout";
			break;
		case OPT_CONSOLE_LOG_MAX:
			key = "console_log_max";
			break;
		case OPT_WORKER_UIDS:
			key = "worker_uids";
			break;
		case 'U':
			*unconfined = true;
			continue;
		case 'v':
			*verbose = true;
			continue;
		default:
			continue;
		}
		/* Paths relative to where vmmd was started, not to "/". */
		abs = ch == 't' || ch == OPT_CONSOLE_LOG_MAX ||
		    ch == OPT_WORKER_UIDS ? strdup(optarg) :
		    main_abspath(optarg);
		if (abs == NULL ||
		    dconf_set(conf, key, abs, err, sizeof(err)) < 0) {
			if (ch == OPT_CONSOLE_LOG_MAX || ch == OPT_WORKER_UIDS)
				log_error("--%s %s: %s", ch == OPT_WORKER_UIDS ?
				    "worker-uids" : "console-log-max", optarg,
				    abs == NULL ? "out of memory" : err);
			else
				log_error("-%c %s: %s", ch, optarg, abs ==
				    NULL ? "out of memory" : err);
			exit(1);
		}
		free(abs);
	}
}

int
main(int argc, char *argv[])
{
	struct main_state ms;
	struct vmmd *d = &ms.d;
	struct dconf conf;
	char err[1024], kvm_err[256], status_line[128], *metrics_path;
	bool foreground = false, verbose = false, unconfined = false;
	int ch, listen_fd, ready_fd = -1, status = 1;
	unsigned int nvms = 0, nadopted = 0;
	struct vm *vm;

	/* stderr until ready, so that startup errors reach the terminal. */
	log_init("vmmd", 1, 0);
	main_options(argc, argv, &conf, &foreground, &verbose, &unconfined);
	log_init("vmmd", 1, verbose);

	memset(&ms, 0, sizeof(ms));
	TAILQ_INIT(&d->vms);
	d->hooks.event = main_vm_event;
	d->hooks.idle = main_vm_idle;
	ms.shutdown_timeout = conf.shutdown_timeout;
	d->console_log_max = conf.console_log_max;
	d->worker_uid_first = conf.worker_uid_first;
	d->worker_uid_last = conf.worker_uid_last;
	d->boot_timeout = conf.boot_timeout;
	d->boot_disk_timeout = conf.boot_disk_timeout;
	d->statedir = conf.statedir;
	d->default_kernel = conf.kernel;
	d->passt = conf.passt;
	d->virtiofsd = conf.virtiofsd;
	d->bios = conf.bios;
	d->vgabios = conf.vgabios;
	d->ovmf_code = conf.ovmf_code;
	d->ovmf_vars = conf.ovmf_vars;
	conf.statedir = conf.kernel = conf.passt = conf.bios = NULL;
	conf.virtiofsd = NULL;
	conf.vgabios = conf.ovmf_code = conf.ovmf_vars = NULL;
	/* conf lives until main() returns, and the rules with it. */
	d->tap_rules = conf.tap_rules;
	d->ntap_rules = conf.ntap_rules;
	d->worker_self = main_worker_self();
	if (d->worker_self == NULL ||
	    asprintf(&d->vmsdir, "%s/vms", d->statedir) < 0 ||
	    asprintf(&d->consoledir, "%s/console", d->statedir) < 0 ||
	    asprintf(&d->disksdir, "%s/" DISK_OVERLAY_DIR, d->statedir) < 0 ||
	    asprintf(&d->nvramdir, "%s/" VM_NVRAM_DIR, d->statedir) < 0 ||
	    main_workersdir(conf.socket, &d->workersdir) < 0) {
		log_error("out of memory");
		return 1;
	}

	main_raise_nofile();
	/* Writes to a vanished client or worker are errors, not deaths. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);

	if (!foreground)
		ready_fd = main_daemonize();
	else if (systemd_log_to_journal())
		log_debug("logging to the journal");

	if (main_mkdir(d->statedir, 0750) < 0 ||
	    main_mkdir(d->vmsdir, 0700) < 0 ||
	    main_mkdir(d->consoledir, 0750) < 0 ||
	    main_mkdir(d->disksdir, 0700) < 0 ||
	    main_mkdir(d->nvramdir, 0700) < 0 ||
	    main_mkdir(d->workersdir, 0700) < 0 ||
	    main_check_dirs(d, conf.socket) < 0)
		goto free_paths;

	d->base = event_base_new();
	if (d->base == NULL) {
		log_error("cannot create the event loop");
		goto free_paths;
	}
	ms.sd = systemd_new(d->base);
	if (ms.sd == NULL) {
		log_error("out of memory");
		goto free_base;
	}
	d->unconfined = unconfined;
	if (d->unconfined)
		log_warn("workers run without their sandbox (-U): a guest "
		    "that breaks its worker reaches the host");
	if (vm_list_init(d) < 0) {
		log_error("cannot watch SIGCHLD");
		goto free_base;
	}

	if ((ch = config_load_dir(d->vmsdir, main_reload_cb, d)) < 0)
		log_warn("%s: %s", d->vmsdir, strerror(-ch));

	listen_fd = systemd_listen_fd(ms.sd, err, sizeof(err));
	if (listen_fd < -1) {
		log_error("%s", err);
		goto free_vms;
	}
	d->ctl = control_new(d->base, d, main_commands, conf.socket,
	    listen_fd, err, sizeof(err));
	if (d->ctl == NULL) {
		log_error("%s", err);
		goto free_vms;
	}
	control_set_counters(d->ctl, &d->counters);
	/*
	 * /metrics beside the control socket, and on TCP if configured.
	 * A daemon whose metrics cannot listen still runs its guests.
	 */
	if ((metrics_path = metrics_path_beside(conf.socket)) == NULL ||
	    (ms.metrics = metrics_new(d, metrics_path, conf.metrics_listen,
	    err, sizeof(err))) == NULL)
		log_error("metrics: %s", metrics_path == NULL ?
		    "out of memory" : err);
	free(metrics_path);
	/* vsock's sockets for users, beside the control socket. */
	d->vsock_proxy = main_vsock_proxy(d->base, conf.socket);
	if (d->vsock_proxy == NULL)
		log_error("vsock: out of memory");
	/*
	 * Guests a previous vmmd left running: ours now.  Only once the
	 * socket is ours, so that a second vmmd started by mistake steals
	 * none; clients wait until the loop runs.
	 */
	if ((ch = wsock_scan(d->workersdir, main_adopt_cb, d)) < 0)
		log_warn("%s: %s", d->workersdir, strerror(-ch));
	else
		nadopted = (unsigned int)ch;
	TAILQ_FOREACH(vm, &d->vms, entry)
		nvms++;

	ms.term_ev = evsignal_new(d->base, SIGTERM, main_signal_cb, &ms);
	ms.int_ev = evsignal_new(d->base, SIGINT, main_signal_cb, &ms);
	ms.quit_ev = evsignal_new(d->base, SIGQUIT, main_quit_cb, &ms);
	if (ms.term_ev == NULL || ms.int_ev == NULL || ms.quit_ev == NULL ||
	    evsignal_add(ms.term_ev, NULL) < 0 ||
	    evsignal_add(ms.int_ev, NULL) < 0 ||
	    evsignal_add(ms.quit_ev, NULL) < 0) {
		log_error("cannot watch SIGTERM/SIGINT/SIGQUIT");
		goto free_signals;
	}

	/*
	 * Detached from the terminal before the first worker starts, so
	 * that autostart's workers do not inherit it; the parent that waits
	 * for the ready byte below needs none of our descriptors.
	 */
	if (ready_fd >= 0) {
		log_to_syslog();
		main_detach_stdio();
	}
	main_autostart(d);
	if (access(d->default_kernel, R_OK) < 0)
		log_warn("default guest %s: %s (VMs without a kernel cannot "
		    "start; see -g)", d->default_kernel, strerror(errno));
	if (vm_files_kvm_check(kvm_err, sizeof(kvm_err)) < 0)
		log_warn("%s: no guest can run (vm.start fails with "
		    "kvm_unavailable)", kvm_err);
	log_info("vmmd %s ready: %u VM%s defined, %u running guest%s "
	    "adopted, state in %s", VMMD_VERSION, nvms, nvms == 1 ? "" : "s",
	    nadopted, nadopted == 1 ? "" : "s", d->statedir);
	snprintf(status_line, sizeof(status_line), "%u VM%s defined, "
	    "%u guest%s running", nvms, nvms == 1 ? "" : "s",
	    vm_list_workers(d), vm_list_workers(d) == 1 ? "" : "s");
	systemd_ready(ms.sd, status_line);
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "", 1);
		close(ready_fd);
		ready_fd = -1;
	}

	if (event_base_dispatch(d->base) < 0)
		log_error("event loop failed");
	else
		status = 0;
	log_info("exiting");

free_signals:
	if (ms.term_ev != NULL)
		event_free(ms.term_ev);
	if (ms.int_ev != NULL)
		event_free(ms.int_ev);
	if (ms.quit_ev != NULL)
		event_free(ms.quit_ev);
	control_free(d->ctl);
	d->ctl = NULL;
	metrics_free(ms.metrics);
	ms.metrics = NULL;
free_vms:
	d->shutting_down = true;
	/* A daemon that fails leaves its guests to the next one, as a
	 * crash would: only a shutdown asked for (status 0) stops them. */
	if (status != 0)
		vm_list_release(d);
	vm_list_fini(d);
	vsock_proxy_free(d->vsock_proxy);
	d->vsock_proxy = NULL;
	counters_fini(&d->counters);
free_base:
	systemd_free(ms.sd);
	event_base_free(d->base);
free_paths:
	dconf_fini(&conf);
	free(d->statedir);
	free(d->vmsdir);
	free(d->consoledir);
	free(d->disksdir);
	free(d->workersdir);
	free(d->default_kernel);
	free(d->passt);
	free(d->virtiofsd);
	free(d->bios);
	free(d->vgabios);
	free(d->ovmf_code);
	free(d->ovmf_vars);
	free(d->nvramdir);
	free(d->worker_self);
	libevent_global_shutdown();
	return status;
}
