/* See rbd-disk.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "module-load.h"
#include "rbd-disk.h"
#include "rbd-module.h"
#include "rbd-spec.h"

static int
rbd_disk_module(struct worker *w, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int rc;

	if (w->rbd_mod != NULL)
		return 0;
	if ((rc = module_dir_self(dir, sizeof(dir))) < 0) {
		snprintf(err, errlen, "cannot find the RBD module: "
		    "/proc/self/exe: %s", strerror(-rc));
		return rc;
	}
	return rbd_module_load(dir, &w->rbd_mod, err, errlen);
}

static int
rbd_disk_open(struct worker *w, unsigned int i, const struct start_disk *d,
    char *err, size_t errlen)
{
	struct blk_rbd_config cfg = {
		.readonly = d->readonly,
		.serial = d->serial,
	};
	struct rbd_spec spec;
	char conf[64], why[512];
	int rc;

	if (rbd_spec_parse(d->top.path, &spec, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "disk %s: %s", d->top.path, why);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = rbd_disk_module(w, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "disk %s: %s", d->top.path, why);
		goto out;
	}
	/* The supervisor's memory file: configuration, then keyring. */
	snprintf(conf, sizeof(conf), "/proc/self/fd/%d", d->top.fd);
	cfg.pool = spec.pool;
	cfg.image = spec.image;
	cfg.snap = spec.snap[0] != '\0' ? spec.snap : NULL;
	cfg.id = spec.id[0] != '\0' ? spec.id : NULL;
	cfg.conf = conf;
	cfg.lock = spec.lock;
	cfg.break_lock = d->break_lock;
	rc = w->rbd_mod->open(&w->rbd[i], &cfg, &w->cfg.backends.disk[i],
	    why, sizeof(why));
	if (rc < 0)
		snprintf(err, errlen, "disk %s: %s", d->top.path, why);
out:
	/* librados read it; nothing else ever will. */
	close(d->top.fd);
	return rc;
}

int
rbd_disk_open_all(struct worker *w, const struct start_params *sp,
    char *err, size_t errlen)
{
	int rc;

	for (unsigned int i = 0; i < sp->ndisks && i < BOARD_MAX_DISKS; i++)
		if (sp->disks[i].top.format == START_FORMAT_RBD &&
		    w->rbd[i] == NULL &&
		    (rc = rbd_disk_open(w, i, &sp->disks[i], err,
		    errlen)) < 0)
			return rc;
	return 0;
}

void
rbd_disk_close(struct worker *w, unsigned int i)
{
	if (w->rbd[i] == NULL)
		return;
	w->rbd_mod->free(w->rbd[i]);
	w->rbd[i] = NULL;
}

void
rbd_disk_stats(const struct worker *w, unsigned int i,
    struct blk_rbd_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (w->rbd[i] != NULL)
		w->rbd_mod->stats(w->rbd[i], st);
}

const char *
rbd_disk_state_name(const struct worker *w, enum blk_rbd_state s)
{
	return w->rbd_mod != NULL ? w->rbd_mod->state_name(s) : "unknown";
}

unsigned int
rbd_disk_count(const struct worker *w)
{
	unsigned int i, n = 0;

	for (i = 0; i < BOARD_MAX_DISKS; i++)
		n += w->rbd[i] != NULL;
	return n;
}
