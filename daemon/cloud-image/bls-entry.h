/*
 * Boot Loader Specification entries (type 1: loader/entries/NAME.conf, as
 * systemd-boot and Fedora's GRUB read them): the keys that make a Linux
 * boot, and the order that puts the newest first.
 *
 * Untrusted text: lines are cut at their limits; an entry without a
 * "linux" key is refused.
 */
#ifndef VMMD_BLS_ENTRY_H
#define VMMD_BLS_ENTRY_H

#include <stddef.h>

#define BLS_PATH_MAX		1024
#define BLS_OPTIONS_MAX		2048
#define BLS_MAX_INITRDS		4

struct bls_entry {
	char file[256];			/* its file name, for messages */
	char title[256];
	char version[128];
	char sort_key[128];
	char kernel[BLS_PATH_MAX];		/* the "linux" key */
	char initrd[BLS_MAX_INITRDS][BLS_PATH_MAX];
	unsigned int ninitrd;
	char options[BLS_OPTIONS_MAX];	/* every "options" line, joined */
};

/* Parse text (NUL-terminated) of the entry named file: 0 or -EINVAL. */
int	bls_entry_parse(const char *text, const char *file,
	    struct bls_entry *out);
/*
 * The specification's order: by sort-key, then version, then file
 * name, newest first: < 0 when a boots before b.
 */
int	bls_entry_cmp(const struct bls_entry *a, const struct bls_entry *b);

#endif
