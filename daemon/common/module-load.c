/* See module-load.h. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "module-load.h"

int
module_load(const char *dir, const char *file, const char *symbol,
    unsigned int abi, size_t size, const char *what, const void **out,
    char *err, size_t errlen)
{
	const struct module_head *m;
	char path[PATH_MAX];
	void *h;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", dir, file);
		return -ENAMETOOLONG;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, errlen, "cannot load the %s module: %s", what,
		    dlerror());
		return -ENOENT;
	}
	m = dlsym(h, symbol);
	if (m == NULL || m->abi != abi || m->size != size) {
		snprintf(err, errlen, "%s is not the %s module of this vmmd "
		    "(%s)", path, what, m == NULL ? "no table" :
		    "another version");
		dlclose(h);
		return -EINVAL;
	}
	*out = m;
	return 0;
}

int
module_dir_self(char *dir, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n;

	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) < 0)
		return -errno;
	exe[n] = '\0';
	if (snprintf(dir, len, "%s", dirname(exe)) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}
