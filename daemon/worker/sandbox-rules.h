/*
 * The worker's system call filter, as libseccomp rules (sandbox-rules.c).
 * Used when vmmd is built, not when a worker runs: sandbox-gen.c turns
 * the rules into classic BPF once per build, and the worker loads that
 * (sandbox.c), so that no start pays for building it and no worker maps
 * libseccomp.
 */
#ifndef VMMD_SANDBOX_RULES_H
#define VMMD_SANDBOX_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <seccomp.h>

/*
 * In sanitizer builds the filter also allows what the sanitizers'
 * runtime does (sandbox-rules.c): the build that made the filter and
 * the worker that loads it are one build, so they agree.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_SANITIZERS	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDBOX_SANITIZERS	1
#endif
#endif
#ifdef SANDBOX_SANITIZERS
static const bool sandbox_sanitized = true;
#else
static const bool sandbox_sanitized = false;
#endif

/*
 * A pid no process can have (above the kernel's PID_MAX_LIMIT, 2^22):
 * built into the filter where the worker's own pid goes (tgkill to
 * itself only), for the worker to write over.
 */
#define SANDBOX_PID_PLACEHOLDER	0x7abcde01u

/*
 * The filter's rules in a new libseccomp context: read_files allows
 * read-only opens (the display's web server), network new TCP
 * connections (socket() of AF_INET and AF_INET6 only, and connect():
 * librbd's, for guests with Ceph RBD disks), self_pid is whom tgkill may
 * signal.  0, or -errno with a reason in err.
 */
int	sandbox_rules_build(scmp_filter_ctx *out, bool read_files,
	    bool network, uint32_t self_pid, char *err, size_t errlen);

/*
 * The disk reader's rules (sandbox_enter_reader() in sandbox.h): what
 * reading a disk through descriptors already open needs, and no more.
 * self_pid as above.  0, or -errno with a reason in err.
 */
int	sandbox_rules_build_reader(scmp_filter_ctx *out, uint32_t self_pid,
	    char *err, size_t errlen);

#endif
