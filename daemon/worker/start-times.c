/* See start-times.h. */
#include "json-u64.h"
#include "start-times.h"

struct json_object *
start_times_json(const struct start_times *t)
{
	const int64_t run = __atomic_load_n(&t->machine.first_run,
	    __ATOMIC_RELAXED);
	/* In order; each segment ends at its mark and began at the one
	 * before (the first mark starts nothing). */
	const struct {
		const char *name;
		int64_t at;
	} marks[] = {
		{ NULL, t->own[START_REQUEST] },
		{ "supervisor_us", t->own[START_SPAWN] },  /* checks, opens */
		{ "exec_us", t->own[START_MAIN] },	/* fork, exec, ld.so */
		{ "link_us", t->own[START_BOOT] },	/* loop, link, boot */
		/* console, display, net, privileges, filter */
		{ "sandbox_us", t->sandboxed },
		{ "backends_us", t->machine.begin },	/* disks, seed */
		{ "machine_us", t->machine.vm },	/* VM, RAM, devices */
		{ "load_us", t->machine.loaded },	/* kernel, vCPUs */
		{ "thread_us", run },			/* vCPU thread */
		{ "guest_us", t->first_output },	/* to its output */
	};
	struct json_object *o = json_object_new_object();
	size_t n = sizeof(marks) / sizeof(marks[0]);

	if (o == NULL)
		return NULL;
	for (size_t i = 1; i < n; i++)
		if (marks[i - 1].at != 0 && marks[i].at >= marks[i - 1].at)
			json_add_u64(o, marks[i].name, (uint64_t)(marks[i].at -
			    marks[i - 1].at) / 1000);
	if (marks[0].at != 0 && marks[n - 1].at >= marks[0].at)
		json_add_u64(o, "total_us",
		    (uint64_t)(marks[n - 1].at - marks[0].at) / 1000);
	return o;
}
