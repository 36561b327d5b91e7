/*
 * A definition's "cloud_init" (vmconfig.h's struct vm_cloud_init): what
 * vmmd puts in the guest's NoCloud seed.  vmconfig.c calls these; they
 * call nothing of it.
 */
#ifndef VMMD_VMCONFIG_CLOUD_H
#define VMMD_VMCONFIG_CLOUD_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "vmconfig.h"

/*
 * "cloud_init": {"user_data": TEXT, "ssh_keys": [KEY, ...],
 * "network_config": TEXT}, each optional ({} makes a seed with the
 * instance-id and hostname alone), into def->cloud_init.  0, -EINVAL
 * with err filled, or -ENOMEM.
 */
int	config_parse_cloud_init(struct json_object *obj, struct vm_def *def,
	    char *err, size_t errlen);
/*
 * The member as a definition has it; NULL when the VM has no seed.
 * Without secrets (what clients are shown) "user_data" is replaced by
 * "user_data_size" (bytes) and "user_data_sha256" (hex): it may hold
 * passwords, and its lines would break a "key: value" listing.
 */
struct json_object *config_cloud_init_json(const struct vm_def *def,
    bool secrets);
void	config_cloud_init_free(struct vm_cloud_init *ci);
/* The members of "cloud_init", NULL-terminated. */
const char *const *config_cloud_init_keys(void);
/* A deep copy of src into dst (zeroed): 0 or -ENOMEM (dst then freed). */
int	config_cloud_init_dup(struct vm_cloud_init *dst,
	    const struct vm_cloud_init *src);

#endif
