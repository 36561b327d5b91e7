/*
 * Snapshot directories (daemon/snapshot): a snapshot written and read
 * back gives the same sections, definition and RAM, through a mapping
 * and through reads, and its RAM file keeps holes where the guest never
 * wrote; then every damage a reader must refuse, each refused before
 * anything is handed out, with -errno and a reason naming the thing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "snap-file.h"
#include "scratch.h"
#include "tap.h"

#define MIB		(1ull << 20)
#define LOW_SIZE	(16 * MIB)
#define HIGH_GPA	(4096 * MIB)
#define HIGH_SIZE	(4 * MIB)

static uint8_t	*ram_low, *ram_high;
static struct snap_region regions[2];
static uint8_t	 sec_a[3000], sec_b[70000];
static struct snap_section sections[] = {
	{ "cpu/0", sec_a, sizeof(sec_a) },
	{ "empty", "", 0 },
	{ "pci/00:03.0/virtio-blk", sec_b, sizeof(sec_b) },
};
static struct json_object *definition;

static void *
anon(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	return p;
}

/* A guest that wrote a few pages here and there. */
static void
setup(void)
{
	size_t i;

	ram_low = anon(LOW_SIZE);
	ram_high = anon(HIGH_SIZE);
	for (i = 0; i < 8; i++)
		memset(ram_low + i * 2 * MIB + 4096 * i, 0x11 + (int)i, 4096);
	ram_low[LOW_SIZE - 1] = 0x5a;
	strcpy((char *)ram_high + 12345, "high memory");
	regions[0] = (struct snap_region){ 0, LOW_SIZE, ram_low };
	regions[1] = (struct snap_region){ HIGH_GPA, HIGH_SIZE, ram_high };
	for (i = 0; i < sizeof(sec_a); i++)
		sec_a[i] = (uint8_t)(i * 7);
	for (i = 0; i < sizeof(sec_b); i++)
		sec_b[i] = (uint8_t)(i >> 3);
	definition = json_tokener_parse("{\"name\": \"g\", \"memory\": 20, "
	    "\"vcpus\": 1, \"devices\": [{\"kind\": \"virtio-blk\"}]}");
	if (definition == NULL)
		tap_bail("definition");
}

/* The good snapshot's arguments: the guest's RAM and sections. */
static struct snap_write_args
good_args(void)
{
	return (struct snap_write_args){
		.vmmd_version = "0.1.0",
		.definition = definition,
		.regions = regions,
		.nregions = 2,
		.sections = sections,
		.nsections = sizeof(sections) / sizeof(sections[0]),
	};
}

static int
write_snap(const char *rel, char *err, size_t errlen)
{
	struct snap_write_args a = good_args();

	return snap_write(scratch_at(rel), &a, err, errlen);
}

static int
open_snap(const char *rel, struct snap_reader *r, char *err, size_t errlen)
{
	return snap_open(r, scratch_at(rel), regions, 2, err, errlen);
}

/*
 * The guest's RAM restored from r into fresh anonymous memory (*lowp,
 * *highp, the caller's to munmap), read or, with map, mapped, and
 * checked to be what the guest had: one TAP line, naming it by how.
 */
static void
restored_ram(struct snap_reader *r, bool map, const char *how,
    uint8_t **lowp, uint8_t **highp, char *err, size_t errlen)
{
	uint8_t *low = anon(LOW_SIZE), *high = anon(HIGH_SIZE);
	int ret;

	ret = snap_restore_memory(r, 0, low, map, err, errlen);
	ret = ret < 0 ? ret :
	    snap_restore_memory(r, 1, high, map, err, errlen);
	tap_ok(ret == 0 && memcmp(low, ram_low, LOW_SIZE) == 0 &&
	    memcmp(high, ram_high, HIGH_SIZE) == 0,
	    "RAM %s back is identical (%s)", how, err);
	*lowp = low;
	*highp = high;
}

static void
test_round_trip(void)
{
	struct snap_reader r;
	struct stat st;
	char err[256] = "";
	uint8_t *low, *high;
	const void *p;
	size_t i, n;
	int ret;

	ret = write_snap("good", err, sizeof(err));
	tap_ok(ret == 0, "a snapshot is written (%s)", err);
	ret = write_snap("good", err, sizeof(err));
	tap_ok(ret == -EEXIST && strstr(err, "already") != NULL,
	    "a second snapshot into the same directory is refused: %s", err);

	if (stat(scratch_at("good/memory"), &st) < 0)
		tap_bail("stat memory");
	tap_ok((uint64_t)st.st_size == LOW_SIZE + HIGH_SIZE,
	    "the memory file is as large as RAM (%lld)",
	    (long long)st.st_size);
	tap_ok((uint64_t)st.st_blocks * 512 <= 256 * 1024,
	    "and sparse: %lld bytes allocated for 10 written pages",
	    (long long)st.st_blocks * 512);
	tap_ok(access(scratch_at("good/memory.tmp"), F_OK) < 0 &&
	    access(scratch_at("good/manifest.json.tmp"), F_OK) < 0,
	    "no temporary file is left");

	err[0] = '\0';
	ret = open_snap("good", &r, err, sizeof(err));
	tap_ok(ret == 0, "it opens (%s)", err);
	if (ret < 0)
		return;
	tap_ok(strcmp(r.m.vmmd_version, "0.1.0") == 0 &&
	    r.m.format_version == SNAP_FORMAT_VERSION,
	    "versions are kept");
	tap_ok(json_object_equal(r.m.definition, definition),
	    "the definition is kept as it was");
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		p = snap_section(&r, sections[i].name, &n);
		tap_ok(p != NULL && n == sections[i].size &&
		    memcmp(p, sections[i].data, n) == 0,
		    "section %s is byte-identical", sections[i].name);
	}
	tap_ok(snap_section(&r, "nothing", &n) == NULL,
	    "an absent section is NULL");

	restored_ram(&r, false, "read", &low, &high, err, sizeof(err));
	munmap(low, LOW_SIZE);
	munmap(high, HIGH_SIZE);

	restored_ram(&r, true, "mapped", &low, &high, err, sizeof(err));
	/* Private: the guest's writes do not reach the snapshot. */
	memset(low, 0xee, 4096);
	snap_close(&r);
	ret = open_snap("good", &r, err, sizeof(err));
	low[1] = 0;
	high[0] = 1;
	if (ret == 0) {
		uint8_t page[4096];

		tap_ok(pread(r.memory_fd, page, sizeof(page), 0) ==
		    (ssize_t)sizeof(page) && page[0] == 0x11,
		    "writes to mapped RAM leave the file as it was");
		snap_close(&r);
	} else {
		tap_ok(0, "reopening: %s", err);
	}
	munmap(low, LOW_SIZE);
	munmap(high, HIGH_SIZE);
}

/* cp -r good to rel, by hand. */
static void
copy_good(const char *rel)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp -r --sparse=always '%s' '%s'",
	    scratch_at("good"), scratch_at(rel));
	if (system(cmd) != 0)
		tap_bail("%s", cmd);
}

/* rel/manifest.json's text with the first `from` replaced by `to`. */
static void
edit_text(const char *rel, const char *from, const char *to)
{
	char path[512], buf[65536], out[65536], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/manifest.json", scratch_at(rel));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		tap_bail("read %s", path);
	close(fd);
	buf[n] = '\0';
	if ((p = strstr(buf, from)) == NULL)
		tap_bail("no \"%s\" in %s", from, path);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(p - buf), buf, to,
	    p + strlen(from));
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0 ||
	    write(fd, out, strlen(out)) != (ssize_t)strlen(out))
		tap_bail("write %s", path);
	close(fd);
}

/* Opening rel fails with want, and the reason holds `says`. */
static void
refused(const char *rel, int want, const char *says, const char *what)
{
	struct snap_reader r;
	char err[256] = "";
	int ret;

	ret = open_snap(rel, &r, err, sizeof(err));
	tap_ok(ret == want && strstr(err, says) != NULL,
	    "%s: refused, %d (want %d): %s", what, ret, want, err);
	if (ret == 0)
		snap_close(&r);
}

/*
 * A copy of good as rel, the first `from` in its manifest replaced by
 * `to`: refused() as for any other rel.
 */
static void
refused_edit(const char *rel, const char *from, const char *to, int want,
    const char *says, const char *what)
{
	copy_good(rel);
	edit_text(rel, from, to);
	refused(rel, want, says, what);
}

/* A copy of good as rel, its file cut to size bytes: refused(). */
static void
refused_truncate(const char *rel, const char *file, off_t size, int want,
    const char *says, const char *what)
{
	char path[256];

	copy_good(rel);
	snprintf(path, sizeof(path), "%s/%s", rel, file);
	if (truncate(scratch_at(path), size) < 0)
		tap_bail("truncate");
	refused(rel, want, says, what);
}

static void
test_refusals(void)
{
	struct snap_region other[2];
	struct snap_reader r;
	char err[256] = "";
	char path[512];
	int ret;

	refused_edit("newer", "\"format_version\":2", "\"format_version\":3",
	    -EPROTONOSUPPORT, "newer vmmd", "a newer format");

	refused_edit("foreign", "\"vmmd-snapshot\"", "\"qemu-savevm\"", -EINVAL,
	    "not a vmmd snapshot", "a foreign format");

	refused_edit("unknown", "\"state\":", "\"extra\":1,\"state\":", -EINVAL,
	    "unknown key \"extra\"", "an unknown key");

	copy_good("crc");
	snprintf(path, sizeof(path), "%s/state", scratch_at("crc"));
	{
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || pwrite(fd, "X", 1, 100) != 1)
			tap_bail("poke %s", path);
		close(fd);
	}
	refused("crc", -EBADMSG, "section \"cpu/0\": checksum",
	    "a damaged section");

	refused_truncate("short-state", "state", 1000, -EINVAL,
	    "the state file has 1000 bytes", "a truncated state file");

	refused_truncate("short-memory", "memory", LOW_SIZE, -EINVAL,
	    "the memory file has", "a truncated memory file");

	refused_truncate("short-manifest", "manifest.json", 200, -EINVAL,
	    "cut short", "a truncated manifest");

	refused_edit("range", "\"size\":70000", "\"size\":70001", -EINVAL,
	    "beyond the state file", "a section beyond its file");

	refused_edit("overlap", "\"offset\":3000", "\"offset\":2999", -EINVAL,
	    "overlaps", "overlapping sections");

	refused_edit("region", "\"offset\":16777216", "\"offset\":16777216000",
	    -EINVAL, "beyond the memory file", "a RAM region beyond its file");

	refused_edit("huge", "\"size\":73000", "\"size\":7300000000", -E2BIG,
	    "more than", "a state file beyond the limit");

	refused_edit("dup", "\"empty\"", "\"cpu/0\"", -EINVAL, "appears twice",
	    "a section named twice");

	refused_edit("garbage", "\"sections\"", "\"sections\":[]}{\"x\"",
	    -EINVAL, "manifest", "bytes after the manifest");

	copy_good("link");
	if (unlink(scratch_at("link/memory")) < 0 ||
	    symlink(scratch_at("good/memory"), scratch_at("link/memory")) < 0)
		tap_bail("symlink");
	refused("link", -ELOOP, "memory", "a memory file through a link");

	copy_good("no-manifest");
	if (unlink(scratch_at("no-manifest/manifest.json")) < 0)
		tap_bail("unlink");
	refused("no-manifest", -ENOENT, "not a snapshot", "a missing manifest");

	/* What a crash leaves: data renamed, the manifest still temporary. */
	copy_good("half");
	if (rename(scratch_at("half/manifest.json"),
	    scratch_at("half/manifest.json.tmp")) < 0)
		tap_bail("rename");
	refused("half", -ENOENT, "did not finish", "a half-written snapshot");
	tap_ok(write_snap("half", err, sizeof(err)) == 0 &&
	    open_snap("half", &r, err, sizeof(err)) == 0,
	    "a half-written directory can be written again (%s)", err);
	snap_close(&r);

	other[0] = regions[0];
	other[1] = regions[1];
	other[1].size = 20 * MIB;
	ret = snap_open(&r, scratch_at("good"), other, 2, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "20 MiB") != NULL &&
	    strstr(err, "36 MiB") != NULL,
	    "another RAM size is refused, naming both: %s", err);
	other[1].size = HIGH_SIZE;
	other[1].gpa = 8192 * MIB;
	ret = snap_open(&r, scratch_at("good"), other, 2, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "region 1") != NULL,
	    "another RAM layout is refused: %s", err);
}

static void
test_write_refusals(void)
{
	struct snap_section bad[] = { { "a b", "x", 1 } };
	struct snap_region over[2];
	struct snap_write_args a = good_args();
	char err[256] = "";
	int ret;

	a.sections = bad;
	a.nsections = 1;
	ret = snap_write(scratch_at("bad-name"), &a, err, sizeof(err));
	tap_ok(ret == -EINVAL && access(scratch_at("bad-name"), F_OK) < 0,
	    "a bad section name is refused before anything is written: %s",
	    err);
	over[0] = regions[0];
	over[1] = regions[1];
	over[1].gpa = MIB;
	a.regions = over;
	a.nsections = 0;
	ret = snap_write(scratch_at("overlap-w"), &a, err, sizeof(err));
	tap_ok(ret == -EINVAL && access(scratch_at("overlap-w"), F_OK) < 0,
	    "overlapping RAM regions are refused: %s", err);

	/* A write that fails half-way (the manifest cannot be made). */
	scratch_mkdir("fail-w", 0755);
	scratch_mkdir("fail-w/manifest.json.tmp", 0755);
	a.regions = regions;
	a.sections = sections;
	a.nsections = sizeof(sections) / sizeof(sections[0]);
	ret = snap_write(scratch_at("fail-w"), &a, err, sizeof(err));
	tap_ok(ret == -EISDIR &&
	    access(scratch_at("fail-w/memory"), F_OK) == 0 &&
	    access(scratch_at("fail-w/manifest.json"), F_OK) < 0,
	    "a write that fails after the memory file leaves no manifest: %s",
	    err);
	refused("fail-w", -ENOENT, "did not finish",
	    "what a failed write left");
}

/*
 * The write in three steps, as a sandboxed writer does it: the owner
 * makes the files, the writer fills them, the owner commits only a
 * manifest that matches the files.
 */
static void
test_split_write(void)
{
	struct snap_write_args a = good_args();
	struct snap_reader r;
	char err[256] = "", *text = NULL, *lie;
	size_t len;
	int dirfd, mfd, sfd, ret;

	scratch_mkdir("split", 0700);
	dirfd = open(scratch_at("split"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		tap_bail("split: %s", strerror(errno));
	ret = snap_write_begin(dirfd, "split", &mfd, &sfd, err, sizeof(err));
	tap_ok(ret == 0, "begin makes the data files: %s", err);
	ret = snap_write_data(mfd, sfd, &a, &text, &len, err, sizeof(err));
	tap_ok(ret == 0 && text != NULL, "data fills them: %s", err);

	/* A manifest claiming one section fewer: other sizes. */
	a.nsections--;
	lie = NULL;
	if (ret == 0) {
		int d2, m2 = -1, s2 = -1;

		scratch_mkdir("split-lie", 0700);
		d2 = open(scratch_at("split-lie"), O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		if (d2 < 0 || snap_write_begin(d2, "split-lie", &m2, &s2, err,
		    sizeof(err)) < 0 || snap_write_data(m2, s2, &a, &lie, &len,
		    err, sizeof(err)) < 0)
			tap_bail("split-lie: %s", err);
		snap_write_abort(d2, &m2, &s2);
		close(d2);
		ret = snap_write_commit(dirfd, "split", mfd, sfd, lie, len,
		    (uid_t)-1, (gid_t)-1, err, sizeof(err));
		tap_ok(ret == -EINVAL &&
		    access(scratch_at("split/manifest.json"), F_OK) < 0,
		    "a manifest that does not match the files is refused, "
		    "nothing committed: %s", err);
		ret = snap_write_commit(dirfd, "split", mfd, sfd, "{", 1,
		    (uid_t)-1, (gid_t)-1, err, sizeof(err));
		tap_ok(ret == -EINVAL, "a malformed manifest is refused: %s",
		    err);
	}
	a.nsections++;
	ret = snap_write_commit(dirfd, "split", mfd, sfd, text,
	    strlen(text), (uid_t)-1, (gid_t)-1, err, sizeof(err));
	tap_ok(ret == 0, "the true manifest commits: %s", err);
	close(mfd);
	close(sfd);
	ret = open_snap("split", &r, err, sizeof(err));
	tap_ok(ret == 0 && r.m.nsections == a.nsections,
	    "what the three steps wrote reads back: %s", err);
	if (ret == 0)
		snap_close(&r);
	ret = snap_write_begin(dirfd, "split", &mfd, &sfd, err, sizeof(err));
	tap_ok(ret == -EEXIST && mfd < 0 && sfd < 0,
	    "begin refuses a directory holding a snapshot: %s", err);
	free(text);
	free(lie);
	close(dirfd);

	/* A temporary name that is a hard link to another file. */
	{
		char buf[8] = "";
		int fd;

		scratch_mkdir("linked", 0700);
		fd = open(scratch_at("victim"), O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, "keep", 4) != 4 ||
		    link(scratch_at("victim"), scratch_at("linked/state.tmp"))
		    < 0)
			tap_bail("victim: %s", strerror(errno));
		close(fd);
		err[0] = '\0';
		ret = write_snap("linked", err, sizeof(err));
		fd = open(scratch_at("victim"), O_RDONLY | O_CLOEXEC);
		tap_ok(ret == 0 && fd >= 0 && read(fd, buf, sizeof(buf)) == 4 &&
		    memcmp(buf, "keep", 4) == 0,
		    "a hard link at a temporary name is replaced, its file "
		    "untouched: %s", err);
		if (fd >= 0)
			close(fd);
	}
}

/* Shapes only the parser sees. */
static void
test_parse(void)
{
	static const struct {
		const char *text, *says;
		int want;
	} cases[] = {
		{ "", "cut short", -EINVAL },
		{ "[]", "not a JSON object", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\"}", "format_version", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":1.0}",
		    "not an integer", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":0}",
		    "version 0", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":"
		    "99999999999999999999}", "newer", -EPROTONOSUPPORT },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":-1}",
		    "negative", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":1,"
		    "\"vmmd_version\":\"1\",\"definition\":[]}",
		    "not an object", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":1,"
		    "\"vmmd_version\":\"1\",\"definition\":{},"
		    "\"state\":{\"file\":\"../etc/passwd\",\"size\":0}}",
		    "is not \"state\"", -EINVAL },
		{ "{\"format\":\"vmmd-snapshot\",\"format_version\":1,"
		    "\"vmmd_version\":\"1\",\"definition\":{},"
		    "\"state\":{\"file\":\"state\",\"size\":0},"
		    "\"memory\":{\"file\":\"memory\",\"size\":8192,\"regions\":"
		    "[{\"guest_address\":0,\"size\":4097,\"offset\":0}]}}",
		    "multiples", -EINVAL },
	};
	struct snap_manifest m;
	char err[256];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		ret = snap_manifest_parse(cases[i].text,
		    strlen(cases[i].text), &m, err, sizeof(err));
		tap_ok(ret == cases[i].want && strstr(err, cases[i].says),
		    "manifest %zu refused: %d, %s", i, ret, err);
		if (ret == 0)
			snap_manifest_free(&m);
	}
	ret = snap_manifest_parse("{\"a\":\0}", 7, &m, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NUL"), "a NUL byte: %s", err);
}

/* The good snapshot's manifest text, malloc'ed, its length in *len. */
static char *
good_manifest(size_t *len)
{
	char path[512], *buf = malloc(65536);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/manifest.json", scratch_at("good"));
	if (buf == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (n = read(fd, buf, 65535)) <= 0)
		tap_bail("read %s", path);
	close(fd);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* text with its first `from` replaced by `to`, parsed: want and says. */
static void
disk_refused(const char *text, const char *from, const char *to, int want,
    const char *says)
{
	struct snap_manifest m;
	char out[65536], err[256] = "";
	const char *p = strstr(text, from);
	int ret;

	if (p == NULL)
		tap_bail("no \"%s\" in the manifest", from);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(p - text), text, to,
	    p + strlen(from));
	ret = snap_manifest_parse(out, strlen(out), &m, err, sizeof(err));
	tap_ok(ret == want && strstr(err, says) != NULL,
	    "disk record with %s: refused, %d: %s", to, ret, err);
	if (ret == 0)
		snap_manifest_free(&m);
}

/*
 * text with its member key set to the JSON value (removed when NULL),
 * parsed: want, and says in the reason.  A version-1 manifest without
 * "disks" is the one such text that reads (want 0).
 */
static void
root_edited(const char *text, const char *key, const char *value, int want,
    const char *says)
{
	struct json_object *root = json_tokener_parse(text);
	struct snap_manifest m;
	char err[256] = "";
	const char *out;
	int ret;

	if (root == NULL)
		tap_bail("the manifest does not parse");
	if (value == NULL && strcmp(key, "format_version") != 0)
		json_object_object_del(root, key);
	else
		json_object_object_add(root, key, json_tokener_parse(value));
	if (want == 0)
		json_object_object_del(root, "disks");
	out = json_object_to_json_string(root);
	ret = snap_manifest_parse(out, strlen(out), &m, err, sizeof(err));
	tap_ok(ret == want && strstr(err, says) != NULL &&
	    (ret < 0 || (m.format_version == 1 && m.ndisks == 0)),
	    "a manifest with %s %s: %d %s", key, value != NULL ? value :
	    "removed", ret, err);
	if (ret == 0)
		snap_manifest_free(&m);
	json_object_put(root);
}

/*
 * The disk records vmmd adds to the worker's manifest: written, parsed
 * back the same, and every record a reader must not trust refused.
 */
static void
test_disks(void)
{
	const struct snap_mdisk disks[] = {
		{ .index = 0, .qcow2 = true, .frozen = true,
		    .path = "disk-0.qcow2", .size = 64 * MIB,
		    .file_size = 327680, .backing_depth = 1 },
		{ .index = 2, .sata = true, .path = "/srv/shared.raw",
		    .size = 8 * MIB },
	};
	struct snap_mdisk bad;
	struct snap_manifest m;
	char err[256] = "", *text, *out = NULL, *old;
	size_t len, olen = 0;
	int ret;

	text = good_manifest(&len);
	ret = snap_manifest_parse(text, len, &m, err, sizeof(err));
	tap_ok(ret == 0 && m.format_version == 2 && m.ndisks == 0,
	    "a manifest as the worker writes it records no disk (%s)", err);
	if (ret == 0)
		snap_manifest_free(&m);

	ret = snap_manifest_set_disks(text, len, disks, 2, &out, &olen, err,
	    sizeof(err));
	tap_ok(ret == 0, "disk records added (%s)", err);
	if (ret < 0)
		return;
	ret = snap_manifest_parse(out, olen, &m, err, sizeof(err));
	tap_ok(ret == 0 && m.ndisks == 2 &&
	    m.disks[0].index == 0 && !m.disks[0].sata && m.disks[0].qcow2 &&
	    m.disks[0].frozen && strcmp(m.disks[0].path, "disk-0.qcow2") == 0 &&
	    m.disks[0].size == 64 * MIB && m.disks[0].file_size == 327680 &&
	    m.disks[0].backing_depth == 1 &&
	    m.disks[1].index == 2 && m.disks[1].sata && !m.disks[1].qcow2 &&
	    !m.disks[1].frozen &&
	    strcmp(m.disks[1].path, "/srv/shared.raw") == 0 &&
	    m.disks[1].size == 8 * MIB && m.disks[1].file_size == 0 &&
	    m.disks[1].backing_depth == 0,
	    "the disk records read back as written (%s)", err);
	if (ret == 0)
		snap_manifest_free(&m);

	disk_refused(out, "\"disk-0.qcow2\"", "\"../disk-0.qcow2\"", -EINVAL,
	    "is not \"disk-0.qcow2\"");
	disk_refused(out, "\"disk-0.qcow2\"", "\"/etc/shadow\"", -EINVAL,
	    "is not \"disk-0.qcow2\"");
	disk_refused(out, "\"frozen\":", "\"shared\":\"/x\",\"frozen\":",
	    -EINVAL, "not one of");
	disk_refused(out, "\"/srv/shared.raw\"", "\"srv/shared.raw\"",
	    -EINVAL, "absolute");
	disk_refused(out, "\"/srv/shared.raw\"", "\"/srv/a\\u0000b\"",
	    -EINVAL, "NUL");
	disk_refused(out, "\"format\":\"qcow2\"", "\"format\":\"raw\"",
	    -EINVAL, "a frozen image is qcow2");
	disk_refused(out, "\"format\":\"qcow2\"", "\"format\":\"vmdk\"",
	    -EINVAL, "neither");
	disk_refused(out, "\"bus\":\"virtio\"", "\"bus\":\"scsi\"", -EINVAL,
	    "neither");
	disk_refused(out, "\"index\":2", "\"index\":0", -EINVAL,
	    "not after");
	disk_refused(out, "\"backing_depth\":1", "\"backing_depth\":16", -E2BIG,
	    "more than 15");
	disk_refused(out, "\"file_size\":327680,", "", -EINVAL,
	    "no file_size");
	disk_refused(out, "\"size\":8388608,", "\"size\":8388608,"
	    "\"file_size\":1,", -EINVAL, "a shared disk has no file_size");
	disk_refused(out, "\"index\":0,", "\"index\":0,\"mode\":1,", -EINVAL,
	    "unknown key \"mode\"");
	/* Version 1 knew no disks: a record there is damage. */
	disk_refused(out, "\"format_version\":2", "\"format_version\":1",
	    -EINVAL, "version 1");
	root_edited(text, "disks", "{}", -EINVAL, "not an array");
	root_edited(text, "disks", NULL, -EINVAL, "no \"disks\"");
	root_edited(text, "format_version", "1", 0, "");

	/* What vmmd would add is held to the same rules. */
	bad = disks[0];
	bad.path = "disk-1.qcow2";
	ret = snap_manifest_set_disks(text, len, &bad, 1, &old, &olen, err,
	    sizeof(err));
	tap_ok(ret == -EINVAL && old == NULL && strstr(err, "disk 0"),
	    "a frozen image named for another disk is not added: %s", err);
	free(out);
	free(text);
}

int
main(void)
{
	scratch_new("snapshot");
	setup();
	test_round_trip();
	test_refusals();
	test_write_refusals();
	test_split_write();
	test_parse();
	test_disks();
	json_object_put(definition);
	return tap_done();
}
