/*
 * /metrics: vmmd's numbers and its guests' for Prometheus, over HTTP
 * (libevent's evhttp) on a Unix socket beside the control socket and,
 * when vmmd.conf names one (metrics_listen), a TCP address.  See
 * vmmd(8), METRICS.
 *
 * A scrape asks every worker whose guest runs or is paused for its
 * numbers (worker.metrics) all at once and answers when all have
 * answered or METRICS_DEADLINE_MS has passed; a worker that has not is
 * left out of that scrape and counted.  Between scrapes nothing runs:
 * no timer, no event but the listening sockets'.
 *
 * Everything runs on the supervisor's event loop thread.
 */
#ifndef VMMD_METRICS_H
#define VMMD_METRICS_H

#include <stddef.h>

struct vmmd;
struct metrics;

#define METRICS_DEADLINE_MS	1000	/* for the workers' answers */
/* On the Unix socket: */
#define METRICS_CONN_DEADLINE	10	/* s: a connection's whole life */
#define METRICS_MAX_CONNS	64	/* at once; more are closed at once */
/* On the TCP address, a budget of its own: peers on the network, idle
 * or not, keep no local scraper out. */
#define METRICS_TCP_DEADLINE	5
#define METRICS_TCP_MAX_CONNS	16
#define METRICS_MAX_SCRAPES	8	/* waiting for workers at once */
#define METRICS_MAX_HEADERS	8192	/* bytes of a request's head */

/*
 * Listen on the Unix socket path (made as the control socket is) and,
 * if tcp is not NULL, on its "HOST:PORT" ("[::1]:9475" for IPv6).
 * NULL with err set on failure.
 */
struct metrics *metrics_new(struct vmmd *d, const char *path,
    const char *tcp, char *err, size_t errlen);
/* Close the sockets (removing path), drop every connection. */
void	metrics_free(struct metrics *m);

/* "RUNDIR/metrics.sock" for the control socket's path (malloc'ed). */
char	*metrics_path_beside(const char *control_path);

#endif
