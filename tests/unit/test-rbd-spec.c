/*
 * RBD disks as a disk's "path" names them (daemon/common/rbd-spec.c):
 * pool and image with every option and none, the defaults; and what is
 * refused, with a reason: no pool or image, names with '@' or spaces,
 * relative or control-character paths, a bad user, an unknown or
 * repeated option, a lock neither on nor off.
 */
#include <errno.h>
#include <string.h>

#include "rbd-spec.h"
#include "tap.h"

static void
bad(const char *s, const char *why)
{
	struct rbd_spec r;
	char err[256] = "";
	int rc = rbd_spec_parse(s, &r, err, sizeof(err));

	tap_ok(rc == -EINVAL && strstr(err, why) != NULL, "%s refused: %s", s,
	    err);
}

int
main(void)
{
	struct rbd_spec r;
	char err[256] = "", longname[400];
	int rc;

	rc = rbd_spec_parse("rbd:vms/web1", &r, err, sizeof(err));
	tap_ok(rc == 0 && rbd_spec_is("rbd:vms/web1") &&
	    strcmp(r.pool, "vms") == 0 && strcmp(r.image, "web1") == 0 &&
	    r.snap[0] == '\0' && r.id[0] == '\0' && r.conf[0] == '\0' &&
	    r.keyring[0] == '\0' && r.lock, "rbd:vms/web1: the defaults %s",
	    err);
	rc = rbd_spec_parse("rbd:vms/web-1.img,conf=/etc/ceph/other.conf,"
	    "id=vmmd_host-1,keyring=/etc/ceph/k,snap=before-upgrade,lock=off",
	    &r, err, sizeof(err));
	tap_ok(rc == 0 && strcmp(r.image, "web-1.img") == 0 &&
	    strcmp(r.conf, "/etc/ceph/other.conf") == 0 &&
	    strcmp(r.id, "vmmd_host-1") == 0 &&
	    strcmp(r.keyring, "/etc/ceph/k") == 0 &&
	    strcmp(r.snap, "before-upgrade") == 0 && !r.lock,
	    "every option %s", err);
	rc = rbd_spec_parse("rbd:p/i,lock=on", &r, err, sizeof(err));
	tap_ok(rc == 0 && r.lock, "lock=on");
	tap_ok(!rbd_spec_is("/var/lib/rbd:x") && !rbd_spec_is("nbd:unix:/s"),
	    "only \"rbd:\" is an RBD disk");

	bad("rbd:", "expected rbd:POOL/IMAGE");
	bad("rbd:image", "expected rbd:POOL/IMAGE");
	bad("rbd:/image", "no pool name");
	bad("rbd:pool/", "no image name");
	bad("rbd:pool/,conf=/x", "no image name");
	bad("rbd:pool/a/b", "the image name has a character");
	bad("rbd:pool/img@snap", "the image name has a character");
	bad("rbd:po ol/img", "the pool name has a character");
	bad("rbd:pool/img,conf=ceph.conf", "conf=: an absolute path");
	bad("rbd:pool/img,keyring=", "keyring=: an absolute path");
	bad("rbd:pool/img,conf=/a\tb", "control character");
	bad("rbd:pool/img,id=client.admin/x", "id=: letters, digits");
	bad("rbd:pool/img,id=", "id=: 1 to 64 bytes");
	bad("rbd:pool/img,snap=", "no snapshot name");
	bad("rbd:pool/img,snap=a@b", "the snapshot name has a character");
	bad("rbd:pool/img,lock=maybe", "lock=: on or off");
	bad("rbd:pool/img,readonly", "is not an option of an RBD disk");
	bad("rbd:pool/img,cache=writeback", "is not an option of an RBD disk");
	bad("rbd:pool/img,", "is not an option of an RBD disk");
	bad("rbd:pool/img,id=a,id=b", "id= given twice");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "rbd:p/", 6);
	bad(longname, "the image name is longer than 255 bytes");
	return tap_done();
}
