/* See worker-sock.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "vmconfig.h"
#include "worker-msg.h"
#include "worker-record.h"
#include "worker-sock.h"

#define WSOCK_SUFFIX	".sock"
#define WSOCK_MODE	(S_IRUSR | S_IWUSR)
#define WSOCK_REPLY_MAX	(256 * 1024)	/* worker.adopt's reply */

static int
wsock_addr(const char *dir, const char *name, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s"
	    WSOCK_SUFFIX, dir, name) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

int
wsock_listen(const char *dir, const char *name, int *fdp, char *err,
    size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old_umask;
	int fd, rc;

	if ((rc = wsock_addr(dir, name, &sa)) < 0) {
		snprintf(err, errlen, "%s: worker socket path too long", dir);
		return rc;
	}
	/* Left by a worker that died with no supervisor to see it. */
	if (unlink(sa.sun_path) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", sa.sun_path, strerror(-rc));
		return rc;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	/*
	 * Mode 0600 from the umask at bind time: a socket's descriptor does
	 * not lead to its file (fchmod() on it changes the socket's own
	 * inode, not the one bind() makes).  The directory, checked at
	 * start-up (safe-dir.h), is one only root or vmmd's user can write,
	 * so what is at the name afterwards is this socket; its mode is set
	 * again only if a default ACL overrode the umask.  Nobody connects
	 * before listen().  (The supervisor has one thread: the umask
	 * changes under no other file creation.)
	 */
	old_umask = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old_umask);
	if (rc == 0 && lstat(sa.sun_path, &st) < 0)
		rc = -errno;
	else if (rc == 0 && !S_ISSOCK(st.st_mode))
		rc = -EEXIST;
	else if (rc == 0 && (st.st_mode & 07777) != WSOCK_MODE &&
	    chmod(sa.sun_path, WSOCK_MODE) < 0)
		rc = -errno;
	if (rc == 0 && listen(fd, 4) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", sa.sun_path, strerror(-rc));
		close(fd);
		unlink(sa.sun_path);
		return rc;
	}
	*fdp = fd;
	return 0;
}

void
wsock_remove(const char *dir, const char *name)
{
	struct sockaddr_un sa;

	if (wsock_addr(dir, name, &sa) == 0 && unlink(sa.sun_path) < 0 &&
	    errno != ENOENT)
		log_warn("%s: %s", sa.sun_path, strerror(errno));
}

static int64_t
wsock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The next line on fd, without reading past it (the bytes after it
 * belong to the link that takes fd over), within the deadline.  A
 * malloc'ed NUL-terminated line, or NULL with *rc.  With SO_PASSCRED on
 * fd, *sender is the process that sent the line and its real uid as
 * the kernel says (SCM_CREDENTIALS), pid 0 if it did not say (a sender
 * may name another of its own uids there, or any with CAP_SETUID,
 * which no sandboxed worker has); a stream socket with
 * SO_PASSCRED never returns the bytes of two senders in one read, so
 * the whole line is that process's.
 */
static char *
wsock_read_line(int fd, int64_t deadline, struct ucred *sender, int *rc)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct msghdr mh;
	struct cmsghdr *cm;
	struct ucred cred;
	struct iovec iov;
	char *buf, *nl;
	ssize_t n;
	int left;

	if ((buf = malloc(WSOCK_REPLY_MAX + 1)) == NULL) {
		*rc = -ENOMEM;
		return NULL;
	}
	for (;;) {
		left = (int)(deadline - wsock_now_ms());
		if (left <= 0) {
			*rc = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, left) < 0 && errno != EINTR) {
			*rc = -errno;
			break;
		}
		n = recv(fd, buf, WSOCK_REPLY_MAX, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			*rc = n == 0 ? -ECONNRESET : -errno;
			break;
		}
		if ((nl = memchr(buf, '\n', (size_t)n)) == NULL) {
			if (n == WSOCK_REPLY_MAX) {
				*rc = -E2BIG;
				break;
			}
			/* A partial line: wait for the rest. */
			pfd.events = POLLIN;
			usleep(1000);
			continue;
		}
		iov = (struct iovec){ .iov_base = buf,
		    .iov_len = (size_t)(nl - buf) + 1 };
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n != nl - buf + 1) {
			*rc = n < 0 ? -errno : -EIO;
			break;
		}
		*sender = (struct ucred){ .pid = 0, .uid = (uid_t)-1,
		    .gid = (gid_t)-1 };
		for (cm = CMSG_FIRSTHDR(&mh); cm != NULL;
		    cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET &&
			    cm->cmsg_type == SCM_CREDENTIALS &&
			    cm->cmsg_len == CMSG_LEN(sizeof(cred))) {
				memcpy(&cred, CMSG_DATA(cm), sizeof(cred));
				*sender = cred;
			}
		*nl = '\0';
		return buf;
	}
	free(buf);
	return NULL;
}

/*
 * worker.adopt on fd: its "return" object, or NULL with *rc; *sender is
 * the process the reply came from (wsock_read_line()).
 */
static struct json_object *
wsock_handshake(int fd, uint64_t id, struct ucred *sender, int *rc)
{
	const struct wmsg_request_def *def = wmsg_request_def(WMSG_REQ_ADOPT);
	struct json_object *msg, *v, *ret = NULL;
	int64_t deadline = wsock_now_ms() + WSOCK_ADOPT_TIMEOUT_MS;
	char req[96], desc[256], *line;
	int len;

	len = snprintf(req, sizeof(req), "{\"id\":%llu,\"command\":\"%s\"}\n",
	    (unsigned long long)id, def->name);
	if (send(fd, req, (size_t)len, MSG_NOSIGNAL) != len) {
		*rc = -errno;
		return NULL;
	}
	/* Events the worker sends meanwhile are of no use yet. */
	while ((line = wsock_read_line(fd, deadline, sender, rc)) != NULL) {
		if (proto_parse_object(line, strlen(line), &msg, desc,
		    sizeof(desc)) != 0) {
			free(line);
			continue;
		}
		free(line);
		if (json_object_object_get_ex(msg, "id", &v) &&
		    json_object_get_int64(v) == (int64_t)id) {
			if (json_object_object_get_ex(msg, "return", &ret) &&
			    wmsg_check(def->reply, ret, desc,
			    sizeof(desc)) == 0 && ret != NULL)
				json_object_get(ret);
			else {
				if (ret != NULL)
					log_warn("the answer to %s: %s",
					    def->name, desc);
				ret = NULL;
				*rc = -EPROTO;
			}
			json_object_put(msg);
			return ret;
		}
		json_object_put(msg);
	}
	return NULL;
}

/*
 * The worker's pid and uid, from the kernel, the pid held by a pidfd:
 * 0 with f->pid, f->uid and f->pidfd set, or -errno, logged.  f->info
 * is the reply to worker.adopt and first the credentials it came with
 * (SCM_CREDENTIALS: the kernel lets a process without CAP_SYS_ADMIN
 * name only its own pid there); f->last_id is the last request id used
 * on f->fd.
 *
 * The pid the worker writes in its reply is only compared with that: a
 * worker that names another process (one it would have vmmd signal) is
 * refused.  The sender's pid is the sender's only while it lives, and a
 * pidfd opened from a number is of whoever has the number then: so a
 * second worker.adopt goes out after pidfd_open(), and its reply must
 * come from the same pid with the pidfd's process still alive once it
 * is read.  That process had the number from pidfd_open() to then, so
 * it is the one that answered the second time: the process that
 * answers on this connection is the one the pidfd holds.
 *
 * Its uid is the one the kernel gave with both answers (they must
 * agree), never the one it writes: a worker that named another uid of
 * the range would have the next start give its own to a second guest.
 */
static int
wsock_verify_pid(const char *path, struct wsock_found *f,
    const struct ucred *first)
{
	struct json_object *again;
	struct pollfd pfd;
	struct ucred second = { 0 };
	pid_t sender = first->pid, claimed;
	int rc, off = 0;

	claimed = (pid_t)wmsg_int(f->info, WMSG_ADOPT_PID, 0);
	if (sender <= 1 || claimed != sender) {
		log_warn("%s: the worker says it is pid %ld, but its answer "
		    "came from pid %ld: left alone", path, (long)claimed,
		    (long)sender);
		return -EPERM;
	}
	if (first->uid == (uid_t)-1) {
		log_warn("%s: worker %ld: the kernel did not say its uid: "
		    "left alone", path, (long)sender);
		return -EPERM;
	}
	f->pidfd = (int)syscall(SYS_pidfd_open, sender, 0);
	if (f->pidfd < 0) {
		rc = -errno;
		log_warn("%s: pidfd_open %ld: %s", path, (long)sender,
		    strerror(-rc));
		return rc;
	}
	again = wsock_handshake(f->fd, ++f->last_id, &second, &rc);
	json_object_put(again);
	pfd = (struct pollfd){ .fd = f->pidfd, .events = POLLIN };
	if (again == NULL || second.pid != sender ||
	    second.uid != first->uid || poll(&pfd, 1, 0) != 0) {
		log_warn("%s: worker %ld: its pid could not be made sure of "
		    "(%s): left alone", path, (long)sender, again == NULL ?
		    strerror(-rc) : second.pid != sender ?
		    "a second answer came from another process" :
		    second.uid != first->uid ?
		    "its second answer came from another uid" : "it exited");
		close(f->pidfd);
		f->pidfd = -1;
		return -ESRCH;
	}
	(void)setsockopt(f->fd, SOL_SOCKET, SO_PASSCRED, &off, sizeof(off));
	f->pid = sender;
	f->uid = first->uid;
	return 0;
}

/*
 * One socket: 1 with the worker passed to cb, 0 when there is none; with
 * retry, a connection reset during the handshake is tried once more.
 */
static int
wsock_try(const char *dir, const char *name, wsock_found_cb cb, void *arg,
    bool retry)
{
	struct wsock_found f = { .name = name, .fd = -1, .pidfd = -1 };
	struct pollfd pfd;
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ucred sender = { 0 };
	const char *wname;
	int rc = 0, on = 1;

	if (wsock_addr(dir, name, &sa) < 0)
		return 0;
	f.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f.fd < 0)
		return 0;
	if (connect(f.fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(f.fd);
		if (rc == -ECONNREFUSED || rc == -ENOENT) {
			log_info("%s: no worker any more: removed",
			    sa.sun_path);
			unlink(sa.sun_path);
			wrec_remove(dir, name);
		} else
			log_warn("%s: %s", sa.sun_path, strerror(-rc));
		return 0;
	}
	/*
	 * SO_PEERCRED names whoever called listen(): the vmmd that started
	 * the worker, so it tells the user, not the worker's pid.
	 */
	if (getsockopt(f.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    cred.uid != geteuid()) {
		log_warn("%s: not a worker of ours (uid %ld): left alone",
		    sa.sun_path, (long)cred.uid);
		goto close_fd;
	}
	/* From here on, whatever the worker sends says who sent it. */
	if (setsockopt(f.fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0) {
		log_warn("%s: SO_PASSCRED: %s: left alone", sa.sun_path,
		    strerror(errno));
		goto close_fd;
	}
	f.last_id = 1;
	f.info = wsock_handshake(f.fd, f.last_id, &sender, &rc);
	if (f.info == NULL && (rc == -ECONNRESET || rc == -EPIPE) &&
	    retry) {
		/*
		 * A worker that was dying as we connected (the kernel queues
		 * a connection on a listening socket until its last
		 * descriptor closes): look once more, which finds the
		 * socket refused and removes it, or a worker that answers.
		 */
		close(f.fd);
		return wsock_try(dir, name, cb, arg, false);
	}
	if (f.info == NULL) {
		log_warn("%s: no answer to worker.adopt (%s): left alone",
		    sa.sun_path, strerror(-rc));
		goto close_fd;
	}
	wname = wmsg_str(f.info, WMSG_ADOPT_NAME, NULL);
	if (wname == NULL || strcmp(wname, name) != 0) {
		log_warn("%s: a worker answers for '%s', pid %ld: left alone",
		    sa.sun_path, wname != NULL ? wname : "?",
		    (long)sender.pid);
		goto put_info;
	}
	if (wsock_verify_pid(sa.sun_path, &f, &sender) < 0)
		goto put_info;
	pfd = (struct pollfd){ .fd = f.fd, .events = POLLRDHUP };
	if (poll(&pfd, 1, 0) != 0) {
		log_warn("%s: worker %ld went away while being adopted",
		    sa.sun_path, (long)f.pid);
		close(f.pidfd);
		goto put_info;
	}
	cb(arg, &f);
	return 1;

put_info:
	json_object_put(f.info);
close_fd:
	close(f.fd);
	return 0;
}

int
wsock_scan(const char *dir, wsock_found_cb cb, void *arg)
{
	char name[CONFIG_NAME_MAX + sizeof(WSOCK_SUFFIX)];
	struct dirent *de;
	size_t len, slen = strlen(WSOCK_SUFFIX);
	int found = 0;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len <= slen || len - slen >= sizeof(name) ||
		    strcmp(de->d_name + len - slen, WSOCK_SUFFIX) != 0)
			continue;
		memcpy(name, de->d_name, len - slen);
		name[len - slen] = '\0';
		if (!config_name_valid(name))
			continue;
		found += wsock_try(dir, name, cb, arg, true);
	}
	closedir(d);
	return found;
}
