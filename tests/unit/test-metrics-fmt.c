/*
 * The exposition formats of /metrics (metrics-fmt.h): families rendered
 * once each with every VM's samples, counters with _total, histograms
 * with their +Inf bucket, OpenMetrics' # EOF, escaping; and a worker's
 * answer checked: bad names, types that disagree, a vm label of its own,
 * falling buckets are left out and counted; a worker's family that
 * bears the name of one of the supervisor's, or renders a name another
 * family renders, is left out whole, a worker that floods samples loses
 * only its own, past its quota, and one that makes many families does
 * not keep another's out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "metrics-fmt.h"
#include "tap.h"

static char *
render(struct mfmt *f, bool om)
{
	size_t len;
	char *t = mfmt_render(f, om, &len);

	tap_ok(t != NULL && strlen(t) == len, "rendered (%zu bytes)", len);
	return t;
}

static bool
has(const char *text, const char *line)
{
	return text != NULL && strstr(text, line) != NULL;
}

/* A worker's answer: one gauge family name with n samples. */
static struct json_object *
answer(const char *name, size_t n)
{
	struct json_object *fams = json_object_new_array();
	struct json_object *fam = json_object_new_object();
	struct json_object *ss = json_object_new_array(), *s, *l;
	char v[32];
	size_t i;

	json_object_object_add(fam, "name", json_object_new_string(name));
	json_object_object_add(fam, "type", json_object_new_string("gauge"));
	json_object_object_add(fam, "help", json_object_new_string("h"));
	for (i = 0; i < n; i++) {
		l = json_object_new_object();
		snprintf(v, sizeof(v), "%zu", i);
		json_object_object_add(l, "i", json_object_new_string(v));
		s = json_object_new_array();
		json_object_array_add(s, l);
		json_object_array_add(s, json_object_new_int(1));
		json_object_array_add(ss, s);
	}
	json_object_object_add(fam, "samples", ss);
	json_object_array_add(fams, fam);
	return fams;
}

/*
 * promtool check metrics on the text format, when it is installed
 * (Debian's prometheus): what a real scraper would refuse.  Its exit
 * status 3 reports style only (a gauge named *_sum), which Prometheus
 * takes; 1 is a text it cannot parse.
 */
static void
promtool(const char *text, const char *what)
{
	char path[] = "/tmp/test-metrics-fmt.XXXXXX", cmd[256];
	FILE *out;
	int fd, rc;

	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		tap_ok(1, "# SKIP promtool is not installed");
		return;
	}
	if ((fd = mkstemp(path)) < 0 || (out = fdopen(fd, "w")) == NULL) {
		tap_ok(0, "%s: a file for promtool", what);
		return;
	}
	fputs(text != NULL ? text : "", out);
	fclose(out);
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s >/dev/null "
	    "2>&1", path);
	rc = system(cmd);
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
		/* Again, to say why. */
		snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1 | "
		    "sed 's/^/# /'", path);
		if (system(cmd) != 0)
			tap_diag("promtool's reasons could not be shown");
	}
	unlink(path);
	tap_ok(WIFEXITED(rc) && (WEXITSTATUS(rc) == 0 ||
	    WEXITSTATUS(rc) == 3), "%s: promtool check metrics parses it",
	    what);
}

/* A worker's answer: one family of a type, with one sample. */
static struct json_object *
answer1(const char *name, const char *type)
{
	char b[512];

	snprintf(b, sizeof(b), "[{\"name\":\"%s\",\"type\":\"%s\","
	    "\"help\":\"h\",\"samples\":[[{},%s]]}]", name, type,
	    strcmp(type, "histogram") == 0 ?
	    "{\"count\":1,\"sum\":2,\"buckets\":[[1,1]]}" : "1");
	return json_tokener_parse(b);
}

static int
add1(struct mfmt *f, const char *vm, const char *name, const char *type)
{
	struct json_object *w = answer1(name, type);
	int left = mfmt_add_worker(f, w, vm);

	json_object_put(w);
	return left;
}

/*
 * Names as rendered: a gauge vmmd_scrapes_total beside the supervisor's
 * counter vmmd_scrapes, a gauge foo_count beside a histogram foo (either
 * first), a counter foo beside a gauge foo_total: the later family is
 * left out and counted, the exposition stays one Prometheus reads.
 */
static void
test_rendered(void)
{
	struct mfmt *f = mfmt_new();
	char *t;
	int left;

	TAP_EQ(mfmt_reserve(f, "vmmd_scrapes", "counter", "s"), 0,
	    "vmmd_scrapes reserved");
	left = add1(f, "a", "vmmd_scrapes_total", "gauge");
	TAP_EQ(left, 1, "a gauge vmmd_scrapes_total: left out (%d)", left);
	TAP_EQ(add1(f, "a", "foo", "histogram"), 0, "a histogram foo");
	left = add1(f, "b", "foo_count", "gauge");
	TAP_EQ(left, 1, "a gauge foo_count after it: left out (%d)", left);
	TAP_EQ(add1(f, "b", "bar_sum", "gauge"), 0, "a gauge bar_sum");
	left = add1(f, "a", "bar", "histogram");
	TAP_EQ(left, 1, "a histogram bar after it: left out (%d)", left);
	TAP_EQ(add1(f, "a", "baz_total", "gauge"), 0, "a gauge baz_total");
	left = add1(f, "b", "baz", "counter");
	TAP_EQ(left, 1, "a counter baz after it: left out (%d)", left);
	TAP_EQ(add1(f, "b", "foo", "histogram"), 0,
	    "another worker's histogram foo joins the first");
	TAP_EQ(mfmt_add(f, "vmmd_scrapes", "counter", "s", NULL, 4), 0,
	    "the supervisor's counter");
	TAP_EQ(add1(f, "a", "vmmd_late_total", "gauge"), 0,
	    "a gauge vmmd_late_total before the supervisor's vmmd_late");
	TAP_EQ(mfmt_add(f, "vmmd_late", "counter", "l", NULL, 5), 0,
	    "the supervisor's counter vmmd_late takes its name over");
	t = render(f, false);
	tap_ok(has(t, "# TYPE vmmd_scrapes_total counter\n"
	    "vmmd_scrapes_total 4\n") && !has(t, "gauge\nvmmd_scrapes_total")
	    && !has(t, "foo_count{vm=\"b\"} 1\n#") &&
	    has(t, "foo_count{vm=\"b\"} 1\nfoo_sum{vm=\"b\"} 2\n") &&
	    has(t, "bar_sum{vm=\"b\"} 1\n") && !has(t, "bar_bucket") &&
	    has(t, "baz_total{vm=\"a\"} 1\n") && !has(t, "baz_total{vm=\"b\"")
	    && has(t, "vmmd_late_total 5\n") &&
	    !has(t, "vmmd_late_total{"),
	    "the first family of each name is shown, alone");
	promtool(t, "text");
	free(t);
	mfmt_free(f);
}

/* A worker that makes all the families it may: another's still go in,
 * the supervisor's too. */
static void
test_families(void)
{
	struct mfmt *f = mfmt_new();
	struct json_object *w = json_object_new_array(), *one;
	char name[32], *t;
	size_t i;
	int left;

	for (i = 0; i < MFMT_MAX_FAMILIES + 5; i++) {
		snprintf(name, sizeof(name), "vmmd_junk_%zu", i);
		one = answer(name, 1);
		json_object_array_add(w, json_object_get(
		    json_object_array_get_idx(one, 0)));
		json_object_put(one);
	}
	left = mfmt_add_worker(f, w, "a");
	json_object_put(w);
	TAP_EQ(left, 5, "past its quota of families, a worker's are left "
	    "out (%d)", left);
	left = add1(f, "b", "vmmd_disk_reads", "counter");
	TAP_EQ(left, 0, "another worker's new family goes in (%d left out)",
	    left);
	TAP_EQ(mfmt_add(f, "vmmd_workers", "gauge", "w", NULL, 2), 0,
	    "and the supervisor's own");
	t = render(f, false);
	tap_ok(has(t, "vmmd_disk_reads_total{vm=\"b\"} 1\n") &&
	    has(t, "vmmd_workers 2\n"), "both shown");
	free(t);
	mfmt_free(f);
}

/* A worker names one of the supervisor's families: left out whole. */
static void
test_shadow(void)
{
	struct mfmt *f = mfmt_new();
	struct json_object *w;
	char *t;
	int left;

	mfmt_add(f, "vmmd_vm_up", "gauge", "Up", (const char *[]){ "vm", "a",
	    NULL }, 1);
	w = answer("vmmd_vm_up", 2);
	left = mfmt_add_worker(f, w, "b");
	json_object_put(w);
	TAP_EQ(left, 2, "a worker's vmmd_vm_up: its samples left out (%d)",
	    left);
	t = render(f, false);
	tap_ok(has(t, "vmmd_vm_up{vm=\"a\"} 1\n") &&
	    !has(t, "vmmd_vm_up{vm=\"b\""), "only the supervisor's "
	    "vmmd_vm_up is shown");
	free(t);
	mfmt_free(f);
}

/* A worker that floods: the next one's samples and ours still go in. */
static void
test_flood(void)
{
	struct mfmt *f = mfmt_new();
	struct json_object *w;
	char *t;
	int left;

	w = answer("vmmd_flood", MFMT_MAX_SAMPLES + 10);
	left = mfmt_add_worker(f, w, "a");
	json_object_put(w);
	tap_ok(left >= 10, "a flood: %d of its samples left out", left);
	w = answer("vmmd_modest", 3);
	left = mfmt_add_worker(f, w, "b");
	json_object_put(w);
	TAP_EQ(left, 0, "the next worker's samples are all taken (%d left "
	    "out)", left);
	TAP_EQ(mfmt_add(f, "vmmd_workers", "gauge", "w", NULL, 2), 0,
	    "and the supervisor's own");
	t = render(f, false);
	tap_ok(has(t, "vmmd_modest{vm=\"b\",i=\"2\"} 1\n") &&
	    has(t, "vmmd_workers 2\n"), "both shown");
	free(t);
	mfmt_free(f);
}

/*
 * Names reserved before the workers' answers are the supervisor's
 * even where it adds its samples after them; with n workers, each gets
 * its share of the samples.
 */
static void
test_reserve_share(void)
{
	struct mfmt *f = mfmt_new();
	struct json_object *w;
	char *t;
	int left;

	TAP_EQ(mfmt_reserve(f, "vmmd_workers", "gauge", "w"), 0,
	    "vmmd_workers reserved");
	mfmt_set_workers(f, 10);
	w = answer("vmmd_workers", 1);
	left = mfmt_add_worker(f, w, "a");
	json_object_put(w);
	TAP_EQ(left, 1, "a worker's vmmd_workers is left out");
	w = answer("vmmd_many", MFMT_MAX_SAMPLES / 10 + 7);
	left = mfmt_add_worker(f, w, "b");
	json_object_put(w);
	TAP_EQ(left, 7, "one of ten workers: its share of %d samples taken",
	    MFMT_MAX_SAMPLES / 10);
	TAP_EQ(mfmt_add(f, "vmmd_workers", "gauge", "w", NULL, 2), 0,
	    "the supervisor adds to its family after them");
	t = render(f, false);
	tap_ok(has(t, "# TYPE vmmd_workers gauge\nvmmd_workers 2\n#"),
	    "vmmd_workers has the supervisor's sample alone");
	free(t);
	mfmt_free(f);
}

int
main(void)
{
	struct mfmt *f = mfmt_new();
	struct json_object *w;
	char *t;
	int left;

	tap_ok(f != NULL, "mfmt_new");
	TAP_EQ(mfmt_add(f, "vmmd_vm_up", "gauge", "Up", (const char *[]){
	    "vm", "a", NULL }, 1), 0, "a gauge");
	TAP_EQ(mfmt_add(f, "vmmd_scrapes", "counter", "Scrapes", NULL, 3), 0,
	    "a counter");
	TAP_EQ(mfmt_add(f, "vmmd_scrapes", "gauge", "x", NULL, 3), -EINVAL,
	    "another type for the same family: refused");
	TAP_EQ(mfmt_add(f, "bad name", "gauge", "x", NULL, 3), -EINVAL,
	    "a name with a space: refused");
	TAP_EQ(mfmt_add(f, "vmmd_x_total", "counter", "x", NULL, 3), -EINVAL,
	    "a counter named with its _total: refused");

	w = json_tokener_parse("["
	    "{\"name\":\"vmmd_vm_up\",\"type\":\"gauge\",\"help\":\"Up\","
	    " \"samples\":[[{\"vm\":\"forged\"},1]]},"
	    "{\"name\":\"vmmd_exits\",\"type\":\"counter\",\"help\":\"a\\nb\","
	    " \"samples\":[[{\"kind\":\"io \\\"x\\\"\"},5],"
	    "  [{\"bad-label\":\"x\"},1]]},"
	    "{\"name\":\"vmmd_late_seconds\",\"type\":\"histogram\","
	    " \"help\":\"h\",\"samples\":[[{},{\"count\":3,"
	    "  \"buckets\":[[0.001,1],[0.01,3]]}],"
	    "  [{},{\"count\":3,\"buckets\":[[0.01,1],[0.001,3]]}]]},"
	    "{\"name\":\"vmmd_exit_seconds\",\"type\":\"summary\",\"help\":\"s\","
	    " \"samples\":[[{\"reason\":\"IO\"},{\"count\":2,\"sum\":0.5}]]},"
	    "{\"name\":\"vmmd_scrapes\",\"type\":\"gauge\",\"help\":\"x\","
	    " \"samples\":[[{},1]]},"
	    "{\"name\":\"9bad\",\"type\":\"gauge\",\"samples\":[[{},1]]}"
	    "]");
	left = mfmt_add_worker(f, w, "b");
	/* forged vm label, bad label name, falling buckets, the type that
	 * disagrees, the bad name. */
	TAP_EQ(left, 5, "what a worker may not say is left out (%d)", left);
	json_object_put(w);

	t = render(f, false);
	tap_ok(has(t, "# TYPE vmmd_vm_up gauge\nvmmd_vm_up{vm=\"a\"} 1\n"),
	    "the supervisor's sample first, one TYPE line");
	tap_ok(!has(t, "forged"), "a worker cannot set its vm label");
	tap_ok(has(t, "# HELP vmmd_exits_total a\\nb\n"
	    "# TYPE vmmd_exits_total counter\n"
	    "vmmd_exits_total{vm=\"b\",kind=\"io \\\"x\\\"\"} 5\n"),
	    "a counter with _total, help and label value escaped");
	tap_ok(has(t, "vmmd_late_seconds_bucket{vm=\"b\",le=\"0.001\"} 1\n"
	    "vmmd_late_seconds_bucket{vm=\"b\",le=\"0.01\"} 3\n"
	    "vmmd_late_seconds_bucket{vm=\"b\",le=\"+Inf\"} 3\n"
	    "vmmd_late_seconds_count{vm=\"b\"} 3\n"),
	    "a histogram gets its +Inf bucket");
	tap_ok(has(t, "vmmd_exit_seconds_count{vm=\"b\",reason=\"IO\"} 2\n"
	    "vmmd_exit_seconds_sum{vm=\"b\",reason=\"IO\"} 0.5\n"),
	    "a summary's count and sum");
	tap_ok(!has(t, "# EOF"), "no # EOF in the text format");
	free(t);

	t = render(f, true);
	tap_ok(has(t, "# TYPE vmmd_exits counter\n") &&
	    has(t, "vmmd_exits_total{"), "OpenMetrics: the family without "
	    "_total, its samples with");
	tap_ok(t != NULL && strlen(t) >= 6 &&
	    strcmp(t + strlen(t) - 6, "# EOF\n") == 0, "OpenMetrics ends "
	    "with # EOF");
	free(t);
	mfmt_free(f);
	test_shadow();
	test_flood();
	test_reserve_share();
	test_rendered();
	test_families();
	return tap_done();
}
