/*
 * A definition's "net" (vmconfig.h's struct vm_nic): its network
 * cards, each a TAP or user-mode networking with its port forwards, and
 * their MACs.  vmconfig.c calls these; they call nothing of it.
 * config_net_mac(), config_net_json() and config_forward_text(), which
 * the supervisor uses too, are declared in vmconfig.h.
 */
#ifndef VMMD_VMCONFIG_NET_H
#define VMMD_VMCONFIG_NET_H

#include <stddef.h>
#include <json-c/json.h>

#include "vmconfig.h"

/*
 * "net" of obj: one card's object ({"tap", "mac"} or {"user",
 * "forward", "mac"}), or an array of at most CONFIG_NICS_MAX of them
 * ([] is none), into def->nics; what no card can see alone (one TAP or
 * host port or MAC twice) is refused too.  0 or -EINVAL with err filled.
 */
int	config_parse_net(struct json_object *obj, struct vm_def *def,
	    char *err, size_t errlen);
/* The members of a card, NULL-terminated. */
const char *const *config_net_keys(void);

#endif
