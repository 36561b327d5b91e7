/* The MC146818 RTC and its CMOS (fuzz-device.h). */
#include <string.h>

#include "fuzz-device.h"
#include "rtc.h"

/* What a worker keeps across guest resets; new for every run, so that a
 * run depends on its input alone. */
static struct rtc_battery fuzz_rtc_battery;

static void *
fuzz_rtc_create(struct fake_host *fh)
{
	struct rtc_config cfg = RTC_CONFIG_DEFAULT;

	memset(&fuzz_rtc_battery, 0, sizeof(fuzz_rtc_battery));
	cfg.battery = &fuzz_rtc_battery;
	cfg.backlog_max = 64;
	return rtc_new_config(&fh->host, &cfg);
}

/* The host's side: CMOS bytes the board sets, the wall clock jumping. */
static void
fuzz_rtc_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	if (sel & 1) {
		if (len > 0)
			rtc_cmos_set(dev, sel >> 1, data[0]);
		else
			(void)rtc_cmos_get(dev, sel >> 1);
	} else {
		fh->wall.tv_sec += (int8_t)sel * 3600;
	}
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &rtc_device_ops,
	.ranges = { { 0, 2 } },
	.nranges = 1,
	.create = fuzz_rtc_create,
	.input = fuzz_rtc_input,
};
