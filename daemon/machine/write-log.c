/* See write-log.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devhost.h"
#include "write-log.h"

#define WRITE_LOG_PAGE	4096u

struct write_log {
	const struct devhost_ram *ram;
	unsigned int nram;
	uint64_t *bits[];	/* a bitmap per region */
};

static size_t
write_log_words(const struct devhost_ram *r)
{
	return (r->size / WRITE_LOG_PAGE + 63) / 64;
}

struct write_log *
write_log_new(const struct devhost_ram *ram, unsigned int nram)
{
	struct write_log *l;

	if ((l = calloc(1, sizeof(*l) + nram * sizeof(l->bits[0]))) == NULL)
		return NULL;
	l->ram = ram;
	l->nram = nram;
	for (unsigned int i = 0; i < nram; i++)
		if ((l->bits[i] = calloc(write_log_words(&ram[i]),
		    sizeof(uint64_t))) == NULL) {
			write_log_free(l);
			return NULL;
		}
	return l;
}

void
write_log_free(struct write_log *l)
{
	if (l == NULL)
		return;
	for (unsigned int i = 0; i < l->nram; i++)
		free(l->bits[i]);
	free(l);
}

void
write_log_clear(struct write_log *l)
{
	for (unsigned int i = 0; i < l->nram; i++)
		for (size_t k = 0; k < write_log_words(&l->ram[i]); k++)
			__atomic_store_n(&l->bits[i][k], 0, __ATOMIC_RELAXED);
}

void
write_log_mark(struct write_log *l, const void *hva, size_t len)
{
	const uint8_t *p = hva;
	uint64_t first, last;

	if (len == 0)
		return;
	for (unsigned int i = 0; i < l->nram; i++) {
		const struct devhost_ram *r = &l->ram[i];

		if (p < r->hva || (size_t)(p - r->hva) >= r->size)
			continue;
		first = (uint64_t)(p - r->hva) / WRITE_LOG_PAGE;
		last = (uint64_t)(p - r->hva) + len - 1;
		if (last >= r->size)
			last = r->size - 1;
		last /= WRITE_LOG_PAGE;
		/* After the write: whoever takes the bit sees the bytes. */
		for (uint64_t pg = first; pg <= last; pg++)
			__atomic_fetch_or(&l->bits[i][pg / 64],
			    (uint64_t)1 << (pg % 64), __ATOMIC_RELEASE);
		return;
	}
}

int
write_log_take(struct write_log *l, uint64_t gpa, uint64_t *bitmap,
    size_t words)
{
	for (unsigned int i = 0; i < l->nram; i++) {
		const struct devhost_ram *r = &l->ram[i];
		size_t n = write_log_words(r);

		if (r->gpa != gpa)
			continue;
		for (size_t k = 0; k < n && k < words; k++)
			bitmap[k] |= __atomic_exchange_n(&l->bits[i][k], 0,
			    __ATOMIC_ACQUIRE);
		return 0;
	}
	return -ENOENT;
}
