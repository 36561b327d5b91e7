/*
 * An update's encoding from the shape of what changed; see vnc-update.h.
 */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "vnc-update.h"

/* Encodings of a SetEncodings looked at; RRE further down goes unseen. */
#define VNC_UPDATE_PEEK_ENCODINGS	64
/* RRE for rectangles of at most this many blocks besides the first
 * pixel's colour... */
#define VNC_UPDATE_RRE_MAX_BLOCKS	8
/* ...each this many pixels on average: smaller ones, glyphs say, are
 * better said by tight's palettes and zlib. */
#define VNC_UPDATE_RRE_MIN_BLOCK	1024
/* ...in rectangles of at most this many pixels: RRE converts a whole
 * rectangle into the buffer tight uses too (cl->beforeEncBuf), whose
 * pages stay; tight never fills more than 65536 pixels' worth of it. */
#define VNC_UPDATE_RRE_MAX_AREA		65536

void
vnc_update_peek_encodings(rfbClientPtr cl, bool *rre)
{
	uint8_t buf[4 + 4 * VNC_UPDATE_PEEK_ENCODINGS];
	size_t count, seen;
	ssize_t n;

	if (cl->wsctx != NULL)
		return;
	n = recv(cl->sock, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < 4 || buf[0] != rfbSetEncodings)
		return;
	count = (size_t)buf[2] << 8 | buf[3];
	seen = ((size_t)n - 4) / 4;
	*rre = false;
	for (size_t i = 0; i < count && i < seen; i++) {
		const uint8_t *e = buf + 4 + 4 * i;
		uint32_t enc = (uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 |
		    (uint32_t)e[2] << 8 | e[3];

		if (enc == rfbEncodingRRE)
			*rre = true;
	}
}

/*
 * The blocks of r that are not of its first pixel's colour (RRE's
 * background), counted as RRE would need them at most: lines that
 * repeat the line above add nothing, and along any other line each run
 * of one colour other than the background is a block.  -1 past max.
 */
static int
vnc_update_blocks(const rfbScreenInfoPtr s, const sraRect *r, int max)
{
	const char *line = s->frameBuffer +
	    (size_t)r->y1 * (size_t)s->paddedWidthInBytes + (size_t)r->x1 * 4;
	const uint32_t *above = NULL;
	int w = r->x2 - r->x1, blocks = 0;
	uint32_t bg;

	memcpy(&bg, line, sizeof(bg));
	for (int y = r->y1; y < r->y2; y++, line += s->paddedWidthInBytes) {
		const uint32_t *px = (const uint32_t *)(const void *)line;

		if (above != NULL && memcmp(px, above, (size_t)w * 4) == 0)
			continue;
		above = px;
		for (int x = 0; x < w;) {
			uint32_t colour = px[x];

			while (x < w && px[x] == colour)
				x++;
			if (colour != bg && ++blocks > max)
				return -1;
		}
	}
	return blocks;
}

/*
 * Whether every rectangle of region is of one colour (*solid), and, if
 * *blocky comes in true (RRE may be chosen), whether each is a few large
 * blocks.  Blocks are counted only while RRE is still possible for the
 * rectangle; otherwise the scan stops at its first other colour.
 */
static void
vnc_update_shape(const rfbScreenInfoPtr s, sraRegionPtr region,
    bool *solid, bool *blocky)
{
	sraRectangleIterator *it = sraRgnGetIterator(region);
	sraRect r;

	*solid = it != NULL;
	*blocky = *blocky && it != NULL;
	while ((*solid || *blocky) && it != NULL &&
	    sraRgnIteratorNext(it, &r)) {
		long area = (long)(r.x2 - r.x1) * (r.y2 - r.y1);
		bool rre = *blocky && area <= VNC_UPDATE_RRE_MAX_AREA;
		int blocks = vnc_update_blocks(s, &r,
		    rre ? VNC_UPDATE_RRE_MAX_BLOCKS : 0);

		if (blocks != 0)
			*solid = false;
		if (blocks != 0 && (!rre || blocks < 0 ||
		    area / (blocks + 1) < VNC_UPDATE_RRE_MIN_BLOCK))
			*blocky = false;
	}
	if (it != NULL)
		sraRgnReleaseIterator(it);
}

bool
vnc_update_send(rfbClientPtr cl, sraRegionPtr region, bool rre)
{
	uint32_t encoding = (uint32_t)cl->preferredEncoding;
	int preferred = cl->preferredEncoding;
	rfbBool lastrect = cl->enableLastRectEncoding;
	bool solid = false, blocky = rre;
	rfbBool sent;

	/* Only where the pixels looked at are those encoded: 32-bit,
	 * unscaled. */
	if ((encoding == rfbEncodingTight ||
	    encoding == rfbEncodingTightPng) &&
	    cl->screen->serverFormat.bitsPerPixel == 32 &&
	    cl->scaledScreen == cl->screen)
		vnc_update_shape(cl->screen, region, &solid, &blocky);
	else
		blocky = false;
	if (solid)
		cl->enableLastRectEncoding = FALSE;
	else if (blocky)
		cl->preferredEncoding = rfbEncodingRRE;
	sent = rfbSendFramebufferUpdate(cl, region);
	cl->enableLastRectEncoding = lastrect;
	cl->preferredEncoding = preferred;
	return sent;
}
