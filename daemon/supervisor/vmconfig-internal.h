/*
 * What the files of VM definitions (vmconfig*.c) share and nobody else
 * uses: the error text and the optional members' readers of the parser.
 * Calls nothing of them, so that each can call it.
 */
#ifndef VMMD_VMCONFIG_INTERNAL_H
#define VMMD_VMCONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* fmt into err (errlen bytes; err NULL or errlen 0: nothing). */
void	config_err(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * Optional members.  proto_arg_*() leave their output as it was for an
 * absent member, so a variable one member filled would carry its value
 * into the next absent one: these take the default explicitly and
 * always store, the member's value or that default.  0 or -EINVAL (err
 * filled).
 */
int	config_opt_bool(struct json_object *obj, const char *key, bool dflt,
	    bool *out, char *err, size_t errlen);
int	config_opt_int(struct json_object *obj, const char *key,
	    int64_t min, int64_t max, int64_t dflt, int64_t *out, char *err,
	    size_t errlen);
int	config_opt_string(struct json_object *obj, const char *key,
	    const char *dflt, const char **out, char *err, size_t errlen);

#endif
