/*
 * Holds (DESIGN 10's holds bullet): with 100,000 alive holds, durable
 * verdicts with holds on against the same run with holds off, bytes per
 * alive hold, and rebuild from genesis with holds against without.
 *
 *   bench_holds HOLDS VERDICTS BATCH MIX
 *
 * prints one line per figure, for run.sh to collect:
 *   bytes_per_hold B             heap (mallinfo2) a state grows by per
 *                                alive hold: HOLDS admissions applied to a
 *                                state with holds on (with holds off a
 *                                VERDICT allocates nothing)
 *   verdicts_off R | verdicts_on R   durable verdicts/s: VERDICTS admissions
 *                                judged one after another on a working
 *                                state (each applied to it before the next:
 *                                the verdict path of model/model.h, with
 *                                holds off as well so that both do the same
 *                                work), appended in group commits of BATCH
 *                                with fsync, on a ledger holding HOLDS
 *                                alive holds (holds on) or none (off)
 *   rebuild_off R | rebuild_on R     events/s: the state from genesis of
 *                                that ledger (the same events but the
 *                                HOLDS one)
 *
 * The world: 100 tenants under tenant-root, each with a large budget of
 * the one class, and HOLDS VMInstances admitted (allowed, never observed:
 * alive holds) before the clock starts, with MIX observations of pods
 * (a RESERVE, then its RELEASE) between two admissions, so that the log
 * is a mix and not only verdicts.
 */
#include "ledger/ledger.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0	1767225600000000000LL
#define TENANTS 100u

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct lg_error *err)
{
	fprintf(stderr, "bench_holds: %s: %s\n", what, err ? err->msg : "");
	exit(2);
}

static char *mkdir_tmp(void)
{
	char *d = strdup("/tmp/gpuledger-bench-holds-XXXXXX");

	if (d == NULL || mkdtemp(d) == NULL) {
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

static ledger_t *open_dir(const char *dir, bool no_sync)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = no_sync,
				.map_size_bytes = (size_t)4 << 30,
				.checkpoint_every = UINT64_MAX,
				.checkpoint_secs = -1};
	struct lg_error err = {0};
	ledger_t *lg;

	if (ledger_open(&lg, &o, &err) != 0)
		die(dir, &err);
	return lg;
}

/* The working state and the ledger take the same events. */
struct world {
	ledger_t *lg;
	state_t *ws;
	uint64_t ids;
};

static void put(struct world *w, struct event *evs, size_t n)
{
	struct lg_error err = {0};

	if (w->lg != NULL &&
	    ledger_append(w->lg, evs, n, NULL, 0, NULL, &err) != 0)
		die("append", &err);
	for (size_t i = 0; i < n; i++)
		if (state_apply(w->ws, &evs[i], &err) != 0)
			die("apply", &err);
}

static void tenant_name(unsigned t, char *out)
{
	snprintf(out, 32, "tenant-t%u", t);
}

static void setup(struct world *w, bool holds)
{
	static const char def[] =
		"{\"deviceClassName\":\"h100\",\"name\":\"h100\","
		"\"resourceNames\":[\"nvidia.com/h100\"],\"tolerations\":[]}";
	struct event ev = {.type = EV_CLASS, .cls = "h100", .text = def,
			   .time_ns = T0};
	char ns[32];

	put(w, &ev, 1);
	ev = (struct event){.type = EV_TENANT, .ns = "tenant-root",
			    .time_ns = T0};
	put(w, &ev, 1);
	for (unsigned t = 0; t < TENANTS; t++) {
		tenant_name(t, ns);
		ev = (struct event){.type = EV_TENANT, .ns = ns,
				    .parent = "tenant-root", .time_ns = T0};
		put(w, &ev, 1);
		ev = (struct event){.type = EV_BUDGET, .ns = ns,
				    .key = "h100.gpuclass.cozystack.io/devices",
				    .present = true, .value = 1000000000,
				    .time_ns = T0};
		put(w, &ev, 1);
	}
	if (holds) {
		ev = (struct event){.type = EV_HOLDS, .value = 3600000,
				    .time_ns = T0};
		put(w, &ev, 1);
	}
}

/* One admission of VMInstance vm-<k> (1 h100) in tenant k % TENANTS,
 * judged on the working state and applied to it; its event is *ev (its
 * text is owned by the caller's texts[]). */
static void admit(struct world *w, uint64_t k, struct event *ev, char **text,
		  struct lg_buf *scratch)
{
	struct verdict_request r = {.kind = VERDICT_ADMISSION};
	struct verdict v = {0};
	struct lg_error err = {0};
	char ns[32], name[32];

	tenant_name((unsigned)(k % TENANTS), ns);
	snprintf(name, sizeof(name), "vm-%llu", (unsigned long long)k);
	r.req = json_pack("{s:s, s:s, s:s, s:n, s:{s:[{s:s, s:i}]}}",
			  "namespace", ns, "kind", "VMInstance", "name", name,
			  "old", "new", "gpus", "class", "h100", "count", 1);
	if (verdict_judge(w->ws, &r, &v, &err) != 0 || !v.allowed)
		die("judge", &err);
	v.id = ++w->ids;
	v.basis_seq = state_seq(w->ws);
	memset(v.chain_head, '0', VERDICT_HEAD_HEX);
	*text = verdict_record_text(&v, SIZE_MAX, scratch);
	*ev = (struct event){.type = EV_VERDICT,
			     .seq = state_seq(w->ws) + 1,
			     .time_ns = state_time_ns(w->ws),
			     .text = *text};
	if (state_apply(w->ws, ev, &err) != 0)
		die("apply verdict", &err);
	ev->seq = 0;
	verdict_release(&v);
	verdict_request_release(&r);
}

/* mix observations of pods in "default" (outside every budget), one
 * second apart: what the watcher appends between admissions. */
static void observations(struct world *w, uint64_t k, size_t mix)
{
	struct event evs[64];
	char name[32];
	size_t n = 0;

	snprintf(name, sizeof(name), "pod-%llu", (unsigned long long)k);
	for (size_t i = 0; i < mix && n < 64; i++) {
		evs[n] = (struct event){.type = i % 2 ? EV_RELEASE : EV_RESERVE,
					.time_ns = state_time_ns(w->ws) +
						   1000000000,
					.ns = "default", .cls = "h100",
					.kind = HK_POD, .name = name, .uid = "u",
					.before = i % 2, .after = 1 - i % 2};
		n++;
	}
	put(w, evs, n);
}

/* n admissions in group commits of batch: the ledger's appends after the
 * working state took them. */
static double admissions(struct world *w, uint64_t first, size_t n,
			 size_t batch)
{
	struct event *evs = malloc(batch * sizeof(*evs));
	char **texts = malloc(batch * sizeof(*texts));
	struct lg_buf scratch;
	struct lg_error err = {0};
	double t = now_s();

	lg_buf_init(&scratch, (size_t)1 << 24);
	for (size_t i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;

		for (size_t j = 0; j < k; j++)
			admit(w, first + i + j, &evs[j], &texts[j], &scratch);
		if (ledger_append(w->lg, evs, k, NULL, 0, NULL, &err) != 0)
			die("append verdicts", &err);
		for (size_t j = 0; j < k; j++)
			free(texts[j]);
	}
	t = now_s() - t;
	lg_buf_release(&scratch);
	free(evs);
	free(texts);
	return (double)n / t;
}

static size_t heap_bytes(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

/* The memory of `holds` alive holds in a state of its own (no ledger):
 * the records are built first, then applied with the heap measured. */
static double per_hold(size_t holds)
{
	struct world w = {.ws = state_new()};
	struct event *evs = malloc(holds * sizeof(*evs));
	char **texts = malloc(holds * sizeof(*texts));
	struct lg_error err = {0};
	size_t before;
	state_t *probe;

	setup(&w, true);
	/* Judged on a copy, so that each record is a verdict with growth
	 * for a new object; applied to w.ws below. */
	probe = w.ws;
	w.ws = state_clone(probe);
	for (size_t i = 0; i < holds; i++)
		admit(&w, i, &evs[i], &texts[i], NULL);
	state_free(w.ws);
	w.ws = probe;
	before = heap_bytes();
	for (size_t i = 0; i < holds; i++) {
		evs[i].seq = 0;
		if (state_apply(w.ws, &evs[i], &err) != 0)
			die("apply", &err);
	}
	{
		double b = (double)(heap_bytes() - before) / (double)holds;
		struct state_holds_stats hs;

		state_holds_stats(w.ws, &hs);
		if (hs.alive != holds)
			die("holds not all alive", NULL);
		for (size_t i = 0; i < holds; i++)
			free(texts[i]);
		free(texts);
		free(evs);
		state_free(w.ws);
		return b;
	}
}


/* A ledger with `holds` admissions (alive holds with holds on); then
 * verdicts durable admissions measured. */
static void run(bool on, size_t holds, size_t verdicts, size_t batch,
		size_t mix, double *rate, double *rebuild, double *heap)
{
	char *dir = mkdir_tmp();
	struct world w = {.ws = state_new()};
	struct lg_error err = {0};
	size_t before;
	state_t *st;
	double t;

	w.lg = open_dir(dir, true);
	setup(&w, on);
	for (size_t i = 0; i < holds; i += 1000) {
		admissions(&w, i, holds - i < 1000 ? holds - i : 1000, 1000);
		for (size_t k = 0; mix > 0 && k < 1000; k++)
			observations(&w, i + k, mix);
	}
	ledger_close(w.lg);
	w.lg = open_dir(dir, false);
	*rate = admissions(&w, holds, verdicts, batch);
	before = heap_bytes();
	t = now_s();
	if (ledger_state_at(w.lg, ledger_last_seq(w.lg), &st, NULL, &err) != 0)
		die("rebuild", &err);
	*rebuild = (double)state_seq(st) / (now_s() - t);
	*heap = (double)(heap_bytes() - before);
	state_free(st);
	/* BENCH_HOLDS_PROFILE=N: N more rebuilds, for a profiler. */
	for (int i = atoi(getenv("BENCH_HOLDS_PROFILE") ? getenv("BENCH_HOLDS_PROFILE") : "0"); on && i > 0; i--) {
		if (ledger_state_at(w.lg, ledger_last_seq(w.lg), &st, NULL, &err) != 0)
			die("rebuild", &err);
		state_free(st);
	}
	ledger_close(w.lg);
	state_free(w.ws);
	rm_dir(dir);
}

int main(int argc, char **argv)
{
	size_t holds, verdicts, batch, mix;
	double r_off, r_on, b_off, b_on, per_off, per_on;

	if (argc != 5) {
		fprintf(stderr,
			"usage: bench_holds HOLDS VERDICTS BATCH MIX\n");
		return 2;
	}
	mix = strtoull(argv[4], NULL, 10);
	if (mix > 64)
		return 2;
	holds = strtoull(argv[1], NULL, 10);
	verdicts = strtoull(argv[2], NULL, 10);
	batch = strtoull(argv[3], NULL, 10);
	if (holds == 0 || verdicts == 0 || batch == 0)
		return 2;
	run(false, holds, verdicts, batch, mix, &r_off, &b_off, &per_off);
	run(true, holds, verdicts, batch, mix, &r_on, &b_on, &per_on);
	(void)per_off;
	(void)per_on;
	printf("bytes_per_hold %.1f\n", per_hold(holds));
	printf("verdicts_off %.1f\nverdicts_on %.1f\n", r_off, r_on);
	printf("rebuild_off %.1f\nrebuild_on %.1f\n", b_off, b_on);
	return 0;
}
