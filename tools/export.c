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
	"usage: gpuledger export --db DIR (--from TIME [--to TIME] | --month "
	"YYYY-MM)\n"
	"         [--step hour|day] [--basis reserved|allocated]\n"
	"         [--format focus-csv|ndjson|opencost-csv] [--rollup subtree]\n"
	"         [--rates FILE] [--currency CUR]\n"
	"  GPU usage per namespace, class and period, integrated exactly in\n"
	"  device-milliseconds from the event times, as FOCUS 1.2 rows.\n";

/* After the options: what the rows hold, in each --format. */
static const char export_after[] =
	"  Cost = price x PricingQuantity as printed (device-ms / 3,600,000\n"
	"  truncated to 9 decimals), computed exactly and rounded half up to\n"
	"  9 decimals, once per row (FOCUS: ListCost = ListUnitPrice x\n"
	"  PricingQuantity): the costs of hourly rows may differ from the\n"
	"  daily row's in the 9th decimal; device-ms never do.\n"
	"\n"
	"  focus-csv: the FOCUS 1.2 columns (docs/billing.md lists each and\n"
	"  its value), then ours: x_BillingPeriodStatus (open while the\n"
	"  horizon is before BillingPeriodEnd, then closed), x_TenantPath =\n"
	"  tenant-root/.../ns (a non-tenant namespace: its name), "
	"x_DeviceClass,\n"
	"  x_Basis, x_LedgerSeqStart/End = the seqs whose states the period's\n"
	"  start and end were read from (`replay --at SEQ` shows them),\n"
	"  x_ChainHead = the hash chain head after x_LedgerSeqEnd,\n"
	"  x_DeviceMilliseconds = the exact usage. BillingPeriodStart/End =\n"
	"  the calendar month of the row; ChargePeriodStart/End = the row's\n"
	"  period; ConsumedQuantity = PricingQuantity = device-ms / 3,600,000\n"
	"  truncated to 9 decimals, in GPU-Hours. Times are UTC, whole "
	"seconds.\n"
	"  Rows with zero usage are left out; every namespace is billed, "
	"tenant\n"
	"  or not. Rows come by period, then namespace and class, then (with\n"
	"  --rollup) tenant subtrees.\n"
	"  ndjson (alias json): one object per line with the same names\n"
	"  (decimals and times as strings, nulls as null, seqs and device-ms\n"
	"  as integers, x_Scope always).\n"
	"  opencost-csv: Date,Namespace,GPUs,GPUCost,TotalCost, the GPU "
	"columns\n"
	"  of OpenCost's allocation CSV export, one line per day and\n"
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
	[FMT_JSON] = "ndjson",
	[FMT_OPENCOST] = "opencost-csv",
};

#define N_FMTS (sizeof(fmt_names) / sizeof(fmt_names[0]))

struct export_args {
	const char *db, *from, *to, *month, *step, *basis, *format, *rollup,
		*rates, *currency;
};

struct out {
	enum fmt fmt;
	bool scope, header_done;
	const struct bill_rates *cfg;
	struct bill_opencost oc;
	int werr;     /* errno of the write that stopped the export, or 0 */
	bool refused; /* an opencost row was refused (and said so) */
};

/* ---------------------------------------------------------------------- */
/* Output */

static int put_csv(const struct out *w, const struct bill_row *row)
{
	char buf[BILL_LINE_MAX * 2], *line = buf;
	size_t n = bill_row_csv(row, w->scope, buf, sizeof(buf));
	int werr;

	/* A deep tree of long names can outgrow the buffer: size it. */
	if (n >= sizeof(buf)) {
		line = lg_xmalloc(n + 1);
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

/* The rows' output as ledger_export_fn wants it, an LG_* code: a failed
 * write (an errno) is LG_EIO, the errno kept for tool_flush to report. */
static int written(struct out *w, int werr)
{
	if (werr == 0)
		return 0;
	w->werr = werr;
	return LG_EIO;
}

static int on_row(void *ctx, const struct bill_row *row)
{
	struct out *w = ctx;
	char line[BILL_LINE_MAX];
	struct lg_error err = {0};
	int rc;

	switch (w->fmt) {
	case FMT_FOCUS:
		return written(w, put_csv(w, row));
	case FMT_JSON:
		return written(w, put_json(row));
	case FMT_OPENCOST:
		rc = bill_opencost_add(&w->oc, row, line, &err);
		if (rc < 0) {
			tool_error("export: %s", err.msg);
			w->refused = true;
			return rc;
		}
		return rc == 1 ? written(w, tool_puts(line)) : 0;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Options */

static int parse_time(const char *name, const char *s, int64_t *t_ns)
{
	if (time_parse_user_ns(s, t_ns) == 0)
		return 0;
	tool_error("export: %s \"%s\" %s", name, s, time_user_why(s));
	return EXIT_USAGE;
}

/* --month in the billing file's offset (o->rates is loaded first). */
static int parse_month(const char *s, struct export_opts *o)
{
	int64_t start_ms, end_ms;

	if (s == NULL)
		return 0;
	/* On success the bounds fit int64 ns (bill_month_parse). */
	if (bill_month_parse(s, o->rates->offset_s, &start_ms, &end_ms) != 0) {
		tool_error("export: --month \"%s\" %s", s,
			   bill_month_why(s, o->rates->offset_s));
		return EXIT_USAGE;
	}
	o->from_ns = start_ms * 1000000;
	o->to_ns = end_ms * 1000000;
	return 0;
}

static int parse_fmt(const char *s, enum fmt *f)
{
	for (size_t i = 0; i < N_FMTS; i++)
		if (strcmp(fmt_names[i], s) == 0) {
			*f = (enum fmt)i;
			return 0;
		}
	/* "json" was the name of NDJSON output: kept as its alias. */
	if (strcmp(s, "json") == 0) {
		*f = FMT_JSON;
		return 0;
	}
	tool_error("export: --format \"%s\": expected focus-csv, ndjson (or "
		   "json) or opencost-csv",
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

	if (a->month != NULL && (a->from != NULL || a->to != NULL)) {
		tool_error("export: --month replaces --from and --to");
		return EXIT_USAGE;
	}
	if (a->from == NULL && a->month == NULL) {
		tool_error("export: --from TIME (or --month YYYY-MM) is "
			   "required");
		return EXIT_USAGE;
	}
	o->to_ns = INT64_MAX;
	o->currency = a->currency;
	if ((status = parse_month(a->month, o)) != 0 ||
	    (a->from &&
	     (status = parse_time("--from", a->from, &o->from_ns)) != 0) ||
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

	if (ledger_billing_load(file, r, &err) == 0)
		return 0;
	tool_error("export: --rates %s: %s", file, err.msg);
	return EXIT_USAGE;
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
	if (w->fmt == FMT_FOCUS) {
		char h[2048];

		bill_csv_header(w->scope, w->cfg, h, sizeof(h));
		return tool_puts(h);
	}
	return tool_puts(bill_opencost_header());
}

static int on_row_first(void *ctx, const struct bill_row *row)
{
	int werr = put_header(ctx);

	return werr ? written(ctx, werr) : on_row(ctx, row);
}

static int run_export(ledger_t *lg, const struct export_opts *o, struct out *w)
{
	struct lg_error err = {0};
	struct export_range range;
	char line[BILL_LINE_MAX];
	int rc = ledger_export(lg, o, on_row_first, w, &range, &err), werr;

	if (w->refused) /* an opencost row was refused, already said */
		return EXIT_USAGE;
	if (rc < 0 && w->werr == 0) {
		tool_error("export: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	/* DESIGN 4.1: event times the range rests on were clamped. */
	if (ledger_export_warning(&range, line, sizeof(line)) > 0)
		fprintf(stderr, "gpuledger: export: warning: %s\n", line);
	/* From here on only errno values: the output's, for tool_flush. */
	werr = w->werr;
	if (werr == 0)
		werr = put_header(w);
	if (werr == 0 && w->fmt == FMT_OPENCOST &&
	    bill_opencost_flush(&w->oc, line) == 1)
		werr = tool_puts(line);
	return tool_flush("export", werr);
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = {0};
	const struct opt opts[] = {
		OPT_DB(&a.db),
		{"--from", OPT_STR, &a.from, "TIME",
		 "start of the range (RFC 3339, or a date YYYY-MM-DD: its "
		 "midnight UTC; floored to the second)"},
		{"--to", OPT_STR, &a.to, "TIME",
		 "end of the range, excluded (default: the horizon). Billing "
		 "stops at min(--to, horizon) floored to the second; the "
		 "horizon is the time of the last event other than NOTE and "
		 "VERDICT: the ledger never bills time it has not seen, and "
		 "the milliseconds after the cut are billed by the export that "
		 "starts there."},
		{"--month", OPT_STR, &a.month, "YYYY-MM",
		 "the calendar month (in the billing file's "
		 "billingPeriodOffset, default UTC), instead of --from/--to"},
		{"--step", OPT_STR, &a.step, "hour|day",
		 "periods are hours or days of the billing time (default hour; "
		 "opencost-csv is always daily)"},
		{"--basis", OPT_STR, &a.basis, "reserved|allocated",
		 "reserved (what budgets cap, default) or allocated (bound to "
		 "devices)"},
		{"--format", OPT_STR, &a.format, "focus-csv|ndjson|opencost-csv",
		 "focus-csv (default), ndjson (alias json) or opencost-csv; "
		 "each is described below"},
		{"--rollup", OPT_STR, &a.rollup, "subtree",
		 "also a row per tenant and class summing its subtree (the "
		 "tenant and its descendant tenants), and a last column "
		 "x_Scope: namespace or subtree. Do not add the two kinds of "
		 "row together."},
		{"--rates", OPT_STR, &a.rates, "FILE",
		 "the billing file: prices per GPU-hour by class and currency, "
		 "and the names the rows carry:\n"
		 "{\"rates\": [{\"class\": \"h100\", \"currency\": \"USD\",\n"
		 "  \"listUnitPrice\": \"3.20\", \"billedUnitPrice\": "
		 "\"2.50\"}],\n"
		 " \"billingAccountId\", \"billingAccountName\",\n"
		 " \"providerName\", \"publisherName\",\n"
		 " \"invoiceIssuerName\", \"serviceName\", \"regionId\",\n"
		 " \"regionName\", \"billingPeriodOffset\": \"+02:00\"}\n"
		 "every member optional. Prices are decimal strings (at most 9 "
		 "decimals) or integers; billedUnitPrice (ContractedUnitPrice) "
		 "defaults to the list price. With \"rates\", every class the "
		 "ledger knows needs a rate in the billing currency (a free "
		 "class: \"0\"); without, every price is an explicit 0."},
		{"--currency", OPT_STR, &a.currency, "CUR",
		 "BillingCurrency: with rates one of their currencies "
		 "(required when they have several); default USD."},
	};
	const struct cmd_spec spec = {"export", export_usage, opts,
				      sizeof(opts) / sizeof(opts[0]),
				      export_after};
	struct export_opts o = {0};
	struct bill_rates rates;
	struct out w = {0};
	ledger_t *lg = NULL;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	bill_rates_init(&rates);
	bill_opencost_init(&w.oc);
	o.rates = w.cfg = &rates;
	if ((a.rates && (status = load_rates(a.rates, &rates)) != 0) ||
	    (status = parse_opts(&a, &o, &w)) != 0 ||
	    (status = tool_open_ledger("export", a.db, NULL, &lg)) != 0)
		goto out;
	status = run_export(lg, &o, &w);
out:
	ledger_close(lg);
	bill_rates_release(&rates);
	return status;
}
