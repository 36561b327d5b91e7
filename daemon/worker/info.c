/*
 * worker.info: what the worker knows about its guest, for vm.info's
 * "stats": exits, KVM's counters, registers while paused, each device's
 * registers, the I/O APIC, the device host's timers, the console.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "figures-json.h"
#include "guest.h"
#include "info.h"
#include "json-u64.h"
#include "kvm-stats.h"
#include "rbd-disk.h"
#include "shutdown.h"
#include "vhost-user-msg.h"
#include "vmgenid.h"

static void
info_add_hex(struct json_object *obj, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	json_object_object_add(obj, key, json_object_new_string(buf));
}

/* A device's diagnostics, as JSON members (its figures by their key). */
struct info_diag {
	struct device_diag d;
	struct json_object *obj;
};

static void
info_diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct info_diag *id = (struct info_diag *)d;

	switch (fmt) {
	case DEVICE_DIAG_HEX:
		info_add_hex(id->obj, key, value);
		break;
	case DEVICE_DIAG_BOOL:
		json_object_object_add(id->obj, key,
		    json_object_new_boolean(value != 0));
		break;
	case DEVICE_DIAG_UINT:
		json_add_u64(id->obj, key, value);
		break;
	}
}

/*
 * NBD disk i into o: its connection's state (connected, reconnecting,
 * failed), what moved through it and what failed, and what the server
 * offers.
 */
static struct json_object *
info_nbd_json(struct worker *w, unsigned int i, struct json_object *o)
{
	struct blk_nbd_stats st;

	blk_nbd_stats(w->nbd[i], &st);
	json_object_object_add(o, "format", json_object_new_string("nbd"));
	json_add_u64(o, "size", w->cfg.backends.disk[i].size);
	json_object_object_add(o, "state", json_object_new_string(
	    blk_nbd_state_name(st.state)));
	json_add_u64(o, "reads", st.reads);
	json_add_u64(o, "writes", st.writes);
	json_add_u64(o, "flushes", st.flushes);
	json_add_u64(o, "read_bytes", st.read_bytes);
	json_add_u64(o, "written_bytes", st.written_bytes);
	json_add_u64(o, "errors", st.errors);
	json_add_u64(o, "disconnects", st.disconnects);
	json_add_u64(o, "reconnects", st.reconnects);
	json_object_object_add(o, "structured_replies",
	    json_object_new_boolean(st.structured));
	return o;
}

/*
 * RBD disk i into o: the cluster's state as its requests saw it
 * (connected; failed: one timed out or the client was blocklisted),
 * its lock and the client this worker is in the cluster, what moved and
 * what failed.
 */
static struct json_object *
info_rbd_json(struct worker *w, unsigned int i, struct json_object *o)
{
	struct blk_rbd_stats st;

	rbd_disk_stats(w, i, &st);
	json_object_object_add(o, "format", json_object_new_string("rbd"));
	json_add_u64(o, "size", w->cfg.backends.disk[i].size);
	json_object_object_add(o, "state", json_object_new_string(
	    rbd_disk_state_name(w, st.state)));
	json_object_object_add(o, "client", json_object_new_string(
	    st.client));
	json_object_object_add(o, "locked", json_object_new_boolean(
	    st.locked));
	json_add_u64(o, "reads", st.reads);
	json_add_u64(o, "writes", st.writes);
	json_add_u64(o, "flushes", st.flushes);
	json_add_u64(o, "read_bytes", st.read_bytes);
	json_add_u64(o, "written_bytes", st.written_bytes);
	json_add_u64(o, "errors", st.errors);
	json_add_u64(o, "inflight", st.inflight);
	return o;
}

/*
 * Disk i's image: its format, the size the guest sees and the bytes its
 * file takes, how many backing images lie below it and which, and its
 * metadata cache's hits and misses.
 */
static struct json_object *
info_disk_json(struct worker *w, unsigned int i)
{
	struct json_object *o = json_object_new_object();
	struct blk_image_stats st;

	if (o == NULL)
		return NULL;
	if (w->nbd[i] != NULL)
		return info_nbd_json(w, i, o);
	if (w->rbd[i] != NULL)
		return info_rbd_json(w, i, o);
	blk_file_stats(w->disks[i], &st);
	json_object_object_add(o, "format", json_object_new_string(st.format));
	json_add_u64(o, "size", w->cfg.backends.disk[i].size);
	json_add_u64(o, "allocated", st.allocated);
	json_object_object_add(o, "backing_images",
	    json_object_new_int64(st.chain));
	/* The backing files as the supervisor resolved them, top first. */
	json_object_object_add(o, "backing", json_object_get(
	    w->disk_chain[i]));
	json_add_u64(o, "cache_hits", st.cache_hits);
	json_add_u64(o, "cache_misses", st.cache_misses);
	json_object_object_add(o, "broken", json_object_new_boolean(st.broken));
	return o;
}

/* Every device that describes itself, by board name, and the I/O APIC. */
static struct json_object *
info_devices_json(struct machine *m)
{
	struct json_object *dev, *ioapic, *redir;
	struct machine_ioapic io;
	char buf[24];
	unsigned int i;
	size_t k;

	dev = json_object_new_object();
	for (k = 0; k < m->ndevs; k++) {
		struct info_diag id = { { info_diag_put, NULL }, NULL };

		if (m->devs[k].bd->ops->diag == NULL)
			continue;
		id.obj = json_object_new_object();
		machine_device_diag(m, &m->devs[k], &id.d);
		json_object_object_add(dev, m->devs[k].bd->name, id.obj);
	}
	if (machine_get_ioapic(m, &io) == 0) {
		ioapic = json_object_new_object();
		info_add_hex(ioapic, "irr", io.irr);
		redir = json_object_new_array();
		for (i = 0; i < PC_IOAPIC_PINS; i++) {
			snprintf(buf, sizeof(buf), "0x%016llx",
			    (unsigned long long)io.redir[i]);
			json_object_array_add(redir,
			    json_object_new_string(buf));
		}
		json_object_object_add(ioapic, "redirection", redir);
		json_object_object_add(dev, "ioapic", ioapic);
	}
	return dev;
}

/* Device timers and what they cost the loop. */
static struct json_object *
info_timers_json(struct machine *m)
{
	struct json_object *o = json_object_new_object();
	struct devhost_stats st;

	devhost_get_stats(m->dh, &st);
	figures_json_add(o, &devhost_figures, &st);
	return o;
}

/* The VM's MSI routes: how many, the bound, and what changing them cost. */
static struct json_object *
info_irq_routes_json(struct machine *m)
{
	struct json_object *o = json_object_new_object();
	struct irqroute_stats st;

	irqroute_get_stats(m->irqroute, &st);
	figures_json_add(o, &irqroute_figures, &st);
	return o;
}

/* Where a paused vCPU stands, or NULL when it is not paused. */
static struct json_object *
info_vcpu_regs_json(struct machine *m, unsigned int index)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct vcpu_irq_view iv;
	struct json_object *o, *a;

	if (machine_get_vcpu_regs(m, index, &regs, &sregs, &iv) < 0)
		return NULL;
	o = json_object_new_object();
	info_add_hex(o, "rip", regs.rip);
	info_add_hex(o, "rsp", regs.rsp);
	info_add_hex(o, "rflags", regs.rflags);
	info_add_hex(o, "cs", sregs.cs.selector);
	info_add_hex(o, "cr0", sregs.cr0);
	info_add_hex(o, "cr3", sregs.cr3);
	info_add_hex(o, "efer", sregs.efer);
	a = json_object_new_object();
	info_add_hex(a, "isr", iv.isr_top);
	info_add_hex(a, "irr", iv.irr_top);
	info_add_hex(a, "tpr", iv.tpr);
	info_add_hex(a, "ppr", iv.ppr);
	info_add_hex(a, "lvt_timer", iv.lvtt);
	info_add_hex(a, "timer_initial", iv.tmict);
	info_add_hex(a, "timer_current", iv.tmcct);
	if (iv.injected)
		info_add_hex(a, "injecting", iv.inject_nr);
	json_object_object_add(a, "mp_state",
	    json_object_new_int64(iv.mp_state));
	json_object_object_add(o, "apic", a);
	return o;
}

/* KVM's counters of one vCPU, those that are not zero. */
static struct json_object *
info_kvm_stats_json(struct kvm_stats *ks)
{
	struct json_object *o = json_object_new_object();
	unsigned int i;
	uint64_t v;

	if (kvm_stats_read(ks) < 0)
		return o;
	for (i = 0; i < ks->n; i++)
		if (kvm_stats_is_counter(ks, i) &&
		    (v = kvm_stats_value(ks, i)) != 0)
			json_add_u64(o, ks->names[i], v);
	return o;
}

static struct json_object *
info_console_json(struct console *c)
{
	struct json_object *o = json_object_new_object();
	struct console_stats cs;

	console_get_stats(c, &cs);
	figures_json_add(o, &console_figures, &cs);
	return o;
}

static void
info_machine(struct json_object *ret, struct machine *m,
    struct json_object *vcpus, struct json_object *kvm)
{
	struct json_object *regs = NULL, *o, *unknown;
	uint8_t id[16];
	char text[37];
	unsigned int i, k;

	for (i = 0; i < m->nvcpus; i++) {
		struct json_object *exits = json_object_new_object();

		figures_json_add(exits, &vcpu_exit_figures, &m->vcpus[i]);
		json_object_array_add(vcpus, exits);
		json_object_array_add(kvm,
		    info_kvm_stats_json(&m->vcpus[i].stats));
		/* Indexed by vCPU: one that could not be read is null,
		 * once any could. */
		o = info_vcpu_regs_json(m, i);
		if (o != NULL && regs == NULL) {
			regs = json_object_new_array();
			for (k = 0; k < i; k++)
				json_object_array_add(regs, NULL);
		}
		if (regs != NULL)
			json_object_array_add(regs, o);
	}
	if (regs != NULL)
		json_object_object_add(ret, "vcpu_regs", regs);
	unknown = json_object_new_object();
	figures_json_add(unknown, &machine_unknown_io_figures, m);
	json_object_object_add(ret, "unknown_io", unknown);
	if (m->fb_movable) {
		struct json_object *fb = json_object_new_object();

		figures_json_add(fb, &machine_fb_figures, m);
		json_object_object_add(ret, "framebuffer", fb);
	}
	if (machine_vmgenid(m, id) == 0) {
		vmgenid_text(id, text);
		json_object_object_add(ret, "generation_id",
		    json_object_new_string(text));
	}
	json_object_object_add(ret, "devices", info_devices_json(m));
	json_object_object_add(ret, "timers", info_timers_json(m));
	json_object_object_add(ret, "irq_routes", info_irq_routes_json(m));
}

/*
 * The shared directory and its server: "state" is "ready" (connected,
 * the guest's driver not started yet), "running" (the server has the
 * queues), "gone" (the server hung up: the guest's requests fail) or
 * "failed" (an exchange failed; "error" says how and on which request,
 * also once gone).
 */
static struct json_object *
info_fs_json(struct worker *w)
{
	struct json_object *o = json_object_new_object();
	struct vhost_user_info vi;
	struct pollfd p = { .fd = vhost_user_fd(w->fs),
	    .events = POLLRDHUP };
	const char *state;
	char why[128];

	vhost_user_info(w->fs, &vi);
	/* A server that ended shows at once, not at the guest's next
	 * request: nothing is read, the front end stays in step. */
	if (poll(&p, 1, 0) == 1 &&
	    (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		state = "gone";
	else if (vi.error < 0)
		state = "failed";
	else
		state = vi.running ? "running" : "ready";
	json_object_object_add(o, "tag", json_object_new_string(w->fs_tag));
	json_object_object_add(o, "server", json_object_new_string(
	    w->fs_socket ? "socket" : "virtiofsd"));
	if (w->fs_pid > 0)
		json_object_object_add(o, "pid",
		    json_object_new_int64(w->fs_pid));
	json_object_object_add(o, "readonly",
	    json_object_new_boolean(w->fs_readonly));
	json_object_object_add(o, "state", json_object_new_string(state));
	if (vi.error < 0) {
		snprintf(why, sizeof(why), "%s: %s",
		    vhost_user_msg_name(vi.error_request), vi.error ==
		    -ETIMEDOUT ? "no answer in time" : vi.error == -EPROTO ?
		    "a reply out of protocol" : strerror(-vi.error));
		json_object_object_add(o, "error",
		    json_object_new_string(why));
	}
	info_add_hex(o, "features", vi.features);
	info_add_hex(o, "protocol_features", vi.protocol);
	json_object_object_add(o, "messages",
	    json_object_new_int64((int64_t)vi.messages));
	json_object_object_add(o, "starts",
	    json_object_new_int64((int64_t)vi.starts));
	return o;
}

struct json_object *
info_json(struct worker *w)
{
	struct json_object *ret, *vcpus, *kvm, *disks;

	ret = json_object_new_object();
	vcpus = json_object_new_array();
	kvm = json_object_new_array();
	if (w->machine != NULL)
		info_machine(ret, w->machine, vcpus, kvm);
	json_object_object_add(ret, "vcpu_exits", vcpus);
	/* All exits, counted by KVM: most never reach us (see vcpu_exits). */
	json_object_object_add(ret, "vcpu_kvm", kvm);
	figures_json_add(ret, &worker_figures, w);
	/* How a stop under way asked the guest ("none" before one). */
	json_object_object_add(ret, "shutdown", json_object_new_string(
	    shutdown_stage_name(w->shutdown_stage)));
	if (w->console != NULL) {
		struct console_stats cs;

		json_object_object_add(ret, "console",
		    info_console_json(w->console));
		console_get_stats(w->console, &cs);
		w->start.first_output = cs.first_output_ns;
	}
	/* Where the start went, up to the guest's first output. */
	json_object_object_add(ret, "start", start_times_json(&w->start));
	if (w->display != NULL)
		json_object_object_add(ret, "display",
		    display_stats_json(w->display));
	if (w->cfg.backends.ndisks > 0 &&
	    (disks = json_object_new_array()) != NULL) {
		for (unsigned int i = 0; i < w->cfg.backends.ndisks; i++)
			json_object_array_add(disks, info_disk_json(w, i));
		json_object_object_add(ret, "disks", disks);
	}
	if (w->fs != NULL)
		json_object_object_add(ret, "fs", info_fs_json(w));
	return ret;
}
