/*
 * Guest CPUID: what the host's KVM supports, with a topology that
 * matches the machine (one package, one thread per core, APIC ID =
 * vCPU index), so the guest's view agrees with the MP table.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kvm.h"
#include "vcpu.h"

static unsigned int
cpuid_order(unsigned int n)
{
	unsigned int bits = 0;

	while ((1u << bits) < n)
		bits++;
	return bits;
}

static void
cpuid_fix_entry(struct kvm_cpuid_entry2 *e, unsigned int apic_id,
    unsigned int ncpus, bool tsc_deadline)
{
	unsigned int core_bits = cpuid_order(ncpus);

	switch (e->function) {
	case 1:
		/* EBX: initial APIC ID, logical processors per package. */
		e->ebx &= 0x0000ffff;
		e->ebx |= apic_id << 24;
		e->ebx |= (ncpus & 0xff) << 16;
		if (ncpus > 1)
			e->edx |= 1u << 28;	/* HTT: the count is valid */
		else
			e->edx &= ~(1u << 28);
		e->ecx |= 1u << 31;		/* running on a hypervisor */
		/*
		 * KVM never reports the TSC-deadline timer here because it
		 * depends on the in-kernel LAPIC, which we always create.
		 * Without it Linux calibrates the LAPIC timer against the
		 * PIT, which fails on a busy host and disables the timer.
		 */
		if (tsc_deadline)
			e->ecx |= 1u << 24;
		break;
	case 4:
		/* Intel deterministic cache parameters: cores per package. */
		if ((e->eax & 0x1f) == 0)
			break;
		e->eax &= 0x00003fff;
		e->eax |= ((1u << core_bits) - 1) << 26;
		/* L3 (level 3) is shared by the package, others private. */
		if (((e->eax >> 5) & 7) == 3)
			e->eax |= (ncpus - 1) << 14;
		break;
	case 0xb:
	case 0x1f:
		/* Extended topology: SMT level then core level. */
		e->edx = apic_id;
		if (e->index == 0) {
			e->eax = 0;
			e->ebx = 1;
			e->ecx = (1u << 8) | 0;
		} else if (e->index == 1) {
			e->eax = core_bits;
			e->ebx = ncpus;
			e->ecx = (2u << 8) | 1;
		} else {
			e->eax = 0;
			e->ebx = 0;
			e->ecx = e->index;
		}
		break;
	case 0x80000008:
		/* AMD: number of cores minus one, APIC ID size. */
		e->ecx &= ~0xf0ffu;
		e->ecx |= (ncpus - 1) & 0xff;
		e->ecx |= core_bits << 12;
		break;
	case 0x8000001e:
		e->eax = apic_id;
		e->ebx = apic_id;	/* compute unit = core, one thread */
		e->ecx = 0;
		break;
	}
}

int
cpuid_setup(int kvm_fd, int vcpu_fd, unsigned int index, unsigned int nvcpus)
{
	struct kvm_cpuid2 *cpuid;
	bool tsc_deadline;
	unsigned int i;
	int ret;

	ret = kvm_get_supported_cpuid(kvm_fd, &cpuid);
	if (ret < 0)
		return ret;
	tsc_deadline = kvm_check_extension(kvm_fd,
	    KVM_CAP_TSC_DEADLINE_TIMER) > 0;
	for (i = 0; i < cpuid->nent; i++)
		cpuid_fix_entry(&cpuid->entries[i], index, nvcpus,
		    tsc_deadline);
	ret = kvm_ioctl(vcpu_fd, KVM_SET_CPUID2, cpuid);
	free(cpuid);
	return ret < 0 ? ret : 0;
}
