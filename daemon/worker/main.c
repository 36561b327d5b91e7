/*
 * vmmd-worker: runs one guest for the supervisor.
 *
 *   vmmd-worker -c FD -n NAME
 *
 * FD is a stream socket to the supervisor carrying the same JSON
 * protocol as the public control socket (plus client connections passed
 * with SCM_RIGHTS for consoles).  The worker exits 0 when the guest is
 * done (shut down, or reset while a stop is pending or with on_reboot
 * "stop"), and non-zero when something went wrong: the supervisor then
 * reports the VM as crashed.
 *
 * The event loop has no timers: with an idle guest, nothing here wakes.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "bev-drain.h"
#include "console.h"
#include "log.h"
#include "machine.h"
#include "proto.h"

#define WORKER_MAX_FDS	8

struct worker {
	struct event_base *base;
	const char *name;

	/* Supervisor link: our own reader (for SCM_RIGHTS), a bufferevent
	 * for writing. */
	int ctrl_fd;
	struct event *ctrl_ev;
	struct bufferevent *ctrl_out;
	struct proto_lines *lines;
	int fds[WORKER_MAX_FDS];
	unsigned int nfds;

	/* The guest. */
	struct machine_config cfg;
	char *kernel, *initrd, *cmdline;
	char *kernel_name;		/* the user's path, for messages */
	bool reboot_stops;
	bool shutdown_pending;
	bool booted;
	struct machine *machine;
	struct console *console;
	uint64_t reboots;

	/* Set by vCPU threads, handled on the loop. */
	struct event *hold_ev;
	pthread_mutex_t hold_lock;
	enum machine_reset_reason hold_reason;
	char *hold_fatal;

	int exit_status;
};

static void
worker_send(struct worker *w, struct json_object *msg)
{
	char *line;
	size_t len;

	if (msg == NULL)
		return;
	line = proto_serialize(msg, &len);
	json_object_put(msg);
	if (line == NULL)
		return;
	bufferevent_write(w->ctrl_out, line, len);
	free(line);
}

static void
worker_event(struct worker *w, const char *event, struct json_object *data)
{
	worker_send(w, proto_event(event, w->name, data));
}

static void
worker_state_event(struct worker *w, const char *state)
{
	struct json_object *data = json_object_new_object();

	json_object_object_add(data, "state", json_object_new_string(state));
	worker_event(w, "vm.state", data);
}

static void
worker_exit(struct worker *w, int status)
{
	w->exit_status = status;
	event_base_loopexit(w->base, NULL);
}

/* --- machine host callbacks (vCPU threads) ----------------------------- */

static void
worker_console_tx(void *opaque, const uint8_t *buf, size_t len)
{
	struct worker *w = opaque;

	console_output(w->console, buf, len);
}

static void
worker_console_rx_space(void *opaque)
{
	struct worker *w = opaque;

	console_rx_space(w->console);
}

static void
worker_machine_reset(void *opaque, enum machine_reset_reason why)
{
	struct worker *w = opaque;

	pthread_mutex_lock(&w->hold_lock);
	w->hold_reason = why;
	pthread_mutex_unlock(&w->hold_lock);
	event_active(w->hold_ev, 0, 0);
}

static void
worker_machine_fatal(void *opaque, const char *why)
{
	struct worker *w = opaque;

	pthread_mutex_lock(&w->hold_lock);
	free(w->hold_fatal);
	w->hold_fatal = strdup(why);
	if (w->hold_fatal == NULL)
		w->hold_fatal = strdup("out of memory");
	pthread_mutex_unlock(&w->hold_lock);
	event_active(w->hold_ev, 0, 0);
}

static size_t
worker_console_input(void *opaque, const uint8_t *buf, size_t len)
{
	struct worker *w = opaque;

	return machine_console_input(w->machine, buf, len);
}

/* --- building and rebuilding the machine ------------------------------- */

static void
worker_machine_free(struct worker *w)
{
	console_set_input(w->console, NULL, NULL);
	machine_free(w->machine);
	w->machine = NULL;
	/* Whatever the vCPUs printed last reaches the log and clients. */
	console_flush(w->console);
}

static int
worker_machine_build(struct worker *w, char *err, size_t errlen)
{
	struct machine_host host = {
		.console_tx = worker_console_tx,
		.console_rx_space = worker_console_rx_space,
		.reset = worker_machine_reset,
		.fatal = worker_machine_fatal,
		.opaque = w,
	};
	int ret;

	ret = machine_new(&w->machine, &w->cfg, &host, err, errlen);
	if (ret < 0)
		return ret;
	ret = machine_start(w->machine);
	if (ret < 0) {
		snprintf(err, errlen, "cannot start vCPU threads: %s",
		    strerror(-ret));
		worker_machine_free(w);
		return ret;
	}
	console_set_input(w->console, worker_console_input, w);
	return 0;
}

/*
 * A vCPU stopped the machine: a reset, a power-off or a fatal error.
 * Reset rebuilds the whole machine in this process, so consoles stay
 * attached and the log continues across guest reboots.
 */
static void
worker_hold_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	enum machine_reset_reason why;
	struct json_object *data;
	char err[512];
	char *fatal;

	pthread_mutex_lock(&w->hold_lock);
	why = w->hold_reason;
	fatal = w->hold_fatal;
	w->hold_fatal = NULL;
	pthread_mutex_unlock(&w->hold_lock);

	worker_machine_free(w);
	if (fatal != NULL) {
		log_error("%s: guest stopped: %s", w->name, fatal);
		free(fatal);
		worker_exit(w, 1);
		return;
	}
	if (why == MACHINE_POWEROFF || w->shutdown_pending ||
	    w->reboot_stops) {
		log_info("%s: guest %s, stopping", w->name,
		    why == MACHINE_POWEROFF ? "powered off" : "reset");
		worker_exit(w, 0);
		return;
	}

	w->reboots++;
	data = json_object_new_object();
	json_object_object_add(data, "reason",
	    json_object_new_string(machine_reset_reason_name(why)));
	worker_event(w, "vm.reboot", data);
	if (worker_machine_build(w, err, sizeof(err)) < 0) {
		log_error("%s: cannot restart guest: %s", w->name, err);
		worker_exit(w, 1);
		return;
	}
	/* The new machine runs, even if a pause came while the old one
	 * was held: say so, or vmmd would go on calling it paused. */
	worker_state_event(w, "running");
}

/* --- requests from the supervisor -------------------------------------- */

struct worker_request {
	struct worker *w;
	struct json_object *id;
	struct json_object *args;
	int fd;			/* passed descriptor, or -1 */
};

typedef struct json_object *(*worker_handler)(struct worker_request *r);

static struct json_object *
worker_error(struct worker_request *r, enum proto_error e, const char *desc)
{
	return proto_error(r->id, e, "%s", desc);
}

static struct json_object *
worker_ok(struct worker_request *r, struct json_object *ret)
{
	return proto_reply(r->id, ret);
}

static char *
worker_strdup_or_null(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

static struct json_object *
worker_cmd_boot(struct worker_request *r)
{
	struct worker *w = r->w;
	const char *kernel = NULL, *initrd = NULL, *cmdline = "";
	const char *kernel_name = NULL, *initrd_name = NULL;
	const char *on_reboot = "restart", *log_path = NULL;
	int64_t memory_mib = 0, vcpus = 0;
	char err[512];
	int ret;

	if (w->booted)
		return worker_error(r, PROTO_ERR_BAD_STATE, "already booted");
	if (proto_arg_string(r->args, "kernel", 1, &kernel, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "initrd", 0, &initrd, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "kernel_name", 0, &kernel_name, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "initrd_name", 0, &initrd_name, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "cmdline", 0, &cmdline, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "on_reboot", 0, &on_reboot, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(r->args, "console_log", 0, &log_path, err,
	    sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "memory_mib", 1, 16, 262144, &memory_mib,
	    err, sizeof(err)) < 0 ||
	    proto_arg_int(r->args, "vcpus", 1, 1, 64, &vcpus, err,
	    sizeof(err)) < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);

	/*
	 * kernel and initrd are normally /proc/self/fd/N: descriptors the
	 * supervisor opened after checking them and left to us, so that
	 * every (re)boot loads those very files.  Messages name the paths
	 * the user gave (kernel_name), not those.
	 */
	w->kernel = worker_strdup_or_null(kernel);
	w->initrd = worker_strdup_or_null(initrd);
	w->cmdline = worker_strdup_or_null(cmdline);
	w->kernel_name = worker_strdup_or_null(kernel_name != NULL ?
	    kernel_name : kernel);
	if (w->kernel == NULL || w->cmdline == NULL ||
	    w->kernel_name == NULL || (initrd != NULL && w->initrd == NULL))
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	log_debug("%s: kernel %s, initrd %s", w->name, w->kernel_name,
	    initrd_name != NULL ? initrd_name : initrd != NULL ? initrd :
	    "none");
	w->cfg = (struct machine_config){
		.kernel = w->kernel,
		.initrd = w->initrd,
		.kernel_name = w->kernel_name,
		.cmdline = w->cmdline,
		.memory_mib = memory_mib,
		.vcpus = vcpus,
	};
	w->reboot_stops = strcmp(on_reboot, "stop") == 0;

	w->console = console_new(w->base, log_path, &ret);
	if (w->console == NULL) {
		snprintf(err, sizeof(err), "console log %s: %s",
		    log_path ? log_path : "-", strerror(-ret));
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	ret = worker_machine_build(w, err, sizeof(err));
	if (ret < 0) {
		/* A kernel we cannot load is the caller's problem. */
		bool bad_input = ret == -ENOEXEC || ret == -EINVAL ||
		    ret == -ENOENT || ret == -EACCES || ret == -E2BIG ||
		    ret == -EFBIG || ret == -ENOSPC;
		return worker_error(r, bad_input ? PROTO_ERR_INVALID_ARGUMENT :
		    PROTO_ERR_INTERNAL, err);
	}
	w->booted = true;
	log_info("%s: guest running (%u vCPUs, %llu MiB)", w->name,
	    w->cfg.vcpus, (unsigned long long)w->cfg.memory_mib);
	return worker_ok(r, NULL);
}

static bool
worker_need_machine(struct worker_request *r, struct json_object **reply)
{
	if (r->w->machine != NULL)
		return true;
	*reply = worker_error(r, PROTO_ERR_BAD_STATE,
	    r->w->booted ? "guest is restarting" : "guest not booted");
	return false;
}

static struct json_object *
worker_cmd_pause(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	machine_pause(r->w->machine);
	worker_state_event(r->w, "paused");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_resume(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	machine_resume(r->w->machine);
	worker_state_event(r->w, "running");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_reset(struct worker_request *r)
{
	struct worker *w = r->w;
	struct json_object *reply;
	char err[512];

	if (!worker_need_machine(r, &reply))
		return reply;
	worker_machine_free(w);
	/* A reset or power-off the old machine reported is moot now. */
	event_del(w->hold_ev);
	pthread_mutex_lock(&w->hold_lock);
	free(w->hold_fatal);
	w->hold_fatal = NULL;
	pthread_mutex_unlock(&w->hold_lock);
	if (worker_machine_build(w, err, sizeof(err)) < 0) {
		log_error("%s: cannot reset guest: %s", w->name, err);
		worker_exit(w, 1);
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	w->reboots++;
	/* A vm.pause handled just before left vmmd calling it paused. */
	worker_state_event(w, "running");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_shutdown(struct worker_request *r)
{
	struct json_object *reply;
	int ret;

	if (!worker_need_machine(r, &reply))
		return reply;
	r->w->shutdown_pending = true;
	/* A paused guest cannot react to the keys. */
	machine_resume(r->w->machine);
	ret = machine_ctrl_alt_del(r->w->machine);
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL,
		    "keyboard buffer full");
	return worker_ok(r, NULL);
}

static void
worker_add_hex(struct json_object *obj, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	json_object_object_add(obj, key, json_object_new_string(buf));
}

/* Register state of COM1 and the IOAPIC, to see why an interrupt stalls. */
static struct json_object *
worker_diag_json(struct machine *m)
{
	struct json_object *dev, *com1, *ioapic, *redir;
	struct machine_diag d;
	unsigned int i;

	machine_get_diag(m, &d);
	dev = json_object_new_object();
	com1 = json_object_new_object();
	worker_add_hex(com1, "ier", d.com1.ier);
	worker_add_hex(com1, "iir", d.com1.iir);
	worker_add_hex(com1, "lcr", d.com1.lcr);
	worker_add_hex(com1, "mcr", d.com1.mcr);
	worker_add_hex(com1, "lsr", d.com1.lsr);
	worker_add_hex(com1, "msr", d.com1.msr);
	json_object_object_add(com1, "rx_count",
	    json_object_new_int(d.com1.rx_count));
	json_object_object_add(com1, "thre_pending",
	    json_object_new_boolean(d.com1.thre_pending));
	json_object_object_add(com1, "irq_level",
	    json_object_new_boolean(d.com1.irq_level));
	json_object_object_add(dev, "com1", com1);
	if (d.ioapic_valid) {
		ioapic = json_object_new_object();
		worker_add_hex(ioapic, "irr", d.ioapic_irr);
		redir = json_object_new_array();
		for (i = 0; i < BOOT_IOAPIC_PINS; i++) {
			char buf[24];

			snprintf(buf, sizeof(buf), "0x%016llx",
			    (unsigned long long)d.ioapic_redir[i]);
			json_object_array_add(redir,
			    json_object_new_string(buf));
		}
		json_object_object_add(ioapic, "redirection", redir);
		json_object_object_add(dev, "ioapic", ioapic);
	}
	return dev;
}

/* Where a paused vCPU stands, or NULL when it is not paused. */
static struct json_object *
worker_vcpu_regs_json(struct machine *m, unsigned int index)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct json_object *o;
	char buf[32];

	if (machine_get_vcpu_regs(m, index, &regs, &sregs) < 0)
		return NULL;
	o = json_object_new_object();
#define WORKER_REG(name, val) do {					\
	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)(val));	\
	json_object_object_add(o, name, json_object_new_string(buf));	\
} while (0)
	WORKER_REG("rip", regs.rip);
	WORKER_REG("rsp", regs.rsp);
	WORKER_REG("rflags", regs.rflags);
	WORKER_REG("cs", sregs.cs.selector);
	WORKER_REG("cr0", sregs.cr0);
	WORKER_REG("cr3", sregs.cr3);
	WORKER_REG("efer", sregs.efer);
#undef WORKER_REG
	return o;
}

/* KVM's counters of one vCPU, those that are not zero. */
static struct json_object *
worker_kvm_stats_json(struct kvm_stats *ks)
{
	struct json_object *o = json_object_new_object();
	unsigned int i;
	uint64_t v;

	if (kvm_stats_read(ks) < 0)
		return o;
	for (i = 0; i < ks->n; i++)
		if ((v = kvm_stats_value(ks, i)) != 0)
			json_object_object_add(o, ks->names[i],
			    json_object_new_int64((int64_t)(v & INT64_MAX)));
	return o;
}

static struct json_object *
worker_cmd_info(struct worker_request *r)
{
	static const char *const exit_names[VCPU_EXIT_KINDS] = {
		"io", "mmio", "hlt", "shutdown", "system_event", "intr",
		"other",
	};
	struct worker *w = r->w;
	struct json_object *ret, *vcpus, *kvm, *unknown, *console;
	struct json_object *regs = NULL, *o;
	struct console_stats cs;
	unsigned int i, k;

	ret = json_object_new_object();
	vcpus = json_object_new_array();
	kvm = json_object_new_array();
	if (w->machine != NULL) {
		struct machine *m = w->machine;

		for (i = 0; i < m->nvcpus; i++) {
			struct json_object *exits = json_object_new_object();

			for (k = 0; k < VCPU_EXIT_KINDS; k++)
				json_object_object_add(exits, exit_names[k],
				    json_object_new_int64(__atomic_load_n(
				    &m->vcpus[i].exits[k], __ATOMIC_RELAXED)));
			json_object_array_add(vcpus, exits);

			json_object_array_add(kvm,
			    worker_kvm_stats_json(&m->vcpus[i].stats));
			/* Indexed by vCPU: one that could not be read is
			 * null, once any could. */
			o = worker_vcpu_regs_json(m, i);
			if (o != NULL && regs == NULL) {
				regs = json_object_new_array();
				for (k = 0; k < i; k++)
					json_object_array_add(regs, NULL);
			}
			if (regs != NULL)
				json_object_array_add(regs, o);
		}
		unknown = json_object_new_object();
		json_object_object_add(unknown, "pio_reads",
		    json_object_new_int64(m->pio.unknown_reads));
		json_object_object_add(unknown, "pio_writes",
		    json_object_new_int64(m->pio.unknown_writes));
		json_object_object_add(unknown, "mmio_reads",
		    json_object_new_int64(m->mmio.unknown_reads));
		json_object_object_add(unknown, "mmio_writes",
		    json_object_new_int64(m->mmio.unknown_writes));
		json_object_object_add(ret, "unknown_io", unknown);
		json_object_object_add(ret, "devices", worker_diag_json(m));
	}
	json_object_object_add(ret, "vcpu_exits", vcpus);
	/* All exits, counted by KVM: most never reach us (see vcpu_exits). */
	json_object_object_add(ret, "vcpu_kvm", kvm);
	if (regs != NULL)
		json_object_object_add(ret, "vcpu_regs", regs);
	json_object_object_add(ret, "reboots", json_object_new_int64(w->reboots));
	if (w->console != NULL) {
		console_get_stats(w->console, &cs);
		console = json_object_new_object();
		json_object_object_add(console, "clients",
		    json_object_new_int(cs.clients));
		json_object_object_add(console, "bytes_out",
		    json_object_new_int64(cs.bytes_out));
		json_object_object_add(console, "bytes_in",
		    json_object_new_int64(cs.bytes_in));
		json_object_object_add(console, "bytes_lost",
		    json_object_new_int64(cs.bytes_lost));
		json_object_object_add(console, "clients_dropped",
		    json_object_new_int64(cs.clients_dropped));
		json_object_object_add(ret, "console", console);
	}
	return worker_ok(r, ret);
}

static struct json_object *
worker_cmd_console(struct worker_request *r)
{
	struct json_object *client_id = NULL;
	int ret;

	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_BAD_REQUEST,
		    "worker.console needs a descriptor");
	if (r->w->console == NULL) {
		close(r->fd);
		r->fd = -1;
		return worker_error(r, PROTO_ERR_BAD_STATE, "guest not booted");
	}
	json_object_object_get_ex(r->args, "client_id", &client_id);
	ret = console_attach(r->w->console, r->fd, client_id);
	r->fd = -1;
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, strerror(-ret));
	return worker_ok(r, NULL);
}

static const struct {
	const char *name;
	worker_handler fn;
	bool takes_fd;
} worker_commands[] = {
	{ "worker.boot", worker_cmd_boot, false },
	{ "worker.pause", worker_cmd_pause, false },
	{ "worker.resume", worker_cmd_resume, false },
	{ "worker.reset", worker_cmd_reset, false },
	{ "worker.shutdown", worker_cmd_shutdown, false },
	{ "worker.info", worker_cmd_info, false },
	{ "worker.console", worker_cmd_console, true },
};

static int
worker_take_fd(struct worker *w)
{
	int fd;

	if (w->nfds == 0)
		return -1;
	fd = w->fds[0];
	memmove(&w->fds[0], &w->fds[1], --w->nfds * sizeof(int));
	return fd;
}

static void
worker_handle_line(struct worker *w, const char *line, size_t len)
{
	struct proto_request req;
	struct worker_request r = { .w = w, .fd = -1 };
	struct json_object *id = NULL, *reply = NULL;
	char desc[256];
	size_t i;
	int ret;

	ret = proto_parse_request(line, len, &req, &id, desc, sizeof(desc));
	if (ret != 0) {
		worker_send(w, proto_error(id, ret, "%s", desc));
		json_object_put(id);
		return;
	}
	r.id = req.id;
	r.args = req.arguments;
	for (i = 0; i < sizeof(worker_commands) / sizeof(worker_commands[0]);
	    i++) {
		if (strcmp(req.command, worker_commands[i].name) != 0)
			continue;
		if (worker_commands[i].takes_fd)
			r.fd = worker_take_fd(w);
		reply = worker_commands[i].fn(&r);
		break;
	}
	if (r.fd >= 0)
		close(r.fd);
	if (i == sizeof(worker_commands) / sizeof(worker_commands[0]))
		reply = proto_error(req.id, PROTO_ERR_UNKNOWN_COMMAND,
		    "unknown command '%s'",
		    req.command);
	worker_send(w, reply);
	json_object_put(req.root);
}

static void
worker_stash_fds(struct worker *w, struct msghdr *msg)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		int *fds = (int *)CMSG_DATA(cm);
		size_t n, i;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			if (w->nfds < WORKER_MAX_FDS)
				w->fds[w->nfds++] = fds[i];
			else
				close(fds[i]);
		}
	}
}

static void
worker_ctrl_read(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	char buf[16384];
	union {
		char buf[CMSG_SPACE(WORKER_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	const char *line;
	size_t len;
	ssize_t n;
	int ret;

	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* The supervisor is gone: nobody can manage this guest. */
		log_info("%s: supervisor closed the connection", w->name);
		worker_exit(w, w->booted ? 0 : 1);
		return;
	}
	worker_stash_fds(w, &msg);
	proto_lines_feed(w->lines, buf, n);
	while ((ret = proto_lines_next(w->lines, &line, &len)) != 0) {
		if (ret < 0) {
			worker_send(w, proto_error(NULL, PROTO_ERR_TOO_LARGE,
			    "request longer than %d bytes", PROTO_MAX_LINE));
			continue;
		}
		worker_handle_line(w, line, len);
		if (event_base_got_exit(w->base))
			break;
	}
}

static void
worker_ctrl_event(struct bufferevent *bev, short what, void *arg)
{
	struct worker *w = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		worker_exit(w, w->booted ? 0 : 1);
}

static void
worker_usage(void)
{
	fprintf(stderr, "usage: vmmd-worker -c FD -n NAME\n"
	    "(started by vmmd; not meant to be run by hand)\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct worker w = { .ctrl_fd = -1 };
	static char ident[96];
	int ch, ret, verbose = 0;
	char *end;

	while ((ch = getopt(argc, argv, "c:n:v")) != -1) {
		switch (ch) {
		case 'c':
			w.ctrl_fd = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || w.ctrl_fd < 0)
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
	if (w.ctrl_fd < 0 || w.name == NULL)
		worker_usage();
	snprintf(ident, sizeof(ident), "vmmd-worker[%s]", w.name);
	log_init(ident, log_stderr_usable(), verbose);
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
	pthread_mutex_init(&w.hold_lock, NULL);
	w.base = event_base_new();
	w.lines = proto_lines_new(PROTO_MAX_LINE);
	if (w.base == NULL || w.lines == NULL ||
	    evutil_make_socket_nonblocking(w.ctrl_fd) < 0 ||
	    evutil_make_socket_closeonexec(w.ctrl_fd) < 0) {
		log_error("cannot set up the event loop");
		return 1;
	}
	w.ctrl_ev = event_new(w.base, w.ctrl_fd, EV_READ | EV_PERSIST,
	    worker_ctrl_read, &w);
	w.ctrl_out = bufferevent_socket_new(w.base, w.ctrl_fd, 0);
	w.hold_ev = event_new(w.base, -1, 0, worker_hold_cb, &w);
	if (w.ctrl_ev == NULL || w.ctrl_out == NULL || w.hold_ev == NULL) {
		log_error("cannot set up the event loop");
		return 1;
	}
	bufferevent_setcb(w.ctrl_out, NULL, NULL, worker_ctrl_event, &w);
	bufferevent_enable(w.ctrl_out, EV_WRITE);
	event_add(w.ctrl_ev, NULL);

	event_base_dispatch(w.base);

	machine_free(w.machine);
	if (w.console != NULL)
		console_drain(w.console, 1000);
	console_free(w.console);
	/* Best effort: let queued events reach the supervisor. */
	if ((ret = bev_drain(w.ctrl_out, bev_drain_now_ms() + 1000)) < 0)
		log_info("last events to vmmd not sent: %s", strerror(-ret));
	bufferevent_free(w.ctrl_out);
	event_free(w.ctrl_ev);
	event_free(w.hold_ev);
	proto_lines_free(w.lines);
	event_base_free(w.base);
	free(w.kernel);
	free(w.kernel_name);
	free(w.initrd);
	free(w.cmdline);
	free(w.hold_fatal);
	while (w.nfds > 0)
		close(worker_take_fd(&w));
	return w.exit_status;
}
