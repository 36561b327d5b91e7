/*
 * cloud-init's NoCloud seed, made by vmmd: an ISO 9660 image labelled
 * "cidata" (Rock Ridge and Joliet names, as cloud-localds makes) holding
 * meta-data (instance-id, local-hostname), user-data and, when given,
 * network-config.  cloud-init finds it by its label on any disk.
 *
 * user-data is the user's own file when one is given; the SSH keys
 * alone become "#cloud-config" with ssh_authorized_keys (the image's
 * default user gets them); both together become a MIME multipart
 * message of the two, the user's first.
 *
 * The instance-id is "iid-" NAME "-" and a hash of everything the seed
 * holds: changing the seed's content changes it, and cloud-init, seeing
 * a new instance, runs its once-per-instance modules again.
 */
#ifndef VMMD_NOCLOUD_SEED_H
#define VMMD_NOCLOUD_SEED_H

#include <stddef.h>

struct nocloud_seed {
	const char *hostname;		/* the VM's name */
	const char *user_data;		/* NULL: none given */
	const char *const *ssh_keys;
	unsigned int nkeys;
	const char *network_config;	/* NULL: none */
};

/* Its instance-id into out (at least 64 bytes). */
void	nocloud_instance_id(const struct nocloud_seed *s, char *out,
	    size_t outlen);
/*
 * The seed written as an ISO image to fd (at its start, fd empty):
 * 0 or -errno with a reason in err.  The instance-id in iid.
 */
int	nocloud_seed_write(const struct nocloud_seed *s, int fd, char *iid,
	    size_t iidlen, char *err, size_t errlen);

#endif
