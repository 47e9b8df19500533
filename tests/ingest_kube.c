/*
 * The pure pieces of the live watch client: the line framer (every way a
 * stream can be cut into chunks must give the same lines) and the backoff
 * and Retry-After arithmetic.
 */
#include "tests/ingest_tests.h"

#include "ingest/kube_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Framer.                                                                 */

/* What a framer produced: "L:<line>" and "O:<size>" items, '|' separated. */
struct trace {
	char s[4096];
	size_t n;
};

static void trace_add(struct trace *t, enum kube_frame_result r,
		      const struct kube_frame_out *o)
{
	int w = 0;

	if (r == KUBE_FRAME_LINE)
		w = snprintf(t->s + t->n, sizeof(t->s) - t->n, "%sL:%.*s",
			     t->n ? "|" : "", (int)o->len, o->line);
	else if (r == KUBE_FRAME_OVERSIZED)
		w = snprintf(t->s + t->n, sizeof(t->s) - t->n, "%sO:%zu",
			     t->n ? "|" : "", o->len);
	ck_assert_int_ge(w, 0);
	t->n += (size_t)w;
	ck_assert_uint_lt(t->n, sizeof(t->s));
}

/* Feeds one chunk completely, recording every result. */
static void feed_chunk(struct kube_frame *f, struct trace *t, const char *p,
		       size_t n)
{
	size_t off = 0, turns = 0;

	while (off < n) {
		struct kube_frame_out o;
		size_t used = 0;
		enum kube_frame_result r =
			ingest__kube_frame_push(f, p + off, n - off, &used, &o);

		ck_assert_uint_gt(used, 0);
		ck_assert_uint_le(used, n - off);
		if (r == KUBE_FRAME_MORE)
			ck_assert_uint_eq(used, n - off);
		trace_add(t, r, &o);
		off += used;
		ck_assert_uint_le(++turns, n);
	}
}

static void finish(struct kube_frame *f, struct trace *t)
{
	struct kube_frame_out o;

	trace_add(t, ingest__kube_frame_finish(f, &o), &o);
	/* After finish the framer is empty. */
	ck_assert_int_eq(ingest__kube_frame_finish(f, &o), KUBE_FRAME_MORE);
}

/* The stream cut at the given points (sorted offsets, n_cuts of them). */
static void run_cuts(const char *in, size_t cap, const size_t *cuts,
		     size_t n_cuts, struct trace *t)
{
	char *buf = malloc(cap ? cap : 1);
	struct kube_frame f;
	size_t len = strlen(in), prev = 0;

	ingest__kube_frame_init(&f, buf, cap);
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i <= n_cuts; i++) {
		size_t end = i < n_cuts ? cuts[i] : len;
		/* Each chunk is copied so that a line borrowed from the
		 * caller's data is read before the data goes away. */
		char *chunk = malloc(end - prev + 1);

		memcpy(chunk, in + prev, end - prev);
		feed_chunk(&f, t, chunk, end - prev);
		memset(chunk, '#', end - prev);
		free(chunk);
		prev = end;
	}
	finish(&f, t);
	free(buf);
}

static const struct frame_row {
	const char *in;
	size_t cap;
	const char *want;
} frame_rows[] = {
	{"", 16, ""},
	{"a\n", 16, "L:a"},
	{"a\nb\n", 16, "L:a|L:b"},
	{"{\"type\":\"ADDED\"}\n{\"type\":\"DELETED\"}\n", 64,
	 "L:{\"type\":\"ADDED\"}|L:{\"type\":\"DELETED\"}"},
	/* CRLF and empty lines. */
	{"a\r\nb\r\n", 16, "L:a|L:b"},
	{"\n\n\r\na\n\n\r\n", 16, "L:a"},
	{"\r\n", 16, ""},
	/* A last line without a newline still counts at the end. */
	{"abc", 16, "L:abc"},
	{"a\nbc\r", 16, "L:a|L:bc"},
	/* Exactly cap bytes fit; one more does not. */
	{"abcd\nabcde\nxy\n", 4, "L:abcd|O:5|L:xy"},
	{"abcdefghij", 4, "O:10"},
	{"abcdefghij\n", 4, "O:10"},
	{"abcdefghij\n\nok\n", 4, "O:10|L:ok"},
	/* The cap counts a '\r' before the '\n'. */
	{"abcd\r\n", 4, "O:5"},
	{"abc\r\n", 4, "L:abc"},
	/* Oversized lines in a row, and good ones between them. */
	{"123456\n1\n1234567\n12\n", 5, "O:6|L:1|O:7|L:12"},
	/* A line may hold any bytes but '\n'. */
	{"a\tb \x01\xc3\xa9\n", 16, "L:a\tb \x01\xc3\xa9"},
	{"xyz\n", 0, "O:3"},
};

START_TEST(frame_whole)
{
	const struct frame_row *r = &frame_rows[_i];
	struct trace t;

	run_cuts(r->in, r->cap, NULL, 0, &t);
	ck_assert_msg(strcmp(t.s, r->want) == 0,
		      "row %d: got \"%s\" want \"%s\"", _i, t.s, r->want);
}
END_TEST

/* Two chunks, cut at every byte position. */
START_TEST(frame_every_split)
{
	const struct frame_row *r = &frame_rows[_i];
	size_t len = strlen(r->in);

	for (size_t cut = 0; cut <= len; cut++) {
		struct trace t;

		run_cuts(r->in, r->cap, &cut, 1, &t);
		ck_assert_msg(strcmp(t.s, r->want) == 0,
			      "row %d cut %zu: got \"%s\" want \"%s\"", _i, cut,
			      t.s, r->want);
	}
}
END_TEST

/* Three chunks, cut at every pair of positions, and one byte at a time. */
START_TEST(frame_every_double_split)
{
	const struct frame_row *r = &frame_rows[_i];
	size_t len = strlen(r->in);
	size_t *bytes = malloc((len + 1) * sizeof(*bytes));
	struct trace t;

	for (size_t a = 0; a <= len; a++) {
		for (size_t b = a; b <= len; b++) {
			size_t cuts[2] = {a, b};

			run_cuts(r->in, r->cap, cuts, 2, &t);
			ck_assert_msg(strcmp(t.s, r->want) == 0,
				      "row %d cuts %zu,%zu: got \"%s\"", _i, a,
				      b, t.s);
		}
	}
	for (size_t i = 0; i < len; i++)
		bytes[i] = i + 1;
	run_cuts(r->in, r->cap, bytes, len ? len - 1 : 0, &t);
	ck_assert_str_eq(t.s, r->want);
	free(bytes);
}
END_TEST

/* A long stream of objects of every size around the cap, in random
 * chunks: the lines that fit come out whole, each oversized one is
 * reported once with its exact size, and nothing else. */
START_TEST(frame_random_chunks)
{
	enum {
		CAP = 37,
		LINES = 300
	};
	char *in = malloc(LINES * 80);
	struct trace want, got;
	size_t len = 0;
	uint32_t x = 12345;
	struct kube_frame f;
	char buf[CAP];

	memset(&want, 0, sizeof(want));
	for (int i = 0; i < LINES; i++) {
		size_t n = (size_t)(i % 75);
		struct kube_frame_out o = {.line = in + len, .len = n};

		for (size_t j = 0; j < n; j++)
			in[len + j] = (char)('a' + (i + j) % 26);
		if (n > 0) {
			/* The trace buffer holds only a summary. */
			if (want.n < 3000)
				trace_add(&want,
					  n > CAP ? KUBE_FRAME_OVERSIZED
						  : KUBE_FRAME_LINE,
					  &o);
		}
		len += n;
		in[len++] = '\n';
	}
	ingest__kube_frame_init(&f, buf, CAP);
	memset(&got, 0, sizeof(got));
	for (size_t off = 0; off < len;) {
		size_t n;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		n = 1 + x % 97;
		if (n > len - off)
			n = len - off;
		while (n > 0) {
			struct kube_frame_out o;
			size_t used;
			enum kube_frame_result r = ingest__kube_frame_push(
				&f, in + off, n, &used, &o);

			if (r != KUBE_FRAME_MORE && got.n < 3000)
				trace_add(&got, r, &o);
			off += used;
			n -= used;
		}
	}
	ck_assert_str_eq(got.s, want.s);
	free(in);
}
END_TEST

/* A line wholly inside one chunk is not copied; one that spans chunks is
 * assembled in the caller's buffer. */
START_TEST(frame_borrowing)
{
	char buf[16];
	struct kube_frame f;
	struct kube_frame_out o;
	size_t used;
	const char *a = "one\ntw", *b = "o\n";

	ingest__kube_frame_init(&f, buf, sizeof(buf));
	ck_assert_int_eq(ingest__kube_frame_push(&f, a, strlen(a), &used, &o),
			 KUBE_FRAME_LINE);
	ck_assert_ptr_eq(o.line, a);
	ck_assert_uint_eq(used, 4);
	ck_assert_int_eq(ingest__kube_frame_push(&f, a + 4, 2, &used, &o),
			 KUBE_FRAME_MORE);
	ck_assert_uint_eq(used, 2);
	ck_assert_ptr_null(o.line);
	ck_assert_int_eq(ingest__kube_frame_push(&f, b, 2, &used, &o),
			 KUBE_FRAME_LINE);
	ck_assert_ptr_eq(o.line, buf);
	ck_assert_uint_eq(o.len, 3);
	ck_assert_int_eq(memcmp(o.line, "two", 3), 0);
	/* An empty push consumes nothing and says so. */
	used = 99;
	ck_assert_int_eq(ingest__kube_frame_push(&f, b, 0, &used, &o),
			 KUBE_FRAME_MORE);
	ck_assert_uint_eq(used, 0);
}
END_TEST

/* A reset drops the partial line (a new response starts) and a skip in
 * progress. */
START_TEST(frame_reset)
{
	char buf[4];
	struct kube_frame f;
	struct kube_frame_out o;
	size_t used;

	ingest__kube_frame_init(&f, buf, sizeof(buf));
	ck_assert_int_eq(ingest__kube_frame_push(&f, "par", 3, &used, &o),
			 KUBE_FRAME_MORE);
	ingest__kube_frame_reset(&f);
	ck_assert_int_eq(ingest__kube_frame_push(&f, "x\n", 2, &used, &o),
			 KUBE_FRAME_LINE);
	ck_assert_uint_eq(o.len, 1);
	ck_assert_int_eq(ingest__kube_frame_push(&f, "toolong", 7, &used, &o),
			 KUBE_FRAME_MORE);
	ck_assert(f.skipping);
	ingest__kube_frame_reset(&f);
	ck_assert(!f.skipping);
	ck_assert_int_eq(ingest__kube_frame_push(&f, "y\n", 2, &used, &o),
			 KUBE_FRAME_LINE);
	ck_assert_int_eq(o.line[0], 'y');
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Backoff.                                                                */

static const struct backoff_row {
	unsigned attempt;
	int64_t base, cap;
	uint32_t rnd;
	int64_t want;
} backoff_rows[] = {
	{0, 500, 30000, 0, 250},
	{0, 500, 30000, 250, 500}, /* 250 + 250 % 251 */
	{0, 500, 30000, 251, 250}, /* wraps */
	{1, 500, 30000, 0, 500},
	{2, 500, 30000, 0, 1000},
	{5, 500, 30000, 0, 8000},
	{6, 500, 30000, 0, 15000}, /* 32000 capped to 30000 */
	{6, 500, 30000, 15000, 30000},
	{1000, 500, 30000, 0, 15000},
	{UINT32_MAX, 500, 30000, UINT32_MAX, 15000 + UINT32_MAX % 15001},
	{0, 1000, 400, 0, 200}, /* base above the cap */
	{0, 0, 0, 7, 1},	/* nonsense bounds become 1 ms */
	{62, 1, INT64_MAX, 0, (int64_t)1 << 61},
	{70, 3, INT64_MAX, 0, INT64_MAX / 2},
};

START_TEST(backoff_table)
{
	const struct backoff_row *r = &backoff_rows[_i];

	ck_assert_int_eq(
		ingest__kube_backoff_ms(r->attempt, r->base, r->cap, r->rnd),
		r->want);
}
END_TEST

/* The watcher's /metrics page is written within its bound (1 MiB): a page
 * that would pass it (here a note code of 2 MiB, which the engine never
 * names) is NULL, answered 500, instead of growing; an ordinary one is
 * whole. */
START_TEST(metrics_page_bound)
{
	static struct kube_metrics_view v;
	size_t big = (size_t)2 << 20, len = 0;
	char *code = malloc(big + 1), *page;

	ck_assert_ptr_nonnull(code);
	for (int r = 0; r < RES_MAX; r++)
		v.res[r] = (struct kube_res_view){.name = "Pod", .group = ""};
	v.notes[0] = (struct ingest_note_count){"Oversized", 3};
	v.n_notes = 1;
	page = ingest__kube_metrics_render(&v, &len);
	ck_assert_ptr_nonnull(page);
	ck_assert_uint_eq(strlen(page), len);
	ck_assert_ptr_nonnull(strstr(
		page, "gpuledger_watch_notes_total{code=\"Oversized\"} 3\n"));
	free(page);
	memset(code, 'x', big);
	code[big] = '\0';
	v.notes[0].code = code;
	ck_assert_ptr_null(ingest__kube_metrics_render(&v, &len));
	free(code);
}
END_TEST

/* Every delay lies in [min(base, cap)/2, min(cap, base * 2^attempt)]. */
START_TEST(backoff_bounds)
{
	static const int64_t caps[] = {1, 2, 999, 30000, 3600000};
	uint32_t x = 99;

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		for (unsigned a = 0; a < 80; a++) {
			int64_t hi = 500;

			for (unsigned i = 0; i < a && hi < caps[c]; i++)
				hi *= 2;
			if (hi > caps[c])
				hi = caps[c];
			for (int k = 0; k < 50; k++) {
				int64_t d;

				x = x * 1103515245u + 12345u;
				d = ingest__kube_backoff_ms(a, 500, caps[c], x);
				ck_assert_int_ge(d, hi / 2);
				ck_assert_int_le(d, hi);
			}
		}
	}
}
END_TEST

/* 2015-10-21T07:28:00Z */
#define DATE_S 1445412480LL

static const struct retry_row {
	const char *value;
	int64_t now_s, max_ms;
	int rc;
	int64_t want_ms;
} retry_rows[] = {
	{"120", 0, 300000, 0, 120000},
	{"0", 0, 300000, 0, 0},
	{"007", 0, 300000, 0, 7000},
	{"301", 0, 300000, 0, 300000}, /* clamped */
	{"99999999999999999999999999", 0, 300000, 0, 300000},
	{"Wed, 21 Oct 2015 07:28:00 GMT", DATE_S - 30, 300000, 0, 30000},
	{"Wed, 21 Oct 2015 07:28:00 GMT", DATE_S + 30, 300000, 0, 0},
	{"Wed, 21 Oct 2015 07:28:00 GMT", DATE_S - 3600, 300000, 0, 300000},
	{"Wednesday, 21-Oct-15 07:28:00 GMT", DATE_S - 5, 300000, 0, 5000},
	{"Wed Oct 21 07:28:00 2015", DATE_S - 1, 300000, 0, 1000},
	{"", 0, 300000, LG_EINVAL, -1},
	{"-1", 0, 300000, LG_EINVAL, -1},
	{"1.5", 0, 300000, LG_EINVAL, -1},
	{" 5", 0, 300000, LG_EINVAL, -1},
	{"5s", 0, 300000, LG_EINVAL, -1},
	{"soon", 0, 300000, LG_EINVAL, -1},
	{"Wed, 21 Oct 2015 07:28:00 GMT junk", 0, 300000, LG_EINVAL, -1},
	{"Wed, 32 Oct 2015 07:28:00 GMT", 0, 300000, LG_EINVAL, -1},
	{NULL, 0, 300000, LG_EINVAL, -1},
};

START_TEST(retry_after_table)
{
	const struct retry_row *r = &retry_rows[_i];
	int64_t d = -1;
	int rc = ingest__kube_retry_after_ms(r->value, r->now_s, r->max_ms, &d);

	ck_assert_msg(rc == r->rc, "row %d (%s): rc %d", _i,
		      r->value ? r->value : "NULL", rc);
	ck_assert_int_eq(d, r->want_ms);
}
END_TEST

/* The delay after a failure: the larger of backoff and Retry-After, the
 * latter clamped. */
START_TEST(retry_delay_table)
{
	/* attempt 0, base 500, cap 30000, rnd 0: backoff 250 ms. */
	ck_assert_int_eq(
		ingest__kube_retry_delay_ms(0, 500, 30000, -1, 60000, 0), 250);
	ck_assert_int_eq(
		ingest__kube_retry_delay_ms(0, 500, 30000, 100, 60000, 0), 250);
	ck_assert_int_eq(
		ingest__kube_retry_delay_ms(0, 500, 30000, 2000, 60000, 0),
		2000);
	/* Retry-After may exceed the backoff cap, not its own. */
	ck_assert_int_eq(
		ingest__kube_retry_delay_ms(0, 500, 30000, 45000, 60000, 0),
		45000);
	ck_assert_int_eq(
		ingest__kube_retry_delay_ms(0, 500, 30000, 90000, 60000, 0),
		60000);
	/* A clamped Retry-After never shortens the backoff. */
	ck_assert_int_eq(
		ingest__kube_retry_delay_ms(6, 500, 30000, 90000, 1000, 0),
		15000);
}
END_TEST

START_TEST(watch_timeout_range)
{
	for (uint32_t rnd = 0; rnd < 2000; rnd += 7) {
		unsigned t =
			ingest__kube_watch_timeout_s(300, rnd * 2654435761u);

		ck_assert_uint_ge(t, 300);
		ck_assert_uint_lt(t, 600);
	}
	ck_assert_uint_eq(ingest__kube_watch_timeout_s(300, 0), 300);
	ck_assert_uint_eq(ingest__kube_watch_timeout_s(300, 299), 599);
	ck_assert_uint_eq(ingest__kube_watch_timeout_s(300, 300), 300);
	ck_assert_uint_eq(ingest__kube_watch_timeout_s(0, 12345), 1);
}
END_TEST

/* A watch ERROR of 410 relists at once; every other code (and a Status
 * without one) waits with backoff first. */
static const struct {
	long long code;
	bool waits;
} error_rows[] = {
	{410, false}, {0, true},   {409, true}, {411, true},  {500, true},
	{429, true},  {403, true}, {404, true}, {-410, true}, {4100, true},
};

START_TEST(error_wait_table)
{
	ck_assert_msg(ingest__kube_error_waits(error_rows[_i].code) ==
			      error_rows[_i].waits,
		      "code %lld", error_rows[_i].code);
}
END_TEST

/* The one table of watch event types (ingest/stream.c), which recorded
 * lines and live watches both read: exact, case-sensitive names only. */
static const struct {
	const char *name;
	bool ok;
	enum watch_type type;
} watch_type_rows[] = {
	{"ADDED", true, WATCH_ADDED},
	{"MODIFIED", true, WATCH_MODIFIED},
	{"DELETED", true, WATCH_DELETED},
	{"BOOKMARK", true, WATCH_BOOKMARK},
	{"ERROR", false, 0},
	{"added", false, 0},
	{"ADDED ", false, 0},
	{"", false, 0},
	{NULL, false, 0},
};

START_TEST(watch_type_table)
{
	enum watch_type t = (enum watch_type)99;
	bool ok = ingest__watch_type_parse(watch_type_rows[_i].name, &t);

	ck_assert_int_eq(ok, watch_type_rows[_i].ok);
	if (ok)
		ck_assert_int_eq(t, watch_type_rows[_i].type);
	else
		ck_assert_int_eq(t, 99); /* untouched */
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

INGEST_PART(kube)
{
	TCase *tc = tcase_create("kube_frame");

	tcase_add_loop_test(tc, frame_whole, 0, N(frame_rows));
	tcase_add_loop_test(tc, frame_every_split, 0, N(frame_rows));
	tcase_add_loop_test(tc, frame_every_double_split, 0, N(frame_rows));
	tcase_add_test(tc, frame_random_chunks);
	tcase_add_test(tc, frame_borrowing);
	tcase_add_test(tc, frame_reset);
	suite_add_tcase(s, tc);
	tc = tcase_create("kube_backoff");
	tcase_add_loop_test(tc, backoff_table, 0, N(backoff_rows));
	tcase_add_test(tc, backoff_bounds);
	tcase_add_test(tc, metrics_page_bound);
	tcase_add_loop_test(tc, retry_after_table, 0, N(retry_rows));
	tcase_add_test(tc, retry_delay_table);
	tcase_add_test(tc, watch_timeout_range);
	tcase_add_loop_test(tc, error_wait_table, 0, N(error_rows));
	suite_add_tcase(s, tc);
	tc = tcase_create("watch_types");
	tcase_add_loop_test(tc, watch_type_table, 0, N(watch_type_rows));
	suite_add_tcase(s, tc);
}
