/*
 * Clones with network cards of their own (vm.restore's "settings",
 * vmctl restore DIR --as NAME --net SPEC): the demo guest with its card
 * on a TAP is snapshotted and runs on (--keep-running), holding the
 * TAP.  A clone of it with the recorded backend is refused (the TAP is
 * in use); a clone given user-mode networking ("settings": {"net":
 * {"user": true}}) runs beside it from the snapshot, its definition's
 * card a user-mode one with the MAC derived from its name, which its
 * virtio-net device gives the guest; a second clone on a TAP of its own
 * with a MAC given keeps that MAC.  Settings without "as", with a key
 * other than "net", with another number of cards, or with a bad card
 * are refused; the same clone through vmctl --net; --net without --as
 * is refused by vmctl.  Needs passt (user-mode networking) and TAPs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"
#define TAP0		"vmtsnet0"
#define TAP1		"vmtsnet1"
#define GIVEN_MAC	"52:54:00:aa:bb:02"

/*
 * name's first card as vm.info shows it: its MAC into mac, and whether
 * it is user-mode ("user") or a TAP (its name) into kind; the MAC the
 * virtio-net device gives the guest (hex) into dev.
 */
static void
card_of(struct h_conn *c, const char *name, char *mac, char *kind,
    char *dev, size_t len)
{
	struct json_object *r, *ret, *net = NULL, *o;
	const char *s;

	mac[0] = kind[0] = dev[0] = '\0';
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	if ((ret = h_ret(r)) != NULL &&
	    json_object_object_get_ex(ret, "net", &net)) {
		if (json_object_is_type(net, json_type_array))
			net = json_object_array_get_idx(net, 0);
		if (net != NULL && (s = h_str(net, "mac")) != NULL)
			snprintf(mac, len, "%s", s);
		if (net != NULL && (s = h_str(net, "tap")) != NULL)
			snprintf(kind, len, "%s", s);
		else if (net != NULL && json_object_object_get_ex(net, "user",
		    &o) && json_object_get_boolean(o))
			snprintf(kind, len, "user");
	}
	json_object_put(r);
	o = h_info_stats(c, name, "devices", "virtio-net", &r);
	if (o != NULL && (s = h_str(o, "mac")) != NULL)
		snprintf(dev, len, "%s", s);
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
	char mac[32], kind[32], dev[32], omac[32], hex[32], st[64], *dir;
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	int fd, rc;

	h_init();
	if (access("/usr/bin/passt", X_OK) != 0)
		tap_skip_all("passt (user-mode networking) is not installed");
	if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) < 0)
		tap_skip_all("/dev/net/tun: %s", strerror(errno));
	close(fd);
	c = h_setup(&d);
	dir = strdup(h_in_dir(d, "snap"));
	if (dir == NULL || mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	tap_ok(h_create(c, "demo", "\"kernel\":\"%s\",\"net\":{\"tap\":\""
	    TAP0 "\"}", h_env("VMMD_GUEST_DEMO")) == 0 &&
	    h_start(c, "demo") == 0, "demo: created on TAP " TAP0 ", started");
	if ((con = h_console_open(d, "demo")) == NULL)
		tap_bail("demo: no console");
	tap_ok(h_expect(con, DEMO_BANNER, H_BOOT_MS) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "demo: banner and a tick");
	h_console_close(con);
	card_of(c, "demo", omac, kind, dev, sizeof(omac));
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"demo\","
	    "\"dir\":\"%s\",\"keep_running\":true}", dir);
	tap_ok(h_ret(r) != NULL && strcmp(h_state(c, "demo", st,
	    sizeof(st)), "running") == 0, "demo: snapshot, runs on: %s",
	    h_text(r));
	json_object_put(r);

	/* The recorded backend: the TAP demo holds. */
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
	    "\"as\":\"c0\"}", dir);
	tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r),
	    "tap " TAP0 ": in use") != NULL,
	    "a clone on the recorded TAP: refused: %s", h_text(r));
	json_object_put(r);
	tap_ok(h_delete(c, "c0") == 0, "c0, made and not started: deleted");

	/* User-mode networking instead. */
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
	    "\"as\":\"c1\",\"settings\":{\"net\":{\"user\":true}}}", dir);
	tap_ok(h_ret(r) != NULL && strcmp(h_state(c, "c1", st, sizeof(st)),
	    "running") == 0, "restore as c1 with user-mode networking: %s",
	    h_text(r));
	json_object_put(r);
	check_resumed(d, "c1");
	card_of(c, "c1", mac, kind, dev, sizeof(mac));
	mac_hex(mac, hex, sizeof(hex));
	tap_ok(strcmp(kind, "user") == 0 && mac[0] != '\0' &&
	    strcmp(mac, omac) != 0 && strcmp(dev, hex) == 0,
	    "c1: a user-mode card (%s), MAC %s (demo's %s), the device's %s",
	    kind, mac, omac, dev);

	/* A TAP of its own and a MAC given. */
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
	    "\"as\":\"c2\",\"settings\":{\"net\":[{\"tap\":\"" TAP1 "\","
	    "\"mac\":\"" GIVEN_MAC "\"}]}}", dir);
	tap_ok(h_ret(r) != NULL && strcmp(h_state(c, "c2", st, sizeof(st)),
	    "running") == 0, "restore as c2 on TAP " TAP1 ": %s", h_text(r));
	json_object_put(r);
	check_resumed(d, "c2");
	card_of(c, "c2", mac, kind, dev, sizeof(mac));
	mac_hex(GIVEN_MAC, hex, sizeof(hex));
	tap_ok(strcmp(kind, TAP1) == 0 && strcmp(mac, GIVEN_MAC) == 0 &&
	    strcmp(dev, hex) == 0, "c2: on %s, MAC %s, the device's %s", kind,
	    mac, dev);
	tap_ok(strcmp(h_state(c, "demo", st, sizeof(st)), "running") == 0,
	    "demo runs on beside its clones");

	/* What settings may not be. */
	h_expect_errorf(c, "vm.restore", "invalid_argument",
	    "settings without as", "{\"dir\":\"%s\",\"settings\":"
	    "{\"net\":{\"user\":true}}}", dir);
	h_expect_errorf(c, "vm.restore", "invalid_argument",
	    "settings with memory_mib", "{\"dir\":\"%s\",\"as\":\"c3\","
	    "\"settings\":{\"memory_mib\":64}}", dir);
	h_expect_errorf(c, "vm.restore", "invalid_argument",
	    "settings not an object", "{\"dir\":\"%s\",\"as\":\"c3\","
	    "\"settings\":[]}", dir);
	h_expect_errorf(c, "vm.restore", "invalid_argument",
	    "two cards where one was recorded", "{\"dir\":\"%s\","
	    "\"as\":\"c3\",\"settings\":{\"net\":[{\"user\":true},"
	    "{\"user\":true}]}}", dir);
	h_expect_errorf(c, "vm.restore", "invalid_argument",
	    "no card where one was recorded", "{\"dir\":\"%s\","
	    "\"as\":\"c3\",\"settings\":{\"net\":[]}}", dir);
	h_expect_errorf(c, "vm.restore", "invalid_argument",
	    "a card vm.create refuses", "{\"dir\":\"%s\",\"as\":\"c3\","
	    "\"settings\":{\"net\":{\"tap\":\"" TAP1 "\",\"user\":true}}}",
	    dir);
	tap_ok(strcmp(h_state(c, "c3", st, sizeof(st)), "(not_found)") == 0,
	    "no c3 made by the refused restores: %s", st);

	/* The same through vmctl. */
	h_ctl_use(d, H_BOOT_MS);
	rc = h_ctl("restore", dir, "--as", "c3", "--net", "user", NULL);
	card_of(c, "c3", mac, kind, dev, sizeof(mac));
	tap_ok(rc == 0 && strstr(h_out(), "c3: restored from") != NULL &&
	    strcmp(h_state(c, "c3", st, sizeof(st)), "running") == 0 &&
	    strcmp(kind, "user") == 0,
	    "vmctl restore DIR --as c3 --net user: %s%s (%s)", h_out(),
	    h_err(), kind);
	rc = h_ctl("restore", dir, "--net", "user", NULL);
	tap_ok(rc != 0 && strstr(h_err(), "--net: only with --as") != NULL,
	    "vmctl restore --net without --as: refused: %s", h_err());
	rc = h_ctl("restore", dir, "--as", "c4", "--net", "bogus", NULL);
	tap_ok(rc != 0 && strstr(h_err(), "unknown option 'bogus'") != NULL,
	    "vmctl restore --net bogus: refused: %s", h_err());

	for (const char *const *n = (const char *const[]){ "c1", "c2", "c3",
	    "demo", NULL }; *n != NULL; n++)
		tap_ok(h_stop(c, *n, true, -1, H_REPLY_MS) == 0,
		    "%s: stopped", *n);
	free(dir);
	h_close(c);
	return h_done();
}
