/*
 * run: create a transient VM, start it and attach its console; leave no
 * VM behind however the console ends.
 */
#include <string.h>
#include <stdio.h>

#include "client.h"
#include "console-attach.h"
#include "create-args.h"
#include "vmctl.h"

/* Whether the last error reply only says the VM is already gone. */
static int
run_gone(struct client *cl)
{
	return strcmp(client_error_class(cl), "not_found") == 0 ||
	    strcmp(client_error_class(cl), "bad_state") == 0;
}

/*
 * Leaves no transient VM behind: kill it if it still runs (the daemon
 * deletes a transient VM once it stopped), or delete it when it never
 * ran.  A VM that is already gone or on its way out is fine.
 */
static int
run_cleanup(struct ctl *ctl, const char *what, const char *name)
{
	struct json_object *args;
	struct client *cl;
	int r;

	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	json_object_object_add(args, "force", json_object_new_boolean(1));
	r = client_call(cl, what, "vm.stop", args, NULL, CLIENT_QUIET);
	if (r != 0 && strcmp(client_error_class(cl),
	    "bad_state") == 0) {
		args = json_object_new_object();
		json_object_object_add(args, "name",
		    json_object_new_string(name));
		r = client_call(cl, what, "vm.delete", args, NULL,
		    CLIENT_QUIET);
	}
	if (r != 0 && run_gone(cl))
		r = CTL_EXIT_OK;
	else if (r != 0 && client_error_class(cl)[0] != '\0')
		r = client_report_error(what, client_error_class(cl),
		    client_error_desc(cl));
	client_free(cl);
	return r;
}

int
cmd_run(struct ctl *ctl, int argc, char **argv)
{
	enum console_end end = CONSOLE_FAILED;
	struct json_object *args;
	struct client *cl;
	const char *name;
	char what[128];
	int r, cr, signo = 0;

	if ((r = create_args_parse(ctl, argc, argv, &args, &name, NULL)) >= 0)
		return r;
	snprintf(what, sizeof(what), "run %s", name);
	json_object_object_add(args, "name", json_object_new_string(name));
	json_object_object_add(args, "transient", json_object_new_boolean(1));

	if ((r = client_open(ctl->socket, &cl)) != 0) {
		json_object_put(args);
		return r;
	}
	if ((r = client_call(cl, what, "vm.create", args, NULL,
	    CLIENT_CLI_WORDS)) != 0) {
		client_free(cl);
		return r;
	}
	/* From here on a signal must not leave the VM behind. */
	console_catch();
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	r = client_call(cl, what, "vm.start", args, NULL, 0);
	if (r == 0)
		r = console_attach(cl, what, name, &end, &signo);
	client_free(cl);

	/*
	 * Even when the guest side closed, the VM may still run: the worker
	 * drops a console client that does not keep up.  When the guest
	 * stopped, the daemon has deleted the VM or is about to.
	 */
	cr = run_cleanup(ctl, what, name);
	if (r == 0)
		r = cr;
	return console_finish(r, end, signo);
}
