/*
 * vmmd-worker: runs one guest for the supervisor.
 *
 *   vmmd-worker [-Uv] [-r FD] [-u UID] -c FD -n NAME
 *
 * -c FD is a stream socket to the supervisor carrying the same JSON
 * protocol as the public control socket (plus client connections passed
 * with SCM_RIGHTS for consoles).  Once booted with a socket of its own
 * (relink.h), the guest outlives its supervisor: the worker waits there
 * for the next one, which adopts it with worker.adopt.  The worker exits
 * 0 when the guest is done (shut down, or reset while a stop is pending
 * or with on_reboot "stop"), and non-zero when something went wrong:
 * the supervisor then reports the VM as crashed.
 *
 * Before it reads anything the guest wrote, the worker gives up its
 * identity and capabilities (sandbox.h: a worker started as root becomes
 * -u UID, and the gid of the same number, a uid no other process runs
 * as); once the guest is set up it loads its system call filter: a call
 * outside its allow-list kills it by SIGSYS after naming the call on
 * -r FD, a pipe to the supervisor.  -U runs it unconfined.
 *
 * The event loop has no timers of its own: device timers exist only while
 * a device needs one, so with an idle guest nothing here wakes.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "exit-stats.h"
#include "guest.h"
#include "link.h"
#include "log.h"
#include "proto.h"
#include "requests.h"
#include "sandbox.h"
#include "shutdown.h"
#include "worker.h"
#include "worker-msg.h"

static void
worker_request(void *opaque, const char *line, size_t len)
{
	requests_handle(opaque, line, len);
}

static void
worker_link_closed(void *opaque)
{
	struct worker *w = opaque;

	/* A running guest with a socket of its own waits for the next
	 * supervisor (a crash or a restart of vmmd loses no guest). */
	if (w->relink != NULL && w->booted && !w->ended) {
		relink_lost(w->relink);
		return;
	}
	/* Else nobody can manage this guest. */
	log_info("%s: supervisor closed the connection", w->name);
	worker_exit(w, w->booted ? 0 : 1);
}

static void
worker_exit_event(struct worker *w)
{
	struct json_object *data = json_object_new_object();

	if (data == NULL)
		return;
	wmsg_put_int(data, WMSG_EXIT_STATUS, w->exit_status & 0xff);
	link_send(w->link, proto_event(wmsg_event_name(WMSG_EV_EXIT),
	    w->name, data));
}

static void
worker_usage(void)
{
	fprintf(stderr, "usage: vmmd-worker [-Uv] [-r FD] [-u UID] -c FD "
	    "-n NAME\n"
	    "(started by vmmd; not meant to be run by hand)\n");
	exit(2);
}


int
main(int argc, char *argv[])
{
	struct link_handlers lh = {
		.request = worker_request,
		.closed = worker_link_closed,
	};
	struct worker w = { .kvm_fd = -1, .report_fd = -1, .migrate_fd = -1,
	    .start.own[START_MAIN] = xs_mono_ns() };
	struct timespec now;
	static char ident[96];
	int ch, ret, verbose = 0, ctrl_fd = -1;
	unsigned long uid;
	char *end;

	while ((ch = getopt(argc, argv, "c:n:r:u:Uv")) != -1) {
		switch (ch) {
		case 'u':
			errno = 0;
			uid = strtoul(optarg, &end, 10);
			if (*end != '\0' || errno != 0 || uid == 0 ||
			    uid >= (uid_t)-1)
				worker_usage();
			w.uid = (uid_t)uid;
			break;
		case 'r':
			w.report_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || w.report_fd < 0)
				worker_usage();
			break;
		case 'U':
			w.unconfined = true;
			break;
		case 'c':
			ctrl_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || ctrl_fd < 0)
				worker_usage();
			break;
		case 'n':
			w.name = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			worker_usage();
		}
	}
	if (ctrl_fd < 0 || w.name == NULL)
		worker_usage();
	/* vmmd alone, the service's main process, talks to systemd. */
	unsetenv("NOTIFY_SOCKET");
	snprintf(ident, sizeof(ident), "vmmd-worker[%s]", w.name);
	log_init(ident, log_stderr_usable(), verbose);
	/*
	 * Under systemd, vmmd's stderr (ours) is the journal: log there
	 * natively instead, each line with its VM= and priority, on a
	 * socket connected before the sandbox, which stays ours when vmmd
	 * restarts and a new one adopts us.
	 */
	if (log_stderr_is_journal() && (ret = log_to_journal(w.name)) < 0)
		log_debug("the journal's socket: %s; logging to stderr",
		    strerror(-ret));
	signal(SIGPIPE, SIG_IGN);
	/*
	 * The supervisor alone decides when a guest ends.  A Ctrl-C on a
	 * foreground vmmd, or a signal sent to every process of the service,
	 * must reach the supervisor, which shuts guests down gracefully,
	 * not kill the workers under it: leave its process group and ignore
	 * the polite termination signals.  SIGKILL still works.
	 */
	setpgid(0, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* Now a background group of vmmd's terminal: with "stty tostop",
	 * logging to it would stop us. */
	signal(SIGTTOU, SIG_IGN);

	/* vCPU threads wake the loop through event_active(). */
	if (evthread_use_pthreads() < 0) {
		log_error("libevent has no pthreads support");
		return 1;
	}
	w.base = event_base_new();
	if (w.base == NULL || guest_init(&w) < 0) {
		log_error("cannot set up the event loop");
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	w.started_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	lh.opaque = &w;
	w.link_handlers = lh;
	w.link = link_new(w.base, ctrl_fd, &lh, &ret);
	if (w.link == NULL) {
		log_error("cannot set up the link to vmmd: %s", strerror(-ret));
		return 1;
	}

	event_base_dispatch(w.base);

	/*
	 * The guest is gone, but requests may already be on their way: a
	 * vm.console handed over just now must still get its reply and
	 * the guest's last output (the console lives until guest_fini(),
	 * whose drain delivers it), and the supervisor, which sees every
	 * request answered, knows that the ones it got no reply to were
	 * never read.
	 */
	w.ended = true;
	link_serve_queued(w.link);
	guest_fini(&w);
	shutdown_fini(&w);
	/*
	 * An adopted worker is not the supervisor's child: its exit status
	 * reaches it only this way (a crash says nothing, and is reported
	 * as one).
	 */
	worker_exit_event(&w);
	link_free(w.link, 1000);
	relink_free(w.relink);
	json_object_put(w.definition);
	event_base_free(w.base);
	if (w.kvm_fd >= 0)
		close(w.kvm_fd);
	if (w.sandboxed)
		sandbox_exit(w.exit_status);
	return w.exit_status;
}
