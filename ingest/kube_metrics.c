/*
 * The watcher's /metrics: a small HTTP/1.0-style server (one request per
 * connection, then close) whose descriptors kube.c polls together with its
 * transfers, so that the watch loop stays one thread and nothing blocks
 * it: every socket is non-blocking, at most MAX_CONNS are open, a request
 * head is at most REQ_MAX bytes and must arrive within IDLE_NS. The text
 * is rendered from a view that kube.c fills, so this file sees no CURL*.
 */
#include "ingest/kube_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 8
#define REQ_MAX	  2048
#define IDLE_NS	  (5 * (int64_t)1000000000)

_Static_assert(MAX_CONNS + 1 == METRICS_SRV_FDS, "one listener and conns");

struct conn {
	int fd; /* -1: free */
	int64_t start_ns;
	char req[REQ_MAX];
	size_t req_len;
	char *out; /* the answer, once the request is read */
	size_t out_len, out_off;
};

struct metrics_srv {
	int lfd;
	unsigned port;
	struct conn c[MAX_CONNS];
};

static int64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL, 0);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int ingest__metrics_srv_open(metrics_srv_t **out, const char *hostport,
			     struct lg_error *err)
{
	const char *colon = strrchr(hostport, ':');
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE},
			*ai = NULL;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	char host[256];
	metrics_srv_t *m;
	int fd, one = 1, rc;

	*out = NULL;
	if (colon == NULL || colon == hostport || colon[1] == '\0' ||
	    (size_t)(colon - hostport) >= sizeof(host) ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return lg_error_set(err, LG_EINVAL,
				    "--metrics-listen %s: not HOST:PORT",
				    hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0)
		return lg_error_set(err, LG_EINVAL, "--metrics-listen %s: %s",
				    hostport, gai_strerror(rc));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) != 0) {
		rc = lg_error_set(err, LG_EIO, "--metrics-listen %s: %s",
				  hostport, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return rc;
	}
	freeaddrinfo(ai);
	set_nonblock(fd);
	m = lg_xcalloc(1, sizeof(*m));
	m->lfd = fd;
	m->port = ntohs(sin.sin_port);
	for (int i = 0; i < MAX_CONNS; i++)
		m->c[i].fd = -1;
	*out = m;
	return 0;
}

static void scrape_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void ingest__metrics_srv_close(metrics_srv_t *m)
{
	if (m == NULL)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		scrape_close(&m->c[i]);
	close(m->lfd);
	free(m);
}

unsigned ingest__metrics_srv_port(const metrics_srv_t *m)
{
	return m->port;
}

size_t ingest__metrics_srv_fds(const metrics_srv_t *m, int *fds, short *events,
			       size_t cap)
{
	size_t n = 0;

	if (m == NULL || cap == 0)
		return 0;
	fds[n] = m->lfd;
	events[n++] = POLLIN;
	for (int i = 0; i < MAX_CONNS && n < cap; i++)
		if (m->c[i].fd >= 0) {
			fds[n] = m->c[i].fd;
			events[n++] = m->c[i].out ? POLLOUT : POLLIN;
		}
	return n;
}

static void metrics_answer(struct conn *c, int code, const char *reason,
			   const char *type, const char *body, size_t len)
{
	size_t cap = len + 256;

	c->out = lg_xmalloc(cap);
	c->out_len = (size_t)snprintf(c->out, cap,
				      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
				      "Content-Length: %zu\r\n"
				      "Connection: close\r\n\r\n",
				      code, reason, type, len);
	memcpy(c->out + c->out_len, body, len);
	c->out_len += len;
}

/* The request head is complete: choose the answer. */
static void route(struct conn *c, metrics_render_fn *render, void *ctx)
{
	const char *text = "text/plain; charset=utf-8";
	char *sp = memchr(c->req, ' ', c->req_len), *end;
	size_t plen;

	if (sp == NULL || (size_t)(sp - c->req) != 3 ||
	    memcmp(c->req, "GET", 3) != 0) {
		metrics_answer(c, 405, "Method Not Allowed", text, "GET only\n",
			       9);
		return;
	}
	end = memchr(sp + 1, ' ', c->req_len - (size_t)(sp + 1 - c->req));
	plen = end ? (size_t)(end - sp - 1) : 0;
	if (plen >= 8 && memcmp(sp + 1, "/metrics", 8) == 0 &&
	    (plen == 8 || sp[9] == '?')) {
		size_t len;
		char *body = render(ctx, &len);

		if (body == NULL)
			metrics_answer(
				c, 500, "Internal Server Error", text,
				"the metrics page would pass its bound\n", 38);
		else
			metrics_answer(
				c, 200, "OK",
				"text/plain; version=0.0.4; charset=utf-8",
				body, len);
		free(body);
	} else if (plen == 8 && memcmp(sp + 1, "/healthz", 8) == 0) {
		metrics_answer(c, 200, "OK", text, "ok\n", 3);
	} else {
		metrics_answer(c, 404, "Not Found", text,
			       "not found (GET /metrics, /healthz)\n", 36);
	}
}

static void conn_read(struct conn *c, metrics_render_fn *render, void *ctx)
{
	for (;;) {
		ssize_t n = recv(c->fd, c->req + c->req_len,
				 sizeof(c->req) - 1 - c->req_len, 0);

		if (n < 0 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0) {
			scrape_close(c);
			return;
		}
		c->req_len += (size_t)n;
		c->req[c->req_len] = '\0';
		if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
			route(c, render, ctx);
			return;
		}
		if (c->req_len == sizeof(c->req) - 1) {
			metrics_answer(c, 431,
				       "Request Header Fields Too Large",
				       "text/plain", "request too large\n", 18);
			return;
		}
	}
}

static void scrape_write(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	scrape_close(c);
}

void ingest__metrics_srv_serve(metrics_srv_t *m, metrics_render_fn *render,
			       void *ctx)
{
	int64_t now = mono();
	int fd;

	if (m == NULL)
		return;
	while ((fd = accept(m->lfd, NULL, NULL)) >= 0) {
		int i = 0;

		while (i < MAX_CONNS && m->c[i].fd >= 0)
			i++;
		if (i == MAX_CONNS) {
			close(fd); /* bounded: the scraper retries */
			continue;
		}
		set_nonblock(fd);
		m->c[i].fd = fd;
		m->c[i].start_ns = now;
	}
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &m->c[i];

		if (c->fd < 0)
			continue;
		if (c->out == NULL)
			conn_read(c, render, ctx);
		if (c->fd >= 0 && c->out != NULL)
			scrape_write(c);
		if (c->fd >= 0 && now - c->start_ns > IDLE_NS)
			scrape_close(c);
	}
}

/* ---------------------------------------------------------------------- */
/* Rendering. */

/* The page is bounded by construction (RES_MAX resources, their fixed
 * families, at most INGEST_NOTE_CODES note counters: some 20 KiB); the
 * bound keeps it so if a family is added per object. Adds are unchecked:
 * a refusal sticks, and detach says so. */
#define KUBE_METRICS_MAX_BYTES ((size_t)1 << 20)

static void thead(struct lg_buf *b, const char *name, const char *type,
		  const char *help)
{
	lg_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

/* One gauge or counter per resource; get returns false to omit one. */
typedef bool res_value_fn(const struct kube_metrics_view *v,
			  const struct kube_res_view *r, double *out);

static void per_res(struct lg_buf *b, const struct kube_metrics_view *v,
		    const char *name, const char *type, const char *help,
		    res_value_fn *get)
{
	double x;

	thead(b, name, type, help);
	for (int i = 0; i < RES_MAX; i++)
		if (get(v, &v->res[i], &x))
			lg_buf_addf(b, "%s{resource=\"%s\"} %.17g\n", name,
				    v->res[i].name, x);
}

static bool g_up(const struct kube_metrics_view *v,
		 const struct kube_res_view *r, double *x)
{
	*x = r->up;
	return true;
}

static bool g_absent(const struct kube_metrics_view *v,
		     const struct kube_res_view *r, double *x)
{
	*x = r->absent;
	return true;
}

static bool g_relists(const struct kube_metrics_view *v,
		      const struct kube_res_view *r, double *x)
{
	*x = (double)r->st.relists;
	return true;
}

static bool g_errors(const struct kube_metrics_view *v,
		     const struct kube_res_view *r, double *x)
{
	*x = (double)r->st.errors;
	return true;
}

static bool g_objects(const struct kube_metrics_view *v,
		      const struct kube_res_view *r, double *x)
{
	*x = (double)r->st.events;
	return true;
}

static bool g_backoff(const struct kube_metrics_view *v,
		      const struct kube_res_view *r, double *x)
{
	*x = r->backoff_s;
	return true;
}

static bool g_last_list(const struct kube_metrics_view *v,
			const struct kube_res_view *r, double *x)
{
	*x = secs(r->st.last_list_ns);
	return r->st.last_list_ns > 0;
}

static bool g_lag(const struct kube_metrics_view *v,
		  const struct kube_res_view *r, double *x)
{
	*x = secs(v->now_ns - r->st.last_seen_ns);
	return r->st.last_seen_ns > 0 && !r->absent;
}

char *ingest__kube_metrics_render(const struct kube_metrics_view *v,
				  size_t *len)
{
	char common[LG_METRICS_COMMON_MAX];
	struct lg_buf b;

	lg_buf_init(&b, KUBE_METRICS_MAX_BYTES);
	lg_metrics_common(common, sizeof(common));
	lg_buf_addf(&b, "%s", common);
	per_res(&b, v, "gpuledger_watch_up", "gauge",
		"1 while the resource is listed and its watch is open.", g_up);
	per_res(&b, v, "gpuledger_watch_api_absent", "gauge",
		"1 while the resource's API is not served (skipped, "
		"re-checked).",
		g_absent);
	thead(&b, "gpuledger_watch_api_version_info", "gauge",
	      "The API version read for each resource (value 1).");
	for (int i = 0; i < RES_MAX; i++) {
		const struct kube_res_view *r = &v->res[i];

		if (r->version != NULL)
			lg_buf_addf(&b,
				    "gpuledger_watch_api_version_info{resource="
				    "\"%s\","
				    "group=\"%s\",version=\"%s\"} 1\n",
				    r->name, r->group, r->version);
	}
	per_res(&b, v, "gpuledger_watch_relists_total", "counter",
		"Lists started (at start, after 410 or ERROR, class table "
		"changes).",
		g_relists);
	per_res(&b, v, "gpuledger_watch_errors_total", "counter",
		"Failed requests, each retried after a backoff.", g_errors);
	per_res(&b, v, "gpuledger_watch_objects_received_total", "counter",
		"Objects received from lists and watch events.", g_objects);
	per_res(&b, v, "gpuledger_watch_backoff_seconds", "gauge",
		"Time until the next retry of a failed request (0: none).",
		g_backoff);
	per_res(&b, v, "gpuledger_watch_last_list_timestamp_seconds", "gauge",
		"When the last complete list ended.", g_last_list);
	per_res(&b, v, "gpuledger_watch_lag_seconds", "gauge",
		"Time since the resource's last object, bookmark or list.",
		g_lag);
	thead(&b, "gpuledger_watch_healthy", "gauge",
	      "1 while every served resource is up (TICKs are written).");
	lg_buf_addf(&b, "gpuledger_watch_healthy %d\n", v->healthy);
	thead(&b, "gpuledger_watch_horizon_lag_seconds", "gauge",
	      "Time since the ledger's horizon (the last event time).");
	if (v->horizon_ns > 0)
		lg_buf_addf(&b, "gpuledger_watch_horizon_lag_seconds %.3f\n",
			    secs(v->now_ns - v->horizon_ns));
	thead(&b, "gpuledger_watch_events_appended_total", "counter",
	      "Events the watcher appended to the ledger.");
	lg_buf_addf(&b, "gpuledger_watch_events_appended_total %llu\n",
		    (unsigned long long)v->c.events_out);
	thead(&b, "gpuledger_watch_start_records", "gauge",
	      "Records the start read: the object table's, the checkpoint "
	      "and the tail after it (O(live objects)).");
	lg_buf_addf(&b, "gpuledger_watch_start_records %llu\n",
		    (unsigned long long)v->c.start_records);
	thead(&b, "gpuledger_watch_notes_total", "counter",
	      "NOTE events, by code.");
	for (size_t i = 0; i < v->n_notes; i++)
		lg_buf_addf(
			&b, "gpuledger_watch_notes_total{code=\"%s\"} %llu\n",
			v->notes[i].code, (unsigned long long)v->notes[i].n);
	return lg_buf_detach(&b, len);
}
