/*
 * The export's options (ledger/exportopts.c), the one parser of `gpuledger
 * export` and GET /v1/export: table-driven cases for each caller (values,
 * defaults, bounds, the rules between options, the message of each
 * refusal), and a property over 10,000 random sets of pairs (seed printed,
 * GPULEDGER_SEED=N repeats one): both callers give the same options, or
 * the same message but for the spelling of the names.
 */
#include "tests/ledger_tests.h"

#include "ledger/ledger.h"
#include "model/model_int.h"

#include <stdint.h>
#include <time.h>

#define MAX_PAIRS 6

struct pair {
	const char *name, *value;
};

/* Feeds pairs to a parser of caller c and parses them: 0, or the code
 * with err's message. */
static int parse(enum export_caller c, const struct pair *pairs,
		 const struct bill_rates *rates, struct export_request *r,
		 struct lg_error *err)
{
	struct export_parse p;
	int rc;

	memset(err, 0, sizeof(*err));
	ledger_export_parse_init(&p, c);
	for (size_t i = 0; i < MAX_PAIRS && pairs[i].name != NULL; i++)
		if ((rc = ledger_export_parse_set(&p, pairs[i].name,
						  pairs[i].value, err)) != 0)
			return rc;
	return ledger_export_parse_finish(&p, rates, r, err);
}

static const struct refusal {
	enum export_caller c;
	struct pair pairs[MAX_PAIRS];
	const char *msg;
} refusals[] = {
	{EXPORT_CLI, {{NULL, NULL}}, "--from is required (or --month YYYY-MM)"},
	{EXPORT_HTTP,
	 {{NULL, NULL}},
	 "parameter from is required (or month=YYYY-MM)"},
	{EXPORT_CLI,
	 {{"month", "2026-03"}, {"to", "2026-04-01"}},
	 "--month replaces --from and --to"},
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"month", "2026-03"}},
	 "parameter month replaces from and to"},
	{EXPORT_CLI,
	 {{"from", "2026-03-02"}, {"to", "2026-03-02"}},
	 "--to must be after --from"},
	{EXPORT_HTTP,
	 {{"from", "2026-03-02"}, {"to", "2026-03-01"}},
	 "parameter to must be after from"},
	{EXPORT_CLI,
	 {{"from", "yesterday"}},
	 "--from \"yesterday\" is not an RFC 3339 time or a date (YYYY-MM-DD, "
	 "midnight UTC)"},
	{EXPORT_HTTP,
	 {{"month", "2026-13"}},
	 "parameter month \"2026-13\" is not a month: expected YYYY-MM, "
	 "1970-01 to 9999-12"},
	{EXPORT_CLI,
	 {{"from", "2026-03-01"}, {"step", "week"}},
	 "--step \"week\": expected hour or day"},
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"basis", "used"}},
	 "parameter basis \"used\": expected reserved or allocated"},
	{EXPORT_CLI,
	 {{"from", "2026-03-01"}, {"format", "xml"}},
	 "--format \"xml\": expected focus-csv, ndjson (or json) or "
	 "opencost-csv"},
	/* OpenCost's CSV is the CLI's. */
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"format", "opencost-csv"}},
	 "parameter format \"opencost-csv\": expected focus-csv or ndjson (or "
	 "json)"},
	{EXPORT_CLI,
	 {{"from", "2026-03-01"}, {"rollup", ""}},
	 "--rollup \"\": expected subtree"},
	{EXPORT_CLI,
	 {{"from", "2026-03-01"}, {"format", "opencost-csv"}, {"step", "hour"}},
	 "opencost-csv is daily: --step hour does not apply"},
	{EXPORT_CLI,
	 {{"from", "2026-03-01"},
	  {"format", "opencost-csv"},
	  {"rollup", "subtree"}},
	 "opencost-csv has no subtree rows"},
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"tenant", "default"}},
	 "parameter tenant \"default\" is not a tenant namespace"},
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"tenant", "tenant-A"}},
	 "parameter tenant \"tenant-A\" is not a tenant namespace"},
	/* Who has which option. */
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"rates", "/etc/passwd"}},
	 "unknown parameter \"rates\" (known: from, to, month, step, basis, "
	 "format, rollup, currency, tenant, focusVersion)"},
	{EXPORT_CLI,
	 {{"tenant", "tenant-a"}},
	 "unknown option \"tenant\" (known: --from, --to, --month, --step, "
	 "--basis, --format, --rollup, --rates, --currency, --focus-version)"},
	{EXPORT_HTTP,
	 {{"form", "ndjson"}},
	 "unknown parameter \"form\" (known: from, to, month, step, basis, "
	 "format, rollup, currency, tenant, focusVersion)"},
	/* Bounds: one over is refused before anything is parsed. */
	{EXPORT_CLI,
	 {{"step", "01234567890123456789012345678901"}},
	 "--step is too long (at most 31 bytes)"},
	{EXPORT_HTTP,
	 {{"currency", "01234567890123456789012345678901"}},
	 "parameter currency is too long (at most 31 bytes)"},
	/* A repeated option: the last counts. */
	{EXPORT_HTTP,
	 {{"from", "2026-03-01"}, {"step", "day"}, {"step", "week"}},
	 "parameter step \"week\": expected hour or day"},
};

START_TEST(exportopts_refused)
{
	const struct refusal *t = &refusals[_i];
	struct export_request r;
	struct lg_error err;

	ck_assert_int_eq(parse(t->c, t->pairs, NULL, &r, &err), LG_EINVAL);
	ck_assert_str_eq(err.msg, t->msg);
}
END_TEST

#define NS_2026_03_01 1772323200000000000LL
#define NS_PER_HOUR   3600000000000LL

START_TEST(exportopts_values)
{
	static const struct pair from[MAX_PAIRS] = {{"from", "2026-03-01"}};
	static const struct pair most[MAX_PAIRS] = {
		{"from", "2026-03-01T01:00:00Z"},
		{"to", "2026-03-02"},
		{"step", "hour"},
		{"basis", "allocated"},
		{"format", "json"},
		{"currency", "EUR"}};
	static const struct pair opencost[MAX_PAIRS] = {
		{"month", "2026-03"}, {"format", "opencost-csv"}};
	static const struct pair tenant[MAX_PAIRS] = {{"from", "2026-03-01"},
						      {"tenant", "tenant-acme"},
						      {"rollup", "subtree"}};
	struct bill_rates east;
	struct export_request r;
	struct lg_error err;

	/* The defaults: step hour in the CLI, day over HTTP (docs/api.md);
	 * the rest alike. */
	ck_assert_int_eq(parse(EXPORT_CLI, from, NULL, &r, &err), 0);
	ck_assert_int_eq(r.o.from_ns, NS_2026_03_01);
	ck_assert_int_eq(r.o.to_ns, INT64_MAX);
	ck_assert_int_eq(r.o.step, BILL_STEP_HOUR);
	ck_assert_int_eq(r.o.basis, BILL_BASIS_RESERVED);
	ck_assert_int_eq(r.format, EXPORT_FOCUS_CSV);
	ck_assert(!r.o.rollup_subtree);
	ck_assert_ptr_null(r.o.currency);
	ck_assert_ptr_null(r.rates_file);
	ck_assert_ptr_null(r.tenant);
	ck_assert_int_eq(parse(EXPORT_HTTP, from, NULL, &r, &err), 0);
	ck_assert_int_eq(r.o.step, BILL_STEP_DAY);

	ck_assert_int_eq(parse(EXPORT_HTTP, most, NULL, &r, &err), 0);
	ck_assert_int_eq(r.o.from_ns, NS_2026_03_01 + NS_PER_HOUR);
	ck_assert_int_eq(r.o.to_ns, NS_2026_03_01 + 24 * NS_PER_HOUR);
	ck_assert_int_eq(r.o.step, BILL_STEP_HOUR);
	ck_assert_int_eq(r.o.basis, BILL_BASIS_ALLOCATED);
	ck_assert_int_eq(r.format, EXPORT_NDJSON); /* json: its alias */
	ck_assert_str_eq(r.o.currency, "EUR");

	/* OpenCost's CSV is daily whatever the default step. */
	ck_assert_int_eq(parse(EXPORT_CLI, opencost, NULL, &r, &err), 0);
	ck_assert_int_eq(r.format, EXPORT_OPENCOST_CSV);
	ck_assert_int_eq(r.o.step, BILL_STEP_DAY);
	ck_assert_int_eq(r.o.to_ns - r.o.from_ns, 31 * 24 * NS_PER_HOUR);

	ck_assert_int_eq(parse(EXPORT_HTTP, tenant, NULL, &r, &err), 0);
	ck_assert_str_eq(r.tenant, "tenant-acme");
	ck_assert(r.o.rollup_subtree);

	/* A month is the billing file's: at +01:00 it starts an hour
	 * before midnight UTC. */
	bill_rates_init(&east);
	east.offset_s = 3600;
	ck_assert_int_eq(parse(EXPORT_CLI, opencost, &east, &r, &err), 0);
	ck_assert_int_eq(r.o.from_ns, NS_2026_03_01 - NS_PER_HOUR);
	ck_assert_ptr_eq(r.o.rates, &east);
	bill_rates_release(&east);

	/* The names are the ones the rows print (x_Basis, descriptions). */
	for (const struct export_value *v =
		     ledger_export_opt_table[EXPORT_OPT_STEP].values;
	     v->name != NULL; v++)
		ck_assert_str_eq(model__bill_step_name(v->value), v->name);
	for (const struct export_value *v =
		     ledger_export_opt_table[EXPORT_OPT_BASIS].values;
	     v->name != NULL; v++)
		ck_assert_str_eq(model__bill_basis_name(v->value), v->name);
}
END_TEST

/* What both callers have, and values good and bad for each. */
static const struct pool {
	const char *name;
	const char *values[8];
} pool[] = {
	{"from",
	 {"2026-03-01", "2026-03-01T12:00:00Z", "1969-12-31", "x", "",
	  "2262-04-12", NULL}},
	{"to", {"2026-03-02", "2026-02-01", "10000-01-01", "", NULL}},
	{"month", {"2026-03", "2026-13", "1970-01", "2262-04", "", NULL}},
	{"step", {"hour", "day", "week", "", NULL}},
	{"basis", {"reserved", "allocated", "used", NULL}},
	{"format", {"focus-csv", "ndjson", "json", "xml", NULL}},
	{"rollup", {"subtree", "tree", "", NULL}},
	{"currency", {"USD", "usd", "", NULL}},
	{"tenant", {"tenant-a", NULL}}, /* the server's only */
};

/* A message with the names spelt neither caller's way, and without the
 * list of formats. */
static void unspell(const char *msg, enum export_caller c, char *out,
		    size_t cap)
{
	static const char *const drop[] = {
		[EXPORT_CLI] = "--", [EXPORT_HTTP] = "parameter "};
	size_t n = 0, dl = strlen(drop[c]);
	char *cut;

	for (const char *p = msg; *p && n + 1 < cap;) {
		if (strncmp(p, drop[c], dl) == 0) {
			p += dl;
			continue;
		}
		/* "month=YYYY-MM" and "--month YYYY-MM" */
		out[n++] = (c == EXPORT_HTTP && *p == '=') ? ' ' : *p;
		p++;
	}
	out[n] = '\0';
	/* The formats each accepts differ (the table cases list them). */
	if ((cut = strstr(out, ": expected focus-csv")) != NULL)
		*cut = '\0';
}

START_TEST(exportopts_callers_agree)
{
	const char *e = getenv("GPULEDGER_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL);
	uint64_t s = seed | 1, ok = 0;
	const size_t n_pool = sizeof(pool) / sizeof(pool[0]);

	fprintf(stderr, "exportopts_callers_agree: seed %llu\n",
		(unsigned long long)seed);
	for (int iter = 0; iter < 10000; iter++) {
		struct pair pairs[MAX_PAIRS] = {{NULL, NULL}};
		struct export_request rc_, rh;
		struct lg_error ec, eh;
		char mc[LG_ERRMSG_MAX], mh[LG_ERRMSG_MAX];
		bool step_given = false;
		size_t k;
		int a, b;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (s >> 33) % MAX_PAIRS;
		for (size_t i = 0; i < k; i++) {
			const struct pool *o;
			size_t nv = 0;

			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			/* The tenant is the server's: left out here. */
			o = &pool[(s >> 33) % (n_pool - 1)];
			while (o->values[nv] != NULL)
				nv++;
			pairs[i].name = o->name;
			pairs[i].value = o->values[(s >> 45) % nv];
			step_given |= strcmp(o->name, "step") == 0;
		}
		a = parse(EXPORT_CLI, pairs, NULL, &rc_, &ec);
		b = parse(EXPORT_HTTP, pairs, NULL, &rh, &eh);
		ck_assert_msg(
			a == b, "seed %llu, iteration %d: %d vs %d (%s|%s)",
			(unsigned long long)seed, iter, a, b, ec.msg, eh.msg);
		if (a != 0) {
			unspell(ec.msg, EXPORT_CLI, mc, sizeof(mc));
			unspell(eh.msg, EXPORT_HTTP, mh, sizeof(mh));
			ck_assert_msg(strcmp(mc, mh) == 0,
				      "seed %llu, iteration %d: \"%s\" vs "
				      "\"%s\"",
				      (unsigned long long)seed, iter, ec.msg,
				      eh.msg);
			continue;
		}
		ok++;
		ck_assert_int_eq(rc_.o.from_ns, rh.o.from_ns);
		ck_assert_int_eq(rc_.o.to_ns, rh.o.to_ns);
		ck_assert_int_eq(rc_.o.basis, rh.o.basis);
		ck_assert_int_eq(rc_.format, rh.format);
		ck_assert_int_eq(rc_.o.rollup_subtree, rh.o.rollup_subtree);
		ck_assert(step_given ? rc_.o.step == rh.o.step
				     : rc_.o.step == BILL_STEP_HOUR &&
					       rh.o.step == BILL_STEP_DAY);
		ck_assert((rc_.o.currency == NULL && rh.o.currency == NULL) ||
			  (rc_.o.currency && rh.o.currency &&
			   strcmp(rc_.o.currency, rh.o.currency) == 0));
	}
	/* The pool is such that both kinds of answer come up. */
	ck_assert_uint_gt(ok, 100);
}
END_TEST

void ledger_tests_exportopts(Suite *s)
{
	TCase *tc = tcase_create("exportopts");

	tcase_add_loop_test(tc, exportopts_refused, 0,
			    sizeof(refusals) / sizeof(refusals[0]));
	tcase_add_test(tc, exportopts_values);
	tcase_add_test(tc, exportopts_callers_agree);
	suite_add_tcase(s, tc);
}
