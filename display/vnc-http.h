/*
 * The display's web server: the files of one directory (noVNC's) over
 * HTTP/1.1 GET and HEAD, one request per connection, driven by the
 * caller's libevent loop.  No call blocks: requests are read and files
 * sent in non-blocking steps on the socket's events.
 *
 * Limits, so that no peer can hold the server or the loop: at most
 * max_conns connections are served at once (the listening socket is
 * not watched meanwhile: others wait in its backlog); a request must
 * arrive whole within timeout_ms of its connection, and a response
 * that makes no progress for timeout_ms is abandoned.
 *
 * Paths are resolved under the directory only: "." and ".." segments,
 * NUL and backslashes are refused; symbolic links inside it are
 * followed (Debian's novnc has some).  Only regular files are served.
 *
 * Threads: everything runs on the thread of the event base.
 */
#ifndef VMMD_VNC_HTTP_H
#define VMMD_VNC_HTTP_H

#include <stdint.h>

struct event_base;
struct vnc_http;

struct vnc_http_stats {
	uint64_t wakeups;	/* loop callbacks run */
	uint64_t connections;	/* accepted */
	uint64_t timed_out;	/* dropped at their deadline */
	uint64_t served;	/* 200 responses sent whole */
	unsigned int active;	/* being served now */
};

/*
 * Serve dir on listen_fd (bound, listening, non-blocking; not taken:
 * the caller closes it after vnc_http_free()).  0 or -errno.
 */
int vnc_http_new(struct event_base *base, int listen_fd, const char *dir,
    unsigned int timeout_ms, unsigned int max_conns, struct vnc_http **out);

/* Closes every connection.  NULL is fine. */
void vnc_http_free(struct vnc_http *h);

void vnc_http_stats(const struct vnc_http *h, struct vnc_http_stats *st);

#endif
