/*
 * Billing (DESIGN 8): the pure half of `gpuledger export`.
 *
 * The state keeps, per namespace and class, the device-milliseconds
 * integrated up to the last change (struct bill); a snapshot carries them
 * forward to a period boundary, and the usage of a period is the
 * difference of the snapshots at its two ends. Because every period's
 * figure is such a difference, the figures of any split of a range add up
 * to the range's figure exactly, to the millisecond.
 *
 * Money is integer nano units of a currency and prices are read from
 * decimal text: a float would make an invoice line depend on the machine.
 */
#include "model/model_int.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

#define NANO	      1000000000LL
#define CHAIN_MAX     128 /* a tenant name of <= 253 chars has fewer levels */
#define TIME_TEXT_MAX 40

/* ---------------------------------------------------------------------- */
/* Names */

static const char *const step_names[] = {
	[BILL_STEP_HOUR] = "hour",
	[BILL_STEP_DAY] = "day",
};

static const char *const basis_names[] = {
	[BILL_BASIS_RESERVED] = "reserved",
	[BILL_BASIS_ALLOCATED] = "allocated",
};

#define N_STEPS (sizeof(step_names) / sizeof(step_names[0]))
#define N_BASES (sizeof(basis_names) / sizeof(basis_names[0]))

const char *model__bill_step_name(enum bill_step s)
{
	return (size_t)s < N_STEPS ? step_names[s] : "?";
}

const char *model__bill_basis_name(enum bill_basis b)
{
	return (size_t)b < N_BASES ? basis_names[b] : "?";
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s != NULL && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

int64_t model__bill_period_end(int64_t t_ms, enum bill_step step)
{
	int64_t len =
		step == BILL_STEP_DAY ? BILL_MS_PER_DAY : BILL_MS_PER_HOUR;
	int64_t q = t_ms / len;

	/* Floor, not truncation: Unix time has no leap seconds, so UTC hours
	 * and days are exact multiples of their length from the epoch. */
	if (t_ms % len < 0)
		q--;
	return (q + 1) * len;
}

/* Calendar arithmetic on day numbers (days since 1970-01-01), after Howard
 * Hinnant's "chrono-compatible low-level date algorithms": exact for every
 * proleptic Gregorian date, no tables, no libc time zone state. */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

int64_t bill_boundary_after(int64_t t_ms, enum bill_step step,
			    int32_t offset_s)
{
	int64_t off = (int64_t)offset_s * 1000;

	return model__bill_period_end(t_ms + off, step) - off;
}

static void month_bounds(int64_t y, unsigned m, int32_t offset_s,
			 int64_t *start_ms, int64_t *end_ms)
{
	int64_t off = (int64_t)offset_s * 1000;

	*start_ms = days_from_civil(y, m, 1) * BILL_MS_PER_DAY - off;
	*end_ms = days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) *
			  BILL_MS_PER_DAY -
		  off;
}

void bill_month_of(int64_t t_ms, int32_t offset_s, int64_t *start_ms,
		   int64_t *end_ms)
{
	int64_t y;
	unsigned m;

	civil_from_days(floor_div(t_ms + (int64_t)offset_s * 1000,
				  BILL_MS_PER_DAY),
			&y, &m);
	month_bounds(y, m, offset_s, start_ms, end_ms);
}

int bill_month_parse(const char *s, int32_t offset_s, int64_t *start_ms,
		     int64_t *end_ms)
{
	int y, m;

	if (s == NULL || strlen(s) != 7 || s[4] != '-' ||
	    !model__digits(s, 4, &y) || !model__digits(s + 5, 2, &m) ||
	    y < 1970 || m < 1 || m > 12)
		return LG_EINVAL;
	month_bounds(y, (unsigned)m, offset_s, start_ms, end_ms);
	/* The bounds in ms always fit (year 9999 is 2.5e14 ms); in ns they
	 * fit only up to 2262-04-11, and a month is billed whole or not at
	 * all. */
	if (*start_ms < 0 || *end_ms > INT64_MAX / 1000000)
		return LG_ERANGE;
	return 0;
}

const char *bill_month_why(const char *s, int32_t offset_s)
{
	int64_t a, b;
	int rc = bill_month_parse(s, offset_s, &a, &b);

	if (rc == LG_ERANGE && a < 0)
		return "starts before 1970-01-01T00:00:00Z (at the billing "
		       "offset), where the ledger's times start";
	if (rc == LG_ERANGE)
		return "ends beyond what the ledger can date (its times end "
		       "at " TIME_LAST_TEXT ", the last nanosecond of int64; "
		       "the last month is 2262-03)";
	return "is not a month: expected YYYY-MM, 1970-01 to 9999-12";
}

int model__bill_offset_parse(const char *s, int32_t *offset_s)
{
	int h, m;

	if (s != NULL && strcmp(s, "Z") == 0) {
		*offset_s = 0;
		return 0;
	}
	if (s == NULL || strlen(s) != 6 || (s[0] != '+' && s[0] != '-') ||
	    s[3] != ':' || !model__digits(s + 1, 2, &h) ||
	    !model__digits(s + 4, 2, &m) || m > 59 || h * 60 + m > 14 * 60)
		return LG_EINVAL;
	*offset_s = (s[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Snapshots */

struct bill_acc {
	const char *ns, *cls; /* borrowed from the state */
	int64_t ms;
};

struct bill_snap {
	int64_t t_ms;
	size_t n, cap;
	struct bill_acc *v;
};

struct bill_snap *bill_snap_new(void)
{
	return lg_xcalloc(1, sizeof(struct bill_snap));
}

void bill_snap_free(struct bill_snap *s)
{
	if (s == NULL)
		return;
	free(s->v);
	free(s);
}

int64_t bill_snap_time_ms(const struct bill_snap *s)
{
	return s->t_ms;
}

struct cls_ord {
	const char *name;
	uint32_t id;
};

static int cls_ord_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cls_ord *)a)->name,
		      ((const struct cls_ord *)b)->name);
}

static void snap_push(struct bill_snap *s, const char *ns, const char *cls,
		      int64_t ms)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = lg_xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (struct bill_acc){ns, cls, ms};
}

/* One namespace's accumulators, classes in name order. */
static int snap_ns(struct bill_snap *s, const struct nsrec *ns,
		   const struct cls_ord *ord, uint32_t n_cls, int64_t t_ms,
		   enum bill_basis basis, struct lg_error *err)
{
	for (uint32_t i = 0; i < n_cls; i++) {
		uint32_t id = ord[i].id;
		int64_t r, a;

		if (ns->bill[id].since_ms > t_ms)
			return lg_error_set(err, LG_EINVAL,
					    "billing %s %s: integrated up to "
					    "%lld ms, past %lld ms",
					    ns->name, ord[i].name,
					    (long long)ns->bill[id].since_ms,
					    (long long)t_ms);
		if (model__nsrec_bill_at(ns, id, t_ms, &r, &a) != 0)
			return lg_error_set(err, LG_ERANGE,
					    "billing %s %s: device-ms at %lld "
					    "ms overflow int64",
					    ns->name, ord[i].name,
					    (long long)t_ms);
		r = basis == BILL_BASIS_ALLOCATED ? a : r;
		if (r != 0)
			snap_push(s, ns->name, ord[i].name, r);
	}
	return 0;
}

int bill_snap_take(struct bill_snap *s, const state_t *st, int64_t t_ms,
		   enum bill_basis basis, struct lg_error *err)
{
	struct cls_ord *ord = lg_xcalloc(st->n_cls + 1, sizeof(*ord));
	size_t n_ns = 0;
	struct nsrec **v = model__state_ns_sorted(st, &n_ns);
	int rc = 0;

	for (uint32_t i = 0; i < st->n_cls; i++)
		ord[i] = (struct cls_ord){st->cls_names[i], i};
	qsort(ord, st->n_cls, sizeof(*ord), cls_ord_cmp);
	s->n = 0;
	s->t_ms = t_ms;
	for (size_t i = 0; i < n_ns && rc == 0; i++)
		rc = snap_ns(s, v[i], ord, st->n_cls, t_ms, basis, err);
	if (rc != 0)
		s->n = 0;
	free(v);
	free(ord);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Usage of a period */

/* ancestors_inclusive(ns), nearest first (DESIGN 2.1); one entry for a
 * namespace that is not a tenant. Returns the count. */
static size_t chain_of(const char *ns, char (*out)[DNS1123_SUBDOMAIN_MAX + 1])
{
	size_t n = 1;

	snprintf(out[0], sizeof(out[0]), "%s", ns);
	while (n < CHAIN_MAX && ns_parent(out[n - 1], out[n]))
		n++;
	return n;
}

struct sub_acc {
	char tenant[DNS1123_SUBDOMAIN_MAX + 1];
	const char *cls;
	int64_t ms;
};

struct rollup {
	size_t n, cap;
	struct sub_acc *v;
};

static void rollup_add(struct rollup *ru, const char *ns, const char *cls,
		       int64_t ms)
{
	char chain[CHAIN_MAX][DNS1123_SUBDOMAIN_MAX + 1];
	size_t n;

	if (!ns_is_tenant(ns))
		return;
	n = chain_of(ns, chain);
	for (size_t i = 0; i < n; i++) {
		if (ru->n == ru->cap) {
			ru->cap = ru->cap ? 2 * ru->cap : 64;
			ru->v = lg_xrealloc(ru->v, ru->cap * sizeof(*ru->v));
		}
		memcpy(ru->v[ru->n].tenant, chain[i], sizeof(chain[i]));
		ru->v[ru->n].cls = cls;
		ru->v[ru->n++].ms = ms;
	}
}

static int sub_acc_cmp(const void *a, const void *b)
{
	const struct sub_acc *x = a, *y = b;
	int c = strcmp(x->tenant, y->tenant);

	return c ? c : strcmp(x->cls, y->cls);
}

/* Sums equal (tenant, class) entries and hands each sum to fn. */
static int rollup_emit(struct rollup *ru, bill_usage_fn *fn, void *ctx,
		       struct lg_error *err)
{
	size_t i = 0, j;
	int rc = 0;

	if (ru->n == 0)
		return 0; /* and ru->v may be NULL, which qsort may not get */
	qsort(ru->v, ru->n, sizeof(*ru->v), sub_acc_cmp);
	for (; i < ru->n && rc == 0; i = j) {
		struct bill_usage u = {ru->v[i].tenant, ru->v[i].cls, true, 0};

		for (j = i; j < ru->n && sub_acc_cmp(&ru->v[i], &ru->v[j]) == 0;
		     j++)
			if (__builtin_add_overflow(u.device_ms, ru->v[j].ms,
						   &u.device_ms))
				return lg_error_set(err, LG_ERANGE,
						    "subtree %s %s: usage "
						    "overflows",
						    u.ns, u.cls);
		rc = fn(ctx, &u);
	}
	return rc;
}

static int acc_cmp(const struct bill_acc *x, const struct bill_acc *y)
{
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->cls, y->cls);
}

/* One namespace's usage: b's figure minus a's (NULL: 0). */
static int ns_usage(const struct bill_acc *a, const struct bill_acc *b,
		    struct rollup *ru, bill_usage_fn *fn, void *ctx,
		    struct lg_error *err)
{
	const struct bill_acc *k = b ? b : a;
	int64_t d = (b ? b->ms : 0) - (a ? a->ms : 0);
	struct bill_usage u;

	/* The merge join of bill_diff passes one side or both, never none. */
	LG_ASSERT(k != NULL);
	u = (struct bill_usage){k->ns, k->cls, false, d};
	if (d < 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "billing %s %s: accumulator went down by "
				    "%lld ms",
				    k->ns, k->cls, (long long)-d);
	if (d == 0)
		return 0;
	if (ru != NULL)
		rollup_add(ru, u.ns, u.cls, d);
	return fn(ctx, &u);
}

int bill_period_usage(const struct bill_snap *a, const struct bill_snap *b,
		      bool rollup, bill_usage_fn *fn, void *ctx,
		      struct lg_error *err)
{
	struct rollup ru = {0};
	size_t i = 0, j = 0;
	int rc = 0;

	if (b->t_ms < a->t_ms)
		return lg_error_set(err, LG_EINVAL,
				    "billing: snapshots out of order");
	/* Both lists are sorted by (namespace, class): a merge join. */
	while (rc == 0 && (i < a->n || j < b->n)) {
		int c = i == a->n   ? 1
			: j == b->n ? -1
				    : acc_cmp(&a->v[i], &b->v[j]);
		const struct bill_acc *x = c <= 0 ? &a->v[i++] : NULL;
		const struct bill_acc *y = c >= 0 ? &b->v[j++] : NULL;

		rc = ns_usage(x, y, rollup ? &ru : NULL, fn, ctx, err);
	}
	if (rc == 0 && rollup)
		rc = rollup_emit(&ru, fn, ctx, err);
	free(ru.v);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Text */

size_t model__bill_tenant_path(const char *ns, char *buf, size_t cap)
{
	char chain[CHAIN_MAX][DNS1123_SUBDOMAIN_MAX + 1];
	size_t n = chain_of(ns, chain), len = 0;

	if (cap > 0)
		buf[0] = '\0';
	/* Root first: the chain is nearest first. */
	for (size_t i = n; i-- > 0;) {
		int k = snprintf(len < cap ? buf + len : NULL,
				 len < cap ? cap - len : 0, "%s%s",
				 i + 1 < n ? "/" : "", chain[i]);

		len += k > 0 ? (size_t)k : 0;
	}
	return len;
}

size_t model__bill_format_ratio(int64_t num, int64_t den, char *buf, size_t cap)
{
	u128 r = (u128)(num % den) * (u128)NANO / (u128)den;
	int n = snprintf(buf, cap, "%lld.%09lld", (long long)(num / den),
			 (long long)r);

	return n < 0 ? 0 : (size_t)n;
}

size_t model__bill_format_nano(int64_t nano, char *buf, size_t cap)
{
	uint64_t m = nano < 0 ? -(uint64_t)nano : (uint64_t)nano;
	int n = snprintf(buf, cap, "%s%llu.%09llu", nano < 0 ? "-" : "",
			 (unsigned long long)(m / NANO),
			 (unsigned long long)(m % NANO));

	return n < 0 ? 0 : (size_t)n;
}

int model__bill_decimal_parse(const char *s, int64_t *nano)
{
	int64_t whole = 0, frac = 0;
	const char *p = s;
	int nf = 0;

	if (s == NULL || *p < '0' || *p > '9')
		return LG_EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(whole, 10, &whole) ||
		    __builtin_add_overflow(whole, *p - '0', &whole))
			return LG_ERANGE;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nf++)
			if (nf < 9)
				frac = frac * 10 + (*p - '0');
		/* More digits than a nano unit holds would be rounded
		 * silently; a price list should say what it means. */
		if (nf == 0 || nf > 9)
			return LG_EINVAL;
	}
	if (*p != '\0')
		return LG_EINVAL;
	for (; nf < 9; nf++)
		frac *= 10;
	if (__builtin_mul_overflow(whole, NANO, &whole) ||
	    __builtin_add_overflow(whole, frac, nano))
		return LG_ERANGE;
	return 0;
}

int bill_cost(int64_t device_ms, int64_t price_nano, int64_t *cost_nano)
{
	u128 hours, frac, c;

	if (device_ms < 0 || price_nano < 0)
		return LG_EINVAL;
	/* FOCUS asks that ListCost = ListUnitPrice x PricingQuantity, so the
	 * cost is the product of the quantity as row_numbers prints it
	 * (model__bill_format_ratio: whole hours, then nano-hours truncated)
	 * and the price, not of the exact device-ms. The quantity in nano
	 * units may pass int64 (2.6e21 for INT64_MAX ms), and its product
	 * with a price 2^135, so it is split: hours < 2^42 times a price
	 * < 2^63 is exact in 128 bits, and so is frac < 10^9 times it; only
	 * the second has a fraction of a nano unit, rounded half up. */
	hours = (u128)(device_ms / BILL_MS_PER_HOUR);
	frac = (u128)(device_ms % BILL_MS_PER_HOUR) * NANO / BILL_MS_PER_HOUR;
	c = hours * (u128)price_nano +
	    (frac * (u128)price_nano + NANO / 2) / NANO;
	if (c > INT64_MAX)
		return LG_ERANGE;
	*cost_nano = (int64_t)c;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Rates */

/* The names a deployment that configures nothing bills under (DESIGN 8). */
static const struct bill_rates rates_default = {
	.account_id = "cluster",
	.account_name = "cluster",
	.provider = "Cozystack",
	.publisher = "Cozystack",
	.issuer = "Cozystack",
	.service = "GPU Compute",
	.service_provider = "Cozystack",
	.host_provider = "Cozystack",
};

void bill_rates_init(struct bill_rates *r)
{
	*r = rates_default;
}

void bill_rates_release(struct bill_rates *r)
{
	if (r == NULL)
		return;
	free(r->r);
	bill_rates_init(r);
}

static int price_of(const json_t *v, int64_t *nano)
{
	if (json_is_string(v))
		return model__bill_decimal_parse(json_string_value(v), nano);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return LG_EINVAL;
	if (__builtin_mul_overflow((int64_t)json_integer_value(v), NANO, nano))
		return LG_ERANGE;
	return 0;
}

static bool currency_ok(const char *c)
{
	if (c == NULL || strlen(c) != 3)
		return false;
	for (int i = 0; i < 3; i++)
		if (c[i] < 'A' || c[i] > 'Z')
			return false;
	return true;
}

static const char *const rate_members[] = {"class", "currency", "listUnitPrice",
					   "billedUnitPrice"};

static int rate_parse(struct bill_rate *r, const json_t *e, size_t i,
		      struct lg_error *err)
{
	const char *cls = jstr(e, "class"), *cur = jstr(e, "currency"), *k;
	const json_t *billed = json_object_get(e, "billedUnitPrice"), *v;

	if (!json_is_object(e))
		return lg_error_set(err, LG_EINVAL, "rates[%zu]: not an object",
				    i);
	json_object_foreach ((json_t *)e, k, v)
		if (name_index(rate_members, 4, k) < 0)
			return lg_error_set(err, LG_EINVAL,
					    "rates[%zu]: unknown member \"%s\"",
					    i, k);
	if (cls == NULL || !dns1123_label(cls, strlen(cls)))
		return lg_error_set(err, LG_EINVAL,
				    "rates[%zu]: class must be a DNS-1123 "
				    "label",
				    i);
	if (!currency_ok(cur))
		return lg_error_set(err, LG_EINVAL,
				    "rates[%zu]: currency must be three "
				    "capital letters (ISO 4217)",
				    i);
	snprintf(r->cls, sizeof(r->cls), "%s", cls);
	snprintf(r->currency, sizeof(r->currency), "%s", cur);
	if (price_of(json_object_get(e, "listUnitPrice"), &r->list_nano) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "rates[%zu]: listUnitPrice must be a "
				    "decimal string with at most 9 decimals, "
				    "or an integer",
				    i);
	r->billed_nano = r->list_nano;
	if (billed != NULL && price_of(billed, &r->billed_nano) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "rates[%zu]: billedUnitPrice must be a "
				    "decimal string with at most 9 decimals, "
				    "or an integer",
				    i);
	return 0;
}

static int rate_cmp(const void *a, const void *b)
{
	const struct bill_rate *x = a, *y = b;
	int c = strcmp(x->currency, y->currency);

	return c ? c : strcmp(x->cls, y->cls);
}

/* The names of the billing file, where each goes, and which member gives
 * its default when absent (-1: the built-in one). */
struct name_member {
	const char *key;
	size_t off;
	int dflt;
};

#define NM(k, f, d) {k, offsetof(struct bill_rates, f), d}
static const struct name_member name_members[] = {
	NM("billingAccountId", account_id, -1),
	NM("billingAccountName", account_name, 0),
	NM("providerName", provider, -1),
	NM("publisherName", publisher, 2),
	NM("invoiceIssuerName", issuer, 2),
	NM("serviceName", service, -1),
	NM("regionId", region_id, -1),
	NM("regionName", region_name, 6),
	/* FOCUS 1.3: the provider of the service, and of the infrastructure
	 * under it (the operator that hosts the cluster, unless named). */
	NM("serviceProviderName", service_provider, 2),
	NM("hostProviderName", host_provider, 8),
};
#define N_NAME_MEMBERS (sizeof(name_members) / sizeof(name_members[0]))

static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > BILL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	/* FOCUS: not-nullable strings SHOULD NOT be only spaces. */
	return strspn(s, " ") != n;
}

static int doc_names(struct bill_rates *r, const json_t *doc,
		     struct lg_error *err)
{
	const json_t *off = json_object_get(doc, "billingPeriodOffset");

	for (size_t i = 0; i < N_NAME_MEMBERS; i++) {
		const struct name_member *nm = &name_members[i];
		const json_t *v = json_object_get(doc, nm->key);
		char *dst = (char *)r + nm->off;

		if (v == NULL) {
			if (nm->dflt >= 0)
				strcpy(dst, (char *)r +
						    name_members[nm->dflt].off);
			continue;
		}
		if (!name_ok(json_string_value(v)))
			return lg_error_set(err, LG_EINVAL,
					    "rates: %s must be 1 to %d "
					    "printable characters",
					    nm->key, BILL_NAME_MAX);
		strcpy(dst, json_string_value(v));
	}
	if (off != NULL &&
	    model__bill_offset_parse(json_string_value(off), &r->offset_s) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "rates: billingPeriodOffset must be \"Z\" "
				    "or \"+HH:MM\" / \"-HH:MM\" (at most "
				    "14:00)");
	return 0;
}

static bool doc_member_known(const char *k)
{
	if (strcmp(k, "rates") == 0 || strcmp(k, "billingPeriodOffset") == 0)
		return true;
	for (size_t i = 0; i < N_NAME_MEMBERS; i++)
		if (strcmp(name_members[i].key, k) == 0)
			return true;
	return false;
}

static int rates_check_doc(const json_t *doc, const json_t *list,
			   struct lg_error *err)
{
	const char *k;
	const json_t *v;

	if (!json_is_object(doc) || (list != NULL && !json_is_array(list)))
		return lg_error_set(err, LG_EINVAL,
				    "rates: expected {\"rates\": [...], "
				    "...}");
	json_object_foreach ((json_t *)doc, k, v)
		if (!doc_member_known(k))
			return lg_error_set(err, LG_EINVAL,
					    "rates: unknown member \"%s\"", k);
	if (json_array_size(list) > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT,
				    "rates: more than %d entries",
				    MODEL_MAX_ITEMS);
	return 0;
}

int bill_rates_parse(struct bill_rates *r, const json_t *doc,
		     struct lg_error *err)
{
	const json_t *list = json_object_get(doc, "rates");
	size_t n = json_array_size(list);
	int rc = rates_check_doc(doc, list, err);

	bill_rates_init(r);
	if (rc == 0)
		rc = doc_names(r, doc, err);
	if (rc != 0) {
		bill_rates_release(r);
		return rc;
	}
	r->r = lg_xcalloc(n + 1, sizeof(*r->r));
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = rate_parse(&r->r[i], json_array_get(list, i), i, err);
	if (rc == 0) {
		qsort(r->r, n, sizeof(*r->r), rate_cmp);
		for (size_t i = 1; i < n && rc == 0; i++)
			if (rate_cmp(&r->r[i - 1], &r->r[i]) == 0)
				rc = lg_error_set(err, LG_EINVAL,
						  "rates: %s %s appears twice",
						  r->r[i].cls,
						  r->r[i].currency);
	}
	if (rc != 0) {
		bill_rates_release(r);
		return rc;
	}
	r->n = n;
	r->priced = list != NULL;
	return 0;
}

int bill_rates_cover(const struct bill_rates *r, const char *currency,
		     const state_t *st, struct lg_error *err)
{
	if (r == NULL || !r->priced)
		return 0;
	/* Class "" is no device class: NODE events of it record that a Node
	 * exists (DESIGN 6), and nothing is billed for it. */
	for (uint32_t i = 0; i < st->n_cls; i++)
		if (st->cls_names[i][0] != '\0' &&
		    bill_rates_find(r, currency, st->cls_names[i]) == NULL)
			return lg_error_set(err, LG_ENOENT,
					    "rates: no %s rate for class %s "
					    "(a free class needs an explicit "
					    "\"listUnitPrice\": \"0\")",
					    currency, st->cls_names[i]);
	return 0;
}

const struct bill_rate *bill_rates_find(const struct bill_rates *r,
					const char *currency, const char *cls)
{
	struct bill_rate k = {0};

	if (r == NULL || r->n == 0 || currency == NULL || cls == NULL ||
	    strlen(currency) >= sizeof(k.currency) ||
	    strlen(cls) >= sizeof(k.cls))
		return NULL;
	strcpy(k.currency, currency);
	strcpy(k.cls, cls);
	return bsearch(&k, r->r, r->n, sizeof(k), rate_cmp);
}

int bill_rates_currency(const struct bill_rates *r, const char *want,
			const char **out, struct lg_error *err)
{
	for (size_t i = 0; want != NULL && i < r->n; i++)
		if (strcmp(r->r[i].currency, want) == 0) {
			*out = want;
			return 0;
		}
	if (want != NULL)
		return lg_error_set(err, LG_ENOENT,
				    "rates: no rate in currency \"%s\"", want);
	if (r->n == 0)
		return lg_error_set(err, LG_EINVAL, "rates: no rates");
	/* Sorted by currency: one currency iff the first and last agree. */
	if (strcmp(r->r[0].currency, r->r[r->n - 1].currency) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "rates: several currencies (%s, %s, ...): "
				    "choose one",
				    r->r[0].currency, r->r[r->n - 1].currency);
	*out = r->r[0].currency;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Rows */

/* The columns, FOCUS ones first in alphabetical order, then ours
 * (docs/billing.md lists each and the value chosen). F_V13 ones are FOCUS
 * 1.3's only: a 1.2 export is the same bytes as before 1.3 existed. */
enum col {
	C_ALLOC_METHOD_DETAILS,
	C_ALLOC_METHOD_ID,
	C_ALLOC_RES_ID,
	C_ALLOC_RES_NAME,
	C_ALLOC_TAGS,
	C_BILLED_COST,
	C_ACCOUNT_ID,
	C_ACCOUNT_NAME,
	C_CURRENCY,
	C_BPERIOD_END,
	C_BPERIOD_START,
	C_CATEGORY,
	C_CLASS,
	C_DESCRIPTION,
	C_FREQUENCY,
	C_CPERIOD_END,
	C_CPERIOD_START,
	C_CONSUMED_QTY,
	C_CONSUMED_UNIT,
	C_CONTRACTED_COST,
	C_CONTRACTED_PRICE,
	C_EFFECTIVE_COST,
	C_HOST_PROVIDER,
	C_ISSUER,
	C_LIST_COST,
	C_LIST_PRICE,
	C_PRICING_CATEGORY,
	C_PRICING_QTY,
	C_PRICING_UNIT,
	C_PROVIDER,
	C_PUBLISHER,
	C_REGION_ID,
	C_REGION_NAME,
	C_RESOURCE_ID,
	C_RESOURCE_NAME,
	C_RESOURCE_TYPE,
	C_SERVICE_CATEGORY,
	C_SERVICE_NAME,
	C_SERVICE_PROVIDER,
	C_SERVICE_SUBCATEGORY,
	C_SKU_ID,
	C_SKU_METER,
	C_SKU_PRICE_DETAILS,
	C_SKU_PRICE_ID,
	C_SUB_ID,
	C_SUB_NAME,
	C_SUB_TYPE,
	C_TAGS,
	C_X_PERIOD_STATUS,
	C_X_PATH,
	C_X_CLASS,
	C_X_BASIS,
	C_X_SEQ_START,
	C_X_SEQ_END,
	C_X_HEAD,
	C_X_DEVICE_MS,
	C_X_SCOPE,
	N_COLS
};

#define F_REGION 1u /* only when a region is configured */
#define F_SCOPE	 2u /* only with --rollup (CSV; JSON always) */
#define F_INT	 4u /* an integer in JSON */
#define F_V13	 8u /* FOCUS 1.3 only */

static const struct {
	const char *name;
	unsigned flags;
} cols[N_COLS] = {
	[C_ALLOC_METHOD_DETAILS] = {"AllocatedMethodDetails", F_V13},
	[C_ALLOC_METHOD_ID] = {"AllocatedMethodId", F_V13},
	[C_ALLOC_RES_ID] = {"AllocatedResourceId", F_V13},
	[C_ALLOC_RES_NAME] = {"AllocatedResourceName", F_V13},
	[C_ALLOC_TAGS] = {"AllocatedTags", F_V13},
	[C_BILLED_COST] = {"BilledCost", 0},
	[C_ACCOUNT_ID] = {"BillingAccountId", 0},
	[C_ACCOUNT_NAME] = {"BillingAccountName", 0},
	[C_CURRENCY] = {"BillingCurrency", 0},
	[C_BPERIOD_END] = {"BillingPeriodEnd", 0},
	[C_BPERIOD_START] = {"BillingPeriodStart", 0},
	[C_CATEGORY] = {"ChargeCategory", 0},
	[C_CLASS] = {"ChargeClass", 0},
	[C_DESCRIPTION] = {"ChargeDescription", 0},
	[C_FREQUENCY] = {"ChargeFrequency", 0},
	[C_CPERIOD_END] = {"ChargePeriodEnd", 0},
	[C_CPERIOD_START] = {"ChargePeriodStart", 0},
	[C_CONSUMED_QTY] = {"ConsumedQuantity", 0},
	[C_CONSUMED_UNIT] = {"ConsumedUnit", 0},
	[C_CONTRACTED_COST] = {"ContractedCost", 0},
	[C_CONTRACTED_PRICE] = {"ContractedUnitPrice", 0},
	[C_EFFECTIVE_COST] = {"EffectiveCost", 0},
	[C_HOST_PROVIDER] = {"HostProviderName", F_V13},
	[C_ISSUER] = {"InvoiceIssuerName", 0},
	[C_LIST_COST] = {"ListCost", 0},
	[C_LIST_PRICE] = {"ListUnitPrice", 0},
	[C_PRICING_CATEGORY] = {"PricingCategory", 0},
	[C_PRICING_QTY] = {"PricingQuantity", 0},
	[C_PRICING_UNIT] = {"PricingUnit", 0},
	[C_PROVIDER] = {"ProviderName", 0},
	[C_PUBLISHER] = {"PublisherName", 0},
	[C_REGION_ID] = {"RegionId", F_REGION},
	[C_REGION_NAME] = {"RegionName", F_REGION},
	[C_RESOURCE_ID] = {"ResourceId", 0},
	[C_RESOURCE_NAME] = {"ResourceName", 0},
	[C_RESOURCE_TYPE] = {"ResourceType", 0},
	[C_SERVICE_CATEGORY] = {"ServiceCategory", 0},
	[C_SERVICE_NAME] = {"ServiceName", 0},
	[C_SERVICE_PROVIDER] = {"ServiceProviderName", F_V13},
	[C_SERVICE_SUBCATEGORY] = {"ServiceSubcategory", 0},
	[C_SKU_ID] = {"SkuId", 0},
	[C_SKU_METER] = {"SkuMeter", 0},
	[C_SKU_PRICE_DETAILS] = {"SkuPriceDetails", 0},
	[C_SKU_PRICE_ID] = {"SkuPriceId", 0},
	[C_SUB_ID] = {"SubAccountId", 0},
	[C_SUB_NAME] = {"SubAccountName", 0},
	[C_SUB_TYPE] = {"SubAccountType", 0},
	[C_TAGS] = {"Tags", 0},
	[C_X_PERIOD_STATUS] = {"x_BillingPeriodStatus", 0},
	[C_X_PATH] = {"x_TenantPath", 0},
	[C_X_CLASS] = {"x_DeviceClass", 0},
	[C_X_BASIS] = {"x_Basis", 0},
	[C_X_SEQ_START] = {"x_LedgerSeqStart", F_INT},
	[C_X_SEQ_END] = {"x_LedgerSeqEnd", F_INT},
	[C_X_HEAD] = {"x_ChainHead", 0},
	[C_X_DEVICE_MS] = {"x_DeviceMilliseconds", F_INT},
	[C_X_SCOPE] = {"x_Scope", F_SCOPE},
};

static bool col_shown(enum col c, bool scope, const struct bill_rates *cfg,
		      enum bill_focus focus)
{
	if ((cols[c].flags & F_REGION) && cfg->region_id[0] == '\0')
		return false;
	if ((cols[c].flags & F_V13) && focus != BILL_FOCUS_1_3)
		return false;
	return !(cols[c].flags & F_SCOPE) || scope;
}

/* A bounded writer that counts what it could not write (snprintf-like). */
struct wr {
	char *buf;
	size_t cap, len;
};

static void wr_add(struct wr *w, const char *s, size_t n)
{
	if (w->len < w->cap)
		memcpy(w->buf + w->len, s,
		       w->len + n < w->cap ? n : w->cap - w->len);
	w->len += n;
}

static size_t wr_end(struct wr *w)
{
	if (w->cap > 0)
		w->buf[w->len < w->cap ? w->len : w->cap - 1] = '\0';
	return w->len;
}

/* RFC 4180: a field with a comma, quote or line break is quoted and its
 * quotes doubled. Names are DNS-1123 and never need it; JSON columns and
 * configured names may. */
static void wr_field(struct wr *w, const char *v)
{
	if (v == NULL)
		return; /* null: an empty field */
	if (strpbrk(v, ",\"\r\n") == NULL) {
		wr_add(w, v, strlen(v));
		return;
	}
	wr_add(w, "\"", 1);
	for (const char *p = v; *p; p++) {
		wr_add(w, p, 1);
		if (*p == '"')
			wr_add(w, "\"", 1);
	}
	wr_add(w, "\"", 1);
}

size_t bill_csv_header(bool scope, const struct bill_rates *cfg,
		       enum bill_focus focus, char *buf, size_t cap)
{
	struct wr w = {buf, cap, 0};
	bool first = true;

	cfg = cfg ? cfg : &rates_default;
	for (int c = 0; c < N_COLS; c++) {
		if (!col_shown((enum col)c, scope, cfg, focus))
			continue;
		if (!first)
			wr_add(&w, ",", 1);
		first = false;
		wr_add(&w, cols[c].name, strlen(cols[c].name));
	}
	return wr_end(&w);
}

/* "YYYY-MM-DDTHH:MM:SSZ" (FOCUS Date/Time Format: UTC, no fraction). Every
 * time the export makes is a whole second; a fraction would be floored. */
static void time_text(int64_t t_ms, char *buf)
{
	char full[TIME_TEXT_MAX];

	time_format_ns(floor_div(t_ms, 1000) * NANO, full, sizeof(full));
	snprintf(buf, TIME_TEXT_MAX, "%.19sZ", full);
}

static void hex_text(const uint8_t *h, char *out)
{
	static const char digits_hex[] = "0123456789abcdef";

	for (size_t i = 0; i < BILL_HEAD_BYTES; i++) {
		out[2 * i] = digits_hex[h[i] >> 4];
		out[2 * i + 1] = digits_hex[h[i] & 15];
	}
	out[2 * BILL_HEAD_BYTES] = '\0';
}

#define NUM_MAX	 48
#define TEXT_MAX (BILL_NAME_MAX + 2 * DNS1123_SUBDOMAIN_MAX + 80)

/* The value of every column of a row; NULL is FOCUS's null. */
struct row_vals {
	const char *v[N_COLS];
	int64_t i[N_COLS]; /* the F_INT columns */
	char t[4][TIME_TEXT_MAX];
	char num[6][NUM_MAX];
	char head[2 * BILL_HEAD_BYTES + 1];
	char res_id[TEXT_MAX], res_name[TEXT_MAX], desc[TEXT_MAX];
	char sku[DNS1123_LABEL_MAX + 16], sku_price[DNS1123_LABEL_MAX + 24];
	char sku_details[DNS1123_LABEL_MAX + 40];
	char *path, *tags; /* owned: a tenant path has no small bound */
	/* FOCUS 1.3 allocated charges (owned, NULL otherwise). */
	char *alloc_details, *alloc_tags;
	char alloc_res_id[TEXT_MAX], alloc_res_name[TEXT_MAX];
};

static void row_ids(const struct bill_row *row, const struct bill_rates *cfg,
		    struct row_vals *x)
{
	const char *kind = row->subtree ? "subtrees" : "namespaces";

	snprintf(x->res_id, sizeof(x->res_id), "%s/%s/%s/gpuclasses/%s",
		 cfg->account_id, kind, row->ns, row->cls);
	snprintf(x->res_name, sizeof(x->res_name), "%s GPUs of %s%s", row->cls,
		 row->ns, row->subtree ? " and its subtree" : "");
	snprintf(x->desc, sizeof(x->desc), "%s GPU-hours %s by %s%s", row->cls,
		 model__bill_basis_name(row->basis), row->ns,
		 row->subtree ? " and its descendant tenants" : "");
	snprintf(x->sku, sizeof(x->sku), "gpuclass/%s", row->cls);
	snprintf(x->sku_price, sizeof(x->sku_price), "gpuclass/%s/%s",
		 row->cls, row->currency ? row->currency : "");
	snprintf(x->sku_details, sizeof(x->sku_details),
		 "{\"GpuCount\":1,\"x_DeviceClass\":\"%s\"}", row->cls);
}

/* Tags (Key-Value Format): the provider-defined tags gpuledger knows,
 * under its own prefix. Names are DNS-1123, so nothing needs escaping. */
static char *tags_new(const char *path, const struct bill_row *row)
{
	const char *fmt = "{\"gpuledger/tenantPath\":\"%s\","
			  "\"gpuledger/deviceClass\":\"%s\","
			  "\"gpuledger/scope\":\"%s\"}";
	const char *scope = row->subtree ? "subtree" : "namespace";
	int n = snprintf(NULL, 0, fmt, path, row->cls, scope);
	char *t = lg_xmalloc((size_t)n + 1);

	snprintf(t, (size_t)n + 1, fmt, path, row->cls, scope);
	return t;
}

/* A tenant path can be long (a deep tree of long names): sized exactly. */
static char *tenant_path_new(const char *ns)
{
	size_t n = model__bill_tenant_path(ns, NULL, 0) + 1;
	char *p = lg_xmalloc(n);

	model__bill_tenant_path(ns, p, n);
	return p;
}

static void row_numbers(const struct bill_row *row, struct row_vals *x)
{
	static const enum col at[6] = {C_PRICING_QTY,	  C_LIST_PRICE,
				       C_CONTRACTED_PRICE, C_LIST_COST,
				       C_CONTRACTED_COST, C_X_DEVICE_MS};

	model__bill_format_ratio(row->device_ms, BILL_MS_PER_HOUR, x->num[0],
				 NUM_MAX);
	model__bill_format_nano(row->list_unit_nano, x->num[1], NUM_MAX);
	model__bill_format_nano(row->contracted_unit_nano, x->num[2], NUM_MAX);
	model__bill_format_nano(row->list_cost_nano, x->num[3], NUM_MAX);
	model__bill_format_nano(row->billed_cost_nano, x->num[4], NUM_MAX);
	snprintf(x->num[5], NUM_MAX, "%lld", (long long)row->device_ms);
	for (int k = 0; k < 6; k++)
		x->v[at[k]] = x->num[k];
	x->v[C_CONSUMED_QTY] = x->num[0];
	/* No commitment discounts: what is billed is what it costs. */
	x->v[C_BILLED_COST] = x->v[C_EFFECTIVE_COST] = x->num[4];
	x->i[C_X_DEVICE_MS] = row->device_ms;
}

static void row_vals_13(const struct bill_row *row,
			const struct bill_rates *cfg, struct row_vals *x);

static void row_vals(const struct bill_row *row, struct row_vals *x)
{
	const struct bill_rates *cfg = row->cfg ? row->cfg : &rates_default;
	const char **v = x->v;

	memset(v, 0, sizeof(x->v));
	x->alloc_details = x->alloc_tags = NULL;
	time_text(row->billing_start_ms, x->t[0]);
	time_text(row->billing_end_ms, x->t[1]);
	time_text(row->charge_start_ms, x->t[2]);
	time_text(row->charge_end_ms, x->t[3]);
	v[C_BPERIOD_START] = x->t[0];
	v[C_BPERIOD_END] = x->t[1];
	v[C_CPERIOD_START] = x->t[2];
	v[C_CPERIOD_END] = x->t[3];
	row_numbers(row, x);
	row_ids(row, cfg, x);
	x->path = tenant_path_new(row->ns);
	x->tags = tags_new(x->path, row);
	hex_text(row->chain_head, x->head);
	v[C_ACCOUNT_ID] = cfg->account_id;
	v[C_ACCOUNT_NAME] = cfg->account_name;
	v[C_CURRENCY] = row->currency ? row->currency : "USD";
	v[C_CATEGORY] = "Usage";
	v[C_DESCRIPTION] = x->desc;
	v[C_FREQUENCY] = "Usage-Based";
	v[C_CONSUMED_UNIT] = v[C_PRICING_UNIT] = "GPU-Hours";
	v[C_ISSUER] = cfg->issuer;
	v[C_PRICING_CATEGORY] = "Standard";
	v[C_PROVIDER] = cfg->provider;
	v[C_PUBLISHER] = cfg->publisher;
	v[C_REGION_ID] = cfg->region_id[0] ? cfg->region_id : NULL;
	v[C_REGION_NAME] = cfg->region_id[0] ? cfg->region_name : NULL;
	v[C_RESOURCE_ID] = x->res_id;
	v[C_RESOURCE_NAME] = x->res_name;
	v[C_RESOURCE_TYPE] = "GPU";
	v[C_SERVICE_CATEGORY] = "Compute";
	v[C_SERVICE_NAME] = cfg->service;
	v[C_SERVICE_SUBCATEGORY] = "Other (Compute)";
	v[C_SKU_ID] = x->sku;
	v[C_SKU_METER] = "GPU Hours";
	v[C_SKU_PRICE_DETAILS] = x->sku_details;
	v[C_SKU_PRICE_ID] = x->sku_price;
	v[C_SUB_ID] = v[C_SUB_NAME] = row->ns;
	v[C_SUB_TYPE] = ns_is_tenant(row->ns) ? "Tenant" : "Namespace";
	v[C_TAGS] = x->tags;
	v[C_X_PERIOD_STATUS] = row->period_open ? "open" : "closed";
	v[C_X_PATH] = x->path;
	v[C_X_CLASS] = row->cls;
	v[C_X_BASIS] = model__bill_basis_name(row->basis);
	v[C_X_HEAD] = x->head;
	v[C_X_SCOPE] = row->subtree ? "subtree" : "namespace";
	x->i[C_X_SEQ_START] = (int64_t)row->seq_start;
	x->i[C_X_SEQ_END] = (int64_t)row->seq_end;
	if (row->focus == BILL_FOCUS_1_3)
		row_vals_13(row, cfg, x);
}

/* A text sized exactly, like tenant_path_new. */
static char *text_new(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *t;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	t = lg_xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(t, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return t;
}

int64_t bill_alloc_ratio(int64_t prev_ms, int64_t cum_ms, int64_t pool_ms)
{
	u128 one = BILL_RATIO_ONE, p = (u128)pool_ms;

	LG_ASSERT(pool_ms > 0 && prev_ms >= 0 && prev_ms <= cum_ms &&
		  cum_ms <= pool_ms);
	/* round_half_up(c x one / p) = floor((2 c one + p) / 2p), exact in
	 * 128 bits for any int64 usage. */
	return (int64_t)((2 * (u128)cum_ms * one + p) / (2 * p) -
			 (2 * (u128)prev_ms * one + p) / (2 * p));
}

/* FOCUS 1.3 (docs/billing.md, "Allocation"). A namespace row is an
 * allocated charge of its origin charge, the class's pool over the
 * period: every FOCUS dimension is the origin charge's (the spec's
 * split cost allocation handling), so ResourceId, ResourceName,
 * ChargeDescription and Tags name the pool and the sub-account is null
 * (the pool belongs to no namespace); who the share is for is in the
 * Allocated* columns. A subtree row sums allocated charges and is no
 * allocated charge itself: it keeps 1.2's values. */
static void row_vals_13(const struct bill_row *row,
			const struct bill_rates *cfg, struct row_vals *x)
{
	const char **v = x->v;
	char ratio[NUM_MAX];

	v[C_SERVICE_PROVIDER] = cfg->service_provider;
	v[C_HOST_PROVIDER] = cfg->host_provider;
	if (row->subtree)
		return;
	memcpy(x->alloc_res_id, x->res_id, sizeof(x->res_id));
	memcpy(x->alloc_res_name, x->res_name, sizeof(x->res_name));
	snprintf(x->res_id, sizeof(x->res_id), "%s/gpuclasses/%s",
		 cfg->account_id, row->cls);
	snprintf(x->res_name, sizeof(x->res_name), "%s GPU pool", row->cls);
	snprintf(x->desc, sizeof(x->desc),
		 "%s GPU-hours %s from the shared pool, split by usage",
		 row->cls, model__bill_basis_name(row->basis));
	snprintf(ratio, sizeof(ratio), "%lld.%012lld",
		 (long long)(row->ratio_pico / BILL_RATIO_ONE),
		 (long long)(row->ratio_pico % BILL_RATIO_ONE));
	free(x->tags);
	x->tags = text_new("{\"gpuledger/deviceClass\":\"%s\"}", row->cls);
	x->alloc_tags = text_new(
		"{\"gpuledger/tenantPath\":\"%s\",\"gpuledger/namespace\":"
		"\"%s\",\"gpuledger/namespaceType\":\"%s\","
		"\"gpuledger/scope\":\"namespace\"}",
		x->path, row->ns, ns_is_tenant(row->ns) ? "Tenant" : "Namespace");
	x->alloc_details = text_new(
		"{\"Elements\":[{\"AllocatedRatio\":%s,\"UsageUnit\":"
		"\"GPU-Hours\",\"UsageQuantity\":%s,\"x_DeviceMilliseconds\":"
		"%lld}],\"x_PoolDeviceMilliseconds\":%lld}",
		ratio, x->num[0], (long long)row->device_ms,
		(long long)row->pool_device_ms);
	v[C_TAGS] = x->tags;
	v[C_SUB_ID] = v[C_SUB_NAME] = v[C_SUB_TYPE] = NULL;
	v[C_ALLOC_METHOD_ID] = BILL_ALLOC_METHOD_ID;
	v[C_ALLOC_METHOD_DETAILS] = x->alloc_details;
	v[C_ALLOC_RES_ID] = x->alloc_res_id;
	v[C_ALLOC_RES_NAME] = x->alloc_res_name;
	v[C_ALLOC_TAGS] = x->alloc_tags;
}

static void row_vals_release(struct row_vals *x)
{
	free(x->path);
	free(x->tags);
	free(x->alloc_details);
	free(x->alloc_tags);
}

size_t bill_row_csv(const struct bill_row *row, bool scope, char *buf,
		    size_t cap)
{
	const struct bill_rates *cfg = row->cfg ? row->cfg : &rates_default;
	struct row_vals *x = lg_xmalloc(sizeof(*x));
	struct wr w = {buf, cap, 0};
	char seq[2][24];
	bool first = true;

	row_vals(row, x);
	snprintf(seq[0], sizeof(seq[0]), "%llu",
		 (unsigned long long)row->seq_start);
	snprintf(seq[1], sizeof(seq[1]), "%llu",
		 (unsigned long long)row->seq_end);
	x->v[C_X_SEQ_START] = seq[0];
	x->v[C_X_SEQ_END] = seq[1];
	for (int c = 0; c < N_COLS; c++) {
		if (!col_shown((enum col)c, scope, cfg, row->focus))
			continue;
		if (!first)
			wr_add(&w, ",", 1);
		first = false;
		wr_field(&w, x->v[c]);
	}
	row_vals_release(x);
	free(x);
	return wr_end(&w);
}

json_t *bill_row_json(const struct bill_row *row)
{
	const struct bill_rates *cfg = row->cfg ? row->cfg : &rates_default;
	struct row_vals *x = lg_xmalloc(sizeof(*x));
	json_t *o = json_object();

	row_vals(row, x);
	for (int c = 0; c < N_COLS; c++) {
		json_t *v;

		if (!col_shown((enum col)c, true, cfg, row->focus))
			continue;
		if (cols[c].flags & F_INT)
			v = json_integer((json_int_t)x->i[c]);
		else if (x->v[c] == NULL)
			v = json_null();
		else
			v = json_string(x->v[c]);
		json_object_set_new(o, cols[c].name, v);
	}
	row_vals_release(x);
	free(x);
	return o;
}

/* ---------------------------------------------------------------------- */
/* The OpenCost view. OpenCost's allocation CSV export (its csv_export.go)
 * writes Date, Namespace, ControllerKind, ControllerName, Pod, Container,
 * CPU/RAM averages, network bytes, GPUs, PVBytes, then CPUCost, RAMCost,
 * NetworkCost, PVCost, GPUCost, TotalCost. The ledger knows GPUs only, so
 * this view keeps the columns about GPUs at namespace level: Date (the UTC
 * day), Namespace, GPUs (the average number of devices over the part of
 * the day billed, 9 decimals, truncated), GPUCost (the day's billed cost
 * over every class) and TotalCost (the same: GPUs are all it prices).
 * OpenCost's own CSV merge joins files by column name, so a reader that
 * knows the full header reads this one too. */

static const char opencost_header[] = "Date,Namespace,GPUs,GPUCost,TotalCost";

const char *bill_opencost_header(void)
{
	return opencost_header;
}

void bill_opencost_init(struct bill_opencost *oc)
{
	memset(oc, 0, sizeof(*oc));
}

int bill_opencost_flush(struct bill_opencost *oc, char *line)
{
	char date[TIME_TEXT_MAX], gpus[64], cost[64];

	if (!oc->open)
		return 0;
	/* The day of the billing period's local time (UTC by default). */
	time_text(oc->start_ms + (int64_t)oc->offset_s * 1000, date);
	date[10] = '\0'; /* "YYYY-MM-DD" */
	model__bill_format_ratio(oc->device_ms, oc->end_ms - oc->start_ms, gpus,
				 sizeof(gpus));
	model__bill_format_nano(oc->cost_nano, cost, sizeof(cost));
	snprintf(line, BILL_LINE_MAX, "%s,%s,%s,%s,%s", date, oc->ns, gpus,
		 cost, cost);
	oc->open = false;
	return 1;
}

int bill_opencost_add(struct bill_opencost *oc, const struct bill_row *row,
		      char *line, struct lg_error *err)
{
	int done = 0;

	if (row->subtree)
		return lg_error_set(err, LG_EINVAL,
				    "opencost-csv has no subtree rows");
	if (row->charge_end_ms <= row->charge_start_ms ||
	    strlen(row->ns) >= sizeof(oc->ns))
		return lg_error_set(err, LG_EINVAL, "opencost-csv: bad row");
	if (oc->open && (oc->start_ms != row->charge_start_ms ||
			 strcmp(oc->ns, row->ns) != 0))
		done = bill_opencost_flush(oc, line);
	if (!oc->open) {
		oc->open = true;
		oc->start_ms = row->charge_start_ms;
		oc->offset_s = row->cfg ? row->cfg->offset_s : 0;
		oc->end_ms = row->charge_end_ms;
		oc->device_ms = oc->cost_nano = 0;
		snprintf(oc->ns, sizeof(oc->ns), "%s", row->ns);
	}
	if (__builtin_add_overflow(oc->device_ms, row->device_ms,
				   &oc->device_ms) ||
	    __builtin_add_overflow(oc->cost_nano, row->billed_cost_nano,
				   &oc->cost_nano))
		return lg_error_set(err, LG_ERANGE,
				    "opencost-csv %s: sum overflows", row->ns);
	return done;
}
