/*
 * Tamper evidence (DESIGN 4.3): flipping any single byte of any stored
 * event or checkpoint makes verify fail and name the seq; a damaged
 * checkpoint is skipped when rebuilding, which still gives the right state;
 * a missing event is named too. The forensic cases look the way the verify
 * tool does, through a forensic open that rebuilds nothing, and expect the
 * true seq of every kind of damage.
 */
#include "tests/ledger_gen.h"
#include "tests/ledger_tests.h"

#include "ledger/ledger_int.h"
#include "ledger/store.h"

#include <openssl/sha.h>

#include <openssl/evp.h>
#include <sys/wait.h>

#define T0 1767225600000000000LL

static ledger_t *build(const char *dir, uint64_t n)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.checkpoint_secs = -1};
	struct gen *g = gen_new(77, T0);
	struct lg_error err = {0};
	struct event evs[10];
	ledger_t *lg;

	ck_assert_int_eq(ledger_open(&lg, &o, &err), 0);
	for (uint64_t i = 0; i < n; i += 10) {
		gen_next(g, evs, 10);
		ck_assert_int_eq(
			ledger_append(lg, evs, 10, NULL, 0, NULL, &err), 0);
		if ((i + 10) % 30 == 0)
			ck_assert_int_eq(ledger_checkpoint(lg, &err), 0);
	}
	gen_free(g);
	return lg;
}

static void expect_bad(ledger_t *lg, uint64_t want, const char *what)
{
	struct lg_error err = {0};
	uint64_t bad = 0;

	ck_assert_msg(ledger__verify(lg, &bad, &err) == LG_ECORRUPT,
		      "%s: verify passed", what);
	ck_assert_msg(bad == want, "%s: verify named seq %llu (%s), want %llu",
		      what, (unsigned long long)bad, err.msg,
		      (unsigned long long)want);
}

static void expect_sound(ledger_t *lg)
{
	struct lg_error err = {0};
	uint64_t bad = 9;

	ck_assert_msg(ledger__verify(lg, &bad, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(bad, 0);
}

/* Every byte of every event record, one flip at a time. */
START_TEST(tamper_every_event_byte)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 40);
	struct lg_error err = {0};

	expect_sound(lg);
	for (uint64_t seq = 1; seq <= 40; seq++) {
		uint8_t *rec;
		size_t len;

		ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_EVENTS, seq,
						 &rec, &len, &err),
				 0);
		for (size_t i = 0; i < len; i++) {
			char what[64];

			rec[i] ^= 0x01 << (i % 8);
			ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS,
							 seq, rec, len, &err),
					 0);
			snprintf(what, sizeof(what), "event %llu byte %zu",
				 (unsigned long long)seq, i);
			expect_bad(lg, seq, what);
			rec[i] ^= 0x01 << (i % 8);
		}
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, seq, rec,
						 len, &err),
				 0);
		free(rec);
	}
	expect_sound(lg);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* Every byte of a checkpoint: verify names it; rebuilding skips it. */
START_TEST(tamper_every_checkpoint_byte)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 60);
	struct lg_error err = {0};
	uint8_t *rec, *good, *bad_enc;
	size_t len, glen, blen;
	state_t *ref, *st;

	ck_assert_int_eq(ledger_state_at(lg, 45, &ref, NULL, &err), 0);
	ck_assert_int_eq(state_encode(ref, &good, &glen), 0);
	ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_CHECKPOINTS, 30, &rec,
					 &len, &err),
			 0);
	for (size_t i = 0; i < len; i += 1 + (len > 4000 ? i % 3 : 0)) {
		unsigned skipped = 0;
		char what[64];

		rec[i] ^= 0x80 >> (i % 8);
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 30,
						 rec, len, &err),
				 0);
		snprintf(what, sizeof(what), "checkpoint byte %zu", i);
		expect_bad(lg, 30, what);
		ck_assert_int_eq(ledger_state_at(lg, 45, &st, &skipped, &err),
				 0);
		ck_assert_uint_eq(skipped, 1);
		ck_assert_int_eq(state_encode(st, &bad_enc, &blen), 0);
		ck_assert_msg(blen == glen && memcmp(bad_enc, good, glen) == 0,
			      "%s: rebuilt state differs", what);
		free(bad_enc);
		state_free(st);
		rec[i] ^= 0x80 >> (i % 8);
	}
	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 30, rec, len, &err),
		0);
	expect_sound(lg);
	free(rec);
	free(good);
	state_free(ref);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* A checkpoint record rebuilt around new content, with its SHA-256 digest
 * recomputed as anyone who edits it can: only the chain binds it. */
static void put_forged_checkpoint(ledger_t *lg, uint64_t at, const state_t *st,
				  const uint8_t *head)
{
	uint8_t *rec;
	size_t len;
	struct lg_error err = {0};

	ledger__store_cp_build(st, head, &rec, &len);
	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, at, rec, len, &err),
		0);
	free(rec);
}

static void expect_rebuild_skips(ledger_t *lg, const uint8_t *good, size_t glen,
				 const char *what)
{
	struct lg_error err = {0};
	unsigned skipped = 0;
	state_t *st;
	uint8_t *enc;
	size_t elen;

	ck_assert_int_eq(ledger_state_at(lg, 45, &st, &skipped, &err), 0);
	ck_assert_msg(skipped == 1, "%s: %u checkpoints skipped", what,
		      skipped);
	ck_assert_int_eq(state_encode(st, &enc, &elen), 0);
	ck_assert_msg(elen == glen && memcmp(enc, good, glen) == 0,
		      "%s: rebuilt state differs", what);
	free(enc);
	state_free(st);
}

/* A checkpoint with a valid digest but a head that is not the chain's, or
 * a state that is not the replay's: verify names its seq and rebuilding
 * does not use it. */
START_TEST(tamper_checkpoint_recomputed_digest)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 60);
	struct lg_error err = {0};
	uint8_t *orig, *good, head[LEDGER_HEAD_BYTES];
	size_t olen, glen;
	uint64_t bad = 0;
	state_t *ref, *at30, *forged;
	unsigned sk = 0;

	ck_assert_int_eq(ledger_state_at(lg, 45, &ref, NULL, &err), 0);
	ck_assert_int_eq(state_encode(ref, &good, &glen), 0);
	ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_CHECKPOINTS, 30, &orig,
					 &olen, &err),
			 0);
	ck_assert_int_eq(ledger_state_at(lg, 30, &at30, &sk, &err), 0);
	memcpy(head, orig + 16, LEDGER_HEAD_BYTES);
	/* The same record rebuilt is the stored one: the forgery below
	 * differs from it only where it is meant to. */
	{
		uint8_t *rec;
		size_t len;

		ledger__store_cp_build(at30, head, &rec, &len);
		ck_assert(len == olen && memcmp(rec, orig, len) == 0);
		free(rec);
	}
	/* A wrong head: every byte position, one at a time. */
	for (size_t i = 0; i < LEDGER_HEAD_BYTES; i++) {
		head[i] ^= 0x5a;
		put_forged_checkpoint(lg, 30, at30, head);
		head[i] ^= 0x5a;
		ck_assert_int_eq(ledger__verify(lg, &bad, &err), LG_ECORRUPT);
		ck_assert_uint_eq(bad, 30);
		ck_assert_msg(strstr(err.msg, "head differs") != NULL, "%s",
			      err.msg);
		expect_rebuild_skips(lg, good, glen, "wrong head");
	}
	/* A wrong state, with the right head: the state at 30 of another
	 * history. The tail does not apply to it, so rebuilding skips it. */
	{
		struct gen *g = gen_new(78, T0);
		struct event ev;

		forged = state_new();
		for (int n = 0; n < 30; n++) {
			gen_next(g, &ev, 1);
			ck_assert_int_eq(state_apply(forged, &ev, &err), 0);
		}
		gen_free(g);
	}
	ck_assert_uint_eq(state_seq(forged), 30);
	put_forged_checkpoint(lg, 30, forged, head);
	ck_assert_int_eq(ledger__verify(lg, &bad, &err), LG_ECORRUPT);
	ck_assert_uint_eq(bad, 30);
	ck_assert_msg(strstr(err.msg, "state differs") != NULL, "%s", err.msg);
	expect_rebuild_skips(lg, good, glen, "wrong state");
	state_free(forged);
	/* Any byte of the state changed, the digest recomputed: verify still
	 * names the checkpoint (it compares the replay's encoding). */
	for (size_t i = LEDGER_CP_HEADER; i + SHA256_DIGEST_LENGTH < olen;
	     i += 1 + i % 7) {
		uint8_t *rec = malloc(olen);

		memcpy(rec, orig, olen);
		rec[i] ^= 0x01;
		SHA256(rec, olen - SHA256_DIGEST_LENGTH,
		       rec + olen - SHA256_DIGEST_LENGTH);
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 30,
						 rec, olen, &err),
				 0);
		free(rec);
		ck_assert_int_eq(ledger__verify(lg, &bad, &err), LG_ECORRUPT);
		ck_assert_msg(bad == 30 && strstr(err.msg, "state differs"),
			      "state byte %zu: seq %llu, %s", i,
			      (unsigned long long)bad, err.msg);
	}
	ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 30, orig,
					 olen, &err),
			 0);
	bad = 9;
	ck_assert_int_eq(ledger__verify(lg, &bad, &err), 0);
	ck_assert_uint_eq(bad, 0);
	free(orig);
	free(good);
	state_free(ref);
	state_free(at30);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

START_TEST(tamper_structure)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 60);
	struct lg_error err = {0};
	uint8_t *rec, *cp;
	size_t len, cplen;

	/* A missing event is named. */
	ck_assert_int_eq(
		ledger__raw_get(lg, LEDGER_DB_EVENTS, 17, &rec, &len, &err), 0);
	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 17, NULL, 0, &err), 0);
	expect_bad(lg, 17, "deleted event");
	ck_assert_int_eq(
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 17, rec, len, &err), 0);
	expect_sound(lg);
	/* Swapping two records is named at the first. */
	{
		uint8_t *r2;
		size_t l2;

		ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_EVENTS, 18, &r2,
						 &l2, &err),
				 0);
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 17, r2, l2, &err);
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 18, rec, len, &err);
		expect_bad(lg, 17, "swapped events");
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 17, rec, len, &err);
		ledger__raw_put(lg, LEDGER_DB_EVENTS, 18, r2, l2, &err);
		free(r2);
	}
	/* A checkpoint moved to another seq, or past the log's end. */
	ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_CHECKPOINTS, 30, &cp,
					 &cplen, &err),
			 0);
	ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 31, cp, cplen, &err);
	expect_bad(lg, 31, "moved checkpoint");
	ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 31, NULL, 0, &err);
	ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 99, cp, cplen, &err);
	expect_bad(lg, 99, "checkpoint past the end");
	ledger__raw_put(lg, LEDGER_DB_CHECKPOINTS, 99, NULL, 0, &err);
	expect_sound(lg);
	free(cp);
	free(rec);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Forensic verification: damage done through a writer, which is then
 * closed; verified through a forensic handle. 200 events, checkpoints every
 * 30: what a normal open replays is the tail 181..200. */

#define FN 200

static uint8_t *rec_get(ledger_t *lg, enum ledger_db db, uint64_t k,
			size_t *len)
{
	struct lg_error err = {0};
	uint8_t *rec = NULL;

	ck_assert_msg(ledger__raw_get(lg, db, k, &rec, len, &err) == 0,
		      "raw get %llu: %s", (unsigned long long)k, err.msg);
	return rec;
}

static void rec_put(ledger_t *lg, enum ledger_db db, uint64_t k,
		    const uint8_t *rec, size_t len)
{
	struct lg_error err = {0};

	ck_assert_msg(ledger__raw_put(lg, db, k, rec, len, &err) == 0,
		      "raw put %llu: %s", (unsigned long long)k, err.msg);
}

/* Moves the record at `from` to key `to` (replacing what is there). */
static void rec_move(ledger_t *lg, uint64_t from, uint64_t to)
{
	size_t len;
	uint8_t *rec = rec_get(lg, LEDGER_DB_EVENTS, from, &len);

	rec_put(lg, LEDGER_DB_EVENTS, from, NULL, 0);
	rec_put(lg, LEDGER_DB_EVENTS, to, rec, len);
	free(rec);
}

/* The last RELEASE of the log, which must be in the tail. */
static uint64_t tail_release(ledger_t *lg, struct event *ev, uint8_t **rec,
			     size_t *len)
{
	struct lg_error err = {0};

	for (uint64_t k = FN; k > 180; k--) {
		*rec = rec_get(lg, LEDGER_DB_EVENTS, k, len);
		ck_assert_int_eq(ledger__event_decode(ev, *rec,
						      *len - LEDGER_HEAD_BYTES,
						      &err),
				 0);
		if (ev->type == EV_RELEASE)
			return k;
		free(*rec);
	}
	ck_abort_msg("no RELEASE in the tail 181..%d", FN);
	return 0;
}

/* A RELEASE whose `before` is one more: it still decodes, but no longer
 * fits the state. With rechain, every head from there on is recomputed
 * (a forger's rewrite): storage is sound, only meaning can tell. */
static uint64_t change_before(ledger_t *lg, bool rechain)
{
	struct event ev;
	uint8_t *rec, *out, head[LEDGER_HEAD_BYTES];
	size_t len, n;
	uint64_t k = tail_release(lg, &ev, &rec, &len);
	uint8_t *prev = rec_get(lg, LEDGER_DB_EVENTS, k - 1, &n);

	memcpy(head, prev + n - LEDGER_HEAD_BYTES, LEDGER_HEAD_BYTES);
	free(prev);
	ev.before++;
	n = ledger__event_encode(&ev, NULL, 0);
	out = malloc(n + LEDGER_HEAD_BYTES);
	ledger__event_encode(&ev, out, n);
	if (rechain)
		ledger__chain_step(head, out, n, head);
	else
		memcpy(head, rec + len - LEDGER_HEAD_BYTES, LEDGER_HEAD_BYTES);
	memcpy(out + n, head, LEDGER_HEAD_BYTES);
	rec_put(lg, LEDGER_DB_EVENTS, k, out, n + LEDGER_HEAD_BYTES);
	free(out);
	free(rec);
	for (uint64_t j = k + 1; rechain && j <= FN; j++) {
		rec = rec_get(lg, LEDGER_DB_EVENTS, j, &len);
		ledger__chain_step(head, rec, len - LEDGER_HEAD_BYTES, head);
		memcpy(rec + len - LEDGER_HEAD_BYTES, head, LEDGER_HEAD_BYTES);
		rec_put(lg, LEDGER_DB_EVENTS, j, rec, len);
		free(rec);
	}
	return k;
}

static uint64_t t_head(ledger_t *lg, bool variant)
{
	size_t len;
	uint8_t *rec = rec_get(lg, LEDGER_DB_EVENTS, 100, &len);

	rec[len - 1] ^= 0x10;
	rec_put(lg, LEDGER_DB_EVENTS, 100, rec, len);
	free(rec);
	return 100;
}

static uint64_t t_missing_first(ledger_t *lg, bool variant)
{
	rec_put(lg, LEDGER_DB_EVENTS, 1, NULL, 0);
	return 1;
}

static uint64_t t_missing_middle(ledger_t *lg, bool variant)
{
	rec_put(lg, LEDGER_DB_EVENTS, 100, NULL, 0);
	return 100;
}

/* 185 re-keyed to 186 (over it): the gap at 185 is the damage. */
static uint64_t t_rekeyed(ledger_t *lg, bool variant)
{
	rec_move(lg, 185, 186);
	return 185;
}

/* 185..FN all moved up by one: the same gap, the log one longer. */
static uint64_t t_rekeyed_shift(ledger_t *lg, bool variant)
{
	for (uint64_t k = FN; k >= 185; k--)
		rec_move(lg, k, k + 1);
	return 185;
}

/* 185 copied over 186: no gap, 186 holds another seq's record. */
static uint64_t t_copied(ledger_t *lg, bool variant)
{
	size_t len;
	uint8_t *rec = rec_get(lg, LEDGER_DB_EVENTS, 185, &len);

	rec_put(lg, LEDGER_DB_EVENTS, 186, rec, len);
	free(rec);
	return 186;
}

static uint64_t t_swapped(ledger_t *lg, bool variant)
{
	size_t l1, l2;
	uint8_t *r1 = rec_get(lg, LEDGER_DB_EVENTS, 120, &l1),
		*r2 = rec_get(lg, LEDGER_DB_EVENTS, 121, &l2);

	rec_put(lg, LEDGER_DB_EVENTS, 120, r2, l2);
	rec_put(lg, LEDGER_DB_EVENTS, 121, r1, l1);
	free(r1);
	free(r2);
	return 120;
}

static uint64_t t_cp_byte(ledger_t *lg, bool variant)
{
	size_t len;
	uint8_t *rec = rec_get(lg, LEDGER_DB_CHECKPOINTS, 90, &len);

	rec[len / 2] ^= 0x04;
	rec_put(lg, LEDGER_DB_CHECKPOINTS, 90, rec, len);
	free(rec);
	return 90;
}

/* Checkpoint 90 re-made from checkpoint 60's state (or with its head),
 * with a correct frame and digest: only the head or the replay can tell. */
static uint64_t reframe_cp90(ledger_t *lg, bool other_head)
{
	size_t l60, l90, n;
	uint8_t *c60 = rec_get(lg, LEDGER_DB_CHECKPOINTS, 60, &l60),
		*c90 = rec_get(lg, LEDGER_DB_CHECKPOINTS, 90, &l90), *out;
	const uint8_t *src = other_head ? c90 : c60;
	size_t slen = (other_head ? l90 : l60) - 32;
	unsigned dlen;

	out = malloc(slen + 32);
	memcpy(out, src, slen);
	/* seq 90 and, unless other_head, 90's head; else 60's head. */
	out[8] = 90;
	memcpy(out + 16, (other_head ? c60 : c90) + 16, LEDGER_HEAD_BYTES);
	n = slen;
	EVP_Digest(out, n, out + n, &dlen, EVP_sha256(), NULL);
	rec_put(lg, LEDGER_DB_CHECKPOINTS, 90, out, n + 32);
	free(out);
	free(c60);
	free(c90);
	return 90;
}

static uint64_t t_cp_past_end(ledger_t *lg, bool variant)
{
	size_t len;
	uint8_t *rec = rec_get(lg, LEDGER_DB_CHECKPOINTS, 180, &len);

	rec_put(lg, LEDGER_DB_CHECKPOINTS, FN + 5, rec, len);
	free(rec);
	return FN + 5;
}

static const struct forensic_case {
	const char *name;
	/* Returns the seq to be named; variant picks one of two kinds. */
	uint64_t (*tamper)(ledger_t *lg, bool variant);
	bool variant;
	bool storage;	/* found by the storage pass */
	bool in_events; /* a checked scan stops there */
	const char *says;
} forensic_cases[] = {
	{.name = "a tail RELEASE's before, still decodes",
	 .tamper = change_before,
	 .storage = true,
	 .in_events = true,
	 .says = "chain head mismatch"},
	{.name = "the same with the chain recomputed",
	 .tamper = change_before,
	 .variant = true,
	 .storage = false,
	 .in_events = false,
	 .says = "does not fit the state"},
	{.name = "a changed head",
	 .tamper = t_head,
	 .storage = true,
	 .in_events = true,
	 .says = "chain head mismatch"},
	{.name = "seq 1 missing",
	 .tamper = t_missing_first,
	 .storage = true,
	 .in_events = true,
	 .says = "missing"},
	{.name = "seq 100 missing",
	 .tamper = t_missing_middle,
	 .storage = true,
	 .in_events = true,
	 .says = "missing"},
	{.name = "185 re-keyed to 186",
	 .tamper = t_rekeyed,
	 .storage = true,
	 .in_events = true,
	 .says = "missing"},
	{.name = "185.. re-keyed one up",
	 .tamper = t_rekeyed_shift,
	 .storage = true,
	 .in_events = true,
	 .says = "missing"},
	{.name = "185 copied over 186",
	 .tamper = t_copied,
	 .storage = true,
	 .in_events = true,
	 .says = "record says seq 185"},
	{.name = "120 and 121 swapped",
	 .tamper = t_swapped,
	 .storage = true,
	 .in_events = true,
	 .says = "record says seq 121"},
	{.name = "a checkpoint byte",
	 .tamper = t_cp_byte,
	 .storage = true,
	 .in_events = false,
	 .says = "checkpoint 90"},
	{.name = "a checkpoint of another state",
	 .tamper = reframe_cp90,
	 .storage = false,
	 .in_events = false,
	 .says = "state differs from the replay"},
	{.name = "a checkpoint with another head",
	 .tamper = reframe_cp90,
	 .variant = true,
	 .storage = true,
	 .in_events = false,
	 .says = "head differs from the chain"},
	{.name = "a checkpoint past the end",
	 .tamper = t_cp_past_end,
	 .storage = true,
	 .in_events = false,
	 .says = "past the end"},
};

static int count_event(void *ctx, const struct event *ev, const uint8_t *h)
{
	uint64_t *n = ctx;

	ck_assert_uint_eq(ev->seq, *n + 1);
	(*n)++;
	return 0;
}

START_TEST(tamper_forensic)
{
	const struct forensic_case *c = &forensic_cases[_i];
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, FN);
	struct ledger_opts fo = {.dir = dir, .forensic = true};
	struct ledger_verify_result res;
	struct lg_error err = {0};
	char seqs[32];
	uint64_t want = c->tamper(lg, c->variant), n = 0;
	int rc;

	ledger_close(lg);
	/* The open rebuilds nothing, so it cannot fail first. */
	ck_assert_msg(ledger_open(&lg, &fo, &err) == 0, "%s: open: %s", c->name,
		      err.msg);
	rc = ledger_verify_run(lg, &res, &err);
	ck_assert_msg(rc == LG_ECORRUPT, "%s: verify gave %d", c->name, rc);
	ck_assert_msg(res.bad_seq == want && res.storage == c->storage,
		      "%s: named seq %llu (%s pass: %s), want %llu (%s)",
		      c->name, (unsigned long long)res.bad_seq,
		      res.storage ? "storage" : "meaning", err.msg,
		      (unsigned long long)want,
		      c->storage ? "storage" : "meaning");
	ck_assert_msg(strstr(err.msg, c->says) != NULL, "%s: says \"%s\"",
		      c->name, err.msg);
	/* A message that names a seq names the same one. */
	snprintf(seqs, sizeof(seqs), "seq %llu:", (unsigned long long)want);
	ck_assert_msg(strncmp(err.msg, "seq ", 4) != 0 ||
			      strncmp(err.msg, seqs, strlen(seqs)) == 0,
		      "%s: says \"%s\"", c->name, err.msg);
	/* log and audit read with a checked scan: every event before the
	 * damage, then the damage with its seq. */
	rc = ledger_scan_checked(lg, 1, 0, count_event, &n, &err);
	if (c->in_events) {
		ck_assert_msg(rc == LG_ECORRUPT && n == want - 1 &&
				      strstr(err.msg, seqs) != NULL,
			      "%s: checked scan gave %d after %llu events: %s",
			      c->name, rc, (unsigned long long)n, err.msg);
	} else {
		ck_assert_msg(rc == 0 && n == FN, "%s: checked scan: %s",
			      c->name, err.msg);
	}
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* A sound ledger through the forensic handle: ok, with its head, and a
 * checked scan from the middle sees the rest. */
START_TEST(tamper_forensic_sound)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, FN);
	struct ledger_opts fo = {.dir = dir, .forensic = true};
	struct ledger_verify_result res;
	struct lg_error err = {0};
	uint8_t head[LEDGER_HEAD_BYTES];
	uint64_t n = 99;

	memcpy(head, ledger_head(lg), sizeof(head));
	ledger_close(lg);
	ck_assert_int_eq(ledger_open(&lg, &fo, &err), 0);
	ck_assert_ptr_null(ledger_state(lg));
	ck_assert_msg(ledger_verify_run(lg, &res, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(res.bad_seq, 0);
	ck_assert_uint_eq(res.events, FN);
	ck_assert_uint_eq(res.checkpoints, FN / 30);
	ck_assert_mem_eq(res.head, head, sizeof(head));
	ck_assert_int_eq(ledger_scan_checked(lg, 100, 0, count_event, &n, &err),
			 0);
	ck_assert_uint_eq(n, FN);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* A forensic reader while a writer commits (and grows the file and the
 * map): the meta pages and the bounds are read as the writer moves them,
 * and a sound ledger must never look damaged. */
START_TEST(tamper_forensic_while_writing)
{
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 10);
	struct ledger_opts fo = {.dir = dir, .forensic = true};
	pid_t pid;
	int status, rounds = 0;

	ledger_close(lg);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct ledger_opts o = {.dir = dir,
					.no_sync = true,
					.map_size_bytes = 64 << 10,
					.checkpoint_every = 500,
					.checkpoint_secs = -1};
		struct gen *g = gen_new(77, T0);
		struct event evs[10];

		if (ledger_open(&lg, &o, NULL) != 0)
			_exit(3);
		gen_next(g, evs, 10); /* the 10 already there */
		for (int b = 0; b < 400; b++) {
			gen_next(g, evs, 10);
			if (ledger_append(lg, evs, 10, NULL, 0, NULL, NULL))
				_exit(4);
		}
		ledger_close(lg);
		_exit(0);
	}
	while (waitpid(pid, &status, WNOHANG) == 0 || rounds < 3) {
		struct ledger_verify_result res;
		struct lg_error err = {0};

		ck_assert_msg(ledger_open(&lg, &fo, &err) == 0, "open: %s",
			      err.msg);
		ck_assert_msg(ledger_verify_run(lg, &res, &err) == 0,
			      "round %d: %s at %llu", rounds, err.msg,
			      (unsigned long long)res.bad_seq);
		ledger_close(lg);
		rounds++;
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "writer: %d", status);
	rm_tree(dir);
}
END_TEST

/* A scan (what `log` prints) fails naming a missing seq 1, or a missing
 * last record, instead of taking "not found" for the end of the log
 * (issue 10, case 5). */
START_TEST(tamper_scan_missing)
{
	static const uint64_t gone[] = {1, 60};
	char *dir = fresh_dir();
	ledger_t *lg = build(dir, 60);

	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		struct lg_error err = {0};
		uint64_t n = 0;
		uint8_t *rec;
		size_t len;
		char want[32];

		ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_EVENTS, gone[i],
						 &rec, &len, &err),
				 0);
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, gone[i],
						 NULL, 0, &err),
				 0);
		ck_assert_int_eq(ledger_scan(lg, 1, 0, count_event, &n, &err),
				 LG_ECORRUPT);
		snprintf(want, sizeof(want), "seq %llu: missing",
			 (unsigned long long)gone[i]);
		ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
		ck_assert_uint_eq(n, gone[i] - 1);
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, gone[i],
						 rec, len, &err),
				 0);
		free(rec);
		n = 0;
		ck_assert_int_eq(ledger_scan(lg, 1, 0, count_event, &n, &err),
				 0);
		ck_assert_uint_eq(n, 60);
	}
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* A long rebuild reads and decodes on a second thread
 * (ledger__store_apply_fast): on a sound log and on one damaged at random
 * places, it ends where the one-thread loop ends, with the same error, the same
 * state byte for byte and the same head. Damage positions are seeded
 * (GPULEDGER_SEED or a fixed default), printed. */
#define PIPED_N 150000

static int apply_both(ledger_t *lg, uint64_t last, const char *what)
{
	struct lg_error e1 = {0}, e2 = {0};
	uint8_t h1[LEDGER_HEAD_BYTES] = {0}, h2[LEDGER_HEAD_BYTES] = {0};
	uint8_t *b1, *b2;
	size_t n1, n2;
	state_t *s1 = state_new(), *s2 = state_new();
	MDB_txn *txn;
	int r1, r2;

	ck_assert_int_eq(ledger__store_txn_begin(lg, MDB_RDONLY, &txn, &e1), 0);
	r1 = ledger__store_apply_range(lg, txn, s1, last, h1, &e1);
	r2 = ledger__store_apply_fast(lg, txn, s2, last, h2, &e2);
	mdb_txn_abort(txn);
	ck_assert_msg(r1 == r2 && strcmp(e1.msg, e2.msg) == 0,
		      "%s: one thread %d (%s), two %d (%s)", what, r1, e1.msg,
		      r2, e2.msg);
	ck_assert_uint_eq(state_seq(s1), state_seq(s2));
	ck_assert_int_eq(memcmp(h1, h2, sizeof(h1)), 0);
	ck_assert_int_eq(state_encode(s1, &b1, &n1), 0);
	ck_assert_int_eq(state_encode(s2, &b2, &n2), 0);
	ck_assert_msg(n1 == n2 && memcmp(b1, b2, n1) == 0,
		      "%s: states differ at seq %llu", what,
		      (unsigned long long)state_seq(s1));
	free(b1);
	free(b2);
	state_free(s1);
	state_free(s2);
	return r1;
}

START_TEST(tamper_rebuild_two_threads)
{
	char *dir = fresh_dir();
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.checkpoint_every = UINT64_MAX,
				.checkpoint_secs = -1};
	const char *e = getenv("GPULEDGER_SEED");
	unsigned long long seed = e != NULL ? strtoull(e, NULL, 0) : 4242;
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	static struct event evs[10000];
	struct gen *g = gen_new(31, T0);
	struct lg_error err = {0};
	ledger_t *lg;

	fprintf(stderr, "tamper_rebuild_two_threads: seed %llu\n", seed);
	ck_assert_int_eq(ledger_open(&lg, &o, &err), 0);
	for (uint64_t i = 0; i < PIPED_N; i += 10000) {
		gen_next(g, evs, 10000);
		ck_assert_int_eq(
			ledger_append(lg, evs, 10000, NULL, 0, NULL, &err), 0);
	}
	gen_free(g);
	ck_assert_int_eq(apply_both(lg, PIPED_N, "sound"), 0);
	ck_assert_int_eq(apply_both(lg, PIPED_N - 1, "sound, short of the end"),
			 0);
	for (int round = 0; round < 12; round++) {
		uint64_t seq;
		uint8_t *rec;
		size_t len, at;
		char what[96];

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* Half in the first batches, half anywhere. */
		seq = round % 2 ? 1 + x % PIPED_N : 1 + x % 3000;
		ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_EVENTS, seq,
						 &rec, &len, &err),
				 0);
		at = (size_t)((x >> 20) % len);
		rec[at] ^= (uint8_t)(1u << ((x >> 40) % 8));
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, seq, rec,
						 len, &err),
				 0);
		snprintf(what, sizeof(what), "seq %llu byte %zu",
			 (unsigned long long)seq, at);
		apply_both(lg, PIPED_N, what);
		rec[at] ^= (uint8_t)(1u << ((x >> 40) % 8));
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, seq, rec,
						 len, &err),
				 0);
		free(rec);
	}
	/* A missing record in the middle. */
	{
		uint8_t *rec;
		size_t len;

		ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_EVENTS, 100000,
						 &rec, &len, &err),
				 0);
		ck_assert_int_eq(ledger__raw_put(lg, LEDGER_DB_EVENTS, 100000,
						 NULL, 0, &err),
				 0);
		ck_assert_int_eq(apply_both(lg, PIPED_N, "seq 100000 missing"),
				 LG_ECORRUPT);
		free(rec);
	}
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

void ledger_tests_tamper(Suite *s)
{
	TCase *tc = tcase_create("tamper");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, tamper_every_event_byte);
	tcase_add_test(tc, tamper_every_checkpoint_byte);
	tcase_add_test(tc, tamper_checkpoint_recomputed_digest);
	tcase_add_test(tc, tamper_structure);
	tcase_add_loop_test(tc, tamper_forensic, 0,
			    sizeof(forensic_cases) / sizeof(forensic_cases[0]));
	tcase_add_test(tc, tamper_forensic_sound);
	tcase_add_test(tc, tamper_forensic_while_writing);
	tcase_add_test(tc, tamper_scan_missing);
	tcase_add_test(tc, tamper_rebuild_two_threads);
	suite_add_tcase(s, tc);
}
