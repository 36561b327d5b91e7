/*
 * Restoring the first machine from a snapshot (restore.h): the
 * sections snapshot.c writes, each read through its table, all of
 * them before any is applied.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "blk-file.h"
#include "dev-state.h"
#include "log.h"
#include "machine-state.h"
#include "machine.h"
#include "nvram.h"
#include "pc-layout.h"
#include "restore.h"
#include "snap-file.h"
#include "start-params.h"
#include "vcpu-state.h"
#include "worker.h"

struct restore {
	int fd[3];		/* manifest, memory, state */
	char *name;
};

static const struct dev_state_field restore_devclock_fields[] = {
	{ .name = "vm_clock_ns", .type = DEV_STATE_U64,
	    DEV_STATE_AT(struct restore_devclock, vm_clock_ns),
	    .max = INT64_MAX },
};

const struct dev_state_table restore_devclock_table = {
	DEV_STATE_TABLE("devices.clock", 1, struct restore_devclock,
	    restore_devclock_fields),
};

int
restore_take(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	int n = (sp->snap_fd[0] >= 0) + (sp->snap_fd[1] >= 0) +
	    (sp->snap_fd[2] >= 0);

	if (n == 0)
		return 0;
	if (n != 3 || w->booted) {
		snprintf(err, errlen, "snapshot: %s", n != 3 ?
		    "its three files are needed" : "only at the start");
		return -EINVAL;
	}
	restore_free(w);
	if ((w->restore = calloc(1, sizeof(*w->restore))) == NULL ||
	    (w->restore->name = strdup(sp->snap_name != NULL ?
	    sp->snap_name : "snapshot")) == NULL) {
		free(w->restore);
		w->restore = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(w->restore->fd, sp->snap_fd, sizeof(w->restore->fd));
	return 0;
}

void
restore_free(struct worker *w)
{
	if (w->restore == NULL)
		return;
	for (int i = 0; i < 3; i++)
		if (w->restore->fd[i] >= 0)
			close(w->restore->fd[i]);
	free(w->restore->name);
	free(w->restore);
	w->restore = NULL;
}

/* Section name of r through t into dst: 0 or -errno with err. */
static int
restore_section(const struct snap_reader *r, const char *name,
    const struct dev_state_table *t, void *dst, char *err, size_t errlen)
{
	struct dev_state_error derr = { "" };
	const void *p;
	size_t len;
	int rc;

	if ((p = snap_section(r, name, &len)) == NULL) {
		snprintf(err, errlen, "the snapshot has no section \"%s\"",
		    name);
		return -ENOENT;
	}
	if ((rc = dev_state_load(t, dst, p, len, &derr)) < 0)
		snprintf(err, errlen, "section \"%s\": %s", name, derr.msg);
	return rc;
}

static int
restore_machine(struct machine *m, const struct snap_reader *r, char *err,
    size_t errlen)
{
	struct machine_state *ms = calloc(1, sizeof(*ms));
	struct vcpu_state **vs = calloc(m->nvcpus, sizeof(*vs));
	struct restore_devclock dc = { 0 };
	const void *devs;
	char name[32];
	size_t devs_len;
	unsigned int i;
	int rc = -ENOMEM;

	if (ms == NULL || vs == NULL)
		goto out;
	for (i = 0; i < m->nvcpus; i++)
		if ((vs[i] = calloc(1, sizeof(*vs[i]))) == NULL)
			goto out;
	if ((rc = restore_section(r, "clock", &machine_clock_table,
	    &ms->clock, err, errlen)) < 0 ||
	    (rc = restore_section(r, "pic", &machine_pic_table, &ms->pic, err,
	    errlen)) < 0 ||
	    (rc = restore_section(r, "ioapic", &machine_ioapic_table,
	    &ms->ioapic, err, errlen)) < 0 ||
	    (rc = restore_section(r, "pit", &machine_pit_table, &ms->pit, err,
	    errlen)) < 0)
		goto out;
	for (i = 0; i < m->nvcpus; i++) {
		snprintf(name, sizeof(name), "vcpu/%u", i);
		if ((rc = restore_section(r, name, &vcpu_state_table, vs[i],
		    err, errlen)) < 0)
			goto out;
	}
	snprintf(name, sizeof(name), "vcpu/%u", m->nvcpus);
	if (snap_section(r, name, &devs_len) != NULL) {
		snprintf(err, errlen, "the snapshot has more vCPUs than this "
		    "VM's %u", m->nvcpus);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = restore_section(r, "devices.clock", &restore_devclock_table,
	    &dc, err, errlen)) < 0)
		goto out;
	/* Before the devices load: their deadlines count in it. */
	if ((rc = machine_devices_clock_set(m, (int64_t)dc.vm_clock_ns)) < 0) {
		snprintf(err, errlen, "the machine is not paused");
		goto out;
	}
	if ((devs = snap_section(r, "devices", &devs_len)) == NULL) {
		snprintf(err, errlen, "the snapshot has no section "
		    "\"devices\"");
		rc = -ENOENT;
		goto out;
	}
	rc = machine_restore(m, ms, vs, devs, devs_len, err, errlen);
out:
	if (rc == -ENOMEM && err[0] == '\0')
		snprintf(err, errlen, "out of memory");
	for (i = 0; vs != NULL && i < m->nvcpus; i++)
		free(vs[i]);
	free(vs);
	free(ms);
	return rc;
}

/*
 * A "uefi" VM's variables as they were at the snapshot (written back to
 * its NVRAM file too): 0 or -errno with err.  A snapshot with variables
 * for a VM without, or the other way round, is another machine.
 */
static int
restore_nvram(struct nvram *nv, const struct snap_reader *r, char *err,
    size_t errlen)
{
	struct dev_state_error derr = { "" };
	size_t len = 0;
	const void *p = snap_section(r, "nvram", &len);
	int rc;

	if (nv == NULL && p == NULL)
		return 0;
	if (nv == NULL || p == NULL) {
		snprintf(err, errlen, "the snapshot %s UEFI variables and this "
		    "VM %s", p != NULL ? "has" : "has no",
		    nv != NULL ? "has" : "has none");
		return -EINVAL;
	}
	if ((rc = nvram_load(nv, p, len, &derr)) < 0)
		snprintf(err, errlen, "section \"nvram\": %s", derr.msg);
	return rc;
}

int
restore_sections(struct worker *w, const struct snap_reader *r, char *err,
    size_t errlen)
{
	uint32_t pages;
	int rc;

	if ((rc = restore_machine(w->machine, r, err, errlen)) < 0)
		return rc;
	/* The balloon's target as saved: the machine a reset builds too. */
	if (machine_balloon_target(w->machine, &pages) == 0)
		w->cfg.backends.balloon_pages = pages;
	return restore_nvram(w->nvram, r, err, errlen);
}

int
restore_vmgenid_fresh(uint8_t id[16])
{
	size_t got = 0;
	ssize_t n;

	while (got < 16) {
		n = getrandom(id + got, 16 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	return 0;
}

/*
 * The restored guest's new generation ID, kept for the machines that
 * follow a reset too: 0 or -errno with err.  A board without one
 * (firmware VMs) has nothing to change.
 */
static int
restore_vmgenid(struct worker *w, char *err, size_t errlen)
{
	uint8_t id[16];
	int rc;

	if ((rc = restore_vmgenid_fresh(id)) < 0) {
		snprintf(err, errlen, "a new VM generation ID: %s",
		    strerror(-rc));
		return rc;
	}
	rc = machine_vmgenid_change(w->machine, id);
	if (rc == -ENODEV)
		return 0;
	if (rc < 0) {
		snprintf(err, errlen, "the VM generation ID: %s",
		    strerror(-rc));
		return rc;
	}
	memcpy(w->cfg.backends.vmgenid, id, sizeof(id));
	return 0;
}

int
restore_apply(struct worker *w, char *err, size_t errlen)
{
	struct machine *m = w->machine;
	struct snap_region regions[2] = {
		{ 0, m->mem.low_size, m->mem.low },
		{ PC_HIGH_RAM_START, m->mem.high_size, m->high },
	};
	size_t nregions = m->high != NULL ? 2 : 1, i;
	struct restore *rs = w->restore;
	struct snap_reader r;
	char why[384] = "";
	bool opened;
	int rc;

	if (rs == NULL)
		return 0;
	/* Taken by snap_open_fds, whatever it answers. */
	rc = snap_open_fds(&r, rs->name, rs->fd[0], rs->fd[1], rs->fd[2],
	    regions, nregions, why, sizeof(why));
	rs->fd[0] = rs->fd[1] = rs->fd[2] = -1;
	opened = rc == 0;
	for (i = 0; rc == 0 && i < nregions; i++)
		rc = snap_restore_memory(&r, i, regions[i].host,
		    !machine_ram_shared(m), why, sizeof(why));
	/* The file's mappings came with default advice. */
	if (opened)
		machine_ram_remapped(m);
	if (rc == 0)
		rc = restore_sections(w, &r, why, sizeof(why));
	/*
	 * A CD-ROM drive saved empty loaded empty (ahci.c): its disc goes
	 * from the worker too, as after an eject, so that the machine a
	 * guest reset builds (guest.c) does not bring it back.
	 */
	if (rc == 0 && w->cdrom != NULL && machine_cdrom_present(m) == 0) {
		blk_file_free(w->cdrom);
		w->cdrom = NULL;
		memset(&w->cfg.backends.cdrom, 0,
		    sizeof(w->cfg.backends.cdrom));
		log_info("%s: the CD-ROM drive was empty at the snapshot: "
		    "its disc is out", w->name);
	}
	/* A restore is another instant of the guest: not so a migration. */
	if (rc == 0)
		rc = restore_vmgenid(w, why, sizeof(why));
	/* A mapping keeps its file: the descriptor may go. */
	if (opened)
		snap_close(&r);
	if (rc < 0)
		snprintf(err, errlen, "restoring %s: %s", rs->name, why);
	else
		log_info("%s: restored from %s", w->name, rs->name);
	restore_free(w);
	return rc;
}
