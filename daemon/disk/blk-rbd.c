/* See blk-rbd.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

#include "blk-rbd.h"

#define BLK_RBD_OWNERS		4

struct blk_rbd {
	/* Set up in blk_rbd_new(), then constant. */
	rados_t cluster;
	rados_ioctx_t ioctx;
	rbd_image_t image;
	uint64_t size;

	pthread_mutex_t lock;		/* pending, st */
	pthread_cond_t idle;		/* pending reached 0 */
	unsigned int pending;		/* submitted, not yet done */
	struct blk_rbd_stats st;
};

/* One request between submit() and librbd's callback. */
struct blk_rbd_req {
	struct blk_rbd *r;
	struct blk_io *io;
	uint64_t len;			/* bytes a read or write moves */
};

const char *
blk_rbd_state_name(enum blk_rbd_state s)
{
	switch (s) {
	case BLK_RBD_CONNECTED:
		return "connected";
	case BLK_RBD_FAILED:
		return "failed";
	}
	return "unknown";
}

static uint64_t
blk_rbd_iov_len(const struct blk_io *io)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < io->niov; i++)
		n += io->iov[i].iov_len;
	return n;
}

/*
 * librbd's completion thread: the request's figures, then its done.
 * Never calls into librbd but to read and release the completion.
 */
static void
blk_rbd_cb(rbd_completion_t c, void *arg)
{
	struct blk_rbd_req *q = arg;
	struct blk_rbd *r = q->r;
	struct blk_io *io = q->io;
	ssize_t ret = rbd_aio_get_return_value(c);
	int result;

	rbd_aio_release(c);
	if (ret < 0)
		/*
		 * A timeout, a blocklisted client (-ESHUTDOWN)
		 * or a lost lock (-EROFS): the guest knows I/O errors only.
		 */
		result = -EIO;
	else if (io->op == BLK_READ && (uint64_t)ret != q->len)
		result = -EIO;
	else
		result = 0;
	pthread_mutex_lock(&r->lock);
	if (result == 0) {
		r->st.state = BLK_RBD_CONNECTED;
		switch (io->op) {
		case BLK_READ:
			r->st.reads++;
			r->st.read_bytes += q->len;
			break;
		case BLK_WRITE:
			r->st.writes++;
			r->st.written_bytes += q->len;
			break;
		case BLK_FLUSH:
			r->st.flushes++;
			break;
		case BLK_DISCARD:
			r->st.discards++;
			break;
		case BLK_WRITE_ZEROES:
			r->st.zeroes++;
			break;
		}
	} else {
		r->st.errors++;
		/* Ceph's "blocklisted" is ESHUTDOWN on Linux. */
		if (ret == -ETIMEDOUT || ret == -ESHUTDOWN)
			r->st.state = BLK_RBD_FAILED;
	}
	pthread_mutex_unlock(&r->lock);
	free(q);
	io->done(io, result);
	pthread_mutex_lock(&r->lock);
	if (--r->pending == 0)
		pthread_cond_broadcast(&r->idle);
	r->st.inflight = r->pending;
	pthread_mutex_unlock(&r->lock);
}

/* Any thread (a vCPU's, under its device's lock): never blocks. */
static int
blk_rbd_submit(void *ctx, struct blk_io *io)
{
	struct blk_rbd *r = ctx;
	struct blk_rbd_req *q;
	rbd_completion_t c;
	int rc;

	if ((q = malloc(sizeof(*q))) == NULL)
		return -ENOMEM;
	q->r = r;
	q->io = io;
	q->len = io->op == BLK_READ || io->op == BLK_WRITE ?
	    blk_rbd_iov_len(io) : io->len;
	if ((rc = rbd_aio_create_completion(q, blk_rbd_cb, &c)) < 0) {
		free(q);
		return rc;
	}
	pthread_mutex_lock(&r->lock);
	r->st.inflight = ++r->pending;
	pthread_mutex_unlock(&r->lock);
	switch (io->op) {
	case BLK_READ:
		rc = rbd_aio_readv(r->image, io->iov, (int)io->niov,
		    io->offset, c);
		break;
	case BLK_WRITE:
		rc = rbd_aio_writev(r->image, io->iov, (int)io->niov,
		    io->offset, c);
		break;
	case BLK_FLUSH:
		rc = rbd_aio_flush(r->image, c);
		break;
	case BLK_DISCARD:
		rc = rbd_aio_discard(r->image, io->offset, io->len, c);
		break;
	case BLK_WRITE_ZEROES:
		/*
		 * RBD_WRITE_ZEROES_FLAG_THICK_PROVISION is not asked for:
		 * without it librbd frees whole objects, which read as
		 * zeroes, and writes zeroes over the rest.
		 */
		rc = rbd_aio_write_zeroes(r->image, io->offset, io->len, c,
		    0, 0);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (rc < 0) {
		/* Not queued: the callback never comes. */
		rbd_aio_release(c);
		free(q);
		pthread_mutex_lock(&r->lock);
		if (--r->pending == 0)
			pthread_cond_broadcast(&r->idle);
		r->st.inflight = r->pending;
		pthread_mutex_unlock(&r->lock);
		return rc;
	}
	return 0;
}

static void
blk_rbd_drain(void *ctx)
{
	struct blk_rbd *r = ctx;

	pthread_mutex_lock(&r->lock);
	while (r->pending > 0)
		pthread_cond_wait(&r->idle, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

static const struct blk_backend_ops blk_rbd_ops = {
	.submit = blk_rbd_submit,
	.drain = blk_rbd_drain,
};

/*
 * The exclusive lock's holders into buf, each as "client.N at ADDR"
 * (its name from the image's lockers, its address from the lock's
 * owners); "" if none could be read.
 */
static void
blk_rbd_owners(struct blk_rbd *r, char *buf, size_t len)
{
	char *owners[BLK_RBD_OWNERS];
	char tag[128], clients[512], cookies[512], addrs[512];
	size_t tag_len = sizeof(tag), clients_len = sizeof(clients);
	size_t cookies_len = sizeof(cookies), addrs_len = sizeof(addrs);
	size_t n = BLK_RBD_OWNERS, i, off = 0;
	rbd_lock_mode_t mode;
	ssize_t nl;
	int exclusive;

	buf[0] = '\0';
	if (rbd_lock_get_owners(r->image, &mode, owners, &n) < 0)
		return;
	nl = rbd_list_lockers(r->image, &exclusive, tag, &tag_len, clients,
	    &clients_len, cookies, &cookies_len, addrs, &addrs_len);
	for (i = 0; i < n; i++) {
		const char *name = NULL, *c = clients, *a = addrs;
		ssize_t k;
		int w;

		/* Both lists NUL-separated, in the same order. */
		for (k = 0; k < nl; k++) {
			if (strcmp(a, owners[i]) == 0) {
				name = c;
				break;
			}
			c += strlen(c) + 1;
			a += strlen(a) + 1;
		}
		w = snprintf(buf + off, len - off, "%s%s%s%s",
		    i > 0 ? ", " : "", name != NULL ? name : "",
		    name != NULL ? " at " : "", owners[i]);
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
	rbd_lock_get_owners_cleanup(owners, n);
}

/* The exclusive lock, taken or (break_lock) taken over.  0 or -errno. */
static int
blk_rbd_take_lock(struct blk_rbd *r, const struct blk_rbd_config *cfg,
    char *err, size_t errlen)
{
	char owners[256];
	char *list[BLK_RBD_OWNERS];
	size_t n = BLK_RBD_OWNERS, i;
	rbd_lock_mode_t mode;
	uint64_t features;
	int rc;

	if (rbd_get_features(r->image, &features) == 0 &&
	    !(features & RBD_FEATURE_EXCLUSIVE_LOCK)) {
		snprintf(err, errlen, "%s/%s has no exclusive lock to take "
		    "(rbd feature enable %s/%s exclusive-lock; or lock=off to "
		    "share it unfenced)", cfg->pool, cfg->image, cfg->pool,
		    cfg->image);
		return -EOPNOTSUPP;
	}
	if ((rc = rbd_lock_acquire(r->image, RBD_LOCK_MODE_EXCLUSIVE)) == 0)
		return 0;
	blk_rbd_owners(r, owners, sizeof(owners));
	if (owners[0] == '\0') {
		snprintf(err, errlen, "%s/%s: its exclusive lock cannot be "
		    "taken: %s", cfg->pool, cfg->image, strerror(-rc));
		return rc == -EOPNOTSUPP || rc == -EINVAL ? -EOPNOTSUPP : rc;
	}
	if (!cfg->break_lock) {
		snprintf(err, errlen, "%s/%s is locked by %s, another host's "
		    "guest using it (break the lock only if that one is "
		    "dead: its client is then blocklisted)", cfg->pool,
		    cfg->image, owners);
		return -EBUSY;
	}
	if ((rc = rbd_lock_get_owners(r->image, &mode, list, &n)) < 0) {
		snprintf(err, errlen, "%s/%s: its lock's holders cannot be "
		    "read: %s", cfg->pool, cfg->image, strerror(-rc));
		return rc;
	}
	for (i = 0, rc = 0; i < n && rc == 0; i++)
		rc = rbd_lock_break(r->image, mode, list[i]);
	rbd_lock_get_owners_cleanup(list, n);
	if (rc < 0) {
		snprintf(err, errlen, "%s/%s: the lock of %s cannot be "
		    "broken: %s", cfg->pool, cfg->image, owners,
		    strerror(-rc));
		return rc;
	}
	if ((rc = rbd_lock_acquire(r->image, RBD_LOCK_MODE_EXCLUSIVE)) < 0) {
		snprintf(err, errlen, "%s/%s: the lock of %s was broken but "
		    "cannot be taken: %s", cfg->pool, cfg->image, owners,
		    strerror(-rc));
		return rc;
	}
	return 0;
}

/*
 * The client's settings: nothing read or made by a name the caller did
 * not give, no cache (a completed write is on the OSDs), bounded
 * operations.  0 or -errno.
 */
static int
blk_rbd_configure(struct blk_rbd *r, const struct blk_rbd_config *cfg,
    char *err, size_t errlen)
{
	char timeout[16];
	unsigned int ms = cfg->timeout_ms != 0 ? cfg->timeout_ms :
	    BLK_RBD_TIMEOUT_MS;
	const char *fixed[][2] = {
		{ "admin_socket", "" },
		{ "log_file", "" },
		{ "log_to_stderr", "false" },
		{ "err_to_stderr", "false" },
		{ "log_to_syslog", "false" },
		{ "rbd_cache", "false" },
		{ "rados_mon_op_timeout", timeout },
		{ "rados_osd_op_timeout", timeout },
		{ "client_mount_timeout", timeout },
		{ "keyring", cfg->keyring != NULL ? cfg->keyring : "" },
	};
	size_t i;
	int rc;

	snprintf(timeout, sizeof(timeout), "%u", (ms + 999) / 1000);
	if (cfg->conf != NULL &&
	    (rc = rados_conf_read_file(r->cluster, cfg->conf)) < 0) {
		snprintf(err, errlen, "the Ceph configuration cannot be "
		    "read: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; cfg->set != NULL && cfg->set[i] != NULL &&
	    cfg->set[i + 1] != NULL; i += 2)
		if ((rc = rados_conf_set(r->cluster, cfg->set[i],
		    cfg->set[i + 1])) < 0) {
			snprintf(err, errlen, "Ceph setting %s: %s",
			    cfg->set[i], strerror(-rc));
			return rc;
		}
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if ((rc = rados_conf_set(r->cluster, fixed[i][0],
		    fixed[i][1])) < 0) {
			snprintf(err, errlen, "Ceph setting %s: %s",
			    fixed[i][0], strerror(-rc));
			return rc;
		}
	return 0;
}

static void
blk_rbd_destroy(struct blk_rbd *r)
{
	if (r->image != NULL) {
		/* rbd_close() releases the lock it holds. */
		rbd_close(r->image);
	}
	if (r->ioctx != NULL)
		rados_ioctx_destroy(r->ioctx);
	if (r->cluster != NULL)
		rados_shutdown(r->cluster);
	pthread_cond_destroy(&r->idle);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int
blk_rbd_new(struct blk_rbd **out, const struct blk_rbd_config *cfg,
    struct blk_backend *be, char *err, size_t errlen)
{
	struct blk_rbd *r;
	bool readonly = cfg->readonly || cfg->snap != NULL;
	int rc;

	*out = NULL;
	if (cfg->pool == NULL || cfg->pool[0] == '\0' || cfg->image == NULL ||
	    cfg->image[0] == '\0') {
		snprintf(err, errlen, "an RBD disk needs a pool and an image");
		return -EINVAL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	if ((rc = rados_create(&r->cluster, cfg->id != NULL ? cfg->id :
	    "admin")) < 0) {
		r->cluster = NULL;
		snprintf(err, errlen, "Ceph client %s: %s", cfg->id != NULL ?
		    cfg->id : "admin", strerror(-rc));
		goto fail;
	}
	if ((rc = blk_rbd_configure(r, cfg, err, errlen)) < 0)
		goto fail;
	if ((rc = rados_connect(r->cluster)) < 0) {
		snprintf(err, errlen, "the Ceph cluster cannot be reached: "
		    "%s", strerror(-rc));
		goto fail;
	}
	snprintf(r->st.client, sizeof(r->st.client), "client.%" PRIu64,
	    rados_get_instance_id(r->cluster));
	if ((rc = rados_ioctx_create(r->cluster, cfg->pool, &r->ioctx)) < 0) {
		r->ioctx = NULL;
		snprintf(err, errlen, "Ceph pool %s: %s", cfg->pool,
		    rc == -ENOENT ? "no such pool" : strerror(-rc));
		goto fail;
	}
	rc = readonly ? rbd_open_read_only(r->ioctx, cfg->image, &r->image,
	    cfg->snap) : rbd_open(r->ioctx, cfg->image, &r->image, NULL);
	if (rc < 0) {
		r->image = NULL;
		snprintf(err, errlen, "RBD image %s/%s%s%s: %s", cfg->pool,
		    cfg->image, cfg->snap != NULL ? "@" : "",
		    cfg->snap != NULL ? cfg->snap : "",
		    rc == -ENOENT ? "no such image or snapshot" :
		    strerror(-rc));
		goto fail;
	}
	if ((rc = rbd_get_size(r->image, &r->size)) < 0) {
		snprintf(err, errlen, "RBD image %s/%s: its size: %s",
		    cfg->pool, cfg->image, strerror(-rc));
		goto fail;
	}
	r->size &= ~(uint64_t)511;
	if (r->size == 0) {
		snprintf(err, errlen, "RBD image %s/%s is smaller than one "
		    "sector", cfg->pool, cfg->image);
		rc = -EINVAL;
		goto fail;
	}
	if (cfg->lock && !readonly) {
		if ((rc = blk_rbd_take_lock(r, cfg, err, errlen)) < 0)
			goto fail;
		r->st.locked = true;
	}
	r->st.state = BLK_RBD_CONNECTED;
	r->st.size = r->size;
	memset(be, 0, sizeof(*be));
	be->ops = &blk_rbd_ops;
	be->ctx = r;
	be->size = r->size;
	be->readonly = readonly;
	if (cfg->serial != NULL)
		snprintf(be->serial, sizeof(be->serial), "%s", cfg->serial);
	*out = r;
	return 0;
fail:
	blk_rbd_destroy(r);
	return rc;
}

void
blk_rbd_stats(struct blk_rbd *r, struct blk_rbd_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->st;
	pthread_mutex_unlock(&r->lock);
}

void
blk_rbd_free(struct blk_rbd *r)
{
	if (r == NULL)
		return;
	blk_rbd_drain(r);
	blk_rbd_destroy(r);
}
