/*
 * The supervisor's requests to the worker: one table entry and one
 * handler each.  Every request gets exactly one reply on the link.  A
 * request that passes a client connection and gets an error reply has
 * had nothing written to that connection: the supervisor may answer
 * the client itself.
 *
 * Requests also come after the guest is gone (w->ended), those queued
 * when the loop ended: the console still attaches, for the last output;
 * what needs the machine says it has stopped.
 */
#include <assert.h>
#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot-dev.h"
#include "cloud-boot.h"
#include "fd-claim.h"
#include "fs-share.h"
#include "guest.h"
#include "info.h"
#include "guest-metrics.h"
#include "kvm.h"
#include "nbd-addr.h"
#include "nbd-redial.h"
#include "rbd-disk.h"
#include "log.h"
#include "proto.h"
#include "requests.h"
#include "migrate-in.h"
#include "migrate-out.h"
#include "restore.h"
#include "rtc.h"
#include "stats.h"
#include "shutdown.h"
#include "snapshot.h"
#include "start-params.h"
#include "test-hook.h"
#include "user-net.h"
#include "worker-msg.h"

#define WORKER_SHUTDOWN_TIMEOUT_DEFAULT	30	/* seconds */

struct worker_request {
	struct worker *w;
	struct json_object *id;
	struct json_object *args;
	int fd;			/* passed descriptor, or -1 */
	int fd2;		/* the second of a request taking two */
};

typedef struct json_object *(*worker_handler)(struct worker_request *r);

static struct json_object *
worker_error(struct worker_request *r, enum proto_error e, const char *desc)
{
	return proto_error(r->id, e, "%s", desc);
}

static struct json_object *
worker_ok(struct worker_request *r, struct json_object *ret)
{
	return proto_reply(r->id, ret);
}

/* The display's part of the start, as the display takes it. */
static struct display_config
worker_display_config(const struct start_display *d)
{
	return (struct display_config){
		.listen = d->listen,
		.port = d->port,
		.password = d->password[0] != '\0' ? d->password : NULL,
		.width = d->width,
		.height = d->height,
		.http_port = d->http_port,
		.web_dir = d->web_dir,
	};
}

_Static_assert(WMSG_BACKING_MAX + 1 <= BLK_IMAGE_MAX_CHAIN,
    "worker.boot's backing chains are longer than the images open");

static enum blk_image_format
worker_format(enum start_format f)
{
	return f == START_FORMAT_QCOW2 ? BLK_IMAGE_QCOW2 : BLK_IMAGE_RAW;
}

/*
 * One of the start's disks as a chain: its descriptors, top image
 * first, each with its format, into fds and formats
 * (BLK_IMAGE_MAX_CHAIN each); *n how many.  Each descriptor the
 * supervisor opened with the rights of the client who started the VM.
 */
static void
worker_disk_chain(const struct start_disk *d, int *fds,
    enum blk_image_format *formats, unsigned int *n)
{
	*n = 0;
	fds[*n] = d->top.fd;
	formats[(*n)++] = worker_format(d->top.format);
	for (unsigned int k = 0; k < d->nbacking; k++) {
		fds[*n] = d->backing[k].fd;
		formats[(*n)++] = worker_format(d->backing[k].format);
	}
}

/*
 * An NBD disk: the handshake on the socket the supervisor connected,
 * here before the sandbox closes in, then blk-nbd's I/O thread.
 */
static int
worker_disk_nbd(struct worker *w, unsigned int i, const struct start_disk *d,
    char *err, size_t errlen)
{
	struct blk_nbd_config cfg = {
		.readonly = d->readonly, .serial = d->serial,
	};
	struct nbd_addr addr;
	char why[256];
	int ret;

	w->disk_chain[i] = json_object_new_array();
	if (nbd_addr_parse(d->top.path, &addr, why, sizeof(why)) < 0) {
		close(d->top.fd);
		snprintf(err, errlen, "disk %s: %s", d->top.path, why);
		return -EINVAL;
	}
	cfg.export = addr.export;
	/* A lost server is connected again by the supervisor. */
	if ((ret = nbd_redial_new(w, i, &w->nbd_redial[i])) < 0) {
		close(d->top.fd);
		snprintf(err, errlen, "disk %s: %s", d->top.path,
		    strerror(-ret));
		return ret;
	}
	cfg.connect = nbd_redial_connect;
	cfg.connect_arg = w->nbd_redial[i];
	ret = blk_nbd_new(&w->nbd[i], d->top.fd, &cfg,
	    &w->cfg.backends.disk[i], why, sizeof(why));
	if (ret < 0)
		snprintf(err, errlen, "disk %s: %s", d->top.path, why);
	return ret;
}

/* One of the start's disks, opened: a raw image, or a qcow2 image
 * over its backing files, or an NBD server's export; restored: the guest
 * goes on from a snapshot. */
static int
worker_disk(struct worker *w, unsigned int i, const struct start_disk *d,
    bool restored, char *err, size_t errlen)
{
	enum blk_image_format formats[BLK_IMAGE_MAX_CHAIN];
	int fds[BLK_IMAGE_MAX_CHAIN], ret;
	bool qcow2;
	unsigned int n;

	if (d->top.format == START_FORMAT_NBD)
		return worker_disk_nbd(w, i, d, err, errlen);
	if (d->top.format == START_FORMAT_RBD) {
		/* Opened before the sandbox (rbd-disk.h). */
		w->disk_chain[i] = json_object_new_array();
		if (w->rbd[i] == NULL) {
			snprintf(err, errlen, "disk %s: not opened",
			    d->top.path);
			return -EINVAL;
		}
		return 0;
	}
	worker_disk_chain(d, fds, formats, &n);
	qcow2 = formats[0] == BLK_IMAGE_QCOW2;
	w->disk_chain[i] = json_object_new_array();
	for (unsigned int k = 0; k < d->nbacking; k++)
		json_object_array_add(w->disk_chain[i], json_object_new_string(
		    d->backing[k].path));
	if (!qcow2 && n == 1)
		ret = blk_file_new(&w->disks[i], fds[0], d->readonly,
		    d->serial, &w->cfg.backends.disk[i]);
	else
		ret = blk_file_new_chain(&w->disks[i], fds, formats, n,
		    d->readonly, d->serial, &w->cfg.backends.disk[i]);
	if (ret == 0)
		test_hook_disk_made(i, &w->cfg.backends.disk[i], restored);
	if (ret < 0)
		snprintf(err, errlen, "disk %s: %s", d->top.path,
		    ret != -EINVAL ? strerror(-ret) : qcow2 ? "not a qcow2 "
		    "image (with its backing files) that vmmd can use" :
		    "not a raw image of at least one sector");
	return ret;
}

static int
worker_disks(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	int ret;

	if (sp->ndisks > 0)
		test_hook_reading("disks opened", NULL, 0, -1);
	for (unsigned int i = 0; i < sp->ndisks; i++) {
		ret = worker_disk(w, i, &sp->disks[i], sp->snap_fd[0] >= 0,
		    err, errlen);
		if (ret < 0)
			return ret;
		w->cfg.backends.disk_sata[i] = sp->disks[i].sata;
		w->cfg.backends.ndisks = i + 1;
	}
	if (sp->cdrom_fd < 0)
		return 0;
	/* The CD-ROM: a raw image, read-only whatever the file allows. */
	ret = blk_file_new(&w->cdrom, sp->cdrom_fd, true, NULL,
	    &w->cfg.backends.cdrom);
	if (ret < 0) {
		snprintf(err, errlen, "cdrom %s: %s", sp->cdrom_name != NULL ?
		    sp->cdrom_name : "(unnamed)", ret != -EINVAL ?
		    strerror(-ret) : "not an image of at least one sector");
		return ret;
	}
	w->cfg.backends.has_cdrom = true;
	return 0;
}

/*
 * OVMF's variables: the NVRAM file the supervisor opened, read into the
 * store the firmware's flash is built on at every (re)build of the
 * machine, written back from the loop (nvram.h).  Nothing without one.
 */
static int
worker_nvram(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	int ret;

	if (sp->nvram_fd < 0)
		return 0;
	ret = nvram_new(w->base, sp->nvram_fd, NVRAM_BLOCK_SIZE, false,
	    &w->nvram);
	if (ret < 0) {
		snprintf(err, errlen, "UEFI variables %s: %s",
		    sp->nvram_name != NULL ? sp->nvram_name : "(unnamed)",
		    ret != -EINVAL ? strerror(-ret) :
		    "not an NVRAM file of whole 4 KiB blocks");
		return ret;
	}
	w->cfg.backends.pflash = nvram_store(w->nvram);
	return 0;
}

/*
 * A card with user-mode networking: passt started for the guest, card
 * i on the link to it (user-net.h).
 */
static int
worker_user_net(struct worker *w, unsigned int i, const struct start_nic *nic,
    char *err, size_t errlen)
{
	struct user_net_forward fw[USER_NET_FORWARDS];
	int sock, ret;
	pid_t pid;

	if (nic->nforward > USER_NET_FORWARDS) {
		snprintf(err, errlen, "net: at most %d forwards",
		    USER_NET_FORWARDS);
		return -EINVAL;
	}
	for (unsigned int k = 0; k < nic->nforward; k++) {
		fw[k] = (struct user_net_forward){
			.udp = nic->forward[k].udp,
			.host_port = nic->forward[k].host_port,
			.guest_port = nic->forward[k].guest_port,
		};
		snprintf(fw[k].addr, sizeof(fw[k].addr), "%s",
		    nic->forward[k].addr);
	}
	ret = user_net_start(nic->passt, w->uid, fw, nic->nforward, &sock,
	    &pid, err, errlen);
	if (ret < 0)
		return ret;
	ret = net_stream_new(&w->user_net[i], w->base, sock, nic->mac, "passt",
	    &w->cfg.backends.net[i]);
	if (ret < 0) {
		close(sock);
		snprintf(err, errlen, "net: out of memory");
		return ret;
	}
	log_debug("%s: net %u: user-mode networking, passt %ld, %u forwards",
	    w->name, i, (long)pid, nic->nforward);
	return 0;
}

/*
 * Card i, a virtio-net: on a TAP the supervisor attached (see
 * net-tap.h), or on passt.
 */
static int
worker_nic(struct worker *w, unsigned int i, const struct start_nic *nic,
    char *err, size_t errlen)
{
	char name[IFNAMSIZ];
	int ret;

	if (nic->user)
		return worker_user_net(w, i, nic, err, errlen);
	ret = net_tap_new(&w->net[i], w->base, nic->tap_fd, nic->mac,
	    &w->cfg.backends.net[i], name);
	if (ret < 0) {
		snprintf(err, errlen, "net: tap %s: %s", nic->tap,
		    ret == -EINVAL ? "not a TAP device with virtio headers" :
		    strerror(-ret));
		return ret;
	}
	log_debug("%s: net %u on tap %s, mac %02x:%02x:%02x:%02x:%02x:%02x",
	    w->name, i, name, nic->mac[0], nic->mac[1], nic->mac[2],
	    nic->mac[3], nic->mac[4], nic->mac[5]);
	return 0;
}

/* The start's cards in order, virtio-nets 0 to n - 1. */
static int
worker_net(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	struct fd_claims taps = { 0 };
	int ret;

	static_assert(WMSG_NICS_MAX <= BOARD_MAX_NICS,
	    "worker-msg.h's cards fit the board");
	static_assert(WMSG_FD_MAX <= FD_CLAIM_MAX,
	    "fd-claim.h holds every descriptor worker-msg.h allows");
	for (unsigned int i = 0; i < sp->nnics; i++) {
		/* One card per TAP descriptor: each card closes its own. */
		if (!sp->nics[i].user &&
		    fd_claim(&taps, sp->nics[i].tap_fd) < 0) {
			snprintf(err, errlen, "net: card %u: fd %d is another "
			    "card's already", i, sp->nics[i].tap_fd);
			return -EINVAL;
		}
		ret = worker_nic(w, i, &sp->nics[i], err, errlen);
		if (ret < 0)
			return ret;
		w->cfg.backends.nnics = i + 1;
	}
	return 0;
}

/* The start's vsock: /dev/vhost-vsock and the guest's CID. */
static int
worker_vsock(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	int ret;

	if (!sp->has_vsock)
		return 0;
	ret = vhost_vsock_new(&w->vsock, sp->vsock.fd, sp->vsock.cid,
	    &w->cfg.backends.vsock, err, errlen);
	if (ret < 0)
		return ret;
	w->cfg.backends.has_vsock = true;
	log_debug("%s: vsock, CID %lu", w->name, (unsigned long)sp->vsock.cid);
	return 0;
}

/*
 * The server's end of the connection closed: the guest's requests on
 * the share fail from now on (the machine a reset builds finds the
 * connection broken at its first request, and does the same).
 */
static void
worker_fs_closed(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	log_warn("%s: fs %s: the file server ended: the guest's requests on "
	    "the share fail", w->name, w->fs_tag);
	if (w->machine != NULL)
		(void)machine_fs_backend_gone(w->machine);
}

/*
 * The start's shared directory: virtiofsd started on the directory
 * (fs-share.h), or the socket vmmd connected to a server the user
 * runs; then the vhost-user handshake, before the sandbox.  Guest RAM
 * becomes shareable for the server to map.
 */
static int
worker_fs(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	char why[256];
	int sock, ret;

	if (!sp->has_fs)
		return 0;
	if (sp->fs.socket) {
		sock = sp->fs.fd;
	} else {
		ret = fs_share_start(sp->fs.virtiofsd != NULL ?
		    sp->fs.virtiofsd : WORKER_VIRTIOFSD, sp->fs.fd,
		    sp->fs.readonly, &sock, &w->fs_pid, err, errlen);
		if (ret < 0)
			return ret;
	}
	ret = vhost_user_new(&w->fs, sock, WORKER_FS_TIMEOUT_MS,
	    &w->cfg.backends.fs, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "fs: %s", why);
		return ret;
	}
	snprintf(w->fs_tag, sizeof(w->fs_tag), "%s", sp->fs.tag);
	w->fs_readonly = sp->fs.readonly;
	w->fs_socket = sp->fs.socket;
	w->cfg.backends.fs_tag = w->fs_tag;
	w->cfg.ram_shared = true;
	/* Once: EV_CLOSED stays ready after the end (EPOLLRDHUP). */
	w->fs_ev = event_new(w->base, vhost_user_fd(w->fs), EV_CLOSED,
	    worker_fs_closed, w);
	if (w->fs_ev == NULL || event_add(w->fs_ev, NULL) < 0) {
		snprintf(err, errlen, "fs: out of memory");
		return -ENOMEM;
	}
	log_debug("%s: fs %s, %s %ld", w->name, w->fs_tag, sp->fs.socket ?
	    "a server of the user's" : "virtiofsd", (long)w->fs_pid);
	return 0;
}

/*
 * The start's boot disk (cloud-boot.h): its reader started on the disk
 * it names, before the worker opens any disk of its own; and the cloud
 * module loaded for it or for a seed, while names can be opened.
 */
static int
worker_cloud_start(struct worker *w, const struct start_params *sp,
    char *err, size_t errlen)
{
	enum blk_image_format formats[BLK_IMAGE_MAX_CHAIN];
	int fds[BLK_IMAGE_MAX_CHAIN], ret;
	unsigned int n;

	if (!sp->has_boot_disk && !sp->has_seed)
		return 0;
	if ((ret = cloud_boot_prepare(w, err, errlen)) < 0 ||
	    !sp->has_boot_disk)
		return ret;
	/* start_params_decode() saw the disk there. */
	worker_disk_chain(&sp->disks[sp->boot_disk.disk], fds, formats, &n);
	return cloud_boot_read_start(w, &sp->boot_disk, fds, formats, n, err,
	    errlen);
}

/*
 * The rest of the boot disk and the seed, the disks being open: the
 * kernel the reader chose into w->cfg, the seed as one more disk, and
 * what to answer about them (kept for worker.adopt) in *reply (NULL
 * when neither was asked for).
 */
static int
worker_cloud(struct worker *w, const struct start_params *sp,
    struct json_object **reply, char *err, size_t errlen)
{
	struct json_object *choice = NULL;
	char iid[256] = "";
	int ret;

	if (w->reader != NULL) {
		if ((ret = cloud_boot_read_finish(w, &choice, err,
		    errlen)) < 0)
			return ret;
		w->cfg.kernel = w->kernel;
		w->cfg.initrd = w->initrd;
		w->cfg.kernel_name = w->kernel_name;
		w->cfg.cmdline = w->cmdline;
	}
	if (sp->has_seed && (ret = cloud_boot_seed(w, &sp->seed, iid,
	    sizeof(iid), err, errlen)) < 0) {
		json_object_put(choice);
		return ret;
	}
	if (choice == NULL && iid[0] == '\0')
		return 0;
	*reply = json_object_new_object();
	if (*reply == NULL || wmsg_put(*reply, WMSG_BOOTED_FROM, choice) < 0 ||
	    (iid[0] != '\0' && wmsg_put_str(*reply, WMSG_BOOTED_SEED,
	    iid) < 0)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* A later supervisor hears the same (worker.adopt). */
	json_object_put(w->boot_facts);
	w->boot_facts = json_object_get(*reply);
	return 0;
}

/*
 * The guest's files and settings from the start: its kernel (a file,
 * or from the disk: the cloud module's choice, once disks are open), the
 * machine's configuration, its RTC's policy, /dev/kvm.
 */
static struct json_object *
worker_boot_config(struct worker_request *r, const struct start_params *sp)
{
	struct worker *w = r->w;
	const char *kernel = sp->kernel != NULL ? sp->kernel : "";
	char err[128];
	int ret;

	/*
	 * kernel and initrd are normally /proc/self/fd/N: descriptors the
	 * supervisor opened after checking them and left to us, so that
	 * every (re)boot loads those very files.  Messages name the paths
	 * the user gave (kernel_name), not those.
	 */
	w->kernel = strdup(kernel);
	w->initrd = sp->initrd != NULL ? strdup(sp->initrd) : NULL;
	w->cmdline = strdup(sp->cmdline != NULL ? sp->cmdline : "");
	w->kernel_name = strdup(sp->kernel_name != NULL ? sp->kernel_name :
	    kernel);
	if (w->kernel == NULL || w->cmdline == NULL ||
	    w->kernel_name == NULL || (sp->initrd != NULL && w->initrd == NULL))
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	log_debug("%s: kernel %s, initrd %s", w->name, w->kernel_name,
	    sp->initrd_name != NULL ? sp->initrd_name : sp->initrd != NULL ?
	    sp->initrd : "none");
	if (sp->firmware != NULL) {
		w->firmware = strdup(sp->firmware);
		if (w->firmware == NULL)
			return worker_error(r, PROTO_ERR_INTERNAL,
			    "out of memory");
		free(w->kernel_name);
		w->kernel_name = strdup(sp->firmware_name != NULL ?
		    sp->firmware_name : sp->firmware);
		if (w->kernel_name == NULL)
			return worker_error(r, PROTO_ERR_INTERNAL,
			    "out of memory");
		log_debug("%s: firmware %s", w->name, w->kernel_name);
	}
	if (sp->vgabios != NULL && (w->vgabios = strdup(sp->vgabios)) == NULL)
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	w->cfg = (struct machine_config){
		.firmware = w->firmware,
		.vgabios = w->vgabios,
		.nboot_order = sp->nboot_order,
		.boot_menu = sp->boot_menu_ms >= 0,
		.boot_menu_ms = sp->boot_menu_ms >= 0 ?
		    (unsigned int)sp->boot_menu_ms : 0,
		.kernel = w->kernel,
		.initrd = w->initrd,
		.kernel_name = w->kernel_name,
		.cmdline = w->cmdline,
		.memory_mib = sp->memory_mib,
		.vcpus = sp->vcpus,
	};
	memcpy(w->cfg.boot_order, sp->boot_order, sizeof(w->cfg.boot_order));
	if (sp->has_uuid) {
		memcpy(w->uuid, sp->uuid, sizeof(w->uuid));
		w->cfg.uuid = w->uuid;
	}
	/* The battery starts new: the first machine fills it in. */
	w->cfg.backends.rtc = RTC_CONFIG_DEFAULT;
	w->cfg.backends.rtc.lost_ticks = sp->lost_ticks == START_TICKS_DISCARD ?
	    RTC_LOST_TICKS_DISCARD : RTC_LOST_TICKS_SLEW;
	w->cfg.backends.rtc.backlog_max = sp->rtc_backlog_max;
	if (sp->rtc_slices != 0)
		w->cfg.backends.rtc.max_slices = sp->rtc_slices;
	w->cfg.backends.rtc.battery = &w->rtc_battery;
	w->cfg.backends.rng = sp->rng;
	w->cfg.backends.balloon = sp->balloon;
	/* Kept across resets; a restore replaces it (restore.h). */
	if (restore_vmgenid_fresh(w->cfg.backends.vmgenid) < 0)
		return worker_error(r, PROTO_ERR_INTERNAL,
		    "no random bytes for a VM generation ID");
	/*
	 * Kept for every machine of this guest: once sandboxed, the
	 * worker cannot open it again.  vmmd passes it (kvm_fd); a worker
	 * started by hand opens it itself.
	 */
	if (w->kvm_fd < 0 && sp->kvm_fd >= 0) {
		if (kvm_check(sp->kvm_fd) < 0)
			return worker_error(r, PROTO_ERR_KVM_UNAVAILABLE,
			    "kvm_fd: "
			    "not /dev/kvm, or a KVM of another API version");
		w->kvm_fd = sp->kvm_fd;
	}
	if (w->kvm_fd < 0 && (w->kvm_fd = kvm_open()) < 0) {
		ret = w->kvm_fd;
		w->kvm_fd = -1;
		snprintf(err, sizeof(err), "cannot open /dev/kvm: %s",
		    strerror(-ret));
		return worker_error(r, PROTO_ERR_KVM_UNAVAILABLE, err);
	}
	w->cfg.kvm_fd = w->kvm_fd;
	return NULL;
}

/*
 * The guest built from its start, whole: an error reply, or the
 * answer (what was chosen from the disk, the seed's instance-id).
 */
static struct json_object *
worker_boot(struct worker_request *r, const struct start_params *sp)
{
	struct worker *w = r->w;
	struct json_object *reply = NULL;
	struct display_config dcfg;
	char err[512];
	int ret;

	w->start.own[START_REQUEST] = sp->request_ns;
	w->start.own[START_SPAWN] = sp->spawn_ns;
	if ((reply = worker_boot_config(r, sp)) != NULL)
		return reply;
	w->console = console_new(w->base, sp->console_log,
	    (uint64_t)sp->console_log_max, &ret);
	if (w->console == NULL) {
		snprintf(err, sizeof(err), "console log %s: %s",
		    sp->console_log ? sp->console_log : "-", ret == -ELOOP ?
		    "it (or its .1) is a symbolic link: not followed" :
		    ret == -EINVAL ? "it (or its .1) is not a regular file" :
		    strerror(-ret));
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	/* Its write-protect tracking needs /dev/userfaultfd, root's. */
	w->read_files = sp->has_display && sp->display.web_dir != NULL;
	dcfg = worker_display_config(&sp->display);
	/* Firmware's screen is a bochs-display's memory (machine.h). */
	dcfg.pci = sp->firmware != NULL;
	if (sp->has_display &&
	    (ret = guest_display_new(w, &dcfg, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL || ret == -EADDRINUSE ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	/*
	 * Everything opened by name is open now.  From here on the worker
	 * reads what the guest may have written (its disks' metadata, its
	 * boot configuration, its kernel) and what viewers send: none of
	 * it with more rights than the guest's own uid (sandbox.h).
	 */
	/* virtiofsd's own sandbox needs root: started before the drop. */
	if ((ret = worker_fs(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -ENOENT || ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	if ((ret = guest_drop_privileges(w, err, sizeof(err))) < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	/* A forward's host port another program holds: not our fault. */
	if ((ret = worker_net(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : ret == -EADDRINUSE ||
		    ret == -EADDRNOTAVAIL || ret == -EACCES ?
		    PROTO_ERR_BAD_STATE : PROTO_ERR_INTERNAL, err);
	if ((ret = worker_vsock(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL || ret == -EADDRINUSE ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	if ((ret = worker_cloud_start(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	/* librbd's module, configuration and threads: before the filter. */
	if ((ret = rbd_disk_open_all(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -ENOMEM ? PROTO_ERR_INTERNAL :
		    PROTO_ERR_INVALID_ARGUMENT, err);
	/*
	 * passt runs, vsock is set up, the reader (if any) has its own
	 * copy: now the filter a running guest has, before the worker
	 * parses a byte of its disks' metadata or of its kernel.  The
	 * disks it will have: the start's, the seed and the CD-ROM.
	 */
	if ((ret = guest_enter_sandbox(w, sp->ndisks + sp->has_seed +
	    (sp->cdrom_fd >= 0), err, sizeof(err))) < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	if ((ret = worker_disks(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	if ((ret = worker_nvram(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	if ((ret = worker_cloud(w, sp, &reply, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL || ret == -ENOENT ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	w->reboot_stops = sp->on_reboot == START_REBOOT_STOP;
	w->log_start = sp->log_start;
	if (sp->started_ms >= 0)
		w->started_ms = sp->started_ms;
	json_object_put(w->definition);
	w->definition = json_object_get(sp->definition);
	/*
	 * The socket a later supervisor adopts us on: from now on the
	 * guest outlives the link.  Without one (or if it is no listening
	 * socket) the guest ends with its supervisor, as it always did.
	 */
	if (sp->adopt_fd >= 0 && w->relink == NULL) {
		w->relink = relink_new(w->base, sp->adopt_fd, &w->link,
		    &w->link_handlers, &ret);
		if (w->relink == NULL)
			log_warn("%s: adoption socket %d: %s: the guest "
			    "will not outlive vmmd", w->name, sp->adopt_fd,
			    strerror(-ret));
	}

	if ((ret = restore_take(w, sp, err, sizeof(err))) < 0 ||
	    (ret = migrate_in_take(w, sp, err, sizeof(err))) < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);
	ret = guest_build(w, err, sizeof(err));
	restore_free(w);
	if (ret == 0)
		migrate_in_running(w);
	migrate_in_free(w);
	if (ret < 0) {
		/* A kernel we cannot load is the caller's problem. */
		bool bad_input = ret == -ENOEXEC || ret == -EINVAL ||
		    ret == -ENOENT || ret == -EACCES || ret == -E2BIG ||
		    ret == -EFBIG || ret == -ENOSPC || ret == -EISDIR;
		json_object_put(reply);
		return worker_error(r, bad_input ? PROTO_ERR_INVALID_ARGUMENT :
		    PROTO_ERR_INTERNAL, err);
	}
	w->booted = true;
	log_info("%s: guest running (%u vCPUs, %llu MiB)", w->name,
	    w->cfg.vcpus, (unsigned long long)w->cfg.memory_mib);
	return worker_ok(r, reply);
}

/*
 * worker.boot: its arguments decoded once into the start contract
 * (start-params.h), which the guest is then built from.
 */
static struct json_object *
worker_cmd_boot(struct worker_request *r)
{
	struct worker *w = r->w;
	struct start_params sp;
	struct json_object *reply;
	char err[512];
	int ret;

	if (w->ended)
		return worker_error(r, PROTO_ERR_BAD_STATE, "worker exiting");
	if (w->booted)
		return worker_error(r, PROTO_ERR_BAD_STATE, "already booted");
	w->start.own[START_BOOT] = xs_mono_ns();
	if ((ret = start_params_decode(r->args, &sp, err, sizeof(err))) < 0)
		return worker_error(r, ret == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	reply = worker_boot(r, &sp);
	start_params_free(&sp);
	return reply;
}

static bool
worker_need_machine(struct worker_request *r, struct json_object **reply)
{
	if (r->w->machine != NULL)
		return true;
	*reply = worker_error(r, PROTO_ERR_BAD_STATE,
	    r->w->ended ? "guest has stopped" :
	    r->w->booted ? "guest is restarting" : "guest not booted");
	return false;
}

/*
 * A snapshot retrying a busy device (snapshot.c) must save a still
 * machine, the one it paused: a resume, a reset (a new machine) or a
 * shutdown (which lets the guest run to see the power button) waits
 * for it to be written.  Refused with what would have been done.
 */
static bool
worker_snapshot_busy(struct worker_request *r, const char *what,
    struct json_object **reply)
{
	char msg[160];

	if (r->w->snapshot == NULL)
		return false;
	snprintf(msg, sizeof(msg), "a snapshot is being taken: the guest "
	    "stays paused until it is written, and is %s only then", what);
	*reply = worker_error(r, PROTO_ERR_BAD_STATE, msg);
	return true;
}

static struct json_object *
worker_cmd_pause(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	/* vCPUs blocked on the framebuffer must get out to park. */
	display_quiesce(r->w->display);
	machine_pause(r->w->machine);
	guest_state_event(r->w, "paused");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_resume(struct worker_request *r)
{
	struct json_object *reply;

	test_hook_resume_asked();
	if (!worker_need_machine(r, &reply))
		return reply;
	if (worker_snapshot_busy(r, "resumed", &reply))
		return reply;
	if (migrate_out_holds(r->w))
		return worker_error(r, PROTO_ERR_BAD_STATE, r->w->migrated ?
		    "the guest has migrated: it runs on the target" :
		    "a migration's last step holds the guest paused");
	test_hook_resuming(r->w);
	machine_resume(r->w->machine);
	display_resume(r->w->display);
	guest_state_event(r->w, "running");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_reset(struct worker_request *r)
{
	struct worker *w = r->w;
	struct json_object *reply;
	char err[512];

	if (!worker_need_machine(r, &reply) ||
	    worker_snapshot_busy(r, "reset", &reply))
		return reply;
	guest_teardown(w);
	/* A reset or power-off the old machine reported is moot now. */
	guest_forget_hold(w);
	if (guest_build(w, err, sizeof(err)) < 0) {
		log_error("%s: cannot reset guest: %s", w->name, err);
		worker_exit(w, 1);
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	}
	w->reboots++;
	/* A vm.pause handled just before left vmmd calling it paused. */
	guest_state_event(w, "running");
	return worker_ok(r, NULL);
}

/*
 * worker.shutdown {"timeout": seconds}: the supervisor's deadline, half
 * of which the guest gets to answer the power button (default 30 s).
 */
static struct json_object *
worker_cmd_shutdown(struct worker_request *r)
{
	struct json_object *reply, *ret_obj;
	int64_t timeout = wmsg_int(r->args, WMSG_SHUTDOWN_TIMEOUT,
	    WORKER_SHUTDOWN_TIMEOUT_DEFAULT);
	char err[128];
	int ret;

	test_hook_shutdown_asked();
	/* Already down: what was asked for. */
	if (r->w->ended && r->w->booted)
		return worker_ok(r, NULL);
	if (!worker_need_machine(r, &reply) ||
	    worker_snapshot_busy(r, "shut down", &reply))
		return reply;
	r->w->shutdown_pending = true;
	/* A paused guest can react to neither the button nor the keys. */
	machine_resume(r->w->machine);
	display_resume(r->w->display);
	ret = shutdown_begin(r->w, timeout * 1000, err, sizeof(err));
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, err);
	ret_obj = json_object_new_object();
	wmsg_put_str(ret_obj, WMSG_SHUTDOWN_METHOD,
	    shutdown_stage_name(r->w->shutdown_stage));
	return worker_ok(r, ret_obj);
}

/*
 * vm.info also asks a balloon for the guest's statistics: the answer
 * shows those it gave last, the next one these.
 */
static struct json_object *
worker_cmd_info(struct worker_request *r)
{
	if (r->w->machine != NULL && r->w->cfg.backends.balloon)
		(void)machine_balloon_stats(r->w->machine);
	return worker_ok(r, info_json(r->w));
}

static struct json_object *
worker_cmd_metrics(struct worker_request *r)
{
	return worker_ok(r, guest_metrics_json(r->w));
}

static struct json_object *
worker_cmd_stats(struct worker_request *r)
{
	struct stats_request sr = {
		.enable = wmsg_get(r->args, WMSG_STATS_ENABLE) == NULL ? -1 :
		    wmsg_bool(r->args, WMSG_STATS_ENABLE, false),
		.reset = wmsg_bool(r->args, WMSG_STATS_RESET, false),
		.segments = wmsg_bool(r->args, WMSG_STATS_SEGMENTS, false),
		.kvm = wmsg_bool(r->args, WMSG_STATS_KVM, false),
		.vcpu = (int)wmsg_int(r->args, WMSG_STATS_VCPU, -1),
	};
	struct json_object *reply, *ret;
	char err[256];
	int ret_code;

	if (!worker_need_machine(r, &reply))
		return reply;
	ret_code = stats_json(r->w, &sr, &ret, err, sizeof(err));
	if (ret_code < 0)
		return worker_error(r, ret_code == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL, err);
	return worker_ok(r, ret);
}

static struct json_object *
worker_cmd_console(struct worker_request *r)
{
	struct json_object *client_id = NULL;
	int ret;

	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_BAD_REQUEST,
		    "worker.console needs a descriptor");
	if (r->w->console == NULL) {
		close(r->fd);
		r->fd = -1;
		return worker_error(r, PROTO_ERR_BAD_STATE, "guest not booted");
	}
	client_id = wmsg_get(r->args, WMSG_CLIENT_ID);
	ret = console_attach(r->w->console, r->fd, client_id);
	r->fd = -1;
	if (ret == -EUSERS)
		return proto_error(r->id, PROTO_ERR_LIMIT, "%d console "
		    "clients are attached already, the most a VM serves",
		    CONSOLE_CLIENTS_MAX);
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, strerror(-ret));
	return worker_ok(r, NULL);
}

static bool
worker_need_display(struct worker_request *r, struct json_object **reply)
{
	if (r->w->display != NULL)
		return true;
	*reply = worker_error(r, PROTO_ERR_BAD_STATE, "VM has no display");
	return false;
}

static struct json_object *
worker_cmd_display(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_display(r, &reply))
		return reply;
	return worker_ok(r, display_info_json(r->w->display));
}

/* Like worker.console: the reply to the client goes on its connection. */
static struct json_object *
worker_cmd_screenshot(struct worker_request *r)
{
	struct json_object *client_id = NULL, *reply;
	int ret;

	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_BAD_REQUEST,
		    "worker.screenshot needs a descriptor");
	if (!worker_need_display(r, &reply)) {
		close(r->fd);
		r->fd = -1;
		return reply;
	}
	/* The image would not get out: the display goes with the process. */
	if (r->w->ended) {
		close(r->fd);
		r->fd = -1;
		return worker_error(r, PROTO_ERR_BAD_STATE,
		    "guest has stopped");
	}
	client_id = wmsg_get(r->args, WMSG_CLIENT_ID);
	ret = display_screenshot(r->w->display, r->fd, client_id);
	r->fd = -1;
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, strerror(-ret));
	return worker_ok(r, NULL);
}

/*
 * What a supervisor that adopts a running worker needs to take it on:
 * the guest's state, when the worker started, where the run's console
 * output began, and the definition the supervisor booted it with (a
 * transient VM has no other copy).
 */
/*
 * worker.snapshot {"resume"} with the memory and state files vmmd made:
 * answered by snapshot.c, maybe later (NULL here: nothing to send yet).
 */
static struct json_object *
worker_cmd_snapshot(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	if (r->fd < 0 || r->fd2 < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "worker.snapshot: two descriptors expected");
	/* Its pause and resume would cross the migration's. */
	if (migrate_out_busy(r->w))
		return worker_error(r, PROTO_ERR_BAD_STATE, "a migration is "
		    "under way");
	snapshot_start(r->w, r->id, r->fd, r->fd2,
	    wmsg_bool(r->args, WMSG_SNAPSHOT_RESUME, true));
	r->fd = r->fd2 = -1;
	return NULL;
}

/*
 * worker.media_eject and worker.media_insert: the CD-ROM's medium out,
 * or the passed image in (read-only).  The old image's backend goes
 * only once the drive let it go; the new one is what the next machine
 * (after a reset) is built with too.
 */
static struct json_object *
worker_cmd_media(struct worker_request *r, bool insert)
{
	struct worker *w = r->w;
	const char *dev = wmsg_str(r->args, WMSG_MEDIA_DEVICE, "");
	struct blk_backend be = { 0 };
	struct blk_file *f = NULL;
	struct json_object *reply;
	struct boot_dev d;
	char msg[256];
	int ret;

	if (!worker_need_machine(r, &reply))
		return reply;
	if (boot_dev_parse(dev, &d) < 0 || d.kind != BOOT_DEV_CDROM ||
	    d.index != 0 || !w->cfg.backends.has_cdrom) {
		snprintf(msg, sizeof(msg), "no CD-ROM drive %s", dev);
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, msg);
	}
	if (insert) {
		if (r->fd < 0)
			return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
			    "worker.media_insert: a descriptor expected");
		ret = blk_file_new(&f, r->fd, true, NULL, &be);
		if (ret < 0) {
			snprintf(msg, sizeof(msg), "%s: %s", wmsg_str(r->args,
			    WMSG_MEDIA_NAME, "the image"), ret != -EINVAL ?
			    strerror(-ret) : "not an image of at least one "
			    "sector");
			return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
			    msg);
		}
		r->fd = -1;			/* the backend's now */
	}
	ret = machine_cdrom_media(w->machine, insert ? &be : NULL,
	    wmsg_bool(r->args, WMSG_MEDIA_FORCE, false));
	if (ret < 0) {
		blk_file_free(f);
		snprintf(msg, sizeof(msg), "%s: %s", dev, ret == -EBUSY ?
		    "the guest prevents its removal (force overrides it)" :
		    ret == -EAGAIN ? "a read of its medium is under way; "
		    "try again" : strerror(-ret));
		return worker_error(r, PROTO_ERR_BAD_STATE, msg);
	}
	blk_file_free(w->cdrom);
	w->cdrom = f;
	w->cfg.backends.cdrom = be;
	log_info("%s: %s: %s", w->name, dev, insert ? "medium inserted" :
	    "medium ejected");
	return worker_ok(r, NULL);
}

static struct json_object *
worker_cmd_media_eject(struct worker_request *r)
{
	return worker_cmd_media(r, false);
}

static struct json_object *
worker_cmd_media_insert(struct worker_request *r)
{
	return worker_cmd_media(r, true);
}

/*
 * worker.disk_push {"disk", "backing"} with a new qcow2 image over the
 * disk's present one (vmmd made it, its header naming "backing", the
 * path the present top image has from now on: a snapshot froze it
 * there).  Only while the guest is paused: no request of the guest is
 * in flight (the snapshot's save drained them) and none arrives, so no
 * write lands in the frozen image after the snapshot.  The disk's
 * backend is the same one; only its image chain grows by one on top.
 */
/*
 * The supervisor's answer to disk.nbd_redial: the new connection to
 * the disk's server for the thread that asked (nbd-redial.h), with
 * worker.nbd_fd; or with worker.nbd_refused, why there is none.
 */
static struct json_object *
worker_cmd_nbd_fd(struct worker_request *r)
{
	struct worker *w = r->w;
	int64_t i = wmsg_int(r->args, WMSG_NBD_FD_DISK, -1);

	if (i < 0 || i >= BOARD_MAX_DISKS || w->nbd_redial[i] == NULL)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "worker.nbd_fd: no such NBD disk");
	if (r->fd < 0 && wmsg_get(r->args, WMSG_NBD_FD_ERROR) == NULL)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "worker.nbd_fd: a descriptor expected");
	nbd_redial_answer(w->nbd_redial[i], r->fd >= 0 ? r->fd :
	    -ECONNREFUSED);
	r->fd = -1;
	return json_object_new_object();
}

static struct json_object *
worker_cmd_disk_push(struct worker_request *r)
{
	struct worker *w = r->w;
	struct json_object *reply;
	int64_t i = wmsg_int(r->args, WMSG_DISK_PUSH_DISK, -1);
	struct json_object *chain;
	char err[160];
	int ret;

	if (!worker_need_machine(r, &reply))
		return reply;
	if (!w->paused)
		return worker_error(r, PROTO_ERR_BAD_STATE,
		    "worker.disk_push: the guest runs");
	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "worker.disk_push: a descriptor expected");
	if (i < 0 || (unsigned int)i >= w->cfg.backends.ndisks ||
	    w->disks[i] == NULL || w->cfg.backends.disk[i].readonly)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "worker.disk_push: no such writable disk");
	if ((ret = blk_file_push_top(w->disks[i], r->fd)) < 0) {
		snprintf(err, sizeof(err), "worker.disk_push: disk %d: %s",
		    (int)i, ret == -EINVAL ? "not a qcow2 image over this "
		    "disk, of its size" : strerror(-ret));
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, err);
	}
	r->fd = -1;
	/* vm.info's chain: the frozen image first, then what it was over. */
	if ((chain = json_object_new_array()) != NULL) {
		json_object_array_add(chain, json_object_new_string(
		    wmsg_str(r->args, WMSG_DISK_PUSH_BACKING, "")));
		for (size_t k = 0; w->disk_chain[i] != NULL &&
		    k < json_object_array_length(w->disk_chain[i]); k++)
			json_object_array_add(chain, json_object_get(
			    json_object_array_get_idx(w->disk_chain[i], k)));
		json_object_put(w->disk_chain[i]);
		w->disk_chain[i] = chain;
	}
	log_info("disk %d: writes go to a new image over %s", (int)i,
	    wmsg_str(r->args, WMSG_DISK_PUSH_BACKING, ""));
	return worker_ok(r, NULL);
}

/*
 * worker.migrate_out {"downtime_ms"} with the stream: answered by
 * migrate-out.c once the target runs the guest or the migration
 * failed (NULL here: nothing to send yet).
 */
static struct json_object *
worker_cmd_migrate_out(struct worker_request *r)
{
	struct json_object *reply;

	if (!worker_need_machine(r, &reply))
		return reply;
	if (r->fd < 0)
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT,
		    "worker.migrate_out: a descriptor expected");
	if (r->w->migrated)
		return worker_error(r, PROTO_ERR_BAD_STATE, "the guest has "
		    "migrated already");
	migrate_out_start(r->w, r->id, r->fd, (unsigned int)wmsg_int(r->args,
	    WMSG_MIGRATE_DOWNTIME_MS, MIGRATE_OUT_DOWNTIME_MS));
	r->fd = -1;
	return NULL;
}

/*
 * worker.migrate_cancel: the migration under way stops (migrate-out.h);
 * its own request is answered when it has.
 */
static struct json_object *
worker_cmd_migrate_cancel(struct worker_request *r)
{
	switch (migrate_out_stop(r->w)) {
	case 0:
		return worker_ok(r, NULL);
	case -EBUSY:
		return worker_error(r, PROTO_ERR_BAD_STATE, "too late: the "
		    "target has the whole guest and may run it already");
	case -EALREADY:
		return worker_error(r, PROTO_ERR_BAD_STATE, "the migration "
		    "has ended");
	default:
		return worker_error(r, PROTO_ERR_BAD_STATE, "no migration "
		    "under way");
	}
}

static struct json_object *
worker_cmd_adopt(struct worker_request *r)
{
	struct worker *w = r->w;
	struct json_object *ret;

	if (!w->booted || w->ended)
		return worker_error(r, PROTO_ERR_BAD_STATE, w->ended ?
		    "guest has stopped" : "guest not booted");
	if ((ret = json_object_new_object()) == NULL)
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	if (wmsg_put_str(ret, WMSG_ADOPT_NAME, w->name) < 0 ||
	    wmsg_put_str(ret, WMSG_ADOPT_STATE, w->shutdown_pending ?
	    "stopping" : w->paused ? "paused" : "running") < 0 ||
	    wmsg_put_int(ret, WMSG_ADOPT_PID,
	    test_hook_adopt_pid(getpid())) < 0 ||
	    /* The next supervisor hands out no other guest this uid. */
	    wmsg_put_int(ret, WMSG_ADOPT_UID, getuid()) < 0 ||
	    wmsg_put_int(ret, WMSG_ADOPT_STARTED_MS, w->started_ms) < 0 ||
	    wmsg_put_int(ret, WMSG_ADOPT_LOG_START, w->log_start) < 0 ||
	    (w->vsock != NULL && wmsg_put_int(ret, WMSG_ADOPT_VSOCK_CID,
	    (int64_t)w->cfg.backends.vsock.ops->cid(
	    w->cfg.backends.vsock.ctx)) < 0) ||
	    (w->boot_facts != NULL && (wmsg_put(ret, WMSG_ADOPT_BOOT_FROM,
	    json_object_get(wmsg_get(w->boot_facts, WMSG_BOOTED_FROM))) < 0 ||
	    wmsg_put_str(ret, WMSG_ADOPT_SEED, wmsg_str(w->boot_facts,
	    WMSG_BOOTED_SEED, NULL)) < 0)) ||
	    wmsg_put(ret, WMSG_ADOPT_DEFINITION,
	    json_object_get(w->definition)) < 0) {
		json_object_put(ret);
		return worker_error(r, PROTO_ERR_INTERNAL, "out of memory");
	}
	return worker_ok(r, ret);
}

/*
 * worker.balloon {target_mib, stats_interval}: the guest should keep
 * target_mib of its RAM and give the rest up into its balloon; with
 * stats_interval, ask for its statistics that often (0: only for
 * vm.info).  Kept for the machines a reset builds.
 */
static struct json_object *
worker_cmd_balloon(struct worker_request *r)
{
	struct worker *w = r->w;
	int64_t mib = wmsg_int(r->args, WMSG_BALLOON_TARGET_MIB, 0);
	int64_t every = wmsg_int(r->args, WMSG_BALLOON_STATS_INTERVAL, -1);
	struct json_object *reply;
	char msg[160];
	int ret;

	if (!worker_need_machine(r, &reply))
		return reply;
	if (!w->cfg.backends.balloon)
		return worker_error(r, PROTO_ERR_BAD_STATE,
		    "the guest has no balloon (definition: \"balloon\")");
	if ((uint64_t)mib > w->cfg.memory_mib) {
		snprintf(msg, sizeof(msg), "target_mib: %lld is more than "
		    "the guest's %llu MiB of RAM", (long long)mib,
		    (unsigned long long)w->cfg.memory_mib);
		return worker_error(r, PROTO_ERR_INVALID_ARGUMENT, msg);
	}
	w->cfg.backends.balloon_pages =
	    (uint32_t)((w->cfg.memory_mib - (uint64_t)mib) << 8);
	if (every >= 0)
		w->cfg.backends.balloon_stats_ns = every * 1000000000;
	ret = machine_balloon(w->machine, w->cfg.backends.balloon_pages,
	    every >= 0 ? every * 1000000000 : -1);
	if (ret < 0)
		return worker_error(r, PROTO_ERR_INTERNAL, strerror(-ret));
	log_info("%s: balloon target %lld MiB (%u pages out)", w->name,
	    (long long)mib, w->cfg.backends.balloon_pages);
	return worker_ok(r, NULL);
}

/* Each request of worker-msg.h's vocabulary, by its number there. */
static const worker_handler worker_handlers[WMSG_NREQUESTS] = {
	[WMSG_REQ_BOOT] = worker_cmd_boot,
	[WMSG_REQ_PAUSE] = worker_cmd_pause,
	[WMSG_REQ_RESUME] = worker_cmd_resume,
	[WMSG_REQ_RESET] = worker_cmd_reset,
	[WMSG_REQ_SHUTDOWN] = worker_cmd_shutdown,
	[WMSG_REQ_INFO] = worker_cmd_info,
	[WMSG_REQ_STATS] = worker_cmd_stats,
	[WMSG_REQ_CONSOLE] = worker_cmd_console,
	[WMSG_REQ_DISPLAY] = worker_cmd_display,
	[WMSG_REQ_SCREENSHOT] = worker_cmd_screenshot,
	[WMSG_REQ_ADOPT] = worker_cmd_adopt,
	[WMSG_REQ_METRICS] = worker_cmd_metrics,
	[WMSG_REQ_SNAPSHOT] = worker_cmd_snapshot,
	[WMSG_REQ_MEDIA_EJECT] = worker_cmd_media_eject,
	[WMSG_REQ_MEDIA_INSERT] = worker_cmd_media_insert,
	[WMSG_REQ_MIGRATE_OUT] = worker_cmd_migrate_out,
	[WMSG_REQ_DISK_PUSH] = worker_cmd_disk_push,
	[WMSG_REQ_MIGRATE_CANCEL] = worker_cmd_migrate_cancel,
	[WMSG_REQ_NBD_FD] = worker_cmd_nbd_fd,
	[WMSG_REQ_NBD_REFUSED] = worker_cmd_nbd_fd,
	[WMSG_REQ_BALLOON] = worker_cmd_balloon,
};

_Static_assert(WMSG_DISKS_MAX == BOARD_MAX_DISKS, "worker.boot's disks");
_Static_assert(WMSG_RTC_SLICES_MIN == RTC_SLICES_MIN &&
    WMSG_RTC_SLICES_MAX == RTC_SLICES_MAX, "worker.boot's rtc_slices");

/*
 * One request line: parsed, its command looked up, its arguments
 * checked against their shape, and only then its handler.  The
 * descriptor of a request that takes one is taken off the link first,
 * whatever follows, so that the next request's is not mistaken for it.
 */
void
requests_handle(struct worker *w, const char *line, size_t len)
{
	struct proto_request req;
	struct worker_request r = { .w = w, .fd = -1, .fd2 = -1 };
	const struct wmsg_request_def *def;
	struct json_object *id = NULL, *reply;
	char desc[256];
	int ret, n;

	ret = proto_parse_request(line, len, &req, &id, desc, sizeof(desc));
	if (ret != 0) {
		link_send(w->link, proto_error(id, ret, "%s", desc));
		json_object_put(id);
		return;
	}
	r.id = req.id;
	r.args = req.arguments;
	if ((n = wmsg_request_lookup(req.command)) < 0)
		reply = proto_error(req.id, PROTO_ERR_UNKNOWN_COMMAND,
		    "unknown command '%s'", req.command);
	else {
		def = wmsg_request_def((enum wmsg_request)n);
		if (def->takes_fd > 0)
			r.fd = link_take_fd(w->link);
		if (def->takes_fd > 1)
			r.fd2 = link_take_fd(w->link);
		if (wmsg_check(def->args, r.args, desc, sizeof(desc)) < 0)
			reply = proto_error(req.id, PROTO_ERR_INVALID_ARGUMENT,
			    "%s: %s", def->name, desc);
		else
			reply = worker_handlers[n](&r);
	}
	if (r.fd >= 0)
		close(r.fd);
	if (r.fd2 >= 0)
		close(r.fd2);
	link_send(w->link, reply);
	json_object_put(req.root);
}
