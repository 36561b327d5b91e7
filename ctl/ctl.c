/*
 * What every vmctl command uses: messages on stderr, the common options
 * and positional argument checks.  The bottom of vmctl: it calls no
 * command and no other file of vmctl, so that vmctl.c and every cmd-*.c
 * can use it.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vmctl.h"

/*
 * How errors are reported, for the whole process: -j is a property of
 * the run, and the messages come from every layer (client.c has no
 * struct ctl), so it lives here rather than be passed everywhere.
 */
static struct {
	bool	json;		/* errors as JSON on stdout */
	bool	reported;	/* one was printed as JSON */
	char	held[1024];	/* ctl_warnx()'s lines while json */
} ctl_errors;

/* Error classes and their exit statuses, as in vmctl(1). */
static const struct {
	const char	*cls;
	int		 status;
} ctl_classes[] = {
	{ "failed",		CTL_EXIT_FAIL },	/* vmctl's own */
	{ "internal",		CTL_EXIT_FAIL },
	{ "usage",		CTL_EXIT_USAGE },	/* vmctl's own */
	{ "invalid_argument",	CTL_EXIT_USAGE },
	{ "connection_failed",	CTL_EXIT_CONN },	/* vmctl's own */
	{ "not_found",		CTL_EXIT_NOT_FOUND },
	{ "exists",		CTL_EXIT_EXISTS },
	{ "bad_state",		CTL_EXIT_BAD_STATE },
	{ "permission_denied",	CTL_EXIT_PERMISSION },
	{ "timeout",		CTL_EXIT_TIMEOUT },
	{ "limit_reached",	CTL_EXIT_LIMIT },
	{ "kvm_unavailable",	CTL_EXIT_KVM },
};
#define CTL_NCLASSES	(sizeof(ctl_classes) / sizeof(ctl_classes[0]))

int
ctl_exit_status(const char *cls)
{
	size_t i;

	for (i = 0; i < CTL_NCLASSES; i++)
		if (strcmp(ctl_classes[i].cls, cls) == 0)
			return ctl_classes[i].status;
	return CTL_EXIT_FAIL;
}

/* The class of an exit status that no reported error explained. */
static const char *
ctl_status_class(int status)
{
	size_t i;

	for (i = 0; i < CTL_NCLASSES; i++)
		if (ctl_classes[i].status == status)
			return ctl_classes[i].cls;
	return "failed";
}

void
ctl_json_errors(void)
{
	ctl_errors.json = true;
}

static void
ctl_vwarnx(const char *fmt, va_list ap)
{
	size_t n = strlen(ctl_errors.held);

	if (!ctl_errors.json) {
		fputs("vmctl: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		return;
	}
	if (n > 0 && n + 2 < sizeof(ctl_errors.held)) {
		memcpy(ctl_errors.held + n, "; ", 3);
		n += 2;
	}
	if (n < sizeof(ctl_errors.held))
		vsnprintf(ctl_errors.held + n, sizeof(ctl_errors.held) - n,
		    fmt, ap);
}

void
ctl_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ctl_vwarnx(fmt, ap);
	va_end(ap);
}

void
ctl_note(const char *fmt, ...)
{
	va_list ap;

	fputs("vmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Prints s on stderr with control characters blanked: one line. */
static void
ctl_put_oneline(const char *s)
{
	for (; *s != '\0'; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s,
		    stderr);
}

int
ctl_error(const char *vm, const char *what, const char *cls,
    const char *desc)
{
	struct json_object *o, *e;
	int status = ctl_exit_status(cls);

	if (!ctl_errors.json) {
		fputs("vmctl: ", stderr);
		if (what != NULL) {
			ctl_put_oneline(what);
			fputs(": ", stderr);
		}
		ctl_put_oneline(cls);
		fputs(": ", stderr);
		ctl_put_oneline(desc);
		fputc('\n', stderr);
		return status;
	}
	o = json_object_new_object();
	e = json_object_new_object();
	json_object_object_add(e, "class", json_object_new_string(cls));
	json_object_object_add(e, "desc", json_object_new_string(desc));
	json_object_object_add(e, "exit", json_object_new_int(status));
	if (vm != NULL)
		json_object_object_add(e, "vm", json_object_new_string(vm));
	json_object_object_add(o, "error", e);
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	ctl_errors.reported = true;
	return status;
}

int
ctl_finish(int status)
{
	if (!ctl_errors.json)
		return status;
	if (status != CTL_EXIT_OK && !ctl_errors.reported)
		(void)ctl_error(NULL, NULL, ctl_status_class(status),
		    ctl_errors.held[0] != '\0' ? ctl_errors.held : "failed");
	else if (ctl_errors.held[0] != '\0')
		fprintf(stderr, "vmctl: %s\n", ctl_errors.held);
	return status;
}

/* A command-line error of class cls, with the hint to the usage. */
static int
ctl_vusage(struct ctl *ctl, const char *cls, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n = 0;

	if (ctl->cmd != NULL)
		n = (size_t)snprintf(msg, sizeof(msg), "%s: ", ctl->cmd->name);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	if (ctl_errors.json)
		return ctl_error(NULL, NULL, cls, msg);
	if (ctl->cmd != NULL)
		fprintf(stderr, "vmctl: %s; run 'vmctl help %s' for usage\n",
		    msg, ctl->cmd->name);
	else
		fprintf(stderr, "vmctl: %s; run 'vmctl help' for usage\n",
		    msg);
	return CTL_EXIT_USAGE;
}

int
ctl_usage(struct ctl *ctl, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ctl_vusage(ctl, "invalid_argument", fmt, ap);
	va_end(ap);
	return r;
}

int
ctl_syntax(struct ctl *ctl, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ctl_vusage(ctl, "usage", fmt, ap);
	va_end(ap);
	return r;
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
		return ctl_syntax(ctl, "option '%s' needs an argument",
		    ctl_bad_option(argc, argv, buf, sizeof(buf)));
	default:
		return ctl_syntax(ctl, "unknown option '%s'",
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
		return ctl_syntax(ctl, "missing %s", what);
	if (argc - optind > n)
		return ctl_syntax(ctl, "unexpected argument '%s'",
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
