/* See qcow2-cache.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qcow2-cache.h"

int
qcow2_cache_init(struct qcow2_cache *c, size_t cluster_size)
{
	memset(c, 0, sizeof(*c));
	c->cluster_size = cluster_size;
	return 0;
}

void
qcow2_cache_fini(struct qcow2_cache *c)
{
	for (unsigned int i = 0; i < QCOW2_CACHE_ENTRIES; i++) {
		free(c->e[i].data);
		c->e[i].data = NULL;
	}
}

/* The entry holding off, or the one to evict for it (*hit false). */
static struct qcow2_cache_entry *
qcow2_cache_find(struct qcow2_cache *c, uint64_t off, int *hit)
{
	struct qcow2_cache_entry *victim = &c->e[0];

	for (unsigned int i = 0; i < QCOW2_CACHE_ENTRIES; i++) {
		struct qcow2_cache_entry *e = &c->e[i];

		if (e->off == off) {
			*hit = 1;
			return e;
		}
		if (e->off == 0 ? victim->off != 0 || e->used < victim->used :
		    victim->off != 0 && e->used < victim->used)
			victim = e;
	}
	*hit = 0;
	return victim;
}

/*
 * An entry's cluster buffer is made on its first use: a small image
 * never pays for 32 clusters of each cache.
 */
static int
qcow2_cache_buffer(struct qcow2_cache *c, struct qcow2_cache_entry *e)
{
	if (e->data == NULL && (e->data = malloc(c->cluster_size)) == NULL)
		return -ENOMEM;
	return 0;
}

static int
qcow2_cache_read(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* a table past the end: damage */
		got += (size_t)n;
	}
	return 0;
}

int
qcow2_cache_get(struct qcow2_cache *c, int fd, uint64_t off, uint8_t **tab)
{
	struct qcow2_cache_entry *e;
	int hit, ret;

	e = qcow2_cache_find(c, off, &hit);
	if (hit) {
		c->hits++;
	} else {
		c->misses++;
		e->off = 0;
		if ((ret = qcow2_cache_buffer(c, e)) < 0)
			return ret;
		if ((ret = qcow2_cache_read(fd, e->data, c->cluster_size,
		    off)) < 0)
			return ret;
		e->off = off;
	}
	e->used = ++c->clock;
	*tab = e->data;
	return 0;
}

uint8_t *
qcow2_cache_fresh(struct qcow2_cache *c, uint64_t off)
{
	struct qcow2_cache_entry *e;
	int hit;

	e = qcow2_cache_find(c, off, &hit);
	if (qcow2_cache_buffer(c, e) < 0)
		return NULL;
	e->off = off;
	e->used = ++c->clock;
	memset(e->data, 0, c->cluster_size);
	return e->data;
}

void
qcow2_cache_drop(struct qcow2_cache *c, uint64_t off)
{
	for (unsigned int i = 0; i < QCOW2_CACHE_ENTRIES; i++)
		if (c->e[i].off == off)
			c->e[i].off = 0;
}
