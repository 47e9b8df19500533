/*
 * The billing export over a real ledger: hand-computed scenarios (a VM
 * across an hour boundary, a pool scaled up and down, a pod going terminal,
 * a claim allocated late), ranges before, across and after the log, the
 * log range and chain head each row names, checkpoints, refused options,
 * and a property test: on a random month of events the hourly rows, the
 * daily rows, a split of the range and an independent integration of the
 * events all agree to the millisecond.
 */
#include "tests/ledger_gen.h"
#include "tests/ledger_tests.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0_NS  1772323200000000000LL /* 2026-03-01T00:00:00Z */
#define T0     (T0_NS / 1000000)     /* the same in ms */
#define MIN    60000LL
#define HR     BILL_MS_PER_HOUR
#define DAY    BILL_MS_PER_DAY
#define NS(ms) ((ms)*1000000LL)

static ledger_t *open_dir(const char *dir)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.checkpoint_secs = -1};
	struct lg_error err = {0};
	ledger_t *lg = NULL;

	ck_assert_msg(ledger_open(&lg, &o, &err) == 0, "open: %s", err.msg);
	return lg;
}

/* Appends events given as JSON with single quotes, in one batch. */
static void append_json(ledger_t *lg, const char *const *lines, size_t n)
{
	struct event *evs = calloc(n + 1, sizeof(*evs));
	json_t **docs = calloc(n + 1, sizeof(*docs));
	char **scratch = calloc(n + 1, sizeof(*scratch));
	struct lg_error err = {0};

	for (size_t i = 0; i < n; i++) {
		docs[i] = tq(lines[i]);
		ck_assert_msg(event_from_json(&evs[i], docs[i], &scratch[i],
					      &err) == 0,
			      "%s: %s", lines[i], err.msg);
	}
	ck_assert_msg(ledger_append(lg, evs, n, NULL, 0, NULL, &err) == 0,
		      "append: %s", err.msg);
	for (size_t i = 0; i < n; i++) {
		json_decref(docs[i]);
		free(scratch[i]);
	}
	free(evs);
	free(docs);
	free(scratch);
}

/* Classes h100 and a10; tenants tenant-root and tenant-a; all at 00:00. */
static const char *const base_events[] = {
	"{'time': '2026-03-01T00:00:00Z', 'type': 'CLASS', 'class': 'h100', "
	"'definition': {'name': 'h100', 'resourceNames': "
	"['nvidia.com/GH100']}}",
	"{'time': '2026-03-01T00:00:00Z', 'type': 'CLASS', 'class': 'a10', "
	"'definition': {'name': 'a10', 'resourceNames': ['nvidia.com/GA102']}}",
	"{'time': '2026-03-01T00:00:00Z', 'type': 'TENANT', 'namespace': "
	"'tenant-root', 'parent': null}",
	"{'time': '2026-03-01T00:00:00Z', 'type': 'TENANT', 'namespace': "
	"'tenant-a', 'parent': 'tenant-root'}",
};
#define N_BASE (sizeof(base_events) / sizeof(base_events[0]))

/* ---------------------------------------------------------------------- */
/* Rows as text: "HH:MM-HH:MM ns cls device-ms [subtree]", times as offsets
 * from 2026-03-01T00:00Z (with :SS.mmm when not on a minute). */

struct collected {
	char text[8192];
	size_t n;
	int stop_at; /* return 7 at this row (1-based; 0: never) */
	struct bill_row first, last;
	char first_ns[64], first_cls[64], last_currency[8];
};

static size_t offset_text(int64_t t_ms, char *buf, size_t cap)
{
	int64_t m = (t_ms - T0) / MIN, r = (t_ms - T0) % MIN;

	if (r == 0)
		return (size_t)snprintf(buf, cap, "%02lld:%02lld",
					(long long)(m / 60),
					(long long)(m % 60));
	if (r % 1000 == 0)
		return (size_t)snprintf(buf, cap, "%02lld:%02lld:%02lld",
					(long long)(m / 60),
					(long long)(m % 60),
					(long long)(r / 1000));
	return (size_t)snprintf(buf, cap, "%02lld:%02lld:%02lld.%03lld",
				(long long)(m / 60), (long long)(m % 60),
				(long long)(r / 1000), (long long)(r % 1000));
}

static int collect(void *ctx, const struct bill_row *row)
{
	struct collected *c = ctx;
	char a[32], b[32];
	size_t len = strlen(c->text);

	if (c->n == 0) {
		c->first = *row;
		snprintf(c->first_ns, sizeof(c->first_ns), "%s", row->ns);
		snprintf(c->first_cls, sizeof(c->first_cls), "%s", row->cls);
	}
	c->last = *row;
	snprintf(c->last_currency, sizeof(c->last_currency), "%s",
		 row->currency);
	offset_text(row->charge_start_ms, a, sizeof(a));
	offset_text(row->charge_end_ms, b, sizeof(b));
	snprintf(c->text + len, sizeof(c->text) - len, "%s-%s %s %s %lld%s\n",
		 a, b, row->ns, row->cls, (long long)row->device_ms,
		 row->subtree ? " subtree" : "");
	c->n++;
	return c->stop_at && (int)c->n == c->stop_at ? LG_ELIMIT : 0;
}

static void export_ok(ledger_t *lg, const struct export_opts *o,
		      struct collected *c, struct export_range *range)
{
	struct lg_error err = {0};
	int rc = ledger_export(lg, o, collect, c, range, &err);

	ck_assert_msg(rc == 0, "export: rc %d: %s", rc, err.msg);
}

/* ---------------------------------------------------------------------- */
/* Hand-computed scenarios */

struct expect {
	int64_t from, to; /* ms offsets from T0 */
	enum bill_step step;
	enum bill_basis basis;
	bool rollup;
	int64_t end; /* the billing range's end (offset) */
	const char *rows;
};

struct scenario {
	const char *name;
	const char *const *events;
	size_t n_events;
	const struct expect *expect;
	size_t n_expect;
};

#define ARRAY(a) a, sizeof(a) / sizeof(a[0])

/* A VM reserves 2 units from 09:30 to 11:00: 30 min in hour 9, a whole
 * hour 10, 90 min in the day. */
static const char *const vm_events[] = {
	"{'time': '2026-03-01T09:30:00Z', 'type': 'RESERVE', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'VMInstance', 'name': 'vm', "
	"'uid': 'u', 'before': 0, 'after': 2}",
	"{'time': '2026-03-01T11:00:00Z', 'type': 'RELEASE', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'VMInstance', 'name': 'vm', "
	"'uid': 'u', 'before': 2, 'after': 0}",
	"{'time': '2026-03-01T12:00:00Z', 'type': 'TICK'}",
};
static const struct expect vm_expect[] = {
	{0, 12 * HR, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 12 * HR,
	 "09:00-10:00 tenant-a h100 3600000\n"
	 "10:00-11:00 tenant-a h100 7200000\n"},
	{0, DAY, BILL_STEP_DAY, BILL_BASIS_RESERVED, false, 12 * HR,
	 "00:00-12:00 tenant-a h100 10800000\n"},
	/* Nothing was allocated. */
	{0, DAY, BILL_STEP_HOUR, BILL_BASIS_ALLOCATED, false, 12 * HR, ""},
	/* A range that does not start on the hour. */
	{9 * HR + 45 * MIN, 10 * HR + 30 * MIN, BILL_STEP_HOUR,
	 BILL_BASIS_RESERVED, false, 10 * HR + 30 * MIN,
	 "09:45-10:00 tenant-a h100 1800000\n"
	 "10:00-10:30 tenant-a h100 3600000\n"},
	/* The subtree rows of tenant-a and tenant-root. */
	{9 * HR, 10 * HR, BILL_STEP_HOUR, BILL_BASIS_RESERVED, true, 10 * HR,
	 "09:00-10:00 tenant-a h100 3600000\n"
	 "09:00-10:00 tenant-a h100 3600000 subtree\n"
	 "09:00-10:00 tenant-root h100 3600000 subtree\n"},
};

/* A pool of KubernetesNodes: 4 units at 10:00, 8 at 10:15, 2 at 10:45,
 * none at 11:30. Hour 10: 4*15 + 8*30 + 2*15 = 330 unit-minutes. */
static const char *const pool_events[] = {
	"{'time': '2026-03-01T10:00:00Z', 'type': 'RESERVE', 'namespace': "
	"'tenant-a', 'class': 'a10', 'kind': 'KubernetesNodes', 'name': "
	"'pool', 'uid': 'u', 'before': 0, 'after': 4}",
	"{'time': '2026-03-01T10:15:00Z', 'type': 'RESERVE', 'namespace': "
	"'tenant-a', 'class': 'a10', 'kind': 'KubernetesNodes', 'name': "
	"'pool', 'uid': 'u', 'before': 4, 'after': 8}",
	"{'time': '2026-03-01T10:45:00Z', 'type': 'RELEASE', 'namespace': "
	"'tenant-a', 'class': 'a10', 'kind': 'KubernetesNodes', 'name': "
	"'pool', 'uid': 'u', 'before': 8, 'after': 2}",
	"{'time': '2026-03-01T11:30:00Z', 'type': 'RELEASE', 'namespace': "
	"'tenant-a', 'class': 'a10', 'kind': 'KubernetesNodes', 'name': "
	"'pool', 'uid': 'u', 'before': 2, 'after': 0}",
	"{'time': '2026-03-02T03:00:00Z', 'type': 'TICK'}",
};
static const struct expect pool_expect[] = {
	{0, 2 * DAY, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 27 * HR,
	 "10:00-11:00 tenant-a a10 19800000\n"
	 "11:00-12:00 tenant-a a10 3600000\n"},
	/* Day rows: the second day is clipped by the horizon and empty. */
	{0, 2 * DAY, BILL_STEP_DAY, BILL_BASIS_RESERVED, false, 27 * HR,
	 "00:00-24:00 tenant-a a10 23400000\n"},
	/* Quarter hours split exactly. */
	{10 * HR + 10 * MIN, 10 * HR + 50 * MIN, BILL_STEP_HOUR,
	 BILL_BASIS_RESERVED, false, 10 * HR + 50 * MIN,
	 "10:10-10:50 tenant-a a10 16200000\n"},
};

/* A pod in a namespace outside the tenant tree holds a device from
 * 12:00:00.250 until it goes terminal at 12:20:00.750999 (times truncated
 * to the ms): 1,200,500 ms on both bases. */
static const char *const pod_events[] = {
	"{'time': '2026-03-01T12:00:00.250Z', 'type': 'RESERVE', 'namespace': "
	"'default', 'class': 'a10', 'kind': 'Pod', 'name': 'p', 'uid': 'u', "
	"'before': 0, 'after': 1}",
	"{'time': '2026-03-01T12:00:00.250Z', 'type': 'ALLOC', 'namespace': "
	"'default', 'class': 'a10', 'kind': 'Pod', 'name': 'p', 'uid': 'u', "
	"'node': 'n1', 'before': 0, 'after': 1}",
	"{'time': '2026-03-01T12:20:00.750999Z', 'type': 'RELEASE', "
	"'namespace': 'default', 'class': 'a10', 'kind': 'Pod', 'name': 'p', "
	"'uid': 'u', 'before': 1, 'after': 0}",
	"{'time': '2026-03-01T12:20:00.750999Z', 'type': 'FREE', 'namespace': "
	"'default', 'class': 'a10', 'kind': 'Pod', 'name': 'p', 'uid': 'u', "
	"'node': 'n1', 'before': 1, 'after': 0}",
	"{'time': '2026-03-01T13:00:00Z', 'type': 'TICK'}",
};
static const struct expect pod_expect[] = {
	{0, DAY, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 13 * HR,
	 "12:00-13:00 default a10 1200500\n"},
	{0, DAY, BILL_STEP_HOUR, BILL_BASIS_ALLOCATED, false, 13 * HR,
	 "12:00-13:00 default a10 1200500\n"},
	/* Outside every tenant: no subtree row. */
	{0, DAY, BILL_STEP_DAY, BILL_BASIS_ALLOCATED, true, 13 * HR,
	 "00:00-13:00 default a10 1200500\n"},
	/* --from and --to are floored to the second. */
	{12 * HR + 10 * MIN + 999, 12 * HR + 20 * MIN + 1999, BILL_STEP_HOUR,
	 BILL_BASIS_RESERVED, false, 12 * HR + 20 * MIN + 1000,
	 "12:10-12:20:01 default a10 600750\n"},
};

/* A claim reserves 2 units at 13:00 and is allocated only at 13:40; both
 * end at 14:10. */
static const char *const claim_events[] = {
	"{'time': '2026-03-01T13:00:00Z', 'type': 'RESERVE', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'ResourceClaim', 'name': 'c', "
	"'uid': 'u', 'before': 0, 'after': 2}",
	"{'time': '2026-03-01T13:40:00Z', 'type': 'ALLOC', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'ResourceClaim', 'name': 'c', "
	"'uid': 'u', 'node': 'n1', 'before': 0, 'after': 2}",
	"{'time': '2026-03-01T14:10:00Z', 'type': 'RELEASE', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'ResourceClaim', 'name': 'c', "
	"'uid': 'u', 'before': 2, 'after': 0}",
	"{'time': '2026-03-01T14:10:00Z', 'type': 'FREE', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'ResourceClaim', 'name': 'c', "
	"'uid': 'u', 'node': 'n1', 'before': 2, 'after': 0}",
	"{'time': '2026-03-01T15:00:00Z', 'type': 'TICK'}",
};
static const struct expect claim_expect[] = {
	{0, DAY, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 15 * HR,
	 "13:00-14:00 tenant-a h100 7200000\n"
	 "14:00-15:00 tenant-a h100 1200000\n"},
	{0, DAY, BILL_STEP_HOUR, BILL_BASIS_ALLOCATED, false, 15 * HR,
	 "13:00-14:00 tenant-a h100 2400000\n"
	 "14:00-15:00 tenant-a h100 1200000\n"},
	{0, DAY, BILL_STEP_DAY, BILL_BASIS_ALLOCATED, false, 15 * HR,
	 "00:00-15:00 tenant-a h100 3600000\n"},
};

/* Ranges against the log's extent (the VM of vm_events, horizon 12:00). */
static const struct expect range_expect[] = {
	/* Entirely before the first event: billed (nothing), not refused. */
	{-30 * DAY, -29 * DAY, BILL_STEP_DAY, BILL_BASIS_RESERVED, false,
	 -29 * DAY, ""},
	/* Entirely after the horizon: an empty range. */
	{13 * HR, 14 * HR, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 13 * HR,
	 ""},
	/* Exactly at the horizon: empty as well. */
	{12 * HR, 14 * HR, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 12 * HR,
	 ""},
	/* Across the first event, up to the horizon. */
	{-DAY, 30 * DAY, BILL_STEP_DAY, BILL_BASIS_RESERVED, false, 12 * HR,
	 "00:00-12:00 tenant-a h100 10800000\n"},
	/* Empty hours between events give no rows; a boundary exactly at
	 * the release gives nothing after it. */
	{11 * HR, 12 * HR, BILL_STEP_HOUR, BILL_BASIS_RESERVED, false, 12 * HR,
	 ""},
	{10 * HR + 59 * MIN, 11 * HR + MIN, BILL_STEP_HOUR, BILL_BASIS_RESERVED,
	 false, 11 * HR + MIN, "10:59-11:00 tenant-a h100 120000\n"},
	/* A second; a millisecond is cut to nothing (whole seconds). */
	{9 * HR + 30 * MIN, 9 * HR + 30 * MIN + 1000, BILL_STEP_HOUR,
	 BILL_BASIS_RESERVED, false, 9 * HR + 30 * MIN + 1000,
	 "09:30-09:30:01 tenant-a h100 2000\n"},
	{9 * HR + 30 * MIN, 9 * HR + 30 * MIN + 999, BILL_STEP_HOUR,
	 BILL_BASIS_RESERVED, false, 9 * HR + 30 * MIN, ""},
};

static const struct scenario scenarios[] = {
	{"vm", ARRAY(vm_events), ARRAY(vm_expect)},
	{"pool", ARRAY(pool_events), ARRAY(pool_expect)},
	{"pod", ARRAY(pod_events), ARRAY(pod_expect)},
	{"claim", ARRAY(claim_events), ARRAY(claim_expect)},
	{"range", ARRAY(vm_events), ARRAY(range_expect)},
};

START_TEST(export_scenario)
{
	const struct scenario *sc = &scenarios[_i];
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);

	append_json(lg, base_events, N_BASE);
	append_json(lg, sc->events, sc->n_events);
	for (size_t i = 0; i < sc->n_expect; i++) {
		const struct expect *e = &sc->expect[i];
		struct export_opts o = {.from_ns = T0_NS + NS(e->from),
					.to_ns = T0_NS + NS(e->to),
					.step = e->step,
					.basis = e->basis,
					.rollup_subtree = e->rollup};
		struct collected c = {.n = 0};
		struct export_range r;

		export_ok(lg, &o, &c, &r);
		ck_assert_msg(strcmp(c.text, e->rows) == 0,
			      "%s[%zu]: got\n%swant\n%s", sc->name, i, c.text,
			      e->rows);
		ck_assert_int_eq(r.start_ms, T0 + e->from / 1000 * 1000);
		ck_assert_msg(r.end_ms == T0 + e->end, "%s[%zu]: end %lld",
			      sc->name, i, (long long)(r.end_ms - T0));
		ck_assert_uint_eq(r.last_seq, ledger_last_seq(lg));
		if (c.n > 0) {
			int64_t ms, me;

			/* The billing period is the calendar month. */
			bill_month_of(c.first.charge_start_ms, 0, &ms, &me);
			ck_assert_int_eq(c.first.billing_start_ms, ms);
			ck_assert_int_eq(c.first.billing_end_ms, me);
			ck_assert_int_eq(c.first.period_open,
					 me > r.end_ms);
		}
	}
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The log range and chain head of a row */

static int head_fn(void *ctx, const struct event *ev, const uint8_t *head)
{
	memcpy(ctx, head, LEDGER_HEAD_BYTES);
	return 0;
}

START_TEST(export_row_provenance)
{
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);
	struct export_opts o = {.from_ns = T0_NS + NS(9 * HR),
				.to_ns = T0_NS + NS(11 * HR)};
	struct collected c = {.n = 0};
	uint8_t head[LEDGER_HEAD_BYTES];
	uint64_t seq;

	append_json(lg, base_events, N_BASE);
	append_json(lg, vm_events, 3);
	export_ok(lg, &o, &c, NULL);
	ck_assert_uint_eq(c.n, 2);
	/* 09:00 is read from the state after the base events (seq 4), 10:00
	 * likewise after the RESERVE at 09:30 (seq 5). */
	ck_assert_uint_eq(c.first.seq_start, 4);
	ck_assert_uint_eq(c.first.seq_end, 5);
	ck_assert_int_eq(
		ledger__seq_at_time(lg, NS(c.first.charge_end_ms), &seq, NULL),
		0);
	ck_assert_uint_eq(seq, c.first.seq_end);
	ck_assert_int_eq(ledger_scan(lg, 5, 1, head_fn, head, NULL), 0);
	ck_assert_mem_eq(c.first.chain_head, head, LEDGER_HEAD_BYTES);
	/* Without rates: USD, cost 0. */
	ck_assert(!c.first.priced);
	ck_assert_int_eq(c.first.list_cost_nano, 0);
	ck_assert_int_eq(c.first.billed_cost_nano, 0);
	ck_assert_str_eq(c.first_ns, "tenant-a");
	ck_assert_str_eq(c.first_cls, "h100");
	/* The release exactly at 11:00 is in the state read for 11:00, as
	 * `replay --at 11:00` has it. */
	c = (struct collected){.n = 0};
	o.from_ns = T0_NS + NS(10 * HR);
	o.to_ns = T0_NS + NS(12 * HR);
	export_ok(lg, &o, &c, NULL);
	ck_assert_uint_eq(c.n, 1);
	ck_assert_uint_eq(c.first.seq_start, 5);
	ck_assert_uint_eq(c.first.seq_end, 6);
	ck_assert_int_eq(ledger_scan(lg, 6, 1, head_fn, head, NULL), 0);
	ck_assert_mem_eq(c.first.chain_head, head, LEDGER_HEAD_BYTES);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Options, rates, stopping */

static const char *const rated_events[] = {
	"{'time': '2026-03-01T09:00:00Z', 'type': 'RESERVE', 'namespace': "
	"'tenant-a', 'class': 'h100', 'kind': 'VMInstance', 'name': 'vm', "
	"'uid': 'u', 'before': 0, 'after': 3}",
	"{'time': '2026-03-01T09:00:00Z', 'type': 'RESERVE', 'namespace': "
	"'default', 'class': 'a10', 'kind': 'Pod', 'name': 'p', 'uid': 'u', "
	"'before': 0, 'after': 1}",
	"{'time': '2026-03-01T11:00:00Z', 'type': 'TICK'}",
};

static const struct {
	int64_t from, to; /* offsets; INT64_MIN: from_ns -1 */
	int step, basis;
	const char *currency;
	int rc;
} bad_opts[] = {
	{INT64_MIN, HR, 0, 0, NULL, LG_EINVAL}, /* before 1970 */
	{HR, HR, 0, 0, NULL, LG_EINVAL},	/* empty */
	{2 * HR, HR, 0, 0, NULL, LG_EINVAL},	/* backwards */
	{0, HR, 2, 0, NULL, LG_EINVAL},		/* no such step */
	{0, HR, 0, -1, NULL, LG_EINVAL},	/* no such basis */
	{0, HR, 0, 0, "usd", LG_EINVAL},	/* not ISO 4217 */
	{0, HR, 0, 0, "EURO", LG_EINVAL},
};

START_TEST(export_refused)
{
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);

	append_json(lg, base_events, N_BASE);
	append_json(lg, rated_events, 3);
	for (size_t i = 0; i < sizeof(bad_opts) / sizeof(bad_opts[0]); i++) {
		struct export_opts o = {
			.from_ns = bad_opts[i].from == INT64_MIN
					   ? -1
					   : T0_NS + NS(bad_opts[i].from),
			.to_ns = T0_NS + NS(bad_opts[i].to),
			.step = (enum bill_step)bad_opts[i].step,
			.basis = (enum bill_basis)bad_opts[i].basis,
			.currency = bad_opts[i].currency};
		struct collected c = {.n = 0};
		struct export_range r = {.start_ms = 1, .end_ms = 1, .last_seq = 1};
		struct lg_error err = {0};

		ck_assert_int_eq(ledger_export(lg, &o, collect, &c, &r, &err),
				 bad_opts[i].rc);
		ck_assert_str_ne(err.msg, "");
		ck_assert_uint_eq(c.n, 0);	 /* fn never called */
		ck_assert_int_eq(r.start_ms, 1); /* nor the range filled */
	}
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

static void parse_rates(struct bill_rates *r, const char *doc)
{
	json_t *v = tq(doc);
	struct lg_error err = {0};

	ck_assert_msg(bill_rates_parse(r, v, &err) == 0, "%s", err.msg);
	json_decref(v);
}

START_TEST(export_rates)
{
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);
	struct bill_rates rates;
	struct export_opts o = {.from_ns = T0_NS + NS(9 * HR),
				.to_ns = T0_NS + NS(10 * HR + 1000) + 1000001,
				.step = BILL_STEP_DAY,
				.rates = &rates};
	struct collected c = {.n = 0};
	struct lg_error err = {0};

	append_json(lg, base_events, N_BASE);
	append_json(lg, rated_events, 3);
	parse_rates(&rates,
		    "{'rates': [{'class': 'h100', 'currency': 'EUR', "
		    "'listUnitPrice': '3.20', 'billedUnitPrice': '2.50'}, "
		    "{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
		    "'0.000000001'}]}");
	/* Two currencies and none chosen; a currency the rates lack. */
	ck_assert_int_eq(ledger_export(lg, &o, collect, &c, NULL, &err),
			 LG_EINVAL);
	o.currency = "GBP";
	ck_assert_int_eq(ledger_export(lg, &o, collect, &c, NULL, &err),
			 LG_ENOENT);
	ck_assert_uint_eq(c.n, 0);
	/* a10 has no EUR rate: refused before any row. */
	o.currency = "EUR";
	ck_assert_int_eq(ledger_export(lg, &o, collect, &c, NULL, &err),
			 LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "no EUR rate for class a10"));
	ck_assert_uint_eq(c.n, 0);
	bill_rates_release(&rates);
	parse_rates(&rates,
		    "{'rates': [{'class': 'h100', 'currency': 'EUR', "
		    "'listUnitPrice': '3.20', 'billedUnitPrice': '2.50'}, "
		    "{'class': 'a10', 'currency': 'EUR', 'listUnitPrice': "
		    "'0'}, "
		    "{'class': 'h100', 'currency': 'USD', 'listUnitPrice': "
		    "'0.000000001'}, {'class': 'a10', 'currency': 'USD', "
		    "'listUnitPrice': '1'}]}");
	/* 3 devices for 1 h 1 s (the 1 ms after it is cut: whole seconds):
	 * 10,803,000 device-ms. */
	export_ok(lg, &o, &c, NULL);
	ck_assert_str_eq(c.text, "09:00-10:00:01 default a10 3601000\n"
				 "09:00-10:00:01 tenant-a h100 10803000\n");
	/* a10 is explicitly free. h100: PricingQuantity 10,803,000 ms /
	 * 3,600,000 = 3.000833333 (truncated), x 3.20 = 9.6026666656 rounds
	 * down (the exact 9.60266666.. rounded up: the cost is the product
	 * of the printed quantity), x 2.50 = 7.5020833325 rounds down. */
	ck_assert(c.first.priced);
	ck_assert_int_eq(c.first.list_cost_nano, 0);
	ck_assert_int_eq(c.first.list_unit_nano, 0);
	ck_assert(c.last.priced);
	ck_assert_str_eq(c.last_currency, "EUR");
	ck_assert_int_eq(c.last.list_unit_nano, 3200000000LL);
	ck_assert_int_eq(c.last.contracted_unit_nano, 2500000000LL);
	ck_assert_int_eq(c.last.list_cost_nano, 9602666666LL);
	ck_assert_int_eq(c.last.billed_cost_nano, 7502083333LL);
	/* USD: a nano per GPU-hour; 3.0008 nano rounds to 3. */
	o.currency = "USD";
	c = (struct collected){.n = 0};
	export_ok(lg, &o, &c, NULL);
	ck_assert_str_eq(c.last_currency, "USD");
	ck_assert_int_eq(c.last.list_cost_nano, 3);
	ck_assert_int_eq(c.last.billed_cost_nano, 3);
	bill_rates_release(&rates);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

START_TEST(export_stops_and_empty)
{
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);
	struct export_opts o = {.from_ns = T0_NS, .to_ns = INT64_MAX};
	struct collected c = {.stop_at = 1};
	struct export_range r;
	struct lg_error err = {0};

	/* An empty ledger: horizon 0, nothing to bill. */
	export_ok(lg, &o, &c, &r);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_int_eq(r.end_ms, r.start_ms);
	append_json(lg, base_events, N_BASE);
	append_json(lg, rated_events, 3);
	/* fn's value stops the export and comes back; one call only. */
	ck_assert_int_eq(ledger_export(lg, &o, collect, &c, &r, &err),
			 LG_ELIMIT);
	ck_assert_uint_eq(c.n, 1);
	ck_assert_int_eq(r.end_ms, T0 + 11 * HR);
	/* Stopping in a rollup's subtree rows works the same. */
	c = (struct collected){.stop_at = 3};
	o.rollup_subtree = true;
	ck_assert_int_eq(ledger_export(lg, &o, collect, &c, &r, &err),
			 LG_ELIMIT);
	ck_assert_str_eq(c.text,
			 "09:00-10:00 default a10 3600000\n"
			 "09:00-10:00 tenant-a h100 10800000\n"
			 "09:00-10:00 tenant-a h100 10800000 subtree\n");
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* A range shorter than asked says what was billed and why; the default
 * end (the horizon) and a range inside the log say nothing. */
START_TEST(export_shorter_warns)
{
	static const struct {
		int64_t start_ms, end_ms, horizon_ms, asked_end_ms;
		const char *want; /* "" for no warning */
	} cases[] = {
		{0, 0, 0, INT64_MAX,
		 "nothing billed: the ledger holds no timed event yet"},
		/* --from after the horizon: empty. */
		{1772323200000, 1772323200000, 1772236800500, INT64_MAX,
		 "nothing billed: the range starts at 2026-03-01T00:00:00Z, at "
		 "or after the horizon 2026-02-28T00:00:00.500Z (the time of "
		 "the last event); the ledger never bills time it has not "
		 "seen"},
		/* --to (or --month's end) after the horizon: cut. */
		{1772236800000, 1772240400000, 1772240400250, 1774915200000,
		 "billed 2026-02-28T00:00:00Z to 2026-02-28T01:00:00Z, not to "
		 "2026-03-31T00:00:00Z: the horizon is "
		 "2026-02-28T01:00:00.250Z (the time of the last event) and the "
		 "ledger never bills time it has not seen"},
		/* Up to the horizon by default, or ending before it: quiet. */
		{1772236800000, 1772240400000, 1772240400250, INT64_MAX, ""},
		{1772236800000, 1772240400000, 1772326800000, 1772240400000, ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct export_range r = {
			.start_ms = cases[i].start_ms,
			.end_ms = cases[i].end_ms,
			.horizon_ms = cases[i].horizon_ms,
			.asked_end_ms = cases[i].asked_end_ms};
		char buf[512] = "";
		size_t n = ledger_export_warning(&r, buf, sizeof(buf));

		ck_assert_uint_eq(n, strlen(cases[i].want));
		ck_assert_str_eq(n ? buf : "", cases[i].want);
	}
}
END_TEST

/* ledger_export_fn returns LG_* codes only: a positive value (an errno,
 * say) is a programmer error that ledger_export asserts. */
static int positive_row(void *ctx, const struct bill_row *row)
{
	return 32; /* EPIPE */
}

START_TEST(export_callback_contract)
{
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);
	struct export_opts o = {.from_ns = T0_NS, .to_ns = INT64_MAX};
	struct lg_error err = {0};

	append_json(lg, base_events, N_BASE);
	append_json(lg, rated_events, 3);
	ledger_export(lg, &o, positive_row, NULL, NULL, &err); /* aborts */
	ck_abort_msg("ledger_export took a positive code from its callback");
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Checkpoints and the property test on random logs */

/* Random events from the generator, spread over about a month: gaps of 0
 * to 40 minutes with ms and sub-ms parts, so that events fall on, just
 * before and just after boundaries. */
static void append_random(ledger_t *lg, uint64_t seed, size_t n,
			  size_t first_checkpoint_every)
{
	struct gen *g = gen_new(seed, T0_NS);
	struct event ev;
	struct lg_error err = {0};
	uint64_t s = seed * 2654435761u + 11;
	int64_t t = T0_NS;

	for (size_t i = 0; i < n; i++) {
		gen_next(g, &ev, 1);
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		switch ((s >> 33) % 4) {
		case 0:
			break; /* same instant */
		case 1:	       /* to the next hour exactly */
			t = NS(model__bill_period_end(t / 1000000,
						      BILL_STEP_HOUR));
			break;
		default:
			t += (int64_t)((s >> 20) % (40 * 60 * 1000)) * 1000000 +
			     (int64_t)((s >> 8) % 1000000);
		}
		ev.time_ns = t;
		ck_assert_msg(ledger_append(lg, &ev, 1, NULL, 0, NULL, &err) ==
				      0,
			      "append %zu: %s", i, err.msg);
		if (first_checkpoint_every &&
		    (i + 1) % first_checkpoint_every == 0)
			ck_assert_int_eq(ledger_checkpoint(lg, &err), 0);
	}
	gen_free(g);
}

/* Totals per (namespace, class) and per (namespace, class, day). */
#define KEYS_MAX 1024
struct totals {
	size_t n;
	struct {
		char ns[32], cls[16];
		int64_t day; /* -1: the whole range */
		int64_t ms;
	} k[KEYS_MAX];
	uint64_t rows;
	int64_t start_ms, end_ms; /* the rows must tile this range */
	int64_t covered_ms;	  /* for the first key seen */
};

static void add_total(struct totals *t, const char *ns, const char *cls,
		      int64_t day, int64_t ms)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->k[i].day == day && strcmp(t->k[i].ns, ns) == 0 &&
		    strcmp(t->k[i].cls, cls) == 0)
			break;
	if (i == t->n) {
		ck_assert_uint_lt(t->n, KEYS_MAX);
		snprintf(t->k[i].ns, sizeof(t->k[i].ns), "%s", ns);
		snprintf(t->k[i].cls, sizeof(t->k[i].cls), "%s", cls);
		t->k[i].day = day;
		t->k[i].ms = 0;
		t->n++;
	}
	t->k[i].ms += ms;
}

static int total_row(void *ctx, const struct bill_row *row)
{
	struct totals *t = ctx;
	int64_t day =
		model__bill_period_end(row->charge_start_ms, BILL_STEP_DAY);

	/* Periods are aligned and inside the range. */
	ck_assert_int_ge(row->charge_start_ms, t->start_ms);
	ck_assert_int_le(row->charge_end_ms, t->end_ms);
	ck_assert_int_le(row->charge_end_ms, day);
	ck_assert_int_gt(row->device_ms, 0);
	ck_assert(!row->subtree);
	add_total(t, row->ns, row->cls, -1, row->device_ms);
	add_total(t, row->ns, row->cls, day, row->device_ms);
	t->rows++;
	return 0;
}

static void totals_of(ledger_t *lg, int64_t from_ns, int64_t to_ns,
		      enum bill_step step, enum bill_basis basis,
		      struct totals *t)
{
	struct export_opts o = {.from_ns = from_ns,
				.to_ns = to_ns,
				.step = step,
				.basis = basis};
	struct export_range r;
	struct lg_error err = {0};

	memset(t, 0, sizeof(*t));
	t->start_ms = from_ns / 1000000000 * 1000; /* whole seconds */
	t->end_ms = to_ns / 1000000;
	ck_assert_msg(ledger_export(lg, &o, total_row, t, &r, &err) == 0, "%s",
		      err.msg);
	t->end_ms = r.end_ms;
}

static int64_t total_get(const struct totals *t, const char *ns,
			 const char *cls, int64_t day)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->k[i].day == day && strcmp(t->k[i].ns, ns) == 0 &&
		    strcmp(t->k[i].cls, cls) == 0)
			return t->k[i].ms;
	return 0;
}

/* Every key of a is in b with the same figure (and so, with the reverse
 * call, the two are equal). */
static void totals_within(const struct totals *a, const struct totals *b,
			  bool days, const char *what)
{
	for (size_t i = 0; i < a->n; i++) {
		if (!days && a->k[i].day != -1)
			continue;
		ck_assert_msg(total_get(b, a->k[i].ns, a->k[i].cls,
					a->k[i].day) == a->k[i].ms,
			      "%s: %s %s day %lld: %lld vs %lld", what,
			      a->k[i].ns, a->k[i].cls, (long long)a->k[i].day,
			      (long long)a->k[i].ms,
			      (long long)total_get(b, a->k[i].ns, a->k[i].cls,
						   a->k[i].day));
	}
}

/* An independent integration of the unit events over [from, end). */
struct oracle {
	const struct export_range *r;
	enum bill_basis basis;
	struct totals t;
	size_t n;
	struct {
		char ns[32], cls[16];
		int64_t level, since_ms;
	} lv[KEYS_MAX];
};

static void oracle_settle(struct oracle *o, size_t i, int64_t t_ms)
{
	int64_t a = o->lv[i].since_ms, b = t_ms;

	a = a < o->r->start_ms ? o->r->start_ms : a;
	b = b > o->r->end_ms ? o->r->end_ms : b;
	if (b > a && o->lv[i].level > 0)
		add_total(&o->t, o->lv[i].ns, o->lv[i].cls, -1,
			  o->lv[i].level * (b - a));
	o->lv[i].since_ms = t_ms;
}

static int oracle_event(void *ctx, const struct event *ev, const uint8_t *h)
{
	struct oracle *o = ctx;
	bool res = ev->type == EV_RESERVE || ev->type == EV_RELEASE;
	bool alloc = ev->type == EV_ALLOC || ev->type == EV_FREE;
	size_t i;

	if (!(o->basis == BILL_BASIS_RESERVED ? res : alloc))
		return 0;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->lv[i].ns, ev->ns) == 0 &&
		    strcmp(o->lv[i].cls, ev->cls) == 0)
			break;
	if (i == o->n) {
		ck_assert_uint_lt(o->n, KEYS_MAX);
		snprintf(o->lv[i].ns, sizeof(o->lv[i].ns), "%s", ev->ns);
		snprintf(o->lv[i].cls, sizeof(o->lv[i].cls), "%s", ev->cls);
		o->lv[i].level = 0;
		o->lv[i].since_ms = 0;
		o->n++;
	}
	oracle_settle(o, i, ev->time_ns / 1000000);
	o->lv[i].level += ev->after - ev->before;
	return 0;
}

static void oracle_of(ledger_t *lg, const struct export_range *r,
		      enum bill_basis basis, struct oracle *o)
{
	memset(o, 0, sizeof(*o));
	o->r = r;
	o->basis = basis;
	ck_assert_int_eq(ledger_scan(lg, 1, 0, oracle_event, o, NULL), 0);
	for (size_t i = 0; i < o->n; i++)
		oracle_settle(o, i, r->end_ms);
}

START_TEST(export_splits_agree)
{
	char *dir = fresh_dir();
	ledger_t *lg = open_dir(dir);
	/* From mid-morning of day 2 to mid-afternoon of day 20, off the
	 * minute; the split point is off the ms grid as well. */
	int64_t from = T0_NS + NS(DAY + 9 * HR + 7 * MIN) + 123456789;
	int64_t to = T0_NS + NS(19 * DAY + 15 * HR) + 987654321;
	int64_t mid = T0_NS + NS(7 * DAY + 3 * HR + 17) + 999999;
	struct totals *hour = malloc(sizeof(*hour)),
		      *day = malloc(sizeof(*day)), *a = malloc(sizeof(*a)),
		      *b = malloc(sizeof(*b));
	struct oracle *orc = malloc(sizeof(*orc));

	append_random(lg, (uint64_t)_i + 1, 3000, 0);
	for (int basis = 0; basis < 2; basis++) {
		struct export_range r;

		totals_of(lg, from, to, BILL_STEP_HOUR, basis, hour);
		totals_of(lg, from, to, BILL_STEP_DAY, basis, day);
		ck_assert_uint_gt(hour->rows, day->rows);
		ck_assert_uint_gt(day->n, 4);
		/* Hours sum to days, days to the range, both ways. */
		totals_within(hour, day, true, "hour vs day");
		totals_within(day, hour, true, "day vs hour");
		/* A split of the range into two exports. */
		totals_of(lg, from, mid, BILL_STEP_DAY, basis, a);
		totals_of(lg, mid, to, BILL_STEP_HOUR, basis, b);
		for (size_t i = 0; i < b->n; i++)
			if (b->k[i].day == -1)
				add_total(a, b->k[i].ns, b->k[i].cls, -1,
					  b->k[i].ms);
		totals_within(a, day, false, "split vs day");
		totals_within(day, a, false, "day vs split");
		/* The events integrated directly. */
		r.start_ms = from / 1000000000 * 1000;
		r.end_ms = day->end_ms;
		oracle_of(lg, &r, basis, orc);
		totals_within(&orc->t, day, false, "oracle vs day");
		totals_within(day, &orc->t, false, "day vs oracle");
	}
	free(hour);
	free(day);
	free(a);
	free(b);
	free(orc);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* Copies events [from, from + n) of src to dst (the same history). */
struct copy_ctx {
	ledger_t *dst;
};

static int copy_event(void *ctx, const struct event *ev, const uint8_t *h)
{
	struct copy_ctx *c = ctx;
	struct event e = *ev;
	struct lg_error err = {0};

	ck_assert_msg(ledger_append(c->dst, &e, 1, NULL, 0, NULL, &err) == 0,
		      "copy seq %llu: %s", (unsigned long long)ev->seq,
		      err.msg);
	return 0;
}

/* Property (seeds printed): exports that each run up to the horizon of
 * the log as it then was, and start where the previous one stopped, add
 * up to one export of the whole, to the ms, although every horizon but the
 * last falls inside a second (the remainder is carried, never lost or
 * billed twice). */
START_TEST(export_horizon_carry)
{
	uint64_t seed = 1000 + (uint64_t)_i;
	char *d1 = fresh_dir(), *d2 = fresh_dir();
	ledger_t *all = open_dir(d1), *grow = open_dir(d2);
	struct totals *whole = malloc(sizeof(*whole)),
		      *sum = malloc(sizeof(*sum)), *part = malloc(sizeof(*part));
	struct copy_ctx cc = {grow};
	uint64_t done = 0, last;
	int64_t from = T0_NS, cuts_inside = 0;
	uint64_t s = seed;

	fprintf(stderr, "export_horizon_carry: seed %llu\n",
		(unsigned long long)seed);
	append_random(all, seed, 1000, 0);
	last = ledger_last_seq(all);
	memset(sum, 0, sizeof(*sum));
	while (done < last) {
		struct export_range r;
		int64_t h;
		uint64_t step;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		step = 1 + (s >> 33) % 400;
		if (step > last - done)
			step = last - done;
		ck_assert_int_eq(ledger_scan(all, done + 1, step, copy_event,
					     &cc, NULL),
				 0);
		done += step;
		h = state_horizon_ns(ledger_state(grow)) / 1000000;
		totals_of(grow, from, INT64_MAX, BILL_STEP_HOUR,
			  BILL_BASIS_RESERVED, part);
		r.end_ms = part->end_ms;
		/* Cut at the last whole second at or before the horizon. */
		ck_assert_int_eq(r.end_ms, h >= from / 1000000
						   ? h / 1000 * 1000
						   : from / 1000000);
		cuts_inside += h % 1000 != 0;
		for (size_t i = 0; i < part->n; i++)
			if (part->k[i].day == -1)
				add_total(sum, part->k[i].ns, part->k[i].cls,
					  -1, part->k[i].ms);
		from = NS(r.end_ms);
	}
	ck_assert_int_gt(cuts_inside, 0);
	totals_of(all, T0_NS, INT64_MAX, BILL_STEP_DAY, BILL_BASIS_RESERVED,
		  whole);
	ck_assert_int_eq(whole->end_ms, from / 1000000);
	totals_within(sum, whole, false, "pieces vs whole");
	totals_within(whole, sum, false, "whole vs pieces");
	free(whole);
	free(sum);
	free(part);
	ledger_close(all);
	ledger_close(grow);
	rm_tree(d1);
	rm_tree(d2);
}
END_TEST

/* Rows as CSV lines, all of them. */
struct csv_out {
	char *text;
	size_t len, cap;
};

static int csv_row(void *ctx, const struct bill_row *row)
{
	struct csv_out *c = ctx;
	char line[BILL_LINE_MAX * 2];
	size_t n = bill_row_csv(row, true, line, sizeof(line));

	ck_assert_uint_lt(n, sizeof(line));
	if (c->len + n + 2 > c->cap) {
		c->cap = 2 * (c->len + n + 2);
		c->text = realloc(c->text, c->cap);
	}
	memcpy(c->text + c->len, line, n);
	c->len += n;
	c->text[c->len++] = '\n';
	c->text[c->len] = '\0';
	return 0;
}

static char *csv_of(ledger_t *lg, const struct export_opts *o)
{
	struct csv_out c = {0};
	struct lg_error err = {0};

	ck_assert_msg(ledger_export(lg, o, csv_row, &c, NULL, &err) == 0, "%s",
		      err.msg);
	return c.text ? c.text : strdup("");
}

START_TEST(export_checkpoints_agree)
{
	char *d1 = fresh_dir(), *d2 = fresh_dir();
	ledger_t *plain = open_dir(d1), *ckpt = open_dir(d2);
	struct ledger_stats st1, st2;
	struct export_opts o = {.from_ns = T0_NS + NS(5 * DAY + 30 * MIN),
				.to_ns = T0_NS + NS(9 * DAY),
				.step = BILL_STEP_HOUR,
				.basis = BILL_BASIS_ALLOCATED,
				.rollup_subtree = true};
	char *x, *y;

	append_random(plain, 99, 1500, 0);
	append_random(ckpt, 99, 1500, 200);
	ck_assert_int_eq(ledger_stats(plain, &st1, NULL), 0);
	ck_assert_int_eq(ledger_stats(ckpt, &st2, NULL), 0);
	ck_assert_uint_eq(st1.checkpoints, 0);
	ck_assert_uint_ge(st2.checkpoints, 7);
	x = csv_of(plain, &o);
	y = csv_of(ckpt, &o);
	ck_assert_uint_gt(strlen(x), 1000);
	ck_assert_str_eq(x, y);
	free(x);
	free(y);
	/* And with the state at --from being the last state. */
	o.from_ns = T0_NS + NS(40 * DAY);
	o.to_ns = INT64_MAX;
	x = csv_of(ckpt, &o);
	ck_assert_str_eq(x, "");
	free(x);
	ledger_close(plain);
	ledger_close(ckpt);
	rm_tree(d1);
	rm_tree(d2);
}
END_TEST

LEDGER_PART(export)
{
	TCase *tc = tcase_create("export_scenarios");

	tcase_add_loop_test(tc, export_scenario, 0,
			    sizeof(scenarios) / sizeof(scenarios[0]));
	tcase_add_test(tc, export_row_provenance);
	suite_add_tcase(s, tc);
	tc = tcase_create("export_options");
	tcase_add_test(tc, export_refused);
	tcase_add_test(tc, export_rates);
	tcase_add_test(tc, export_stops_and_empty);
	tcase_add_test(tc, export_shorter_warns);
	tcase_add_test_raise_signal(tc, export_callback_contract, SIGABRT);
	suite_add_tcase(s, tc);
	tc = tcase_create("export_properties");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, export_splits_agree, 0, 3);
	tcase_add_test(tc, export_checkpoints_agree);
	tcase_add_loop_test(tc, export_horizon_carry, 0, 3);
	suite_add_tcase(s, tc);
}
