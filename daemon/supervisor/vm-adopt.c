/*
 * Adoption: a worker a previous vmmd started (found by worker-sock.c,
 * believed as far as the record vmmd wrote at its start says) becomes a
 * VM of this supervisor again.  Called by vmmd.c at start-up, on the
 * loop; it uses what vm.c lends it (vm-internal.h) and nothing calls
 * back into it.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "log.h"
#include "vm-internal.h"
#include "vm.h"
#include "worker-link.h"
#include "worker-msg.h"
#include "worker-record.h"
#include "worker-sock.h"

/*
 * The VM an adopted worker runs: the stored one, else (a transient VM,
 * or a definition deleted by hand) one made from defobj, transient: it
 * goes when the guest ends.  defobj is the definition the worker was
 * started with, from its record (flags CONFIG_OWNER: ours, its owner
 * believed), or without a record the worker's own (flags 0: its owner
 * ignored, so only root may act on the VM).
 */
static struct vm *
vm_adopt_vm(struct vmmd *d, const char *name, struct json_object *defobj,
    unsigned int flags)
{
	struct vm_def *def = NULL;
	struct vm *vm;
	char err[256];

	if ((vm = vm_find(d, name)) != NULL)
		return vm_at_rest(vm) ? vm : NULL;
	if (defobj == NULL ||
	    config_parse(defobj, flags, &def, err, sizeof(err)) < 0 ||
	    strcmp(def->name, name) != 0) {
		config_def_free(def);
		def = NULL;
		log_warn("VM '%s': the worker's definition is unusable; "
		    "adopted with the defaults", name);
		defobj = json_object_new_object();
		json_object_object_add(defobj, "name",
		    json_object_new_string(name));
		if (config_parse(defobj, 0, &def, err, sizeof(err)) < 0)
			def = NULL;
		json_object_put(defobj);
		if (def == NULL)
			return NULL;
	}
	def->transient = true;
	if (!def->has_uuid)
		(void)config_uuid_new(def);	/* shown; the guest has its own */
	log_info("VM '%s': no stored definition; adopted as transient", name);
	return vm_add(d, def);
}

/*
 * The record vmmd wrote when it started f's worker (worker-record.h):
 * 1 with *rec filled, or 0 when there is none that is this worker's
 * (logged, but for none at all: an older vmmd started the worker).
 */
static int
vm_adopt_record(struct vmmd *d, const struct wsock_found *f,
    struct wrec *rec)
{
	char err[PATH_MAX + 128];
	int rc;

	rc = wrec_read(d->workersdir, f->name, rec, err, sizeof(err));
	if (rc == 0 && rec->pid != f->pid) {
		log_warn("VM '%s': the record of worker %ld is of worker "
		    "%ld: stale, not believed", f->name, (long)f->pid,
		    (long)rec->pid);
		json_object_put(rec->definition);
		rec->definition = NULL;
		return 0;
	}
	if (rc < 0 && rc != -ENOENT)
		log_warn("VM '%s': %s: not believed", f->name, err);
	return rc == 0;
}

/*
 * The vsock CID of f's guest: its record's; without one, what the
 * worker says only where vm's stored definition names that CID (what a
 * start gives it), else none, so that a worker cannot take another
 * guest's CID, nor have users of this VM's vsock socket reach another
 * guest.  A worker that says otherwise is logged.
 */
static uint32_t
vm_adopt_cid(const struct vm *vm, const struct wsock_found *f,
    const struct wrec *rec)
{
	int64_t said = wmsg_int(f->info, WMSG_ADOPT_VSOCK_CID, 0);

	if (rec != NULL) {
		if (said != rec->vsock_cid)
			log_warn("VM '%s': worker %ld says its vsock CID is "
			    "%lld, it was started with %u: %u kept", f->name,
			    (long)f->pid, (long long)said,
			    (unsigned int)rec->vsock_cid,
			    (unsigned int)rec->vsock_cid);
		return rec->vsock_cid;
	}
	if (said == 0)
		return 0;
	if (!vm->def->transient && vm->def->vsock &&
	    vm->def->vsock_cid == said)
		return (uint32_t)said;
	log_warn("VM '%s': worker %ld says its vsock CID is %lld, which "
	    "its definition does not name: not believed, no vsock socket "
	    "until the VM starts again", f->name, (long)f->pid,
	    (long long)said);
	return 0;
}

/*
 * Take over a worker a previous vmmd left.  Its uid is the kernel's
 * (wsock_found), never its answer's; its vsock CID and a transient
 * VM's definition come from the record vmmd wrote at its start.  A
 * worker an older vmmd started has no record: it is adopted all the
 * same, its uid still the kernel's (the one thing believed, with a
 * warning), its CID as vm_adopt_cid() says, its definition its own
 * with the owner dropped.
 */
int
vm_adopt(struct vmmd *d, struct wsock_found *f)
{
	struct json_object *info = f->info;
	struct wrec rec;
	const char *state;
	struct vm *vm;
	bool have_rec;
	int64_t said;
	int rc;

	have_rec = vm_adopt_record(d, f, &rec) == 1;
	if (!have_rec)
		log_warn("VM '%s': worker %ld has no record of its start (an "
		    "older vmmd started it?): adopted believing only its "
		    "uid, %u, from the kernel", f->name, (long)f->pid,
		    (unsigned int)f->uid);
	said = wmsg_int(info, WMSG_ADOPT_UID, -1);
	if (said >= 0 && said != f->uid)
		log_warn("VM '%s': worker %ld says it runs as uid %lld, the "
		    "kernel says %u: the kernel believed", f->name,
		    (long)f->pid, (long long)said, (unsigned int)f->uid);
	if (have_rec && rec.uid != 0 && rec.uid != f->uid)
		log_warn("VM '%s': worker %ld was started as uid %u and runs "
		    "as %u", f->name, (long)f->pid, (unsigned int)rec.uid,
		    (unsigned int)f->uid);
	vm = have_rec ? vm_adopt_vm(d, f->name, rec.definition, CONFIG_OWNER) :
	    vm_adopt_vm(d, f->name, wmsg_get(info, WMSG_ADOPT_DEFINITION), 0);
	if (vm == NULL) {
		log_error("VM '%s': cannot adopt worker %ld", f->name,
		    (long)f->pid);
		close(f->fd);
		close(f->pidfd);
		rc = -ENOMEM;
		goto put;
	}
	rc = wlink_adopt(d->reaper, f->fd, f->pidfd, f->pid, f->uid, f->name,
	    f->last_id, &vm_wlink_ops, vm, &vm->w);
	if (rc < 0)
		goto put;
	memset(&vm->run, 0, sizeof(vm->run));
	vm->run.booted = true;
	vm->run.log_start = wmsg_int(info, WMSG_ADOPT_LOG_START, 0);
	vm->run.started_ms = wmsg_int(info, WMSG_ADOPT_STARTED_MS, 0);
	vm->run.vsock_cid = vm_adopt_cid(vm, f, have_rec ? &rec : NULL);
	vm_run_boot_facts(vm, info, WMSG_ADOPT_BOOT_FROM, WMSG_ADOPT_SEED);
	vm_vsock_serve(vm);
	vm->prev_state = vm->state;
	state = wmsg_str(info, WMSG_ADOPT_STATE, "running");
	if (strcmp(state, "paused") == 0)
		vm_set_state(vm, VM_PAUSED, "adopted");
	else if (strcmp(state, "stopping") == 0) {
		/* The old supervisor's stop deadline went with it. */
		vm->run.stop_requested = true;
		vm_set_state(vm, VM_STOPPING, "adopted while shutting down");
		wlink_deadline_set(vm->w, VM_EXIT_GRACE);
	} else
		vm_set_state(vm, VM_RUNNING, "adopted");
	rc = 0;
put:
	if (have_rec)
		json_object_put(rec.definition);
	json_object_put(info);
	return rc;
}

