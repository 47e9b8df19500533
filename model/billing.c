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

const char *bill_step_name(enum bill_step s)
{
	return (size_t)s < N_STEPS ? step_names[s] : "?";
}

const char *bill_basis_name(enum bill_basis b)
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

int bill_step_parse(const char *s, enum bill_step *out)
{
	int i = name_index(step_names, N_STEPS, s);

	if (i < 0)
		return LG_EINVAL;
	*out = (enum bill_step)i;
	return 0;
}

int bill_basis_parse(const char *s, enum bill_basis *out)
{
	int i = name_index(basis_names, N_BASES, s);

	if (i < 0)
		return LG_EINVAL;
	*out = (enum bill_basis)i;
	return 0;
}

int64_t bill_period_end(int64_t t_ms, enum bill_step step)
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
	return xcalloc(1, sizeof(struct bill_snap));
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
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
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
		if (nsrec_bill_at(ns, id, t_ms, &r, &a) != 0)
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
	struct cls_ord *ord = xcalloc(st->n_cls + 1, sizeof(*ord));
	size_t n_ns = 0;
	struct nsrec **v = state_ns_sorted(st, &n_ns);
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
			ru->v = xrealloc(ru->v, ru->cap * sizeof(*ru->v));
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
	struct bill_usage u = {k->ns, k->cls, false, d};

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

size_t bill_tenant_path(const char *ns, char *buf, size_t cap)
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

size_t bill_format_ratio(int64_t num, int64_t den, char *buf, size_t cap)
{
	u128 r = (u128)(num % den) * (u128)NANO / (u128)den;
	int n = snprintf(buf, cap, "%lld.%09lld", (long long)(num / den),
			 (long long)r);

	return n < 0 ? 0 : (size_t)n;
}

size_t bill_format_nano(int64_t nano, char *buf, size_t cap)
{
	uint64_t m = nano < 0 ? -(uint64_t)nano : (uint64_t)nano;
	int n = snprintf(buf, cap, "%s%llu.%09llu", nano < 0 ? "-" : "",
			 (unsigned long long)(m / NANO),
			 (unsigned long long)(m % NANO));

	return n < 0 ? 0 : (size_t)n;
}

int bill_decimal_parse(const char *s, int64_t *nano)
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
	u128 p, q;

	if (device_ms < 0 || price_nano < 0)
		return LG_EINVAL;
	p = (u128)device_ms * (u128)price_nano;
	q = p / BILL_MS_PER_HOUR;
	if (2 * (p % BILL_MS_PER_HOUR) >= BILL_MS_PER_HOUR)
		q++;
	if (q > INT64_MAX)
		return LG_ERANGE;
	*cost_nano = (int64_t)q;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Rates */

void bill_rates_init(struct bill_rates *r)
{
	memset(r, 0, sizeof(*r));
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
		return bill_decimal_parse(json_string_value(v), nano);
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

static int rates_check_doc(const json_t *doc, const json_t *list,
			   struct lg_error *err)
{
	const char *k;
	const json_t *v;

	if (!json_is_object(doc) || !json_is_array(list))
		return lg_error_set(err, LG_EINVAL,
				    "rates: expected {\"rates\": [...]}");
	json_object_foreach ((json_t *)doc, k, v)
		if (strcmp(k, "rates") != 0)
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
	if (rc != 0)
		return rc;
	r->r = xcalloc(n + 1, sizeof(*r->r));
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

static const char focus_header[] =
	"BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
	"ChargePeriodEnd,ChargeCategory,SubAccountId,SubAccountName,"
	"ResourceType,ConsumedQuantity,ConsumedUnit,PricingQuantity,"
	"PricingUnit,ListCost,BilledCost,BillingCurrency,ServiceName,"
	"x_TenantPath,x_DeviceClass,x_Basis,x_LedgerSeqStart,x_LedgerSeqEnd,"
	"x_ChainHead,x_DeviceMilliseconds";
static const char focus_header_scope[] =
	"BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
	"ChargePeriodEnd,ChargeCategory,SubAccountId,SubAccountName,"
	"ResourceType,ConsumedQuantity,ConsumedUnit,PricingQuantity,"
	"PricingUnit,ListCost,BilledCost,BillingCurrency,ServiceName,"
	"x_TenantPath,x_DeviceClass,x_Basis,x_LedgerSeqStart,x_LedgerSeqEnd,"
	"x_ChainHead,x_DeviceMilliseconds,x_Scope";

const char *bill_csv_header(bool scope)
{
	return scope ? focus_header_scope : focus_header;
}

/* RFC 3339 UTC to the second ("YYYY-MM-DDTHH:MM:SS", 19 characters of
 * time_format_ns), with milliseconds only when there are any (billing works
 * in whole milliseconds). */
static void time_text(int64_t t_ms, char *buf)
{
	char full[TIME_TEXT_MAX];
	int64_t ms = t_ms % 1000;

	time_format_ns(t_ms * 1000000, full, sizeof(full));
	if (ms < 0)
		ms += 1000;
	if (ms != 0)
		snprintf(buf, TIME_TEXT_MAX, "%.19s.%03lldZ", full,
			 (long long)ms);
	else
		snprintf(buf, TIME_TEXT_MAX, "%.19sZ", full);
}

static void hex_text(const uint8_t *h, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < BILL_HEAD_BYTES; i++) {
		out[2 * i] = digits[h[i] >> 4];
		out[2 * i + 1] = digits[h[i] & 15];
	}
	out[2 * BILL_HEAD_BYTES] = '\0';
}

/* The text of every column of a row, in header order. */
enum {
	COL_BSTART,
	COL_BEND,
	COL_CSTART,
	COL_CEND,
	COL_QTY,
	COL_LIST,
	COL_BILLED,
	COL_PATH,
	COL_HEAD,
	N_COLTEXT
};

struct row_text {
	char t[N_COLTEXT][DNS1123_SUBDOMAIN_MAX * 2 + 80];
};

static void row_text(const struct bill_row *row, struct row_text *x)
{
	time_text(row->billing_start_ms, x->t[COL_BSTART]);
	time_text(row->billing_end_ms, x->t[COL_BEND]);
	time_text(row->charge_start_ms, x->t[COL_CSTART]);
	time_text(row->charge_end_ms, x->t[COL_CEND]);
	bill_format_ratio(row->device_ms, BILL_MS_PER_HOUR, x->t[COL_QTY],
			  sizeof(x->t[0]));
	bill_format_nano(row->list_cost_nano, x->t[COL_LIST], sizeof(x->t[0]));
	bill_format_nano(row->billed_cost_nano, x->t[COL_BILLED],
			 sizeof(x->t[0]));
	hex_text(row->chain_head, x->t[COL_HEAD]);
}

/* A tenant path can be long (a deep tree of long names): sized exactly. */
static char *tenant_path_new(const char *ns)
{
	size_t n = bill_tenant_path(ns, NULL, 0) + 1;
	char *p = xmalloc(n);

	bill_tenant_path(ns, p, n);
	return p;
}

/* Namespaces, classes, currencies and times never hold a comma or a quote
 * (names are DNS-1123); a tenant path is built from them. So no field is
 * quoted, and a name that would need quoting is refused by validation long
 * before it reaches a row. */
size_t bill_row_csv(const struct bill_row *row, bool scope, char *buf,
		    size_t cap)
{
	struct row_text x;
	char *path = tenant_path_new(row->ns);
	int n;

	row_text(row, &x);
	n = snprintf(buf, cap,
		     "%s,%s,%s,%s,Usage,%s,%s,GPU,%s,GPU-Hours,%s,GPU-Hours,"
		     "%s,%s,%s,gpuledger,%s,%s,%s,%llu,%llu,%s,%lld%s%s",
		     x.t[COL_BSTART], x.t[COL_BEND], x.t[COL_CSTART],
		     x.t[COL_CEND], row->ns, row->ns, x.t[COL_QTY],
		     x.t[COL_QTY], x.t[COL_LIST], x.t[COL_BILLED],
		     row->currency ? row->currency : "", path, row->cls,
		     bill_basis_name(row->basis),
		     (unsigned long long)row->seq_start,
		     (unsigned long long)row->seq_end, x.t[COL_HEAD],
		     (long long)row->device_ms, scope ? "," : "",
		     !scope	    ? ""
		     : row->subtree ? "subtree"
				    : "namespace");
	free(path);
	return n < 0 ? 0 : (size_t)n;
}

json_t *bill_row_json(const struct bill_row *row)
{
	struct row_text x;
	char *path = tenant_path_new(row->ns);
	json_t *o;

	row_text(row, &x);
	o = json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
		"s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:I, "
		"s:s}",
		"BillingPeriodStart", x.t[COL_BSTART], "BillingPeriodEnd",
		x.t[COL_BEND], "ChargePeriodStart", x.t[COL_CSTART],
		"ChargePeriodEnd", x.t[COL_CEND], "ChargeCategory", "Usage",
		"SubAccountId", row->ns, "SubAccountName", row->ns,
		"ResourceType", "GPU", "ConsumedQuantity", x.t[COL_QTY],
		"ConsumedUnit", "GPU-Hours", "PricingQuantity", x.t[COL_QTY],
		"PricingUnit", "GPU-Hours", "ListCost", x.t[COL_LIST],
		"BilledCost", x.t[COL_BILLED], "BillingCurrency",
		row->currency ? row->currency : "", "ServiceName", "gpuledger",
		"x_TenantPath", path, "x_DeviceClass", row->cls, "x_Basis",
		bill_basis_name(row->basis), "x_LedgerSeqStart",
		(json_int_t)row->seq_start, "x_LedgerSeqEnd",
		(json_int_t)row->seq_end, "x_ChainHead", x.t[COL_HEAD],
		"x_DeviceMilliseconds", (json_int_t)row->device_ms, "x_Scope",
		row->subtree ? "subtree" : "namespace");
	free(path);
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
	time_text(oc->start_ms, date);
	date[10] = '\0'; /* "YYYY-MM-DD" */
	bill_format_ratio(oc->device_ms, oc->end_ms - oc->start_ms, gpus,
			  sizeof(gpus));
	bill_format_nano(oc->cost_nano, cost, sizeof(cost));
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
