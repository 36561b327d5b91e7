/*
 * GRUB's configuration file, as far as it can be read without running
 * GRUB: the entry its menu boots by default, and that entry's kernel,
 * initrds, command line and the file system it finds them on.
 *
 * What is understood: "set name=value" and "name=value" (the last one
 * wins, whatever "if" it sits in: generated files set the default in
 * both branches of a test, the fallback last), "$name" and "${name}"
 * in words, GRUB's quoting, "menuentry" and "submenu" blocks (other
 * blocks, "function", are skipped), and in an entry "linux" (and
 * linuxefi, linux16), "initrd" (initrdefi, initrd16) and "search
 * --set=root" by file system UUID.  The default: "default" as a
 * number, an entry's title or id, or a path of them joined by '>'
 * into submenus; anything GRUB would not find falls back to entry 0,
 * as GRUB does.  grubenv's variables (saved_entry) are known first.
 *
 * The text is untrusted: every length is bounded; what does not fit
 * or parse is left out.
 */
#ifndef VMMD_GRUB_CFG_H
#define VMMD_GRUB_CFG_H

#include <stddef.h>

#define GRUB_PATH_MAX		1024
#define GRUB_ARGS_MAX		2048
#define GRUB_MAX_INITRDS	4

struct grub_entry {
	char title[256];	/* with its submenus', joined by '>' */
	char kernel[GRUB_PATH_MAX];
	char args[GRUB_ARGS_MAX];
	char initrd[GRUB_MAX_INITRDS][GRUB_PATH_MAX];
	unsigned int ninitrd;
	char root_uuid[64];	/* search --fs-uuid --set=root, or "" */
	unsigned int index;	/* its place in the menu (0: the first) */
};

/*
 * The default entry of cfg (NUL-terminated text of grub.cfg), env the
 * text of grubenv or NULL: 0, or -ENOENT when no entry boots a Linux
 * kernel, with the reason in why.
 */
int	grub_cfg_default(const char *cfg, const char *env,
	    struct grub_entry *out, char *why, size_t whylen);

#endif
