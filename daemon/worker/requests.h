/* The supervisor's requests: see requests.c. */
#ifndef VMMD_REQUESTS_H
#define VMMD_REQUESTS_H

#include <stddef.h>

#include "worker.h"

/* Parse one request line, run its handler, send the one reply. */
void	requests_handle(struct worker *w, const char *line, size_t len);

#endif
