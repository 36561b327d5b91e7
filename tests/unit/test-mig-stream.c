/*
 * The live migration stream's framing (mig-stream.h): what a source
 * writes a target reads back; and every frame a target must refuse is
 * refused before a byte of it is used: another magic or version, an
 * unknown type, a length its type does not allow, a wrong checksum,
 * pages outside guest RAM (also where gpa + size would wrap), a page
 * count that does not match the length, section names out of the rule.
 * And the bounded I/O (mig-io.h): a peer that ends is told apart from
 * one that is silent, and from a supervisor that goes away.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mig-io.h"
#include "mig-recv.h"
#include "mig-stream.h"
#include "tap.h"

static uint8_t ram_low[16 * MIG_PAGE_SIZE], ram_high[4 * MIG_PAGE_SIZE];
static const struct mig_region regions[] = {
	{ 0, sizeof(ram_low), ram_low },
	{ 0x100000000ull, sizeof(ram_high), ram_high },
};

/* A RAM or ZERO frame's header and payload for (gpa, pages). */
static void
pages_frame(uint8_t *buf, struct mig_frame *f, uint32_t type, uint64_t gpa,
    uint32_t pages, uint32_t len)
{
	char err[256];

	mig_pages_put(buf + MIG_FRAME_HEADER, gpa, pages);
	mig_frame_put(buf, type, buf + MIG_FRAME_HEADER, len);
	if (mig_frame_parse(buf, f, err, sizeof(err)) < 0)
		f->len = 0;
}

static int
pages_check(uint32_t type, uint64_t gpa, uint32_t pages, uint32_t len,
    uint8_t **dst)
{
	static uint8_t buf[MIG_FRAME_HEADER + MIG_PAGES_HEADER +
	    MIG_PAGES_MAX * MIG_PAGE_SIZE];
	struct mig_frame f;
	uint32_t n;
	char err[256];

	pages_frame(buf, &f, type, gpa, pages, len);
	return mig_pages_parse(&f, buf + MIG_FRAME_HEADER, regions, 2, dst, &n,
	    err, sizeof(err));
}

int
main(void)
{
	uint8_t hdr[MIG_HEADER_SIZE], fh[MIG_FRAME_HEADER], page[MIG_PAGE_SIZE];
	uint8_t sec[80], *dst;
	const uint8_t *data;
	struct mig_frame f;
	char err[256], name[MIG_NAME_MAX + 1];
	size_t len;
	int sv[2], watch[2];

	mig_header_put(hdr);
	tap_ok(mig_header_check(hdr, err, sizeof(err)) == 0, "a header");
	hdr[8] = 2;
	tap_ok(mig_header_check(hdr, err, sizeof(err)) == -EPROTONOSUPPORT &&
	    strstr(err, "version 2") != NULL, "another version: %s", err);
	hdr[0] = 'X';
	tap_ok(mig_header_check(hdr, err, sizeof(err)) == -EPROTO,
	    "another magic: %s", err);

	mig_frame_put(fh, MIG_T_END, NULL, 0);
	tap_ok(mig_frame_parse(fh, &f, err, sizeof(err)) == 0 &&
	    f.type == MIG_T_END && f.len == 0, "END");
	mig_frame_put(fh, 99, NULL, 0);
	tap_ok(mig_frame_parse(fh, &f, err, sizeof(err)) == -EPROTO,
	    "an unknown type: %s", err);
	mig_frame_put(fh, MIG_T_END, page, 4);
	tap_ok(mig_frame_parse(fh, &f, err, sizeof(err)) == -EPROTO,
	    "END with a payload: %s", err);
	mig_frame_put(fh, MIG_T_SECTION, page, 0);
	fh[4] = 1;
	fh[5] = 0;
	fh[6] = 0;
	fh[7] = 1;	/* 16 MiB + 1 */
	tap_ok(mig_frame_parse(fh, &f, err, sizeof(err)) == -EPROTO,
	    "a section over the bound: %s", err);

	memset(page, 0xa5, sizeof(page));
	mig_frame_put(fh, MIG_T_ERROR, page, 100);
	tap_ok(mig_frame_parse(fh, &f, err, sizeof(err)) == 0 &&
	    mig_frame_verify(&f, page, err, sizeof(err)) == 0,
	    "a checksum that matches");
	page[50] ^= 1;
	tap_ok(mig_frame_verify(&f, page, err, sizeof(err)) == -EBADMSG,
	    "one flipped bit: %s", err);

	tap_ok(pages_check(MIG_T_RAM, 2 * MIG_PAGE_SIZE, 3, MIG_PAGES_HEADER +
	    3 * MIG_PAGE_SIZE, &dst) == 0 && dst == ram_low + 2 *
	    MIG_PAGE_SIZE, "three pages in low RAM");
	tap_ok(pages_check(MIG_T_ZERO, 0x100000000ull + MIG_PAGE_SIZE, 3,
	    MIG_PAGES_HEADER, &dst) == 0 && dst == ram_high + MIG_PAGE_SIZE,
	    "three zero pages ending high RAM");
	tap_ok(pages_check(MIG_T_ZERO, 0x100000000ull + MIG_PAGE_SIZE, 4,
	    MIG_PAGES_HEADER, &dst) == -ERANGE, "one page past high RAM");
	tap_ok(pages_check(MIG_T_RAM, 15 * MIG_PAGE_SIZE, 2,
	    MIG_PAGES_HEADER + 2 * MIG_PAGE_SIZE, &dst) == -ERANGE,
	    "across the end of low RAM");
	tap_ok(pages_check(MIG_T_ZERO, UINT64_MAX - MIG_PAGE_SIZE + 1, 2,
	    MIG_PAGES_HEADER, &dst) == -ERANGE, "a gpa whose end wraps");
	tap_ok(pages_check(MIG_T_RAM, 0, 2, MIG_PAGES_HEADER + MIG_PAGE_SIZE,
	    &dst) == -EPROTO, "two pages in one page's bytes");
	tap_ok(pages_check(MIG_T_ZERO, 100, 1, MIG_PAGES_HEADER, &dst) ==
	    -EPROTO, "an unaligned gpa");
	tap_ok(pages_check(MIG_T_ZERO, 0, 0, MIG_PAGES_HEADER, &dst) ==
	    -EPROTO, "no pages");

	sec[0] = 6;
	memcpy(sec + 1, "vcpu/0state", 11);
	f = (struct mig_frame){ MIG_T_SECTION, 12, 0 };
	tap_ok(mig_section_parse(&f, sec, name, &data, &len, err,
	    sizeof(err)) == 0 && strcmp(name, "vcpu/0") == 0 && len == 5 &&
	    memcmp(data, "state", 5) == 0, "a section: %s", name);
	sec[3] = ' ';
	tap_ok(mig_section_parse(&f, sec, name, &data, &len, err,
	    sizeof(err)) == -EPROTO, "a name with a space: %s", err);
	sec[0] = 12;
	tap_ok(mig_section_parse(&f, sec, name, &data, &len, err,
	    sizeof(err)) == -EPROTO, "a name longer than the frame");
	sec[0] = 0;
	tap_ok(mig_section_parse(&f, sec, name, &data, &len, err,
	    sizeof(err)) == -EPROTO, "no name");

	{
		struct mig_recv r;
		const uint8_t *got;
		size_t n;

		mig_recv_init(&r, regions, 2);
		sec[0] = 4;
		memcpy(sec + 1, "fpu/", 4);
		f = (struct mig_frame){ MIG_T_SECTION, 5, 0 };
		tap_ok(mig_recv_frame(&r, &f, sec, err, sizeof(err)) == 0 &&
		    (got = mig_recv_section(&r, "fpu/", &n)) != NULL && n == 0,
		    "receiver: an empty section first, before any bytes");
		sec[0] = 5;
		memcpy(sec + 1, "clockABC", 8);
		f = (struct mig_frame){ MIG_T_SECTION, 9, 0 };
		tap_ok(mig_recv_frame(&r, &f, sec, err, sizeof(err)) == 0 &&
		    (got = mig_recv_section(&r, "clock", &n)) != NULL &&
		    n == 3 && memcmp(got, "ABC", 3) == 0,
		    "receiver: a section kept");
		tap_ok(mig_recv_frame(&r, &f, sec, err, sizeof(err)) ==
		    -EPROTO, "receiver: the same section twice: %s", err);
		mig_pages_put(page, 0x100000000ull, 1);
		f = (struct mig_frame){ MIG_T_ZERO, MIG_PAGES_HEADER, 0 };
		ram_high[5] = 7;
		tap_ok(mig_recv_frame(&r, &f, page, err, sizeof(err)) == 0 &&
		    ram_high[5] == 0 && r.pages == 1,
		    "receiver: a zero page zeroed in high RAM");
		f = (struct mig_frame){ MIG_T_END, 0, 0 };
		tap_ok(mig_recv_frame(&r, &f, page, err, sizeof(err)) == 1,
		    "receiver: END");
		tap_ok(mig_recv_frame(&r, &f, page, err, sizeof(err)) ==
		    -EPROTO, "receiver: anything after END: %s", err);
		mig_recv_free(&r);
	}

	memset(page, 0, sizeof(page));
	tap_ok(mig_page_zero(page), "a zero page");
	page[MIG_PAGE_SIZE - 1] = 1;
	tap_ok(!mig_page_zero(page), "its last byte set");

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, watch) < 0)
		tap_bail("socketpair");
	tap_ok(mig_io_write(sv[0], "abc", 3, watch[0], 1000) == 0 &&
	    mig_io_read(sv[1], sec, 3, watch[0], 1000) == 0 &&
	    memcmp(sec, "abc", 3) == 0, "bytes across");
	tap_ok(mig_io_read(sv[1], sec, 1, watch[0], 50) == -ETIMEDOUT,
	    "silence: timed out");
	close(watch[1]);
	tap_ok(mig_io_read(sv[1], sec, 1, watch[0], 1000) == -ECONNABORTED,
	    "the watched link's end: aborted");
	close(sv[0]);
	tap_ok(mig_io_read(sv[1], sec, 1, -1, 1000) == -ECONNRESET,
	    "the peer's end: reset");
	tap_ok(mig_io_write(sv[1], "x", 1, -1, 1000) == -EPIPE,
	    "writing to an ended peer: EPIPE");
	close(sv[1]);
	close(watch[0]);
	return tap_done();
}
