/*
 * A VM's UUID: made at vm.create, shown by vm.info and vmctl info, the
 * same after the daemon restarts; given to a definition stored without
 * one when the daemon loads it, written back, the same at the next
 * load; kept by a vm.redefine that leaves it out; new for a clone.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define VMCTL_MS	30000

/* name's UUID as vm.info shows it, into buf ("" for none). */
static const char *
vm_uuid(struct h_conn *c, const char *name, char *buf, size_t len)
{
	struct json_object *r;
	const char *s;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	s = h_str(h_ret(r), "uuid");
	snprintf(buf, len, "%s", s != NULL ? s : "");
	json_object_put(r);
	return buf;
}

/* The form of uuid-text.h, lowercase, version 4 and RFC 4122 variant. */
static bool
uuid_v4(const char *s)
{
	size_t i;

	if (strlen(s) != 36 || s[14] != '4' || strchr("89ab", s[19]) == NULL)
		return false;
	for (i = 0; i < 36; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' :
		    strchr("0123456789abcdef", s[i]) == NULL)
			return false;
	return true;
}

static struct h_conn *
restart(struct h_daemon *d, struct h_conn *c)
{
	h_close(c);
	if (h_daemon_restart(d, H_REPLY_MS) < 0)
		tap_bail("restarting vmmd");
	if ((c = h_connect(d)) == NULL)
		tap_bail("no client after the restart");
	return c;
}

int
main(void)
{
	char u[64], again[64] = "", old[64], path[512], line[128];
	struct json_object *r;
	struct h_daemon *d;
	struct h_conn *c;
	char *text;
	FILE *f;

	h_init();
	c = h_setup(&d);
	h_ctl_use(d, VMCTL_MS);

	tap_ok(h_create(c, "u", NULL) == 0, "created");
	vm_uuid(c, "u", u, sizeof(u));
	tap_ok(uuid_v4(u), "vm.info: a version 4 UUID (%s)", u);
	snprintf(line, sizeof(line), "uuid: %s\n", u);
	tap_ok(h_ctl("info", "u", NULL) == 0 && strstr(h_out(), line) != NULL,
	    "vmctl info shows it");
	tap_ok(h_create(c, "given", "\"uuid\":"
	    "\"0123ABCD-4567-89ab-cdef-0123456789AB\"") == 0 &&
	    strcmp(vm_uuid(c, "given", again, sizeof(again)),
	    "0123abcd-4567-89ab-cdef-0123456789ab") == 0,
	    "one given at vm.create is kept (%s)", again);

	/* A definition as an older vmmd stored it: no UUID. */
	snprintf(path, sizeof(path), "%s/vms/old.json", d->state);
	f = fopen(path, "we");
	tap_ok(f != NULL && fputs("{\"name\": \"old\"}\n", f) >= 0 &&
	    fclose(f) == 0, "a definition without a UUID written");

	c = restart(d, c);
	tap_ok(strcmp(vm_uuid(c, "u", again, sizeof(again)), u) == 0 &&
	    uuid_v4(u), "the same UUID after a restart (%s)", again);
	vm_uuid(c, "old", old, sizeof(old));
	tap_ok(uuid_v4(old), "the old definition got one at load (%s)", old);
	text = h_read_file(path, NULL);
	tap_ok(text != NULL && uuid_v4(old) && strstr(text, old) != NULL,
	    "and it is written into its file");
	free(text);
	c = restart(d, c);
	tap_ok(strcmp(vm_uuid(c, "old", again, sizeof(again)), old) == 0 &&
	    uuid_v4(old), "the same one at the next load (%s)", again);

	r = h_callf(c, H_REPLY_MS, "vm.redefine", "{\"name\":\"u\","
	    "\"definition\":{\"name\":\"u\",\"vcpus\":2}}");
	tap_ok(h_ret(r) != NULL && strcmp(vm_uuid(c, "u", again,
	    sizeof(again)), u) == 0 && uuid_v4(u),
	    "vm.redefine without a UUID keeps the VM's (%s)", again);
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.clone", "{\"name\":\"u\","
	    "\"new_name\":\"u2\"}");
	vm_uuid(c, "u2", again, sizeof(again));
	tap_ok(h_ret(r) != NULL && uuid_v4(again) && strcmp(again, u) != 0,
	    "a clone gets its own (%s)", again);
	json_object_put(r);

	h_close(c);
	return h_done();
}
