/*
 * virtio over PCI with a test guest that drives the devices by hand
 * (tests/guests/virtio.c): configuration mechanism #1, BAR placement,
 * feature negotiation, a queue with its INTx interrupt, and garbage
 * descriptors that must end in DEVICE_NEEDS_RESET while the worker
 * lives on.
 */
#include <string.h>

#include "harness.h"

/* stats.devices.NAME from vm.info (caller puts r). */
static struct json_object *
device_stats(struct h_conn *c, const char *vm, const char *name,
    struct json_object **r)
{
	struct json_object *st, *o;

	*r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", vm);
	if (!json_object_object_get_ex(h_ret(*r), "stats", &st) ||
	    !json_object_object_get_ex(st, "devices", &o) ||
	    !json_object_object_get_ex(o, name, &o))
		return NULL;
	return o;
}

static void
test_rng(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "vrng");
	struct json_object *r, *rng;
	char state[32];

	tap_ok(h_create(c, "vrng", "\"kernel\":\"%s\",\"rng\":true",
	    h_env("VMMD_GUEST_VIRTIO")) == 0, "rng: created with rng");
	tap_ok(h_start(c, "vrng") == 0, "rng: started");
	tap_ok(h_file_expect(log, "pci: host bridge 8086:1237", 1,
	    H_BOOT_MS) == 0, "rng: guest finds the host bridge");
	tap_ok(h_file_expect(log, "virtio: rng in slot 1, BAR 16384 bytes, "
	    "interrupt line 17", 1, H_BOOT_MS) == 0,
	    "rng: device in slot 1, 16 KiB BAR, INTA# on GSI 17");
	tap_ok(h_file_expect(log, "rng: 64 bytes", 1, H_BOOT_MS) == 0,
	    "rng: 64 bytes of entropy through the queue, with an interrupt");
	tap_ok(h_file_expect(log, "garbage: status 0x4f isr 0x2", 1,
	    H_BOOT_MS) == 0, "rng: garbage answered with NEEDS_RESET");
	tap_ok(h_file_expect(log, "PASS", 1, H_BOOT_MS) == 0,
	    "rng: guest passes");
	tap_ok(strcmp(h_state(c, "vrng", state, sizeof(state)) ?: "",
	    "running") == 0, "rng: the worker lives on (%s)", state);
	rng = device_stats(c, "vrng", "virtio-rng", &r);
	tap_ok(rng != NULL, "rng: vm.info shows the device");
	tap_ok(h_int(rng, "bad_chains", -1) == 2,
	    "rng: both bad chains counted (%lld)",
	    (long long)h_int(rng, "bad_chains", -1));
	tap_ok(h_int(rng, "bytes", -1) == 96, "rng: 96 bytes given (%lld)",
	    (long long)h_int(rng, "bytes", -1));
	json_object_put(r);
	tap_ok(h_stop(c, "vrng", true, -1, H_REPLY_MS) == 0, "rng: stopped");

	/* Without rng the slot stays empty. */
	log = h_console_log(d, "vnone");
	tap_ok(h_create(c, "vnone", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_VIRTIO")) == 0 && h_start(c, "vnone") == 0,
	    "none: started without rng");
	tap_ok(h_file_expect(log, "FAIL: no virtio-rng found", 1,
	    H_BOOT_MS) == 0, "none: no device on the bus");
	tap_ok(device_stats(c, "vnone", "virtio-rng", &r) == NULL,
	    "none: vm.info has no virtio-rng");
	json_object_put(r);
	tap_ok(h_stop(c, "vnone", true, -1, H_REPLY_MS) == 0, "none: stopped");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_rng(d, c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
