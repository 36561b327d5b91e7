/*
 * A new connection for an NBD disk whose server went away.  The sandbox
 * has no connect(), so blk-nbd's I/O thread asks through here
 * (blk_nbd_config.connect): the loop sends the supervisor a
 * disk.nbd_redial event, the supervisor connects as it did at start and
 * answers with worker.nbd_fd, whose descriptor (or error) goes back to
 * the waiting thread.  The thread waits NBD_REDIAL_WAIT_MS at most: a
 * supervisor that never answers costs a retry, not a hung disk.
 */
#ifndef VMMD_NBD_REDIAL_H
#define VMMD_NBD_REDIAL_H

#include "worker.h"

#define NBD_REDIAL_WAIT_MS	10000

struct nbd_redial;

/* Disk's asker, on w's loop: 0 or -errno. */
int nbd_redial_new(struct worker *w, unsigned int disk,
    struct nbd_redial **out);
/* blk_nbd_config.connect, arg the redial: a descriptor or -errno. */
int nbd_redial_connect(void *arg);
/*
 * The supervisor's answer, on the loop: fd (taken), or -errno.  An
 * answer nobody waits for any more is closed.
 */
void nbd_redial_answer(struct nbd_redial *r, int fd);
/* After the disk's backend is freed (no thread asks).  NULL is fine. */
void nbd_redial_free(struct nbd_redial *r);

#endif
