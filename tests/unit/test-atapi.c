/*
 * Unit tests for devices/atapi.c's medium and tray: a host eject and
 * insert, the guest's START STOP UNIT and PREVENT ALLOW MEDIUM REMOVAL,
 * and what a guest sees of them: NOT READY, MEDIUM NOT PRESENT (tray
 * open or closed) to commands that need a medium, UNIT ATTENTION,
 * MEDIUM MAY HAVE CHANGED (06/28/00) once after a medium arrives (as
 * Linux's sr driver expects it), and GET EVENT STATUS NOTIFICATION's
 * media events, each reported once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "atapi.h"
#include "tap.h"

static struct atapi a;
static uint8_t buf[ATAPI_BUF_SIZE];
static size_t len;

static enum atapi_result
cmd(uint8_t op, uint8_t b1, uint8_t b4)
{
	uint8_t cdb[ATAPI_CDB_LEN] = { op, b1, 0, 0, b4 };
	uint64_t lba;
	uint32_t count;

	if (op == 0x4a || op == 0x46)		/* allocation length */
		cdb[8] = 255;
	if (op == 0x03)
		cdb[4] = 18;
	if (op == 0x28)				/* READ(10): 1 block at 0 */
		cdb[8] = 1;
	return atapi_packet(&a, cdb, buf, &len, &lba, &count);
}

/* The command fails with this sense, which REQUEST SENSE then gives. */
static bool
fails(uint8_t op, uint8_t b4, uint8_t key, uint8_t asc, uint8_t ascq)
{
	if (cmd(op, 0, b4) != ATAPI_CHECK || a.sense_key != key ||
	    a.asc != asc || a.ascq != ascq)
		return false;
	return cmd(0x03, 0, 0) == ATAPI_DONE && buf[2] == key &&
	    buf[12] == asc && buf[13] == ascq;
}

/* GET EVENT STATUS NOTIFICATION, media class: the event and status. */
static bool
events(uint8_t event, uint8_t status)
{
	return cmd(0x4a, 0x01, 0x10) == ATAPI_DONE && len == 8 &&
	    buf[2] == 4 && buf[4] == event && buf[5] == status;
}

int
main(void)
{
	atapi_init(&a, 100 * ATAPI_BLOCK, "CD0");
	tap_ok(cmd(0x00, 0, 0) == ATAPI_DONE, "a new drive is ready");
	tap_ok(events(ATAPI_EVENT_NONE, 0x02), "no event, a medium present");

	tap_ok(atapi_eject(&a, false) == 0, "the host ejects");
	tap_ok(events(ATAPI_EVENT_MEDIA_REMOVAL, 0x01),
	    "media removal, the tray open, no medium");
	tap_ok(events(ATAPI_EVENT_NONE, 0x01), "said once");
	tap_ok(fails(0x00, 0, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    ATAPI_ASCQ_TRAY_OPEN), "TEST UNIT READY: 02/3a/02, tray open");
	tap_ok(fails(0x28, 0, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    ATAPI_ASCQ_TRAY_OPEN), "READ(10): the same");
	tap_ok(fails(0x25, 0, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    ATAPI_ASCQ_TRAY_OPEN), "READ CAPACITY: the same");
	tap_ok(cmd(0x12, 0, 36) == ATAPI_DONE, "INQUIRY answers");
	tap_ok(cmd(0x46, 0, 0) == ATAPI_DONE && buf[6] == 0 && buf[7] == 0,
	    "GET CONFIGURATION: no current profile");
	tap_ok(cmd(0x1b, 0, 0x03) == ATAPI_DONE &&
	    fails(0x00, 0, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    ATAPI_ASCQ_TRAY_CLOSED), "the guest closes the empty tray: "
	    "02/3a/01");

	atapi_insert(&a, 10 * ATAPI_BLOCK + 100);
	tap_ok(events(ATAPI_EVENT_NEW_MEDIA, 0x02),
	    "the host inserts: new media, present (before the attention)");
	tap_ok(fails(0x00, 0, ATAPI_SENSE_UNIT_ATTENTION,
	    ATAPI_ASC_MEDIUM_CHANGED, 0), "then TEST UNIT READY: 06/28/00");
	tap_ok(cmd(0x00, 0, 0) == ATAPI_DONE, "once: then ready");
	tap_ok(cmd(0x25, 0, 0) == ATAPI_DONE && buf[3] == 9 && buf[2] == 0,
	    "READ CAPACITY: the new medium's last block, 9");
	tap_ok(cmd(0x46, 0, 0) == ATAPI_DONE && buf[7] == 0x08,
	    "GET CONFIGURATION: CD-ROM current");

	atapi_insert(&a, 20 * ATAPI_BLOCK);
	tap_ok(cmd(0x12, 0, 36) == ATAPI_DONE, "INQUIRY is not held up by "
	    "the attention");
	tap_ok(cmd(0x03, 0, 0) == ATAPI_DONE && buf[2] == 0x06 &&
	    buf[12] == 0x28 && buf[13] == 0, "REQUEST SENSE first gives "
	    "06/28/00");
	tap_ok(cmd(0x00, 0, 0) == ATAPI_DONE, "and clears it");

	tap_ok(cmd(0x1e, 0, 1) == ATAPI_DONE && a.locked,
	    "the guest prevents removal");
	tap_ok(atapi_eject(&a, false) == -EBUSY, "a host eject: -EBUSY");
	tap_ok(events(ATAPI_EVENT_EJECT_REQUEST, 0x02) &&
	    cmd(0x00, 0, 0) == ATAPI_DONE, "the guest is asked to eject; the "
	    "medium stays");
	tap_ok(fails(0x1b, 0x02, ATAPI_SENSE_ILLEGAL_REQUEST,
	    ATAPI_ASC_REMOVAL_PREVENTED, ATAPI_ASCQ_REMOVAL_PREVENTED),
	    "its own eject, while it prevents it: 05/53/02");
	tap_ok(cmd(0x1e, 0, 0) == ATAPI_DONE && cmd(0x1b, 0, 0x02) ==
	    ATAPI_DONE && events(ATAPI_EVENT_MEDIA_REMOVAL, 0x03),
	    "allowed, the guest ejects: removal, tray open with the medium");
	tap_ok(fails(0x00, 0, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    ATAPI_ASCQ_TRAY_OPEN), "not ready, tray open");
	tap_ok(cmd(0x1b, 0, 0x03) == ATAPI_DONE &&
	    events(ATAPI_EVENT_NEW_MEDIA, 0x02) &&
	    fails(0x00, 0, ATAPI_SENSE_UNIT_ATTENTION,
	    ATAPI_ASC_MEDIUM_CHANGED, 0) && cmd(0x00, 0, 0) == ATAPI_DONE,
	    "the guest loads it again: new media, 06/28/00 once, ready");
	tap_ok(cmd(0x1b, 0, 0x01) == ATAPI_DONE && cmd(0x00, 0, 0) ==
	    ATAPI_DONE, "START STOP UNIT without LoEj changes nothing");

	tap_ok(cmd(0x1e, 0, 1) == ATAPI_DONE && atapi_eject(&a, true) == 0 &&
	    fails(0x00, 0, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    ATAPI_ASCQ_TRAY_OPEN), "a forced host eject overrides the lock");
	tap_ok(atapi_eject(&a, true) == 0 && a.media_changes == 4,
	    "an empty drive ejects again; 4 changes counted (%llu)",
	    (unsigned long long)a.media_changes);
	return tap_done();
}
