/*
 * The ledger against the baselines a team would otherwise pick (DESIGN 10):
 * the same events appended at the same batch sizes, durably, to gpuledger,
 * SQLite and PostgreSQL; a rebuild of every per-namespace total from all
 * events; and remaining-budget queries over a realistic tenant tree. Every
 * store is driven in-process from C (bench.h), so language overhead is
 * equal. Prints one RESULT line per figure (median, min, max of the runs)
 * and one RATIO line per comparison, for tests/bench/run.sh to tabulate.
 * Numbers are never asserted; answers are: every store must give the same
 * remaining budgets, and a difference is reported.
 *
 *   bench_compare --tmp DIR [--events N] [--runs R] [--queries Q]
 *                 [--source LEDGER_DIR] [--pg CONNINFO] [--stores LIST]
 *
 * LIST names the baselines to run besides gpuledger (default
 * "sqlite,postgresql"; postgresql also needs --pg).
 *
 * Append and rebuild use tests/ledger_gen.c's events (seed 42, as
 * bench_ledger). The queries use the events of --source (a ledger made by
 * `gpuledger watch` from a simulated stream: its tenant tree, budgets and
 * holders), or the generated events without it.
 */
#include "ledger/ledger.h"
#include "tests/bench/bench.h"
#include "tests/ledger_gen.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0	     1767225600000000000LL
#define RUNS_MAX     16
#define SOURCE_MAX   (20u * 1000 * 1000) /* events read from --source */
#define TENANTS_MAX  4096u		 /* namespaces queried */
#define ARENA_CHUNK  (1u << 20)
#define LOAD_BATCH   10000u
#define BACKENDS_MAX 3

static const size_t batches[] = {1000, 10000, 100000};
#define N_BATCHES (sizeof(batches) / sizeof(batches[0]))

struct events {
	struct event *ev;
	size_t n, cap;
	char **chunks; /* string arena */
	size_t n_chunks, used;
};

struct figures {
	double append[N_BATCHES], rebuild, remaining; /* medians */
	bool ok;
};

struct opts {
	const char *tmp, *source, *pg, *stores;
	size_t events, queries;
	int runs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Prints a RESULT line and returns the median. */
static double result(const char *id, const char *label, double *v, int n,
		     const char *unit)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	printf("RESULT|%s|%s|%.6g|%.6g|%.6g|%s|%d\n", id, label, v[n / 2], v[0],
	       v[n - 1], unit, n);
	fflush(stdout);
	return v[n / 2];
}

/* ---------------------------------------------------------------------- */
/* Events read from a ledger, with their strings copied into an arena.     */

static const char *arena_str(struct events *e, const char *s)
{
	size_t len;
	char *p;

	if (s == NULL)
		return NULL;
	len = strlen(s) + 1;
	if (len > ARENA_CHUNK)
		return NULL;
	if (e->n_chunks == 0 || e->used + len > ARENA_CHUNK) {
		char **c = realloc(e->chunks,
				   (e->n_chunks + 1) * sizeof(*e->chunks));

		if (c == NULL || (c[e->n_chunks] = malloc(ARENA_CHUNK)) == NULL)
			abort();
		e->chunks = c;
		e->n_chunks++;
		e->used = 0;
	}
	p = e->chunks[e->n_chunks - 1] + e->used;
	memcpy(p, s, len);
	e->used += len;
	return p;
}

static int copy_event(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct events *e = ctx;
	struct event *d;

	if (e->n == SOURCE_MAX)
		return 1;
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 65536;
		struct event *p = realloc(e->ev, cap * sizeof(*p));

		if (p == NULL)
			abort();
		e->ev = p;
		e->cap = cap;
	}
	d = &e->ev[e->n++];
	*d = *ev;
	d->seq = 0;
	d->ns = arena_str(e, ev->ns);
	d->parent = arena_str(e, ev->parent);
	d->key = arena_str(e, ev->key);
	d->cls = arena_str(e, ev->cls);
	d->text = arena_str(e, ev->text);
	d->node = arena_str(e, ev->node);
	d->name = arena_str(e, ev->name);
	d->uid = arena_str(e, ev->uid);
	return 0;
}

static int events_from_ledger(struct events *e, const char *dir)
{
	struct ledger_opts o = {.dir = dir, .read_only = true};
	struct lg_error err = {0};
	ledger_t *lg;
	int rc;

	if (ledger_open(&lg, &o, &err) != 0) {
		fprintf(stderr, "bench_compare: %s: %s\n", dir, err.msg);
		return -1;
	}
	rc = ledger_scan(lg, 1, SOURCE_MAX, copy_event, e, &err);
	ledger_close(lg);
	if (rc < 0) {
		fprintf(stderr, "bench_compare: scan %s: %s\n", dir, err.msg);
		return -1;
	}
	return 0;
}

static void events_release(struct events *e)
{
	for (size_t i = 0; i < e->n_chunks; i++)
		free(e->chunks[i]);
	free(e->chunks);
	free(e->ev);
}

/* The tenant namespaces that exist after all of evs, at most TENANTS_MAX. */
static size_t tenants_of(const struct events *e, const char **out)
{
	size_t n = 0;

	for (size_t i = 0; i < e->n; i++) {
		const struct event *ev = &e->ev[i];
		size_t j = 0;

		if (ev->type != EV_TENANT && ev->type != EV_TENANT_GONE)
			continue;
		while (j < n && strcmp(out[j], ev->ns) != 0)
			j++;
		if (ev->type == EV_TENANT_GONE && j < n)
			out[j] = out[--n];
		else if (ev->type == EV_TENANT && j == n && n < TENANTS_MAX)
			out[n++] = ev->ns;
	}
	return n;
}

/* ---------------------------------------------------------------------- */
/* Measurements                                                            */

static int append_all(const struct backend_ops *b, void *h, struct event *evs,
		      size_t n, size_t batch)
{
	for (size_t i = 0; i < n; i += batch)
		if (b->append(h, evs + i, n - i < batch ? n - i : batch) != 0)
			return -1;
	return 0;
}

/* Appends at every batch size (a fresh store each run), then rebuilds the
 * last store runs times. */
static int bench_write(const struct backend_ops *b, const char *where,
		       struct events *gen, const struct opts *o,
		       struct figures *f)
{
	double v[RUNS_MAX];
	char id[64], label[96];
	void *keep = NULL;
	uint64_t n_ev = 0;

	for (size_t k = 0; k < N_BATCHES; k++) {
		for (int r = 0; r < o->runs; r++) {
			void *h = b->open(where);
			double t;

			if (h == NULL)
				return -1;
			t = now_s();
			if (append_all(b, h, gen->ev, gen->n, batches[k]) !=
			    0) {
				b->close(h);
				return -1;
			}
			v[r] = (double)gen->n / (now_s() - t);
			if (k == N_BATCHES - 1 && r == o->runs - 1)
				keep = h;
			else
				b->close(h);
		}
		snprintf(id, sizeof(id), "append.%zu.%s", batches[k], b->name);
		snprintf(label, sizeof(label), "%s (%s)", b->name, b->detail);
		f->append[k] = result(id, label, v, o->runs, "events/s");
	}
	for (int r = 0; r < o->runs; r++) {
		double t = now_s();

		if (b->rebuild(keep, &n_ev) != 0) {
			b->close(keep);
			return -1;
		}
		v[r] = (double)n_ev / (now_s() - t);
	}
	snprintf(id, sizeof(id), "rebuild.%s", b->name);
	snprintf(label, sizeof(label), "%s", b->name);
	f->rebuild = result(id, label, v, o->runs, "events/s");
	b->close(keep);
	return 0;
}

/* Loads the query events, checks every tenant's answer against want (the
 * first store's, filled when *have is false), then times o->queries
 * queries round robin over the tenants, runs times. */
static int bench_queries(const struct backend_ops *b, const char *where,
			 struct events *q, const char **ns, size_t n_ns,
			 int64_t *want, bool *have, const struct opts *o,
			 struct figures *f)
{
	void *h = b->open(where);
	double v[RUNS_MAX];
	char id[64], label[96];
	size_t bad = 0;
	int64_t sum;

	if (h == NULL || append_all(b, h, q->ev, q->n, LOAD_BATCH) != 0 ||
	    (b->analyze != NULL && b->analyze(h) != 0))
		goto fail;
	for (size_t i = 0; i < n_ns; i++) {
		if (b->remaining(h, ns[i], &sum) != 0)
			goto fail;
		if (*have && sum != want[i] && bad++ < 5)
			fprintf(stderr,
				"bench_compare: %s: remaining(%s) sums to %lld,"
				" gpuledger says %lld\n",
				b->name, ns[i], (long long)sum,
				(long long)want[i]);
		want[i] = *have ? want[i] : sum;
	}
	*have = true;
	f->ok = bad == 0;
	for (int r = 0; r < o->runs; r++) {
		double t = now_s();

		for (size_t i = 0; i < o->queries; i++)
			if (b->remaining(h, ns[i % n_ns], &sum) != 0)
				goto fail;
		v[r] = (double)o->queries / (now_s() - t);
	}
	snprintf(id, sizeof(id), "remaining.%s", b->name);
	snprintf(label, sizeof(label), "%s%s", b->name,
		 f->ok ? "" : " (ANSWERS DIFFER)");
	f->remaining = result(id, label, v, o->runs, "queries/s");
	b->close(h);
	return 0;
fail:
	b->close(h);
	return -1;
}

static void ratios(const struct figures *gl, const struct figures *base,
		   const char *name)
{
	for (size_t k = 0; k < N_BATCHES; k++)
		printf("RATIO|append, batch %zu: gpuledger/%s|%.2f\n",
		       batches[k], name, gl->append[k] / base->append[k]);
	printf("RATIO|rebuild: gpuledger/%s|%.2f\n", name,
	       gl->rebuild / base->rebuild);
	printf("RATIO|remaining query: gpuledger/%s|%.2f%s\n", name,
	       gl->remaining / base->remaining,
	       base->ok ? "" : " (answers differ)");
}

/* ---------------------------------------------------------------------- */

static int parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.events = 1000000,
			   .queries = 20000,
			   .runs = 3,
			   .stores = "sqlite,postgresql"};
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (strcmp(k, "--tmp") == 0)
			o->tmp = v;
		else if (strcmp(k, "--source") == 0)
			o->source = v;
		else if (strcmp(k, "--pg") == 0)
			o->pg = v;
		else if (strcmp(k, "--stores") == 0)
			o->stores = v;
		else if (strcmp(k, "--events") == 0)
			o->events = strtoull(v, NULL, 10);
		else if (strcmp(k, "--queries") == 0)
			o->queries = strtoull(v, NULL, 10);
		else if (strcmp(k, "--runs") == 0)
			o->runs = atoi(v);
		else
			return -1;
	}
	if (argc % 2 == 0 || o->tmp == NULL || o->events == 0 ||
	    o->events > SOURCE_MAX || o->queries == 0 || o->runs < 1 ||
	    o->runs > RUNS_MAX)
		return -1;
	return 0;
}

static int run_all(const struct opts *o, struct events *gen, struct events *q)
{
	const struct backend_ops *b[BACKENDS_MAX] = {&backend_gpuledger};
	const char *where[BACKENDS_MAX] = {o->tmp};
	struct figures f[BACKENDS_MAX];
	static const char *ns[TENANTS_MAX];
	static int64_t want[TENANTS_MAX];
	size_t n_b = 1, n_ns = tenants_of(q, ns);
	bool have = false;

	memset(f, 0, sizeof(f));
	if (strstr(o->stores, "sqlite") != NULL) {
		b[n_b] = &backend_sqlite;
		where[n_b++] = o->tmp;
	}
	if (o->pg != NULL && strstr(o->stores, "postgresql") != NULL) {
		b[n_b] = &backend_pg;
		where[n_b++] = o->pg;
	}
	if (n_ns == 0) {
		fprintf(stderr, "bench_compare: no tenants to query\n");
		return -1;
	}
	printf("INFO|compare: %zu generated events per append run; %zu "
	       "queries per run over %zu tenants from %zu events\n",
	       gen->n, o->queries, n_ns, q->n);
	for (size_t i = 0; i < n_b; i++)
		if (bench_write(b[i], where[i], gen, o, &f[i]) != 0 ||
		    bench_queries(b[i], where[i], q, ns, n_ns, want, &have, o,
				  &f[i]) != 0) {
			fprintf(stderr, "bench_compare: %s failed\n",
				b[i]->name);
			return -1;
		}
	for (size_t i = 1; i < n_b; i++)
		ratios(&f[0], &f[i], b[i]->name);
	return 0;
}

int main(int argc, char **argv)
{
	struct events gen = {0}, src = {0};
	struct opts o;
	struct gen *g;
	int rc;

	if (parse_opts(argc, argv, &o) != 0) {
		fprintf(stderr,
			"usage: bench_compare --tmp DIR [--events N] [--runs R]"
			" [--queries Q] [--source LEDGER_DIR] [--pg CONNINFO]"
			" [--stores LIST]\n");
		return 2;
	}
	gen.ev = calloc(o.events, sizeof(*gen.ev));
	if (gen.ev == NULL)
		return 2;
	gen.n = gen.cap = o.events;
	g = gen_new(42, T0);
	gen_next(g, gen.ev, gen.n);
	if (o.source != NULL && events_from_ledger(&src, o.source) != 0)
		return 2;
	rc = run_all(&o, &gen, o.source != NULL ? &src : &gen);
	gen_free(g);
	events_release(&gen);
	events_release(&src);
	return rc == 0 ? 0 : 1;
}
