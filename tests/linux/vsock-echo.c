/*
 * vsock-echo: both ends of the linux suite's vsock checks, in the
 * reference guest (built static by build-guest.sh into its initramfs as
 * /usr/bin/vsock-echo) and in the nested test host (the scenarios run
 * it there too).
 *
 *   vsock-echo listen PORT
 *	Accepts on AF_VSOCK port PORT, any CID, and echoes what each
 *	connection sends until it closes, one connection after another;
 *	prints "vsock-echo: listening on PORT" once it listens.
 *   vsock-echo send CID PORT BYTES
 *	Connects to CID:PORT, sends BYTES of a pattern while it reads
 *	what comes back, and prints
 *	    vsock-echo: CID:PORT: sent N, received M, crc SENT/RECEIVED
 *	with the CRC-32 (zlib's) of each way; exit 0 when both match.
 *   vsock-echo unix PATH PORT BYTES
 *	The same through a Unix socket that speaks Firecracker's host
 *	side: "CONNECT PORT\n", then "OK ..." before the bytes flow.
 *   vsock-echo unix-listen PATH
 *	Echoes on a Unix socket made at PATH, as listen does on vsock
 *	(where vmmd forwards a guest's connection to the host's port).
 *
 * Exit status 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("vsock-echo: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint32_t
crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n-- > 0) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

static unsigned long
number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno != 0 || *end != '\0' || end == s)
		die("'%s' is not a number", s);
	return v;
}

/* Echo every connection to the listening l, one after another. */
static void __attribute__((noreturn))
echo_loop(int l, const char *what)
{
	static uint8_t buf[65536];
	int c;
	ssize_t n;

	printf("vsock-echo: listening on %s\n", what);
	fflush(stdout);
	for (;;) {
		if ((c = accept(l, NULL, NULL)) < 0)
			die("accept: %s", strerror(errno));
		while ((n = read(c, buf, sizeof(buf))) > 0)
			for (ssize_t o = 0, w; o < n; o += w)
				if ((w = write(c, buf + o, (size_t)(n - o))) <= 0)
					goto done;
done:
		close(c);
	}
}

static void
listen_vsock(unsigned int port)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK,
	    .svm_cid = VMADDR_CID_ANY, .svm_port = port };
	char what[16];
	int l;

	l = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 4) < 0)
		die("listen on port %u: %s", port, strerror(errno));
	snprintf(what, sizeof(what), "%u", port);
	echo_loop(l, what);
}

static void
listen_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l;

	if (strlen(path) >= sizeof(a.sun_path))
		die("%s: path too long", path);
	strcpy(a.sun_path, path);
	unlink(path);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 4) < 0)
		die("listen on %s: %s", path, strerror(errno));
	echo_loop(l, path);
}

/* Send bytes of a pattern on s while reading what comes back. */
static int
exchange(int s, const char *who, unsigned long bytes)
{
	static uint8_t out[65536], in[65536];
	unsigned long sent = 0, got = 0;
	uint32_t crc_out = 0, crc_in = 0;
	bool shut = false;

	while (got < bytes) {
		struct pollfd p = { .fd = s, .events = POLLIN |
		    (sent < bytes ? POLLOUT : 0) };
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			die("%s: no progress for 30 s (sent %lu, received %lu)",
			    who, sent, got);
		if ((p.revents & POLLOUT) && sent < bytes) {
			size_t len = bytes - sent < sizeof(out) ?
			    bytes - sent : sizeof(out);

			for (size_t i = 0; i < len; i++)
				out[i] = (uint8_t)((sent + i) * 2654435761u >> 13);
			n = write(s, out, len);
			if (n < 0 && errno != EAGAIN)
				die("%s: write: %s", who, strerror(errno));
			if (n > 0) {
				crc_out = crc32_update(crc_out, out, (size_t)n);
				sent += (unsigned long)n;
			}
		}
		if (sent == bytes && !shut) {
			shutdown(s, SHUT_WR);
			shut = true;
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			n = read(s, in, sizeof(in));
			if (n < 0 && errno != EAGAIN)
				die("%s: read: %s", who, strerror(errno));
			if (n == 0)
				break;
			if (n > 0) {
				crc_in = crc32_update(crc_in, in, (size_t)n);
				got += (unsigned long)n;
			}
		}
	}
	printf("vsock-echo: %s: sent %lu, received %lu, crc %08x/%08x\n",
	    who, sent, got, crc_out, crc_in);
	return sent == bytes && got == bytes && crc_out == crc_in ? 0 : 1;
}

static int
send_vsock(unsigned int cid, unsigned int port, unsigned long bytes)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK, .svm_cid = cid,
	    .svm_port = port };
	char who[32];
	int s;

	snprintf(who, sizeof(who), "%u:%u", cid, port);
	s = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("%s: connect: %s", who, strerror(errno));
	return exchange(s, who, bytes);
}

static int
send_unix(const char *path, unsigned int port, unsigned long bytes)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char line[64], who[300];
	size_t n = 0;
	int s;

	snprintf(who, sizeof(who), "%s:%u", path, port);
	if (strlen(path) >= sizeof(a.sun_path))
		die("%s: path too long", path);
	strcpy(a.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("%s: connect: %s", who, strerror(errno));
	snprintf(line, sizeof(line), "CONNECT %u\n", port);
	if (write(s, line, strlen(line)) != (ssize_t)strlen(line))
		die("%s: write: %s", who, strerror(errno));
	/* The answer, byte by byte: nothing of the stream after it. */
	while (n < sizeof(line) - 1 && read(s, line + n, 1) == 1 &&
	    line[n] != '\n')
		n++;
	line[n] = '\0';
	if (strncmp(line, "OK ", 3) != 0)
		die("%s: answered '%s'", who, line);
	printf("vsock-echo: %s: %s\n", who, line);
	return exchange(s, who, bytes);
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "listen") == 0)
		listen_vsock((unsigned int)number(argv[2]));
	if (argc == 3 && strcmp(argv[1], "unix-listen") == 0)
		listen_unix(argv[2]);
	if (argc == 5 && strcmp(argv[1], "send") == 0)
		return send_vsock((unsigned int)number(argv[2]),
		    (unsigned int)number(argv[3]), number(argv[4]));
	if (argc == 5 && strcmp(argv[1], "unix") == 0)
		return send_unix(argv[2], (unsigned int)number(argv[3]),
		    number(argv[4]));
	fprintf(stderr, "usage: vsock-echo listen PORT | send CID PORT BYTES "
	    "| unix PATH PORT BYTES | unix-listen PATH\n");
	return 2;
}
