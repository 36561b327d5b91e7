/*
 * The worker's NVRAM file (daemon/worker/nvram.c): the file read into
 * the store a flash is built on, each block the guest programs or
 * erases written back from the event loop (and only those blocks), what
 * was written kept across a rebuilt flash, what is left written at
 * nvram_free, files that are no whole blocks refused, a write that
 * fails giving its block back instead of losing it, and the image in a
 * snapshot: saved as it is in memory, loaded back over later changes
 * (the file following), a damaged or foreign one refused untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "dev-state.h"
#include "fake-host.h"
#include "nvram.h"
#include "scratch.h"
#include "tap.h"
#include "unit-util.h"

#define BS	4096u
#define NB	4u
#define SIZE	(BS * NB)

static uint8_t image[SIZE];

static void
wr(struct pflash *p, uint64_t off, uint8_t v)
{
	pflash_device_ops.write(p, off, &v, 1);
}

static uint8_t
rd(struct pflash *p, uint64_t off)
{
	uint8_t v;

	pflash_device_ops.read(p, off, &v, 1);
	return v;
}

/* A file of n bytes of the image; its path. */
static const char *
make_file(const char *rel, size_t n)
{
	const char *path = scratch_at(rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, image, n) != (ssize_t)n || close(fd) < 0)
		tap_bail("writing %s", path);
	return path;
}

static bool
file_is(const char *path, const uint8_t *want)
{
	static uint8_t got[SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool same;

	if (fd < 0)
		tap_bail("opening %s", path);
	same = pread(fd, got, SIZE, 0) == SIZE && memcmp(got, want, SIZE) == 0;
	close(fd);
	return same;
}

static void
test_write_back(struct event_base *base)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	const char *path = make_file("vars.fd", SIZE);
	static uint8_t want[SIZE];
	struct nvram *n;
	struct pflash *p;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	memcpy(want, image, SIZE);
	TAP_EQ(nvram_new(base, fd, BS, false, &n), 0, "nvram_new");
	if ((p = pflash_new(&fh.host, nvram_store(n))) == NULL)
		tap_bail("pflash_new");
	TAP_EQ(rd(p, 5), image[5], "the flash reads the file");

	wr(p, 0, 0x10);
	wr(p, BS + 3, 0x00);
	wr(p, 0, 0xff);
	want[BS + 3] = 0;
	tap_ok(file_is(path, image), "nothing written from the access");
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(file_is(path, want), "the loop wrote the programmed byte");
	TAP_EQ(nvram_blocks_written(n), 1u, "one block written");

	wr(p, 0, 0x20);
	wr(p, 3 * BS, 0xd0);
	memset(want + 3 * BS, 0xff, BS);
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(file_is(path, want), "the erased block written");
	TAP_EQ(nvram_blocks_written(n), 2u, "two blocks written in all");
	event_base_loop(base, EVLOOP_NONBLOCK);
	TAP_EQ(nvram_blocks_written(n), 2u, "an idle loop writes nothing");

	/* A guest reset rebuilds the flash on the same store. */
	pflash_free(p);
	if ((p = pflash_new(&fh.host, nvram_store(n))) == NULL)
		tap_bail("pflash_new");
	TAP_EQ(rd(p, BS + 3), 0u, "a rebuilt flash reads what was written");
	wr(p, 0, 0x40);
	wr(p, 2 * BS, 0x00);
	want[2 * BS] = 0;
	pflash_free(p);
	nvram_free(n);
	tap_ok(file_is(path, want), "nvram_free wrote what was left");
}

static void
test_bad_files(struct event_base *base)
{
	struct nvram *n = NULL;
	const char *path;

	path = make_file("empty.fd", 0);
	TAP_EQ(nvram_new(base, open(path, O_RDWR | O_CLOEXEC), BS, false,
	    &n), -EINVAL, "an empty file is refused");
	path = make_file("odd.fd", BS + 1);
	TAP_EQ(nvram_new(base, open(path, O_RDWR | O_CLOEXEC), BS, false,
	    &n), -EINVAL, "a file that is no whole blocks is refused");
	TAP_EQ(nvram_new(base, open(scratch_dir(), O_RDONLY | O_CLOEXEC), BS,
	    false, &n), -EINVAL, "a directory is refused");
	tap_ok(n == NULL, "nothing made");
}

static void
test_write_fails(struct event_base *base)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	const char *path = make_file("ro.fd", SIZE);
	struct nvram *n;
	struct pflash *p;

	/* Read-only descriptor: every write fails with EBADF. */
	TAP_EQ(nvram_new(base, open(path, O_RDONLY | O_CLOEXEC), BS, false,
	    &n), 0, "nvram_new on a file it cannot write");
	if ((p = pflash_new(&fh.host, nvram_store(n))) == NULL)
		tap_bail("pflash_new");
	wr(p, 0, 0x10);
	wr(p, 7, 0x00);
	event_base_loop(base, EVLOOP_NONBLOCK);
	TAP_EQ(nvram_write_errors(n), 1u, "the write failed");
	TAP_EQ(nvram_store(n)->ndirty, 1u, "its block is dirty again");
	TAP_EQ(nvram_flush(n), -EBADF, "nvram_flush says why");
	wr(p, 0, 0xff);
	TAP_EQ(rd(p, 7), 0u, "the guest still reads what it wrote");
	pflash_free(p);
	tap_diag("a log line about lost blocks follows, as it should");
	nvram_free(n);
	tap_ok(file_is(path, image), "the file is unchanged");
}

static void
test_snapshot(struct event_base *base)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	const char *path = make_file("snap.fd", SIZE);
	static uint8_t want[SIZE];
	struct dev_state_buf s1 = { 0 }, s2 = { 0 }, bad = { 0 };
	struct dev_state_error e = { "" };
	struct nvram *n, *small;
	struct pflash *p;
	unsigned int cuts_ok = 1;
	int rc;

	memcpy(want, image, SIZE);
	TAP_EQ(nvram_new(base, open(path, O_RDWR | O_CLOEXEC), BS, false,
	    &n), 0, "nvram_new");
	if ((p = pflash_new(&fh.host, nvram_store(n))) == NULL)
		tap_bail("pflash_new");
	wr(p, 0, 0x10);
	wr(p, BS + 7, 0x00);
	wr(p, 0, 0xff);
	want[BS + 7] = 0;
	TAP_EQ(nvram_save(n, &s1), 0, "saved before the write-back");
	event_base_loop(base, EVLOOP_NONBLOCK);
	wr(p, 0, 0x10);
	wr(p, 2 * BS + 1, 0x00);
	wr(p, 0, 0x20);
	wr(p, 3 * BS, 0xd0);
	wr(p, 0, 0xff);
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(!file_is(path, want), "changed since, in the file too");

	rc = nvram_load(n, s1.data, s1.len, &e);
	TAP_EQ(rc, 0, "loaded (%s)", e.msg);
	tap_ok(rd(p, BS + 7) == 0 && rd(p, 2 * BS + 1) == image[2 * BS + 1] &&
	    rd(p, 3 * BS) == image[3 * BS],
	    "the flash reads the variables of the save");
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(file_is(path, want), "and the file has them after the "
	    "write-back");
	TAP_EQ(nvram_save(n, &s2), 0, "saved again");
	tap_ok(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0,
	    "the same %zu bytes", s1.len);

	for (size_t cut = 0; cut < s1.len; cut += 7)
		if (nvram_load(n, s1.data, cut, &e) >= 0)
			cuts_ok = 0;
	tap_ok(cuts_ok, "cut short: refused (%s)", e.msg);
	if (nvram_save(n, &bad) != 0 || nvram_save(n, &bad) != 0)
		tap_bail("save");
	tap_ok(nvram_load(n, bad.data, bad.len, &e) == -EINVAL,
	    "the image twice: refused (%s)", e.msg);
	dev_state_buf_free(&bad);
	if (nvram_save(n, &bad) != 0)
		tap_bail("save");
	bad.data[0] ^= 1;
	tap_ok(nvram_load(n, bad.data, bad.len, &e) < 0,
	    "a damaged magic: refused (%s)", e.msg);
	TAP_EQ(nvram_new(base, open(make_file("small.fd", 2 * BS),
	    O_RDWR | O_CLOEXEC), BS, false, &small), 0, "a smaller store");
	tap_ok(nvram_load(small, s1.data, s1.len, &e) == -EINVAL,
	    "another size of image: refused (%s)", e.msg);
	tap_ok(rd(p, BS + 7) == 0 && rd(p, 5) == image[5],
	    "the refusals left the image as it was");
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(file_is(path, want), "and the file too");
	nvram_free(small);
	pflash_free(p);
	nvram_free(n);
	dev_state_buf_free(&s1);
	dev_state_buf_free(&s2);
	dev_state_buf_free(&bad);
}

int
main(void)
{
	struct event_base *base = event_base_new();

	if (base == NULL)
		tap_bail("event_base_new");
	for (size_t i = 0; i < SIZE; i++)
		image[i] = (uint8_t)(i * 11 + (i >> 9) + 3);
	scratch_new("nvram");
	test_write_back(base);
	test_bad_files(base);
	test_write_fails(base);
	test_snapshot(base);
	event_base_free(base);
	return tap_done();
}
