/*
 * ledger_head_at: the chain head stored with an event, read without
 * decoding it. On random ledgers (random events in random batches, with
 * checkpoints; seeds printed, GPULEDGER_SEED=N repeats one) every seq gives
 * what a scan of that event hands its callback, through the writer, a
 * fresh reader and a forensic handle; seq 0 gives head(0); a seq past the
 * log, a missing record and one too short to hold a head are refused with
 * the errors ledger.h names.
 */
#include "tests/ledger_gen.h"
#include "tests/ledger_tests.h"

#include "ledger/ledger_int.h"

#include <stdint.h>
#include <time.h>

#define T0 1767225600000000000LL

static uint64_t seed_of(uint64_t fallback)
{
	const char *e = getenv("GPULEDGER_SEED");

	return e ? strtoull(e, NULL, 0) : fallback;
}

/* A ledger of n random events in batches of 1 to 40, a checkpoint now and
 * then. */
static ledger_t *build(const char *dir, uint64_t seed, uint64_t n)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.checkpoint_secs = -1};
	struct gen *g = gen_new(seed, T0);
	struct lg_error err = {0};
	struct event evs[40];
	uint64_t s = seed | 1;
	ledger_t *lg;

	ck_assert_int_eq(ledger_open(&lg, &o, &err), 0);
	for (uint64_t done = 0; done < n;) {
		uint64_t k;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		k = 1 + (s >> 33) % 40;
		if (k > n - done)
			k = n - done;
		gen_next(g, evs, k);
		ck_assert_int_eq(ledger_append(lg, evs, k, NULL, 0, NULL, &err),
				 0);
		if ((s >> 20) % 7 == 0)
			ck_assert_int_eq(ledger_checkpoint(lg, &err), 0);
		done += k;
	}
	gen_free(g);
	return lg;
}

struct heads {
	uint8_t (*h)[LEDGER_HEAD_BYTES]; /* h[seq], h[0] unused */
	uint64_t n;
};

static int keep_head(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct heads *hs = ctx;

	ck_assert_uint_eq(ev->seq, hs->n + 1);
	memcpy(hs->h[++hs->n], head, LEDGER_HEAD_BYTES);
	return 0;
}

/* Every seq of lg against the heads the scan gave; 0 and past the end. */
static void check_handle(ledger_t *lg, const struct heads *hs, const char *who)
{
	static const uint8_t zero[LEDGER_HEAD_BYTES];
	const uint64_t past[] = {hs->n + 1, hs->n + 1000, UINT64_MAX};
	uint8_t got[LEDGER_HEAD_BYTES];
	struct lg_error err = {0};

	for (uint64_t seq = 1; seq <= hs->n; seq++) {
		memset(got, 0xa5, sizeof(got));
		ck_assert_msg(ledger_head_at(lg, seq, got, &err) == 0,
			      "%s: seq %llu: %s", who, (unsigned long long)seq,
			      err.msg);
		ck_assert_msg(memcmp(got, hs->h[seq], sizeof(got)) == 0,
			      "%s: seq %llu: not the scan's head", who,
			      (unsigned long long)seq);
	}
	memset(got, 0xa5, sizeof(got));
	ck_assert_int_eq(ledger_head_at(lg, 0, got, &err), 0);
	ck_assert_int_eq(memcmp(got, zero, sizeof(got)), 0);
	for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
		char want[96];

		memset(&err, 0, sizeof(err));
		ck_assert_int_eq(ledger_head_at(lg, past[i], got, &err),
				 LG_ENOENT);
		snprintf(want, sizeof(want),
			 "seq %llu is past the log (last %llu)",
			 (unsigned long long)past[i],
			 (unsigned long long)hs->n);
		ck_assert_msg(strcmp(err.msg, want) == 0, "%s: %s", who,
			      err.msg);
		/* Nothing stale is left in head_out. */
		ck_assert_int_eq(memcmp(got, zero, sizeof(got)), 0);
	}
}

START_TEST(head_at_every_seq)
{
	uint64_t seed = seed_of((uint64_t)time(NULL) + (uint64_t)_i);
	uint64_t n = 1 + (seed * 0x9e3779b97f4a7c15ULL >> 40) % 600;
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, seed, n), *ro = NULL, *fo = NULL;
	struct ledger_opts r = {.dir = dir, .read_only = true};
	struct ledger_opts f = {.dir = dir, .forensic = true};
	struct heads hs = {.h = calloc(n + 1, LEDGER_HEAD_BYTES)};
	struct lg_error err = {0};

	fprintf(stderr, "head_at_every_seq: seed %llu, %llu events\n",
		(unsigned long long)seed, (unsigned long long)n);
	ck_assert_ptr_nonnull(hs.h);
	ck_assert_int_eq(ledger_scan(lg, 1, 0, keep_head, &hs, &err), 0);
	ck_assert_uint_eq(hs.n, n);
	ck_assert_int_eq(memcmp(hs.h[n], ledger_head(lg), LEDGER_HEAD_BYTES),
			 0);
	check_handle(lg, &hs, "writer");
	ck_assert_int_eq(ledger_open(&ro, &r, &err), 0);
	check_handle(ro, &hs, "reader");
	/* A forensic handle has seen no seq: every head is read. */
	ck_assert_int_eq(ledger_open(&fo, &f, &err), 0);
	ck_assert_uint_eq(ledger_last_seq(fo), 0);
	check_handle(fo, &hs, "forensic");
	ledger_close(fo);
	ledger_close(ro);
	ledger_close(lg);
	free(hs.h);
	rm_tree(dir);
}
END_TEST

static int count_none(void *ctx, const struct event *ev, const uint8_t *head)
{
	ck_abort_msg("seq %llu decoded", (unsigned long long)ev->seq);
	return 1;
}

/* A record missing or too short is damage named at its seq; a record
 * whose event bytes are damaged still gives the head stored with it (the
 * event is not decoded: verify is what finds that damage). */
START_TEST(head_at_damaged)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 7, 50);
	struct lg_error err = {0};
	uint8_t want[LEDGER_HEAD_BYTES], got[LEDGER_HEAD_BYTES];
	uint8_t *rec, *copy;
	size_t len;

	ck_assert_int_eq(ledger_head_at(lg, 20, want, &err), 0);
	ck_assert_int_eq(
		ledger__raw_get(lg, LEDGER_DB_EVENTS, 20, &rec, &len, &err), 0);
	ck_assert_uint_gt(len, LEDGER_HEAD_BYTES + 1);

	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 20, NULL, 0, &err), 0);
	ck_assert_int_eq(ledger_head_at(lg, 20, got, &err), LG_ECORRUPT);
	ck_assert_str_eq(err.msg, "seq 20: missing from the log");

	ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, 20, rec,
					 LEDGER_HEAD_BYTES, &err),
			 0);
	ck_assert_int_eq(ledger_head_at(lg, 20, got, &err), LG_ECORRUPT);
	ck_assert_str_eq(err.msg, "seq 20: record too short");

	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, rec, len);
	memset(copy, 0xff, len - LEDGER_HEAD_BYTES);
	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 20, copy, len, &err), 0);
	ck_assert_int_eq(ledger_head_at(lg, 20, got, &err), 0);
	ck_assert_int_eq(memcmp(got, want, sizeof(got)), 0);
	/* The scan decodes, so it refuses the same record. */
	ck_assert_int_eq(ledger_scan(lg, 20, 1, count_none, NULL, &err),
			 LG_ECORRUPT);

	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 20, rec, len, &err), 0);
	ck_assert_int_eq(ledger_head_at(lg, 20, got, &err), 0);
	ck_assert_int_eq(memcmp(got, want, sizeof(got)), 0);
	free(copy);
	free(rec);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

void ledger_tests_head(Suite *s)
{
	TCase *tc = tcase_create("head");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, head_at_every_seq, 0, 8);
	tcase_add_test(tc, head_at_damaged);
	suite_add_tcase(s, tc);
}
