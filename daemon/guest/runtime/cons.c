/*
 * Formatted console output.  Output from several CPUs is serialised line
 * by line with a spinlock taken with interrupts off, so a handler that
 * prints cannot deadlock against the code it interrupted.
 *
 * Conversions: %d %i %u %x %X %c %s %p %%, flags '-' and '0', a field
 * width, and the length modifiers l, ll and z.
 */
#include "rt.h"

static volatile uint32_t cons_lock_word;

struct fmt_out {
	char *buf;		/* NULL: write to the serial port */
	size_t size;
	size_t len;
};

static void
fmt_putc(struct fmt_out *o, char c)
{
	if (o->buf == NULL) {
		if (c == '\n')
			serial_putc('\r');
		serial_putc(c);
	} else if (o->len + 1 < o->size) {
		o->buf[o->len] = c;
	}
	o->len++;
}

static void
fmt_pad(struct fmt_out *o, char c, int n)
{
	for (; n > 0; n--)
		fmt_putc(o, c);
}

static void
fmt_field(struct fmt_out *o, const char *s, int len, int width, bool left,
    char pad)
{
	int i;

	if (!left) {
		/* Zero padding goes after a sign. */
		if (pad == '0' && len > 0 && s[0] == '-') {
			fmt_putc(o, '-');
			s++;
			len--;
			width--;
		}
		fmt_pad(o, pad, width - len);
	}
	for (i = 0; i < len; i++)
		fmt_putc(o, s[i]);
	if (left)
		fmt_pad(o, ' ', width - len);
}

static int
fmt_number(char *end, uint64_t v, unsigned base, bool upper, bool neg)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char *p = end;

	do {
		*--p = digits[v % base];
		v /= base;
	} while (v != 0);
	if (neg)
		*--p = '-';
	return end - p;
}

static void
fmt_core(struct fmt_out *o, const char *fmt, va_list ap)
{
	char num[24];
	const char *s;
	uint64_t u;
	int64_t d;
	int width, lng, n;
	bool left;
	char pad;

	for (; *fmt != '\0'; fmt++) {
		if (*fmt != '%') {
			fmt_putc(o, *fmt);
			continue;
		}
		fmt++;
		left = false;
		pad = ' ';
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		width = 0;
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		lng = 0;
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i':
			d = lng > 0 ? va_arg(ap, int64_t) : va_arg(ap, int);
			u = d < 0 ? -(uint64_t)d : (uint64_t)d;
			n = fmt_number(num + sizeof(num), u, 10, false, d < 0);
			fmt_field(o, num + sizeof(num) - n, n, width, left,
			    pad);
			break;
		case 'u':
		case 'x':
		case 'X':
			u = lng > 0 ? va_arg(ap, uint64_t) :
			    va_arg(ap, unsigned int);
			n = fmt_number(num + sizeof(num), u,
			    *fmt == 'u' ? 10 : 16, *fmt == 'X', false);
			fmt_field(o, num + sizeof(num) - n, n, width, left,
			    pad);
			break;
		case 'p':
			u = (uintptr_t)va_arg(ap, void *);
			n = fmt_number(num + sizeof(num), u, 16, false, false);
			fmt_putc(o, '0');
			fmt_putc(o, 'x');
			fmt_field(o, num + sizeof(num) - n, n, width - 2,
			    left, pad);
			break;
		case 'c':
			num[0] = (char)va_arg(ap, int);
			fmt_field(o, num, 1, width, left, ' ');
			break;
		case 's':
			s = va_arg(ap, const char *);
			if (s == NULL)
				s = "(null)";
			fmt_field(o, s, (int)strlen(s), width, left, ' ');
			break;
		case '%':
			fmt_putc(o, '%');
			break;
		case '\0':
			return;
		default:
			/* Show what was not understood. */
			fmt_putc(o, '%');
			fmt_putc(o, *fmt);
			break;
		}
	}
}

int
cons_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct fmt_out o = { buf, size, 0 };

	fmt_core(&o, fmt, ap);
	if (size > 0)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int
cons_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = cons_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static uint64_t
cons_lock(void)
{
	uint64_t flags = irq_save();

	while (__atomic_exchange_n(&cons_lock_word, 1, __ATOMIC_ACQUIRE) != 0)
		while (cons_lock_word != 0)
			cpu_relax();
	return flags;
}

static void
cons_unlock(uint64_t flags)
{
	__atomic_store_n(&cons_lock_word, 0, __ATOMIC_RELEASE);
	irq_restore(flags);
}

int
cons_vprintf(const char *fmt, va_list ap)
{
	struct fmt_out o = { NULL, 0, 0 };
	uint64_t flags;

	flags = cons_lock();
	fmt_core(&o, fmt, ap);
	cons_unlock(flags);
	return (int)o.len;
}

int
cons_printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = cons_vprintf(fmt, ap);
	va_end(ap);
	return n;
}

/* Raw bytes, no newline translation (the echo guests use this). */
void
cons_write(const char *s, size_t n)
{
	uint64_t flags;

	flags = cons_lock();
	while (n-- > 0)
		serial_putc(*s++);
	cons_unlock(flags);
}

/*
 * For the exception path: take the lock if it can be had soon, otherwise
 * print anyway (the holder may be the CPU that faulted).
 */
void
cons_break_lock(void)
{
	int i;

	for (i = 0; i < 100000; i++)
		if (__atomic_exchange_n(&cons_lock_word, 1,
		    __ATOMIC_ACQUIRE) == 0)
			break;
	__atomic_store_n(&cons_lock_word, 0, __ATOMIC_RELEASE);
}
