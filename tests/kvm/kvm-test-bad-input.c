/*
 * Bad input on the control socket: every malformed or refused request
 * gets one error reply with the right class and a one-line description,
 * and the daemon keeps answering (on the same connection when the line
 * was framed, and to everybody else in any case).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "proto.h"

#define NCLIENTS	200

static struct h_daemon *d;

/* A raw line (newline added); the next message must be that error. */
static struct json_object *
raw_request(struct h_conn *c, const char *line)
{
	if (h_send(c, line, strlen(line)) != 0 || h_send(c, "\n", 1) != 0)
		return NULL;
	return h_read_msg(c, H_REPLY_MS);
}

static void
expect_raw_error(struct h_conn *c, const char *line, const char *cls,
    const char *what)
{
	struct json_object *r = raw_request(c, line);

	h_check_error(r, cls, what);
	json_object_put(r);
}

/*
 * A vm.list request of exactly n bytes (n >= 49): its argument "x" is a
 * string of fill bytes.  Caller frees it.
 */
static char *
padded_request(size_t n, int fill)
{
	static const char head[] =
	    "{\"id\":1,\"command\":\"vm.list\",\"arguments\":{\"x\":\"";
	char *s;

	if ((s = malloc(n + 1)) == NULL)
		tap_bail("out of memory");
	memset(s, fill, n);
	memcpy(s, head, sizeof(head) - 1);
	memcpy(s + n - 3, "\"}}", 3);
	s[n] = '\0';
	return s;
}

/* The daemon still answers on c. */
static bool
answers(struct h_conn *c)
{
	struct json_object *r = h_call(c, "vm.list", NULL, H_REPLY_MS);
	bool ok = h_ret(r) != NULL;

	json_object_put(r);
	return ok;
}

static void
test_framing(struct h_conn *c)
{
	struct json_object *r, *id;
	char *big;
	size_t n;

	expect_raw_error(c, "{not json", "parse_error", "malformed JSON");
	expect_raw_error(c, "[1,2,3]", "parse_error", "JSON that is not an "
	    "object");
	expect_raw_error(c, "{\"id\":7,\"arguments\":{}}", "bad_request",
	    "request without a command");
	expect_raw_error(c, "{\"id\":8,\"command\":42}", "bad_request",
	    "command that is not a string");
	expect_raw_error(c, "{\"id\":9,\"command\":\"vm.list\","
	    "\"arguments\":[1]}", "bad_request", "arguments that are not an "
	    "object");
	tap_ok(answers(c), "same connection still answers after bad lines");

	/* Any JSON id comes back as it was. */
	r = raw_request(c, "{\"id\":\"abc\",\"command\":\"vm.list\"}");
	tap_ok(r != NULL && json_object_object_get_ex(r, "id", &id) &&
	    json_object_is_type(id, json_type_string) &&
	    strcmp(json_object_get_string(id), "abc") == 0 &&
	    h_ret(r) != NULL, "a string id is echoed (%s)", h_text(r));
	json_object_put(r);
	r = raw_request(c, "{\"id\":{\"x\":[1,2]},\"command\":\"nope\"}");
	tap_ok(r != NULL && json_object_object_get_ex(r, "id", &id) &&
	    json_object_is_type(id, json_type_object) &&
	    h_err_class(r) && strcmp(h_err_class(r), "unknown_command") == 0,
	    "an object id is echoed with the error (%s)", h_text(r));
	json_object_put(r);

	/* A line over the 64 KiB cap, then a valid request right after. */
	big = padded_request(70 * 1024, 'a');
	expect_raw_error(c, big, "too_large", "a 70 KiB line");
	free(big);
	tap_ok(answers(c), "a valid request on the same connection after the "
	    "long line works");
	tap_ok(answers(c), "... and the next one");

	/* Exactly at the cap is still a request; one byte more is not. */
	for (n = PROTO_MAX_LINE; n <= PROTO_MAX_LINE + 1; n++) {
		big = padded_request(n, 'b');
		r = raw_request(c, big);
		free(big);
		if (n == PROTO_MAX_LINE)
			tap_ok(h_err_class(r) != NULL &&
			    strcmp(h_err_class(r), "invalid_argument") == 0,
			    "a line of exactly 64 KiB is parsed (%s)",
			    h_err_desc(r) ? h_err_desc(r) : h_text(r));
		else
			h_check_error(r, "too_large", "a line of 64 KiB + 1");
		json_object_put(r);
	}
	tap_ok(answers(c), "the connection still answers");

	h_expect_error(c, "vm.frobnicate", "{}", "unknown_command",
	    "unknown command");
	h_expect_error(c, "", "{}", "unknown_command", "empty command");
}

/*
 * A length that cuts an ELF64 image in the middle of its last PT_LOAD
 * segment's file data: headers and notes intact, a segment short.
 */
static size_t
cut_len(const char *img, size_t len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Phdr *ph;
	size_t cut = len / 2, i;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phoff + (size_t)eh->e_phnum * sizeof(*ph) > len)
		return cut;
	ph = (const Elf64_Phdr *)(img + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_filesz > 1 &&
		    ph[i].p_offset + ph[i].p_filesz <= len)
			cut = ph[i].p_offset + ph[i].p_filesz / 2;
	return cut;
}

static int
write_file(const char *path, const void *buf, size_t len)
{
	int fd, r = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1 || write(fd, buf, len) != (ssize_t)len)
		r = -1;
	if (fd != -1 && close(fd) == -1)
		r = -1;
	if (r != 0)
		tap_diag("writing %s: %s", path, strerror(errno));
	return r;
}

static void
test_arguments(struct h_conn *c)
{
	static const char junk[] = "this is not a kernel\n";
	const char *hello = h_env("VMMD_GUEST_HELLO");
	char path[512], big[4096];

	h_expect_error(c, "vm.create", "{\"name\":5}", "invalid_argument",
	    "vm.create name not a string");
	h_expect_error(c, "vm.create", "{}", "invalid_argument",
	    "vm.create without name");
	h_expect_error(c, "vm.create",
	    "{\"name\":\"x\",\"memory_mib\":\"big\"}", "invalid_argument",
	    "vm.create memory_mib a string");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"memory_mib\":32.5}",
	    "invalid_argument", "vm.create memory_mib a fraction");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"vcpus\":true}",
	    "invalid_argument", "vm.create vcpus a boolean");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"transient\":\"yes\"}",
	    "invalid_argument", "vm.create transient a string");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"kernel\":42}",
	    "invalid_argument", "vm.create kernel a number");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"colour\":\"red\"}",
	    "invalid_argument", "vm.create unknown argument");
	h_expect_error(c, "vm.list", "{\"all\":true}", "invalid_argument",
	    "vm.list unknown argument");
	h_expect_error(c, "vm.info", "{\"name\":[]}", "invalid_argument",
	    "vm.info name an array");

	h_expect_error(c, "vm.create", "{\"name\":\"\"}", "invalid_argument",
	    "empty name");
	h_expect_error(c, "vm.create", "{\"name\":\"-dash\"}",
	    "invalid_argument", "name starting with '-'");
	h_expect_error(c, "vm.create", "{\"name\":\"a/b\"}", "invalid_argument",
	    "name with '/'");
	h_expect_error(c, "vm.create", "{\"name\":\"..\"}", "invalid_argument",
	    "name '..'");
	memset(big, 'n', 65);
	big[65] = '\0';
	h_expect_errorf(c, "vm.create", "invalid_argument", "65-character name",
	    "{\"name\":\"%s\"}", big);

	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"memory_mib\":15}",
	    "invalid_argument", "memory_mib 15");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"memory_mib\":262145}",
	    "invalid_argument", "memory_mib 262145");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"memory_mib\":-1}",
	    "invalid_argument", "memory_mib -1");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"vcpus\":0}",
	    "invalid_argument", "vcpus 0");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"vcpus\":65}",
	    "invalid_argument", "vcpus 65");
	h_expect_error(c, "vm.create",
	    "{\"name\":\"x\",\"on_reboot\":\"maybe\"}", "invalid_argument",
	    "on_reboot 'maybe'");
	memset(big, 'c', 2049);
	big[2049] = '\0';
	h_expect_errorf(c, "vm.create", "invalid_argument", "2049-byte cmdline",
	    "{\"name\":\"x\",\"cmdline\":\"%s\"}", big);

	/* Kernel and initrd files. */
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"kernel\":"
	    "\"/nonexistent/kernel\"}", "invalid_argument", "missing kernel");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"kernel\":"
	    "\"relative/kernel\"}", "invalid_argument", "relative kernel path");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"kernel\":\"/tmp\"}",
	    "invalid_argument", "kernel is a directory");
	h_expect_error(c, "vm.create", "{\"name\":\"x\",\"kernel\":"
	    "\"/proc/self/status\"}", "invalid_argument",
	    "kernel is not a regular file (/proc)");
	snprintf(path, sizeof(path), "%s/junk.bin", d->dir);
	if (write_file(path, junk, sizeof(junk) - 1) != 0)
		tap_bail("cannot write %s", path);
	h_expect_errorf(c, "vm.create", "invalid_argument",
	    "kernel is not a kernel", "{\"name\":\"x\",\"kernel\":\"%s\"}",
	    path);
	h_expect_errorf(c, "vm.create", "invalid_argument",
	    "initrd is a directory", "{\"name\":\"x\",\"kernel\":\"%s\","
	    "\"initrd\":\"/tmp\"}", hello);
	h_expect_errorf(c, "vm.create", "invalid_argument", "missing initrd",
	    "{\"name\":\"x\",\"kernel\":\"%s\","
	    "\"initrd\":\"/nonexistent/initrd\"}", hello);
	h_expect_error(c, "vm.info", "{\"name\":\"x\"}", "not_found",
	    "nothing was created by the refused requests");

	/* A kernel that was fine at create time and is gone at start. */
	{
		char *img, kpath[512];
		size_t len;

		snprintf(kpath, sizeof(kpath), "%s/kernel.elf", d->dir);
		if ((img = h_read_file(hello, &len)) == NULL)
			tap_bail("reading %s", hello);
		tap_ok(write_file(kpath, img, len) == 0 &&
		    h_create(c, "vanish", "\"kernel\":\"%s\"", kpath) == 0,
		    "vanish: created with a copy of hello");
		unlink(kpath);
		h_expect_error(c, "vm.start", "{\"name\":\"vanish\"}",
		    "invalid_argument", "vm.start with the kernel gone");
		tap_ok(write_file(kpath, img, cut_len(img, len)) == 0,
		    "vanish: kernel put back, cut in the middle of a "
		    "segment");
		h_expect_error(c, "vm.start", "{\"name\":\"vanish\"}",
		    "invalid_argument", "vm.start with a truncated kernel");
		{
			char st[64];

			h_state(c, "vanish", st, sizeof(st));
			tap_ok(strcmp(st, "running") != 0 &&
			    strcmp(st, "starting") != 0,
			    "vanish: not running after the failed starts (%s)",
			    st);
		}
		tap_ok(write_file(kpath, img, len) == 0 &&
		    h_start(c, "vanish") == 0,
		    "vanish: starts once the kernel is whole again");
		tap_ok(h_stop(c, "vanish", true, -1, H_REPLY_MS) == 0 &&
		    h_delete(c, "vanish") == 0, "vanish: stopped, deleted");
		free(img);
	}

	/* What does not fit in the guest's RAM is the definition's fault. */
	{
		char ipath[512];
		int fd;

		snprintf(ipath, sizeof(ipath), "%s/big.initrd", d->dir);
		fd = open(ipath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		tap_ok(fd >= 0 && ftruncate(fd, 24 << 20) == 0 &&
		    close(fd) == 0 && h_create(c, "small", "\"memory_mib\":16,"
		    "\"kernel\":\"%s\",\"initrd\":\"%s\"", hello, ipath) == 0,
		    "small: 16 MiB of RAM, a 24 MiB initrd");
		h_expect_error(c, "vm.start", "{\"name\":\"small\"}",
		    "invalid_argument", "vm.start with an initrd larger than "
		    "RAM");
		tap_ok(h_delete(c, "small") == 0, "small: deleted");
		unlink(ipath);
	}

	/* Duplicates, unknown VMs. */
	tap_ok(h_create(c, "dup", NULL) == 0, "dup: created");
	h_expect_error(c, "vm.create", "{\"name\":\"dup\"}", "exists",
	    "duplicate name");
	h_expect_error(c, "vm.info", "{\"name\":\"ghost\"}", "not_found",
	    "vm.info of an unknown VM");
	h_expect_error(c, "vm.start", "{\"name\":\"ghost\"}", "not_found",
	    "vm.start of an unknown VM");
	h_expect_error(c, "vm.delete", "{\"name\":\"ghost\"}", "not_found",
	    "vm.delete of an unknown VM");
	h_expect_error(c, "vm.stop", "{\"name\":\"dup\",\"timeout\":3601}",
	    "invalid_argument", "vm.stop timeout 3601");
	h_expect_error(c, "vm.stop", "{\"name\":\"dup\",\"timeout\":-1}",
	    "invalid_argument", "vm.stop timeout -1");
	h_expect_error(c, "vm.stop", "{\"name\":\"dup\",\"force\":\"yes\"}",
	    "invalid_argument", "vm.stop force a string");

	/* States. */
	h_expect_error(c, "vm.pause", "{\"name\":\"dup\"}", "bad_state",
	    "pausing a defined VM");
	h_expect_error(c, "vm.resume", "{\"name\":\"dup\"}", "bad_state",
	    "resuming a defined VM");
	tap_ok(h_create(c, "run", "\"kernel\":\"%s\"", hello) == 0,
	    "run: created");
	tap_ok(h_start(c, "run") == 0, "run: started");
	h_expect_error(c, "vm.start", "{\"name\":\"run\"}", "bad_state",
	    "starting a running VM");
	h_expect_error(c, "vm.delete", "{\"name\":\"run\"}", "bad_state",
	    "deleting a running VM");
	h_expect_error(c, "vm.resume", "{\"name\":\"run\"}", "bad_state",
	    "resuming a running VM");
	tap_ok(h_stop(c, "run", true, -1, H_REPLY_MS) == 0, "run: stopped");
	h_expect_error(c, "vm.stop", "{\"name\":\"run\"}", "bad_state",
	    "stopping a stopped VM");
	tap_ok(h_delete(c, "dup") == 0 && h_delete(c, "run") == 0,
	    "both deleted");
}

static void
test_disconnects(struct h_conn *c)
{
	static const char half[] = "{\"id\":1,\"command\":\"vm.li";
	char buf[256];
	struct h_conn *x;
	int fd;

	/* Half a line, then gone. */
	if ((fd = h_connect_fd(d)) >= 0) {
		if (write(fd, half, sizeof(half) - 1) < 0)
			tap_diag("write: %s", strerror(errno));
		close(fd);
	}
	/* Connected, said nothing, gone before reading the greeting. */
	if ((fd = h_connect_fd(d)) >= 0)
		close(fd);
	tap_ok(answers(c), "the daemon answers after clients left "
	    "mid-request");

	/* vm.start, then gone before the reply: the VM still starts. */
	tap_ok(h_create(c, "orphan", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "orphan: created");
	if ((x = h_connect(d)) != NULL) {
		snprintf(buf, sizeof(buf), "{\"id\":1,\"command\":\"vm.start\","
		    "\"arguments\":{\"name\":\"orphan\"}}\n");
		h_send(x, buf, strlen(buf));
		h_close(x);
	}
	tap_ok(h_wait_state(c, "orphan", "running", H_BOOT_MS) == 0,
	    "orphan: vm.start from a client that left still starts it");
	tap_ok(h_stop(c, "orphan", true, -1, H_REPLY_MS) == 0,
	    "orphan: stopped");

	/* A client that sends its request and never reads: no stall. */
	if ((fd = h_connect_fd(d)) >= 0) {
		int i;

		for (i = 0; i < 2000; i++) {
			static const char req[] =
			    "{\"id\":1,\"command\":\"vm.list\"}\n";

			if (send(fd, req, sizeof(req) - 1,
			    MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
				break;
		}
		tap_ok(answers(c), "the daemon answers others while a client "
		    "does not read its replies (%d requests sent)", i);
		close(fd);
	}
	tap_ok(answers(c), "... and after that client left");
}

static void
test_many_clients(void)
{
	static const char req[] = "{\"id\":77,\"command\":\"vm.list\"}\n";
	static struct h_conn *cs[NCLIENTS];
	struct json_object *r;
	int i, connected = 0, greeted = 0, answered = 0;

	for (i = 0; i < NCLIENTS; i++) {
		int fd = h_connect_fd(d);

		if (fd >= 0) {
			connected++;
			close(fd);
		}
	}
	tap_ok(connected == NCLIENTS, "%d quick connect/close in a row (%d)",
	    NCLIENTS, connected);

	/* All at once, each reading its greeting. */
	for (i = 0; i < NCLIENTS; i++)
		if ((cs[i] = h_connect(d)) != NULL)
			greeted++;
	tap_ok(greeted == NCLIENTS, "%d clients connected at once get their "
	    "greetings (%d)", NCLIENTS, greeted);
	for (i = 0; i < NCLIENTS; i++)
		if (cs[i] != NULL)
			h_send(cs[i], req, sizeof(req) - 1);
	for (i = 0; i < NCLIENTS; i++) {
		if (cs[i] == NULL)
			continue;
		r = h_read_msg(cs[i], H_REPLY_MS);
		if (h_ret(r) != NULL && h_int(r, "id", -1) == 77)
			answered++;
		json_object_put(r);
	}
	tap_ok(answered == NCLIENTS, "%d clients all get their answer (%d)",
	    NCLIENTS, answered);
	for (i = 0; i < NCLIENTS; i++)
		h_close(cs[i]);
}

int
main(void)
{
	struct h_conn *c;
	struct json_object *g, *v;

	h_init();
	c = h_setup(&d);
	g = h_greeting(c);
	tap_ok(json_object_object_get_ex(g, "greeting", &v) &&
	    h_str(v, "name") && strcmp(h_str(v, "name"), "vmmd") == 0 &&
	    h_int(v, "protocol", -1) == 1, "greeting: vmmd, protocol 1 (%s)",
	    h_text(g));

	test_framing(c);
	test_arguments(c);
	test_disconnects(c);
	test_many_clients();
	tap_ok(answers(c), "the first connection still answers at the end");
	tap_ok(h_daemon_alive(d), "vmmd is still running");
	h_close(c);
	return h_done();
}
