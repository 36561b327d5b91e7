/* See firmware.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/kvm.h>

#include "config.h"
#include "firmware.h"
#include "kvm.h"
#include "pc-layout.h"

/*
 * The 64-bit PCI window the DSDT offers above RAM: from the first GiB
 * boundary after it, 32 GiB, where SeaBIOS and OVMF place 64-bit BARs
 * (QEMU's default PCI hole above 4 GiB is as large).
 */

static void
firmware_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/*
 * fw_cfg's prepare for the ACPI files: the tables as the firmware left
 * the platform, its PM base and the windows over the BARs it placed.
 */
static int
firmware_acpi_prepare(void *opaque)
{
	struct firmware *fw = opaque;
	struct boot_acpi_config cfg;
	struct boot_pci_span span = { 0 };

	memset(&cfg, 0, sizeof(cfg));
	cfg.ncpus = fw->nvcpus;
	cfg.pm_base = fw->pm_base != NULL ? fw->pm_base(fw->pm_opaque) :
	    PC_ACPI_PM1A_EVT_PORT;
	if (fw->pci_span != NULL)
		fw->pci_span(fw->pci_opaque, &span);
	boot_dsdt_fw_windows(&cfg.dsdt, fw->low_ram, fw->high_ram, &span);
	return boot_fw_acpi_build(&fw->acpi, &cfg);
}

static void
firmware_acpi_items(struct firmware *fw)
{
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = BOOT_ACPI_TABLES_FILE, .data = fw->acpi.tables,
	    .len = sizeof(fw->acpi.tables), .prepare = firmware_acpi_prepare,
	    .opaque = fw };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = BOOT_ACPI_RSDP_FILE, .data = fw->acpi.rsdp,
	    .len = sizeof(fw->acpi.rsdp), .prepare = firmware_acpi_prepare,
	    .opaque = fw };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = BOOT_TABLE_LOADER_FILE, .data = fw->acpi.loader,
	    .len = sizeof(fw->acpi.loader), .prepare = firmware_acpi_prepare,
	    .opaque = fw };
}

/* The SMBIOS structures and entry point: their length or -errno. */
static int
firmware_smbios_build(struct firmware *fw)
{
	struct boot_smbios_config cfg = {
		.ncpus = fw->nvcpus,
		.low_ram = fw->low_ram,
		.high_ram = fw->high_ram,
		.uuid = fw->has_uuid ? fw->uuid : NULL,
		.version = VMMD_VERSION,
	};

	return boot_smbios_build(&cfg, fw->smbios, sizeof(fw->smbios),
	    fw->smbios_anchor);
}

/* SMBIOS describes nothing the firmware sets up: built now. */
static void
firmware_smbios_items(struct firmware *fw)
{
	int len = firmware_smbios_build(fw);

	fw->smbios_item = -1;
	if (len < 0)
		return;			/* the firmware's own tables, then */
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = BOOT_SMBIOS_ANCHOR_FILE, .data = fw->smbios_anchor,
	    .len = sizeof(fw->smbios_anchor) };
	fw->smbios_item = (int)fw->nitems;
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = BOOT_SMBIOS_TABLES_FILE, .data = fw->smbios,
	    .len = (uint32_t)len };
}

void
firmware_set_pci_span(struct firmware *fw,
    void (*get)(void *, struct boot_pci_span *), void *opaque)
{
	fw->pci_span = get;
	fw->pci_opaque = opaque;
}

void
firmware_set_uuid(struct firmware *fw, const uint8_t uuid[16])
{
	int len;

	memcpy(fw->uuid, uuid, sizeof(fw->uuid));
	fw->has_uuid = true;
	if (fw->smbios_item < 0)
		return;
	/* The same structures but for type 1's bytes: the same length. */
	len = firmware_smbios_build(fw);
	if (len >= 0)
		fw->items[fw->smbios_item].len = (uint32_t)len;
}

static void
firmware_items(struct firmware *fw, const struct boot_mem *mem,
    unsigned int ncpus, const struct firmware_boot *boot)
{
	size_t e820, bootorder;

	e820 = boot_firmware_e820(mem, fw->e820, sizeof(fw->e820));
	firmware_le16(fw->ncpus, (uint16_t)ncpus);
	firmware_le16(fw->sercon, PC_COM1_PORT);
	firmware_le16(fw->menu_wait, boot->menu ? (uint16_t)boot->menu_ms : 0);
	firmware_le16(fw->show_menu, 1);
	/* SeaBIOS's bootorder: one device path a line, the first boots
	 * first (its docs/Runtime_config); firmware_load() checked it fits. */
	bootorder = strlen(boot->order);
	memcpy(fw->bootorder, boot->order, bootorder);
	fw->nitems = 0;
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .key = FW_CFG_NB_CPUS, .data = fw->ncpus, .len = 2 };
	/* No hot-plug: as many CPUs as there are. */
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .key = FW_CFG_MAX_CPUS, .data = fw->ncpus, .len = 2 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "etc/e820", .data = fw->e820, .len = (uint32_t)e820 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "bootorder", .data = fw->bootorder,
	    .len = (uint32_t)bootorder };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "etc/sercon-port", .data = fw->sercon, .len = 2 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "etc/boot-menu-wait", .data = fw->menu_wait, .len = 2 };
	if (boot->menu)
		fw->items[fw->nitems++] = (struct fw_cfg_item){
		    .key = FW_CFG_BOOT_MENU, .data = fw->show_menu, .len = 2 };
	fw->nvcpus = ncpus;
	fw->low_ram = mem->low_size;
	fw->high_ram = mem->high_size;
	firmware_acpi_items(fw);
	firmware_smbios_items(fw);
}

/*
 * The flash's array read-only in memory (on) or not (reads exit to the
 * flash): under the flash's lock, on a vCPU thread.  A refusal leaves
 * reads exiting, which the flash answers right in every mode, only
 * slower; failing to unmap would let reads see the array where the
 * flash answers status, so it is counted as well.
 */
static void
firmware_vars_array(void *opaque, bool on)
{
	struct firmware *fw = opaque;
	const struct boot_firmware_layout *l = &fw->image.layout;

	if (kvm_set_memory_flags(fw->vm_fd, fw->vars_slot, l->vars_base,
	    on ? l->vars_size : 0, fw->vars->image, KVM_MEM_READONLY) < 0)
		fw->vars_map_errors++;
}

int
firmware_load(struct firmware *fw, int vm_fd, uint32_t slot,
    const struct boot_mem *mem, const char *path,
    struct pflash_store *vars, uint32_t vars_slot, unsigned int ncpus,
    const struct firmware_boot *boot, struct boot_cpu *cpu, char *err,
    size_t errlen)
{
	const struct boot_firmware_layout *l = &fw->image.layout;
	int ret;

	memset(fw, 0, sizeof(*fw));
	if (strlen(boot->order) > sizeof(fw->bootorder) ||
	    boot->menu_ms > UINT16_MAX) {
		snprintf(err, errlen, "the boot order or menu does not fit "
		    "fw_cfg");
		return -ENOSPC;
	}
	fw->vm_fd = vm_fd;
	ret = boot_firmware_load(mem, path, vars != NULL ? vars->size : 0,
	    &fw->image, cpu, err, errlen);
	if (ret < 0)
		return ret;
	/* Guest writes there exit as MMIO, which no device takes. */
	ret = kvm_set_memory_flags(vm_fd, slot, l->code_base, l->code_size,
	    fw->image.image, KVM_MEM_READONLY);
	if (ret < 0) {
		snprintf(err, errlen, "cannot map the firmware read-only at "
		    "the top of 4 GiB: %s", strerror(-ret));
		boot_firmware_free(&fw->image);
		return ret;
	}
	if (vars != NULL) {
		/* Writes exit to the flash; a new flash reads its array. */
		ret = kvm_set_memory_flags(vm_fd, vars_slot, l->vars_base,
		    l->vars_size, vars->image, KVM_MEM_READONLY);
		if (ret < 0) {
			snprintf(err, errlen, "cannot map the UEFI variables "
			    "at 0x%llx: %s", (unsigned long long)l->vars_base,
			    strerror(-ret));
			boot_firmware_free(&fw->image);
			return ret;
		}
		fw->vars = vars;
		fw->vars_slot = vars_slot;
		vars->array = firmware_vars_array;
		vars->array_opaque = fw;
	}
	firmware_items(fw, mem, ncpus, boot);
	return 0;
}

void
firmware_set_pm_base(struct firmware *fw, uint16_t (*get)(void *),
    void *opaque)
{
	fw->pm_base = get;
	fw->pm_opaque = opaque;
}

void
firmware_free(struct firmware *fw)
{
	if (fw->vars != NULL && fw->vars->array_opaque == fw) {
		fw->vars->array = NULL;
		fw->vars->array_opaque = NULL;
	}
	fw->vars = NULL;
	boot_firmware_free(&fw->image);
}
