/*
 * See boot-aml.h.  Encodings from ACPI 6.4: 20.2.3 (data objects), 20.2.4
 * (package length), 20.2.2 (name strings), 20.2.5 (named objects),
 * 20.2.5.2 (Method), 20.2.5.3 (Notify), 6.4 (resource descriptors).
 */
#include <errno.h>
#include <string.h>

#include "boot-aml.h"

#define AML_ZERO_OP		0x00
#define AML_ONE_OP		0x01
#define AML_NAME_OP		0x08
#define AML_BYTE_PREFIX		0x0a
#define AML_WORD_PREFIX		0x0b
#define AML_DWORD_PREFIX	0x0c
#define AML_STRING_PREFIX	0x0d
#define AML_QWORD_PREFIX	0x0e
#define AML_SCOPE_OP		0x10
#define AML_BUFFER_OP		0x11
#define AML_PACKAGE_OP		0x12
#define AML_METHOD_OP		0x14
#define AML_NOTIFY_OP		0x86
#define AML_EXT_OP_PREFIX	0x5b
#define AML_DEVICE_OP		0x82	/* after the prefix */
#define AML_ROOT_CHAR		'\\'
#define AML_DUAL_NAME_PREFIX	0x2e
#define AML_MULTI_NAME_PREFIX	0x2f

#define AML_PKG_LENGTH_MAX	0x0fffffff	/* four bytes */

void
aml_init(struct aml *a, uint8_t *buf, size_t cap)
{
	a->buf = buf;
	a->len = 0;
	a->cap = cap;
	a->err = 0;
}

static void
aml_fail(struct aml *a, int err)
{
	if (a->err == 0)
		a->err = err;
}

void
aml_bytes(struct aml *a, const void *p, size_t n)
{
	if (a->err != 0)
		return;
	if (n > a->cap - a->len) {
		aml_fail(a, -ENOSPC);
		return;
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

void
aml_byte(struct aml *a, uint8_t b)
{
	aml_bytes(a, &b, 1);
}

/* Put n bytes at pos, moving what follows. */
static void
aml_insert(struct aml *a, size_t pos, const uint8_t *p, size_t n)
{
	if (a->err != 0)
		return;
	if (pos > a->len || n > a->cap - a->len) {
		aml_fail(a, -ENOSPC);
		return;
	}
	memmove(a->buf + pos + n, a->buf + pos, a->len - pos);
	memcpy(a->buf + pos, p, n);
	a->len += n;
}

static void
aml_le(struct aml *a, uint64_t v, unsigned int n)
{
	uint8_t b[8];
	unsigned int i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	aml_bytes(a, b, n);
}

static int
aml_seg(struct aml *a, const char *s, size_t n)
{
	char seg[4] = { '_', '_', '_', '_' };
	size_t i;

	if (n == 0 || n > 4)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' ||
		    (i > 0 && s[i] >= '0' && s[i] <= '9')))
			return -EINVAL;
		seg[i] = s[i];
	}
	aml_bytes(a, seg, 4);
	return 0;
}

void
aml_name(struct aml *a, const char *path)
{
	const char *p, *dot;
	unsigned int nseg = 1;

	if (*path == AML_ROOT_CHAR) {
		aml_byte(a, AML_ROOT_CHAR);
		path++;
	}
	for (p = path; *p != '\0'; p++)
		if (*p == '.')
			nseg++;
	if (nseg == 2)
		aml_byte(a, AML_DUAL_NAME_PREFIX);
	else if (nseg > 2) {
		if (nseg > 255) {
			aml_fail(a, -EINVAL);
			return;
		}
		aml_byte(a, AML_MULTI_NAME_PREFIX);
		aml_byte(a, (uint8_t)nseg);
	}
	for (p = path; ; p = dot + 1) {
		dot = strchr(p, '.');
		if (aml_seg(a, p, dot != NULL ? (size_t)(dot - p) :
		    strlen(p)) < 0) {
			aml_fail(a, -EINVAL);
			return;
		}
		if (dot == NULL)
			break;
	}
}

void
aml_integer(struct aml *a, uint64_t v)
{
	if (v == 0)
		aml_byte(a, AML_ZERO_OP);
	else if (v == 1)
		aml_byte(a, AML_ONE_OP);
	else if (v <= 0xff) {
		aml_byte(a, AML_BYTE_PREFIX);
		aml_le(a, v, 1);
	} else if (v <= 0xffff) {
		aml_byte(a, AML_WORD_PREFIX);
		aml_le(a, v, 2);
	} else if (v <= 0xffffffffULL) {
		aml_byte(a, AML_DWORD_PREFIX);
		aml_le(a, v, 4);
	} else {
		aml_byte(a, AML_QWORD_PREFIX);
		aml_le(a, v, 8);
	}
}

void
aml_string(struct aml *a, const char *s)
{
	aml_byte(a, AML_STRING_PREFIX);
	aml_bytes(a, s, strlen(s) + 1);
}

void
aml_eisaid(struct aml *a, const char *id)
{
	uint32_t v = 0;
	unsigned int i, d;
	char c;

	if (strlen(id) != 7) {
		aml_fail(a, -EINVAL);
		return;
	}
	for (i = 0; i < 3; i++) {
		if (id[i] < 'A' || id[i] > 'Z') {
			aml_fail(a, -EINVAL);
			return;
		}
		v = v << 5 | (uint32_t)(id[i] - '@');
	}
	for (i = 3; i < 7; i++) {
		c = id[i];
		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (c >= 'A' && c <= 'F')
			d = (unsigned int)(c - 'A' + 10);
		else {
			aml_fail(a, -EINVAL);
			return;
		}
		v = v << 4 | d;
	}
	/* The ID's first character is in the most significant bits of
	 * the first byte: the integer is stored big-endian. */
	aml_byte(a, AML_DWORD_PREFIX);
	aml_byte(a, (uint8_t)(v >> 24));
	aml_byte(a, (uint8_t)(v >> 16));
	aml_byte(a, (uint8_t)(v >> 8));
	aml_byte(a, (uint8_t)v);
}

void
aml_end(struct aml *a, size_t mark)
{
	uint8_t pl[4];
	size_t body, total;
	unsigned int n;

	if (a->err != 0)
		return;
	body = a->len - mark;
	/* The package length counts its own bytes. */
	for (n = 1; n <= 4; n++) {
		total = body + n;
		if (n == 1 ? total <= 0x3f : total < (1UL << (4 + 8 * (n - 1))))
			break;
	}
	if (n > 4 || total > AML_PKG_LENGTH_MAX) {
		aml_fail(a, -ENOSPC);
		return;
	}
	if (n == 1)
		pl[0] = (uint8_t)total;
	else {
		pl[0] = (uint8_t)((n - 1) << 6 | (total & 0xf));
		pl[1] = (uint8_t)(total >> 4);
		pl[2] = (uint8_t)(total >> 12);
		pl[3] = (uint8_t)(total >> 20);
	}
	aml_insert(a, mark, pl, n);
}

/* An opcode of n bytes, then the package length's place, then name. */
static size_t
aml_named_begin(struct aml *a, const uint8_t *op, size_t n,
    const char *name)
{
	size_t mark;

	aml_bytes(a, op, n);
	mark = a->len;
	aml_name(a, name);
	return mark;
}

size_t
aml_scope_begin(struct aml *a, const char *name)
{
	static const uint8_t op[] = { AML_SCOPE_OP };

	return aml_named_begin(a, op, sizeof(op), name);
}

size_t
aml_device_begin(struct aml *a, const char *name)
{
	static const uint8_t op[] = { AML_EXT_OP_PREFIX, AML_DEVICE_OP };

	return aml_named_begin(a, op, sizeof(op), name);
}

size_t
aml_method_begin(struct aml *a, const char *name, unsigned int nargs)
{
	static const uint8_t op[] = { AML_METHOD_OP };
	size_t mark;

	if (nargs > 7)
		aml_fail(a, -EINVAL);
	mark = aml_named_begin(a, op, sizeof(op), name);
	/* MethodFlags: ArgCount in bits 0-2, not serialized, SyncLevel 0. */
	aml_byte(a, (uint8_t)(nargs & 7));
	return mark;
}

void
aml_notify(struct aml *a, const char *path, uint64_t value)
{
	aml_byte(a, AML_NOTIFY_OP);
	aml_name(a, path);
	aml_integer(a, value);
}

size_t
aml_package_begin(struct aml *a, uint8_t nelems)
{
	size_t mark;

	aml_byte(a, AML_PACKAGE_OP);
	mark = a->len;
	aml_byte(a, nelems);
	return mark;
}

size_t
aml_buffer_begin(struct aml *a)
{
	aml_byte(a, AML_BUFFER_OP);
	return a->len;
}

void
aml_buffer_end(struct aml *a, size_t mark)
{
	uint8_t tmp[9];
	struct aml size;

	if (a->err != 0)
		return;
	aml_init(&size, tmp, sizeof(tmp));
	aml_integer(&size, a->len - mark);
	aml_insert(a, mark, tmp, size.len);
	aml_end(a, mark);
}

void
aml_name_decl(struct aml *a, const char *name)
{
	aml_byte(a, AML_NAME_OP);
	aml_name(a, name);
}

/* Small I/O port descriptor (6.4.2.5), 16-bit decode, fixed base. */
void
aml_res_io(struct aml *a, uint16_t base, uint8_t len)
{
	aml_byte(a, 0x47);
	aml_byte(a, 0x01);
	aml_le(a, base, 2);
	aml_le(a, base, 2);
	aml_byte(a, 0x01);
	aml_byte(a, len);
}

/* Small IRQ descriptor without flags (6.4.2.1): ISA edge, high. */
void
aml_res_irq(struct aml *a, unsigned int irq)
{
	if (irq > 15) {
		aml_fail(a, -EINVAL);
		return;
	}
	aml_byte(a, 0x22);
	aml_le(a, 1U << irq, 2);
}

/*
 * Word and DWord address space descriptors (6.4.3.5.2, 6.4.3.5.3): a
 * window the bridge produces, fixed minimum and maximum, positive decode.
 */
#define AML_ADDR_MEMORY		0
#define AML_ADDR_IO		1
#define AML_ADDR_BUS		2
#define AML_ADDR_MIN_MAX_FIXED	0x0c

static void
aml_res_word(struct aml *a, uint8_t type, uint8_t tflags, uint16_t min,
    uint16_t max)
{
	aml_byte(a, 0x88);
	aml_le(a, 13, 2);
	aml_byte(a, type);
	aml_byte(a, AML_ADDR_MIN_MAX_FIXED);
	aml_byte(a, tflags);
	aml_le(a, 0, 2);			/* granularity */
	aml_le(a, min, 2);
	aml_le(a, max, 2);
	aml_le(a, 0, 2);			/* translation */
	aml_le(a, (uint32_t)max - min + 1, 2);
}

void
aml_res_bus_range(struct aml *a, uint16_t min, uint16_t max)
{
	aml_res_word(a, AML_ADDR_BUS, 0, min, max);
}

void
aml_res_io_window(struct aml *a, uint16_t min, uint16_t max)
{
	/* ISA and non-ISA ranges: the entire range. */
	aml_res_word(a, AML_ADDR_IO, 0x03, min, max);
}

void
aml_res_mem_window(struct aml *a, uint32_t min, uint32_t max)
{
	aml_byte(a, 0x87);
	aml_le(a, 23, 2);
	aml_byte(a, AML_ADDR_MEMORY);
	aml_byte(a, AML_ADDR_MIN_MAX_FIXED);
	aml_byte(a, 0x01);			/* read-write, non-cacheable */
	aml_le(a, 0, 4);			/* granularity */
	aml_le(a, min, 4);
	aml_le(a, max, 4);
	aml_le(a, 0, 4);			/* translation */
	aml_le(a, (uint64_t)max - min + 1, 4);
}

/* QWord Address Space Descriptor (6.4.3.5.1): a window above 4 GiB. */
void
aml_res_mem64_window(struct aml *a, uint64_t min, uint64_t max)
{
	aml_byte(a, 0x8a);
	aml_le(a, 43, 2);
	aml_byte(a, AML_ADDR_MEMORY);
	aml_byte(a, AML_ADDR_MIN_MAX_FIXED);
	aml_byte(a, 0x01);			/* read-write, non-cacheable */
	aml_le(a, 0, 8);			/* granularity */
	aml_le(a, min, 8);
	aml_le(a, max, 8);
	aml_le(a, 0, 8);			/* translation */
	aml_le(a, max - min + 1, 8);
}

void
aml_res_end(struct aml *a)
{
	/* A zero checksum: "the descriptors are right". */
	aml_byte(a, 0x79);
	aml_byte(a, 0x00);
}
