/*
 * The VNC module's loader (display/vnc-module-load.c) against the real
 * vmmd-vnc.so of this build: it is found and its table works (a server
 * listens, a screenshot is written), and a directory without it or with
 * another library in its place is refused with a reason.  The test does
 * not link libvncserver itself: the module alone brings it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/event.h>

#include "scratch.h"
#include "tap.h"
#include "vnc-module.h"

/* Whether a library whose path holds name is mapped in this process. */
static bool
mapped(const char *name)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (f == NULL)
		tap_bail("/proc/self/maps");
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

static int
no_pages(void *opaque, uint64_t *bitmap)
{
	return 0;
}

static void
test_refusals(void)
{
	const struct vnc_module *m = NULL;
	Dl_info libevent;
	char err[512];
	int ret;

	scratch_mkdir("none", 0755);
	ret = vnc_module_load(scratch_at("none"), &m, err, sizeof(err));
	tap_ok(ret == -ENOENT && strstr(err, "cannot load the VNC module") &&
	    strstr(err, VNC_MODULE_FILE), "no module: -ENOENT (%s)", err);

	/* A library that is not the module (libevent), under its name. */
	if (dladdr((void *)event_base_new, &libevent) == 0 ||
	    libevent.dli_fname == NULL)
		tap_bail("where is libevent?");
	scratch_mkdir("other", 0755);
	scratch_link(libevent.dli_fname, "other/" VNC_MODULE_FILE);
	ret = vnc_module_load(scratch_at("other"), &m, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "is not the VNC module") &&
	    strstr(err, "no table"), "another library: -EINVAL (%s)", err);
	tap_ok(m == NULL, "and no table given");
}

static void
test_module(const char *dir)
{
	const struct vnc_module *m = NULL, *again = NULL;
	struct event_base *base = event_base_new();
	static uint32_t fb[64 * 48];
	struct vnc_host host = { .dirty = no_pages };
	struct vnc_config cfg = {
		.fb = { fb, 64, 48, 64 * 4 },
		.mode = VNC_REFRESH_EVENT,
	};
	struct screenshot_image img = { fb, 64, 48, 64 * 4 };
	struct vnc *vnc = NULL;
	char err[512] = "";
	int fd, ret;

	tap_ok(!mapped("libvncserver"), "libvncserver is not mapped before");
	ret = vnc_module_load(dir, &m, err, sizeof(err));
	tap_ok(ret == 0 && m != NULL, "the module loads from %s %s", dir, err);
	if (m == NULL)
		return;
	tap_ok(mapped(VNC_MODULE_FILE) && mapped("libvncserver"),
	    "now the module and libvncserver are mapped");
	tap_ok(vnc_module_load(dir, &again, err, sizeof(err)) == 0 &&
	    again == m, "a second load gives the same table");
	ret = m->vnc_new(base, &cfg, &host, &vnc, err, sizeof(err));
	tap_ok(ret == 0 && m->vnc_port(vnc) >= 5900 &&
	    m->vnc_port(vnc) < 6000, "its server listens on %d %s",
	    vnc != NULL ? m->vnc_port(vnc) : -1, err);
	m->vnc_free(vnc);
	fd = memfd_create("shot", MFD_CLOEXEC);
	tap_ok(fd >= 0 && m->screenshot_write_fd(&img, fd) == 0 &&
	    lseek(fd, 0, SEEK_CUR) > 8, "its screenshot writes a PNG");
	if (fd >= 0)
		close(fd);
	event_base_free(base);
}

int
main(void)
{
	const char *module = getenv("VMMD_VNC_MODULE");
	char copy[PATH_MAX];

	if (module == NULL)
		tap_bail("VMMD_VNC_MODULE is not set");
	snprintf(copy, sizeof(copy), "%s", module);
	scratch_new("vnc-module");
	test_refusals();
	test_module(dirname(copy));
	return tap_done();
}
