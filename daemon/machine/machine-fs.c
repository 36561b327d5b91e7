/* machine_fs_backend_gone(): see machine.h. */
#include <errno.h>

#include "iobus.h"
#include "machine.h"
#include "virtio-fs.h"
#include "virtio-pci.h"

int
machine_fs_backend_gone(struct machine *m)
{
	struct machine_device *md = machine_device(m, "virtio-fs");

	if (md == NULL || md->vdev.state == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	virtio_fs_backend_gone(virtio_pci_dev(md->vdev.state));
	vdev_unlock(&md->vdev);
	return 0;
}
