/*
 * The console logs of the VMs' runs, read back (see console-log.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "console-log.h"
#include "log.h"
#include "proto.h"

int
console_log_path(const char *dir, const char *name, char *buf, size_t size)
{
	return (size_t)snprintf(buf, size, "%s/%s.log", dir, name) < size ?
	    0 : -ENAMETOOLONG;
}

void
console_log_tail(const char *dir, const char *name, off_t start,
    void **bufp, size_t *lenp)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len, got = 0;
	char *buf;
	off_t from;
	ssize_t n;
	int fd;

	*bufp = NULL;
	*lenp = 0;
	if (console_log_path(dir, name, path, sizeof(path)) < 0 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW |
	    O_NONBLOCK)) < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size == start) {
		close(fd);
		return;
	}
	/* Smaller: the worker rotated it since, and the run goes on here. */
	if (st.st_size < start)
		start = 0;
	from = st.st_size - start > CONSOLE_REPLAY_SIZE ?
	    st.st_size - CONSOLE_REPLAY_SIZE : start;
	len = (size_t)(st.st_size - from);
	if ((buf = malloc(len)) == NULL) {
		close(fd);
		return;
	}
	while (got < len && (n = pread(fd, buf + got, len - got,
	    from + (off_t)got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_warn("VM '%s': reading %s: %s", name, path,
			    strerror(errno));
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	*bufp = buf;
	*lenp = got;
}

void
console_log_answer(struct event_base *base, struct answer_list *list,
    const char *dir, const char *name, off_t log_start, int fd,
    struct json_object *id)
{
	void *tail;
	size_t len;

	console_log_tail(dir, name, log_start, &tail, &len);
	log_info("VM '%s': console attached after the guest's end: %zu "
	    "bytes of its last output sent from the log", name, len);
	answer_send(base, list, fd, proto_reply(id, NULL), tail, len);
	free(tail);
}
