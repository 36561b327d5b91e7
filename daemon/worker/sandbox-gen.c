/*
 * Turns the worker's filter rules (sandbox-rules.c) into classic BPF
 * when vmmd is built, and writes them as a C header for sandbox.c:
 *
 *   sandbox-gen OUT.h
 *
 * Five filters (the guest's without and with read-only opens,
 * sandbox.h's read_files, each without and with new TCP connections,
 * sandbox.h's network; and the disk reader's), each with the index of the one instruction that holds
 * SANDBOX_PID_PLACEHOLDER, where a worker writes its pid; and the
 * names of the system call numbers, for the SIGSYS report.  A filter
 * with the placeholder anywhere but in exactly one comparison fails the
 * build.  libseccomp does the compiling, here, once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/filter.h>

#include "sandbox-rules.h"

#define SANDBOX_GEN_NAMES	512

static void __attribute__((noreturn))
gen_die(const char *what, const char *why)
{
	fprintf(stderr, "sandbox-gen: %s: %s\n", what, why);
	exit(1);
}

/* One filter, as an array and a struct sandbox_filter; its length. */
/* Which rules: the guest's (without or with read-only opens) or the
 * disk reader's. */
enum gen_kind { GEN_PLAIN, GEN_READ_FILES, GEN_NET, GEN_NET_READ_FILES,
    GEN_READER };

static size_t
gen_filter(FILE *out, const char *name, enum gen_kind kind)
{
	struct sock_filter *insns;
	scmp_filter_ctx ctx;
	char err[256];
	size_t n, pid_at = 0, seen = 0;
	off_t len;
	int fd, r;

	r = kind == GEN_READER ? sandbox_rules_build_reader(&ctx,
	    SANDBOX_PID_PLACEHOLDER, err, sizeof(err)) :
	    sandbox_rules_build(&ctx, kind == GEN_READ_FILES ||
	    kind == GEN_NET_READ_FILES, kind == GEN_NET ||
	    kind == GEN_NET_READ_FILES, SANDBOX_PID_PLACEHOLDER, err,
	    sizeof(err));
	if (r < 0)
		gen_die(name, err);
	if ((fd = memfd_create("sandbox-bpf", MFD_CLOEXEC)) < 0)
		gen_die(name, strerror(errno));
	if ((r = seccomp_export_bpf(ctx, fd)) < 0)
		gen_die(name, strerror(-r));
	seccomp_release(ctx);
	len = lseek(fd, 0, SEEK_CUR);
	if (len <= 0 || len % sizeof(*insns) != 0)
		gen_die(name, "libseccomp wrote no whole program");
	n = (size_t)len / sizeof(*insns);
	if ((insns = malloc((size_t)len)) == NULL ||
	    pread(fd, insns, (size_t)len, 0) != len)
		gen_die(name, "cannot read the program back");
	close(fd);
	for (size_t i = 0; i < n; i++) {
		if (insns[i].k != SANDBOX_PID_PLACEHOLDER)
			continue;
		if (insns[i].code != (BPF_JMP | BPF_JEQ | BPF_K))
			gen_die(name, "the pid placeholder outside a "
			    "comparison");
		pid_at = i;
		seen++;
	}
	if (seen != 1)
		gen_die(name, "the pid placeholder is not in exactly one "
		    "comparison");
	fprintf(out, "static const struct sock_filter sandbox_insns_%s[] = {\n",
	    name);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "\t{ 0x%04x, %u, %u, 0x%08x },\n", insns[i].code,
		    insns[i].jt, insns[i].jf, insns[i].k);
	fprintf(out, "};\n\nstatic const struct sandbox_filter "
	    "sandbox_filter_%s = {\n\tsandbox_insns_%s, %zu, %zu,\n};\n\n",
	    name, name, n, pid_at);
	free(insns);
	return n;
}

int
main(int argc, char *argv[])
{
	size_t n, max = 0;
	FILE *out;

	if (argc != 2)
		gen_die("usage", "sandbox-gen OUT.h");
	if ((out = fopen(argv[1], "we")) == NULL)
		gen_die(argv[1], strerror(errno));
	fprintf(out, "/* Made by sandbox-gen from sandbox-rules.c when vmmd "
	    "was built: do not edit. */\n"
	    "#ifndef VMMD_SANDBOX_FILTERS_H\n#define VMMD_SANDBOX_FILTERS_H\n\n"
	    "#include <linux/filter.h>\n\n"
	    "#define SANDBOX_FILTER_SANITIZED\t%d\n\n"
	    "struct sandbox_filter {\n"
	    "\tconst struct sock_filter *insns;\n"
	    "\tunsigned int len;\n"
	    "\tunsigned int pid_at;\t/* the instruction to write the pid in */\n"
	    "};\n\n", sandbox_sanitized ? 1 : 0);
	n = gen_filter(out, "plain", GEN_PLAIN);
	max = n > max ? n : max;
	n = gen_filter(out, "read_files", GEN_READ_FILES);
	max = n > max ? n : max;
	n = gen_filter(out, "net", GEN_NET);
	max = n > max ? n : max;
	n = gen_filter(out, "net_read_files", GEN_NET_READ_FILES);
	max = n > max ? n : max;
	n = gen_filter(out, "reader", GEN_READER);
	max = n > max ? n : max;
	fprintf(out, "#define SANDBOX_FILTER_MAX\t%zu\n\n", max);
	fprintf(out, "#define SANDBOX_NAMES\t%d\n"
	    "static const char *const sandbox_names[SANDBOX_NAMES] = {\n",
	    SANDBOX_GEN_NAMES);
	for (int nr = 0; nr < SANDBOX_GEN_NAMES; nr++) {
		char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE,
		    nr);

		if (s != NULL)
			fprintf(out, "\t[%d] = \"%s\",\n", nr, s);
		free(s);
	}
	fprintf(out, "};\n\n#endif\n");
	if (fclose(out) != 0)
		gen_die(argv[1], strerror(errno));
	return 0;
}
