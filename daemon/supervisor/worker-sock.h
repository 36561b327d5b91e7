/*
 * The sockets workers listen on so that a guest outlives its
 * supervisor: DIR/NAME.sock in the runtime directory's "workers"
 * directory (mode 0700, the daemon's user), one per running guest.
 *
 * The supervisor alone creates and removes them: it binds the socket
 * before it starts a worker and passes it on (worker.boot's adopt_fd),
 * removes it once the worker is gone, and at start-up connects to each
 * one it finds: a worker that answers worker.adopt is handed to the
 * caller (one whose answer gives a pid other than the one the kernel
 * says it came from is logged and left alone), a socket nobody listens
 * on any more is removed, with its record (worker-record.h).  Blocking
 * calls with short deadlines: used before the event loop serves anyone,
 * and at vm.start.
 */
#ifndef VMMD_WORKER_SOCK_H
#define VMMD_WORKER_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

/* How long a worker may take to answer worker.adopt. */
#define WSOCK_ADOPT_TIMEOUT_MS	5000

/* A listening socket DIR/NAME.sock (a stale file replaced), mode 0600,
 * in *fdp (CLOEXEC).  0, or -errno with err set. */
int	wsock_listen(const char *dir, const char *name, int *fdp, char *err,
	    size_t errlen);
/* Remove DIR/NAME.sock if it is there. */
void	wsock_remove(const char *dir, const char *name);

/* A running worker found by wsock_scan(). */
struct wsock_found {
	const char *name;		/* from its socket's file name */
	int fd;				/* connected, blocking */
	/* The process that answers on fd, as the kernel names it
	 * (SCM_CREDENTIALS), never as the worker says: see wsock_try(). */
	int pidfd;
	pid_t pid;
	uid_t uid;			/* its real uid, as the kernel says */
	uint64_t last_id;		/* the request ids used on fd */
	struct json_object *info;	/* worker.adopt's "return" */
};

/*
 * Connect to every socket in dir.  cb takes f->fd, f->pidfd and
 * f->info.  Sockets whose worker is gone are removed; one that does
 * not answer is logged and left alone.  The number of workers found, or
 * -errno if dir cannot be read (a missing dir is 0).
 */
typedef void (*wsock_found_cb)(void *arg, struct wsock_found *f);
int	wsock_scan(const char *dir, wsock_found_cb cb, void *arg);

#endif
