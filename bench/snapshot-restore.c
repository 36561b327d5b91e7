/*
 * What restoring a snapshot's RAM costs (daemon/snapshot): guests of
 * 256 MiB and 1 GiB that wrote few pages (1024 pages of 4 KiB, spread
 * evenly), restored by mapping the memory file copy-on-write and by
 * reading its data extents into fresh anonymous memory; each beside the
 * anonymous mapping a start makes, and followed by the guest's first
 * read of every written page (where the mapping pays its page faults).
 * Median of 7 rounds, the page cache warm (the snapshot was just
 * written): a cold cache adds the disk's reads to both ways.
 *
 *   ninja -C build bench-snapshot-restore
 *   build/bench/snapshot-restore [DIR]     (default $TMPDIR or /var/tmp)
 *
 * No KVM: the library's cost alone, in this process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "snap-file.h"

#define ROUNDS		7
#define DIRTY_PAGES	1024

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp_double);
	return v[ROUNDS / 2];
}

static void *
anon(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* The guest reading each page it had written: a checksum, kept. */
static unsigned
touch(const uint8_t *ram, uint64_t size)
{
	uint64_t step = size / DIRTY_PAGES, i;
	unsigned sum = 0;

	for (i = 0; i < DIRTY_PAGES; i++)
		sum += ram[i * step + 7];
	return sum;
}

static void
bench(const char *base, uint64_t mib)
{
	uint64_t size = mib << 20, step = size / DIRTY_PAGES, i;
	double t_anon[ROUNDS], t_map[ROUNDS], t_mapt[ROUNDS];
	double t_read[ROUNDS], t_readt[ROUNDS], t_write[ROUNDS];
	struct snap_region region = { 0, size, NULL };
	struct snap_write_args a = { .vmmd_version = VERSION,
	    .regions = &region, .nregions = 1 };
	char dir[512], path[600], err[256];
	uint8_t *ram = anon(size);
	static const char *const files[] = { "manifest.json", "memory",
	    "state" };
	unsigned expect, got = 0;
	size_t f;
	int r;

	a.definition = json_object_new_object();
	for (i = 0; i < DIRTY_PAGES; i++)
		memset(ram + i * step, (int)(i % 251) + 1, 4096);
	expect = touch(ram, size);
	region.host = ram;
	for (r = 0; r < ROUNDS; r++) {
		struct snap_reader rd;
		uint8_t *g;
		double t0;

		snprintf(dir, sizeof(dir), "%s/vmmd-bench-snap-%d-%d", base,
		    (int)getpid(), r);
		t0 = now_ms();
		if (snap_write(dir, &a, err, sizeof(err)) < 0) {
			fprintf(stderr, "snap_write: %s\n", err);
			exit(1);
		}
		t_write[r] = now_ms() - t0;

		t0 = now_ms();
		g = anon(size);
		t_anon[r] = now_ms() - t0;
		munmap(g, size);

		t0 = now_ms();
		g = anon(size);
		if (snap_open(&rd, dir, &region, 1, err, sizeof(err)) < 0 ||
		    snap_restore_memory(&rd, 0, g, true, err,
		    sizeof(err)) < 0) {
			fprintf(stderr, "map: %s\n", err);
			exit(1);
		}
		t_map[r] = now_ms() - t0;
		t0 = now_ms();
		got = touch(g, size);
		t_mapt[r] = now_ms() - t0;
		snap_close(&rd);
		munmap(g, size);
		if (got != expect) {
			fprintf(stderr, "mapped RAM differs\n");
			exit(1);
		}

		t0 = now_ms();
		g = anon(size);
		if (snap_open(&rd, dir, &region, 1, err, sizeof(err)) < 0 ||
		    snap_restore_memory(&rd, 0, g, false, err,
		    sizeof(err)) < 0) {
			fprintf(stderr, "read: %s\n", err);
			exit(1);
		}
		t_read[r] = now_ms() - t0;
		t0 = now_ms();
		got = touch(g, size);
		t_readt[r] = now_ms() - t0;
		snap_close(&rd);
		munmap(g, size);
		if (got != expect) {
			fprintf(stderr, "read RAM differs\n");
			exit(1);
		}

		for (f = 0; f < 3; f++) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
			unlink(path);
		}
		rmdir(dir);
	}
	printf("%5llu MiB, %d pages written:  write %8.2f ms | start (anon "
	    "mmap) %6.3f ms | map %6.3f ms + first touch %6.3f ms | read "
	    "%7.2f ms + first touch %6.3f ms\n", (unsigned long long)mib,
	    DIRTY_PAGES, median(t_write), median(t_anon), median(t_map),
	    median(t_mapt), median(t_read), median(t_readt));
	json_object_put(a.definition);
	munmap(ram, size);
}

int
main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : getenv("TMPDIR");

	if (base == NULL)
		base = "/var/tmp";
	printf("# snapshot RAM restore, median of %d rounds, in %s (warm "
	    "page cache)\n", ROUNDS, base);
	bench(base, 256);
	bench(base, 1024);
	return 0;
}
