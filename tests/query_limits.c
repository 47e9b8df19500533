/*
 * The connection layer under bad and heavy clients: malformed and
 * oversized requests (raw bytes on a socket), slow and idle clients,
 * pipelining order, HTTP/1.0, the connection bound, and many concurrent
 * keep-alive connections with libcurl.
 */
#include "tests/query_tests.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return; /* the server may cut us off mid-request */
		p += w;
		n -= (size_t)w;
	}
}

/* Sends raw, reads until the server closes; the answer in buf. */
static size_t exchange(const struct qt *t, const char *raw, size_t n, char *buf,
		       size_t cap)
{
	int fd = qt_connect(t);
	size_t got;

	send_all(fd, raw, n);
	got = qt_read_all(fd, buf, cap, 5000);
	close(fd);
	return got;
}

static char *repeat(const char *head, const char *unit, size_t times,
		    const char *tail)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
	char *s = malloc(hl + ul * times + tl + 1), *p = s;

	memcpy(p, head, hl);
	p += hl;
	for (size_t i = 0; i < times; i++, p += ul)
		memcpy(p, unit, ul);
	memcpy(p, tail, tl + 1);
	return s;
}

static const struct {
	const char *name;
	const char *head, *unit, *tail;
	size_t times;
	const char *status; /* the status line's start */
} bad_rows[] = {
	{"garbage", "GARBAGE\r\n\r\n", "", "", 0, "HTTP/1.1 400 "},
	{"two content lengths",
	 "POST /v1/admission HTTP/1.1\r\nContent-Length: 5\r\n"
	 "Content-Length: 6\r\n\r\n",
	 "", "", 0, "HTTP/1.1 400 "},
	{"bad chunk size",
	 "POST /v1/admission HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	 "zz\r\n",
	 "", "", 0, "HTTP/1.1 400 "},
	{"bad content length",
	 "GET /healthz HTTP/1.1\r\nContent-Length: abc\r\n\r\n", "", "", 0,
	 "HTTP/1.1 400 "},
	{"header without colon", "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", "",
	 "", 0, "HTTP/1.1 400 "},
	{"too many headers", "GET /healthz HTTP/1.1\r\n", "X-A: b\r\n", "\r\n",
	 65, "HTTP/1.1 431 "},
	{"headers too large", "GET /healthz HTTP/1.1\r\nX-Big: ", "a",
	 "\r\n\r\n", 17000, "HTTP/1.1 431 "},
	{"target too long", "GET /", "a", " HTTP/1.1\r\n\r\n", 9000,
	 "HTTP/1.1 414 "},
	{"body too large",
	 "POST /v1/admission HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n", "",
	 "", 0, "HTTP/1.1 413 "},
	{"chunked body too large",
	 "POST /v1/admission HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	 "1000\r\n", "", 0, "HTTP/1.1 413 "},
	{"upgrade",
	 "GET /healthz HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
	 "", "", 0, "HTTP/1.1 400 "},
	{"connect", "CONNECT example.com:443 HTTP/1.1\r\n\r\n", "", "", 0,
	 "HTTP/1.1 400 "},
};

START_TEST(malformed_and_oversized)
{
	struct qt t;
	char *raw, *buf = malloc(1 << 16);
	struct query_opts o = {0};
	size_t n;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	raw = repeat(bad_rows[_i].head, bad_rows[_i].unit, bad_rows[_i].times,
		     bad_rows[_i].tail);
	if (strstr(bad_rows[_i].name, "chunked") != NULL) {
		/* 1.1 MiB of chunks. */
		char *chunk = repeat("", "x", 4096, "\r\n");
		int fd = qt_connect(&t);

		send_all(fd, raw, strlen(raw));
		for (int i = 0; i < 270; i++) {
			send_all(fd, "1000\r\n", 6);
			send_all(fd, chunk, strlen(chunk));
		}
		n = qt_read_all(fd, buf, 1 << 16, 5000);
		close(fd);
		free(chunk);
	} else {
		n = exchange(&t, raw, strlen(raw), buf, 1 << 16);
	}
	ck_assert_msg(n > 0 && strncmp(buf, bad_rows[_i].status,
				       strlen(bad_rows[_i].status)) == 0,
		      "%s: %.200s", bad_rows[_i].name, buf);
	/* The answer is JSON and the connection closes (read ended). */
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\n{\"error\":"));
	/* The server is still there for the next client. */
	ck_assert_int_eq(qt_status(&t, "GET", "/healthz", NULL, NULL), 200);
	free(raw);
	free(buf);
	qt_done(&t);
}
END_TEST

/* The /metrics page is built within o.max_metrics_bytes: past it the
 * scrape is a 500 that says why (it used to grow without a bound), and
 * the server goes on. */
START_TEST(metrics_bound)
{
	struct query_opts o = {.max_metrics_bytes = 1024};
	struct qt t;
	struct qt_resp r;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	qt_http(&t, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 500);
	ck_assert_ptr_nonnull(r.json);
	ck_assert_str_eq(json_string_value(json_object_get(r.json, "error")),
			 "the metrics page would pass its bound");
	ck_assert_int_eq(
		json_integer_value(json_object_get(r.json, "maxBytes")), 1024);
	qt_resp_free(&r);
	ck_assert_int_eq(qt_status(&t, "GET", "/healthz", NULL, NULL), 200);
	qt_stop(&t);
	/* The default holds the fixture's page, and more than 1024 bytes. */
	o = (struct query_opts){0};
	qt_start(&t, &o, false);
	qt_http(&t, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_gt(r.len, 1024);
	ck_assert_ptr_nonnull(strstr(r.body, "gpuledger_tenant_reserved{"));
	qt_resp_free(&r);
	qt_done(&t);
}
END_TEST

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One short answer (its head and a body that comes with it): what one
 * read within 2 s gives; 0 when the connection is closed. */
static ssize_t read_answer(int fd, char *buf, size_t cap)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, 2000) != 1 || (n = read(fd, buf, cap - 1)) <= 0)
		return 0;
	buf[n] = '\0';
	return n;
}

/* A client that sends part of a request and stops, or trickles bytes,
 * gets 408 and is cut off; one that opens and sends nothing is closed. */
START_TEST(slow_clients)
{
	struct qt t;
	struct query_opts o = {.request_ms = 200, .idle_ms = 200};
	char buf[4096];
	int fd;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	fd = qt_connect(&t);
	send_all(fd, "GET /healthz HTTP/1.1\r\nHo", 25);
	qt_read_all(fd, buf, sizeof(buf), 5000);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 408 ", 13) == 0, "%s", buf);
	close(fd);
	/* Trickling does not extend the deadline: it runs from the first
	 * byte of the request. */
	fd = qt_connect(&t);
	send_all(fd, "GET /healthz HTTP/1.1\r\nX-Slow: ", 31);
	for (int i = 0; i < 100; i++) {
		struct timespec ts = {0, 20 * 1000 * 1000};

		send_all(fd, "a", 1);
		nanosleep(&ts, NULL);
	}
	qt_read_all(fd, buf, sizeof(buf), 5000);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 408 ", 13) == 0, "%s", buf);
	close(fd);
	/* Silent and idle connections are closed without an answer. */
	fd = qt_connect(&t);
	ck_assert_uint_eq(qt_read_all(fd, buf, sizeof(buf), 5000), 0);
	close(fd);
	fd = qt_connect(&t);
	send_all(fd, "GET /healthz HTTP/1.1\r\n\r\n", 25);
	qt_read_all(fd, buf, sizeof(buf), 5000);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200 ", 13) == 0, "%s", buf);
	close(fd);
	/* Each answer moves the idle deadline: requests 150 ms apart keep a
	 * connection past the first deadline, and once they stop it is
	 * closed idle_ms after the last answer, not before. */
	fd = qt_connect(&t);
	for (int i = 0; i < 4; i++) {
		struct timespec ts = {0, 150 * 1000 * 1000};
		ssize_t n;

		send_all(fd, "GET /healthz HTTP/1.1\r\n\r\n", 25);
		n = read_answer(fd, buf, sizeof(buf));
		ck_assert_msg(n > 0 && strncmp(buf, "HTTP/1.1 200 ", 13) == 0,
			      "request %d: %s", i, n > 0 ? buf : "closed");
		if (i < 3)
			nanosleep(&ts, NULL);
	}
	{
		double t0 = mono_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};

		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		ck_assert_int_eq(read(fd, buf, sizeof(buf)), 0);
		ck_assert_msg(mono_ms() - t0 > 100, "closed after %.0f ms",
			      mono_ms() - t0);
	}
	close(fd);
	qt_done(&t);
}
END_TEST

#define ADM_BODY                                                               \
	"{\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\",\"name\":" \
	"\"v\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\"}]}}"

/* Requests pipelined in one write are answered in order, verdicts (which
 * wait for a group commit) included. */
START_TEST(pipelining_order)
{
	static const char *const want[] = {
		"{\"status\":\"ok\"}",
		"\"id\":1,",
		"{\"classes\":",
		"\"id\":2,",
		"{\"error\":\"no such endpoint\"}",
		"\"ready\":false,", /* the fixture holds no complete list */
	};
	struct qt t;
	char raw[4096], *buf = malloc(1 << 16), *p;
	int n;
	size_t got;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	n = snprintf(
		raw, sizeof(raw),
		"GET /healthz HTTP/1.1\r\n\r\n"
		"POST /v1/admission HTTP/1.1\r\nContent-Length: %zu\r\n\r\n"
		"%s"
		"GET /v1/tenants/tenant-acme/remaining HTTP/1.1\r\n\r\n"
		"POST /v1/admission HTTP/1.1\r\nContent-Length: %zu\r\n\r\n"
		"%s"
		"GET /nope HTTP/1.1\r\n\r\n"
		"GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n",
		strlen(ADM_BODY), ADM_BODY, strlen(ADM_BODY), ADM_BODY);
	got = exchange(&t, raw, (size_t)n, buf, 1 << 16);
	ck_assert_uint_gt(got, 0);
	p = buf;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char *body = strstr(p, "\r\n\r\n");

		ck_assert_msg(body != NULL, "answer %zu missing", i);
		ck_assert_msg(strstr(body + 4, want[i]) != NULL &&
				      (strstr(body + 4, "HTTP/1.1 ") == NULL ||
				       strstr(body + 4, want[i]) <
					       strstr(body + 4, "HTTP/1.1 ")),
			      "answer %zu: want %s in %.200s", i, want[i],
			      body + 4);
		p = body + 4;
	}
	free(buf);
	qt_done(&t);
}
END_TEST

START_TEST(http10_keepalive)
{
	struct qt t;
	char buf[4096];
	int fd;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	/* HTTP/1.0 without keep-alive: one answer, then close. */
	exchange(&t, "GET /healthz HTTP/1.0\r\n\r\n", 25, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	/* With keep-alive the connection stays for a second request. */
	fd = qt_connect(&t);
	send_all(fd, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		 49);
	send_all(fd, "GET /readyz HTTP/1.0\r\n\r\n", 24);
	qt_read_all(fd, buf, sizeof(buf), 5000);
	ck_assert_ptr_nonnull(strstr(buf, "Connection: keep-alive\r\n"));
	/* The fixture holds no complete list: 503, but answered in full. */
	ck_assert_ptr_nonnull(strstr(buf, "\"ready\":false"));
	close(fd);
	/* Two Authorization headers: neither counts. */
	qt_stop(&t);
	qt_start(&t, NULL, true);
	exchange(&t,
		 "GET /v1/state HTTP/1.1\r\nAuthorization: Bearer " TOK_ADMIN
		 "\r\nAuthorization: Bearer " TOK_ADMIN
		 "\r\nConnection: close\r\n\r\n",
		 strlen("GET /v1/state HTTP/1.1\r\nAuthorization: "
			"Bearer " TOK_ADMIN
			"\r\nAuthorization: Bearer " TOK_ADMIN
			"\r\nConnection: close\r\n\r\n"),
		 buf, sizeof(buf));
	ck_assert_msg(strncmp(buf, "HTTP/1.1 401 ", 13) == 0, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "WWW-Authenticate: Bearer\r\n"));
	qt_done(&t);
}
END_TEST

/* Every combination of Authorization headers: one valid header counts;
 * two of them (whatever their values, an empty one included, in any case
 * of the field name) are ambiguous and neither counts. */
#define AH_OK  "Authorization: Bearer " TOK_ADMIN "\r\n"
#define AH_BAD "Authorization: Bearer " TOK_ADMIN "x\r\n"
static const struct {
	const char *headers;
	int status;
} auth_hdr_rows[] = {
	{"", 401},
	{AH_OK, 200},
	{"Authorization:\r\n", 401},
	{"Authorization: \r\n", 401},
	{AH_BAD, 401},
	{"Authorization: Bearer\r\n", 401},
	{AH_OK AH_OK, 401},
	{AH_OK "Authorization:\r\n", 401},
	{"Authorization:\r\n" AH_OK, 401},
	{"Authorization:   \r\n" AH_OK, 401},
	{"Authorization:\r\nAuthorization:\r\n", 401},
	{AH_OK AH_BAD, 401},
	{AH_BAD AH_OK, 401},
	{AH_OK "X-Other: 1\r\n" AH_OK, 401},
	{"Authorization:\r\nX-Other: 1\r\n" AH_OK, 401},
	{"authorization: Bearer " TOK_ADMIN "\r\n", 200},
	{"authorization: Bearer " TOK_ADMIN "\r\nAUTHORIZATION:\r\n", 401},
	{"AUTHORIZATION:\r\nauthorization: Bearer " TOK_ADMIN "\r\n", 401},
	{AH_OK "Authorization-X: 1\r\n", 200},
	{"X-Authorization:\r\n" AH_OK, 200},
	{AH_OK AH_OK AH_OK, 401},
};

START_TEST(authorization_headers)
{
	struct qt t;
	char raw[1024], want[32], *buf = malloc(1 << 16);
	int n;

	qt_init(&t, true);
	qt_start(&t, NULL, true);
	n = snprintf(raw, sizeof(raw),
		     "GET /v1/classes HTTP/1.1\r\n%sConnection: close\r\n\r\n",
		     auth_hdr_rows[_i].headers);
	exchange(&t, raw, (size_t)n, buf, 1 << 16);
	snprintf(want, sizeof(want), "HTTP/1.1 %d ", auth_hdr_rows[_i].status);
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0,
		      "headers %s: want %d, got %.40s",
		      auth_hdr_rows[_i].headers, auth_hdr_rows[_i].status, buf);
	/* On one keep-alive connection, what a request's headers said is
	 * forgotten by the next: ambiguous then valid then none. */
	n = snprintf(raw, sizeof(raw),
		     "GET /v1/classes HTTP/1.1\r\n%s\r\n"
		     "GET /v1/classes HTTP/1.1\r\n" AH_OK "\r\n"
		     "GET /v1/classes HTTP/1.1\r\nConnection: close\r\n\r\n",
		     auth_hdr_rows[_i].headers);
	exchange(&t, raw, (size_t)n, buf, 1 << 16);
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "%.40s", buf);
	{
		const char *second = strstr(buf + 1, "HTTP/1.1 ");
		const char *third =
			second ? strstr(second + 1, "HTTP/1.1 ") : NULL;

		ck_assert_ptr_nonnull(third);
		ck_assert_msg(strncmp(second, "HTTP/1.1 200 ", 13) == 0,
			      "%.40s", second);
		ck_assert_msg(strncmp(third, "HTTP/1.1 401 ", 13) == 0, "%.40s",
			      third);
	}
	free(buf);
	qt_done(&t);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Connection budgets (DESIGN 7): each test sets every bound it relies on. */

/* A connection to port from the loopback address src. */
static int connect_from(int port, const char *src)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)},
			   me = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, src, &me.sin_addr), 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* True when the server ends the connection within ms, answering nothing. */
static bool closed_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b[64];

	return poll(&p, 1, ms) == 1 && read(fd, b, sizeof(b)) <= 0;
}

/* GET /healthz on fd (kept alive): 200 answered. */
static bool healthz(int fd)
{
	char buf[1024];

	send_all(fd, "GET /healthz HTTP/1.1\r\n\r\n", 25);
	return read_answer(fd, buf, sizeof(buf)) > 0 &&
	       strncmp(buf, "HTTP/1.1 200 ", 13) == 0;
}

/* The value of one series of /metrics, asked from 127.0.0.9 (another
 * peer); -1 while the server cannot take the connection. */
static long metric(int port, const char *series)
{
	char *buf = malloc(1 << 20), want[160];
	const char *at;
	long v = -1;
	int fd = connect_from(port, "127.0.0.9");

	send_all(fd, "GET /metrics HTTP/1.0\r\n\r\n", 26);
	qt_read_all(fd, buf, 1 << 20, 5000);
	close(fd);
	snprintf(want, sizeof(want), "\n%s ", series);
	if ((at = strstr(buf, want)) != NULL)
		v = atol(at + strlen(want));
	free(buf);
	return v;
}

/* Waits until the server has seen closes (the metric takes a connection,
 * so the budget must have room for it). */
static long metric_eventually(int port, const char *series)
{
	long v = -1;

	for (int i = 0; i < 100 && v < 0; i++) {
		struct timespec ts = {0, 20 * 1000 * 1000};

		if ((v = metric(port, series)) < 0)
			nanosleep(&ts, NULL);
	}
	return v;
}

#define SHED(l, r)                                                             \
	"gpuledger_connections_shed_total{listener=\"" l "\",reason=\"" r "\"" \
									  "}"
#define REFUSED(l, r)                                              \
	"gpuledger_connections_budget_refused_total{listener=\"" l \
	"\",reason=\"" r "\"}"

/* max_conns: a new connection sheds a half-open one; when every one has
 * sent its request, the new one is closed at once, without an answer. */
START_TEST(connection_bound)
{
	struct qt t;
	struct query_opts o = {
		.max_conns = 2, .max_half_open = 2, .max_conns_per_peer = 2};
	char buf[256];
	int a, b, c, d;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	/* Four peers: no peer's share is in the way. */
	a = connect_from(t.port, "127.0.0.2");
	ck_assert(healthz(a));
	b = connect_from(t.port, "127.0.0.3"); /* half-open: sends nothing */
	c = connect_from(t.port, "127.0.0.4");
	ck_assert(healthz(c));
	ck_assert(closed_within(b, 5000));
	d = connect_from(t.port, "127.0.0.5");
	send_all(d, "GET /healthz HTTP/1.1\r\n\r\n", 25);
	ck_assert_uint_eq(qt_read_all(d, buf, sizeof(buf), 5000), 0);
	ck_assert(healthz(a) && healthz(c));
	close(a);
	close(c);
	close(d);
	close(b);
	ck_assert_int_eq(metric_eventually(t.port, SHED("api", "max_conns")),
			 1);
	ck_assert_int_eq(metric(t.port, REFUSED("api", "max_conns")), 1);
	qt_done(&t);
}
END_TEST

/* max_half_open: the oldest half-open connection makes room for a new
 * one; connections that have sent a request are not touched. */
START_TEST(half_open_bound)
{
	struct qt t;
	struct query_opts o = {
		.max_conns = 8, .max_half_open = 2, .max_conns_per_peer = 8};
	int a, h1, h2, c;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	a = qt_connect(&t);
	ck_assert(healthz(a));
	h1 = qt_connect(&t);
	send_all(h1, "GET /hea", 8); /* a partial head is half-open too */
	h2 = qt_connect(&t);
	c = qt_connect(&t);
	ck_assert(healthz(c));
	ck_assert(closed_within(h1, 5000));
	ck_assert(!closed_within(h2, 100));
	ck_assert(healthz(a));
	ck_assert_int_eq(metric(t.port, SHED("api", "max_half_open")), 1);
	ck_assert_int_eq(metric(t.port,
				"gpuledger_connections_half_open{listener="
				"\"api\"}"),
			 1);
	close(a);
	close(h1);
	close(h2);
	close(c);
	qt_done(&t);
}
END_TEST

/* max_conns_per_peer: a peer at its share sheds its own oldest half-open
 * connection, or is refused; other peers are not affected. */
START_TEST(peer_bound)
{
	struct qt t;
	struct query_opts o = {
		.max_conns = 16, .max_half_open = 16, .max_conns_per_peer = 2};
	char buf[256];
	int a, b, c, d, h1, h2, h3;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	a = connect_from(t.port, "127.0.0.2");
	b = connect_from(t.port, "127.0.0.2");
	ck_assert(healthz(a) && healthz(b));
	c = connect_from(t.port, "127.0.0.2");
	send_all(c, "GET /healthz HTTP/1.1\r\n\r\n", 25);
	ck_assert_uint_eq(qt_read_all(c, buf, sizeof(buf), 5000), 0);
	d = connect_from(t.port, "127.0.0.3");
	ck_assert(healthz(d));
	h1 = connect_from(t.port, "127.0.0.4");
	h2 = connect_from(t.port, "127.0.0.4");
	h3 = connect_from(t.port, "127.0.0.4");
	ck_assert(healthz(h3));
	ck_assert(closed_within(h1, 5000));
	ck_assert(!closed_within(h2, 100));
	ck_assert(healthz(a) && healthz(d));
	ck_assert_int_eq(metric(t.port, REFUSED("api", "max_per_peer")), 1);
	ck_assert_int_eq(metric(t.port, SHED("api", "max_per_peer")), 1);
	close(a);
	close(b);
	close(c);
	close(d);
	close(h1);
	close(h2);
	close(h3);
	qt_done(&t);
}
END_TEST
/* handshake_ms: a half-open connection is cut that long after its accept
 * (a partial head with 408), far sooner than request_ms; once the head is
 * in, the body has request_ms. */
START_TEST(handshake_deadline)
{
	struct qt t;
	struct query_opts o = {.handshake_ms = 200, .request_ms = 60000};
	char buf[1024];
	int a, b, c;

	qt_init(&t, true);
	qt_start(&t, &o, false);
	a = qt_connect(&t);
	send_all(a, "GET /healthz HTTP/1.1\r\nHo", 25);
	b = qt_connect(&t);
	c = qt_connect(&t);
	send_all(c, "GET /healthz HTTP/1.1\r\nContent-Length: 4\r\n\r\nab", 46);
	qt_read_all(a, buf, sizeof(buf), 5000);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 408 ", 13) == 0, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "within 200 ms of the connection"));
	ck_assert(closed_within(b, 5000));
	/* c's head came in time: the rest of its body may still come. */
	send_all(c, "cd", 2);
	ck_assert_int_gt(read_answer(c, buf, sizeof(buf)), 0);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200 ", 13) == 0, "%s", buf);
	ck_assert_int_eq(metric(t.port, SHED("api", "handshake_ms")), 2);
	close(a);
	close(b);
	close(c);
	qt_done(&t);
}
END_TEST

/* The probe listener has its own budget: with the API listener full, a
 * probe is answered; a new probe sheds the oldest probe connection in its
 * way, of its own peer first. */
START_TEST(probe_budget)
{
	struct qt t;
	struct query_opts o = {.max_conns = 2,
			       .max_half_open = 2,
			       .max_conns_per_peer = 2,
			       .probe_listen = "127.0.0.1:0",
			       .probe_max_conns = 4};
	char buf[256];
	int a, b, c, pp, p[6];

	qt_init(&t, true);
	qt_start(&t, &o, false);
	pp = query_server_probe_port(t.qs);
	a = qt_connect(&t);
	b = qt_connect(&t);
	ck_assert(healthz(a) && healthz(b));
	c = qt_connect(&t);
	ck_assert_uint_eq(qt_read_all(c, buf, sizeof(buf), 5000), 0);
	/* One peer holds at most half: 127.0.0.2's second probe connection
	 * sheds its first; 127.0.0.3's are not touched by it. */
	p[0] = connect_from(pp, "127.0.0.3");
	ck_assert(healthz(p[0]));
	p[1] = connect_from(pp, "127.0.0.2");
	p[2] = connect_from(pp, "127.0.0.2");
	p[3] = connect_from(pp, "127.0.0.2");
	ck_assert(healthz(p[3]));
	ck_assert(closed_within(p[1], 5000));
	ck_assert(healthz(p[0]));
	/* Full with p0, p2, p3, p4: the next sheds the oldest, p0, which
	 * has been answered (any probe connection may be shed). */
	p[4] = connect_from(pp, "127.0.0.4");
	ck_assert(healthz(p[4]));
	p[5] = connect_from(pp, "127.0.0.5");
	ck_assert(healthz(p[5]));
	ck_assert(closed_within(p[0], 5000));
	ck_assert(healthz(p[2]) && healthz(p[3]) && healthz(p[4]));
	for (int i = 0; i < 6; i++)
		close(p[i]);
	close(a);
	close(b);
	close(c);
	qt_done(&t);
}
END_TEST

/* Many clients, each on one keep-alive connection, many requests each. */
#define KA_CLIENTS  32
#define KA_REQUESTS 40

struct ka {
	const struct qt *t;
	const char *want;
	int ok;
};

static size_t sink(char *p, size_t size, size_t n, void *ctx)
{
	struct qt_resp *r = ctx;

	r->body = realloc(r->body, r->len + size * n + 1);
	memcpy(r->body + r->len, p, size * n);
	r->len += size * n;
	r->body[r->len] = '\0';
	return size * n;
}

static void *ka_client(void *arg)
{
	struct ka *k = arg;
	CURL *c = curl_easy_init();
	char url[128];

	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/v1/tenants/tenant-acme-dev/remaining",
		 k->t->port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	for (int i = 0; i < KA_REQUESTS; i++) {
		struct qt_resp r = {0};
		long status = 0;

		curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
		if (curl_easy_perform(c) == CURLE_OK) {
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
			k->ok += status == 200 && r.body != NULL &&
				 strcmp(r.body, k->want) == 0;
		}
		free(r.body);
	}
	curl_easy_cleanup(c);
	return NULL;
}

START_TEST(keepalive_concurrency)
{
	struct qt t;
	struct qt_resp first, m;
	pthread_t th[KA_CLIENTS];
	struct ka k[KA_CLIENTS];
	const char *acc;
	int total = 0;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	qt_http(&t, "GET", "/v1/tenants/tenant-acme-dev/remaining", NULL, NULL,
		&first);
	for (int i = 0; i < KA_CLIENTS; i++) {
		k[i] = (struct ka){&t, first.body, 0};
		ck_assert_int_eq(pthread_create(&th[i], NULL, ka_client, &k[i]),
				 0);
	}
	for (int i = 0; i < KA_CLIENTS; i++) {
		pthread_join(th[i], NULL);
		total += k[i].ok;
	}
	ck_assert_int_eq(total, KA_CLIENTS * KA_REQUESTS);
	/* Keep-alive: one connection per client (plus ours), not one per
	 * request. */
	qt_http(&t, "GET", "/metrics", NULL, NULL, &m);
	acc = strstr(m.body, "\ngpuledger_connections_accepted_total ");
	ck_assert_ptr_nonnull(acc);
	ck_assert_int_le(atoi(acc + 38), KA_CLIENTS + 2);
	qt_resp_free(&m);
	qt_resp_free(&first);
	qt_done(&t);
}
END_TEST

/* A body just under the bound is accepted (curl sends Expect:
 * 100-continue for it, which the server must answer). */
START_TEST(large_body_accepted)
{
	struct qt t;
	struct qt_resp r;
	char *name = repeat("", "n", 200000, ""), *body;

	body = malloc(strlen(name) + 256);
	sprintf(body,
		"{\"namespace\":\"default\",\"kind\":\"VMInstance\",\"name\":"
		"\"%s\",\"old\":null,\"new\":{\"gpus\":[]}}",
		name);
	qt_init(&t, true);
	qt_start(&t, NULL, false);
	qt_http(&t, "POST", "/v1/admission", NULL, body, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(qjstr(r.json, "reason"), "NotATenant");
	qt_resp_free(&r);
	free(name);
	free(body);
	qt_done(&t);
}
END_TEST

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

QUERY_PART(limits)
{
	TCase *tc = tcase_create("limits_malformed");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, malformed_and_oversized, 0, NROWS(bad_rows));
	suite_add_tcase(s, tc);
	tc = tcase_create("limits_clients");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, slow_clients);
	tcase_add_test(tc, metrics_bound);
	tcase_add_test(tc, pipelining_order);
	tcase_add_test(tc, http10_keepalive);
	tcase_add_loop_test(tc, authorization_headers, 0, NROWS(auth_hdr_rows));
	tcase_add_test(tc, connection_bound);
	tcase_add_test(tc, half_open_bound);
	tcase_add_test(tc, peer_bound);
	tcase_add_test(tc, handshake_deadline);
	tcase_add_test(tc, probe_budget);
	tcase_add_test(tc, keepalive_concurrency);
	tcase_add_test(tc, large_body_accepted);
	suite_add_tcase(s, tc);
}
