/* See boot-table-loader.h. */
#include <errno.h>
#include <string.h>

#include "boot-table-loader.h"

struct table_loader {
	uint8_t	*p;
	unsigned int n;
};

static void
table_loader_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* The next entry, zeroed, with its command; NULL when the list is full. */
static uint8_t *
table_loader_entry(struct table_loader *tl, uint32_t cmd)
{
	uint8_t *e;

	if (tl->n >= BOOT_LOADER_ENTRIES)
		return NULL;
	e = tl->p + (size_t)tl->n++ * BOOT_LOADER_ENTRY;
	memset(e, 0, BOOT_LOADER_ENTRY);
	table_loader_le32(e, cmd);
	return e;
}

/* Names are constants of boot-table-loader.h, shorter than 56 bytes. */
static void
table_loader_name(uint8_t *p, const char *name)
{
	strncpy((char *)p, name, BOOT_LOADER_NAME - 1);
}

static void
table_loader_allocate(struct table_loader *tl, const char *file,
    uint32_t align, uint8_t zone)
{
	uint8_t *e = table_loader_entry(tl, BOOT_LOADER_ALLOCATE);

	if (e == NULL)
		return;
	table_loader_name(e + 4, file);
	table_loader_le32(e + 4 + BOOT_LOADER_NAME, align);
	e[8 + BOOT_LOADER_NAME] = zone;
}

static void
table_loader_pointer(struct table_loader *tl, const char *dest,
    const char *src, size_t offset, uint8_t size)
{
	uint8_t *e = table_loader_entry(tl, BOOT_LOADER_ADD_POINTER);

	if (e == NULL)
		return;
	table_loader_name(e + 4, dest);
	table_loader_name(e + 4 + BOOT_LOADER_NAME, src);
	table_loader_le32(e + 4 + 2 * BOOT_LOADER_NAME, (uint32_t)offset);
	e[8 + 2 * BOOT_LOADER_NAME] = size;
}

static void
table_loader_checksum(struct table_loader *tl, const char *file,
    size_t offset, size_t start, size_t len)
{
	uint8_t *e = table_loader_entry(tl, BOOT_LOADER_ADD_CHECKSUM);

	if (e == NULL)
		return;
	table_loader_name(e + 4, file);
	table_loader_le32(e + 4 + BOOT_LOADER_NAME, (uint32_t)offset);
	table_loader_le32(e + 8 + BOOT_LOADER_NAME, (uint32_t)start);
	table_loader_le32(e + 12 + BOOT_LOADER_NAME, (uint32_t)len);
}

/* A table's length, from its header. */
static uint32_t
table_loader_len(const uint8_t *t)
{
	return (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 |
	    (uint32_t)t[7] << 24;
}

/* Offsets in the tables (ACPI 6.4, 5.2.5-5.2.9). */
#define TL_CHECKSUM		9	/* in a table's header */
#define TL_RSDP_CHECKSUM	8
#define TL_RSDP_RSDT		16
#define TL_HEADER		36
#define TL_FADT_FACS		36	/* FIRMWARE_CTRL */
#define TL_FADT_DSDT		40
#define TL_FADT_X_DSDT		140

int
boot_fw_acpi_build(struct boot_fw_acpi *fa, const struct boot_acpi_config *cfg)
{
	const char *tables = BOOT_ACPI_TABLES_FILE, *rsdp = BOOT_ACPI_RSDP_FILE;
	struct table_loader tl = { fa->loader, 0 };
	struct boot_acpi_layout o;
	int r;

	memset(fa, 0, sizeof(*fa));
	r = boot_acpi_blob(fa->tables, sizeof(fa->tables), fa->rsdp, cfg, &o);
	if (r < 0) {
		memset(fa, 0, sizeof(*fa));
		return r;
	}
	table_loader_allocate(&tl, tables, BOOT_ACPI_BLOB_ALIGN,
	    BOOT_LOADER_ZONE_HIGH);
	/* The F segment wants 16-byte alignment for the RSDP's scan. */
	table_loader_allocate(&tl, rsdp, 16, BOOT_LOADER_ZONE_FSEG);

	table_loader_pointer(&tl, rsdp, tables, TL_RSDP_RSDT, 4);
	table_loader_pointer(&tl, tables, tables, o.root + TL_HEADER, 4);
	table_loader_pointer(&tl, tables, tables, o.root + TL_HEADER + 4, 4);
	table_loader_pointer(&tl, tables, tables, o.fadt + TL_FADT_FACS, 4);
	table_loader_pointer(&tl, tables, tables, o.fadt + TL_FADT_DSDT, 4);
	table_loader_pointer(&tl, tables, tables, o.fadt + TL_FADT_X_DSDT, 8);

	table_loader_checksum(&tl, rsdp, TL_RSDP_CHECKSUM, 0,
	    BOOT_ACPI_RSDP_V1_LEN);
	table_loader_checksum(&tl, tables, o.root + TL_CHECKSUM, o.root,
	    table_loader_len(fa->tables + o.root));
	table_loader_checksum(&tl, tables, o.fadt + TL_CHECKSUM, o.fadt,
	    table_loader_len(fa->tables + o.fadt));
	table_loader_checksum(&tl, tables, o.madt + TL_CHECKSUM, o.madt,
	    table_loader_len(fa->tables + o.madt));
	table_loader_checksum(&tl, tables, o.dsdt + TL_CHECKSUM, o.dsdt,
	    table_loader_len(fa->tables + o.dsdt));
	if (tl.n != BOOT_LOADER_ENTRIES) {
		memset(fa, 0, sizeof(*fa));
		return -EINVAL;
	}
	return 0;
}
