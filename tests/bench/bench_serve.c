/*
 * The serve side of DESIGN 10 that wrk cannot measure alone:
 *
 *   bench_serve build DIR N   a ledger of N generated events and 1% more
 *                             VERDICTs (100 after every 10,000),
 *                             checkpointed as a writer does (every 1M),
 *                             then checkpointed and followed by the same
 *                             tail at every N (10,000 events and 100
 *                             verdicts): where the automatic checkpoints
 *                             fall depends on N, the tail read at
 *                             start must not (it is bounded by the
 *                             checkpoint cadence, not by history)
 *   bench_serve open DIR      times query_server_open on it (the ledger's
 *                             checkpoint and tail, the verdict index) and
 *                             prints "open MS ms, READ records read, IDS
 *                             verdicts"
 *   bench_serve baseline [BYTES]
 *                             a minimal libuv HTTP server: every request
 *                             (parsed by http-parser, as serve's are)
 *                             answered with a fixed
 *                             200 whose JSON body has BYTES bytes [16] (the
 *                             size of the answer it is compared with, so
 *                             that both move the same bytes), keep-alive;
 *                             prints "listening on 127.0.0.1:PORT". GET
 *                             remaining is read as a percentage of it
 *                             (rate, and requests per server CPU second).
 */
#include "ledger/ledger.h"
#include "query/query_int.h"
#include "tests/ledger_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int build(const char *dir, uint64_t n)
{
	struct ledger_opts o = {.dir = dir, .create = true, .no_sync = true};
	struct lg_error err = {0};
	static struct event evs[10000];
	struct gen *g = gen_new(1, 1700000000000000000LL);
	ledger_t *lg;

	if (ledger_open(&lg, &o, &err) != 0) {
		fprintf(stderr, "bench_serve: %s\n", err.msg);
		return 1;
	}
	for (uint64_t done = 0; done < n + 10000;) {
		uint64_t end = done < n ? n : n + 10000;
		size_t k = end - done < 10000 ? (size_t)(end - done) : 10000;
		struct event v[100];

		/* The history ends: a checkpoint, then the fixed tail. */
		if (done == n && ledger_checkpoint(lg, &err) != 0) {
			fprintf(stderr, "bench_serve: checkpoint: %s\n",
				err.msg);
			ledger_close(lg);
			gen_free(g);
			return 1;
		}

		gen_next(g, evs, k);
		for (size_t i = 0; i < 100; i++)
			v[i] = (struct event){.type = EV_VERDICT,
					      .time_ns = evs[k - 1].time_ns,
					      .text = "{\"bench\":1}"};
		if (ledger_append(lg, evs, k, NULL, 0, NULL, &err) != 0 ||
		    ledger_append(lg, v, 100, NULL, 0, NULL, &err) != 0) {
			fprintf(stderr, "bench_serve: append: %s\n", err.msg);
			ledger_close(lg);
			gen_free(g);
			return 1;
		}
		done += k;
	}
	ledger_close(lg);
	gen_free(g);
	return 0;
}

static int open_timed(const char *dir)
{
	struct query_opts o = {.db = (char *)dir, .listen = "127.0.0.1:0"};
	struct lg_error err = {0};
	query_server_t *qs;
	double t0 = now_ms(), t1;

	if (query_server_open(&qs, &o, &err) != 0) {
		fprintf(stderr, "bench_serve: %s\n", err.msg);
		return 1;
	}
	t1 = now_ms();
	printf("open %.1f ms, %llu records read, %llu verdicts\n", t1 - t0,
	       (unsigned long long)ledger_records_read(qs->lg),
	       (unsigned long long)qs->vix.n);
	query_server_close(qs);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The baseline: what a libuv HTTP server costs with nothing behind it. */

#define BODY_MAX 4096
/* Set once by baseline() before the loop runs. */
static char answer[BODY_MAX + 128];
static size_t answer_len;

/* A minimal HTTP server still parses HTTP: with the parser serve uses, so
 * that the baseline is the loop, the sockets and the parse, and nothing a
 * route does. */
struct bconn {
	uv_tcp_t tcp;
	http_parser parser;
	char buf[65536];
};

static http_parser_settings bsettings;

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct bconn *c = h->data;

	*b = uv_buf_init(c->buf, (unsigned)sizeof(c->buf));
}

static void on_closed(uv_handle_t *h)
{
	free(h->data);
}

static int on_complete(http_parser *p)
{
	struct bconn *c = p->data;
	uv_buf_t a = uv_buf_init(answer, (unsigned)answer_len);

	uv_try_write((uv_stream_t *)&c->tcp, &a, 1);
	return 0;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct bconn *c = s->data;

	if (n < 0 || http_parser_execute(&c->parser, &bsettings, b->base,
					 (size_t)n) != (size_t)n) {
		uv_close((uv_handle_t *)s, on_closed);
		return;
	}
}

static void on_conn(uv_stream_t *l, int status)
{
	struct bconn *c = calloc(1, sizeof(*c));

	if (c == NULL || status != 0)
		abort();
	c->tcp.data = c;
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	uv_tcp_init(l->loop, &c->tcp);
	if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0) {
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static int baseline(size_t body)
{
	uv_loop_t *loop = uv_default_loop();
	uv_tcp_t l;
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got);

	if (body != 16 && (body < 25 || body > BODY_MAX)) {
		fprintf(stderr, "bench_serve: a body of 16 or 25..%d bytes\n",
			BODY_MAX);
		return 2;
	}
	/* {"status":"ok"}\n, or {"status":"ok","pad":"xxx…"}\n of exactly
	 * body bytes. */
	answer_len = (size_t)snprintf(answer, sizeof(answer),
				      "HTTP/1.1 200 OK\r\nContent-Type: "
				      "application/json\r\nContent-Length: "
				      "%zu\r\n\r\n",
				      body);
	if (body == 16) {
		memcpy(answer + answer_len, "{\"status\":\"ok\"}\n", 16);
	} else {
		memcpy(answer + answer_len, "{\"status\":\"ok\",\"pad\":\"", 22);
		memset(answer + answer_len + 22, 'x', body - 25);
		memcpy(answer + answer_len + body - 3, "\"}\n", 3);
	}
	answer_len += body;
	bsettings.on_message_complete = on_complete;
	uv_ip4_addr("127.0.0.1", 0, &a);
	uv_tcp_init(loop, &l);
	if (uv_tcp_bind(&l, (const struct sockaddr *)&a, 0) != 0 ||
	    uv_listen((uv_stream_t *)&l, 511, on_conn) != 0)
		return 1;
	uv_tcp_getsockname(&l, (struct sockaddr *)&got, &len);
	printf("listening on 127.0.0.1:%d\n",
	       ntohs(((struct sockaddr_in *)&got)->sin_port));
	fflush(stdout);
	return uv_run(loop, UV_RUN_DEFAULT);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "build") == 0)
		return build(argv[2], strtoull(argv[3], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "open") == 0)
		return open_timed(argv[2]);
	if ((argc == 2 || argc == 3) && strcmp(argv[1], "baseline") == 0)
		return baseline(argc == 3 ? strtoull(argv[2], NULL, 10) : 16);
	fprintf(stderr, "usage: bench_serve build DIR N | open DIR | "
			"baseline [BYTES]\n");
	return 2;
}
