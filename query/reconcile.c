/*
 * GET /v1/reconcile (DESIGN 3.6, 7): the reconciliation audit as a heavy
 * read -- two passes over the log from genesis on the heavy reads' thread
 * against a snapshot, streamed with their backpressure. The parameters are
 * the CLI's (from, to, since, window, tenant) and are resolved, and the
 * answer written, by the same ledger/reconcile.c code, so that the bytes
 * equal `gpuledger reconcile --format json`'s. A tenant token reconciles
 * its own subtree (or a tenant inside it).
 */
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARAM_MAX 128

struct reconcile_job {
	char from[PARAM_MAX], to[PARAM_MAX], since[PARAM_MAX],
		window[PARAM_MAX], tenant[DNS1123_SUBDOMAIN_MAX + 1];
	bool has_from, has_to, has_since, has_window, has_tenant;
};

static int emit_bytes(void *ctx, const char *p, size_t n)
{
	return query__heavy_emit(ctx, p, n);
}

static void reconcile_run(struct heavy *h, void *arg)
{
	const struct reconcile_job *j = arg;
	ledger_t *lg = query__heavy_ledger(h);
	struct reconcile_args a = {
		.from = j->has_from ? j->from : NULL,
		.to = j->has_to ? j->to : NULL,
		.since = j->has_since ? j->since : NULL,
		.window = j->has_window ? j->window : NULL,
		.tenant = j->has_tenant ? j->tenant : NULL,
	};
	struct ledger_reconcile_json w = {.write = emit_bytes, .ctx = h};
	struct reconcile_opts o;
	struct lg_error err = {0};
	int rc = ledger_reconcile_resolve(lg, &a, &o, &err);

	if (rc != 0) {
		query__heavy_fail(h, 400, "reconcile: parameter %s", err.msg);
		return;
	}
	rc = ledger_reconcile(lg, &o, &ledger_reconcile_json_sink, &w, &err);
	if (rc < 0)
		query__heavy_fail(h, 500, "reconcile: %s",
				  err.msg[0] ? err.msg : lg_strerror(rc));
}

/* One parameter into buf; false (answered 400) when malformed. */
static bool take(struct query_server *qs, struct request *rq, const char *k,
		 char *buf, size_t cap, bool *has)
{
	int n = query__param_text(rq, k, buf, cap);

	*has = n == QP_OK;
	if (n == QP_BAD) {
		query__reply_error(qs, rq, 400,
				   "reconcile: parameter %s is malformed or "
				   "too long",
				   k);
		return false;
	}
	return true;
}

/* The first parameter not in known, into out (cap bytes); false when all
 * are known. A misspelt parameter is refused, not ignored. */
static bool unknown_param(const struct request *rq, const char *const *known,
			  char *out, size_t cap)
{
	const char *name, *val;
	size_t pos = 0, nlen, vlen;

	while (query__param_next(rq->query, rq->query_len, &pos, &name, &nlen,
				 &val, &vlen) == 1) {
		size_t k = 0;

		while (known[k] != NULL && (strlen(known[k]) != nlen ||
					    memcmp(name, known[k], nlen) != 0))
			k++;
		if (known[k] == NULL) {
			snprintf(out, cap, "%.*s", (int)nlen, name);
			return true;
		}
	}
	return false;
}

void query__handle_reconcile(struct query_server *qs, struct request *rq)
{
	static const char *const known[] = {"from",   "to",	"since",
					    "window", "tenant", NULL};
	struct reconcile_job *j = lg_xcalloc(1, sizeof(*j));
	char bad[64];

	if (unknown_param(rq, known, bad, sizeof(bad))) {
		query__reply_error(qs, rq, 400,
				   "reconcile: unknown parameter %s", bad);
		free(j);
		return;
	}
	if (!take(qs, rq, "from", j->from, sizeof(j->from), &j->has_from) ||
	    !take(qs, rq, "to", j->to, sizeof(j->to), &j->has_to) ||
	    !take(qs, rq, "since", j->since, sizeof(j->since), &j->has_since) ||
	    !take(qs, rq, "window", j->window, sizeof(j->window),
		  &j->has_window) ||
	    !take(qs, rq, "tenant", j->tenant, sizeof(j->tenant),
		  &j->has_tenant)) {
		free(j);
		return;
	}
	if (rq->who != NULL && rq->who->role == ROLE_TENANT) {
		if (!j->has_tenant) {
			snprintf(j->tenant, sizeof(j->tenant), "%s",
				 rq->who->ns);
			j->has_tenant = true;
		} else if (!query__ns_in_subtree(rq->who->ns, j->tenant)) {
			query__reply_error(qs, rq, 403,
					   "reconcile: tenant %s is outside "
					   "the subtree of %s",
					   j->tenant, rq->who->ns);
			free(j);
			return;
		}
	}
	query__heavy_start(qs, rq, "application/json", false, reconcile_run, j,
			   free);
}
