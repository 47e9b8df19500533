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
 * download everyone's rows. The body is bounded: a
 * range too large for one answer is 413, to be split by the client.
 */
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXPORT_MAX_BYTES (64u << 20)

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

int billing_open(struct billing_file *b, const char *path,
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

bool billing_check(struct billing_file *b)
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

void billing_release(struct billing_file *b)
{
	if (b != NULL)
		bill_rates_release(&b->rates);
}

/* ---------------------------------------------------------------------- */
/* The answer */

struct export_out {
	char *buf;
	size_t len, cap;
	bool json, scope, over;
	const char *tenant; /* a tenant token's namespace, else NULL */
	const char *only;   /* the tenant= parameter, else NULL */
};

static bool out_put(struct export_out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > EXPORT_MAX_BYTES) {
		o->over = true;
		return false;
	}
	if (o->len + n + 1 > o->cap) {
		o->cap = o->cap ? o->cap * 2 : 1 << 16;
		while (o->cap < o->len + n + 1)
			o->cap *= 2;
		o->buf = q_xrealloc(o->buf, o->cap);
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len++] = '\n';
	return true;
}

static int export_row(void *ctx, const struct bill_row *row)
{
	struct export_out *o = ctx;
	bool ok;

	if ((o->tenant != NULL && !ns_in_subtree(o->tenant, row->ns)) ||
	    (o->only != NULL && !ns_in_subtree(o->only, row->ns)))
		return 0;
	if (o->json) {
		json_t *v = bill_row_json(row);
		char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);

		ok = text != NULL && out_put(o, text, strlen(text));
		free(text);
		json_decref(v);
	} else {
		size_t n = bill_row_csv(row, o->scope, NULL, 0);
		char *line = q_xmalloc(n + 1);

		bill_row_csv(row, o->scope, line, n + 1);
		ok = out_put(o, line, n);
		free(line);
	}
	return ok ? 0 : 1;
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
	long n = query_param(rq->query, rq->query_len, k, v, cap);

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
		if (bill_month_parse(p->month, offset_s, &start_ms, &end_ms) !=
			    0 ||
		    start_ms < 0)
			return "is not a month YYYY-MM";
		eo->from_ns = start_ms * 1000000;
		eo->to_ns = end_ms * 1000000;
		return NULL;
	}
	*bad = "from";
	if (!has_from)
		return "is required (or month=YYYY-MM)";
	if (time_parse_user_ns(p->from, &eo->from_ns) != 0)
		return "is not an RFC 3339 time or a date (YYYY-MM-DD)";
	*bad = "to";
	if (has_to && time_parse_user_ns(p->to, &eo->to_ns) != 0)
		return "is not an RFC 3339 time or a date (YYYY-MM-DD)";
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
	if (query_param_unknown(rq->query, rq->query_len, export_known, unknown,
				sizeof(unknown))) {
		reply_error(qs, rq, 400,
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
		reply_error(qs, rq, 400, "export: parameter %s %s", bad, why);
		return false;
	}
	eo->currency = has_cur ? p->currency : NULL;
	eo->rollup_subtree = p->rollup[0] != '\0';
	o->json = strcmp(p->fmt, "focus-csv") != 0;
	o->scope = eo->rollup_subtree;
	o->tenant = rq->who != NULL && rq->who->role == ROLE_TENANT
			    ? rq->who->ns
			    : NULL;
	o->only = has_tenant ? p->tenant : NULL;
	if (o->only != NULL && o->tenant != NULL &&
	    !ns_in_subtree(o->tenant, o->only)) {
		reply_error(qs, rq, 403,
			    "export: tenant %s is outside the subtree of %s",
			    o->only, o->tenant);
		return false;
	}
	return true;
}

void handle_export(struct query_server *qs, struct request *rq)
{
	struct export_params p;
	struct export_opts eo;
	struct export_out o = {0};
	struct export_range range;
	struct lg_error err = {0};
	char warning[QUERY_EXTRA_HEADER_MAX], text[QUERY_EXTRA_HEADER_MAX - 40];
	int rc;

	if (!export_params(qs, rq, &eo, &o, &p))
		return;
	if (!o.json) {
		size_t n = bill_csv_header(o.scope, eo.rates, NULL, 0);
		char *h = q_xmalloc(n + 1);

		bill_csv_header(o.scope, eo.rates, h, n + 1);
		out_put(&o, h, n);
		free(h);
	}
	rc = ledger_export(qs->lg, &eo, export_row, &o, &range, &err);
	if (rc == 1 && o.over) {
		free(o.buf);
		reply_error(qs, rq, 413,
			    "the export is larger than %u bytes: ask for a "
			    "shorter range",
			    EXPORT_MAX_BYTES);
	} else if (rc != 0) {
		free(o.buf);
		reply_error(qs, rq,
			    rc == LG_EINVAL || rc == LG_ENOENT ? 400 : 500,
			    "%s", err.msg);
	} else {
		/* DESIGN 4.1: RFC 7234 warn-code 199, "miscellaneous". */
		bool warn = ledger_export_warning(&range, text, sizeof(text)) > 0;

		if (o.buf == NULL)
			o.buf = q_xstrdup("");
		snprintf(warning, sizeof(warning),
			 "Warning: 199 gpuledger \"%s\"\r\n", text);
		reply_raw_headers(qs, rq, 200,
				  o.json ? "application/x-ndjson" : "text/csv",
				  o.buf, o.len, warn ? warning : NULL);
	}
}
