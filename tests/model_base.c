/*
 * The base of every layer (model/base.c): LG_ASSERT fires with file:line
 * and the condition even under NDEBUG, the stated preconditions of the
 * model abort when broken, and the allocation family never returns NULL
 * (running out aborts with a message).
 *
 * NDEBUG is defined before anything is included, as a release build of
 * <assert.h> would: LG_ASSERT must not care.
 */
#define NDEBUG 1

#include "tests/model_tests.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
/* ASan reports an impossible allocation itself; let malloc return NULL, as
 * libc's does, so that lg_xmalloc's own abort is what is tested. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

/* Runs fn in a child with stderr into a pipe; returns what it wrote (the
 * caller frees) and its wait status in *status. */
static char *child_stderr(void (*fn)(void), int *status)
{
	int fd[2];
	pid_t pid;
	size_t n = 0;
	char *out = lg_xmalloc(4096);
	ssize_t r;

	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		fn();
		_exit(0);
	}
	close(fd[1]);
	while (n < 4095 && (r = read(fd[0], out + n, 4095 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, status, 0), pid);
	return out;
}

static volatile int three = 3;

/* Says which line its failing assertion is on, then fails it. */
static void failing_assert(void)
{
	LG_ASSERT(1 + 1 == 2); /* true: goes on */
	fprintf(stderr, "line %d\n", __LINE__ + 1);
	LG_ASSERT(1 + 1 == three);
}

START_TEST(base_assert_message)
{
	int status, line = 0;
	char *err = child_stderr(failing_assert, &status), want[128];

	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "status %d", status);
	ck_assert_int_eq(sscanf(err, "line %d", &line), 1);
	snprintf(want, sizeof(want),
		 "gpuledger: tests/model_base.c:%d: failing_assert: ", line);
	ck_assert_msg(strstr(err, want) != NULL, "%s (want %s)", err, want);
	ck_assert_msg(strstr(err, "assertion failed: 1 + 1 == three\n") != NULL,
		      "%s", err);
	free(err);
}
END_TEST

static void out_of_memory(void)
{
	/* More than any address space: malloc returns NULL. */
	volatile size_t huge = SIZE_MAX - 4096;

	free(lg_xmalloc(huge));
}

START_TEST(base_oom_aborts)
{
	int status;
	char *err = child_stderr(out_of_memory, &status), want[64];

	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "status %d", status);
	snprintf(want, sizeof(want), "gpuledger: out of memory (%zu bytes)",
		 (size_t)(SIZE_MAX - 4096));
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	free(err);
}
END_TEST

START_TEST(base_alloc_family)
{
	char *a = lg_xmalloc(0), *b = lg_xmalloc(0), *s;
	uint64_t *z = lg_xcalloc(1000, sizeof(*z));

	/* Size 0 still gives distinct live blocks, and realloc to 0 keeps
	 * one: no caller ever sees NULL. */
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	a = lg_xrealloc(a, 0);
	ck_assert_ptr_nonnull(a);
	a = lg_xrealloc(a, 100000);
	memset(a, 'x', 100000);
	for (size_t i = 0; i < 1000; i++)
		ck_assert_uint_eq(z[i], 0);
	free(b);
	b = lg_xcalloc(0, 8);
	ck_assert_ptr_nonnull(b);
	s = lg_xstrdup("gpuledger");
	ck_assert_str_eq(s, "gpuledger");
	ck_assert_ptr_ne(s, "gpuledger");
	free(a);
	free(b);
	free(z);
	free(s);
}
END_TEST

/* model__ptab_insert cannot compare keys; the same record twice is asserted. */
static bool ptr_eq(const void *val, const void *key)
{
	return val == key;
}

START_TEST(base_ptab_twice)
{
	struct ptab t = {0};
	int rec[20];

	for (int i = 0; i < 20; i++)
		model__ptab_insert(&t, model__hash_str("x") + (uint64_t)i,
				   &rec[i]);
	ck_assert_ptr_eq(
		model__ptab_find(&t, model__hash_str("x") + 7, ptr_eq, &rec[7]),
		&rec[7]);
	model__ptab_insert(&t, model__hash_str("x") + 7, &rec[7]); /* aborts */
	ck_abort_msg("ptab_insert took the same value twice");
}
END_TEST

/* state_apply_validated trusts event_validate for the type it indexes its
 * table with. */
START_TEST(base_apply_unvalidated)
{
	state_t *st = state_new();
	struct event ev = {.type = EV_MAX, .time_ns = 1};

	state_apply_validated(st, &ev, NULL); /* aborts */
	ck_abort_msg("state_apply_validated applied type EV_MAX");
}
END_TEST

/* An edge marked for reloading (size UINT64_MAX) takes no leaf. */
START_TEST(base_edge_untrusted)
{
	static struct merkle_edge e;
	uint8_t leaf[MERKLE_HASH_BYTES] = {0};

	merkle_edge_push(&e, leaf, NULL, NULL);
	ck_assert_uint_eq(e.size, 1);
	e.size = UINT64_MAX;
	merkle_edge_push(&e, leaf, NULL, NULL); /* aborts */
	ck_abort_msg("merkle_edge_push grew an untrusted edge");
}
END_TEST

START_TEST(base_hex)
{
	const uint8_t b[] = {0x00, 0x0f, 0xa5, 0xff};
	char out[2 * sizeof(b) + 1];

	memset(out, '?', sizeof(out));
	lg_hex(b, sizeof(b), out);
	ck_assert_str_eq(out, "000fa5ff");
	lg_hex(b, 0, out);
	ck_assert_str_eq(out, "");
}
END_TEST

/* Seqs, ids and counts as typed: 1 to 19 digits, nothing else. */
static const struct {
	const char *s;
	bool ok;
	uint64_t v;
} u64_rows[] = {
	{"0", true, 0},
	{"7", true, 7},
	{"0007", true, 7},
	{"0000000000000000007", true, 7},
	{"9999999999999999999", true, 9999999999999999999ULL},
	/* Twenty digits are refused, whatever their value. */
	{"00000000000000000007", false, 0},
	{"12345678901234567890", false, 0},
	{"18446744073709551615", false, 0},
	{"18446744073709551616", false, 0},
	{"99999999999999999999", false, 0},
	{"", false, 0},
	{"12a", false, 0},
	{"1:", false, 0},
	{"1/", false, 0},
	{"-1", false, 0},
	{"+1", false, 0},
	{" 1", false, 0},
	{"1 ", false, 0},
	{"1e3", false, 0},
	{"0x10", false, 0},
	{"\xd9", false, 0},
};

START_TEST(base_parse_u64_rows)
{
	uint64_t v = 12345;
	bool ok = lg_parse_u64(u64_rows[_i].s, &v);

	ck_assert_msg(ok == u64_rows[_i].ok, "\"%s\": %d", u64_rows[_i].s, ok);
	/* A refusal leaves *out as it was. */
	ck_assert_uint_eq(v, ok ? u64_rows[_i].v : 12345);
}
END_TEST

/* Every value of 1 to 19 digits reads back, with leading zeros too, and
 * one of 20 or more digits never does; one non-digit anywhere refuses
 * the whole. */
START_TEST(base_parse_u64_random)
{
	const char *e = getenv("GPULEDGER_SEED");
	uint64_t seed = e != NULL ? strtoull(e, NULL, 0) : (uint64_t)getpid();
	uint64_t s = seed | 1;

	fprintf(stderr, "base_parse_u64_random: seed %llu\n",
		(unsigned long long)seed);
	for (int run = 0; run < 20000; run++) {
		char text[64];
		uint64_t v, got = 0;
		bool ok;
		int n;

		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		/* Values of every magnitude, not only the large ones. */
		v = s >> (s % 64);
		n = snprintf(text, sizeof(text), "%.*s%llu", (int)(s % 4),
			     "000", (unsigned long long)v);
		ok = lg_parse_u64(text, &got);
		ck_assert_msg(ok == (n <= 19) && (!ok || got == v),
			      "seed %llu run %d: \"%s\" gave %d %llu",
			      (unsigned long long)seed, run, text, ok,
			      (unsigned long long)got);
		/* A byte that is not a digit, anywhere, in a text short
		 * enough to be read. */
		if (n <= 19) {
			static const char bad[] = " -+.e/:xA\t";
			size_t at = (size_t)(s >> 8) % (size_t)n;

			text[at] = bad[(s >> 20) % (sizeof(bad) - 1)];
			ck_assert_msg(!lg_parse_u64(text, &got),
				      "seed %llu run %d: \"%s\" accepted",
				      (unsigned long long)seed, run, text);
		}
	}
}
END_TEST

/* Fixed-width fields: exactly n digits, whatever follows them. */
START_TEST(base_digits)
{
	int v = -1;

	ck_assert(model__digits("2026-", 4, &v) && v == 2026);
	ck_assert(model__digits("07Z", 2, &v) && v == 7);
	ck_assert(model__digits("999999999", 9, &v) && v == 999999999);
	v = -1;
	ck_assert(!model__digits("20a6", 4, &v) && v == -1);
	ck_assert(!model__digits("2/", 2, &v) && v == -1);
	ck_assert(!model__digits("2:", 2, &v) && v == -1);
	ck_assert(!model__digits("-1", 2, &v) && v == -1);
	ck_assert(!model__digits("1", 2, &v) && v == -1); /* the NUL */
}
END_TEST

MODEL_PART(base)
{
	TCase *tc = tcase_create("base");

	tcase_add_test(tc, base_assert_message);
	tcase_add_test(tc, base_oom_aborts);
	tcase_add_test(tc, base_alloc_family);
	tcase_add_test(tc, base_hex);
	tcase_add_loop_test(tc, base_parse_u64_rows, 0,
			    (int)(sizeof(u64_rows) / sizeof(u64_rows[0])));
	tcase_add_test(tc, base_parse_u64_random);
	tcase_add_test(tc, base_digits);
	tcase_add_test_raise_signal(tc, base_ptab_twice, SIGABRT);
	tcase_add_test_raise_signal(tc, base_apply_unvalidated, SIGABRT);
	tcase_add_test_raise_signal(tc, base_edge_untrusted, SIGABRT);
	suite_add_tcase(s, tc);
}
