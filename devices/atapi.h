/*
 * The device side of an ATAPI CD-ROM drive (SCSI Primary Commands and
 * MultiMedia Commands as ATA/ATAPI-7's PACKET command carries them): a
 * read-only medium of 2048-byte blocks in a tray, the sense data of the
 * last command, and the answers to the packet commands firmware, boot
 * loaders and Linux's sr driver send.
 *
 * The medium changes as in a real drive.  The host takes it out
 * (atapi_eject(): the tray opens) and puts another in (atapi_insert():
 * the tray closes); the guest opens and closes the tray with START
 * STOP UNIT, unless it prevented removal, which a host eject respects
 * unless forced.  A drive with its tray open or no medium answers NOT
 * READY, MEDIUM NOT PRESENT (02/3a/02 tray open, /01 closed) to what
 * needs a medium; after a medium arrives the next command but INQUIRY,
 * REQUEST SENSE and GET EVENT STATUS NOTIFICATION fails once with UNIT
 * ATTENTION, NOT READY TO READY CHANGE, MEDIUM MAY HAVE CHANGED
 * (06/28/00), and GET EVENT STATUS NOTIFICATION reports the last media
 * event (new medium, removal, eject request) once, as Linux's sr driver
 * polls for it.
 *
 * atapi_packet() decodes one command packet: it either fills a buffer
 * with the data the command returns, or tells the transport which
 * blocks of the image to read, or fails with sense data that REQUEST
 * SENSE then returns.  The transport (ahci.c) moves the data and reads
 * the image; this file neither sees guest memory nor the backend.
 *
 * Every field of a packet is guest input: lengths and block numbers are
 * checked against the buffer and the medium, never trusted.
 *
 * Plain state under the owning device's lock.
 */
#ifndef VMMD_ATAPI_H
#define VMMD_ATAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ATAPI_BLOCK		2048
#define ATAPI_CDB_LEN		12
/* The most one READ transfers, in blocks: 128 MiB. */
#define ATAPI_MAX_READ		65535
/* The most any command but READ returns: atapi_packet()'s buffer. */
#define ATAPI_BUF_SIZE		256

/* Sense keys and additional sense codes (SPC-3 4.5.6, annex D). */
#define ATAPI_SENSE_NONE		0x00
#define ATAPI_SENSE_NOT_READY		0x02
#define ATAPI_SENSE_MEDIUM_ERROR	0x03
#define ATAPI_SENSE_ILLEGAL_REQUEST	0x05
#define ATAPI_ASC_INVALID_OPCODE	0x20
#define ATAPI_ASC_LBA_OUT_OF_RANGE	0x21
#define ATAPI_ASC_INVALID_FIELD		0x24
#define ATAPI_ASC_SAVING_UNSUPPORTED	0x39
#define ATAPI_ASC_UNRECOVERED_READ	0x11
#define ATAPI_SENSE_UNIT_ATTENTION	0x06
#define ATAPI_ASC_MEDIUM_CHANGED	0x28
#define ATAPI_ASC_NO_MEDIUM		0x3a
#define  ATAPI_ASCQ_TRAY_CLOSED		0x01
#define  ATAPI_ASCQ_TRAY_OPEN		0x02
#define ATAPI_ASC_REMOVAL_PREVENTED	0x53
#define  ATAPI_ASCQ_REMOVAL_PREVENTED	0x02

/* GET EVENT STATUS NOTIFICATION's media event codes (MMC-5 6.7.2.5). */
#define ATAPI_EVENT_NONE		0
#define ATAPI_EVENT_EJECT_REQUEST	1
#define ATAPI_EVENT_NEW_MEDIA		2
#define ATAPI_EVENT_MEDIA_REMOVAL	3

struct atapi {
	uint64_t blocks;	/* the medium's size in 2048-byte blocks */
	uint8_t sense_key, asc, ascq;
	bool locked;		/* PREVENT ALLOW MEDIUM REMOVAL */
	bool present;		/* a medium in the tray */
	bool tray_open;
	bool attention;		/* a medium arrived: UNIT ATTENTION due */
	uint8_t media_event;	/* ATAPI_EVENT_*, until the guest reads it */
	uint64_t media_changes;	/* ejects and inserts, either side's */
	char serial[21];
	uint64_t bad_commands;	/* answered CHECK CONDITION */
};

enum atapi_result {
	ATAPI_DONE,		/* *len bytes of buf to the host, maybe 0 */
	ATAPI_READ,		/* read blocks *lba.. of the image, *count */
	ATAPI_CHECK,		/* failed: the sense data says why */
};

/* A drive for an image of size bytes (the partial last block unused). */
void atapi_init(struct atapi *a, uint64_t size, const char *serial);

/*
 * Carry out the command packet cdb.  ATAPI_DONE: buf (ATAPI_BUF_SIZE
 * bytes) holds *len bytes for the host, already cut to the command's
 * allocation length.  ATAPI_READ: the host is to transfer blocks
 * [*lba, *lba + *count) of the image, checked against the medium
 * (count may be 0, and is at most ATAPI_MAX_READ).  ATAPI_CHECK: the command failed; the sense is set.
 * Every command but REQUEST SENSE replaces the sense data.
 */
enum atapi_result atapi_packet(struct atapi *a, const uint8_t *cdb,
    uint8_t *buf, size_t *len, uint64_t *lba, uint32_t *count);

/*
 * The host takes the medium out: the tray opens, the drive has none.
 * 0, or -EBUSY when the guest prevents removal and force is false (the
 * guest is then told an eject was asked for, and may allow it and
 * eject itself).  An empty drive's tray just opens.
 */
int atapi_eject(struct atapi *a, bool force);
/* The host puts a medium of size bytes in and closes the tray. */
void atapi_insert(struct atapi *a, uint64_t size);

/* A read the transport could not complete: MEDIUM ERROR. */
void atapi_read_failed(struct atapi *a);

/* The ATA error register after a CHECK CONDITION: the sense key. */
static inline uint8_t
atapi_error_reg(const struct atapi *a)
{
	return (uint8_t)(a->sense_key << 4);
}

/* IDENTIFY PACKET DEVICE data (ATA/ATAPI-7 7.17), 256 words. */
void atapi_identify(const struct atapi *a, uint16_t *id);

/*
 * An ATA string field (ATA/ATAPI-7 3.2.8): s in words id[0..nwords),
 * two characters a word, the first in the high byte, space padded.
 */
void atapi_ata_string(uint16_t *id, unsigned int nwords, const char *s);

#endif
