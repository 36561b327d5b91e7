/*
 * See metrics.h.
 *
 * Connections: each listener has an evhttp of its own, which makes each
 * connection's bufferevent through our callback (evhttp_set_bevcb):
 * that refuses past the listener's budget (METRICS_MAX_CONNS on the
 * Unix socket, METRICS_TCP_MAX_CONNS on TCP, so that peers on the
 * network cannot keep local scrapers out) and gives each connection
 * the listener's deadline.  We hold a reference on the bufferevent,
 * so that its descriptor stays ours until we let go: at the deadline a
 * connection evhttp still serves is shut down (evhttp then frees it as
 * one the peer closed), one it already freed is only released.  Once a
 * request arrives, the connection's close callback releases it at once
 * instead.  Every reply says "Connection: close": one request per
 * connection, so a slow or idle client holds a slot for at most the
 * deadline, and the header and body limits bound what it can send.
 *
 * Scrapes: each VM with a worker that serves requests is asked for
 * worker.metrics.  An answer that comes after its scrape has ended
 * finds its ask detached, and is dropped: the link always calls back,
 * with an error if the worker goes away, so asks are freed there.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "control.h"
#include "counters.h"
#include "log.h"
#include "metrics.h"
#include "metrics-fmt.h"
#include "vm.h"
#include "vsock-proxy.h"
#include "worker-link.h"

struct metrics;
struct metrics_conn;
struct metrics_scrape;

/* The Unix socket's, and the TCP address's if there is one. */
#define METRICS_NLISTENERS	2

struct metrics_listener {
	struct metrics *m;
	struct evhttp *http;		/* NULL: not listening */
	const char *what;		/* "unix", "tcp" */
	unsigned int nconns, max;
	int deadline;			/* s: a connection's whole life */
	uint64_t refused;		/* connections past max */
};

struct metrics {
	struct vmmd *d;
	struct metrics_listener l[METRICS_NLISTENERS];
	char *path;			/* the Unix socket, unlinked at the end */
	TAILQ_HEAD(, metrics_conn) conns;
	TAILQ_HEAD(, metrics_scrape) scrapes;
	unsigned int nscrapes;
};

struct metrics_conn {
	TAILQ_ENTRY(metrics_conn) entry;
	struct metrics *m;
	struct metrics_listener *l;
	struct bufferevent *bev;	/* one reference is ours */
	struct evhttp_connection *evcon;	/* once a request came */
	struct metrics_scrape *scrape;	/* waiting for workers, or NULL */
	struct event *deadline;
};

/* One worker asked; lives until its callback, even past the scrape. */
struct metrics_ask {
	struct metrics_scrape *s;	/* NULL once the scrape has ended */
	size_t index;
};

struct metrics_scrape {
	TAILQ_ENTRY(metrics_scrape) entry;
	struct metrics *m;
	struct evhttp_request *req;	/* NULL once its connection went */
	struct metrics_conn *conn;
	bool openmetrics, head;
	struct event *deadline;
	size_t nvms, waiting;
	struct metrics_scrape_vm {
		char *name;
		struct metrics_ask *ask;	/* NULL once answered */
		struct json_object *families;	/* the answer, or NULL */
	} *vms;
};

/* Connections ---------------------------------------------------------- */

static void
metrics_conn_free(struct metrics_conn *c)
{
	struct metrics *m = c->m;

	if (c->scrape != NULL) {
		c->scrape->req = NULL;
		c->scrape->conn = NULL;
	}
	TAILQ_REMOVE(&m->conns, c, entry);
	c->l->nconns--;
	event_free(c->deadline);
	bufferevent_decref(c->bev);
	free(c);
}

/* evhttp frees the connection: its bufferevent goes when we let go. */
static void
metrics_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	metrics_conn_free(arg);
}

static void
metrics_conn_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct metrics_conn *c = arg;
	bufferevent_data_cb readcb;

	/*
	 * Still evhttp's (its callbacks set): end it by closing the
	 * socket under it, which evhttp sees as the peer's close.
	 */
	bufferevent_getcb(c->bev, &readcb, NULL, NULL, NULL);
	if (readcb != NULL) {
		shutdown(bufferevent_getfd(c->bev), SHUT_RDWR);
		if (c->evcon != NULL)
			evhttp_connection_set_closecb(c->evcon, NULL, NULL);
	}
	metrics_conn_free(c);
}

static struct bufferevent *
metrics_bevcb(struct event_base *base, void *arg)
{
	struct metrics_listener *l = arg;
	struct metrics *m = l->m;
	struct timeval tv = { l->deadline, 0 };
	struct metrics_conn *c;

	/*
	 * evhttp makes a bufferevent of its own when we give none, so one
	 * past the limit gets a deadline that has passed already: it is
	 * closed on the loop's next turn, before it is read.
	 */
	if (l->nconns >= l->max) {
		if (l->refused++ == 0)
			log_warn("metrics: more than %u connections at once "
			    "on %s: closing the others", l->max, l->what);
		tv.tv_sec = 0;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->m = m;
	c->l = l;
	c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	c->deadline = evtimer_new(base, metrics_conn_deadline, c);
	if (c->bev == NULL || c->deadline == NULL ||
	    evtimer_add(c->deadline, &tv) < 0) {
		if (c->bev != NULL)
			bufferevent_free(c->bev);
		if (c->deadline != NULL)
			event_free(c->deadline);
		free(c);
		return NULL;
	}
	bufferevent_incref(c->bev);
	TAILQ_INSERT_TAIL(&m->conns, c, entry);
	l->nconns++;
	return c->bev;
}

static struct metrics_conn *
metrics_conn_of(struct metrics *m, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	struct metrics_conn *c;

	if (evcon == NULL)
		return NULL;
	bev = evhttp_connection_get_bufferevent(evcon);
	TAILQ_FOREACH(c, &m->conns, entry)
		if (c->bev == bev) {
			if (c->evcon == NULL) {
				c->evcon = evcon;
				evhttp_connection_set_closecb(evcon,
				    metrics_conn_closed, c);
			}
			return c;
		}
	return NULL;
}

/* Replies -------------------------------------------------------------- */

static void
metrics_reply(struct evhttp_request *req, int code, const char *reason,
    const char *type, const char *body, size_t len, bool head)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *b = evbuffer_new();

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Connection", "close");
	if (b != NULL && !head)
		evbuffer_add(b, body, len);
	if (head) {
		char n[32];

		snprintf(n, sizeof(n), "%zu", len);
		evhttp_add_header(h, "Content-Length", n);
	}
	evhttp_send_reply(req, code, reason, b);
	if (b != NULL)
		evbuffer_free(b);
}

static void
metrics_error(struct evhttp_request *req, int code, const char *reason,
    const char *text)
{
	metrics_reply(req, code, reason, "text/plain; charset=utf-8", text,
	    strlen(text), evhttp_request_get_command(req) == EVHTTP_REQ_HEAD);
}

/* Rendering ------------------------------------------------------------ */

static int64_t
metrics_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The supervisor's own families, reserved before any worker's answer
 * is added (a worker's family of one of these names is left out and
 * counted), then filled from here.
 */
enum metrics_own {
	MO_VM_UP, MO_VM_STATE, MO_VM_VCPUS, MO_VM_MEMORY, MO_VM_UPTIME,
	MO_VM_SCRAPE_OK, MO_VM_SCRAPE_LEFT_OUT, MO_CONTROL_CLIENTS,
	MO_CONTROL_CONNECTIONS, MO_CONTROL_REQUESTS, MO_ADOPTIONS,
	MO_WORKER_CRASHES, MO_WORKERS, MO_SCRAPES, MO_SCRAPE_TIMEOUTS,
	MO_SCRAPE_ERRORS, MO_METRICS_REFUSED, MO_VSOCK_CONNECTIONS,
	MO_VSOCK_REFUSED, MO_N
};

static const struct {
	const char *name, *type, *help;
} metrics_own[MO_N] = {
	[MO_VM_UP] = { "vmmd_vm_up", "gauge", "Whether the VM's guest "
	    "runs or is paused (its worker serves it)" },
	[MO_VM_STATE] = { "vmmd_vm_state", "gauge", "The VM's state "
	    "(1 for the one it is in)" },
	[MO_VM_VCPUS] = { "vmmd_vm_vcpus", "gauge", "vCPUs the VM's "
	    "definition gives it" },
	[MO_VM_MEMORY] = { "vmmd_vm_memory_bytes", "gauge", "Guest memory "
	    "the VM's definition gives it" },
	[MO_VM_UPTIME] = { "vmmd_vm_uptime_seconds", "gauge", "Time since "
	    "the VM's worker started" },
	[MO_VM_SCRAPE_OK] = { "vmmd_vm_scrape_ok", "gauge", "Whether the "
	    "VM's worker answered this scrape in time" },
	[MO_VM_SCRAPE_LEFT_OUT] = { "vmmd_vm_scrape_left_out_samples",
	    "gauge", "Samples of the VM's answer to this scrape left out: "
	    "malformed, past its quotas, or of a family whose name or "
	    "type another family has" },
	[MO_CONTROL_CLIENTS] = { "vmmd_control_clients", "gauge", "Clients "
	    "connected to the control socket" },
	[MO_CONTROL_CONNECTIONS] = { "vmmd_control_connections", "counter",
	    "Control socket connections accepted" },
	[MO_CONTROL_REQUESTS] = { "vmmd_control_requests", "counter",
	    "Control requests answered, by command and result" },
	[MO_ADOPTIONS] = { "vmmd_adoptions", "counter", "Running guests "
	    "taken on from a previous vmmd" },
	[MO_WORKER_CRASHES] = { "vmmd_worker_crashes", "counter", "Workers "
	    "that ended so that their VM crashed, by cause" },
	[MO_WORKERS] = { "vmmd_workers", "gauge", "Worker processes not "
	    "reaped yet" },
	[MO_SCRAPES] = { "vmmd_scrapes", "counter", "Scrapes of /metrics "
	    "answered" },
	[MO_SCRAPE_TIMEOUTS] = { "vmmd_scrape_worker_timeouts", "counter",
	    "Workers left out of a scrape: no answer within the deadline" },
	[MO_SCRAPE_ERRORS] = { "vmmd_scrape_worker_errors", "counter",
	    "Workers whose answer to a scrape was refused, wholly or in "
	    "part" },
	[MO_METRICS_REFUSED] = { "vmmd_metrics_refused_connections",
	    "counter", "Connections to /metrics closed unread: more than "
	    "their listener's budget at once, by listener" },
	[MO_VSOCK_CONNECTIONS] = { "vmmd_vsock_connections", "gauge",
	    "Connections the vsock proxy carries, either way" },
	[MO_VSOCK_REFUSED] = { "vmmd_vsock_refused", "counter", "vsock "
	    "proxy connections refused, by reason" },
};

static void
metrics_put(struct mfmt *f, enum metrics_own o, const char *const *labels,
    double v)
{
	mfmt_add(f, metrics_own[o].name, metrics_own[o].type,
	    metrics_own[o].help, labels, v);
}

/* The VM list's own numbers: state, uptime, size, for every VM. */
static void
metrics_vms(struct mfmt *f, struct vmmd *d)
{
	static const enum vm_state states[] = {
		VM_DEFINED, VM_STARTING, VM_RUNNING, VM_PAUSED, VM_STOPPING,
		VM_STOPPED, VM_CRASHED,
	};
	int64_t now = metrics_now_ms();
	struct vm *vm;
	size_t i;

	TAILQ_FOREACH(vm, &d->vms, entry) {
		const char *n = vm->def->name;
		bool up = vm->w != NULL && (vm->state == VM_RUNNING ||
		    vm->state == VM_PAUSED || vm->state == VM_STOPPING);

		metrics_put(f, MO_VM_UP, (const char *[]){ "vm", n, NULL },
		    up);
		for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			metrics_put(f, MO_VM_STATE, (const char *[]){ "vm", n,
			    "state", vm_state_name(states[i]), NULL },
			    vm->state == states[i]);
		metrics_put(f, MO_VM_VCPUS, (const char *[]){ "vm", n, NULL },
		    vm->def->vcpus);
		metrics_put(f, MO_VM_MEMORY, (const char *[]){ "vm", n, NULL },
		    (double)vm->def->memory_mib * 1024 * 1024);
		if (vm->w != NULL && vm->run.started_ms > 0)
			metrics_put(f, MO_VM_UPTIME,
			    (const char *[]){ "vm", n, NULL },
			    (double)(now - vm->run.started_ms) / 1000);
	}
}

/* The supervisor's counters. */
/* The vsock proxy's (vsock-proxy.h), when there is one. */
static void
metrics_vsock(struct mfmt *f, const struct vsock_proxy *p)
{
	struct vsock_proxy_counts n;

	if (p == NULL)
		return;
	vsock_proxy_counts(p, NULL, &n);
	metrics_put(f, MO_VSOCK_CONNECTIONS, NULL, n.conns);
	metrics_put(f, MO_VSOCK_REFUSED, (const char *[]){ "reason",
	    "vm_limit", NULL }, (double)n.refused_vm_limit);
	metrics_put(f, MO_VSOCK_REFUSED, (const char *[]){ "reason", "limit",
	    NULL }, (double)n.refused_limit);
	metrics_put(f, MO_VSOCK_REFUSED, (const char *[]){ "reason",
	    "socket", NULL }, (double)n.refused_socket);
}

static void
metrics_self(struct mfmt *f, struct metrics *m)
{
	struct counters *c = &m->d->counters;
	unsigned int i;

	metrics_put(f, MO_CONTROL_CLIENTS, NULL, control_clients(m->d->ctl));
	metrics_put(f, MO_CONTROL_CONNECTIONS, NULL, (double)c->clients);
	for (i = 0; i < c->nreq; i++)
		metrics_put(f, MO_CONTROL_REQUESTS, (const char *[]){
		    "command", c->req[i].command, "result", c->req[i].result,
		    NULL }, (double)c->req[i].n);
	metrics_put(f, MO_ADOPTIONS, NULL, (double)c->adoptions);
	for (i = 0; i < COUNTERS_NCRASH; i++)
		metrics_put(f, MO_WORKER_CRASHES, (const char *[]){ "cause",
		    counters_crash_name(i), NULL }, (double)c->crashes[i]);
	metrics_put(f, MO_WORKERS, NULL, vm_list_workers(m->d));
	metrics_put(f, MO_SCRAPES, NULL, (double)c->scrapes);
	metrics_put(f, MO_SCRAPE_TIMEOUTS, NULL, (double)c->scrape_timeouts);
	metrics_put(f, MO_SCRAPE_ERRORS, NULL, (double)c->scrape_errors);
	for (i = 0; i < METRICS_NLISTENERS; i++)
		if (m->l[i].http != NULL)
			metrics_put(f, MO_METRICS_REFUSED, (const char *[]){
			    "listener", m->l[i].what, NULL },
			    (double)m->l[i].refused);
	metrics_vsock(f, m->d->vsock_proxy);
}

/* Scrapes -------------------------------------------------------------- */

static void
metrics_scrape_free(struct metrics_scrape *s)
{
	size_t i;

	for (i = 0; i < s->nvms; i++) {
		if (s->vms[i].ask != NULL)
			s->vms[i].ask->s = NULL;
		json_object_put(s->vms[i].families);
		free(s->vms[i].name);
	}
	if (s->conn != NULL)
		s->conn->scrape = NULL;
	TAILQ_REMOVE(&s->m->scrapes, s, entry);
	s->m->nscrapes--;
	if (s->deadline != NULL)
		event_free(s->deadline);
	free(s->vms);
	free(s);
}

/* Answer with what came; whoever did not answer is left out. */
static void
metrics_scrape_finish(struct metrics_scrape *s)
{
	struct counters *c = &s->m->d->counters;
	struct mfmt *f = mfmt_new();
	char *text = NULL;
	size_t i, len = 0;
	int left;

	if (f != NULL) {
		/* The names are ours before any worker's answer. */
		for (i = 0; i < MO_N; i++)
			mfmt_reserve(f, metrics_own[i].name,
			    metrics_own[i].type, metrics_own[i].help);
		mfmt_set_workers(f, s->nvms);
		metrics_vms(f, s->m->d);
		for (i = 0; i < s->nvms; i++) {
			bool ok = s->vms[i].ask == NULL &&
			    s->vms[i].families != NULL;

			if (s->vms[i].ask != NULL)
				c->scrape_timeouts++;
			metrics_put(f, MO_VM_SCRAPE_OK, (const char *[]){ "vm",
			    s->vms[i].name, NULL }, ok);
			if (!ok)
				continue;
			left = mfmt_add_worker(f, s->vms[i].families,
			    s->vms[i].name);
			metrics_put(f, MO_VM_SCRAPE_LEFT_OUT,
			    (const char *[]){ "vm", s->vms[i].name, NULL },
			    left > 0 ? left : 0);
			if (left != 0) {
				c->scrape_errors++;
				log_debug("metrics: VM '%s': %d samples of "
				    "its answer left out", s->vms[i].name,
				    left);
			}
		}
		/* Last, so that the timeouts and errors of this scrape
		 * are in its own figures. */
		metrics_self(f, s->m);
		text = mfmt_render(f, s->openmetrics, &len);
		mfmt_free(f);
	}
	if (s->req != NULL) {
		if (text == NULL)
			metrics_error(s->req, 500, "Internal Server Error",
			    "out of memory\n");
		else
			metrics_reply(s->req, 200, "OK", s->openmetrics ?
			    MFMT_OM_TYPE : MFMT_TEXT_TYPE, text, len, s->head);
		c->scrapes++;
	}
	free(text);
	metrics_scrape_free(s);
}

static void
metrics_scrape_deadline(evutil_socket_t fd, short what, void *arg)
{
	metrics_scrape_finish(arg);
}

static void
metrics_answer(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct metrics_ask *ask = arg;
	struct metrics_scrape *s = ask->s;
	struct json_object *fam;

	size_t i = ask->index;

	free(ask);
	if (s == NULL)
		return;		/* too late: the scrape has ended */
	s->vms[i].ask = NULL;
	if (ret != NULL && json_object_object_get_ex(ret, "families", &fam))
		s->vms[i].families = json_object_get(fam);
	else
		s->m->d->counters.scrape_errors++;
	if (--s->waiting == 0)
		metrics_scrape_finish(s);
}

/* Whether the VM's worker serves requests: its guest runs or is paused. */
static bool
metrics_askable(const struct vm *vm)
{
	return vm->w != NULL && wlink_connected(vm->w) && vm->run.booted &&
	    (vm->state == VM_RUNNING || vm->state == VM_PAUSED);
}

static void
metrics_scrape_start(struct metrics *m, struct evhttp_request *req,
    bool openmetrics)
{
	struct timeval tv = { METRICS_DEADLINE_MS / 1000,
	    (METRICS_DEADLINE_MS % 1000) * 1000 };
	struct metrics_scrape *s;
	struct vm *vm;
	size_t n = 0, i;

	if (m->nscrapes >= METRICS_MAX_SCRAPES) {
		metrics_error(req, 503, "Service Unavailable",
		    "too many scrapes at once\n");
		return;
	}
	TAILQ_FOREACH(vm, &m->d->vms, entry)
		n += metrics_askable(vm);
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (n > 0 && (s->vms = calloc(n, sizeof(*s->vms))) == NULL)) {
		free(s);
		metrics_error(req, 500, "Internal Server Error",
		    "out of memory\n");
		return;
	}
	s->m = m;
	s->req = req;
	s->openmetrics = openmetrics;
	s->head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;
	TAILQ_INSERT_TAIL(&m->scrapes, s, entry);
	m->nscrapes++;
	if ((s->conn = metrics_conn_of(m, req)) != NULL)
		s->conn->scrape = s;
	i = 0;
	TAILQ_FOREACH(vm, &m->d->vms, entry) {
		struct metrics_ask *ask;

		if (i == n || !metrics_askable(vm))
			continue;
		if ((s->vms[i].name = strdup(vm->def->name)) == NULL ||
		    (ask = calloc(1, sizeof(*ask))) == NULL) {
			free(s->vms[i].name);
			s->vms[i].name = NULL;
			continue;
		}
		ask->s = s;
		ask->index = i;
		s->vms[i].ask = ask;
		s->nvms = ++i;
		if (vm_worker_request(vm, WMSG_REQ_METRICS, NULL,
		    metrics_answer, ask) < 0) {
			/* Never sent: no callback will come. */
			free(ask);
			s->vms[i - 1].ask = NULL;
			continue;
		}
		s->waiting++;
	}
	if (s->waiting == 0) {
		metrics_scrape_finish(s);
		return;
	}
	s->deadline = evtimer_new(m->d->base, metrics_scrape_deadline, s);
	if (s->deadline == NULL || evtimer_add(s->deadline, &tv) < 0)
		metrics_scrape_finish(s);
}

/* The one handler: GET or HEAD of /metrics (evhttp refuses the rest). */
static void
metrics_request_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	const char *accept;

	/* Known from now on: released as soon as it closes. */
	(void)metrics_conn_of(m, req);
	if (path == NULL || (strcmp(path, "/metrics") != 0 &&
	    strcmp(path, "/") != 0)) {
		metrics_error(req, 404, "Not Found",
		    "not found: vmmd serves /metrics\n");
		return;
	}
	if (strcmp(path, "/") == 0) {
		metrics_error(req, 200, "OK", "vmmd: see /metrics\n");
		return;
	}
	accept = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Accept");
	metrics_scrape_start(m, req, accept != NULL &&
	    strstr(accept, "application/openmetrics-text") != NULL);
}

/* Sockets -------------------------------------------------------------- */

char *
metrics_path_beside(const char *control_path)
{
	char *copy, *out;

	if ((copy = strdup(control_path)) == NULL)
		return NULL;
	if (asprintf(&out, "%s/metrics.sock", dirname(copy)) < 0)
		out = NULL;
	free(copy);
	return out;
}

/* "HOST:PORT", "[V6]:PORT": a listening TCP socket's fd, or -errno. */
static int
metrics_listen_tcp(const char *spec, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	char host[256];
	const char *colon, *port;
	int fd, rc, one = 1;
	size_t hl;

	colon = strrchr(spec, ':');
	if (colon == NULL || colon[1] == '\0') {
		snprintf(err, errlen, "metrics_listen %s: not HOST:PORT", spec);
		return -EINVAL;
	}
	port = colon + 1;
	hl = (size_t)(colon - spec);
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
		spec++;
		hl -= 2;
	}
	if (hl >= sizeof(host)) {
		snprintf(err, errlen, "metrics_listen: host too long");
		return -EINVAL;
	}
	memcpy(host, spec, hl);
	host[hl] = '\0';
	rc = getaddrinfo(hl > 0 ? host : NULL, port, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "metrics_listen %s: %s", spec,
		    gai_strerror(rc));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		rc = -errno;
		snprintf(err, errlen, "metrics_listen %s: %s", spec,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return rc;
	}
	freeaddrinfo(ai);
	return fd;
}

/* l's server, which serves fd (taken): 0, or -1 with err set. */
static int
metrics_serve(struct metrics *m, struct metrics_listener *l,
    const char *what, unsigned int max, int deadline, int fd,
    const char *where, char *err, size_t errlen)
{
	l->m = m;
	l->what = what;
	l->max = max;
	l->deadline = deadline;
	if ((l->http = evhttp_new(m->d->base)) == NULL) {
		snprintf(err, errlen, "cannot create the HTTP server");
		close(fd);
		return -1;
	}
	evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET |
	    EVHTTP_REQ_HEAD);
	evhttp_set_max_headers_size(l->http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(l->http, 0);
	evhttp_set_timeout(l->http, deadline);
	evhttp_set_bevcb(l->http, metrics_bevcb, l);
	evhttp_set_gencb(l->http, metrics_request_cb, m);
	if (evhttp_accept_socket(l->http, fd) < 0) {
		snprintf(err, errlen, "%s: cannot serve it", where);
		close(fd);
		return -1;
	}
	return 0;
}

struct metrics *
metrics_new(struct vmmd *d, const char *path, const char *tcp, char *err,
    size_t errlen)
{
	struct sockaddr_un sa;
	struct metrics *m;
	int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->d = d;
	TAILQ_INIT(&m->conns);
	TAILQ_INIT(&m->scrapes);

	if ((m->path = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (control_listen_path(m->path, &fd, err, errlen) < 0) {
		free(m->path);
		m->path = NULL;
		goto fail;
	}
	if (metrics_serve(m, &m->l[0], "unix", METRICS_MAX_CONNS,
	    METRICS_CONN_DEADLINE, fd, m->path, err, errlen) < 0)
		goto fail;	/* metrics_free() removes the socket */
	if (tcp != NULL) {
		if ((fd = metrics_listen_tcp(tcp, err, errlen)) < 0 ||
		    metrics_serve(m, &m->l[1], "tcp", METRICS_TCP_MAX_CONNS,
		    METRICS_TCP_DEADLINE, fd, tcp, err, errlen) < 0)
			goto fail;
		log_info("metrics: listening on %s", tcp);
	}
	return m;

fail:
	metrics_free(m);
	return NULL;
}

void
metrics_free(struct metrics *m)
{
	struct metrics_scrape *s;
	size_t i;

	if (m == NULL)
		return;
	while ((s = TAILQ_FIRST(&m->scrapes)) != NULL) {
		s->req = NULL;	/* freed with the server */
		metrics_scrape_free(s);
	}
	/* Closes every connection (their close callbacks free ours). */
	for (i = 0; i < METRICS_NLISTENERS; i++)
		if (m->l[i].http != NULL)
			evhttp_free(m->l[i].http);
	while (!TAILQ_EMPTY(&m->conns))
		metrics_conn_free(TAILQ_FIRST(&m->conns));
	if (m->path != NULL && unlink(m->path) < 0 && errno != ENOENT)
		log_warn("%s: %s", m->path, strerror(errno));
	free(m->path);
	free(m);
}
