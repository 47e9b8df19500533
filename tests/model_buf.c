/*
 * The bounded buffer (model/base.c, struct lg_buf): the maximum holds to
 * the byte (max - 1, max, max + 1), a refusal appends nothing and sticks
 * until reset, addf writes texts longer than any first block, detach hands
 * over exactly the content, release takes NULL and empty buffers, and
 * random sequences of adds agree with a plain reference array. The seed
 * is printed; GPULEDGER_SEED=N repeats a run.
 */
#include "tests/model_tests.h"

#include <stdio.h>
#include <time.h>

/* The invariants of model.h, after any operation. */
static void sound(const struct lg_buf *b)
{
	ck_assert_uint_le(b->len, b->max);
	ck_assert_uint_le(b->cap, b->max + 1);
	if (b->p != NULL) {
		ck_assert_uint_lt(b->len, b->cap);
		ck_assert_int_eq(b->p[b->len], '\0');
	} else {
		ck_assert_uint_eq(b->len, 0);
	}
}

/* Content of n bytes and then adds of k bytes, for n + k around max. */
START_TEST(buf_max_exact)
{
	static const struct {
		size_t max, first, more;
		int rc;
	} cases[] = {
		{10, 9, 0, 0},
		{10, 9, 1, 0},
		{10, 9, 2, LG_ELIMIT},
		{10, 10, 0, 0},
		{10, 10, 1, LG_ELIMIT},
		{10, 0, 11, LG_ELIMIT},
		{0, 0, 0, 0},
		{0, 0, 1, LG_ELIMIT},
		{255, 254, 1, 0},
		{256, 255, 1, 0},
		{256, 256, 1, LG_ELIMIT},
		{1000, 999, 1, 0},
		{1000, 999, 2, LG_ELIMIT},
		{5000, 4999, 1, 0},
		{5000, 5000, 1, LG_ELIMIT},
	};
	char fill[6000];

	memset(fill, 'a', sizeof(fill));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lg_buf b;
		int rc;

		lg_buf_init(&b, cases[i].max);
		ck_assert_int_eq(lg_buf_add(&b, fill, cases[i].first), 0);
		sound(&b);
		rc = lg_buf_add(&b, "bbbbbbbbbbbbbbbb", cases[i].more);
		ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d", i, rc);
		sound(&b);
		ck_assert_uint_eq(b.len, cases[i].first +
						 (rc == 0 ? cases[i].more : 0));
		ck_assert_int_eq(memcmp(b.p, fill, cases[i].first), 0);
		ck_assert(lg_buf_failed(&b) == (rc != 0));
		lg_buf_release(&b);
	}
}
END_TEST

/* A refusal sticks (a writer may test once at the end) until reset, which
 * keeps the max and the allocation. */
START_TEST(buf_refusal_sticks)
{
	struct lg_buf b;
	char *keep;

	lg_buf_init(&b, 4);
	ck_assert_int_eq(lg_buf_add(&b, "abc", 3), 0);
	ck_assert_int_eq(lg_buf_add(&b, "de", 2), LG_ELIMIT);
	ck_assert_int_eq(lg_buf_addc(&b, 'x'), LG_ELIMIT); /* would fit */
	ck_assert_int_eq(lg_buf_add(&b, "", 0), LG_ELIMIT);
	ck_assert_int_eq(lg_buf_addf(&b, "%d", 1), LG_ELIMIT);
	ck_assert_str_eq(b.p, "abc");
	sound(&b);
	keep = b.p;
	lg_buf_reset(&b);
	ck_assert(!lg_buf_failed(&b));
	ck_assert_ptr_eq(b.p, keep);
	ck_assert_str_eq(b.p, "");
	ck_assert_int_eq(lg_buf_add(&b, "wxyz", 4), 0);
	ck_assert_int_eq(lg_buf_addc(&b, '!'), LG_ELIMIT);
	ck_assert_str_eq(b.p, "wxyz");
	lg_buf_release(&b);
}
END_TEST

/* addf: texts longer than the first block and than the room left, texts
 * that end exactly at max, and one past it (nothing appended). */
START_TEST(buf_addf)
{
	static char big[20001];
	struct lg_buf b;

	memset(big, 'z', sizeof(big) - 1);
	lg_buf_init(&b, 1 << 20);
	ck_assert_int_eq(lg_buf_addf(&b, "<%s>", big), 0);
	ck_assert_uint_eq(b.len, sizeof(big) + 1);
	ck_assert_int_eq(b.p[0], '<');
	ck_assert_int_eq(b.p[b.len - 1], '>');
	ck_assert_int_eq(lg_buf_addf(&b, "%05d", 42), 0);
	ck_assert_str_eq(b.p + sizeof(big) + 1, "00042");
	sound(&b);
	lg_buf_release(&b);

	lg_buf_init(&b, 300);
	ck_assert_int_eq(lg_buf_addf(&b, "%.*s", 290, big), 0);
	ck_assert_int_eq(lg_buf_addf(&b, "%s", "0123456789"), 0); /* = max */
	ck_assert_uint_eq(b.len, 300);
	sound(&b);
	lg_buf_reset(&b);
	ck_assert_int_eq(lg_buf_addf(&b, "%.*s", 295, big), 0);
	/* Longer than the room left in the block and than max: the first,
	 * truncated pass must leave no trace. */
	ck_assert_int_eq(lg_buf_addf(&b, "%s", "0123456789"), LG_ELIMIT);
	ck_assert_uint_eq(b.len, 295);
	ck_assert_uint_eq(strlen(b.p), 295);
	sound(&b);
	lg_buf_release(&b);

	lg_buf_init(&b, 8);
	ck_assert_int_eq(lg_buf_addf(&b, "%s", ""), 0);
	ck_assert_ptr_nonnull(b.p);
	ck_assert_str_eq(b.p, "");
	ck_assert_int_eq(lg_buf_addf(&b, "%s", big), LG_ELIMIT);
	ck_assert_str_eq(b.p, "");
	lg_buf_release(&b);
}
END_TEST

/* detach: the caller gets the content and its length; the buffer is empty
 * and usable; an empty buffer gives "", a failed one NULL. */
START_TEST(buf_detach)
{
	struct lg_buf b;
	size_t len = 99;
	char *s;

	lg_buf_init(&b, 64);
	s = lg_buf_detach(&b, &len);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
	ck_assert_int_eq(lg_buf_add(&b, "a\0b", 3), 0);
	s = lg_buf_detach(&b, &len);
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(memcmp(s, "a\0b", 4), 0);
	free(s);
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	ck_assert_uint_eq(b.max, 64);
	ck_assert_int_eq(lg_buf_addf(&b, "%s", "again"), 0);
	s = lg_buf_detach(&b, NULL);
	ck_assert_str_eq(s, "again");
	free(s);

	ck_assert_int_eq(lg_buf_add(&b, "x", 1), 0);
	ck_assert_int_eq(lg_buf_addf(&b, "%65s", "y"), LG_ELIMIT);
	ck_assert_ptr_null(lg_buf_detach(&b, &len));
	ck_assert_ptr_null(b.p);
	ck_assert(!lg_buf_failed(&b));
	lg_buf_release(&b);
}
END_TEST

/* release: NULL, a never used buffer, twice in a row, after reset. */
START_TEST(buf_release)
{
	struct lg_buf b;

	lg_buf_release(NULL);
	lg_buf_init(&b, 16);
	lg_buf_release(&b);
	lg_buf_release(&b);
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.max, 16);
	ck_assert_int_eq(lg_buf_add(&b, "abc", 3), 0);
	lg_buf_reset(&b);
	lg_buf_release(&b);
	lg_buf_release(&b);
	ck_assert_ptr_null(b.p);
}
END_TEST

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random adds, addcs, addfs, resets and detaches against a plain array
 * and the rule "fits iff len + n <= max, and nothing failed before". */
START_TEST(buf_random_vs_reference)
{
	const char *e = getenv("GPULEDGER_SEED");
	uint64_t seed = e != NULL ? strtoull(e, NULL, 0)
				  : 0xb0f0000ULL + (uint64_t)time(NULL);
	uint64_t s = seed | 1;
	static char src[9000], ref[70000];

	fprintf(stderr, "buf_random_vs_reference: seed %llu\n",
		(unsigned long long)seed);
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(rnd(&s) & 0xff);
	for (int run = 0; run < 120; run++) {
		size_t max = (size_t)(rnd(&s) % 4 == 0 ? rnd(&s) % 64
						       : rnd(&s) % 65536);
		size_t len = 0;
		bool failed = false;
		struct lg_buf b;

		lg_buf_init(&b, max);
		for (int op = 0; op < 200; op++) {
			size_t n = rnd(&s) % (rnd(&s) % 8 == 0 ? 9000 : 40);
			size_t at = rnd(&s) % (sizeof(src) - n + 1);
			unsigned k = (unsigned)(rnd(&s) % 16);
			bool fits = !failed && n <= max - len;
			const char *from = src + at;
			char txt[40];
			int rc, want;

			if (k == 0) {
				lg_buf_reset(&b);
				len = 0;
				failed = false;
				continue;
			}
			if (k == 1) {
				size_t got_len = 0;
				char *got = lg_buf_detach(&b, &got_len);

				ck_assert_msg((got == NULL) == failed,
					      "seed %llu run %d op %d: detach",
					      (unsigned long long)seed, run,
					      op);
				if (got != NULL) {
					ck_assert_uint_eq(got_len, len);
					ck_assert(memcmp(got, ref, len) == 0);
					ck_assert_int_eq(got[len], '\0');
				}
				free(got);
				len = 0;
				failed = false;
				continue;
			}
			if (k == 2) {
				n = 1;
				fits = !failed && n <= max - len;
				rc = lg_buf_addc(&b, *from);
			} else if (k == 3) {
				n = (size_t)snprintf(
					txt, sizeof(txt), "%llu",
					(unsigned long long)rnd(&s));
				fits = !failed && n <= max - len;
				rc = lg_buf_addf(&b, "%s", txt);
				from = txt;
			} else {
				rc = lg_buf_add(&b, from, n);
			}
			want = fits ? 0 : LG_ELIMIT;
			ck_assert_msg(rc == want,
				      "seed %llu run %d op %d: rc %d, want %d "
				      "(len %zu n %zu max %zu)",
				      (unsigned long long)seed, run, op, rc,
				      want, len, n, max);
			if (fits) {
				memcpy(ref + len, from, n);
				len += n;
				ck_assert(n == 0 ||
					  memcmp(b.p + len - n, from, n) == 0);
			} else {
				failed = true;
			}
			ck_assert_uint_eq(b.len, len);
			ck_assert(lg_buf_failed(&b) == failed);
			/* The whole content now and then (it is up to 64 KiB),
			 * and at the end of every run. */
			if (len > 0 && (op % 16 == 0 || op == 199))
				ck_assert_msg(memcmp(b.p, ref, len) == 0,
					      "seed %llu run %d op %d: content",
					      (unsigned long long)seed, run,
					      op);
			sound(&b);
		}
		lg_buf_release(&b);
	}
}
END_TEST

/* A max of SIZE_MAX (an option nobody checked) would let cap = max + 1
 * wrap: it is taken as SIZE_MAX - 1, and the buffer works. */
START_TEST(buf_max_too_large)
{
	struct lg_buf b;

	lg_buf_init(&b, SIZE_MAX);
	ck_assert_uint_eq(b.max, SIZE_MAX - 1);
	ck_assert_int_eq(lg_buf_addf(&b, "%d", 12345), 0);
	ck_assert_str_eq(b.p, "12345");
	sound(&b);
	lg_buf_release(&b);
}
END_TEST

MODEL_PART(buf)
{
	TCase *tc = tcase_create("buf");

	tcase_add_test(tc, buf_max_exact);
	tcase_add_test(tc, buf_refusal_sticks);
	tcase_add_test(tc, buf_addf);
	tcase_add_test(tc, buf_detach);
	tcase_add_test(tc, buf_release);
	tcase_add_test(tc, buf_random_vs_reference);
	tcase_add_test(tc, buf_max_too_large);
	suite_add_tcase(s, tc);
}
