/* See vnc-module.h: the worker's side, which loads the module. */
#include <stdlib.h>

#include "module-load.h"
#include "vnc-module.h"

_Static_assert(offsetof(struct vnc_module, abi) == offsetof(struct
    module_head, abi) && offsetof(struct vnc_module, size) ==
    offsetof(struct module_head, size), "the table starts as module_head");

int
vnc_module_load(const char *dir, const struct vnc_module **out, char *err,
    size_t errlen)
{
	/*
	 * libvncserver links gnutls for TLS viewers (VeNCrypt, wss://),
	 * which vmmd does not offer, and gnutls initializes itself as soon
	 * as it is loaded: its system configuration, p11-kit's modules,
	 * some 800 KiB of every display worker.  Told not to, it waits to
	 * be called, and libvncserver's TLS calls gnutls_global_init()
	 * itself first.  Called before any vCPU runs, and no other thread
	 * of the worker reads the environment: setenv() races nobody.
	 */
	(void)setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 1);
	return module_load(dir, VNC_MODULE_FILE, VNC_MODULE_SYMBOL,
	    VNC_MODULE_ABI, sizeof(**out), "VNC", (const void **)out, err,
	    errlen);
}
