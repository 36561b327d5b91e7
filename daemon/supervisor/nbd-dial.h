/*
 * An NBD disk's server connected again for its worker (disk.nbd_redial)
 * without blocking the supervisor's event loop, which every VM's
 * control requests share: a TCP connect() runs non-blocking, completed
 * by the loop when the socket becomes writable (its SO_ERROR the
 * outcome), each address bounded by NBD_CONNECT_TIMEOUT_MS on a timer.
 * A Unix socket connects at once (nbd_connect(): a local server accepts
 * or refuses, it does not keep a caller waiting) but its outcome takes
 * the same way back, from the loop.
 *
 * A host name is looked up with getaddrinfo(), which blocks the loop
 * while the resolver works: only a numeric address (IPv4, or IPv6 in
 * brackets) makes the whole dial asynchronous.  The definitions'
 * manual (vmmd-vm(5)) says so.
 *
 * Everything here runs on the event loop thread.  The dial is its
 * owner's (vm.c: the VM, one per disk at most), which frees it when the
 * answer came or when it goes first: nbd_dial_free() of a dial under
 * way cancels it (its socket closed, its events gone, no callback).
 */
#ifndef VMMD_NBD_DIAL_H
#define VMMD_NBD_DIAL_H

#include <event2/event.h>

struct access_cred;
struct nbd_dial;

/*
 * The outcome, once: fd a connected stream socket (CLOEXEC, blocking,
 * now the callback's), or -1 and err one line for the worker and the
 * log ("disk 0: nbd://10.0.0.1:10809: cannot connect: ...").  Called
 * from the loop, never from within nbd_dial_start(); the dial is done
 * then, and its owner frees it (in the callback or later).
 */
typedef void (*nbd_dial_cb)(struct nbd_dial *nd, int fd, const char *err,
    void *arg);

/*
 * Connect disk's server at addr (an NBD address, nbd-addr.h) as cred
 * may (NULL: as the daemon; used before this returns) on base: *ndp
 * the dial under way.  0, or -ENOMEM (nothing started, no callback).
 * Every other failure, of the address too, comes through cb.
 */
int	nbd_dial_start(struct event_base *base, const char *addr,
	    unsigned int disk, const struct access_cred *cred, nbd_dial_cb cb,
	    void *arg, struct nbd_dial **ndp);
/* The disk it dials for. */
unsigned int nbd_dial_disk(const struct nbd_dial *nd);
/* Cancel it if it is under way, and free it; NULL is fine. */
void	nbd_dial_free(struct nbd_dial *nd);

#endif
