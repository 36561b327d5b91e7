/*
 * A live migration's stream (README.md): what one worker sends another
 * over whatever carries it (a socket vmctl relays, SSH's pipes).  No
 * KVM and no process around it: the workers hand it buffers and guest
 * RAM regions, the fuzzer drives the parser alone.
 *
 * The stream is a header (MIG_MAGIC, version) and then frames, each
 * {u32 type, u32 length, u32 crc32 of the payload} and the payload,
 * little endian.  Source to target: RAM frames {u64 gpa, u32 pages,
 * u32 0, the pages}, ZERO frames {u64 gpa, u32 pages, u32 0} (pages
 * that became zero), SECTION frames {u8 name length, name, the
 * section's bytes} (the snapshot's sections: dev-state.h), then END.
 * Target to source: RUNNING once the guest runs there, or ERROR {text}
 * (either way: the sender gives up).  Every frame is checked whole
 * (length, checksum, pages inside guest RAM, names) before any byte of
 * it is used.
 */
#ifndef VMMD_MIG_STREAM_H
#define VMMD_MIG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIG_MAGIC		"VMMDMIG\n"
#define MIG_VERSION		1
#define MIG_HEADER_SIZE		16	/* magic, u32 version, u32 0 */
#define MIG_FRAME_HEADER	12	/* type, length, crc32 */
#define MIG_PAGE_SIZE		4096u
#define MIG_PAGES_MAX		256	/* per RAM frame: 1 MiB */
#define MIG_PAGES_HEADER	16	/* gpa, pages, 0 */
#define MIG_NAME_MAX		63
/* The largest payload: a RAM frame, or a section (dev-state.h's). */
#define MIG_FRAME_MAX		(16u << 20)
/* All sections together (snap-manifest.h's SNAP_STATE_MAX). */
#define MIG_STATE_MAX		(64u << 20)
#define MIG_SECTIONS_MAX	1024

enum mig_type {
	MIG_T_RAM = 1,
	MIG_T_ZERO = 2,
	MIG_T_SECTION = 3,
	MIG_T_END = 4,
	MIG_T_RUNNING = 5,
	MIG_T_ERROR = 6,
};

struct mig_frame {
	uint32_t type;
	uint32_t len;
	uint32_t crc;
};

/* Guest RAM as the target has it: gpa, bytes, where it is mapped. */
struct mig_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *host;
};

/* The header into buf[MIG_HEADER_SIZE]. */
void	mig_header_put(uint8_t *buf);
/* A header received: 0, or -EPROTO (not a stream) / -EPROTONOSUPPORT
 * (another version) with err. */
int	mig_header_check(const uint8_t *buf, char *err, size_t errlen);

/* A frame's header for payload p (len bytes) into buf. */
void	mig_frame_put(uint8_t *buf, uint32_t type, const void *p,
	    uint32_t len);
/* A frame header received: its fields, checked for a known type and a
 * length the type allows: 0 or -EPROTO with err. */
int	mig_frame_parse(const uint8_t *buf, struct mig_frame *f, char *err,
	    size_t errlen);
/* The payload's checksum against f's: 0 or -EBADMSG with err. */
int	mig_frame_verify(const struct mig_frame *f, const void *p, char *err,
	    size_t errlen);

/*
 * A RAM or ZERO frame's payload: where its pages go (*dst: the host
 * address of the first; all of them inside one region) and how many:
 * 0, or -EPROTO/-ERANGE with err.
 */
int	mig_pages_parse(const struct mig_frame *f, const uint8_t *p,
	    const struct mig_region *r, size_t nr, uint8_t **dst,
	    uint32_t *pages, char *err, size_t errlen);
/* A RAM or ZERO frame's payload header into buf[MIG_PAGES_HEADER]. */
void	mig_pages_put(uint8_t *buf, uint64_t gpa, uint32_t pages);

/*
 * A SECTION frame's payload: its name (copied into name[MIG_NAME_MAX +
 * 1]: letters, digits, '.', '/', '_', '-') and its bytes: 0 or -EPROTO
 * with err.
 */
int	mig_section_parse(const struct mig_frame *f, const uint8_t *p,
	    char *name, const uint8_t **data, size_t *len, char *err,
	    size_t errlen);

/* Whether the page at p is all zero bytes. */
bool	mig_page_zero(const uint8_t *p);

#endif
