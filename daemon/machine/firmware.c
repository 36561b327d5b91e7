/* See firmware.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/kvm.h>

#include "firmware.h"
#include "kvm.h"
#include "pc-layout.h"

static void
firmware_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
firmware_items(struct firmware *fw, const struct boot_mem *mem,
    unsigned int ncpus)
{
	size_t e820;

	e820 = boot_firmware_e820(mem, fw->e820, sizeof(fw->e820));
	firmware_le16(fw->ncpus, (uint16_t)ncpus);
	firmware_le16(fw->sercon, PC_COM1_PORT);
	firmware_le16(fw->menu_wait, FIRMWARE_MENU_WAIT_MS);
	fw->nitems = 0;
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .key = FW_CFG_NB_CPUS, .data = fw->ncpus, .len = 2 };
	/* No hot-plug: as many CPUs as there are. */
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .key = FW_CFG_MAX_CPUS, .data = fw->ncpus, .len = 2 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "etc/e820", .data = fw->e820, .len = (uint32_t)e820 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "bootorder", .data = "", .len = 0 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "etc/sercon-port", .data = fw->sercon, .len = 2 };
	fw->items[fw->nitems++] = (struct fw_cfg_item){
	    .name = "etc/boot-menu-wait", .data = fw->menu_wait, .len = 2 };
}

int
firmware_load(struct firmware *fw, int vm_fd, uint32_t slot,
    const struct boot_mem *mem, const char *path, unsigned int ncpus,
    struct boot_cpu *cpu, char *err, size_t errlen)
{
	int ret;

	memset(fw, 0, sizeof(*fw));
	ret = boot_firmware_load(mem, path, &fw->image, cpu, err, errlen);
	if (ret < 0)
		return ret;
	/* Guest writes there exit as MMIO, which no device takes. */
	ret = kvm_set_memory_flags(vm_fd, slot,
	    BOOT_FIRMWARE_TOP - fw->image.size, fw->image.size,
	    fw->image.image, KVM_MEM_READONLY);
	if (ret < 0) {
		snprintf(err, errlen, "cannot map the firmware read-only at "
		    "the top of 4 GiB: %s", strerror(-ret));
		boot_firmware_free(&fw->image);
		return ret;
	}
	firmware_items(fw, mem, ncpus);
	return 0;
}

void
firmware_free(struct firmware *fw)
{
	boot_firmware_free(&fw->image);
}
