/*
 * Ledger benchmark (DESIGN 10): durable append at several batch sizes,
 * rebuild from genesis, and open (cold start) from a checkpoint. Prints the
 * median of several runs with min-max beside it. Numbers are never asserted.
 *
 *   bench_ledger [EVENTS] [RUNS]
 */
#include "ledger/ledger_int.h"
#include "tests/ledger_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 1767225600000000000LL

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

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	static const size_t batches[] = {1000, 10000, 100000};
	double v[16];
	char label[64];

	if (runs < 1 || runs > 16)
		runs = 3;
	printf("ledger benchmark: %zu events per run, median of %d runs\n", n,
	       runs);
	for (size_t b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
		for (int r = 0; r < runs; r++) {
			char *d = mkdir_tmp();

			v[r] = append_rate(d, n, batches[b], false);
			rm_dir(d);
		}
		snprintf(label, sizeof(label), "durable append, batch %zu",
			 batches[b]);
		report(label, v, runs, "events/s");
	}
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
		}
		report("rebuild from genesis (open, no checkpoint)", v, runs,
		       "events/s");
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
