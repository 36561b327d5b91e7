/*
 * Unit tests for daemon/common/worker-msg.c, the supervisor-worker
 * vocabulary: what its checks let through and what they refuse (and
 * how they say so), that builders and readers agree, and that every
 * message and field it defines is described in vmmd-protocol(7), whose
 * path is the first argument.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "worker-msg.h"

static struct json_object *
parse(const char *text)
{
	struct json_object *o = json_tokener_parse(text);

	if (o == NULL)
		tap_bail("bad test JSON: %s", text);
	return o;
}

/* wmsg_check of text against s: 0 or -EINVAL, err filled. */
static int
check(enum wmsg_shape s, const char *text, char *err, size_t errlen)
{
	struct json_object *o = parse(text);
	int rc;

	err[0] = '\0';
	rc = wmsg_check(s, o, err, errlen);
	json_object_put(o);
	return rc;
}

#define BOOT_MIN "\"kernel\":\"/proc/self/fd/7\",\"memory_mib\":64," \
	"\"vcpus\":1"

static void
test_refusals(void)
{
	static const struct {
		enum wmsg_shape shape;
		const char *json;
		const char *err;	/* NULL: accepted */
	} cases[] = {
		{ WMSG_S_BOOT, "{" BOOT_MIN "}", NULL },
		{ WMSG_S_BOOT, "{\"memory_mib\":64,\"vcpus\":1,"
		    "\"boot_disk\":{}}", "boot_disk: disk: missing argument" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"kernel_nam\":\"x\"}",
		    "unknown argument 'kernel_nam'" },
		{ WMSG_S_BOOT, "{\"kernel\":7,\"memory_mib\":64,\"vcpus\":1}",
		    "kernel: expected a string" },
		{ WMSG_S_BOOT, "{\"kernel\":\"k\",\"memory_mib\":8,"
		    "\"vcpus\":1}", "memory_mib: 8 is out of range "
		    "(16..262144)" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"vcpus\":65}",
		    "vcpus: 65 is out of range (1..64)" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"on_reboot\":\"explode\"}",
		    "on_reboot: 'explode' is none of the values it may take" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"on_reboot\":\"stop\"}", NULL },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"rng\":1}",
		    "rng: expected true or false" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"initrd\":null}", NULL },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"definition\":[]}",
		    "definition: expected an object" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"definition\":{\"any\":1}}",
		    NULL },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"disks\":[{\"fd\":10,"
		    "\"path\":\"/d\",\"serial\":\"123456789012345678901\"}]}",
		    "disks[0]: serial: 21 bytes long (0..20 allowed)" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"disks\":[{\"fd\":10,"
		    "\"path\":\"/d\"},{\"path\":\"/e\"}]}",
		    "disks[1]: fd: missing argument" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"disks\":[1]}",
		    "disks[0]: expected an object" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"disks\":[{},{},{},{},{}]}",
		    "disks: 5 entries (at most 4)" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"disks\":[{\"fd\":10,"
		    "\"path\":\"/d\",\"format\":\"qcow3\"}]}",
		    "disks[0]: format: 'qcow3' is none of the values it may "
		    "take" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"display\":{\"port\":70000}}",
		    "display: port: 70000 is out of range (0..65535)" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"net\":[{\"fd\":9,\"tap\":"
		    "\"tap0\",\"mac\":\"52:54:00:12:34:56\",\"mtu\":9000}]}",
		    "net[0]: unknown argument 'mtu'" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"net\":[{\"fd\":9,\"tap\":"
		    "\"tap0\",\"mac\":\"52:54:00:12:34:56\"},{\"fd\":30,"
		    "\"tap\":\"tap1\",\"mac\":\"52:54\"}]}",
		    "net[1]: mac: 5 bytes long (17..17 allowed)" },
		{ WMSG_S_BOOT, "{" BOOT_MIN ",\"net\":[{\"user\":true,"
		    "\"mac\":\"52:54:00:12:34:56\"},{\"user\":true,\"mac\":"
		    "\"52:54:00:12:34:57\"}]}", NULL },
		{ WMSG_S_NONE, "{}", NULL },
		{ WMSG_S_NONE, "{\"force\":true}", "unknown argument 'force'" },
		{ WMSG_S_SHUTDOWN, "{\"timeout\":0}",
		    "timeout: 0 is out of range (1..2147483647)" },
		{ WMSG_S_STATS, "{\"vcpu\":64}",
		    "vcpu: 64 is out of range (0..63)" },
		{ WMSG_S_CLIENT, "{\"client_id\":[1,{\"x\":2}]}", NULL },
		{ WMSG_S_OPAQUE, "{\"anything\":[1,2]}", NULL },
		{ WMSG_S_ADOPT_REPLY, "{\"name\":\"a\",\"state\":\"running\","
		    "\"pid\":42}", NULL },
		{ WMSG_S_ADOPT_REPLY, "{\"name\":\"a\",\"state\":\"asleep\","
		    "\"pid\":42}", "state: 'asleep' is none of the values it "
		    "may take" },
		{ WMSG_S_ADOPT_REPLY, "{\"name\":\"a\",\"state\":\"running\","
		    "\"pid\":0}", "pid: 0 is out of range (1..2147483647)" },
		{ WMSG_S_EXIT_EVENT, "{\"status\":256}",
		    "status: 256 is out of range (0..255)" },
		{ WMSG_S_STATE_EVENT, "{\"state\":\"stopping\"}",
		    "state: 'stopping' is none of the values it may take" },
		{ WMSG_S_DISPLAY_EVENT, "{}", "clients: missing argument" },
		{ WMSG_S_BOOT, "[]", "expected an object" },
	};
	char err[256];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = check(cases[i].shape, cases[i].json, err, sizeof(err));
		if (cases[i].err == NULL)
			tap_ok(rc == 0, "accepted: %s%s%s", cases[i].json,
			    rc == 0 ? "" : " -- ", err);
		else
			tap_ok(rc == -EINVAL && strcmp(err, cases[i].err) == 0,
			    "refused: %s -- \"%s\"", cases[i].json, err);
	}
	TAP_EQ(wmsg_check(WMSG_S_NONE, NULL, err, sizeof(err)), 0,
	    "no arguments at all is an empty object");
	TAP_EQ(wmsg_check(WMSG_S_BOOT, NULL, err, sizeof(err)), -EINVAL,
	    "but not where some are required (%s)", err);
	/* A NUL inside a string, which JSON can carry. */
	TAP_EQ(check(WMSG_S_BOOT, "{\"kernel\":\"a\\u0000b\","
	    "\"memory_mib\":64,\"vcpus\":1}", err, sizeof(err)), -EINVAL,
	    "a NUL in a string is refused (%s)", err);
}

static void
test_build_and_read(void)
{
	struct json_object *o = json_object_new_object(), *disk, *arr;
	char err[256];

	wmsg_put_str(o, WMSG_BOOT_KERNEL, "/proc/self/fd/7");
	wmsg_put_str(o, WMSG_BOOT_INITRD, NULL);
	wmsg_put_int(o, WMSG_BOOT_MEMORY_MIB, 256);
	wmsg_put_int(o, WMSG_BOOT_VCPUS, 2);
	wmsg_put_bool(o, WMSG_BOOT_RNG, true);
	arr = json_object_new_array();
	disk = json_object_new_object();
	wmsg_put_int(disk, WMSG_DISK_FD, 10);
	wmsg_put_str(disk, WMSG_DISK_PATH, "/var/lib/d.img");
	json_object_array_add(arr, disk);
	wmsg_put(o, WMSG_BOOT_DISKS, arr);
	wmsg_put(o, WMSG_BOOT_NET, NULL);
	TAP_EQ(wmsg_check(WMSG_S_BOOT, o, err, sizeof(err)), 0,
	    "what the builders make passes the check (%s)",
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	TAP_EQ(json_object_object_length(o), 5,
	    "a NULL string or part is left out");
	tap_ok(strcmp(wmsg_str(o, WMSG_BOOT_KERNEL, "?"), "/proc/self/fd/7")
	    == 0, "a string reads back");
	TAP_EQ(wmsg_int(o, WMSG_BOOT_MEMORY_MIB, 0), 256, "an integer too");
	TAP_EQ(wmsg_bool(o, WMSG_BOOT_RNG, false), true, "a boolean too");
	tap_ok(strcmp(wmsg_str(o, WMSG_BOOT_CMDLINE, "dflt"), "dflt") == 0,
	    "an absent field reads as its default");
	TAP_EQ(wmsg_int(json_object_array_get_idx(wmsg_get(o,
	    WMSG_BOOT_DISKS), 0), WMSG_DISK_FD, -1), 10,
	    "a nested one through wmsg_get");
	json_object_put(o);
}

static void
test_lookups(void)
{
	int i, found = 0;

	for (i = 0; i < WMSG_NREQUESTS; i++)
		found += wmsg_request_lookup(wmsg_request_def(
		    (enum wmsg_request)i)->name) == i;
	TAP_EQ(found, WMSG_NREQUESTS, "every request found by its name");
	TAP_EQ(wmsg_request_lookup("worker.boo"), -ENOENT,
	    "an unknown request is not");
	for (found = 0, i = 0; i < WMSG_NEVENTS; i++)
		found += wmsg_event_lookup(wmsg_event_name(
		    (enum wmsg_event)i)) == i;
	TAP_EQ(found, WMSG_NEVENTS, "every event found by its name");
	TAP_EQ(wmsg_request_def(WMSG_REQ_CONSOLE)->takes_fd, true,
	    "worker.console takes a descriptor");
	TAP_EQ(wmsg_request_def(WMSG_REQ_INFO)->takes_fd, false,
	    "worker.info does not");
}

/* The man page's text from ".Sh THE WORKER LINK" to the next .Sh. */
static char *
man_section(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text, *start, *end;
	long n;

	if (f == NULL)
		tap_bail("%s: cannot open", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	if (text == NULL || fread(text, 1, (size_t)n, f) != (size_t)n)
		tap_bail("%s: cannot read", path);
	fclose(f);
	if ((start = strstr(text, "\n.Sh THE WORKER LINK\n")) == NULL)
		tap_bail("%s: no THE WORKER LINK section", path);
	if ((end = strstr(start + 1, "\n.Sh ")) != NULL)
		*end = '\0';
	memmove(text, start, strlen(start) + 1);
	return text;
}

/* Whether word appears in sec as a word of its own. */
static int
man_has(const char *sec, const char *word)
{
	size_t len = strlen(word);
	const char *p;

	for (p = sec; (p = strstr(p, word)) != NULL; p++)
		if ((p == sec || strchr(" \n", p[-1]) != NULL) &&
		    strchr(" \n,.;:)", p[len]) != NULL)
			return 1;
	return 0;
}

static void
test_documented(const char *man)
{
	char *sec = man_section(man);
	int i, missing = 0;

	for (i = 0; i < WMSG_NREQUESTS; i++)
		if (!man_has(sec, wmsg_request_def(
		    (enum wmsg_request)i)->name)) {
			tap_diag("request %s not in vmmd-protocol(7)",
			    wmsg_request_def((enum wmsg_request)i)->name);
			missing++;
		}
	for (i = 0; i < WMSG_NEVENTS; i++)
		if (!man_has(sec, wmsg_event_name((enum wmsg_event)i))) {
			tap_diag("event %s not in vmmd-protocol(7)",
			    wmsg_event_name((enum wmsg_event)i));
			missing++;
		}
	for (i = 0; i < WMSG_NFIELDS; i++)
		if (!man_has(sec, wmsg_name((enum wmsg_field)i))) {
			tap_diag("field %s not in vmmd-protocol(7)",
			    wmsg_name((enum wmsg_field)i));
			missing++;
		}
	TAP_EQ(missing, 0, "every request, event and field of the link is "
	    "described in vmmd-protocol(7)'s THE WORKER LINK");
	free(sec);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		tap_bail("usage: test-worker-msg vmmd-protocol.7");
	test_refusals();
	test_build_and_read();
	test_lookups();
	test_documented(argv[1]);
	return tap_done();
}
