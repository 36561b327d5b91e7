/*
 * libFuzzer: the supervisor's control socket and command dispatcher, in
 * process.  Set up once: a real struct vmmd (its state directory in a
 * scratch directory, fuzz-tmp.h; the VM list; the command tables vmmd.c
 * serves) and a real control socket (listening, though nothing connects
 * to it).  Each
 * input is then what one client sends on a connection: a socket pair's
 * end is adopted as a client (control_adopt: greeting, framing, limits,
 * credentials as for any accepted client), the input is written to the
 * other end, which is then shut for writing, and the event loop runs
 * until vmmd closes the connection.
 *
 * So the whole path a request takes is real: framing, parsing, lookup,
 * every vm.* and events.* handler, definitions validated, saved to and
 * removed from disk, events broadcast.  What is not reached: a running
 * worker.  Nothing here can start one (there is no /dev/kvm for the
 * fuzzer, and the worker program is pointed at a path that does not
 * exist), so vm.start fails as it would with the worker missing, and
 * the commands that need a running guest answer bad_state.
 *
 * Checked besides crashes: every line vmmd sends parses as a message
 * (strict UTF-8 included), the connection is closed once the client
 * has shut its side and everything is answered (a hang is a libFuzzer
 * timeout), and no VM is left with a worker.  VMs the input created are
 * deleted after each run, so that a run depends on its input alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "cmd-events.h"
#include "cmd-vm.h"
#include "cmd-vm-edit.h"
#include "config.h"
#include "control.h"
#include "fuzz-tmp.h"
#include "proto.h"
#include "vm.h"
#include "vmconfig.h"

/* Longest line vmmd may send back (a vm.list of many VMs). */
#define FUZZ_CONTROL_MAX_REPLY	(4 * 1024 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cmd_def *const fuzz_control_commands[] = {
	cmd_vm_commands,
	cmd_vm_edit_commands,
	cmd_events_commands,
	NULL,
};

static struct vmmd fuzz_d;
static char fuzz_dir[256];

static void
fuzz_control_event(struct vmmd *d, struct json_object *ev)
{
	control_broadcast(d->ctl, ev);
}

static void
fuzz_control_idle(struct vmmd *d)
{
}

static char *
fuzz_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", fuzz_dir, name) < 0)
		abort();
	return p;
}

static void
fuzz_control_cleanup(void)
{
	char *cmd;

	control_free(fuzz_d.ctl);
	fuzz_d.ctl = NULL;
	if (asprintf(&cmd, "rm -rf '%s'", fuzz_dir) >= 0) {
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", fuzz_dir);
		free(cmd);
	}
}

static void
fuzz_control_setup(void)
{
	struct vmmd *d = &fuzz_d;
	char err[512], *sock;

	/* Never a real worker, whatever the input asks. */
	if (access(VMMD_LIBEXECDIR "/vmmd-worker", X_OK) == 0) {
		fprintf(stderr, "%s/vmmd-worker is installed: vm.start would "
		    "run it; configure the fuzz build with another prefix\n",
		    VMMD_LIBEXECDIR);
		abort();
	}
	fuzz_tmp_dir("control", fuzz_dir, sizeof(fuzz_dir));
	TAILQ_INIT(&d->vms);
	d->hooks.event = fuzz_control_event;
	d->hooks.idle = fuzz_control_idle;
	d->statedir = fuzz_path("state");
	d->vmsdir = fuzz_path("state/vms");
	d->consoledir = fuzz_path("state/console");
	d->disksdir = fuzz_path("state/disks");
	d->workersdir = fuzz_path("workers");
	d->default_kernel = fuzz_path("no-kernel");
	d->worker_self = fuzz_path("no-worker");
	if (mkdir(d->statedir, 0750) < 0 || mkdir(d->vmsdir, 0700) < 0 ||
	    mkdir(d->consoledir, 0750) < 0 || mkdir(d->disksdir, 0700) < 0 ||
	    mkdir(d->workersdir, 0700) < 0)
		abort();
	d->base = event_base_new();
	if (d->base == NULL || vm_list_init(d) < 0)
		abort();
	sock = fuzz_path("control.sock");
	d->ctl = control_new(d->base, d, fuzz_control_commands, sock, -1, err,
	    sizeof(err));
	free(sock);
	if (d->ctl == NULL) {
		fprintf(stderr, "control_new: %s\n", err);
		abort();
	}
	atexit(fuzz_control_cleanup);
}

/* Every line vmmd sent must be a message a strict client can parse. */
static void
fuzz_control_replies(struct proto_lines *pl)
{
	struct json_object *msg;
	const char *line;
	char desc[512];
	size_t len;
	int rc;

	while ((rc = proto_lines_next(pl, &line, &len)) != 0) {
		if (rc < 0) {
			fprintf(stderr, "vmmd sent a line over %d bytes\n",
			    FUZZ_CONTROL_MAX_REPLY);
			abort();
		}
		if (proto_parse_object(line, len, &msg, desc,
		    sizeof(desc)) != 0) {
			fprintf(stderr, "vmmd sent an invalid message (%s): "
			    "%.*s\n", desc, (int)len, line);
			abort();
		}
		json_object_put(msg);
	}
}

/* Forget what the run created: VMs, their definition files. */
static void
fuzz_control_reset(void)
{
	struct vmmd *d = &fuzz_d;
	char err[512];
	struct vm *vm;

	while ((vm = TAILQ_FIRST(&d->vms)) != NULL) {
		if (vm_has_worker(vm)) {
			fprintf(stderr, "VM '%s' has a worker\n",
			    vm->def->name);
			abort();
		}
		if (!vm->def->transient &&
		    config_remove(d->vmsdir, vm->def->name, err,
		    sizeof(err)) < 0)
			abort();
		vm_remove(vm);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_lines *pl;
	char buf[65536];
	size_t written = 0;
	bool shut = false;
	ssize_t n;
	int sv[2];

	if (fuzz_d.base == NULL)
		fuzz_control_setup();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) < 0)
		abort();
	pl = proto_lines_new(FUZZ_CONTROL_MAX_REPLY);
	if (pl == NULL)
		abort();
	control_adopt(fuzz_d.ctl, sv[0]);

	for (;;) {
		if (written < size) {
			n = write(sv[1], data + written, size - written);
			if (n > 0)
				written += (size_t)n;
			else if (n < 0 && errno != EAGAIN)
				break;	/* vmmd closed early: fine */
		} else if (!shut) {
			shutdown(sv[1], SHUT_WR);
			shut = true;
		}
		event_base_loop(fuzz_d.base, EVLOOP_NONBLOCK);
		n = read(sv[1], buf, sizeof(buf));
		if (n == 0)
			break;		/* vmmd closed the connection */
		if (n < 0 && errno != EAGAIN)
			break;
		if (n > 0) {
			if (proto_lines_feed(pl, buf, (size_t)n) < 0)
				abort();
			fuzz_control_replies(pl);
		}
	}
	/* Whatever vmmd has left for this client goes now. */
	close(sv[1]);
	event_base_loop(fuzz_d.base, EVLOOP_NONBLOCK);
	proto_lines_free(pl);
	fuzz_control_reset();
	return 0;
}
