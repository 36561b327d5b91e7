/* The test build's hooks (see test-hook.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "blk-backend.h"
#include "guest-display.h"
#include "guest.h"
#include "log.h"
#include "machine-state.h"
#include "machine.h"
#include "sandbox.h"
#include "test-hook.h"
#include "vcpu-state.h"
#include "worker.h"

#define TEST_HOOK_ARGS	6

/* The call to make: its number and arguments. */
struct test_hook_call {
	int nr;
	unsigned long args[TEST_HOOK_ARGS];
};

static void
test_hook_forbidden_cb(evutil_socket_t fd, short what, void *arg)
{
	struct test_hook_call *c = arg;
	pid_t self = getpid();
	long r;

	(void)fd;
	(void)what;
	log_info("test hook: system call %d", c->nr);
	r = syscall(c->nr, c->args[0], c->args[1], c->args[2], c->args[3],
	    c->args[4], c->args[5]);
	/* A fork the sandbox let through: the copy goes at once. */
	if (getpid() != self)
		_exit(0);
	log_error("test hook: system call %d returned %ld (%s)", c->nr, r,
	    r < 0 ? strerror(errno) : "no error");
}

void
test_hook_sandboxed(struct worker *w)
{
	static const struct timeval later = { 0, 500000 };
	static struct test_hook_call call;
	const char *spec = getenv("VMMD_TEST_FORBIDDEN_CALL");
	char name[64], *p, *end;
	size_t len;
	int i;

	if (spec == NULL || *spec == '\0')
		return;
	len = strcspn(spec, ":");
	if (len >= sizeof(name)) {
		log_error("test hook: '%s': name too long", spec);
		return;
	}
	memcpy(name, spec, len);
	name[len] = '\0';
	call.nr = sandbox_syscall_number(name);
	if (call.nr < 0) {
		log_error("test hook: no system call '%s'", name);
		return;
	}
	p = (char *)spec + len;
	for (i = 0; *p == (i == 0 ? ':' : ',') && i < TEST_HOOK_ARGS; i++) {
		call.args[i] = strtoul(p + 1, &end, 0);
		if (end == p + 1)
			break;
		p = end;
	}
	if (*p != '\0') {
		log_error("test hook: '%s': expected NAME[:ARG[,ARG]...]",
		    spec);
		return;
	}
	/* Lives as long as the process, which it is meant to end. */
	if (event_base_once(w->base, -1, EV_TIMEOUT, test_hook_forbidden_cb,
	    &call, &later) < 0)
		log_error("test hook: cannot arm the timer");
}

pid_t
test_hook_adopt_pid(pid_t pid)
{
	const char *lie = getenv("VMMD_TEST_ADOPT_PID");

	if (lie == NULL || *lie == '\0')
		return pid;
	log_info("test hook: worker.adopt says pid %s", lie);
	return (pid_t)strtol(lie, NULL, 10);
}

void
test_hook_reading(const char *what, const struct sandbox_facts *f,
    long max_rss_kib, int open_fds)
{
	struct sandbox_facts now;

	if (f == NULL) {
		sandbox_look(&now);
		f = &now;
	}
	log_info("test hook: %s by uid %u/%u/%u gid %u/%u/%u CapEff %#llx "
	    "CapPrm %#llx NoNewPrivs %d Seccomp %d MaxRSS %ld KiB Fds %d", what,
	    (unsigned int)f->ruid, (unsigned int)f->euid,
	    (unsigned int)f->suid, (unsigned int)f->rgid,
	    (unsigned int)f->egid, (unsigned int)f->sgid, f->cap_eff,
	    f->cap_prm, f->no_new_privs, f->seccomp, max_rss_kib, open_fds);
}

/* Member key of obj's "return" replaced by the number in env, if set. */
static void
test_hook_lie(struct json_object *ret, const char *env, const char *key)
{
	const char *lie = getenv(env);

	if (lie == NULL || *lie == '\0')
		return;
	log_info("test hook: worker.adopt says %s %s", key, lie);
	json_object_object_add(ret, key,
	    json_object_new_int64(strtoll(lie, NULL, 10)));
}

void
test_hook_sending(struct json_object *msg)
{
	struct json_object *ret;

	if (!json_object_object_get_ex(msg, "return", &ret) ||
	    !json_object_is_type(ret, json_type_object) ||
	    !json_object_object_get_ex(ret, "uid", NULL))
		return;
	test_hook_lie(ret, "VMMD_TEST_ADOPT_UID", "uid");
	test_hook_lie(ret, "VMMD_TEST_ADOPT_CID", "vsock_cid");
}

int
test_hook_reader_timeout_ms(int ms)
{
	const char *v = getenv("VMMD_TEST_READER_TIMEOUT_MS");

	return v != NULL && *v != '\0' ? (int)strtol(v, NULL, 10) : ms;
}

int
test_hook_reader(char *err, size_t errlen)
{
	const char *what = getenv("VMMD_TEST_READER");
	const size_t chunk = 16u << 20;
	size_t got = 0;
	void *p;

	if (what == NULL)
		return 0;
	if (strcmp(what, "stall") == 0)
		for (;;)
			sleep(3600);
	if (strcmp(what, "hog") != 0)
		return 0;
	/* Kept, never freed: the process ends with the answer. */
	while (got < (4ull << 30) && (p = malloc(chunk)) != NULL) {
		memset(p, 0x5a, chunk);
		got += chunk;
	}
	snprintf(err, errlen, "test hook: the reader got %zu MiB", got >> 20);
	return got < (4ull << 30) ? -ENOMEM : -E2BIG;
}

/* A worker.resume came (test_hook_snapshot_busy); one guest a process. */
static bool test_hook_resumed;
/* A worker.shutdown came (the same). */
static bool test_hook_shut;

/*
 * VMMD_TEST_HOLD=disk-write: disk 0's backend as it was made, and the
 * write held.  submit runs on a vCPU's thread or the loop, under the
 * device's lock; the release on the loop, not under it.
 */
static struct {
	pthread_mutex_t lock;
	struct blk_backend_ops ops;	/* the wrapper's */
	const struct blk_backend_ops *next;
	void *ctx;
	struct blk_io *held;
	bool taken;			/* a write was held already */
} test_hook_disk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int
test_hook_disk_submit(void *ctx, struct blk_io *io)
{
	bool hold;

	pthread_mutex_lock(&test_hook_disk.lock);
	hold = io->op == BLK_WRITE && !test_hook_disk.taken;
	if (hold) {
		test_hook_disk.held = io;
		test_hook_disk.taken = true;
	}
	pthread_mutex_unlock(&test_hook_disk.lock);
	if (!hold)
		return test_hook_disk.next->submit(ctx, io);
	log_info("test hook: a disk write held (%llu bytes at %llu)",
	    (unsigned long long)io->iov[0].iov_len,
	    (unsigned long long)io->offset);
	return 0;
}

/* The held write to the backend, if one is: whether one was. */
static bool
test_hook_disk_release(void)
{
	struct blk_io *io;

	pthread_mutex_lock(&test_hook_disk.lock);
	io = test_hook_disk.held;
	test_hook_disk.held = NULL;
	pthread_mutex_unlock(&test_hook_disk.lock);
	if (io == NULL)
		return false;
	log_info("test hook: a disk write released");
	if (test_hook_disk.next->submit(test_hook_disk.ctx, io) < 0)
		io->done(io, -EIO);
	return true;
}

static void
test_hook_disk_drain(void *ctx)
{
	test_hook_disk_release();
	test_hook_disk.next->drain(ctx);
}

void
test_hook_disk_made(unsigned int i, struct blk_backend *be,
    bool restored)
{
	const char *hold = getenv("VMMD_TEST_HOLD");

	if (i != 0 || restored || hold == NULL ||
	    strcmp(hold, "disk-write") != 0 ||
	    test_hook_disk.next != NULL)
		return;
	test_hook_disk.next = be->ops;
	test_hook_disk.ctx = be->ctx;
	test_hook_disk.ops = (struct blk_backend_ops){
		.submit = test_hook_disk_submit,
		.drain = test_hook_disk_drain,
	};
	be->ops = &test_hook_disk.ops;
}

int
test_hook_snapshot_busy(char *err, size_t errlen)
{
	const char *what = getenv("VMMD_TEST_SNAPSHOT_BUSY");

	if (test_hook_disk_release()) {
		snprintf(err, errlen, "test hook: a disk write was held");
		return -EBUSY;
	}
	if (what != NULL && strcmp(what, "resume") == 0 && !test_hook_resumed) {
		snprintf(err, errlen, "test hook: busy until a resume is "
		    "asked");
		return -EBUSY;
	}
	if (what != NULL && strcmp(what, "shutdown") == 0 &&
	    !test_hook_shut) {
		snprintf(err, errlen, "test hook: busy until a shutdown is "
		    "asked");
		return -EBUSY;
	}
	return 0;
}

void
test_hook_resume_asked(void)
{
	if (!test_hook_resumed)
		log_info("test hook: a resume was asked");
	test_hook_resumed = true;
}

void
test_hook_snapshot_late(void)
{
	const char *ms = getenv("VMMD_TEST_SNAPSHOT_LATE");
	long n = ms != NULL ? strtol(ms, NULL, 10) : 0;
	struct timespec ts = { n / 1000, (n % 1000) * 1000000 };

	if (n <= 0)
		return;
	log_info("test hook: the snapshot starts %ld ms late", n);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void
test_hook_shutdown_asked(void)
{
	if (!test_hook_shut)
		log_info("test hook: a shutdown was asked");
	test_hook_shut = true;
}

/* The SSE registers in the XSAVE area's legacy region (SDM 10.5.1). */
#define TEST_HOOK_XMM_OFFSET	160
#define TEST_HOOK_XMM_BYTES	256

/* The sections of the machine and each of its vCPUs, in restore order. */
static int
test_hook_machine_save(const struct machine_state *ms,
    struct vcpu_state *const *vs, unsigned int n, struct dev_state_buf *b)
{
	int rc;

	if ((rc = dev_state_save(&machine_clock_table, &ms->clock, b)) < 0 ||
	    (rc = dev_state_save(&machine_pic_table, &ms->pic, b)) < 0 ||
	    (rc = dev_state_save(&machine_ioapic_table, &ms->ioapic, b)) < 0 ||
	    (rc = dev_state_save(&machine_pit_table, &ms->pit, b)) < 0)
		return rc;
	for (unsigned int i = 0; i < n; i++)
		if ((rc = dev_state_save(&vcpu_state_table, vs[i], b)) < 0)
			return rc;
	return 0;
}

/* The next section of b at *at into dst: 0 or -errno with e. */
static int
test_hook_machine_next(const struct dev_state_table *t, void *dst,
    const struct dev_state_buf *b, size_t *at, struct dev_state_error *e)
{
	long n = dev_state_section_len(b->data + *at, b->len - *at);
	int rc;

	if (n < 0)
		return dev_state_fail(e, (int)n, "a malformed section");
	rc = dev_state_load(t, dst, b->data + *at, n, e);
	*at += n;
	return rc;
}

static int
test_hook_machine_load(struct machine_state *ms, struct vcpu_state *const *vs,
    unsigned int n, const struct dev_state_buf *b, struct dev_state_error *e)
{
	size_t at = 0;
	int rc;

	if ((rc = test_hook_machine_next(&machine_clock_table, &ms->clock, b,
	    &at, e)) < 0 ||
	    (rc = test_hook_machine_next(&machine_pic_table, &ms->pic, b, &at,
	    e)) < 0 ||
	    (rc = test_hook_machine_next(&machine_ioapic_table, &ms->ioapic, b,
	    &at, e)) < 0 ||
	    (rc = test_hook_machine_next(&machine_pit_table, &ms->pit, b, &at,
	    e)) < 0)
		return rc;
	for (unsigned int i = 0; i < n; i++)
		if ((rc = test_hook_machine_next(&vcpu_state_table, vs[i], b,
		    &at, e)) < 0)
			return rc;
	return at == b->len ? 0 : dev_state_fail(e, -EBADMSG,
	    "%zu bytes after the sections", b->len - at);
}

/*
 * VMMD_TEST_VCPU_STATE=machine: the whole machine (clock, chips, every
 * vCPU, the board's devices) saved as sections, restored from junk (every IOAPIC pin and
 * PIC line masked, the PIT stopped, vCPU registers clobbered), then
 * read back and restored through machine_restore.  =machine-clobber
 * stops at the junk.  Each time, the save is also tried with the first
 * device that keeps state made to look as if it had no save op: it
 * must be refused, naming the device.
 */
static void
test_hook_unsaved(struct machine *m)
{
	struct dev_state_buf devs = { 0 };
	struct machine_device *md = NULL;
	const struct board_device *orig;
	struct board_device bd;
	struct device_ops ops;
	char err[160] = "";
	int rc;

	for (unsigned int i = 0; md == NULL && i < m->ndevs; i++)
		if (m->devs[i].vdev.state != NULL &&
		    m->devs[i].bd->ops->save != NULL)
			md = &m->devs[i];
	if (md == NULL)
		return;
	orig = md->bd;
	bd = *orig;
	ops = *orig->ops;
	ops.save = NULL;
	ops.load = NULL;
	bd.ops = &ops;
	md->bd = &bd;
	rc = machine_devices_save(m, &devs, err, sizeof(err));
	md->bd = orig;
	dev_state_buf_free(&devs);
	if (rc == -EOPNOTSUPP)
		log_info("test hook: a device without save: %s", err);
	else
		log_warn("test hook: a device without save: TAKEN (%d)", rc);
}

static void
test_hook_machine_state(struct worker *w, const char *mode)
{
	struct machine *m = w->machine;
	unsigned int n = m->nvcpus, i;
	struct machine_state *ms = calloc(3, sizeof(*ms)), *junk, *back;
	struct vcpu_state **vs = calloc(3 * (size_t)n, sizeof(*vs));
	struct vcpu_state **jv, **bv;
	struct dev_state_buf sec = { 0 }, devs = { 0 };
	struct dev_state_error derr = { "" };
	char err[160] = "";
	bool same = true;
	int rc = -ENOMEM;

	if (ms == NULL || vs == NULL)
		goto fail;
	junk = ms + 1;
	back = ms + 2;
	jv = vs + n;
	bv = vs + 2 * n;
	for (i = 0; i < 3 * n; i++)
		if ((vs[i] = calloc(1, sizeof(*vs[i]))) == NULL)
			goto fail;
	snprintf(err, sizeof(err), "capture");
	rc = machine_own_state_get(m, ms, err, sizeof(err));
	for (i = 0; rc == 0 && i < n; i++)
		rc = machine_vcpu_state_get(m, i, vs[i], err, sizeof(err));
	if (rc == 0)
		rc = test_hook_machine_save(ms, vs, n, &sec);
	if (rc == 0)
		rc = machine_devices_save(m, &devs, err, sizeof(err));
	if (rc < 0)
		goto fail;
	test_hook_unsaved(m);

	*junk = *ms;
	junk->pic.master.imr = junk->pic.slave.imr = 0xff;
	for (i = 0; i < MACHINE_STATE_IOAPIC_PINS; i++)
		junk->ioapic.redir[i] = 0x10000;
	junk->pit.channel[0].mode = 0;
	for (i = 0; i < n; i++) {
		*jv[i] = *vs[i];
		memset(&jv[i]->regs, 0x5a, sizeof(jv[i]->regs));
		jv[i]->regs.rflags = 0x2;
	}
	rc = machine_restore(m, junk, jv, NULL, 0, err, sizeof(err));
	if (rc == 0)
		rc = machine_own_state_get(m, back, err, sizeof(err));
	if (rc < 0 || back->ioapic.redir[0] != 0x10000 ||
	    back->pic.master.imr != 0xff) {
		snprintf(err, sizeof(err), "the junk did not take");
		rc = rc < 0 ? rc : -EIO;
		goto fail;
	}
	if (strcmp(mode, "machine") == 0) {
		memset(back, 0, sizeof(*back));
		rc = test_hook_machine_load(back, bv, n, &sec, &derr);
		if (rc < 0) {
			snprintf(err, sizeof(err), "refused: %s", derr.msg);
			goto fail;
		}
		rc = machine_restore(m, back, bv, devs.data, devs.len, err,
		    sizeof(err));
		if (rc == 0)
			rc = machine_own_state_get(m, back, err, sizeof(err));
		if (rc < 0)
			goto fail;
		/* A device may raise a line while paused: IRR may differ. */
		same = memcmp(back->ioapic.redir, ms->ioapic.redir,
		    sizeof(ms->ioapic.redir)) == 0 &&
		    back->pic.master.imr == ms->pic.master.imr &&
		    back->pic.slave.imr == ms->pic.slave.imr &&
		    back->pit.channel[0].mode == ms->pit.channel[0].mode &&
		    back->clock.clock >= ms->clock.clock;
	}
	log_info("test hook: machine state %s: %zu bytes, %u vCPUs, TSC %u "
	    "kHz, %u offsets, devices %zu bytes, chips and clock %s", mode,
	    sec.len, n, ms->clock.tsc_khz, ms->clock.ntsc_offset, devs.len,
	    same ? "back" : "NOT back");
	goto out;
fail:
	log_warn("test hook: machine state: %s: %s", err, strerror(-rc));
out:
	dev_state_buf_free(&sec);
	dev_state_buf_free(&devs);
	for (i = 0; vs != NULL && i < 3 * n; i++)
		free(vs[i]);
	free(vs);
	free(ms);
}

void
test_hook_resuming(struct worker *w)
{
	const char *mode = getenv("VMMD_TEST_VCPU_STATE");
	struct vcpu_state *st = NULL, *junk = NULL, *back = NULL;
	struct dev_state_buf sec = { 0 };
	struct dev_state_error derr = { "" };
	char err[160] = "";
	unsigned long long rip;
	int rc;

	if (mode == NULL || w->machine == NULL)
		return;
	if (strncmp(mode, "machine", 7) == 0) {
		test_hook_machine_state(w, mode);
		return;
	}
	st = malloc(sizeof(*st));
	junk = malloc(sizeof(*junk));
	back = calloc(1, sizeof(*back));
	if (st == NULL || junk == NULL || back == NULL) {
		log_warn("test hook: vcpu 0 state: out of memory");
		goto out;
	}
	rc = machine_vcpu_state_get(w->machine, 0, st, err, sizeof(err));
	if (rc == 0)
		rc = dev_state_save(&vcpu_state_table, st, &sec);
	if (rc < 0) {
		log_warn("test hook: vcpu 0 state: capture failed: %s", err);
		goto out;
	}
	rip = st->regs.rip;
	*junk = *st;
	memset(&junk->regs, 0x5a, sizeof(junk->regs));
	junk->regs.rflags = 0x2;
	if (junk->xsave_words * 4 >= TEST_HOOK_XMM_OFFSET +
	    TEST_HOOK_XMM_BYTES)
		memset((uint8_t *)junk->xsave + TEST_HOOK_XMM_OFFSET, 0xa5,
		    TEST_HOOK_XMM_BYTES);
	rc = machine_vcpu_state_set(w->machine, 0, junk, err, sizeof(err));
	if (rc == 0)
		rc = machine_vcpu_state_get(w->machine, 0, back, err,
		    sizeof(err));
	if (rc < 0 || back->regs.rip != junk->regs.rip) {
		log_warn("test hook: vcpu 0 state: clobbering failed: %s", err);
		goto out;
	}
	if (strcmp(mode, "restore") == 0) {
		memset(back, 0, sizeof(*back));
		rc = dev_state_load(&vcpu_state_table, back, sec.data, sec.len,
		    &derr);
		if (rc < 0) {
			log_warn("test hook: vcpu 0 state: section refused: "
			    "%s", derr.msg);
			goto out;
		}
		rc = machine_vcpu_state_set(w->machine, 0, back, err,
		    sizeof(err));
		if (rc < 0) {
			log_warn("test hook: vcpu 0 state: restore failed: "
			    "%s", err);
			goto out;
		}
	}
	log_info("test hook: vcpu 0 state %s: %zu bytes, %u MSRs, %u XCRs, "
	    "XSAVE %u bytes, rip %#llx, clobbered to %#llx", mode, sec.len,
	    st->nmsr_index, st->nxcr_index, st->xsave_words * 4, rip,
	    (unsigned long long)junk->regs.rip);
out:
	dev_state_buf_free(&sec);
	free(st);
	free(junk);
	free(back);
}

/* The loop: the guest reached its first fw_cfg DMA; pause it there. */
static void
test_hook_hold_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	if (w->machine == NULL || w->paused)
		return;
	/* As vm.pause does it (requests.c). */
	display_quiesce(w->display);
	machine_pause(w->machine);
	guest_state_event(w, "paused");
	log_info("test hook: held at the first fw_cfg DMA");
}

/* A vCPU, under fw_cfg's lock: only a wake-up of the loop. */
static void
test_hook_first_dma(void *opaque)
{
	event_active(opaque, 0, 0);
}

void
test_hook_machine_built(struct worker *w)
{
	static struct event *ev;
	const char *hold = getenv("VMMD_TEST_HOLD");

	if (hold == NULL || strcmp(hold, "fw-cfg-dma") != 0)
		return;
	if (ev == NULL &&
	    (ev = event_new(w->base, -1, 0, test_hook_hold_cb, w)) == NULL) {
		log_error("test hook: no event for the hold");
		return;
	}
	machine_on_fw_cfg_dma(w->machine, test_hook_first_dma, ev);
}

/* The migration hold's file, opened before the sandbox closed in (by
 * name: the sandbox refuses that later); -1 for none.  Written by the
 * loop's thread before any migration thread exists, then only read. */
static int test_hook_hold_fd = -1;

void
test_hook_sandboxing(struct worker *w)
{
	const char *hold = getenv("VMMD_TEST_MIGRATE_HOLD");

	(void)w;
	if (hold == NULL || test_hook_hold_fd >= 0)
		return;
	test_hook_hold_fd = open(hold, O_RDONLY | O_CLOEXEC);
	if (test_hook_hold_fd < 0)
		log_error("test hook: %s: %s", hold, strerror(errno));
}

void
test_hook_migrate_frame(void)
{
	struct timespec t0, t;
	struct stat sb;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (test_hook_hold_fd >= 0 && fstat(test_hook_hold_fd, &sb) == 0 &&
	    sb.st_size > 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 300)
			break;
		usleep(10 * 1000);
	}
}
