/*
 * VM definitions on disk: one file DIR/NAME.json each, written
 * atomically (a crash leaves the old definition or the new one, whole),
 * read back through the same parser that checks vm.create's arguments
 * (vmconfig.h), so that a file can only hold what a client could have
 * created.  Calls into vmconfig.c; vmconfig.c calls nothing of it.
 */
#ifndef VMMD_VMCONFIG_STORE_H
#define VMMD_VMCONFIG_STORE_H

#include <stddef.h>

struct vm_def;

/*
 * fsync the directory dir, so that a rename or unlink in it lasts (the
 * definitions' and the overlays' directories): 0 or -errno.
 */
int	config_sync_dir(const char *dir);
/*
 * Write dir/NAME.json atomically: a temporary file in dir, created
 * owner-only (0600: it may hold the VNC password), fsync, rename over
 * the old file, fsync of dir.  0 or -errno (err filled).
 */
int	config_save(const char *dir, const struct vm_def *def, char *err,
	    size_t errlen);
/*
 * A test environment variable: the name of a step of config_save()
 * ("save-half-written", "save-written", "save-synced", "save-renamed",
 * "save-done") or config_remove() ("remove-unlinked", "remove-done")
 * at which the process _exit()s with CONFIG_CRASH_STATUS.  Whatever
 * the step, dir then holds the old or the new definition, whole.
 */
#define CONFIG_CRASH_ENV	"VMMD_TEST_CRASH_AT"
#define CONFIG_CRASH_STATUS	86

/* Remove dir/NAME.json (a missing file is fine) and fsync dir. */
int	config_remove(const char *dir, const char *name, char *err,
	    size_t errlen);

/* Read and validate one file (without CONFIG_CHECK_FILES). */
int	config_load_file(const char *path, struct vm_def **defp, char *err,
	    size_t errlen);

/*
 * Load every dir/NAME.json.  For each file, cb gets either a definition
 * (the callee owns it) or, for a file that is unreadable or invalid,
 * def NULL and the reason in err.  Definitions are never changed; the
 * temporary files of a config_save() that a crash cut short are
 * removed.  Returns 0, or -errno when dir itself cannot be read.
 */
typedef void (*config_load_cb)(void *arg, const char *file,
    struct vm_def *def, const char *err);
int	config_load_dir(const char *dir, config_load_cb cb, void *arg);

#endif
