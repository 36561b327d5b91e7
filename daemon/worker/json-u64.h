/*
 * Counters into JSON objects: json-c has no unsigned 64-bit integer,
 * and a counter never reaches 2^63, so the top bit is dropped.
 */
#ifndef VMMD_JSON_U64_H
#define VMMD_JSON_U64_H

#include <stdint.h>
#include <json-c/json.h>

static inline void
json_add_u64(struct json_object *obj, const char *key, uint64_t v)
{
	json_object_object_add(obj, key,
	    json_object_new_int64((int64_t)(v & INT64_MAX)));
}

#endif
