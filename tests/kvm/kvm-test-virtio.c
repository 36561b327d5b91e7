/*
 * virtio over PCI with a test guest that drives the devices by hand
 * (tests/guests/virtio.c): configuration mechanism #1, BAR placement,
 * feature negotiation, a queue with its INTx interrupt, garbage
 * descriptors that must end in DEVICE_NEEDS_RESET while the worker
 * lives on, and MSI-X through KVM's GSI routing and irqfds.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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
	struct json_object *r, *rng, *st;
	char state[32];

	tap_ok(h_create(c, "vrng", "\"kernel\":\"%s\",\"rng\":true",
	    h_env("VMMD_GUEST_VIRTIO")) == 0, "rng: created with rng");
	tap_ok(h_start(c, "vrng") == 0, "rng: started");
	tap_ok(h_vm_filtered(c, "vrng", state, sizeof(state)),
	    "rng: the worker runs under its filter (Seccomp: %s)", state);
	tap_ok(h_file_expect(log, "pci: host bridge 8086:1237", 1,
	    H_BOOT_MS) == 0, "rng: guest finds the host bridge");
	tap_ok(h_file_expect(log, "virtio: rng in slot 1, BAR 32768 bytes, "
	    "interrupt line 17", 1, H_BOOT_MS) == 0,
	    "rng: device in slot 1, 32 KiB BAR, INTA# on GSI 17");
	tap_ok(h_file_expect(log, "rng: 64 bytes", 1, H_BOOT_MS) == 0,
	    "rng: 64 bytes of entropy through the queue, with an interrupt");
	tap_ok(h_file_expect(log, "garbage: status 0x4f isr 0x2", 1,
	    H_BOOT_MS) == 0, "rng: garbage answered with NEEDS_RESET");
	tap_ok(h_file_expect(log, "msix: vector 0x51 1, retargeted 0x52 1, "
	    "masked pba 1, unmasked 1, function masked pba 1, unmasked 1", 1,
	    H_BOOT_MS) == 0, "rng: MSI-X delivered, retargeted, held "
	    "pending while masked, delivered at unmask");
	tap_ok(h_file_expect(log, "PASS", 1, H_BOOT_MS) == 0,
	    "rng: guest passes");
	tap_ok(strcmp(h_state(c, "vrng", state, sizeof(state)) ?: "",
	    "running") == 0, "rng: the worker lives on (%s)", state);
	rng = device_stats(c, "vrng", "virtio-rng", &r);
	tap_ok(rng != NULL, "rng: vm.info shows the device");
	tap_ok(h_int(rng, "bad_chains", -1) == 2,
	    "rng: both bad chains counted (%lld)",
	    (long long)h_int(rng, "bad_chains", -1));
	tap_ok(h_int(rng, "bytes", -1) == 96 + 4 * 8,
	    "rng: 128 bytes given (%lld)",
	    (long long)h_int(rng, "bytes", -1));
	/*
	 * Four MSI-X rounds, two interrupts sent at once and two when
	 * unmasked: all through the irqfd of the vector's route, none by
	 * KVM_SIGNAL_MSI; the route stays (entry 0 is unmasked).
	 */
	tap_ok(h_int(rng, "msi_irqfd", -1) == 4 &&
	    h_int(rng, "msi_signalled", -1) == 0 &&
	    h_int(rng, "msi_routes", -1) == 1 &&
	    h_int(rng, "msi_pending", -1) == 2,
	    "rng: MSI-X through the irqfd, no KVM_SIGNAL_MSI: %s",
	    h_text(rng));
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"vrng\"}");
	if (!json_object_object_get_ex(h_ret(r), "stats", &st) ||
	    !json_object_object_get_ex(st, "irq_routes", &st))
		st = NULL;
	tap_ok(st != NULL && h_int(st, "msi_routes", -1) == 1 &&
	    h_int(st, "refused", -1) == 0 &&
	    h_int(st, "max_msi_routes", -1) > 0 &&
	    h_int(st, "updates", -1) == 1 + 4,
	    "rng: the VM holds one MSI route, none refused, a table given "
	    "to KVM at boot and at each of the 4 route changes: %s",
	    st != NULL ? h_text(st) : "none");
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

/*
 * GET /metrics over DIR/metrics.sock, read to the server's close
 * (bounded by H_REPLY_MS): the whole answer, malloc'ed; NULL on failure.
 */
static char *
scrape(struct h_daemon *d)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: vmmd\r\n"
	    "Connection: close\r\n\r\n";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 1 << 20;
	double end = h_now_ms() + H_REPLY_MS;
	char *buf = malloc(cap);
	struct pollfd pfd;
	ssize_t n;
	int fd;

	/* The harness's directories are short: /tmp/vmmd-kvm-XXXXXX. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.80s/metrics.sock",
	    d->dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (buf == NULL || fd < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (len + 1 < cap && h_now_ms() < end && poll(&pfd, 1, 100) >= 0) {
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if ((n = read(fd, buf + len, cap - len - 1)) <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/*
 * Two cards on user-mode networking (a passt each): two virtio-net
 * functions, card 0 in its slot of old, card 1 in the first slot after
 * vsock's, each with its MAC (card 1's made from card 0's), each with
 * its own series in /metrics.
 */
static void
test_net(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "vnet");
	struct json_object *r, *net;
	char *text;

	/* vmmd.conf's default passt; the nested test host has none. */
	if (access("/usr/bin/passt", X_OK) < 0) {
		tap_ok(1, "# SKIP net: passt is not installed");
		return;
	}
	tap_ok(h_create(c, "vnet", "\"kernel\":\"%s\",\"net\":["
	    "{\"user\":true,\"mac\":\"52:54:00:12:34:56\"},"
	    "{\"user\":true}]", h_env("VMMD_GUEST_VIRTIO")) == 0,
	    "net: created with two user-mode cards");
	tap_ok(h_start(c, "vnet") == 0, "net: started");
	tap_ok(h_file_expect(log, "net: slot 6 mac 52:54:00:12:34:56", 1,
	    H_BOOT_MS) == 0, "net: card 0 in slot 6 with its MAC");
	tap_ok(h_file_expect(log, "net: slot 8 mac 52:54:00:12:34:57", 1,
	    H_BOOT_MS) == 0, "net: card 1 in slot 8, its MAC card 0's + 1");
	tap_ok(h_file_expect(log, "net: 2 cards", 1, H_BOOT_MS) == 0,
	    "net: two virtio-net functions on the bus");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"vnet\"}");
	tap_ok(json_object_object_get_ex(h_ret(r), "net", &net) &&
	    json_object_is_type(net, json_type_array) &&
	    json_object_array_length(net) == 2,
	    "net: vm.info lists the two cards");
	json_object_put(r);
	/* Each card a series of its own, by its device label. */
	text = scrape(d);
	tap_ok(text != NULL && strstr(text, "vmmd_net_transmit_frames_total"
	    "{vm=\"vnet\",device=\"virtio-net\"}") != NULL &&
	    strstr(text, "vmmd_net_transmit_frames_total{vm=\"vnet\","
	    "device=\"virtio-net1\"}") != NULL,
	    "net: /metrics counts each card, device virtio-net and "
	    "virtio-net1");
	free(text);
	tap_ok(h_stop(c, "vnet", true, -1, H_REPLY_MS) == 0, "net: stopped");
}

/* A raw image of size bytes starting with text; its path in path. */
static int
make_image(char *path, size_t size, const char *text)
{
	int fd = mkstemp(path);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text))
		return -1;
	return fd;
}

static void
test_blk(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "vblk");
	char a[] = "/tmp/vmmd-vblk-a-XXXXXX", b[] = "/tmp/vmmd-vblk-b-XXXXXX";
	struct json_object *r, *st;
	uint8_t sec[1536];
	char seccomp[32];
	int fa, fb, i, good;

	fa = make_image(a, 65536, "vmmd-disk-0");
	fb = make_image(b, 4096, "ro");
	memset(sec, 0xff, 512);
	tap_ok(fa >= 0 && fb >= 0 && pwrite(fa, sec, 512, 1536) == 512,
	    "blk: images made (sector 3 all ones)");
	tap_ok(h_create(c, "vblk", "\"kernel\":\"%s\",\"disks\":["
	    "{\"path\":\"%s\",\"serial\":\"vmmd-serial-0\"},"
	    "{\"path\":\"%s\",\"readonly\":true}]",
	    h_env("VMMD_GUEST_VBLK"), a, b) == 0, "blk: created with two disks");
	tap_ok(h_start(c, "vblk") == 0, "blk: started");
	tap_ok(h_vm_filtered(c, "vblk", seccomp, sizeof(seccomp)),
	    "blk: the worker runs under its filter (Seccomp: %s)", seccomp);
	tap_ok(h_file_expect(log, "vblk: disk0 slot 2, 128 sectors, serial "
	    "vmmd-serial-0", 1, H_BOOT_MS) == 0,
	    "blk: slot 2, capacity and serial");
	tap_ok(h_file_expect(log, "vblk: sector 0 says vmmd-disk-0", 1,
	    H_BOOT_MS) == 0, "blk: the guest reads what the host wrote");
	tap_ok(h_file_expect(log, "vblk: wrote, flushed and read back 1024 "
	    "bytes", 1, H_BOOT_MS) == 0, "blk: write, flush, read back");
	tap_ok(h_file_expect(log, "vblk: disk1 read-only, write status 1", 1,
	    H_BOOT_MS) == 0, "blk: a read-only disk refuses writes (IOERR)");
	tap_ok(h_file_expect(log, "vblk: bad chain: status 0x4f", 1,
	    H_BOOT_MS) == 0, "blk: a chain without status: NEEDS_RESET");
	tap_ok(h_file_expect(log, "PASS", 1, H_BOOT_MS) == 0,
	    "blk: guest passes");
	st = device_stats(c, "vblk", "disk0", &r);
	tap_ok(st != NULL && h_int(st, "writes", -1) == 1 &&
	    h_int(st, "flushes", -1) == 1 &&
	    h_int(st, "write_zeroes", -1) == 1 &&
	    h_int(st, "bytes_written", -1) == 1024 &&
	    h_int(st, "errors", -1) == 1,
	    "blk: disk0's counters: %s", st ? h_text(st) : "none");
	json_object_put(r);
	st = device_stats(c, "vblk", "disk1", &r);
	tap_ok(st != NULL && h_int(st, "errors", -1) == 1 &&
	    json_object_get_boolean(json_object_object_get(st, "readonly")),
	    "blk: disk1 counted the refusal: %s", st ? h_text(st) : "none");
	json_object_put(r);
	tap_ok(h_stop(c, "vblk", true, -1, H_REPLY_MS) == 0, "blk: stopped");

	good = pread(fa, sec, sizeof(sec), 512) == (ssize_t)sizeof(sec);
	for (i = 0; good && i < 1024; i++)
		good = sec[i] == (uint8_t)(i ^ 0x5a);
	tap_ok(good, "blk: the image holds what the guest wrote");
	for (i = 1024; good && i < 1536; i++)
		good = sec[i] == 0;
	tap_ok(good, "blk: and zeroes where it asked for them");
	pread(fb, sec, 2, 0);
	tap_ok(memcmp(sec, "ro", 2) == 0, "blk: the read-only image is intact");
	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_rng(d, c);
	test_blk(d, c);
	test_net(d, c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
