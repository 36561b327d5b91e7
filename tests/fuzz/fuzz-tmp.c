/* See fuzz-tmp.h. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz-tmp.h"

void
fuzz_tmp_dir(const char *name, char *buf, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	else if (tmp == NULL)
		tmp = "/tmp";
	if ((size_t)snprintf(buf, len, "%s/vmmd-fuzz-%s.XXXXXX", tmp, name) >=
	    len || mkdtemp(buf) == NULL) {
		perror(buf);
		abort();
	}
}
