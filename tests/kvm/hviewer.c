/* See hviewer.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rfb/keysym.h>

#include "harness.h"
#include "hviewer.h"

bool
viewer_open(struct vview *v, int port, const char *password)
{
	const struct vview_opts o = {
		.port = port, .password = password, .exact = true,
	};

	return vview_open(v, &o);
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
viewer_open_vm(struct vview *v, struct h_conn *c, const char *name)
{
	char pw[64];
	int port = viewer_display(c, name, pw, sizeof(pw));

	if (port <= 0) {
		memset(v, 0, sizeof(*v));
		return false;
	}
	return viewer_open(v, port, pw[0] != '\0' ? pw : NULL);
}

bool
viewer_pump(struct vview *v, int ms)
{
	double deadline = h_now_ms() + ms;

	while (h_now_ms() < deadline)
		if (vview_step(v, 20000) < 0)
			return false;
	return true;
}

bool
viewer_wait_updates(struct vview *v, unsigned int want, int ms)
{
	double deadline = h_now_ms() + ms;

	while (v->updates < want && h_now_ms() < deadline)
		if (!viewer_pump(v, 50))
			return false;
	return v->updates >= want;
}

bool
viewer_wait_area(struct vview *v, uint64_t area, int ms)
{
	double deadline = h_now_ms() + ms;

	while (v->area < area && h_now_ms() < deadline)
		if (!viewer_pump(v, 50))
			return false;
	return v->area >= area;
}

/* A US keyboard: which characters need Shift. */
static bool
viewer_shifted(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || strchr("~!@#$%^&*()_+{}|:\"<>?",
	    ch) != NULL;
}

void
viewer_type(struct vview *v, const char *text)
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
