/* See vnc-module.h: the worker's side, which loads the module. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "vnc-module.h"

int
vnc_module_load(const char *dir, const struct vnc_module **out, char *err,
    size_t errlen)
{
	char path[PATH_MAX];
	const struct vnc_module *m;
	void *h;

	if (snprintf(path, sizeof(path), "%s/%s", dir, VNC_MODULE_FILE) >=
	    (int)sizeof(path)) {
		snprintf(err, errlen, "%s/%s: path too long", dir,
		    VNC_MODULE_FILE);
		return -ENAMETOOLONG;
	}
	/*
	 * Bound now, so that nothing is resolved later under the
	 * sandbox; dlopen() counts references, so a second load (a second
	 * display in one process, a test) finds the same module.
	 */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, errlen, "cannot load the VNC module: %s",
		    dlerror());
		return -ENOENT;
	}
	m = dlsym(h, VNC_MODULE_SYMBOL);
	if (m == NULL || m->abi != VNC_MODULE_ABI ||
	    m->size != sizeof(*m)) {
		snprintf(err, errlen, "%s is not the VNC module of this "
		    "vmmd (%s)", path, m == NULL ? "no table" :
		    "another version");
		dlclose(h);
		return -EINVAL;
	}
	*out = m;
	return 0;
}
