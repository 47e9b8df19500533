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
	char currency[8];
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
		size_t n = bill_csv_header(j->o.scope, j->eo.rates, NULL, 0);
		char *hd = lg_xmalloc(n + 1);

		bill_csv_header(j->o.scope, j->eo.rates, hd, n + 1);
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
/* Parameters */

struct export_params {
	char from[64], to[64], month[16], step[16], basis[16], fmt[16],
		rollup[16], currency[8], tenant[DNS1123_SUBDOMAIN_MAX + 1];
};

/* The export's parameters (an unknown one is refused, naming it). */
static const char *const export_known[] = {
	"from", "to", "month", "step", "basis", "format", "rollup", "currency",
	"tenant", NULL};

/* One parameter into v (dflt when absent); sets *has; NULL, or what is
 * wrong with it. */
static const char *param(struct request *rq, const char *k, char *v,
			 size_t cap, const char *dflt, bool *has)
{
	long n = query__param(rq->query, rq->query_len, k, v, cap);

	*has = n >= 0;
	if (n == -1)
		snprintf(v, cap, "%s", dflt);
	return n == -2 ? "is malformed or too long" : NULL;
}

/* The range: from[&to], or month (in the billing file's offset); sets
 * *bad to the parameter that is wrong and returns why, or NULL. */
static const char *export_range_params(const struct export_params *p,
				       bool has_from, bool has_to,
				       bool has_month, int32_t offset_s,
				       struct export_opts *eo, const char **bad)
{
	int64_t start_ms, end_ms;

	if (has_month) {
		*bad = has_from ? "from" : has_to ? "to" : "month";
		if (has_from || has_to)
			return "cannot be given with month";
		/* On success the bounds fit int64 ns (bill_month_parse). */
		if (bill_month_parse(p->month, offset_s, &start_ms, &end_ms) !=
		    0)
			return bill_month_why(p->month, offset_s);
		eo->from_ns = start_ms * 1000000;
		eo->to_ns = end_ms * 1000000;
		return NULL;
	}
	*bad = "from";
	if (!has_from)
		return "is required (or month=YYYY-MM)";
	if (time_parse_user_ns(p->from, &eo->from_ns) != 0)
		return time_user_why(p->from);
	*bad = "to";
	if (has_to && time_parse_user_ns(p->to, &eo->to_ns) != 0)
		return time_user_why(p->to);
	if (eo->to_ns <= eo->from_ns)
		return "must be after from";
	return NULL;
}

/* The step, basis, format and rollup; as export_range_params. */
static const char *export_kind_params(const struct export_params *p,
				      struct export_opts *eo, const char **bad)
{
	if (bill_step_parse(p->step, &eo->step) != 0)
		return *bad = "step", "must be hour or day";
	if (bill_basis_parse(p->basis, &eo->basis) != 0)
		return *bad = "basis", "must be reserved or allocated";
	if (strcmp(p->fmt, "focus-csv") != 0 && strcmp(p->fmt, "ndjson") != 0 &&
	    strcmp(p->fmt, "json") != 0)
		return *bad = "format", "must be focus-csv or ndjson (json)";
	if (p->rollup[0] != '\0' && strcmp(p->rollup, "subtree") != 0)
		return *bad = "rollup", "must be subtree";
	return NULL;
}

/* Reads the export's query parameters; false (and a 400 naming the
 * parameter that is wrong sent) when bad. */
static bool export_params(struct query_server *qs, struct request *rq,
			  struct export_opts *eo, struct export_out *o,
			  struct export_params *p)
{
	bool has_from, has_to, has_month, has_cur, has_tenant, unused;
	const char *bad = NULL, *why = NULL;
	char unknown[64];

	memset(eo, 0, sizeof(*eo));
	eo->to_ns = INT64_MAX;
	eo->rates = &qs->billing.rates;
	if (query__param_unknown(rq->query, rq->query_len, export_known,
				 unknown, sizeof(unknown))) {
		query__reply_error(
			qs, rq, 400,
			"export: unknown parameter \"%s\" (known: from, "
			"to, month, step, basis, format, rollup, currency, "
			"tenant)",
			unknown);
		return false;
	}
	if ((why = param(rq, bad = "from", p->from, sizeof(p->from), "",
			 &has_from)) ||
	    (why = param(rq, bad = "to", p->to, sizeof(p->to), "", &has_to)) ||
	    (why = param(rq, bad = "month", p->month, sizeof(p->month), "",
			 &has_month)) ||
	    (why = param(rq, bad = "currency", p->currency,
			 sizeof(p->currency), "", &has_cur)) ||
	    (why = param(rq, bad = "step", p->step, sizeof(p->step), "day",
			 &unused)) ||
	    (why = param(rq, bad = "basis", p->basis, sizeof(p->basis),
			 "reserved", &unused)) ||
	    (why = param(rq, bad = "format", p->fmt, sizeof(p->fmt),
			 "focus-csv", &unused)) ||
	    (why = param(rq, bad = "rollup", p->rollup, sizeof(p->rollup), "",
			 &unused)) ||
	    (why = param(rq, bad = "tenant", p->tenant, sizeof(p->tenant), "",
			 &has_tenant))) {
		/* bad names the parameter that is malformed. */
	} else if (has_tenant &&
		   (!dns1123_label(p->tenant, strlen(p->tenant)) ||
		    !ns_is_tenant(p->tenant))) {
		bad = "tenant";
		why = "is not a tenant namespace";
	} else if ((why = export_range_params(p, has_from, has_to, has_month,
					      eo->rates->offset_s, eo,
					      &bad)) == NULL) {
		why = export_kind_params(p, eo, &bad);
	}
	if (why != NULL) {
		query__reply_error(qs, rq, 400, "export: parameter %s %s", bad,
				   why);
		return false;
	}
	eo->currency = has_cur ? p->currency : NULL;
	eo->rollup_subtree = p->rollup[0] != '\0';
	o->json = strcmp(p->fmt, "focus-csv") != 0;
	o->scope = eo->rollup_subtree;
	if (rq->who != NULL && rq->who->role == ROLE_TENANT)
		snprintf(o->tenant, sizeof(o->tenant), "%s", rq->who->ns);
	if (has_tenant)
		snprintf(o->only, sizeof(o->only), "%s", p->tenant);
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
	struct export_params p;
	struct export_job *j = lg_xmalloc(sizeof(*j));
	const struct bill_rates *r = &qs->billing.rates;

	memset(j, 0, sizeof(*j));
	if (!export_params(qs, rq, &j->eo, &j->o, &p)) {
		free(j);
		return;
	}
	j->rates = *r;
	j->rates.r = lg_xmalloc(r->n * sizeof(*r->r) + 1);
	if (r->n > 0)
		memcpy(j->rates.r, r->r, r->n * sizeof(*r->r));
	j->eo.rates = &j->rates;
	if (j->eo.currency != NULL) {
		snprintf(j->currency, sizeof(j->currency), "%s", p.currency);
		j->eo.currency = j->currency;
	}
	query__heavy_start(qs, rq,
			   j->o.json ? "application/x-ndjson" : "text/csv",
			   true, export_run, j, export_job_free);
}
