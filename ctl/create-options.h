/*
 * The options of create and run (create-args.c parses them), as one
 * table that vmctl(1) is held to by tests/unit/test-docs.c.
 */
#ifndef VMCTL_CREATE_OPTIONS_H
#define VMCTL_CREATE_OPTIONS_H

#include <getopt.h>

/*
 * getopt_long's table, ended by an all-zero entry: the common options
 * first (CTL_COMMON_LONGOPTS), then create's own.  An entry with the
 * value of an earlier one is an older name of that option.  Long
 * options only: their values are not in any optstring.
 */
extern const struct option create_options[];

#endif
