/* See lvsock.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lvsock.h"
#include "tap.h"

#define LV_BYTES		"1048576"
#define LV_HOST_PORT		5001	/* the host's AF_VSOCK listener */
#define LV_FORWARD_PORT		5002	/* NAME.sock_PORT, through vmmd */
#define LV_LINK_PORT		5003	/* a hard link to 5002's socket */
#define LV_SOCKET_MS		30000	/* vmmd's inotify, on a loaded host */
/*
 * vmmd connects a guest only to a socket neither root's nor its own:
 * the listener here runs as root, so its socket is given to nobody (in
 * the test host there is no group vmm: only root names sockets there).
 */
#define LV_NOBODY		65534

/*
 * "sent 1048576, received 1048576, crc A/A" in out (the last such line):
 * both ways whole and equal.
 */
static bool
lv_ok(const char *out)
{
	const char *p = out, *last = NULL;
	unsigned long sent, got;
	unsigned int a, b;

	while (out != NULL && (p = strstr(p, ": sent ")) != NULL)
		last = p++;
	return last != NULL && sscanf(last, ": sent %lu, received %lu, "
	    "crc %x/%x", &sent, &got, &a, &b) == 4 && sent == 1048576 &&
	    got == sent && a == b;
}

/* The host's vsock-echo with args, to its end: whether it passed. */
static bool
lv_host(const char *a1, const char *a2, const char *a3, const char *a4,
    char *line, size_t len)
{
	char *argv[] = { (char *)h_env("VMMD_VSOCK_ECHO"), (char *)a1,
		(char *)a2, (char *)a3, (char *)a4, NULL };
	struct h_proc p;
	int st;
	bool ok;

	st = h_run(&p, NULL, LG_CMD_MS, argv);
	ok = st == 0 && lv_ok(p.obuf);
	snprintf(line, len, "%s%s", p.obuf != NULL ? p.obuf : "",
	    p.ebuf != NULL ? p.ebuf : "");
	h_proc_free(&p);
	return ok;
}

/* The guest's vsock-echo send to the host's port: whether it passed. */
static bool
lv_guest_send(struct lg_vm *vm, unsigned int port, char *line, size_t len)
{
	char cmd[128], *out;
	int st = -1;
	bool ok;

	snprintf(cmd, sizeof(cmd), "vsock-echo send 2 %u " LV_BYTES, port);
	out = lg_cmd(vm, cmd, &st, LG_CMD_MS);
	ok = st == 0 && lv_ok(out);
	snprintf(line, len, "%s", out != NULL ? out : "(no answer)");
	free(out);
	return ok;
}

/*
 * lv_guest_send until it passes, at most LV_SOCKET_MS: vmmd takes up a
 * socket that appeared beside the guest's on its own time.
 */
static bool
lv_guest_send_once_there(struct lg_vm *vm, unsigned int port, char *line,
    size_t len)
{
	double deadline = h_now_ms() + LV_SOCKET_MS;

	while (!lv_guest_send(vm, port, line, len)) {
		if (h_now_ms() >= deadline)
			return false;
		h_sleep_ms(500);
	}
	return true;
}

/* A host listener (vsock-echo listen/unix-listen) in the background. */
static bool
lv_listener(struct h_proc *p, const char *mode, const char *where)
{
	char *argv[] = { (char *)h_env("VMMD_VSOCK_ECHO"), (char *)mode,
		(char *)where, NULL };

	if (h_spawn(p, argv) < 0)
		return false;
	return h_proc_expect(p, "listening on", LG_CMD_MS) == 0;
}

bool
lv_check_guest(struct lg_vm *vm, lg_check_fn check, uint32_t cid,
    const char *sock)
{
	char cids[16], port[16], line[1024], *out, fwd[4200], lnk[4200];
	struct h_proc l1 = { .pid = -1, .in = -1, .out = -1, .err = -1 };
	struct h_proc l2 = l1;
	struct stat st;
	bool all = true;
	int s = -1;

	snprintf(cids, sizeof(cids), "%u", cid);
	snprintf(port, sizeof(port), "%u", LV_GUEST_PORT);
	/* Until it says it listens (at most 30 s), not a fixed second. */
	out = lg_cmd(vm, "ls /dev/vsock && (vsock-echo listen 1234 "
	    ">/tmp/vsock.log 2>&1 &) && i=0 && until grep -q listening "
	    "/tmp/vsock.log || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); "
	    "done; cat /tmp/vsock.log", &s, LG_CMD_MS);
	all &= check(vm, s == 0 && out != NULL && strstr(out,
	    "listening on 1234") != NULL, "vsock: the guest has /dev/vsock "
	    "and listens on port %u", LV_GUEST_PORT);
	free(out);

	all &= check(vm, lv_host("send", cids, port, LV_BYTES, line,
	    sizeof(line)), "vsock: host to guest by AF_VSOCK, CID %u: 1 MiB "
	    "each way, whole (%s)", cid, line);
	all &= check(vm, lv_host("unix", sock, port, LV_BYTES, line,
	    sizeof(line)), "vsock: host to guest through %s with CONNECT: "
	    "1 MiB each way, whole (%s)", sock, line);

	snprintf(port, sizeof(port), "%u", LV_HOST_PORT);
	all &= check(vm, lv_listener(&l1, "listen", port) &&
	    lv_guest_send(vm, LV_HOST_PORT, line, sizeof(line)),
	    "vsock: guest to host by AF_VSOCK port %u: 1 MiB each way, "
	    "whole (%s)", LV_HOST_PORT, line);

	/* vmmd listens on the guest's port once the socket is there. */
	snprintf(fwd, sizeof(fwd), "%s_%u", sock, LV_FORWARD_PORT);
	all &= check(vm, lv_listener(&l2, "unix-listen", fwd) &&
	    stat(fwd, &st) == 0 && chown(fwd, LV_NOBODY, LV_NOBODY) == 0 &&
	    lv_guest_send_once_there(vm, LV_FORWARD_PORT, line, sizeof(line)),
	    "vsock: guest to host port %u through vmmd to %s: 1 MiB each "
	    "way, whole (%s)", LV_FORWARD_PORT, fwd, line);

	/* Never to a hard link (whoever's), nor to root's socket. */
	snprintf(lnk, sizeof(lnk), "%s_%u", sock, LV_LINK_PORT);
	all &= check(vm, link(fwd, lnk) == 0 && (h_sleep_ms(1000), true) &&
	    !lv_guest_send(vm, LV_LINK_PORT, line, sizeof(line)),
	    "vsock: guest to host port %u, a hard link to %s: refused (%s)",
	    LV_LINK_PORT, fwd, line);
	unlink(lnk);
	all &= check(vm, chown(fwd, 0, 0) == 0 &&
	    !lv_guest_send(vm, LV_FORWARD_PORT, line, sizeof(line)),
	    "vsock: guest to host port %u, the socket root's: refused (%s)",
	    LV_FORWARD_PORT, line);
	if (l1.pid > 0)
		kill(l1.pid, SIGTERM);
	if (l2.pid > 0)
		kill(l2.pid, SIGTERM);
	h_proc_wait(&l1, 5000);
	h_proc_wait(&l2, 5000);
	h_proc_free(&l1);
	h_proc_free(&l2);
	unlink(fwd);
	return all;
}
