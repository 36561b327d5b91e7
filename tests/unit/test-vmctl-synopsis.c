/*
 * Every vmctl command's usage line ("vmctl help COMMAND") says what its
 * entry in vmctl(1) says: the man page's item for the command (".It Cm
 * start Ar name Op Fl \-console", or an ".It Xo" block) is rendered to
 * plain text ("start NAME [--console]") and compared with the usage
 * line, letters' case and blanks around '|' aside.  Every command that
 * "vmctl help" lists must have an item.  The usage is wrapped: its lines
 * are joined, and none may pass 79 columns but for one long option.
 *
 *   test-vmctl-synopsis VMCTL VMCTL.1
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define LINE_MAX_LEN	4096

/* Append word to out, with a blank before it unless glued. */
static void
put(char *out, size_t len, const char *word, bool *glue, bool upper)
{
	size_t n = strlen(out);

	/* mdoc sets closing punctuation against the word before. */
	if (n > 0 && !*glue && out[n - 1] != '[' && n + 1 < len &&
	    strchr(":,.;)", word[0]) == NULL)
		out[n++] = ' ';
	for (; *word != '\0' && n + 1 < len; word++)
		out[n++] = upper ? (char)toupper((unsigned char)*word) : *word;
	out[n] = '\0';
	*glue = false;
}

/* Close a bracket: no blank before it. */
static void
put_close(char *out, size_t len)
{
	size_t n = strlen(out);

	if (n + 1 < len) {
		out[n++] = ']';
		out[n] = '\0';
	}
}

/*
 * Render one line of mdoc macros (without the leading '.') to text.
 * Op's bracket closes at the end of its line, as mdoc's does.
 */
static void
render_line(char *line, char *out, size_t len, bool *glue)
{
	char *w, *save = NULL;
	int opens = 0;
	bool upper = false, flag = false;

	for (w = strtok_r(line, " \t\n", &save); w != NULL;
	    w = strtok_r(NULL, " \t\n", &save)) {
		if (strcmp(w, "It") == 0 || strcmp(w, "Xo") == 0 ||
		    strcmp(w, "Xc") == 0 || strcmp(w, "Cm") == 0 ||
		    strcmp(w, "Li") == 0) {
			upper = flag = false;
		} else if (strcmp(w, "Ar") == 0) {
			upper = true;
			flag = false;
		} else if (strcmp(w, "Fl") == 0) {
			flag = true;
			upper = false;
		} else if (strcmp(w, "Op") == 0 || strcmp(w, "Oo") == 0) {
			put(out, len, "[", glue, false);
			*glue = true;
			if (w[1] == 'p')
				opens++;
		} else if (strcmp(w, "Oc") == 0) {
			put_close(out, len);
		} else if (strcmp(w, "Ns") == 0) {
			*glue = true;
		} else {
			char word[256], *d = word;
			const char *s = w;

			if (flag)
				*d++ = '-';
			for (; *s != '\0' && d < word + sizeof(word) - 1; s++)
				if (!(s[0] == '\\' && s[1] == '-'))
					*d++ = *s;
			*d = '\0';
			put(out, len, word, glue, upper);
			flag = false;
		}
	}
	while (opens-- > 0)
		put_close(out, len);
}

/* Lower case, no blanks around '|', single blanks. */
static void
normalize(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; *in != '\0' && n + 1 < len; in++) {
		if (*in == ' ' && (in[1] == '|' || in[1] == ' ' ||
		    (n > 0 && out[n - 1] == '|')))
			continue;
		out[n++] = (char)tolower((unsigned char)*in);
	}
	out[n] = '\0';
}

/* The man page's item for cmd, rendered; false if there is none. */
static bool
man_item(const char *man, const char *cmd, char *out, size_t len)
{
	char line[LINE_MAX_LEN], want[128], block[LINE_MAX_LEN] = "";
	bool in_xo = false, glue = false;
	FILE *fp = fopen(man, "re");

	if (fp == NULL)
		tap_bail("%s: cannot open", man);
	snprintf(want, sizeof(want), ".It Cm %s", cmd);
	out[0] = '\0';
	while (fgets(line, sizeof(line), fp) != NULL) {
		size_t wl = strlen(want);

		if (in_xo) {
			if (strncmp(line, ".Xc", 3) == 0) {
				in_xo = false;
				if (strncmp(block, "Cm ", 3) == 0 &&
				    strncmp(block + 3, cmd, strlen(cmd)) == 0 &&
				    isspace((unsigned char)block[3 +
				    strlen(cmd)]))
					break;
				out[0] = '\0';
				continue;
			}
			if (block[0] == '\0')
				snprintf(block, sizeof(block), "%s", line + 1);
			render_line(line + 1, out, len, &glue);
			continue;
		}
		if (strncmp(line, ".It Xo", 6) == 0) {
			in_xo = true;
			block[0] = out[0] = '\0';
			glue = false;
			continue;
		}
		if (strncmp(line, want, wl) == 0 &&
		    isspace((unsigned char)line[wl])) {
			render_line(line + 1, out, len, &glue);
			fclose(fp);
			return true;
		}
	}
	fclose(fp);
	return out[0] != '\0';
}

/*
 * The usage lines (up to the first blank line) of "vmctl help COMMAND",
 * joined into one in place; each must fit in 80 columns unless it is
 * one option alone.
 */
static bool
one_option(const char *s, size_t len)
{
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '[')
			depth++;
		else if (s[i] == ']')
			depth--;
		else if (s[i] == ' ' && depth == 0)
			return false;
	}
	return true;
}

static void
join_usage(char *s)
{
	char *end = strstr(s, "\n\n"), *nl, *d = s;
	const char *line = s;

	if (end != NULL)
		*end = '\0';
	for (;;) {
		nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		const char *t = line;

		while (*t == ' ' && line > s)
			t++;
		if (len > 79 && !one_option(t, len - (size_t)(t - line)))
			tap_ok(0, "usage line of %zu columns: %.*s", len,
			    (int)len, line);
		if (d != s)
			*d++ = ' ';
		memmove(d, t, len - (size_t)(t - line));
		d += len - (size_t)(t - line);
		if (nl == NULL)
			break;
		line = nl + 1;
	}
	*d = '\0';
}

/* The output of a command (first lines, at most len bytes). */
static void
run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "re");
	size_t n;

	if (p == NULL)
		tap_bail("cannot run %s", cmd);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	pclose(p);
}

int
main(int argc, char **argv)
{
	static char help[65536];
	char cmdline[1024], usage[LINE_MAX_LEN], item[LINE_MAX_LEN];
	char a[LINE_MAX_LEN], b[LINE_MAX_LEN], *line, *save = NULL;
	bool in_list = false;
	int ncmds = 0;

	if (argc != 3)
		tap_bail("usage: test-vmctl-synopsis VMCTL VMCTL.1");
	snprintf(cmdline, sizeof(cmdline), "'%s' help", argv[1]);
	run(cmdline, help, sizeof(help));
	for (line = strtok_r(help, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char name[64];
		const char *prefix = "usage: vmctl [-s SOCKET] [-j] ", *u;

		if (strcmp(line, "Commands:") == 0) {
			in_list = true;
			continue;
		}
		if (!in_list || strncmp(line, "  ", 2) != 0) {
			if (in_list && line[0] != ' ')
				break;
			continue;
		}
		if (sscanf(line, " %63s", name) != 1)
			continue;
		ncmds++;
		snprintf(cmdline, sizeof(cmdline), "'%s' help %s", argv[1],
		    name);
		run(cmdline, usage, sizeof(usage));
		join_usage(usage);
		u = strncmp(usage, prefix, strlen(prefix)) == 0 ?
		    usage + strlen(prefix) : usage;
		if (!man_item(argv[2], name, item, sizeof(item))) {
			tap_ok(0, "%s: no item in vmctl(1)", name);
			continue;
		}
		normalize(u, a, sizeof(a));
		normalize(item, b, sizeof(b));
		tap_ok(strcmp(a, b) == 0, "%s: usage and vmctl(1) agree", name);
		if (strcmp(a, b) != 0) {
			tap_diag("usage:    %s", a);
			tap_diag("vmctl(1): %s", b);
		}
	}
	tap_ok(ncmds >= 10, "vmctl help lists %d commands", ncmds);
	return tap_done();
}
