/* See lusernet.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "lnet.h"
#include "lusernet.h"

/* A port number as a string literal, for the guest's commands. */
#define LU_STR_(x)	#x
#define LU_STR(x)	LU_STR_(x)

/* The default route through LU_GATEWAY on LU_UPLINK. */
static int
lu_default_route(void)
{
	struct rtentry rt;
	struct sockaddr_in *sin;
	int s, r = 0;

	memset(&rt, 0, sizeof(rt));
	sin = (struct sockaddr_in *)&rt.rt_dst;
	sin->sin_family = AF_INET;
	sin = (struct sockaddr_in *)&rt.rt_genmask;
	sin->sin_family = AF_INET;
	sin = (struct sockaddr_in *)&rt.rt_gateway;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, LU_GATEWAY, &sin->sin_addr);
	rt.rt_flags = RTF_UP | RTF_GATEWAY;
	rt.rt_dev = (char *)LU_UPLINK;
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (ioctl(s, SIOCADDRT, &rt) < 0)
		r = -errno;
	close(s);
	return r;
}

int
lu_uplink(void)
{
	struct ifreq ifr;
	int fd, r;

	if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", LU_UPLINK);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if ((r = ln_ifup(LU_UPLINK, LU_HOST_ADDR)) < 0 ||
	    (r = lu_default_route()) < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* n random bytes into a new buffer, and their md5sum. */
static uint8_t *
lu_random(size_t n, char sum[static 33])
{
	uint8_t *buf = malloc(n);
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	bool ok = buf != NULL && fd >= 0 && read(fd, buf, n) == (ssize_t)n &&
	    ln_md5(buf, n, sum);

	if (fd >= 0)
		close(fd);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Connects to 127.0.0.1:port and sends n bytes of buf: 0 or -errno. */
static int
lu_send(int port, const uint8_t *buf, size_t n)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port) };
	size_t done = 0;
	ssize_t w;
	int fd, r = 0;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		r = -errno;
	while (r == 0 && done < n) {
		w = send(fd, buf + done, n - done, MSG_NOSIGNAL);
		if (w < 0 && errno != EINTR)
			r = -errno;
		else if (w > 0)
			done += (size_t)w;
	}
	close(fd);
	return r;
}

bool
lu_check_forward(struct lg_vm *vm, lg_check_fn check, size_t bytes,
    const char *when)
{
	char sum[33] = "", *out;
	uint8_t *buf;
	int st = -1, r = -EIO;
	bool ok;

	if (!check(vm, (buf = lu_random(bytes, sum)) != NULL,
	    "%zu random bytes for the forward %s", bytes, when))
		return false;
	/*
	 * The guest's listener, in the background, up before we connect.
	 * Its input is a FIFO the shell holds open: it sends nothing and
	 * never half-closes (passt up to 2023_03_09 resends data into a
	 * connection the guest shut for writing, see vmmd.conf(5)); it
	 * ends when we close.
	 */
	out = lg_cmd(vm, "rm -f /tmp/uin /tmp/ufifo; mkfifo /tmp/ufifo; "
	    "exec 3<>/tmp/ufifo; nc -l -p " LU_STR(LU_GUEST_PORT)
	    " <&3 >/tmp/uin & for i in 1 2 3 4 5 6 7 8 9 10; do "
	    "netstat -ltn | grep -q ':" LU_STR(LU_GUEST_PORT) " ' && break; "
	    "sleep 1; done; netstat -ltn | grep ':" LU_STR(LU_GUEST_PORT) " '",
	    &st, LG_CMD_MS);
	ok = check(vm, st == 0, "the guest listens on port %d %s: %s",
	    LU_GUEST_PORT, when, out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	if (ok)
		r = lu_send(LU_FWD_PORT, buf, bytes);
	out = ok ? lg_cmd(vm, "wait $!; exec 3>&-; md5sum /tmp/uin", &st, LG_CMD_MS) :
	    NULL;
	ok = check(vm, ok && r == 0 && out != NULL && strstr(out, sum) != NULL,
	    "%zu bytes in through 127.0.0.1:%d %s (%s): the guest's md5sum "
	    "matches: %s", bytes, LU_FWD_PORT, when, r == 0 ? "sent" :
	    strerror(-r), out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	free(buf);
	if (!ok && (out = lg_cmd(vm, "ls -l /tmp; df; free; ip -s link show "
	    "eth0", &st, LG_CMD_MS)) != NULL) {
		tap_diag("the guest's files, memory and link: %s", h_flat(out));
		free(out);
	}
	return ok;
}

/* The guest's DHCP lease from passt, with a script of ours. */
static bool
lu_lease(struct lg_vm *vm, lg_check_fn check)
{
	char *out;
	int st = -1;
	bool ok;

	out = lg_cmd(vm, "printf '%s\\n' '#!/bin/sh' "
	    "'[ \"$1\" = bound ] || exit 0' "
	    "'ip addr add $ip/$mask dev $interface' "
	    "'ip route add default via $router' "
	    "'echo \"lease $ip/$mask router $router dns $dns\"' "
	    ">/tmp/dhcp.sh && chmod +x /tmp/dhcp.sh && ip link set eth0 up && "
	    "udhcpc -i eth0 -n -q -t 10 -T 2 -s /tmp/dhcp.sh 2>&1",
	    &st, LG_CMD_MS);
	ok = check(vm, st == 0 && out != NULL && strstr(out, "lease "
	    LU_HOST_ADDR "/24 router " LU_GATEWAY) != NULL,
	    "the guest's DHCP lease from passt is the host's address, "
	    "routed through its gateway: %s", out != NULL ? h_flat(out) :
	    "(no answer)");
	free(out);
	return ok;
}

bool
lu_check_guest(struct lg_vm *vm, lg_check_fn check)
{
	struct ln_xfer x = { .lfd = -1 };
	char sum[33] = "", *out;
	int st = -1;
	bool ok;

	if (!lu_lease(vm, check))
		return false;
	ok = lu_check_forward(vm, check, LN_BYTES, "at first");

	/* Out: the gateway is this host's loopback. */
	if ((x.buf = malloc(LN_BYTES)) == NULL)
		return false;
	x.lfd = ln_listen("127.0.0.1", LU_LOOP_PORT);
	out = x.lfd >= 0 ? ln_with_peer(vm, &x, "dd if=/dev/urandom "
	    "of=/tmp/uout bs=64k count=16 2>/dev/null && md5sum /tmp/uout && "
	    "nc " LU_GATEWAY " " LU_STR(LU_LOOP_PORT) " </tmp/uout", &st) :
	    NULL;
	ok &= check(vm, x.lfd >= 0 && x.err == 0 && x.len == LN_BYTES &&
	    ln_md5(x.buf, x.len, sum) && out != NULL &&
	    strstr(out, sum) != NULL, "%zu bytes out to the gateway %s:%d "
	    "reach the host's 127.0.0.1, md5sum %s as the guest's (%s)",
	    x.len, LU_GATEWAY, LU_LOOP_PORT, sum, out != NULL ? h_flat(out) :
	    strerror(x.err));
	free(out);
	if (x.lfd >= 0)
		close(x.lfd);
	free(x.buf);
	return ok;
}
