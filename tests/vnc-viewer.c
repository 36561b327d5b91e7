/* See vnc-viewer.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "vnc-viewer.h"

static int vview_tag;
static atomic_bool vview_silent;
static pthread_once_t vview_log_once = PTHREAD_ONCE_INIT;

/*
 * libvncclient's messages as TAP comments: its default prints plain
 * lines, which a TAP parser takes for output it does not know.
 */
static void
vview_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (vview_silent)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tap_diag("libvncclient: %s", buf);
}

static void
vview_log_init(void)
{
	rfbClientLog = rfbClientErr = vview_log;
}

void
vview_quiet(void)
{
	vview_silent = true;
}

static void
vview_set_client(struct vview *v, rfbClient *c)
{
	if (v->opts.lock != NULL)
		pthread_mutex_lock(v->opts.lock);
	v->client = c;
	if (v->opts.lock != NULL)
		pthread_mutex_unlock(v->opts.lock);
}

static char *
vview_password(rfbClient *client)
{
	struct vview *v = rfbClientGetClientData(client, &vview_tag);

	/* NULL, not "": libvncclient does not free an empty password. */
	return v->opts.password != NULL ? strdup(v->opts.password) : NULL;
}

static void
vview_rect(rfbClient *client, int x, int y, int w, int h)
{
	struct vview *v = rfbClientGetClientData(client, &vview_tag);

	v->rects++;
	v->area += (uint64_t)w * (uint64_t)h;
	if (y + h > v->bottom)
		v->bottom = y + h;
	if (v->opts.on_rect != NULL)
		v->opts.on_rect(v->opts.arg, x, y, w, h);
}

static void
vview_done(rfbClient *client)
{
	struct vview *v = rfbClientGetClientData(client, &vview_tag);

	v->updates++;
}

bool
vview_open(struct vview *v, const struct vview_opts *o)
{
	rfbClient *c;
	bool ok;

	pthread_once(&vview_log_once, vview_log_init);
	memset(v, 0, sizeof(*v));
	v->opts = *o;
	c = rfbGetClient(8, 3, 4);
	if (o->exact) {
		c->format.redShift = 16;
		c->format.greenShift = 8;
		c->format.blueShift = 0;
		c->appData.encodingsString = "zrle raw";
		c->appData.enableJPEG = FALSE;
	}
	if (o->encodings != NULL)
		c->appData.encodingsString = o->encodings;
	c->appData.useRemoteCursor = FALSE;
	c->GetPassword = vview_password;
	c->GotFrameBufferUpdate = vview_rect;
	c->FinishedFrameBufferUpdate = vview_done;
	free(c->serverHost);
	c->serverHost = strdup(o->host != NULL ? o->host : "127.0.0.1");
	c->serverPort = o->port;
	rfbClientSetClientData(c, &vview_tag, v);
	ok = rfbInitClient(c, NULL, NULL);	/* frees c when it fails */
	v->opts.password = NULL;	/* asked for only while connecting */
	if (ok)
		vview_set_client(v, c);
	return ok;
}

void
vview_close(struct vview *v)
{
	rfbClient *c = v->client;

	if (c == NULL)
		return;
	vview_set_client(v, NULL);
	free(c->frameBuffer);	/* the application's, says libvncclient */
	rfbClientCleanup(c);
}

int
vview_step(struct vview *v, unsigned int us)
{
	int n;
	bool ok;

	n = WaitForMessage(v->client, us);
	if (n <= 0)
		return n < 0 ? -1 : 0;
	if (v->opts.lock != NULL)
		pthread_mutex_lock(v->opts.lock);
	ok = HandleRFBServerMessage(v->client);
	if (v->opts.lock != NULL)
		pthread_mutex_unlock(v->opts.lock);
	if (!ok) {
		errno = ECONNRESET;
		return -1;
	}
	return 1;
}

uint32_t
vview_pixel(const struct vview *v, int x, int y)
{
	const uint32_t *fb = (const uint32_t *)v->client->frameBuffer;

	return fb[y * v->client->width + x] & 0xffffff;
}
