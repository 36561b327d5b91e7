/*
 * A kick the guest gave just before a snapshot is the snapshot's too.
 * The vblkc guest (tests/guests/vblkc.c) writes to its virtio-blk disk
 * every 20 ms and waits for each answer.  Its kick is a doorbell: KVM
 * completes the write in the kernel and signals an eventfd, which the
 * worker's loop reads later; the guest takes the kick as given and
 * never rings again for that request.  The test build's hook
 * (VMMD_TEST_SNAPSHOT_LATE, test-hook.h) keeps the loop from running
 * for 200 ms when the snapshot comes, so the guest's next kick waits
 * for the loop, unread, when the guest is paused.  A snapshot that saved
 * the device as it was then would record a device that never saw the
 * request, and the guest restored from it would wait for the answer
 * for ever; the device must take the kick first, and the snapshot wait
 * for the request.  Restored, the guest counts on, without a FAIL.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "state-rounds.h"
#include "vblk-disks.h"

#define COUNT	"vblkc: count "

int
main(void)
{
	struct h_console *con;
	struct h_daemon *d;
	struct json_object *r;
	struct h_conn *c;
	char base[512], dir[600];
	bool ok;

	state_rounds_need_hooks("starting a snapshot late");
	setenv("VMMD_TEST_SNAPSHOT_LATE", "200", 1);
	h_init();
	if (vdisk_qemu_img_path() == NULL) {
		tap_skip_all("qemu-img (qemu-utils) is not installed");
		return 77;
	}
	c = h_setup(&d);
	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	if (vdisk_make_base(base, 0644) != 0 || mkdir(dir, 0700) < 0)
		tap_bail("the base and the snapshot's directory");
	tap_ok(h_create(c, "w", "\"kernel\":\"%s\",\"disks\":["
	    "{\"path\":\"%s\",\"overlay\":true}]", h_env("VMMD_GUEST_VBLKC"),
	    base) == 0 && h_start(c, "w") == 0,
	    "w: created over an overlay, started");
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	tap_ok(h_expect(con, "vblkc: start 0", H_BOOT_MS) == 0 &&
	    h_expect(con, COUNT, 10000) == 0, "w: counts on its disk");
	h_console_close(con);

	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"w\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "w: snapshot, 200 ms late: %s", h_text(r));
	json_object_put(r);
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
	    "\"name\":\"w\"}", dir);
	tap_ok(h_ret(r) != NULL, "w: restored: %s", h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	ok = h_expect(con, COUNT, 10000) == 0 &&
	    h_expect(con, COUNT, 10000) == 0 &&
	    h_expect(con, COUNT, 10000) == 0;
	tap_ok(ok && h_count(con->buf, con->len, "FAIL") == 0 &&
	    h_count(con->buf, con->len, "vblkc: start") == 0,
	    "restored: the guest's request was answered, it counts on");
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	h_close(c);
	return h_done();
}
