/*
 * libFuzzer: a live migration's stream as the target reads it
 * (daemon/migrate): the header, then frames parsed, checked and taken
 * by the receiver (mig-recv.h) into guest RAM of two small regions,
 * each allocated to its size (low RAM at 0, high RAM at 4 GiB), until
 * END, an error or the end of the input; then every section it kept is
 * looked up again.  Whatever the bytes, no crash, no leak, no access
 * outside the regions or what was allocated.
 *
 * Input: one byte of flags (bit 0: checksums as given, checked; clear:
 * not checked, so that frames reach the receiver), then the stream.
 * The seeds (corpus/migrate) are streams a source would send.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mig-recv.h"
#include "mig-stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LOW_SIZE	(16 * MIG_PAGE_SIZE)
#define HIGH_SIZE	(4 * MIG_PAGE_SIZE)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_region regions[2] = {
		{ 0, LOW_SIZE, malloc(LOW_SIZE) },
		{ 0x100000000ull, HIGH_SIZE, malloc(HIGH_SIZE) },
	};
	struct mig_recv r;
	struct mig_frame f;
	char err[256];
	const uint8_t *p;
	size_t len, i;
	bool crc;
	int rc = 0;

	if (regions[0].host == NULL || regions[1].host == NULL)
		abort();
	if (size < 1 + MIG_HEADER_SIZE)
		goto out;
	crc = data[0] & 1;
	data++;
	size--;
	if (mig_header_check(data, err, sizeof(err)) < 0)
		goto out;
	data += MIG_HEADER_SIZE;
	size -= MIG_HEADER_SIZE;
	mig_recv_init(&r, regions, 2);
	while (rc == 0 && size >= MIG_FRAME_HEADER) {
		if (mig_frame_parse(data, &f, err, sizeof(err)) < 0)
			break;
		data += MIG_FRAME_HEADER;
		size -= MIG_FRAME_HEADER;
		if (f.len > size)
			break;
		if (crc && mig_frame_verify(&f, data, err, sizeof(err)) < 0)
			break;
		/* A copy of its size: ASan sees a read past the frame. */
		uint8_t *frame = malloc(f.len > 0 ? f.len : 1);

		if (frame == NULL)
			abort();
		memcpy(frame, data, f.len);
		rc = mig_recv_frame(&r, &f, frame, err, sizeof(err));
		free(frame);
		data += f.len;
		size -= f.len;
	}
	for (i = 0; i < r.nsecs; i++) {
		p = mig_recv_section(&r, r.secs[i].name, &len);
		if (p == NULL || len != r.secs[i].len ||
		    (len > 0 && p + len > r.state + r.len))
			abort();
	}
	mig_recv_free(&r);
out:
	free(regions[0].host);
	free(regions[1].host);
	return 0;
}
