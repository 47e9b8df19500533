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
	"         [--rates FILE] [--currency CUR] [--focus-version 1.2|1.3]\n"
	"  GPU usage per namespace, class and period, integrated exactly in\n"
	"  device-milliseconds from the event times, as FOCUS 1.3 rows\n"
	"  (--focus-version 1.2: the 1.2 rows, byte for byte as before).\n";

/* After the options: what the rows hold, in each --format. */
static const char export_after[] =
	"  Cost = price x PricingQuantity as printed (device-ms / 3,600,000\n"
	"  truncated to 9 decimals), computed exactly and rounded half up to\n"
	"  9 decimals, once per row (FOCUS: ListCost = ListUnitPrice x\n"
	"  PricingQuantity): the costs of hourly rows may differ from the\n"
	"  daily row's in the 9th decimal; device-ms never do.\n"
	"\n"
	"  focus-csv: the FOCUS columns (docs/billing.md lists each and\n"
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

struct out {
	enum export_format fmt;
	enum bill_focus focus;
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
	case EXPORT_FOCUS_CSV:
		return written(w, put_csv(w, row));
	case EXPORT_NDJSON:
		return written(w, put_json(row));
	case EXPORT_OPENCOST_CSV:
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
	if (w->header_done || w->fmt == EXPORT_NDJSON)
		return 0;
	w->header_done = true;
	if (w->fmt == EXPORT_FOCUS_CSV) {
		char h[2048];

		bill_csv_header(w->scope, w->cfg, w->focus, h, sizeof(h));
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
	if (werr == 0 && w->fmt == EXPORT_OPENCOST_CSV &&
	    bill_opencost_flush(&w->oc, line) == 1)
		werr = tool_puts(line);
	return tool_flush("export", werr);
}

/* The pairs opts_parse found, into the export's parser (ledger.h), then
 * the billing file the rates option names, then the options parsed. */
static int export_options(const char *const *val, struct bill_rates *rates,
			  struct export_request *r)
{
	struct export_parse p;
	struct lg_error err = {0};
	const char *file;
	int status;

	ledger_export_parse_init(&p, EXPORT_CLI);
	for (size_t i = 0; i < EXPORT_OPT_N; i++)
		if (val[i] != NULL &&
		    ledger_export_parse_set(&p, ledger_export_opt_table[i].name,
					    val[i], &err) != 0)
			goto refused;
	file = ledger_export_parse_value(&p, EXPORT_OPT_RATES);
	if (file != NULL && (status = load_rates(file, rates)) != 0)
		return status;
	if (ledger_export_parse_finish(&p, rates, r, &err) == 0)
		return 0;
refused:
	tool_error("export: %s", err.msg);
	return EXIT_USAGE;
}

int cmd_export(int argc, char **argv)
{
	const char *db = NULL, *val[EXPORT_OPT_N] = {NULL};
	/* The option table: --db, then the export's options, whose names,
	 * values and help come from the table the server parses with too. */
	char names[EXPORT_OPT_N][24];
	struct opt opts[1 + EXPORT_OPT_N] = {OPT_DB(&db)};
	size_t n_opts = 1;
	struct export_request r;
	struct bill_rates rates;
	struct out w = {0};
	ledger_t *lg = NULL;
	int status;

	for (size_t i = 0; i < EXPORT_OPT_N; i++) {
		const struct export_opt_spec *o = &ledger_export_opt_table[i];

		if (!(o->callers & EXPORT_BY(EXPORT_CLI)))
			continue;
		snprintf(names[i], sizeof(names[i]), "--%s", o->name);
		opts[n_opts++] = (struct opt){names[i], OPT_STR, &val[i],
					      o->arg, o->help};
	}
	const struct cmd_spec spec = {"export", export_usage, opts, n_opts,
				      export_after};

	if ((status = opts_parse(&spec, argc, argv)) != OPTS_RUN)
		return opts_exit(status);
	bill_rates_init(&rates);
	bill_opencost_init(&w.oc);
	w.cfg = &rates;
	if ((status = export_options(val, &rates, &r)) != 0 ||
	    (status = tool_open_ledger("export", db, NULL, &lg)) != 0)
		goto out;
	w.fmt = r.format;
	w.scope = r.rollup != 0;
	w.focus = r.o.focus;
	status = run_export(lg, &r.o, &w);
out:
	ledger_close(lg);
	bill_rates_release(&rates);
	return status;
}
