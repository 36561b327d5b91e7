/*
 * The table of vmmd-vnc.so (vnc-module.h): the only symbol the module
 * exports (vnc-module.map).
 */
#include "vnc-module.h"

const struct vnc_module vmmd_vnc_module = {
	.abi = VNC_MODULE_ABI,
	.size = sizeof(struct vnc_module),
	.vnc_new = vnc_new,
	.vnc_free = vnc_free,
	.vnc_port = vnc_port,
	.vnc_http_port = vnc_http_port,
	.vnc_damage = vnc_damage,
	.vnc_set_mode = vnc_set_mode,
	.vnc_stats = vnc_stats,
	.vnc_get_framebuffer = vnc_get_framebuffer,
	.screenshot_write_fd = screenshot_write_fd,
};
