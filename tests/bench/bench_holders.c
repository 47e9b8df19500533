/*
 * Memory per holder and cold start (DESIGN 10: <= 300 bytes per holder,
 * <= 1 s from a checkpoint of 1M holders).
 *
 *   bench_holders build DIR N   a ledger of N pod holders, then a checkpoint
 *   bench_holders open DIR      opens it once and prints what it cost
 *
 * `build` makes a tenant tree of 100 tenants with 10 sub-tenants each, three
 * classes, 500 nodes, and N pods with realistic names and uids spread over
 * the sub-tenants, each reserving and allocating 1-4 units of one class on
 * one node (a RESERVE and an ALLOC event), appended without fsync (building
 * is not measured) and checkpointed at the end.
 *
 * `open` runs in a fresh process so that nothing else is in its memory: it
 * reads VmRSS and RssAnon from /proc/self/status before and after
 * ledger_open (which decodes the checkpoint into the state) and prints
 * "holders N rss BYTES anon BYTES open_ms MS". VmRSS counts the pages of
 * the LMDB map the checkpoint was read from (shared page cache, RssFile)
 * as well as the state's heap (RssAnon); run.sh divides both by N.
 */
#include "ledger/ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0	    1767225600000000000LL
#define BATCH	    100000u
#define TENANTS	    100u
#define SUBTENANTS  10u
#define NODES	    500u
#define HOLDERS_MAX 100000000ull
#define NAME_LEN    48
#define META_KEY    "bench.holders"

static const char *const classes[] = {"a100", "h100", "l40s"};
#define N_CLASSES (sizeof(classes) / sizeof(classes[0]))

/* The names every event of the build borrows. */
struct names {
	char tenant[1 + TENANTS * (SUBTENANTS + 1)][32];
	char parent[1 + TENANTS * (SUBTENANTS + 1)][32];
	char node[NODES][16];
	char def[N_CLASSES][256];
	char pod[BATCH][NAME_LEN], uid[BATCH][40];
	size_t n_tenants;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, const struct lg_error *err)
{
	fprintf(stderr, "bench_holders: %s: %s\n", what, err->msg);
	return 1;
}

static void names_init(struct names *nm)
{
	size_t k = 0;

	snprintf(nm->tenant[k++], 32, "tenant-root");
	for (unsigned t = 0; t < TENANTS; t++) {
		snprintf(nm->tenant[k], 32, "tenant-t%u", t);
		snprintf(nm->parent[k++], 32, "tenant-root");
		for (unsigned c = 0; c < SUBTENANTS; c++) {
			snprintf(nm->tenant[k], 32, "tenant-t%u-c%u", t, c);
			snprintf(nm->parent[k++], 32, "tenant-t%u", t);
		}
	}
	nm->n_tenants = k;
	for (unsigned n = 0; n < NODES; n++)
		snprintf(nm->node[n], sizeof(nm->node[n]), "gpu-node-%03u", n);
	for (size_t c = 0; c < N_CLASSES; c++)
		snprintf(nm->def[c], sizeof(nm->def[c]),
			 "{\"deviceClassName\":\"%s\",\"name\":\"%s\","
			 "\"resourceNames\":[\"nvidia.com/%s\"],"
			 "\"tolerations\":[]}",
			 classes[c], classes[c], classes[c]);
}

/* The classes and the tenant tree, in tree order. */
static size_t setup_events(const struct names *nm, struct event *evs)
{
	size_t n = 0;

	for (size_t c = 0; c < N_CLASSES; c++)
		evs[n++] = (struct event){.time_ns = T0,
					  .type = EV_CLASS,
					  .cls = classes[c],
					  .text = nm->def[c]};
	for (size_t t = 0; t < nm->n_tenants; t++)
		evs[n++] = (struct event){.time_ns = T0,
					  .type = EV_TENANT,
					  .ns = nm->tenant[t],
					  .parent = t ? nm->parent[t] : NULL};
	return n;
}

/* Pods first..first+k as a RESERVE and an ALLOC each, into evs. */
static size_t pod_events(struct names *nm, struct event *evs, uint64_t first,
			 size_t k, uint64_t *s)
{
	for (size_t i = 0; i < k; i++) {
		uint64_t id = first + i, r = rnd(s);
		/* Sub-tenants only: index 0 is tenant-root, then every
		 * (SUBTENANTS + 1)-th one is a top-level tenant. */
		size_t t = 1 + (r % TENANTS) * (SUBTENANTS + 1) + 1 +
			   (r >> 8) % SUBTENANTS;
		struct event *ev = &evs[2 * i];

		snprintf(nm->pod[i], NAME_LEN, "train-%07llu-7d9f8b6c4-%05llx",
			 (unsigned long long)id,
			 (unsigned long long)(r >> 20) & 0xfffff);
		snprintf(nm->uid[i], 40,
			 "%08llx-%04llx-4%03llx-8%03llx-%012llx",
			 (unsigned long long)(r & 0xffffffff),
			 (unsigned long long)(r >> 32) & 0xffff,
			 (unsigned long long)(r >> 48) & 0xfff,
			 (unsigned long long)(id & 0xfff),
			 (unsigned long long)id);
		*ev = (struct event){.time_ns = T0 + (int64_t)id * 1000,
				     .type = EV_RESERVE,
				     .ns = nm->tenant[t],
				     .cls = classes[(r >> 16) % N_CLASSES],
				     .kind = HK_POD,
				     .name = nm->pod[i],
				     .uid = nm->uid[i],
				     .node = "",
				     .after = 1 + (int64_t)((r >> 24) % 4)};
		ev[1] = ev[0];
		ev[1].type = EV_ALLOC;
		ev[1].node = nm->node[(r >> 28) % NODES];
	}
	return 2 * k;
}

static int build(const char *dir, uint64_t n)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.map_size_bytes = (size_t)4 << 30,
				.checkpoint_every = UINT64_MAX,
				.checkpoint_secs = -1};
	struct names *nm = calloc(1, sizeof(*nm));
	struct event *evs = calloc(2 * BATCH + 64, sizeof(*evs));
	struct lg_error err = {0};
	uint64_t s = 88172645463325252ull;
	ledger_t *lg;

	if (nm == NULL || evs == NULL)
		return 1;
	names_init(nm);
	if (ledger_open(&lg, &o, &err) != 0)
		return fail(dir, &err);
	if (ledger_append(lg, evs, setup_events(nm, evs), NULL, 0, NULL,
			  &err) != 0)
		return fail("append", &err);
	for (uint64_t i = 0; i < n; i += BATCH) {
		size_t k = n - i < BATCH ? (size_t)(n - i) : BATCH;
		struct ledger_meta m = {META_KEY, &n, sizeof(n)};

		pod_events(nm, evs, i, k, &s);
		if (ledger_append(lg, evs, 2 * k, &m, i + k == n, NULL, &err) !=
		    0)
			return fail("append", &err);
	}
	if (ledger_checkpoint(lg, &err) != 0)
		return fail("checkpoint", &err);
	ledger_close(lg);
	free(evs);
	free(nm);
	printf("holders %llu\n", (unsigned long long)n);
	return 0;
}

/* VmRSS and RssAnon of this process, in bytes. */
static void rss(long long *vm, long long *anon)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];

	*vm = *anon = -1;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			*vm = atoll(line + 6) * 1024;
		else if (strncmp(line, "RssAnon:", 8) == 0)
			*anon = atoll(line + 8) * 1024;
	}
	if (f != NULL)
		fclose(f);
}

static int open_once(const char *dir)
{
	struct ledger_opts o = {.dir = dir, .read_only = true};
	struct lg_error err = {0};
	long long vm0, an0, vm1, an1;
	uint64_t n = 0;
	size_t len;
	ledger_t *lg;
	double t;

	rss(&vm0, &an0);
	t = now_s();
	if (ledger_open(&lg, &o, &err) != 0)
		return fail(dir, &err);
	t = now_s() - t;
	rss(&vm1, &an1);
	if (ledger_meta_get(lg, META_KEY, &n, sizeof(n), &len, &err) != 0 ||
	    len != sizeof(n) || n == 0)
		return fail("holder count", &err);
	printf("holders %llu rss %lld anon %lld open_ms %.1f\n",
	       (unsigned long long)n, vm1 - vm0, an1 - an0, t * 1e3);
	ledger_close(lg);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "build") == 0) {
		uint64_t n = strtoull(argv[3], NULL, 10);

		if (n == 0 || n > HOLDERS_MAX) {
			fprintf(stderr, "bench_holders: N is 1..%llu\n",
				HOLDERS_MAX);
			return 2;
		}
		return build(argv[2], n);
	}
	if (argc == 3 && strcmp(argv[1], "open") == 0)
		return open_once(argv[2]);
	fprintf(stderr, "usage: bench_holders build DIR N | open DIR\n");
	return 2;
}
