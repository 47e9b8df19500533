/*
 * The ledger itself as a bench_compare store: a fresh LMDB directory,
 * durable commits (fsync, as `gpuledger watch` without --no-sync), no
 * automatic checkpoints (so that a rebuild replays from genesis). A rebuild
 * is closing and opening the ledger: open replays every event through the
 * projection, checking each against the state, and recomputes every
 * per-namespace and subtree total. A remaining query is the in-process
 * state_remaining_json that `GET /v1/tenants/{ns}/remaining` answers with.
 */
#include "ledger/ledger.h"
#include "tests/bench/bench.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gl {
	ledger_t *lg;
	char dir[PATH_MAX];
};

static int gl_reopen(struct gl *g)
{
	struct ledger_opts o = {.dir = g->dir,
				.create = true,
				.map_size_bytes = (size_t)1 << 30,
				.checkpoint_every = UINT64_MAX,
				.checkpoint_secs = -1};
	struct lg_error err = {0};

	ledger_close(g->lg);
	g->lg = NULL;
	if (ledger_open(&g->lg, &o, &err) != 0) {
		fprintf(stderr, "gpuledger: open %s: %s\n", g->dir, err.msg);
		return -1;
	}
	return 0;
}

/* Removes the ledger's directory; it holds only LMDB's files. */
static void rm_ledger_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX + NAME_MAX + 2];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void gl_close(void *h)
{
	struct gl *g = h;

	if (g == NULL)
		return;
	ledger_close(g->lg);
	rm_ledger_dir(g->dir);
	free(g);
}

static void *gl_open(const char *where)
{
	struct gl *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	snprintf(g->dir, sizeof(g->dir), "%s/gpuledger-XXXXXX", where);
	if (mkdtemp(g->dir) == NULL) {
		perror(g->dir);
		free(g);
		return NULL;
	}
	if (gl_reopen(g) != 0) {
		gl_close(g);
		return NULL;
	}
	return g;
}

static int gl_append(void *h, struct event *evs, size_t n)
{
	struct gl *g = h;
	struct lg_error err = {0};

	for (size_t i = 0; i < n; i++)
		evs[i].seq = 0;
	if (ledger_append(g->lg, evs, n, NULL, 0, NULL, &err) != 0) {
		fprintf(stderr, "gpuledger: append: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int gl_rebuild(void *h, uint64_t *events)
{
	struct gl *g = h;

	if (gl_reopen(g) != 0)
		return -1;
	*events = ledger_last_seq(g->lg);
	return 0;
}

static int gl_remaining(void *h, const char *ns, int64_t *sum)
{
	struct gl *g = h;
	json_t *r = state_remaining_json(ledger_state(g->lg), ns);
	json_t *classes = json_object_get(r, "classes"), *v;
	const char *k;

	*sum = 0;
	if (r == NULL)
		return -1;
	json_object_foreach (classes, k, v) {
		json_t *x = json_object_get(v, "remaining");

		if (json_is_integer(x))
			*sum += json_integer_value(x) * bench_weight(k);
	}
	v = json_object_get(json_object_get(r, "total"), "remaining");
	if (json_is_integer(v))
		*sum += json_integer_value(v) * bench_weight(NULL);
	json_decref(r);
	return 0;
}

const struct backend_ops backend_gpuledger = {
	.name = "gpuledger",
	.detail = "LMDB, fsync per commit",
	.open = gl_open,
	.close = gl_close,
	.append = gl_append,
	.rebuild = gl_rebuild,
	.remaining = gl_remaining,
	.analyze = NULL,
};
