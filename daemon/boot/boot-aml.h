/*
 * A small encoder for the ACPI Machine Language (ACPI 6.4, chapter 20):
 * just what the DSDT vmmd generates needs (scopes, devices, named
 * integers, strings, packages, buffers of resource descriptors).  It
 * writes into a caller's buffer; the first error (no room, a name that
 * is not a name) sticks in a->err and every later call does nothing, so
 * a caller encodes a whole table and checks once.
 */
#ifndef VMMD_BOOT_AML_H
#define VMMD_BOOT_AML_H

#include <stddef.h>
#include <stdint.h>

struct aml {
	uint8_t	*buf;
	size_t	 len;
	size_t	 cap;
	int	 err;		/* 0, -ENOSPC or -EINVAL */
};

void	aml_init(struct aml *a, uint8_t *buf, size_t cap);
void	aml_bytes(struct aml *a, const void *p, size_t n);
void	aml_byte(struct aml *a, uint8_t b);

/*
 * A NameString: an optional root prefix '\' and name segments separated
 * by '.'; segments shorter than four characters are padded with '_'
 * ("_S5" is "_S5_"), as ASL does.  Characters: A-Z, 0-9, '_'.
 */
void	aml_name(struct aml *a, const char *path);
/* The shortest encoding of an integer: Zero, One, Byte ... QWord. */
void	aml_integer(struct aml *a, uint64_t v);
/* A String (ASCII, NUL-terminated in AML). */
void	aml_string(struct aml *a, const char *s);
/* EisaId("PNP0A03"): the compressed 32-bit EISA ID. */
void	aml_eisaid(struct aml *a, const char *id);

/*
 * Objects with a package length: begin returns a mark that the matching
 * end takes, after the object's contents have been encoded.
 */
size_t	aml_scope_begin(struct aml *a, const char *name);
size_t	aml_device_begin(struct aml *a, const char *name);
size_t	aml_package_begin(struct aml *a, uint8_t nelems);
/* Method(name, nargs), not serialized: its terms follow until end. */
size_t	aml_method_begin(struct aml *a, const char *name, unsigned int nargs);
/* A Buffer: its size is counted at end. */
size_t	aml_buffer_begin(struct aml *a);
void	aml_end(struct aml *a, size_t mark);
void	aml_buffer_end(struct aml *a, size_t mark);

/* Name(name, ...): the object follows. */
void	aml_name_decl(struct aml *a, const char *name);
/* Notify(path, value), a term inside a method. */
void	aml_notify(struct aml *a, const char *path, uint64_t value);

/*
 * Resource descriptors (ACPI 6.4, 6.4), for a buffer that is a
 * ResourceTemplate; aml_res_end closes the template with an End Tag.
 */
void	aml_res_io(struct aml *a, uint16_t base, uint8_t len);
void	aml_res_irq(struct aml *a, unsigned int irq);
void	aml_res_bus_range(struct aml *a, uint16_t min, uint16_t max);
void	aml_res_io_window(struct aml *a, uint16_t min, uint16_t max);
void	aml_res_mem_window(struct aml *a, uint32_t min, uint32_t max);
void	aml_res_mem64_window(struct aml *a, uint64_t min, uint64_t max);
void	aml_res_end(struct aml *a);

#endif
