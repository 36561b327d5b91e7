/*
 * KVM ioctl wrappers: 0/-errno, CLOEXEC everywhere, EINTR retried where
 * an ioctl is not meant to be interrupted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kvm.h"

int
kvm_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, req, arg);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

int
kvm_ioctl_err(int fd, unsigned long req, void *arg, const char *what,
    char *err, size_t errlen)
{
	int ret;

	ret = kvm_ioctl(fd, req, arg);
	if (ret < 0)
		snprintf(err, errlen, "%s: %s", what, strerror(-ret));
	return ret;
}

int
kvm_open(void)
{
	int fd;

	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (kvm_check(fd) < 0) {
		close(fd);
		return -ENOTSUP;
	}
	return fd;
}

int
kvm_check(int fd)
{
	return ioctl(fd, KVM_GET_API_VERSION, 0) == KVM_API_VERSION ? 0 :
	    -ENOTSUP;
}

int
kvm_check_extension(int fd, long cap)
{
	return kvm_ioctl(fd, KVM_CHECK_EXTENSION, (void *)cap);
}

/*
 * An fd a KVM ioctl returned (or its -errno), made close-on-exec: the
 * kernel creates VM and vCPU fds without it.
 */
static int
kvm_cloexec(int fd)
{
	int err;

	if (fd >= 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int
kvm_create_vm(int kvm_fd)
{
	return kvm_cloexec(kvm_ioctl(kvm_fd, KVM_CREATE_VM, 0));
}

int
kvm_vcpu_mmap_size(int kvm_fd)
{
	return kvm_ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
}

int
kvm_set_memory(int vm_fd, uint32_t slot, uint64_t gpa, uint64_t size,
    void *host)
{
	return kvm_set_memory_flags(vm_fd, slot, gpa, size, host, 0);
}

int
kvm_set_memory_flags(int vm_fd, uint32_t slot, uint64_t gpa, uint64_t size,
    void *host, uint32_t flags)
{
	struct kvm_userspace_memory_region region = {
		.slot = slot,
		.flags = flags,
		.guest_phys_addr = gpa,
		.memory_size = size,
		.userspace_addr = (uintptr_t)host,
	};

	return kvm_ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region);
}

int
kvm_create_irqchip(int vm_fd)
{
	return kvm_ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0);
}

int
kvm_create_pit2(int vm_fd)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };

	return kvm_ioctl(vm_fd, KVM_CREATE_PIT2, &pit);
}

int
kvm_set_tss_addr(int vm_fd, uint64_t addr)
{
	return kvm_ioctl(vm_fd, KVM_SET_TSS_ADDR, (void *)(uintptr_t)addr);
}

int
kvm_set_identity_map_addr(int vm_fd, uint64_t addr)
{
	return kvm_ioctl(vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &addr);
}

int
kvm_ioeventfd(int vm_fd, uint64_t addr, unsigned int len, int efd,
    bool assign)
{
	struct kvm_ioeventfd io = {
		.addr = addr,
		.len = len,
		.fd = efd,
		.flags = assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN,
	};
	int ret = kvm_ioctl(vm_fd, KVM_IOEVENTFD, &io);

	return ret < 0 ? ret : 0;
}

int
kvm_signal_msi(int vm_fd, uint64_t addr, uint32_t data)
{
	struct kvm_msi msi = {
		.address_lo = (uint32_t)addr,
		.address_hi = (uint32_t)(addr >> 32),
		.data = data,
	};
	int ret = kvm_ioctl(vm_fd, KVM_SIGNAL_MSI, &msi);

	return ret < 0 ? ret : 0;
}

int
kvm_irq_line(int vm_fd, uint32_t gsi, int level, int *status)
{
	struct kvm_irq_level irq = { .irq = gsi, .level = level };
	int ret;

	ret = kvm_ioctl(vm_fd, KVM_IRQ_LINE_STATUS, &irq);
	if (ret < 0)
		return ret;
	*status = irq.status;
	return 0;
}

int
kvm_create_vcpu(int vm_fd, unsigned int id)
{
	return kvm_cloexec(kvm_ioctl(vm_fd, KVM_CREATE_VCPU,
	    (void *)(uintptr_t)id));
}

int
kvm_get_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out)
{
	struct kvm_cpuid2 *cpuid;
	unsigned int nent = 64;
	int ret;

	/* The kernel says E2BIG until the table is big enough. */
	for (;;) {
		cpuid = calloc(1, sizeof(*cpuid) +
		    nent * sizeof(struct kvm_cpuid_entry2));
		if (cpuid == NULL)
			return -ENOMEM;
		cpuid->nent = nent;
		ret = kvm_ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, cpuid);
		if (ret == 0)
			break;
		free(cpuid);
		if (ret != -E2BIG || nent >= 4096)
			return ret;
		nent *= 2;
	}
	*out = cpuid;
	return 0;
}

int
kvm_get_dirty_log(int vm_fd, uint32_t slot, uint64_t *bitmap)
{
	struct kvm_dirty_log log = { .slot = slot, .dirty_bitmap = bitmap };

	return kvm_ioctl(vm_fd, KVM_GET_DIRTY_LOG, &log);
}

int
kvm_set_gsi_routing(int vm_fd, const struct kvm_irq_routing *r)
{
	int ret = kvm_ioctl(vm_fd, KVM_SET_GSI_ROUTING, (void *)r);

	return ret < 0 ? ret : 0;
}

int
kvm_irqfd(int vm_fd, int efd, uint32_t gsi, bool assign)
{
	struct kvm_irqfd irqfd = {
		.fd = (uint32_t)efd,
		.gsi = gsi,
		.flags = assign ? 0 : KVM_IRQFD_FLAG_DEASSIGN,
	};
	int ret = kvm_ioctl(vm_fd, KVM_IRQFD, &irqfd);

	return ret < 0 ? ret : 0;
}
