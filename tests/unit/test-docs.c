/*
 * The manuals kept true to the code: every member a definition may have
 * (the tables config_parse() checks with) is an item of vmmd-vm(5) and
 * of vmm-protocol(7)'s vm.create; every option of create's and run's
 * table (create-options.c) is in vmctl(1)'s synopsis of create (an older
 * name at least in its text), and every option of that synopsis in the
 * table; every option "vmctl help COMMAND" names is in vmctl(1), and
 * every option vmctl(1)'s synopsis gives a command is in its help.
 *
 *   test-docs VMCTL VMCTL.1 VMMD-VM.5 VMMD-PROTOCOL.7
 */
#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "create-options.h"
#include "tap.h"
#include "vmconfig.h"

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "re");
	static char *bufs[4];
	static int next;
	char *buf;
	long n;

	if (fp == NULL || fseek(fp, 0, SEEK_END) < 0 || (n = ftell(fp)) < 0)
		tap_bail("%s: cannot read", path);
	rewind(fp);
	if ((buf = calloc(1, (size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, fp) != (size_t)n)
		tap_bail("%s: cannot read", path);
	fclose(fp);
	free(bufs[next % 4]);
	bufs[next++ % 4] = buf;
	return buf;
}

/* The output of cmd, whole. */
static char *
run(const char *cmd)
{
	static char out[65536];
	FILE *p = popen(cmd, "re");
	size_t n;

	if (p == NULL)
		tap_bail("cannot run %s", cmd);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

/* Whether text has a line that is prefix then word then a blank or EOL. */
static bool
has_item(const char *text, const char *prefix, const char *word)
{
	size_t pl = strlen(prefix), wl = strlen(word);
	const char *l;

	for (l = text; l != NULL && *l != '\0'; l = strchr(l, '\n'),
	    l = l != NULL ? l + 1 : NULL)
		if (strncmp(l, prefix, pl) == 0 &&
		    strncmp(l + pl, word, wl) == 0 &&
		    (l[pl + wl] == ' ' || l[pl + wl] == '\n' ||
		    l[pl + wl] == '\0'))
			return true;
	return false;
}

/* Whether word is a whole word (letters, digits, '_') in s[0..len). */
static bool
has_word(const char *s, size_t len, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= len; i++)
		if (strncmp(s + i, word, wl) == 0 &&
		    (i == 0 || !(isalnum((unsigned char)s[i - 1]) ||
		    s[i - 1] == '_')) && (i + wl == len ||
		    !(isalnum((unsigned char)s[i + wl]) || s[i + wl] == '_')))
			return true;
	return false;
}

/* vmmd-protocol(7)'s vm.create, from its item to the next command. */
static void
proto_create(const char *proto, const char **start, size_t *len)
{
	const char *s = strstr(proto, "\n.It Cm vm.create "), *e;

	if (s == NULL)
		tap_bail("vmmd-protocol(7) has no vm.create item");
	e = strstr(s + 1, "\n.It Cm vm.");
	*start = s;
	*len = e != NULL ? (size_t)(e - s) : strlen(s);
}

static void
test_members(const char *vm5, const char *proto)
{
	static const char *const parents[] = { "disks", "net", "vsock",
		"cloud_init", "owner" };
	const char *const *keys, *create;
	size_t len;

	proto_create(proto, &create, &len);
	for (keys = config_members(NULL); *keys != NULL; keys++) {
		tap_ok(has_item(vm5, ".It Fa ", *keys),
		    "vmmd-vm(5) has the member %s", *keys);
		tap_ok(has_item(create, ".It Ar ", *keys),
		    "vmmd-protocol(7)'s vm.create has the member %s", *keys);
	}
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		keys = config_members(parents[i]);
		if (keys == NULL)
			tap_bail("no table for %s", parents[i]);
		for (; *keys != NULL; keys++) {
			tap_ok(has_item(vm5, ".It Fa ", *keys),
			    "vmmd-vm(5) has %s.%s", parents[i], *keys);
			tap_ok(has_word(create, len, *keys),
			    "vmmd-protocol(7)'s vm.create names %s.%s",
			    parents[i], *keys);
		}
	}
	tap_ok(config_members("nonsense") == NULL, "no table for others");
}

/* The --options in text[0..len), each once, into opts (n of them). */
static size_t
options(const char *text, size_t len, bool man, char opts[][64], size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i + 2 < len; i++) {
		char o[64];
		size_t k = 0, j;

		if (man ? strncmp(text + i, "Fl \\-", 5) != 0 :
		    (strncmp(text + i, "--", 2) != 0 || (i > 0 &&
		    !strchr(" [|", text[i - 1]))))
			continue;
		j = i + (man ? 5 : 2);
		for (; j < len && k < sizeof(o) - 1; j++) {
			if (man && text[j] == '\\' && text[j + 1] == '-') {
				o[k++] = '-';
				j++;
			} else if (islower((unsigned char)text[j]) ||
			    text[j] == '-')
				o[k++] = text[j];
			else
				break;
		}
		o[k] = '\0';
		if (k == 0)
			continue;
		for (j = 0; j < n && strcmp(opts[j], o) != 0; j++)
			;
		if (j == n && n < max)
			snprintf(opts[n++], 64, "%s", o);
	}
	return n;
}

/* vmctl(1)'s synopsis of cmd: its ".It Cm cmd" line or ".It Xo" block. */
static bool
man_synopsis(const char *man, const char *cmd, const char **s, size_t *len)
{
	char want[80];
	const char *p = man, *e;

	snprintf(want, sizeof(want), "\n.It Cm %s", cmd);
	while ((p = strstr(p, want)) != NULL) {
		char c = p[strlen(want)];

		if (c == ' ' || c == '\n')
			break;
		p++;
	}
	if (p == NULL) {
		/* ".It Xo\n.Cm cmd\n...\n.Xc" */
		snprintf(want, sizeof(want), "\n.It Xo\n.Cm %s", cmd);
		for (p = man; (p = strstr(p, want)) != NULL; p++)
			if (p[strlen(want)] == ' ' || p[strlen(want)] == '\n')
				break;
		if (p == NULL)
			return false;
		e = strstr(p, "\n.Xc");
	} else
		e = strchr(p + 1, '\n');
	*s = p;
	*len = e != NULL ? (size_t)(e - p) : strlen(p);
	return true;
}

static void
test_options(const char *vmctl, const char *man)
{
	static char opts[128][64], mopts[128][64];
	char cmdline[1024], *help, *line, *save = NULL, names[64][32];
	size_t n, m, ncmds = 0, len;
	const char *syn;
	bool in_list = false;

	snprintf(cmdline, sizeof(cmdline), "'%s' help", vmctl);
	help = run(cmdline);
	for (line = strtok_r(help, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strcmp(line, "Commands:") == 0) {
			in_list = true;
			continue;
		}
		if (in_list && line[0] != ' ')
			break;
		if (in_list && ncmds < 64 &&
		    sscanf(line, " %31s", names[ncmds]) == 1)
			ncmds++;
	}
	tap_ok(ncmds >= 10, "vmctl help lists %zu commands", ncmds);
	for (size_t c = 0; c < ncmds; c++) {
		snprintf(cmdline, sizeof(cmdline), "'%s' help %s", vmctl,
		    names[c]);
		help = run(cmdline);
		n = options(help, strlen(help), false, opts, 128);
		/* run takes create's options: its item says so. */
		if (!man_synopsis(man, strcmp(names[c], "run") == 0 ?
		    "create" : names[c], &syn, &len)) {
			tap_ok(0, "%s: no item in vmctl(1)", names[c]);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			char want[80], *d;

			/* "Fl \-lost\-ticks": mdoc's escaped hyphens. */
			d = want + snprintf(want, sizeof(want), "Fl \\-");
			for (const char *o = opts[i]; *o != '\0' &&
			    d < want + sizeof(want) - 3; o++) {
				if (*o == '-')
					*d++ = '\\';
				*d++ = *o;
			}
			*d = '\0';
			tap_ok(strstr(man, want) != NULL,
			    "%s: --%s of its help is in vmctl(1)", names[c],
			    opts[i]);
		}
		m = options(syn, len, true, mopts, 128);
		for (size_t i = 0; i < m; i++) {
			size_t j;

			for (j = 0; j < n && strcmp(opts[j], mopts[i]) != 0;
			    j++)
				;
			tap_ok(j < n, "%s: --%s of vmctl(1) is in its help",
			    names[c], mopts[i]);
		}
	}
}

/* "Fl \-name" of option name, mdoc's escaped hyphens, into buf. */
static const char *
man_flag(const char *name, char *buf, size_t len)
{
	char *d = buf + snprintf(buf, len, "Fl \\-");

	for (; *name != '\0' && d < buf + len - 3; name++) {
		if (*name == '-')
			*d++ = '\\';
		*d++ = *name;
	}
	*d = '\0';
	return buf;
}

/* Whether text[0..len) has flag as a whole "Fl \-..." word. */
static bool
has_flag(const char *text, size_t len, const char *flag)
{
	size_t fl = strlen(flag);

	for (size_t i = 0; i + fl <= len; i++)
		if (strncmp(text + i, flag, fl) == 0 && (i + fl == len ||
		    !(islower((unsigned char)text[i + fl]) ||
		    text[i + fl] == '\\')))
			return true;
	return false;
}

static void
test_create_table(const char *man)
{
	static char mopts[128][64];
	const struct option *o, *p;
	const char *syn;
	char flag[80];
	size_t len, m, i;

	if (!man_synopsis(man, "create", &syn, &len))
		tap_bail("vmctl(1) has no create item");
	for (o = create_options; o->name != NULL; o++) {
		/* -h, -j, -s: vmctl(1)'s options of every command. */
		if (o->val == 'h' || o->val == 'j' || o->val == 's') {
			tap_ok(has_flag(man, strlen(man), man_flag(o->name,
			    flag, sizeof(flag))), "--%s is in vmctl(1)",
			    o->name);
			continue;
		}
		for (p = create_options; p < o && p->val != o->val; p++)
			;
		if (p < o)
			tap_ok(has_flag(man, strlen(man), man_flag(o->name,
			    flag, sizeof(flag))), "create: --%s, an older "
			    "name of --%s, is in vmctl(1)", o->name,
			    p->name);
		else
			tap_ok(has_flag(syn, len, man_flag(o->name, flag,
			    sizeof(flag))), "create: --%s of its table is in "
			    "vmctl(1)'s synopsis", o->name);
	}
	m = options(syn, len, true, mopts, 128);
	for (i = 0; i < m; i++) {
		for (o = create_options; o->name != NULL &&
		    strcmp(o->name, mopts[i]) != 0; o++)
			;
		tap_ok(o->name != NULL, "create: --%s of vmctl(1)'s synopsis "
		    "is in its table", mopts[i]);
	}
}

int
main(int argc, char **argv)
{
	if (argc != 5)
		tap_bail("usage: test-docs VMCTL VMCTL.1 VMMD-VM.5 "
		    "VMMD-PROTOCOL.7");
	test_members(slurp(argv[3]), slurp(argv[4]));
	test_create_table(slurp(argv[2]));
	test_options(argv[1], slurp(argv[2]));
	return tap_done();
}
