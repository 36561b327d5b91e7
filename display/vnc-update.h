/*
 * One framebuffer update to one viewer, in the encoding that suits what
 * changed.  libvncserver encodes in the viewer's preferred encoding,
 * almost always tight, which is right for pictures and text.  Two shapes
 * of change it sends dearly:
 *
 *  - Rectangles each of one colour.  Tight searches any rectangle of
 *    4096 pixels or more for solid areas, and since it cannot tell
 *    beforehand how many rectangles that makes, it announces an unknown
 *    count and ends the update with a LastRect marker (12 bytes).  A
 *    rectangle of one colour goes as one solid rectangle with or without
 *    the search, so such an update goes without both.
 *  - A few solid blocks side by side or stacked (a bar moving over a
 *    picture of fills, a window's frame): libvncserver's region merges
 *    them into rectangles of several colours, which tight splits back
 *    (16 bytes a block, plus the marker), where RRE says each block in
 *    12 bytes and needs no marker.  So when the viewer said it decodes
 *    RRE and every rectangle is a few large blocks and no larger than
 *    the largest tight makes, the update goes as RRE.
 *
 * Pixels are read from the screen's frameBuffer, the picture the
 * encoders read.  On the loop's thread, as all of libvncserver here.
 */
#ifndef VMMD_VNC_UPDATE_H
#define VMMD_VNC_UPDATE_H

#include <stdbool.h>
#include <rfb/rfb.h>
#include <rfb/rfbregion.h>

/*
 * Before libvncserver reads the viewer's next message: if it is a
 * SetEncodings, whether RRE is among the encodings listed, into *rre
 * (left alone otherwise).  A peek: the message stays for libvncserver.
 * Over WebSocket the frames are masked and nothing is learnt.
 */
void	vnc_update_peek_encodings(rfbClientPtr cl, bool *rre);

/*
 * rfbSendFramebufferUpdate(cl, region) in the encoding chosen as above;
 * rre: the viewer decodes RRE.  Its result.
 */
bool	vnc_update_send(rfbClientPtr cl, sraRegionPtr region, bool rre);

#endif
