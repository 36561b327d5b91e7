/*
 * See kvm-stats.h.  The file holds a header, one descriptor per
 * statistic (a fixed part followed by a name of header.name_size bytes)
 * and a data block of u64 values.  Descriptors do not change while the
 * file is open, so they are parsed once; a read is one pread() of the
 * data block.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "kvm-stats.h"

/* Generous bounds against a malformed file. */
#define KVM_STATS_MAX_DESC	4096
#define KVM_STATS_MAX_NAME	1024

static int
kvm_stats_take(struct kvm_stats *s, const struct kvm_stats_desc *d,
    const char *name)
{
	char *copy;

	copy = strdup(name);
	if (copy == NULL)
		return -ENOMEM;
	s->names[s->n] = copy;
	s->index[s->n] = d->offset / sizeof(uint64_t);
	s->flags[s->n] = d->flags;
	s->size[s->n] = d->size;
	s->bucket[s->n] = d->bucket_size;
	s->exponent[s->n] = d->exponent;
	s->n++;
	return 0;
}

static int
kvm_stats_parse(struct kvm_stats *s)
{
	struct kvm_stats_header h;
	struct kvm_stats_desc d;
	size_t dsize, end, data_end = 0;
	unsigned int i;
	char *descs;
	int ret = 0;

	if (pread(s->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
	if (h.name_size == 0 || h.name_size > KVM_STATS_MAX_NAME ||
	    h.num_desc > KVM_STATS_MAX_DESC)
		return -EPROTO;
	dsize = sizeof(d) + h.name_size;
	descs = malloc(dsize * h.num_desc);
	s->names = calloc(h.num_desc + 1, sizeof(*s->names));
	s->index = calloc(h.num_desc + 1, sizeof(*s->index));
	s->flags = calloc(h.num_desc + 1, sizeof(*s->flags));
	s->size = calloc(h.num_desc + 1, sizeof(*s->size));
	s->bucket = calloc(h.num_desc + 1, sizeof(*s->bucket));
	s->exponent = calloc(h.num_desc + 1, sizeof(*s->exponent));
	if (descs == NULL || s->names == NULL || s->index == NULL ||
	    s->flags == NULL || s->size == NULL || s->bucket == NULL ||
	    s->exponent == NULL) {
		free(descs);
		return -ENOMEM;
	}
	if (pread(s->fd, descs, dsize * h.num_desc, h.desc_offset) !=
	    (ssize_t)(dsize * h.num_desc)) {
		free(descs);
		return -EIO;
	}
	for (i = 0; i < h.num_desc && ret == 0; i++) {
		/* Copied out: with an odd name_size a descriptor in the
		 * file is not aligned for the struct. */
		char *name = descs + i * dsize + sizeof(d);

		memcpy(&d, descs + i * dsize, sizeof(d));
		name[h.name_size - 1] = '\0';
		end = (size_t)d.offset + (size_t)d.size * sizeof(uint64_t);
		if (d.offset % sizeof(uint64_t) != 0 ||
		    end > 64 * KVM_STATS_MAX_DESC * sizeof(uint64_t)) {
			ret = -EPROTO;
			break;
		}
		if (end > data_end)
			data_end = end;
		if (d.size >= 1)
			ret = kvm_stats_take(s, &d, name);
	}
	free(descs);
	if (ret < 0)
		return ret;
	s->data_offset = h.data_offset;
	s->data_size = data_end;
	s->data = calloc(1, data_end ? data_end : 1);
	return s->data == NULL ? -ENOMEM : 0;
}

int
kvm_stats_open(struct kvm_stats *s, int fd)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->fd = ioctl(fd, KVM_GET_STATS_FD, NULL);
	if (s->fd < 0) {
		ret = -errno;
		s->fd = -1;
		return ret;
	}
	if ((ret = kvm_stats_parse(s)) < 0)
		kvm_stats_close(s);
	return ret;
}

int
kvm_stats_read(struct kvm_stats *s)
{
	if (s->fd < 0)
		return -EBADF;
	if (pread(s->fd, s->data, s->data_size, s->data_offset) !=
	    (ssize_t)s->data_size)
		return -EIO;
	return 0;
}

uint64_t
kvm_stats_value(const struct kvm_stats *s, unsigned int i)
{
	return s->data[s->index[i]];
}

int
kvm_stats_is_counter(const struct kvm_stats *s, unsigned int i)
{
	return (s->flags[i] & KVM_STATS_TYPE_MASK) ==
	    KVM_STATS_TYPE_CUMULATIVE && s->size[i] == 1;
}

int
kvm_stats_is_histogram(const struct kvm_stats *s, unsigned int i)
{
	uint32_t type = s->flags[i] & KVM_STATS_TYPE_MASK;

	return type == KVM_STATS_TYPE_LINEAR_HIST ||
	    type == KVM_STATS_TYPE_LOG_HIST;
}

/* The upper bound of bucket b (the lower one for the last bucket). */
static uint64_t
kvm_stats_bound(const struct kvm_stats *s, unsigned int i, unsigned int b)
{
	bool last = b + 1 == s->size[i];

	if ((s->flags[i] & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_LINEAR_HIST)
		return (uint64_t)s->bucket[i] * (last ? b : b + 1);
	/* Log2: bucket 0 holds 0, bucket b holds [2^(b-1), 2^b). */
	if (b == 0)
		return 0;
	if (b >= 64)
		return UINT64_MAX;
	return last ? (uint64_t)1 << (b - 1) : ((uint64_t)1 << b) - 1;
}

void
kvm_stats_summary(const struct kvm_stats *s, unsigned int i,
    struct kvm_stats_hist *h)
{
	const uint64_t *v = &s->data[s->index[i]];
	uint64_t seen = 0;
	bool median = false;
	unsigned int b;

	memset(h, 0, sizeof(*h));
	for (b = 0; b < s->size[i]; b++)
		h->samples += v[b];
	if (h->samples == 0)
		return;
	for (b = 0; b < s->size[i]; b++) {
		seen += v[b];
		if (!median && seen * 2 >= h->samples) {
			h->p50 = kvm_stats_bound(s, i, b);
			median = true;
		}
		if (seen * 100 >= h->samples * 99) {
			h->p99 = kvm_stats_bound(s, i, b);
			break;
		}
	}
}

void
kvm_stats_close(struct kvm_stats *s)
{
	unsigned int i;

	if (s->fd >= 0)
		close(s->fd);
	for (i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->index);
	free(s->flags);
	free(s->size);
	free(s->bucket);
	free(s->exponent);
	free(s->data);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}
