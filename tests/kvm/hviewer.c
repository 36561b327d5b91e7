/* See hviewer.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rfb/keysym.h>

#include "harness.h"
#include "hviewer.h"

static int viewer_tag;

/*
 * libvncclient's own messages as TAP comments: its default prints plain
 * lines, which a TAP parser reading the test host's merged console takes
 * for output it does not know.
 */
static void
viewer_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tap_diag("libvncclient: %s", buf);
}

static char *
viewer_password(rfbClient *client)
{
	struct viewer *v = rfbClientGetClientData(client, &viewer_tag);

	/* NULL, not "": libvncclient does not free an empty password. */
	return v->password != NULL ? strdup(v->password) : NULL;
}

static void
viewer_rect(rfbClient *client, int x, int y, int w, int h)
{
	struct viewer *v = rfbClientGetClientData(client, &viewer_tag);

	v->area += (uint64_t)w * (uint64_t)h;
	if (y + h > v->bottom)
		v->bottom = y + h;
}

static void
viewer_done(rfbClient *client)
{
	struct viewer *v = rfbClientGetClientData(client, &viewer_tag);

	v->updates++;
}

bool
viewer_open(struct viewer *v, int port, const char *password)
{
	rfbClient *c;

	rfbClientLog = rfbClientErr = viewer_log;
	c = rfbGetClient(8, 3, 4);
	memset(v, 0, sizeof(*v));
	v->password = password;
	c->format.redShift = 16;
	c->format.greenShift = 8;
	c->format.blueShift = 0;
	c->appData.encodingsString = "zrle raw";
	c->appData.enableJPEG = FALSE;
	c->appData.useRemoteCursor = FALSE;
	c->GetPassword = viewer_password;
	c->GotFrameBufferUpdate = viewer_rect;
	c->FinishedFrameBufferUpdate = viewer_done;
	free(c->serverHost);
	c->serverHost = strdup("127.0.0.1");
	c->serverPort = port;
	rfbClientSetClientData(c, &viewer_tag, v);
	if (!rfbInitClient(c, NULL, NULL))	/* frees c */
		return false;
	v->client = c;
	return true;
}

int
viewer_display(struct h_conn *c, const char *name, char *pw, size_t len)
{
	struct json_object *r;
	const char *s;
	int port;

	r = h_callf(c, H_REPLY_MS, "vm.display", "{\"name\":\"%s\"}", name);
	port = (int)h_int(h_ret(r), "port", -1);
	s = h_str(h_ret(r), "password");
	snprintf(pw, len, "%s", s != NULL ? s : "");
	json_object_put(r);
	return port;
}

bool
viewer_open_vm(struct viewer *v, struct h_conn *c, const char *name)
{
	char pw[64];
	int port = viewer_display(c, name, pw, sizeof(pw));
	bool ok;

	if (port <= 0) {
		memset(v, 0, sizeof(*v));
		return false;
	}
	ok = viewer_open(v, port, pw[0] != '\0' ? pw : NULL);
	v->password = NULL;	/* asked for only while connecting */
	return ok;
}

void
viewer_close(struct viewer *v)
{
	if (v->client == NULL)
		return;
	free(v->client->frameBuffer);
	rfbClientCleanup(v->client);
	v->client = NULL;
}

bool
viewer_pump(struct viewer *v, int ms)
{
	double deadline = h_now_ms() + ms;
	int n;

	while (h_now_ms() < deadline) {
		n = WaitForMessage(v->client, 20000);
		if (n < 0)
			return false;
		if (n > 0 && !HandleRFBServerMessage(v->client))
			return false;
	}
	return true;
}

bool
viewer_wait_updates(struct viewer *v, unsigned int want, int ms)
{
	double deadline = h_now_ms() + ms;

	while (v->updates < want && h_now_ms() < deadline)
		if (!viewer_pump(v, 50))
			return false;
	return v->updates >= want;
}

bool
viewer_wait_area(struct viewer *v, uint64_t area, int ms)
{
	double deadline = h_now_ms() + ms;

	while (v->area < area && h_now_ms() < deadline)
		if (!viewer_pump(v, 50))
			return false;
	return v->area >= area;
}

uint32_t
viewer_pixel(const struct viewer *v, int x, int y)
{
	const uint32_t *fb = (const uint32_t *)v->client->frameBuffer;

	return fb[y * v->client->width + x] & 0xffffff;
}

/* A US keyboard: which characters need Shift. */
static bool
viewer_shifted(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || strchr("~!@#$%^&*()_+{}|:\"<>?",
	    ch) != NULL;
}

void
viewer_type(struct viewer *v, const char *text)
{
	const char *p;

	for (p = text; *p != '\0'; p++) {
		uint32_t sym = *p == '\n' ? XK_Return : (uint8_t)*p;
		bool shift = viewer_shifted(*p);

		if (shift)
			SendKeyEvent(v->client, XK_Shift_L, TRUE);
		SendKeyEvent(v->client, sym, TRUE);
		SendKeyEvent(v->client, sym, FALSE);
		if (shift)
			SendKeyEvent(v->client, XK_Shift_L, FALSE);
		viewer_pump(v, 20);		/* a typist's pace */
	}
}
