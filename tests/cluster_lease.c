/*
 * Part of the cluster suite: leadership's pure half (cluster/lease.c,
 * DESIGN 11 rule 5). Timing decisions as functions of injected clock
 * values (tables, then random clocks: seeded, printed; CLUSTER_SEED=N
 * reruns them), the campaign's decisions from etcd's answers (rule 1's
 * outcomes included), the watch of P/leader, the values written, and the
 * module's life cycle without an etcd. The module against a real etcd is
 * tests/lease_cli.sh.
 */
#include "cluster/lease_int.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cluster_tests_lease(Suite *s);

static uint64_t lease_seed;

static uint64_t rnd(uint64_t *x)
{
	/* splitmix64 */
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ---------------------------------------------------------------- timing */

static const struct {
	int64_t ttl_ms, renewed_ms, now_ms;
	bool holding;
} holding_cases[] = {
	{5000, 10000, 10000, true},  {5000, 10000, 12499, true},
	{5000, 10000, 12500, false}, /* TTL/2 after the renewal: over */
	{5000, 10000, 14999, false}, /* the lease still lives in etcd */
	{5000, 10000, 20000, false}, {3000, 0, 1499, true},
	{3000, 0, 1500, false},	     {1000, 7, 506, true},
	{1000, 7, 507, false},	     {0, 10000, 10000, false}, /* no lease */
};

START_TEST(lease_holding_table)
{
	struct cluster_lease_clock c = {.ttl_ms = holding_cases[_i].ttl_ms,
					.renewed_ms =
						holding_cases[_i].renewed_ms};

	ck_assert_msg(cluster__lease_holding(&c, holding_cases[_i].now_ms) ==
			      holding_cases[_i].holding,
		      "ttl %lld renewed %lld now %lld: want holding %d",
		      (long long)c.ttl_ms, (long long)c.renewed_ms,
		      (long long)holding_cases[_i].now_ms,
		      holding_cases[_i].holding);
}
END_TEST

/* A failed keepalive changes nothing: holding still runs from the last
 * renewal that etcd answered, not from the last one tried. */
START_TEST(lease_failed_renewal_does_not_extend)
{
	struct cluster_lease_clock c = {.ttl_ms = 3000, .renewed_ms = 1000};

	c.failed = true;
	c.tried_ms = 2000;
	ck_assert(cluster__lease_holding(&c, 2499));
	ck_assert(!cluster__lease_holding(&c, 2500));
	ck_assert_int_eq(cluster__lease_deadline(&c), 2500);
	/* ...and the retry comes soon, not TTL/3 later. */
	ck_assert_int_eq(cluster__lease_next_keepalive(&c),
			 2000 + CLUSTER_RETRY_MS);
	c.failed = false;
	ck_assert_int_eq(cluster__lease_next_keepalive(&c), 2000);
}
END_TEST

/* Random clocks: holding is exactly "less than TTL/2 since the last
 * renewal", it never outlives the lease in etcd (TTL from that renewal),
 * and the next keepalive is due strictly before holding ends. */
START_TEST(lease_holding_random)
{
	uint64_t x = lease_seed + (uint64_t)_i;

	for (int k = 0; k < 1000; k++) {
		struct cluster_lease_clock c = {
			.ttl_ms = 1000 + (int64_t)(rnd(&x) % 3600000),
			.renewed_ms = (int64_t)(rnd(&x) % 1000000000)};
		int64_t now =
			c.renewed_ms + (int64_t)(rnd(&x) % (3 * c.ttl_ms));
		bool h = cluster__lease_holding(&c, now);

		ck_assert_msg(h == (now - c.renewed_ms < c.ttl_ms / 2),
			      "seed %llu: ttl %lld renewed %lld now %lld",
			      (unsigned long long)lease_seed,
			      (long long)c.ttl_ms, (long long)c.renewed_ms,
			      (long long)now);
		if (h)
			ck_assert(now < c.renewed_ms + c.ttl_ms);
		ck_assert(cluster__lease_next_keepalive(&c) <
			  cluster__lease_deadline(&c));
		ck_assert(cluster__lease_next_keepalive(&c) > c.renewed_ms);
	}
}
END_TEST

/* A run of a keepalive schedule against a clock: renewals every TTL/3
 * keep holding true throughout; once they stop succeeding, holding ends
 * TTL/2 after the last one that did, whatever is tried in between. */
START_TEST(lease_schedule_run)
{
	uint64_t x = lease_seed * 7 + (uint64_t)_i;
	struct cluster_lease_clock c = {
		.ttl_ms = 2000 + (int64_t)(rnd(&x) % 8000), .renewed_ms = 1000};
	int64_t fail_from = 1000 + (int64_t)(rnd(&x) % 60000), last_ok = 1000;

	for (int64_t now = 1000; now < fail_from + 4 * c.ttl_ms; now += 10) {
		if (now >= cluster__lease_next_keepalive(&c)) {
			if (now < fail_from) {
				c.renewed_ms = now;
				c.failed = false;
				last_ok = now;
			} else {
				c.failed = true;
				c.tried_ms = now;
			}
		}
		ck_assert_msg(cluster__lease_holding(&c, now) ==
				      (now < last_ok + c.ttl_ms / 2),
			      "seed %llu: now %lld last ok %lld ttl %lld",
			      (unsigned long long)lease_seed, (long long)now,
			      (long long)last_ok, (long long)c.ttl_ms);
		if (now < fail_from)
			ck_assert(cluster__lease_holding(&c, now));
	}
}
END_TEST

START_TEST(lease_timeouts)
{
	uint64_t ka, rq;

	cluster__lease_timeouts(5000, 0, &ka, &rq);
	ck_assert_uint_eq(ka, 625);
	ck_assert_uint_eq(rq, 1666);
	cluster__lease_timeouts(3000, 0, &ka, &rq);
	ck_assert_uint_eq(ka, 375);
	ck_assert_uint_eq(rq, 1000);
	cluster__lease_timeouts(1000, 0, &ka, &rq);
	ck_assert_uint_eq(ka, 125);
	ck_assert_uint_eq(rq, 333);
	cluster__lease_timeouts(500, 0, &ka, &rq);
	ck_assert_uint_eq(ka, 100);
	ck_assert_uint_eq(rq, 250);
	/* Never longer than --etcd-timeout-ms, nor than the default. */
	cluster__lease_timeouts(3000, 200, &ka, &rq);
	ck_assert_uint_eq(ka, 200);
	ck_assert_uint_eq(rq, 200);
	cluster__lease_timeouts(3600000, 0, &ka, &rq);
	ck_assert_uint_eq(ka, ETCD_TIMEOUT_DEFAULT);
	ck_assert_uint_eq(rq, ETCD_TIMEOUT_DEFAULT);
	/* From TTL 3 s on, a keepalive that hangs until its timeout leaves
	 * time for a retry on the next endpoint before the deadline. */
	for (int64_t ttl = 3000; ttl <= 60000; ttl += 500) {
		struct cluster_lease_clock c = {.ttl_ms = ttl};

		cluster__lease_timeouts(ttl, 0, &ka, &rq);
		ck_assert(cluster__lease_next_keepalive(&c) + (int64_t)ka +
				  CLUSTER_RETRY_MS <
			  cluster__lease_deadline(&c));
	}
}
END_TEST

START_TEST(members_next_table)
{
	struct cluster_members_clock m = {0};

	/* A new lease: at once. */
	ck_assert(cluster__members_next(&m, 0, 1000) == INT64_MIN);
	m = (struct cluster_members_clock){
		.registered = true, .seq = 5, .put_ms = 10000};
	ck_assert(cluster__members_next(&m, 5, 1000) == INT64_MAX);
	ck_assert_int_eq(cluster__members_next(&m, 6, 1000), 11000);
	m.tried_ms = 10500;
	ck_assert_int_eq(cluster__members_next(&m, 6, 1000),
			 10500 + CLUSTER_RETRY_MS);
	m = (struct cluster_members_clock){.tried_ms = 300};
	ck_assert_int_eq(cluster__members_next(&m, 0, 1000),
			 300 + CLUSTER_RETRY_MS);
}
END_TEST

/* Applied seqs arriving at random instants: puts are at least the
 * interval apart (rate-limited), and the last seq is written within one
 * interval of its arrival. */
START_TEST(members_rate_limited)
{
	uint64_t x = lease_seed * 13 + (uint64_t)_i, applied = 0;
	struct cluster_members_clock m = {0};
	int64_t last_put = INT64_MIN, last_change = 0, end = 20000;
	int puts = 0;

	for (int64_t now = 1; now < end + 2000; now++) {
		if (now < end && rnd(&x) % 50 == 0) {
			applied++;
			last_change = now;
		}
		if (now >= cluster__members_next(&m, applied, 1000)) {
			if (last_put != INT64_MIN)
				ck_assert_int_ge(now - last_put, 1000);
			m = (struct cluster_members_clock){.registered = true,
							   .seq = applied,
							   .put_ms = now};
			last_put = now;
			puts++;
		}
	}
	ck_assert_uint_eq(m.seq, applied);
	ck_assert_int_le(last_put, last_change + 1000);
	ck_assert_int_le(puts, 22);
	ck_assert_msg(puts >= 2, "seed %llu: %d puts",
		      (unsigned long long)lease_seed, puts);
}
END_TEST

/* ------------------------------------------------------------- decisions */

static struct etcd_kv leader_kv(int64_t create, int64_t lease,
				const char *value)
{
	return (struct etcd_kv){.value = (uint8_t *)value,
				.value_len = strlen(value),
				.create_revision = create,
				.mod_revision = create,
				.version = 1,
				.lease = lease};
}

START_TEST(campaign_decide_table)
{
	struct etcd_kv ours = leader_kv(40, 7, "{\"name\":\"a\"}");
	/* Our name, another lease: an earlier process of this member. */
	struct etcd_kv old_self = leader_kv(30, 6, "{\"name\":\"a\"}");
	struct etcd_kv other = leader_kv(41, 9, "{\"name\":\"b\"}");
	int64_t fence = 0;

	ck_assert_int_eq(cluster__campaign_decide(0, ETCD_COMMITTED, NULL, 7,
						  55, &fence),
			 CLUSTER_CAMPAIGN_WON);
	ck_assert_int_eq(fence, 55);
	fence = 0;
	ck_assert_int_eq(cluster__campaign_decide(LG_ECORRUPT, ETCD_COMMITTED,
						  NULL, 7, 55, &fence),
			 CLUSTER_CAMPAIGN_UNKNOWN);
	ck_assert_int_eq(fence, 0);
	/* Rule 1: a failed compare that meets our own txn is a win, with
	 * the key's create_revision as the fence. */
	ck_assert_int_eq(cluster__campaign_decide(0, ETCD_COMPARE_FAILED, &ours,
						  7, 60, &fence),
			 CLUSTER_CAMPAIGN_WON);
	ck_assert_int_eq(fence, 40);
	fence = 0;
	ck_assert_int_eq(cluster__campaign_decide(0, ETCD_COMPARE_FAILED,
						  &other, 7, 60, &fence),
			 CLUSTER_CAMPAIGN_LOST);
	ck_assert_int_eq(cluster__campaign_decide(0, ETCD_COMPARE_FAILED,
						  &old_self, 7, 60, &fence),
			 CLUSTER_CAMPAIGN_LOST);
	ck_assert_int_eq(fence, 0);
	ck_assert_int_eq(cluster__campaign_decide(0, ETCD_COMPARE_FAILED, NULL,
						  7, 60, &fence),
			 CLUSTER_CAMPAIGN_VACANT);
	ck_assert_int_eq(cluster__campaign_decide(LG_EIO, ETCD_INDETERMINATE,
						  NULL, 7, 0, &fence),
			 CLUSTER_CAMPAIGN_UNKNOWN);
	ck_assert_int_eq(cluster__campaign_decide(LG_ENOENT, ETCD_NOT_APPLIED,
						  NULL, 7, 0, &fence),
			 CLUSTER_CAMPAIGN_LEASE_GONE);
	ck_assert_int_eq(cluster__campaign_decide(LG_EIO, ETCD_NOT_APPLIED,
						  NULL, 7, 0, &fence),
			 CLUSTER_CAMPAIGN_RETRY);
	ck_assert_int_eq(fence, 0);
}
END_TEST

START_TEST(campaign_resolve_by_lease)
{
	struct etcd_kv ours = leader_kv(40, 7, "{\"name\":\"a\"}");
	struct etcd_kv renamed = leader_kv(42, 7, "{\"name\":\"zz\"}");
	struct etcd_kv same_name = leader_kv(43, 8, "{\"name\":\"a\"}");
	struct etcd_kv unleased = leader_kv(44, 0, "{\"name\":\"a\"}");
	int64_t fence = 0;

	ck_assert_int_eq(cluster__campaign_resolve(&ours, 7, &fence),
			 CLUSTER_CAMPAIGN_WON);
	ck_assert_int_eq(fence, 40);
	/* By lease id, never by name. */
	ck_assert_int_eq(cluster__campaign_resolve(&renamed, 7, &fence),
			 CLUSTER_CAMPAIGN_WON);
	ck_assert_int_eq(fence, 42);
	fence = 0;
	ck_assert_int_eq(cluster__campaign_resolve(&same_name, 7, &fence),
			 CLUSTER_CAMPAIGN_LOST);
	ck_assert_int_eq(cluster__campaign_resolve(&unleased, 0, &fence),
			 CLUSTER_CAMPAIGN_LOST);
	ck_assert_int_eq(cluster__campaign_resolve(NULL, 7, &fence),
			 CLUSTER_CAMPAIGN_VACANT);
	ck_assert_int_eq(fence, 0);
}
END_TEST

START_TEST(leader_checks)
{
	struct etcd_kv ours = leader_kv(40, 7, "{\"name\":\"a\"}");
	struct etcd_kv again = leader_kv(45, 7, "{\"name\":\"a\"}");
	struct etcd_kv other = leader_kv(40, 8, "{\"name\":\"a\"}");
	struct etcd_event del = {.type = ETCD_EV_DELETE, .kv = ours},
			  put_same = {.type = ETCD_EV_PUT, .kv = ours},
			  put_new = {.type = ETCD_EV_PUT, .kv = again};

	ck_assert(cluster__leader_ours(&ours, 40, 7));
	/* Recreated, even by our own lease: another term, another fence. */
	ck_assert(!cluster__leader_ours(&again, 40, 7));
	ck_assert(!cluster__leader_ours(&other, 40, 7));
	ck_assert(!cluster__leader_ours(NULL, 40, 7));
	ck_assert(!cluster__leader_ours(&ours, 40, 0));
	ck_assert_int_eq(cluster__follower_watched(&del, 40),
			 CLUSTER_WATCHED_VACANT_NOW);
	ck_assert_int_eq(cluster__follower_watched(&put_same, 40),
			 CLUSTER_WATCHED_SAME);
	ck_assert_int_eq(cluster__follower_watched(&put_new, 40),
			 CLUSTER_WATCHED_NEW_LEADER);
	ck_assert_int_eq(cluster__follower_watched(&put_same, 0),
			 CLUSTER_WATCHED_NEW_LEADER);
}
END_TEST

START_TEST(lease_values)
{
	char *v = cluster__leader_value("gpuledger-0", NULL), name[64],
	     url[32];

	ck_assert_str_eq(v, "{\"name\":\"gpuledger-0\"}");
	cluster__leader_name((const uint8_t *)v, strlen(v), name, sizeof(name));
	ck_assert_str_eq(name, "gpuledger-0");
	cluster__leader_parse((const uint8_t *)v, strlen(v), name, sizeof(name),
			      url, sizeof(url));
	ck_assert_str_eq(url, "");
	free(v);
	/* The sequencer's URL for doors (DESIGN 11); one too long is none. */
	v = cluster__leader_value("m1", "https://m1.example:8420");
	ck_assert_str_eq(v, "{\"name\":\"m1\",\"peer\":\"https://m1.example:8420\"}");
	cluster__leader_parse((const uint8_t *)v, strlen(v), name, sizeof(name),
			      url, sizeof(url));
	ck_assert_str_eq(name, "m1");
	ck_assert_str_eq(url, "https://m1.example:8420");
	cluster__leader_parse((const uint8_t *)v, strlen(v), name, sizeof(name),
			      url, 10);
	ck_assert_str_eq(url, "");
	free(v);
	cluster__leader_name((const uint8_t *)"bare", 4, name, sizeof(name));
	ck_assert_str_eq(name, "?");
	cluster__leader_name((const uint8_t *)"{\"name\":3}", 10, name,
			     sizeof(name));
	ck_assert_str_eq(name, "?");
	v = cluster__member_value(0);
	ck_assert_str_eq(v, "{\"applied\":0}");
	free(v);
	v = cluster__member_value(18446744073709551ULL);
	ck_assert_str_eq(v, "{\"applied\":18446744073709551}");
	free(v);
	ck_assert_str_eq(cluster_lease_event_name(CLUSTER_LEASE_ELECTED),
			 "elected");
	ck_assert_str_eq(cluster_lease_event_name(CLUSTER_LEASE_RENEWAL_LATE),
			 "renewal-late");
	ck_assert_str_eq(cluster_lease_event_name(CLUSTER_LEASE_RESIGNED),
			 "resigned");
	ck_assert_str_eq(cluster_lease_event_name((enum cluster_lease_event)99),
			 "?");
}
END_TEST

static const struct {
	const char *name;
	bool ok;
} names[] = {
	{"gpuledger-0", true},	{"a", true},
	{"A.b_c-9", true},	{"", false},
	{"a/b", false},		{"a b", false},
	{"caf\xc3\xa9", false}, {"a\"b", false},
};

START_TEST(name_rules)
{
	struct lg_error err = {0};
	char longn[CLUSTER_NAME_MAX + 2];

	ck_assert_int_eq(cluster_name_check(names[_i].name, &err) == 0,
			 names[_i].ok);
	if (_i == 0) {
		memset(longn, 'a', sizeof(longn) - 1);
		longn[CLUSTER_NAME_MAX + 1] = '\0';
		ck_assert_int_eq(cluster_name_check(longn, &err), LG_EINVAL);
		longn[CLUSTER_NAME_MAX] = '\0';
		ck_assert_int_eq(cluster_name_check(longn, &err), 0);
		ck_assert_int_eq(cluster_name_check(NULL, &err), LG_EINVAL);
	}
}
END_TEST

/* ------------------------------------------------------------ life cycle */

struct seen {
	int n, resigned;
	int64_t lease;
};

static void record(void *ctx, const struct cluster_lease_transition *t)
{
	struct seen *s = ctx;

	s->n++;
	if (t->event == CLUSTER_LEASE_RESIGNED) {
		s->resigned++;
		s->lease = t->lease;
	}
}

/* Without an etcd: never holding, and close ends the threads with one
 * "resigned" and no lease. */
START_TEST(lease_open_close_unreachable)
{
	struct seen s = {0};
	struct cluster_lease_opts o = {
		.etcd = {.endpoints = "http://127.0.0.1:1", .timeout_ms = 300},
		.prefix = "/t",
		.name = "a",
		.ttl_s = 2,
		.on_transition = record,
		.ctx = &s};
	struct lg_error err = {0};
	cluster_lease_t *l = NULL;
	int64_t fence = -1;

	ck_assert_int_eq(cluster_lease_open(&l, &o, &err), 0);
	ck_assert(!cluster_lease_holding(l, &fence));
	ck_assert_int_eq(fence, 0);
	cluster_lease_applied(l, 5);
	cluster_lease_deposed(l, 1);
	cluster_lease_resign(l);
	cluster_lease_close(l);
	ck_assert_int_eq(s.resigned, 1);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.lease, 0);
	cluster_lease_close(NULL);
}
END_TEST

START_TEST(lease_open_bad)
{
	struct cluster_lease_opts o = {
		.etcd = {.endpoints = "http://127.0.0.1:1"},
		.prefix = "/t",
		.name = "a"};
	struct lg_error err = {0};
	cluster_lease_t *l = (cluster_lease_t *)&o;

	o.name = "a/b";
	ck_assert_int_eq(cluster_lease_open(&l, &o, &err), LG_EINVAL);
	ck_assert_ptr_null(l);
	o.name = "a";
	o.prefix = "/t/";
	ck_assert_int_eq(cluster_lease_open(&l, &o, &err), LG_EINVAL);
	o.prefix = "/t";
	o.ttl_s = CLUSTER_LEASE_TTL_MAX + 1;
	ck_assert_int_eq(cluster_lease_open(&l, &o, &err), LG_EINVAL);
	ck_assert_str_eq(err.msg, "--lease-ttl is at most 3600 seconds");
	o.ttl_s = 0;
	o.etcd.endpoints = "127.0.0.1:2379";
	ck_assert_int_eq(cluster_lease_open(&l, &o, &err), LG_EINVAL);
	ck_assert_ptr_null(l);
}
END_TEST

void cluster_tests_lease(Suite *s)
{
	const char *e = getenv("CLUSTER_SEED");
	TCase *tc = tcase_create("lease");

	lease_seed = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL);
	printf("cluster lease: seed %llu (CLUSTER_SEED=%llu reruns it)\n",
	       (unsigned long long)lease_seed, (unsigned long long)lease_seed);
	fflush(stdout);
	tcase_add_loop_test(
		tc, lease_holding_table, 0,
		(int)(sizeof(holding_cases) / sizeof(holding_cases[0])));
	tcase_add_test(tc, lease_failed_renewal_does_not_extend);
	tcase_add_loop_test(tc, lease_holding_random, 0, 20);
	tcase_add_loop_test(tc, lease_schedule_run, 0, 50);
	tcase_add_test(tc, lease_timeouts);
	tcase_add_test(tc, members_next_table);
	tcase_add_loop_test(tc, members_rate_limited, 0, 10);
	tcase_add_test(tc, campaign_decide_table);
	tcase_add_test(tc, campaign_resolve_by_lease);
	tcase_add_test(tc, leader_checks);
	tcase_add_test(tc, lease_values);
	tcase_add_loop_test(tc, name_rules, 0,
			    (int)(sizeof(names) / sizeof(names[0])));
	tcase_add_test(tc, lease_open_close_unreachable);
	tcase_add_test(tc, lease_open_bad);
	suite_add_tcase(s, tc);
}
