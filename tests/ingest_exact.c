/*
 * Issue 10 in the engine: pods that hold nothing under one table are mapped
 * again by a later one (dormant pods, DESIGN 2.3 "Order independence"), a
 * holder above 2^31-1 units is UnitsTooLarge (2.3 "Bounds"), and time that
 * cannot be trusted (4.1): TimeWentBack for a recorded stream, and the live
 * watcher's clock (ingest/clock.c) under wall-clock steps, driven through
 * its clock hook with synthetic readings.
 */
#include "tests/ingest_tests.h"

/* A table naming nvidia.com/A10-24Q as class t4 (single-quoted JSON, as a
 * ConfigMap's data string: the inner quotes escaped). */
#define CM_T4                                                               \
	"{'type':'MODIFIED','object':{'apiVersion':'v1','kind':'ConfigMap',"  \
	"'metadata':{'namespace':'cozy-system','name':'gpu-classes'},'data':" \
	"{'classes.json':'{\\'classes\\':[{\\'name\\':\\'t4\\',"             \
	"\\'resourceNames\\':[\\'nvidia.com/A10-24Q\\']}]}'}}}"

/* h_dq turns \' into \" too, which is what the data string needs. */
START_TEST(exact_dormant_pods)
{
	struct h h;

	h_open(&h, CLASSES);
	/* Three pods naming a resource no class has: one pending, one that
	 * finishes (terminal pods hold nothing under any table), one deleted
	 * before the table changes. And a plain pod. */
	h_feed(&h, ADD(GPOD("ns", "a", "ua", "n1", "nvidia.com/A10-24Q", "2")));
	h_feed(&h, ADD(PODST("ns", "b", "ub",
			     "{'nodeName':'n1','containers':[{'name':'c',"
			     "'resources':{'limits':{'nvidia.com/A10-24Q':"
			     "'1'}}}]}",
			     "Succeeded")));
	h_feed(&h, ADD(GPOD("ns", "c", "uc", "n2", "nvidia.com/A10-24Q", "4")));
	h_feed(&h, DEL(GPOD("ns", "c", "uc", "n2", "nvidia.com/A10-24Q", "4")));
	h_feed(&h, ADD(GPOD("ns", "d", "ud", "n1", "cpu", "1")));
	h_expect(&h, "", "nothing counts yet");
	h_feed(&h, CM_T4);
	h_expect(&h,
		 "CLASS -h100; CLASS -l40s; CLASS t4; "
		 "RESERVE Pod ns/a#ua t4 0>2; ALLOC Pod ns/a#ua t4 0>2 @n1",
		 "the table change maps the pod that held nothing");
	h_close(&h);
}
END_TEST

START_TEST(exact_units_too_large)
{
	struct h h;

	h_open(&h, CLASSES);
	h_feed(&h, ADD(GPOD("ns", "p1", "u1", "", "nvidia.com/H100",
			    "9223372036854775807")));
	h_feed(&h, ADD(GPOD("ns", "p2", "u2", "", "nvidia.com/H100", "8")));
	h_feed(&h, ADD(VMI("ns", "v", "uv",
			   "[{'class':'h100','count':2147483648}]")));
	h_feed(&h, ADD(KN("ns", "k", "uk",
			  "{'maxReplicas':1073741824,'gpus':[{'class':'h100',"
			  "'count':2}]}")));
	h_expect(&h,
		 "NOTE UnitsTooLarge; RESERVE Pod ns/p2#u2 h100 0>8; "
		 "ALLOC Pod ns/p2#u2 h100 0>8 @; NOTE UnitsTooLarge; "
		 "NOTE UnitsTooLarge",
		 "each too large holder is a NOTE and holds 0");
	h_close(&h);
}
END_TEST

#define NSAT(t, n)                                                      \
	"{'type':'ADDED','time':'" t "','object':{'apiVersion':'v1','kind':" \
	"'Namespace','metadata':{'name':'" n "'}}}"

START_TEST(exact_time_went_back)
{
	struct h h;

	h_open(&h, CLASSES);
	h_feed(&h, NSAT("2026-03-01T00:00:00Z", "tenant-a"));
	h_feed(&h, NSAT("2026-02-28T23:59:59.500Z", "tenant-b"));
	h_expect(&h, "TENANT tenant-root; TENANT tenant-a; TENANT tenant-b",
		 "half a second back is no NOTE");
	/* The threshold: exactly 1 s back is none, 1 ns more is one. */
	h_feed(&h, NSAT("2026-02-28T23:59:59Z", "tenant-b1"));
	h_expect(&h, "TENANT tenant-b1", "exactly 1 s back is no NOTE");
	h_feed(&h, NSAT("2026-02-28T23:59:58.999999999Z", "tenant-b2"));
	h_expect(&h, "NOTE TimeWentBack; TENANT tenant-b2",
		 "1 s and 1 ns back is a NOTE");
	h_feed(&h, NSAT("2027-03-01T00:00:00Z", "tenant-c"));
	h_feed(&h, NSAT("2026-03-01T00:01:00Z", "tenant-d"));
	h_feed(&h, NSAT("2026-03-01T00:02:00Z", "tenant-e"));
	h_expect(&h,
		 "TENANT tenant-c; NOTE TimeWentBack; TENANT tenant-d; "
		 "TENANT tenant-e",
		 "a year ahead: one NOTE, not one per later line");
	h_feed(&h, NSAT("2027-03-01T00:00:03Z", "tenant-f"));
	h_feed(&h, NSAT("2026-03-01T00:03:00Z", "tenant-g"));
	h_expect(&h, "TENANT tenant-f; NOTE TimeWentBack; TENANT tenant-g",
		 "the next step back after time moved is noted again");
	h_close(&h);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The live watcher's clock. */

#define SEC 1000000000LL

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random readings a few ms to a minute apart; now and then the wall clock
 * steps by up to a year either way. Between two readings the ledger's time
 * never goes back and advances by at most the real elapsed time plus 1 s
 * (and within 1/16 of it); once the wall clock stays put it is caught up. */
START_TEST(exact_clock_property)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(_i + 1), s = seed;
	struct ingest_clock c = {0};
	int64_t mono = 5 * SEC, wall = 1772323200LL * SEC, off = 0;
	int64_t prev, step, steps_seen = 0, steps_made = 0;

	prev = ingest__clock_read(&c, mono, wall + mono, 0, &step);
	ck_assert_int_eq(prev, wall + mono);
	ck_assert_int_eq(step, 0);
	for (int i = 0; i < 20000; i++) {
		int64_t d = (int64_t)(rnd(&s) % (60 * SEC)) + 1000000;
		int64_t t;

		mono += d;
		if (i < 15000 && rnd(&s) % 200 == 0) {
			int64_t jump = (int64_t)(rnd(&s) % (365 * 86400LL)) *
				       SEC;

			/* The wall clock's offset, up to a year either way. */
			off = rnd(&s) % 2 ? jump : -jump;
			steps_made++;
		}
		t = ingest__clock_read(&c, mono, wall + mono + off, 0, &step);
		steps_seen += step != 0;
		ck_assert_msg(t >= prev, "seed %llu: went back at %d",
			      (unsigned long long)seed, i);
		ck_assert_msg(t - prev <= d + SEC && t - prev <= d + d / 16,
			      "seed %llu: %lld ns for %lld ns elapsed at %d",
			      (unsigned long long)seed, (long long)(t - prev),
			      (long long)d, i);
		ck_assert_msg(t - prev >= d - d / 16, "seed %llu: too slow",
			      (unsigned long long)seed);
		prev = t;
	}
	/* Every step of more than 1 s is seen, and nothing else. */
	ck_assert_msg(steps_seen >= 1 && steps_seen <= steps_made,
		      "seed %llu: %lld steps seen, %lld made",
		      (unsigned long long)seed, (long long)steps_seen,
		      (long long)steps_made);
	/* A last step to up to a day from the ledger's time either way;
	 * without further steps the
	 * ledger catches up, at 1/16 of elapsed time (1 s per reading 16 s
	 * apart), within 17 days. */
	off = prev - wall - mono +
	      ((int64_t)(rnd(&s) % (2 * 86400LL)) * SEC - 86400LL * SEC);
	for (int i = 0; i < 17 * 86400 / 16; i++) {
		int64_t err;

		mono += 16 * SEC;
		prev = ingest__clock_read(&c, mono, wall + mono + off, 0,
					  &step);
		err = wall + mono + off - prev;
		if (err <= SEC && err >= -SEC)
			break;
	}
	ck_assert_msg(wall + mono + off - prev <= SEC &&
			      wall + mono + off - prev >= -SEC,
		      "seed %llu: never caught up", (unsigned long long)seed);
}
END_TEST

/* Each step is reported once; the first reading starts at the ledger's
 * time when that is later than the wall clock. */
START_TEST(exact_clock_steps)
{
	struct ingest_clock c = {0};
	int64_t step, t;

	t = ingest__clock_read(&c, 0, 100 * SEC, 200 * SEC, &step);
	ck_assert_int_eq(t, 200 * SEC);
	ck_assert_int_eq(step, -100 * SEC);
	t = ingest__clock_read(&c, SEC, 101 * SEC, 0, &step);
	ck_assert_int_eq(step, 0); /* still behind, no new step */
	ck_assert_int_eq(t, 200 * SEC + SEC - SEC / 16);
	c = (struct ingest_clock){0};
	ingest__clock_read(&c, 0, 0, 0, &step);
	/* The wall clock jumps an hour ahead: 1 s of it per reading at
	 * most, a NOTE once. */
	t = ingest__clock_read(&c, 32 * SEC, 3632 * SEC, 0, &step);
	ck_assert_int_eq(step, 3600 * SEC);
	ck_assert_int_eq(t, 33 * SEC);
	t = ingest__clock_read(&c, 64 * SEC, 3664 * SEC, 0, &step);
	ck_assert_int_eq(step, 0);
	ck_assert_int_eq(t, 66 * SEC);
	/* Then two hours back, while still catching up: a second step. */
	t = ingest__clock_read(&c, 96 * SEC, -3504 * SEC, 0, &step);
	ck_assert_int_eq(step, -7200 * SEC);
	ck_assert_int_eq(t, 96 * SEC);
	/* 0.5 s of drift is no step. */
	ingest__clock_read(&c, 128 * SEC, -3471 * SEC - SEC / 2, 0, &step);
	ck_assert_int_eq(step, 0);
}
END_TEST

INGEST_PART(exact)
{
	TCase *tc = tcase_create("exact");

	tcase_add_test(tc, exact_dormant_pods);
	tcase_add_test(tc, exact_units_too_large);
	tcase_add_test(tc, exact_time_went_back);
	tcase_add_test(tc, exact_clock_steps);
	tcase_add_loop_test(tc, exact_clock_property, 0, 4);
	suite_add_tcase(s, tc);
}
