/*
 * Device state sections: what a device (or a vCPU) must keep across a
 * snapshot, declared once, as a table of named fields of its state
 * struct, the way figure.h declares counters.  The library writes a
 * section from the struct and reads one back into it; nothing else
 * knows the layout, and no struct is ever written as raw memory.
 *
 * A section is self-describing, all numbers little endian:
 *
 *   u32 magic ("VSEC")  u8 namelen  name  u32 version  u32 nfields
 *   u32 body length (the bytes of the fields that follow)
 *   then nfields times:
 *     u8 namelen  name  u8 type  u32 count  count * element-size bytes
 *
 * where count is the number of elements (bytes for BYTES, 1 for a
 * scalar).  A reader knows each field by its name and checks its type
 * and count against its own table: it refuses what it does not know
 * (an unknown or duplicate field, another type, a wrong count, a value
 * beyond the field's bound, a newer version, a truncated or overlong
 * section), skips fields its table lists as retired, and gives a field
 * a newer version added (since > the section's version) the default its
 * table declares.  Every refusal is -errno with a message for the
 * caller to show.
 *
 * Reading is all or nothing: the fields are read into a copy of the
 * destination struct, the table's check() runs on the copy, and only
 * then is the copy written over the destination.  Members the table
 * does not name (pointers, backends, timers) keep their values, so a
 * device loads into its own struct and then recomputes what derives
 * from the loaded state (an interrupt level, a timer deadline).
 */
#ifndef VMMD_DEV_STATE_H
#define VMMD_DEV_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEV_STATE_MAGIC		0x43455356u	/* "VSEC" */
#define DEV_STATE_NAME_MAX	63		/* section and field names */
#define DEV_STATE_FIELDS_MAX	1024
#define DEV_STATE_VALUE_MAX	(1u << 20)	/* bytes of one field */

enum dev_state_type {
	DEV_STATE_U8 = 1,
	DEV_STATE_U16,
	DEV_STATE_U32,
	DEV_STATE_U64,
	DEV_STATE_BOOL,		/* one byte, 0 or 1; the member is a bool */
	DEV_STATE_BYTES,	/* size bytes, copied as they are */
	DEV_STATE_ARRAY_U8,	/* size / element-size elements */
	DEV_STATE_ARRAY_U16,
	DEV_STATE_ARRAY_U32,
	DEV_STATE_ARRAY_U64,
};

/* Field flags. */
#define DEV_STATE_RETIRED	0x1	/* no longer kept: skipped on read */
#define DEV_STATE_VARLEN	0x2	/* count lives at count_offset */

struct dev_state_field {
	const char *name;
	enum dev_state_type type;
	unsigned int flags;
	size_t offset;		/* of the member in the state struct */
	size_t size;		/* of the member (the maximum if VARLEN) */
	/*
	 * VARLEN (an array or BYTES): the offset of a uint32_t member
	 * with the number of elements in use, at most size / element-size;
	 * only those are written, and a read checks the count against that
	 * maximum.  An older section without the field leaves 0 in use.
	 */
	size_t count_offset;
	/* Scalars: values above max are refused (0: the type's range). */
	uint64_t max;
	/* The section version that added the field (0 or 1: the first). */
	uint32_t since;
	/*
	 * What the field becomes when an older section lacks it: scalars
	 * and each element of an array take dflt (BYTES: every byte).
	 */
	uint64_t dflt;
};

struct dev_state_error {
	char msg[160];
};

struct dev_state_table {
	const char *name;		/* the section's */
	uint32_t version;		/* written; the newest one read */
	size_t struct_size;		/* of the state struct */
	const struct dev_state_field *fields;
	size_t nfields;
	/*
	 * Optional: invariants across fields the table cannot state (an
	 * index within a ring's size), on the loaded copy: 0, or -errno
	 * with err's message set (dev_state_fail).
	 */
	int (*check)(const void *state, struct dev_state_error *err);
};

#define DEV_STATE_AT(type, member)					\
	.offset = offsetof(type, member),				\
	.size = sizeof(((type *)0)->member)

#define DEV_STATE_TABLE(nm, ver, type, rows)				\
	.name = (nm), .version = (ver), .struct_size = sizeof(type),	\
	.fields = (rows), .nfields = sizeof(rows) / sizeof((rows)[0])

/* A growing buffer that sections are appended to. */
struct dev_state_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

void	dev_state_buf_free(struct dev_state_buf *b);

/*
 * Whether t is well formed (sizes fit types, names fit, none twice):
 * 0, or -EINVAL with err saying what is wrong.  For tests: the other
 * functions trust their table.
 */
int	dev_state_table_check(const struct dev_state_table *t,
	    struct dev_state_error *err);

/* Append src's section to out: 0 or -ENOMEM (-E2BIG: a VARLEN count). */
int	dev_state_save(const struct dev_state_table *t, const void *src,
	    struct dev_state_buf *out);

/*
 * Read the section in buf (len bytes, exactly one section) into dst:
 * 0, or -errno with err (may be NULL) saying why, dst untouched:
 * -EBADMSG (malformed: magic, truncation, trailing bytes), -ENOENT
 * (another section's name, a field missing), -EPROTONOSUPPORT (a newer
 * version), -EINVAL (an unknown, duplicate or mistyped field, a value
 * out of bounds), -E2BIG (a size beyond the limits), -ENOMEM, or
 * whatever check() returns.
 */
int	dev_state_load(const struct dev_state_table *t, void *dst,
	    const void *buf, size_t len, struct dev_state_error *err);

/*
 * The length of the section at the start of buf (header and body) for
 * a reader that walks several, or -EBADMSG.
 */
long	dev_state_section_len(const void *buf, size_t len);

/* Set err's message (err may be NULL) and return rc. */
int	dev_state_fail(struct dev_state_error *err, int rc, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));

#endif
