/*
 * 16550A UART: registers, interrupts, FIFOs, loopback, flow control,
 * and the transmit and receive paths as Linux's 8250 driver runs them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "pio.h"
#include "tap.h"
#include "uart.h"
#include "unit-util.h"

#define RBR 0
#define THR 0
#define DLL 0
#define IER 1
#define DLM 1
#define IIR 2
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define MSR 6
#define SCR 7

struct host {
	struct fake_host fh;	/* the UART's interrupt is its line 0 */
	struct uart *u;
	struct pio io;		/* port I/O to it */
	unsigned int rises_taken;	/* edges an ISR has run for */
	uint8_t *tx;
	size_t txlen, txcap;
	unsigned int tx_calls;
	unsigned int rx_space_calls;
};

static void
host_tx(void *opaque, const uint8_t *buf, size_t len)
{
	struct host *h = opaque;

	h->tx_calls++;
	if (h->txlen + len > h->txcap) {
		h->txcap = (h->txlen + len) * 2;
		h->tx = realloc(h->tx, h->txcap);
		if (h->tx == NULL)
			tap_bail("out of memory");
	}
	memcpy(h->tx + h->txlen, buf, len);
	h->txlen += len;
}

static void
host_rx_space(void *opaque)
{
	struct host *h = opaque;

	h->rx_space_calls++;
}

static void
host_init(struct host *h)
{
	struct uart_backend be = {
		.tx = host_tx,
		.rx_space = host_rx_space,
		.opaque = h,
	};

	memset(h, 0, sizeof(*h));
	fake_host_init(&h->fh);
	h->u = uart_new(&h->fh.host, &be);
	h->io = (struct pio){ &uart_device_ops, h->u };
	if (h->u == NULL)
		tap_bail("uart_new failed");
}

/* An edge-triggered controller: a rising edge not yet serviced. */
static bool
host_take_edge(struct host *h)
{
	if (h->rises_taken == h->fh.rises[0])
		return false;
	h->rises_taken = h->fh.rises[0];
	return true;
}

static void
host_fini(struct host *h)
{
	uart_device_ops.free(h->u);
	free(h->tx);
}

struct diag_values {
	struct device_diag d;
	unsigned int n;
	uint64_t ier, iir, mcr, lsr, thre_pending, irq_level;
	uint64_t tx_bytes, rx_bytes, irq_rises, thre_taken;
};

static void
diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_values *dv = (struct diag_values *)d;

	dv->n++;
	if (strcmp(key, "ier") == 0)
		dv->ier = value;
	else if (strcmp(key, "iir") == 0)
		dv->iir = value;
	else if (strcmp(key, "mcr") == 0)
		dv->mcr = value;
	else if (strcmp(key, "lsr") == 0)
		dv->lsr = value;
	else if (strcmp(key, "thre_pending") == 0)
		dv->thre_pending = value;
	else if (strcmp(key, "irq_level") == 0)
		dv->irq_level = value;
	else if (strcmp(key, "tx_bytes") == 0)
		dv->tx_bytes = value;
	else if (strcmp(key, "rx_bytes") == 0)
		dv->rx_bytes = value;
	else if (strcmp(key, "irq_rises") == 0)
		dv->irq_rises = value;
	else if (strcmp(key, "thre_taken") == 0)
		dv->thre_taken = value;
}

static void
diag_collect(struct host *h, struct diag_values *dv)
{
	memset(dv, 0, sizeof(*dv));
	dv->d.put = diag_put;
	uart_device_ops.diag(h->u, &dv->d);
}

static void
test_reset_values(void)
{
	struct diag_values dg;
	struct host h;

	host_init(&h);
	TAP_EQ(pio_inb(&h.io, IER), 0x00, "reset: IER 0");
	TAP_EQ(pio_inb(&h.io, IIR), 0x01,
	    "reset: IIR 0x01 (no interrupt, no FIFO)");
	TAP_EQ(pio_inb(&h.io, LCR), 0x00, "reset: LCR 0");
	TAP_EQ(pio_inb(&h.io, MCR), 0x00, "reset: MCR 0");
	TAP_EQ(pio_inb(&h.io, LSR), 0x60, "reset: LSR THRE|TEMT");
	TAP_EQ(pio_inb(&h.io, MSR), 0xb0,
	    "MSR: CTS, DSR, DCD asserted, no deltas");
	TAP_EQ(uart_rx_space(h.u), 1, "receiver holds 1 byte without FIFO");
	pio_outb(&h.io, SCR, 0x5a);
	TAP_EQ(pio_inb(&h.io, SCR), 0x5a, "scratch register keeps its byte");
	pio_outb(&h.io, IER, 0xff);
	TAP_EQ(pio_inb(&h.io, IER), 0x0f, "IER bits 7:4 read 0");
	pio_outb(&h.io, IER, 0x40);
	TAP_EQ(pio_inb(&h.io, IER), 0x00,
	    "IER UUE bit (Xscale probe) not kept");
	pio_outb(&h.io, MCR, 0xff);
	TAP_EQ(pio_inb(&h.io, MCR), 0x1f, "MCR bits 7:5 read 0");
	pio_outb(&h.io, MCR, 0);
	pio_outb(&h.io, IER, 0);

	/* Diagnostics show the registers without a read's effects. */
	pio_outb(&h.io, FCR, 0x01);
	pio_outb(&h.io, MCR, 0x0b);
	pio_outb(&h.io, IER, 0x02);
	diag_collect(&h, &dg);
	TAP_EQ(dg.ier, 0x02, "diag: IER");
	TAP_EQ(dg.iir, 0xc2, "diag: IIR THRE with FIFOs on");
	TAP_EQ(dg.mcr, 0x0b, "diag: MCR");
	TAP_EQ(dg.lsr, 0x60, "diag: LSR");
	TAP_EQ(dg.thre_pending, 1, "diag: THRE pending");
	TAP_EQ(dg.irq_level, 1, "diag: line high");
	TAP_EQ(dg.irq_rises, 1, "diag: the line rose once");
	TAP_EQ(dg.tx_bytes + dg.rx_bytes + dg.thre_taken, 0,
	    "diag: nothing moved yet");
	TAP_EQ(dg.n, 13, "diag: thirteen values");
	TAP_EQ(pio_inb(&h.io, IIR), 0xc2,
	    "diag did not take the THRE interrupt");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_dlab(void)
{
	struct host h;

	host_init(&h);
	pio_outb(&h.io, IER, 0x05);
	pio_outb(&h.io, LCR, 0x83);
	pio_outb(&h.io, DLL, 0x34);
	pio_outb(&h.io, DLM, 0x12);
	TAP_EQ(pio_inb(&h.io, DLL), 0x34, "DLAB: DLL reads back");
	TAP_EQ(pio_inb(&h.io, DLM), 0x12, "DLAB: DLM reads back");
	TAP_EQ(h.tx_calls, 0, "DLAB: writing DLL transmits nothing");
	TAP_EQ(pio_inb(&h.io, LCR), 0x83, "LCR reads back");
	pio_outb(&h.io, LCR, 0x03);
	TAP_EQ(pio_inb(&h.io, IER), 0x05, "DLAB off: IER kept its value");
	pio_outb(&h.io, THR, 'x');
	TAP_EQ(h.txlen == 1 && h.tx[0] == 'x', 1, "DLAB off: THR transmits");
	pio_outb(&h.io, LCR, 0x80);
	TAP_EQ(pio_inb(&h.io, DLL) == 0x34 && pio_inb(&h.io, DLM) == 0x12, 1,
	    "divisor survives THR/IER traffic");
	/* LCR 0xbf: still a 16550A, offset 2 is IIR/FCR. */
	pio_outb(&h.io, LCR, 0xbf);
	TAP_EQ(pio_inb(&h.io, IIR) & 0x0f, 0x01,
	    "LCR 0xbf: offset 2 reads IIR");
	host_fini(&h);
}

/* The loopback test from Linux's autoconfig, then the MSR wiring. */
static void
test_loopback(void)
{
	struct host h;
	uint8_t v;

	host_init(&h);
	pio_outb(&h.io, MCR, 0x10 | 0x0a);
	TAP_EQ(pio_inb(&h.io, MSR) & 0xf0, 0x90,
	    "loopback RTS|OUT2 -> CTS|DCD");
	pio_outb(&h.io, MCR, 0x10 | 0x01);
	v = pio_inb(&h.io, MSR);
	TAP_EQ(v & 0xf0, 0x20, "loopback DTR -> DSR");
	TAP_EQ(v & 0x0f, 0x0b, "deltas: DCTS, DDSR, DDCD; no TERI");
	TAP_EQ(pio_inb(&h.io, MSR) & 0x0f, 0, "deltas clear on read");
	pio_outb(&h.io, MCR, 0x10 | 0x04);
	TAP_EQ(pio_inb(&h.io, MSR) & 0xf0, 0x40, "loopback OUT1 -> RI");
	pio_outb(&h.io, MCR, 0x10);
	v = pio_inb(&h.io, MSR);
	TAP_EQ(v & 0x04, 0x04, "TERI on the trailing edge of RI");
	pio_outb(&h.io, MCR, 0x10 | 0x04);
	TAP_EQ(pio_inb(&h.io, MSR) & 0x04, 0,
	    "no TERI on the rising edge of RI");

	/* Modem status interrupt, visible in IIR even in loopback. */
	pio_outb(&h.io, IER, 0x08);
	pio_outb(&h.io, MCR, 0x10 | 0x02);
	TAP_EQ(pio_inb(&h.io, IIR), 0x00, "modem status interrupt reported");
	pio_inb(&h.io, MSR);
	TAP_EQ(pio_inb(&h.io, IIR), 0x01, "cleared by reading MSR");
	pio_outb(&h.io, IER, 0);

	/* Transmitter looped to receiver. */
	pio_outb(&h.io, THR, 0xa5);
	TAP_EQ(h.tx_calls, 0, "loopback: nothing leaves");
	TAP_EQ(pio_inb(&h.io, LSR) & 0x01, 0x01, "loopback: byte received");
	TAP_EQ(pio_inb(&h.io, RBR), 0xa5, "loopback: RBR holds it");
	TAP_EQ(uart_rx_space(h.u), 0, "loopback: no room for the host");
	TAP_EQ(uart_receive(h.u, (const uint8_t *)"ab", 2), 0,
	    "loopback: host bytes refused, not lost");
	h.rx_space_calls = 0;
	pio_outb(&h.io, MCR, 0x0b);
	TAP_EQ(h.rx_space_calls, 1, "leaving loopback calls rx_space");
	TAP_EQ(pio_inb(&h.io, MSR) & 0xf0, 0xb0,
	    "out of loopback: modem ready");

	/* Overrun in loopback, 16450 mode: OE and a line status irq. */
	pio_outb(&h.io, IER, 0x04);
	pio_outb(&h.io, MCR, 0x18);
	pio_outb(&h.io, THR, 1);
	pio_outb(&h.io, THR, 2);
	TAP_EQ(pio_inb(&h.io, IIR), 0x06, "overrun: receiver line status irq");
	v = pio_inb(&h.io, LSR);
	TAP_EQ(v & 0x03, 0x03, "overrun: LSR DR|OE");
	TAP_EQ(pio_inb(&h.io, LSR) & 0x02, 0, "OE clears on LSR read");
	TAP_EQ(pio_inb(&h.io, RBR), 2, "16450 overrun: newest byte kept");
	/* FIFO mode: the FIFO is kept, the extra byte lost. */
	pio_outb(&h.io, FCR, 0x07);
	for (v = 0; v < 17; v++)
		pio_outb(&h.io, THR, v);
	TAP_EQ(pio_inb(&h.io, LSR) & 0x02, 0x02, "FIFO overrun sets OE");
	for (v = 0; v < 16; v++)
		if (pio_inb(&h.io, RBR) != v)
			break;
	TAP_EQ(v, 16, "FIFO overrun: first 16 bytes intact");
	TAP_EQ(pio_inb(&h.io, LSR) & 0x01, 0,
	    "FIFO overrun: 17th byte dropped");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_out2_gating(void)
{
	struct host h;

	host_init(&h);
	pio_outb(&h.io, IER, 0x02);
	TAP_EQ(pio_inb(&h.io, IIR), 0x02, "THRE pending with ETBEI");
	pio_outb(&h.io, IER, 0);
	pio_outb(&h.io, IER, 0x02);
	TAP_EQ(h.fh.irq[0], false, "OUT2 clear: line stays low");
	pio_outb(&h.io, MCR, 0x08);
	TAP_EQ(h.fh.irq[0], true, "OUT2 set: line high");
	pio_outb(&h.io, MCR, 0x00);
	TAP_EQ(h.fh.irq[0], false, "OUT2 cleared again: line low");
	pio_outb(&h.io, MCR, 0x18);
	TAP_EQ(h.fh.irq[0], false, "loopback closes the gate too");
	pio_outb(&h.io, MCR, 0x08);
	TAP_EQ(h.fh.irq[0], true, "line high again");
	pio_inb(&h.io, IIR);
	TAP_EQ(h.fh.irq[0], false, "reading IIR (THRE) lowers it");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

/* THRE as serial8250_do_startup() tests it, and its clearing rules. */
static void
test_thre(void)
{
	struct host h;
	uint8_t iir1, iir2;
	unsigned int i;

	host_init(&h);
	pio_outb(&h.io, LCR, 0x03);
	pio_outb(&h.io, FCR, 0x07);
	pio_outb(&h.io, MCR, 0x0b);
	pio_inb(&h.io, IIR);
	pio_outb(&h.io, IER, 0x02);
	iir1 = pio_inb(&h.io, IIR);
	pio_outb(&h.io, IER, 0);
	pio_outb(&h.io, IER, 0x02);
	iir2 = pio_inb(&h.io, IIR);
	pio_outb(&h.io, IER, 0);
	TAP_EQ(iir1, 0xc2, "ETBEI 0->1 raises THRE (first)");
	TAP_EQ(iir2, 0xc2, "ETBEI 0->1 raises THRE again (no UART_BUG_THRE)");

	pio_outb(&h.io, IER, 0x02);
	TAP_EQ(h.fh.irq[0], true, "THRE: line high");
	TAP_EQ(pio_inb(&h.io, IIR), 0xc2, "IIR reports THRE");
	TAP_EQ(pio_inb(&h.io, IIR), 0xc1, "reading it cleared THRE");
	TAP_EQ(h.fh.irq[0], false, "line low");
	pio_outb(&h.io, IER, 0x02);
	TAP_EQ(pio_inb(&h.io, IIR), 0xc1,
	    "rewriting ETBEI=1 does not raise THRE");
	pio_outb(&h.io, THR, 'a');
	TAP_EQ(pio_inb(&h.io, IIR), 0xc2, "a THR write raises THRE");
	pio_outb(&h.io, THR, 'b');
	TAP_EQ(h.fh.irq[0], true, "still pending after another write");
	pio_outb(&h.io, IER, 0x00);
	TAP_EQ(h.fh.irq[0], false, "ETBEI off: line low");
	TAP_EQ(pio_inb(&h.io, LSR) & 0x60, 0x60, "THRE|TEMT always set");
	TAP_EQ(h.txlen == 2 && memcmp(h.tx, "ab", 2) == 0, 1,
	    "tx got both bytes, one call each");
	TAP_EQ(h.tx_calls, 2, "one tx call per THR write");

	/* Priority: received data beats THRE, line status beats both. */
	pio_outb(&h.io, IER, 0x07);
	uart_receive(h.u, (const uint8_t *)"z", 1);
	TAP_EQ(pio_inb(&h.io, IIR), 0xc4, "received data before THRE");
	TAP_EQ(pio_inb(&h.io, RBR), 'z', "RBR");
	TAP_EQ(pio_inb(&h.io, IIR), 0xc2,
	    "then THRE (not cleared by the read above)");
	pio_outb(&h.io, FCR, 0x81);
	uart_receive(h.u, (const uint8_t *)"y", 1);
	TAP_EQ(pio_inb(&h.io, IIR), 0xcc,
	    "below trigger 8: timeout before THRE");
	pio_outb(&h.io, MCR, 0x1b);
	for (i = 0; i < 16; i++)
		pio_outb(&h.io, THR, 0);
	TAP_EQ(pio_inb(&h.io, IIR), 0xc6, "overrun: line status first");
	pio_inb(&h.io, LSR);
	TAP_EQ(pio_inb(&h.io, IIR), 0xc4, "then received data");
	pio_outb(&h.io, MCR, 0x0b);
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

/*
 * The interrupt controller sees edges (ISA IRQs are edge-triggered at
 * the I/O APIC): which events make one.
 */
static void
test_edges(void)
{
	struct host h;
	unsigned int r;

	host_init(&h);
	pio_outb(&h.io, MCR, 0x08);		/* OUT2 */
	pio_outb(&h.io, IER, 0x02);
	TAP_EQ(h.fh.irq[0] && h.fh.rises[0] == 1, 1,
	    "edges: ETBEI on, THRE: one edge");
	pio_outb(&h.io, THR, 'a');
	pio_outb(&h.io, THR, 'b');
	TAP_EQ(h.fh.rises[0], 1,
	    "edges: THR writes while THRE is pending leave the "
	    "line high (the transmitter empties at once)");
	TAP_EQ(h.fh.irq[0], true, "edges: line high after the writes");
	TAP_EQ(pio_inb(&h.io, IIR), 0x02, "edges: IIR reports THRE");
	pio_outb(&h.io, THR, 'a');
	TAP_EQ(h.fh.rises[0], 2,
	    "edges: the first write after IIR lowered the line "
	    "makes a new edge");

	pio_outb(&h.io, IER, 0x03);
	pio_outb(&h.io, FCR, 0x01);
	uart_receive(h.u, (const uint8_t *)"x", 1);
	r = h.fh.rises[0];
	pio_outb(&h.io, THR, 'c');
	TAP_EQ(h.fh.rises[0], r,
	    "edges: a THR write while data waits (RDI) keeps "
	    "the line high, no edge, as a real INTR would");
	uart_receive(h.u, (const uint8_t *)"yz", 2);
	TAP_EQ(h.fh.rises[0], r + 1,
	    "edges: input arriving on a high line pulses "
	    "it: a handler that left it high is called again");
	TAP_EQ(h.fh.irq[0], true, "edges: line high after the input");
	uart_receive(h.u, (const uint8_t *)"", 0);
	TAP_EQ(h.fh.rises[0], r + 1, "edges: no input, no edge");
	while (pio_inb(&h.io, LSR) & 0x01)
		pio_inb(&h.io, RBR);
	TAP_EQ(pio_inb(&h.io, IIR), 0xc2, "edges: then THRE");
	TAP_EQ(pio_inb(&h.io, IIR), 0xc1, "edges: then nothing");
	TAP_EQ(h.fh.irq[0], false, "edges: line low once IIR says nothing");

	pio_outb(&h.io, IER, 0x00);
	r = h.fh.rises[0];
	uart_receive(h.u, (const uint8_t *)"q", 1);
	TAP_EQ(h.fh.rises[0] == r && !h.fh.irq[0], 1,
	    "edges: input with ERBFI off: no "
	    "edge");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_fifo(void)
{
	static const uint8_t fcr_trig[4] = { 0x00, 0x40, 0x80, 0xc0 };
	static const unsigned int level[4] = { 1, 4, 8, 14 };
	uint8_t buf[16] = { 0 };
	struct host h;
	unsigned int i, j;
	int ok;

	host_init(&h);
	pio_outb(&h.io, MCR, 0x08);
	pio_outb(&h.io, FCR, 0x01);
	TAP_EQ(pio_inb(&h.io, IIR) & 0xc0, 0xc0, "FIFO on: IIR bits 7:6 set");
	TAP_EQ(uart_rx_space(h.u), 16, "FIFO on: 16 bytes of room");
	pio_outb(&h.io, FCR, 0x00);
	TAP_EQ(pio_inb(&h.io, IIR) & 0xc0, 0x00,
	    "FIFO off: IIR bits 7:6 clear");
	pio_outb(&h.io, FCR, 0x06);
	TAP_EQ(pio_inb(&h.io, IIR) & 0xc0, 0x00, "FCR0=0: other bits ignored");

	pio_outb(&h.io, IER, 0x01);
	for (i = 0; i < 4; i++) {
		pio_outb(&h.io, FCR, 0x07 | fcr_trig[i]);
		ok = 1;
		for (j = 1; j < level[i]; j++) {
			uart_receive(h.u, buf, 1);
			if (pio_inb(&h.io, IIR) != 0xcc || !h.fh.irq[0])
				ok = 0;
		}
		TAP_EQ(ok, 1, "trigger %u: below it, character timeout",
		    level[i]);
		uart_receive(h.u, buf, 1);
		TAP_EQ(pio_inb(&h.io, IIR), 0xc4,
		    "trigger %u: at it, data available",
		    level[i]);
		if (level[i] > 1) {
			pio_inb(&h.io, RBR);
			TAP_EQ(pio_inb(&h.io, IIR), 0xcc,
			    "trigger %u: one read later, timeout again",
			    level[i]);
		}
		pio_outb(&h.io, FCR, 0x03 | fcr_trig[i]);
		TAP_EQ(pio_inb(&h.io, LSR) & 0x01, 0,
		    "FCR RX reset empties the FIFO");
		TAP_EQ(pio_inb(&h.io, IIR), 0xc1, "and clears the interrupt");
	}
	/* Mode change empties the FIFO. */
	uart_receive(h.u, buf, 5);
	pio_outb(&h.io, FCR, 0x00);
	TAP_EQ(pio_inb(&h.io, LSR) & 0x01, 0, "FIFO off empties the receiver");
	TAP_EQ(uart_receive(h.u, buf, 5), 1, "16450 mode: 1 byte taken");
	TAP_EQ(pio_inb(&h.io, IIR), 0x04,
	    "16450 mode: data available, no FIFO bits");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	host_fini(&h);
}

static void
test_rx_space_rule(void)
{
	uint8_t buf[32], out[32];
	struct host h;
	unsigned int i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	host_init(&h);
	pio_outb(&h.io, FCR, 0x01);
	TAP_EQ(uart_receive(h.u, buf, 32), 16, "full FIFO takes 16 of 32");
	TAP_EQ(uart_rx_space(h.u), 0, "no room left");
	TAP_EQ(uart_receive(h.u, buf + 16, 16), 0, "nothing more taken");
	TAP_EQ(h.rx_space_calls, 0, "no rx_space while full");
	out[0] = pio_inb(&h.io, RBR);
	TAP_EQ(h.rx_space_calls, 1, "first read from a full FIFO: rx_space");
	out[1] = pio_inb(&h.io, RBR);
	TAP_EQ(h.rx_space_calls, 1, "second read: not again");
	TAP_EQ(uart_receive(h.u, buf + 16, 16), 2, "2 more taken");
	for (i = 2; i < 18; i++)
		out[i] = pio_inb(&h.io, RBR);
	TAP_EQ(h.rx_space_calls, 2, "filled again then read: rx_space");
	TAP_EQ(memcmp(out, buf, 18), 0, "bytes in order, none lost");
	TAP_EQ(pio_inb(&h.io, LSR) & 0x03, 0, "empty, no overrun");

	uart_receive(h.u, buf, 16);
	pio_outb(&h.io, FCR, 0x03);
	TAP_EQ(h.rx_space_calls, 3, "FIFO reset of a full FIFO: rx_space");
	host_fini(&h);
}

/* ---- Linux 8250 driver, as far as the data paths go ---------------- */

struct linux_port {
	struct host *h;
	uint8_t ier;
	const uint8_t *xmit;
	size_t xmit_len, xmit_pos;
	uint8_t *rx;
	size_t rx_len;
	unsigned int lazy;	/* read at most this many bytes per irq */
};

static void
linux_startup(struct linux_port *p)
{
	struct host *h = p->h;

	pio_outb(&h->io, FCR, 0x01);
	pio_outb(&h->io, FCR, 0x07);
	pio_outb(&h->io, FCR, 0x00);
	pio_inb(&h->io, LSR);
	pio_inb(&h->io, RBR);
	pio_inb(&h->io, IIR);
	pio_inb(&h->io, MSR);
	pio_outb(&h->io, LCR, 0x03);
	pio_outb(&h->io, MCR, 0x0b);		/* DTR, RTS, OUT2 */
	pio_outb(&h->io, FCR, 0x81);		/* FIFO, trigger 8 */
	p->ier = 0x05;			/* RLSI | RDI */
	pio_outb(&h->io, IER, p->ier);
	pio_inb(&h->io, LSR);
	pio_inb(&h->io, RBR);
	pio_inb(&h->io, IIR);
	pio_inb(&h->io, MSR);
}

static void
linux_start_tx(struct linux_port *p)
{
	if (!(p->ier & 0x02)) {
		p->ier |= 0x02;
		pio_outb(&p->h->io, IER, p->ier);
	}
}

/* serial8250_handle_irq(): 0 when the port had nothing to say. */
static int
linux_handle_port(struct linux_port *p)
{
	struct host *h = p->h;
	uint8_t iir, lsr;
	unsigned int count;

	iir = pio_inb(&h->io, IIR);
	if (iir & 0x01)
		return 0;
	lsr = pio_inb(&h->io, LSR);
	if (lsr & 0x01) {
		count = p->lazy ? p->lazy : 256;
		do {
			p->rx[p->rx_len++] = pio_inb(&h->io, RBR);
			lsr = pio_inb(&h->io, LSR);
		} while ((lsr & 0x01) && --count > 0);
	}
	pio_inb(&h->io, MSR);
	if ((lsr & 0x20) && (p->ier & 0x02)) {
		count = 16;
		while (p->xmit_pos < p->xmit_len && count-- > 0)
			pio_outb(&h->io, THR, p->xmit[p->xmit_pos++]);
		if (p->xmit_pos == p->xmit_len) {
			p->ier &= ~0x02;
			pio_outb(&h->io, IER, p->ier);
		}
	}
	return 1;
}

/* serial8250_interrupt(): loop over the port until it is quiet. */
static void
linux_isr(struct linux_port *p)
{
	unsigned int pass;

	for (pass = 0; pass < 512; pass++)
		if (!linux_handle_port(p) || p->lazy)
			break;
}

static void
test_linux_tx(void)
{
	const size_t len = 1 << 20;
	struct linux_port p = { 0 };
	struct diag_values dg;
	struct host h;
	uint8_t *data;
	size_t i;
	unsigned long isr_runs = 0;

	data = malloc(len);
	if (data == NULL)
		tap_bail("out of memory");
	for (i = 0; i < len; i++)
		data[i] = (uint8_t)rng();
	host_init(&h);
	p.h = &h;
	linux_startup(&p);
	p.xmit = data;
	p.xmit_len = len;
	h.rises_taken = h.fh.rises[0];
	linux_start_tx(&p);
	/* An edge-triggered PIC: one ISR run per latched rising edge. */
	while (host_take_edge(&h) && isr_runs < 10 * len) {
		linux_isr(&p);
		isr_runs++;
	}
	TAP_EQ(p.xmit_pos, len, "8250 tx: driver sent 1 MiB");
	TAP_EQ(h.txlen, len, "8250 tx: tx callback got 1 MiB");
	TAP_EQ(h.txlen == len && memcmp(h.tx, data, len) == 0, 1,
	    "8250 tx: same bytes, same order");
	TAP_EQ(h.fh.irq[0], false, "8250 tx: line low when done");
	TAP_EQ(h.fh.irq_bad, 0, "irq set() only on changes");
	tap_diag("%lu ISR runs, %u irq changes", isr_runs, h.fh.irq_calls);
	/* What vm.info shows of it: every byte, every rise, each THRE. */
	diag_collect(&h, &dg);
	TAP_EQ(dg.tx_bytes, len, "8250 tx: diag counts 1 MiB sent");
	TAP_EQ(dg.irq_rises, h.fh.rises[0], "8250 tx: diag counts each rise");
	TAP_EQ(dg.thre_taken >= len / 16 && dg.thre_taken <= isr_runs +
	    len / 16, 1, "8250 tx: diag counts THRE taken (%llu for %lu "
	    "ISR runs)", (unsigned long long)dg.thre_taken, isr_runs);
	TAP_EQ(dg.rx_bytes, 0, "8250 tx: nothing received");

	/* A second burst after the queue ran dry starts on ETBEI 0->1. */
	p.xmit_pos = 0;
	p.xmit_len = 100;
	linux_start_tx(&p);
	while (host_take_edge(&h)) {
		linux_isr(&p);
	}
	TAP_EQ(h.txlen, len + 100, "8250 tx: second burst delivered");
	host_fini(&h);
	free(data);
}

/*
 * Host pushes with flow control (stops when uart_receive() takes less,
 * resumes on rx_space), guest reads in its ISR.  edge: edge-triggered
 * delivery with Linux's looping ISR; otherwise level-triggered with a
 * lazy ISR that reads a few bytes per interrupt.
 */
static void
run_rx(bool edge, unsigned int lazy, const char *what)
{
	const size_t len = 300000;
	struct linux_port p = { 0 };
	struct diag_values dg;
	struct host h;
	uint8_t *data;
	size_t i, hp = 0, want, n;
	bool waiting = false, stalled = false;
	unsigned int seen_calls = 0;
	unsigned long steps = 0;

	data = malloc(len);
	p.rx = malloc(len + 16);
	if (data == NULL || p.rx == NULL)
		tap_bail("out of memory");
	for (i = 0; i < len; i++)
		data[i] = (uint8_t)rng();
	host_init(&h);
	p.h = &h;
	p.lazy = lazy;
	linux_startup(&p);
	h.rises_taken = h.fh.rises[0];
	while (p.rx_len < len && steps++ < 50 * len) {
		if (h.rx_space_calls != seen_calls) {
			seen_calls = h.rx_space_calls;
			waiting = false;
		}
		if (!waiting && hp < len) {
			want = 1 + rng() % 40;
			if (want > len - hp)
				want = len - hp;
			n = uart_receive(h.u, data + hp, want);
			hp += n;
			if (n < want)
				waiting = true;
		}
		if (edge ? host_take_edge(&h) : h.fh.irq[0]) {
			linux_isr(&p);
		} else if (waiting && h.rx_space_calls == seen_calls) {
			stalled = true;	/* host waits, guest idle: deadlock */
			break;
		}
	}
	TAP_EQ(stalled, false, "%s: no deadlock", what);
	TAP_EQ(p.rx_len, len, "%s: guest got all %zu bytes", what, len);
	TAP_EQ(p.rx_len == len && memcmp(p.rx, data, len) == 0, 1,
	    "%s: no loss, no duplicate, in order", what);
	TAP_EQ(pio_inb(&h.io, LSR) & 0x02, 0, "%s: never overrun", what);
	diag_collect(&h, &dg);
	TAP_EQ(dg.rx_bytes, len, "%s: diag counts every byte taken", what);
	TAP_EQ(h.fh.irq_bad, 0, "%s: irq set() only on changes", what);
	tap_diag("%s: %u rx_space calls", what, h.rx_space_calls);
	host_fini(&h);
	free(data);
	free(p.rx);
}

static void
test_linux_rx(void)
{
	run_rx(true, 0, "8250 rx, edge irq");
	run_rx(false, 1, "lazy rx, 1 byte per level irq");
	run_rx(false, 3, "lazy rx, 3 bytes per level irq");
}

static void
test_access_sizes(void)
{
	struct host h;
	uint8_t buf[8];
	uint32_t v32;

	host_init(&h);
	pio_outb(&h.io, IER, 0x05);
	uart_receive(h.u, (const uint8_t *)"Q", 1);
	memset(buf, 0, sizeof(buf));
	uart_device_ops.read(h.u, 0, buf, 2);
	TAP_EQ(buf[0] == 'Q' && buf[1] == 0x05, 1,
	    "2-byte read at 0: RBR then IER");
	uart_device_ops.read(h.u, 6, buf, 4);
	TAP_EQ(buf[0] == 0xb0 && buf[2] == 0xff && buf[3] == 0xff, 1,
	    "4-byte read at 6: MSR, SCR, then all ones");
	uart_device_ops.read(h.u, 100, buf, 8);
	TAP_EQ(buf[0] == 0xff && buf[7] == 0xff, 1, "beyond 7: all ones");
	uart_device_ops.read(h.u, UINT64_MAX, buf, 8);
	TAP_EQ(buf[0] == 0xff, 1, "offset UINT64_MAX: all ones");
	v32 = 0x44332211;
	uart_device_ops.write(h.u, 6, &v32, 4);
	TAP_EQ(pio_inb(&h.io, SCR), 0x22,
	    "4-byte write at 6: byte 1 went to SCR");
	uart_device_ops.write(h.u, UINT64_MAX - 1, &v32, 4);
	uart_device_ops.read(h.u, 0, buf, 0);
	TAP_EQ(pio_inb(&h.io, SCR), 0x22,
	    "writes beyond the registers ignored");
	host_fini(&h);
}

/* Random register traffic: invariants hold and nothing crashes. */
static void
test_fuzz(void)
{
	struct host h;
	uint8_t buf[8], iir, lsr, mcr, in[8];
	unsigned int i, j, bad_lsr = 0, bad_irq = 0, bad_bits = 0, drained;
	uint64_t off;
	unsigned int size;
	bool gate, before;

	rng_state = 0x1234567887654321ULL;
	host_init(&h);
	for (i = 0; i < 300000; i++) {
		switch (rng() % 8) {
		case 0:
			off = rng() % 4 == 0 ? rng() : rng() % 12;
			size = (unsigned int)(rng() % 9);
			uart_device_ops.read(h.u, off, buf, size);
			break;
		case 1:
		case 2:
			off = rng() % 4 == 0 ? rng() : rng() % 12;
			size = (unsigned int)(rng() % 9);
			for (j = 0; j < 8; j++)
				buf[j] = (uint8_t)rng();
			uart_device_ops.write(h.u, off, buf, size);
			break;
		case 3:
			for (j = 0; j < 8; j++)
				in[j] = (uint8_t)rng();
			if (uart_receive(h.u, in, rng() % 9) > 8)
				bad_bits++;
			break;
		case 4:
			/* A guest's master reset: MCR and FCR cleared. */
			if (rng() % 1000 == 0) {
				pio_outb(&h.io, LCR, 0);
				pio_outb(&h.io, MCR, 0);
				pio_outb(&h.io, FCR, 0x06);
			}
			break;
		default:
			/* Invariants, read with DLAB clear. */
			pio_outb(&h.io, LCR, pio_inb(&h.io, LCR) & 0x7f);
			mcr = pio_inb(&h.io, MCR);
			gate = (mcr & 0x18) == 0x08;
			before = h.fh.irq[0];
			iir = pio_inb(&h.io, IIR);
			if (before != (!(iir & 0x01) && gate))
				bad_irq++;
			if ((iir & 0x30) != 0 ||
			    (pio_inb(&h.io, IER) & 0xf0) != 0 ||
			    (mcr & 0xe0) != 0 || uart_rx_space(h.u) > 16)
				bad_bits++;
			lsr = pio_inb(&h.io, LSR);
			if ((lsr & 0x60) != 0x60 || (lsr & 0x9c) != 0)
				bad_lsr++;
			break;
		}
	}
	TAP_EQ(bad_irq, 0, "fuzz: line level always matches IIR and OUT2");
	TAP_EQ(bad_lsr, 0, "fuzz: LSR sane (THRE|TEMT, no PE/FE/BI)");
	TAP_EQ(bad_bits, 0, "fuzz: reserved bits clear, rx space <= 16");
	TAP_EQ(h.fh.irq_bad, 0, "fuzz: irq set() only on changes");
	pio_outb(&h.io, LCR, 0);
	pio_outb(&h.io, MCR, 0);
	for (drained = 0; drained < 100 && (pio_inb(&h.io, LSR) & 0x01);
	    drained++)
		pio_inb(&h.io, RBR);
	TAP_EQ(drained <= 16, 1, "fuzz: at most 16 bytes buffered (%u)",
	    drained);
	host_fini(&h);
}

int
main(void)
{
	/* The sequence test_linux_tx draws from. */
	rng_state = 0x9e3779b97f4a7c15ULL;
	test_reset_values();
	test_dlab();
	test_loopback();
	test_out2_gating();
	test_thre();
	test_edges();
	test_fifo();
	test_rx_space_rule();
	test_linux_tx();
	test_linux_rx();
	test_access_sizes();
	test_fuzz();
	uart_free(NULL);
	return tap_done();
}
