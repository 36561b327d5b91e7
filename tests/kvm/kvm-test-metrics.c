/*
 * /metrics: a scrape over the Unix socket beside the control socket
 * with running, paused and stopped VMs, exit statistics on and off,
 * passes promtool check metrics, with nothing of the workers' answers
 * left out, and says what each VM is; OpenMetrics
 * when asked; bad requests get clear errors; a real Prometheus server
 * scrapes the TCP address of vmmd.conf's metrics_listen and its API
 * answers vmmd_vm_up for each VM, then the crash counter once a worker
 * was SIGKILLed; idle peers on the TCP address, more than any budget,
 * keep neither a scrape on the Unix socket nor a control client out,
 * and those past the TCP budget are closed at once.  promtool and
 * prometheus come from Debian's prometheus
 * package; without it those points are skipped, the others run.  In
 * the nested test host, kvm-nested.sh packs the outer host's promtool
 * and names it in VMMD_TEST_PROMTOOL: missing there, it is a failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

#define HTTP_MS		5000

/* A test point that cannot run here (TAP's SKIP directive). */
static void
skip(const char *why)
{
	tap_ok(1, "# SKIP %s", why);
}

/* A free TCP port on 127.0.0.1, or 0. */
static int
free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int
connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
connect_tcp(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Sends req on fd (taken) and reads the answer until EOF: the status
 * code (-1: none), the body in *body (malloc'ed, NUL-terminated).
 */
static int
http(int fd, const char *req, size_t reqlen, char **body)
{
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap), *p;
	double end = h_now_ms() + HTTP_MS;
	struct pollfd pfd = { fd, POLLIN, 0 };
	int code = -1;
	ssize_t n;

	*body = NULL;
	if (fd < 0 || buf == NULL) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	(void)!write(fd, req, reqlen);
	while (h_now_ms() < end && poll(&pfd, 1, 100) >= 0) {
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (len + 1 >= cap && (p = realloc(buf, cap *= 2)) != NULL)
			buf = p;
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
		code = -1;
	p = strstr(buf, "\r\n\r\n");
	*body = strdup(p != NULL ? p + 4 : "");
	free(buf);
	return code;
}

static int
get_unix(struct h_daemon *d, const char *path, const char *accept,
    char **body)
{
	char sock[256], req[512];

	snprintf(sock, sizeof(sock), "%s/metrics.sock", d->dir);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: vmmd\r\n"
	    "%s%s%s\r\n", path, accept ? "Accept: " : "", accept ? accept : "",
	    accept ? "\r\n" : "");
	return http(connect_unix(sock), req, strlen(req), body);
}

/* Whether text holds line as a whole line. */
static bool
has_line(const char *text, const char *line)
{
	const char *p = text;
	size_t n = strlen(line);

	while (p != NULL && (p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' ||
		    p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

/* promtool check metrics on text: 0 when it passes (diag otherwise). */
static int
promtool(const char *tool, const char *text)
{
	struct h_proc p;
	int rc;

	rc = h_run(&p, text, 20000, (char *const[]){ (char *)tool, "check",
	    "metrics", NULL });
	if (rc != 0)
		tap_diag("promtool: %s%s", h_flat(p.obuf ? p.obuf : ""),
		    h_flat(p.ebuf ? p.ebuf : ""));
	h_proc_free(&p);
	return rc;
}

static void
scrape_checks(struct h_daemon *d, const char *tool, const char *what,
    bool stats_on)
{
	char *body;
	int code;

	code = get_unix(d, "/metrics", NULL, &body);
	tap_ok(code == 200, "%s: GET /metrics over the Unix socket: %d", what,
	    code);
	tap_ok(has_line(body, "vmmd_vm_up{vm=\"run\"} 1") &&
	    has_line(body, "vmmd_vm_up{vm=\"pause\"} 1") &&
	    has_line(body, "vmmd_vm_up{vm=\"stop\"} 0"),
	    "%s: vmmd_vm_up of each VM", what);
	tap_ok(has_line(body, "vmmd_vm_state{vm=\"pause\",state=\"paused\"} 1")
	    && has_line(body, "vmmd_vm_state{vm=\"stop\",state=\"stopped\"} 1"),
	    "%s: vmmd_vm_state of the paused and the stopped VM", what);
	tap_ok(has_line(body, "vmmd_vm_scrape_ok{vm=\"run\"} 1") &&
	    has_line(body, "vmmd_vm_scrape_ok{vm=\"pause\"} 1"),
	    "%s: both workers answered", what);
	tap_ok(has_line(body, "vmmd_vm_scrape_left_out_samples{vm=\"run\"} 0")
	    && has_line(body, "vmmd_vm_scrape_left_out_samples{vm=\"pause\"} "
	    "0"), "%s: nothing of the workers' answers left out", what);
	tap_ok(strstr(body, "vmmd_vcpu_exits_total{vm=\"run\",vcpu=\"0\","
	    "kind=\"io\"}") != NULL && strstr(body,
	    "vmmd_kvm_vcpu_exits_total{vm=\"run\",vcpu=\"0\"}") != NULL,
	    "%s: exits counted by vmmd and by KVM", what);
	tap_ok(has_line(body, "vmmd_balloon_target_pages{vm=\"run\","
	    "device=\"virtio-balloon\"} 0") && strstr(body,
	    "vmmd_balloon_reported_bytes_total{vm=\"run\"") != NULL,
	    "%s: the balloon's families", what);
	/* An idle guest may make no exit while statistics are on: the
	 * time in the guest shows that they are. */
	tap_ok((strstr(body, "vmmd_exit_timing_guest_seconds_total{vm="
	    "\"run\"}") != NULL) == stats_on && (stats_on || strstr(body,
	    "vmmd_exit_duration_seconds") == NULL) && has_line(body, stats_on ?
	    "vmmd_exit_timing_enabled{vm=\"run\"} 1" :
	    "vmmd_exit_timing_enabled{vm=\"run\"} 0"),
	    "%s: exit timing rows %s", what, stats_on ? "present" : "absent");
	if (tool != NULL)
		tap_ok(promtool(tool, body ? body : "") == 0,
		    "%s: promtool check metrics passes", what);
	else
		skip("promtool is not installed (Debian's prometheus)");
	free(body);
}

static void
bad_requests(struct h_daemon *d)
{
	static const char post[] = "POST /metrics HTTP/1.1\r\n"
	    "Content-Length: 0\r\n\r\n";
	char sock[256], *body, *big;
	int code;
	size_t n = 64 * 1024;

	code = get_unix(d, "/nothing", NULL, &body);
	tap_ok(code == 404, "another path: 404 (%d)", code);
	free(body);
	snprintf(sock, sizeof(sock), "%s/metrics.sock", d->dir);
	code = http(connect_unix(sock), post, strlen(post), &body);
	tap_ok(code >= 400 && code < 600, "POST: an error (%d)", code);
	free(body);
	big = malloc(n + 64);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	memset(big + 26, 'a', n);
	memcpy(big + 26 + n, "\r\n\r\n", 4);
	code = http(connect_unix(sock), big, n + 30, &body);
	tap_ok(code == -1 || (code >= 400 && code < 500),
	    "a 64 KiB header: refused (%d)", code);
	free(body);
	free(big);
	code = get_unix(d, "/metrics",
	    "application/openmetrics-text; version=1.0.0", &body);
	tap_ok(code == 200 && body != NULL && strlen(body) > 6 &&
	    strcmp(body + strlen(body) - 6, "# EOF\n") == 0 &&
	    strstr(body, "# TYPE vmmd_scrapes counter") != NULL,
	    "OpenMetrics when the Accept header asks (%d)", code);
	free(body);
	/* The daemon still answers. */
	code = get_unix(d, "/metrics", NULL, &body);
	tap_ok(code == 200, "and still scrapes afterwards (%d)", code);
	free(body);
}

/* Prometheus' API: the query's answer, in a static buffer. */
static const char *
prom_query(int port, const char *query)
{
	static char out[65536];
	char req[512], *body;
	int code;

	snprintf(req, sizeof(req), "GET /api/v1/query?query=%s HTTP/1.0\r\n"
	    "\r\n", query);
	code = http(connect_tcp(port), req, strlen(req), &body);
	snprintf(out, sizeof(out), "%s", code == 200 && body ? body : "");
	free(body);
	return out;
}

static void
prometheus(struct h_daemon *d, struct h_conn *c, int mport)
{
	char prog[256], cfg[256], data[256], listen[64], text[512];
	char cfgarg[300], dataarg[300], listenarg[100];
	const char *ans = "";
	struct h_proc p;
	pid_t pid;
	int port = free_port(), i;
	FILE *f;

	if (h_which("prometheus", prog, sizeof(prog)) == NULL) {
		skip("prometheus is not installed (Debian's prometheus)");
		skip("prometheus is not installed");
		return;
	}
	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", d->dir);
	snprintf(data, sizeof(data), "%s/prometheus-data", d->dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(text, sizeof(text), "global:\n  scrape_interval: 1s\n"
	    "  scrape_timeout: 1s\nscrape_configs:\n  - job_name: vmmd\n"
	    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n", mport);
	if ((f = fopen(cfg, "w")) == NULL || fputs(text, f) < 0 ||
	    fclose(f) != 0)
		tap_bail("cannot write %s", cfg);
	snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
	snprintf(dataarg, sizeof(dataarg), "--storage.tsdb.path=%s", data);
	snprintf(listenarg, sizeof(listenarg), "--web.listen-address=%s",
	    listen);
	if (h_spawn(&p, (char *const[]){ prog, cfgarg, dataarg, listenarg,
	    "--log.level=warn", NULL }) < 0)
		tap_bail("cannot start prometheus");
	for (i = 0; i < 600; i++) {
		ans = prom_query(port, "vmmd_vm_up");
		if (strstr(ans, "\"vm\":\"run\"") && strstr(ans,
		    "\"vm\":\"pause\"") && strstr(ans, "\"vm\":\"stop\""))
			break;
		h_proc_pump(&p, 100);
	}
	tap_ok(strstr(ans, "\"vm\":\"run\"") && strstr(ans,
	    "\"vm\":\"pause\"") && strstr(ans, "\"vm\":\"stop\""),
	    "Prometheus scraped vmmd over TCP: vmmd_vm_up for each VM");
	if (i == 600)
		tap_diag("last answer: %s", h_flat(ans));

	pid = h_vm_pid(c, "run");
	tap_ok(pid > 0 && kill(pid, SIGKILL) == 0 &&
	    h_wait_state(c, "run", "crashed", 10000) == 0,
	    "the worker of run SIGKILLed: crashed");
	for (i = 0; i < 600; i++) {
		ans = prom_query(port, "vmmd_worker_crashes_total"
		    "%7Bcause%3D%22signal%22%7D");
		if (strstr(ans, "\"1\"]") != NULL)
			break;
		h_proc_pump(&p, 100);
	}
	tap_ok(strstr(ans, "\"1\"]") != NULL, "Prometheus shows "
	    "vmmd_worker_crashes_total{cause=\"signal\"} 1");
	if (i == 600)
		tap_diag("last answer: %s", h_flat(ans));
	ans = prom_query(port, "vmmd_vm_up%7Bvm%3D%22run%22%7D");
	tap_ok(strstr(ans, "\"0\"]") != NULL, "and vmmd_vm_up of run is 0");
	kill(p.pid, SIGTERM);
	h_proc_wait(&p, 10000);
	h_proc_free(&p);
}

/*
 * A worker that does not answer (stopped with SIGSTOP) is left out of a
 * scrape at the deadline, said in vmmd_vm_scrape_ok and the timeout
 * counter, and does not hold the scrape or the other VM's numbers back;
 * its late answer, once it runs again, is not taken for the next scrape's.
 */
static void
silent_worker(struct h_daemon *d, struct h_conn *c)
{
	pid_t pid = h_vm_pid(c, "pause");
	struct json_object *r;
	double t0;
	char *body = NULL;
	int code;

	tap_ok(pid > 0 && kill(pid, SIGSTOP) == 0, "worker of pause stopped "
	    "with SIGSTOP (pid %d)", (int)pid);
	t0 = h_now_ms();
	code = get_unix(d, "/metrics", NULL, &body);
	tap_ok(code == 200 && has_line(body, "vmmd_vm_scrape_ok{vm=\"pause\"} "
	    "0") && has_line(body, "vmmd_vm_scrape_ok{vm=\"run\"} 1") &&
	    strstr(body, "vmmd_vcpu_exits_total{vm=\"run\"") != NULL &&
	    strstr(body, "vmmd_vcpu_exits_total{vm=\"pause\"") == NULL,
	    "a silent worker is left out of the scrape, the other is in "
	    "(%d, %.1f s)", code, (h_now_ms() - t0) / 1e3);
	tap_ok(has_line(body, "vmmd_scrape_worker_timeouts_total 1"),
	    "vmmd_scrape_worker_timeouts_total counts it");
	free(body);
	body = NULL;
	if (pid > 0)
		kill(pid, SIGCONT);
	/*
	 * Running again once it answers a request: its late scrape answer
	 * went before this one on the link, so the next scrape finds it
	 * caught up however long the host took to schedule it.
	 */
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"pause\"}");
	tap_ok(h_err_class(r) == NULL, "the worker of pause answers again "
	    "(%s)", h_err_class(r) != NULL ? h_text(r) : "vm.info");
	json_object_put(r);
	code = get_unix(d, "/metrics", NULL, &body);
	tap_ok(code == 200 && has_line(body, "vmmd_vm_scrape_ok{vm=\"pause\"} "
	    "1") && has_line(body, "vmmd_vm_scrape_ok{vm=\"run\"} 1") &&
	    has_line(body, "vmmd_scrape_worker_timeouts_total 1") &&
	    has_line(body, "vmmd_vm_up{vm=\"pause\"} 1"),
	    "once it runs again, the next scrape has both, its VM still up");
	free(body);
}

#define IDLE_PEERS	80	/* more than the Unix socket's 64 */

/*
 * IDLE_PEERS connections to the TCP address that send nothing: the
 * Unix socket still serves a scrape, the control socket a new client,
 * and the peers past the TCP listener's budget are closed unread.
 */
static void
idle_tcp_peers(struct h_daemon *d, int port)
{
	int fds[IDLE_PEERS], i, n = 0, closed = 0;
	struct json_object *r;
	struct h_conn *c2;
	struct pollfd pfd;
	char *body = NULL, b;
	double end;
	int code;

	for (i = 0; i < IDLE_PEERS; i++)
		n += (fds[i] = connect_tcp(port)) >= 0;
	tap_ok(n == IDLE_PEERS, "%d idle peers connected over TCP", n);
	/* A round trip on the control socket: the loop has taken them. */
	c2 = h_connect(d);
	r = c2 != NULL ? h_call(c2, "vm.list", NULL, H_REPLY_MS) : NULL;
	tap_ok(h_ret(r) != NULL, "a new control client is served meanwhile");
	json_object_put(r);
	code = get_unix(d, "/metrics", NULL, &body);
	tap_ok(code == 200 && has_line(body, "vmmd_vm_up{vm=\"run\"} 1"),
	    "a scrape on the Unix socket is served meanwhile (%d)", code);
	free(body);
	/* Those past the budget go at once; the others at their deadline. */
	end = h_now_ms() + 20000;
	while (closed < IDLE_PEERS - 16 && h_now_ms() < end) {
		for (i = 0, closed = 0; i < IDLE_PEERS; i++) {
			pfd = (struct pollfd){ fds[i], POLLIN, 0 };
			closed += fds[i] >= 0 && poll(&pfd, 1, 0) == 1 &&
			    recv(fds[i], &b, 1, MSG_DONTWAIT) == 0;
		}
		if (closed < IDLE_PEERS - 16)
			h_sleep_ms(50);
	}
	tap_ok(closed >= IDLE_PEERS - 16, "at least %d of the idle peers "
	    "closed by vmmd (%d)", IDLE_PEERS - 16, closed);
	for (i = 0; i < IDLE_PEERS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	h_close(c2);
}

int
main(void)
{
	char tool[256], port[32];
	const char *promtool_path;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	int mport;

	h_init();
	promtool_path = h_which("promtool", tool, sizeof(tool));
	if (getenv("VMMD_TEST_PROMTOOL") != NULL &&
	    *getenv("VMMD_TEST_PROMTOOL") != '\0') {
		promtool_path = getenv("VMMD_TEST_PROMTOOL");
		tap_ok(access(promtool_path, X_OK) == 0, "promtool, packed "
		    "for this test, is here: %s", promtool_path);
	}
	d = h_daemon_start();
	mport = free_port();
	snprintf(port, sizeof(port), "127.0.0.1:%d", mport);
	h_daemon_setting(d, "metrics_listen", port);
	tap_ok(h_daemon_restart(d, 15000) == 0, "vmmd restarted with "
	    "metrics_listen = %s", port);
	if ((c = h_connect(d)) == NULL)
		tap_bail("cannot connect to vmmd");

	/* With a balloon the guest never drives: its families show. */
	tap_ok(h_create(c, "run", "\"vcpus\":2,\"balloon\":true") == 0 &&
	    h_start(c, "run") == 0, "VM run started");
	tap_ok(h_create(c, "pause", "%s", "") == 0 && h_start(c, "pause") == 0,
	    "VM pause started");
	r = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"pause\"}");
	tap_ok(h_err_class(r) == NULL, "and paused (%s)", h_text(r));
	json_object_put(r);
	tap_ok(h_create(c, "stop", "%s", "") == 0 && h_start(c, "stop") == 0 &&
	    h_stop(c, "stop", true, -1, H_REPLY_MS) == 0 &&
	    h_wait_state(c, "stop", "stopped", 10000) == 0,
	    "VM stop started and stopped");

	scrape_checks(d, promtool_path, "statistics off", false);
	r = h_callf(c, H_REPLY_MS, "vm.stats", "{\"name\":\"run\","
	    "\"enable\":true}");
	tap_ok(h_err_class(r) == NULL, "exit statistics on (%s)", h_text(r));
	json_object_put(r);
	h_sleep_ms(300);
	scrape_checks(d, promtool_path, "statistics on", true);
	bad_requests(d);
	silent_worker(d, c);
	idle_tcp_peers(d, mport);
	prometheus(d, c, mport);
	h_close(c);
	return h_done();
}
