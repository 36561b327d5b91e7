/* worker.info's reply: see info.c. */
#ifndef VMMD_INFO_H
#define VMMD_INFO_H

#include <json-c/json.h>

#include "worker.h"

/* A new object describing the worker and its guest (never NULL). */
struct json_object *info_json(struct worker *w);

#endif
