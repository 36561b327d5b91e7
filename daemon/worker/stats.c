/*
 * See stats.h.  Rows are read from each vCPU's own table (a consistent
 * copy, taken without stopping it), summed when no vCPU is named, named
 * after the board's devices, converted from TSC ticks to microseconds
 * and sorted by the time they took.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/kvm.h>

#include "exit-stats.h"
#include "json-u64.h"
#include "kvm-stats.h"
#include "stats.h"

void
stats_machine_built(struct worker *w)
{
	struct machine *m = w->machine;
	unsigned int i;

	if (w->xs_clock.tsc0 == 0)
		xs_clock_init(&w->xs_clock);
	w->xs_since_ns = xs_mono_ns();
	for (i = 0; i < m->nvcpus; i++)
		xs_set(&m->vcpus[i].xs, w->xs_on, w->xs_segments);
}

/*
 * Rounding and a square root for figures that are never negative,
 * written here rather than linking libm: the worker would map all of
 * it (about 170 KiB of every worker's PSS) for these two.
 */
static double
stats_round(double v)
{
	return v > 0 ? (double)(uint64_t)(v + 0.5) : 0;
}

static double
stats_sqrt(double v)
{
	double r = v > 1 ? v : 1;

	if (!(v > 0))
		return 0;
	/* Newton's method: halves its way down from v, then doubles the
	 * correct digits at each step; 64 steps cover every double. */
	for (int i = 0; i < 64; i++)
		r = (r + v / r) / 2;
	return r;
}

/* Ticks to microseconds, rounded to the nanosecond. */
static void
stats_add_us(struct json_object *o, const char *key, double ticks,
    double hz)
{
	json_object_object_add(o, key,
	    json_object_new_double(stats_round(ticks * 1e9 / hz) / 1e3));
}

static void
stats_add_acc(struct json_object *o, const struct xs_acc *a, double hz,
    uint64_t total)
{
	json_add_u64(o, "count", a->count);
	stats_add_us(o, "min_us", a->count ? (double)a->min : 0, hz);
	stats_add_us(o, "max_us", (double)a->max, hz);
	stats_add_us(o, "sum_us", (double)a->sum, hz);
	stats_add_us(o, "avg_us", a->count ?
	    (double)a->sum / (double)a->count : 0, hz);
	stats_add_us(o, "stddev_us", stats_sqrt(xs_acc_variance(a)), hz);
	json_object_object_add(o, "time_pct", json_object_new_double(
	    total ? stats_round((double)a->sum * 1e4 / (double)total) / 100 :
	    0));
}

static struct json_object *
stats_row_json(struct machine *m, const struct xs_row *r,
    const struct xs_segs *s, double hz, uint64_t total, bool segments)
{
	struct json_object *o = json_object_new_object(), *seg;
	const char *reason = xs_reason_name(r->reason), *dev = NULL;
	bool pio = r->reason == KVM_EXIT_IO, mmio = r->reason == KVM_EXIT_MMIO;
	char name[64], addr[24], num[24];
	unsigned int k;

	if (reason == NULL) {
		snprintf(num, sizeof(num), "EXIT_%u", r->reason);
		reason = num;
	}
	json_object_object_add(o, "exit", json_object_new_string(reason));
	if (pio || mmio) {
		const char *dir = r->dir == XS_DIR_OUT ? (pio ? "out" :
		    "write") : (pio ? "in" : "read");

		snprintf(addr, sizeof(addr), "0x%llx",
		    (unsigned long long)r->addr);
		snprintf(name, sizeof(name), "%s %s %s", reason, addr, dir);
		json_object_object_add(o, "addr",
		    json_object_new_string(addr));
		json_object_object_add(o, "dir", json_object_new_string(dir));
		dev = machine_device_at(m, pio, r->addr);
		if (dev != NULL)
			json_object_object_add(o, "device",
			    json_object_new_string(dev));
	} else {
		snprintf(name, sizeof(name), "%s", reason);
	}
	json_object_object_add(o, "name", json_object_new_string(name));
	stats_add_acc(o, &r->acc, hz, total);
	if (segments) {
		seg = json_object_new_object();
		json_add_u64(seg, "count", s->count);
		for (k = 0; k < XS_SEGS; k++) {
			char key[32];

			snprintf(key, sizeof(key), "%s_us", xs_seg_names[k]);
			stats_add_us(seg, key, (double)s->seg[k], hz);
		}
		json_object_object_add(o, "segments", seg);
	}
	return o;
}

static int
stats_by_time(const void *a, const void *b)
{
	const struct xs_row *ra = *(const struct xs_row *const *)a;
	const struct xs_row *rb = *(const struct xs_row *const *)b;

	if (ra->acc.sum != rb->acc.sum)
		return ra->acc.sum < rb->acc.sum ? 1 : -1;
	return ra->acc.count < rb->acc.count ? 1 :
	    ra->acc.count > rb->acc.count ? -1 : 0;
}

static void
stats_table_json(struct json_object *ret, struct machine *m,
    const struct xs_table *t, double hz, bool segments)
{
	const struct xs_row *sorted[XS_ROWS + 1];
	struct json_object *rows, *guest;
	uint64_t total = xs_table_total(t);
	unsigned int i, n = 0;

	for (i = 0; i <= XS_ROWS; i++)
		if (t->rows[i].used && t->rows[i].acc.count > 0)
			sorted[n++] = &t->rows[i];
	qsort(sorted, n, sizeof(sorted[0]), stats_by_time);
	rows = json_object_new_array();
	for (i = 0; i < n; i++)
		json_object_array_add(rows, stats_row_json(m, sorted[i],
		    &t->segs[sorted[i] - t->rows], hz, total, segments));
	json_object_object_add(ret, "exits", rows);
	guest = json_object_new_object();
	json_object_object_add(guest, "name",
	    json_object_new_string("TIMEINGUEST"));
	stats_add_acc(guest, &t->guest, hz, total);
	json_object_object_add(ret, "guest", guest);
	stats_add_us(ret, "total_us", (double)total, hz);
}

/* KVM's statistics of one fd, by name: values, histograms summarised. */
static struct json_object *
stats_kvm_json(struct kvm_stats *ks)
{
	struct json_object *o = json_object_new_object(), *h;
	struct kvm_stats_hist hist;
	unsigned int i;

	if (ks->fd < 0 || kvm_stats_read(ks) < 0)
		return o;
	for (i = 0; i < ks->n; i++) {
		if (!kvm_stats_is_histogram(ks, i)) {
			json_add_u64(o, ks->names[i], kvm_stats_value(ks, i));
			continue;
		}
		kvm_stats_summary(ks, i, &hist);
		h = json_object_new_object();
		json_add_u64(h, "samples", hist.samples);
		json_add_u64(h, "p50", hist.p50);
		json_add_u64(h, "p99", hist.p99);
		json_object_object_add(o, ks->names[i], h);
	}
	return o;
}

static struct json_object *
stats_kvm(struct machine *m, int only)
{
	struct json_object *o = json_object_new_object(), *vcpus;
	unsigned int i;

	json_object_object_add(o, "vm", stats_kvm_json(&m->vm_stats));
	vcpus = json_object_new_array();
	for (i = 0; i < m->nvcpus; i++)
		if (only < 0 || (unsigned int)only == i)
			json_object_array_add(vcpus,
			    stats_kvm_json(&m->vcpus[i].stats));
	json_object_object_add(o, "vcpus", vcpus);
	return o;
}

int
stats_json(struct worker *w, const struct stats_request *r,
    struct json_object **out, char *err, size_t errlen)
{
	struct machine *m = w->machine;
	struct xs_table *sum, *one;
	struct json_object *ret;
	unsigned int i;
	double hz;

	if (r->vcpu >= 0 && (unsigned int)r->vcpu >= m->nvcpus) {
		snprintf(err, errlen, "vcpu: the guest has %u vCPUs (0 to %u)",
		    m->nvcpus, m->nvcpus - 1);
		return -EINVAL;
	}
	if (r->reset) {
		for (i = 0; i < m->nvcpus; i++)
			xs_reset(&m->vcpus[i].xs);
		w->xs_since_ns = xs_mono_ns();
	}
	/* Enabling says with segments or without, anew each time. */
	if (r->enable >= 0 && ((r->enable != 0) != w->xs_on ||
	    (r->enable && r->segments != w->xs_segments))) {
		if (r->enable && !w->xs_on)
			w->xs_since_ns = xs_mono_ns();
		w->xs_on = r->enable != 0;
		w->xs_segments = r->enable && r->segments;
		for (i = 0; i < m->nvcpus; i++)
			xs_set(&m->vcpus[i].xs, w->xs_on, w->xs_segments);
	}

	sum = malloc(sizeof(*sum));
	one = malloc(sizeof(*one));
	if (sum == NULL || one == NULL) {
		free(sum);
		free(one);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = json_object_new_object();
	xs_table_init(sum);
	for (i = 0; i < m->nvcpus; i++) {
		if (r->vcpu >= 0 && (unsigned int)r->vcpu != i)
			continue;
		xs_snapshot(&m->vcpus[i].xs, one);
		xs_table_merge(sum, one);
	}
	hz = xs_clock_hz(&w->xs_clock);
	json_object_object_add(ret, "enabled",
	    json_object_new_boolean(w->xs_on));
	json_object_object_add(ret, "segments",
	    json_object_new_boolean(w->xs_segments));
	json_object_object_add(ret, "clock", json_object_new_string("tsc"));
	json_object_object_add(ret, "tsc_hz",
	    json_object_new_int64((int64_t)stats_round(hz)));
	json_object_object_add(ret, "vcpus",
	    json_object_new_int((int)m->nvcpus));
	if (r->vcpu >= 0)
		json_object_object_add(ret, "vcpu",
		    json_object_new_int(r->vcpu));
	json_object_object_add(ret, "elapsed_us", json_object_new_double(
	    (double)((xs_mono_ns() - w->xs_since_ns) / 1000)));
	stats_table_json(ret, m, sum, hz, r->segments);
	if (r->kvm)
		json_object_object_add(ret, "kvm", stats_kvm(m, r->vcpu));
	free(sum);
	free(one);
	*out = ret;
	return 0;
}
