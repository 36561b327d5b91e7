/*
 * worker.boot's arguments to and from struct start_params: one encoder
 * and one decoder, both in worker-msg.h's vocabulary.  The encoder's
 * field order is the link's bytes: keep it when adding a field.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "start-params.h"
#include "uuid-text.h"

void
start_params_init(struct start_params *sp)
{
	*sp = (struct start_params){
		.adopt_fd = -1,
		.kvm_fd = -1,
		.cdrom_fd = -1,
		.nvram_fd = -1,
		.boot_menu_ms = -1,
		.snap_fd = { -1, -1, -1 },
		.migrate_fd = -1,
		.started_ms = -1,
		.fs.fd = -1,
	};
}

static void
start_image_free(struct start_image *im)
{
	free(im->path);
}

void
start_params_free(struct start_params *sp)
{
	unsigned int i, k;

	free(sp->name);
	free(sp->kernel);
	free(sp->kernel_name);
	free(sp->firmware);
	free(sp->firmware_name);
	free(sp->vgabios);
	free(sp->cdrom_name);
	free(sp->nvram_name);
	free(sp->snap_name);
	free(sp->initrd);
	free(sp->initrd_name);
	free(sp->cmdline);
	free(sp->boot_disk.append);
	free(sp->console_log);
	json_object_put(sp->definition);
	for (i = 0; i < sp->ndisks; i++) {
		start_image_free(&sp->disks[i].top);
		free(sp->disks[i].serial);
		for (k = 0; k < sp->disks[i].nbacking; k++)
			start_image_free(&sp->disks[i].backing[k]);
	}
	for (i = 0; i < sp->nnics; i++)
		free(sp->nics[i].passt);
	free(sp->fs.virtiofsd);
	free(sp->display.listen);
	free(sp->display.web_dir);
	explicit_bzero(sp->display.password, sizeof(sp->display.password));
	free(sp->seed.hostname);
	free(sp->seed.user_data);
	free(sp->seed.network_config);
	for (i = 0; i < sp->seed.nkeys; i++)
		free(sp->seed.ssh_keys[i]);
	start_params_init(sp);
}

int
start_params_set(char **dst, const char *s)
{
	char *copy = NULL;

	if (s != NULL && (copy = strdup(s)) == NULL)
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

/* Encoding ------------------------------------------------------------- */

static const char *
start_format_name(enum start_format f)
{
	return f == START_FORMAT_QCOW2 ? "qcow2" : f == START_FORMAT_NBD ?
	    "nbd" : f == START_FORMAT_RBD ? "rbd" : "raw";
}

/*
 * A new object, added to arr (NULL: out of memory).  The caller's rc
 * collects the failures of what it puts into it.
 */
static struct json_object *
start_enc_entry(struct json_object *arr)
{
	struct json_object *o = json_object_new_object();

	if (o != NULL && json_object_array_add(arr, o) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int
start_enc_image(struct json_object *o, enum wmsg_field fd,
    enum wmsg_field path, enum wmsg_field format,
    const struct start_image *im)
{
	int rc;

	/* One statement each: the fields' order is the link's bytes. */
	rc = wmsg_put_int(o, fd, im->fd);
	rc |= wmsg_put_str(o, path, im->path);
	rc |= wmsg_put_str(o, format, start_format_name(im->format));
	return rc;
}

static int
start_enc_disk(struct json_object *o, const struct start_disk *d)
{
	struct json_object *arr, *b;
	int rc;

	rc = wmsg_put_int(o, WMSG_DISK_FD, d->top.fd);
	rc |= wmsg_put_str(o, WMSG_DISK_PATH, d->top.path);
	rc |= wmsg_put_bool(o, WMSG_DISK_READONLY, d->readonly);
	if (d->sata)
		rc |= wmsg_put_bool(o, WMSG_DISK_SATA, true);
	if (d->break_lock)
		rc |= wmsg_put_bool(o, WMSG_DISK_BREAK_LOCK, true);
	rc |= wmsg_put_str(o, WMSG_DISK_SERIAL, d->serial);
	rc |= wmsg_put_str(o, WMSG_DISK_FORMAT,
	    start_format_name(d->top.format));
	if (d->nbacking == 0)
		return rc;
	if ((arr = json_object_new_array()) == NULL)
		return -ENOMEM;
	rc |= wmsg_put(o, WMSG_DISK_BACKING, arr);
	for (unsigned int k = 0; k < d->nbacking; k++) {
		if ((b = start_enc_entry(arr)) == NULL)
			return -ENOMEM;
		rc |= start_enc_image(b, WMSG_BACKING_FD, WMSG_BACKING_PATH,
		    WMSG_BACKING_FORMAT, &d->backing[k]);
	}
	return rc;
}

static void
start_mac_text(const uint8_t m[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
	    m[3], m[4], m[5]);
}

static int
start_enc_nic(struct json_object *o, const struct start_nic *n)
{
	struct json_object *fw, *f;
	char mac[18];
	int rc;

	start_mac_text(n->mac, mac);
	rc = wmsg_put_str(o, WMSG_NET_MAC, mac);
	if (!n->user) {
		rc |= wmsg_put_int(o, WMSG_NET_FD, n->tap_fd);
		rc |= wmsg_put_str(o, WMSG_NET_TAP, n->tap);
		return rc;
	}
	if ((fw = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < n->nforward; i++) {
		const struct start_forward *v = &n->forward[i];

		if ((f = start_enc_entry(fw)) == NULL) {
			json_object_put(fw);
			return -ENOMEM;
		}
		rc |= wmsg_put_str(f, WMSG_FWD_PROTO, v->udp ? "udp" : "tcp");
		if (v->addr[0] != '\0')
			rc |= wmsg_put_str(f, WMSG_FWD_ADDR, v->addr);
		rc |= wmsg_put_int(f, WMSG_FWD_HOST_PORT, v->host_port);
		rc |= wmsg_put_int(f, WMSG_FWD_GUEST_PORT, v->guest_port);
	}
	rc |= wmsg_put_bool(o, WMSG_NET_USER, true);
	rc |= wmsg_put_str(o, WMSG_NET_PASST, n->passt);
	rc |= wmsg_put(o, WMSG_NET_FORWARD, fw);
	return rc;
}

static int
start_enc_display(struct json_object *o, const struct start_display *d)
{
	int rc;

	rc = wmsg_put_str(o, WMSG_DISPLAY_LISTEN, d->listen);
	rc |= wmsg_put_int(o, WMSG_DISPLAY_PORT, d->port);
	if (d->password[0] != '\0')
		rc |= wmsg_put_str(o, WMSG_DISPLAY_PASSWORD, d->password);
	rc |= wmsg_put_int(o, WMSG_DISPLAY_WIDTH, d->width);
	rc |= wmsg_put_int(o, WMSG_DISPLAY_HEIGHT, d->height);
	if (d->web_dir != NULL) {
		rc |= wmsg_put_int(o, WMSG_DISPLAY_HTTP_PORT, d->http_port);
		rc |= wmsg_put_str(o, WMSG_DISPLAY_WEB_DIR, d->web_dir);
	}
	return rc;
}

static int
start_enc_seed(struct json_object *o, const struct start_seed *s)
{
	struct json_object *keys, *k;
	int rc;

	rc = wmsg_put_str(o, WMSG_SEED_HOSTNAME, s->hostname);
	rc |= wmsg_put_str(o, WMSG_SEED_USER_DATA, s->user_data);
	rc |= wmsg_put_str(o, WMSG_SEED_NETWORK, s->network_config);
	if (s->nkeys == 0)
		return rc;
	if ((keys = json_object_new_array()) == NULL)
		return -ENOMEM;
	rc |= wmsg_put(o, WMSG_SEED_KEYS, keys);
	for (unsigned int i = 0; i < s->nkeys; i++) {
		if ((k = start_enc_entry(keys)) == NULL)
			return -ENOMEM;
		rc |= wmsg_put_str(k, WMSG_KEY_TEXT, s->ssh_keys[i]);
	}
	return rc;
}

/* A part of worker.boot: an object, or an array (arr) of n entries. */
static int
start_enc_part(struct json_object *args, enum wmsg_field f, bool arr,
    const void *part, size_t size, unsigned int n,
    int (*enc)(struct json_object *, const void *))
{
	struct json_object *o = arr ? json_object_new_array() :
	    json_object_new_object(), *e;
	int rc;

	if (o == NULL)
		return -ENOMEM;
	if ((rc = wmsg_put(args, f, o)) != 0)
		return rc;
	if (!arr)
		return enc(o, part);
	for (unsigned int i = 0; i < n; i++) {
		if ((e = start_enc_entry(o)) == NULL)
			return -ENOMEM;
		rc |= enc(e, (const char *)part + i * size);
	}
	return rc;
}

/* The parts' encoders, as start_enc_part() calls them. */
static int
start_enc_disk_v(struct json_object *o, const void *p)
{
	return start_enc_disk(o, p);
}

static int
start_enc_nic_v(struct json_object *o, const void *p)
{
	return start_enc_nic(o, p);
}

static int
start_enc_display_v(struct json_object *o, const void *p)
{
	return start_enc_display(o, p);
}

static int
start_enc_seed_v(struct json_object *o, const void *p)
{
	return start_enc_seed(o, p);
}

static int
start_enc_boot_disk_v(struct json_object *o, const void *p)
{
	const struct start_boot_disk *b = p;
	int rc;

	rc = wmsg_put_int(o, WMSG_FROM_DISK_INDEX, b->disk);
	rc |= wmsg_put_str(o, WMSG_FROM_DISK_APPEND, b->append);
	return rc;
}

static int
start_enc_vsock_v(struct json_object *o, const void *p)
{
	const struct start_vsock *v = p;
	int rc;

	rc = wmsg_put_int(o, WMSG_VSOCK_FD, v->fd);
	rc |= wmsg_put_int(o, WMSG_VSOCK_CID, v->cid);
	return rc;
}

static int
start_enc_fs_v(struct json_object *o, const void *p)
{
	const struct start_fs *f = p;
	int rc;

	rc = wmsg_put_str(o, WMSG_FS_TAG, f->tag);
	rc |= wmsg_put_int(o, WMSG_FS_FD, f->fd);
	if (f->socket)
		rc |= wmsg_put_bool(o, WMSG_FS_SOCKET, true);
	if (f->readonly)
		rc |= wmsg_put_bool(o, WMSG_FS_READONLY, true);
	if (f->virtiofsd != NULL)
		rc |= wmsg_put_str(o, WMSG_FS_VIRTIOFSD, f->virtiofsd);
	return rc;
}

int
start_params_encode(const struct start_params *sp, struct json_object **out)
{
	struct json_object *a;
	int rc;

	if ((a = json_object_new_object()) == NULL)
		return -ENOMEM;
	rc = wmsg_put_str(a, WMSG_BOOT_NAME, sp->name);
	if (sp->has_boot_disk)
		rc |= start_enc_part(a, WMSG_BOOT_FROM_DISK, false,
		    &sp->boot_disk, 0, 1, start_enc_boot_disk_v);
	rc |= wmsg_put_str(a, WMSG_BOOT_KERNEL, sp->kernel);
	rc |= wmsg_put_str(a, WMSG_BOOT_KERNEL_NAME, sp->kernel_name);
	rc |= wmsg_put_str(a, WMSG_BOOT_FIRMWARE, sp->firmware);
	rc |= wmsg_put_str(a, WMSG_BOOT_FIRMWARE_NAME, sp->firmware_name);
	rc |= wmsg_put_str(a, WMSG_BOOT_VGABIOS, sp->vgabios);
	if (sp->has_seed)
		rc |= start_enc_part(a, WMSG_BOOT_SEED, false, &sp->seed, 0, 1,
		    start_enc_seed_v);
	rc |= wmsg_put_str(a, WMSG_BOOT_INITRD, sp->initrd);
	rc |= wmsg_put_str(a, WMSG_BOOT_INITRD_NAME, sp->initrd_name);
	rc |= wmsg_put_str(a, WMSG_BOOT_CMDLINE, sp->cmdline);
	rc |= wmsg_put_int(a, WMSG_BOOT_MEMORY_MIB, (int64_t)sp->memory_mib);
	rc |= wmsg_put_int(a, WMSG_BOOT_VCPUS, sp->vcpus);
	if (sp->has_uuid) {
		char uuid[UUID_TEXT_LEN + 1];

		uuid_text_format(sp->uuid, uuid);
		rc |= wmsg_put_str(a, WMSG_BOOT_UUID, uuid);
	}
	rc |= wmsg_put_str(a, WMSG_BOOT_ON_REBOOT,
	    sp->on_reboot == START_REBOOT_STOP ? "stop" : "restart");
	rc |= wmsg_put_str(a, WMSG_BOOT_LOST_TICKS,
	    sp->lost_ticks == START_TICKS_DISCARD ? "discard" : "slew");
	if (sp->rtc_backlog_max != 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_RTC_BACKLOG_MAX,
		    sp->rtc_backlog_max);
	if (sp->rtc_slices != 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_RTC_SLICES, sp->rtc_slices);
	rc |= wmsg_put_str(a, WMSG_BOOT_CONSOLE_LOG, sp->console_log);
	if (sp->rng)
		rc |= wmsg_put_bool(a, WMSG_BOOT_RNG, true);
	if (sp->balloon)
		rc |= wmsg_put_bool(a, WMSG_BOOT_BALLOON, true);
	if (sp->ndisks > 0)
		rc |= start_enc_part(a, WMSG_BOOT_DISKS, true, sp->disks,
		    sizeof(sp->disks[0]), sp->ndisks, start_enc_disk_v);
	rc |= wmsg_put_int(a, WMSG_BOOT_CONSOLE_LOG_MAX, sp->console_log_max);
	if (sp->adopt_fd >= 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_ADOPT_FD, sp->adopt_fd);
	if (sp->kvm_fd >= 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_KVM_FD, sp->kvm_fd);
	if (sp->cdrom_fd >= 0) {
		rc |= wmsg_put_int(a, WMSG_BOOT_CDROM_FD, sp->cdrom_fd);
		rc |= wmsg_put_str(a, WMSG_BOOT_CDROM_NAME, sp->cdrom_name);
	}
	if (sp->nboot_order > 0) {
		char text[BOOT_ORDER_TEXT_MAX];

		if (boot_order_text(sp->boot_order, sp->nboot_order, text,
		    sizeof(text)) < 0)
			rc |= -EINVAL;
		else
			rc |= wmsg_put_str(a, WMSG_BOOT_ORDER, text);
	}
	if (sp->boot_menu_ms >= 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_MENU_MS, sp->boot_menu_ms);
	if (sp->nvram_fd >= 0) {
		rc |= wmsg_put_int(a, WMSG_BOOT_NVRAM_FD, sp->nvram_fd);
		rc |= wmsg_put_str(a, WMSG_BOOT_NVRAM_NAME, sp->nvram_name);
	}
	if (sp->snap_fd[0] >= 0) {
		rc |= wmsg_put_int(a, WMSG_BOOT_SNAP_MANIFEST_FD,
		    sp->snap_fd[0]);
		rc |= wmsg_put_int(a, WMSG_BOOT_SNAP_MEMORY_FD,
		    sp->snap_fd[1]);
		rc |= wmsg_put_int(a, WMSG_BOOT_SNAP_STATE_FD, sp->snap_fd[2]);
		rc |= wmsg_put_str(a, WMSG_BOOT_SNAP_NAME, sp->snap_name);
	}
	if (sp->migrate_fd >= 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_MIGRATE_FD, sp->migrate_fd);
	rc |= wmsg_put_int(a, WMSG_BOOT_LOG_START, sp->log_start);
	if (sp->started_ms >= 0)
		rc |= wmsg_put_int(a, WMSG_BOOT_STARTED_MS, sp->started_ms);
	rc |= wmsg_put(a, WMSG_BOOT_DEFINITION, json_object_get(
	    sp->definition));
	if (sp->nnics > 0)
		rc |= start_enc_part(a, WMSG_BOOT_NET, true, sp->nics,
		    sizeof(sp->nics[0]), sp->nnics, start_enc_nic_v);
	if (sp->has_display)
		rc |= start_enc_part(a, WMSG_BOOT_DISPLAY, false, &sp->display,
		    0, 1, start_enc_display_v);
	if (sp->has_vsock)
		rc |= start_enc_part(a, WMSG_BOOT_VSOCK, false, &sp->vsock, 0,
		    1, start_enc_vsock_v);
	if (sp->has_fs)
		rc |= start_enc_part(a, WMSG_BOOT_FS, false, &sp->fs, 0, 1,
		    start_enc_fs_v);
	/* Where the start's time goes (vm.info's "start"). */
	rc |= wmsg_put_int(a, WMSG_BOOT_REQUEST_NS, sp->request_ns);
	rc |= wmsg_put_int(a, WMSG_BOOT_SPAWN_NS, sp->spawn_ns);
	if (rc != 0) {
		json_object_put(a);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

/* Decoding ------------------------------------------------------------- */

struct start_dec {
	char *err;
	size_t errlen;
	int rc;			/* the first failure */
};

static void __attribute__((format(printf, 3, 4)))
start_dec_fail(struct start_dec *dc, int rc, const char *fmt, ...)
{
	va_list ap;

	if (dc->rc != 0)
		return;
	dc->rc = rc;
	va_start(ap, fmt);
	vsnprintf(dc->err, dc->errlen, fmt, ap);
	va_end(ap);
}

/* A string field of o, copied into *dst (absent: dflt). */
static void
start_dec_str(struct start_dec *dc, struct json_object *o, enum wmsg_field f,
    const char *dflt, char **dst)
{
	if (start_params_set(dst, wmsg_str(o, f, dflt)) < 0)
		start_dec_fail(dc, -ENOMEM, "out of memory");
}

/* A string field of o into buf (its bound, checked, fits size). */
static void
start_dec_buf(struct json_object *o, enum wmsg_field f, char *buf,
    size_t size)
{
	snprintf(buf, size, "%s", wmsg_str(o, f, ""));
}

static enum start_format
start_dec_format(struct json_object *o, enum wmsg_field f)
{
	const char *s = wmsg_str(o, f, "raw");

	return strcmp(s, "qcow2") == 0 ? START_FORMAT_QCOW2 :
	    strcmp(s, "nbd") == 0 ? START_FORMAT_NBD :
	    strcmp(s, "rbd") == 0 ? START_FORMAT_RBD : START_FORMAT_RAW;
}

/* An ARRAY field's entries (bounded by its shape), or 0. */
static unsigned int
start_dec_count(struct json_object *o, enum wmsg_field f)
{
	struct json_object *arr = wmsg_get(o, f);

	return arr != NULL ? (unsigned int)json_object_array_length(arr) : 0;
}

static struct json_object *
start_dec_entry(struct json_object *o, enum wmsg_field f, unsigned int i)
{
	return json_object_array_get_idx(wmsg_get(o, f), i);
}

static void
start_dec_disk(struct start_dec *dc, struct json_object *o,
    struct start_disk *d)
{
	struct json_object *b;

	d->top.fd = (int)wmsg_int(o, WMSG_DISK_FD, -1);
	d->top.format = start_dec_format(o, WMSG_DISK_FORMAT);
	start_dec_str(dc, o, WMSG_DISK_PATH, NULL, &d->top.path);
	d->readonly = wmsg_bool(o, WMSG_DISK_READONLY, false);
	d->sata = wmsg_bool(o, WMSG_DISK_SATA, false);
	d->break_lock = wmsg_bool(o, WMSG_DISK_BREAK_LOCK, false);
	if (d->break_lock && d->top.format != START_FORMAT_RBD)
		start_dec_fail(dc, -EINVAL, "break_lock: only an RBD disk "
		    "has a lock to break");
	start_dec_str(dc, o, WMSG_DISK_SERIAL, NULL, &d->serial);
	for (unsigned int k = 0; k < start_dec_count(o, WMSG_DISK_BACKING);
	    k++) {
		struct start_image *im = &d->backing[d->nbacking++];

		b = start_dec_entry(o, WMSG_DISK_BACKING, k);
		im->fd = (int)wmsg_int(b, WMSG_BACKING_FD, -1);
		im->format = start_dec_format(b, WMSG_BACKING_FORMAT);
		if (im->format == START_FORMAT_NBD ||
		    d->top.format == START_FORMAT_NBD ||
		    im->format == START_FORMAT_RBD ||
		    d->top.format == START_FORMAT_RBD)
			start_dec_fail(dc, -EINVAL, "a network disk has no "
			    "backing files");
		start_dec_str(dc, b, WMSG_BACKING_PATH, NULL, &im->path);
	}
}

static void
start_dec_nic(struct start_dec *dc, struct json_object *o,
    struct start_nic *n)
{
	struct json_object *f;

	n->tap_fd = -1;
	if (proto_parse_mac(wmsg_str(o, WMSG_NET_MAC, ""), n->mac) < 0 ||
	    (n->mac[0] & 1))
		start_dec_fail(dc, -EINVAL, "net: mac: expected a unicast "
		    "address as xx:xx:xx:xx:xx:xx");
	n->user = wmsg_bool(o, WMSG_NET_USER, false);
	if (!n->user) {
		if (wmsg_get(o, WMSG_NET_FD) == NULL ||
		    wmsg_get(o, WMSG_NET_TAP) == NULL)
			start_dec_fail(dc, -EINVAL, "net: a TAP (fd, tap) or "
			    "user-mode networking (user)");
		n->tap_fd = (int)wmsg_int(o, WMSG_NET_FD, -1);
		start_dec_buf(o, WMSG_NET_TAP, n->tap, sizeof(n->tap));
		return;
	}
	start_dec_str(dc, o, WMSG_NET_PASST, "passt", &n->passt);
	for (unsigned int k = 0; k < start_dec_count(o, WMSG_NET_FORWARD);
	    k++) {
		struct start_forward *v = &n->forward[n->nforward++];

		f = start_dec_entry(o, WMSG_NET_FORWARD, k);
		v->udp = strcmp(wmsg_str(f, WMSG_FWD_PROTO, "tcp"), "udp") == 0;
		start_dec_buf(f, WMSG_FWD_ADDR, v->addr, sizeof(v->addr));
		v->host_port = (uint16_t)wmsg_int(f, WMSG_FWD_HOST_PORT, 0);
		v->guest_port = (uint16_t)wmsg_int(f, WMSG_FWD_GUEST_PORT, 0);
	}
}

static void
start_dec_display(struct start_dec *dc, struct json_object *o,
    struct start_display *d)
{
	start_dec_str(dc, o, WMSG_DISPLAY_LISTEN, NULL, &d->listen);
	d->port = (int)wmsg_int(o, WMSG_DISPLAY_PORT, 0);
	start_dec_buf(o, WMSG_DISPLAY_PASSWORD, d->password,
	    sizeof(d->password));
	d->width = (uint32_t)wmsg_int(o, WMSG_DISPLAY_WIDTH, 1024);
	d->height = (uint32_t)wmsg_int(o, WMSG_DISPLAY_HEIGHT, 768);
	d->http_port = (int)wmsg_int(o, WMSG_DISPLAY_HTTP_PORT, 0);
	start_dec_str(dc, o, WMSG_DISPLAY_WEB_DIR, NULL, &d->web_dir);
}

static void
start_dec_seed(struct start_dec *dc, struct json_object *o,
    struct start_seed *s)
{
	start_dec_str(dc, o, WMSG_SEED_HOSTNAME, NULL, &s->hostname);
	start_dec_str(dc, o, WMSG_SEED_USER_DATA, NULL, &s->user_data);
	start_dec_str(dc, o, WMSG_SEED_NETWORK, NULL, &s->network_config);
	for (unsigned int i = 0; i < start_dec_count(o, WMSG_SEED_KEYS); i++)
		start_dec_str(dc, start_dec_entry(o, WMSG_SEED_KEYS, i),
		    WMSG_KEY_TEXT, NULL, &s->ssh_keys[s->nkeys++]);
}

/* What the shape cannot say about o as a whole. */
static void
start_dec_whole(struct start_dec *dc, const struct start_params *sp)
{
	if ((sp->kernel != NULL) + sp->has_boot_disk +
	    (sp->firmware != NULL) != 1)
		start_dec_fail(dc, -EINVAL, "a kernel, boot_disk or "
		    "firmware, one of them");
	if (sp->vgabios != NULL && (sp->firmware == NULL || !sp->has_display))
		start_dec_fail(dc, -EINVAL, "vgabios: only with firmware and "
		    "a display");
	if ((sp->nboot_order > 0 || sp->boot_menu_ms >= 0) &&
	    sp->firmware == NULL)
		start_dec_fail(dc, -EINVAL, "boot_order, boot_menu_ms: only "
		    "with firmware");
	if (sp->has_boot_disk && sp->boot_disk.disk >= sp->ndisks)
		start_dec_fail(dc, -EINVAL, "boot: no disk %u to boot from",
		    sp->boot_disk.disk);
}

int
start_params_decode(struct json_object *o, struct start_params *sp,
    char *err, size_t errlen)
{
	struct start_dec dc = { .err = err, .errlen = errlen };
	struct json_object *p;
	unsigned int i;

	start_params_init(sp);
	if (wmsg_check(WMSG_S_BOOT, o, err, errlen) < 0)
		return -EINVAL;
	start_dec_str(&dc, o, WMSG_BOOT_NAME, NULL, &sp->name);
	start_dec_str(&dc, o, WMSG_BOOT_KERNEL, NULL, &sp->kernel);
	start_dec_str(&dc, o, WMSG_BOOT_KERNEL_NAME, NULL, &sp->kernel_name);
	start_dec_str(&dc, o, WMSG_BOOT_FIRMWARE, NULL, &sp->firmware);
	start_dec_str(&dc, o, WMSG_BOOT_FIRMWARE_NAME, NULL,
	    &sp->firmware_name);
	start_dec_str(&dc, o, WMSG_BOOT_VGABIOS, NULL, &sp->vgabios);
	start_dec_str(&dc, o, WMSG_BOOT_INITRD, NULL, &sp->initrd);
	start_dec_str(&dc, o, WMSG_BOOT_INITRD_NAME, NULL, &sp->initrd_name);
	start_dec_str(&dc, o, WMSG_BOOT_CMDLINE, NULL, &sp->cmdline);
	sp->memory_mib = (uint64_t)wmsg_int(o, WMSG_BOOT_MEMORY_MIB, 0);
	sp->vcpus = (unsigned int)wmsg_int(o, WMSG_BOOT_VCPUS, 0);
	if (wmsg_str(o, WMSG_BOOT_UUID, NULL) != NULL) {
		sp->has_uuid = uuid_text_parse(wmsg_str(o, WMSG_BOOT_UUID,
		    NULL), sp->uuid);
		if (!sp->has_uuid)
			start_dec_fail(&dc, -EINVAL, "uuid: not a UUID");
	}
	sp->on_reboot = strcmp(wmsg_str(o, WMSG_BOOT_ON_REBOOT, "restart"),
	    "stop") == 0 ? START_REBOOT_STOP : START_REBOOT_RESTART;
	sp->lost_ticks = strcmp(wmsg_str(o, WMSG_BOOT_LOST_TICKS, "slew"),
	    "discard") == 0 ? START_TICKS_DISCARD : START_TICKS_SLEW;
	sp->rtc_backlog_max = (unsigned int)wmsg_int(o,
	    WMSG_BOOT_RTC_BACKLOG_MAX, 0);
	sp->rtc_slices = (unsigned int)wmsg_int(o, WMSG_BOOT_RTC_SLICES, 0);
	sp->rng = wmsg_bool(o, WMSG_BOOT_RNG, false);
	sp->balloon = wmsg_bool(o, WMSG_BOOT_BALLOON, false);
	start_dec_str(&dc, o, WMSG_BOOT_CONSOLE_LOG, NULL, &sp->console_log);
	sp->console_log_max = wmsg_int(o, WMSG_BOOT_CONSOLE_LOG_MAX, 0);
	sp->adopt_fd = (int)wmsg_int(o, WMSG_BOOT_ADOPT_FD, -1);
	sp->kvm_fd = (int)wmsg_int(o, WMSG_BOOT_KVM_FD, -1);
	sp->cdrom_fd = (int)wmsg_int(o, WMSG_BOOT_CDROM_FD, -1);
	start_dec_str(&dc, o, WMSG_BOOT_CDROM_NAME, NULL, &sp->cdrom_name);
	if (boot_order_parse(wmsg_str(o, WMSG_BOOT_ORDER, ""), sp->boot_order,
	    &sp->nboot_order) < 0)
		start_dec_fail(&dc, -EINVAL, "boot_order: '%.40s' is not a "
		    "list of boot devices", wmsg_str(o, WMSG_BOOT_ORDER, ""));
	sp->boot_menu_ms = (int)wmsg_int(o, WMSG_BOOT_MENU_MS, -1);
	sp->nvram_fd = (int)wmsg_int(o, WMSG_BOOT_NVRAM_FD, -1);
	start_dec_str(&dc, o, WMSG_BOOT_NVRAM_NAME, NULL, &sp->nvram_name);
	sp->snap_fd[0] = (int)wmsg_int(o, WMSG_BOOT_SNAP_MANIFEST_FD, -1);
	sp->snap_fd[1] = (int)wmsg_int(o, WMSG_BOOT_SNAP_MEMORY_FD, -1);
	sp->snap_fd[2] = (int)wmsg_int(o, WMSG_BOOT_SNAP_STATE_FD, -1);
	start_dec_str(&dc, o, WMSG_BOOT_SNAP_NAME, NULL, &sp->snap_name);
	sp->migrate_fd = (int)wmsg_int(o, WMSG_BOOT_MIGRATE_FD, -1);
	sp->log_start = wmsg_int(o, WMSG_BOOT_LOG_START, 0);
	sp->started_ms = wmsg_int(o, WMSG_BOOT_STARTED_MS, -1);
	sp->request_ns = wmsg_int(o, WMSG_BOOT_REQUEST_NS, 0);
	sp->spawn_ns = wmsg_int(o, WMSG_BOOT_SPAWN_NS, 0);
	sp->definition = json_object_get(wmsg_get(o, WMSG_BOOT_DEFINITION));
	for (i = 0; i < start_dec_count(o, WMSG_BOOT_DISKS); i++)
		start_dec_disk(&dc, start_dec_entry(o, WMSG_BOOT_DISKS, i),
		    &sp->disks[sp->ndisks++]);
	for (i = 0; i < start_dec_count(o, WMSG_BOOT_NET); i++)
		start_dec_nic(&dc, start_dec_entry(o, WMSG_BOOT_NET, i),
		    &sp->nics[sp->nnics++]);
	if ((p = wmsg_get(o, WMSG_BOOT_DISPLAY)) != NULL) {
		sp->has_display = true;
		start_dec_display(&dc, p, &sp->display);
	}
	if ((p = wmsg_get(o, WMSG_BOOT_VSOCK)) != NULL) {
		sp->has_vsock = true;
		sp->vsock.fd = (int)wmsg_int(p, WMSG_VSOCK_FD, -1);
		sp->vsock.cid = (uint32_t)wmsg_int(p, WMSG_VSOCK_CID, 0);
	}
	if ((p = wmsg_get(o, WMSG_BOOT_FS)) != NULL) {
		sp->has_fs = true;
		start_dec_buf(p, WMSG_FS_TAG, sp->fs.tag, sizeof(sp->fs.tag));
		sp->fs.fd = (int)wmsg_int(p, WMSG_FS_FD, -1);
		sp->fs.socket = wmsg_bool(p, WMSG_FS_SOCKET, false);
		sp->fs.readonly = wmsg_bool(p, WMSG_FS_READONLY, false);
		start_dec_str(&dc, p, WMSG_FS_VIRTIOFSD, NULL,
		    &sp->fs.virtiofsd);
	}
	if ((p = wmsg_get(o, WMSG_BOOT_FROM_DISK)) != NULL) {
		sp->has_boot_disk = true;
		sp->boot_disk.disk = (unsigned int)wmsg_int(p,
		    WMSG_FROM_DISK_INDEX, 0);
		start_dec_str(&dc, p, WMSG_FROM_DISK_APPEND, NULL,
		    &sp->boot_disk.append);
	}
	if ((p = wmsg_get(o, WMSG_BOOT_SEED)) != NULL) {
		sp->has_seed = true;
		start_dec_seed(&dc, p, &sp->seed);
	}
	start_dec_whole(&dc, sp);
	if (dc.rc != 0)
		start_params_free(sp);
	return dc.rc;
}
