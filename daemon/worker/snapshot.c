/*
 * worker.snapshot (snapshot.h).  The sections, each a dev-state
 * section (dev-state.h), in machine-state.h's restore order:
 *
 *   "clock", "pic", "ioapic", "pit"   the machine's own (machine-state.h)
 *   "devices"                         the board's (machine_devices_save)
 *   "devices.clock"                   their VM clock (restore.h)
 *   "vcpu/N"                          each vCPU's (vcpu-state.h)
 *   "nvram"                           a "uefi" VM's variables (nvram.h)
 *
 * and the RAM as the machine has it: low, then high if any.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "blk-file.h"
#include "config.h"
#include "dev-state.h"
#include "guest-display.h"
#include "guest.h"
#include "link.h"
#include "log.h"
#include "machine-state.h"
#include "machine.h"
#include "nvram.h"
#include "pc-layout.h"
#include "proto.h"
#include "restore.h"
#include "snap-file.h"
#include "snapshot.h"
#include "test-hook.h"
#include "vcpu-state.h"
#include "worker-msg.h"
#include "worker.h"

/* A device's in-flight work is waited for this often, this long. */
#define SNAPSHOT_BUSY_TRIES	500
#define SNAPSHOT_BUSY_USEC	10000

struct snapshot_job {
	struct worker *w;
	struct json_object *id;
	int memory_fd;
	int state_fd;
	bool resume;		/* the guest runs again afterwards */
	unsigned int tries;
	struct event *retry;
};

static void
snapshot_job_end(struct snapshot_job *j, struct json_object *reply)
{
	struct worker *w = j->w;

	w->snapshot = NULL;
	if (w->machine != NULL && j->resume) {
		machine_resume(w->machine);
		display_resume(w->display);
		guest_state_event(w, "running");
	}
	link_send(w->link, reply);
	close(j->memory_fd);
	close(j->state_fd);
	if (j->retry != NULL)
		event_free(j->retry);
	json_object_put(j->id);
	free(j);
}

/* See snapshot.h. */
int
snapshot_sections(struct machine *m, struct nvram *nv,
    struct dev_state_buf *bufs, char (*names)[16], struct snap_section *secs,
    size_t *nsecs, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		const struct dev_state_table *t;
		size_t off;
	} own[] = {
		{ "clock", &machine_clock_table,
		    offsetof(struct machine_state, clock) },
		{ "pic", &machine_pic_table,
		    offsetof(struct machine_state, pic) },
		{ "ioapic", &machine_ioapic_table,
		    offsetof(struct machine_state, ioapic) },
		{ "pit", &machine_pit_table,
		    offsetof(struct machine_state, pit) },
	};
	struct machine_state *ms = calloc(1, sizeof(*ms));
	struct vcpu_state *vs = calloc(1, sizeof(*vs));
	struct restore_devclock dc;
	size_t n = 0, i;
	int rc = -ENOMEM;

	if (ms == NULL || vs == NULL)
		goto out;
	/* The devices first: the one step that may have to wait. */
	if ((rc = machine_devices_save(m, &bufs[4], err, errlen)) < 0)
		goto out;
	dc.vm_clock_ns = (uint64_t)machine_devices_clock(m);
	if ((rc = dev_state_save(&restore_devclock_table, &dc,
	    &bufs[5])) < 0)
		goto out;
	if ((rc = machine_own_state_get(m, ms, err, errlen)) < 0)
		goto out;
	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		if ((rc = dev_state_save(own[i].t, (char *)ms + own[i].off,
		    &bufs[n])) < 0) {
			snprintf(err, errlen, "%s: %s", own[i].name,
			    strerror(-rc));
			goto out;
		}
		secs[n] = (struct snap_section){ own[i].name, bufs[n].data,
		    bufs[n].len };
		n++;
	}
	secs[n] = (struct snap_section){ "devices", bufs[n].data,
	    bufs[n].len };
	n++;
	secs[n] = (struct snap_section){ "devices.clock", bufs[n].data,
	    bufs[n].len };
	n++;
	for (i = 0; i < m->nvcpus; i++) {
		if ((rc = machine_vcpu_state_get(m, (unsigned int)i, vs, err,
		    errlen)) < 0)
			goto out;
		if ((rc = dev_state_save(&vcpu_state_table, vs,
		    &bufs[n])) < 0) {
			snprintf(err, errlen, "vcpu %zu: %s", i,
			    strerror(-rc));
			goto out;
		}
		snprintf(names[n], sizeof(names[n]), "vcpu/%zu", i);
		secs[n] = (struct snap_section){ names[n], bufs[n].data,
		    bufs[n].len };
		n++;
	}
	/*
	 * The variables as the flash has them now, so that a restore gets
	 * those of this moment (the NVRAM file goes on changing).
	 */
	if (nv != NULL) {
		if ((rc = nvram_save(nv, &bufs[n])) < 0) {
			snprintf(err, errlen, "nvram: %s", strerror(-rc));
			goto out;
		}
		secs[n] = (struct snap_section){ "nvram", bufs[n].data,
		    bufs[n].len };
		n++;
	}
	*nsecs = n;
out:
	free(vs);
	free(ms);
	return rc;
}

/* One try: 0 (the reply is sent), or -EBUSY to try again later. */
static int
snapshot_try(struct snapshot_job *j)
{
	struct machine *m = j->w->machine;
	size_t nbufs = 7 + (m != NULL ? m->nvcpus : 0), nsecs = 0, i, len;
	struct dev_state_buf *bufs = calloc(nbufs, sizeof(*bufs));
	char (*names)[16] = calloc(nbufs, sizeof(*names));
	struct snap_section *secs = calloc(nbufs, sizeof(*secs));
	struct snap_region regions[2];
	struct snap_write_args a = { .vmmd_version = VMMD_VERSION,
	    .definition = j->w->definition, .regions = regions,
	    .sections = secs };
	struct json_object *ret;
	char err[256] = "", *text = NULL;
	int rc = -ENOMEM;

	if (m == NULL) {
		snprintf(err, sizeof(err), "the guest has stopped");
		rc = -ESRCH;
		goto out;
	}
	if (bufs == NULL || names == NULL || secs == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	rc = test_hook_snapshot_busy(err, sizeof(err));
	if (rc == 0)
		rc = snapshot_sections(m, j->w->nvram, bufs, names, secs,
		    &nsecs, err, sizeof(err));
	if (rc == -EBUSY && ++j->tries < SNAPSHOT_BUSY_TRIES)
		goto out;
	if (rc == -EBUSY) {
		char why[sizeof(err)];

		memcpy(why, err, sizeof(why));
		snprintf(err, sizeof(err), "a device's work in flight did not "
		    "end within %u ms: %.160s", SNAPSHOT_BUSY_TRIES *
		    (SNAPSHOT_BUSY_USEC / 1000), why);
		rc = -ETIMEDOUT;
	}
	if (rc < 0)
		goto out;
	/*
	 * The disks as the RAM expects them: every write the guest saw
	 * complete on stable storage and qcow2's metadata final, so that
	 * vmmd can freeze an image as it is now (snapshot.h).  A read-only
	 * disk has nothing to flush.
	 */
	for (i = 0; i < j->w->cfg.backends.ndisks; i++)
		if (j->w->disks[i] != NULL &&
		    !j->w->cfg.backends.disk[i].readonly &&
		    (rc = blk_file_flush(j->w->disks[i])) < 0) {
			snprintf(err, sizeof(err), "disk %zu: flush: %s", i,
			    strerror(-rc));
			goto out;
		}
	regions[0] = (struct snap_region){ 0, m->mem.low_size, m->mem.low };
	regions[1] = (struct snap_region){ PC_HIGH_RAM_START,
	    m->mem.high_size, m->high };
	a.nregions = m->high != NULL ? 2 : 1;
	a.nsections = nsecs;
	if (a.definition == NULL) {
		snprintf(err, sizeof(err), "no definition to record");
		rc = -EINVAL;
		goto out;
	}
	rc = snap_write_data(j->memory_fd, j->state_fd, &a, &text, &len, err,
	    sizeof(err));
out:
	for (i = 0; bufs != NULL && i < nbufs; i++)
		dev_state_buf_free(&bufs[i]);
	free(bufs);
	free(names);
	free(secs);
	if (rc == -EBUSY)
		return rc;
	if (rc < 0) {
		log_info("snapshot refused: %s", err);
		/* A device that cannot be saved (a shared directory's, whose
		 * open files are its server's): the VM's nature, not a fault. */
		snapshot_job_end(j, proto_error(j->id, rc == -ENOTSUP ?
		    PROTO_ERR_BAD_STATE : PROTO_ERR_INTERNAL, "snapshot: %s%s",
		    err, rc == -ENOTSUP ? " (a device without saved state: "
		    "a VM that shares a directory cannot be saved)" : ""));
		return 0;
	}
	ret = json_object_new_object();
	wmsg_put_str(ret, WMSG_SNAPSHOT_MANIFEST, text);
	free(text);
	snapshot_job_end(j, proto_reply(j->id, ret));
	return 0;
}

static void
snapshot_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snapshot_job *j = arg;
	struct timeval tv = { 0, SNAPSHOT_BUSY_USEC };

	if (snapshot_try(j) == -EBUSY)
		event_add(j->retry, &tv);
}

void
snapshot_start(struct worker *w, struct json_object *id, int memory_fd,
    int state_fd, bool resume)
{
	struct snapshot_job *j = calloc(1, sizeof(*j));
	struct timeval tv = { 0, SNAPSHOT_BUSY_USEC };

	if (j == NULL) {
		link_send(w->link, proto_error(id, PROTO_ERR_INTERNAL,
		    "snapshot: out of memory"));
		close(memory_fd);
		close(state_fd);
		return;
	}
	*j = (struct snapshot_job){ .w = w, .id = json_object_get(id),
	    .memory_fd = memory_fd, .state_fd = state_fd,
	    .resume = resume && !w->paused };
	w->snapshot = j;
	test_hook_snapshot_late();
	if (!w->paused) {
		/* vCPUs blocked on the framebuffer must get out to park. */
		display_quiesce(w->display);
		machine_pause(w->machine);
		guest_state_event(w, "paused");
	}
	if (snapshot_try(j) != -EBUSY)
		return;
	j->retry = evtimer_new(w->base, snapshot_retry_cb, j);
	if (j->retry == NULL) {
		snapshot_job_end(j, proto_error(j->id, PROTO_ERR_INTERNAL,
		    "snapshot: out of memory"));
		return;
	}
	event_add(j->retry, &tv);
}
