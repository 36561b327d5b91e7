/*
 * The exposition formats of /metrics: Prometheus' text format 0.0.4 and
 * OpenMetrics 1.0.  Families are collected from the supervisor itself
 * and from each worker's worker.metrics answer (vmmd-protocol(7)), then
 * rendered together, each family once with all its samples.
 *
 * A worker's answer is untrusted: every metric and label name is
 * checked, types must agree with the family's, the "vm" label and the
 * supervisor's own families are the supervisor's, no two families may
 * render the same name (a gauge "x_total" beside a counter "x", a gauge
 * "x_count" beside a histogram "x"), each worker has a quota of samples
 * and of new families, and what does not fit is left out (counted by
 * the caller).  Pure: no I/O, no logging, unit-tested on its own.
 *
 * Workers share one namespace: every worker names its families vmmd_*
 * (guest-metrics.c), each VM's samples told apart by the vm label.  So
 * the first family to render a name keeps it: a later worker's family
 * of that name but another type, or that renders a name another family
 * renders, is left out whole and counted against that worker.  A
 * compromised worker can thus hide such families of the VMs after it,
 * but never break the exposition or touch the supervisor's families.
 */
#ifndef VMMD_METRICS_FMT_H
#define VMMD_METRICS_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

/* Bounds on what one scrape holds (MFMT_MAX_SAMPLES: of the workers'
 * answers together, and of the supervisor's own apart; MFMT_MAX_FAMILIES:
 * of the supervisor's own, and new families of each worker's answer
 * apart, so that none can use up another's). */
#define MFMT_MAX_FAMILIES	1024
#define MFMT_MAX_SAMPLES	200000
/* Of one worker's answer: at most this, and its share of the above. */
#define MFMT_MAX_VM_SAMPLES	50000
#define MFMT_MAX_NAME		200
#define MFMT_MAX_LABELS		8
#define MFMT_MAX_BUCKETS	256

struct mfmt;

struct mfmt *mfmt_new(void);
void	mfmt_free(struct mfmt *f);

/*
 * One sample of a counter or gauge; name without "_total" for a counter.
 * labels: "name", "value" pairs ending with NULL (NULL: none).  0, or
 * -EINVAL (a bad name, or a type other than the family's), -E2BIG,
 * -ENOMEM.
 */
int	mfmt_add(struct mfmt *f, const char *name, const char *type,
	    const char *help, const char *const *labels, double value);
/*
 * A family of the supervisor's own, counter or gauge, before any
 * worker's answer is added: a worker's family of that name, or that
 * renders a name this one renders, is left out whole, as is one of a
 * name mfmt_add() used.  (One a worker made before the supervisor's
 * first mfmt_add() of that name, or of a name it renders, is taken
 * over or dropped, its samples with it.)  0 or -EINVAL.
 */
int	mfmt_reserve(struct mfmt *f, const char *name, const char *type,
	    const char *help);
/*
 * How many workers' answers this scrape adds: each may add at most its
 * share of MFMT_MAX_SAMPLES (and never more than MFMT_MAX_VM_SAMPLES),
 * so that no worker can use up another's.  Without it, the quota is
 * MFMT_MAX_VM_SAMPLES.
 */
void	mfmt_set_workers(struct mfmt *f, size_t n);
/*
 * Every family of a worker.metrics answer (families, borrowed), each
 * sample labelled vm="vm".  A family the supervisor has (mfmt_reserve()),
 * one whose type or rendered names clash with a family already there,
 * new families past MFMT_MAX_FAMILIES and samples past the worker's
 * quota are left out (a family with no samples counts as one).  Returns how many
 * samples were left out (0: all taken), or -ENOMEM.
 */
int	mfmt_add_worker(struct mfmt *f, struct json_object *families,
	    const char *vm);
/*
 * The whole text (malloc'ed, NUL-terminated, *len without the NUL), or
 * NULL when out of memory.  openmetrics: OpenMetrics 1.0, else the
 * Prometheus text format.
 */
char	*mfmt_render(const struct mfmt *f, bool openmetrics, size_t *len);

/* Content-Type of each format. */
#define MFMT_TEXT_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define MFMT_OM_TYPE	"application/openmetrics-text; version=1.0.0; " \
			"charset=utf-8"

#endif
