/* See irqroute.h for who owns a route and the locking. */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "irqroute.h"
#include "kvm.h"

int
irqroute_new(struct irqroute **out, int vm_fd,
    const struct kvm_irq_routing_entry *base, unsigned int nbase)
{
	struct irqroute *ir;
	int max, ret;

	ir = calloc(1, sizeof(*ir));
	if (ir == NULL)
		return -ENOMEM;
	ir->vm_fd = vm_fd;
	/* Without irqfds no MSI route is any use: room for none. */
	ir->irqfd = kvm_check_extension(vm_fd, KVM_CAP_IRQFD) > 0;
	max = kvm_check_extension(vm_fd, KVM_CAP_IRQ_ROUTING);
	if (max < (int)nbase)
		max = (int)nbase;
	ret = gsi_table_init(&ir->table, base, nbase,
	    ir->irqfd ? (unsigned int)max : nbase);
	if (ret < 0)
		goto free_ir;
	ret = kvm_set_gsi_routing(vm_fd, gsi_table_kvm(&ir->table));
	if (ret < 0)
		goto fini_table;
	ir->updates++;
	pthread_mutex_init(&ir->lock, NULL);
	*out = ir;
	return 0;

fini_table:
	gsi_table_fini(&ir->table);
free_ir:
	free(ir);
	return ret;
}

void
irqroute_free(struct irqroute *ir)
{
	if (ir == NULL)
		return;
	pthread_mutex_destroy(&ir->lock);
	gsi_table_fini(&ir->table);
	free(ir);
}

/* A new route for the message (addr, data): its GSI or -errno. */
static int
irqroute_add(struct irqroute *ir, uint64_t addr, uint32_t data)
{
	int gsi, ret;

	pthread_mutex_lock(&ir->lock);
	gsi = gsi_table_add(&ir->table, addr, data);
	if (gsi >= 0) {
		ret = kvm_set_gsi_routing(ir->vm_fd,
		    gsi_table_kvm(&ir->table));
		ir->updates++;
		if (ret < 0) {
			gsi_table_del(&ir->table, (unsigned int)gsi);
			gsi = ret;
		}
	}
	if (gsi < 0)
		ir->refused++;
	pthread_mutex_unlock(&ir->lock);
	return gsi;
}

/* Out of the table, and out of KVM's (what the next change would do). */
static void
irqroute_del(struct irqroute *ir, unsigned int gsi)
{
	pthread_mutex_lock(&ir->lock);
	if (gsi_table_del(&ir->table, gsi) == 0) {
		(void)kvm_set_gsi_routing(ir->vm_fd,
		    gsi_table_kvm(&ir->table));
		ir->updates++;
	}
	pthread_mutex_unlock(&ir->lock);
}

int
irqroute_msi_set(struct irqroute *ir, struct irqroute_msi *m, uint64_t addr,
    uint32_t data)
{
	int gsi, ret;

	if (irqroute_msi_routes(m, addr, data))
		return 0;
	if (m->efd >= 0) {
		/* Retarget: the irqfd follows its GSI's new entry. */
		pthread_mutex_lock(&ir->lock);
		ret = gsi_table_set(&ir->table, m->gsi, addr, data);
		if (ret == 0) {
			ret = kvm_set_gsi_routing(ir->vm_fd,
			    gsi_table_kvm(&ir->table));
			ir->updates++;
		}
		pthread_mutex_unlock(&ir->lock);
		if (ret == 0) {
			m->addr = addr;
			m->data = data;
			return 0;
		}
		/* KVM may still route the old message: drop it all. */
		irqroute_msi_clear(ir, m);
		return ret;
	}
	m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->efd < 0) {
		ret = -errno;
		goto fail;
	}
	gsi = irqroute_add(ir, addr, data);
	if (gsi < 0) {
		ret = gsi;
		goto close_efd;
	}
	ret = kvm_irqfd(ir->vm_fd, m->efd, (uint32_t)gsi, true);
	if (ret < 0)
		goto del_route;
	m->gsi = (unsigned int)gsi;
	m->addr = addr;
	m->data = data;
	return 0;

del_route:
	irqroute_del(ir, (unsigned int)gsi);
	pthread_mutex_lock(&ir->lock);
	ir->refused++;
	pthread_mutex_unlock(&ir->lock);
close_efd:
	close(m->efd);
fail:
	m->efd = -1;
	return ret;
}

void
irqroute_msi_clear(struct irqroute *ir, struct irqroute_msi *m)
{
	if (m->efd < 0)
		return;
	/* Deassigning waits for KVM to be done with the eventfd. */
	(void)kvm_irqfd(ir->vm_fd, m->efd, m->gsi, false);
	close(m->efd);
	m->efd = -1;
	irqroute_del(ir, m->gsi);
}

int
irqroute_msi_raise(const struct irqroute_msi *m)
{
	uint64_t one = 1;

	if (write(m->efd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

static const struct figure irqroute_figure_rows[] = {
	{ "msi_routes", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "MSI routes now", FIGURE_AT(struct irqroute_stats, routes) },
	{ "max_msi_routes", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "The most MSI routes the VM may have",
	    FIGURE_AT(struct irqroute_stats, max_routes) },
	{ "updates", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Changes of the VM's routing given to KVM",
	    FIGURE_AT(struct irqroute_stats, updates) },
	{ "refused", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "MSI routes refused: past the bound or refused by KVM",
	    FIGURE_AT(struct irqroute_stats, refused) },
};

const struct figure_table irqroute_figures =
    FIGURE_TABLE(irqroute_figure_rows);

void
irqroute_get_stats(struct irqroute *ir, struct irqroute_stats *st)
{
	pthread_mutex_lock(&ir->lock);
	st->routes = gsi_table_msi_count(&ir->table);
	st->max_routes = ir->table.max_msi;
	st->updates = ir->updates;
	st->refused = ir->refused;
	pthread_mutex_unlock(&ir->lock);
}
