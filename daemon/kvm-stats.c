/*
 * See kvm-stats.h.  The file holds a header, one descriptor per
 * counter (fixed part plus a name of header.name_size bytes) and the
 * data; descriptors do not change while the file is open, so their
 * offsets are looked up once and each read is one pread() per counter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "kvm-stats.h"

const char *const kvm_stats_names[KVM_STATS_N] = { KVM_STATS_NAMES };

static int
kvm_stats_find(struct kvm_stats *s)
{
	struct kvm_stats_header h;
	struct kvm_stats_desc *d;
	size_t dsize;
	unsigned int i, k;
	char *descs;

	if (pread(s->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
	if (h.name_size == 0 || h.name_size > 4096 || h.num_desc > 4096)
		return -EPROTO;
	dsize = sizeof(*d) + h.name_size;
	descs = malloc(dsize * h.num_desc);
	if (descs == NULL)
		return -ENOMEM;
	if (pread(s->fd, descs, dsize * h.num_desc, h.desc_offset) !=
	    (ssize_t)(dsize * h.num_desc)) {
		free(descs);
		return -EIO;
	}
	for (i = 0; i < h.num_desc; i++) {
		d = (struct kvm_stats_desc *)(descs + i * dsize);
		d->name[h.name_size - 1] = '\0';
		if ((d->flags & KVM_STATS_TYPE_MASK) !=
		    KVM_STATS_TYPE_CUMULATIVE || d->size != 1)
			continue;
		for (k = 0; k < KVM_STATS_N; k++)
			if (strcmp(d->name, kvm_stats_names[k]) == 0)
				s->offset[k] = (int64_t)h.data_offset +
				    d->offset;
	}
	free(descs);
	return 0;
}

int
kvm_stats_open(struct kvm_stats *s, int vcpu_fd)
{
	unsigned int k;
	int ret;

	for (k = 0; k < KVM_STATS_N; k++)
		s->offset[k] = -1;
	s->fd = ioctl(vcpu_fd, KVM_GET_STATS_FD, NULL);
	if (s->fd < 0) {
		ret = -errno;
		s->fd = -1;
		return ret;
	}
	if ((ret = kvm_stats_find(s)) < 0)
		kvm_stats_close(s);
	return ret;
}

int
kvm_stats_read(const struct kvm_stats *s, int64_t *values)
{
	unsigned int k;
	uint64_t v;

	for (k = 0; k < KVM_STATS_N; k++) {
		values[k] = -1;
		if (s->fd < 0 || s->offset[k] < 0)
			continue;
		if (pread(s->fd, &v, sizeof(v), s->offset[k]) !=
		    (ssize_t)sizeof(v))
			return -EIO;
		values[k] = (int64_t)(v & INT64_MAX);
	}
	return 0;
}

void
kvm_stats_close(struct kvm_stats *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
