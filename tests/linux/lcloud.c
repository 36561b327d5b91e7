/* See lcloud.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lcloud.h"
#include "tap.h"

/* Attempts of ssh that fail are this far apart (and one may take 10 s). */
#define LC_RETRY_MS	5000

int
lc_keypair(const char *dir)
{
	char key[512], prog[256];
	char *argv[] = { prog, (char *)"-q", (char *)"-t", (char *)"ed25519",
		(char *)"-N", (char *)"", (char *)"-C", (char *)"vmmd-test",
		(char *)"-f", key, NULL };
	struct h_proc p;
	int st;

	if (h_which("ssh-keygen", prog, sizeof(prog)) == NULL) {
		tap_diag("no ssh-keygen");
		return -1;
	}
	snprintf(key, sizeof(key), "%s/id", dir);
	unlink(key);
	st = h_run(&p, NULL, 60000, argv);
	if (st != 0)
		tap_diag("ssh-keygen: status %d: %s%s", st,
		    p.obuf != NULL ? p.obuf : "", p.ebuf != NULL ? p.ebuf : "");
	h_proc_free(&p);
	return st == 0 ? 0 : -1;
}

bool
lc_create_start(struct h_daemon *d, struct lc_vm *vm, const char *image,
    const char *key_pub, unsigned int memory_mib)
{
	char disk[4200], net[128], mem[32];
	struct h_proc p;
	int st;

	snprintf(disk, sizeof(disk), "%s,overlay", image);
	snprintf(net, sizeof(net), "user,forward=tcp:127.0.0.1:%d:22",
	    vm->port);
	snprintf(mem, sizeof(mem), "%uM", memory_mib);
	st = h_vmctl(d, &p, 60000, "create", vm->name, "--disk", disk,
	    "--ssh-key", key_pub, "--net", net, "--memory", mem, NULL);
	if (st != 0) {
		tap_diag("vmctl create %s: status %d: %s%s", vm->name, st,
		    p.obuf != NULL ? p.obuf : "", p.ebuf != NULL ? p.ebuf : "");
		h_proc_free(&p);
		return false;
	}
	h_proc_free(&p);
	vm->t_start = h_now_ms();
	st = h_vmctl(d, &p, 180000, "start", vm->name, NULL);
	if (st != 0)
		tap_diag("vmctl start %s: status %d: %s%s", vm->name, st,
		    p.obuf != NULL ? p.obuf : "", p.ebuf != NULL ? p.ebuf : "");
	h_proc_free(&p);
	return st == 0;
}

/* One try of ssh to vm: whether it ran cmd (its output in vm->out). */
static bool
lc_ssh(struct lc_vm *vm, const char *dir, const char *cmd)
{
	char key[512], port[16], prog[256];
	char *argv[] = { prog, (char *)"-i", key, (char *)"-p", port,
		(char *)"-o", (char *)"StrictHostKeyChecking=no",
		(char *)"-o", (char *)"UserKnownHostsFile=/dev/null",
		(char *)"-o", (char *)"BatchMode=yes",
		(char *)"-o", (char *)"ConnectTimeout=10",
		(char *)"-o", (char *)"LogLevel=ERROR",
		(char *)"debian@127.0.0.1", (char *)cmd, NULL };
	struct h_proc p;
	int st;

	if (h_which("ssh", prog, sizeof(prog)) == NULL)
		return false;
	snprintf(key, sizeof(key), "%s/id", dir);
	snprintf(port, sizeof(port), "%d", vm->port);
	st = h_run(&p, NULL, 120000, argv);
	snprintf(vm->out, sizeof(vm->out), "%s%s", p.obuf != NULL ? p.obuf :
	    "", st != 0 && p.ebuf != NULL ? p.ebuf : "");
	h_proc_free(&p);
	return st == 0;
}

void
lc_console_tail(struct h_daemon *d, const char *name, unsigned int lines)
{
	size_t len;
	char *log = h_read_file(h_console_log(d, name), &len), *p;
	unsigned int n = 0;

	if (log == NULL)
		return;
	for (p = log + len; p > log && n <= lines; p--)
		if (p[-1] == '\n')
			n++;
	tap_diag("---- the end of %s's console ----", name);
	for (char *line = strtok(p, "\n"); line != NULL;
	    line = strtok(NULL, "\n"))
		tap_diag("| %s", line);
	free(log);
}

bool
lc_ssh_all(struct h_daemon *d, struct lc_vm *vms, unsigned int n,
    const char *dir, const char *cmd, double deadline)
{
	unsigned int left = n, tries = 0;

	for (unsigned int i = 0; i < n; i++)
		vms[i].t_ssh = 0;
	while (left > 0 && h_now_ms() < deadline) {
		double t0 = h_now_ms();

		for (unsigned int i = 0; i < n; i++) {
			if (vms[i].t_ssh != 0 || !lc_ssh(&vms[i], dir, cmd))
				continue;
			vms[i].t_ssh = h_now_ms();
			left--;
		}
		/* Now and then, where the others stand. */
		if (left > 0 && ++tries % 12 == 0)
			for (unsigned int i = 0; i < n; i++) {
				if (vms[i].t_ssh != 0)
					continue;
				tap_diag("%s: no ssh yet after %.0f s (%s)",
				    vms[i].name, (h_now_ms() -
				    vms[i].t_start) / 1e3,
				    h_flat(vms[i].out));
				lc_console_tail(d, vms[i].name, 3);
			}
		if (left > 0 && h_now_ms() - t0 < LC_RETRY_MS)
			h_sleep_ms((int)(LC_RETRY_MS - (h_now_ms() - t0)));
	}
	return left == 0;
}
