/*
 * A guest's serial console on the worker's event loop: a ring buffer of
 * recent output (replayed to each client that attaches), a log file, and
 * any number of attached clients whose input goes to the guest's UART.
 *
 * console_output() and console_rx_space() are called from vCPU threads;
 * they never block and never do I/O: they only copy into the ring and
 * wake the loop, which writes to the log and the clients.  A client that
 * stops reading is dropped rather than allowed to stall anything.
 */
#ifndef VMMD_CONSOLE_H
#define VMMD_CONSOLE_H

#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include <json-c/json.h>

#define CONSOLE_RING_SIZE	(256 * 1024)	/* output staging */
#define CONSOLE_REPLAY_SIZE	(64 * 1024)	/* replayed on attach */
#define CONSOLE_CLIENT_BACKLOG	(1024 * 1024)	/* then the client is dropped */
#define CONSOLE_CLIENTS_MAX	16		/* attached at once */
#define CONSOLE_INPUT_BACKLOG	(64 * 1024)
#define CONSOLE_FLUSH_INTERVAL_MS	10	/* while output streams */

typedef size_t (*console_input_fn)(void *opaque, const uint8_t *buf,
    size_t len);

struct console;

/*
 * log_path may be NULL.  A log that would grow beyond log_max bytes (0:
 * no limit) is first copied over log_path ".1", replacing the previous
 * one, and begun afresh.  Both files are opened here (".1" created if
 * need be), so rotation names no file: it works sandboxed.  Each must
 * be a regular file: a symbolic link at either name is not followed
 * (*errp = -ELOOP), anything else refused (-EINVAL).  Returns NULL with
 * *errp = -errno on failure.
 */
struct console *console_new(struct event_base *base, const char *log_path,
    uint64_t log_max, int *errp);
void console_free(struct console *c);

/* Where client input goes; NULL while there is no machine to take it. */
void console_set_input(struct console *c, console_input_fn fn, void *opaque);

/* vCPU side. */
void console_output(struct console *c, const uint8_t *buf, size_t len);
void console_rx_space(struct console *c);

/*
 * Take over a client connection: write the protocol reply for reply_id,
 * replay recent output, then stream.  Takes ownership of fd.  -EUSERS
 * when CONSOLE_CLIENTS_MAX are attached already.
 */
int console_attach(struct console *c, int fd, struct json_object *reply_id);

/* Hand everything pending to the log and the clients' buffers now. */
void console_flush(struct console *c);
/*
 * Before the process exits: flush, then give the clients up to
 * timeout_ms in all to take what is buffered for them, so that the last
 * line a guest printed before stopping is not lost.
 */
void console_drain(struct console *c, int timeout_ms);

struct console_stats {
	unsigned int clients;
	uint64_t bytes_out;
	uint64_t bytes_in;
	uint64_t bytes_lost;	/* overwritten before the loop saw them */
	uint64_t clients_dropped;
};
void console_get_stats(struct console *c, struct console_stats *st);

#endif
