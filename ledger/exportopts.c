/*
 * The export's options (DESIGN 8): one table, one parser, for `gpuledger
 * export` and GET /v1/export (ledger.h says what each caller feeds it).
 *
 * Why a table: the two callers used to implement the same rules twice,
 * and drifted apart (a month of 16 characters or more was "malformed" over
 * HTTP and "not a month" on the command line; the same bad step was
 * "expected hour or day" in one and "must be hour or day" in the other).
 * Here each option is one entry: its name, type, where the value goes,
 * its default for each caller, its bound and its help; the rules between
 * options (month replaces from and to, to after from, what opencost-csv
 * allows) are written once, in parse_finish, with the names spelt the
 * caller's way. Values are parsed in table order, whatever order they came
 * in, so that the same values give the same first error in both callers.
 */
#include "ledger/ledger.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(enum bill_step) == sizeof(int) &&
		       sizeof(enum bill_basis) == sizeof(int) &&
		       sizeof(enum export_format) == sizeof(int) &&
		       sizeof(enum bill_focus) == sizeof(int),
	       "an enum target is stored as an int");

/* The names of enum values, each with what it stores and who has it; an
 * alias is accepted but listed after its value ("ndjson (or json)"). */
static const struct export_value step_values[] = {
	{"hour", BILL_STEP_HOUR, EXPORT_ALL, false},
	{"day", BILL_STEP_DAY, EXPORT_ALL, false},
	{NULL, 0, 0, false},
};
static const struct export_value basis_values[] = {
	{"reserved", BILL_BASIS_RESERVED, EXPORT_ALL, false},
	{"allocated", BILL_BASIS_ALLOCATED, EXPORT_ALL, false},
	{NULL, 0, 0, false},
};
/* OpenCost's CSV is the CLI's only: the server streams FOCUS rows. */
static const struct export_value format_values[] = {
	{"focus-csv", EXPORT_FOCUS_CSV, EXPORT_ALL, false},
	{"ndjson", EXPORT_NDJSON, EXPORT_ALL, false},
	/* "json" was the name of NDJSON output: kept as its alias. */
	{"json", EXPORT_NDJSON, EXPORT_ALL, true},
	{"opencost-csv", EXPORT_OPENCOST_CSV, EXPORT_BY(EXPORT_CLI), false},
	{NULL, 0, 0, false},
};
static const struct export_value focus_values[] = {
	{"1.2", BILL_FOCUS_1_2, EXPORT_ALL, false},
	{"1.3", BILL_FOCUS_1_3, EXPORT_ALL, false},
	{NULL, 0, 0, false},
};
static const struct export_value rollup_values[] = {
	{"subtree", 1, EXPORT_ALL, false},
	{NULL, 0, 0, false},
};

#define TARGET(member) offsetof(struct export_request, member)

const struct export_opt_spec ledger_export_opt_table[EXPORT_OPT_N] = {
	[EXPORT_OPT_FROM] =
		{.name = "from",
		 .type = EXPORT_TIME,
		 .target = TARGET(o.from_ns),
		 .max_bytes = 95,
		 .callers = EXPORT_ALL,
		 .arg = "TIME",
		 .help = "start of the range (RFC 3339, or a date YYYY-MM-DD: "
			 "its midnight UTC; floored to the second)"},
	[EXPORT_OPT_TO] =
		{.name = "to",
		 .type = EXPORT_TIME,
		 .target = TARGET(o.to_ns),
		 .max_bytes = 95,
		 .callers = EXPORT_ALL,
		 .arg = "TIME",
		 .help = "end of the range, excluded (default: the horizon). "
			 "Billing stops at min(--to, horizon) floored to the "
			 "second; the horizon is the time of the last event "
			 "other than NOTE and VERDICT: the ledger never bills "
			 "time it has not seen, and the milliseconds after the "
			 "cut are billed by the export that starts there."},
	[EXPORT_OPT_MONTH] =
		{.name = "month",
		 .type = EXPORT_MONTH,
		 .max_bytes = 95,
		 .callers = EXPORT_ALL,
		 .arg = "YYYY-MM",
		 .help = "the calendar month (in the billing file's "
			 "billingPeriodOffset, default UTC), instead of "
			 "--from/--to"},
	/* The server's default is day (docs/api.md), the CLI's hour. */
	[EXPORT_OPT_STEP] =
		{.name = "step",
		 .type = EXPORT_ENUM,
		 .target = TARGET(o.step),
		 .dflt = {[EXPORT_CLI] = "hour", [EXPORT_HTTP] = "day"},
		 .max_bytes = 31,
		 .values = step_values,
		 .callers = EXPORT_ALL,
		 .arg = "hour|day",
		 .help = "periods are hours or days of the billing time "
			 "(default hour; opencost-csv is always daily)"},
	[EXPORT_OPT_BASIS] =
		{.name = "basis",
		 .type = EXPORT_ENUM,
		 .target = TARGET(o.basis),
		 .dflt = {[EXPORT_CLI] = "reserved",
			  [EXPORT_HTTP] = "reserved"},
		 .max_bytes = 31,
		 .values = basis_values,
		 .callers = EXPORT_ALL,
		 .arg = "reserved|allocated",
		 .help = "reserved (what budgets cap, default) or allocated "
			 "(bound to devices)"},
	[EXPORT_OPT_FORMAT] =
		{.name = "format",
		 .type = EXPORT_ENUM,
		 .target = TARGET(format),
		 .dflt = {[EXPORT_CLI] = "focus-csv",
			  [EXPORT_HTTP] = "focus-csv"},
		 .max_bytes = 31,
		 .values = format_values,
		 .callers = EXPORT_ALL,
		 .arg = "focus-csv|ndjson|opencost-csv",
		 .help = "focus-csv (default), ndjson (alias json) or "
			 "opencost-csv; each is described below"},
	[EXPORT_OPT_ROLLUP] =
		{.name = "rollup",
		 .type = EXPORT_ENUM,
		 .target = TARGET(rollup),
		 .max_bytes = 31,
		 .values = rollup_values,
		 .callers = EXPORT_ALL,
		 .arg = "subtree",
		 .help = "also a row per tenant and class summing its subtree "
			 "(the tenant and its descendant tenants), and a last "
			 "column x_Scope: namespace or subtree. Do not add the "
			 "two kinds of row together."},
	/* The file is read by the CLI (this parser does no I/O); the server
	 * has its own, `serve --rates`. */
	[EXPORT_OPT_RATES] =
		{.name = "rates",
		 .type = EXPORT_TEXT,
		 .target = TARGET(rates_file),
		 .max_bytes = 4095,
		 .callers = EXPORT_BY(EXPORT_CLI),
		 .arg = "FILE",
		 .help = "the billing file: prices per GPU-hour by class and "
			 "currency, and the names the rows carry:\n"
			 "{\"rates\": [{\"class\": \"h100\", \"currency\": "
			 "\"USD\",\n"
			 "  \"listUnitPrice\": \"3.20\", \"billedUnitPrice\": "
			 "\"2.50\"}],\n"
			 " \"billingAccountId\", \"billingAccountName\",\n"
			 " \"providerName\", \"publisherName\",\n"
			 " \"serviceProviderName\", \"hostProviderName\",\n"
			 " \"invoiceIssuerName\", \"serviceName\", "
			 "\"regionId\",\n"
			 " \"regionName\", \"billingPeriodOffset\": "
			 "\"+02:00\"}\n"
			 "every member optional. Prices are decimal strings "
			 "(at most 9 decimals) or integers; billedUnitPrice "
			 "(ContractedUnitPrice) defaults to the list price. "
			 "With \"rates\", every class the ledger knows needs a "
			 "rate in the billing currency (a free class: \"0\"); "
			 "without, every price is an explicit 0."},
	/* Checked by ledger_export against the rates in force. */
	[EXPORT_OPT_CURRENCY] =
		{.name = "currency",
		 .type = EXPORT_TEXT,
		 .target = TARGET(o.currency),
		 .max_bytes = 31,
		 .callers = EXPORT_ALL,
		 .arg = "CUR",
		 .help = "BillingCurrency: with rates one of their currencies "
			 "(required when they have several); default USD."},
	/* A tenant token's own subtree is the server's business (403). */
	[EXPORT_OPT_TENANT] = {.name = "tenant",
			       .type = EXPORT_TENANT,
			       .target = TARGET(tenant),
			       .max_bytes = DNS1123_SUBDOMAIN_MAX,
			       .callers = EXPORT_BY(EXPORT_HTTP),
			       .arg = "NS",
			       .help = "only the rows of NS's subtree"},
	/* Last, so that the first error of older options stays the same.
	 * HTTP's parameters are camelCase when they are two words. */
	[EXPORT_OPT_FOCUS_VERSION] =
		{.name = "focus-version",
		 .http_name = "focusVersion",
		 .type = EXPORT_ENUM,
		 .target = TARGET(o.focus),
		 .dflt = {[EXPORT_CLI] = "1.3", [EXPORT_HTTP] = "1.3"},
		 .max_bytes = 31,
		 .values = focus_values,
		 .callers = EXPORT_ALL,
		 .arg = "1.2|1.3",
		 .help = "the FOCUS version of focus-csv and ndjson rows "
			 "(default 1.3: ServiceProviderName, HostProviderName "
			 "and, on namespace rows, the Allocated* columns of "
			 "the class pool's split; 1.2: the columns before "
			 "them, byte for byte)"},
};

const char *ledger_export_opt_name(const struct export_opt_spec *o,
				   enum export_caller c)
{
	return c == EXPORT_HTTP && o->http_name ? o->http_name : o->name;
}

/* ---------------------------------------------------------------------- */
/* Names as each caller spells them. */

/* The option as the subject of a message: "--step", "parameter step". */
static const char *const subject_fmt[EXPORT_CALLERS] = {
	[EXPORT_CLI] = "--%s",
	[EXPORT_HTTP] = "parameter %s",
};
/* Another option cited in it: "--from", "from". */
static const char *const cite_fmt[EXPORT_CALLERS] = {
	[EXPORT_CLI] = "--%s",
	[EXPORT_HTTP] = "%s",
};
/* An option cited with its value's name: "--month YYYY-MM",
 * "month=YYYY-MM". */
static const char *const cite_arg_fmt[EXPORT_CALLERS] = {
	[EXPORT_CLI] = "--%s %s",
	[EXPORT_HTTP] = "%s=%s",
};
/* What an option is called: "option", "parameter". */
static const char *const kind_name[EXPORT_CALLERS] = {
	[EXPORT_CLI] = "option",
	[EXPORT_HTTP] = "parameter",
};

struct spelt {
	char s[48];
};

static struct spelt spell(const char *const *fmt, enum export_caller c,
			  const struct export_opt_spec *o)
{
	struct spelt sp;

	snprintf(sp.s, sizeof(sp.s), fmt[c], ledger_export_opt_name(o, c),
		 o->arg);
	return sp;
}

#define SUBJECT(p, id) \
	spell(subject_fmt, (p)->caller, &ledger_export_opt_table[id]).s
#define CITE(p, id) \
	spell(cite_fmt, (p)->caller, &ledger_export_opt_table[id]).s
#define CITE_ARG(p, id) \
	spell(cite_arg_fmt, (p)->caller, &ledger_export_opt_table[id]).s

static bool has(const struct export_opt_spec *o, enum export_caller c)
{
	return (o->callers & EXPORT_BY(c)) != 0;
}

/* ---------------------------------------------------------------------- */
/* Pairs in */

void ledger_export_parse_init(struct export_parse *p, enum export_caller c)
{
	memset(p, 0, sizeof(*p));
	p->caller = c;
}

/* "a, b or c" of the names of table that caller has, into buf; an alias
 * follows its value as "(or x)". */
static void value_list(const struct export_value *v, enum export_caller c,
		       char *buf, size_t cap)
{
	size_t n = 0, total = 0, k = 0;

	for (size_t i = 0; v[i].name != NULL; i++)
		total += (v[i].callers & EXPORT_BY(c)) && !v[i].alias;
	buf[0] = '\0';
	for (size_t i = 0; v[i].name != NULL && n < cap; i++) {
		const char *sep;

		if (!(v[i].callers & EXPORT_BY(c)))
			continue;
		if (v[i].alias) {
			n += (size_t)snprintf(buf + n, cap - n, " (or %s)",
					      v[i].name);
			continue;
		}
		k++;
		sep = k == 1 ? "" : k == total ? " or " : ", ";
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, v[i].name);
	}
}

/* "from, to, ..." of the options caller has, into buf. */
static void name_list(enum export_caller c, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < EXPORT_OPT_N && n < cap; i++)
		if (has(&ledger_export_opt_table[i], c))
			n += (size_t)snprintf(
				buf + n, cap - n, "%s%s", n ? ", " : "",
				spell(cite_fmt, c, &ledger_export_opt_table[i])
					.s);
}

int ledger_export_parse_set(struct export_parse *p, const char *name,
			    const char *value, struct lg_error *err)
{
	char known[256];

	for (size_t i = 0; i < EXPORT_OPT_N; i++) {
		const struct export_opt_spec *o = &ledger_export_opt_table[i];

		if (strcmp(ledger_export_opt_name(o, p->caller), name) != 0 ||
		    !has(o, p->caller))
			continue;
		if (strlen(value) > o->max_bytes)
			return lg_error_set(
				err, LG_EINVAL,
				"%s is too long (at most %zu bytes)",
				SUBJECT(p, i), o->max_bytes);
		p->val[i] = value; /* the last of a repeated name counts */
		return 0;
	}
	name_list(p->caller, known, sizeof(known));
	return lg_error_set(err, LG_EINVAL, "unknown %s \"%.64s\" (known: %s)",
			    kind_name[p->caller], name, known);
}

const char *ledger_export_parse_value(const struct export_parse *p,
				      enum export_opt_id id)
{
	return p->val[id];
}

/* ---------------------------------------------------------------------- */
/* Values out */

static int parse_one(const struct export_parse *p, enum export_opt_id id,
		     const char *v, struct export_request *r,
		     struct lg_error *err)
{
	const struct export_opt_spec *o = &ledger_export_opt_table[id];
	char *t = (char *)r + o->target, list[128];
	int32_t offset_s = r->o.rates ? r->o.rates->offset_s : 0;
	int64_t start_ms, end_ms;

	switch (o->type) {
	case EXPORT_TIME:
		if (time_parse_user_ns(v, (int64_t *)(void *)t) != 0)
			return lg_error_set(err, LG_EINVAL, "%s \"%s\" %s",
					    SUBJECT(p, id), v,
					    time_user_why(v));
		return 0;
	case EXPORT_MONTH:
		/* In the billing file's offset; on success the bounds fit
		 * int64 ns (bill_month_parse). */
		if (bill_month_parse(v, offset_s, &start_ms, &end_ms) != 0)
			return lg_error_set(err, LG_EINVAL, "%s \"%s\" %s",
					    SUBJECT(p, id), v,
					    bill_month_why(v, offset_s));
		r->o.from_ns = start_ms * 1000000;
		r->o.to_ns = end_ms * 1000000;
		return 0;
	case EXPORT_ENUM:
		for (size_t i = 0; o->values[i].name != NULL; i++)
			if ((o->values[i].callers & EXPORT_BY(p->caller)) &&
			    strcmp(o->values[i].name, v) == 0) {
				*(int *)(void *)t = o->values[i].value;
				return 0;
			}
		value_list(o->values, p->caller, list, sizeof(list));
		return lg_error_set(err, LG_EINVAL, "%s \"%s\": expected %s",
				    SUBJECT(p, id), v, list);
	case EXPORT_TENANT:
	case EXPORT_TEXT:
		if (o->type == EXPORT_TENANT &&
		    (!dns1123_label(v, strlen(v)) || !ns_is_tenant(v)))
			return lg_error_set(err, LG_EINVAL,
					    "%s \"%s\" is not a tenant "
					    "namespace",
					    SUBJECT(p, id), v);
		*(const char **)(void *)t = v;
		return 0;
	}
	return lg_error_set(err, LG_EINVAL, "%s: no such type", o->name);
}

/* The range is from[, to] or month: said before any value is read. */
static int range_rules(const struct export_parse *p, struct lg_error *err)
{
	const char *const *v = p->val;

	if (v[EXPORT_OPT_MONTH] && (v[EXPORT_OPT_FROM] || v[EXPORT_OPT_TO]))
		return lg_error_set(err, LG_EINVAL, "%s replaces %s and %s",
				    SUBJECT(p, EXPORT_OPT_MONTH),
				    CITE(p, EXPORT_OPT_FROM),
				    CITE(p, EXPORT_OPT_TO));
	if (v[EXPORT_OPT_MONTH] == NULL && v[EXPORT_OPT_FROM] == NULL)
		return lg_error_set(err, LG_EINVAL, "%s is required (or %s)",
				    SUBJECT(p, EXPORT_OPT_FROM),
				    CITE_ARG(p, EXPORT_OPT_MONTH));
	return 0;
}

/* The rules between values, once each is known to be good. */
static int value_rules(const struct export_parse *p,
		       const struct export_request *r, struct lg_error *err)
{
	const char *const *v = p->val;

	if (r->o.to_ns <= r->o.from_ns)
		return lg_error_set(err, LG_EINVAL, "%s must be after %s",
				    SUBJECT(p, EXPORT_OPT_TO),
				    CITE(p, EXPORT_OPT_FROM));
	if (r->format != EXPORT_OPENCOST_CSV)
		return 0;
	/* OpenCost's CSV is a daily per-namespace view. */
	if (v[EXPORT_OPT_STEP] != NULL && r->o.step != BILL_STEP_DAY)
		return lg_error_set(err, LG_EINVAL,
				    "opencost-csv is daily: %s hour does not "
				    "apply",
				    CITE(p, EXPORT_OPT_STEP));
	if (r->rollup)
		return lg_error_set(err, LG_EINVAL,
				    "opencost-csv has no subtree rows");
	return 0;
}

int ledger_export_parse_finish(const struct export_parse *p,
			       const struct bill_rates *rates,
			       struct export_request *r, struct lg_error *err)
{
	int rc = range_rules(p, err);

	memset(r, 0, sizeof(*r));
	r->o.to_ns = INT64_MAX;
	r->o.rates = rates;
	for (size_t i = 0; i < EXPORT_OPT_N && rc == 0; i++) {
		const struct export_opt_spec *o = &ledger_export_opt_table[i];
		const char *v = p->val[i] ? p->val[i] : o->dflt[p->caller];

		if (v != NULL && has(o, p->caller))
			rc = parse_one(p, (enum export_opt_id)i, v, r, err);
	}
	if (rc == 0)
		rc = value_rules(p, r, err);
	if (rc == 0 && r->format == EXPORT_OPENCOST_CSV)
		r->o.step = BILL_STEP_DAY;
	r->o.rollup_subtree = r->rollup != 0;
	return rc;
}
