/*
 * A "uefi" VM's NVRAM file (vm-nvram.h): made from a template, never
 * over a kept one, copied and renamed with the VM, and at start opened
 * only when it is as large as the template and a firmware volume, the
 * refusals naming the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"
#include "tap.h"
#include "vm-nvram.h"

#define SIZE	(16 * 4096)

/* A template of SIZE bytes: a firmware volume header's "_FVH" at 40. */
static int
template(const char *name, bool volume)
{
	static uint8_t buf[SIZE];
	const char *path = scratch_at(name);
	int fd;

	for (size_t i = 0; i < SIZE; i++)
		buf[i] = (uint8_t)(i * 13 + 1);
	memcpy(buf + 40, volume ? "_FVH" : "_FVX", 4);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, SIZE) != SIZE)
		tap_bail("cannot write %s", path);
	return fd;
}

int
main(void)
{
	char err[1024] = "", path[4096];
	const char *dir;
	struct stat st;
	int t, fd = -1;

	scratch_new("vm-nvram");
	dir = scratch_at("nvram");
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s", dir);
	t = template("vars.fd", true);

	tap_ok(vm_nvram_create(dir, "a", t, err, sizeof(err)) == 0,
	    "made from the template (%s)", err);
	vm_nvram_path(dir, "a", path, sizeof(path));
	tap_ok(stat(path, &st) == 0 && st.st_size == SIZE &&
	    (st.st_mode & 07777) == 0600, "%s: as large, mode 0600", path);
	err[0] = '\0';
	tap_ok(vm_nvram_create(dir, "a", t, err, sizeof(err)) == -EEXIST &&
	    strstr(err, path) != NULL && strstr(err, "remove_data") != NULL,
	    "never over a kept one: %s", err);
	tap_ok(vm_nvram_open(dir, "a", SIZE, &fd, err, sizeof(err)) == 0 &&
	    fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) &&
	    (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR,
	    "opened at start: read-write, close-on-exec (%s)", err);
	close(fd);

	tap_ok(vm_nvram_copy(dir, "a", "b", err, sizeof(err)) == 0 &&
	    vm_nvram_exists(dir, "a") && vm_nvram_exists(dir, "b"),
	    "copied (clone) (%s)", err);
	tap_ok(vm_nvram_rename(dir, "b", "c", err, sizeof(err)) == 0 &&
	    !vm_nvram_exists(dir, "b") && vm_nvram_exists(dir, "c"),
	    "renamed (%s)", err);
	tap_ok(vm_nvram_rename(dir, "none", "d", err, sizeof(err)) == 0 &&
	    !vm_nvram_exists(dir, "d"), "renaming none: nothing to do");
	err[0] = '\0';
	tap_ok(vm_nvram_rename(dir, "a", "c", err, sizeof(err)) == -EEXIST &&
	    vm_nvram_exists(dir, "a") && err[0] != '\0',
	    "never renamed over another: %s", err);
	tap_ok(vm_nvram_copy(dir, "none", "e", err, sizeof(err)) == -ENOENT &&
	    !vm_nvram_exists(dir, "e"), "copying none: %s", err);

	err[0] = '\0';
	tap_ok(vm_nvram_open(dir, "a", SIZE + 4096, &fd, err,
	    sizeof(err)) == -EINVAL && fd == -1 && strstr(err, path) != NULL,
	    "another size than the template's: refused, naming it: %s", err);
	vm_nvram_path(dir, "c", path, sizeof(path));
	if (truncate(path, 0) < 0)
		tap_bail("truncate");
	err[0] = '\0';
	tap_ok(vm_nvram_open(dir, "c", 0, &fd, err, sizeof(err)) == -EINVAL &&
	    strstr(err, "corrupt") != NULL, "an empty one: %s", err);
	close(t);
	t = template("novol.fd", false);
	tap_ok(vm_nvram_create(dir, "f", t, err, sizeof(err)) == 0,
	    "a template without a volume copies all the same");
	vm_nvram_path(dir, "f", path, sizeof(path));
	err[0] = '\0';
	tap_ok(vm_nvram_open(dir, "f", SIZE, &fd, err, sizeof(err)) ==
	    -EINVAL && strstr(err, path) != NULL &&
	    strstr(err, "corrupt") != NULL,
	    "no firmware volume: corrupt, naming it: %s", err);
	err[0] = '\0';
	tap_ok(vm_nvram_open(dir, "g", SIZE, &fd, err, sizeof(err)) ==
	    -ENOENT && strstr(err, "g.fd") != NULL, "none: %s", err);
	tap_ok(vm_nvram_path(NULL, "a", path, sizeof(path)) == -ENOENT &&
	    !vm_nvram_exists(NULL, "a"), "no directory: no path");
	close(t);
	scratch_remove();
	return tap_done();
}
