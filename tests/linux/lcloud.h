/*
 * A distribution's cloud image as it ships (build-cloud-image.sh: Debian's
 * cloud kernel, systemd, cloud-init and OpenSSH on a GPT disk with GRUB's
 * configuration) under vmmd, the way the README's three commands run it:
 * vmctl create with the image as an overlay's base, an SSH key and a
 * user-mode network forwarding the host's 127.0.0.1:PORT to the guest's
 * port 22, vmctl start, then ssh through the forward.  Two VMs from the
 * same base run at once.  The program's ssh and ssh-keygen are the host's
 * (the test host packs them).
 */
#ifndef LCLOUD_H
#define LCLOUD_H

#include <stdbool.h>

#include "lguest.h"

/* From vm.start to a working ssh, at most: a whole systemd boot and
 * cloud-init's first run, under emulation (nested, two at once). */
#define LC_SSH_MS	(25 * 60 * 1000)

struct lc_vm {
	const char *name;
	int port;		/* the host's end of the forward to 22 */
	double t_start;		/* h_now_ms() at vm.start */
	double t_ssh;		/* at the first ssh that worked, or 0 */
	char out[4096];		/* what ssh ran printed */
};

/*
 * An ed25519 key pair made with ssh-keygen in dir (dir/id, dir/id.pub):
 * 0 or -1 (after a diagnostic).
 */
int	lc_keypair(const char *dir);
/*
 * "vmctl create NAME --disk IMAGE,overlay --ssh-key KEY.pub --net
 * user,forward=tcp:127.0.0.1:PORT:22 --memory MIB", then start it:
 * whether both worked (vmctl's output as a diagnostic otherwise).
 */
bool	lc_create_start(struct h_daemon *d, struct lc_vm *vm, const char *image,
	    const char *key_pub, unsigned int memory_mib);
/*
 * Until deadline (h_now_ms()), tries "ssh -p PORT debian@127.0.0.1
 * CMD" with dir/id for each VM not answered yet, every few seconds:
 * whether all answered.  Each answer's output in out, its time in t_ssh.
 * Now and then, where each VM not answered stands (ssh's answer, its
 * console's last lines) as diagnostics.
 */
bool	lc_ssh_all(struct h_daemon *d, struct lc_vm *vms, unsigned int n,
	    const char *dir, const char *cmd, double deadline);
/* The last lines of name's console log, as diagnostics. */
void	lc_console_tail(struct h_daemon *d, const char *name,
	    unsigned int lines);

#endif
