/*
 * Thin wrappers around the KVM ioctls the worker uses.  Every function
 * returns 0 (or a non-negative result) or a negative errno, so callers
 * never look at errno themselves.
 */
#ifndef VMMD_KVM_H
#define VMMD_KVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

int kvm_open(void);
/* Whether fd is a KVM system descriptor of our API: 0 or -ENOTSUP. */
int kvm_check(int fd);
int kvm_check_extension(int fd, long cap);
int kvm_create_vm(int kvm_fd);
int kvm_vcpu_mmap_size(int kvm_fd);
int kvm_set_memory(int vm_fd, uint32_t slot, uint64_t gpa, uint64_t size,
    void *host);
/* flags: KVM_MEM_LOG_DIRTY_PAGES, KVM_MEM_READONLY. */
int kvm_set_memory_flags(int vm_fd, uint32_t slot, uint64_t gpa,
    uint64_t size, void *host, uint32_t flags);
/*
 * The pages of a dirty-logged slot written since the last call (one bit
 * a page, 64-bit words), and forget them.
 */
int kvm_get_dirty_log(int vm_fd, uint32_t slot, uint64_t *bitmap);
int kvm_create_irqchip(int vm_fd);
int kvm_create_pit2(int vm_fd);
int kvm_set_tss_addr(int vm_fd, uint64_t addr);
int kvm_set_identity_map_addr(int vm_fd, uint64_t addr);
/*
 * KVM_IRQ_LINE_STATUS: 0 or -errno; *status as KVM reports it: > 0
 * delivered (to that many CPUs), 0 coalesced (still pending from the
 * last edge), < 0 masked or otherwise not delivered.
 */
int kvm_irq_line(int vm_fd, uint32_t gsi, int level, int *status);
/*
 * KVM_IOEVENTFD: signal efd for writes of len bytes at guest physical
 * addr (assign), or stop (deassign).  0 or -errno.
 */
int kvm_ioeventfd(int vm_fd, uint64_t addr, unsigned int len, int efd,
    bool assign);
/* KVM_SIGNAL_MSI: 0 (delivered or blocked by the guest) or -errno. */
int kvm_signal_msi(int vm_fd, uint64_t addr, uint32_t data);
/* KVM_SET_GSI_ROUTING: the whole table, replacing the last.  0 or -errno. */
int kvm_set_gsi_routing(int vm_fd, const struct kvm_irq_routing *r);
/*
 * KVM_IRQFD: a write to eventfd efd raises gsi in the kernel (assign),
 * or no longer (deassign; KVM is done with efd when this returns).
 */
int kvm_irqfd(int vm_fd, int efd, uint32_t gsi, bool assign);
int kvm_create_vcpu(int vm_fd, unsigned int id);
/* Returns a malloc'd table of what the host supports (free() it). */
int kvm_get_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out);
int kvm_ioctl(int fd, unsigned long req, void *arg);
/*
 * kvm_ioctl(), and on failure "what: strerror" into err (errlen bytes):
 * the ioctl's result or -errno.
 */
int kvm_ioctl_err(int fd, unsigned long req, void *arg, const char *what,
    char *err, size_t errlen);

#endif
