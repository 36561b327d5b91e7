/* See lnet.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "lnet.h"
#include "tap.h"

#define LN_PORT_TO_GUEST	5001
#define LN_PORT_FROM_GUEST	5002

int
ln_ifup(const char *name, const char *addr)
{
	struct ifreq ifr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	int s, r = 0;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (addr != NULL) {
		sin->sin_family = AF_INET;
		inet_pton(AF_INET, addr, &sin->sin_addr);
		if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
			r = -errno;
		inet_pton(AF_INET, "255.255.255.0", &sin->sin_addr);
		if (r == 0 && ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
			r = -errno;
	}
	if (r == 0 && ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		r = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (r == 0 && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		r = -errno;
	close(s);
	return r;
}

int
ln_enter(void)
{
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	return ln_ifup("lo", NULL);
}

bool
ln_host_up(struct lg_vm *vm, lg_check_fn check)
{
	int r = ln_ifup(LN_TAP, LN_HOST_ADDR);

	return check(vm, r == 0, "TAP %s up with %s/24 (%s)", LN_TAP,
	    LN_HOST_ADDR, r == 0 ? "ok" : strerror(-r));
}

void
ln_check_second(struct lg_vm *vm, lg_check_fn check)
{
	int r = ln_ifup(LN_TAP1, LN_HOST1_ADDR), st = -1;
	char *out;

	if (!check(vm, r == 0, "TAP %s up with %s/24 (%s)", LN_TAP1,
	    LN_HOST1_ADDR, r == 0 ? "ok" : strerror(-r)))
		return;
	out = lg_cmd(vm, "ip link set eth1 up && ip addr add " LN_GUEST1_ADDR
	    "/24 dev eth1 && cat /sys/class/net/eth1/address", &st, LG_CMD_MS);
	check(vm, st == 0 && out != NULL && strstr(out, LN_MAC1) != NULL,
	    "the guest's second card is eth1, %s, up with %s: %s", LN_MAC1,
	    LN_GUEST1_ADDR, out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	out = lg_cmd(vm, "ping -c 3 -W 10 " LN_HOST1_ADDR, &st, LG_CMD_MS);
	check(vm, st == 0 && out != NULL && strstr(out, " 0% packet loss"),
	    "the guest pings the host through eth1: %s",
	    out != NULL ? h_flat(out) : "-");
	free(out);
}

/* The thread of ln_with_peer(). */
static void *
ln_xfer_run(void *arg)
{
	struct ln_xfer *x = arg;
	struct pollfd p = { .fd = x->lfd, .events = POLLIN };
	size_t done = 0;
	ssize_t n;
	int fd;

	x->err = ETIMEDOUT;
	if (poll(&p, 1, LG_BOOT_MS) != 1)
		return NULL;
	if ((fd = accept4(x->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		x->err = errno;
		return NULL;
	}
	for (;;) {
		if (x->send)
			n = done < x->len ? write(fd, x->buf + done,
			    x->len - done) : 0;
		else
			n = done < LN_BYTES ? read(fd, x->buf + done,
			    LN_BYTES - done) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	x->err = n < 0 ? errno : 0;
	if (!x->send)
		x->len = done;
	close(fd);		/* the guest's nc ends on our close */
	return NULL;
}

int
ln_listen(const char *addr, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port) };
	int fd, one = 1;

	inet_pton(AF_INET, addr, &sin.sin_addr);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, 1) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

bool
ln_md5(const uint8_t *buf, size_t len, char sum[static 33])
{
	char path[] = "/tmp/vmmd-net-XXXXXX", cmd[64];
	FILE *p;
	int fd;
	bool ok;

	if ((fd = mkstemp(path)) < 0)
		return false;
	ok = write(fd, buf, len) == (ssize_t)len;
	close(fd);
	snprintf(cmd, sizeof(cmd), "md5sum %s", path);
	if (ok && (p = popen(cmd, "r")) != NULL) {
		ok = fscanf(p, "%32s", sum) == 1 && strlen(sum) == 32;
		pclose(p);
	} else
		ok = false;
	unlink(path);
	return ok;
}

char *
ln_with_peer(struct lg_vm *vm, struct ln_xfer *x, const char *cmd, int *st)
{
	pthread_t t;
	char *out;

	if (pthread_create(&t, NULL, ln_xfer_run, x) != 0)
		return NULL;
	out = lg_cmd(vm, cmd, st, LG_BOOT_MS);
	pthread_join(t, NULL);
	return out;
}

void
ln_check_guest(struct lg_vm *vm, lg_check_fn check)
{
	struct ln_xfer x = { 0 };
	char host_sum[40] = "", cmd[256], *out;
	uint8_t *buf = malloc(LN_BYTES);
	int st = -1, fd;

	out = lg_cmd(vm, "ip link set eth0 up && ip addr add " LN_GUEST_ADDR
	    "/24 dev eth0 && cat /sys/class/net/eth0/address", &st, LG_CMD_MS);
	check(vm, st == 0, "the guest's eth0 up with %s: %s", LN_GUEST_ADDR,
	    out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	out = lg_cmd(vm, "ping -c 3 -W 10 " LN_HOST_ADDR, &st, LG_CMD_MS);
	check(vm, st == 0 && out != NULL && strstr(out, " 0% packet loss"),
	    "the guest pings the host: %s", out != NULL ? h_flat(out) : "-");
	free(out);
	if (buf == NULL || (fd = open("/dev/urandom", O_RDONLY)) < 0)
		goto out;
	x.len = (size_t)read(fd, buf, LN_BYTES);
	close(fd);
	if (!check(vm, x.len == LN_BYTES && ln_md5(buf, LN_BYTES, host_sum), "1 MiB of random bytes here: %s", host_sum))
		goto out;

	/* Host to guest. */
	x.lfd = ln_listen(LN_HOST_ADDR, LN_PORT_TO_GUEST);
	x.send = true;
	x.buf = buf;
	snprintf(cmd, sizeof(cmd), "nc %s %d >/tmp/net-in; md5sum /tmp/net-in",
	    LN_HOST_ADDR, LN_PORT_TO_GUEST);
	out = x.lfd >= 0 ? ln_with_peer(vm, &x, cmd, &st) : NULL;
	check(vm, x.lfd >= 0 && x.err == 0 && out != NULL &&
	    strstr(out, host_sum) != NULL,
	    "host to guest over TCP: the guest's md5sum matches (%s)",
	    out != NULL ? h_flat(out) : strerror(x.err));
	free(out);
	if (x.lfd >= 0)
		close(x.lfd);

	/* Guest to host: bytes of the guest's own. */
	x = (struct ln_xfer){ .buf = buf };
	x.lfd = ln_listen(LN_HOST_ADDR, LN_PORT_FROM_GUEST);
	snprintf(cmd, sizeof(cmd), "dd if=/dev/urandom of=/tmp/net-out bs=64k "
	    "count=16 2>/dev/null && md5sum /tmp/net-out && "
	    "nc %s %d </tmp/net-out", LN_HOST_ADDR, LN_PORT_FROM_GUEST);
	out = x.lfd >= 0 ? ln_with_peer(vm, &x, cmd, &st) : NULL;
	check(vm, x.lfd >= 0 && x.err == 0 && x.len == LN_BYTES &&
	    ln_md5(buf, x.len, host_sum) && out != NULL &&
	    strstr(out, host_sum) != NULL,
	    "guest to host over TCP: %zu bytes, md5sum %s matches the "
	    "guest's (%s)", x.len, host_sum, out != NULL ? h_flat(out) :
	    strerror(x.err));
	free(out);
	if (x.lfd >= 0)
		close(x.lfd);
out:
	free(buf);
}
