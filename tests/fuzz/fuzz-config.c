/*
 * libFuzzer: the VM definition validator, by the path a definition file
 * takes (config_load_file: size cap, O_NOFOLLOW, strict UTF-8, JSON,
 * config_parse).  The input is the file's content.
 *
 * A definition that loads must survive what vmmd does with it next:
 * serialised (config_to_json, as vm.list and vm.info show it), parsed
 * again as vm.create arguments, saved (config_save) and loaded back,
 * it must come out the same every time.  A definition vmmd would store
 * but not load again would be lost at the next restart.
 *
 * Files live in a private directory (fuzz-tmp.h), removed at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-tmp.h"
#include "vmconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[256];
static char fuzz_file[300];

static void
fuzz_config_cleanup(void)
{
	unlink(fuzz_file);
	rmdir(fuzz_dir);
}

static void
fuzz_config_setup(void)
{
	fuzz_tmp_dir("config", fuzz_dir, sizeof(fuzz_dir));
	snprintf(fuzz_file, sizeof(fuzz_file), "%s/input", fuzz_dir);
	atexit(fuzz_config_cleanup);
}

/* The definition as vm.info shows it, secrets included. */
static char *
fuzz_config_text(const struct vm_def *def)
{
	struct json_object *obj = config_to_json(def, CONFIG_JSON_SECRETS);
	char *s;

	if (obj == NULL)
		abort();
	s = strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
	json_object_put(obj);
	if (s == NULL)
		abort();
	return s;
}

static void
fuzz_config_same(const char *a, const char *b, const char *what)
{
	if (strcmp(a, b) != 0) {
		fprintf(stderr, "definition changed by %s:\n%s\n%s\n", what,
		    a, b);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_def *def, *again, *loaded;
	struct json_object *obj;
	char err[1024], path[600], *text, *text2;
	int fd;

	if (fuzz_dir[0] == '\0')
		fuzz_config_setup();
	fd = open(fuzz_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);

	if (config_load_file(fuzz_file, &def, err, sizeof(err)) < 0) {
		if (err[0] == '\0' || memchr(err, '\0', sizeof(err)) == NULL)
			abort();	/* every refusal says why */
		return 0;
	}
	text = fuzz_config_text(def);

	/* As vm.create arguments. */
	obj = config_to_json(def, CONFIG_JSON_SECRETS);
	if (config_parse(obj, 0, &again, err, sizeof(err)) < 0) {
		fprintf(stderr, "its own serialisation refused: %s\n%s\n",
		    err, text);
		abort();
	}
	json_object_put(obj);
	text2 = fuzz_config_text(again);
	fuzz_config_same(text, text2, "a parse");
	free(text2);
	config_def_free(again);

	/* Stored and loaded back, as across a restart. */
	if (config_save(fuzz_dir, def, err, sizeof(err)) < 0) {
		fprintf(stderr, "cannot save: %s\n%s\n", err, text);
		abort();
	}
	snprintf(path, sizeof(path), "%s/%s.json", fuzz_dir, def->name);
	if (config_load_file(path, &loaded, err, sizeof(err)) < 0) {
		fprintf(stderr, "saved but not loaded again: %s\n%s\n", err,
		    text);
		abort();
	}
	text2 = fuzz_config_text(loaded);
	fuzz_config_same(text, text2, "a save and load");
	free(text2);
	config_def_free(loaded);
	if (config_remove(fuzz_dir, def->name, err, sizeof(err)) < 0)
		abort();

	free(text);
	config_def_free(def);
	return 0;
}
