/* See boot-dev.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "boot-dev.h"

static const char *const boot_dev_words[] = {
	[BOOT_DEV_CDROM] = "cdrom",
	[BOOT_DEV_DISK] = "disk",
	[BOOT_DEV_NET] = "net",
};

int
boot_dev_parse(const char *name, struct boot_dev *dev)
{
	for (size_t k = 0; k < sizeof(boot_dev_words) /
	    sizeof(boot_dev_words[0]); k++) {
		size_t len = strlen(boot_dev_words[k]);

		if (strncmp(name, boot_dev_words[k], len) != 0)
			continue;
		/* One digit, no sign, no leading zero to spell it twice. */
		if (name[len] < '0' || name[len] >= '0' + BOOT_DEV_INDEX_MAX ||
		    name[len + 1] != '\0')
			return -EINVAL;
		dev->kind = (uint8_t)k;
		dev->index = (uint8_t)(name[len] - '0');
		return 0;
	}
	return -EINVAL;
}

void
boot_dev_name(const struct boot_dev *dev, char *buf, size_t size)
{
	const char *w = dev->kind < sizeof(boot_dev_words) /
	    sizeof(boot_dev_words[0]) ? boot_dev_words[dev->kind] : "?";

	snprintf(buf, size, "%s%u", w, (unsigned int)dev->index);
}

int
boot_order_parse(const char *text, struct boot_dev *devs, unsigned int *n)
{
	char name[BOOT_DEV_NAME_MAX];
	const char *p = text, *end;
	size_t len;

	*n = 0;
	if (*text == '\0')
		return 0;
	for (;;) {
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		if (len == 0 || len >= sizeof(name) || *n == BOOT_ORDER_MAX)
			return -EINVAL;
		memcpy(name, p, len);
		name[len] = '\0';
		if (boot_dev_parse(name, &devs[*n]) < 0)
			return -EINVAL;
		for (unsigned int i = 0; i < *n; i++)
			if (devs[i].kind == devs[*n].kind &&
			    devs[i].index == devs[*n].index)
				return -EINVAL;
		(*n)++;
		if (end == NULL)
			return 0;
		p = end + 1;
	}
}

int
boot_order_text(const struct boot_dev *devs, unsigned int n, char *buf,
    size_t size)
{
	char name[BOOT_DEV_NAME_MAX];
	size_t used = 0, len;

	if (size == 0)
		return -ENOSPC;
	buf[0] = '\0';
	for (unsigned int i = 0; i < n; i++) {
		boot_dev_name(&devs[i], name, sizeof(name));
		len = strlen(name);
		if (used + (i > 0) + len + 1 > size)
			return -ENOSPC;
		if (i > 0)
			buf[used++] = ',';
		memcpy(buf + used, name, len + 1);
		used += len;
	}
	return 0;
}
