/* The library's errors: -errno returned, a sentence for the user in err. */
#ifndef VMMD_SNAP_ERR_H
#define VMMD_SNAP_ERR_H

#include <stdarg.h>
#include <stdio.h>

static inline int __attribute__((format(printf, 4, 5)))
snap_fail(int ret, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

#endif
