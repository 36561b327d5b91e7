/*
 * vmmd-snapshot(5) kept true to the code: every device of the PC board
 * (board_pc[], the one list a snapshot walks) and every state section
 * whose table a library exports is named in it, as an .Li word; the
 * field types it numbers are dev-state.h's (checked when this compiles).
 *
 *   test-snapshot-doc VMMD-SNAPSHOT.5
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acpi-pm.h"
#include "ahci.h"
#include "board.h"
#include "bochs-display.h"
#include "dev-state.h"
#include "fw-cfg.h"
#include "i8042.h"
#include "machine-state.h"
#include "pflash.h"
#include "piix3-isa.h"
#include "piix4-pm.h"
#include "port92.h"
#include "post.h"
#include "rtc.h"
#include "tap.h"
#include "uart.h"
#include "vcpu-state.h"
#include "virtqueue.h"

/* The page says "1 (u8) ... 6 (bytes), 7 to 10 (arrays ...)". */
_Static_assert(DEV_STATE_U8 == 1 && DEV_STATE_U16 == 2 &&
    DEV_STATE_U32 == 3 && DEV_STATE_U64 == 4 && DEV_STATE_BOOL == 5 &&
    DEV_STATE_BYTES == 6 && DEV_STATE_ARRAY_U8 == 7 &&
    DEV_STATE_ARRAY_U64 == 10, "vmmd-snapshot(5) numbers the types");
_Static_assert(DEV_STATE_MAGIC == 0x43455356u, "the page says \"VSEC\"");

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "re");
	char *buf;
	long n;

	if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) ==
	    NULL || fread(buf, 1, (size_t)n, fp) != (size_t)n)
		tap_bail("cannot read %s", path);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* Whether page has "Li NAME" with nothing of a name right after it. */
static bool
documented(const char *page, const char *name)
{
	char needle[96];
	const char *p;
	size_t len;

	len = (size_t)snprintf(needle, sizeof(needle), "Li %s", name);
	for (p = page; (p = strstr(p, needle)) != NULL; p += len)
		if (strchr(" ,:\n", p[len]) != NULL)
			return true;
	return false;
}

int
main(int argc, char **argv)
{
	const struct dev_state_table *tables[] = {
		&machine_clock_table, &machine_pic_table,
		&machine_ioapic_table, &machine_pit_table,
		&uart_state_table, &rtc_state_table, &i8042_state_table,
		&post_state_table, &acpi_pm_state_table, &fw_cfg_state_table,
		&port92_state_table, &ahci_state_table,
		&bochs_display_state_table, &pflash_state_table,
		&piix3_isa_state_table, &piix4_pm_state_table,
		&virtq_state_table,
	};
	char *page;
	size_t i;

	if (argc != 2)
		tap_bail("usage: test-snapshot-doc VMMD-SNAPSHOT.5");
	page = slurp(argv[1]);
	for (i = 0; i < board_pc_size; i++)
		tap_ok(documented(page, board_pc[i].name),
		    "board device %s is in vmmd-snapshot(5)",
		    board_pc[i].name);
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		tap_ok(documented(page, tables[i]->name),
		    "section %s is in vmmd-snapshot(5)", tables[i]->name);
	tap_ok(documented(page, "vcpu/"), "section %s/N is in "
	    "vmmd-snapshot(5)", vcpu_state_table.name);
	free(page);
	return tap_done();
}
