/* See create-cloud.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "create-cloud.h"
#include "vmctl.h"

/* The daemon's bounds (vmconfig.h), checked there; these only stop a
 * huge file from being read. */
#define CLOUD_USER_DATA_MAX	(32 * 1024)
#define CLOUD_KEYS_FILE_MAX	(64 * 1024)

/*
 * The whole of the file at path, at most max bytes, NUL-terminated, into
 * a new buffer: NULL after saying why (as option opt).
 */
static char *
cloud_read(struct ctl *ctl, const char *opt, const char *path, size_t max)
{
	char *buf = malloc(max + 2);
	size_t len = 0;
	ssize_t n;
	int fd;

	if (buf == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC |
	    O_NOCTTY)) < 0) {
		ctl_warnx("%s: --%s %s: %s", ctl->cmd->name, opt, path,
		    strerror(buf == NULL ? ENOMEM : errno));
		free(buf);
		return NULL;
	}
	while (len <= max && (n = read(fd, buf + len, max + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ctl_warnx("%s: --%s %s: %s", ctl->cmd->name, opt, path,
			    strerror(errno));
			close(fd);
			free(buf);
			return NULL;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (len > max || strlen(buf) != len) {
		ctl_warnx("%s: --%s %s: %s", ctl->cmd->name, opt, path,
		    len > max ? "too large" : "not text (a NUL byte)");
		free(buf);
		return NULL;
	}
	return buf;
}

static struct json_object *
cloud_object(struct json_object *args)
{
	struct json_object *ci;

	if (!json_object_object_get_ex(args, "cloud_init", &ci)) {
		ci = json_object_new_object();
		json_object_object_add(args, "cloud_init", ci);
	}
	return ci;
}

/* Every key line of the file (as in authorized_keys) into "ssh_keys". */
static int
cloud_keys(struct ctl *ctl, struct json_object *args, const char *path)
{
	struct json_object *ci = cloud_object(args), *keys;
	char *text, *line, *save = NULL;
	unsigned int n = 0;

	if ((text = cloud_read(ctl, "ssh-key", path, CLOUD_KEYS_FILE_MAX)) ==
	    NULL)
		return CTL_EXIT_FAIL;
	if (!json_object_object_get_ex(ci, "ssh_keys", &keys)) {
		keys = json_object_new_array();
		json_object_object_add(ci, "ssh_keys", keys);
	}
	for (line = strtok_r(text, "\r\n", &save); line != NULL;
	    line = strtok_r(NULL, "\r\n", &save)) {
		line += strspn(line, " \t");
		if (*line == '\0' || *line == '#')
			continue;
		json_object_array_add(keys, json_object_new_string(line));
		n++;
	}
	free(text);
	if (n == 0) {
		ctl_warnx("%s: --ssh-key %s: no key in it (a .pub file, or "
		    "lines as in authorized_keys)", ctl->cmd->name, path);
		return CTL_EXIT_FAIL;
	}
	return -1;
}

int
create_cloud_option(struct ctl *ctl, struct json_object *args, int c,
    const char *arg)
{
	char *text;

	switch (c) {
	case CREATE_CLOUD_BOOT:
		if (strcmp(arg, "disk") != 0 && strcmp(arg, "kernel") != 0)
			return ctl_usage(ctl, "--boot %s: expected disk or "
			    "kernel", arg);
		json_object_object_add(args, "boot",
		    json_object_new_string(arg));
		return -1;
	case CREATE_CLOUD_INIT:
		if ((text = cloud_read(ctl, "cloud-init", arg,
		    CLOUD_USER_DATA_MAX)) == NULL)
			return CTL_EXIT_FAIL;
		json_object_object_add(cloud_object(args), "user_data",
		    json_object_new_string(text));
		free(text);
		return -1;
	case CREATE_CLOUD_SSH_KEY:
		return cloud_keys(ctl, args, arg);
	default:
		return ctl_usage(ctl, "unknown option");
	}
}
