/* See nocloud-seed.h.  The ISO image is libisofs's work. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIBISOFS_WITHOUT_LIBBURN 1
#include <libisofs/libisofs.h>

#include "fd-write.h"
#include "nocloud-seed.h"

#define SEED_BOUNDARY	"==vmmd-seed-boundary=="

/* FNV-1a, 64 bits, over a string and its terminating NUL. */
static uint64_t
seed_hash(uint64_t h, const char *s)
{
	if (s == NULL)
		s = "";
	do {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ULL;
	} while (*s++ != '\0');
	return h;
}

void
nocloud_instance_id(const struct nocloud_seed *s, char *out, size_t outlen)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = seed_hash(h, s->hostname);
	h = seed_hash(h, s->user_data);
	for (unsigned int i = 0; i < s->nkeys; i++)
		h = seed_hash(h, s->ssh_keys[i]);
	h = seed_hash(h, s->network_config);
	snprintf(out, outlen, "iid-%.40s-%016llx", s->hostname,
	    (unsigned long long)h);
}

/* A growing string; *len its length; NULL on running out of memory. */
static char *
seed_cat(char *buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *more;
	int n;

	if (buf == NULL)
		return NULL;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (more = realloc(buf, *len + (size_t)n + 1)) == NULL) {
		free(buf);
		return NULL;
	}
	va_start(ap, fmt);
	vsnprintf(more + *len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	*len += (size_t)n;
	return more;
}

static char *
seed_keys_config(const struct nocloud_seed *s, size_t *len)
{
	char *b = calloc(1, 1);

	*len = 0;
	b = seed_cat(b, len, "#cloud-config\nssh_authorized_keys:\n");
	/* YAML single-quoted scalars: a quote is written twice. */
	for (unsigned int i = 0; i < s->nkeys && b != NULL; i++) {
		b = seed_cat(b, len, "  - '");
		for (const char *p = s->ssh_keys[i]; *p != '\0' && b != NULL;
		    p++)
			b = seed_cat(b, len, *p == '\'' ? "''" : "%c", *p);
		b = seed_cat(b, len, "'\n");
	}
	return b;
}

/* user-data as the header describes; malloc'd. */
static char *
seed_user_data(const struct nocloud_seed *s, size_t *len)
{
	char *keys, *b;
	size_t klen;

	*len = 0;
	if (s->nkeys == 0) {
		b = strdup(s->user_data != NULL ? s->user_data :
		    "#cloud-config\n");
		*len = b != NULL ? strlen(b) : 0;
		return b;
	}
	if ((keys = seed_keys_config(s, &klen)) == NULL)
		return NULL;
	if (s->user_data == NULL) {
		*len = klen;
		return keys;
	}
	b = calloc(1, 1);
	b = seed_cat(b, len, "Content-Type: multipart/mixed; boundary=\""
	    SEED_BOUNDARY "\"\nMIME-Version: 1.0\n\n--" SEED_BOUNDARY "\n"
	    "Content-Type: %s\nMIME-Version: 1.0\n\n%s\n--" SEED_BOUNDARY
	    "\nContent-Type: text/cloud-config\nMIME-Version: 1.0\n\n%s\n--"
	    SEED_BOUNDARY "--\n", strncmp(s->user_data, "#!", 2) == 0 ?
	    "text/x-shellscript" : "text/cloud-config", s->user_data, keys);
	free(keys);
	return b;
}

/* text (taken: libisofs frees it) as the file name in the root. */
static int
seed_add(IsoImage *img, const char *name, char *text, size_t len)
{
	IsoStream *st;
	IsoFile *f;
	int r;

	if (text == NULL)
		return -ENOMEM;
	r = iso_memory_stream_new((unsigned char *)text, len, &st);
	if (r < 0) {
		free(text);
		return -ENOMEM;
	}
	r = iso_tree_add_new_file(iso_image_get_root(img), name, st, &f);
	if (r < 0) {
		iso_stream_unref(st);
		return -EIO;
	}
	return 0;
}

int
nocloud_seed_write(const struct nocloud_seed *s, int fd, char *iid,
    size_t iidlen, char *err, size_t errlen)
{
	struct burn_source *src = NULL;
	IsoWriteOpts *opts = NULL;
	IsoImage *img = NULL;
	unsigned char sector[2048];
	char *meta, *user;
	size_t mlen = 0, ulen;
	int rc, n;

	nocloud_instance_id(s, iid, iidlen);
	/* Only libisofs's failures are of interest, and we report them. */
	if (iso_init_with_flag(0) < 0) {
		snprintf(err, errlen, "seed: libisofs cannot start");
		return -EIO;
	}
	iso_set_msgs_severities("NEVER", "NEVER", "vmmd");
	if (iso_image_new("cidata", &img) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	meta = calloc(1, 1);
	meta = seed_cat(meta, &mlen, "instance-id: %s\nlocal-hostname: %s\n",
	    iid, s->hostname);
	user = seed_user_data(s, &ulen);
	/* seed_add() takes each text, whether it succeeds or not. */
	if ((rc = seed_add(img, "meta-data", meta, mlen)) < 0) {
		free(user);
		goto out;
	}
	if ((rc = seed_add(img, "user-data", user, ulen)) < 0)
		goto out;
	if (s->network_config != NULL && (rc = seed_add(img, "network-config",
	    strdup(s->network_config), strlen(s->network_config))) < 0)
		goto out;
	if (iso_write_opts_new(&opts, 0) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	iso_write_opts_set_rockridge(opts, 1);
	iso_write_opts_set_joliet(opts, 1);
	if (iso_image_create_burn_source(img, opts, &src) < 0) {
		rc = -EIO;
		goto out;
	}
	while ((n = src->read_xt(src, sector, sizeof(sector))) > 0)
		if ((rc = fd_write_all(fd, sector, (size_t)n)) < 0)
			break;
	if (n < 0 && rc == 0)
		rc = -EIO;
	src->free_data(src);
	free(src);
out:
	if (rc < 0)
		snprintf(err, errlen, "seed: cannot make the ISO image: %s",
		    strerror(-rc));
	if (opts != NULL)
		iso_write_opts_free(opts);
	if (img != NULL)
		iso_image_unref(img);
	iso_finish();
	return rc;
}
