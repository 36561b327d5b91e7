/*
 * Changing a VM without losing it: set, edit, rename, export and clone.
 * set and edit both fetch the definition (vm.export), change it here
 * and send it back whole (vm.redefine): the daemon checks it as it
 * checks a new one.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "client.h"
#include "create-args.h"
#include "vmctl.h"

/* The pretty form export prints and edit writes: one member a line. */
#define EDIT_JSON_FLAGS	(JSON_C_TO_STRING_PRETTY | \
	JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* "verb NAME" for messages. */
static void
edit_what(struct ctl *ctl, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", ctl->cmd->name, name);
}

/*
 * command {name, ...args (taken)} on a new connection: 0 with *ret (the
 * caller puts it, ret may be NULL), else an exit status, reported.
 */
static int
edit_call(struct ctl *ctl, const char *command, const char *name,
    struct json_object *args, struct json_object **ret)
{
	struct json_object *got = NULL;
	struct client *cl;
	char what[128];
	int r;

	if (args == NULL)
		args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	edit_what(ctl, name, what, sizeof(what));
	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		return r;
	}
	r = client_call(cl, what, command, args, &got, 0);
	client_free(cl);
	if (r == 0 && ret != NULL)
		*ret = got;
	else if (r == 0) {
		if (ctl->json)
			ctl_print_json(got);
		json_object_put(got);
	}
	return r;
}

/*
 * The definition of VM name (vm.export) into *def (the caller puts it).
 * With need_secrets, one the daemon withheld a member of (the VNC
 * password, from all but the owner and root) is refused: sent back
 * without it, it would change.
 */
static int
edit_fetch(struct ctl *ctl, const char *name, bool need_secrets,
    struct json_object **def)
{
	struct json_object *ret, *d, *w;
	int r;

	if ((r = edit_call(ctl, "vm.export", name, NULL, &ret)) != 0)
		return r;
	if (json_object_object_get_ex(ret, "withheld", &w) && need_secrets) {
		ctl_warnx("%s %s: its VNC password is its owner's: only the "
		    "owner or root may change the VM", ctl->cmd->name, name);
		json_object_put(ret);
		return CTL_EXIT_FAIL;
	}
	if (!json_object_object_get_ex(ret, "definition", &d) ||
	    !json_object_is_type(d, json_type_object)) {
		ctl_warnx("%s %s: the daemon sent no definition",
		    ctl->cmd->name, name);
		json_object_put(ret);
		return CTL_EXIT_FAIL;
	}
	*def = json_object_get(d);
	json_object_put(ret);
	return 0;
}

/* vm.redefine {name, definition (taken)}. */
static int
edit_redefine(struct ctl *ctl, const char *name, struct json_object *def)
{
	struct json_object *args = json_object_new_object();

	json_object_object_add(args, "definition", def);
	return edit_call(ctl, "vm.redefine", name, args, NULL);
}

int
cmd_export(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *ret, *def, *w;
	const char *name;
	int r;

	if ((r = ctl_name_only(ctl, argc, argv, &name)) >= 0)
		return r;
	if ((r = edit_call(ctl, "vm.export", name, NULL, &ret)) != 0)
		return r;
	if (json_object_object_get_ex(ret, "withheld", &w))
		ctl_warnx("export %s: its VNC password is left out (only its "
		    "owner or root sees it): a VM created from this has one "
		    "made at each start", name);
	if (ctl->json)
		ctl_print_json(ret);
	else if (json_object_object_get_ex(ret, "definition", &def))
		printf("%s\n", json_object_to_json_string_ext(def,
		    EDIT_JSON_FLAGS));
	json_object_put(ret);
	return CTL_EXIT_OK;
}

/*
 * set: the create options given replace the members they make, each one
 * whole (every --disk given is the whole disk list; --cloud-init and
 * --ssh-key the whole cloud_init).
 */
int
cmd_set(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args, *def;
	const char *name;
	int r;

	if ((r = create_args_parse(ctl, argc, argv, &args, &name, NULL)) >= 0)
		return r;
	if (json_object_object_length(args) == 0) {
		json_object_put(args);
		return ctl_usage(ctl, "nothing to set: give an option of "
		    "create (vmctl help set)");
	}
	if ((r = edit_fetch(ctl, name, true, &def)) != 0) {
		json_object_put(args);
		return r;
	}
	json_object_object_foreach(args, key, val)
		json_object_object_add(def, key, json_object_get(val));
	json_object_put(args);
	return edit_redefine(ctl, name, def);
}

/* Write def to a new file in $TMPDIR: 0 with its path in buf. */
static int
edit_write_temp(const char *name, struct json_object *def, char *buf,
    size_t len)
{
	const char *dir = getenv("TMPDIR"), *text;
	FILE *fp;
	int fd;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
	if ((size_t)snprintf(buf, len, "%s/vmctl-%s-XXXXXX.json", dir,
	    name) >= len)
		return -ENAMETOOLONG;
	if ((fd = mkostemps(buf, 5, O_CLOEXEC)) < 0)
		return -errno;
	if ((fp = fdopen(fd, "w")) == NULL) {
		close(fd);
		unlink(buf);
		return -errno;
	}
	text = json_object_to_json_string_ext(def, EDIT_JSON_FLAGS);
	fprintf(fp, "%s\n", text);
	if (fclose(fp) != 0) {
		unlink(buf);
		return -errno;
	}
	return 0;
}

/*
 * $VISUAL, else $EDITOR, else vi, on path, through the shell (an editor
 * may be given with its options): 0, or an exit status said.
 */
static int
edit_run_editor(struct ctl *ctl, const char *path)
{
	const char *ed = getenv("VISUAL");
	char *cmd;
	pid_t pid;
	int status;

	if (ed == NULL || *ed == '\0')
		ed = getenv("EDITOR");
	if (ed == NULL || *ed == '\0')
		ed = "vi";
	if (asprintf(&cmd, "%s \"$1\"", ed) < 0)
		return CTL_EXIT_FAIL;
	fflush(stdout);
	if ((pid = fork()) < 0) {
		free(cmd);
		ctl_warnx("edit: fork: %s", strerror(errno));
		return CTL_EXIT_FAIL;
	}
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, "sh", path, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			ctl_warnx("edit: waitpid: %s", strerror(errno));
			return CTL_EXIT_FAIL;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		ctl_warnx("edit: the editor (%s) failed (status %d)", ed,
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return CTL_EXIT_FAIL;
	}
	return 0;
}

/* The JSON object in the file at path, or NULL after saying why. */
static struct json_object *
edit_read_json(struct ctl *ctl, const char *path)
{
	struct json_object *obj = json_object_from_file(path);

	if (obj == NULL)
		ctl_warnx("%s: not a JSON object: %s", ctl->cmd->name,
		    json_util_get_last_err() ?: "?");
	else if (!json_object_is_type(obj, json_type_object)) {
		ctl_warnx("%s: %s: not a JSON object", ctl->cmd->name, path);
		json_object_put(obj);
		obj = NULL;
	}
	return obj;
}

/*
 * edit: the definition in the user's editor, sent back once saved.  The
 * file goes when the daemon took it (or nothing changed); when it
 * refused, or the file is not JSON, it stays and vmctl says where.
 */
int
cmd_edit(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *def, *edited;
	const char *name;
	char path[4096];
	int r;

	if ((r = ctl_name_only(ctl, argc, argv, &name)) >= 0)
		return r;
	if ((r = edit_fetch(ctl, name, true, &def)) != 0)
		return r;
	if ((r = edit_write_temp(name, def, path, sizeof(path))) < 0) {
		ctl_warnx("edit %s: a temporary file: %s", name,
		    strerror(-r));
		json_object_put(def);
		return CTL_EXIT_FAIL;
	}
	if ((r = edit_run_editor(ctl, path)) != 0) {
		json_object_put(def);
		unlink(path);
		return r;
	}
	if ((edited = edit_read_json(ctl, path)) == NULL) {
		json_object_put(def);
		ctl_warnx("edit %s: your edits are kept in %s", name, path);
		return CTL_EXIT_FAIL;
	}
	if (json_object_equal(def, edited)) {
		json_object_put(def);
		json_object_put(edited);
		unlink(path);
		ctl_warnx("edit %s: no change", name);
		return CTL_EXIT_OK;
	}
	json_object_put(def);
	if ((r = edit_redefine(ctl, name, edited)) != 0) {
		ctl_warnx("edit %s: your edits are kept in %s", name, path);
		return r;
	}
	unlink(path);
	return CTL_EXIT_OK;
}

/* rename and clone: NAME NEW_NAME into command {name, new_name}. */
static int
edit_two_names(struct ctl *ctl, int argc, char **argv, const char *command,
    const char *what)
{
	struct json_object *args;
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 2, what)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "new_name",
	    json_object_new_string(argv[optind + 1]));
	return edit_call(ctl, command, argv[optind], args, NULL);
}

int
cmd_rename(struct ctl *ctl, int argc, char **argv)
{
	return edit_two_names(ctl, argc, argv, "vm.rename", "OLD and NEW");
}

int
cmd_clone(struct ctl *ctl, int argc, char **argv)
{
	return edit_two_names(ctl, argc, argv, "vm.clone", "SOURCE and NEW");
}
