/*
 * What every vmctl command uses: messages on stderr, the common options
 * and positional argument checks.  The bottom of vmctl: it calls no
 * command and no other file of vmctl, so that vmctl.c and every cmd-*.c
 * can use it.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vmctl.h"

void
ctl_warnx(const char *fmt, ...)
{
	va_list ap;

	fputs("vmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
ctl_usage(struct ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	fputs("vmctl: ", stderr);
	if (ctl->cmd != NULL)
		fprintf(stderr, "%s: ", ctl->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (ctl->cmd != NULL)
		fprintf(stderr, "; run 'vmctl help %s' for usage\n",
		    ctl->cmd->name);
	else
		fputs("; run 'vmctl help' for usage\n", stderr);
	return CTL_EXIT_USAGE;
}

/* Usage lines end before this column; the next are indented so far. */
#define CTL_USAGE_WIDTH		79
#define CTL_USAGE_INDENT	"        "

/*
 * The synopsis s after a line of col columns, wrapped between its
 * options: a break only where a blank is outside brackets, so that
 * "[--disk PATH[,readonly]...]" stays whole.
 */
static void
ctl_usage_wrap(const char *s, size_t col)
{
	while (*s != '\0') {
		size_t len = 0, depth = 0;

		/* One word: up to a blank outside brackets. */
		while (s[len] != '\0' && (s[len] != ' ' || depth > 0)) {
			if (s[len] == '[')
				depth++;
			else if (s[len] == ']' && depth > 0)
				depth--;
			len++;
		}
		if (col + 1 + len > CTL_USAGE_WIDTH &&
		    col > sizeof(CTL_USAGE_INDENT) - 1) {
			fputs("\n" CTL_USAGE_INDENT, stdout);
			col = sizeof(CTL_USAGE_INDENT) - 1;
		} else {
			putchar(' ');
			col++;
		}
		fwrite(s, 1, len, stdout);
		col += len;
		s += len;
		while (*s == ' ')
			s++;
	}
}

void
ctl_command_help(const struct ctl_command *cmd)
{
	int n = printf("usage: vmctl [-s SOCKET] [-j] %s", cmd->name);

	ctl_usage_wrap(cmd->synopsis, n > 0 ? (size_t)n : 0);
	printf("\n\n%c%s.\n", toupper((unsigned char)cmd->summary[0]),
	    cmd->summary + 1);
	if (cmd->help != NULL)
		fputs(cmd->help, stdout);	/* paragraphs start with \n */
}

/* The option getopt complained about, as the user wrote it. */
static const char *
ctl_bad_option(int argc, char **argv, char *buf, size_t len)
{
	const char *arg;

	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (strncmp(arg, "--", 2) == 0) {
		snprintf(buf, len, "%.*s", (int)strcspn(arg, "="), arg);
		return buf;
	}
	if (optopt != 0 && optopt >= 0x20 && optopt < 0x7f)
		snprintf(buf, len, "-%c", optopt);
	else
		snprintf(buf, len, "%s", arg);
	return buf;
}

int
ctl_common_option(struct ctl *ctl, int argc, char **argv, int c)
{
	char buf[64];

	switch (c) {
	case 'h':
		ctl_command_help(ctl->cmd);
		return CTL_EXIT_OK;
	case 'j':
		ctl->json = 1;
		return -1;
	case 's':
		ctl->socket = optarg;
		return -1;
	case ':':
		return ctl_usage(ctl, "option '%s' needs an argument",
		    ctl_bad_option(argc, argv, buf, sizeof(buf)));
	default:
		return ctl_usage(ctl, "unknown option '%s'",
		    ctl_bad_option(argc, argv, buf, sizeof(buf)));
	}
}

int
ctl_common_options(struct ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	while ((c = getopt_long(argc, argv, CTL_COMMON_OPTSTRING, longopts,
	    NULL)) != -1)
		if ((r = ctl_common_option(ctl, argc, argv, c)) >= 0)
			return r;
	return -1;
}

int
ctl_positional(struct ctl *ctl, int argc, char **argv, int n,
    const char *what)
{
	if (argc - optind < n)
		return ctl_usage(ctl, "missing %s", what);
	if (argc - optind > n)
		return ctl_usage(ctl, "unexpected argument '%s'",
		    argv[optind + n]);
	return 0;
}

int
ctl_name_only(struct ctl *ctl, int argc, char **argv, const char **namep)
{
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
		return r;
	*namep = argv[optind];
	return -1;
}

void
ctl_print_json(struct json_object *obj)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	if (isatty(STDOUT_FILENO))
		flags |= JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;
	else
		flags |= JSON_C_TO_STRING_PLAIN;
	printf("%s\n", json_object_to_json_string_ext(obj, flags));
}
