/* See ram-log.h. */
#include <errno.h>
#include <linux/kvm.h>

#include "devhost.h"
#include "kvm.h"
#include "machine-slots.h"
#include "machine.h"
#include "pc-layout.h"
#include "ram-log.h"

size_t
ram_log_regions(const struct machine *m)
{
	return m->high != NULL ? 2 : 1;
}

void
ram_log_region(const struct machine *m, size_t i, uint64_t *gpa,
    uint64_t *size, uint8_t **host)
{
	*gpa = i == 0 ? 0 : PC_HIGH_RAM_START;
	*size = i == 0 ? m->mem.low_size : m->mem.high_size;
	*host = i == 0 ? m->mem.low : m->high;
}

static int
ram_log_slot(struct machine *m, size_t i, bool on)
{
	uint64_t gpa, size;
	uint8_t *host;

	ram_log_region(m, i, &gpa, &size, &host);
	return kvm_set_memory_flags(m->vm_fd, i == 0 ? MACHINE_SLOT_LOW :
	    MACHINE_SLOT_HIGH, gpa, size, host, on ? KVM_MEM_LOG_DIRTY_PAGES :
	    0);
}

int
ram_log_set(struct machine *m, bool on)
{
	size_t i, n = ram_log_regions(m);
	int rc;

	/* The devices' log first: no page they write is missed. */
	if ((rc = devhost_write_log(m->dh, on)) < 0)
		return rc;
	for (i = 0; i < n; i++)
		if ((rc = ram_log_slot(m, i, on)) < 0) {
			while (on && i-- > 0)
				ram_log_slot(m, i, false);
			devhost_write_log(m->dh, false);
			return rc;
		}
	return 0;
}

int
ram_log_get(struct machine *m, size_t i, uint64_t *bitmap)
{
	uint64_t gpa, size;
	uint8_t *host;
	int rc;

	if (i >= ram_log_regions(m))
		return -EINVAL;
	ram_log_region(m, i, &gpa, &size, &host);
	if ((rc = kvm_get_dirty_log(m->vm_fd, i == 0 ? MACHINE_SLOT_LOW :
	    MACHINE_SLOT_HIGH, bitmap)) < 0)
		return rc;
	return devhost_write_log_take(m->dh, gpa, bitmap,
	    (size / 4096 + 63) / 64);
}
