/*
 * 16550A UART (National Semiconductor PC16550D).
 *
 * Transmission is instantaneous: every byte the guest writes to THR is
 * handed to tx() at once, so the transmitter is always empty.  Bytes
 * from the host enter the receiver through uart_receive(), which takes
 * only what fits (16 bytes with the FIFOs enabled, 1 without), so the
 * host never overruns the guest.
 *
 * Flow control towards the host: rx_space() is called, once, when the
 * receiver can take bytes again after it had none to offer, that is
 * after uart_rx_space() dropped to 0 (the FIFO filled up, or the guest
 * put the UART in loopback mode, which disconnects the serial input) or
 * after uart_receive() refused bytes.  It is called from a register
 * access (the guest reading RBR, resetting the FIFO, leaving loopback)
 * or from a reset, with the device lock held: it must only schedule
 * more uart_receive() calls, never make them.  It may occasionally be
 * called when the host had nothing waiting; it is never missed.
 *
 * The interrupt output (line 0 of the device host) follows the PC
 * wiring: it reaches the interrupt controller only while MCR OUT2 is set
 * and loopback is off.  Because
 * that controller sees edges, host input gives the line an edge of its
 * own even when it was already high (uart.c says why).
 */
#ifndef VMMD_UART_H
#define VMMD_UART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev-state.h"
#include "device.h"

struct uart;

/* The other end of the serial line: the console, owned by the worker. */
struct uart_backend {
	/* bytes the guest transmitted; called once per THR write */
	void (*tx)(void *opaque, const uint8_t *buf, size_t len);
	/* the receiver has room again after having had none (see above) */
	void (*rx_space)(void *opaque);
	void *opaque;
};

/* NULL on ENOMEM.  host must outlive the UART; be is copied. */
struct uart *uart_new(const struct device_host *host,
    const struct uart_backend *be);
void uart_free(struct uart *u);

/* Host to guest: returns how many bytes of buf the receiver took. */
size_t uart_receive(struct uart *u, const uint8_t *buf, size_t len);
/* How many bytes uart_receive() would take now. */
size_t uart_rx_space(const struct uart *u);

/* 8 registers, offsets 0 to 7. */
extern const struct device_ops uart_device_ops;
/* Its state section (dev-state.h), for tests and fuzzers. */
extern const struct dev_state_table uart_state_table;

#endif
