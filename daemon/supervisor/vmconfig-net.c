/*
 * A definition's network cards (see vmconfig-net.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <ctype.h>

#include "proto.h"
#include "vmconfig.h"
#include "vmconfig-internal.h"
#include "vmconfig-net.h"

static const char *const config_net_member_keys[] = { "tap", "mac",
	"user", "forward", NULL };

const char *const *
config_net_keys(void)
{
	return config_net_member_keys;
}

/* One "PROTO:HOSTADDR:HOSTPORT:GUESTPORT" of "forward" into f. */
static int
config_parse_forward(const char *s, struct vm_forward *f, char *err,
    size_t errlen)
{
	char copy[64], *fields[4], *p = copy, *end;
	unsigned long port[2];
	unsigned int n = 0, a[4];
	char c;

	memset(f, 0, sizeof(*f));
	if (strlen(s) >= sizeof(copy))
		goto bad;
	strcpy(copy, s);
	while (n < 4 && (fields[n] = strsep(&p, ":")) != NULL)
		n++;
	if (n != 4 || p != NULL)
		goto bad;
	if (strcmp(fields[0], "udp") == 0)
		f->udp = true;
	else if (strcmp(fields[0], "tcp") != 0)
		goto bad;
	if (fields[1][0] != '\0') {
		if (sscanf(fields[1], "%u.%u.%u.%u%c", &a[0], &a[1], &a[2],
		    &a[3], &c) != 4 || a[0] > 255 || a[1] > 255 ||
		    a[2] > 255 || a[3] > 255)
			goto bad;
		snprintf(f->addr, sizeof(f->addr), "%u.%u.%u.%u", a[0], a[1],
		    a[2], a[3]);
	}
	for (unsigned int i = 0; i < 2; i++) {
		errno = 0;
		port[i] = strtoul(fields[2 + i], &end, 10);
		if (fields[2 + i][0] < '0' || fields[2 + i][0] > '9' ||
		    *end != '\0' || errno != 0 || port[i] == 0 ||
		    port[i] > 65535)
			goto bad;
	}
	if (port[0] < 1024) {
		config_err(err, errlen, "net: forward '%s': host port %lu: "
		    "below 1024, which user-mode networking (unprivileged) "
		    "cannot bind", s, port[0]);
		return -EINVAL;
	}
	f->host_port = (uint16_t)port[0];
	f->guest_port = (uint16_t)port[1];
	return 0;
bad:
	config_err(err, errlen, "net: forward '%.40s': expected "
	    "tcp|udp:HOSTADDR:HOSTPORT:GUESTPORT (tcp:127.0.0.1:2222:22; "
	    "HOSTADDR an IPv4 address, or empty for all)", s);
	return -EINVAL;
}

void
config_forward_text(const struct vm_forward *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s:%u:%u", f->udp ? "udp" : "tcp", f->addr,
	    f->host_port, f->guest_port);
}

/* A card's {"user": true, "forward": [...]}: see config_parse_nic(). */
static int
config_parse_user_net(struct json_object *o, struct vm_nic *nic,
    const char *at, char *err, size_t errlen)
{
	struct json_object *fw, *e;
	size_t n;

	nic->user = true;
	if (!json_object_object_get_ex(o, "forward", &fw) || fw == NULL)
		return 0;
	if (!json_object_is_type(fw, json_type_array) ||
	    (n = json_object_array_length(fw)) > CONFIG_FORWARDS_MAX) {
		config_err(err, errlen, "%s: forward: expected an array of "
		    "at most %d strings", at, CONFIG_FORWARDS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		e = json_object_array_get_idx(fw, i);
		if (!json_object_is_type(e, json_type_string)) {
			config_err(err, errlen, "%s: forward[%zu]: expected "
			    "a string", at, i);
			return -EINVAL;
		}
		if (config_parse_forward(json_object_get_string(e),
		    &nic->forward[i], err, errlen) < 0)
			return -EINVAL;
		nic->nforward = (unsigned int)i + 1;
	}
	return 0;
}

/*
 * One card, {"tap": NAME, "mac": MAC} or {"user": true, ...}, into nic;
 * at names it in errors ("net" or "net[1]").  An interface name as
 * Linux takes it (dev_valid_name()): 1 to 15 bytes, not "." or "..",
 * no '/', ':' or blanks.
 */
static int
config_parse_nic(struct json_object *o, struct vm_nic *nic, const char *at,
    char *err, size_t errlen)
{
	const char *tap = NULL, *mac;
	char why[256];
	size_t i, n;
	bool user;

	if (!json_object_is_type(o, json_type_object)) {
		config_err(err, errlen, "%s: expected an object {\"tap\": ...}",
		    at);
		return -EINVAL;
	}
	if (proto_args_check(o, config_net_member_keys, why, sizeof(why)) < 0 ||
	    config_opt_bool(o, "user", false, &user, why, sizeof(why)) < 0 ||
	    proto_arg_string(o, "tap", !user, &tap, why, sizeof(why)) < 0 ||
	    config_opt_string(o, "mac", NULL, &mac, why, sizeof(why)) < 0) {
		config_err(err, errlen, "%s: %s", at, why);
		return -EINVAL;
	}
	if (user && tap != NULL) {
		config_err(err, errlen, "%s: a TAP or user-mode networking "
		    "(\"user\": true), not both", at);
		return -EINVAL;
	}
	if (!user && json_object_object_get_ex(o, "forward", NULL)) {
		config_err(err, errlen, "%s: forward: only with user-mode "
		    "networking (\"user\": true)", at);
		return -EINVAL;
	}
	if (mac != NULL && (proto_parse_mac(mac, nic->mac) < 0 ||
	    (nic->mac[0] & 1))) {
		config_err(err, errlen, "%s: mac: '%.40s' is not a unicast "
		    "address xx:xx:xx:xx:xx:xx", at, mac);
		return -EINVAL;
	}
	nic->has_mac = mac != NULL;
	if (user)
		return config_parse_user_net(o, nic, at, err, errlen);
	n = strlen(tap);
	if (n == 0 || n > CONFIG_TAP_NAME_MAX || strcmp(tap, ".") == 0 ||
	    strcmp(tap, "..") == 0) {
		config_err(err, errlen, "%s: tap: an interface name of 1 to "
		    "%d bytes", at, CONFIG_TAP_NAME_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		if (tap[i] == '/' || tap[i] == ':' ||
		    isspace((unsigned char)tap[i]) || tap[i] < 0x21 ||
		    tap[i] > 0x7e) {
			config_err(err, errlen, "%s: tap: '%.40s' is not an "
			    "interface name", at, tap);
			return -EINVAL;
		}
	memcpy(nic->tap, tap, n + 1);
	return 0;
}

/*
 * What no card can see alone: one TAP for two cards, one host port
 * forwarded twice (in one card or two: passt binds it once), one MAC
 * on two cards.
 */
static int
config_check_nics(const struct vm_def *def, char *err, size_t errlen)
{
	uint8_t mi[6], mk[6];

	for (unsigned int i = 0; i < def->nnics; i++) {
		const struct vm_nic *a = &def->nics[i];

		config_net_mac(def, i, mi);
		for (unsigned int f = 0; f < a->nforward; f++)
			for (unsigned int k = 0; k <= i; k++) {
				const struct vm_nic *b = &def->nics[k];

				for (unsigned int g = 0; g < (k == i ? f :
				    b->nforward); g++)
					if (b->forward[g].udp ==
					    a->forward[f].udp &&
					    b->forward[g].host_port ==
					    a->forward[f].host_port) {
						config_err(err, errlen,
						    "net[%u]: forward[%u]: "
						    "host port %u forwarded "
						    "twice", i, f,
						    a->forward[f].host_port);
						return -EINVAL;
					}
			}
		for (unsigned int k = 0; k < i; k++) {
			if (a->tap[0] != '\0' &&
			    strcmp(a->tap, def->nics[k].tap) == 0) {
				config_err(err, errlen, "net[%u]: tap %s: "
				    "already net[%u]'s", i, a->tap, k);
				return -EINVAL;
			}
			config_net_mac(def, k, mk);
			if (memcmp(mi, mk, 6) == 0) {
				config_err(err, errlen, "net[%u]: the same "
				    "MAC as net[%u]", i, k);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int
config_parse_net(struct json_object *obj, struct vm_def *def, char *err,
    size_t errlen)
{
	struct json_object *o;
	char at[16];
	size_t n;

	if (!json_object_object_get_ex(obj, "net", &o) || o == NULL)
		return 0;
	if (!json_object_is_type(o, json_type_array)) {
		if (config_parse_nic(o, &def->nics[0], "net", err,
		    errlen) < 0)
			return -EINVAL;
		def->nnics = 1;
		return config_check_nics(def, err, errlen);
	}
	n = json_object_array_length(o);
	if (n > CONFIG_NICS_MAX) {
		config_err(err, errlen, "net: %zu cards, at most %d", n,
		    CONFIG_NICS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(at, sizeof(at), "net[%zu]", i);
		if (config_parse_nic(json_object_array_get_idx(o, i),
		    &def->nics[i], at, err, errlen) < 0)
			return -EINVAL;
		def->nnics = (unsigned int)i + 1;
	}
	return config_check_nics(def, err, errlen);
}

void
config_net_mac(const struct vm_def *def, unsigned int i, uint8_t mac[6])
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	if (i < def->nnics && def->nics[i].has_mac) {
		memcpy(mac, def->nics[i].mac, 6);
		return;
	}
	if (i > 0) {
		config_net_mac(def, 0, mac);
		mac[5] = (uint8_t)(mac[5] + i);
		return;
	}
	for (const char *p = def->name; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	for (unsigned int k = 0; k < 6; k++)
		mac[k] = (uint8_t)(h >> (8 * k));
	mac[0] = (uint8_t)((mac[0] & ~1u) | 2u);	/* local, unicast */
}

void
config_net_mac_text(const struct vm_def *def, unsigned int i, char buf[18])
{
	uint8_t m[6];

	config_net_mac(def, i, m);
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
	    m[3], m[4], m[5]);
}

static struct json_object *
config_nic_json(const struct vm_def *def, unsigned int i)
{
	const struct vm_nic *nic = &def->nics[i];
	struct json_object *o = json_object_new_object();
	char mac[18];

	config_net_mac_text(def, i, mac);
	if (nic->user) {
		struct json_object *fw = json_object_new_array();
		char text[64];

		json_object_object_add(o, "user", json_object_new_boolean(1));
		for (unsigned int k = 0; k < nic->nforward; k++) {
			config_forward_text(&nic->forward[k], text,
			    sizeof(text));
			json_object_array_add(fw, json_object_new_string(text));
		}
		json_object_object_add(o, "forward", fw);
	} else
		json_object_object_add(o, "tap",
		    json_object_new_string(nic->tap));
	json_object_object_add(o, "mac", json_object_new_string(mac));
	return o;
}

struct json_object *
config_net_json(const struct vm_def *def)
{
	struct json_object *a;

	if (def->nnics == 1)
		return config_nic_json(def, 0);
	a = json_object_new_array();
	for (unsigned int i = 0; i < def->nnics; i++)
		json_object_array_add(a, config_nic_json(def, i));
	return a;
}
