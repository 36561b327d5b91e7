/*
 * vmmd: the supervisor.  Options, state directories, daemonizing,
 * readiness notification, signals, and the event loop that everything
 * else runs on.  It wires the layers together: the VM list reports to
 * the control socket's subscribers through the hooks set here, and the
 * control socket serves the command tables listed here.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "cmd-vm.h"
#include "config.h"
#include "control.h"
#include "log.h"
#include "vm.h"
#include "vmconfig.h"

#define MAIN_DEFAULT_KERNEL	VMMD_DATADIR "/demo.elf"

struct main_opts {
	bool foreground;
	bool verbose;
	bool unconfined;
	const char *socket;
	const char *statedir;
	const char *kernel;
};

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: vmmd [-fUVv] [-d statedir] [-g kernel] [-s socket]\n");
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
	int rc = 0;

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
		/* mkdir's mode went through the umask. */
		if (chmod(dir, mode) < 0) {
			rc = -errno;
			log_error("chmod %s: %s", dir, strerror(errno));
		}
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
 * sd_notify(3)'s protocol, which is one datagram: no need for
 * libsystemd.  An address starting with '@' is in the abstract
 * namespace.
 */
static void
main_notify(const char *addr, const char *msg)
{
	struct sockaddr_un sa;
	socklen_t salen;
	size_t len;
	int fd;

	if (addr == NULL || (addr[0] != '/' && addr[0] != '@'))
		return;
	len = strlen(addr);
	if (len >= sizeof(sa.sun_path))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, addr, len);
	if (addr[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	    salen) < 0)
		log_warn("sd_notify %s: %s", addr, strerror(errno));
	close(fd);
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
	char *notify;			/* $NOTIFY_SOCKET, unset for workers */
	struct event *term_ev, *int_ev;
};

/* Every command the control socket serves. */
static const struct cmd_def *const main_commands[] = {
	cmd_vm_commands,
	cmd_events_commands,
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
	control_broadcast(d->ctl, ev);
}

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
	log_info("%s: stopping %u guest%s and exiting", strsignal(sig),
	    vm_list_workers(d), vm_list_workers(d) == 1 ? "" : "s");
	d->shutting_down = true;
	main_notify(ms->notify, "STOPPING=1");
	/* No new clients and no new work; the socket goes away now. */
	control_free(d->ctl);
	d->ctl = NULL;
	vm_list_stop_all(d);
	if (vm_list_workers(d) == 0)
		event_base_loopexit(d->base, NULL);
}

static void
main_reload_cb(void *arg, const char *file, struct vm_def *def,
    const char *err)
{
	struct vmmd *d = arg;

	if (def == NULL) {
		log_warn("%s/%s: skipped: %s", d->vmsdir, file, err);
		return;
	}
	if (vm_add(d, def) == NULL)
		log_error("%s/%s: out of memory", d->vmsdir, file);
	else
		log_debug("loaded VM '%s'", def->name);
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

int
main(int argc, char *argv[])
{
	struct main_opts o = {
		.socket = VMMD_DEFAULT_SOCKET,
		.statedir = VMMD_DEFAULT_STATEDIR,
		.kernel = MAIN_DEFAULT_KERNEL,
	};
	struct main_state ms;
	struct vmmd *d = &ms.d;
	char err[1024], *socket_path = NULL;
	const char *env;
	int ch, ready_fd = -1, status = 1;
	unsigned int nvms = 0;
	struct vm *vm;

	while ((ch = getopt(argc, argv, "d:fg:hs:UVv")) != -1) {
		switch (ch) {
		case 'd':
			o.statedir = optarg;
			break;
		case 'f':
			o.foreground = true;
			break;
		case 'g':
			o.kernel = optarg;
			break;
		case 'h':
			usage(0);
		case 's':
			o.socket = optarg;
			break;
		case 'U':
			o.unconfined = true;
			break;
		case 'V':
			printf("vmmd %s (protocol %d)\n", VMMD_VERSION,
			    PROTO_VERSION);
			return 0;
		case 'v':
			o.verbose = true;
			break;
		default:
			usage(1);
		}
	}
	if (optind != argc)
		usage(1);

	/* stderr until ready, so that startup errors reach the terminal. */
	log_init("vmmd", 1, o.verbose);

	memset(&ms, 0, sizeof(ms));
	TAILQ_INIT(&d->vms);
	d->hooks.event = main_vm_event;
	d->hooks.idle = main_vm_idle;
	d->statedir = main_abspath(o.statedir);
	d->default_kernel = main_abspath(o.kernel);
	socket_path = main_abspath(o.socket);
	d->worker_self = main_worker_self();
	if (d->statedir == NULL || d->default_kernel == NULL ||
	    socket_path == NULL ||
	    asprintf(&d->vmsdir, "%s/vms", d->statedir) < 0 ||
	    asprintf(&d->consoledir, "%s/console", d->statedir) < 0) {
		log_error("out of memory");
		return 1;
	}

	main_raise_nofile();
	/* Writes to a vanished client or worker are errors, not deaths. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);

	/* Ours alone: workers must not talk to the service manager. */
	if ((env = getenv("NOTIFY_SOCKET")) != NULL) {
		ms.notify = strdup(env);
		unsetenv("NOTIFY_SOCKET");
	}

	if (!o.foreground)
		ready_fd = main_daemonize();

	if (main_mkdir(d->statedir, 0750) < 0 ||
	    main_mkdir(d->vmsdir, 0700) < 0 ||
	    main_mkdir(d->consoledir, 0750) < 0)
		goto free_paths;

	d->base = event_base_new();
	if (d->base == NULL) {
		log_error("cannot create the event loop");
		goto free_paths;
	}
	d->unconfined = o.unconfined;
	if (d->unconfined)
		log_warn("workers run without their sandbox (-U): a guest "
		    "that breaks its worker reaches the host");
	if (vm_list_init(d) < 0) {
		log_error("cannot watch SIGCHLD");
		goto free_base;
	}

	if ((ch = config_load_dir(d->vmsdir, main_reload_cb, d)) < 0)
		log_warn("%s: %s", d->vmsdir, strerror(-ch));
	TAILQ_FOREACH(vm, &d->vms, entry)
		nvms++;

	d->ctl = control_new(d->base, d, main_commands, socket_path, err,
	    sizeof(err));
	if (d->ctl == NULL) {
		log_error("%s", err);
		goto free_vms;
	}

	ms.term_ev = evsignal_new(d->base, SIGTERM, main_signal_cb, &ms);
	ms.int_ev = evsignal_new(d->base, SIGINT, main_signal_cb, &ms);
	if (ms.term_ev == NULL || ms.int_ev == NULL ||
	    evsignal_add(ms.term_ev, NULL) < 0 ||
	    evsignal_add(ms.int_ev, NULL) < 0) {
		log_error("cannot watch SIGTERM/SIGINT");
		goto free_signals;
	}

	if (access(d->default_kernel, R_OK) < 0)
		log_warn("default guest %s: %s (VMs without a kernel cannot "
		    "start; see -g)", d->default_kernel, strerror(errno));
	log_info("vmmd %s ready: %u VM%s defined, state in %s", VMMD_VERSION,
	    nvms, nvms == 1 ? "" : "s", d->statedir);

	{
		char msg[64];

		snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld",
		    (long)getpid());
		main_notify(ms.notify, msg);
	}
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "", 1);
		close(ready_fd);
		ready_fd = -1;
		log_to_syslog();
		main_detach_stdio();
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
	control_free(d->ctl);
	d->ctl = NULL;
free_vms:
	d->shutting_down = true;
	vm_list_fini(d);
free_base:
	event_base_free(d->base);
free_paths:
	free(ms.notify);
	free(socket_path);
	free(d->statedir);
	free(d->vmsdir);
	free(d->consoledir);
	free(d->default_kernel);
	free(d->worker_self);
	libevent_global_shutdown();
	return status;
}
