/*
 * Billing, the pure half: UTC period boundaries, exact decimals and costs,
 * the rates file, tenant paths, snapshots and the usage between them (with
 * the subtree rollup), and the three row formats.
 */
#include "tests/model_tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define H  BILL_MS_PER_HOUR
#define D  BILL_MS_PER_DAY
#define T0 1772352000000LL /* 2026-03-01T08:00:00Z in ms */

/* ---------------------------------------------------------------------- */
/* Periods */

static const struct {
	int64_t t;
	enum bill_step step;
	int64_t want;
} period_rows[] = {
	{0, BILL_STEP_HOUR, H},
	{0, BILL_STEP_DAY, D},
	{1, BILL_STEP_HOUR, H},
	{H - 1, BILL_STEP_HOUR, H},
	{H, BILL_STEP_HOUR, 2 * H}, /* a boundary belongs to the next hour */
	{T0, BILL_STEP_HOUR, T0 + H},
	{T0, BILL_STEP_DAY, T0 + 16 * H}, /* 08:00 -> next midnight */
	{T0 + 16 * H - 1, BILL_STEP_DAY, T0 + 16 * H},
	{T0 + 16 * H, BILL_STEP_DAY, T0 + 16 * H + D},
	{-1, BILL_STEP_HOUR, 0}, /* floor, not truncation, before 1970 */
	{-H, BILL_STEP_HOUR, 0},
	{-H - 1, BILL_STEP_DAY, 0},
};

START_TEST(billing_period_end)
{
	for (size_t i = 0; i < sizeof(period_rows) / sizeof(period_rows[0]);
	     i++)
		ck_assert_msg(model__bill_period_end(period_rows[i].t,
						     period_rows[i].step) ==
				      period_rows[i].want,
			      "row %zu", i);
}
END_TEST

START_TEST(billing_period_names)
{
	/* Parsing them is the export's options' (tests/ledger_exportopts.c
	 * checks that their names are these). */
	ck_assert_str_eq(model__bill_step_name(BILL_STEP_HOUR), "hour");
	ck_assert_str_eq(model__bill_step_name(BILL_STEP_DAY), "day");
	ck_assert_str_eq(model__bill_basis_name(BILL_BASIS_RESERVED),
			 "reserved");
	ck_assert_str_eq(model__bill_basis_name(BILL_BASIS_ALLOCATED),
			 "allocated");
	ck_assert_str_eq(model__bill_step_name((enum bill_step)7), "?");
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Decimals and costs */

static const struct {
	const char *s;
	int rc;
	int64_t nano;
} decimal_rows[] = {
	{"0", 0, 0},
	{"3", 0, 3000000000LL},
	{"3.20", 0, 3200000000LL},
	{"0.000000001", 0, 1},
	{"007.5", 0, 7500000000LL},
	{"9223372036", 0, 9223372036000000000LL},
	{"9223372036.854775807", 0, INT64_MAX},
	{"9223372036.854775808", LG_ERANGE, 0},
	{"9223372037", LG_ERANGE, 0},
	{"0.0000000001", LG_EINVAL, 0}, /* 10 decimals: no silent rounding */
	{"", LG_EINVAL, 0},
	{".5", LG_EINVAL, 0},
	{"5.", LG_EINVAL, 0},
	{"-1", LG_EINVAL, 0},
	{"+1", LG_EINVAL, 0},
	{" 1", LG_EINVAL, 0},
	{"1 ", LG_EINVAL, 0},
	{"1e3", LG_EINVAL, 0},
	{"1,5", LG_EINVAL, 0},
	{"1.2.3", LG_EINVAL, 0},
};

START_TEST(billing_decimal_parse)
{
	for (size_t i = 0; i < sizeof(decimal_rows) / sizeof(decimal_rows[0]);
	     i++) {
		int64_t v = -1;
		int rc = model__bill_decimal_parse(decimal_rows[i].s, &v);

		ck_assert_msg(rc == decimal_rows[i].rc, "%s: rc %d",
			      decimal_rows[i].s, rc);
		if (rc == 0)
			ck_assert_msg(v == decimal_rows[i].nano, "%s: %lld",
				      decimal_rows[i].s, (long long)v);
	}
	ck_assert_int_eq(model__bill_decimal_parse(NULL, NULL), LG_EINVAL);
}
END_TEST

static const struct {
	int64_t num, den;
	const char *want;
} ratio_rows[] = {
	{0, H, "0.000000000"},
	{H, H, "1.000000000"},
	{5400000, H, "1.500000000"},
	{1, H, "0.000000277"}, /* 1 ms = 2.777...e-7 h, truncated */
	{4, H, "0.000001111"},
	{1, 2000 * H, "0.000000000"}, /* below 1e-9: truncated to 0 */
	{1200500, H, "0.333472222"},  /* 0.33347222... truncated */
	{H - 1, H, "0.999999722"},
	{INT64_MAX, H, "2562047788015.215501944"},
	{7, 20 * H, "0.000000097"},
	{71 * H, 20 * H, "3.550000000"},
};

START_TEST(billing_decimal_format)
{
	char buf[64];

	for (size_t i = 0; i < sizeof(ratio_rows) / sizeof(ratio_rows[0]);
	     i++) {
		size_t n = model__bill_format_ratio(
			ratio_rows[i].num, ratio_rows[i].den, buf, sizeof(buf));

		ck_assert_str_eq(buf, ratio_rows[i].want);
		ck_assert_uint_eq(n, strlen(ratio_rows[i].want));
	}
	model__bill_format_nano(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0.000000000");
	model__bill_format_nano(75000000000LL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "75.000000000");
	model__bill_format_nano(1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0.000000001");
	model__bill_format_nano(-2500000000LL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-2.500000000");
	model__bill_format_nano(INT64_MIN, buf, sizeof(buf));
	ck_assert_str_eq(buf, "-9223372036.854775808");
	/* Like snprintf: the length needed, even when cut. */
	ck_assert_uint_eq(model__bill_format_nano(75000000000LL, buf, 4), 12);
	ck_assert_str_eq(buf, "75.");
}
END_TEST

/* cost = price x PricingQuantity as printed (device-ms / 3,600,000 hours
 * truncated to 9 decimals), rounded half up to 9 decimals (DESIGN 8). */
static const struct {
	int64_t ms, price;
	int rc;
	int64_t cost;
} cost_rows[] = {
	{H, 2500000000LL, 0, 2500000000LL},	  /* 1 h at 2.50 */
	{5400000, 3200000000LL, 0, 4800000000LL}, /* 1.5 h at 3.20 */
	{0, 3200000000LL, 0, 0},
	{H, 0, 0, 0},
	/* The row: 2.5 x 37.356654444 = 93.391636110, not the
	 * 93.391636111 of the exact device-ms (37.3566544444... h). */
	{134483956, 2500000000LL, 0, 93391636110LL},
	{10, 1800000000LL, 0, 4999}, /* 0.000002777 h x 1.8 */
	{7, 2000000000LL, 0, 3888},  /* 0.000001944 h x 2 */
	/* 1 ms prints 0.000000277 h: x 0.5 is 138.5 nano, half rounds up. */
	{1, 500000000LL, 0, 139},
	{1, 499999999LL, 0, 138},
	{1, 1800000, 0, 0}, /* 0.4986 nano (the exact ms gave 0.5 -> 1) */
	{1, 3600000, 0, 1}, /* 0.9972 */
	{3, 1000000, 0, 1}, /* 0.000000833 h x 0.001: 0.833 -> 1 */
	{1, 1000000, 0, 0}, /* 0.277 -> 0 */
	/* Huge quantities and prices: the 128-bit split, and its bound. */
	{INT64_MAX, INT64_MAX, LG_ERANGE, 0},
	{INT64_MAX, H, 0, INT64_MAX},
	{INT64_MAX, 1, 0, 2562047788015LL}, /* 2562047788015.215502880 h */
	{3599999, INT64_MAX, 0, 9223369472757349561LL}, /* frac x price */
	{H * 1000000, 9000000000000LL, 0, 9000000000000000000LL},
	{H * 1000000, 9223372036854LL, 0, 9223372036854000000LL},
	{H * 1000000, 9223372036855LL, LG_ERANGE, 0}, /* one nano over */
	{-1, 1, LG_EINVAL, 0},
	{1, -1, LG_EINVAL, 0},
};

START_TEST(billing_cost_rounding)
{
	for (size_t i = 0; i < sizeof(cost_rows) / sizeof(cost_rows[0]); i++) {
		int64_t c = -7;
		int rc = bill_cost(cost_rows[i].ms, cost_rows[i].price, &c);

		ck_assert_msg(rc == cost_rows[i].rc, "row %zu: rc %d", i, rc);
		if (rc == 0)
			ck_assert_msg(c == cost_rows[i].cost, "row %zu: %lld",
				      i, (long long)c);
	}
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Rates */

START_TEST(billing_rates_valid)
{
	struct bill_rates r;
	struct lg_error err = {0};
	json_t *doc = tq("{'rates': ["
			 "{'class': 'h100', 'currency': 'USD', "
			 " 'listUnitPrice': '3.20', 'billedUnitPrice': '2.5'},"
			 "{'class': 'a10', 'currency': 'USD', "
			 " 'listUnitPrice': 1},"
			 "{'class': 'h100', 'currency': 'EUR', "
			 " 'listUnitPrice': '2.999999999'}]}");
	const struct bill_rate *x;
	const char *cur = NULL;

	ck_assert_msg(bill_rates_parse(&r, doc, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(r.n, 3);
	x = bill_rates_find(&r, "USD", "h100");
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(x->list_nano, 3200000000LL);
	ck_assert_int_eq(x->billed_nano, 2500000000LL);
	x = bill_rates_find(&r, "USD", "a10");
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(x->list_nano, 1000000000LL);
	ck_assert_int_eq(x->billed_nano, 1000000000LL); /* defaults to list */
	x = bill_rates_find(&r, "EUR", "h100");
	ck_assert_int_eq(x->billed_nano, 2999999999LL);
	ck_assert_ptr_null(bill_rates_find(&r, "EUR", "a10"));
	ck_assert_ptr_null(bill_rates_find(&r, "GBP", "h100"));
	ck_assert_ptr_null(bill_rates_find(&r, "USDX", "h100"));
	ck_assert_ptr_null(bill_rates_find(NULL, "USD", "h100"));
	/* Two currencies: the caller must choose. */
	ck_assert_int_eq(bill_rates_currency(&r, NULL, &cur, &err), LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "several currencies"));
	ck_assert_int_eq(bill_rates_currency(&r, "EUR", &cur, &err), 0);
	ck_assert_str_eq(cur, "EUR");
	ck_assert_int_eq(bill_rates_currency(&r, "GBP", &cur, &err), LG_ENOENT);
	bill_rates_release(&r);
	ck_assert_uint_eq(r.n, 0);
	bill_rates_release(&r); /* twice is harmless */
	bill_rates_release(NULL);
	json_decref(doc);
}
END_TEST

START_TEST(billing_rates_single_currency)
{
	struct bill_rates r;
	struct lg_error err = {0};
	json_t *doc = tq("{'rates': [{'class': 'h100', 'currency': 'CHF', "
			 "'listUnitPrice': '4'}]}");
	const char *cur = NULL;

	ck_assert_int_eq(bill_rates_parse(&r, doc, &err), 0);
	ck_assert_int_eq(bill_rates_currency(&r, NULL, &cur, &err), 0);
	ck_assert_str_eq(cur, "CHF");
	bill_rates_release(&r);
	json_decref(doc);
	/* No rates: unpriced, with the default names. */
	doc = tq("{}");
	ck_assert_int_eq(bill_rates_parse(&r, doc, &err), 0);
	ck_assert(!r.priced);
	ck_assert_str_eq(r.account_id, "cluster");
	ck_assert_str_eq(r.provider, "Cozystack");
	ck_assert_str_eq(r.service, "GPU Compute");
	ck_assert_str_eq(r.region_id, "");
	ck_assert_int_eq(r.offset_s, 0);
	bill_rates_release(&r);
	json_decref(doc);
	/* An empty list parses but offers no currency. */
	doc = tq("{'rates': []}");
	ck_assert_int_eq(bill_rates_parse(&r, doc, &err), 0);
	ck_assert_int_eq(bill_rates_currency(&r, NULL, &cur, &err), LG_EINVAL);
	bill_rates_release(&r);
	json_decref(doc);
}
END_TEST

static const struct {
	const char *doc, *why;
} bad_rates[] = {
	{"[]", "expected"},
	{"{'billingAccountId': ''}", "billingAccountId must be 1 to 128"},
	{"{'providerName': 'a\\nb'}", "providerName must be"},
	{"{'serviceName': '   '}", "serviceName must be"},
	{"{'regionId': 7}", "regionId must be"},
	{"{'billingPeriodOffset': '+25:00'}", "billingPeriodOffset"},
	{"{'billingPeriodOffset': 'Europe/Berlin'}", "billingPeriodOffset"},
	{"{'rates': {}}", "expected"},
	{"{'rates': [], 'currency': 'USD'}", "unknown member"},
	{"{'rates': [1]}", "not an object"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "'1', 'price': '2'}]}",
	 "unknown member \"price\""},
	{"{'rates': [{'currency': 'USD', 'listUnitPrice': '1'}]}", "class"},
	{"{'rates': [{'class': 'H100', 'currency': 'USD', 'listUnitPrice': "
	 "'1'}]}",
	 "class"},
	{"{'rates': [{'class': 7, 'currency': 'USD', 'listUnitPrice': '1'}]}",
	 "class"},
	{"{'rates': [{'class': 'h100', 'currency': 'usd', 'listUnitPrice': "
	 "'1'}]}",
	 "currency"},
	{"{'rates': [{'class': 'h100', 'currency': 'USDX', 'listUnitPrice': "
	 "'1'}]}",
	 "currency"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD'}]}", "listUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "2.5}]}",
	 "listUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "-1}]}",
	 "listUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "'-1'}]}",
	 "listUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "true}]}",
	 "listUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "'1', 'billedUnitPrice': null}]}",
	 "billedUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "'1.0000000001'}]}",
	 "at most 9 decimals"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "9223372037}]}",
	 "listUnitPrice"},
	{"{'rates': [{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
	 "'1'}, {'class': 'h100', 'currency': 'USD', 'listUnitPrice': '2'}]}",
	 "appears twice"},
};

START_TEST(billing_rates_invalid)
{
	for (size_t i = 0; i < sizeof(bad_rates) / sizeof(bad_rates[0]); i++) {
		struct bill_rates r;
		struct lg_error err = {0};
		json_t *doc = tq(bad_rates[i].doc);

		ck_assert_msg(bill_rates_parse(&r, doc, &err) == LG_EINVAL,
			      "accepted %s", bad_rates[i].doc);
		ck_assert_msg(strstr(err.msg, bad_rates[i].why) != NULL,
			      "%s: \"%s\" lacks \"%s\"", bad_rates[i].doc,
			      err.msg, bad_rates[i].why);
		ck_assert_uint_eq(r.n, 0);
		ck_assert_ptr_null(r.r);
		json_decref(doc);
	}
}
END_TEST

START_TEST(billing_rates_bounded)
{
	json_t *list = json_array(), *doc;
	struct bill_rates r;
	struct lg_error err = {0};

	for (int i = 0; i <= MODEL_MAX_ITEMS; i++)
		json_array_append_new(list, json_integer(i));
	doc = json_pack("{s:o}", "rates", list);
	ck_assert_int_eq(bill_rates_parse(&r, doc, &err), LG_ELIMIT);
	json_decref(doc);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Tenant paths */

static const struct {
	const char *ns, *want;
} path_rows[] = {
	{"tenant-root", "tenant-root"},
	{"tenant-a", "tenant-root/tenant-a"},
	{"tenant-a-b", "tenant-root/tenant-a/tenant-a-b"},
	{"tenant-a-b-c", "tenant-root/tenant-a/tenant-a-b/tenant-a-b-c"},
	{"tenant-root-x", "tenant-root/tenant-root-x"},
	{"default", "default"},
	{"kube-system", "kube-system"},
	{"tenants", "tenants"},
};

START_TEST(billing_path_rows)
{
	char buf[256];

	for (size_t i = 0; i < sizeof(path_rows) / sizeof(path_rows[0]); i++) {
		size_t n = model__bill_tenant_path(path_rows[i].ns, buf,
						   sizeof(buf));

		ck_assert_str_eq(buf, path_rows[i].want);
		ck_assert_uint_eq(n, strlen(path_rows[i].want));
	}
	/* Cut like snprintf, the length still whole. */
	ck_assert_uint_eq(model__bill_tenant_path("tenant-a-b", buf, 8), 31);
	ck_assert_str_eq(buf, "tenant-");
	ck_assert_uint_eq(model__bill_tenant_path("tenant-a-b", NULL, 0), 31);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Snapshots and usage */

static void apply_ok(state_t *st, const char *json)
{
	json_t *v = tq(json);
	struct event ev;
	struct lg_error err = {0};
	char *scratch = NULL;

	ck_assert_msg(event_from_json(&ev, v, &scratch, &err) == 0, "%s: %s",
		      json, err.msg);
	ck_assert_msg(state_apply(st, &ev, &err) == 0, "%s: %s", json, err.msg);
	free(scratch);
	json_decref(v);
}

/* 08:00 a class and a tree tenant-root > tenant-a > tenant-a-b. */
static state_t *tree_state(void)
{
	state_t *st = state_new();

	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'CLASS', "
		     "'class': 'h100', 'definition': {'name': 'h100', "
		     "'resourceNames': ['nvidia.com/GH100']}}");
	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'CLASS', "
		     "'class': 'a10', 'definition': {'name': 'a10', "
		     "'resourceNames': ['nvidia.com/GA102']}}");
	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'TENANT', "
		     "'namespace': 'tenant-root', 'parent': null}");
	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'TENANT', "
		     "'namespace': 'tenant-a', 'parent': 'tenant-root'}");
	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'TENANT', "
		     "'namespace': 'tenant-a-b', 'parent': 'tenant-a'}");
	return st;
}

/* Rates cover every class the state has met, and nothing else: not the
 * pseudo-class of a Node's existence (a NODE event with class ""), which
 * every watched cluster has. */
START_TEST(billing_rates_cover)
{
	state_t *st = tree_state();
	struct bill_rates r;
	struct lg_error err = {0};
	json_t *both = tq("{'rates': ["
			  "{'class': 'h100', 'currency': 'EUR', "
			  " 'listUnitPrice': '3.20'},"
			  "{'class': 'a10', 'currency': 'EUR', "
			  " 'listUnitPrice': '0'}]}");
	json_t *h100 = tq("{'rates': [{'class': 'h100', 'currency': 'EUR', "
			  " 'listUnitPrice': '3.20'}]}");

	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'NODE', "
		     "'node': 'worker-1', 'class': '', 'capacity': 0, "
		     "'serves': true}");
	ck_assert_msg(bill_rates_parse(&r, both, &err) == 0, "%s", err.msg);
	ck_assert_msg(bill_rates_cover(&r, "EUR", st, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(bill_rates_cover(&r, "USD", st, &err), LG_ENOENT);
	bill_rates_release(&r);
	ck_assert_msg(bill_rates_parse(&r, h100, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(bill_rates_cover(&r, "EUR", st, &err), LG_ENOENT);
	ck_assert_msg(strstr(err.msg, "no EUR rate for class a10") != NULL,
		      "%s", err.msg);
	bill_rates_release(&r);
	/* No rates: nothing to cover. */
	ck_assert_int_eq(bill_rates_cover(NULL, "EUR", st, &err), 0);
	json_decref(both);
	json_decref(h100);
	state_free(st);
}
END_TEST

/* Collects usage lines "ns cls ms [subtree]". */
struct lines {
	char text[2048];
	int stop_after; /* stop with 42 after this many (0: never) */
	int n;
};

static int collect(void *ctx, const struct bill_usage *u)
{
	struct lines *l = ctx;
	size_t len = strlen(l->text);

	snprintf(l->text + len, sizeof(l->text) - len, "%s %s %lld%s\n", u->ns,
		 u->cls, (long long)u->device_ms, u->subtree ? " subtree" : "");
	l->n++;
	return l->stop_after && l->n >= l->stop_after ? 42 : 0;
}

static void usage_between(struct bill_snap *a, struct bill_snap *b, bool rollup,
			  const char *want)
{
	struct lines l = {{0}, 0, 0};
	struct lg_error err = {0};

	ck_assert_msg(bill_period_usage(a, b, rollup, collect, &l, &err) == 0,
		      "%s", err.msg);
	ck_assert_str_eq(l.text, want);
}

START_TEST(billing_snap_usage)
{
	state_t *st = tree_state();
	struct bill_snap *s8 = bill_snap_new(), *s10 = bill_snap_new(),
			 *s11 = bill_snap_new();
	struct lg_error err = {0};

	ck_assert_int_eq(bill_snap_take(s8, st, T0, BILL_BASIS_RESERVED, &err),
			 0);
	apply_ok(st, "{'time': '2026-03-01T09:30:00Z', 'type': 'RESERVE', "
		     "'namespace': 'tenant-a-b', 'class': 'h100', 'kind': "
		     "'VMInstance', 'name': 'vm1', 'uid': 'u1', 'before': 0, "
		     "'after': 2}");
	/* A non-tenant namespace is billed too; times count to the ms. */
	apply_ok(st, "{'time': '2026-03-01T09:45:00.500900Z', 'type': "
		     "'RESERVE', 'namespace': 'default', 'class': 'a10', "
		     "'kind': 'Pod', 'name': 'p', 'uid': 'u2', 'before': 0, "
		     "'after': 1}");
	apply_ok(st, "{'time': '2026-03-01T09:50:00Z', 'type': 'RESERVE', "
		     "'namespace': 'tenant-a', 'class': 'a10', 'kind': "
		     "'VMInstance', 'name': 'vm2', 'uid': 'u3', 'before': 0, "
		     "'after': 3}");
	ck_assert_int_eq(
		bill_snap_take(s10, st, T0 + 2 * H, BILL_BASIS_RESERVED, &err),
		0);
	ck_assert_int_eq(bill_snap_time_ms(s10), T0 + 2 * H);
	usage_between(s8, s10, false,
		      "default a10 899500\n"
		      "tenant-a a10 1800000\n"
		      "tenant-a-b h100 3600000\n");
	usage_between(s8, s10, true,
		      "default a10 899500\n"
		      "tenant-a a10 1800000\n"
		      "tenant-a-b h100 3600000\n"
		      "tenant-a a10 1800000 subtree\n"
		      "tenant-a h100 3600000 subtree\n"
		      "tenant-a-b h100 3600000 subtree\n"
		      "tenant-root a10 1800000 subtree\n"
		      "tenant-root h100 3600000 subtree\n");
	/* Nothing allocated: the other basis has no usage at all. */
	ck_assert_int_eq(
		bill_snap_take(s11, st, T0 + 3 * H, BILL_BASIS_ALLOCATED, &err),
		0);
	usage_between(s8, s11, true, "");
	/* No event between 10:00 and 11:00: the levels carry on. */
	ck_assert_int_eq(
		bill_snap_take(s11, st, T0 + 3 * H, BILL_BASIS_RESERVED, &err),
		0);
	usage_between(s10, s11, false,
		      "default a10 3600000\n"
		      "tenant-a a10 10800000\n"
		      "tenant-a-b h100 7200000\n");
	/* An empty period. */
	usage_between(s11, s11, true, "");
	bill_snap_free(s8);
	bill_snap_free(s10);
	bill_snap_free(s11);
	bill_snap_free(NULL);
	state_free(st);
}
END_TEST

START_TEST(billing_snap_refused)
{
	state_t *st = tree_state(), *other = tree_state();
	struct bill_snap *a = bill_snap_new(), *b = bill_snap_new();
	struct lg_error err = {0};
	struct lines l = {{0}, 0, 0};

	apply_ok(st, "{'time': '2026-03-01T09:00:00Z', 'type': 'RESERVE', "
		     "'namespace': 'tenant-a', 'class': 'h100', 'kind': "
		     "'VMInstance', 'name': 'vm1', 'uid': 'u1', 'before': 0, "
		     "'after': 2}");
	/* The state is already past 08:30 for tenant-a h100. */
	ck_assert_int_eq(
		bill_snap_take(a, st, T0 + H / 2, BILL_BASIS_RESERVED, &err),
		LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "tenant-a h100"));
	/* Snapshots out of order. */
	ck_assert_int_eq(
		bill_snap_take(a, st, T0 + 2 * H, BILL_BASIS_RESERVED, &err),
		0);
	ck_assert_int_eq(
		bill_snap_take(b, st, T0 + H, BILL_BASIS_RESERVED, &err), 0);
	ck_assert_int_eq(bill_period_usage(a, b, false, collect, &l, &err),
			 LG_EINVAL);
	/* Snapshots of two histories: an accumulator goes down. */
	ck_assert_int_eq(
		bill_snap_take(b, other, T0 + 3 * H, BILL_BASIS_RESERVED, &err),
		0);
	ck_assert_int_eq(bill_period_usage(a, b, false, collect, &l, &err),
			 LG_ECORRUPT);
	ck_assert_int_eq(l.n, 0);
	bill_snap_free(a);
	bill_snap_free(b);
	state_free(st);
	state_free(other);
}
END_TEST

START_TEST(billing_snap_stop)
{
	state_t *st = tree_state();
	struct bill_snap *a = bill_snap_new(), *b = bill_snap_new();
	struct lg_error err = {0};
	struct lines l = {{0}, 1, 0};

	ck_assert_int_eq(bill_snap_take(a, st, T0, BILL_BASIS_RESERVED, &err),
			 0);
	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'RESERVE', "
		     "'namespace': 'tenant-a', 'class': 'h100', 'kind': "
		     "'VMInstance', 'name': 'vm1', 'uid': 'u1', 'before': 0, "
		     "'after': 2}");
	apply_ok(st, "{'time': '2026-03-01T08:00:00Z', 'type': 'RESERVE', "
		     "'namespace': 'tenant-a-b', 'class': 'h100', 'kind': "
		     "'VMInstance', 'name': 'vm2', 'uid': 'u2', 'before': 0, "
		     "'after': 1}");
	ck_assert_int_eq(
		bill_snap_take(b, st, T0 + H, BILL_BASIS_RESERVED, &err), 0);
	/* fn's non-zero value stops the walk and comes back. */
	ck_assert_int_eq(bill_period_usage(a, b, true, collect, &l, &err), 42);
	ck_assert_int_eq(l.n, 1);
	l = (struct lines){{0}, 3, 0};
	ck_assert_int_eq(bill_period_usage(a, b, true, collect, &l, &err), 42);
	ck_assert_str_eq(l.text, "tenant-a h100 7200000\n"
				 "tenant-a-b h100 3600000\n"
				 "tenant-a h100 10800000 subtree\n");
	bill_snap_free(a);
	bill_snap_free(b);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Rows */

static struct bill_row sample_row(void)
{
	struct bill_row r = {
		.billing_start_ms = T0,
		.billing_end_ms = T0 + D + 1500,
		.charge_start_ms = T0 + H,
		.charge_end_ms = T0 + 2 * H,
		.ns = "tenant-a-b",
		.cls = "h100",
		.basis = BILL_BASIS_ALLOCATED,
		.device_ms = 5400000,
		.currency = "EUR",
		.priced = true,
		.list_unit_nano = 3200000000LL,
		.contracted_unit_nano = 2500000000LL,
		.list_cost_nano = 4800000000LL,
		.billed_cost_nano = 3750000000LL,
		.seq_start = 17,
		.seq_end = 21,
	};

	for (int i = 0; i < BILL_HEAD_BYTES; i++)
		r.chain_head[i] = (uint8_t)(i * 17);
	return r;
}

static const char sample_head[] = "00112233445566778899aabbccddeeff"
				  "102132435465768798a9bacbdcedfe0f";

/* The value of column name in a CSV line under header, into out (a
 * quoted field as it stands, quotes and all). */
static void csv_col(const char *header, const char *line, const char *name,
		    char *out, size_t cap)
{
	char *h = strdup(header), *save = NULL;
	int idx = -1, i = 0;
	const char *end;

	for (char *t = strtok_r(h, ",", &save); t;
	     t = strtok_r(NULL, ",", &save), i++)
		if (strcmp(t, name) == 0)
			idx = i;
	free(h);
	ck_assert_msg(idx >= 0, "no column %s", name);
	for (i = 0;; i++) {
		bool quoted = false;

		for (end = line; *end && (quoted || *end != ','); end++)
			if (*end == '"')
				quoted = !quoted;
		if (i == idx)
			break;
		ck_assert_msg(*end == ',', "too few fields for %s", name);
		line = end + 1;
	}
	snprintf(out, cap, "%.*s", (int)(end - line), line);
}

static void row_has(const char *header, const char *line, const char *name,
		    const char *want)
{
	char got[256];

	csv_col(header, line, name, got, sizeof(got));
	ck_assert_msg(strcmp(got, want) == 0, "%s: \"%s\", want \"%s\"", name,
		      got, want);
}

START_TEST(billing_rows_csv)
{
	struct bill_row r = sample_row();
	char buf[4096], h[2048], hs[2048];
	size_t n, hn;
	int ncols = 1, vcols = 1;

	hn = bill_csv_header(false, NULL, BILL_FOCUS_1_2, h, sizeof(h));
	ck_assert_uint_eq(hn, strlen(h));
	for (const char *p = h; *p; p++)
		ncols += *p == ',';
	ck_assert_int_eq(ncols, 47); /* 39 FOCUS columns, 8 x_ ones */
	n = bill_row_csv(&r, false, buf, sizeof(buf));
	ck_assert_uint_eq(n, strlen(buf));
	/* Tags and SkuPriceDetails are quoted JSON with commas inside:
	 * count the fields outside quotes. */
	for (const char *p = buf, *q = NULL; *p; p++) {
		if (*p == '"')
			q = q ? NULL : p;
		vcols += *p == ',' && q == NULL;
	}
	ck_assert_int_eq(vcols, ncols);
	row_has(h, buf, "BillingPeriodStart", "2026-03-01T08:00:00Z");
	/* Fractions never appear: a time is floored to the second. */
	row_has(h, buf, "BillingPeriodEnd", "2026-03-02T08:00:01Z");
	row_has(h, buf, "ChargePeriodStart", "2026-03-01T09:00:00Z");
	row_has(h, buf, "ChargeCategory", "Usage");
	row_has(h, buf, "ChargeClass", "");
	row_has(h, buf, "PricingQuantity", "1.500000000");
	row_has(h, buf, "ConsumedQuantity", "1.500000000");
	row_has(h, buf, "ListUnitPrice", "3.200000000");
	row_has(h, buf, "ContractedUnitPrice", "2.500000000");
	row_has(h, buf, "ListCost", "4.800000000");
	row_has(h, buf, "ContractedCost", "3.750000000");
	row_has(h, buf, "BilledCost", "3.750000000");
	row_has(h, buf, "EffectiveCost", "3.750000000");
	row_has(h, buf, "BillingCurrency", "EUR");
	row_has(h, buf, "ServiceCategory", "Compute");
	row_has(h, buf, "ServiceName", "GPU Compute");
	row_has(h, buf, "ResourceId",
		"cluster/namespaces/tenant-a-b/gpuclasses/h100");
	row_has(h, buf, "SkuId", "gpuclass/h100");
	row_has(h, buf, "SkuPriceId", "gpuclass/h100/EUR");
	row_has(h, buf, "SubAccountId", "tenant-a-b");
	row_has(h, buf, "SubAccountType", "Tenant");
	row_has(h, buf, "x_TenantPath", "tenant-root/tenant-a/tenant-a-b");
	row_has(h, buf, "x_BillingPeriodStatus", "closed");
	row_has(h, buf, "x_LedgerSeqEnd", "21");
	row_has(h, buf, "x_ChainHead", sample_head);
	row_has(h, buf, "x_DeviceMilliseconds", "5400000");
	ck_assert_ptr_nonnull(
		strstr(buf, ",\"{\"\"gpuledger/tenantPath\"\":\"\"tenant-root/"
			    "tenant-a/tenant-a-b\"\","));
	/* With --rollup: x_Scope last. */
	bill_row_csv(&r, true, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, ",5400000,namespace"));
	r.subtree = true;
	r.period_open = true;
	bill_row_csv(&r, true, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, ",5400000,subtree"));
	bill_csv_header(true, NULL, BILL_FOCUS_1_2, hs, sizeof(hs));
	ck_assert_str_eq(hs + strlen(h), ",x_Scope");
	row_has(hs, buf, "ResourceId",
		"cluster/subtrees/tenant-a-b/gpuclasses/h100");
	row_has(hs, buf, "x_BillingPeriodStatus", "open");
	/* Too small a buffer: the length needed, like snprintf. */
	n = bill_row_csv(&r, true, buf, sizeof(buf));
	ck_assert_uint_eq(bill_row_csv(&r, true, buf, 10), n);
	ck_assert_uint_eq(strlen(buf), 9);
	/* A namespace outside the tenant tree is its own path. */
	r.ns = "default";
	r.subtree = false;
	bill_row_csv(&r, false, buf, sizeof(buf));
	row_has(h, buf, "x_TenantPath", "default");
	row_has(h, buf, "SubAccountType", "Namespace");
}
END_TEST

START_TEST(billing_rows_configured)
{
	struct bill_row r = sample_row();
	struct bill_rates cfg;
	struct lg_error err = {0};
	json_t *doc = json_loads("{\"billingAccountId\": \"acme, \\\"eu\\\"\", "
				 "\"providerName\": \"Acme\", "
				 "\"regionId\": \"eu-1\", "
				 "\"serviceName\": \"H100 Cloud\"}",
				 0, NULL);
	char buf[4096], h[2048];

	ck_assert_int_eq(bill_rates_parse(&cfg, doc, &err), 0);
	json_decref(doc);
	ck_assert(!cfg.priced);
	ck_assert_str_eq(cfg.account_name, "acme, \"eu\"");
	ck_assert_str_eq(cfg.publisher, "Acme");
	ck_assert_str_eq(cfg.issuer, "Acme");
	ck_assert_str_eq(cfg.region_name, "eu-1");
	r.cfg = &cfg;
	bill_csv_header(false, &cfg, BILL_FOCUS_1_2, h, sizeof(h));
	ck_assert_ptr_nonnull(strstr(h, ",PublisherName,RegionId,RegionName,"));
	bill_row_csv(&r, false, buf, sizeof(buf));
	/* RFC 4180 quoting for a name with a comma and quotes. */
	ck_assert_ptr_nonnull(strstr(buf, ",EUR,"));
	ck_assert_ptr_nonnull(
		strstr(buf, ",\"acme, \"\"eu\"\"\",\"acme, \"\"eu\"\"\","));
	ck_assert_ptr_nonnull(strstr(buf, ",Acme,Acme,eu-1,eu-1,\"acme, "));
	ck_assert_ptr_nonnull(strstr(buf, ",H100 Cloud,"));
	bill_rates_release(&cfg);
}
END_TEST

START_TEST(billing_rows_json)
{
	struct bill_row r = sample_row();
	json_t *o = bill_row_json(&r);
	char *s, h[2048];

	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(json_object_size(o), 48);
	ck_assert_str_eq(jstr(o, "ConsumedQuantity"), "1.500000000");
	ck_assert_str_eq(jstr(o, "BilledCost"), "3.750000000");
	ck_assert_str_eq(jstr(o, "BillingPeriodEnd"), "2026-03-02T08:00:01Z");
	ck_assert_str_eq(jstr(o, "x_ChainHead"), sample_head);
	ck_assert_str_eq(jstr(o, "x_Scope"), "namespace");
	ck_assert(json_is_null(json_object_get(o, "ChargeClass")));
	ck_assert_int_eq(
		json_integer_value(json_object_get(o, "x_DeviceMilliseconds")),
		5400000);
	ck_assert_int_eq(
		json_integer_value(json_object_get(o, "x_LedgerSeqEnd")), 21);
	/* The JSON keys are the CSV header's columns. */
	bill_csv_header(true, NULL, BILL_FOCUS_1_2, h, sizeof(h));
	s = strdup(h);
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ","))
		ck_assert_msg(json_object_get(o, tok) != NULL, "no %s", tok);
	free(s);
	json_decref(o);
}
END_TEST

/* The months a --month or month= may name (DESIGN 7: every month outside
 * 1970..9999 is refused, never arithmetic that overflows): text that is
 * not YYYY-MM in 1970..9999 is LG_EINVAL; a month the ledger cannot date
 * whole (int64 ns end on 2262-04-11; before 1970 at the offset) is
 * LG_ERANGE; every month accepted has bounds that fit int64 ns. */
static const struct {
	const char *in;
	int32_t off;
	int rc;
} month_edges[] = {
	{"1969-12", 0, LG_EINVAL},
	{"1970-01", 0, 0},
	{"1970-01", -50400, 0},	  /* starts 14:00Z on the 1st */
	{"1970-01", 3600, LG_ERANGE}, /* starts 23:00Z the day before */
	{"2262-03", 0, 0},
	{"2262-03", -50400, 0}, /* ends 2262-04-01T14:00Z */
	{"2262-04", 0, LG_ERANGE},
	{"2262-04", 50400, LG_ERANGE},
	{"2262-05", 0, LG_ERANGE},
	{"5000-01", 0, LG_ERANGE},
	{"9999-12", 0, LG_ERANGE},
	{"9999-12", -50400, LG_ERANGE},
	{"10000-01", 0, LG_EINVAL},
	{"0000-01", 0, LG_EINVAL},
	{"-1", 0, LG_EINVAL},
	{"-001-01", 0, LG_EINVAL},
	{"99999999999999999999", 0, LG_EINVAL},
	{"9223372036854775807", 0, LG_EINVAL},
	{"2026-00", 0, LG_EINVAL},
	{"", 0, LG_EINVAL},
};

START_TEST(billing_month_edges)
{
	for (size_t i = 0; i < sizeof(month_edges) / sizeof(month_edges[0]);
	     i++) {
		int64_t a = 0, b = 0;
		int rc = bill_month_parse(month_edges[i].in, month_edges[i].off,
					  &a, &b);
		const char *why =
			bill_month_why(month_edges[i].in, month_edges[i].off);

		ck_assert_msg(rc == month_edges[i].rc, "%s at %d: rc %d",
			      month_edges[i].in, (int)month_edges[i].off, rc);
		if (rc == 0) {
			ck_assert(a >= 0 && a < b);
			ck_assert(b <= INT64_MAX / 1000000);
		}
		if (rc == LG_EINVAL)
			ck_assert_ptr_nonnull(strstr(why, "expected YYYY-MM"));
		if (rc == LG_ERANGE)
			ck_assert_ptr_nonnull(
				strstr(why, a < 0 ? "before 1970" : "beyond"));
	}
	/* The last month starts and ends within the last int64 ns. */
	{
		int64_t a, b;

		ck_assert_int_eq(bill_month_parse("2262-03", 0, &a, &b), 0);
		ck_assert_int_eq(b, 9222422400000LL); /* 2262-04-01T00:00Z */
	}
}
END_TEST

/* Calendar months in UTC and at fixed offsets, checked against timegm over
 * every month from 1970 to 2400, and the local hour and day boundaries
 * that cut them. */
START_TEST(billing_months)
{
	static const int32_t offs[] = {0, 7200, -18000, 19800, 50400, -43200};
	int64_t a, b;
	int32_t off;

	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
		for (int y = 1970; y < 2400; y++)
			for (int m = 1; m <= 12; m++) {
				struct tm tm = {.tm_year = y - 1900,
						.tm_mon = m - 1,
						.tm_mday = 1};
				int64_t want = (int64_t)timegm(&tm) * 1000 -
					       (int64_t)offs[k] * 1000;
				int64_t s0, e0;
				char txt[16];

				bill_month_of(want, offs[k], &s0, &e0);
				ck_assert_int_eq(s0, want);
				bill_month_of(e0 - 1, offs[k], &a, &b);
				ck_assert_int_eq(a, s0);
				ck_assert_int_eq(b, e0);
				tm = (struct tm){.tm_year = y - 1900,
						 .tm_mon = m, .tm_mday = 1};
				ck_assert_int_eq(e0,
						 (int64_t)timegm(&tm) * 1000 -
							 (int64_t)offs[k] * 1000);
				snprintf(txt, sizeof(txt), "%04d-%02d", y, m);
				/* Whole months the ledger can date, and none
				 * else (the bounds are set either way). */
				ck_assert_int_eq(bill_month_parse(txt, offs[k],
								  &a, &b),
						 s0 >= 0 && e0 <= INT64_MAX /
									  1000000
							 ? 0
							 : LG_ERANGE);
				ck_assert_int_eq(a, s0);
				ck_assert_int_eq(b, e0);
				/* A month is a whole number of local days. */
				ck_assert_int_eq(bill_boundary_after(
							 s0 - 1, BILL_STEP_DAY,
							 offs[k]),
						 s0);
				ck_assert_int_eq(bill_boundary_after(
							 s0 - 1, BILL_STEP_HOUR,
							 offs[k]),
						 s0);
			}
	ck_assert_int_eq(bill_month_parse("2026-13", 0, &a, &b), LG_EINVAL);
	ck_assert_int_eq(bill_month_parse("2026-1", 0, &a, &b), LG_EINVAL);
	ck_assert_int_eq(bill_month_parse("1969-12", 0, &a, &b), LG_EINVAL);
	ck_assert_int_eq(bill_month_parse("2026-01-01", 0, &a, &b), LG_EINVAL);
	ck_assert_int_eq(bill_month_parse(NULL, 0, &a, &b), LG_EINVAL);
	ck_assert_int_eq(model__bill_offset_parse("Z", &off), 0);
	ck_assert_int_eq(off, 0);
	ck_assert_int_eq(model__bill_offset_parse("+05:30", &off), 0);
	ck_assert_int_eq(off, 19800);
	ck_assert_int_eq(model__bill_offset_parse("-12:00", &off), 0);
	ck_assert_int_eq(off, -43200);
	ck_assert_int_eq(model__bill_offset_parse("+14:01", &off), LG_EINVAL);
	ck_assert_int_eq(model__bill_offset_parse("+0200", &off), LG_EINVAL);
	ck_assert_int_eq(model__bill_offset_parse("02:00", &off), LG_EINVAL);
	ck_assert_int_eq(model__bill_offset_parse("+02:60", &off), LG_EINVAL);
	ck_assert_int_eq(model__bill_offset_parse("Europe/Berlin", &off),
			 LG_EINVAL);
}
END_TEST

START_TEST(billing_rows_opencost)
{
	struct bill_opencost oc;
	struct bill_row r = sample_row();
	struct lg_error err = {0};
	char line[BILL_LINE_MAX];

	ck_assert_str_eq(bill_opencost_header(),
			 "Date,Namespace,GPUs,GPUCost,TotalCost");
	bill_opencost_init(&oc);
	ck_assert_int_eq(bill_opencost_flush(&oc, line), 0);
	/* A 20-hour day (clipped by the horizon), two classes. */
	r.charge_start_ms = T0 + 16 * H;
	r.charge_end_ms = T0 + 36 * H;
	r.ns = "tenant-a";
	r.device_ms = 27 * H;
	r.billed_cost_nano = 1000000001;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), 0);
	r.cls = "a10";
	r.device_ms = 44 * H;
	r.billed_cost_nano = 2;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), 0);
	r.ns = "tenant-b";
	r.device_ms = 1;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), 1);
	ck_assert_str_eq(line, "2026-03-02,tenant-a,3.550000000,1.000000003,"
			       "1.000000003");
	/* The same namespace on the next day is a new line. */
	r.charge_start_ms = T0 + 40 * H;
	r.charge_end_ms = T0 + 64 * H;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), 1);
	ck_assert_str_eq(line, "2026-03-02,tenant-b,0.000000013,0.000000002,"
			       "0.000000002");
	ck_assert_int_eq(bill_opencost_flush(&oc, line), 1);
	ck_assert_str_eq(line, "2026-03-03,tenant-b,0.000000011,0.000000002,"
			       "0.000000002");
	ck_assert_int_eq(bill_opencost_flush(&oc, line), 0);
	/* Refused: subtree rows, empty periods, sums that overflow. */
	r.subtree = true;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), LG_EINVAL);
	r.subtree = false;
	r.charge_end_ms = r.charge_start_ms;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), LG_EINVAL);
	r.charge_end_ms = r.charge_start_ms + D;
	r.device_ms = INT64_MAX;
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), 0);
	ck_assert_int_eq(bill_opencost_add(&oc, &r, line, &err), LG_ERANGE);
}
END_TEST

MODEL_PART(billing)
{
	TCase *tc = tcase_create("billing_period");

	tcase_add_test(tc, billing_period_end);
	tcase_add_test(tc, billing_period_names);
	suite_add_tcase(s, tc);
	tc = tcase_create("billing_decimal");
	tcase_add_test(tc, billing_decimal_parse);
	tcase_add_test(tc, billing_decimal_format);
	tcase_add_test(tc, billing_cost_rounding);
	suite_add_tcase(s, tc);
	tc = tcase_create("billing_rates");
	tcase_add_test(tc, billing_rates_valid);
	tcase_add_test(tc, billing_rates_single_currency);
	tcase_add_test(tc, billing_rates_invalid);
	tcase_add_test(tc, billing_rates_bounded);
	suite_add_tcase(s, tc);
	tc = tcase_create("billing_snap");
	tcase_add_test(tc, billing_path_rows);
	tcase_add_test(tc, billing_snap_usage);
	tcase_add_test(tc, billing_rates_cover);
	tcase_add_test(tc, billing_snap_refused);
	tcase_add_test(tc, billing_snap_stop);
	suite_add_tcase(s, tc);
	tc = tcase_create("billing_rows");
	tcase_add_test(tc, billing_rows_csv);
	tcase_add_test(tc, billing_rows_json);
	tcase_add_test(tc, billing_rows_configured);
	tcase_add_test(tc, billing_months);
	tcase_add_test(tc, billing_month_edges);
	tcase_add_test(tc, billing_rows_opencost);
	suite_add_tcase(s, tc);
}
