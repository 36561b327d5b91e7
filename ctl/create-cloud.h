/*
 * The create options of a cloud image (create-args.c dispatches them):
 * --boot disk|kernel, --cloud-init FILE and --ssh-key FILE, into the
 * arguments of vm.create ("boot", "cloud_init").  Files are read here,
 * with the user's own rights, and sent as their content.
 */
#ifndef VMCTL_CREATE_CLOUD_H
#define VMCTL_CREATE_CLOUD_H

struct ctl;
struct json_object;

/* getopt's values of the options, for create-args.c's table. */
#define CREATE_CLOUD_BOOT	'B'
#define CREATE_CLOUD_INIT	'I'
#define CREATE_CLOUD_SSH_KEY	'H'

/* Option c with value arg into args: -1 to go on, else an exit status. */
int	create_cloud_option(struct ctl *ctl, struct json_object *args, int c,
	    const char *arg);

#endif
