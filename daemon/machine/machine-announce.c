/* machine_net_announce(): see machine.h. */
#include <stdio.h>

#include "iobus.h"
#include "machine.h"
#include "net-announce.h"

int
machine_net_announce(struct machine *m)
{
	struct machine_device *md;
	char name[32];
	int sent = 0;

	for (unsigned int i = 0; i < m->backends.nnics; i++) {
		/* The board's names for its cards (board-pc.c). */
		snprintf(name, sizeof(name), i == 0 ? "virtio-net" :
		    "virtio-net%u", i);
		if ((md = machine_device(m, name)) == NULL ||
		    md->vdev.state == NULL)
			continue;
		vdev_lock(&md->vdev);
		if (net_announce(&m->backends.net[i]) == 0)
			sent++;
		vdev_unlock(&md->vdev);
	}
	return sent;
}
