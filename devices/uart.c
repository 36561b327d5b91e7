/*
 * 16550A UART, after the National Semiconductor PC16550D datasheet:
 * the sections of its "Registers" chapter are cited by name (LCR, LSR,
 * FCR, IIR, IER, MCR, MSR), its tables by number: Table II "Summary of
 * Registers", Table III "UART Reset Configuration", Table IV "Interrupt
 * Control Functions".
 *
 * There is no line timing: a byte written to THR leaves at once, and a
 * byte from the host is in the receiver as soon as it is offered.  What
 * the datasheet describes in terms of character times is mapped onto
 * that model where a driver can tell the difference; see the THRE and
 * character timeout notes below.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "dev-state.h"
#include "uart.h"

#define UART_NREGS	8
#define UART_FIFO_SIZE	16

/* Register offsets (Table II).  DLAB selects the divisor at 0 and 1. */
#define UART_RBR	0	/* read, DLAB=0 */
#define UART_THR	0	/* write, DLAB=0 */
#define UART_DLL	0	/* DLAB=1 */
#define UART_IER	1	/* DLAB=0 */
#define UART_DLM	1	/* DLAB=1 */
#define UART_IIR	2	/* read */
#define UART_FCR	2	/* write */
#define UART_LCR	3
#define UART_MCR	4
#define UART_LSR	5
#define UART_MSR	6
#define UART_SCR	7

/* Interrupt Enable Register (IER) */
#define IER_ERBFI	0x01	/* received data available */
#define IER_ETBEI	0x02	/* transmitter holding register empty */
#define IER_ELSI	0x04	/* receiver line status */
#define IER_EDSSI	0x08	/* modem status */
#define IER_MASK	0x0f	/* bits 4-7 are always 0 */

/* Interrupt Identification Register (IIR), Table IV */
#define IIR_NO_INT	0x01
#define IIR_MSI		0x00	/* 4th priority: modem status */
#define IIR_THRI	0x02	/* 3rd: THR empty */
#define IIR_RDI		0x04	/* 2nd: received data available */
#define IIR_RLSI	0x06	/* 1st: receiver line status */
#define IIR_CTI		0x0c	/* 2nd: character timeout (FIFO mode) */
#define IIR_ID_MASK	0x0f
#define IIR_FIFO	0xc0	/* set while FCR0 is 1 */

/* FIFO Control Register (FCR) */
#define FCR_ENABLE	0x01
#define FCR_RX_RESET	0x02
#define FCR_TX_RESET	0x04
#define FCR_TRIGGER(v)	(((v) >> 6) & 3)

/* Line Control Register (LCR) */
#define LCR_DLAB	0x80

/* Modem Control Register (MCR) */
#define MCR_DTR		0x01
#define MCR_RTS		0x02
#define MCR_OUT1	0x04
#define MCR_OUT2	0x08
#define MCR_LOOP	0x10
#define MCR_MASK	0x1f	/* bits 5-7 are always 0 */

/* Line Status Register (LSR) */
#define LSR_DR		0x01
#define LSR_OE		0x02
#define LSR_THRE	0x20
#define LSR_TEMT	0x40

/* Modem Status Register (MSR) */
#define MSR_DCTS	0x01
#define MSR_DDSR	0x02
#define MSR_TERI	0x04
#define MSR_DDCD	0x08
#define MSR_DELTA	0x0f
#define MSR_CTS		0x10
#define MSR_DSR		0x20
#define MSR_RI		0x40
#define MSR_DCD		0x80
#define MSR_LINES	0xf0

/* RX FIFO trigger levels selected by FCR bits 7:6. */
static const unsigned int uart_trigger_levels[4] = { 1, 4, 8, 14 };

struct uart {
	const struct device_host *host;
	struct uart_backend be;

	/*
	 * The receiver: a 16-byte FIFO, of which only the first byte is
	 * used while the FIFOs are off (the 16450 holding register).
	 */
	uint8_t rx_fifo[UART_FIFO_SIZE];
	unsigned int rx_head;		/* oldest byte */
	unsigned int rx_count;
	uint8_t rbr;			/* last byte read, re-read when empty */

	uint8_t ier;
	uint8_t lcr;
	uint8_t mcr;
	uint8_t lsr_errors;		/* OE, latched until LSR is read */
	uint8_t msr;			/* lines (7:4) and deltas (3:0) */
	uint8_t scr;
	uint8_t dll;
	uint8_t dlm;
	bool fifo_enabled;
	unsigned int rx_trigger;
	bool thre_pending;		/* THRE interrupt latched */

	bool rx_blocked;		/* the host may be waiting for rx_space */
	bool irq_level;

	/*
	 * Since the UART was made, for diagnostics: when a console stalls,
	 * they tell a guest that stopped writing THR from one that was
	 * never told it could (no rise of the line, or no THRE taken).
	 */
	uint64_t tx_bytes;		/* THR writes, loopback aside */
	uint64_t rx_bytes;		/* host bytes the receiver took */
	uint64_t irq_rises;		/* the interrupt line went high */
	uint64_t thre_taken;		/* IIR reads that reported THRE */
};

static unsigned int
uart_rx_capacity(const struct uart *u)
{
	return u->fifo_enabled ? UART_FIFO_SIZE : 1;
}

static void
uart_rx_clear(struct uart *u)
{
	u->rx_head = 0;
	u->rx_count = 0;
}

/*
 * A byte reaches the receiver.  From the host this only happens when
 * there is room; in loopback the guest's own transmitter can overrun
 * it, which sets OE (LSR bit 1).  In FIFO mode the new byte is lost and the
 * FIFO kept; in 16450 mode the new byte overwrites the unread one.
 */
static void
uart_rx_push(struct uart *u, uint8_t byte)
{
	unsigned int cap = uart_rx_capacity(u);

	if (u->rx_count >= cap) {
		u->lsr_errors |= LSR_OE;
		if (!u->fifo_enabled)
			u->rx_fifo[u->rx_head] = byte;
		return;
	}
	u->rx_fifo[(u->rx_head + u->rx_count) % UART_FIFO_SIZE] = byte;
	u->rx_count++;
}

static uint8_t
uart_rx_pop(struct uart *u)
{
	if (u->rx_count == 0)
		return u->rbr;
	u->rbr = u->rx_fifo[u->rx_head];
	u->rx_head = (u->rx_head + 1) % UART_FIFO_SIZE;
	u->rx_count--;
	if (u->rx_count == 0)
		u->rx_head = 0;
	return u->rbr;
}

size_t
uart_rx_space(const struct uart *u)
{
	/* Loopback disconnects the serial input (MCR bit 4). */
	if (u->mcr & MCR_LOOP)
		return 0;
	return uart_rx_capacity(u) - u->rx_count;
}

/*
 * The interrupt the IIR reports, by the priorities of Table IV.
 *
 * Character timeout: the datasheet raises it when the FIFO holds data
 * below the trigger level and nothing has moved for four character
 * times.  Without line timing that moment is "now": data below the
 * trigger level is reported as a timeout at once, so a driver always
 * learns about the last bytes of a burst.
 *
 * THRE: the transmitter is always empty, so the interrupt is an event
 * latched in thre_pending: set when THR is written (the byte leaves at
 * once) and when ETBEI goes from 0 to 1 (a real 16550 asserts THRE
 * then too, and Linux's 8250 driver tests for it), cleared when the IIR
 * read reports it or THR is written.
 */
static uint8_t
uart_iir_id(const struct uart *u)
{
	if ((u->ier & IER_ELSI) && u->lsr_errors != 0)
		return IIR_RLSI;
	if ((u->ier & IER_ERBFI) && u->rx_count > 0) {
		if (u->fifo_enabled && u->rx_count < u->rx_trigger)
			return IIR_CTI;
		return IIR_RDI;
	}
	if ((u->ier & IER_ETBEI) && u->thre_pending)
		return IIR_THRI;
	if ((u->ier & IER_EDSSI) && (u->msr & MSR_DELTA) != 0)
		return IIR_MSI;
	return IIR_NO_INT;
}

/*
 * On a PC the INTR pin reaches the interrupt controller through a gate
 * driven by OUT2; in loopback mode the OUT2 pin is forced inactive
 * (MCR bit 4), which closes the gate too.
 */
static bool
uart_irq_wanted(const struct uart *u)
{
	return uart_iir_id(u) != IIR_NO_INT &&
	    (u->mcr & (MCR_OUT2 | MCR_LOOP)) == MCR_OUT2;
}

static void
uart_update_irq(struct uart *u)
{
	bool level = uart_irq_wanted(u);

	if (level != u->irq_level) {
		u->irq_level = level;
		if (level)
			u->irq_rises++;
		device_irq_set(u->host, 0, level);
	}
}

/*
 * Host input while the line is already high: pulse it.  A real INTR
 * would just stay high, and a driver that reads IIR until it reports
 * nothing misses no byte that way.  But ISA interrupts are
 * edge-triggered at the I/O APIC: had the guest ever left its handler
 * with the line high, or had an edge gone astray on its way to a vCPU,
 * no edge would ever come again and the console would be dead for
 * good, input included.  An edge per burst of input costs at most one
 * spurious interrupt, and a key press then revives such a console.
 */
static void
uart_update_irq_on_input(struct uart *u)
{
	if (u->irq_level && uart_irq_wanted(u)) {
		u->irq_level = false;
		device_irq_set(u->host, 0, false);
	}
	uart_update_irq(u);
}

/* See "Flow control towards the host" in uart.h. */
static void
uart_update_rx_space(struct uart *u)
{
	if (uart_rx_space(u) == 0) {
		u->rx_blocked = true;
	} else if (u->rx_blocked) {
		u->rx_blocked = false;
		if (u->be.rx_space != NULL)
			u->be.rx_space(u->be.opaque);
	}
}

/*
 * The modem status inputs (MSR bits 7:4).  Outside loopback the UART sees a
 * modem that is always ready: CTS, DSR and DCD asserted, no ring.  In
 * loopback the inputs are wired to the MCR outputs (MCR bit 4).
 */
static uint8_t
uart_modem_lines(const struct uart *u)
{
	uint8_t lines = 0;

	if (!(u->mcr & MCR_LOOP))
		return MSR_CTS | MSR_DSR | MSR_DCD;
	if (u->mcr & MCR_DTR)
		lines |= MSR_DSR;
	if (u->mcr & MCR_RTS)
		lines |= MSR_CTS;
	if (u->mcr & MCR_OUT1)
		lines |= MSR_RI;
	if (u->mcr & MCR_OUT2)
		lines |= MSR_DCD;
	return lines;
}

/* Latch the delta bits for inputs that changed (MSR bits 3:0). */
static void
uart_update_modem_lines(struct uart *u)
{
	uint8_t old = u->msr & MSR_LINES;
	uint8_t new = uart_modem_lines(u);
	uint8_t changed = old ^ new;
	uint8_t delta = 0;

	if (changed & MSR_CTS)
		delta |= MSR_DCTS;
	if (changed & MSR_DSR)
		delta |= MSR_DDSR;
	if (changed & MSR_DCD)
		delta |= MSR_DDCD;
	/* TERI: trailing edge only, RI going from on to off. */
	if ((old & MSR_RI) && !(new & MSR_RI))
		delta |= MSR_TERI;
	u->msr = new | (u->msr & MSR_DELTA) | delta;
}

/* FCR: FCR0 gates every other bit; a mode change empties both FIFOs. */
static void
uart_write_fcr(struct uart *u, uint8_t val)
{
	bool enable = (val & FCR_ENABLE) != 0;

	if (enable != u->fifo_enabled) {
		u->fifo_enabled = enable;
		uart_rx_clear(u);
		/* FCR: after FCR0 changes, the first THRE interrupt
		 * comes at once if enabled. */
		u->thre_pending = true;
	}
	if (!enable)
		return;
	if (val & FCR_RX_RESET)
		uart_rx_clear(u);
	/* FCR_TX_RESET: the transmit FIFO is always empty already. */
	u->rx_trigger = uart_trigger_levels[FCR_TRIGGER(val)];
}

static uint8_t
uart_read_reg(struct uart *u, unsigned int reg)
{
	uint8_t v;

	switch (reg) {
	case UART_RBR:
		if (u->lcr & LCR_DLAB)
			return u->dll;
		return uart_rx_pop(u);
	case UART_IER:
		if (u->lcr & LCR_DLAB)
			return u->dlm;
		return u->ier;
	case UART_IIR:
		v = uart_iir_id(u);
		/* Reading the IIR clears THRE when it is the one reported. */
		if (v == IIR_THRI) {
			u->thre_pending = false;
			u->thre_taken++;
		}
		if (u->fifo_enabled)
			v |= IIR_FIFO;
		return v;
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		/* THRE and TEMT: the transmitter is always empty. */
		v = LSR_THRE | LSR_TEMT | u->lsr_errors;
		if (u->rx_count > 0)
			v |= LSR_DR;
		u->lsr_errors = 0;	/* OE clears on read */
		return v;
	case UART_MSR:
		v = u->msr;
		u->msr &= MSR_LINES;	/* deltas clear on read */
		return v;
	default:	/* UART_SCR */
		return u->scr;
	}
}

static void
uart_write_reg(struct uart *u, unsigned int reg, uint8_t val)
{
	uint8_t old;

	switch (reg) {
	case UART_THR:
		if (u->lcr & LCR_DLAB) {
			u->dll = val;
			break;
		}
		if (u->mcr & MCR_LOOP) {
			uart_rx_push(u, val);	/* SOUT looped to SIN */
		} else {
			u->tx_bytes++;
			if (u->be.tx != NULL)
				u->be.tx(u->be.opaque, &val, 1);
		}
		/*
		 * The write clears THRE; the byte leaves at once and THR is
		 * empty again, which raises it anew.  A real INTR would drop
		 * for a character time in between; here the line stays as it
		 * is, which spares two interrupt-line changes per byte while
		 * a driver fills the FIFO (it reads IIR, which lowers the
		 * line, before each burst).
		 */
		u->thre_pending = true;
		break;
	case UART_IER:
		if (u->lcr & LCR_DLAB) {
			u->dlm = val;
			break;
		}
		old = u->ier;
		u->ier = val & IER_MASK;
		if (!(old & IER_ETBEI) && (u->ier & IER_ETBEI))
			u->thre_pending = true;
		break;
	case UART_FCR:
		uart_write_fcr(u, val);
		break;
	case UART_LCR:
		u->lcr = val;
		break;
	case UART_MCR:
		u->mcr = val & MCR_MASK;
		uart_update_modem_lines(u);
		break;
	case UART_LSR:
	case UART_MSR:
		/* Read-only: writes are for factory test only (LSR). */
		break;
	default:	/* UART_SCR */
		u->scr = val;
		break;
	}
}
#define UART_FIGURE(key, kind, unit, help, member)			\
	{ #key, NULL, kind, unit, help, FIGURE_AT(struct uart, member) }

/* The receive FIFO's fill, then the traffic; of a struct uart. */
static const struct figure uart_figure_rows[] = {
	UART_FIGURE(rx_count, FIGURE_GAUGE, FIGURE_UNIT_BYTES,
	    "Bytes waiting in the receive FIFO", rx_count),
	UART_FIGURE(tx_bytes, FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Bytes the guest wrote to the transmitter", tx_bytes),
	UART_FIGURE(rx_bytes, FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Host bytes the receiver took", rx_bytes),
	UART_FIGURE(irq_rises, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Times the interrupt line went high", irq_rises),
	UART_FIGURE(thre_taken, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "IIR reads that reported THRE", thre_taken),
};

static const struct figure_table uart_figures = FIGURE_TABLE(uart_figure_rows);


/*
 * The UART sits on an 8-bit bus: a wider access is a run of byte
 * accesses at consecutive offsets, as an ISA bus would split it.  Bytes
 * beyond the last register float high.
 */
/* The registers as a read would show them, without a read's effects. */
static void
uart_diag(void *dev, struct device_diag *d)
{
	const struct uart *u = dev;

	device_diag_put(d, "ier", u->ier, DEVICE_DIAG_HEX);
	device_diag_put(d, "iir", uart_iir_id(u) |
	    (u->fifo_enabled ? IIR_FIFO : 0), DEVICE_DIAG_HEX);
	device_diag_put(d, "lcr", u->lcr, DEVICE_DIAG_HEX);
	device_diag_put(d, "mcr", u->mcr, DEVICE_DIAG_HEX);
	device_diag_put(d, "lsr", LSR_THRE | LSR_TEMT | u->lsr_errors |
	    (u->rx_count > 0 ? LSR_DR : 0), DEVICE_DIAG_HEX);
	device_diag_put(d, "msr", u->msr, DEVICE_DIAG_HEX);
	device_diag_figure_range(d, &uart_figures, 0, 1, u);
	device_diag_put(d, "thre_pending", u->thre_pending, DEVICE_DIAG_BOOL);
	device_diag_put(d, "irq_level", u->irq_level, DEVICE_DIAG_BOOL);
	device_diag_figure_range(d, &uart_figures, 1, uart_figures.n - 1, u);
}

static void
uart_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct uart *u = dev;
	uint8_t *p = data;
	unsigned int i;

	for (i = 0; i < size; i++) {
		if (offset >= UART_NREGS || i >= UART_NREGS - offset) {
			p[i] = 0xff;
			continue;
		}
		p[i] = uart_read_reg(u, (unsigned int)offset + i);
		uart_update_irq(u);
		uart_update_rx_space(u);
	}
}

static void
uart_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct uart *u = dev;
	const uint8_t *p = data;
	unsigned int i;

	for (i = 0; i < size; i++) {
		if (offset >= UART_NREGS || i >= UART_NREGS - offset)
			continue;
		uart_write_reg(u, (unsigned int)offset + i, p[i]);
		uart_update_irq(u);
		uart_update_rx_space(u);
	}
}

size_t
uart_receive(struct uart *u, const uint8_t *buf, size_t len)
{
	size_t space = uart_rx_space(u);
	size_t n = len < space ? len : space;
	size_t i;

	for (i = 0; i < n; i++)
		uart_rx_push(u, buf[i]);
	u->rx_bytes += n;
	if (n < len || uart_rx_space(u) == 0)
		u->rx_blocked = true;
	if (n > 0)
		uart_update_irq_on_input(u);
	return n;
}

struct uart *
uart_new(const struct device_host *host, const struct uart_backend *be)
{
	struct uart *u;

	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->host = host;
	u->be = *be;
	/* Power-on divisor: 115200 baud with the PC's 1.8432 MHz clock. */
	u->dll = 1;
	u->dlm = 0;
	u->rx_trigger = uart_trigger_levels[0];
	u->msr = uart_modem_lines(u);
	return u;
}

void
uart_free(struct uart *u)
{
	free(u);
}

#define UART_STATE(nm, ty, m, ...)					\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct uart, m),	\
	    __VA_ARGS__ }

/*
 * What the guest can see of the UART.  Not saved, as they follow from
 * it: the interrupt level and the flow control towards the host (see
 * uart_load).
 */
static const struct dev_state_field uart_state_fields[] = {
	UART_STATE("rx_fifo", DEV_STATE_BYTES, rx_fifo),
	UART_STATE("rx_head", DEV_STATE_U32, rx_head,
	    .max = UART_FIFO_SIZE - 1),
	UART_STATE("rx_count", DEV_STATE_U32, rx_count,
	    .max = UART_FIFO_SIZE),
	UART_STATE("rbr", DEV_STATE_U8, rbr),
	UART_STATE("ier", DEV_STATE_U8, ier, .max = IER_MASK),
	UART_STATE("lcr", DEV_STATE_U8, lcr),
	UART_STATE("mcr", DEV_STATE_U8, mcr, .max = MCR_MASK),
	UART_STATE("lsr_errors", DEV_STATE_U8, lsr_errors, .max = LSR_OE),
	UART_STATE("msr", DEV_STATE_U8, msr),
	UART_STATE("scr", DEV_STATE_U8, scr),
	UART_STATE("dll", DEV_STATE_U8, dll),
	UART_STATE("dlm", DEV_STATE_U8, dlm),
	UART_STATE("fifo_enabled", DEV_STATE_BOOL, fifo_enabled),
	UART_STATE("rx_trigger", DEV_STATE_U32, rx_trigger, .max = 14),
	UART_STATE("thre_pending", DEV_STATE_BOOL, thre_pending),
	UART_STATE("tx_bytes", DEV_STATE_U64, tx_bytes),
	UART_STATE("rx_bytes", DEV_STATE_U64, rx_bytes),
	UART_STATE("irq_rises", DEV_STATE_U64, irq_rises),
	UART_STATE("thre_taken", DEV_STATE_U64, thre_taken),
};

/* What the table's bounds cannot say of a loaded UART. */
static int
uart_state_check(const void *state, struct dev_state_error *err)
{
	const struct uart *u = state;
	unsigned int i;

	if (u->rx_count > uart_rx_capacity(u))
		return dev_state_fail(err, -EINVAL,
		    "uart: %u bytes in a receiver of %u", u->rx_count,
		    uart_rx_capacity(u));
	if (u->lsr_errors & ~LSR_OE)
		return dev_state_fail(err, -EINVAL,
		    "uart: line status errors %#x", u->lsr_errors);
	for (i = 0; i < 4; i++)
		if (u->rx_trigger == uart_trigger_levels[i])
			break;
	if (i == 4)
		return dev_state_fail(err, -EINVAL,
		    "uart: no trigger level %u", u->rx_trigger);
	if ((u->msr & MSR_LINES) != uart_modem_lines(u))
		return dev_state_fail(err, -EINVAL,
		    "uart: modem lines %#x, MCR says %#x", u->msr & MSR_LINES,
		    uart_modem_lines(u));
	return 0;
}

const struct dev_state_table uart_state_table = {
	DEV_STATE_TABLE("uart", 1, struct uart, uart_state_fields),
	.check = uart_state_check,
};

static int
uart_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&uart_state_table, dev, out);
}

/*
 * The interrupt line follows the loaded registers (a rise the UART the
 * state came from counted already); the host is told the receiver has
 * room (if it has), as it may have been waiting on that UART.
 */
static int
uart_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct uart *u = dev;
	bool level;
	int rc;

	rc = dev_state_load(&uart_state_table, u, buf, len, err);
	if (rc < 0)
		return rc;
	level = uart_irq_wanted(u);
	if (level != u->irq_level) {
		u->irq_level = level;
		device_irq_set(u->host, 0, level);
	}
	u->rx_blocked = true;
	uart_update_rx_space(u);
	return 0;
}

static void
uart_ops_free(void *dev)
{
	uart_free(dev);
}

const struct device_ops uart_device_ops = {
	.name = "uart",
	.read = uart_read,
	.write = uart_write,
	.diag = uart_diag,
	.save = uart_save,
	.load = uart_load,
	.free = uart_ops_free,
};
