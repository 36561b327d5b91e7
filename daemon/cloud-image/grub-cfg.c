/* See grub-cfg.h. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grub-cfg.h"
#include "image-str.h"

#define GRUB_MAX_VARS		64
#define GRUB_VAR_MAX		1024
#define GRUB_MAX_WORDS		64
#define GRUB_WORD_MAX		2048
#define GRUB_MAX_ITEMS		64
#define GRUB_MAX_DEPTH		8

struct grub_var {
	char name[64];
	char value[GRUB_VAR_MAX];
};

/* A menu entry or a submenu, in the order the file has them. */
struct grub_item {
	bool submenu;
	int parent;		/* the submenu it is in; -1: the top */
	char title[256];
	char id[128];
	struct grub_entry e;	/* entries only */
};

enum grub_block { GRUB_B_TOP, GRUB_B_ENTRY, GRUB_B_SUBMENU, GRUB_B_SKIP };

struct grub_parse {
	struct grub_var vars[GRUB_MAX_VARS];
	unsigned int nvars;
	struct grub_item items[GRUB_MAX_ITEMS];
	unsigned int nitems;
	struct {
		enum grub_block kind;
		int item;
	} stack[GRUB_MAX_DEPTH];
	unsigned int depth;	/* 0: the top */
	unsigned int skipped;	/* blocks opened deeper than the stack */
	char words[GRUB_MAX_WORDS][GRUB_WORD_MAX];
	unsigned int nwords;
};

static const char *
grub_get(const struct grub_parse *g, const char *name)
{
	/* Generated entries name their id through this; treat it as set. */
	if (strcmp(name, "menuentry_id_option") == 0)
		return "--id";
	for (unsigned int i = g->nvars; i-- > 0;)
		if (strcmp(g->vars[i].name, name) == 0)
			return g->vars[i].value;
	return "";
}

static void
grub_set(struct grub_parse *g, const char *name, size_t nlen,
    const char *value)
{
	struct grub_var *v = NULL;

	if (nlen == 0 || nlen >= sizeof(v->name))
		return;
	for (unsigned int i = 0; i < g->nvars; i++)
		if (strlen(g->vars[i].name) == nlen &&
		    memcmp(g->vars[i].name, name, nlen) == 0)
			v = &g->vars[i];
	if (v == NULL) {
		if (g->nvars == GRUB_MAX_VARS)
			return;
		v = &g->vars[g->nvars++];
		memcpy(v->name, name, nlen);
		v->name[nlen] = '\0';
	}
	image_strcpy(v->value, sizeof(v->value), value);
}

static bool
grub_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Append s to the word being built (cut at its limit). */
static void
grub_put(char *w, size_t *len, const char *s, size_t n)
{
	if (n > GRUB_WORD_MAX - 1 - *len)
		n = GRUB_WORD_MAX - 1 - *len;
	memcpy(w + *len, s, n);
	*len += n;
	w[*len] = '\0';
}

/* "$name" or "${name}" at *pp: its value appended, *pp past it. */
static void
grub_expand(const struct grub_parse *g, const char **pp, char *w, size_t *len)
{
	const char *p = *pp + 1, *start;
	char name[64];
	size_t n;

	if (*p == '{') {
		start = ++p;
		while (*p != '\0' && *p != '}' && *p != '\n')
			p++;
		n = (size_t)(p - start);
		if (*p == '}')
			p++;
	} else {
		start = p;
		while (grub_name_char(*p))
			p++;
		n = (size_t)(p - start);
	}
	*pp = p;
	if (n == 0) {
		grub_put(w, len, "$", 1);
		return;
	}
	if (n >= sizeof(name))
		return;
	memcpy(name, start, n);
	name[n] = '\0';
	grub_put(w, len, grub_get(g, name), strlen(grub_get(g, name)));
}

/*
 * The words of the command at *pp into g->words, expanded and
 * unquoted; *pp past it (its ';' or newline).  Comments are dropped.
 */
static void
grub_command(struct grub_parse *g, const char **pp)
{
	const char *p = *pp;
	char *w;
	size_t len;

	g->nwords = 0;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r' ||
		    (*p == '\\' && p[1] == '\n'))
			p += *p == '\\' ? 2 : 1;
		if (*p == '\0' || *p == '\n' || *p == ';') {
			if (*p != '\0')
				p++;
			break;
		}
		if (*p == '#' ) {
			while (*p != '\0' && *p != '\n')
				p++;
			continue;
		}
		w = g->nwords < GRUB_MAX_WORDS ? g->words[g->nwords] :
		    g->words[GRUB_MAX_WORDS - 1];
		len = 0;
		w[0] = '\0';
		while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n' &&
		    *p != ';' && *p != '\r') {
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');

				if (e == NULL)
					e = p + strlen(p);
				grub_put(w, &len, p + 1, (size_t)(e - p - 1));
				p = *e != '\0' ? e + 1 : e;
			} else if (*p == '"') {
				p++;
				while (*p != '\0' && *p != '"') {
					if (*p == '\\' && p[1] != '\0') {
						grub_put(w, &len, p + 1, 1);
						p += 2;
					} else if (*p == '$') {
						grub_expand(g, &p, w, &len);
					} else {
						grub_put(w, &len, p++, 1);
					}
				}
				if (*p == '"')
					p++;
			} else if (*p == '\\' && p[1] != '\0') {
				if (p[1] != '\n')
					grub_put(w, &len, p + 1, 1);
				p += 2;
			} else if (*p == '$') {
				grub_expand(g, &p, w, &len);
			} else {
				grub_put(w, &len, p++, 1);
			}
		}
		if (g->nwords < GRUB_MAX_WORDS)
			g->nwords++;
	}
	*pp = p;
}

static int
grub_parent(const struct grub_parse *g)
{
	for (unsigned int d = g->depth; d > 0; d--)
		if (g->stack[d].kind == GRUB_B_SUBMENU)
			return g->stack[d].item;
	return -1;
}

static void
grub_push(struct grub_parse *g, enum grub_block kind, int item)
{
	if (g->skipped > 0 || g->depth + 1 >= GRUB_MAX_DEPTH) {
		g->skipped++;
		return;
	}
	g->depth++;
	g->stack[g->depth].kind = kind;
	g->stack[g->depth].item = item;
}

static void
grub_pop(struct grub_parse *g)
{
	if (g->skipped > 0)
		g->skipped--;
	else if (g->depth > 0)
		g->depth--;
}

/* "menuentry TITLE [options] {" or "submenu ...": a new item. */
static int
grub_item_new(struct grub_parse *g, bool submenu)
{
	struct grub_item *it;

	if (g->nitems == GRUB_MAX_ITEMS || g->nwords < 3)
		return -1;
	it = &g->items[g->nitems];
	memset(it, 0, sizeof(*it));
	it->submenu = submenu;
	it->parent = grub_parent(g);
	image_strcpy(it->title, sizeof(it->title), g->words[1]);
	for (unsigned int i = 2; i + 1 < g->nwords; i++)
		if (strcmp(g->words[i], "--id") == 0)
			image_strcpy(it->id, sizeof(it->id), g->words[i + 1]);
	return (int)g->nitems++;
}

/* w after the words in buf (size bytes), a space between, cut to fit. */
static void
grub_append_word(char *buf, size_t size, const char *w)
{
	size_t l = strlen(buf), n = strlen(w);

	if (l > 0 && l + 1 < size)
		buf[l++] = ' ';
	if (n > size - 1 - l)
		n = size - 1 - l;
	memcpy(buf + l, w, n);
	buf[l + n] = '\0';
}

/* A command inside an entry's block. */
static void
grub_entry_command(struct grub_parse *g, struct grub_entry *e)
{
	const char *cmd = g->words[0];
	unsigned int i;

	if (strcmp(cmd, "linux") == 0 || strcmp(cmd, "linuxefi") == 0 ||
	    strcmp(cmd, "linux16") == 0) {
		if (g->nwords < 2)
			return;
		image_strcpy(e->kernel, sizeof(e->kernel), g->words[1]);
		e->args[0] = '\0';
		for (i = 2; i < g->nwords; i++)
			if (g->words[i][0] != '\0')	/* else an empty variable */
				grub_append_word(e->args, sizeof(e->args),
				    g->words[i]);
	} else if (strcmp(cmd, "initrd") == 0 ||
	    strcmp(cmd, "initrdefi") == 0 || strcmp(cmd, "initrd16") == 0) {
		e->ninitrd = 0;
		for (i = 1; i < g->nwords && e->ninitrd < GRUB_MAX_INITRDS;
		    i++)
			if (g->words[i][0] != '\0')
				image_strcpy(e->initrd[e->ninitrd++],
				    sizeof(e->initrd[0]), g->words[i]);
	} else if (strcmp(cmd, "search") == 0 ||
	    strcmp(cmd, "search.fs_uuid") == 0) {
		bool uuid = strcmp(cmd, "search.fs_uuid") == 0, root = false;
		const char *value = NULL;

		for (i = 1; i < g->nwords; i++) {
			const char *w = g->words[i];

			if (strcmp(w, "--fs-uuid") == 0 || strcmp(w, "-u") == 0)
				uuid = true;
			else if (strcmp(w, "--set=root") == 0 ||
			    strcmp(w, "root") == 0)
				root = true;
			else if (strcmp(w, "--set") == 0 && i + 1 < g->nwords &&
			    strcmp(g->words[i + 1], "root") == 0)
				root = true, i++;
			else if (w[0] != '-')
				value = w;
		}
		/* search.fs_uuid UUID root: the variable is positional. */
		if (uuid && value != NULL && (root ||
		    strcmp(cmd, "search.fs_uuid") == 0))
			image_strcpy(e->root_uuid, sizeof(e->root_uuid), value);
	}
}

static void
grub_line_command(struct grub_parse *g)
{
	const char *cmd = g->words[0];
	const char *last = g->words[g->nwords - 1];
	const char *eq;
	bool opens = strcmp(last, "{") == 0;
	enum grub_block in = g->skipped > 0 ? GRUB_B_SKIP :
	    g->stack[g->depth].kind;
	int item;

	if (strcmp(cmd, "}") == 0) {
		grub_pop(g);
		return;
	}
	if (opens) {
		if (in == GRUB_B_SKIP || in == GRUB_B_ENTRY) {
			grub_push(g, GRUB_B_SKIP, -1);
			return;
		}
		if (strcmp(cmd, "menuentry") == 0 || strcmp(cmd,
		    "submenu") == 0) {
			item = grub_item_new(g, strcmp(cmd, "submenu") == 0);
			grub_push(g, item < 0 ? GRUB_B_SKIP :
			    g->items[item].submenu ? GRUB_B_SUBMENU :
			    GRUB_B_ENTRY, item);
		} else {
			grub_push(g, GRUB_B_SKIP, -1);	/* function, ... */
		}
		return;
	}
	if (in == GRUB_B_SKIP)
		return;
	if (in == GRUB_B_ENTRY) {
		grub_entry_command(g, &g->items[g->stack[g->depth].item].e);
		return;
	}
	/* set name=value, or name=value */
	if (strcmp(cmd, "set") == 0 && g->nwords >= 2)
		cmd = g->words[1];
	else if (strchr(cmd, '=') == NULL)
		return;
	if ((eq = strchr(cmd, '=')) != NULL)
		grub_set(g, cmd, (size_t)(eq - cmd), eq + 1);
}

/* grubenv: "name=value" lines after its header, '#' padding after. */
static void
grub_load_env(struct grub_parse *g, const char *env)
{
	const char *p = env, *nl, *eq;
	char value[GRUB_VAR_MAX];

	while (p != NULL && *p != '\0') {
		nl = strchr(p, '\n');
		eq = strchr(p, '=');
		if (*p != '#' && eq != NULL && (nl == NULL || eq < nl)) {
			size_t vlen = nl != NULL ? (size_t)(nl - eq - 1) :
			    strlen(eq + 1);

			if (vlen >= sizeof(value))
				vlen = sizeof(value) - 1;
			memcpy(value, eq + 1, vlen);
			value[vlen] = '\0';
			grub_set(g, p, (size_t)(eq - p), value);
		}
		p = nl != NULL ? nl + 1 : NULL;
	}
}

/* The item under parent that sel names (a number, a title or an id). */
static int
grub_find(const struct grub_parse *g, int parent, const char *sel,
    size_t len)
{
	char buf[256], *end;
	unsigned long n, k = 0;
	unsigned int i;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, sel, len);
	buf[len] = '\0';
	n = strtoul(buf, &end, 10);
	for (i = 0; i < g->nitems; i++) {
		if (g->items[i].parent != parent)
			continue;
		if (*end == '\0' && end != buf ? k == n :
		    strcmp(g->items[i].title, buf) == 0 ||
		    strcmp(g->items[i].id, buf) == 0)
			return (int)i;
		k++;
	}
	return -1;
}

/* The entry that default names, or -1. */
static int
grub_default_item(const struct grub_parse *g, const char *def)
{
	int parent = -1, it = -1;
	const char *p = def, *gt;

	do {
		gt = strchr(p, '>');
		it = grub_find(g, parent, p, gt != NULL ? (size_t)(gt - p) :
		    strlen(p));
		if (it < 0)
			return -1;
		parent = it;
		p = gt != NULL ? gt + 1 : NULL;
	} while (p != NULL);
	return g->items[it].submenu ? -1 : it;
}

int
grub_cfg_default(const char *cfg, const char *env, struct grub_entry *out,
    char *why, size_t whylen)
{
	struct grub_parse *g = calloc(1, sizeof(*g));
	const char *p = cfg, *def;
	unsigned int i, k = 0;
	int it, rc = 0;

	if (g == NULL) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (env != NULL)
		grub_load_env(g, env);
	while (*p != '\0') {
		grub_command(g, &p);
		if (g->nwords > 0)
			grub_line_command(g);
	}
	def = grub_get(g, "default");
	it = def[0] != '\0' ? grub_default_item(g, def) : -1;
	if (it < 0) {
		/* GRUB's fallback: the first entry of the menu. */
		for (i = 0; i < g->nitems && it < 0; i++)
			if (!g->items[i].submenu && g->items[i].parent == -1)
				it = (int)i;
	}
	if (it < 0) {
		snprintf(why, whylen, "no menu entry");
		rc = -ENOENT;
		goto out;
	}
	if (g->items[it].e.kernel[0] == '\0') {
		snprintf(why, whylen, "its default entry '%.200s' loads no "
		    "Linux kernel", g->items[it].title);
		rc = -ENOENT;
		goto out;
	}
	*out = g->items[it].e;
	/* Titles joined through the submenus, and the place in the menu. */
	out->title[0] = '\0';
	for (int j = it; j >= 0; j = g->items[j].parent) {
		char t[2 * sizeof(out->title) + 2];

		snprintf(t, sizeof(t), "%s%s%s", g->items[j].title,
		    out->title[0] != '\0' ? ">" : "", out->title);
		image_strcpy(out->title, sizeof(out->title), t);
	}
	for (i = 0; i < (unsigned int)it; i++)
		if (g->items[i].parent == g->items[it].parent)
			k++;
	out->index = k;
	snprintf(why, whylen, "default=%s", def[0] != '\0' ? def :
	    "(unset: the first entry)");
out:
	free(g);
	return rc;
}
