/*
 * vsock's lifecycle with the demo guest (its data path needs a guest
 * driver: the linux suite's vsock step).  Where this host has no
 * /dev/vhost-vsock (no vhost_vsock module, as on a native software KVM
 * here), a VM with vsock is refused at start with the module named and
 * nothing left running.  Where it has one (the nested test host): a
 * VM gets the lowest free CID, a second the next, a third that names
 * the first's is refused while the first runs, the CIDs survive a
 * restart of vmmd (adoption), and vm.info and vmctl show them; the
 * guest's vsock socket is made when the definition asks, and refused
 * with the reason when vmmd may not make AF_VSOCK sockets.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static int64_t
vsock_cid(struct h_conn *c, const char *name)
{
	struct json_object *r;
	int64_t cid;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	cid = h_int(h_ret(r), "vsock_cid", -1);
	json_object_put(r);
	return cid;
}

static void
test_absent(struct h_conn *c)
{
	struct json_object *r;

	tap_ok(h_create(c, "v1", "\"kernel\":\"%s\",\"vsock\":{}",
	    h_env("VMMD_GUEST_DEMO")) == 0, "a VM with vsock is defined");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"v1\"}");
	tap_ok(h_err_class(r) != NULL && h_err_desc(r) != NULL &&
	    strstr(h_err_desc(r), "/dev/vhost-vsock") != NULL &&
	    strstr(h_err_desc(r), "modprobe vhost_vsock") != NULL,
	    "without /dev/vhost-vsock it does not start, and says which "
	    "module to load: %s", h_text(r));
	json_object_put(r);
	tap_ok(h_vm_pid(c, "v1") == -1, "and no worker runs");
}

static void
test_present(struct h_daemon *d, struct h_conn *c)
{
	struct json_object *r;
	int64_t c1, c2;
	pid_t p1;
	int fd;

	tap_ok(h_create(c, "v1", "\"kernel\":\"%s\",\"vsock\":{}",
	    h_env("VMMD_GUEST_DEMO")) == 0 && h_start(c, "v1") == 0,
	    "a VM with vsock starts");
	tap_ok(h_create(c, "v2", "\"kernel\":\"%s\",\"vsock\":{}",
	    h_env("VMMD_GUEST_DEMO")) == 0 && h_start(c, "v2") == 0,
	    "a second one too");
	c1 = vsock_cid(c, "v1");
	c2 = vsock_cid(c, "v2");
	tap_ok(c1 >= 3 && c2 >= 3 && c1 != c2, "each with a CID of its own "
	    "(%lld, %lld)", (long long)c1, (long long)c2);
	tap_ok(h_create(c, "v3", "\"kernel\":\"%s\",\"vsock\":{\"cid\":%lld}",
	    h_env("VMMD_GUEST_DEMO"), (long long)c1) == 0,
	    "a third naming the first's CID is defined");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"v3\"}");
	tap_ok(h_err_class(r) != NULL && strcmp(h_err_class(r),
	    "bad_state") == 0 && strstr(h_text(r), "v1") != NULL,
	    "and refused while the first runs: %s", h_text(r));
	json_object_put(r);

	p1 = h_vm_pid(c, "v1");
	h_close(c);
	h_daemon_kill(d, SIGKILL);
	tap_ok(h_daemon_spawn(d) == 0 && (c = h_connect(d)) != NULL,
	    "vmmd killed and started again");
	tap_ok(h_vm_pid(c, "v1") == p1 && vsock_cid(c, "v1") == c1 &&
	    vsock_cid(c, "v2") == c2, "the guests are adopted with their "
	    "CIDs");

	/* The socket, where vmmd may make AF_VSOCK sockets. */
	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		close(fd);
	tap_ok(h_stop(c, "v2", true, -1, H_REPLY_MS) == 0 &&
	    h_create(c, "v4", "\"kernel\":\"%s\",\"vsock\":{\"socket\":true}",
	    h_env("VMMD_GUEST_DEMO")) == 0 && h_start(c, "v4") == 0,
	    "a VM with a vsock socket starts");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"v4\"}");
	if (fd >= 0)
		tap_ok(h_str(h_ret(r), "vsock_socket") != NULL &&
		    access(h_str(h_ret(r), "vsock_socket"), W_OK) == 0,
		    "its socket is there: %s", h_text(r));
	else
		tap_ok(h_str(h_ret(r), "vsock_socket") == NULL,
		    "no AF_VSOCK here: no socket, and the guest runs");
	tap_ok(vsock_cid(c, "v4") == c2, "it took the CID the stopped VM "
	    "left (%lld)", (long long)vsock_cid(c, "v4"));
	json_object_put(r);
	h_stop(c, "v1", true, -1, H_REPLY_MS);
	h_stop(c, "v4", true, -1, H_REPLY_MS);
	h_close(c);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	if (access("/dev/vhost-vsock", R_OK | W_OK) < 0) {
		test_absent(c);
		h_close(c);
	} else
		test_present(d, c);
	return h_done();
}
