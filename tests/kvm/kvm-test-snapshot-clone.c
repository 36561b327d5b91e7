/*
 * vm.restore of one snapshot as new VMs (vmctl restore DIR --as NAME):
 * the demo guest, with a user-mode network card where passt is
 * installed and a vsock device where /dev/vhost-vsock opens, is
 * snapshotted (and stopped), then restored twice with "as": two clones
 * run side by side, neither booting again, each with the MAC derived
 * from its own name in its definition and in the virtio-net device the
 * guest reads it from, its own vsock CID, and its own VM generation ID,
 * none of them the original's; the GPE that tells the guest so was
 * raised.  "as" onto an existing name is refused with "exists"; a
 * restore without "as" after the VM was deleted creates it again under
 * its recorded name, owned by the client; a restore without "as" while
 * it runs is refused.  A subscriber sees the snapshot's progress
 * (vm.progress: pausing, memory with its bytes, done) and the restore's
 * (starting).  Then the same through vmctl, with --watch.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"

struct ident {
	char mac[32];		/* the definition's first card's */
	char dev_mac[32];	/* the virtio-net device's, as hex */
	char genid[64];
	int64_t cid;
	int64_t gpe_sts;
	int64_t gpes;
};

/* What name's guest has of its identity now (empty / -1: absent). */
static void
ident_of(struct h_conn *c, const char *name, struct ident *id)
{
	struct json_object *r, *ret, *net = NULL, *o, *stats;
	const char *s;

	memset(id, 0, sizeof(*id));
	id->cid = id->gpe_sts = id->gpes = -1;
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	if ((ret = h_ret(r)) != NULL) {
		id->cid = h_int(ret, "vsock_cid", -1);
		if (json_object_object_get_ex(ret, "net", &net) &&
		    json_object_is_type(net, json_type_array))
			net = json_object_array_get_idx(net, 0);
		if (net != NULL && (s = h_str(net, "mac")) != NULL)
			snprintf(id->mac, sizeof(id->mac), "%s", s);
		if (json_object_object_get_ex(ret, "stats", &stats) &&
		    (s = h_str(stats, "generation_id")) != NULL)
			snprintf(id->genid, sizeof(id->genid), "%s", s);
	}
	json_object_put(r);
	o = h_info_stats(c, name, "devices", "virtio-net", &r);
	if (o != NULL && (s = h_str(o, "mac")) != NULL)
		snprintf(id->dev_mac, sizeof(id->dev_mac), "%s", s);
	json_object_put(r);
	o = h_info_stats(c, name, "devices", "acpi-pm", &r);
	if (o != NULL) {
		id->gpe_sts = h_int(o, "gpe0_sts", -1);
		id->gpes = h_int(o, "gpes", -1);
	}
	json_object_put(r);
}

/* "52:54:00:12:34:56" as the device's diagnostics show it (hex). */
static void
mac_hex(const char *mac, char *out, size_t len)
{
	unsigned int b[6];
	unsigned long long v = 0;

	if (sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3],
	    &b[4], &b[5]) != 6) {
		snprintf(out, len, "?");
		return;
	}
	for (int i = 0; i < 6; i++)
		v = v << 8 | b[i];
	snprintf(out, len, "0x%llx", v);
}

/*
 * The vm.progress events of vm on ev up to phase last (or a timeout):
 * their phases, space-separated, into out; the last one's bytes and
 * total into *bytes and *total (-1 if none).
 */
static void
progress(struct h_conn *ev, const char *vm, const char *last, char *out,
    size_t len, int64_t *bytes, int64_t *total)
{
	struct json_object *e, *data;
	const char *phase;
	size_t at = 0;

	out[0] = '\0';
	*bytes = *total = -1;
	while ((e = h_read_event(ev, H_REPLY_MS)) != NULL) {
		if (strcmp(h_str(e, "event"), "vm.progress") != 0 ||
		    strcmp(h_str(e, "vm"), vm) != 0 ||
		    !json_object_object_get_ex(e, "data", &data)) {
			json_object_put(e);
			continue;
		}
		phase = h_str(data, "phase");
		if (at < len)
			at += (size_t)snprintf(out + at, len - at, "%s%s",
			    at > 0 ? " " : "", phase);
		if (json_object_object_get_ex(data, "bytes", NULL)) {
			*bytes = h_int(data, "bytes", -1);
			*total = h_int(data, "total", -1);
		}
		if (strcmp(phase, last) == 0 || strcmp(phase, "failed") == 0) {
			json_object_put(e);
			return;
		}
		json_object_put(e);
	}
}

/* name runs the demo guest on from the snapshot: ticks, no banner. */
static void
check_resumed(struct h_daemon *d, const char *name)
{
	struct h_console *con;

	if ((con = h_console_open(d, name)) == NULL) {
		tap_ok(0, "%s: no console", name);
		return;
	}
	tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_count(con->buf, con->len, DEMO_BANNER) == 0,
	    "%s: ticks on from the snapshot, no boot banner", name);
	h_console_close(con);
}

int
main(void)
{
	struct ident orig, c1, c2, again;
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c, *ev;
	struct json_object *r;
	char extra[512], hex[32], st[64], phases[256], *dir;
	int64_t bytes, total;
	bool net, vsock;
	int rc;

	h_init();
	c = h_setup(&d);
	dir = strdup(h_in_dir(d, "snap"));
	if (dir == NULL || mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	net = access("/usr/bin/passt", X_OK) == 0;
	vsock = access("/dev/vhost-vsock", R_OK | W_OK) == 0;
	snprintf(extra, sizeof(extra), "\"kernel\":\"%s\"%s%s",
	    h_env("VMMD_GUEST_DEMO"), net ? ",\"net\":{\"user\":true}" : "",
	    vsock ? ",\"vsock\":{}" : "");
	tap_ok(h_create(c, "demo", "%s", extra) == 0 &&
	    h_start(c, "demo") == 0, "demo: created%s%s, started",
	    net ? " with a network card" : "", vsock ? " and vsock" : "");
	if ((con = h_console_open(d, "demo")) == NULL)
		tap_bail("demo: no console");
	tap_ok(h_expect(con, DEMO_BANNER, H_BOOT_MS) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: banner and a tick");
	h_console_close(con);
	ident_of(c, "demo", &orig);
	tap_ok(strlen(orig.genid) == 36, "demo: a generation ID (%s)",
	    orig.genid);
	if ((ev = h_connect(d)) == NULL)
		tap_bail("no events connection");
	r = h_call(ev, "events.subscribe", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "events.subscribe: %s", h_text(r));
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"demo\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL && h_wait_state(c, "demo", "stopped",
	    H_REPLY_MS) == 0, "demo: snapshot, stopped: %s", h_text(r));
	json_object_put(r);
	progress(ev, "demo", "done", phases, sizeof(phases), &bytes, &total);
	tap_ok(strcmp(phases, "pausing memory done") == 0 && bytes > 0 &&
	    bytes <= total && total == 32 << 20,
	    "vm.progress of the snapshot: %s (%lld of %lld bytes)", phases,
	    (long long)bytes, (long long)total);

	/* Two clones of one snapshot, side by side. */
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
	    "\"as\":\"c1\"}", dir);
	tap_ok(h_ret(r) != NULL && strcmp(h_str(h_ret(r), "name"), "c1") ==
	    0, "restore as c1: %s", h_text(r));
	json_object_put(r);
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
	    "\"as\":\"c2\"}", dir);
	tap_ok(h_ret(r) != NULL, "restore as c2: %s", h_text(r));
	json_object_put(r);
	progress(ev, "c1", "starting", phases, sizeof(phases), &bytes, &total);
	tap_ok(strcmp(phases, "starting") == 0 && bytes == 0 &&
	    total == 32 << 20, "vm.progress of the restore as c1: %s",
	    phases);
	h_close(ev);
	tap_ok(strcmp(h_state(c, "c1", st, sizeof(st)), "running") == 0 &&
	    strcmp(h_state(c, "c2", st, sizeof(st)), "running") == 0,
	    "c1 and c2 run side by side");
	check_resumed(d, "c1");
	check_resumed(d, "c2");
	ident_of(c, "c1", &c1);
	ident_of(c, "c2", &c2);
	tap_ok(strlen(c1.genid) == 36 && strlen(c2.genid) == 36 &&
	    strcmp(c1.genid, c2.genid) != 0 &&
	    strcmp(c1.genid, orig.genid) != 0 &&
	    strcmp(c2.genid, orig.genid) != 0,
	    "generation IDs: demo %s, c1 %s, c2 %s", orig.genid, c1.genid,
	    c2.genid);
	tap_ok(c1.gpes == 1 && c2.gpes == 1 && (c1.gpe_sts & 1) == 1 &&
	    (c2.gpe_sts & 1) == 1,
	    "each clone's GPE 0 was raised once (gpes %lld, %lld)",
	    (long long)c1.gpes, (long long)c2.gpes);
	if (net) {
		tap_ok(c1.mac[0] != '\0' && strcmp(c1.mac, c2.mac) != 0 &&
		    strcmp(c1.mac, orig.mac) != 0 &&
		    strcmp(c2.mac, orig.mac) != 0,
		    "MACs: demo %s, c1 %s, c2 %s", orig.mac, c1.mac, c2.mac);
		mac_hex(c1.mac, hex, sizeof(hex));
		tap_ok(strcmp(c1.dev_mac, hex) == 0,
		    "c1's virtio-net device gives the guest %s", c1.dev_mac);
		mac_hex(c2.mac, hex, sizeof(hex));
		tap_ok(strcmp(c2.dev_mac, hex) == 0,
		    "c2's virtio-net device gives the guest %s", c2.dev_mac);
	} else {
		tap_ok(1, "# SKIP MACs: passt is not installed");
		tap_ok(1, "# SKIP c1's virtio-net device: passt is not installed");
		tap_ok(1, "# SKIP c2's virtio-net device: passt is not installed");
	}
	if (vsock)
		tap_ok(c1.cid > 2 && c2.cid > 2 && c1.cid != c2.cid,
		    "vsock CIDs: demo %lld, c1 %lld, c2 %lld",
		    (long long)orig.cid, (long long)c1.cid,
		    (long long)c2.cid);
	else
		tap_ok(1, "# SKIP vsock CIDs: no /dev/vhost-vsock here");

	h_expect_errorf(c, "vm.restore", "exists", "as onto an existing VM",
	    "{\"dir\":\"%s\",\"as\":\"c1\"}", dir);
	h_expect_errorf(c, "vm.restore", "invalid_argument", "as and name",
	    "{\"dir\":\"%s\",\"as\":\"c3\",\"name\":\"demo\"}", dir);

	/* Without "as": the recorded VM, made again when it is gone. */
	tap_ok(h_delete(c, "demo") == 0, "demo: deleted");
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL && strcmp(h_str(h_ret(r), "name"), "demo") ==
	    0 && strcmp(h_state(c, "demo", st, sizeof(st)), "running") == 0,
	    "restore without a VM creates demo and runs it: %s", h_text(r));
	json_object_put(r);
	check_resumed(d, "demo");
	ident_of(c, "demo", &again);
	tap_ok(strcmp(again.mac, orig.mac) == 0 && strlen(again.genid) == 36 &&
	    strcmp(again.genid, orig.genid) != 0,
	    "demo again: its recorded MAC %s, a new generation ID",
	    again.mac);
	h_expect_errorf(c, "vm.restore", "bad_state", "the recorded VM runs",
	    "{\"dir\":\"%s\"}", dir);

	/* The same through vmctl. */
	h_ctl_use(d, H_BOOT_MS);
	rc = h_ctl("restore", dir, "--as", "c3", "--watch", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "c3: restored from") != NULL &&
	    strstr(h_err(), "c3: starting: 0 of 32768 KiB") != NULL &&
	    strcmp(h_state(c, "c3", st, sizeof(st)), "running") == 0,
	    "vmctl restore DIR --as c3 --watch: %s%s", h_out(), h_err());
	rc = h_ctl("snapshot", "c3", h_in_dir(d, "snap-c3"), "--keep-running",
	    "--watch", NULL);
	tap_ok(rc == 0 && strstr(h_err(), "c3: pausing\n") != NULL &&
	    strstr(h_err(), "c3: memory: ") != NULL &&
	    strstr(h_err(), "c3: done\n") != NULL,
	    "vmctl snapshot --watch: %s", h_err());
	rc = h_ctl("info", "c3", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "generation_id: ") != NULL,
	    "vmctl info shows the generation ID");
	rc = h_ctl("restore", dir, "--as", "c3", NULL);
	tap_ok(rc != 0 && strstr(h_err(), "already exists") != NULL,
	    "vmctl restore --as onto c3 again: refused: %s", h_err());

	for (const char *const *n = (const char *const[]){ "c1", "c2", "c3",
	    "demo", NULL }; *n != NULL; n++)
		tap_ok(h_stop(c, *n, true, -1, H_REPLY_MS) == 0,
		    "%s: stopped", *n);
	free(dir);
	h_close(c);
	return h_done();
}
