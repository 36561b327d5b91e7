/* See qcow2-decompress.h. */
#include <errno.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "qcow2-decompress.h"

static int
qcow2_inflate(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen)
{
	z_stream z;
	int ret;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, -12) != Z_OK)
		return -EIO;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)inlen;
	z.next_out = out;
	z.avail_out = (uInt)outlen;
	ret = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	/* A full cluster, whether or not the stream said it ended. */
	if ((ret == Z_STREAM_END || ret == Z_OK || ret == Z_BUF_ERROR) &&
	    z.avail_out == 0)
		return 0;
	return -EIO;
}

static int
qcow2_unzstd(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen)
{
	ZSTD_inBuffer ib = { in, inlen, 0 };
	ZSTD_outBuffer ob = { out, outlen, 0 };
	ZSTD_DCtx *d;
	size_t ret;

	if ((d = ZSTD_createDCtx()) == NULL)
		return -ENOMEM;
	/* A cluster is at most 2 MiB: no frame needs a larger window. */
	ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 22);
	/* One frame, read until the cluster is full or nothing moves. */
	for (;;) {
		size_t ipos = ib.pos, opos = ob.pos;

		ret = ZSTD_decompressStream(d, &ob, &ib);
		if (ZSTD_isError(ret) || ob.pos == ob.size || ret == 0)
			break;
		if (ib.pos == ipos && ob.pos == opos)
			break;
	}
	ZSTD_freeDCtx(d);
	return !ZSTD_isError(ret) && ob.pos == ob.size ? 0 : -EIO;
}

int
qcow2_decompress(enum qcow2_compression type, const uint8_t *in,
    size_t inlen, uint8_t *out, size_t outlen)
{
	switch (type) {
	case QCOW2_COMPRESSION_DEFLATE:
		return qcow2_inflate(in, inlen, out, outlen);
	case QCOW2_COMPRESSION_ZSTD:
		return qcow2_unzstd(in, inlen, out, outlen);
	}
	return -EIO;
}
