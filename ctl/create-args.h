/*
 * The create options, shared by the create and run commands.
 */
#ifndef VMCTL_CREATE_ARGS_H
#define VMCTL_CREATE_ARGS_H

#include <stdbool.h>

struct ctl;
struct json_object;

/*
 * The whole parsing of create or run (the create options and NAME): sets
 * *args to the arguments of vm.create except name (the caller owns it),
 * *name to NAME and returns -1, or returns an exit status.  Relative
 * --kernel and --initrd paths are made absolute here, against vmctl's
 * directory: the daemon resolves nothing relative to its own.
 * --from-file FILE starts from the definition in FILE, which the other
 * options change; NAME may then be left out (its "name" is taken).
 * *from (when not NULL) tells whether --from-file was given.
 */
int	create_args_parse(struct ctl *, int, char **, struct json_object **,
	    const char **, bool *from);
/*
 * --net SPEC (tap=NAME[,mac=MAC] or user[,forward=SPEC]...[,mac=MAC],
 * spec cut up in place) as one more card of args' "net", as create
 * takes it (restore --as too).  -1 to go on, else an exit status.
 */
int	create_args_net(struct ctl *, struct json_object *args, char *spec);

#endif
