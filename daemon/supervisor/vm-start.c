/*
 * A start's worker.boot, filled from the definition and the files
 * opened for it (vm-start.h).  Everything the worker inherits is named
 * by its number in worker-link.h's table; the paths are for messages.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "vm-nvram.h"
#include "vm-start.h"

_Static_assert(CONFIG_NICS_MAX <= WMSG_NICS_MAX &&
    CONFIG_FORWARDS_MAX <= WMSG_FORWARDS_MAX &&
    CONFIG_SSH_KEYS_MAX <= WMSG_SEED_KEYS_MAX &&
    CONFIG_DISKS_MAX <= WMSG_DISKS_MAX,
    "a definition's parts fit the start contract");
_Static_assert(CONFIG_DISKS_MAX <= WLINK_MAX_DISKS,
    "worker-link.h's table has no number for every disk");
_Static_assert(CONFIG_DISKS_MAX * VM_FILES_BACKING_MAX <= WLINK_MAX_BACKING &&
    VM_FILES_BACKING_MAX <= WMSG_BACKING_MAX,
    "a disk's backing files have no number, or no room in worker.boot");

/* The VM of d whose worker has vsock CID cid, or NULL. */
static struct vm *
vm_start_cid_owner(struct vmmd *d, uint32_t cid)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (vm->w != NULL && vm->run.vsock_cid == cid)
			return vm;
	return NULL;
}

/* Is cid named by another definition than def? */
static bool
vm_start_cid_named(struct vmmd *d, const struct vm_def *def, uint32_t cid)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (vm->def != def && vm->def->vsock &&
		    vm->def->vsock_cid == cid)
			return true;
	return false;
}

int
vm_start_cid(struct vm *vm, uint32_t *cid, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct vm *other;
	uint64_t c;

	*cid = 0;
	if (!vm->def->vsock)
		return 0;
	if (vm->def->vsock_cid != 0) {
		other = vm_start_cid_owner(vm->d, vm->def->vsock_cid);
		if (other != NULL && other != vm) {
			*cls = PROTO_ERR_BAD_STATE;
			snprintf(err, errlen, "vsock: CID %u is VM '%s''s, "
			    "which runs", vm->def->vsock_cid,
			    other->def->name);
			return -EADDRINUSE;
		}
		*cid = vm->def->vsock_cid;
		return 0;
	}
	for (c = CONFIG_VSOCK_CID_MIN; c <= CONFIG_VSOCK_CID_MAX; c++)
		if (vm_start_cid_owner(vm->d, (uint32_t)c) == NULL &&
		    !vm_start_cid_named(vm->d, vm->def, (uint32_t)c)) {
			*cid = (uint32_t)c;
			return 0;
		}
	*cls = PROTO_ERR_LIMIT;
	snprintf(err, errlen, "vsock: no CID left");
	return -EADDRINUSE;
}

/*
 * A password for one run of a VM: WMSG_PASSWORD_MAX characters drawn
 * uniformly from letters and digits that cannot be mistaken for one
 * another (about 46 bits), URL-safe as they are.  0 or -errno.
 */
static int
vm_start_password(char out[WMSG_PASSWORD_MAX + 1])
{
	static const char set[] = "abcdefghijkmnopqrstuvwxyz"
	    "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
	const unsigned int n = sizeof(set) - 1, limit = 256 - 256 % n;
	unsigned char buf[32];
	size_t got = 0, i;

	while (got < WMSG_PASSWORD_MAX) {
		ssize_t r = getrandom(buf, sizeof(buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		for (i = 0; i < (size_t)r && got < WMSG_PASSWORD_MAX; i++)
			if (buf[i] < limit)	/* no bias */
				out[got++] = set[buf[i] % n];
	}
	out[got] = '\0';
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

/*
 * The display: the worker binds only literal addresses, so "localhost"
 * is sent as 127.0.0.1; port and http_port 0 mean the first free one.
 * Without a password of the definition's (and unless it says false),
 * one is generated for this run: the worker shows it to the daemon's
 * clients (vm.display, vm.info).  noVNC is served only if its directory
 * exists now: else the VM starts without it, and that is said once,
 * here.
 */
static int
vm_start_display(const struct vm_def *def, struct start_display *sd)
{
	const bool autoport = def->vnc_display == CONFIG_VNC_DISPLAY_AUTO;
	struct stat st;
	bool loopback;
	int rc;

	rc = start_params_set(&sd->listen, strcmp(def->vnc_addr,
	    "localhost") == 0 ? "127.0.0.1" : def->vnc_addr);
	sd->port = autoport ? 0 : CONFIG_VNC_PORT_BASE + def->vnc_display;
	if (def->vnc_password != NULL)
		snprintf(sd->password, sizeof(sd->password), "%s",
		    def->vnc_password);
	else if (!def->vnc_no_password) {
		int r = vm_start_password(sd->password);

		if (r < 0) {
			log_error("VM '%s': cannot generate a VNC password: "
			    "%s", def->name, strerror(-r));
			return -ENOMEM;
		}
	}
	sd->width = def->width;
	sd->height = def->height;
	if (def->vnc_web) {
		if (stat(VM_NOVNC_DIR, &st) == 0 && S_ISDIR(st.st_mode)) {
			sd->http_port = autoport ? 0 : CONFIG_VNC_HTTP_BASE +
			    def->vnc_display;
			rc |= start_params_set(&sd->web_dir, VM_NOVNC_DIR);
		} else
			log_info("VM '%s': %s is missing (install novnc): "
			    "starting without the web client", def->name,
			    VM_NOVNC_DIR);
	}
	if (rc != 0)
		return -ENOMEM;
	loopback = strcmp(def->vnc_addr, "localhost") == 0 ||
	    strncmp(def->vnc_addr, "127.", 4) == 0 ||
	    strcmp(def->vnc_addr, "::1") == 0;
	if (!loopback && def->vnc_no_password)
		log_warn("VM '%s': VNC on %s with no password: whoever "
		    "reaches the port controls the guest's keyboard",
		    def->name, def->vnc_addr);
	return 0;
}

static enum start_format
vm_start_format(enum vm_files_format f)
{
	return f == VM_FILES_QCOW2 ? START_FORMAT_QCOW2 : START_FORMAT_RAW;
}

/*
 * The disks: each at the descriptor it inherits, the top image (an
 * overlay disk's overlay) in the format vm-files.c found, over its
 * backing files, numbered on from the first disk's.
 */
static int
vm_start_disks(const struct vm_def *def, const struct vm_files *files,
    const struct vm_start_run *run, struct start_params *sp)
{
	unsigned int next = 0;
	int rc = 0;

	for (unsigned int i = 0; i < def->ndisks; i++) {
		struct start_disk *d = &sp->disks[sp->ndisks++];

		d->top.fd = WLINK_DISK_FD(i);
		/* An NBD disk's path is its server's address (nbd-addr.h),
		 * an RBD disk's its image (rbd-spec.h). */
		d->top.format = def->disks[i].nbd ? START_FORMAT_NBD :
		    def->disks[i].rbd ? START_FORMAT_RBD :
		    vm_start_format(files->disk_format[i]);
		rc |= start_params_set(&d->top.path,
		    files->overlay_path[i] != NULL ? files->overlay_path[i] :
		    def->disks[i].path);
		d->readonly = def->disks[i].readonly;
		d->sata = def->disks[i].sata;
		d->break_lock = def->disks[i].rbd && run->break_lock;
		rc |= start_params_set(&d->serial, def->disks[i].serial);
		for (unsigned int k = 0; k < files->nbacking[i]; k++) {
			struct start_image *im = &d->backing[d->nbacking++];

			im->fd = WLINK_BACKING_FD(next++);
			im->format = vm_start_format(
			    files->backing[i][k].format);
			rc |= start_params_set(&im->path,
			    files->backing[i][k].path);
		}
	}
	return rc;
}

/*
 * The cards: each card's TAP vm-files.c attached (at its
 * WLINK_TAP_FD()), or passt for the worker to start; its MAC.
 */
static int
vm_start_nics(const struct vm *vm, struct start_params *sp)
{
	const struct vm_def *def = vm->def;
	int rc = 0;

	for (unsigned int i = 0; i < def->nnics; i++) {
		const struct vm_nic *nic = &def->nics[i];
		struct start_nic *n = &sp->nics[sp->nnics++];

		config_net_mac(def, i, n->mac);
		n->user = nic->user;
		n->tap_fd = -1;
		if (!nic->user) {
			n->tap_fd = WLINK_TAP_FD(i);
			snprintf(n->tap, sizeof(n->tap), "%s", nic->tap);
			continue;
		}
		rc |= start_params_set(&n->passt, vm->d->passt != NULL ?
		    vm->d->passt : "passt");
		for (unsigned int k = 0; k < nic->nforward; k++) {
			const struct vm_forward *v = &nic->forward[k];

			n->forward[n->nforward++] = (struct start_forward){
				.udp = v->udp,
				.host_port = v->host_port,
				.guest_port = v->guest_port,
			};
			snprintf(n->forward[k].addr, sizeof(n->forward[k].addr),
			    "%s", v->addr);
		}
	}
	return rc;
}

/* cloud-init's seed, as the definition's cloud_init gives it. */
static int
vm_start_seed(const struct vm_def *def, struct start_seed *s)
{
	const struct vm_cloud_init *ci = &def->cloud_init;
	int rc;

	rc = start_params_set(&s->hostname, def->name);
	rc |= start_params_set(&s->user_data, ci->user_data);
	rc |= start_params_set(&s->network_config, ci->network_config);
	for (unsigned int i = 0; i < ci->nkeys; i++)
		rc |= start_params_set(&s->ssh_keys[s->nkeys++],
		    ci->ssh_keys[i]);
	return rc;
}

int
vm_start_params(const struct vm *vm, const struct vm_files *files,
    const struct vm_start_run *run, struct start_params *sp)
{
	const struct vm_def *def = vm->def;
	char kernel[32], initrd[32];
	int rc;

	snprintf(kernel, sizeof(kernel), "/proc/self/fd/%d", WLINK_KERNEL_FD);
	snprintf(initrd, sizeof(initrd), "/proc/self/fd/%d", WLINK_INITRD_FD);
	rc = start_params_set(&sp->name, def->name);
	if (config_boot(def) == VM_BOOT_DISK) {
		/* The first disk, the definition's command line added to
		 * the one its boot configuration gives (by default the
		 * serial console, which vmmd's console is). */
		sp->has_boot_disk = true;
		sp->boot_disk.disk = 0;
		rc |= start_params_set(&sp->boot_disk.append,
		    def->cmdline[0] != '\0' ? def->cmdline : "console=ttyS0");
	} else if (config_boot(def) == VM_BOOT_FIRMWARE) {
		/* The image, in the kernel's slot (vm_files_open_firmware). */
		rc |= start_params_set(&sp->firmware, kernel);
		rc |= start_params_set(&sp->firmware_name,
		    vm_start_firmware_image(vm->d, def));
		/* Its display's ROM, in the initrd's slot (ibid.). */
		if (def->vnc_addr != NULL)
			rc |= start_params_set(&sp->vgabios, initrd);
		memcpy(sp->boot_order, def->boot_order,
		    sizeof(sp->boot_order));
		sp->nboot_order = def->nboot_order;
		sp->boot_menu_ms = def->boot_menu ? (int)def->boot_menu_ms :
		    -1;
	} else {
		rc |= start_params_set(&sp->kernel, kernel);
		rc |= start_params_set(&sp->kernel_name, def->kernel != NULL ?
		    def->kernel : vm->d->default_kernel);
	}
	if (def->initrd != NULL) {
		rc |= start_params_set(&sp->initrd, initrd);
		rc |= start_params_set(&sp->initrd_name, def->initrd);
	}
	if (files->nvram_fd >= 0) {
		char path[PATH_MAX];

		sp->nvram_fd = WLINK_NVRAM_FD;
		if (vm_nvram_path(vm->d->nvramdir, def->name, path,
		    sizeof(path)) == 0)
			rc |= start_params_set(&sp->nvram_name, path);
	}
	if (def->cdrom != NULL) {
		sp->cdrom_fd = WLINK_CDROM_FD;
		rc |= start_params_set(&sp->cdrom_name, def->cdrom);
	}
	rc |= start_params_set(&sp->cmdline, def->cmdline);
	sp->memory_mib = def->memory_mib;
	sp->vcpus = def->vcpus;
	sp->has_uuid = def->has_uuid;
	memcpy(sp->uuid, def->uuid, sizeof(sp->uuid));
	sp->on_reboot = def->on_reboot == VM_ON_REBOOT_STOP ?
	    START_REBOOT_STOP : START_REBOOT_RESTART;
	sp->lost_ticks = def->lost_ticks == VM_LOST_TICKS_DISCARD ?
	    START_TICKS_DISCARD : START_TICKS_SLEW;
	sp->rtc_backlog_max = def->rtc_backlog_max;
	sp->rtc_slices = def->rtc_slices;
	sp->rng = def->rng;
	sp->balloon = def->balloon;
	rc |= start_params_set(&sp->console_log, run->console_log);
	sp->console_log_max = (int64_t)vm->d->console_log_max;
	/* For whichever vmmd adopts the worker later (worker.adopt). */
	sp->adopt_fd = WLINK_ADOPT_FD;
	sp->kvm_fd = WLINK_KVM_FD;
	sp->log_start = run->log_start;
	sp->started_ms = run->started_ms;
	sp->request_ns = run->request_ns;
	sp->definition = config_to_json(def, CONFIG_JSON_SECRETS);
	if (sp->definition == NULL)
		rc = -ENOMEM;
	rc |= vm_start_disks(def, files, run, sp);
	rc |= vm_start_nics(vm, sp);
	if (def->vnc_addr != NULL) {
		sp->has_display = true;
		rc |= vm_start_display(def, &sp->display);
	}
	if (run->vsock_cid != 0) {
		sp->has_vsock = true;
		sp->vsock = (struct start_vsock){ .fd = WLINK_VSOCK_FD,
		    .cid = run->vsock_cid };
	}
	if (def->fs_tag != NULL) {
		sp->has_fs = true;
		snprintf(sp->fs.tag, sizeof(sp->fs.tag), "%s", def->fs_tag);
		sp->fs.fd = WLINK_FS_FD;
		sp->fs.socket = def->fs_socket != NULL;
		sp->fs.readonly = def->fs_readonly;
		if (def->fs_socket == NULL && vm->d->virtiofsd != NULL)
			rc |= start_params_set(&sp->fs.virtiofsd,
			    vm->d->virtiofsd);
	}
	if (def->cloud_init.on) {
		sp->has_seed = true;
		rc |= vm_start_seed(def, &sp->seed);
	}
	return rc != 0 ? -ENOMEM : 0;
}

unsigned int
vm_start_fds(const struct vm_files *files, int passed[WLINK_MAX_PASSED])
{
	unsigned int npassed, nbacking = 0;

	passed[WLINK_SLOT(WLINK_KVM_FD)] = files->kvm_fd;
	passed[WLINK_SLOT(WLINK_KERNEL_FD)] = files->kernel_fd;
	passed[WLINK_SLOT(WLINK_INITRD_FD)] = files->initrd_fd;
	passed[WLINK_SLOT(WLINK_TAP_FD(0))] = files->tap_fd[0];
	passed[WLINK_SLOT(WLINK_VSOCK_FD)] = files->vsock_fd;
	for (unsigned int i = 0; i < WLINK_MAX_DISKS; i++)
		passed[WLINK_SLOT(WLINK_DISK_FD(i))] = i < files->ndisks ?
		    files->disk_fd[i] : -1;
	npassed = WLINK_SLOT(WLINK_DISK_FD(files->ndisks));
	for (unsigned int i = 0; i < files->ndisks; i++)
		for (unsigned int k = 0; k < files->nbacking[i]; k++)
			passed[WLINK_SLOT(WLINK_BACKING_FD(nbacking++))] =
			    files->backing[i][k].fd;
	if (nbacking > 0)
		npassed = WLINK_SLOT(WLINK_BACKING_FD(nbacking));
	/* Cards 1-3's TAPs after every backing slot, closed or not. */
	static_assert(CONFIG_NICS_MAX <= WLINK_MAX_NICS, "a TAP slot per card");
	for (unsigned int i = 1; i < CONFIG_NICS_MAX; i++)
		if (files->tap_fd[i] >= 0) {
			for (unsigned int k = npassed;
			    k < (unsigned int)WLINK_SLOT(WLINK_TAP_FD(i)); k++)
				passed[k] = -1;
			passed[WLINK_SLOT(WLINK_TAP_FD(i))] = files->tap_fd[i];
			npassed = WLINK_SLOT(WLINK_TAP_FD(i)) + 1;
		}
	/* The CD-ROM's image after every TAP slot, closed or not. */
	if (files->cdrom_fd >= 0) {
		for (unsigned int k = npassed;
		    k < (unsigned int)WLINK_SLOT(WLINK_CDROM_FD); k++)
			passed[k] = -1;
		passed[WLINK_SLOT(WLINK_CDROM_FD)] = files->cdrom_fd;
		npassed = WLINK_SLOT(WLINK_CDROM_FD) + 1;
	}
	/* The NVRAM file after it, the same way. */
	if (files->nvram_fd >= 0) {
		for (unsigned int k = npassed;
		    k < (unsigned int)WLINK_SLOT(WLINK_NVRAM_FD); k++)
			passed[k] = -1;
		passed[WLINK_SLOT(WLINK_NVRAM_FD)] = files->nvram_fd;
		npassed = WLINK_SLOT(WLINK_NVRAM_FD) + 1;
	}
	return npassed;
}

const char *
vm_start_firmware_image(const struct vmmd *d, const struct vm_def *def)
{
	switch (def->firmware) {
	case VM_FIRMWARE_BIOS:
		return d->bios;
	case VM_FIRMWARE_UEFI:
		return d->ovmf_code;
	case VM_FIRMWARE_NONE:
		break;
	}
	return NULL;
}

int
vm_start_nvram(const struct vm *vm, struct vm_files *files,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct stat st;

	if (vm->def->firmware != VM_FIRMWARE_UEFI)
		return 0;
	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (fstat(files->vars_fd, &st) < 0) {
		snprintf(err, errlen, "fstat: %s", strerror(errno));
		return -errno;
	}
	return vm_nvram_open(vm->d->nvramdir, vm->def->name,
	    (uint64_t)st.st_size, &files->nvram_fd, err, errlen);
}

int64_t
vm_start_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
