/* See lmigrate.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "lmigrate.h"
#include "lnet.h"
#include "tap.h"

/* The veth pair between the namespaces, and its addresses. */
#define LM_VETH_HERE	"vmmdmig0"
#define LM_VETH_FAR	"vmmdmig1"
#define LM_ADDR_HERE	"10.0.9.1"
#define LM_ADDR_FAR	"10.0.9.2"
#define LM_SSH_PORT	22

/*
 * A bound against a hang, not a speed: the guest's 256 MiB through
 * ssh in the emulated test host, in a few rounds.
 */
#define LM_MIGRATE_MS	900000
/* Replies the ping may miss while the guest moves. */
#define LM_LOST_MAX	10

/* What the loop writes: "N vmmd-mig-line", N from 1 (as lsnapshot.c). */
#define LM_WORD		"vmmd-mig-line"
#define LM_LOOP		"i=0; while :; do i=$((i + 1)); echo \"$i " LM_WORD \
			"\"; [ $((i % 100)) = 0 ] && sleep 1; done " \
			">>/mnt/count & echo $! >/tmp/loop.pid"
#define LM_AWK		"awk 'BEGIN { bad = 0 } { if (!bad && (NF != 2 || " \
			"$1 != NR || $2 != \"" LM_WORD "\")) bad = NR; " \
			"last = $1 } END { print \"lines\", NR, \"bad\", " \
			"bad, \"last\", last }' /mnt/count"

static char lm_sshd[512], lm_ssh[512], lm_keygen[512];

const char *
lm_missing(void)
{
	const char *v = getenv("VMMD_SSHD");

	if (v == NULL || *v == '\0' || access(v, X_OK) != 0)
		return "no sshd (VMMD_SSHD: tests/linux/build-guest.sh "
		    "unpacks Debian's openssh-server into its cache)";
	snprintf(lm_sshd, sizeof(lm_sshd), "%s", v);
	if (h_which("ssh", lm_ssh, sizeof(lm_ssh)) == NULL ||
	    h_which("ssh-keygen", lm_keygen, sizeof(lm_keygen)) == NULL)
		return "no ssh or ssh-keygen (openssh-client)";
	/* sshd's privilege separation runs as this user. */
	if (getpwnam("sshd") == NULL)
		return "no user sshd for sshd's privilege separation";
	return NULL;
}

/* Writes text into dir/name (mode 0600); the path into path. */
static int
lm_write(const char *dir, const char *name, const char *text, char *path,
    size_t len)
{
	FILE *f;
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) < 0 || (f = fdopen(fd, "w")) == NULL) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

/* name's MAC set to mac (before it is up); 0 or -errno. */
static int
lm_ifmac(const char *name, const char *mac)
{
	struct ifreq ifr;
	unsigned int b[6];
	int s, r = 0;

	if (sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3],
	    &b[4], &b[5]) != 6)
		return -EINVAL;
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	for (int i = 0; i < 6; i++)
		ifr.ifr_hwaddr.sa_data[i] = (char)b[i];
	if (ioctl(s, SIOCSIFHWADDR, &ifr) < 0)
		r = -errno;
	close(s);
	return r;
}

/*
 * A netlink attribute of len bytes of data at the end of the message
 * in msg (cap bytes): its offset in msg.
 */
static size_t
lm_attr(char *msg, size_t cap, int type, const void *data, size_t len)
{
	struct nlmsghdr *n = (struct nlmsghdr *)(void *)msg;
	size_t at = NLMSG_ALIGN(n->nlmsg_len);
	struct rtattr a;

	if (at + RTA_SPACE(len) > cap)
		tap_bail("netlink request too long");
	a.rta_type = (unsigned short)type;
	a.rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(msg + at, &a, sizeof(a));
	if (len > 0)
		memcpy(msg + at + RTA_LENGTH(0), data, len);
	n->nlmsg_len = (uint32_t)(at + RTA_SPACE(len));
	return at;
}

/* The nest at offset at in msg: its length, now that its attributes
 * follow it. */
static void
lm_nest_end(char *msg, size_t at)
{
	struct nlmsghdr *n = (struct nlmsghdr *)(void *)msg;
	unsigned short len = (unsigned short)(n->nlmsg_len - at);

	memcpy(msg + at + offsetof(struct rtattr, rta_len), &len,
	    sizeof(len));
}

/*
 * A veth pair made here: name here, peer in the namespace peer_ns
 * (RTM_NEWLINK, as ip link add NAME type veth peer name PEER netns).
 * 0 or -errno.
 */
static int
lm_veth(const char *name, const char *peer, int peer_ns)
{
	/* Aligned for the header; the attributes are written by bytes. */
	union {
		struct nlmsghdr n;
		char buf[640];
	} req;
	struct ifinfomsg ifi;
	size_t info, data, pa;
	union {
		struct nlmsghdr n;
		char buf[1024];
	} ans;
	struct nlmsgerr *e;
	uint32_t fd = (uint32_t)peer_ns;
	ssize_t got;
	int s, r;

	memset(&req, 0, sizeof(req));
	memset(&ifi, 0, sizeof(ifi));
	ifi.ifi_family = AF_UNSPEC;
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof(ifi));
	req.n.nlmsg_type = RTM_NEWLINK;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL |
	    NLM_F_ACK;
	memcpy(req.buf + NLMSG_HDRLEN, &ifi, sizeof(ifi));
	lm_attr(req.buf, sizeof(req), IFLA_IFNAME, name, strlen(name) + 1);
	info = lm_attr(req.buf, sizeof(req), IFLA_LINKINFO, NULL, 0);
	lm_attr(req.buf, sizeof(req), IFLA_INFO_KIND, "veth", 5);
	data = lm_attr(req.buf, sizeof(req), IFLA_INFO_DATA, NULL, 0);
	/* The peer: its own ifinfomsg, then its attributes. */
	pa = lm_attr(req.buf, sizeof(req), VETH_INFO_PEER, &ifi, sizeof(ifi));
	lm_attr(req.buf, sizeof(req), IFLA_IFNAME, peer, strlen(peer) + 1);
	lm_attr(req.buf, sizeof(req), IFLA_NET_NS_FD, &fd, sizeof(fd));
	lm_nest_end(req.buf, pa);
	lm_nest_end(req.buf, data);
	lm_nest_end(req.buf, info);

	if ((s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
	    NETLINK_ROUTE)) < 0)
		return -errno;
	if (send(s, req.buf, req.n.nlmsg_len, 0) < 0) {
		r = -errno;
		close(s);
		return r;
	}
	got = recv(s, ans.buf, sizeof(ans), 0);
	r = got < 0 ? -errno : -EPROTO;
	close(s);
	/* The answer to NLM_F_ACK: an error message, 0 for success. */
	if (got >= (ssize_t)NLMSG_LENGTH(sizeof(*e)) &&
	    ans.n.nlmsg_type == NLMSG_ERROR) {
		e = NLMSG_DATA(&ans.n);
		r = e->error;
	}
	return r;
}

/*
 * LN_TAP made here, persistent, with the hosts' MAC and address, up:
 * the target's vmmd opens it when the guest arrives.  0 or -errno.
 */
static int
lm_tap(void)
{
	struct ifreq ifr;
	int fd, r = 0;

	if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	/* As vmmd asks for it (daemon/supervisor/vm-files.c). */
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", LN_TAP);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, 1) < 0)
		r = -errno;
	close(fd);
	if (r == 0)
		r = lm_ifmac(LN_TAP, LM_HOST_MAC);
	if (r == 0)
		r = ln_ifup(LN_TAP, LN_HOST_ADDR);
	return r;
}

/* Whether addr:port takes a TCP connection within ms. */
static bool
lm_listening(const char *addr, int port, int ms)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port) };
	double t0 = h_now_ms();
	int fd, r;

	inet_pton(AF_INET, addr, &sin.sin_addr);
	do {
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			return false;
		r = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		close(fd);
		if (r == 0)
			return true;
		h_sleep_ms(200);
	} while (h_now_ms() - t0 < ms);
	return false;
}

/* prog ARGS... to its end; whether it exited 0 (its output if not). */
static bool
lm_run(char *const argv[])
{
	struct h_proc p;
	int rc = h_run(&p, NULL, LG_CMD_MS, argv);

	if (rc != 0)
		tap_diag("%s: exit %d: %s %s", argv[0], rc, p.obuf != NULL ?
		    h_flat(p.obuf) : "", p.ebuf != NULL ? h_flat(p.ebuf) : "");
	h_proc_free(&p);
	return rc == 0;
}

/* Keys and configurations in f->dir: 0, or -1 with a diagnostic. */
static int
lm_files(struct lm_far *f)
{
	char path[256], key[256], text[2048], vmctl_dir[512], *slash, *pub;
	size_t len;
	int r;

	snprintf(key, sizeof(key), "%s/host_key", f->dir);
	if (!lm_run((char *[]){ lm_keygen, "-q", "-t", "ed25519", "-N", "",
	    "-f", key, NULL }))
		return -1;
	snprintf(key, sizeof(key), "%s/id", f->dir);
	if (!lm_run((char *[]){ lm_keygen, "-q", "-t", "ed25519", "-N", "",
	    "-f", key, NULL }))
		return -1;
	snprintf(path, sizeof(path), "%s/id.pub", f->dir);
	if ((pub = h_read_file(path, &len)) == NULL) {
		tap_diag("%s: cannot read it", path);
		return -1;
	}
	r = lm_write(f->dir, "authorized_keys", pub, path, sizeof(path));
	free(pub);
	if (r < 0)
		return -1;

	/* sshd runs the command with this build's vmctl first in PATH. */
	snprintf(vmctl_dir, sizeof(vmctl_dir), "%s", h_env("VMCTL_BIN"));
	if ((slash = strrchr(vmctl_dir, '/')) != NULL)
		*slash = '\0';
	snprintf(text, sizeof(text),
	    "# sshd of the linux suite's migrate step\n"
	    "ListenAddress %s\n"
	    "Port %d\n"
	    "HostKey %s/host_key\n"
	    "AuthorizedKeysFile %s/authorized_keys\n"
	    "PermitRootLogin prohibit-password\n"
	    "PasswordAuthentication no\n"
	    "KbdInteractiveAuthentication no\n"
	    /* The test's directory is under /tmp, world-writable. */
	    "StrictModes no\n"
	    "UsePAM no\n"
	    "UseDNS no\n"
	    "PrintMotd no\n"
	    "PidFile none\n"
	    "SetEnv PATH=%s:/usr/local/bin:/usr/bin:/bin\n",
	    LM_ADDR_FAR, LM_SSH_PORT, f->dir, f->dir, vmctl_dir);
	if (lm_write(f->dir, "sshd_config", text, path, sizeof(path)) < 0)
		return -1;
	snprintf(text, sizeof(text),
	    "# ssh of the linux suite's migrate step\n"
	    "Host *\n"
	    "  Port %d\n"
	    "  IdentityFile %s/id\n"
	    "  IdentitiesOnly yes\n"
	    "  UserKnownHostsFile %s/known_hosts\n"
	    "  StrictHostKeyChecking accept-new\n"
	    "  BatchMode yes\n"
	    "  LogLevel ERROR\n",
	    LM_SSH_PORT, f->dir, f->dir);
	if (lm_write(f->dir, "ssh_config", text, path, sizeof(path)) < 0)
		return -1;
	/* vmctl migrate runs ssh with it (vmctl(1): VMCTL_SSH). */
	snprintf(text, sizeof(text), "%s -F %s", lm_ssh, path);
	setenv("VMCTL_SSH", text, 1);
	return 0;
}

bool
lm_far_start(struct lm_far *f, struct lg_vm *vm, lg_check_fn check)
{
	char tmpl[] = "/tmp/vmmd-mig-XXXXXX", cfg[256];
	int r = 0;

	f->ns_here = f->ns_far = -1;
	f->d = NULL;
	f->c = NULL;
	f->sshd_run = false;
	f->dir[0] = '\0';
	if (!check(vm, mkdtemp(tmpl) != NULL, "a directory for sshd's and "
	    "ssh's keys and configurations"))
		return false;
	snprintf(f->dir, sizeof(f->dir), "%s", tmpl);
	if (!check(vm, lm_files(f) == 0, "host key, client key and "
	    "configurations made with ssh-keygen in %s", f->dir))
		return false;
	/* sshd's privilege separation directory. */
	if (mkdir("/run/sshd", 0755) < 0 && errno != EEXIST)
		r = -errno;

	/* Into a namespace of the target's; back here afterwards. */
	if (r == 0 && (f->ns_here = open("/proc/self/ns/net",
	    O_RDONLY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 && unshare(CLONE_NEWNET) < 0)
		r = -errno;
	if (r == 0 && (f->ns_far = open("/proc/self/ns/net",
	    O_RDONLY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0)
		r = ln_ifup("lo", NULL);
	if (r == 0 && (r = lm_veth(LM_VETH_FAR, LM_VETH_HERE,
	    f->ns_here)) == 0)
		r = ln_ifup(LM_VETH_FAR, LM_ADDR_FAR);
	if (r == 0)
		r = lm_tap();
	if (!check(vm, r == 0, "the target's network namespace: a veth pair "
	    "to it (%s here, %s there), %s up there with %s and %s (%s)",
	    LM_ADDR_HERE, LM_ADDR_FAR, LN_TAP, LN_HOST_ADDR, LM_HOST_MAC,
	    r == 0 ? "ok" : strerror(-r))) {
		if (f->ns_here >= 0)
			setns(f->ns_here, CLONE_NEWNET);
		return false;
	}
	/* Both started in there: they stay there. */
	f->d = h_daemon_start();
	snprintf(cfg, sizeof(cfg), "%s/sshd_config", f->dir);
	r = h_spawn(&f->sshd, (char *[]){ lm_sshd, "-D", "-e", "-f", cfg,
	    NULL });
	f->sshd_run = r >= 0;
	if (setns(f->ns_here, CLONE_NEWNET) < 0)
		tap_bail("back into the scenarios' namespace: %s",
		    strerror(errno));
	if (!check(vm, r >= 0, "sshd started in the target's namespace"))
		return false;
	r = ln_ifup(LM_VETH_HERE, LM_ADDR_HERE);
	if (!check(vm, r == 0, "%s up here with %s (%s)", LM_VETH_HERE,
	    LM_ADDR_HERE, r == 0 ? "ok" : strerror(-r)))
		return false;
	if ((f->c = h_connect(f->d)) == NULL)
		tap_bail("cannot connect to the target's vmmd");
	if (!check(vm, lm_listening(LM_ADDR_FAR, LM_SSH_PORT, LG_CMD_MS),
	    "sshd listens on %s:%d in the target's namespace", LM_ADDR_FAR,
	    LM_SSH_PORT)) {
		lm_far_stop(f, true);
		return false;
	}
	return true;
}

void
lm_far_stop(struct lm_far *f, bool failed)
{
	static const char *const files[] = { "host_key", "host_key.pub",
	    "id", "id.pub", "authorized_keys", "sshd_config", "ssh_config",
	    "known_hosts" };
	char path[256];

	if (f->sshd_run) {
		kill(f->sshd.pid, SIGTERM);
		h_proc_wait(&f->sshd, LG_CMD_MS);
		if (failed && f->sshd.ebuf != NULL)
			tap_diag("sshd's log: %s", h_flat(f->sshd.ebuf));
		h_proc_free(&f->sshd);
		f->sshd_run = false;
	}
	unsetenv("VMCTL_SSH");
	if (f->dir[0] != '\0') {
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", f->dir,
			    files[i]);
			unlink(path);
		}
		rmdir(f->dir);
		f->dir[0] = '\0';
	}
	if (f->c != NULL)
		h_close(f->c);
	f->c = NULL;
	if (f->ns_here >= 0)
		close(f->ns_here);
	if (f->ns_far >= 0)
		close(f->ns_far);
	f->ns_here = f->ns_far = -1;
}

/* cmd's output when it exits 0, else NULL with a diagnostic. */
static char *
lm_cmd(struct lg_vm *vm, const char *cmd)
{
	return lg_cmd_ok(vm, cmd, LG_CMD_MS);
}

/* cmd's output as a number, or -1. */
static long
lm_num(struct lg_vm *vm, const char *cmd)
{
	char *out = lm_cmd(vm, cmd);
	long n = out != NULL ? atol(out) : -1;

	free(out);
	return n;
}

/* The lines of text as diagnostics, each behind what. */
static void
lm_diag_lines(const char *what, const char *text)
{
	const char *p = text, *nl;

	while (p != NULL && *p != '\0') {
		nl = strchr(p, '\n');
		if (nl != p)
			tap_diag("%s%.*s", what, nl != NULL ? (int)(nl - p) :
			    (int)strlen(p), p);
		p = nl != NULL ? nl + 1 : NULL;
	}
}

#define LM_REPLIES	"grep -c 'bytes from' /tmp/ping.out"

bool
lm_check_migrate(struct lg_vm *vm, lg_check_fn check, struct lm_far *f)
{
	long before = -1, after = -1, d0, d1, lines = -1, bad = -1, last = -1;
	long sent = -1, got = -1, replies, r0;
	char to[300], *out, *p;
	struct h_proc proc;
	double t0;
	bool ok;
	int st, r;

	/* The hosts' side of the source's TAP as the target's. */
	r = lm_ifmac(LN_TAP, LM_HOST_MAC);
	if (r == 0)
		r = ln_ifup(LN_TAP, LN_HOST_ADDR);
	if (!check(vm, r == 0, "%s up here with %s and %s (%s)", LN_TAP,
	    LN_HOST_ADDR, LM_HOST_MAC, r == 0 ? "ok" : strerror(-r)))
		return false;
	out = lm_cmd(vm, "ip link set eth0 up && ip addr add " LN_GUEST_ADDR
	    "/24 dev eth0 && ping -c 2 -W 10 " LN_HOST_ADDR " >/dev/null");
	ok = out != NULL;
	free(out);
	/* Each its own command: "&" ends the whole list before it. */
	if (ok && (out = lm_cmd(vm, "ping " LN_HOST_ADDR " >/tmp/ping.out "
	    "2>&1 & echo $! >/tmp/ping.pid")) == NULL)
		ok = false;
	free(out);
	if (ok && (out = lm_cmd(vm, "mke2fs -q /dev/vda && mount -t ext2 "
	    "/dev/vda /mnt && : >/mnt/count")) == NULL)
		ok = false;
	free(out);
	if (ok && (out = lm_cmd(vm, LM_LOOP)) == NULL)
		ok = false;
	free(out);
	if (!check(vm, ok, "the guest pings the host through eth0 and a "
	    "loop appends numbered lines to a file on ext2 on its disk"))
		return false;
	for (t0 = h_now_ms(); h_now_ms() - t0 < LG_CMD_MS &&
	    (before = lm_num(vm, "wc -l </mnt/count")) >= 0 && before < 150;)
		h_sleep_ms(500);
	d0 = lm_num(vm, "date +%s");
	r0 = lm_num(vm, LM_REPLIES);
	check(vm, before >= 150 && d0 > 0 && r0 > 0, "the loop has written "
	    "%ld lines, the ping has %ld replies; the guest's date is %ld",
	    before, r0, d0);

	/* Over SSH to the target's vmmd, its socket named. */
	lg_detach(vm);
	snprintf(to, sizeof(to), "ssh://root@%s%s", LM_ADDR_FAR, f->d->sock);
	t0 = h_now_ms();
	st = h_vmctl(vm->d, &proc, LM_MIGRATE_MS, "migrate", vm->name,
	    "--to", to, "--watch", NULL);
	tap_diag("vmctl migrate %s --to %s --watch: exit %d in %.1f s:",
	    vm->name, to, st, (h_now_ms() - t0) / 1e3);
	lm_diag_lines("  ", proc.obuf);
	lm_diag_lines("  stderr: ", proc.ebuf);
	p = proc.obuf != NULL ? strstr(proc.obuf, "migrated to") : NULL;
	ok = check(vm, st == 0 && p != NULL && strstr(p, "downtime") != NULL,
	    "vmctl migrate --to ssh://root@%s/...: %s", LM_ADDR_FAR,
	    p != NULL ? h_flat(p) : "(not migrated)");
	h_proc_free(&proc);
	if (!ok)
		return false;

	/* From here on, the target's. */
	vm->d = f->d;
	vm->c = f->c;
	vm->dumped = false;
	ok = h_wait_state(vm->c, vm->name, "running", LG_CMD_MS) == 0 &&
	    lg_attach(vm) == 0 && lg_wait_shell(vm, LG_CMD_MS) == 0;
	if (!check(vm, ok, "runs at the target: the shell answers on the "
	    "console (%.1f s after vmctl migrate began)",
	    (h_now_ms() - t0) / 1e3))
		return false;
	d1 = lm_num(vm, "date +%s");
	check(vm, d1 >= d0, "date did not go backwards (%ld, %ld before the "
	    "migration)", d1, d0);

	/* The ping answered there: three replies more. */
	r0 = lm_num(vm, LM_REPLIES);
	for (t0 = h_now_ms(), replies = r0; h_now_ms() - t0 < LG_CMD_MS &&
	    replies >= 0 && replies < r0 + 3;) {
		h_sleep_ms(1000);
		replies = lm_num(vm, LM_REPLIES);
	}
	check(vm, r0 >= 0 && replies >= r0 + 3, "the guest pings the host "
	    "at the target: %ld replies, then %ld", r0, replies);
	/*
	 * Counted from its replies, "64 bytes from A: seq=N ...": sent up
	 * to the last one answered, and how many were (a background job
	 * of a shell without job control ignores SIGINT, so no summary).
	 */
	out = lm_cmd(vm, "kill $(cat /tmp/ping.pid); awk '/bytes from/ { "
	    "n++; s = $5; sub(\"seq=\", \"\", s); if (s + 0 > m) m = s + 0 } "
	    "END { print \"replies\", n, \"last\", m }' /tmp/ping.out");
	p = out != NULL ? strstr(out, "replies ") : NULL;
	if (p != NULL && sscanf(p, "replies %ld last %ld", &got, &sent) == 2)
		sent++;			/* seq from 0 */
	else
		sent = got = -1;
	tap_diag("%s: ping: %ld sent, %ld answered, %ld lost", vm->name, sent,
	    got, sent - got);
	check(vm, sent > 0 && got > 0 && sent - got <= LM_LOST_MAX,
	    "the ping lost %ld replies across the migration (at most %d): %s",
	    sent - got, LM_LOST_MAX, out != NULL ? h_flat(out) : "-");
	free(out);

	/* The loop goes on, then the file is checked. */
	for (t0 = h_now_ms(); h_now_ms() - t0 < LG_CMD_MS &&
	    (after = lm_num(vm, "wc -l </mnt/count")) >= 0 &&
	    after <= before + 100;)
		h_sleep_ms(500);
	out = lm_cmd(vm, "kill $(cat /tmp/loop.pid); sleep 1; sync; " LM_AWK);
	p = out != NULL ? strstr(out, "lines ") : NULL;
	ok = p != NULL && sscanf(p, "lines %ld bad %ld last %ld", &lines,
	    &bad, &last) == 3;
	check(vm, ok && bad == 0 && lines == last && lines > before + 100,
	    "the loop went on at the target and its file is whole: %ld "
	    "lines numbered 1 to %ld, none broken (first bad line %ld), %ld "
	    "before the migration", lines, last, bad, before);
	free(out);
	out = lm_cmd(vm, "umount /mnt");
	free(out);
	return true;
}
