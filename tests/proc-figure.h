/*
 * A figure of this process from a /proc file of "Key: value kB" lines
 * (/proc/self/status, /proc/self/smaps_rollup), for the tests and
 * benchmarks that weigh what a library costs a process.
 */
#ifndef TESTS_PROC_FIGURE_H
#define TESTS_PROC_FIGURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number after key ("VmRSS:") in file, or -1. */
static inline long
proc_figure(const char *file, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(file, "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return v;
}

#endif
