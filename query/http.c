/*
 * Connections: HTTP/1.1 with keep-alive and pipelining, parsed by
 * http-parser, with every part of a request bounded.
 *
 * Order of answers. Requests on one connection are answered in the order
 * they came. Most are answered at once, inside the parser's
 * on_message_complete; a verdict waits for the next group commit. Then the
 * parser is paused, the bytes after the request are held, and the
 * connection stops reading until the answer is written, which bounds what
 * one client can queue to one request and one read buffer.
 *
 * Time. A connection has one timer: until its TLS handshake and first
 * request head are done (half-open) it has handshake_ms from its accept;
 * while a request is arriving it must arrive whole within request_ms (a
 * client that trickles bytes is cut off with 408); between requests it may
 * stay idle for idle_ms; after an error answer it lingers QUERY_LINGER_MS,
 * reading and dropping what the client still sends, so that the answer is
 * not lost to a reset.
 *
 * Budgets (DESIGN 7). Each listener's connections are counted in its
 * budget (query_int.h), in all, half-open and per peer address. A new
 * connection over a bound closes the oldest connection the budget may shed
 * in its way rather than being refused: a half-open one (on the probe
 * listener, any one) - the one that has had longest to finish and has not,
 * so an attacker who holds connections open only ever pushes out his own,
 * while a client that finishes its handshake is safe from being shed. Only
 * when there is nothing to shed is the new connection refused.
 */
#include "query/query_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AUTH_HEADER_MAX 512 /* "Bearer " + a token, with room to spare */
#define FIELD_KEEP	16  /* header names longer than this are not ours */

struct conn {
	uv_tcp_t tcp;
	/* One deadline (request, idle, linger or stream: on_timer acts on
	 * the state), at deadline_ms of loop time, 0 for none. The timer is
	 * armed for armed_ms and, fired early, re-arms for what is left:
	 * moving the deadline, as every request does three times, is a
	 * store, not a change of libuv's timer heap (issue 11). */
	uv_timer_t timer;
	uint64_t deadline_ms, armed_ms;
	uv_shutdown_t shut;
	struct query_server *qs;
	struct conn *prev, *next;
	http_parser parser;
	int handles; /* open uv handles; freed when 0 */

	/* The request being read. */
	struct lg_buf url;  /* at most o.max_url_bytes */
	struct lg_buf body; /* at most o.max_body_bytes */
	char field[FIELD_KEEP];
	size_t field_len, header_bytes;
	unsigned n_headers;
	bool last_was_value, field_long;
	enum {
		HF_OTHER,
		HF_AUTH,
		HF_EXPECT,
		HF_IDEMPOTENCY
	} hf;
	char auth[AUTH_HEADER_MAX];
	size_t auth_len;
	bool auth_seen, auth_bad, expect_continue;
	/* Idempotency-Key (DESIGN 11 rule 3); too long or repeated: bad. */
	char idem[VERDICT_IDEMPOTENCY_KEY_MAX + 1];
	size_t idem_len;
	bool idem_seen, idem_bad;
	int reject; /* status when a bound stopped the parser */
	uint64_t t0_ns;

	/* Flow. */
	char *held; /* bytes after a paused request; owned */
	size_t held_len;
	bool in_request, deferred, blocked, reading, closing, lingering;
	bool keep_alive;
	enum route_id deferred_route;
	/* The close hook of whoever answers the deferred request. */
	conn_gone_fn *gone;
	void *gone_arg;
	/* A heavy read streaming its answer (query/stream.c), or NULL. */
	struct heavy *heavy;
	bool chunked; /* its body goes in chunks (HTTP/1.1) */

	/* TLS (NULL: plain). cert_who is the role of the client's verified
	 * certificate (a `cert:<CN>` token-file line), or NULL. */
	struct tls_conn *tls;
	bool tls_up;
	bool probe_only; /* accepted on the probe listener */
	const struct principal *cert_who;

	/* Its listener's budget: counted in it from accept to close. */
	struct conn_budget *budget;
	struct peer_key peer;
	bool half_open; /* no TLS handshake and first request head yet */
	bool sheddable; /* in the budget's list of what it may shed */
	struct conn *shed_prev, *shed_next; /* older, newer */
};

/* A queued write: the part of an answer the socket did not take at once. */
struct wreq {
	uv_write_t req;
	struct conn *c;
	char data[];
};

static const struct {
	int code;
	const char *reason;
} reasons[] = {
	{100, "Continue"},
	{200, "OK"},
	{400, "Bad Request"},
	{401, "Unauthorized"},
	{403, "Forbidden"},
	{404, "Not Found"},
	{405, "Method Not Allowed"},
	{408, "Request Timeout"},
	{413, "Content Too Large"},
	{414, "URI Too Long"},
	{431, "Request Header Fields Too Large"},
	{500, "Internal Server Error"},
	{501, "Not Implemented"},
	{503, "Service Unavailable"},
};

const char *query__http_reason(int status)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == status)
			return reasons[i].reason;
	return "Unknown";
}

static void conn_close(struct conn *c);
static void conn_linger(struct conn *c);
static void conn_feed(struct conn *c, const char *p, size_t n);
static void tls_pump(struct conn *c);

/* ---------------------------------------------------------------------- */
/* Budgets. */

static void shed_list_add(struct conn_budget *b, struct conn *c)
{
	c->sheddable = true;
	c->shed_prev = b->newest;
	c->shed_next = NULL;
	if (b->newest != NULL)
		b->newest->shed_next = c;
	else
		b->oldest = c;
	b->newest = c;
}

static void shed_list_remove(struct conn_budget *b, struct conn *c)
{
	if (!c->sheddable)
		return;
	c->sheddable = false;
	if (c->shed_prev != NULL)
		c->shed_prev->shed_next = c->shed_next;
	else
		b->oldest = c->shed_next;
	if (c->shed_next != NULL)
		c->shed_next->shed_prev = c->shed_prev;
	else
		b->newest = c->shed_prev;
	c->shed_prev = c->shed_next = NULL;
}

/* The head is in (on the probe listener the connection stays sheddable). */
static void half_open_done(struct conn *c)
{
	struct conn_budget *b = c->budget;

	if (!c->half_open)
		return;
	c->half_open = false;
	b->n_half_open--;
	if (!b->shed_any)
		shed_list_remove(b, c);
}

static void budget_leave(struct conn *c)
{
	struct conn_budget *b = c->budget;

	half_open_done(c);
	shed_list_remove(b, c);
	query__peer_del(b, &c->peer);
	b->n--;
}

static void shed(struct conn *c, enum shed_reason r)
{
	c->budget->shed[r]++;
	conn_close(c);
}

/* The oldest connection of peer k the budget may shed, or NULL. The list
 * holds at most max_half_open connections (max for the probe listener). */
static struct conn *oldest_of(const struct conn_budget *b,
			      const struct peer_key *k)
{
	for (struct conn *c = b->oldest; c != NULL; c = c->shed_next)
		if (memcmp(&c->peer, k, sizeof(*k)) == 0)
			return c;
	return NULL;
}

/* Makes room in b for a new connection of peer k, bound by bound; false
 * (counted) when a bound is reached and nothing in its way may be shed. */
static bool make_room(struct conn_budget *b, const struct peer_key *k)
{
	struct conn *o;

	/* The peer's share first: a peer at it sheds its own connection, and
	 * the other bounds are then not reached on its account. */
	if (query__peer_count(b, k) >= b->max_per_peer) {
		if ((o = oldest_of(b, k)) == NULL) {
			b->refused[SHED_PEER]++;
			return false;
		}
		shed(o, SHED_PEER);
	}
	/* Half-open connections are sheddable: the list is not empty. */
	if (b->n_half_open >= b->max_half_open)
		shed(b->oldest, SHED_HALF_OPEN);
	if (b->n >= b->max) {
		if (b->oldest == NULL) {
			b->refused[SHED_FULL]++;
			return false;
		}
		shed(b->oldest, SHED_FULL);
	}
	return true;
}

static void budget_enter(struct conn *c, struct conn_budget *b,
			 const struct peer_key *k)
{
	c->budget = b;
	c->peer = *k;
	c->half_open = true;
	b->n++;
	b->n_half_open++;
	query__peer_add(b, k);
	shed_list_add(b, c);
}

/* ---------------------------------------------------------------------- */
/* Handles and reading. */

static void on_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	if (--c->handles > 0)
		return;
	lg_buf_release(&c->url);
	lg_buf_release(&c->body);
	free(c->held);
	query__tls_conn_free(c->tls);
	free(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;

	/* One buffer serves every connection: a read is parsed at once and
	 * what is left of it is copied out (conn_feed). */
	*buf = uv_buf_init(c->qs->rbuf, sizeof(c->qs->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	if (nread < 0) {
		conn_close(c);
		return;
	}
	if (nread == 0 || c->closing || c->lingering)
		return;
	if (c->tls != NULL) {
		query__tls_conn_input(c->tls, buf->base, (size_t)nread);
		tls_pump(c);
		return;
	}
	conn_feed(c, buf->base, (size_t)nread);
}

static void conn_reading(struct conn *c, bool on)
{
	if (c->closing || on == c->reading)
		return;
	if (on &&
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
		conn_close(c);
		return;
	}
	if (!on)
		uv_read_stop((uv_stream_t *)&c->tcp);
	c->reading = on;
}

static void conn_close(struct conn *c)
{
	struct query_server *qs = c->qs;

	if (c->closing)
		return;
	c->closing = true;
	if (c->heavy != NULL) {
		query__heavy_conn_gone(c->heavy);
		c->heavy = NULL;
	} else if (c->deferred && c->gone != NULL) {
		c->gone(c, c->gone_arg);
		c->gone = NULL;
	}
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		qs->conns.head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	qs->conns.n--;
	budget_leave(c);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

void query__conn_close_all(struct query_server *qs)
{
	while (qs->conns.head != NULL)
		conn_close(qs->conns.head);
}

static void on_timer(uv_timer_t *t);

static void timer_arm(struct conn *c, uint64_t now)
{
	c->armed_ms = c->deadline_ms;
	uv_timer_start(&c->timer, on_timer, c->deadline_ms - now, 0);
}

/* The deadline ms from now (loop time, as uv_timer_start counts). */
static void timer_set(struct conn *c, uint64_t ms)
{
	uint64_t now = uv_now(c->timer.loop);

	c->deadline_ms = now + ms;
	if (!uv_is_active((uv_handle_t *)&c->timer) ||
	    c->deadline_ms < c->armed_ms)
		timer_arm(c, now);
}

static void timer_clear(struct conn *c)
{
	c->deadline_ms = 0;
}

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	uint64_t now = uv_now(t->loop);

	if (c->deadline_ms == 0)
		return;
	if (now < c->deadline_ms) {
		timer_arm(c, now);
		return;
	}
	c->deadline_ms = 0;
	if (c->lingering || c->closing || c->heavy != NULL) {
		/* A stream whose client took nothing for idle_ms is cut. */
		conn_close(c);
	} else if (c->half_open) {
		struct request rq = {
			.c = c, .route = R_NONE, .t0_ns = c->t0_ns};

		c->budget->shed[SHED_DEADLINE]++;
		if (!c->in_request) {
			conn_close(
				c); /* no handshake, or not a byte of a head */
			return;
		}
		c->qs->m.conns_timed_out++;
		c->keep_alive = false;
		query__reply_error(c->qs, &rq, 408,
				   "the request head did not arrive within %u "
				   "ms of the connection",
				   c->qs->o.handshake_ms);
	} else if (c->in_request) {
		struct request rq = {
			.c = c, .route = R_NONE, .t0_ns = c->t0_ns};

		c->qs->m.conns_timed_out++;
		c->keep_alive = false;
		query__reply_error(c->qs, &rq, 408,
				   "the request did not arrive within %u ms",
				   c->qs->o.request_ms);
	} else if (!c->deferred) {
		conn_close(c); /* idle */
	}
}

/* ---------------------------------------------------------------------- */
/* Writing. */

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct conn *c = w->c;

	free(w);
	if (status < 0) {
		conn_close(c);
		return;
	}
	if (c->heavy != NULL && !c->closing) {
		/* The client takes the stream: it may go on. */
		timer_set(c, c->qs->o.idle_ms);
		query__heavy_pump(c->heavy);
		return;
	}
	if (c->blocked && !c->closing &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) <
		    QUERY_WRITE_LOW_BYTES) {
		c->blocked = false;
		if (!c->deferred && !c->lingering) {
			http_parser_pause(&c->parser, 0);
			conn_feed(c, NULL, 0);
		}
	}
}

/* Writes head and body: what the socket takes now goes at once, the rest
 * is copied into a queued write. */
static void raw_write(struct conn *c, const char *head, size_t hn,
		      const char *body, size_t bn)
{
	uv_buf_t b[2] = {uv_buf_init((char *)head, (unsigned)hn),
			 uv_buf_init((char *)body, (unsigned)bn)};
	int sent = uv_try_write((uv_stream_t *)&c->tcp, b, 2);
	size_t done = sent > 0 ? (size_t)sent : 0, left;
	struct wreq *w;
	uv_buf_t rest;

	if (sent < 0 && sent != UV_EAGAIN) {
		conn_close(c);
		return;
	}
	if (done == hn + bn)
		return;
	left = hn + bn - done;
	w = lg_xmalloc(sizeof(*w) + left);
	w->c = c;
	if (done < hn) {
		memcpy(w->data, head + done, hn - done);
		memcpy(w->data + hn - done, body, bn);
	} else {
		memcpy(w->data, body + (done - hn), left);
	}
	rest = uv_buf_init(w->data, (unsigned)left);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &rest, 1, on_write) !=
	    0) {
		free(w);
		conn_close(c);
	}
}

/* Sends what the TLS session has to send (records, alerts). */
static void tls_flush(struct conn *c)
{
	size_t len;
	const char *out = query__tls_conn_output(c->tls, &len);

	/* raw_write copies what the socket does not take at once. */
	if (out != NULL && !c->closing)
		raw_write(c, out, len, "", 0);
	query__tls_conn_output_done(c->tls);
}

/* Writes head and body, through TLS when the connection has it. A small
 * answer is one record: two would cost a second MAC and header. */
static void conn_write(struct conn *c, const char *head, size_t hn,
		       const char *body, size_t bn)
{
	char one[16384];
	int rc;

	if (c->tls == NULL) {
		raw_write(c, head, hn, body, bn);
		return;
	}
	if (hn + bn <= sizeof(one)) {
		memcpy(one, head, hn);
		memcpy(one + hn, body, bn);
		rc = query__tls_conn_write(c->tls, one, hn + bn);
	} else {
		rc = query__tls_conn_write(c->tls, head, hn);
		if (rc == 0)
			rc = query__tls_conn_write(c->tls, body, bn);
	}
	tls_flush(c);
	if (rc != 0)
		conn_close(c);
}

/* Sends one answer and decides what the connection does next. route holds
 * the route's own header lines and extra the answer's (each NULL or lines
 * ending in CRLF; extra at most QUERY_EXTRA_HEADER_MAX bytes). */
/* An answer's head being written. The route's header lines are constants
 * of the route table and extra is bounded: a head that does not fit is a
 * programmer error. A fixed array on the stack, not an lg_buf: its size is
 * known here, and every answer writes one. */
struct head_buf {
	char *p, *end;
};

static void head_put_n(struct head_buf *h, const char *s, size_t n)
{
	LG_ASSERT(n < (size_t)(h->end - h->p));
	memcpy(h->p, s, n);
	h->p += n;
}

static void head_put(struct head_buf *h, const char *s)
{
	head_put_n(h, s, strlen(s));
}

static void head_put_uint(struct head_buf *h, uint64_t v)
{
	char d[20];
	size_t n = 0;

	do
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	head_put_n(h, d + sizeof(d) - n, n);
}

static void conn_send(struct conn *c, int status, const char *ctype,
		      const char *route, const char *body, size_t len,
		      const char *extra)
{
	char head[1536 + QUERY_EXTRA_HEADER_MAX];
	struct head_buf h = {.p = head, .end = head + sizeof(head)};
	bool close = !c->keep_alive || c->reject != 0;

	if (extra != NULL && strlen(extra) > QUERY_EXTRA_HEADER_MAX)
		extra = NULL; /* a bug of the caller; the answer still goes */
	/* Pieces, not snprintf, which took a seventh of serve's user time
	 * on a small answer (issue 11). */
	head_put(&h, "HTTP/1.1 ");
	head_put_uint(&h, (unsigned)status);
	head_put(&h, " ");
	head_put(&h, query__http_reason(status));
	head_put(&h, "\r\nContent-Type: ");
	head_put(&h, ctype);
	head_put(&h, "\r\nContent-Length: ");
	head_put_uint(&h, len);
	head_put(&h, "\r\n");
	if (route != NULL)
		head_put(&h, route);
	if (status == 401)
		head_put(&h, "WWW-Authenticate: Bearer\r\n");
	if (close)
		head_put(&h, "Connection: close\r\n");
	else if (c->parser.http_minor == 0)
		head_put(&h, "Connection: keep-alive\r\n");
	if (extra != NULL)
		head_put(&h, extra);
	if (c->qs->stale_hdr[0] != '\0' && c->parser.method == HTTP_GET)
		head_put(&h, c->qs->stale_hdr);
	head_put(&h, "\r\n");
	conn_write(c, head, (size_t)(h.p - head), body, len);
	if (c->closing)
		return;
	if (close) {
		conn_linger(c);
		return;
	}
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) >
	    QUERY_WRITE_HIGH_BYTES)
		c->blocked = true;
	timer_set(c, c->qs->o.idle_ms);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	if (status < 0)
		conn_close(req->data);
}

/* After an answer that ends the connection: no more requests are parsed;
 * the write side is shut once the answer is out, and what the client still
 * sends is dropped until it closes or the linger time is up. */
static void conn_linger(struct conn *c)
{
	c->lingering = true;
	c->in_request = false;
	free(c->held);
	c->held = NULL;
	c->held_len = 0;
	timer_set(c, QUERY_LINGER_MS);
	if (c->tls != NULL) {
		query__tls_conn_shutdown(c->tls);
		tls_flush(c);
		if (c->closing)
			return;
	}
	c->shut.data = c;
	if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
		conn_close(c);
		return;
	}
	conn_reading(c, true);
}

/* ---------------------------------------------------------------------- */
/* Answers. */

static void answer_h(struct query_server *qs, struct conn *c, enum route_id r,
		     uint64_t t0, int status, const char *ctype,
		     const char *body, size_t len, const char *extra)
{
	query__metrics_request(&qs->m, r, status, query__now_ns() - t0);
	if (c != NULL && !c->closing && !c->lingering)
		conn_send(c, status, ctype,
			  r < R_MAX ? query__routes[r].headers : NULL, body,
			  len, extra);
}

static void answer(struct query_server *qs, struct conn *c, enum route_id r,
		   uint64_t t0, int status, const char *ctype, const char *body,
		   size_t len)
{
	answer_h(qs, c, r, t0, status, ctype, body, len, NULL);
}

void query__reply_raw(struct query_server *qs, struct request *rq, int status,
		      const char *content_type, char *body, size_t len)
{
	answer(qs, rq->c, rq->route, rq->t0_ns, status, content_type, body,
	       len);
	free(body);
}

void query__reply_raw_headers(struct query_server *qs, struct request *rq,
			      int status, const char *content_type, char *body,
			      size_t len, const char *extra)
{
	answer_h(qs, rq->c, rq->route, rq->t0_ns, status, content_type, body,
		 len, extra);
	free(body);
}

void query__reply_borrowed(struct query_server *qs, struct request *rq,
			   int status, const char *content_type,
			   const char *body, size_t len)
{
	answer(qs, rq->c, rq->route, rq->t0_ns, status, content_type, body,
	       len);
}

void query__reply_json(struct query_server *qs, struct request *rq, int status,
		       json_t *v)
{
	char *text = v ? json_canonical(v) : NULL;

	json_decref(v);
	/* An answer that could not be built (a value missing from a
	 * document, text that is not UTF-8) is our fault, not the client's. */
	if (text == NULL) {
		status = 500;
		text = lg_xstrdup(
			"{\"error\":\"the answer could not be built\"}");
	}
	query__reply_raw(qs, rq, status, "application/json", text,
			 strlen(text));
}

json_t *query__error_doc(const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Messages may quote what a client sent; JSON strings must be UTF-8,
	 * so anything but printable ASCII is shown as '?'. */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	return json_pack("{s:s}", "error", msg);
}

void query__reply_error(struct query_server *qs, struct request *rq, int status,
			const char *fmt, ...)
{
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = query__error_doc(fmt, ap);
	va_end(ap);
	query__reply_json(qs, rq, status, v);
}

void query__reply_defer(struct query_server *qs, struct request *rq,
			conn_gone_fn *gone, void *arg)
{
	rq->c->deferred = true;
	rq->c->deferred_route = rq->route;
	rq->c->gone = gone;
	rq->c->gone_arg = arg;
	timer_clear(rq->c);
}

void query__conn_answer_deferred(struct query_server *qs, struct conn *c,
				 enum route_id route, uint64_t t0_ns,
				 int status, char *text)
{
	/* Whoever answers was told by its close hook (query__reply_defer) that
	 * the connection went away, and answers NULL instead. */
	LG_ASSERT(c == NULL || !c->closing);
	if (text == NULL) {
		status = 500;
		text = lg_xstrdup(
			"{\"error\":\"the answer could not be built\"}");
	}
	if (c != NULL) {
		c->deferred = false;
		c->gone = NULL;
		c->heavy = NULL;
	}
	answer(qs, c, route, t0_ns, status, "application/json", text,
	       strlen(text));
	free(text);
	if (c != NULL && !c->closing && !c->lingering && !c->blocked) {
		http_parser_pause(&c->parser, 0);
		conn_feed(c, NULL, 0);
	}
}

/* ---------------------------------------------------------------------- */
/* Streamed answers (query/stream.c drives them). */

void query__conn_stream_begin(struct query_server *qs, struct request *rq,
			      struct heavy *h)
{
	query__reply_defer(qs, rq, NULL, NULL);
	rq->c->heavy = h;
}

/* While the socket holds bytes the client has not taken, the idle clock
 * runs (each write that completes restarts it); while the stream waits on
 * its producer it does not. */
void query__conn_stream_watch(struct conn *c)
{
	bool waiting = query__conn_write_queue(c) > 0;

	if (c->closing)
		return;
	if (!waiting)
		timer_clear(c);
	else if (c->deadline_ms == 0)
		timer_set(c, c->qs->o.idle_ms);
}

size_t query__conn_write_queue(const struct conn *c)
{
	return uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp);
}

bool query__conn_usable(const struct conn *c)
{
	return !c->closing && !c->lingering;
}

/* The head of a 200 streamed answer: chunked for HTTP/1.1; an HTTP/1.0
 * client gets the body up to the end of the connection. */
void query__conn_stream_head(struct conn *c, const char *ctype, enum route_id r,
			     const char *extra)
{
	char head[1024 + QUERY_EXTRA_HEADER_MAX];
	int hn;

	c->chunked = c->parser.http_major == 1 && c->parser.http_minor >= 1;
	if (!c->chunked)
		c->keep_alive = false;
	hn = snprintf(
		head, sizeof(head),
		"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n%s%s%s%s%s\r\n", ctype,
		r < R_MAX && query__routes[r].headers ? query__routes[r].headers
						      : "",
		extra ? extra : "", c->qs->stale_hdr,
		c->chunked ? "Transfer-Encoding: chunked\r\n" : "",
		!c->keep_alive ? "Connection: close\r\n" : "");
	LG_ASSERT(hn >= 0 && (size_t)hn < sizeof(head));
	conn_write(c, head, (size_t)hn, "", 0);
}

void query__conn_stream_data(struct conn *c, const char *p, size_t n)
{
	char frame[32];
	int fn;

	if (n == 0 || c->closing)
		return;
	if (!c->chunked) {
		conn_write(c, p, n, "", 0);
		return;
	}
	fn = snprintf(frame, sizeof(frame), "%zx\r\n", n);
	conn_write(c, frame, (size_t)fn, p, n);
	if (!c->closing)
		conn_write(c, "\r\n", 2, "", 0);
}

void query__conn_stream_end(struct query_server *qs, struct conn *c,
			    enum route_id r, uint64_t t0_ns, bool complete,
			    const char *trailer)
{
	char last[16 + QUERY_EXTRA_HEADER_MAX];

	query__metrics_request(&qs->m, r, complete ? 200 : 500,
			       query__now_ns() - t0_ns);
	c->heavy = NULL;
	c->deferred = false;
	c->gone = NULL;
	if (c->closing)
		return;
	if (!complete) {
		/* The body cannot be finished: the client must see it cut,
		 * not a short answer that looks whole. */
		conn_close(c);
		return;
	}
	if (c->chunked) {
		int n = snprintf(last, sizeof(last), "0\r\n%s\r\n",
				 trailer ? trailer : "");

		conn_write(c, last, (size_t)n, "", 0);
	}
	if (c->closing)
		return;
	if (!c->keep_alive) {
		conn_linger(c);
		return;
	}
	timer_set(c, qs->o.idle_ms);
	if (!c->blocked) {
		http_parser_pause(&c->parser, 0);
		conn_feed(c, NULL, 0);
	}
}

/* 503 with Retry-After: the bound of heavy reads is reached. */
void query__reply_busy(struct query_server *qs, struct request *rq,
		       unsigned retry_s, const char *msg)
{
	char body[512], extra[64];
	int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}", msg);

	snprintf(extra, sizeof(extra), "Retry-After: %u\r\n", retry_s);
	query__metrics_request(&qs->m, rq->route, 503,
			       query__now_ns() - rq->t0_ns);
	if (rq->c != NULL && !rq->c->closing && !rq->c->lingering)
		conn_send(rq->c, 503, "application/json", NULL, body,
			  (size_t)n, extra);
}

/* ---------------------------------------------------------------------- */
/* Parser callbacks: collect the request within its bounds. */

static int refuse(struct conn *c, int status)
{
	c->reject = status;
	return -1;
}

static int on_message_begin(http_parser *p)
{
	struct conn *c = p->data;

	c->in_request = true;
	c->t0_ns = query__now_ns();
	lg_buf_reset(&c->url);
	lg_buf_reset(&c->body);
	c->header_bytes = c->auth_len = c->idem_len = 0;
	c->n_headers = 0;
	c->last_was_value = true;
	c->auth_seen = c->auth_bad = c->expect_continue = false;
	c->idem_seen = c->idem_bad = false;
	c->hf = HF_OTHER;
	/* A body buffer that a large request grew is not kept for the
	 * small requests that usually follow. */
	if (c->body.cap > (64u << 10))
		lg_buf_release(&c->body);
	/* A half-open connection keeps the deadline of its accept. */
	if (!c->half_open)
		timer_set(c, c->qs->o.request_ms);
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (lg_buf_add(&c->url, at, len) != 0)
		return refuse(c, 414);
	return 0;
}

static int count_header_bytes(struct conn *c, size_t len)
{
	c->header_bytes += len;
	return c->header_bytes > c->qs->o.max_header_bytes ? refuse(c, 431) : 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (c->last_was_value) {
		if (++c->n_headers > c->qs->o.max_headers)
			return refuse(c, 431);
		c->last_was_value = false;
		c->field_len = 0;
		c->field_long = false;
	}
	if (count_header_bytes(c, len) != 0)
		return -1;
	if (c->field_len + len > FIELD_KEEP)
		c->field_long = true;
	else
		memcpy(c->field + c->field_len, at, len);
	c->field_len += len;
	return 0;
}

static bool field_is(const struct conn *c, const char *name)
{
	return !c->field_long && c->field_len == strlen(name) &&
	       strncasecmp(c->field, name, c->field_len) == 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (!c->last_was_value) {
		c->last_was_value = true;
		c->hf = field_is(c, "authorization")	 ? HF_AUTH
			: field_is(c, "expect")		 ? HF_EXPECT
			: field_is(c, "idempotency-key") ? HF_IDEMPOTENCY
							 : HF_OTHER;
		/* Two keys are ambiguous: the request is refused. */
		if (c->hf == HF_IDEMPOTENCY && c->idem_seen)
			c->idem_bad = true;
		if (c->hf == HF_IDEMPOTENCY)
			c->idem_seen = true;
		/* Two Authorization headers are ambiguous: neither counts,
		 * whatever their values (an empty one included). */
		if (c->hf == HF_AUTH && c->auth_seen)
			c->auth_bad = true;
		if (c->hf == HF_AUTH)
			c->auth_seen = true;
	}
	if (count_header_bytes(c, len) != 0)
		return -1;
	if (c->hf == HF_AUTH) {
		if (c->auth_len + len > sizeof(c->auth))
			c->auth_bad = true;
		else
			memcpy(c->auth + c->auth_len, at, len);
		c->auth_len += c->auth_bad ? 0 : len;
	} else if (c->hf == HF_IDEMPOTENCY) {
		if (c->idem_len + len > VERDICT_IDEMPOTENCY_KEY_MAX)
			c->idem_bad = true;
		else
			memcpy(c->idem + c->idem_len, at, len);
		c->idem_len += c->idem_bad ? 0 : len;
	} else if (c->hf == HF_EXPECT && len >= 12 &&
		   strncasecmp(at, "100-continue", 12) == 0) {
		c->expect_continue = true;
	}
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	if (p->upgrade)
		return refuse(c, 400);
	if (p->content_length != ULLONG_MAX && p->content_length > 0 &&
	    p->content_length > c->qs->o.max_body_bytes)
		return refuse(c, 413);
	/* The first head is in: the body has request_ms, as any request's. */
	if (c->half_open) {
		half_open_done(c);
		timer_set(c, c->qs->o.request_ms);
	}
	/* curl and others wait for this before a large body. */
	if (c->expect_continue)
		conn_write(c, cont, sizeof(cont) - 1, "", 0);
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;

	if (lg_buf_add(&c->body, at, len) != 0)
		return refuse(c, 413);
	return 0;
}

static void dispatch(struct conn *c);

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;

	c->in_request = false;
	timer_clear(c);
	c->keep_alive = http_should_keep_alive(p) != 0;
	dispatch(c);
	/* Nothing more is parsed until this request's answer is out. */
	if (c->deferred || c->blocked || c->closing || c->lingering)
		http_parser_pause(p, 1);
	return 0;
}

void query__http_settings(http_parser_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->on_message_begin = on_message_begin;
	s->on_url = on_url;
	s->on_header_field = on_header_field;
	s->on_header_value = on_header_value;
	s->on_headers_complete = on_headers_complete;
	s->on_body = on_body;
	s->on_message_complete = on_message_complete;
}

/* ---------------------------------------------------------------------- */
/* Feeding the parser. */

static const char *parse_error_text(const struct conn *c, enum http_errno e)
{
	switch (c->reject) {
	case 413:
		return "the request body is too large";
	case 414:
		return "the request target is too long";
	case 431:
		return "too many or too large header fields";
	}
	return http_errno_description(e);
}

static void conn_parse_error(struct conn *c, enum http_errno e)
{
	struct request rq = {.c = c, .route = R_NONE, .t0_ns = c->t0_ns};
	int status = c->reject ? c->reject : 400;

	if (c->reject == 0)
		c->reject = 400;
	c->qs->m.bad_requests++;
	query__reply_error(c->qs, &rq, status, "%s", parse_error_text(c, e));
}

/* Parses n bytes at p; with p NULL, resumes with the held bytes. Bytes
 * after a request that pauses the parser are held; reading stops until
 * the parser runs again. */
static void conn_feed(struct conn *c, const char *p, size_t n)
{
	char *own = NULL;
	size_t used;
	enum http_errno e;
	bool resumed = p == NULL;

	if (resumed) {
		own = c->held;
		p = own;
		n = c->held_len;
		c->held = NULL;
		c->held_len = 0;
	}
	used = n ? http_parser_execute(&c->parser, &c->qs->settings, p, n) : 0;
	e = HTTP_PARSER_ERRNO(&c->parser);
	if (c->closing || c->lingering) {
		free(own);
		return;
	}
	if (e == HPE_PAUSED) {
		if (used < n) {
			c->held = lg_xmalloc(n - used);
			memcpy(c->held, p + used, n - used);
			c->held_len = n - used;
		}
		conn_reading(c, false);
	} else if (e != HPE_OK || used != n) {
		conn_parse_error(c, e);
	} else {
		conn_reading(c, true);
		/* Resumed: the TLS session may hold more records. */
		if (resumed && c->tls != NULL)
			tls_pump(c);
	}
	free(own);
}

/* ---------------------------------------------------------------------- */
/* TLS: the handshake, then plaintext into the parser. */

/* Drives the handshake; true once it is done. A failed handshake sends
 * its alert and ends the connection; the client's certificate, when
 * verified, is looked up once for the connection's role. */
static bool tls_ready(struct conn *c)
{
	char cn[TLS_CN_MAX];
	int r;

	if (c->tls_up)
		return true;
	r = query__tls_conn_handshake(c->tls);
	tls_flush(c);
	if (c->closing)
		return false;
	if (r < 0) {
		c->keep_alive = false;
		conn_linger(c);
		return false;
	}
	if (r == 0)
		return false;
	c->tls_up = true;
	if (c->qs->auth.enabled &&
	    query__tls_conn_peer_cn(c->tls, cn, sizeof(cn)))
		c->cert_who = query__auth_lookup_cert(&c->qs->auth, cn);
	return true;
}

/* Decrypts what has come and parses it, until the session needs more
 * bytes or the parser pauses (the rest then waits inside the session,
 * bounded by the read that brought it: reading stops while paused). */
static void tls_pump(struct conn *c)
{
	long n;

	if (!tls_ready(c))
		return;
	while (!c->closing && !c->lingering && c->reading) {
		n = query__tls_conn_read(c->tls, c->qs->rbuf,
					 sizeof(c->qs->rbuf));
		tls_flush(c);
		if (c->closing)
			return;
		if (n == 0)
			return;
		if (n < 0) {
			conn_close(c);
			return;
		}
		conn_feed(c, c->qs->rbuf, (size_t)n);
	}
}

/* ---------------------------------------------------------------------- */
/* Dispatch: target, route, access, handler. */

static void dispatch(struct conn *c)
{
	struct query_server *qs = c->qs;
	struct request rq = {.c = c,
			     .route = R_NONE,
			     .t0_ns = c->t0_ns,
			     .query = "",
			     .body = c->body.p ? c->body.p : "",
			     .body_len = c->body.len};
	char *seg[ROUTE_SEGS_MAX + 1], *pathbuf, small[512];
	size_t n = 0, po, pl, qo, ql;
	int status;

	if (query__target_split(c->url.p ? c->url.p : "", c->url.len, &po, &pl,
				&qo, &ql) != 0) {
		query__reply_error(qs, &rq, 400, "malformed request target");
		return;
	}
	pathbuf = pl < sizeof(small) ? small : lg_xmalloc(pl + 1);
	if (query__path_split(c->url.p + po, pl, seg, &n, pathbuf, pl + 1) !=
	    0) {
		query__reply_error(qs, &rq, 404, "no such endpoint");
		goto out;
	}
	if (ql > 0) {
		rq.query = c->url.p + qo;
		rq.query_len = ql;
	}
	rq.route =
		query__route_match(c->parser.method, seg, n, rq.param, &status);
	if (rq.route != R_NONE && c->probe_only &&
	    !query__routes[rq.route].public) {
		rq.route = R_NONE;
		status = 404;
	}
	if (rq.route == R_NONE) {
		query__reply_error(qs, &rq, status, "%s",
				   status == 405 ? "method not allowed"
						 : "no such endpoint");
		goto out;
	}
	if (c->idem_seen) {
		rq.idempotency_key = c->idem;
		rq.idempotency_len = c->idem_len;
		rq.idempotency_bad = c->idem_bad;
	}
	if (qs->auth.enabled && !c->auth_bad)
		rq.who = query__auth_lookup(&qs->auth, c->auth, c->auth_len);
	/* Without an Authorization header a verified client certificate
	 * speaks for the client; a header that is there decides alone. */
	if (rq.who == NULL && c->auth_len == 0 && !c->auth_bad)
		rq.who = c->cert_who;
	status = query__route_access(&query__routes[rq.route], qs->auth.enabled,
				     rq.who, rq.param[0]);
	/* Only 401 answers a request without a principal. */
	LG_ASSERT(status == 0 || status == 401 || rq.who != NULL);
	if (status == 401)
		query__reply_error(qs, &rq, 401,
				   "a known bearer token is required");
	else if (status != 0 && rq.who->role == ROLE_TENANT &&
		 query__routes[rq.route].tenant == TS_PARAM &&
		 rq.param[0] != NULL)
		/* The role may use the route, not on that tenant: say so, as
		 * GET /v1/export does. */
		query__reply_error(qs, &rq, status,
				   "%s %s: tenant %s is outside the subtree of "
				   "%s",
				   http_method_str(c->parser.method),
				   query__routes[rq.route].name, rq.param[0],
				   rq.who->ns);
	else if (status != 0)
		query__reply_error(qs, &rq, status, "role %s may not use %s %s",
				   query__role_name(rq.who->role),
				   http_method_str(c->parser.method),
				   query__routes[rq.route].name);
	else if (qs->o.member != NULL && c->parser.method != HTTP_GET &&
		 (qs->o.member->verdicts == NULL ||
		  (rq.route != R_ADMISSION && rq.route != R_DECLARATIONS &&
		   rq.route != R_PEER_VERDICTS)))
		/* DESIGN 11: a member answers a verdict only once it can
		 * record it in etcd's log, which this member does not do
		 * yet; no Retry-After (rule 2). */
		query__reply_error(
			qs, &rq, 503,
			"this member of a cluster follows the log only: it "
			"answers no %s %s yet",
			http_method_str(c->parser.method),
			query__routes[rq.route].name);
	else if (qs->o.read_only && c->parser.method != HTTP_GET)
		query__reply_error(
			qs, &rq, 503,
			"this is a read-only replica: send %s %s to the "
			"primary%s%s",
			http_method_str(c->parser.method),
			query__routes[rq.route].name, qs->o.primary ? " " : "",
			qs->o.primary ? qs->o.primary : "");
	else
		query__routes[rq.route].fn(qs, &rq);
out:
	if (pathbuf != small)
		free(pathbuf);
}

/* ---------------------------------------------------------------------- */

/* The peer's key; a socket that has none (gone already) is the zero key. */
static void peer_of(struct conn *c, struct peer_key *k)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
		ss.ss_family = AF_UNSPEC;
	query__peer_key(&ss, k);
}

void query__conn_accept(struct query_server *qs, uv_stream_t *listener)
{
	struct conn *c = lg_xcalloc(1, sizeof(*c));
	struct conn_budget *b;
	struct peer_key k;

	c->qs = qs;
	lg_buf_init(&c->url, qs->o.max_url_bytes);
	lg_buf_init(&c->body, qs->o.max_body_bytes);
	c->tcp.data = c->timer.data = c;
	c->handles = 1;
	c->probe_only = listener == (uv_stream_t *)&qs->probe_listener;
	b = c->probe_only ? &qs->probe_budget : &qs->api_budget;
	uv_tcp_init(&qs->loop, &c->tcp);
	if (uv_accept(listener, (uv_stream_t *)&c->tcp) == 0)
		peer_of(c, &k);
	else
		c->closing = true;
	if (c->closing || qs->stopping || !make_room(b, &k)) {
		/* Closed at once, which the client sees as a reset rather
		 * than a hang. */
		qs->m.conns_refused++;
		c->closing = true;
		uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
		return;
	}
	qs->m.conns_accepted++;
	budget_enter(c, b, &k);
	c->handles = 2;
	uv_timer_init(&qs->loop, &c->timer);
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->next = qs->conns.head;
	if (c->next != NULL)
		c->next->prev = c;
	qs->conns.head = c;
	qs->conns.n++;
	c->t0_ns = query__now_ns();
	/* The handshake and the first head have handshake_ms from here. */
	timer_set(c, qs->o.handshake_ms);
	if (qs->tls != NULL && !c->probe_only)
		c->tls = query__tls_conn_new(qs->tls);
	conn_reading(c, true);
}
