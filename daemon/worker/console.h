/*
 * A guest's serial console on the worker's event loop: a ring buffer of
 * output, a log file, and any number of attached clients whose input
 * goes to the guest's UART.
 *
 * console_output() and console_rx_space() are called from vCPU threads;
 * they never block and never do I/O: console_output() copies into the
 * ring, without a lock, and wakes the loop, which writes the log (and
 * rotates it) and hands the bytes to the clients.  A slow log disk
 * therefore stalls the loop, never the guest.  A client that stops
 * reading is dropped rather than allowed to stall anything.
 *
 * The ring holds what the loop has yet to take, at most
 * CONSOLE_PENDING_MAX bytes, and behind it the last CONSOLE_REPLAY_SIZE
 * bytes the loop took, for replay to a client that attaches.  A full
 * ring: when the loop falls CONSOLE_PENDING_MAX behind (a log disk that
 * stalls, say), the guest's further bytes are dropped, and counted
 * (bytes_dropped), until it catches up; the log and the clients then
 * have everything before the gap and everything after it, in order.
 * The guest is never made to wait: its UART shows the transmitter
 * always empty, so it has no flow control to be held by, and a guest
 * stalled on its console is what the ring is there to prevent.
 * Dropping the newest rather than overwriting the oldest keeps the vCPU
 * off every byte the loop may be reading, so that neither side needs a
 * lock, and the log never loses bytes it had been handed already.
 *
 * While output streams the loop takes it at most every
 * CONSOLE_FLUSH_INTERVAL_MS, at once after a quiet spell; without
 * output the console costs no wake-up.  A worker killed (SIGKILL) loses
 * what the loop had not taken yet.
 */
#ifndef VMMD_CONSOLE_H
#define VMMD_CONSOLE_H

#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "console-replay.h"	/* CONSOLE_REPLAY_SIZE: replayed on attach */
#include "figure.h"

#define CONSOLE_RING_SIZE	(256 * 1024)	/* output: pending, replay */
/* The loop's backlog beyond which the guest's output is dropped. */
#define CONSOLE_PENDING_MAX	(CONSOLE_RING_SIZE - CONSOLE_REPLAY_SIZE)
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

/*
 * vCPU side.  One console_output() call at a time (the single producer
 * of the ring): the UART's device lock serializes them.  What does not
 * fit is dropped and counted.
 */
void console_output(struct console *c, const uint8_t *buf, size_t len);
void console_rx_space(struct console *c);

/*
 * Take over a client connection: write the protocol reply for reply_id,
 * replay recent output, then stream.  Takes ownership of fd.  -EUSERS
 * when CONSOLE_CLIENTS_MAX are attached already.
 */
int console_attach(struct console *c, int fd, struct json_object *reply_id);

/*
 * Write what the ring holds to the log and hand it to the clients'
 * buffers now (loop thread).  Takes what was there on entry: a guest
 * printing on meanwhile cannot keep it from returning.
 */
void console_flush(struct console *c);
/*
 * Before the process exits: flush, then give the clients up to
 * timeout_ms in all to take what is buffered for them, so that the last
 * line a guest printed before stopping is not lost.
 */
void console_drain(struct console *c, int timeout_ms);

struct console_stats {
	unsigned int clients;
	uint64_t bytes_out;	/* all the guest sent, dropped ones too */
	uint64_t bytes_in;
	uint64_t bytes_dropped;	/* the ring was full: not logged nor sent */
	uint64_t clients_dropped;
	/* When the loop first took output (CLOCK_MONOTONIC ns), or 0. */
	int64_t first_output_ns;
};
void console_get_stats(struct console *c, struct console_stats *st);
/* The figures (figure.h) of a struct console_stats, in vm.info's order. */
extern const struct figure_table console_figures;

#endif
