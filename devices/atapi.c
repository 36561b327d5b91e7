/*
 * See atapi.h.  Command and field numbers are SPC-3's and MMC-5's;
 * responses carry what a read-only data disc in a tray-loading drive
 * reports, and no more.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "atapi.h"

/* Operation codes. */
#define CMD_TEST_UNIT_READY	0x00
#define CMD_REQUEST_SENSE	0x03
#define CMD_INQUIRY		0x12
#define CMD_START_STOP_UNIT	0x1b
#define CMD_PREVENT_ALLOW	0x1e
#define CMD_READ_CAPACITY	0x25
#define CMD_READ_10		0x28
#define CMD_READ_TOC		0x43
#define CMD_GET_CONFIGURATION	0x46
#define CMD_GET_EVENT_STATUS	0x4a
#define CMD_MODE_SENSE_10	0x5a
#define CMD_READ_12		0xa8

/* Profiles (MMC-5 5.3.1): what GET CONFIGURATION calls the medium. */
#define PROFILE_CD_ROM		0x0008
#define PROFILE_DVD_ROM		0x0010
/* The most a CD holds (80 minutes of 75 blocks a second); more is a DVD. */
#define CD_MAX_BLOCKS		(80ULL * 60 * 75)

static void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static uint32_t
get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t
get32(const uint8_t *p)
{
	return get16(p) << 16 | get16(p + 2);
}

void
atapi_ata_string(uint16_t *id, unsigned int nwords, const char *s)
{
	size_t n = strlen(s);

	for (unsigned int i = 0; i < 2 * nwords; i++) {
		uint8_t c = i < n ? (uint8_t)s[i] : ' ';

		if (i % 2 == 0)
			id[i / 2] = (uint16_t)(c << 8);
		else
			id[i / 2] |= c;
	}
}

void
atapi_init(struct atapi *a, uint64_t size, const char *serial)
{
	memset(a, 0, sizeof(*a));
	a->blocks = size / ATAPI_BLOCK;
	a->present = true;
	strncpy(a->serial, serial != NULL ? serial : "", sizeof(a->serial) - 1);
}

void
atapi_identify(const struct atapi *a, uint16_t *id)
{
	memset(id, 0, 512);
	/* ATAPI, CD-ROM, removable, DRQ within 50 us, 12-byte packets. */
	id[0] = 0x85c0;
	atapi_ata_string(&id[10], 10, a->serial[0] != '\0' ? a->serial :
	    "VMMD-CD0");
	atapi_ata_string(&id[23], 4, "1.0");
	atapi_ata_string(&id[27], 20, "VMMD DVD-ROM");
	id[49] = 0x0300;	/* LBA and DMA */
	id[53] = 0x0006;	/* words 64-70 and 88 are valid */
	id[63] = 0x0007;	/* multiword DMA 0-2 */
	id[64] = 0x0003;	/* PIO 3 and 4 */
	id[65] = id[66] = id[67] = id[68] = 120;
	id[80] = 0x00f0;	/* ATA/ATAPI-4 to -7 */
	id[88] = 0x203f;	/* UDMA 0-5, mode 5 selected */
}

/* Fail the command: CHECK CONDITION with this sense. */
static enum atapi_result
atapi_check(struct atapi *a, uint8_t key, uint8_t asc)
{
	a->sense_key = key;
	a->asc = asc;
	a->ascq = 0;
	a->bad_commands++;
	return ATAPI_CHECK;
}

static enum atapi_result
atapi_check_q(struct atapi *a, uint8_t key, uint8_t asc, uint8_t ascq)
{
	atapi_check(a, key, asc);
	a->ascq = ascq;
	return ATAPI_CHECK;
}

/* NOT READY, MEDIUM NOT PRESENT, saying where the tray is. */
static enum atapi_result
atapi_no_medium(struct atapi *a)
{
	return atapi_check_q(a, ATAPI_SENSE_NOT_READY, ATAPI_ASC_NO_MEDIUM,
	    a->tray_open ? ATAPI_ASCQ_TRAY_OPEN : ATAPI_ASCQ_TRAY_CLOSED);
}

static bool
atapi_ready(const struct atapi *a)
{
	return a->present && !a->tray_open;
}

int
atapi_eject(struct atapi *a, bool force)
{
	if (a->locked && !force) {
		a->media_event = ATAPI_EVENT_EJECT_REQUEST;
		return -EBUSY;
	}
	if (a->present)
		a->media_changes++;
	a->present = false;
	a->tray_open = true;
	a->blocks = 0;
	a->attention = false;
	a->media_event = ATAPI_EVENT_MEDIA_REMOVAL;
	return 0;
}

void
atapi_insert(struct atapi *a, uint64_t size)
{
	a->present = true;
	a->tray_open = false;
	a->blocks = size / ATAPI_BLOCK;
	a->attention = true;
	a->media_event = ATAPI_EVENT_NEW_MEDIA;
	a->media_changes++;
}

/*
 * START STOP UNIT (SBC-3 5.17, MMC-5 6.37) with LoEj: Start 0 opens the
 * tray (refused while removal is prevented), Start 1 closes it, and a
 * medium left in it is new to the guest.  Without LoEj, nothing.
 */
static enum atapi_result
atapi_start_stop(struct atapi *a, const uint8_t *cdb)
{
	bool loej = cdb[4] & 0x02, start = cdb[4] & 0x01;

	if (!loej)
		return ATAPI_DONE;
	if (!start) {
		if (a->locked)
			return atapi_check_q(a, ATAPI_SENSE_ILLEGAL_REQUEST,
			    ATAPI_ASC_REMOVAL_PREVENTED,
			    ATAPI_ASCQ_REMOVAL_PREVENTED);
		if (!a->tray_open && a->present)
			a->media_event = ATAPI_EVENT_MEDIA_REMOVAL;
		a->tray_open = true;
		a->attention = false;
		return ATAPI_DONE;
	}
	if (a->tray_open && a->present) {
		a->attention = true;
		a->media_event = ATAPI_EVENT_NEW_MEDIA;
	}
	a->tray_open = false;
	return ATAPI_DONE;
}

void
atapi_read_failed(struct atapi *a)
{
	atapi_check(a, ATAPI_SENSE_MEDIUM_ERROR, ATAPI_ASC_UNRECOVERED_READ);
}

/* LBA to minutes, seconds, frames (MMC-5 4.2.3.3): 2 s of lead-in. */
static void
atapi_msf(uint8_t *p, uint64_t lba)
{
	uint64_t f = lba + 150;

	p[0] = 0;
	p[1] = (uint8_t)(f / (75 * 60));
	p[2] = (uint8_t)(f / 75 % 60);
	p[3] = (uint8_t)(f % 75);
}

/* A track start address, as an LBA or in MSF form. */
static void
atapi_addr(uint8_t *p, uint64_t lba, bool msf)
{
	if (msf)
		atapi_msf(p, lba);
	else
		put32(p, (uint32_t)lba);
}

/* READ TOC/PMA/ATIP, formats 0 (TOC) and 1 (session info). */
static enum atapi_result
atapi_read_toc(struct atapi *a, const uint8_t *cdb, uint8_t *buf,
    size_t *len)
{
	bool msf = cdb[1] & 0x02;
	unsigned int format = cdb[2] & 0x0f, track = cdb[6];
	size_t n = 4;

	/* Pre-MMC drives took the format in the control byte's top bits. */
	if (format == 0)
		format = cdb[9] >> 6;
	switch (format) {
	case 0:
		if (track > 1 && track != 0xaa)
			return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
			    ATAPI_ASC_INVALID_FIELD);
		if (track <= 1) {
			buf[n + 0] = 0;
			buf[n + 1] = 0x14;	/* ADR 1, data track */
			buf[n + 2] = 1;
			buf[n + 3] = 0;
			atapi_addr(&buf[n + 4], 0, msf);
			n += 8;
		}
		buf[n + 0] = 0;
		buf[n + 1] = 0x14;
		buf[n + 2] = 0xaa;		/* the lead-out */
		buf[n + 3] = 0;
		atapi_addr(&buf[n + 4], a->blocks, msf);
		n += 8;
		break;
	case 1:
		buf[n + 0] = 0;
		buf[n + 1] = 0x14;
		buf[n + 2] = 1;			/* first track, last session */
		buf[n + 3] = 0;
		atapi_addr(&buf[n + 4], 0, msf);
		n += 8;
		break;
	default:
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_INVALID_FIELD);
	}
	put16(buf, (uint32_t)(n - 2));
	buf[2] = 1;				/* first track or session */
	buf[3] = 1;				/* last */
	*len = n;
	return ATAPI_DONE;
}

/* One feature descriptor's header (MMC-5 5.2.2): current, persistent. */
static size_t
atapi_feature(uint8_t *p, uint16_t code, uint8_t version, uint8_t addlen)
{
	put16(p, code);
	p[2] = (uint8_t)(version << 2 | 0x02 | 0x01);
	p[3] = addlen;
	return 4;
}

/*
 * GET CONFIGURATION (MMC-5 6.6): Profile List, Core, Removable Medium
 * and Random Readable, filtered by RT and the starting feature; no
 * current profile without a medium ready.
 */
static enum atapi_result
atapi_get_configuration(struct atapi *a, const uint8_t *cdb, uint8_t *buf,
    size_t *len)
{
	unsigned int rt = cdb[1] & 0x03, start = get16(&cdb[2]);
	bool dvd = a->blocks > CD_MAX_BLOCKS, ready = atapi_ready(a);
	static const uint16_t codes[] = { 0x0000, 0x0001, 0x0003, 0x0010 };
	size_t n = 8;

	if (rt == 3)
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_INVALID_FIELD);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		uint8_t *p = &buf[n];

		if (rt == 2 ? codes[i] != start : codes[i] < start)
			continue;
		switch (codes[i]) {
		case 0x0000:		/* Profile List: DVD-ROM, CD-ROM */
			n += atapi_feature(p, 0x0000, 0, 8);
			put16(&p[4], PROFILE_DVD_ROM);
			p[6] = ready && dvd;	/* current, with a medium */
			put16(&p[8], PROFILE_CD_ROM);
			p[10] = ready && !dvd;
			n += 8;
			break;
		case 0x0001:		/* Core: ATAPI */
			n += atapi_feature(p, 0x0001, 1, 8);
			put32(&p[4], 2);
			n += 8;
			break;
		case 0x0003:		/* Removable Medium: tray, eject */
			n += atapi_feature(p, 0x0003, 0, 4);
			p[4] = 0x20 | 0x08 | 0x01 | (a->locked ? 0x04 : 0);
			n += 4;
			break;
		case 0x0010:		/* Random Readable: 2048-byte blocks */
			n += atapi_feature(p, 0x0010, 0, 8);
			put32(&p[4], ATAPI_BLOCK);
			put16(&p[8], 1);
			n += 8;
			break;
		}
	}
	put32(buf, (uint32_t)(n - 4));
	put16(&buf[6], !ready ? 0 : dvd ? PROFILE_DVD_ROM : PROFILE_CD_ROM);
	*len = n;
	return ATAPI_DONE;
}

/*
 * MODE SENSE(10) (SPC-3 6.10): the read error recovery page and the
 * CD capabilities page (MMC-5 7.2, 7.11); current, default and
 * changeable values alike (nothing is changeable), no saved ones.
 */
static enum atapi_result
atapi_mode_sense(struct atapi *a, const uint8_t *cdb, uint8_t *buf,
    size_t *len)
{
	unsigned int pc = cdb[2] >> 6, page = cdb[2] & 0x3f;
	size_t n = 8;

	if (pc == 3)
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_SAVING_UNSUPPORTED);
	if (page != 0x01 && page != 0x2a && page != 0x3f)
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_INVALID_FIELD);
	if (page == 0x01 || page == 0x3f) {
		buf[n + 0] = 0x01;
		buf[n + 1] = 0x0a;
		if (pc != 1)
			buf[n + 3] = 5;		/* read retry count */
		n += 12;
	}
	if (page == 0x2a || page == 0x3f) {
		uint8_t *p = &buf[n];

		p[0] = 0x2a;
		p[1] = 0x14;
		if (pc != 1) {
			p[2] = 0x08;		/* reads DVD-ROM too */
			p[6] = 0x29 | (a->locked ? 0x02 : 0); /* tray, eject */
			put16(&p[8], 706);	/* 4x, kB/s */
			put16(&p[14], 706);
		}
		n += 22;
	}
	put16(buf, (uint32_t)(n - 2));
	buf[2] = 0x70;				/* door closed, unknown */
	*len = n;
	return ATAPI_DONE;
}

/*
 * GET EVENT STATUS NOTIFICATION (MMC-5 6.7), polled only: the media
 * class, the last media event (reported once) and the tray's state.
 */
static enum atapi_result
atapi_event_status(struct atapi *a, const uint8_t *cdb, uint8_t *buf,
    size_t *len)
{
	if (!(cdb[1] & 0x01))
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_INVALID_FIELD);
	buf[3] = 0x10;				/* supported: media */
	if (!(cdb[4] & 0x10)) {
		put16(buf, 2);
		buf[2] = 0x80;			/* no event available */
		*len = 4;
		return ATAPI_DONE;
	}
	put16(buf, 6);
	buf[2] = 4;				/* media class */
	buf[4] = a->media_event;
	buf[5] = (uint8_t)((a->present ? 0x02 : 0) | (a->tray_open ? 0x01 :
	    0));
	a->media_event = ATAPI_EVENT_NONE;
	*len = 8;
	return ATAPI_DONE;
}

/* A read of count blocks from lba, checked against the medium. */
static enum atapi_result
atapi_read(struct atapi *a, uint64_t l, uint32_t n, uint64_t *lba,
    uint32_t *count)
{
	if (l > a->blocks || n > a->blocks - l)
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_LBA_OUT_OF_RANGE);
	if (n > ATAPI_MAX_READ)		/* READ(12) asks for up to 8 TiB */
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_INVALID_FIELD);
	*lba = l;
	*count = n;
	return ATAPI_READ;
}

enum atapi_result
atapi_packet(struct atapi *a, const uint8_t *cdb, uint8_t *buf, size_t *len,
    uint64_t *lba, uint32_t *count)
{
	enum atapi_result r = ATAPI_DONE;
	size_t alloc = ATAPI_BUF_SIZE;

	memset(buf, 0, ATAPI_BUF_SIZE);
	*len = 0;
	if (cdb[0] != CMD_REQUEST_SENSE)
		a->sense_key = a->asc = a->ascq = 0;
	/* A new medium: said once, before anything else but these. */
	if (a->attention && cdb[0] != CMD_INQUIRY &&
	    cdb[0] != CMD_GET_EVENT_STATUS) {
		a->attention = false;
		if (cdb[0] != CMD_REQUEST_SENSE)
			return atapi_check(a, ATAPI_SENSE_UNIT_ATTENTION,
			    ATAPI_ASC_MEDIUM_CHANGED);
		a->sense_key = ATAPI_SENSE_UNIT_ATTENTION;
		a->asc = ATAPI_ASC_MEDIUM_CHANGED;
		a->ascq = 0;
	}
	switch (cdb[0]) {
	case CMD_TEST_UNIT_READY:
	case CMD_READ_CAPACITY:
	case CMD_READ_10:
	case CMD_READ_12:
	case CMD_READ_TOC:
		if (!atapi_ready(a))
			return atapi_no_medium(a);
		break;
	}
	switch (cdb[0]) {
	case CMD_TEST_UNIT_READY:
		break;
	case CMD_START_STOP_UNIT:
		return atapi_start_stop(a, cdb);
	case CMD_PREVENT_ALLOW:
		a->locked = cdb[4] & 0x01;
		break;
	case CMD_REQUEST_SENSE:		/* fixed format (SPC-3 4.5.3) */
		alloc = cdb[4];
		buf[0] = 0x70;
		buf[2] = a->sense_key;
		buf[7] = 10;
		buf[12] = a->asc;
		buf[13] = a->ascq;
		*len = 18;
		a->sense_key = a->asc = a->ascq = 0;
		break;
	case CMD_INQUIRY:
		if (cdb[1] & 0x01)		/* no vital product data */
			return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
			    ATAPI_ASC_INVALID_FIELD);
		alloc = get16(&cdb[3]);
		buf[0] = 0x05;			/* CD/DVD device */
		buf[1] = 0x80;			/* removable */
		buf[2] = 0x05;			/* SPC-3 */
		buf[3] = 0x02;			/* response data format */
		buf[4] = 31;
		memcpy(&buf[8], "VMMD    ", 8);
		memcpy(&buf[16], "DVD-ROM         ", 16);
		memcpy(&buf[32], "1.0 ", 4);
		*len = 36;
		break;
	case CMD_READ_CAPACITY:
		put32(buf, a->blocks > 0 ? (uint32_t)(a->blocks - 1) : 0);
		put32(&buf[4], ATAPI_BLOCK);
		*len = 8;
		break;
	case CMD_READ_10:
		return atapi_read(a, get32(&cdb[2]), get16(&cdb[7]), lba,
		    count);
	case CMD_READ_12:
		return atapi_read(a, get32(&cdb[2]), get32(&cdb[6]), lba,
		    count);
	case CMD_READ_TOC:
		alloc = get16(&cdb[7]);
		r = atapi_read_toc(a, cdb, buf, len);
		break;
	case CMD_GET_CONFIGURATION:
		alloc = get16(&cdb[7]);
		r = atapi_get_configuration(a, cdb, buf, len);
		break;
	case CMD_MODE_SENSE_10:
		alloc = get16(&cdb[7]);
		r = atapi_mode_sense(a, cdb, buf, len);
		break;
	case CMD_GET_EVENT_STATUS:
		alloc = get16(&cdb[7]);
		r = atapi_event_status(a, cdb, buf, len);
		break;
	default:
		return atapi_check(a, ATAPI_SENSE_ILLEGAL_REQUEST,
		    ATAPI_ASC_INVALID_OPCODE);
	}
	if (*len > alloc)
		*len = alloc;
	return r;
}
