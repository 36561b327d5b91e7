/* machine_balloon(), _target() and _stats(): see machine.h. */
#include <errno.h>

#include "iobus.h"
#include "machine.h"
#include "virtio-balloon.h"
#include "virtio-pci.h"

/* The board's name for it (board-pc.c). */
#define MACHINE_BALLOON	"virtio-balloon"

int
machine_balloon(struct machine *m, uint32_t pages, int64_t stats_period_ns)
{
	struct machine_device *md = machine_device(m, MACHINE_BALLOON);
	struct virtio_dev *d;

	if (md == NULL || md->vdev.state == NULL)
		return -ENODEV;
	d = virtio_pci_dev(md->vdev.state);
	vdev_lock(&md->vdev);
	virtio_balloon_set_target(d, pages);
	if (stats_period_ns >= 0)
		virtio_balloon_stats_every(d, stats_period_ns);
	vdev_unlock(&md->vdev);
	return 0;
}

int
machine_balloon_target(struct machine *m, uint32_t *pages)
{
	struct machine_device *md = machine_device(m, MACHINE_BALLOON);

	if (md == NULL || md->vdev.state == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	*pages = virtio_balloon_target(virtio_pci_dev(md->vdev.state));
	vdev_unlock(&md->vdev);
	return 0;
}

int
machine_balloon_stats(struct machine *m)
{
	struct machine_device *md = machine_device(m, MACHINE_BALLOON);
	int ret;

	if (md == NULL || md->vdev.state == NULL)
		return -ENODEV;
	vdev_lock(&md->vdev);
	ret = virtio_balloon_stats_request(virtio_pci_dev(md->vdev.state));
	vdev_unlock(&md->vdev);
	return ret;
}
