/*
 * vmmd's configuration file (daemon-conf.h).
 *
 * The format is the simplest that an administrator (or a configuration
 * management tool) can write and a comment can explain: one setting per
 * line, "key = value", blanks around either ignored, '#' starting a
 * comment line.  Values are not quoted: paths with spaces just work.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon-conf.h"

static int
dconf_path(char **dst, const char *value, char *err, size_t errlen)
{
	char *p;

	if (value[0] != '/') {
		snprintf(err, errlen, "'%s' is not an absolute path", value);
		return -EINVAL;
	}
	if ((p = strdup(value)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	free(*dst);
	*dst = p;
	return 0;
}

/* A whole number of seconds from min to max. */
static int
dconf_seconds(unsigned int *dst, const char *value, unsigned int min,
    unsigned int max, char *err, size_t errlen)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 ||
	    v < min || v > max) {
		snprintf(err, errlen, "'%s' is not a number of seconds from "
		    "%u to %u", value, min, max);
		return -EINVAL;
	}
	*dst = (unsigned int)v;
	return 0;
}

/* Bytes, or with a suffix K, M or G (KiB, MiB, GiB). */
static int
dconf_size(uint64_t *dst, const char *value, char *err, size_t errlen)
{
	static const struct {
		const char *suffix;
		unsigned int shift;
	} units[] = {
		{ "", 0 }, { "K", 10 }, { "KiB", 10 }, { "M", 20 },
		{ "MiB", 20 }, { "G", 30 }, { "GiB", 30 },
	};
	unsigned long long v;
	char *end;
	size_t i;

	errno = 0;
	v = strtoull(value, &end, 10);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].suffix) == 0)
			break;
	if (value[0] < '0' || value[0] > '9' || errno != 0 ||
	    i == sizeof(units) / sizeof(units[0]) ||
	    v > (UINT64_MAX >> 30)) {
		snprintf(err, errlen, "'%s' is not a size (bytes, or with K, "
		    "M or G)", value);
		return -EINVAL;
	}
	*dst = (uint64_t)v << units[i].shift;
	return 0;
}

/* A group by name or number: its gid, or -errno with err set. */
static int
dconf_group(const char *group, gid_t *gid, char *err, size_t errlen)
{
	struct group gr, *found = NULL;
	size_t size = 4096;
	unsigned long v;
	char *buf, *end;
	int rc;

	if (group[0] >= '0' && group[0] <= '9') {
		errno = 0;
		v = strtoul(group, &end, 10);
		if (*end != '\0' || errno != 0 || v >= (gid_t)-1) {
			snprintf(err, errlen, "'%s' is not a group number",
			    group);
			return -EINVAL;
		}
		*gid = (gid_t)v;
		return 0;
	}
	/* A group of many members needs more room than most. */
	for (;;) {
		if ((buf = malloc(size)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		rc = getgrnam_r(group, &gr, buf, size, &found);
		if (rc != ERANGE || size >= (1u << 24))
			break;
		free(buf);
		size *= 4;
	}
	if (rc == 0 && found != NULL)
		*gid = gr.gr_gid;
	free(buf);
	if (rc == 0 && found != NULL)
		return 0;
	if (rc == 0 || rc == ENOENT || rc == ESRCH) {
		snprintf(err, errlen, "unknown group '%s'", group);
		return -ENOENT;
	}
	snprintf(err, errlen, "group '%s': %s", group, strerror(rc));
	return -rc;
}

/*
 * "GROUP:NAME", NAME a TAP's name or a prefix of names ending in '*'.
 * The names are those a VM definition may give (vmmd-vm(5)), but for
 * '%', which the kernel expands (tap%d makes tap0, tap1...): a rule
 * holds no '%', so that a name matches it only if what the kernel makes
 * of the name does too.
 */
static int
dconf_tap_allow(struct dconf *c, const char *value, char *err,
    size_t errlen)
{
	struct dconf_tap_rule rule, *rules;
	char group[256];
	const char *colon, *name;
	size_t glen, nlen, i;
	int rc;

	colon = strchr(value, ':');
	if (colon == NULL || strchr(colon + 1, ':') != NULL) {
		snprintf(err, errlen, "'%s' is not GROUP:NAME (NAME a TAP's "
		    "name, or a prefix ending in '*')", value);
		return -EINVAL;
	}
	memset(&rule, 0, sizeof(rule));
	glen = (size_t)(colon - value);
	while (glen > 0 && (value[glen - 1] == ' ' || value[glen - 1] == '\t'))
		glen--;
	name = colon + 1;
	while (*name == ' ' || *name == '\t')
		name++;
	if (glen == 0 || glen >= sizeof(group)) {
		snprintf(err, errlen, "'%s': no group before ':'", value);
		return -EINVAL;
	}
	memcpy(group, value, glen);
	group[glen] = '\0';
	nlen = strlen(name);
	rule.prefix = nlen > 0 && name[nlen - 1] == '*';
	if (rule.prefix)
		nlen--;
	for (i = 0; i < nlen; i++)
		if (name[i] == '/' || name[i] == '%' || name[i] == '*' ||
		    name[i] < 0x21 || name[i] > 0x7e)
			break;
	if ((nlen == 0 && !rule.prefix) || nlen >= sizeof(rule.name) ||
	    i < nlen || (!rule.prefix && (strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0))) {
		snprintf(err, errlen, "'%s' is not a TAP's name or a prefix "
		    "(1 to %zu bytes without '/', ':', '%%' or blanks, with "
		    "'*' at the end for a prefix)", name, sizeof(rule.name) -
		    1);
		return -EINVAL;
	}
	if ((rc = dconf_group(group, &rule.gid, err, errlen)) < 0)
		return rc;
	memcpy(rule.name, name, nlen);
	snprintf(rule.text, sizeof(rule.text), "%s", name);
	rules = reallocarray(c->tap_rules, c->ntap_rules + 1, sizeof(*rules));
	if (rules == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rules[c->ntap_rules++] = rule;
	c->tap_rules = rules;
	return 0;
}

bool
dconf_tap_matches(const struct dconf_tap_rule *rule, const char *name)
{
	if (rule->prefix)
		return strncmp(name, rule->name, strlen(rule->name)) == 0;
	return strcmp(name, rule->name) == 0;
}

/*
 * FIRST-LAST, inclusive, from 1 to DCONF_WORKER_UID_MAX, leaving out
 * nobody (65534) and the 16-bit (uid_t)-1 (65535): uids no other
 * process has a reason to run as.
 */
static int
dconf_uids(uid_t *first, uid_t *last, const char *value, char *err,
    size_t errlen)
{
	unsigned long a, b;
	char *end;

	errno = 0;
	a = strtoul(value, &end, 10);
	if (value[0] < '1' || value[0] > '9' || *end != '-' ||
	    end[1] < '1' || end[1] > '9' || errno != 0)
		goto bad;
	b = strtoul(end + 1, &end, 10);
	if (*end != '\0' || errno != 0 || b < a ||
	    b > DCONF_WORKER_UID_MAX)
		goto bad;
	if (a <= 65535 && b >= 65534) {
		snprintf(err, errlen, "'%s' holds uid 65534 or 65535 (nobody, "
		    "and the 16-bit -1)", value);
		return -EINVAL;
	}
	*first = (uid_t)a;
	*last = (uid_t)b;
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not a range of uids FIRST-LAST, from "
	    "1 to %u", value, DCONF_WORKER_UID_MAX);
	return -EINVAL;
}

int
dconf_init(struct dconf *c)
{
	memset(c, 0, sizeof(*c));
	c->shutdown_timeout = 10;
	c->boot_timeout = DCONF_BOOT_TIMEOUT;
	c->boot_disk_timeout = DCONF_BOOT_DISK_TIMEOUT;
	c->console_log_max = DCONF_CONSOLE_LOG_MAX;
	c->worker_uid_first = DCONF_WORKER_UID_FIRST;
	c->worker_uid_last = DCONF_WORKER_UID_LAST;
	c->socket = strdup(VMMD_DEFAULT_SOCKET);
	c->statedir = strdup(VMMD_DEFAULT_STATEDIR);
	c->kernel = strdup(VMMD_DATADIR "/demo.elf");
	c->passt = strdup(DCONF_PASST);
	c->virtiofsd = strdup(DCONF_VIRTIOFSD);
	c->bios = strdup(DCONF_BIOS);
	c->vgabios = strdup(DCONF_VGABIOS);
	c->ovmf_code = strdup(DCONF_OVMF_CODE);
	c->ovmf_vars = strdup(DCONF_OVMF_VARS);
	if (c->socket == NULL || c->statedir == NULL || c->kernel == NULL ||
	    c->passt == NULL || c->virtiofsd == NULL || c->bios == NULL || c->vgabios == NULL ||
	    c->ovmf_code == NULL || c->ovmf_vars == NULL) {
		dconf_fini(c);
		return -ENOMEM;
	}
	return 0;
}

void
dconf_fini(struct dconf *c)
{
	free(c->socket);
	free(c->statedir);
	free(c->kernel);
	free(c->tap_rules);
	free(c->metrics_listen);
	free(c->passt);
	free(c->virtiofsd);
	free(c->bios);
	free(c->vgabios);
	free(c->ovmf_code);
	free(c->ovmf_vars);
	memset(c, 0, sizeof(*c));
}

/*
 * metrics_listen: "HOST:PORT" with a numeric host ("[V6]:PORT" for
 * IPv6) and a port of 1..65535; the address itself is checked when
 * vmmd binds it.
 */
static int
dconf_listen(char **dst, const char *value, char *err, size_t errlen)
{
	const char *colon = strrchr(value, ':');
	char *end, *copy;
	unsigned long port;

	if (colon == NULL || colon == value)
		goto bad;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port == 0 ||
	    port > 65535)
		goto bad;
	if ((copy = strdup(value)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	free(*dst);
	*dst = copy;
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not HOST:PORT (127.0.0.1:9475, "
	    "[::1]:9475)", value);
	return -EINVAL;
}

int
dconf_set(struct dconf *c, const char *key, const char *value, char *err,
    size_t errlen)
{
	if (strcmp(key, "socket") == 0)
		return dconf_path(&c->socket, value, err, errlen);
	if (strcmp(key, "state_dir") == 0)
		return dconf_path(&c->statedir, value, err, errlen);
	if (strcmp(key, "default_kernel") == 0)
		return dconf_path(&c->kernel, value, err, errlen);
	if (strcmp(key, "shutdown_timeout") == 0)
		return dconf_seconds(&c->shutdown_timeout, value, 0,
		    DCONF_SHUTDOWN_TIMEOUT_MAX, err, errlen);
	/* 0 would kill every worker before it could say anything. */
	if (strcmp(key, "boot_timeout") == 0)
		return dconf_seconds(&c->boot_timeout, value, 1,
		    DCONF_BOOT_TIMEOUT_MAX, err, errlen);
	if (strcmp(key, "boot_disk_timeout") == 0)
		return dconf_seconds(&c->boot_disk_timeout, value, 1,
		    DCONF_BOOT_TIMEOUT_MAX, err, errlen);
	if (strcmp(key, "console_log_max") == 0)
		return dconf_size(&c->console_log_max, value, err, errlen);
	if (strcmp(key, "tap_allow") == 0)
		return dconf_tap_allow(c, value, err, errlen);
	if (strcmp(key, "worker_uids") == 0)
		return dconf_uids(&c->worker_uid_first, &c->worker_uid_last,
		    value, err, errlen);
	if (strcmp(key, "metrics_listen") == 0)
		return dconf_listen(&c->metrics_listen, value, err, errlen);
	if (strcmp(key, "passt") == 0)
		return dconf_path(&c->passt, value, err, errlen);
	if (strcmp(key, "virtiofsd") == 0)
		return dconf_path(&c->virtiofsd, value, err, errlen);
	if (strcmp(key, "bios") == 0)
		return dconf_path(&c->bios, value, err, errlen);
	if (strcmp(key, "vgabios") == 0)
		return dconf_path(&c->vgabios, value, err, errlen);
	if (strcmp(key, "ovmf_code") == 0)
		return dconf_path(&c->ovmf_code, value, err, errlen);
	if (strcmp(key, "ovmf_vars") == 0)
		return dconf_path(&c->ovmf_vars, value, err, errlen);
	snprintf(err, errlen, "unknown setting '%s' (socket, state_dir, "
	    "default_kernel, shutdown_timeout, boot_timeout, "
	    "boot_disk_timeout, console_log_max, tap_allow, worker_uids, "
	    "metrics_listen, passt, virtiofsd, bios, vgabios, ovmf_code, ovmf_vars)", key);
	return -EINVAL;
}

static char *
dconf_trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
	    end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/* One line: 0 (also for blanks and comments) or an error in err. */
static int
dconf_line(struct dconf *c, char *line, char *err, size_t errlen)
{
	char *key, *eq, *value;

	key = dconf_trim(line);
	if (key[0] == '\0' || key[0] == '#')
		return 0;
	if ((eq = strchr(key, '=')) == NULL) {
		snprintf(err, errlen, "expected 'key = value'");
		return -EINVAL;
	}
	*eq = '\0';
	key = dconf_trim(key);
	value = dconf_trim(eq + 1);
	if (value[0] == '\0') {
		snprintf(err, errlen, "'%s' has no value", key);
		return -EINVAL;
	}
	return dconf_set(c, key, value, err, errlen);
}

int
dconf_load(struct dconf *c, const char *path, bool must_exist, char *err,
    size_t errlen)
{
	char line[DCONF_LINE_MAX], why[512];
	unsigned int lineno = 0;
	FILE *f;
	int rc = 0;

	f = fopen(path, "re");
	if (f == NULL) {
		rc = -errno;
		if (rc == -ENOENT && !must_exist)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line longer than %d "
			    "bytes", path, lineno, DCONF_LINE_MAX - 2);
			rc = -EINVAL;
			break;
		}
		if ((rc = dconf_line(c, line, why, sizeof(why))) < 0) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			break;
		}
	}
	if (rc == 0 && ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
	}
	fclose(f);
	return rc;
}
