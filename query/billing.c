/*
 * GET /v1/export (DESIGN 8) and the billing file behind it.
 *
 * The rows are the CLI's (ledger_export), priced by `serve --rates FILE`,
 * which is read again whenever it changes, so that a ConfigMap update
 * reprices the next export without a restart; a file that no longer parses
 * keeps the last good rates in force (and says so on stderr), as a bad
 * class table keeps the previous one.
 *
 * A tenant token exports its own subtree (showback): the rows whose
 * namespace, or whose subtree's root, lies outside it are dropped before
 * they are written, so they never reach the answer. `tenant=NS` keeps the
 * rows of NS's subtree the same way (for a tenant token NS must lie in its
 * own subtree, else 403), so the console's history of one tenant does not
 * download everyone's rows. The rows are computed off the loop and
 * streamed (query/stream.c): an answer of any size holds a bounded amount
 * of memory, so there is no bound on the range.
 */
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* ---------------------------------------------------------------------- */
/* The billing file */

static bool stat_of(const char *path, struct billing_file *id)
{
	struct stat sb;

	if (stat(path, &sb) != 0)
		return false;
	id->dev = (uint64_t)sb.st_dev;
	id->ino = (uint64_t)sb.st_ino;
	id->size = (uint64_t)sb.st_size;
	id->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 +
		       sb.st_mtim.tv_nsec;
	return true;
}

int query__billing_open(struct billing_file *b, const char *path,
			struct lg_error *err)
{
	struct lg_error e = {0};

	memset(b, 0, sizeof(*b));
	bill_rates_init(&b->rates);
	b->path = path;
	if (path == NULL)
		return 0;
	stat_of(path, b);
	if (ledger_billing_load(path, &b->rates, &e) != 0)
		return lg_error_set(err, LG_EINVAL, "--rates %s: %s", path,
				    e.msg);
	return 0;
}

bool query__billing_check(struct billing_file *b)
{
	struct billing_file now = {0};
	struct bill_rates r;
	struct lg_error e = {0};

	if (b->path == NULL || !stat_of(b->path, &now) ||
	    (now.dev == b->dev && now.ino == b->ino && now.size == b->size &&
	     now.mtime_ns == b->mtime_ns))
		return false;
	b->dev = now.dev;
	b->ino = now.ino;
	b->size = now.size;
	b->mtime_ns = now.mtime_ns;
	if (ledger_billing_load(b->path, &r, &e) != 0) {
		if (!b->failed)
			fprintf(stderr,
				"gpuledger serve: --rates %s: %s; the "
				"previous rates stay in force\n",
				b->path, e.msg);
		b->failed = true;
		return false;
	}
	bill_rates_release(&b->rates);
	b->rates = r;
	b->failed = false;
	fprintf(stderr, "gpuledger serve: --rates %s: reloaded (%zu rates)\n",
		b->path, r.n);
	return true;
}

void query__billing_release(struct billing_file *b)
{
	if (b != NULL)
		bill_rates_release(&b->rates);
}

/* ---------------------------------------------------------------------- */
/* The answer, streamed from a thread of its own (query/stream.c). */

struct export_out {
	struct heavy *h;
	bool json, scope;
	char tenant[DNS1123_SUBDOMAIN_MAX + 1]; /* a tenant token's: "" all */
	char only[DNS1123_SUBDOMAIN_MAX + 1];	/* the tenant= parameter, or "" */
	bool gone; /* the client went away: the export stopped, not failed */
};

/* What the thread needs: copies, since the billing file may be reloaded
 * on the loop while it runs. */
struct export_job {
	struct export_opts eo;
	struct export_out o;
	struct bill_rates rates;
	char currency[32]; /* the currency parameter's bound, and the NUL */
};

static void export_job_free(void *p)
{
	struct export_job *j = p;

	free(j->rates.r);
	free(j);
}

static int export_row(void *ctx, const struct bill_row *row)
{
	struct export_out *o = ctx;
	int rc;

	if ((o->tenant[0] != '\0' &&
	     !query__ns_in_subtree(o->tenant, row->ns)) ||
	    (o->only[0] != '\0' && !query__ns_in_subtree(o->only, row->ns)))
		return 0;
	if (o->json) {
		json_t *v = bill_row_json(row);
		char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);

		LG_ASSERT(text != NULL); /* jansson aborts when out of memory */
		rc = query__heavy_emit(o->h, text, strlen(text));
		free(text);
		json_decref(v);
	} else {
		size_t n = bill_row_csv(row, o->scope, NULL, 0);
		char *line = lg_xmalloc(n + 1);

		bill_row_csv(row, o->scope, line, n + 1);
		rc = query__heavy_emit(o->h, line, n);
		free(line);
	}
	if (rc == 0)
		rc = query__heavy_emit(o->h, "\n", 1);
	o->gone = rc != 0;
	return rc; /* 0 or query__heavy_emit's LG_EIO */
}

/* On the thread: the rows of the snapshot. */
static void export_run(struct heavy *h, void *arg)
{
	struct export_job *j = arg;
	struct lg_error err = {0};
	struct export_range range = {0};
	char warning[QUERY_EXTRA_HEADER_MAX], text[QUERY_EXTRA_HEADER_MAX - 40];
	int rc;

	j->o.h = h;
	if (!j->o.json) {
		size_t n = bill_csv_header(j->o.scope, j->eo.rates,
					   j->eo.focus, NULL, 0);
		char *hd = lg_xmalloc(n + 1);

		bill_csv_header(j->o.scope, j->eo.rates, j->eo.focus, hd,
				n + 1);
		rc = query__heavy_emit(h, hd, n);
		free(hd);
		if (rc != 0 || query__heavy_emit(h, "\n", 1) != 0)
			return;
	}
	rc = ledger_export(query__heavy_ledger(h), &j->eo, export_row, &j->o,
			   &range, &err);
	if (rc < 0 && !j->o.gone) {
		query__heavy_fail(
			h, rc == LG_EINVAL || rc == LG_ENOENT ? 400 : 500, "%s",
			err.msg);
	} else if (ledger_export_warning(&range, text, sizeof(text)) > 0) {
		/* DESIGN 4.1: RFC 7234 warn-code 199, "miscellaneous". */
		snprintf(warning, sizeof(warning),
			 "Warning: 199 gpuledger \"%s\"\r\n", text);
		query__heavy_late_header(h, warning);
	}
}

/* ---------------------------------------------------------------------- */
/* Parameters: the CLI's options (ledger_export_parse_*), fed the decoded
 * query parameters; what is left here is HTTP's own (a value that does
 * not decode, a tenant token's subtree). */

/* A decoded value: the longest any export parameter takes, and one. */
#define EXPORT_VALUE_CAP (DNS1123_SUBDOMAIN_MAX + 2)

/* Storage of the decoded values, one per parameter (the last of a
 * repeated one): they outlive the request r is made from. */
struct export_values {
	char v[EXPORT_OPT_N][EXPORT_VALUE_CAP];
};

/* The query's pairs into p, each decoded into x; 0, or LG_EINVAL with
 * the message. */
static int export_pairs(const struct request *rq, struct export_parse *p,
			struct export_values *x, struct lg_error *err)
{
	size_t pos = 0, nl, vl;
	const char *n, *v;

	while (query__param_next(rq->query, rq->query_len, &pos, &n, &nl, &v,
				 &vl)) {
		char name[64];
		int i = 0;

		snprintf(name, sizeof(name), "%.*s", (int)nl, n);
		while (i < EXPORT_OPT_N &&
		       strcmp(ledger_export_opt_name(&ledger_export_opt_table[i],
						     EXPORT_HTTP),
			      name) != 0)
			i++;
		/* An unknown name: the parser names it, with the known. */
		if (i == EXPORT_OPT_N)
			return ledger_export_parse_set(p, name, "", err);
		if (query__param_decode(v, vl, x->v[i], sizeof(x->v[i])) < 0)
			return lg_error_set(err, LG_EINVAL,
					    "parameter %s is malformed or too "
					    "long",
					    name);
		if (ledger_export_parse_set(p, name, x->v[i], err) != 0)
			return err->code;
	}
	return 0;
}

/* Reads the export's query parameters into r and o; false (and a 400 or
 * 403 sent) when bad. */
static bool export_params(struct query_server *qs, struct request *rq,
			  struct export_request *r, struct export_out *o,
			  struct export_values *x)
{
	struct export_parse p;
	struct lg_error err = {0};

	ledger_export_parse_init(&p, EXPORT_HTTP);
	if (export_pairs(rq, &p, x, &err) != 0 ||
	    ledger_export_parse_finish(&p, &qs->billing.rates, r, &err) != 0) {
		query__reply_error(qs, rq, 400, "export: %s", err.msg);
		return false;
	}
	o->json = r->format != EXPORT_FOCUS_CSV;
	o->scope = r->o.rollup_subtree;
	if (rq->who != NULL && rq->who->role == ROLE_TENANT)
		snprintf(o->tenant, sizeof(o->tenant), "%s", rq->who->ns);
	if (r->tenant != NULL)
		snprintf(o->only, sizeof(o->only), "%s", r->tenant);
	if (o->only[0] != '\0' && o->tenant[0] != '\0' &&
	    !query__ns_in_subtree(o->tenant, o->only)) {
		query__reply_error(
			qs, rq, 403,
			"export: tenant %s is outside the subtree of %s",
			o->only, o->tenant);
		return false;
	}
	return true;
}

void query__handle_export(struct query_server *qs, struct request *rq)
{
	struct export_values x;
	struct export_request er;
	struct export_job *j = lg_xmalloc(sizeof(*j));
	const struct bill_rates *r = &qs->billing.rates;

	memset(j, 0, sizeof(*j));
	if (!export_params(qs, rq, &er, &j->o, &x)) {
		free(j);
		return;
	}
	j->eo = er.o;
	j->rates = *r;
	j->rates.r = lg_xmalloc(r->n * sizeof(*r->r) + 1);
	if (r->n > 0)
		memcpy(j->rates.r, r->r, r->n * sizeof(*r->r));
	j->eo.rates = &j->rates;
	if (j->eo.currency != NULL) {
		snprintf(j->currency, sizeof(j->currency), "%s", er.o.currency);
		j->eo.currency = j->currency;
	}
	query__heavy_start(qs, rq,
			   j->o.json ? "application/x-ndjson" : "text/csv",
			   true, export_run, j, export_job_free);
}
