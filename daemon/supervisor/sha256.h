/*
 * SHA-256 (FIPS 180-4) of a buffer in memory, as lowercase hex: what
 * vm.info shows of a secret it must not show (cloud-init's user-data),
 * so that a user can tell which file a VM has (sha256sum) without
 * anyone reading it.
 */
#ifndef VMMD_SHA256_H
#define VMMD_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN	32
#define SHA256_HEX_LEN	(2 * SHA256_LEN + 1)	/* with the NUL */

void	sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* The digest as 64 lowercase hex digits and a NUL into hex. */
void	sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN]);

#endif
