/*
 * Pure helpers of vmctl's command line: number and size parsing and
 * formatting.  No I/O, so that the unit tests can call them directly.
 */
#ifndef VMCTL_ARGS_H
#define VMCTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct option;

/* The largest --memory vmctl sends; the daemon applies its own range. */
#define CTL_SIZE_MAX_MIB	((int64_t)INT32_MAX)

/*
 * A SIZE argument in MiB: a decimal number of MiB, optionally followed by
 * M or MiB (MiB) or G or GiB (GiB), in any letter case.  Zero, signs,
 * fractions, blanks and other suffixes are refused with -EINVAL; values
 * over CTL_SIZE_MAX_MIB with -ERANGE.
 */
int	ctl_parse_size(const char *, int64_t *);

/*
 * A plain decimal number within [min, max]: -EINVAL when it is not one
 * (signs, blanks and suffixes included), -ERANGE when out of range.
 */
int	ctl_parse_number(const char *, int64_t, int64_t, int64_t *);

/* MiB as the shortest SIZE that reads back the same: "256M", "2G". */
void	ctl_format_mib(int64_t, char *, size_t);

/*
 * The password in the contents of a --vnc-password-file (buf, *len
 * bytes): one trailing "\n" or "\r\n" is dropped (*len shortened).
 * -ENODATA when nothing is left, -EINVAL when what is left holds a NUL,
 * a CR or a LF.  Its length is the daemon's to judge.
 */
int	ctl_password_text(const char *, size_t *);

/*
 * The mkstemp() template of a temporary file beside path, in the same
 * directory so that a rename can replace path in one step:
 * "dir/.base.XXXXXX".  -EINVAL when path names no file (empty, or
 * ending in '/'), -ENAMETOOLONG when it does not fit.
 */
int	ctl_temp_beside(const char *, char *, size_t);

/*
 * The options of one command line seen so far, by the value
 * getopt_long() returns for them: options that mean one setting are
 * refused when given again, rather than the last one silently winning.
 */
struct ctl_seen {
	bool seen[0x200];	/* short options and 0x100 + n */
};

/*
 * Record option c; when it was seen before and is not in repeatable
 * (the option values that may come again, such as --disk's, ending
 * with 0), return its long name in opts (ending with a NULL name) to
 * refuse it, else NULL.
 */
const char *ctl_option_again(struct ctl_seen *, const struct option *,
	    const int *, int);

#endif
