/*
 * Live migration (vmctl migrate) between two vmmd on this host, of the
 * demo guest, which prints its clock once a second, counted in its
 * memory from the CMOS time it read at boot.
 *
 * Migrated while it runs: it runs on the target, its count goes on
 * from where it was (no boot banner there, no tick repeated or
 * skipped by more than the seconds the move took), and the source no
 * longer has it; the target's vmmd says it arrives, then that it
 * arrived.  A guest that writes 16 MiB all the time moves with every
 * page as it left it (test guest "dirty" checks each), also under a
 * 1 ms downtime bound.  A guest that reads a disk into 4 MiB of its RAM
 * all the time moves with every byte the device wrote there (test
 * guest "vblkr" checks them against the disk's pattern): KVM's dirty
 * log does not see a device's writes.  A guest with a disk it may write,
 * at the same path for both vmmd (as on shared storage): the target
 * takes the image's exclusive lock over once the source let it go, and
 * it is free once the guest stops there.  A migration of a guest that
 * never converges, cancelled after its first round (vmctl migrate
 * --cancel): the migration says so, the guest runs on at the source,
 * the target has no VM, and a new migration then moves it.  A guest
 * with a network card is announced on the target's link once it runs
 * there: a RARP request from its MAC (user-mode networking, its passt
 * a stand-in that keeps what the card sends).  The demo guest moves back over ssh:// (a
 * stand-in for ssh runs the far command here).  A target that already
 * has a VM of that name refuses, and the guest runs on at the source; a
 * corrupt stream is refused and the target drops the VM.  With the
 * source's stream held by a test hook so that the cut lands in it:
 * the link cut half-way (vmctl killed) and the target's vmmd killed
 * half-way each leave the guest running at the source and none at the
 * target.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "harness.h"

#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"
/*
 * What vmctl migrate may take: a guest rewriting 16 MiB goes for up to
 * 30 rounds, and the test host on a busy machine carried 3.6 MiB/s, so
 * over two minutes.  A bound against a hang, not a speed requirement.
 */
#define MIGRATE_MS	300000

/* The last (last) or first tick in buf, as seconds; -1 if none. */
static long
tick_at(const char *buf, bool last)
{
	const char *p = buf, *q;
	int y, mo, dd, hh, mm, ss;
	long t = -1;

	while (p != NULL && (q = strstr(p, "demo: 2")) != NULL) {
		if (sscanf(q, "demo: %d-%d-%d %d:%d:%d UTC", &y, &mo, &dd, &hh,
		    &mm, &ss) == 6) {
			t = (long)dd * 86400 + hh * 3600 + mm * 60 + ss;
			if (!last)
				break;
		}
		p = q + 1;
	}
	return t;
}

/* VM name started on d and ticking; its console, or bail. */
static struct h_console *
running_demo(struct h_daemon *d, struct h_conn *c, const char *name)
{
	struct h_console *con;

	if (h_create(c, name, NULL) != 0 || h_start(c, name) != 0 ||
	    (con = h_console_open(d, name)) == NULL ||
	    h_expect(con, DEMO_TICK, H_BOOT_MS) != 0)
		tap_bail("%s: does not run", name);
	return con;
}

/* Whether VM name is gone from c's vmmd (within H_REPLY_MS). */
static bool
gone(struct h_conn *c, const char *name)
{
	struct json_object *r;
	const char *cls;
	double t0 = h_now_ms();
	bool is_gone;

	do {
		r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
		    name);
		cls = h_err_class(r);
		is_gone = cls != NULL && strcmp(cls, "not_found") == 0;
		json_object_put(r);
		if (!is_gone)
			h_sleep_ms(20);
	} while (!is_gone && h_now_ms() - t0 < H_REPLY_MS);
	return is_gone;
}

/*
 * vm.migrate_in of VM "junk" on d, then a stream whose first page's
 * checksum is wrong: the target must answer ERROR naming the checksum
 * and end the stream.  Its answer's text into why.
 */
static bool
corrupt_refused(struct h_daemon *d, char *why, size_t len)
{
	static uint8_t out[16 + 12 + 16 + 4096];
	uint8_t in[12 + 1024];
	struct json_object *args, *r;
	struct h_conn *c = h_connect(d);
	size_t got = 0;
	ssize_t n;
	bool ok;
	int fd;

	why[0] = '\0';
	if (c == NULL)
		return false;
	args = json_tokener_parse("{\"definition\":{\"name\":\"junk\","
	    "\"memory_mib\":32}}");
	r = h_wait_reply(c, h_send_request(c, "vm.migrate_in", args),
	    H_REPLY_MS);
	ok = h_ret(r) != NULL;
	json_object_put(r);
	if (!ok) {
		h_close(c);
		return false;
	}
	fd = h_conn_fd(c);
	memcpy(out, "VMMDMIG\n\1\0\0\0\0\0\0\0", 16);
	/* RAM, 16 + 4096 bytes, checksum 0: wrong for these bytes. */
	memcpy(out + 16, "\1\0\0\0\x10\x10\0\0\0\0\0\0", 12);
	out[16 + 12 + 8] = 1;		/* one page at gpa 0 */
	memset(out + 16 + 12 + 16, 0x5a, 4096);
	if (write(fd, out, sizeof(out)) != (ssize_t)sizeof(out)) {
		h_close(c);
		return false;
	}
	while (got < sizeof(in) && (n = read(fd, in + got,
	    sizeof(in) - got)) > 0)
		got += (size_t)n;
	h_close(c);
	if (got < 12 || in[0] != 6)
		return false;
	snprintf(why, len, "%.*s", (int)(got - 12), (const char *)in + 12);
	return strstr(why, "checksum") != NULL;
}

/*
 * An ssh for the test at path: runs its command here with this build's
 * vmctl first in PATH, as sshd would run it on the far host.
 */
static void
fake_ssh(const char *path)
{
	char dir[512], *slash;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", h_env("VMCTL_BIN"));
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((f = fopen(path, "w")) == NULL)
		tap_bail("%s: %s", path, strerror(errno));
	fprintf(f, "#!/bin/sh\n# ssh [USER@]HOST COMMAND\nshift\n"
	    "PATH=%s:$PATH exec /bin/sh -c \"$1\"\n", dir);
	fclose(f);
	if (chmod(path, 0755) < 0)
		tap_bail("chmod %s: %s", path, strerror(errno));
}

/*
 * The disk the vblkr guest reads, at path: 4 MiB whose 32-bit word at
 * byte offset O is VBLKR_WORD(O) (tests/guests/vblkr.c).
 */
static void
pattern_disk(const char *path)
{
	static uint32_t buf[65536 / 4];
	FILE *f;

	if ((f = fopen(path, "w")) == NULL)
		tap_bail("%s: %s", path, strerror(errno));
	for (uint64_t off = 0; off < (4u << 20); off += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf) / 4; i++)
			buf[i] = (uint32_t)((off / 4 + i) * 2654435761u +
			    0x5eed);
		if (fwrite(buf, sizeof(buf), 1, f) != 1)
			tap_bail("%s: %s", path, strerror(errno));
	}
	if (fclose(f) != 0)
		tap_bail("%s: %s", path, strerror(errno));
}

/*
 * Whether an exclusive (wr) or shared lock on the image at path is
 * refused to another open file, within ms: waits while it is granted
 * (refused: true) or while it is refused (refused: false).
 */
static bool
lock_refused(const char *path, bool wr, bool refused, int ms)
{
	struct flock lk;
	double t0 = h_now_ms();
	bool got;
	int fd;

	for (;;) {
		if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
			return false;
		memset(&lk, 0, sizeof(lk));
		lk.l_type = wr ? F_WRLCK : F_RDLCK;
		lk.l_whence = SEEK_SET;
		got = fcntl(fd, F_OFD_SETLK, &lk) == 0;
		close(fd);		/* and its lock */
		if (got != refused)
			return true;
		if (h_now_ms() - t0 >= ms)
			return false;
		h_sleep_ms(20);
	}
}

/*
 * c (subscribed) sees a vm.migration event of name with phase within
 * ms; the ones before it are skipped.
 */
static bool
migration_phase(struct h_conn *c, const char *name, const char *phase,
    int ms)
{
	struct json_object *ev;
	double t0 = h_now_ms();
	const char *p;
	bool seen = false;

	while (!seen && h_now_ms() - t0 < ms &&
	    (ev = h_read_event(c, ms)) != NULL) {
		p = h_str(json_object_object_get(ev, "data"), "phase");
		seen = h_str(ev, "event") != NULL && h_str(ev, "vm") != NULL &&
		    strcmp(h_str(ev, "event"), "vm.migration") == 0 &&
		    strcmp(h_str(ev, "vm"), name) == 0 && p != NULL &&
		    strcmp(p, phase) == 0;
		json_object_put(ev);
	}
	return seen;
}

/*
 * A passt for the test at dir/NAME-passt, for d: keeps the stream the
 * worker sends it on fd 3 (each frame behind its 32-bit length) in
 * dir/NAME-frames, whose path goes into frames.  The worker runs as
 * a uid of its own: dir is open to all, the script and the file too.
 */
static void
fake_passt(struct h_daemon *d, const char *dir, const char *name,
    char *frames, size_t len)
{
	char path[512];
	FILE *f;
	int fd;

	snprintf(frames, len, "%s/%s-frames", dir, name);
	if ((fd = open(frames, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0666)) < 0 || fchmod(fd, 0666) < 0)
		tap_bail("%s: %s", frames, strerror(errno));
	close(fd);
	snprintf(path, sizeof(path), "%s/%s-passt", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		tap_bail("%s: %s", path, strerror(errno));
	fprintf(f, "#!/bin/sh\n# passt --fd 3 ...: what the card sends\n"
	    "exec cat <&3 >>'%s'\n", frames);
	fclose(f);
	if (chmod(path, 0755) < 0)
		tap_bail("chmod %s: %s", path, strerror(errno));
	h_daemon_setting(d, "passt", path);
	if (h_daemon_restart(d, H_REPLY_MS) != 0)
		tap_bail("vmmd does not start again");
}

/*
 * Whether the file at path comes to hold, within ms, the stream
 * framing of a RARP request from mac to everyone (net-announce.h).
 */
static bool
announced(const char *path, const uint8_t mac[6], int ms)
{
	uint8_t want[4 + 22] = { 0, 0, 0, 60, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff }, buf[4096];
	double t0 = h_now_ms();
	size_t n = 0;
	FILE *f;

	memcpy(want + 10, mac, 6);
	memcpy(want + 16, "\x80\x35\x00\x01\x08\x00\x06\x04\x00\x03", 10);
	do {
		if ((f = fopen(path, "r")) != NULL) {
			n = fread(buf, 1, sizeof(buf), f);
			fclose(f);
		}
		for (size_t i = 0; i + sizeof(want) <= n; i++)
			if (memcmp(buf + i, want, sizeof(want)) == 0)
				return true;
		h_sleep_ms(20);
	} while (h_now_ms() - t0 < ms);
	return false;
}

/* c (subscribed) saw vm.migration "arriving", then "arrived", of name. */
static bool
target_events(struct h_conn *c, const char *name)
{
	struct json_object *ev, *data;
	const char *phase;
	int seen = 0;

	while (seen < 2 && (ev = h_read_event(c, 10000)) != NULL) {
		data = json_object_object_get(ev, "data");
		phase = h_str(data, "phase");
		if (h_str(ev, "event") != NULL && h_str(ev, "vm") != NULL &&
		    strcmp(h_str(ev, "event"), "vm.migration") == 0 &&
		    strcmp(h_str(ev, "vm"), name) == 0 && phase != NULL)
			seen = seen == 0 && strcmp(phase, "arriving") == 0 ? 1 :
			    seen == 1 && strcmp(phase, "arrived") == 0 ? 2 :
			    seen;
		json_object_put(ev);
	}
	return seen == 2;
}

/* The guest on con counts on: two more ticks. */
static bool
counts_on(struct h_console *con)
{
	con->mark = con->len;
	return h_expect(con, DEMO_TICK, 5000) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0;
}

/*
 * The source's stream held (a byte in the hold file) or let go (the
 * file emptied): the worker reads the file through a descriptor it
 * opened before its sandbox, which refuses files by name.
 */
static void
migrate_hold(const char *path, bool on)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (on && write(fd, "h", 1) != 1))
		tap_bail("%s: %s", path, strerror(errno));
	close(fd);
}

int
main(void)
{
	struct h_daemon *a, *b, *slow;
	struct h_conn *ca, *cb, *cs, *ce;
	struct h_console *con;
	struct h_proc proc, *p;
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x9a, 0xbc, 0xde };
	char to[256], st[256], path[512], sshto[256], frames[512], pdir[64];
	char hold[64];
	long before, after;
	bool ok, refused;
	pid_t pid;
	double t0;
	int rc;

	h_init();
	ca = h_setup(&a);
	b = h_daemon_start();
	/* Stand-ins for passt, both sides: what the cards send is kept. */
	h_close(ca);
	snprintf(pdir, sizeof(pdir), "/tmp/vmmd-passt-XXXXXX");
	if (mkdtemp(pdir) == NULL || chmod(pdir, 0755) < 0)
		tap_bail("a directory for passt: %s", strerror(errno));
	fake_passt(a, pdir, "a", path, sizeof(path));
	fake_passt(b, pdir, "b", frames, sizeof(frames));
	if ((ca = h_connect(a)) == NULL || (cb = h_connect(b)) == NULL)
		tap_bail("no second vmmd");
	snprintf(to, sizeof(to), "unix:%s", b->sock);

	/* Moved while it runs. */
	if ((ce = h_connect(b)) == NULL)
		tap_bail("no events from the second vmmd");
	json_object_put(h_call(ce, "events.subscribe", NULL, H_REPLY_MS));
	con = running_demo(a, ca, "demo");
	h_ctl_use(a, MIGRATE_MS);
	t0 = h_now_ms();
	rc = h_ctl("migrate", "demo", "--to", to, "--watch", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL,
	    "vmctl migrate: %s%s", h_out(), h_err());
	tap_diag("migration of the demo guest: %.1f ms: %s", h_now_ms() - t0,
	    h_flat(h_out()));
	{
		long down = -1, p = -1, snd = -1, ans = -1;
		const char *o = strstr(h_out(), " ms, downtime ");
		const char *q = strstr(h_out(), ": downtime: ");

		if (o != NULL)
			sscanf(o, " ms, downtime %ld ms", &down);
		if (q != NULL)
			sscanf(q, ": downtime: %ld ms pausing and saving the "
			    "devices, %ld ms sending the rest, %ld ms", &p,
			    &snd, &ans);
		/* Each step rounded down: the sum within 3 ms of the whole. */
		tap_ok(down >= 0 && p >= 0 && snd >= 0 && ans >= 0 &&
		    p + snd + ans <= down && p + snd + ans + 3 >= down,
		    "vmctl migrate says where the downtime went: %ld ms = "
		    "%ld + %ld + %ld", down, p, snd, ans);
	}
	before = tick_at(con->buf, true);
	h_console_close(con);
	tap_ok(target_events(ce, "demo"), "the target said it arrives, "
	    "then that it arrived");
	h_close(ce);
	/* Its vmmd may not have heard the worker's answer yet. */
	tap_ok(h_wait_state(cb, "demo", "running", H_REPLY_MS) == 0,
	    "demo runs on the target");
	tap_ok(gone(ca, "demo"), "demo is gone from the source");
	if ((con = h_console_open(b, "demo")) == NULL)
		tap_bail("demo: no console on the target");
	tap_ok(counts_on(con), "demo counts on at the target");
	after = tick_at(con->buf, false);
	/* One tick a second of the guest's own time: none repeated. */
	tap_ok(before >= 0 && after > before && after <= before + 3,
	    "its count goes on: %ld at the source, then %ld", before, after);
	tap_ok(h_count(con->buf, con->len, DEMO_BANNER) == 0,
	    "it did not boot again on the target");
	snprintf(path, sizeof(path), "%s/vms/demo.json", b->state);
	tap_ok(access(path, F_OK) == 0, "its definition is kept on the "
	    "target");
	snprintf(path, sizeof(path), "%s/vms/demo.json", a->state);
	tap_ok(access(path, F_OK) < 0, "and gone from the source");
	h_console_close(con);

	/* A guest writing 16 MiB all the time: rounds, no page lost. */
	snprintf(path, sizeof(path), "\"memory_mib\":64,\"kernel\":\"%s\","
	    "\"cmdline\":\"mib=16 every=100\"", h_env("VMMD_GUEST_DIRTY"));
	if (h_create(ca, "busy", "%s", path) != 0 || h_start(ca, "busy") != 0 ||
	    (con = h_console_open(a, "busy")) == NULL ||
	    h_expect(con, "dirty: pass", H_BOOT_MS) != 0)
		tap_bail("busy: does not run");
	h_console_close(con);
	rc = h_ctl("migrate", "busy", "--to", to, "--watch", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "round 1:") != NULL &&
	    strstr(h_out(), " 0 dirty") == NULL,
	    "a guest writing its RAM: migrated in rounds: %s%s",
	    h_flat(h_out()), h_err());
	if (h_wait_state(cb, "busy", "running", H_REPLY_MS) != 0 ||
	    (con = h_console_open(b, "busy")) == NULL)
		tap_bail("busy: no console on the target");
	con->mark = con->len;
	tap_ok(h_expect(con, "dirty: pass", 10000) == 0 &&
	    h_expect(con, "dirty: pass", 10000) == 0 &&
	    h_count(con->buf, con->len, "FAIL") == 0,
	    "it writes on at the target, every page as it left it");
	h_console_close(con);
	/*
	 * Done with: a guest rewriting its RAM without end takes a CPU of
	 * the nested test host, and the guests after it waited for their
	 * timers there for seconds.
	 */
	tap_ok(h_stop(cb, "busy", true, -1, H_REPLY_MS) == 0,
	    "busy: stopped at the target");

	/* A bound it may not meet: paused after the last round anyway. */
	snprintf(path, sizeof(path), "\"memory_mib\":64,\"kernel\":\"%s\","
	    "\"cmdline\":\"mib=4 every=100\"", h_env("VMMD_GUEST_DIRTY"));
	if (h_create(ca, "busier", "%s", path) != 0 ||
	    h_start(ca, "busier") != 0 ||
	    (con = h_console_open(a, "busier")) == NULL ||
	    h_expect(con, "dirty: pass", H_BOOT_MS) != 0)
		tap_bail("busier: does not run");
	h_console_close(con);
	rc = h_ctl("migrate", "busier", "--to", to, "--downtime", "1", NULL);
	/*
	 * Whether it converges depends on how much the guest got to run
	 * meanwhile on a busy host: either way it moves, and vmctl says
	 * which it was.  A guest paused without converging went all 30
	 * rounds; one that converged may have done so in the 30th.
	 */
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL &&
	    (strstr(h_out(), "paused after") == NULL ||
	    strstr(h_out(), "30 rounds") != NULL),
	    "downtime 1 ms: moved, converged or said not: %s%s",
	    h_flat(h_out()), h_err());
	if (h_wait_state(cb, "busier", "running", H_REPLY_MS) != 0 ||
	    (con = h_console_open(b, "busier")) == NULL)
		tap_bail("busier: no console on the target");
	con->mark = con->len;
	tap_ok(h_expect(con, "dirty: pass", 10000) == 0 &&
	    h_count(con->buf, con->len, "FAIL") == 0,
	    "it runs at the target, every page as it left it");
	h_console_close(con);
	tap_ok(h_stop(cb, "busier", true, -1, H_REPLY_MS) == 0,
	    "busier: stopped at the target");

	/*
	 * A guest whose disk writes into its RAM all the time: every page
	 * the device wrote during the rounds must be sent again.  The disk
	 * is read-only, so that both vmmd may hold it.
	 */
	snprintf(st, sizeof(st), "%s", h_in_dir(a, "pattern.img"));
	pattern_disk(st);
	if (h_create(ca, "reader", "\"memory_mib\":64,\"kernel\":\"%s\","
	    "\"cmdline\":\"mib=4 every=20\",\"disks\":[{\"path\":\"%s\","
	    "\"format\":\"raw\",\"readonly\":true}]",
	    h_env("VMMD_GUEST_VBLKR"), st) != 0 ||
	    h_start(ca, "reader") != 0 ||
	    (con = h_console_open(a, "reader")) == NULL ||
	    h_expect(con, "vblkr: pass", H_BOOT_MS) != 0)
		tap_bail("reader: does not run: %s", con != NULL ?
		    h_flat(con->buf) : "no console");
	h_console_close(con);
	rc = h_ctl("migrate", "reader", "--to", to, "--watch", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL,
	    "a guest reading its disk into RAM: migrated: %s%s",
	    h_flat(h_out()), h_err());
	if (h_wait_state(cb, "reader", "running", H_REPLY_MS) != 0 ||
	    (con = h_console_open(b, "reader")) == NULL)
		tap_bail("reader: no console on the target");
	con->mark = con->len;
	ok = h_expect(con, "vblkr: pass", 20000) == 0 &&
	    h_expect(con, "vblkr: pass", 20000) == 0 &&
	    h_count(con->buf, con->len, "FAIL") == 0;
	tap_ok(ok, "it reads on at the target, every byte its disk "
	    "wrote there as it was: %s", h_flat(con->buf + (con->len > 300 ?
	    con->len - 300 : 0)));
	h_console_close(con);

	/*
	 * A disk it may write, at the same path for both vmmd: the source's
	 * exclusive lock is taken over by the target, which holds it once
	 * the source's worker is gone, and lets it go with the guest.
	 */
	snprintf(st, sizeof(st), "%s", h_in_dir(a, "shared.img"));
	rc = open(st, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rc < 0 || ftruncate(rc, 1 << 20) < 0)
		tap_bail("%s: %s", st, strerror(errno));
	close(rc);
	if (h_create(ca, "writer", "\"kernel\":\"%s\",\"disks\":[{"
	    "\"path\":\"%s\",\"format\":\"raw\"}]",
	    h_env("VMMD_GUEST_DEMO"), st) != 0 ||
	    h_start(ca, "writer") != 0 ||
	    (con = h_console_open(a, "writer")) == NULL ||
	    h_expect(con, DEMO_TICK, H_BOOT_MS) != 0)
		tap_bail("writer: does not run");
	h_console_close(con);
	pid = h_vm_pid(ca, "writer");
	tap_ok(lock_refused(st, false, true, 0), "writer: its disk is locked "
	    "at the source");
	rc = h_ctl("migrate", "writer", "--to", to, NULL);
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL,
	    "a guest with a disk it writes, locked at the source: migrated: "
	    "%s%s", h_flat(h_out()), h_err());
	tap_ok(h_wait_state(cb, "writer", "running", H_REPLY_MS) == 0 &&
	    h_pid_gone(pid, H_REPLY_MS) && lock_refused(st, false, true,
	    H_REPLY_MS), "with the source's worker gone, the target holds "
	    "its disk's lock");
	if ((con = h_console_open(b, "writer")) == NULL)
		tap_bail("writer: no console on the target");
	tap_ok(counts_on(con), "writer counts on at the target");
	h_console_close(con);
	tap_ok(h_stop(cb, "writer", true, -1, H_REPLY_MS) == 0 &&
	    lock_refused(st, true, false, H_REPLY_MS), "stopped there, its "
	    "disk is free");
	h_delete(cb, "writer");

	/*
	 * Cancelled after its first round: a guest writing 32 MiB all the
	 * time under a 1 ms bound does not converge, so its 30 rounds
	 * take seconds.
	 */
	snprintf(path, sizeof(path), "\"memory_mib\":64,\"kernel\":\"%s\","
	    "\"cmdline\":\"mib=32 every=20\"", h_env("VMMD_GUEST_DIRTY"));
	if ((ce = h_connect(a)) == NULL)
		tap_bail("no events from the first vmmd");
	json_object_put(h_call(ce, "events.subscribe", NULL, H_REPLY_MS));
	if (h_create(ca, "racing", "%s", path) != 0 ||
	    h_start(ca, "racing") != 0 ||
	    (con = h_console_open(a, "racing")) == NULL ||
	    h_expect(con, "dirty: pass", H_BOOT_MS) != 0)
		tap_bail("racing: does not run");
	{
		char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", a->sock,
		    "migrate", "racing", "--to", to, "--downtime", "1", NULL };

		if (h_spawn(&proc, argv) < 0)
			tap_bail("cannot run vmctl");
	}
	tap_ok(migration_phase(ce, "racing", "round", 60000),
	    "racing: its first round");
	rc = h_ctl("migrate", "racing", "--cancel", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "cancelled") != NULL,
	    "vmctl migrate --cancel: %s%s", h_flat(h_out()), h_err());
	tap_ok(migration_phase(ce, "racing", "cancelled", 60000),
	    "the migration's end says cancelled");
	rc = h_proc_wait(&proc, H_REPLY_MS);
	tap_ok(rc != 0 && rc != -1 && proc.ebuf != NULL &&
	    strstr(proc.ebuf, "cancelled") != NULL,
	    "the vmctl that carried it fails, saying so (exit %d): %s", rc,
	    proc.ebuf != NULL ? h_flat(proc.ebuf) : "");
	h_proc_free(&proc);
	con->mark = con->len;
	tap_ok(strcmp(h_state(ca, "racing", st, sizeof(st)), "running") == 0 &&
	    h_expect(con, "dirty: pass", 10000) == 0 &&
	    h_expect(con, "dirty: pass", 10000) == 0 &&
	    h_count(con->buf, con->len, "FAIL") == 0,
	    "racing runs on at the source (%s)", st);
	tap_ok(gone(cb, "racing"), "the target has no VM racing");
	rc = h_ctl("migrate", "racing", "--cancel", NULL);
	tap_ok(rc == 6 && strstr(h_err(), "no migration") != NULL,
	    "with none under way, --cancel is refused (exit %d): %s", rc,
	    h_flat(h_err()));
	h_close(ce);
	h_console_close(con);
	rc = h_ctl("migrate", "racing", "--to", to, "--downtime", "60000",
	    NULL);
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL,
	    "a new migration then moves it: %s%s", h_flat(h_out()), h_err());
	if (h_wait_state(cb, "racing", "running", H_REPLY_MS) != 0 ||
	    (con = h_console_open(b, "racing")) == NULL)
		tap_bail("racing: no console on the target");
	con->mark = con->len;
	tap_ok(h_expect(con, "dirty: pass", 10000) == 0 &&
	    h_count(con->buf, con->len, "FAIL") == 0,
	    "it writes on at the target, every page as it left it");
	h_console_close(con);

	/* A card: announced on the target's link once the guest runs. */
	if (h_create(ca, "nic", "\"kernel\":\"%s\",\"net\":{\"user\":true,"
	    "\"mac\":\"52:54:00:9a:bc:de\"}", h_env("VMMD_GUEST_DEMO")) != 0 ||
	    h_start(ca, "nic") != 0 ||
	    (con = h_console_open(a, "nic")) == NULL ||
	    h_expect(con, DEMO_TICK, H_BOOT_MS) != 0)
		tap_bail("nic: does not run");
	h_console_close(con);
	tap_ok(!announced(frames, mac, 0), "nothing announced at the target "
	    "before");
	rc = h_ctl("migrate", "nic", "--to", to, NULL);
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL,
	    "a guest with a network card: migrated: %s%s", h_flat(h_out()),
	    h_err());
	tap_ok(announced(frames, mac, H_REPLY_MS), "its card announced "
	    "itself on the target's link: a RARP request from its MAC");

	/*
	 * Back over ssh://: a stand-in for ssh runs the remote command
	 * here, as sshd would there (its host argument dropped).
	 */
	snprintf(path, sizeof(path), "%s", h_in_dir(a, "fake-ssh"));
	fake_ssh(path);
	setenv("VMCTL_SSH", path, 1);
	h_ctl_use(b, MIGRATE_MS);
	snprintf(sshto, sizeof(sshto), "ssh://somebody@far%s", a->sock);
	if ((con = h_console_open(b, "demo")) == NULL ||
	    h_expect(con, DEMO_TICK, 5000) != 0)
		tap_bail("demo: no tick at the second vmmd");
	rc = h_ctl("migrate", "demo", "--to", sshto, NULL);
	/* What it printed until it left. */
	h_console_read(con, 200);
	tap_ok(rc == 0 && strstr(h_out(), "migrated") != NULL,
	    "vmctl migrate --to ssh://: %s%s", h_flat(h_out()), h_err());
	before = tick_at(con->buf, true);
	h_console_close(con);
	unsetenv("VMCTL_SSH");
	h_ctl_use(a, MIGRATE_MS);
	tap_ok(h_wait_state(ca, "demo", "running", H_REPLY_MS) == 0 &&
	    gone(cb, "demo"), "demo is back at the first vmmd, gone from "
	    "the second");
	if ((con = h_console_open(a, "demo")) == NULL)
		tap_bail("demo: no console back at the first vmmd");
	tap_ok(counts_on(con), "demo counts on back there");
	after = tick_at(con->buf, false);
	tap_ok(before >= 0 && after > before && after <= before + 3,
	    "its count goes on: %ld, then %ld", before, after);
	h_console_close(con);

	/* Refused: a VM of that name is there. */
	con = running_demo(a, ca, "twin");
	tap_ok(h_create(cb, "twin", NULL) == 0, "twin: defined on the target");
	rc = h_ctl("migrate", "twin", "--to", to, NULL);
	tap_ok(rc == 5 && strstr(h_err(), "exists") != NULL,
	    "a target with a VM of that name refuses (exit %d): %s", rc,
	    h_flat(h_err()));
	tap_ok(strcmp(h_state(ca, "twin", st, sizeof(st)), "running") == 0 &&
	    counts_on(con), "twin runs on at the source (%s)", st);
	h_console_close(con);

	/* A corrupt stream: refused, nothing left on the target. */
	refused = corrupt_refused(b, st, sizeof(st));
	tap_ok(refused, "a corrupt stream is refused: %s", h_flat(st));
	tap_ok(gone(cb, "junk"), "the target dropped the half-built VM");

	/*
	 * The cuts: the source's stream held before its first frame of RAM
	 * while the hold file holds a byte (a test hook), so that each cut
	 * lands in it however slow this host is.  The file exists, empty,
	 * before the VM starts: its worker opens it then.
	 */
	snprintf(hold, sizeof(hold), "/tmp/vmmd-migrate-hold.%ld",
	    (long)getpid());
	migrate_hold(hold, false);
	setenv("VMMD_TEST_MIGRATE_HOLD", hold, 1);
	slow = h_daemon_start();
	unsetenv("VMMD_TEST_MIGRATE_HOLD");
	if ((cs = h_connect(slow)) == NULL)
		tap_bail("no slow vmmd");
	con = running_demo(slow, cs, "moving");

	/* The link cut half-way: vmctl, which carries it, killed. */
	migrate_hold(hold, true);
	{
		char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", slow->sock,
		    "migrate", "moving", "--to", to, NULL };

		if (h_spawn(&proc, argv) < 0)
			tap_bail("cannot run vmctl");
	}
	for (t0 = h_now_ms(); h_now_ms() - t0 < H_REPLY_MS &&
	    h_vm_pid(cb, "moving") <= 0;)
		h_sleep_ms(20);
	pid = h_vm_pid(cb, "moving");
	kill(proc.pid, SIGKILL);
	h_proc_wait(&proc, H_REPLY_MS);
	h_proc_free(&proc);
	migrate_hold(hold, false);
	tap_ok(pid > 0 && gone(cb, "moving") && h_pid_gone(pid, H_REPLY_MS),
	    "link cut half-way: the target dropped its half-built guest");
	tap_ok(h_wait_state(cs, "moving", "running", H_REPLY_MS) == 0 &&
	    counts_on(con), "and the guest runs on at the source");

	/* The target's vmmd killed half-way. */
	migrate_hold(hold, true);
	{
		char *argv[] = { (char *)h_env("VMCTL_BIN"), "-s", slow->sock,
		    "migrate", "moving", "--to", to, NULL };

		if (h_spawn(&proc, argv) < 0)
			tap_bail("cannot run vmctl");
	}
	p = &proc;
	/* The target's worker appears once the stream is under way. */
	for (t0 = h_now_ms(); h_now_ms() - t0 < H_REPLY_MS &&
	    h_vm_pid(cb, "moving") <= 0;)
		h_sleep_ms(20);
	pid = h_vm_pid(cb, "moving");
	tap_ok(pid > 0 && h_daemon_kill(b, SIGKILL) != -1,
	    "the target's vmmd killed half-way (worker %d)", (int)pid);
	migrate_hold(hold, false);
	rc = h_proc_wait(p, H_REPLY_MS * 2);
	tap_ok(rc != 0 && rc != -1, "vmctl migrate fails (exit %d): %s%s", rc,
	    p->obuf ? h_flat(p->obuf) : "", p->ebuf ? h_flat(p->ebuf) : "");
	h_proc_free(p);
	tap_ok(strcmp(h_state(cs, "moving", st, sizeof(st)), "running") == 0 &&
	    counts_on(con), "the guest runs on at the source (%s)", st);
	tap_ok(pid > 0 && h_pid_gone(pid, H_REPLY_MS),
	    "the target's half-built guest is gone");
	h_console_close(con);
	unlink(hold);

	h_close(cs);
	h_close(cb);
	h_close(ca);
	for (const char *const *n = (const char *const[]){ "a-passt",
	    "a-frames", "b-passt", "b-frames", NULL }; *n != NULL; n++) {
		snprintf(path, sizeof(path), "%s/%s", pdir, *n);
		unlink(path);
	}
	rmdir(pdir);
	return h_done();
}
