/*
 * libFuzzer: a snapshot directory's manifest and section table
 * (daemon/snapshot): the manifest parser on the text, and, when it
 * accepts it, snap_open() on a directory holding that manifest, a state
 * file of the input's bytes and a sparse memory file of the size the
 * manifest says (what the reader would check on a real one), with the
 * layout the manifest gives as the VM's.  Whatever the bytes, no crash,
 * no leak, no read outside what was allocated; a manifest the parser
 * accepts, written again by the writer's own formatter, parses again to
 * the same values.
 *
 * Input: a 16-bit little-endian length, that many bytes of manifest
 * text (or all there is), then the state file's bytes.  The seeds
 * (corpus/snapshot) are manifests test-snapshot's writer made, with
 * their state (disks: one of them with a frozen and a shared disk).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fuzz-tmp.h"
#include "snap-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];

static void
put(const char *name, const void *buf, size_t len, uint64_t truncate_to)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if ((len > 0 && write(fd, buf, len) != (ssize_t)len) ||
	    (truncate_to > 0 && ftruncate(fd, (off_t)truncate_to) < 0))
		abort();
	close(fd);
}

/* The formatter's text parses again to what m holds. */
static void
reformat(const struct snap_manifest *m)
{
	struct snap_manifest again;
	char err[256], *text;
	size_t len, i;

	if ((text = snap_manifest_format(m, &len)) == NULL)
		abort();
	if (snap_manifest_parse(text, len, &again, err, sizeof(err)) < 0) {
		fprintf(stderr, "reformatted manifest refused: %s\n", err);
		abort();
	}
	if (again.nregions != m->nregions ||
	    again.nsections != m->nsections ||
	    again.memory_file_size != m->memory_file_size ||
	    again.state_file_size != m->state_file_size ||
	    strcmp(again.vmmd_version, m->vmmd_version) != 0 ||
	    !json_object_equal(again.definition, m->definition) ||
	    memcmp(again.regions, m->regions,
	    m->nregions * sizeof(m->regions[0])) != 0)
		abort();
	for (i = 0; i < m->nsections; i++)
		if (memcmp(&again.sections[i], &m->sections[i],
		    sizeof(m->sections[i])) != 0)
			abort();
	if (again.ndisks != m->ndisks)
		abort();
	for (i = 0; i < m->ndisks; i++) {
		const struct snap_mdisk *a = &again.disks[i], *b = &m->disks[i];

		if (a->index != b->index || a->sata != b->sata ||
		    a->qcow2 != b->qcow2 || a->frozen != b->frozen ||
		    strcmp(a->path, b->path) != 0 || a->size != b->size ||
		    a->file_size != b->file_size ||
		    a->backing_depth != b->backing_depth)
			abort();
	}
	snap_manifest_free(&again);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snap_region expect[SNAP_MAX_REGIONS];
	struct snap_manifest m;
	struct snap_reader r;
	char err[256];
	size_t mlen, i, n;
	int ret;

	if (dir[0] == '\0')
		fuzz_tmp_dir("snapshot", dir, sizeof(dir));
	if (size < 2)
		return 0;
	mlen = (size_t)(data[0] | data[1] << 8);
	data += 2;
	size -= 2;
	if (mlen > size)
		mlen = size;

	ret = snap_manifest_parse((const char *)data, mlen, &m, err,
	    sizeof(err));
	if (ret < 0)
		return 0;
	reformat(&m);

	put(SNAP_MANIFEST_FILE, data, mlen, 0);
	put(SNAP_STATE_FILE, data + mlen, size - mlen, 0);
	put(SNAP_MEMORY_FILE, NULL, 0, m.memory_file_size);
	for (i = 0; i < m.nregions; i++)
		expect[i] = (struct snap_region){ m.regions[i].gpa,
		    m.regions[i].size, NULL };
	if (snap_open(&r, dir, expect, m.nregions, err, sizeof(err)) == 0) {
		volatile uint8_t sink = 0;

		for (i = 0; i < m.nsections; i++) {
			const uint8_t *p = snap_section(&r,
			    m.sections[i].name, &n);

			if (p == NULL || n != m.sections[i].size)
				abort();
			if (n > 0)
				sink ^= p[0] ^ p[n - 1];
		}
		(void)sink;
		snap_close(&r);
	}
	snap_manifest_free(&m);
	return 0;
}
