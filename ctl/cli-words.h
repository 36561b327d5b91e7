/*
 * The daemon's errors in vmctl's words: a vm.create that vmctl made from
 * its options is refused naming the protocol's members ("vnc_web: ...");
 * the user typed options (--vnc-web).  The daemon knows nothing of
 * vmctl, so the mapping is here.  No I/O.
 */
#ifndef VMCTL_CLI_WORDS_H
#define VMCTL_CLI_WORDS_H

#include <stddef.h>

/*
 * Rewrites desc (a NUL-terminated string in a buffer of len bytes) in
 * place: a leading member name ("memory_mib: ", "disks[1]: ",
 * "cloud_init: ssh_keys[0]: ") becomes the option that sets it, and a
 * few messages whose words only make sense in the protocol become
 * sentences.  Anything else is left as it is.
 */
void	cli_words(char *, size_t);

#endif
