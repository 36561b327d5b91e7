/*
 * See guest-metrics.h.  A family is {"name", "type", "help", "samples"}, a
 * sample [labels, value]: counters and gauges carry a number, a
 * histogram {"count", "buckets": [[le, cumulative count], ...]} (le
 * null: +Inf), a summary {"count", "sum"}.  Counter names come without
 * "_total": the renderer adds it.  Values are in base units (seconds,
 * bytes).
 */
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <linux/kvm.h>

#include "exit-stats.h"
#include "kvm-stats.h"
#include "guest.h"
#include "guest-metrics.h"
#include "rbd-disk.h"

/* The families of one answer, by name, in the order they were made. */
struct mx {
	struct json_object *families;	/* array */
	struct json_object *byname;	/* name -> family (borrowed) */
};

static struct json_object *
mx_family(struct mx *x, const char *name, const char *type,
    const char *help)
{
	struct json_object *f;

	if (json_object_object_get_ex(x->byname, name, &f))
		return json_object_object_get(f, "samples");
	f = json_object_new_object();
	json_object_object_add(f, "name", json_object_new_string(name));
	json_object_object_add(f, "type", json_object_new_string(type));
	json_object_object_add(f, "help", json_object_new_string(help));
	json_object_object_add(f, "samples", json_object_new_array());
	json_object_array_add(x->families, f);
	json_object_object_add(x->byname, name, json_object_get(f));
	return json_object_object_get(f, "samples");
}

/* labels: "k1", "v1", ..., NULL. */
static struct json_object *
mx_labels(const char *const *kv)
{
	struct json_object *l = json_object_new_object();

	for (; kv != NULL && kv[0] != NULL; kv += 2)
		json_object_object_add(l, kv[0], json_object_new_string(kv[1]));
	return l;
}

static void
mx_put(struct mx *x, const char *name, const char *type, const char *help,
    const char *const *labels, struct json_object *value)
{
	struct json_object *s = json_object_new_array();

	json_object_array_add(s, mx_labels(labels));
	json_object_array_add(s, value);
	json_object_array_add(mx_family(x, name, type, help), s);
}

static void
mx_uint(struct mx *x, const char *name, const char *type, const char *help,
    const char *const *labels, uint64_t v)
{
	mx_put(x, name, type, help, labels,
	    json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v));
}

static void
mx_double(struct mx *x, const char *name, const char *type,
    const char *help, const char *const *labels, double v)
{
	mx_put(x, name, type, help, labels, json_object_new_double(v));
}

/*
 * A counter or gauge: nanoseconds as seconds, the rest as they are;
 * labels (at most 6 pairs) and, when f has one, its own label.
 */
static void
mx_figure_value(struct mx *x, const struct figure *f,
    const char *const *labels, uint64_t v)
{
	const char *type = f->kind == FIGURE_COUNTER ? "counter" : "gauge";
	const char *all[2 * 7 + 1];
	size_t n = 0;

	for (; labels != NULL && labels[0] != NULL && n < 2 * 6; labels += 2) {
		all[n++] = labels[0];
		all[n++] = labels[1];
	}
	if (f->label != NULL) {
		all[n++] = f->label;
		all[n++] = f->key;
	}
	all[n] = NULL;
	if (f->unit == FIGURE_UNIT_NS)
		mx_double(x, f->metric, type, f->help, all, (double)v / 1e9);
	else
		mx_uint(x, f->metric, type, f->help, all, v);
}

/*
 * Figure f of src as its family, when it has one: counters and gauges
 * in base units, a histogram with its buckets' bounds.
 */
static void
mx_figure(struct mx *x, const struct figure *f, const void *src,
    const char *const *labels)
{
	struct json_object *h, *bk, *e;
	uint64_t cum = 0;
	unsigned int i;

	if (f->metric == NULL)
		return;
	if (f->kind != FIGURE_HISTOGRAM) {
		mx_figure_value(x, f, labels, figure_value(f, src));
		return;
	}
	h = json_object_new_object();
	bk = json_object_new_array();
	for (i = 0; i < f->nbuckets; i++) {
		cum += figure_bucket(f, src, i);
		e = json_object_new_array();
		json_object_array_add(e, i + 1 < f->nbuckets ?
		    json_object_new_double(f->bounds[i]) : NULL);
		json_object_array_add(e, json_object_new_int64((int64_t)cum));
		json_object_array_add(bk, e);
	}
	json_object_object_add(h, "count", json_object_new_int64(
	    (int64_t)cum));
	json_object_object_add(h, "buckets", bk);
	mx_put(x, f->metric, "histogram", f->help, labels, h);
}

static void
mx_figures(struct mx *x, const struct figure_table *t, const void *src,
    const char *const *labels)
{
	for (size_t i = 0; i < t->n; i++)
		mx_figure(x, &t->rows[i], src, labels);
}

/* Each vCPU: exits that reached us, its thread's CPU time. */
static void
metrics_vcpus(struct mx *x, struct machine *m)
{
	unsigned int i;
	char idx[16];

	for (i = 0; i < m->nvcpus; i++) {
		struct vcpu *v = &m->vcpus[i];
		struct timespec ts;
		clockid_t cid;

		snprintf(idx, sizeof(idx), "%u", i);
		mx_figures(x, &vcpu_exit_figures, v,
		    (const char *[]){ "vcpu", idx, NULL });
		if (v->ctl.thread_started &&
		    pthread_getcpuclockid(v->ctl.thread, &cid) == 0 &&
		    clock_gettime(cid, &ts) == 0)
			mx_double(x, "vmmd_vcpu_cpu_seconds", "counter",
			    "CPU time of the vCPU's thread, guest time "
			    "included", (const char *[]){ "vcpu", idx, NULL },
			    (double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	}
}

/*
 * base to the power exp, KVM's exponents being small (-9 for
 * nanoseconds); multiplied out rather than linking libm for pow().
 */
static double
metrics_kvm_scale(double base, int exp)
{
	double r = 1;

	for (int i = 0; i < (exp < 0 ? -exp : exp) && i < 64; i++)
		r = exp < 0 ? r / base : r * base;
	return r;
}

/*
 * One of KVM's statistics as a family: "vmmd_kvm_<scope>_<name>",
 * counters with "_total", values in seconds and bytes where KVM gives
 * a unit ("halt_wait_ns" becomes "halt_wait_seconds"), histograms with
 * their buckets as they are (KVM gives no sum).
 */
static void
metrics_kvm_one(struct mx *x, struct kvm_stats *ks, unsigned int i,
    const char *scope, const char *const *labels)
{
	uint32_t fl = ks->flags[i], type = fl & KVM_STATS_TYPE_MASK;
	uint32_t unit = fl & KVM_STATS_UNIT_MASK;
	int exp = ks->exponent[i];
	double scale = metrics_kvm_scale((fl & KVM_STATS_BASE_MASK) ==
	    KVM_STATS_BASE_POW2 ? 2 : 10, exp);
	char name[160], base[128];
	const char *t, *suffix = "";
	size_t n;

	snprintf(base, sizeof(base), "%s", ks->names[i]);
	n = strlen(base);
	if (unit == KVM_STATS_UNIT_SECONDS) {
		/* Its unit in its name already: "_ns", "_us"... */
		if (n > 3 && base[n - 3] == '_' && base[n - 1] == 's')
			base[n - 3] = '\0';
		suffix = "_seconds";
	} else if (unit == KVM_STATS_UNIT_BYTES) {
		if (n <= 6 || strcmp(base + n - 6, "_bytes") != 0)
			suffix = "_bytes";
	} else {
		scale = 1;
	}
	snprintf(name, sizeof(name), "vmmd_kvm_%s_%s%s", scope, base, suffix);
	if (type == KVM_STATS_TYPE_CUMULATIVE && ks->size[i] == 1)
		t = "counter";
	else if ((type == KVM_STATS_TYPE_INSTANT ||
	    type == KVM_STATS_TYPE_PEAK) && ks->size[i] == 1)
		t = "gauge";
	else if (kvm_stats_is_histogram(ks, i))
		t = "histogram";
	else
		return;
	if (strcmp(t, "histogram") != 0) {
		uint64_t v = kvm_stats_value(ks, i);

		if (scale == 1)
			mx_uint(x, name, t, "KVM binary statistic", labels, v);
		else
			mx_double(x, name, t, "KVM binary statistic", labels,
			    (double)v * scale);
		return;
	}

	/* Buckets: linear [b*w, (b+1)*w), log2 0 then [2^(b-1), 2^b). */
	struct json_object *h = json_object_new_object();
	struct json_object *bk = json_object_new_array();
	const uint64_t *d = &ks->data[ks->index[i]];
	uint64_t cum = 0, le;
	unsigned int b;

	for (b = 0; b < ks->size[i]; b++) {
		struct json_object *e = json_object_new_array();

		cum += d[b];
		if (type == KVM_STATS_TYPE_LINEAR_HIST)
			le = (uint64_t)ks->bucket[i] * (b + 1);
		else
			le = b == 0 ? 0 : b >= 64 ? UINT64_MAX :
			    ((uint64_t)1 << b) - 1;
		if (b + 1 == ks->size[i])
			json_object_array_add(e, NULL);
		else
			json_object_array_add(e, json_object_new_double(
			    (double)le * scale));
		json_object_array_add(e, json_object_new_int64((int64_t)cum));
		json_object_array_add(bk, e);
	}
	json_object_object_add(h, "count", json_object_new_int64(
	    (int64_t)cum));
	json_object_object_add(h, "buckets", bk);
	mx_put(x, name, t, "KVM binary statistic (histogram)", labels, h);
}

static void
metrics_kvm(struct mx *x, struct kvm_stats *ks, const char *scope,
    const char *const *labels)
{
	unsigned int i;

	if (ks->fd < 0 || kvm_stats_read(ks) < 0)
		return;
	for (i = 0; i < ks->n; i++)
		metrics_kvm_one(x, ks, i, scope, labels);
}

/* The exit-timing table, summed over the vCPUs, while it is on. */
static void
metrics_exit_timing(struct mx *x, struct worker *w)
{
	struct machine *m = w->machine;
	struct xs_table *sum, *one;
	double hz = xs_clock_hz(&w->xs_clock);
	unsigned int i;

	mx_uint(x, "vmmd_exit_timing_enabled", "gauge",
	    "Whether exit timing (vm.stats) is on", NULL, w->xs_on);
	if (!w->xs_on || hz <= 0)
		return;
	sum = malloc(sizeof(*sum));
	one = malloc(sizeof(*one));
	if (sum == NULL || one == NULL)
		goto out;
	xs_table_init(sum);
	for (i = 0; i < m->nvcpus; i++) {
		xs_snapshot(&m->vcpus[i].xs, one);
		xs_table_merge(sum, one);
	}
	for (i = 0; i <= XS_ROWS; i++) {
		const struct xs_row *r = &sum->rows[i];
		const char *reason = xs_reason_name(r->reason), *dev = NULL;
		bool pio = r->reason == KVM_EXIT_IO;
		bool mmio = r->reason == KVM_EXIT_MMIO;
		char num[24], addr[24];
		const char *dir = "";
		struct json_object *s;

		if (!r->used || r->acc.count == 0)
			continue;
		if (reason == NULL) {
			snprintf(num, sizeof(num), "EXIT_%u", r->reason);
			reason = num;
		}
		addr[0] = '\0';
		if (pio || mmio) {
			dir = r->dir == XS_DIR_OUT ? (pio ? "out" : "write") :
			    (pio ? "in" : "read");
			snprintf(addr, sizeof(addr), "0x%llx",
			    (unsigned long long)r->addr);
			dev = machine_device_at(m, pio, r->addr);
		}
		s = json_object_new_object();
		json_object_object_add(s, "count", json_object_new_int64(
		    (int64_t)r->acc.count));
		json_object_object_add(s, "sum", json_object_new_double(
		    (double)r->acc.sum / hz));
		mx_put(x, "vmmd_exit_duration_seconds", "summary",
		    "Exits timed by reason, device and direction, and the "
		    "time they took", (const char *[]){ "reason", reason,
		    "device", dev != NULL ? dev : "", "address", addr,
		    "direction", dir, NULL }, s);
	}
	mx_double(x, "vmmd_exit_timing_guest_seconds", "counter",
	    "Time inside KVM_RUN while exit timing was on", NULL,
	    (double)sum->guest.sum / hz);
out:
	free(sum);
	free(one);
}

/* A device's figures, labelled with its board name. */
struct metrics_diag {
	struct device_diag d;
	struct mx *x;
	const char *dev;
};

/* Registers and flags: vm.info's alone. */
static void
metrics_diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
}

static void
metrics_diag_figure(struct device_diag *d, const struct figure *f,
    uint64_t value)
{
	struct metrics_diag *md = (struct metrics_diag *)d;

	if (f->metric != NULL)
		mx_figure_value(md->x, f, (const char *[]){ "device", md->dev,
		    NULL }, value);
}

static void
metrics_devices(struct mx *x, struct machine *m)
{
	size_t k;

	for (k = 0; k < m->ndevs; k++) {
		struct metrics_diag md = { { metrics_diag_put,
		    metrics_diag_figure }, x, m->devs[k].bd->name };

		if (m->devs[k].bd->ops->diag != NULL)
			machine_device_diag(m, &m->devs[k], &md.d);
	}
}

/* The device timers: how late they ran, what re-arming cost. */
static void
metrics_timers(struct mx *x, struct machine *m)
{
	struct devhost_stats st;

	devhost_get_stats(m->dh, &st);
	mx_figures(x, &devhost_figures, &st, NULL);
}

static void
metrics_clients(struct mx *x, struct worker *w)
{
	struct console_stats cs;
	struct vnc_stats vs;

	if (w->console != NULL) {
		console_get_stats(w->console, &cs);
		mx_figures(x, &console_figures, &cs, NULL);
	}
	if (w->display != NULL) {
		display_get_vnc_stats(w->display, &vs);
		mx_figures(x, &display_vnc_figures, &vs, NULL);
	}
}

/* Each NBD disk's connection, by its index: state, losses, failures. */
static void
metrics_nbd(struct mx *x, struct worker *w)
{
	struct blk_nbd_stats st;
	char idx[16];

	for (unsigned int i = 0; i < BOARD_MAX_DISKS; i++) {
		const char *labels[] = { "disk", idx, NULL };

		if (w->nbd[i] == NULL)
			continue;
		snprintf(idx, sizeof(idx), "%u", i);
		blk_nbd_stats(w->nbd[i], &st);
		mx_uint(x, "vmmd_nbd_connected", "gauge", "Whether the NBD "
		    "disk's server is connected (0: reconnecting or failed)",
		    labels, st.state == BLK_NBD_CONNECTED);
		mx_uint(x, "vmmd_nbd_failed", "gauge", "Whether the NBD disk "
		    "gave up reconnecting (its next request tries again)",
		    labels, st.state == BLK_NBD_FAILED);
		mx_uint(x, "vmmd_nbd_errors", "counter", "Requests on the NBD "
		    "disk that failed", labels, st.errors);
		mx_uint(x, "vmmd_nbd_disconnects", "counter", "Connections to "
		    "the NBD disk's server lost", labels, st.disconnects);
		mx_uint(x, "vmmd_nbd_reconnects", "counter", "Connections to "
		    "the NBD disk's server made again", labels,
		    st.reconnects);
		mx_uint(x, "vmmd_nbd_read_bytes", "counter", "Bytes read from "
		    "the NBD disk's server", labels, st.read_bytes);
		mx_uint(x, "vmmd_nbd_written_bytes", "counter", "Bytes written "
		    "to the NBD disk's server", labels, st.written_bytes);
	}
}

/* Each RBD disk, by its index: state, lock, failures, bytes. */
static void
metrics_rbd(struct mx *x, struct worker *w)
{
	struct blk_rbd_stats st;
	char idx[16];

	for (unsigned int i = 0; i < BOARD_MAX_DISKS; i++) {
		const char *labels[] = { "disk", idx, NULL };

		if (w->rbd[i] == NULL)
			continue;
		snprintf(idx, sizeof(idx), "%u", i);
		rbd_disk_stats(w, i, &st);
		mx_uint(x, "vmmd_rbd_connected", "gauge", "Whether the RBD "
		    "disk's last request reached the cluster (0: one timed out "
		    "or the client was blocklisted; the next one tries again)",
		    labels, st.state == BLK_RBD_CONNECTED);
		mx_uint(x, "vmmd_rbd_locked", "gauge", "Whether the RBD disk "
		    "holds its image's exclusive lock", labels, st.locked);
		mx_uint(x, "vmmd_rbd_errors", "counter", "Requests on the RBD "
		    "disk that failed", labels, st.errors);
		mx_uint(x, "vmmd_rbd_inflight", "gauge", "Requests on the RBD "
		    "disk the cluster has not answered yet", labels,
		    st.inflight);
		mx_uint(x, "vmmd_rbd_read_bytes", "counter", "Bytes read from "
		    "the RBD disk's image", labels, st.read_bytes);
		mx_uint(x, "vmmd_rbd_written_bytes", "counter", "Bytes written "
		    "to the RBD disk's image", labels, st.written_bytes);
	}
}

struct json_object *
guest_metrics_json(struct worker *w)
{
	struct json_object *ret = json_object_new_object();
	struct machine *m = w->machine;
	struct mx x;
	unsigned int i;
	char idx[16];

	x.families = json_object_new_array();
	x.byname = json_object_new_object();
	mx_figures(&x, &worker_figures, w, NULL);
	metrics_clients(&x, w);
	metrics_nbd(&x, w);
	metrics_rbd(&x, w);
	if (m != NULL) {
		metrics_vcpus(&x, m);
		metrics_kvm(&x, &m->vm_stats, "vm", NULL);
		for (i = 0; i < m->nvcpus; i++) {
			snprintf(idx, sizeof(idx), "%u", i);
			metrics_kvm(&x, &m->vcpus[i].stats, "vcpu",
			    (const char *[]){ "vcpu", idx, NULL });
		}
		metrics_exit_timing(&x, w);
		metrics_devices(&x, m);
		metrics_timers(&x, m);
	}
	json_object_put(x.byname);
	json_object_object_add(ret, "families", x.families);
	return ret;
}
