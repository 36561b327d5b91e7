/*
 * Unit tests for daemon/common/start-params.c, the start contract: a
 * full start encoded, checked against worker.boot's shape and decoded
 * gives the same start and the same bytes again; the bytes are the
 * link's (one start written out whole); and the decoder refuses what
 * the shape refuses and what it cannot say, leaving nothing behind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "start-params.h"
#include "tap.h"

static char *
dup(const char *s)
{
	char *c = strdup(s);

	if (c == NULL)
		tap_bail("out of memory");
	return c;
}

/* A start with every part there is; boot_disk instead of a kernel. */
static void
full(struct start_params *sp, bool boot_disk)
{
	struct start_disk *d;
	struct start_nic *n;

	start_params_init(sp);
	sp->name = dup("web");
	if (boot_disk) {
		sp->has_boot_disk = true;
		sp->boot_disk = (struct start_boot_disk){ .disk = 1,
		    .append = dup("console=ttyS0 quiet") };
	} else {
		sp->kernel = dup("/proc/self/fd/7");
		sp->kernel_name = dup("/srv/vmlinuz");
		sp->initrd = dup("/proc/self/fd/8");
		sp->initrd_name = dup("/srv/initrd.img");
	}
	sp->cmdline = dup("console=ttyS0");
	sp->memory_mib = 512;
	sp->vcpus = 2;
	sp->has_uuid = true;
	for (unsigned int i = 0; i < sizeof(sp->uuid); i++)
		sp->uuid[i] = (uint8_t)(0xa0 + i);
	sp->on_reboot = START_REBOOT_STOP;
	sp->lost_ticks = START_TICKS_DISCARD;
	sp->rtc_backlog_max = 300;
	sp->rtc_slices = 8;
	sp->rng = true;
	sp->balloon = true;
	sp->console_log = dup("/var/lib/vmmd/console/web.log");
	sp->console_log_max = 1 << 20;
	sp->adopt_fd = 4;
	sp->kvm_fd = 6;
	sp->cdrom_fd = 74;
	sp->cdrom_name = dup("/srv/install.iso");
	sp->log_start = 4096;
	sp->started_ms = 1700000000123;
	sp->request_ns = 5000;
	sp->spawn_ns = 6000;
	sp->definition = json_tokener_parse("{\"name\":\"web\"}");
	d = &sp->disks[sp->ndisks++];
	*d = (struct start_disk){ .top = { 11, dup("/d/root.img"),
	    START_FORMAT_RAW }, .readonly = true, .serial = dup("ROOT1") };
	d = &sp->disks[sp->ndisks++];
	*d = (struct start_disk){ .top = { 12, dup("/d/over.qcow2"),
	    START_FORMAT_QCOW2 }, .sata = true };
	d->backing[d->nbacking++] = (struct start_image){ 15,
	    dup("/d/mid.qcow2"), START_FORMAT_QCOW2 };
	d->backing[d->nbacking++] = (struct start_image){ 16,
	    dup("/d/base.img"), START_FORMAT_RAW };
	n = &sp->nics[sp->nnics++];
	*n = (struct start_nic){ .mac = { 0x52, 0x54, 0, 0xab, 0xcd, 0xef },
	    .tap_fd = 9, .tap = "tap0" };
	n = &sp->nics[sp->nnics++];
	*n = (struct start_nic){ .mac = { 0x52, 0x54, 0, 1, 2, 3 },
	    .user = true, .tap_fd = -1, .passt = dup("/usr/bin/passt") };
	n->forward[n->nforward++] = (struct start_forward){ .host_port = 2222,
	    .guest_port = 22 };
	n->forward[n->nforward++] = (struct start_forward){ .udp = true,
	    .addr = "127.0.0.1", .host_port = 5353, .guest_port = 53 };
	sp->has_display = true;
	sp->display = (struct start_display){ .listen = dup("127.0.0.1"),
	    .port = 5901, .password = "s3cretPw", .width = 1280,
	    .height = 800, .http_port = 5801,
	    .web_dir = dup("/usr/share/novnc") };
	sp->has_vsock = true;
	sp->vsock = (struct start_vsock){ .fd = 10, .cid = 42 };
	sp->has_seed = true;
	sp->seed.hostname = dup("web");
	sp->seed.user_data = dup("#cloud-config\n");
	sp->seed.network_config = dup("version: 2\n");
	sp->seed.ssh_keys[sp->seed.nkeys++] = dup("ssh-ed25519 AAAA a@b");
	sp->seed.ssh_keys[sp->seed.nkeys++] = dup("ssh-rsa BBBB c@d");
}

static int
str_eq(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static int
image_eq(const struct start_image *a, const struct start_image *b)
{
	return a->fd == b->fd && a->format == b->format &&
	    str_eq(a->path, b->path);
}

/* Whether a and b are the same start, part by part; what differs to why. */
static int
same(const struct start_params *a, const struct start_params *b,
    const char **why)
{
	unsigned int i, k;

#define SAME(cond, what) do { if (!(cond)) { *why = what; return 0; } } \
	while (0)
	SAME(str_eq(a->name, b->name) && str_eq(a->kernel, b->kernel) &&
	    str_eq(a->kernel_name, b->kernel_name) &&
	    str_eq(a->firmware, b->firmware) &&
	    str_eq(a->firmware_name, b->firmware_name) &&
	    str_eq(a->initrd, b->initrd) &&
	    str_eq(a->initrd_name, b->initrd_name) &&
	    str_eq(a->cmdline, b->cmdline), "kernel and names");
	SAME(a->memory_mib == b->memory_mib && a->vcpus == b->vcpus &&
	    a->on_reboot == b->on_reboot, "machine");
	SAME(a->has_uuid == b->has_uuid &&
	    memcmp(a->uuid, b->uuid, sizeof(a->uuid)) == 0, "uuid");
	SAME(a->lost_ticks == b->lost_ticks &&
	    a->rtc_backlog_max == b->rtc_backlog_max &&
	    a->rtc_slices == b->rtc_slices && a->rng == b->rng &&
	    a->balloon == b->balloon, "rtc, rng, balloon");
	SAME(str_eq(a->console_log, b->console_log) &&
	    a->console_log_max == b->console_log_max &&
	    a->log_start == b->log_start, "console");
	SAME(a->adopt_fd == b->adopt_fd && a->kvm_fd == b->kvm_fd &&
	    a->started_ms == b->started_ms && a->request_ns == b->request_ns &&
	    a->spawn_ns == b->spawn_ns, "descriptors and times");
	SAME(a->cdrom_fd == b->cdrom_fd &&
	    str_eq(a->cdrom_name, b->cdrom_name), "cdrom");
	SAME(json_object_equal(a->definition, b->definition), "definition");
	SAME(a->ndisks == b->ndisks, "disks");
	for (i = 0; i < a->ndisks; i++) {
		const struct start_disk *x = &a->disks[i], *y = &b->disks[i];

		SAME(x->sata == y->sata, "a disk's bus");
		SAME(image_eq(&x->top, &y->top) && x->readonly == y->readonly &&
		    str_eq(x->serial, y->serial) && x->nbacking == y->nbacking,
		    "a disk");
		for (k = 0; k < x->nbacking; k++)
			SAME(image_eq(&x->backing[k], &y->backing[k]),
			    "a backing file");
	}
	SAME(a->nnics == b->nnics, "cards");
	for (i = 0; i < a->nnics; i++) {
		const struct start_nic *x = &a->nics[i], *y = &b->nics[i];

		SAME(memcmp(x->mac, y->mac, 6) == 0 && x->user == y->user &&
		    x->tap_fd == y->tap_fd && strcmp(x->tap, y->tap) == 0 &&
		    str_eq(x->passt, y->passt) && x->nforward == y->nforward,
		    "a card");
		for (k = 0; k < x->nforward; k++)
			SAME(memcmp(&x->forward[k], &y->forward[k],
			    sizeof(x->forward[k])) == 0, "a forward");
	}
	SAME(a->has_display == b->has_display &&
	    str_eq(a->display.listen, b->display.listen) &&
	    a->display.port == b->display.port &&
	    strcmp(a->display.password, b->display.password) == 0 &&
	    a->display.width == b->display.width &&
	    a->display.height == b->display.height &&
	    a->display.http_port == b->display.http_port &&
	    str_eq(a->display.web_dir, b->display.web_dir), "display");
	SAME(a->has_vsock == b->has_vsock && a->vsock.fd == b->vsock.fd &&
	    a->vsock.cid == b->vsock.cid, "vsock");
	SAME(a->has_boot_disk == b->has_boot_disk &&
	    a->boot_disk.disk == b->boot_disk.disk &&
	    str_eq(a->boot_disk.append, b->boot_disk.append), "boot disk");
	SAME(a->has_seed == b->has_seed &&
	    str_eq(a->seed.hostname, b->seed.hostname) &&
	    str_eq(a->seed.user_data, b->seed.user_data) &&
	    str_eq(a->seed.network_config, b->seed.network_config) &&
	    a->seed.nkeys == b->seed.nkeys, "seed");
	for (i = 0; i < a->seed.nkeys; i++)
		SAME(str_eq(a->seed.ssh_keys[i], b->seed.ssh_keys[i]),
		    "a key");
#undef SAME
	return 1;
}

static const char *
text(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

static void
test_round_trip(bool boot_disk)
{
	const char *what = boot_disk ? "from a disk" : "with a kernel";
	struct start_params sp, back;
	struct json_object *wire, *again;
	const char *why = "";
	char err[256] = "";
	int rc;

	full(&sp, boot_disk);
	tap_ok(start_params_encode(&sp, &wire) == 0, "%s: encoded", what);
	tap_ok(wmsg_check(WMSG_S_BOOT, wire, err, sizeof(err)) == 0,
	    "%s: the encoding has worker.boot's shape (%s)", what, err);
	rc = start_params_decode(wire, &back, err, sizeof(err));
	tap_ok(rc == 0, "%s: decoded (%d: %s)", what, rc, rc ? err : "");
	tap_ok(rc == 0 && same(&sp, &back, &why), "%s: the same start "
	    "back (%s)", what, why);
	tap_ok(start_params_encode(&back, &again) == 0 &&
	    strcmp(text(wire), text(again)) == 0, "%s: the same bytes "
	    "again", what);
	json_object_put(again);
	json_object_put(wire);
	start_params_free(&back);
	start_params_free(&sp);
	tap_ok(sp.name == NULL && sp.ndisks == 0 && sp.adopt_fd == -1 &&
	    sp.definition == NULL, "%s: free leaves an empty start", what);
}

/*
 * The link's bytes for a small start with each kind of part: the
 * supervisor has always sent worker.boot's fields in this order, the
 * optional ones only when set.
 */
static void
test_bytes(void)
{
	static const char expect[] = "{\"name\":\"a\","
	    "\"kernel\":\"\\/proc\\/self\\/fd\\/7\",\"kernel_name\":\"\\/k\","
	    "\"seed\":{\"hostname\":\"a\",\"ssh_keys\":[{\"key\":\"k1\"}]},"
	    "\"cmdline\":\"\",\"memory_mib\":64,\"vcpus\":1,"
	    "\"on_reboot\":\"restart\",\"lost_tick_policy\":\"slew\","
	    "\"console_log\":\"\\/l\",\"disks\":[{\"fd\":11,\"path\":\"\\/d\","
	    "\"readonly\":false,\"format\":\"qcow2\",\"backing\":[{\"fd\":15,"
	    "\"path\":\"\\/b\",\"format\":\"raw\"}]}],\"console_log_max\":0,"
	    "\"adopt_fd\":4,\"kvm_fd\":6,\"log_start\":0,\"started_ms\":9,"
	    "\"definition\":{},\"net\":[{\"mac\":\"52:54:00:00:00:01\","
	    "\"user\":true,\"passt\":\"passt\",\"forward\":[{"
	    "\"proto\":\"udp\",\"host_addr\":\"127.0.0.1\","
	    "\"host_port\":5353,\"guest_port\":53}]},"
	    "{\"mac\":\"52:54:00:00:00:02\",\"fd\":9,\"tap\":\"tap0\"}],"
	    "\"display\":{\"listen\":\"127.0.0.1\",\"port\":0,"
	    "\"password\":\"pw\",\"width\":1024,\"height\":768},"
	    "\"vsock\":{\"fd\":10,\"cid\":3},\"request_ns\":1,\"spawn_ns\":2}";
	struct start_params sp;
	struct json_object *wire = NULL;

	start_params_init(&sp);
	sp.name = dup("a");
	sp.kernel = dup("/proc/self/fd/7");
	sp.kernel_name = dup("/k");
	sp.cmdline = dup("");
	sp.memory_mib = 64;
	sp.vcpus = 1;
	sp.console_log = dup("/l");
	sp.adopt_fd = 4;
	sp.kvm_fd = 6;
	sp.started_ms = 9;
	sp.request_ns = 1;
	sp.spawn_ns = 2;
	sp.definition = json_object_new_object();
	sp.ndisks = 1;
	sp.disks[0] = (struct start_disk){ .top = { 11, dup("/d"),
	    START_FORMAT_QCOW2 }, .nbacking = 1 };
	sp.disks[0].backing[0] = (struct start_image){ 15, dup("/b"),
	    START_FORMAT_RAW };
	sp.nnics = 2;
	sp.nics[0] = (struct start_nic){ .mac = { 0x52, 0x54, 0, 0, 0, 1 },
	    .user = true, .tap_fd = -1, .passt = dup("passt"),
	    .nforward = 1 };
	sp.nics[0].forward[0] = (struct start_forward){ .udp = true,
	    .addr = "127.0.0.1", .host_port = 5353, .guest_port = 53 };
	sp.nics[1] = (struct start_nic){ .mac = { 0x52, 0x54, 0, 0, 0, 2 },
	    .tap_fd = 9, .tap = "tap0" };
	sp.has_display = true;
	sp.display = (struct start_display){ .listen = dup("127.0.0.1"),
	    .password = "pw", .width = 1024, .height = 768 };
	sp.has_vsock = true;
	sp.vsock = (struct start_vsock){ .fd = 10, .cid = 3 };
	sp.has_seed = true;
	sp.seed.hostname = dup("a");
	sp.seed.ssh_keys[sp.seed.nkeys++] = dup("k1");
	tap_ok(start_params_encode(&sp, &wire) == 0 &&
	    strcmp(text(wire), expect) == 0, "the link's bytes, in its "
	    "order");
	if (wire != NULL && strcmp(text(wire), expect) != 0)
		tap_diag("got %s", text(wire));
	json_object_put(wire);
	start_params_free(&sp);
}

#define MIN "\"kernel\":\"/proc/self/fd/7\",\"memory_mib\":64,\"vcpus\":1"
#define DISK "{\"fd\":11,\"path\":\"/d\"}"

static void
test_refusals(void)
{
	static const struct {
		const char *json;
		const char *err;	/* NULL: accepted */
	} cases[] = {
		{ "{" MIN "}", NULL },
		{ "{" MIN ",\"uuid\":\"0123abcd-4567-89ab-cdef-0123456789ab\"}",
		    NULL },
		{ "{" MIN ",\"uuid\":\"0123abcd-4567-89ab-cdef+0123456789ab\"}",
		    "uuid: not a UUID" },
		{ "{" MIN ",\"uuid\":\"0123abcd\"}", "uuid: " },
		/* the shape's: missing, out of range, wrong type, unknown */
		{ "{\"kernel\":\"k\",\"vcpus\":1}",
		    "memory_mib: missing argument" },
		{ "{" MIN ",\"disks\":[{\"path\":\"/d\"}]}",
		    "disks[0]: fd: missing argument" },
		{ "{\"kernel\":\"k\",\"memory_mib\":64,\"vcpus\":0}",
		    "vcpus: 0 is out of range" },
		{ "{" MIN ",\"rtc_slices\":33}",
		    "rtc_slices: 33 is out of range (2..32)" },
		{ "{" MIN ",\"disks\":[{\"fd\":2,\"path\":\"/d\"}]}",
		    "disks[0]: fd: 2 is out of range" },
		{ "{" MIN ",\"disks\":[" DISK "," DISK "," DISK "," DISK ","
		    DISK "]}", "disks: " },
		{ "{" MIN ",\"display\":{\"password\":\"123456789\"}}",
		    "display: password: " },
		{ "{" MIN ",\"rng\":\"yes\"}", "rng: expected true or false" },
		{ "{" MIN ",\"disks\":{}}", "disks: expected an array" },
		{ "{" MIN ",\"vsock\":{\"fd\":\"10\",\"cid\":3}}",
		    "vsock: fd: expected an integer" },
		{ "{" MIN ",\"lost_tick_policy\":\"drop\"}",
		    "lost_tick_policy: " },
		{ "{" MIN ",\"kernal\":\"x\"}", "unknown argument 'kernal'" },
		/* the decoder's own */
		{ "{\"memory_mib\":64,\"vcpus\":1}",
		    "a kernel, boot_disk or firmware, one of them" },
		{ "{" MIN ",\"disks\":[" DISK "],\"boot_disk\":{\"disk\":0}}",
		    "a kernel, boot_disk or firmware, one of them" },
		{ "{" MIN ",\"firmware\":\"/proc/self/fd/7\"}",
		    "a kernel, boot_disk or firmware, one of them" },
		{ "{\"memory_mib\":64,\"vcpus\":1,"
		    "\"firmware\":\"/proc/self/fd/7\","
		    "\"firmware_name\":\"/usr/share/seabios/bios-256k.bin\"}",
		    NULL },
		{ "{\"memory_mib\":64,\"vcpus\":1,\"disks\":[" DISK "],"
		    "\"boot_disk\":{\"disk\":1}}", "boot: no disk 1 to boot "
		    "from" },
		{ "{\"memory_mib\":64,\"vcpus\":1,\"disks\":[" DISK "],"
		    "\"boot_disk\":{\"disk\":0}}", NULL },
		{ "{" MIN ",\"net\":[{\"mac\":\"52:54:00:00:00:zz\","
		    "\"user\":true}]}", "net: mac: expected a unicast" },
		{ "{" MIN ",\"net\":[{\"mac\":\"53:54:00:00:00:01\","
		    "\"user\":true}]}", "net: mac: expected a unicast" },
		{ "{" MIN ",\"net\":[{\"mac\":\"52:54:00:00:00:01\","
		    "\"tap\":\"tap0\"}]}", "net: a TAP (fd, tap) or user-mode" },
		{ "{" MIN ",\"net\":[{\"mac\":\"52:54:00:00:00:01\","
		    "\"fd\":9,\"tap\":\"tap0\"}]}", NULL },
	};
	struct start_params sp;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *o = json_tokener_parse(cases[i].json);
		int rc;

		if (o == NULL)
			tap_bail("bad test JSON: %s", cases[i].json);
		err[0] = '\0';
		rc = start_params_decode(o, &sp, err, sizeof(err));
		if (cases[i].err == NULL)
			tap_ok(rc == 0, "accepted: %s (%s)", cases[i].json,
			    err);
		else
			tap_ok(rc == -EINVAL && strstr(err, cases[i].err) !=
			    NULL && sp.name == NULL && sp.kernel == NULL &&
			    sp.ndisks == 0 && sp.nnics == 0 &&
			    sp.definition == NULL, "refused: %s: '%s' "
			    "(said '%s')", cases[i].json, cases[i].err, err);
		start_params_free(&sp);
		json_object_put(o);
	}
	tap_ok(start_params_decode(NULL, &sp, err, sizeof(err)) == -EINVAL,
	    "no arguments at all: refused (%s)", err);
}

/* Absent optional fields: the defaults the worker has always used. */
static void
test_defaults(void)
{
	struct json_object *o = json_tokener_parse("{" MIN ",\"display\":{},"
	    "\"net\":[{\"mac\":\"52:54:00:00:00:01\",\"user\":true}]}");
	struct start_params sp;
	char err[256] = "";

	tap_ok(o != NULL && start_params_decode(o, &sp, err,
	    sizeof(err)) == 0, "a start with no optional field (%s)", err);
	tap_ok(sp.adopt_fd == -1 && sp.kvm_fd == -1 && sp.started_ms == -1 &&
	    sp.cdrom_fd == -1 && sp.cdrom_name == NULL &&
	    sp.cmdline == NULL && sp.on_reboot == START_REBOOT_RESTART &&
	    sp.lost_ticks == START_TICKS_SLEW && sp.rtc_slices == 0,
	    "no descriptors, no start time, restart, slew");
	tap_ok(sp.display.width == 1024 && sp.display.height == 768 &&
	    sp.display.password[0] == '\0' && sp.display.web_dir == NULL,
	    "a display of 1024x768, no password, no noVNC");
	tap_ok(strcmp(sp.nics[0].passt, "passt") == 0 &&
	    sp.nics[0].tap_fd == -1, "passt from the PATH");
	start_params_free(&sp);
	json_object_put(o);
}

int
main(void)
{
	test_round_trip(false);
	test_round_trip(true);
	test_bytes();
	test_refusals();
	test_defaults();
	return tap_done();
}
