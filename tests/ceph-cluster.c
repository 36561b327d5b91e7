/* See ceph-cluster.h. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ceph-cluster.h"

#define CEPH_ARGS_MAX	32

static const char *const ceph_cluster_progs[] = {
	"/usr/bin/ceph-mon", "/usr/bin/ceph-osd", "/usr/bin/ceph",
	"/usr/bin/rbd", "/usr/bin/monmaptool",
};

int
ceph_cluster_available(char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < sizeof(ceph_cluster_progs) /
	    sizeof(ceph_cluster_progs[0]); i++)
		if (access(ceph_cluster_progs[i], X_OK) != 0) {
			snprintf(err, errlen, "%s is not installed (Debian's "
			    "ceph-mon, ceph-osd and ceph-common)",
			    ceph_cluster_progs[i]);
			return -ENOENT;
		}
	return 0;
}

static double
ceph_cluster_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A child running argv, its stdout to out_path, stderr to err_path. */
static pid_t
ceph_cluster_spawn(char *const argv[], const char *out_path,
    const char *err_path)
{
	pid_t pid = fork();
	int fd;

	if (pid != 0)
		return pid < 0 ? -errno : pid;
	/* Its own process group: stop() kills whatever it forks too. */
	setpgid(0, 0);
	if ((fd = open("/dev/null", O_RDONLY)) >= 0)
		dup2(fd, 0);
	if ((fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644)) >= 0)
		dup2(fd, 1);
	if ((fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644)) >= 0)
		dup2(fd, 2);
	execvp(argv[0], argv);
	_exit(127);
}

/* pid's exit status within bound_s: 0..255, or -ETIMEDOUT (killed). */
static int
ceph_cluster_wait(pid_t pid, double bound_s)
{
	double end = ceph_cluster_now() + bound_s;
	int status;

	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) :
			    128 + WTERMSIG(status);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (ceph_cluster_now() > end) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
}

static int
ceph_cluster_runv(struct ceph_cluster *c, char *out, size_t outlen,
    const char *prog, va_list ap)
{
	char *argv[CEPH_ARGS_MAX + 4];
	char out_path[PATH_MAX], err_path[PATH_MAX];
	const char *a;
	unsigned int n = 0;
	pid_t pid;
	ssize_t len;
	int rc, fd;

	argv[n++] = (char *)prog;
	argv[n++] = "-c";
	argv[n++] = c->conf;
	while ((a = va_arg(ap, const char *)) != NULL) {
		if (n >= CEPH_ARGS_MAX)
			return -E2BIG;
		argv[n++] = (char *)a;
	}
	argv[n] = NULL;
	snprintf(out_path, sizeof(out_path), "%s/log/cmd.out", c->dir);
	snprintf(err_path, sizeof(err_path), "%s/log/cmd.err", c->dir);
	unlink(out_path);
	if ((pid = ceph_cluster_spawn(argv, out_path, err_path)) < 0)
		return pid;
	rc = ceph_cluster_wait(pid, CEPH_CLUSTER_WAIT_S);
	if (out != NULL && outlen > 0) {
		out[0] = '\0';
		if ((fd = open(out_path, O_RDONLY | O_CLOEXEC)) >= 0) {
			len = read(fd, out, outlen - 1);
			out[len > 0 ? len : 0] = '\0';
			close(fd);
		}
	}
	return rc;
}

int
ceph_cluster_run(struct ceph_cluster *c, char *out, size_t outlen,
    const char *prog, ...)
{
	va_list ap;
	int rc;

	va_start(ap, prog);
	rc = ceph_cluster_runv(c, out, outlen, prog, ap);
	va_end(ap);
	return rc;
}

/* A TCP port on 127.0.0.1 free a moment ago. */
static int
ceph_cluster_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, port = -EADDRNOTAVAIL;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static int
ceph_cluster_write_conf(struct ceph_cluster *c, const char *fsid)
{
	FILE *f = fopen(c->conf, "we");

	if (f == NULL)
		return -errno;
	fprintf(f,
	    "[global]\n"
	    "fsid = %s\n"
	    "mon host = %s\n"
	    "auth cluster required = none\n"
	    "auth service required = none\n"
	    "auth client required = none\n"
	    "auth allow insecure global id reclaim = true\n"
	    "ms bind ipv6 = false\n"
	    "osd objectstore = memstore\n"
	    "memstore device bytes = 1073741824\n"
	    "osd pool default size = 1\n"
	    "osd pool default min size = 1\n"
	    "osd crush chooseleaf type = 0\n"
	    "osd pool default pg autoscale mode = off\n"
	    "mon allow pool size one = true\n"
	    "mon warn on pool no redundancy = false\n"
	    "run dir = %s/run\n"
	    "log file = %s/log/$name.log\n"
	    "admin socket = %s/run/$name.asok\n"
	    "pid file = %s/run/$name.pid\n"
	    "mon data = %s/mon-$id\n"
	    "osd data = %s/osd-$id\n"
	    "keyring = /dev/null\n"
	    "debug ms = 0\n",
	    fsid, c->mon_host, c->dir, c->dir, c->dir, c->dir, c->dir,
	    c->dir);
	return fclose(f) == 0 ? 0 : -errno;
}

/* The last lines of dir/log/name into err, after what. */
static void
ceph_cluster_fail(struct ceph_cluster *c, const char *name, const char *what,
    int rc, char *err, size_t errlen)
{
	char path[PATH_MAX], tail[512];
	ssize_t n = 0;
	off_t size;
	int fd;

	tail[0] = '\0';
	snprintf(path, sizeof(path), "%s/log/%s", c->dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		size = lseek(fd, 0, SEEK_END);
		lseek(fd, size > (off_t)sizeof(tail) - 1 ?
		    size - (off_t)sizeof(tail) + 1 : 0, SEEK_SET);
		n = read(fd, tail, sizeof(tail) - 1);
		tail[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	if (rc < 0)
		snprintf(err, errlen, "%s: %s (%s/log/%s ends: %s)", what,
		    strerror(-rc), c->dir, name, tail);
	else
		snprintf(err, errlen, "%s: exit status %d (%s/log/%s ends: "
		    "%s)", what, rc, c->dir, name, tail);
}

static void
ceph_cluster_uuid(char *buf, size_t len)
{
	unsigned char b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b))
		memset(b, 0x5a, sizeof(b));
	if (fd >= 0)
		close(fd);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
	    b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
	    b[15]);
}

/* Until "ceph osd stat" says one OSD is up, within the bound. */
static int
ceph_cluster_wait_osd(struct ceph_cluster *c)
{
	double end = ceph_cluster_now() + CEPH_CLUSTER_WAIT_S;
	char out[1024];
	int rc;

	while (ceph_cluster_now() < end) {
		rc = ceph_cluster_run(c, out, sizeof(out), "ceph",
		    "--connect-timeout", "30", "osd", "stat", "-f", "json",
		    NULL);
		if (rc == 0 && strstr(out, "\"num_up_osds\":1") != NULL &&
		    strstr(out, "\"num_in_osds\":1") != NULL)
			return 0;
		if (c->osd > 0 && waitpid(c->osd, NULL, WNOHANG) == c->osd) {
			c->osd = 0;
			return -ECHILD;
		}
		usleep(250000);
	}
	return -ETIMEDOUT;
}

int
ceph_cluster_start(struct ceph_cluster *c, const char *dir, char *err,
    size_t errlen)
{
	char path[PATH_MAX], path2[PATH_MAX], fsid[40], osd_uuid[40];
	char addr[32], out[256];
	int port, rc;

	memset(c, 0, sizeof(*c));
	if (strlen(dir) >= sizeof(c->dir)) {
		snprintf(err, errlen, "%s: too long a path", dir);
		return -ENAMETOOLONG;
	}
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	snprintf(c->conf, sizeof(c->conf), "%s/ceph.conf", dir);
	snprintf(path, sizeof(path), "%s/log", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/osd-0", dir);
	mkdir(path, 0755);
	if ((port = ceph_cluster_port()) < 0) {
		snprintf(err, errlen, "no free port: %s", strerror(-port));
		return port;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(c->mon_host, sizeof(c->mon_host), "v2:%s", addr);
	ceph_cluster_uuid(fsid, sizeof(fsid));
	ceph_cluster_uuid(osd_uuid, sizeof(osd_uuid));
	if ((rc = ceph_cluster_write_conf(c, fsid)) < 0) {
		snprintf(err, errlen, "%s: %s", c->conf, strerror(-rc));
		return rc;
	}
	snprintf(path, sizeof(path), "%s/monmap", dir);
	if ((rc = ceph_cluster_run(c, NULL, 0, "monmaptool", "--create",
	    "--fsid", fsid, "--addv", "a", c->mon_host, path, NULL)) != 0) {
		ceph_cluster_fail(c, "cmd.err", "monmaptool", rc, err,
		    errlen);
		return rc < 0 ? rc : -EIO;
	}
	if ((rc = ceph_cluster_run(c, NULL, 0, "ceph-mon", "--mkfs", "-i",
	    "a", "--monmap", path, NULL)) != 0) {
		ceph_cluster_fail(c, "cmd.err", "ceph-mon --mkfs", rc, err,
		    errlen);
		return rc < 0 ? rc : -EIO;
	}
	{
		char *argv[] = { "ceph-mon", "-c", c->conf, "-f", "-i", "a",
		    NULL };

		snprintf(path, sizeof(path), "%s/log/mon.out", dir);
		if ((c->mon = ceph_cluster_spawn(argv, path, path)) < 0) {
			rc = c->mon;
			c->mon = 0;
			snprintf(err, errlen, "ceph-mon: %s", strerror(-rc));
			return rc;
		}
	}
	/* The OSD's number from the monitor, then its store. */
	if ((rc = ceph_cluster_run(c, out, sizeof(out), "ceph",
	    "--connect-timeout", "60", "osd", "new", osd_uuid, NULL)) != 0 ||
	    atoi(out) != 0) {
		ceph_cluster_fail(c, "cmd.err", "ceph osd new", rc, err,
		    errlen);
		goto fail;
	}
	if ((rc = ceph_cluster_run(c, NULL, 0, "ceph-osd", "-i", "0",
	    "--mkfs", "--osd-uuid", osd_uuid, NULL)) != 0) {
		ceph_cluster_fail(c, "cmd.err", "ceph-osd --mkfs", rc, err,
		    errlen);
		goto fail;
	}
	{
		char *argv[] = { "ceph-osd", "-c", c->conf, "-f", "-i", "0",
		    NULL };

		snprintf(path2, sizeof(path2), "%s/log/osd.out", dir);
		if ((c->osd = ceph_cluster_spawn(argv, path2, path2)) < 0) {
			rc = c->osd;
			c->osd = 0;
			snprintf(err, errlen, "ceph-osd: %s", strerror(-rc));
			goto fail;
		}
	}
	if ((rc = ceph_cluster_wait_osd(c)) < 0) {
		ceph_cluster_fail(c, "osd.0.log", "the OSD never came up", rc,
		    err, errlen);
		goto fail;
	}
	if ((rc = ceph_cluster_run(c, NULL, 0, "ceph", "osd", "pool",
	    "create", CEPH_CLUSTER_POOL, "8", NULL)) != 0 ||
	    (rc = ceph_cluster_run(c, NULL, 0, "ceph", "osd", "pool",
	    "application", "enable", CEPH_CLUSTER_POOL, "rbd", NULL)) != 0) {
		ceph_cluster_fail(c, "cmd.err", "ceph osd pool create", rc,
		    err, errlen);
		goto fail;
	}
	return 0;
fail:
	ceph_cluster_stop(c);
	return rc < 0 ? rc : -EIO;
}

static void
ceph_cluster_kill(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(-*pid, SIGKILL);
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
	*pid = 0;
}

void
ceph_cluster_stop(struct ceph_cluster *c)
{
	/* Memory-backed: nothing to save, so no orderly shutdown. */
	ceph_cluster_kill(&c->osd);
	ceph_cluster_kill(&c->mon);
}
