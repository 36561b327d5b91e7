/* See vmconfig-boot.h. */
#include <errno.h>
#include <string.h>

#include "vmconfig-boot.h"
#include "vmconfig-internal.h"

/* How many of kind the definition has. */
static unsigned int
config_boot_count(const struct vm_def *def, enum boot_dev_kind kind)
{
	switch (kind) {
	case BOOT_DEV_CDROM:
		return def->cdrom != NULL;
	case BOOT_DEV_DISK:
		return def->ndisks;
	case BOOT_DEV_NET:
		return def->nnics;
	}
	return 0;
}

static int
config_parse_boot_list(struct json_object *a, struct vm_def *def,
    char *err, size_t errlen)
{
	size_t n = json_object_array_length(a);

	if (n > BOOT_ORDER_MAX) {
		config_err(err, errlen, "boot_order: %zu devices, at most %d",
		    n, BOOT_ORDER_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(a, i);
		struct boot_dev *d = &def->boot_order[i];
		const char *s;

		if (!json_object_is_type(e, json_type_string)) {
			config_err(err, errlen, "boot_order: entry %zu is not "
			    "a string", i);
			return -EINVAL;
		}
		s = json_object_get_string(e);
		if (boot_dev_parse(s, d) < 0) {
			config_err(err, errlen, "boot_order: '%.40s' must be "
			    "cdromN, diskN or netN", s);
			return -EINVAL;
		}
		if (d->index >= config_boot_count(def, d->kind)) {
			config_err(err, errlen, "boot_order: the VM has no "
			    "%s", s);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (def->boot_order[j].kind == d->kind &&
			    def->boot_order[j].index == d->index) {
				config_err(err, errlen, "boot_order: %s twice",
				    s);
				return -EINVAL;
			}
		def->nboot_order = (unsigned int)i + 1;
	}
	return 0;
}

int
config_parse_boot_order(struct json_object *obj, struct vm_def *def,
    char *err, size_t errlen)
{
	struct json_object *a;
	int64_t ms;

	def->nboot_order = 0;
	def->boot_menu = false;
	def->boot_menu_ms = 0;
	if (json_object_object_get_ex(obj, "boot_order", &a) &&
	    !json_object_is_type(a, json_type_null)) {
		if (!json_object_is_type(a, json_type_array)) {
			config_err(err, errlen, "boot_order: expected an array "
			    "of device names");
			return -EINVAL;
		}
		if (def->firmware == VM_FIRMWARE_NONE &&
		    json_object_array_length(a) > 0) {
			config_err(err, errlen, "boot_order: only with "
			    "firmware");
			return -EINVAL;
		}
		if (config_parse_boot_list(a, def, err, errlen) < 0)
			return -EINVAL;
	}
	if (!json_object_object_get_ex(obj, "boot_menu", &a) ||
	    json_object_is_type(a, json_type_null))
		return 0;
	if (config_opt_int(obj, "boot_menu", 0, CONFIG_BOOT_MENU_MS_MAX, 0,
	    &ms, err, errlen) < 0)
		return -EINVAL;
	if (def->firmware == VM_FIRMWARE_NONE) {
		config_err(err, errlen, "boot_menu: only with firmware");
		return -EINVAL;
	}
	def->boot_menu = true;
	def->boot_menu_ms = (unsigned int)ms;
	return 0;
}

void
config_boot_order_json(const struct vm_def *def, struct json_object *obj)
{
	char name[BOOT_DEV_NAME_MAX];
	struct json_object *a;

	if (def->nboot_order > 0 && (a = json_object_new_array()) != NULL) {
		for (unsigned int i = 0; i < def->nboot_order; i++) {
			boot_dev_name(&def->boot_order[i], name, sizeof(name));
			json_object_array_add(a, json_object_new_string(name));
		}
		json_object_object_add(obj, "boot_order", a);
	}
	if (def->boot_menu)
		json_object_object_add(obj, "boot_menu",
		    json_object_new_int((int)def->boot_menu_ms));
}
