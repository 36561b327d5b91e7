/*
 * The VNC server (vnc.h) and screenshots (screenshot.h) as a module the
 * worker loads only for a guest with a screen.  libvncserver brings a
 * dozen libraries with it (gnutls, gcrypt, nettle, gmp, jpeg, lzo, ...):
 * linked into every worker they cost each start their loading and
 * relocation and each guest their pages, display or not.  So they live
 * in vmmd-vnc.so, next to vmmd-worker, whose one exported symbol is the
 * table below; a worker without a display never maps them.
 *
 * The table is versioned: a module from another build (another ABI or
 * table size) is refused with a reason rather than called.  Both sides
 * include this header.
 */
#ifndef VMMD_VNC_MODULE_H
#define VMMD_VNC_MODULE_H

#include <stddef.h>

#include "screenshot.h"
#include "vnc.h"

#define VNC_MODULE_FILE		"vmmd-vnc.so"
#define VNC_MODULE_SYMBOL	"vmmd_vnc_module"
#define VNC_MODULE_ABI		2

/* The functions of vnc.h and screenshot.h, as the module has them. */
struct vnc_module {
	unsigned int abi;	/* VNC_MODULE_ABI */
	size_t size;		/* sizeof(struct vnc_module) */
	int (*vnc_new)(struct event_base *base, const struct vnc_config *cfg,
	    const struct vnc_host *host, struct vnc **out, char *err,
	    size_t errlen);
	void (*vnc_free)(struct vnc *vnc);
	int (*vnc_port)(const struct vnc *vnc);
	int (*vnc_http_port)(const struct vnc *vnc);
	void (*vnc_damage)(struct vnc *vnc);
	void (*vnc_set_mode)(struct vnc *vnc, enum vnc_refresh_mode mode);
	void (*vnc_stats)(const struct vnc *vnc, struct vnc_stats *stats);
	void (*vnc_get_framebuffer)(const struct vnc *vnc,
	    struct vnc_framebuffer *fb);
	int (*screenshot_write_fd)(const struct screenshot_image *img,
	    int fd);
};

/*
 * Load the module from dir (the directory of the running vmmd-worker)
 * and find its table, once per process: later calls return the same
 * table.  The module stays loaded for the life of the process.  0, or
 * -errno with a reason in err (-ENOENT: no module there; -EINVAL: not
 * a module of this build).  The loop's thread, before the sandbox
 * (it opens and maps files).
 */
int	vnc_module_load(const char *dir, const struct vnc_module **out,
	    char *err, size_t errlen);

#endif
