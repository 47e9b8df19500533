/*
 * gpuledger export: billing rows (DESIGN 8) as FOCUS-style CSV, NDJSON or an
 * OpenCost-shaped daily CSV. The rows come from ledger_export, which the
 * query process's GET /v1/export calls too, so that both give the same
 * bytes for the same range.
 */
#include "tools/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char export_usage[] =
	"usage: gpuledger export --db DIR --from TIME [--to TIME]\n"
	"         [--step hour|day] [--basis reserved|allocated]\n"
	"         [--format focus-csv|json|opencost-csv] [--rollup subtree]\n"
	"         [--rates FILE] [--currency CUR]\n"
	"  GPU usage per namespace, class and period, integrated exactly in\n"
	"  device-milliseconds from the event times.\n"
	"  --db DIR        the ledger directory\n"
	"  --from TIME     start of the range (RFC 3339; truncated to the ms)\n"
	"  --to TIME       end of the range, excluded (default: the horizon).\n"
	"                  Billing stops at min(--to, horizon), the time of "
	"the\n"
	"                  last event other than NOTE and VERDICT: the ledger\n"
	"                  never bills time it has not seen.\n"
	"  --step hour|day periods are UTC hours or days clipped to the range\n"
	"                  (default hour; opencost-csv is always daily)\n"
	"  --basis B       reserved (what budgets cap, default) or allocated\n"
	"                  (bound to devices)\n"
	"  --rollup subtree  also a row per tenant and class summing its\n"
	"                  subtree (the tenant and its descendant tenants), "
	"and\n"
	"                  a last column x_Scope: namespace or subtree. Do "
	"not\n"
	"                  add the two kinds of row together.\n"
	"  --rates FILE    prices per GPU-hour by class and currency:\n"
	"                  {\"rates\": [{\"class\": \"h100\", \"currency\": "
	"\"USD\",\n"
	"                    \"listUnitPrice\": \"3.20\", \"billedUnitPrice\": "
	"\"2.50\"}]}\n"
	"                  prices are decimal strings (at most 9 decimals) or\n"
	"                  integers; billedUnitPrice defaults to the list "
	"price.\n"
	"                  Without --rates every cost is 0. A class with no "
	"rate\n"
	"                  costs 0 and is named once on stderr.\n"
	"  --currency CUR  BillingCurrency: with --rates one of its "
	"currencies\n"
	"                  (required when it has several); default USD.\n"
	"  Cost = device-ms x price / 3,600,000, computed exactly and rounded\n"
	"  half up to 9 decimals, once per row: the costs of hourly rows may\n"
	"  differ from the daily row's in the 9th decimal; device-ms never "
	"do.\n"
	"\n"
	"  focus-csv columns (FOCUS names; x_ are ours): "
	"BillingPeriodStart/End\n"
	"  = [--from, min(--to, horizon)); ChargePeriodStart/End = the row's\n"
	"  period; ChargeCategory Usage; SubAccountId and SubAccountName = "
	"the\n"
	"  namespace (the tenant for a subtree row); ResourceType GPU;\n"
	"  ConsumedQuantity = PricingQuantity = device-ms / 3,600,000 "
	"truncated\n"
	"  to 9 decimals, ConsumedUnit = PricingUnit = GPU-Hours; ListCost,\n"
	"  BilledCost, BillingCurrency; ServiceName gpuledger; x_TenantPath =\n"
	"  tenant-root/.../ns (a non-tenant namespace: its name); "
	"x_DeviceClass;\n"
	"  x_Basis; x_LedgerSeqStart/End = the seqs whose states the period's\n"
	"  start and end were read from (`replay --at SEQ` shows them);\n"
	"  x_ChainHead = the hash chain head after x_LedgerSeqEnd;\n"
	"  x_DeviceMilliseconds = the exact usage. Times are RFC 3339 UTC.\n"
	"  Rows with zero usage are left out; every namespace is billed, "
	"tenant\n"
	"  or not. Rows come by period, then namespace and class, then (with\n"
	"  --rollup) tenant subtrees.\n"
	"  json: one object per line with the same names (decimals and times\n"
	"  as strings, seqs and device-ms as integers, x_Scope always).\n"
	"  opencost-csv: Date,Namespace,GPUs,GPUCost,TotalCost, the GPU "
	"columns\n"
	"  of OpenCost's allocation CSV export, one line per UTC day and\n"
	"  namespace over every class: GPUs = the average number of devices\n"
	"  over the part of the day billed (9 decimals, truncated); GPUCost =\n"
	"  TotalCost = the sum of the day's BilledCost.\n";

enum fmt {
	FMT_FOCUS,
	FMT_JSON,
	FMT_OPENCOST
};

static const char *const fmt_names[] = {
	[FMT_FOCUS] = "focus-csv",
	[FMT_JSON] = "json",
	[FMT_OPENCOST] = "opencost-csv",
};

#define N_FMTS	   (sizeof(fmt_names) / sizeof(fmt_names[0]))
#define WARNED_MAX 64

struct export_args {
	const char *db, *from, *to, *step, *basis, *format, *rollup, *rates,
		*currency;
};

struct out {
	enum fmt fmt;
	bool scope, have_rates, header_done;
	struct bill_opencost oc;
	size_t n_warned;
	char warned[WARNED_MAX][DNS1123_LABEL_MAX + 1];
};

/* ---------------------------------------------------------------------- */
/* Output */

static void warn_unpriced(struct out *w, const struct bill_row *row)
{
	for (size_t i = 0; i < w->n_warned; i++)
		if (strcmp(w->warned[i], row->cls) == 0)
			return;
	if (w->n_warned == WARNED_MAX)
		return;
	snprintf(w->warned[w->n_warned++], sizeof(w->warned[0]), "%s",
		 row->cls);
	tool_error("export: warning: no %s rate for class %s: its cost is 0",
		   row->currency, row->cls);
}

static int put_csv(const struct out *w, const struct bill_row *row)
{
	char buf[BILL_LINE_MAX * 2], *line = buf;
	size_t n = bill_row_csv(row, w->scope, buf, sizeof(buf));
	int werr;

	/* A deep tree of long names can outgrow the buffer: size it. */
	if (n >= sizeof(buf)) {
		line = malloc(n + 1);
		if (line == NULL)
			abort();
		bill_row_csv(row, w->scope, line, n + 1);
	}
	werr = tool_puts(line);
	if (line != buf)
		free(line);
	return werr;
}

static int put_json(const struct bill_row *row)
{
	json_t *o = bill_row_json(row);
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int werr = tool_puts(text);

	free(text);
	json_decref(o);
	return werr;
}

static int on_row(void *ctx, const struct bill_row *row)
{
	struct out *w = ctx;
	char line[BILL_LINE_MAX];
	struct lg_error err = {0};
	int rc;

	if (w->have_rates && !row->priced)
		warn_unpriced(w, row);
	switch (w->fmt) {
	case FMT_FOCUS:
		return put_csv(w, row);
	case FMT_JSON:
		return put_json(row);
	case FMT_OPENCOST:
		rc = bill_opencost_add(&w->oc, row, line, &err);
		if (rc < 0) {
			tool_error("export: %s", err.msg);
			return EINVAL;
		}
		return rc == 1 ? tool_puts(line) : 0;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Options */

static int parse_time(const char *name, const char *s, int64_t *t_ns)
{
	if (time_parse_ns(s, t_ns) == 0)
		return 0;
	tool_error("export: %s \"%s\" is not an RFC 3339 time", name, s);
	return EXIT_USAGE;
}

static int parse_fmt(const char *s, enum fmt *f)
{
	for (size_t i = 0; i < N_FMTS; i++)
		if (strcmp(fmt_names[i], s) == 0) {
			*f = (enum fmt)i;
			return 0;
		}
	tool_error("export: --format \"%s\": expected focus-csv, json or "
		   "opencost-csv",
		   s);
	return EXIT_USAGE;
}

static int parse_names(const struct export_args *a, struct export_opts *o,
		       struct out *w)
{
	if (a->step && bill_step_parse(a->step, &o->step) != 0) {
		tool_error("export: --step \"%s\": expected hour or day",
			   a->step);
		return EXIT_USAGE;
	}
	if (a->basis && bill_basis_parse(a->basis, &o->basis) != 0) {
		tool_error("export: --basis \"%s\": expected reserved or "
			   "allocated",
			   a->basis);
		return EXIT_USAGE;
	}
	if (a->rollup && strcmp(a->rollup, "subtree") != 0) {
		tool_error("export: --rollup \"%s\": expected subtree",
			   a->rollup);
		return EXIT_USAGE;
	}
	o->rollup_subtree = w->scope = a->rollup != NULL;
	if (w->fmt != FMT_OPENCOST)
		return 0;
	/* OpenCost's CSV is a daily per-namespace view. */
	if (o->step != BILL_STEP_DAY && a->step != NULL) {
		tool_error("export: opencost-csv is daily: --step hour does "
			   "not apply");
		return EXIT_USAGE;
	}
	if (o->rollup_subtree) {
		tool_error("export: opencost-csv has no subtree rows");
		return EXIT_USAGE;
	}
	o->step = BILL_STEP_DAY;
	return 0;
}

static int parse_opts(const struct export_args *a, struct export_opts *o,
		      struct out *w)
{
	int status;

	if (a->from == NULL) {
		tool_error("export: --from TIME is required");
		return EXIT_USAGE;
	}
	o->to_ns = INT64_MAX;
	o->currency = a->currency;
	if ((status = parse_time("--from", a->from, &o->from_ns)) != 0 ||
	    (a->to && (status = parse_time("--to", a->to, &o->to_ns)) != 0) ||
	    (a->format && (status = parse_fmt(a->format, &w->fmt)) != 0) ||
	    (status = parse_names(a, o, w)) != 0)
		return status;
	if (o->to_ns <= o->from_ns) {
		tool_error("export: --to must be after --from");
		return EXIT_USAGE;
	}
	return 0;
}

static int load_rates(const char *file, struct bill_rates *r)
{
	struct lg_error err = {0};
	json_error_t je;
	json_t *doc = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
	int rc;

	if (doc == NULL) {
		tool_error("export: --rates %s: line %d: %s", file, je.line,
			   je.text);
		return EXIT_USAGE;
	}
	rc = bill_rates_parse(r, doc, &err);
	json_decref(doc);
	if (rc != 0) {
		tool_error("export: --rates %s: %s", file, err.msg);
		return EXIT_USAGE;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */

/* The header goes out with the first row, or after an export without
 * rows: bad options are then an error message alone, never a header
 * followed by one. */
static int put_header(struct out *w)
{
	if (w->header_done || w->fmt == FMT_JSON)
		return 0;
	w->header_done = true;
	return tool_puts(w->fmt == FMT_OPENCOST ? bill_opencost_header()
						: bill_csv_header(w->scope));
}

static int on_row_first(void *ctx, const struct bill_row *row)
{
	int werr = put_header(ctx);

	return werr ? werr : on_row(ctx, row);
}

static int run_export(ledger_t *lg, const struct export_opts *o, struct out *w)
{
	struct lg_error err = {0};
	struct export_range range;
	char line[BILL_LINE_MAX];
	int rc = ledger_export(lg, o, on_row_first, w, &range, &err);

	if (rc < 0) {
		tool_error("export: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	/* DESIGN 4.1: event times the range rests on were clamped. */
	if (ledger_export_warning(&range, line, sizeof(line)) > 0)
		fprintf(stderr, "gpuledger: export: warning: %s\n", line);
	/* rc > 0 is a write error (errno) that stopped the export. */
	if (rc == 0)
		rc = put_header(w);
	if (rc == 0 && w->fmt == FMT_OPENCOST &&
	    bill_opencost_flush(&w->oc, line) == 1)
		rc = tool_puts(line);
	if (rc == EINVAL) /* an opencost row was refused, already said */
		return EXIT_USAGE;
	return tool_flush("export", rc);
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = {0};
	const struct opt opts[] = {
		{"--db", OPT_STR, &a.db},
		{"--from", OPT_STR, &a.from},
		{"--to", OPT_STR, &a.to},
		{"--step", OPT_STR, &a.step},
		{"--basis", OPT_STR, &a.basis},
		{"--format", OPT_STR, &a.format},
		{"--rollup", OPT_STR, &a.rollup},
		{"--rates", OPT_STR, &a.rates},
		{"--currency", OPT_STR, &a.currency},
	};
	const struct cmd_spec spec = {"export", export_usage, opts,
				      sizeof(opts) / sizeof(opts[0])};
	struct export_opts o = {0};
	struct bill_rates rates;
	struct out w = {0};
	ledger_t *lg = NULL;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	bill_rates_init(&rates);
	bill_opencost_init(&w.oc);
	if ((status = parse_opts(&a, &o, &w)) != 0 ||
	    (a.rates && (status = load_rates(a.rates, &rates)) != 0) ||
	    (status = tool_open_ledger("export", a.db, NULL, &lg)) != 0)
		goto out;
	w.have_rates = a.rates != NULL;
	o.rates = a.rates ? &rates : NULL;
	status = run_export(lg, &o, &w);
out:
	ledger_close(lg);
	bill_rates_release(&rates);
	return status;
}
