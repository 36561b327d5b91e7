/*
 * What a cluster manager needs, end to end against a private vmmd: vmctl
 * create --from-file that succeeds for the same definition and refuses
 * another, "managed": "cluster" VMs that cannot autostart and restore
 * the snapshot of one that was not, and the OCF
 * resource agent ocf:vmmd:vm (ctl/ocf/vm.in): start and stop twice, a
 * probe of a guest never seen, a vmmd that is killed and restarted under
 * a running guest (never a failed guest), a definition file that
 * changed, a migration that fails (the guest runs on here), the agent
 * without ocf-shellfuncs, and ocf-tester (Debian's resource-agents)
 * where it is installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define VMCTL_MS	20000
#define AGENT_MS	90000

/* OCF's exit codes. */
enum { OCF_SUCCESS = 0, OCF_ERR_GENERIC = 1, OCF_ERR_ARGS = 2,
	OCF_NOT_RUNNING = 7 };

static struct h_daemon *d;
/* The agent, installed as OCF_ROOT/resource.d/vmmd/vm in a directory of
 * its own that everyone may read (ocf-tester runs meta-data as nobody). */
static char ocf_root[64];
static char agent_path[160];
/* What the last agent run wrote on stderr, for the messages. */
static char agent_err[1024];

static void
agent_uninstall(void)
{
	char dir[128];

	if (ocf_root[0] == '\0')
		return;
	unlink(agent_path);
	snprintf(dir, sizeof(dir), "%s/resource.d/vmmd", ocf_root);
	rmdir(dir);
	snprintf(dir, sizeof(dir), "%s/resource.d", ocf_root);
	rmdir(dir);
	rmdir(ocf_root);
}

static void
agent_install(void)
{
	const char *src = h_env("VMMD_OCF_AGENT");
	char dir[128], *text;
	size_t len;
	int fd;

	snprintf(ocf_root, sizeof(ocf_root), "/tmp/vmmd-ocf.XXXXXX");
	if (mkdtemp(ocf_root) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	atexit(agent_uninstall);
	snprintf(dir, sizeof(dir), "%s/resource.d", ocf_root);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/resource.d/vmmd", ocf_root);
	mkdir(dir, 0755);
	snprintf(agent_path, sizeof(agent_path), "%s/vm", dir);
	if ((text = h_read_file(src, &len)) == NULL)
		tap_bail("%s: cannot be read", src);
	fd = open(agent_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len ||
	    fchmod(fd, 0755) < 0 || chmod(ocf_root, 0755) < 0)
		tap_bail("%s: %s", agent_path, strerror(errno));
	close(fd);
	free(text);
}

/*
 * The agent's action with OCF_RESKEY_CRM_meta_interval (ms; 0: a probe)
 * and the parameters in the environment; its exit status.
 */
static int
agent(const char *action, int interval_ms)
{
	char *argv[] = { agent_path, (char *)action, NULL };
	char iv[32];
	struct h_proc p;
	int r;

	snprintf(iv, sizeof(iv), "%d", interval_ms);
	setenv("OCF_RESKEY_CRM_meta_interval", iv, 1);
	r = h_run(&p, NULL, AGENT_MS, argv);
	snprintf(agent_err, sizeof(agent_err), "%s", h_flat(p.ebuf != NULL ?
	    p.ebuf : ""));
	h_proc_free(&p);
	return r;
}

/* One TAP line: the agent's action (agent()) exits with want. */
static void
agent_is(const char *action, int interval_ms, int want, const char *what)
{
	int rc = agent(action, interval_ms);

	tap_ok(rc == want, "%s: %d (%s)", what, rc, agent_err);
}

/* Writes a definition file of name with memory_mib mib. */
static void
write_def(const char *path, const char *name, int mib)
{
	FILE *fp = fopen(path, "we");

	if (fp == NULL || fprintf(fp, "{\n  \"name\": \"%s\",\n"
	    "  \"memory_mib\": %d\n}\n", name, mib) < 0 || fclose(fp) != 0)
		tap_bail("%s: %s", path, strerror(errno));
}

static void
test_vmctl(struct h_conn *c, const char *def)
{
	struct json_object *r;
	int rc;

	rc = h_ctl("create", "--from-file", def, "--managed", "cluster",
	    NULL);
	tap_ok(rc == 0, "create --from-file --managed cluster: exit %d (%s)",
	    rc, h_flat(h_err()));
	rc = h_ctl("create", "--from-file", def, "--managed", "cluster",
	    NULL);
	tap_ok(rc == 0 && strstr(h_err(), "exists already") != NULL,
	    "the same again: exit %d, a note (%s)", rc, h_flat(h_err()));
	rc = h_ctl("-j", "create", "--from-file", def, "--managed",
	    "cluster", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "\"existed\"") != NULL,
	    "-j: the VM, marked existed (%s)", h_flat(h_out()));
	rc = h_ctl("create", "--from-file", def, NULL);
	tap_ok(rc == 5 && strstr(h_err(), "another definition") != NULL,
	    "not managed: another definition, exit %d (%s)", rc,
	    h_flat(h_err()));
	rc = h_ctl("create", "--from-file", def, "--managed", "cluster",
	    "--memory", "48M", NULL);
	tap_ok(rc == 5, "other memory: exit %d (%s)", rc, h_flat(h_err()));
	rc = h_ctl("create", "web", "--memory", "32M", NULL);
	tap_ok(rc == 5 && strstr(h_err(), "another") == NULL,
	    "without --from-file the same name is refused as ever: exit %d "
	    "(%s)", rc, h_flat(h_err()));
	rc = h_ctl("export", "web", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "\"managed\": \"cluster\"") != NULL,
	    "export shows \"managed\": \"cluster\" (%s)", h_flat(h_out()));

	rc = h_ctl("autostart", "web", "on", NULL);
	tap_ok(rc == 6 && strstr(h_err(), "cluster") != NULL,
	    "autostart of a cluster's VM: refused, exit %d (%s)", rc,
	    h_flat(h_err()));
	h_expect_error(c, "vm.create", "{\"name\":\"a\",\"memory_mib\":32,"
	    "\"managed\":\"cluster\",\"autostart\":true}",
	    "invalid_argument", "a definition with both managed and "
	    "autostart");
	h_expect_error(c, "vm.create", "{\"name\":\"a\",\"memory_mib\":32,"
	    "\"managed\":\"pacemaker\"}", "invalid_argument",
	    "managed: neither vmmd nor cluster");
	h_expect_error(c, "vm.create", "{\"name\":\"web\",\"memory_mib\":32,"
	    "\"exist_ok\":1}", "invalid_argument", "exist_ok: not a boolean");
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"b\","
	    "\"memory_mib\":32,\"managed\":\"vmmd\",\"exist_ok\":true}");
	tap_ok(h_ret(r) != NULL && !json_object_object_get_ex(h_ret(r),
	    "existed", NULL), "exist_ok for a new VM: created (%s)",
	    h_text(r));
	json_object_put(r);
	h_delete(c, "b");
	rc = h_ctl("delete", "web", NULL);
	tap_ok(rc == 0, "delete web");
}

/*
 * Who manages a VM is no state of its guest: a snapshot restores into
 * the VM once the cluster manages it (as a migration's target VM is).
 */
static void
test_restore(struct h_conn *c)
{
	const char *dir = h_in_dir(d, "snap");
	int rc;

	rc = h_ctl("create", "s", "--memory", "32M", NULL);
	if (rc == 0)
		rc = h_ctl("start", "s", NULL);
	if (rc == 0)
		rc = h_ctl("snapshot", "s", dir, NULL);
	tap_ok(rc == 0, "s: started and saved, not managed (%s)",
	    h_flat(h_err()));
	h_wait_state(c, "s", "stopped", H_REPLY_MS);
	rc = h_ctl("set", "s", "--managed", "cluster", NULL);
	tap_ok(rc == 0, "vmctl set --managed cluster (%s)", h_flat(h_err()));
	rc = h_ctl("restore", "s", dir, NULL);
	tap_ok(rc == 0, "restored once managed (%s)", h_flat(h_err()));
	h_stop(c, "s", true, -1, H_REPLY_MS);
	h_delete(c, "s");
}

/* The agent's rules on one daemon, its guest "web" from def. */
static void
test_agent(const char *def)
{
	struct h_conn *c;
	char st[32];
	int rc;

	setenv("OCF_RESKEY_config", def, 1);
	setenv("OCF_RESKEY_socket", d->sock, 1);
	setenv("OCF_RESKEY_vmctl", h_env("VMCTL_BIN"), 1);
	setenv("OCF_RESKEY_CRM_meta_timeout", "60000", 1);

	agent_is("validate-all", 0, OCF_SUCCESS, "validate-all");
	rc = agent("meta-data", 0);
	tap_ok(rc == OCF_SUCCESS, "meta-data: %d", rc);
	agent_is("monitor", 0, OCF_NOT_RUNNING, "probe of a guest never "
	    "defined");
	agent_is("monitor", 10000, OCF_NOT_RUNNING, "monitor of it");
	agent_is("stop", 0, OCF_SUCCESS, "stop of it");

	agent_is("start", 0, OCF_SUCCESS, "start");
	c = h_connect(d);
	tap_ok(strcmp(h_state(c, "web", st, sizeof(st)), "running") == 0,
	    "the guest runs (%s)", st);
	agent_is("start", 0, OCF_SUCCESS, "start again");
	agent_is("monitor", 10000, OCF_SUCCESS, "monitor");
	agent_is("migrate_from", 0, OCF_SUCCESS, "migrate_from with the guest "
	    "here");
	rc = h_ctl("export", "web", NULL);
	tap_ok(rc == 0 && strstr(h_out(), "\"managed\": \"cluster\"") != NULL,
	    "the agent defined it as the cluster's (%s)", h_flat(h_out()));

	/* A migration that fails leaves the guest running here. */
	unsetenv("OCF_RESKEY_CRM_meta_migrate_target");
	agent_is("migrate_to", 0, OCF_ERR_ARGS, "migrate_to without a target");
	setenv("OCF_RESKEY_CRM_meta_migrate_target", "node2", 1);
	setenv("OCF_RESKEY_migration_transport", "unix:/nonexistent/%n/sock",
	    1);
	rc = agent("migrate_to", 0);
	tap_ok(rc == OCF_ERR_GENERIC && strstr(agent_err,
	    "/nonexistent/node2/sock") != NULL, "migrate_to a target that "
	    "does not answer: %d (%s)", rc, agent_err);
	rc = agent("monitor", 10000);
	tap_ok(rc == OCF_SUCCESS && strcmp(h_state(c, "web", st, sizeof(st)),
	    "running") == 0, "the guest runs here still: %d, %s", rc, st);
	unsetenv("OCF_RESKEY_CRM_meta_migrate_target");
	unsetenv("OCF_RESKEY_migration_transport");
	h_close(c);

	/* vmmd gone, its guest running: running, never failed. */
	tap_ok(h_daemon_kill(d, SIGKILL) >= 0, "vmmd killed");
	agent_is("monitor", 10000, OCF_SUCCESS, "monitor while vmmd is down");
	agent_is("monitor", 0, OCF_SUCCESS, "probe while vmmd is down");
	agent_is("start", 0, OCF_SUCCESS, "start while vmmd is down");
	tap_ok(h_daemon_spawn(d) == 0, "vmmd started again");
	agent_is("monitor", 10000, OCF_SUCCESS, "monitor once vmmd adopted it");

	agent_is("stop", 0, OCF_SUCCESS, "stop");
	c = h_connect(d);
	h_state(c, "web", st, sizeof(st));
	tap_ok(strcmp(st, "stopped") == 0 || strcmp(st, "defined") == 0,
	    "the guest is stopped (%s)", st);
	agent_is("stop", 0, OCF_SUCCESS, "stop again");
	agent_is("monitor", 10000, OCF_NOT_RUNNING, "monitor of a stopped "
	    "guest");
	setenv("OCF_RESKEY_CRM_meta_migrate_target", "node2", 1);
	agent_is("migrate_to", 0, OCF_ERR_GENERIC, "migrate_to of a guest that "
	    "does not run here");
	unsetenv("OCF_RESKEY_CRM_meta_migrate_target");
	h_close(c);

	/* vmmd gone and no guest: not running, after the wait of a monitor
	 * (timeout less 5 s), at once for a probe. */
	tap_ok(h_daemon_kill(d, SIGKILL) >= 0, "vmmd killed");
	setenv("OCF_RESKEY_CRM_meta_timeout", "8000", 1);
	agent_is("monitor", 0, OCF_NOT_RUNNING, "probe with neither vmmd nor "
	    "guest");
	agent_is("monitor", 10000, OCF_NOT_RUNNING, "monitor with neither");
	agent_is("stop", 0, OCF_SUCCESS, "stop with neither");
	setenv("OCF_RESKEY_CRM_meta_timeout", "60000", 1);
	tap_ok(h_daemon_spawn(d) == 0, "vmmd started again");

	/* The file changed: the cluster's VM, not running, defined anew. */
	write_def(def, "web", 48);
	rc = agent("start", 0);
	c = h_connect(d);
	rc = rc == 0 ? h_ctl("export", "web", NULL) : rc;
	tap_ok(rc == 0 && strstr(h_out(), "\"memory_mib\": 48") != NULL,
	    "start after the file changed: defined anew (%s | %s)",
	    agent_err, h_flat(h_out()));
	agent_is("stop", 0, OCF_SUCCESS, "stop");
	h_close(c);
}

/* The agent without ocf-shellfuncs (a system without resource-agents). */
static void
test_bare(void)
{
	const char *old = getenv("OCF_FUNCTIONS_DIR");
	char *keep = old != NULL ? strdup(old) : NULL;
	int rc;

	setenv("OCF_FUNCTIONS_DIR", "/nonexistent", 1);
	agent_is("monitor", 0, OCF_NOT_RUNNING, "no ocf-shellfuncs: probe");
	agent_is("start", 0, OCF_SUCCESS, "no ocf-shellfuncs: start");
	agent_is("monitor", 10000, OCF_SUCCESS, "no ocf-shellfuncs: monitor");
	agent_is("stop", 0, OCF_SUCCESS, "no ocf-shellfuncs: stop");
	rc = agent("reload", 0);
	tap_ok(rc == 3, "no ocf-shellfuncs: an action it lacks: %d", rc);
	setenv("OCF_RESKEY_config", "/nonexistent/web.json", 1);
	agent_is("monitor", 0, OCF_NOT_RUNNING, "no ocf-shellfuncs: probe "
	    "without the definition file");
	agent_is("start", 0, 5, "no ocf-shellfuncs: start without it");
	if (keep != NULL)
		setenv("OCF_FUNCTIONS_DIR", keep, 1);
	else
		unsetenv("OCF_FUNCTIONS_DIR");
	free(keep);
}

/* Debian's ocf-tester on the agent, where resource-agents is installed. */
static void
test_ocf_tester(const char *def)
{
	char buf[256], cfg[300], sock[300], vmctl[300];
	const char *tester = h_which("ocf-tester", buf, sizeof(buf));
	struct h_proc p;
	int rc;

	if (tester == NULL) {
		tap_ok(1, "ocf-tester # SKIP not installed (Debian's "
		    "resource-agents)");
		return;
	}
	snprintf(cfg, sizeof(cfg), "config=%s", def);
	snprintf(sock, sizeof(sock), "socket=%s", d->sock);
	snprintf(vmctl, sizeof(vmctl), "vmctl=%s", h_env("VMCTL_BIN"));
	{
		char *argv[] = { (char *)tester, "-n", "web", "-o", cfg,
			"-o", sock, "-o", vmctl, agent_path, NULL };

		unsetenv("OCF_RESKEY_CRM_meta_interval");
		rc = h_run(&p, NULL, 240000, argv);
	}
	tap_ok(rc == 0 && p.obuf != NULL &&
	    strstr(p.obuf, "passed all tests") != NULL,
	    "ocf-tester: exit %d (%s | %s)", rc, h_flat(p.obuf ?: ""),
	    h_flat(p.ebuf ?: ""));
	h_proc_free(&p);
}

int
main(void)
{
	struct h_conn *c;
	char def[256];

	h_init();
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);
	snprintf(def, sizeof(def), "%s", h_in_dir(d, "web.json"));
	write_def(def, "web", 32);
	test_vmctl(c, def);
	test_restore(c);
	h_close(c);
	agent_install();
	test_agent(def);
	write_def(def, "web", 32);
	test_bare();
	setenv("OCF_RESKEY_config", def, 1);
	test_ocf_tester(def);
	h_proc_free(h_ctl_last());
	return h_done();
}
