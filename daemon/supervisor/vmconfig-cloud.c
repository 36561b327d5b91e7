/* See vmconfig-cloud.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "sha256.h"
#include "vmconfig-cloud.h"

static const char *const cloud_keys[] = { "user_data", "ssh_keys",
	"network_config", NULL };

/*
 * A text member: a string of at most max bytes with no NUL in it (JSON
 * can carry one, cloud-init cannot).  *out is NULL when absent, whatever
 * it held before.
 */
static int
cloud_text(struct json_object *o, const char *key, size_t max, char **out,
    char *err, size_t errlen)
{
	struct json_object *v;
	size_t len;

	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "cloud_init: %s: expected a string", key);
		return -EINVAL;
	}
	len = (size_t)json_object_get_string_len(v);
	if (len > max || strlen(json_object_get_string(v)) != len) {
		if (len > max)
			snprintf(err, errlen, "cloud_init: %s: %zu bytes, at "
			    "most %zu", key, len, max);
		else
			snprintf(err, errlen, "cloud_init: %s: holds a NUL "
			    "byte", key);
		return -EINVAL;
	}
	return (*out = strdup(json_object_get_string(v))) != NULL ? 0 :
	    -ENOMEM;
}

/*
 * An SSH public key as authorized_keys has it, one line: a key type
 * word, then base64, then an optional comment; printable, no newline.
 */
static int
cloud_key_check(const char *k, size_t len, unsigned int i, char *err,
    size_t errlen)
{
	const char *sp = memchr(k, ' ', len);

	for (size_t j = 0; j < len; j++)
		if ((unsigned char)k[j] < 0x20 || k[j] == 0x7f) {
			snprintf(err, errlen, "cloud_init: ssh_keys[%u]: one "
			    "line of printable text, as in authorized_keys",
			    i);
			return -EINVAL;
		}
	if (sp == NULL || sp == k || (strncmp(k, "ssh-", 4) != 0 &&
	    strncmp(k, "ecdsa-", 6) != 0 && strncmp(k, "sk-", 3) != 0)) {
		snprintf(err, errlen, "cloud_init: ssh_keys[%u]: not a public "
		    "key ('ssh-ed25519 AAAA... comment', as in a .pub file)",
		    i);
		return -EINVAL;
	}
	return 0;
}

int
config_parse_cloud_init(struct json_object *obj, struct vm_def *def,
    char *err, size_t errlen)
{
	struct vm_cloud_init *ci = &def->cloud_init;
	struct json_object *o, *keys;
	char why[256];
	size_t n;
	int rc;

	if (!json_object_object_get_ex(obj, "cloud_init", &o) || o == NULL)
		return 0;
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "cloud_init: expected an object "
		    "{\"user_data\": ..., \"ssh_keys\": [...]}");
		return -EINVAL;
	}
	if (proto_args_check(o, cloud_keys, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "cloud_init: %s", why);
		return -EINVAL;
	}
	ci->on = true;
	if ((rc = cloud_text(o, "user_data", CONFIG_USER_DATA_MAX,
	    &ci->user_data, err, errlen)) < 0 ||
	    (rc = cloud_text(o, "network_config", CONFIG_NETWORK_CONFIG_MAX,
	    &ci->network_config, err, errlen)) < 0)
		return rc;
	if (!json_object_object_get_ex(o, "ssh_keys", &keys) || keys == NULL)
		return 0;
	if (!json_object_is_type(keys, json_type_array) ||
	    (n = json_object_array_length(keys)) > CONFIG_SSH_KEYS_MAX) {
		snprintf(err, errlen, "cloud_init: ssh_keys: expected an array "
		    "of at most %d keys", CONFIG_SSH_KEYS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *k = json_object_array_get_idx(keys, i);
		size_t len;

		if (!json_object_is_type(k, json_type_string) ||
		    (len = (size_t)json_object_get_string_len(k)) >
		    CONFIG_SSH_KEY_MAX || len == 0) {
			snprintf(err, errlen, "cloud_init: ssh_keys[%zu]: a "
			    "string of 1 to %d bytes", i, CONFIG_SSH_KEY_MAX);
			return -EINVAL;
		}
		if ((rc = cloud_key_check(json_object_get_string(k), len,
		    (unsigned int)i, err, errlen)) < 0)
			return rc;
		if ((ci->ssh_keys[i] = strdup(json_object_get_string(k))) ==
		    NULL)
			return -ENOMEM;
		ci->nkeys = (unsigned int)i + 1;
	}
	return 0;
}

struct json_object *
config_cloud_init_json(const struct vm_def *def, bool secrets)
{
	const struct vm_cloud_init *ci = &def->cloud_init;
	struct json_object *o, *keys;
	char hex[SHA256_HEX_LEN];

	if (!ci->on)
		return NULL;
	o = json_object_new_object();
	if (ci->user_data != NULL && secrets)
		json_object_object_add(o, "user_data",
		    json_object_new_string(ci->user_data));
	else if (ci->user_data != NULL) {
		sha256_hex(ci->user_data, strlen(ci->user_data), hex);
		json_object_object_add(o, "user_data_size",
		    json_object_new_int64((int64_t)strlen(ci->user_data)));
		json_object_object_add(o, "user_data_sha256",
		    json_object_new_string(hex));
	}
	if (ci->nkeys > 0) {
		keys = json_object_new_array();
		for (unsigned int i = 0; i < ci->nkeys; i++)
			json_object_array_add(keys,
			    json_object_new_string(ci->ssh_keys[i]));
		json_object_object_add(o, "ssh_keys", keys);
	}
	if (ci->network_config != NULL)
		json_object_object_add(o, "network_config",
		    json_object_new_string(ci->network_config));
	return o;
}

void
config_cloud_init_free(struct vm_cloud_init *ci)
{
	free(ci->user_data);
	free(ci->network_config);
	for (unsigned int i = 0; i < ci->nkeys; i++)
		free(ci->ssh_keys[i]);
	memset(ci, 0, sizeof(*ci));
}

static int
cloud_dup_str(char **dst, const char *src)
{
	*dst = NULL;
	return src == NULL || (*dst = strdup(src)) != NULL ? 0 : -ENOMEM;
}

int
config_cloud_init_dup(struct vm_cloud_init *dst,
    const struct vm_cloud_init *src)
{
	dst->on = src->on;
	if (cloud_dup_str(&dst->user_data, src->user_data) < 0 ||
	    cloud_dup_str(&dst->network_config, src->network_config) < 0)
		goto nomem;
	for (; dst->nkeys < src->nkeys; dst->nkeys++)
		if (cloud_dup_str(&dst->ssh_keys[dst->nkeys],
		    src->ssh_keys[dst->nkeys]) < 0)
			goto nomem;
	return 0;
nomem:
	config_cloud_init_free(dst);
	return -ENOMEM;
}

const char *const *
config_cloud_init_keys(void)
{
	return cloud_keys;
}
