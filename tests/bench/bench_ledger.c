/*
 * Ledger benchmark (DESIGN 10): durable append at several batch sizes,
 * rebuild from genesis, and open (cold start) from a checkpoint. Prints the
 * median of several runs with min-max beside it. Numbers are never asserted.
 * Beside the append at batch 10k and the rebuild, the physical limit of the
 * same work in the same run (raw LMDB puts of the same bytes, a raw scan
 * with decode) and their ratio, as "RATIO|label|value" lines.
 *
 *   bench_ledger [EVENTS] [RUNS]
 */
#include "ledger/ledger_int.h"
#include "tests/ledger_gen.h"

#include <lmdb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 1767225600000000000LL
/* The batch of the raw-puts baseline (DESIGN 10: batches of 10k). */
#define RAW_BATCH 10000

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

static void report(const char *what, double *v, int n, const char *unit)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	printf("%-44s %12.1f %s  (min %.1f, max %.1f, %d runs)\n", what,
	       v[n / 2], unit, v[0], v[n - 1], n);
	fflush(stdout);
}

static char *mkdir_tmp(void)
{
	char *d = strdup("/tmp/gpuledger-bench-XXXXXX");

	if (mkdtemp(d) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
	return d;
}

static void rm_dir(char *d)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", d);
	free(d);
}

static ledger_t *open_dir(const char *dir, bool no_sync, uint64_t cp_every)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = no_sync,
				.map_size_bytes = (size_t)1 << 30,
				.checkpoint_every = cp_every,
				.checkpoint_secs = -1};
	struct lg_error err = {0};
	ledger_t *lg;

	if (ledger_open(&lg, &o, &err) != 0) {
		fprintf(stderr, "open %s: %s\n", dir, err.msg);
		exit(2);
	}
	return lg;
}

/* Appends n generated events in batches; returns events per second. The
 * events are generated before the clock starts. */
static double append_rate(const char *dir, size_t n, size_t batch, bool no_sync)
{
	ledger_t *lg = open_dir(dir, no_sync, UINT64_MAX);
	struct event *evs = malloc(n * sizeof(*evs));
	struct gen *g = gen_new(42, T0);
	struct lg_error err = {0};
	double t;

	gen_next(g, evs, n);
	t = now_s();
	for (size_t i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;

		if (ledger_append(lg, evs + i, k, NULL, 0, NULL, &err) != 0) {
			fprintf(stderr, "append: %s\n", err.msg);
			exit(2);
		}
	}
	t = now_s() - t;
	ledger_close(lg);
	gen_free(g);
	free(evs);
	return (double)n / t;
}

/* ---------------------------------------------------------------------- */
/* The physical limit, measured in the same run (DESIGN 10, last bullet):
 * raw LMDB puts of the bytes a durable append wrote, in the same
 * transactions, fsync'd the same way; and a raw scan of the events with
 * decode. Only the ratio of each pair is meant to hold across machines. */

/* A record of a source ledger, pointing into its read transaction's map. */
struct raw_rec {
	MDB_val key, val;
};

struct raw_src {
	MDB_env *env;
	MDB_txn *txn;
	struct raw_rec *ev, *tree, *meta;
	size_t n_ev, n_tree, n_meta;
};

static void raw_die(const char *what, int rc)
{
	fprintf(stderr, "raw LMDB: %s: %s\n", what, mdb_strerror(rc));
	exit(2);
}

/* Opens env at dir with the ledger's own flags and map size; read_only
 * for the source and the scan. */
static MDB_env *raw_env(const char *dir, bool read_only)
{
	MDB_env *env;
	int rc;

	if ((rc = mdb_env_create(&env)) != 0)
		raw_die("create", rc);
	mdb_env_set_maxdbs(env, LEDGER_DB_MAX);
	mdb_env_set_mapsize(env, (size_t)1 << 30);
	rc = mdb_env_open(env, dir, MDB_NOTLS | (read_only ? MDB_RDONLY : 0),
			  0664);
	if (rc != 0)
		raw_die(dir, rc);
	return env;
}

/* Every record of database name, in key order, into a malloc'ed array. */
static struct raw_rec *raw_read_all(MDB_txn *txn, const char *name,
				    unsigned flags, size_t *n)
{
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_stat st;
	MDB_val k, v;
	struct raw_rec *r;
	size_t i = 0;
	int rc;

	if ((rc = mdb_dbi_open(txn, name, flags, &dbi)) != 0)
		raw_die(name, rc);
	if ((rc = mdb_stat(txn, dbi, &st)) != 0)
		raw_die(name, rc);
	r = malloc((st.ms_entries + 1) * sizeof(*r));
	if (r == NULL || (rc = mdb_cursor_open(txn, dbi, &c)) != 0) {
		fprintf(stderr, "raw LMDB: out of memory\n");
		exit(2);
	}
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	     rc == 0 && i < st.ms_entries;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		r[i++] = (struct raw_rec){k, v};
	mdb_cursor_close(c);
	*n = i;
	return r;
}

static void raw_src_open(struct raw_src *s, const char *dir)
{
	int rc;

	s->env = raw_env(dir, true);
	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->txn)) != 0)
		raw_die("read txn", rc);
	s->ev = raw_read_all(s->txn, "events", MDB_INTEGERKEY, &s->n_ev);
	s->tree = raw_read_all(s->txn, "tree", MDB_INTEGERKEY, &s->n_tree);
	s->meta = raw_read_all(s->txn, "meta", 0, &s->n_meta);
}

static void raw_src_close(struct raw_src *s)
{
	mdb_txn_abort(s->txn);
	mdb_env_close(s->env);
	free(s->ev);
	free(s->tree);
	free(s->meta);
}

/* The post-order position of leaf i (0-based) in a Merkle tree: the tree
 * nodes written with leaves [a, b) are records [pos(a), pos(b)). */
static size_t leaf_pos(size_t i)
{
	return 2 * i - (size_t)__builtin_popcountll(i);
}

/* Which transaction a meta record of the source belongs to: 0 for a key
 * every append rewrites (the tree size, the verdict index's summary), the
 * seq it names for an entry of the verdict index (keys "vid" + id or uid,
 * the value the verdict's seq, little endian: written with that verdict),
 * UINT64_MAX for any other per-item key (with a '/': the last). */
static uint64_t raw_meta_seq(const struct raw_rec *r)
{
	const uint8_t *k = r->key.mv_data, *v = r->val.mv_data;
	uint64_t seq = 0;

	if (r->key.mv_size > 3 && memcmp(k, "vid", 3) == 0 &&
	    r->val.mv_size == 8) {
		for (int i = 7; i >= 0; i--)
			seq = seq << 8 | v[i];
		return seq;
	}
	return memchr(k, '/', r->key.mv_size) != NULL ? UINT64_MAX : 0;
}

/* Puts records r[a..b) with MDB_APPEND through one cursor. */
static void raw_put_run(MDB_txn *txn, MDB_dbi dbi, const struct raw_rec *r,
			size_t a, size_t b)
{
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn, dbi, &c);

	for (size_t i = a; i < b && rc == 0; i++) {
		MDB_val k = r[i].key, v = r[i].val;

		rc = mdb_cursor_put(c, &k, &v, MDB_APPEND);
	}
	if (rc != 0)
		raw_die("put", rc);
	mdb_cursor_close(c);
}

/* Writes what the ledger at src holds into a fresh environment at dst in
 * transactions of batch events, each committed (fsync'd) as the ledger's
 * are: the events' stored bytes (encoding and chain head), the Merkle nodes
 * those events added, and the meta records of fixed keys (the tree size,
 * the verdict index's summary) in every transaction, as every append
 * rewrites them; the verdict index's entries with their verdict's
 * transaction; other per-item meta keys (with a '/') with the last. No validation, no
 * projection, no hashing: the physical limit of the same writes. Returns
 * events per second. */
static double raw_put_rate(const char *src, const char *dst, size_t batch)
{
	struct raw_src s;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi ev, tree, meta;
	double t;
	int rc;

	raw_src_open(&s, src);
	env = raw_env(dst, false);
	if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0 ||
	    (rc = mdb_dbi_open(txn, "events", MDB_CREATE | MDB_INTEGERKEY,
			       &ev)) != 0 ||
	    (rc = mdb_dbi_open(txn, "tree", MDB_CREATE | MDB_INTEGERKEY,
			       &tree)) != 0 ||
	    (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &meta)) != 0 ||
	    (rc = mdb_txn_commit(txn)) != 0)
		raw_die("open databases", rc);
	t = now_s();
	for (size_t a = 0; a < s.n_ev; a += batch) {
		size_t b = s.n_ev - a < batch ? s.n_ev : a + batch;
		size_t tb = b == s.n_ev ? s.n_tree : leaf_pos(b);

		if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0)
			raw_die("txn", rc);
		raw_put_run(txn, ev, s.ev, a, b);
		raw_put_run(txn, tree, s.tree, leaf_pos(a), tb);
		for (size_t i = 0; i < s.n_meta; i++) {
			MDB_val k = s.meta[i].key, v = s.meta[i].val;
			uint64_t at = raw_meta_seq(&s.meta[i]);

			if (at == UINT64_MAX ? b != s.n_ev
					     : at != 0 && (at <= a || at > b))
				continue;
			if ((rc = mdb_put(txn, meta, &k, &v, 0)) != 0)
				raw_die("meta put", rc);
		}
		if ((rc = mdb_txn_commit(txn)) != 0)
			raw_die("commit", rc);
	}
	t = now_s() - t;
	/* The copy holds as many records as the source, or it measured less
	 * work than the append did. */
	{
		MDB_stat se, st, sm;

		if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) != 0 ||
		    (rc = mdb_stat(txn, ev, &se)) != 0 ||
		    (rc = mdb_stat(txn, tree, &st)) != 0 ||
		    (rc = mdb_stat(txn, meta, &sm)) != 0)
			raw_die("stat", rc);
		mdb_txn_abort(txn);
		if (se.ms_entries != s.n_ev || st.ms_entries != s.n_tree ||
		    sm.ms_entries != s.n_meta) {
			fprintf(stderr,
				"raw LMDB: the copy holds %zu/%zu/%zu records, "
				"the ledger %zu/%zu/%zu\n",
				se.ms_entries, st.ms_entries, sm.ms_entries,
				s.n_ev, s.n_tree, s.n_meta);
			exit(2);
		}
	}
	mdb_env_close(env);
	t = (double)s.n_ev / t;
	raw_src_close(&s);
	return t;
}

/* Opens the ledger's environment read-only and decodes every event in
 * seq order (what a rebuild reads, without the projection, the chain check
 * or the tree). Returns events per second, the open included as the
 * rebuild's figure includes ledger_open. */
static double raw_scan_rate(const char *dir)
{
	double t = now_s();
	MDB_env *env = raw_env(dir, true);
	struct lg_error err = {0};
	struct event e;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	size_t n = 0;
	int rc;

	if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) != 0 ||
	    (rc = mdb_dbi_open(txn, "events", MDB_INTEGERKEY, &dbi)) != 0 ||
	    (rc = mdb_cursor_open(txn, dbi, &c)) != 0)
		raw_die("scan", rc);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (v.mv_size < LEDGER_HEAD_BYTES ||
		    ledger__event_decode(&e, v.mv_data,
					 v.mv_size - LEDGER_HEAD_BYTES,
					 &err) != 0) {
			fprintf(stderr, "raw scan: event %zu: %s\n", n + 1,
				err.msg);
			exit(2);
		}
		n++;
	}
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return (double)n / (now_s() - t);
}

/* One ratio line for run.sh: the ratio of the medians, the two medians it
 * is made of, and the median of the runs' own ratios (each run a pair). */
static void report_ratio(const char *what, double *a, double *b, int n,
			 const char *unit)
{
	double r[16], ma, mb;

	for (int i = 0; i < n; i++)
		r[i] = b[i] > 0 ? a[i] / b[i] : 0;
	qsort(r, (size_t)n, sizeof(*r), cmp_d);
	qsort(a, (size_t)n, sizeof(*a), cmp_d);
	qsort(b, (size_t)n, sizeof(*b), cmp_d);
	ma = a[n / 2];
	mb = b[n / 2];
	printf("RATIO|%s|%.2f (%.3gM / %.3gM %s; runs' pairs %.2f, %.2f-%.2f)\n",
	       what, mb > 0 ? ma / mb : 0, ma / 1e6, mb / 1e6, unit, r[n / 2],
	       r[0], r[n - 1]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	static const size_t batches[] = {1000, 10000, 100000};
	double v[16], app[16], rawv[16];
	char label[64];

	if (runs < 1 || runs > 16)
		runs = 3;
	printf("ledger benchmark: %zu events per run, median of %d runs\n", n,
	       runs);
	for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
		for (int r = 0; r < runs; r++) {
			char *d = mkdir_tmp();

			v[r] = append_rate(d, n, batches[b], false);
			/* The raw puts of the same bytes, right after the
			 * append they copy (a pair sees the same drift). */
			if (batches[b] == RAW_BATCH) {
				char *raw = mkdir_tmp();

				app[r] = v[r];
				rawv[r] = raw_put_rate(d, raw, RAW_BATCH);
				rm_dir(raw);
			}
			rm_dir(d);
		}
		snprintf(label, sizeof(label), "durable append, batch %zu",
			 batches[b]);
		report(label, v, runs, "events/s");
	}
	memcpy(v, rawv, sizeof(v));
	report("raw LMDB puts of the same bytes, txns of 10k", v, runs,
	       "events/s");
	report_ratio("durable append / raw LMDB puts, batch 10k", app, rawv,
		     runs, "events/s");
	/* Rebuild: open a ledger without checkpoints (replays from genesis),
	 * then the same with a checkpoint at the end (cold start). */
	{
		char *d = mkdir_tmp();
		ledger_t *lg;
		struct lg_error err = {0};

		append_rate(d, n, 100000, true);
		for (int r = 0; r < runs; r++) {
			double t = now_s();

			lg = open_dir(d, true, UINT64_MAX);
			v[r] = (double)ledger_last_seq(lg) / (now_s() - t);
			ledger_close(lg);
			app[r] = v[r];
			rawv[r] = raw_scan_rate(d);
		}
		report("rebuild from genesis (open, no checkpoint)", v, runs,
		       "events/s");
		memcpy(v, rawv, sizeof(v));
		report("raw LMDB scan of the events with decode", v, runs,
		       "events/s");
		report_ratio("rebuild / raw LMDB scan with decode", app, rawv,
			     runs, "events/s");
		lg = open_dir(d, true, UINT64_MAX);
		if (ledger_checkpoint(lg, &err) != 0) {
			fprintf(stderr, "checkpoint: %s\n", err.msg);
			return 2;
		}
		ledger_close(lg);
		for (int r = 0; r < runs; r++) {
			double t = now_s();

			lg = open_dir(d, true, UINT64_MAX);
			v[r] = (now_s() - t) * 1e3;
			ledger_close(lg);
		}
		report("cold start from a checkpoint at the end", v, runs,
		       "ms");
		/* Inclusion proofs (DESIGN 10: <= 50 us in-process) of
		 * spread-out seqs in the whole tree. */
		lg = open_dir(d, true, UINT64_MAX);
		for (int r = 0; r < runs; r++) {
			static struct merkle_proof pf;
			uint64_t last = ledger_last_seq(lg), k = 20000;
			double t = now_s();

			for (uint64_t i = 0; i < k; i++)
				if (ledger_prove_inclusion(
					    lg, 1 + (i * 2654435761u) % last,
					    last, &pf, &err) != 0) {
					fprintf(stderr, "prove: %s\n",
						err.msg);
					return 2;
				}
			v[r] = (now_s() - t) * 1e6 / (double)k;
		}
		ledger_close(lg);
		report("inclusion proof (Merkle tree, whole log)", v, runs,
		       "us");
		/* A ledger from before the tree: the first writer builds it
		 * (DESIGN 4.4 asks how long that takes). */
		for (int r = 0; r < runs; r++) {
			double t;

			lg = open_dir(d, false, UINT64_MAX);
			if (ledger__raw_tree_drop(lg, &err) != 0) {
				fprintf(stderr, "drop: %s\n", err.msg);
				return 2;
			}
			ledger_close(lg);
			t = now_s();
			lg = open_dir(d, false, UINT64_MAX);
			v[r] = (double)ledger_last_seq(lg) / (now_s() - t);
			ledger_close(lg);
		}
		report("tree built for an old ledger (writer open)", v, runs,
		       "events/s");
		rm_dir(d);
	}
	return 0;
}
