/*
 * The parse pipeline (ingest/pipeline.c, DESIGN 10) changes nothing but
 * speed: random streams (GPU, plain, dormant and escaped pods, class table
 * changes that make plain pods unskippable, malformed, blank, non-object,
 * oversized lines, times that go back) give the same events, counters and
 * times through ingest_pipe_feed, with random ring bounds and thread
 * counts, and a source that goes idle at random (a pipe whose writer
 * pauses: every line it gave is fed before the pipeline says idle), as
 * through ingest__line; through ingest_follow with and without
 * the pipeline the same log, chain head and committed position; through
 * a FIFO written in random pieces with pauses, the file's log; and a
 * pipelined follow killed at random moments ends with the log of an
 * uninterrupted single-threaded run. Every seed is printed on failure.
 */
#include "tests/ingest_tests.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static uint64_t prnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---------------------------------------------------------------------- */
/* Random lines */

struct lines {
	char **s;
	size_t *len;
	bool *oversized; /* the source skips it (INGEST_SRC_OVERSIZED) */
	size_t n, cap, max_len;
};

static void add(struct lines *l, char *s, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->s = realloc(l->s, l->cap * sizeof(*l->s));
		l->len = realloc(l->len, l->cap * sizeof(*l->len));
		l->oversized =
			realloc(l->oversized, l->cap * sizeof(*l->oversized));
		ck_assert(l->s && l->len && l->oversized);
	}
	l->s[l->n] = s;
	l->len[l->n] = len;
	l->oversized[l->n] = false;
	if (len > l->max_len)
		l->max_len = len;
	l->n++;
}

static void addf(struct lines *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void addf(struct lines *l, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ck_assert(n > 0 && (size_t)n < sizeof(buf));
	add(l, strdup(buf), (size_t)n);
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->s[i]);
	free(l->s);
	free(l->len);
	free(l->oversized);
}

#define T0_S 1767225600LL /* 2026-01-01T00:00:00Z */

/* A "time" member (or none, or one that is not a time, or one that went
 * back by minutes). */
static void g_time(uint64_t *s, long *t, char *buf, size_t cap)
{
	uint64_t r = prnd(s) % 20;
	time_t tt;
	struct tm tm;

	*t += (long)(prnd(s) % 3);
	if (r < 3) {
		buf[0] = '\0';
		return;
	}
	if (r == 3) {
		snprintf(buf, cap, "\"time\":\"yesterday\",");
		return;
	}
	tt = (time_t)(T0_S + *t - (r == 4 ? 300 : 0));
	gmtime_r(&tt, &tm);
	strftime(buf, cap, "\"time\":\"%Y-%m-%dT%H:%M:%SZ\",", &tm);
}

static const char *const g_types[] = {"ADDED", "MODIFIED", "DELETED"};
/* Resource names: of the tables (below), extended but in none (dormant
 * pods), native (the third table names memory), and an escaped one. */
static const char *const g_res[] = {
	"nvidia.com/H100", "nvidia.com/L40S", "example.com/fpga",
	"memory",	   "cpu",	      "nvidia.com\\/H100"};

static void g_pod(struct lines *l, uint64_t *s, long *t)
{
	char tm[64], pad[3000];
	uint64_t k = prnd(s) % 30, padn = prnd(s) % 8 == 0 ? 2900 : 40;
	const char *res = g_res[prnd(s) % 6];
	const char *phase = prnd(s) % 6 == 0 ? "Succeeded" : "Running";

	memset(pad, 'p', padn);
	pad[padn] = '\0';
	g_time(s, t, tm, sizeof(tm));
	addf(l,
	     "{%s\"type\":\"%s\",\"object\":{\"apiVersion\":\"v1\","
	     "\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"tenant-t%llu\","
	     "\"name\":\"p%llu\",\"uid\":\"u%llu\",\"labels\":{\"x\":\"%s\"}},"
	     "\"spec\":{\"nodeName\":\"n%llu\",\"containers\":[{\"name\":"
	     "\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"%s\":"
	     "\"%llu\"}}}]},\"status\":{\"phase\":\"%s\"}}}",
	     tm, g_types[prnd(s) % 3], (unsigned long long)(k % 4),
	     (unsigned long long)k, (unsigned long long)(k + prnd(s) % 2),
	     pad, (unsigned long long)(prnd(s) % 3), res,
	     (unsigned long long)(1 + prnd(s) % 3), phase);
}

static const char *const g_tables[] = {
	CLASSES,
	"{'classes':[{'name':'h100','resourceNames':['nvidia.com/H100',"
	"'example.com/fpga']}]}",
	"{'classes':[{'name':'l40s','resourceNames':['nvidia.com/L40S',"
	"'memory']}]}",
};

static void g_table(struct lines *l, uint64_t *s)
{
	char *t = h_dq(g_tables[prnd(s) % 3]);
	json_t *o =
		json_pack("{ss s{ss ss s{ss ss} s{ss}}}", "type", "MODIFIED",
			  "object", "apiVersion", "v1", "kind", "ConfigMap",
			  "metadata", "namespace", "cozy-system", "name",
			  "gpu-classes", "data", "classes.json", t);
	char *j = json_dumps(o, JSON_COMPACT);

	add(l, j, strlen(j));
	json_decref(o);
	free(t);
}

static void g_bad(struct lines *l, uint64_t *s)
{
	static const char *const bad[] = {
		"",
		"   \t",
		"[1,2]",
		"not json",
		"{\"type\":\"ADDED\",\"object\":",
		"{\"type\":\"BOOKMARK\"}",
		"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\","
		"\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"},"
		"\"note\":\"Pod\"}}",
		"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v2\","
		"\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"tenant-t1\","
		"\"name\":\"q\"}}}",
		/* Invalid UTF-8 in a projected member: the projection does
		 * not parse, nor does the line. */
		"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\","
		"\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"tenant-t1\","
		"\"name\":\"\xff\"},\"spec\":{\"containers\":[]}}}",
		"{\"type\":\"SOMETHING\",\"object\":{\"apiVersion\":\"v1\","
		"\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"tenant-t1\","
		"\"name\":\"r\"}}}",
	};
	const char *b = bad[prnd(s) % (sizeof(bad) / sizeof(bad[0]))];

	add(l, strdup(b), strlen(b));
}

static void g_tenant(struct lines *l, uint64_t *s, long *t)
{
	char tm[64];
	uint64_t k = prnd(s) % 4;

	g_time(s, t, tm, sizeof(tm));
	if (prnd(s) % 2)
		addf(l,
		     "{%s\"type\":\"%s\",\"object\":{\"apiVersion\":\"v1\","
		     "\"kind\":\"Namespace\",\"metadata\":{\"name\":"
		     "\"tenant-t%llu\"}}}",
		     tm, prnd(s) % 4 ? "ADDED" : "DELETED",
		     (unsigned long long)k);
	else
		addf(l,
		     "{%s\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":"
		     "\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
		     "\"n%llu\"},\"spec\":{},\"status\":{\"allocatable\":{"
		     "\"nvidia.com/H100\":\"%llu\"},\"conditions\":[{\"type\":"
		     "\"Ready\",\"status\":\"True\"}]}}}",
		     tm, (unsigned long long)(k % 3),
		     (unsigned long long)(prnd(s) % 9));
}

static void gen(struct lines *l, uint64_t seed, size_t n)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
	long t = 0;

	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < n; i++) {
		uint64_t r = prnd(&s) % 100;

		if (r < 60)
			g_pod(l, &s, &t);
		else if (r < 75)
			g_tenant(l, &s, &t);
		else if (r < 78)
			g_table(l, &s);
		else
			g_bad(l, &s);
	}
}

/* ---------------------------------------------------------------------- */
/* ingest_pipe_feed against ingest__line */

#define PIPE_MAX_OBJECT 2048

static void open_small(struct h *h)
{
	struct class_table t;
	struct ingest_opts o = {.max_object_bytes = PIPE_MAX_OBJECT};
	struct lg_error err = {0};

	memset(h, 0, sizeof(*h));
	h->dir = fresh_dir();
	h->lg = h_ledger(h->dir);
	h_table(&t, CLASSES);
	o.classes = &t;
	ck_assert_msg(ingest_new(&h->in, h->lg, &o, &err) == 0, "new: %s",
		      err.msg);
	class_table_release(&t);
	h->mark = 0;
}

struct src {
	const struct lines *l;
	size_t next;
	bool fail; /* an error after the last line */
	/* A pause before about one line in pause_one_in (0: never), at
	 * random: idle until the test, told idle by the pipeline, ends it
	 * (as a writer's next bytes end the wait for input). */
	unsigned pause_one_in;
	uint64_t pause_rnd;
	bool paused;
	size_t pauses;
};

static int src_fn(void *ctx, const char **line, uint64_t *len, uint64_t *tag,
		  struct lg_error *err)
{
	struct src *s = ctx;
	size_t i = s->next;

	if (!s->paused && s->pause_one_in != 0 &&
	    prnd(&s->pause_rnd) % s->pause_one_in == 0) {
		s->paused = true;
		s->pauses++;
	}
	if (s->paused)
		return INGEST_SRC_IDLE;
	if (i == s->l->n)
		return s->fail ? lg_error_set(err, LG_EIO, "the source broke")
			       : INGEST_SRC_END;
	s->next++;
	*tag = 1000 + i;
	*len = s->l->len[i];
	if (s->l->oversized[i])
		return INGEST_SRC_OVERSIZED;
	*line = s->l->s[i];
	return INGEST_SRC_LINE;
}

static void check_same(struct h *a, struct h *b, uint64_t seed)
{
	struct ingest_counters ca, cb;
	char *la = h_take(a), *lb = h_take(b);

	ck_assert_msg(strcmp(la, lb) == 0,
		      "seed %llu: the pipeline's events differ:\n"
		      "inline: %.600s\npipe:   %.600s",
		      (unsigned long long)seed, la, lb);
	ingest__counters(a->in, &ca);
	ingest__counters(b->in, &cb);
	ck_assert_msg(ca.lines == cb.lines && ca.events_in == cb.events_in &&
			      ca.notes == cb.notes &&
			      ca.skipped_fast == cb.skipped_fast &&
			      ca.events_out == cb.events_out,
		      "seed %llu: counters differ", (unsigned long long)seed);
	ck_assert_msg(ingest__time_ns(a->in) == ingest__time_ns(b->in),
		      "seed %llu: times differ", (unsigned long long)seed);
	free(la);
	free(lb);
}

#define PIPE_SEEDS 16

START_TEST(pipe_equals_line)
{
	uint64_t seed = (uint64_t)_i + 1, s = seed * 7919;
	struct ingest_pipe_opts po = {
		.threads = 1 + (unsigned)(prnd(&s) % 3),
		.batches = 2 + prnd(&s) % 4,
		.batch_lines = 1 + prnd(&s) % 9,
		.batch_bytes = 1 + prnd(&s) % 20000,
		/* Often 1 us: the feeder gives up on workers' batches. */
		.steal_after_us = (unsigned)(prnd(&s) % 3 ? 1 : 0),
	};
	struct lines l;
	struct src src = {.l = &l,
			  .fail = seed % 2 == 0,
			  .pause_one_in = seed / 2 % 2 ? 2 + seed % 5 * 7 : 0,
			  .pause_rnd = seed * 31 + 7};
	struct lg_error err = {0};
	struct ingest_counters c;
	ingest_pipe_t *p;
	struct h a, b;
	uint64_t tag;
	size_t fed = 0, idles = 0;
	int k;

	gen(&l, seed, 1500);
	/* Lines the source itself skips as too long. */
	for (size_t i = 0; i < l.n; i++)
		l.oversized[i] = prnd(&s) % 50 == 0;
	po.max_line_bytes = l.max_len;
	open_small(&a);
	open_small(&b);
	for (size_t i = 0; i < l.n; i++) {
		int rc = l.oversized[i]
				 ? ingest__oversized(a.in, l.len[i], &err)
				 : ingest__line(a.in, l.s[i], l.len[i], &err);

		ck_assert_msg(rc == 0, "seed %llu: line %zu: %s",
			      (unsigned long long)seed, i, err.msg);
	}
	ck_assert_msg(ingest__pipe_new(&p, &po, src_fn, &src, &err) == 0,
		      "seed %llu: %s", (unsigned long long)seed, err.msg);
	for (;;) {
		k = ingest__pipe_feed(p, b.in, &tag, &err);
		if (k == INGEST_PIPE_IDLE) {
			/* Only when the source is, and once every line it
			 * gave was fed: none waits for the next one or for a
			 * full batch. */
			ck_assert_msg(src.paused,
				      "seed %llu: idle while the source is not",
				      (unsigned long long)seed);
			ck_assert_msg(fed == src.next,
				      "seed %llu: idle with %zu lines read and "
				      "%zu fed",
				      (unsigned long long)seed, src.next, fed);
			src.paused = false;
			idles++;
			continue;
		}
		if (k != 1)
			break;
		ck_assert_msg(tag == 1000 + fed, "seed %llu: tag %llu at %zu",
			      (unsigned long long)seed,
			      (unsigned long long)tag, fed);
		fed++;
	}
	ck_assert_uint_eq(fed, l.n);
	/* Every pause was said, once; a paused source never ends. */
	ck_assert_uint_eq(idles, src.pauses);
	if (src.pause_one_in != 0)
		ck_assert_uint_gt(idles, 10);
	if (src.fail) {
		ck_assert_int_eq(k, LG_EIO);
		ck_assert_str_eq(err.msg, "the source broke");
	} else {
		ck_assert_int_eq(k, 0);
	}
	/* At the end it stays at the end. */
	ck_assert_int_eq(ingest__pipe_feed(p, b.in, &tag, &err), k);
	ingest__pipe_free(p);
	check_same(&a, &b, seed);
	/* The stream exercised what it should. */
	ingest__counters(a.in, &c);
	ck_assert_uint_gt(c.skipped_fast, 10);
	ck_assert_uint_gt(c.events_out, 50);
	ck_assert_uint_gt(c.notes, 20);
	h_close(&a);
	h_close(&b);
	lines_free(&l);
}
END_TEST

/* Freed before it is fed to the end, with lines read ahead: no leak, no
 * wait (the sanitizer build checks the first). */
START_TEST(pipe_free_early)
{
	struct lines l;
	struct src src = {.l = &l};
	struct ingest_pipe_opts po = {.batch_lines = 3, .batches = 2};
	struct lg_error err = {0};
	ingest_pipe_t *p;
	struct h h;
	uint64_t tag;

	gen(&l, 99, 200);
	po.max_line_bytes = l.max_len;
	open_small(&h);
	ck_assert_int_eq(ingest__pipe_new(&p, &po, src_fn, &src, &err), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(ingest__pipe_feed(p, h.in, &tag, &err), 1);
	ck_assert_uint_eq(tag, 1009);
	ck_assert_uint_le(src.next, 10 + 2 * 3); /* the ring's bound */
	ingest__pipe_free(p);
	ingest__pipe_free(NULL);
	h_close(&h);
	lines_free(&l);
}
END_TEST

START_TEST(pipe_bad_bounds)
{
	static const struct ingest_pipe_opts bad[] = {
		{.threads = INGEST_PIPE_THREADS_MAX + 1},
		{.batches = 1},
		{.batches = INGEST_PIPE_BATCHES_MAX + 1},
		{.batch_lines = INGEST_PIPE_BATCH_LINES_MAX + 1},
		{.steal_after_us = 1000001},
	};
	struct lg_error err = {0};
	ingest_pipe_t *p = (ingest_pipe_t *)&err;

	ck_assert_int_eq(ingest__pipe_new(&p, &bad[_i], src_fn, NULL, &err),
			 LG_EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(err.msg, "bounds"));
}
END_TEST

/* ---------------------------------------------------------------------- */
/* ingest_follow with and without the pipeline */

/* Writes the lines with "\n" or "\r\n", and one line longer than the
 * reader's buffer (skipped unread). */
static void write_stream(const char *path, const struct lines *l,
			 uint64_t seed)
{
	FILE *f = fopen(path, "w");
	uint64_t s = seed + 17;

	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < l->n; i++) {
		fwrite(l->s[i], 1, l->len[i], f);
		fputs(prnd(&s) % 5 == 0 ? "\r\n" : "\n", f);
		if (i == l->n / 2) {
			for (size_t k = 0; k < (1u << 20) + 2 * PIPE_MAX_OBJECT;
			     k++)
				fputc('x', f);
			fputc('\n', f);
		}
	}
	ck_assert_int_eq(fclose(f), 0);
}

static int follow_with(const char *dir, const char *path, bool pipelined,
		       unsigned threads, struct ingest_follow_result *res,
		       struct lg_error *err)
{
	return h_follow(dir,
			(struct ingest_follow_opts){
				.path = path,
				.batch_events = 13,
				.max_object_bytes = PIPE_MAX_OBJECT,
				.parse_threads = threads,
				.parse_inline = !pipelined},
			res, err);
}

static int tline(void *ctx, const struct event *ev, const uint8_t *head)
{
	char line[700], t[48];
	size_t n = time_format_ns(ev->time_ns, t, sizeof(t));

	memcpy(line, t, n);
	line[n] = ' ';
	h_format(ev, line + n + 1, sizeof(line) - n - 1);
	n = strlen(line);
	for (int i = 0; i < 4; i++)
		snprintf(line + n + 2 * i, 3, "%02x", head[i]);
	h_put(ctx, line);
	return 0;
}

/* The log with times and heads, then the committed position. */
static char *ledger_text(const char *dir)
{
	struct h_buf b = {0};
	struct lg_error err = {0};
	ledger_t *lg = h_ledger(dir);
	char pos[4097];
	size_t len = 0;
	uint64_t bad = 0;

	ck_assert_msg(ledger__verify(lg, &bad, &err) == 0, "verify: %s",
		      err.msg);
	h_put(&b, "");
	b.len = 0;
	ck_assert_int_eq(ledger_scan(lg, 1, 0, tline, &b, &err), 0);
	ck_assert_int_eq(ledger_meta_get(lg, ingest__position_key(RES_MAX), pos,
					 sizeof(pos) - 1, &len, &err),
			 0);
	pos[len] = '\0';
	h_put(&b, pos);
	ledger_close(lg);
	return b.s;
}

#define FOLLOW_SEEDS 4

START_TEST(pipe_follow_same_log)
{
	uint64_t seed = (uint64_t)_i + 100;
	char *d1 = fresh_dir(), *d2 = fresh_dir(), path[300];
	struct ingest_follow_result r1, r2;
	struct lg_error err = {0};
	struct lines l;
	char *a, *b;

	gen(&l, seed, 2500);
	snprintf(path, sizeof(path), "%s/s.ndjson", d1);
	write_stream(path, &l, seed);
	ck_assert_msg(follow_with(d1, path, false, 0, &r1, &err) == 0,
		      "seed %llu: inline: %s", (unsigned long long)seed,
		      err.msg);
	ck_assert_msg(follow_with(d2, path, true, 1 + (unsigned)(seed % 3),
				  &r2, &err) == 0,
		      "seed %llu: pipelined: %s", (unsigned long long)seed,
		      err.msg);
	a = ledger_text(d1);
	b = ledger_text(d2);
	ck_assert_msg(strcmp(a, b) == 0, "seed %llu: logs differ",
		      (unsigned long long)seed);
	ck_assert_uint_eq(r1.offset, r2.offset);
	ck_assert_uint_eq(r1.c.lines, r2.c.lines);
	ck_assert_uint_eq(r1.c.lines, l.n + 1);
	ck_assert_uint_eq(r1.c.skipped_fast, r2.c.skipped_fast);
	ck_assert_ptr_nonnull(strstr(a, "NOTE Oversized"));
	ck_assert_ptr_nonnull(strstr(a, "NOTE MalformedLine"));
	ck_assert_ptr_nonnull(strstr(a, "NOTE TimeWentBack"));
	free(a);
	free(b);
	/* Run again: resumed at the end, nothing new, either way. */
	ck_assert_int_eq(follow_with(d2, path, true, 2, &r2, &err), 0);
	ck_assert(r2.resumed);
	ck_assert_uint_eq(r2.c.events_out, 0);
	ck_assert_uint_eq(r2.offset, r1.offset);
	lines_free(&l);
	rm_tree(d1);
	rm_tree(d2);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Through a FIFO */

/* The log with times and heads, without the position (which names the
 * source). */
static char *log_text(const char *dir)
{
	char *t = ledger_text(dir), *pos = NULL;

	for (char *q = t; (q = strstr(q, "; {\"classes\":")) != NULL; q++)
		pos = q;
	ck_assert_ptr_nonnull(pos);
	*pos = '\0';
	return t;
}

/* Writes the file into the FIFO in random pieces (a few bytes to a few
 * KiB) with random short pauses, so that the reader goes idle anywhere: in
 * a line, between its "\r" and "\n", in the over-long line. */
static void write_in_pieces(const char *fifo, const char *path, uint64_t s)
{
	int out = open(fifo, O_WRONLY), in = open(path, O_RDONLY);
	char buf[4096];

	if (out < 0 || in < 0)
		_exit(2);
	for (;;) {
		size_t want = prnd(&s) % 3 == 0 ? 1 + prnd(&s) % 3
						: 1 + prnd(&s) % sizeof(buf);
		ssize_t n = read(in, buf, want);

		if (n <= 0)
			break;
		if (write(out, buf, (size_t)n) != n)
			_exit(3);
		if (prnd(&s) % 4 == 0)
			usleep((useconds_t)(prnd(&s) % 1500));
	}
	_exit(0);
}

START_TEST(pipe_follow_fifo)
{
	uint64_t seed = (uint64_t)_i + 300;
	char *d1 = fresh_dir(), *d2 = fresh_dir(), path[300], fifo[300];
	struct ingest_follow_result r1, r2;
	struct lg_error err = {0};
	struct lines l;
	int status;
	pid_t pid;
	char *a, *b;

	gen(&l, seed, 600);
	snprintf(path, sizeof(path), "%s/s.ndjson", d1);
	snprintf(fifo, sizeof(fifo), "%s/s.fifo", d2);
	write_stream(path, &l, seed);
	ck_assert_int_eq(follow_with(d1, path, false, 0, &r1, &err), 0);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		write_in_pieces(fifo, path, seed * 977);
	/* Idle commits between the batch commits (every 13 events). */
	ck_assert_msg(h_follow(d2,
			       (struct ingest_follow_opts){
				       .path = fifo,
				       .batch_events = 13,
				       .max_object_bytes = PIPE_MAX_OBJECT,
				       .parse_threads = 1 + (unsigned)(seed % 3),
				       .parse_inline = _i % 2 == 0,
				       .idle_ms = 1},
			       &r2, &err) == 0,
		      "seed %llu: %s", (unsigned long long)seed, err.msg);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	a = log_text(d1);
	b = log_text(d2);
	ck_assert_msg(strcmp(a, b) == 0,
		      "seed %llu: the FIFO's log differs from the file's",
		      (unsigned long long)seed);
	ck_assert_uint_eq(r1.offset, r2.offset);
	ck_assert_uint_eq(r1.c.lines, r2.c.lines);
	ck_assert_ptr_nonnull(strstr(a, "NOTE Oversized"));
	free(a);
	free(b);
	/* A FIFO cannot be resumed: refused before it is opened (no writer
	 * holds it now, so an open would wait). */
	ck_assert_int_eq(h_follow(d2, (struct ingest_follow_opts){.path = fifo},
				  NULL, &err),
			 LG_EEXIST);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot be resumed"));
	lines_free(&l);
	rm_tree(d1);
	rm_tree(d2);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Killed while reading ahead */

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#define KILL_ATTEMPTS 40

START_TEST(pipe_follow_killed)
{
	uint64_t seed = (uint64_t)_i + 200, s = seed * 31;
	char *whole = fresh_dir(), *killed = fresh_dir(), path[300];
	struct ingest_follow_result r;
	struct lg_error err = {0};
	struct lines l;
	int64_t t0, span;
	char *a, *b;
	int i;

	gen(&l, seed, 2000);
	snprintf(path, sizeof(path), "%s/s.ndjson", whole);
	write_stream(path, &l, seed);
	t0 = now_us();
	ck_assert_int_eq(follow_with(whole, path, false, 0, &r, &err), 0);
	span = now_us() - t0;
	ledger_close(h_ledger(killed));
	for (i = 0; i < KILL_ATTEMPTS; i++) {
		int status;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(follow_with(killed, path, true, 2, NULL, NULL) ==
					      0
				      ? 0
				      : 3);
		usleep((useconds_t)(prnd(&s) % (uint64_t)(span + 1)));
		kill(pid, SIGKILL);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status)) {
			ck_assert_msg(WEXITSTATUS(status) == 0,
				      "seed %llu: child failed",
				      (unsigned long long)seed);
			break;
		}
	}
	if (i == KILL_ATTEMPTS)
		ck_assert_int_eq(follow_with(killed, path, true, 2, NULL, &err),
				 0);
	a = ledger_text(whole);
	b = ledger_text(killed);
	ck_assert_msg(strcmp(a, b) == 0, "seed %llu: logs differ",
		      (unsigned long long)seed);
	free(a);
	free(b);
	lines_free(&l);
	rm_tree(whole);
	rm_tree(killed);
}
END_TEST

INGEST_PART(pipe)
{
	TCase *tc = tcase_create("pipe");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, pipe_equals_line, 0, PIPE_SEEDS);
	tcase_add_test(tc, pipe_free_early);
	tcase_add_loop_test(tc, pipe_bad_bounds, 0, 5);
	tcase_add_loop_test(tc, pipe_follow_same_log, 0, FOLLOW_SEEDS);
	tcase_add_loop_test(tc, pipe_follow_fifo, 0, FOLLOW_SEEDS);
	tcase_add_loop_test(tc, pipe_follow_killed, 0, 2);
	suite_add_tcase(s, tc);
}
