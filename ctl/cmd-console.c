/*
 * console: attach to a VM's serial console (console-attach.c does the work).
 */
#include <stdio.h>

#include "client.h"
#include "console-attach.h"
#include "vmctl.h"

int
cmd_console(struct ctl *ctl, int argc, char **argv)
{
	enum console_end end;
	struct client *cl;
	const char *name;
	char what[128];
	int r, signo;

	if ((r = ctl_name_only(ctl, argc, argv, &name)) >= 0)
		return r;
	snprintf(what, sizeof(what), "console %s", name);
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	r = console_attach(cl, what, name, &end, &signo);
	client_free(cl);
	return console_finish(r, end, signo);
}
