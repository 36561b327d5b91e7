/* See bls-entry.h. */
#include <errno.h>
#include <string.h>
#include <stdio.h>

#include "bls-entry.h"
#include "image-str.h"

/* The value of "key value" into out (whitespace around it dropped). */
static void
bls_value(const char *v, size_t vlen, char *out, size_t outlen)
{
	while (vlen > 0 && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t' ||
	    v[vlen - 1] == '\r'))
		vlen--;
	if (vlen >= outlen)
		vlen = outlen - 1;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
}

int
bls_entry_parse(const char *text, const char *file, struct bls_entry *out)
{
	const char *p = text, *nl, *sp;
	char val[BLS_OPTIONS_MAX];

	memset(out, 0, sizeof(*out));
	image_strcpy(out->file, sizeof(out->file), file);
	while (*p != '\0') {
		size_t len, klen;

		nl = strchr(p, '\n');
		len = nl != NULL ? (size_t)(nl - p) : strlen(p);
		while (len > 0 && (*p == ' ' || *p == '\t'))
			p++, len--;
		sp = memchr(p, ' ', len);
		if (sp == NULL)
			sp = memchr(p, '\t', len);
		if (len > 0 && *p != '#' && sp != NULL) {
			klen = (size_t)(sp - p);
			bls_value(sp, len - klen, val, sizeof(val));
#define BLS_KEY(k)	(klen == sizeof(k) - 1 && memcmp(p, k, klen) == 0)
			if (BLS_KEY("title"))
				image_strcpy(out->title,
				    sizeof(out->title), val);
			else if (BLS_KEY("version"))
				image_strcpy(out->version,
				    sizeof(out->version), val);
			else if (BLS_KEY("sort-key"))
				image_strcpy(out->sort_key,
				    sizeof(out->sort_key), val);
			else if (BLS_KEY("linux"))
				image_strcpy(out->kernel,
				    sizeof(out->kernel), val);
			else if (BLS_KEY("initrd") &&
			    out->ninitrd < BLS_MAX_INITRDS)
				image_strcpy(out->initrd[out->ninitrd++],
				    sizeof(out->initrd[0]), val);
			else if (BLS_KEY("options")) {
				size_t l = strlen(out->options);

				snprintf(out->options + l,
				    sizeof(out->options) - l, "%s%s",
				    l > 0 ? " " : "", val);
			}
#undef BLS_KEY
		}
		p = nl != NULL ? nl + 1 : p + len;
	}
	return out->kernel[0] != '\0' ? 0 : -EINVAL;
}

int
bls_entry_cmp(const struct bls_entry *a, const struct bls_entry *b)
{
	int c;

	/* Entries with a sort-key come first, in its order. */
	if ((a->sort_key[0] != '\0') != (b->sort_key[0] != '\0'))
		return a->sort_key[0] != '\0' ? -1 : 1;
	if ((c = strcmp(a->sort_key, b->sort_key)) != 0)
		return c;
	/* Then versions, the newest first; then file names, likewise. */
	if ((c = strverscmp(b->version, a->version)) != 0)
		return c;
	return strverscmp(b->file, a->file);
}
