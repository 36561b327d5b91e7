/*
 * rtc-ticks: counts the MC146818's interrupts as the reference guest's
 * kernel takes them (IRQ 8, "rtc0" in /proc/interrupts, handled by the
 * rtc-cmos driver).  Built static by build-guest.sh into the guest's
 * initramfs as /usr/bin/rtc-ticks; the linux suite runs it (lrtc.c).
 *
 *   rtc-ticks pie HZ SECONDS
 *	The chip's periodic interrupt at HZ (a power of 2 from 2 to 8192)
 *	for SECONDS of the guest's monotonic clock.  Linux programs the
 *	periodic interrupt for nobody: since 2.6.38 /dev/rtc's
 *	RTC_IRQP_SET and RTC_PIE_ON run on an hrtimer and never reach the
 *	chip.  So this sets register A's rate and register B's PIE itself
 *	(ioperm on ports 0x70-0x71), as a guest that keeps time with the
 *	RTC's ticks does, and rtc-cmos's interrupt handler acknowledges
 *	each tick (it reads register C).  Prints
 *	    rtc-ticks: pie HZ Hz: N interrupts in T us
 *   rtc-ticks uie COUNT
 *	/dev/rtc0's update interrupts (RTC_UIE_ON), read COUNT times after
 *	a first read (which may return an event left from before): the RTC
 *	core makes them with the chip's alarm, so each is one interrupt on
 *	IRQ 8, a second apart.  Prints
 *	    rtc-ticks: uie: COUNT reads, N interrupts in T us
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/rtc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define CMOS_INDEX	0x70
#define CMOS_DATA	0x71
#define REG_A		0x0a
#define REG_B		0x0b
#define REG_B_PIE	0x40
#define REG_A_DV_32K	0x20	/* the 32.768 kHz time base */

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rtc-ticks: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* IRQ 8's count in /proc/interrupts, summed over the CPUs. */
static uint64_t
irq8_count(void)
{
	char line[1024], *p, *end;
	uint64_t n = 0;
	FILE *f;

	if ((f = fopen("/proc/interrupts", "re")) == NULL)
		die("/proc/interrupts: %s", strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		p = line + strspn(line, " ");
		if (strncmp(p, "8:", 2) != 0)
			continue;
		for (p += 2;; p = end) {
			unsigned long long v = strtoull(p, &end, 10);

			if (end == p)
				break;
			n += v;
		}
		fclose(f);
		return n;
	}
	fclose(f);
	die("no IRQ 8 in /proc/interrupts");
}

static uint8_t
cmos_read(uint8_t reg)
{
	outb(reg, CMOS_INDEX);
	return inb(CMOS_DATA);
}

/*
 * Sets a register to value and reads it back until it holds: rtc-cmos's
 * interrupt handler, on either vCPU, may move the index port between
 * our two accesses (it reads register C).
 */
static void
cmos_write_verify(uint8_t reg, uint8_t value)
{
	int i;

	for (i = 0; i < 1000; i++) {
		outb(reg, CMOS_INDEX);
		outb(value, CMOS_DATA);
		if (cmos_read(reg) == value)
			return;
	}
	die("register %#x does not keep %#x", reg, value);
}

static long
number(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max)
		die("bad number '%s'", s);
	return v;
}

static void
pie(long hz, long secs)
{
	uint64_t irq0, irq1, t0, t1;
	uint8_t a, b;
	unsigned int rs;

	/* Rate select n gives 65536 >> n Hz, for n = 3 to 15. */
	for (rs = 3; rs <= 15 && (65536L >> rs) != hz; rs++)
		;
	if (rs > 15)
		die("%ld Hz: a power of 2 from 2 to 8192", hz);
	if (ioperm(CMOS_INDEX, 2, 1) != 0)
		die("ioperm: %s", strerror(errno));
	a = cmos_read(REG_A);
	b = cmos_read(REG_B);
	if (b & REG_B_PIE)
		die("the periodic interrupt is already on");
	cmos_write_verify(REG_A, (uint8_t)((a & 0x80) | REG_A_DV_32K | rs));
	irq0 = irq8_count();
	t0 = now_us();
	cmos_write_verify(REG_B, b | REG_B_PIE);
	usleep((useconds_t)(secs * 1000000));
	cmos_write_verify(REG_B, b & ~REG_B_PIE);
	t1 = now_us();
	/* A tick raised just before PIE went off is handled by now. */
	usleep(100000);
	irq1 = irq8_count();
	cmos_write_verify(REG_A, a & 0x7f);
	printf("rtc-ticks: pie %ld Hz: %llu interrupts in %llu us\n", hz,
	    (unsigned long long)(irq1 - irq0), (unsigned long long)(t1 - t0));
}

static void
uie(long count)
{
	uint64_t irq0, irq1, t0, t1;
	unsigned long data;
	long i;
	int fd;

	if ((fd = open("/dev/rtc0", O_RDONLY | O_CLOEXEC)) < 0)
		die("/dev/rtc0: %s", strerror(errno));
	if (ioctl(fd, RTC_UIE_ON, 0) != 0)
		die("RTC_UIE_ON: %s", strerror(errno));
	if (read(fd, &data, sizeof(data)) != sizeof(data))
		die("read: %s", strerror(errno));
	irq0 = irq8_count();
	t0 = now_us();
	for (i = 0; i < count; i++)
		if (read(fd, &data, sizeof(data)) != sizeof(data))
			die("read: %s", strerror(errno));
	t1 = now_us();
	irq1 = irq8_count();
	if (ioctl(fd, RTC_UIE_OFF, 0) != 0)
		die("RTC_UIE_OFF: %s", strerror(errno));
	close(fd);
	printf("rtc-ticks: uie: %ld reads, %llu interrupts in %llu us\n",
	    count, (unsigned long long)(irq1 - irq0),
	    (unsigned long long)(t1 - t0));
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "pie") == 0)
		pie(number(argv[2], 2, 8192), number(argv[3], 1, 3600));
	else if (argc == 3 && strcmp(argv[1], "uie") == 0)
		uie(number(argv[2], 1, 3600));
	else
		die("usage: rtc-ticks pie HZ SECONDS | uie COUNT");
	return 0;
}
