/*
 * The billing export (DESIGN 8): one walk over the log from --from to the
 * end of the range.
 *
 * The state at --from comes from the latest checkpoint before it plus a
 * tail, so a month of a large log is exported without replaying it from
 * genesis. From there the events are applied in order; just before the
 * first event later than a period boundary b, the state is the state after
 * the last event at or before b (exactly what `replay --at b` shows), and
 * its accumulators carried to b are snapshotted. A period's rows are the
 * difference of the snapshots at its two ends, handed over at once, so
 * memory holds two snapshots (one figure per namespace and class), never
 * the rows.
 *
 * Each row names the states it was computed from (x_LedgerSeqStart/End)
 * and the chain head after the later one, so that an invoice line can be
 * recomputed from the log and the log proven unchanged.
 */
#include "ledger/ledger_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

_Static_assert(BILL_HEAD_BYTES == LEDGER_HEAD_BYTES,
	       "a billing row carries a ledger chain head");

#define NS_PER_MS 1000000LL

struct exp {
	ledger_t *lg;
	const struct export_opts *o;
	ledger_export_fn *fn;
	void *ctx;
	struct lg_error *err;
	state_t *st;
	uint8_t head[LEDGER_HEAD_BYTES]; /* the head after st's seq */
	struct bill_snap *prev, *next;
	uint64_t prev_seq;
	int64_t start_ms; /* the range's start */
	int64_t end_ms;	  /* the range's end */
	int64_t horizon_ns;
	int32_t offset_s; /* of the billing months */
	int64_t next_ms; /* the next boundary to snapshot */
	bool have_prev, done;
	int user_rc;	     /* what fn returned when it stopped the export */
	struct export_range *range; /* the caller's, or NULL */
	struct bill_row row; /* the fields every row of a period shares */
	/* FOCUS 1.3: each class's pool over the period, its usage summed by
	 * a first pass, then handed out row by row (bill_alloc_ratio). One
	 * entry per class the period bills: bounded by the state's classes. */
	struct pool *pools;
	size_t n_pools, cap_pools;
};

struct pool {
	char cls[DNS1123_LABEL_MAX + 1];
	int64_t total_ms, given_ms;
};

/* ---------------------------------------------------------------------- */
/* Options */

static bool currency_ok(const char *c)
{
	if (strlen(c) != 3)
		return false;
	for (int i = 0; i < 3; i++)
		if (c[i] < 'A' || c[i] > 'Z')
			return false;
	return true;
}

static int check_opts(const struct export_opts *o, const char **currency,
		      struct lg_error *err)
{
	if (o->from_ns < 0)
		return lg_error_set(err, LG_EINVAL,
				    "export: --from before 1970");
	if (o->to_ns <= o->from_ns)
		return lg_error_set(err, LG_EINVAL,
				    "export: --to must be after --from");
	if ((unsigned)o->step > BILL_STEP_DAY ||
	    (unsigned)o->basis > BILL_BASIS_ALLOCATED)
		return lg_error_set(err, LG_EINVAL,
				    "export: unknown step or basis");
	if (o->rates != NULL && o->rates->priced)
		return bill_rates_currency(o->rates, o->currency, currency,
					   err);
	*currency = o->currency ? o->currency : "USD";
	if (!currency_ok(*currency))
		return lg_error_set(err, LG_EINVAL,
				    "export: currency \"%s\" is not three "
				    "capital letters (ISO 4217)",
				    *currency);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Rows */

static int price(struct exp *x, struct bill_row *row)
{
	const struct bill_rate *r =
		bill_rates_find(x->o->rates, row->currency, row->cls);

	row->priced = r != NULL;
	row->list_cost_nano = row->billed_cost_nano = 0;
	row->list_unit_nano = row->contracted_unit_nano = 0;
	if (r == NULL && x->o->rates != NULL && x->o->rates->priced)
		return lg_error_set(x->err, LG_ENOENT,
				    "export: no %s rate for class %s",
				    row->currency, row->cls);
	if (r == NULL)
		return 0; /* unpriced: every price is an explicit 0 */
	row->list_unit_nano = r->list_nano;
	row->contracted_unit_nano = r->billed_nano;
	if (bill_cost(row->device_ms, r->list_nano, &row->list_cost_nano) !=
		    0 ||
	    bill_cost(row->device_ms, r->billed_nano, &row->billed_cost_nano) !=
		    0)
		return lg_error_set(x->err, LG_ERANGE,
				    "export %s %s: cost does not fit", row->ns,
				    row->cls);
	return 0;
}

static struct pool *pool_of(struct exp *x, const char *cls)
{
	for (size_t i = 0; i < x->n_pools; i++)
		if (strcmp(x->pools[i].cls, cls) == 0)
			return &x->pools[i];
	return NULL;
}

/* The first pass of a FOCUS 1.3 period: every namespace's usage, added to
 * its class's pool (subtree rows only add namespaces up again). */
static int on_pool_usage(void *ctx, const struct bill_usage *u)
{
	struct exp *x = ctx;
	struct pool *p = pool_of(x, u->cls);

	LG_ASSERT(!u->subtree && strlen(u->cls) <= DNS1123_LABEL_MAX);
	if (p == NULL) {
		if (x->n_pools == x->cap_pools) {
			x->cap_pools = x->cap_pools ? 2 * x->cap_pools : 8;
			x->pools = lg_xrealloc(x->pools, x->cap_pools *
							      sizeof(*x->pools));
		}
		p = &x->pools[x->n_pools++];
		memset(p, 0, sizeof(*p));
		strcpy(p->cls, u->cls);
	}
	if (u->device_ms > INT64_MAX - p->total_ms)
		return lg_error_set(x->err, LG_ERANGE,
				    "export: the %s pool's usage does not fit",
				    u->cls);
	p->total_ms += u->device_ms;
	return 0;
}

/* The row's share of its pool, FOCUS 1.3's AllocatedRatio: rows come
 * sorted by namespace, so the running sum makes the shares of a pool add
 * up to exactly 1 (bill_alloc_ratio). */
static void allocate(struct exp *x, struct bill_row *row)
{
	struct pool *p = pool_of(x, row->cls);

	LG_ASSERT(p != NULL && row->device_ms <= p->total_ms - p->given_ms);
	row->pool_device_ms = p->total_ms;
	row->ratio_pico = bill_alloc_ratio(
		p->given_ms, p->given_ms + row->device_ms, p->total_ms);
	p->given_ms += row->device_ms;
}

static int on_usage(void *ctx, const struct bill_usage *u)
{
	struct exp *x = ctx;
	struct bill_row row = x->row;
	int rc;

	row.ns = u->ns;
	row.cls = u->cls;
	row.subtree = u->subtree;
	row.device_ms = u->device_ms;
	if ((rc = price(x, &row)) != 0)
		return rc;
	if (row.focus == BILL_FOCUS_1_3 && !row.subtree)
		allocate(x, &row);
	rc = x->fn(x->ctx, &row);
	LG_ASSERT(rc <= 0); /* ledger_export_fn returns LG_* codes only */
	if (rc != 0) {
		x->user_rc = rc;
		return 1; /* stops bill_period_usage and the scan */
	}
	return 0;
}

/* Snapshots the state at the next boundary and, when a period ends there,
 * hands over its rows. */
static int boundary(struct exp *x)
{
	int64_t b = x->next_ms;
	struct bill_snap *t;
	int rc = bill_snap_take(x->next, x->st, b, x->o->basis, x->err);

	if (rc != 0)
		return rc == LG_EINVAL ? LG_ECORRUPT : rc;
	if (x->have_prev) {
		x->row.charge_start_ms = bill_snap_time_ms(x->prev);
		x->row.charge_end_ms = b;
		bill_month_of(x->row.charge_start_ms, x->offset_s,
			      &x->row.billing_start_ms, &x->row.billing_end_ms);
		x->row.period_open =
			x->horizon_ns < x->row.billing_end_ms * NS_PER_MS;
		x->row.seq_start = x->prev_seq;
		x->row.seq_end = state_seq(x->st);
		memcpy(x->row.chain_head, x->head, LEDGER_HEAD_BYTES);
		x->n_pools = 0;
		rc = x->o->focus == BILL_FOCUS_1_3
			     ? bill_period_usage(x->prev, x->next, false,
						 on_pool_usage, x, x->err)
			     : 0;
		if (rc != 0)
			return rc;
		rc = bill_period_usage(x->prev, x->next, x->o->rollup_subtree,
				       on_usage, x, x->err);
		if (rc != 0)
			return rc;
	}
	t = x->prev;
	x->prev = x->next;
	x->next = t;
	x->prev_seq = state_seq(x->st);
	x->have_prev = true;
	if (b >= x->end_ms)
		x->done = true;
	x->next_ms = bill_boundary_after(b, x->o->step, x->offset_s);
	if (x->next_ms > x->end_ms)
		x->next_ms = x->end_ms;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The walk */

static int on_event(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct exp *x = ctx;
	int rc;

	/* Every boundary before this event's time sees the state without
	 * it; an event exactly at a boundary (to the ns) is applied first, as
	 * ledger__seq_at_time counts it. Its level starts at the boundary
	 * either way, so the figures do not depend on this choice. */
	while (!x->done && x->next_ms * NS_PER_MS < ev->time_ns)
		if ((rc = boundary(x)) != 0)
			return rc;
	if (x->done)
		return 1;
	/* Event times in the range could not be trusted (DESIGN 4.1). */
	if (ev->type == EV_NOTE && x->range != NULL && ev->key != NULL &&
	    strcmp(ev->key, "TimeWentBack") == 0 &&
	    x->range->time_went_back++ == 0)
		x->range->time_went_back_seq = ev->seq;
	rc = state_apply_validated(x->st, ev, x->err);
	if (rc != 0)
		return lg_error_set(x->err, LG_ECORRUPT,
				    "export: seq %llu does not replay: %s",
				    (unsigned long long)ev->seq,
				    x->err ? x->err->msg : lg_strerror(rc));
	memcpy(x->head, head, LEDGER_HEAD_BYTES);
	return 0;
}

/* The state after the last event at or before start_ms, and its head. */
static int start_state(struct exp *x, int64_t start_ms, uint64_t *seq)
{
	uint64_t last = ledger_last_seq(x->lg);
	int rc = ledger__seq_at_time(x->lg, start_ms * NS_PER_MS, seq, x->err);

	if (rc != 0)
		return rc;
	if (*seq > last) /* appended since this handle last looked */
		*seq = last;
	memset(x->head, 0, sizeof(x->head));
	if (*seq == 0) {
		x->st = state_new();
		return 0;
	}
	if (*seq == last) {
		x->st = state_clone(ledger_state(x->lg));
		memcpy(x->head, ledger_head(x->lg), LEDGER_HEAD_BYTES);
		return 0;
	}
	rc = ledger_state_at(x->lg, *seq, &x->st, NULL, x->err);
	if (rc == 0)
		rc = ledger_head_at(x->lg, *seq, x->head, x->err);
	return rc;
}

static int walk(struct exp *x)
{
	uint64_t seq, last = ledger_last_seq(x->lg);
	int rc = start_state(x, x->start_ms, &seq);

	if (rc != 0)
		return rc;
	x->next_ms = x->start_ms;
	if (seq < last)
		rc = ledger_scan(x->lg, seq + 1, last - seq, on_event, x,
				 x->err);
	/* The events up to the handle's last seq are applied; the state is
	 * right up to the horizon, hence to every boundary left. */
	while (rc == 0 && !x->done)
		rc = boundary(x);
	/* 1 is how on_event and on_usage stop the scan; only errors are
	 * negative, and a stop by fn is reported through user_rc. */
	return rc > 0 ? 0 : rc;
}

/* Whole seconds, floored: FOCUS times have no fraction. */
static int64_t floor_s(int64_t t_ms)
{
	return t_ms / 1000 * 1000; /* t_ms >= 0 here */
}

/* A time for a note: whole seconds, or with milliseconds (the horizon). */
static void note_time(int64_t ms, bool with_ms, char *buf, size_t cap)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&s, &tm);
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, cap - n, with_ms ? ".%03dZ" : "Z", (int)(ms % 1000));
}

/* Why r is shorter than asked, into buf ("" when it is not). */
static void shorter_note(const struct export_range *r, char *buf, size_t cap)
{
	char from[32], end[32], asked[32], hz[32];

	buf[0] = '\0';
	note_time(r->start_ms, false, from, sizeof(from));
	note_time(r->end_ms, false, end, sizeof(end));
	note_time(r->horizon_ms, true, hz, sizeof(hz));
	if (r->horizon_ms <= 0 && r->end_ms == r->start_ms)
		snprintf(buf, cap,
			 "nothing billed: the ledger holds no timed event yet");
	else if (r->start_ms >= r->horizon_ms)
		snprintf(buf, cap,
			 "nothing billed: the range starts at %s, at or after "
			 "the horizon %s (the time of the last event); the "
			 "ledger never bills time it has not seen",
			 from, hz);
	else if (r->asked_end_ms != INT64_MAX &&
		 r->asked_end_ms > r->horizon_ms) {
		note_time(r->asked_end_ms, false, asked, sizeof(asked));
		snprintf(buf, cap,
			 "billed %s to %s, not to %s: the horizon is %s (the "
			 "time of the last event) and the ledger never bills "
			 "time it has not seen",
			 from, end, asked, hz);
	}
}

size_t ledger_export_warning(const struct export_range *r, char *buf,
			    size_t cap)
{
	char shorter[320];
	int n = 0;

	LG_ASSERT(r != NULL && (buf != NULL || cap == 0));
	shorter_note(r, shorter, sizeof(shorter));
	if (r->time_went_back != 0)
		n = snprintf(buf, cap,
			     "the range holds %llu TimeWentBack NOTE(s), the "
			     "first at seq %llu: input times went back and "
			     "were clamped, so usage may be billed later than "
			     "it happened%s%s",
			     (unsigned long long)r->time_went_back,
			     (unsigned long long)r->time_went_back_seq,
			     shorter[0] ? "; " : "", shorter);
	else if (shorter[0] != '\0')
		n = snprintf(buf, cap, "%s", shorter);
	return n < 0 ? 0 : (size_t)n;
}

int ledger_export(ledger_t *lg, const struct export_opts *o,
		  ledger_export_fn *fn, void *ctx, struct export_range *range,
		  struct lg_error *err)
{
	struct exp x = {
		.lg = lg, .o = o, .fn = fn, .ctx = ctx, .err = err, .range = range};
	int64_t horizon_ns;
	int rc;

	LG_ASSERT(lg != NULL && o != NULL && fn != NULL);
	horizon_ns = state_horizon_ns(ledger_state(lg));
	rc = check_opts(o, &x.row.currency, err);
	if (rc == 0)
		rc = bill_rates_cover(o->rates, x.row.currency,
				      ledger_state(lg), err);
	if (rc != 0)
		return rc;
	if ((unsigned)o->focus > BILL_FOCUS_1_3)
		return lg_error_set(err, LG_EINVAL,
				    "export: unknown FOCUS version");
	x.row.basis = o->basis;
	x.row.focus = o->focus;
	x.row.cfg = o->rates;
	x.offset_s = o->rates ? o->rates->offset_s : 0;
	x.horizon_ns = horizon_ns;
	/* The range is cut at whole seconds, the end at or before the
	 * horizon: the milliseconds after the last whole second stay in the
	 * accumulators and are billed by the export that starts there. */
	x.start_ms = floor_s(o->from_ns / NS_PER_MS);
	x.end_ms = o->to_ns / NS_PER_MS;
	if (x.end_ms > horizon_ns / NS_PER_MS)
		x.end_ms = horizon_ns / NS_PER_MS;
	x.end_ms = floor_s(x.end_ms);
	if (x.end_ms < x.start_ms)
		x.end_ms = x.start_ms;
	if (range != NULL)
		*range = (struct export_range){
			.start_ms = x.start_ms,
			.end_ms = x.end_ms,
			.last_seq = ledger_last_seq(lg),
			.horizon_ms = horizon_ns / NS_PER_MS,
			.asked_end_ms = o->to_ns == INT64_MAX
						? INT64_MAX
						: o->to_ns / NS_PER_MS};
	if (x.end_ms == x.start_ms)
		return 0;
	x.prev = bill_snap_new();
	x.next = bill_snap_new();
	rc = walk(&x);
	bill_snap_free(x.prev);
	bill_snap_free(x.next);
	state_free(x.st);
	free(x.pools);
	if (x.user_rc != 0)
		return x.user_rc;
	return rc;
}

/* A billing file is a few entries per class: anything larger is a
 * mistake, refused before it is read. */
#define BILLING_FILE_MAX_BYTES (4u << 20)

int ledger_billing_load(const char *path, struct bill_rates *r,
			struct lg_error *err)
{
	json_error_t je;
	struct stat sb;
	json_t *doc;
	int rc;

	LG_ASSERT(path != NULL && r != NULL);
	bill_rates_init(r);
	/* A file that cannot be opened is said so plainly: jansson's answer
	 * would be "line -1: unable to open ...". */
	if (stat(path, &sb) != 0)
		return lg_error_set(err, LG_EIO, "cannot read it: %s",
				    strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return lg_error_set(err, LG_EINVAL,
				    "is a directory, not a billing file");
	if (S_ISREG(sb.st_mode) &&
	    (uint64_t)sb.st_size > BILLING_FILE_MAX_BYTES)
		return lg_error_set(err, LG_ELIMIT, "larger than %u bytes",
				    BILLING_FILE_MAX_BYTES);
	doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (doc == NULL && je.line < 1)
		return lg_error_set(err, LG_EIO, "%s", je.text);
	if (doc == NULL)
		return lg_error_set(err, LG_EINVAL, "line %d: %s", je.line,
				    je.text);
	rc = bill_rates_parse(r, doc, err);
	json_decref(doc);
	return rc;
}
