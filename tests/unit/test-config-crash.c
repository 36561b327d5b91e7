/*
 * Durability of VM definitions: a process that dies at any step of
 * config_save() or config_remove() (VMMD_TEST_CRASH_AT makes it _exit
 * there) leaves the old definition or the new one, whole, and never a
 * torn file; the next load removes what the crash left behind.
 *
 * A killed process keeps what it wrote in the page cache, so this
 * proves the order of the steps (a complete temporary file renamed
 * over the old one); the fsyncs of the file and the directory, which
 * carry that order across a power cut, are what config_save() does
 * between them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "vmconfig.h"

static char tmpdir[] = "/tmp/test-config-crash.XXXXXX";

struct loaded {
	unsigned int n;			/* definitions loaded */
	unsigned int memory_mib;	/* of "vm" */
	unsigned int skipped;		/* files refused */
};

static void
load_cb(void *arg, const char *file, struct vm_def *def, const char *err)
{
	struct loaded *l = arg;

	if (def == NULL) {
		tap_diag("%s: %s", file, err);
		l->skipped++;
		return;
	}
	l->n++;
	if (strcmp(def->name, "vm") == 0)
		l->memory_mib = def->memory_mib;
	config_def_free(def);
}

static struct vm_def *
def_with(unsigned int memory_mib)
{
	struct json_object *obj;
	struct vm_def *def;
	char text[256], err[256];

	snprintf(text, sizeof(text), "{\"name\":\"vm\",\"memory_mib\":%u,"
	    "\"cmdline\":\"%0100d\"}", memory_mib, 7);
	obj = json_tokener_parse(text);
	if (obj == NULL || config_parse(obj, 0, &def, err, sizeof(err)) < 0)
		tap_bail("definition: %s", err);
	json_object_put(obj);
	return def;
}

/* Files in the directory (temporary ones too). */
static int
files(void)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(tmpdir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/*
 * In a child: save "vm" with memory_mib (or remove it when 0), dying at
 * step.  Returns the child's exit status.
 */
static int
change_and_die(const char *step, unsigned int memory_mib)
{
	struct vm_def *def;
	char err[256];
	int status;
	pid_t pid;

	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork");
	if (pid == 0) {
		setenv(CONFIG_CRASH_ENV, step, 1);
		if (memory_mib == 0)
			config_remove(tmpdir, "vm", err, sizeof(err));
		else {
			def = def_with(memory_mib);
			config_save(tmpdir, def, err, sizeof(err));
		}
		_exit(0);	/* the step was not reached */
	}
	if (waitpid(pid, &status, 0) != pid)
		tap_bail("waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Start from "vm" saved with old (none when 0). */
static void
reset(unsigned int old)
{
	struct vm_def *def;
	char err[256];

	config_remove(tmpdir, "vm", err, sizeof(err));
	if (old != 0) {
		def = def_with(old);
		if (config_save(tmpdir, def, err, sizeof(err)) < 0)
			tap_bail("save: %s", err);
		config_def_free(def);
	}
}

static void
check(const char *what, const char *step, unsigned int old, unsigned int new)
{
	struct loaded l = { 0 };
	int status;

	reset(old);
	status = change_and_die(step, new);
	tap_ok(status == CONFIG_CRASH_STATUS, "%s: died at %s (status %d)",
	    what, step, status);
	tap_ok(config_load_dir(tmpdir, load_cb, &l) == 0 && l.skipped == 0,
	    "%s, %s: the directory loads, nothing refused", what, step);
	tap_ok((l.n == 0 && (old == 0 || new == 0)) ||
	    (l.n == 1 && (l.memory_mib == old || l.memory_mib == new)),
	    "%s, %s: the old or the new definition (%u found, %u MiB)",
	    what, step, l.n, l.memory_mib);
	tap_ok(files() == (int)l.n, "%s, %s: no temporary file left after "
	    "the load (%d files)", what, step, files());
}

int
main(void)
{
	static const char *const save_steps[] = {
		"save-half-written", "save-written", "save-synced",
		"save-renamed", "save-done",
	};
	static const char *const remove_steps[] = {
		"remove-unlinked", "remove-done",
	};
	size_t i;

	if (mkdtemp(tmpdir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	for (i = 0; i < sizeof(save_steps) / sizeof(save_steps[0]); i++) {
		check("create", save_steps[i], 0, 64);
		check("change", save_steps[i], 64, 128);
	}
	for (i = 0; i < sizeof(remove_steps) / sizeof(remove_steps[0]); i++)
		check("delete", remove_steps[i], 64, 0);
	reset(0);
	rmdir(tmpdir);
	return tap_done();
}
