/*
 * The Merkle tree of the ledger (DESIGN 4.4, ledger/tree.c): the leaf
 * writer gives exactly JCS of the event's JSON for random and edge-case
 * events; the stored tree gives the roots of a tree computed from the
 * leaves independently, for every size, whatever the batch sizes; proofs
 * from storage verify; a ledger from before the tree is refused by readers
 * with the command that builds it and built by the next writer; a changed
 * stored node is named by verify. Seeds are printed; GPULEDGER_SEED=N
 * repeats a run.
 */
#include "tests/ledger_gen.h"
#include "tests/ledger_tests.h"

#include "ledger/ledger_int.h"

#include <stdio.h>
#include <time.h>

#define T0 1767225600000000000LL

static uint64_t seed_of(uint64_t fallback)
{
	const char *e = getenv("GPULEDGER_SEED");

	return e ? strtoull(e, NULL, 0) : fallback;
}

static void same_as_tree_jcs(const struct event *ev)
{
	json_t *v = event_to_json(ev);
	char *want = jcs_text(v, JCS_INT_STRINGS, SIZE_MAX, NULL);
	char *got = event_jcs(ev);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(want);
	free(got);
	json_decref(v);
}

START_TEST(tree_leaf_writer_matches)
{
	uint64_t seed = seed_of((uint64_t)time(NULL));
	struct gen *g = gen_new(seed, T0);
	struct event evs[100];
	static const char rec[] =
		"{\"budget\":9223372036854775807,\"id\":3,\"checks\":[],"
		"\"message\":\"caf\xc3\xa9 \\\"x\\\"\",\"type\":\"admission\"}";
	const struct event edge[] = {
		{.seq = 1, .time_ns = 0, .type = EV_TICK},
		{.seq = 2, .time_ns = -1, .type = EV_TICK},
		{.seq = 3, .time_ns = T0, .type = EV_BUDGET, .ns = "tenant-a",
		 .key = "gpuclass.cozystack.io/devices", .present = true,
		 .value = INT64_MAX},
		{.seq = 4, .time_ns = T0, .type = EV_BUDGET, .ns = "tenant-a",
		 .key = "gpuclass.cozystack.io/devices", .present = false},
		{.seq = 5, .time_ns = T0, .type = EV_NODE, .node = "n1",
		 .cls = "h100", .value = 9007199254740992LL, .present = true},
		{.seq = 6, .time_ns = T0, .type = EV_NOTE, .key = "Bad",
		 .ns = NULL, .kind = HK_NONE, .name = NULL,
		 .text = "tab\there \"quoted\" \\ \x01 \xe2\x82\xac"},
		{.seq = 7, .time_ns = T0, .type = EV_VERDICT, .text = rec},
		{.seq = 8, .time_ns = T0, .type = EV_CLASS, .cls = "h100",
		 .text = "{\"name\":\"h100\",\"resourceNames\":[\"a/b\"]}"},
		{.seq = 9, .time_ns = T0, .type = EV_CLASS, .cls = "h100"},
		{.seq = 10, .time_ns = T0, .type = EV_VERDICT,
		 .text = "not json"},
		{.seq = 11, .time_ns = T0, .type = EV_RAWKEY, .ns = "tenant-a",
		 .key = "nvidia.com/gpu", .present = true},
		{.seq = UINT64_MAX >> 1, .time_ns = INT64_MAX,
		 .type = EV_TENANT, .ns = "tenant-a", .parent = "tenant-root"},
		/* The string writer takes eight bytes at a time: escapes and
		 * UTF-8 on both sides of and across those boundaries. */
		{.seq = 12, .time_ns = T0 + 999999999, .type = EV_NOTE,
		 .key = "Long", .ns = "tenant-a", .kind = HK_POD,
		 .name = "abcdefgh\"abcdefg\\abcdefghijklmnop\x1f",
		 .text = "1234567\xc3\xa9" "89abcdef\xe2\x82\xac" "ghijklm"
			 "\xf0\x9f\x98\x80nopqrstuvwxyz0123456789\x7f\n"},
		/* The time text is kept per second: the same second with
		 * other nanoseconds, another second, back. */
		{.seq = 13, .time_ns = T0 + 1, .type = EV_TICK},
		{.seq = 14, .time_ns = T0 + 1000000001, .type = EV_TICK},
		{.seq = 15, .time_ns = T0 + 2, .type = EV_TICK},
		{.seq = 16, .time_ns = -1000000000, .type = EV_TICK},
		{.seq = 17, .time_ns = -999999999, .type = EV_TICK},
	};

	fprintf(stderr, "tree_leaf_writer_matches: seed %llu\n",
		(unsigned long long)seed);
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		same_as_tree_jcs(&edge[i]);
	for (int r = 0; r < 50; r++) {
		gen_next(g, evs, 100);
		for (int i = 0; i < 100; i++) {
			evs[i].seq = (uint64_t)(r * 100 + i + 1);
			same_as_tree_jcs(&evs[i]);
		}
	}
	gen_free(g);
}
END_TEST

/* ---------------------------------------------------------------------- */

#define N 300

struct leaves {
	uint8_t h[N + 1][MERKLE_HASH_BYTES];
	size_t n;
};

static int leaf_fn(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct leaves *l = ctx;
	char *t = event_jcs(ev);

	merkle_leaf_hash(t, strlen(t), l->h[l->n++]);
	free(t);
	return 0;
}

/* MTH of leaves[0..n), RFC 9162 2.1.1 by recursion. */
static void mth(uint8_t (*h)[MERKLE_HASH_BYTES], size_t n, uint8_t *out)
{
	uint8_t l[MERKLE_HASH_BYTES], r[MERKLE_HASH_BYTES];
	size_t k = 1;

	if (n == 1) {
		memcpy(out, h[0], MERKLE_HASH_BYTES);
		return;
	}
	while (k * 2 < n)
		k *= 2;
	mth(h, k, l);
	mth(h + k, n - k, r);
	model__merkle_node_hash(l, r, out);
}

static ledger_t *build_random(const char *dir, uint64_t seed)
{
	struct ledger_opts o = {.dir = dir, .create = true, .no_sync = true};
	struct gen *g = gen_new(seed, T0);
	struct lg_error err = {0};
	struct event evs[64];
	uint64_t s = seed | 1;
	ledger_t *lg;

	ck_assert_int_eq(ledger_open(&lg, &o, &err), 0);
	for (size_t done = 0; done < N;) {
		size_t k;

		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		k = 1 + (s >> 33) % 40;
		if (k > N - done)
			k = N - done;
		gen_next(g, evs, k);
		ck_assert_int_eq(ledger_append(lg, evs, k, NULL, 0, NULL, &err),
				 0);
		done += k;
	}
	gen_free(g);
	return lg;
}

START_TEST(tree_matches_reference)
{
	uint64_t seed = seed_of((uint64_t)time(NULL) + 1);
	char *dir = fresh_dir();
	ledger_t *lg;
	struct leaves *l = calloc(1, sizeof(*l));
	struct merkle_proof *p = malloc(sizeof(*p));
	struct lg_error err = {0};
	uint64_t bad = 1;

	fprintf(stderr, "tree_matches_reference: seed %llu\n",
		(unsigned long long)seed);
	lg = build_random(dir, seed);
	ck_assert_int_eq(ledger_scan(lg, 1, 0, leaf_fn, l, &err), 0);
	ck_assert_uint_eq(l->n, N);
	for (size_t size = 1; size <= N; size++) {
		uint8_t want[MERKLE_HASH_BYTES], got[MERKLE_HASH_BYTES];

		mth(l->h, size, want);
		ck_assert_int_eq(ledger_tree_root(lg, size, got, &err), 0);
		ck_assert_msg(memcmp(want, got, MERKLE_HASH_BYTES) == 0,
			      "seed %llu: root of size %zu differs",
			      (unsigned long long)seed, size);
		for (size_t seq = 1 + size % 7; seq <= size; seq += 13) {
			ck_assert_int_eq(ledger_prove_inclusion(lg, seq, size, p,
								&err),
					 0);
			ck_assert_int_eq(merkle_verify_inclusion(
						 seq - 1, size, l->h[seq - 1], p,
						 want),
					 0);
		}
		if (size % 17 == 0) {
			uint8_t r2[MERKLE_HASH_BYTES];

			mth(l->h, N, r2);
			ck_assert_int_eq(ledger_prove_consistency(lg, size, N, p,
								  &err),
					 0);
			ck_assert_int_eq(
				merkle_verify_consistency(size, N, want, r2, p),
				0);
		}
	}
	ck_assert_int_eq(ledger_verify_tree(lg, &bad, &err), 0);
	ck_assert_uint_eq(bad, 0);
	/* Out of range. */
	ck_assert_int_ne(ledger_prove_inclusion(lg, 0, N, p, &err), 0);
	ck_assert_int_ne(ledger_prove_inclusion(lg, N + 1, N + 1, p, &err), 0);
	ck_assert_int_ne(ledger_prove_consistency(lg, 5, 4, p, &err), 0);
	ck_assert_int_ne(ledger_tree_root(lg, N + 1, p->hash[0], &err), 0);
	ledger_close(lg);
	rm_tree(dir);
	free(l);
	free(p);
}
END_TEST

START_TEST(tree_built_for_old_ledger)
{
	char *dir = fresh_dir();
	ledger_t *lg = build_random(dir, 5), *ro;
	struct ledger_opts o = {.dir = dir, .read_only = true};
	struct ledger_opts w = {.dir = dir, .no_sync = true};
	struct lg_error err = {0};
	uint8_t before[MERKLE_HASH_BYTES], after[MERKLE_HASH_BYTES];
	struct merkle_proof *p = malloc(sizeof(*p));
	uint64_t bad;

	ck_assert_int_eq(ledger_tree_root(lg, N, before, &err), 0);
	ck_assert_int_eq(ledger__raw_tree_drop(lg, &err), 0);
	ledger_close(lg);
	/* A reader refuses, naming the command that builds the tree. */
	ck_assert_int_eq(ledger_open(&ro, &o, &err), 0);
	ck_assert_int_eq(ledger_prove_inclusion(ro, 3, N, p, &err),
			 LG_EVERSION);
	ck_assert_ptr_nonnull(strstr(err.msg, "gpuledger checkpoint --db"));
	ck_assert_int_eq(ledger_verify_tree(ro, &bad, &err), LG_EVERSION);
	ledger_close(ro);
	/* A writer builds it. */
	ck_assert_int_eq(ledger_open(&lg, &w, &err), 0);
	ck_assert_int_eq(ledger_tree_root(lg, N, after, &err), 0);
	ck_assert_mem_eq(before, after, MERKLE_HASH_BYTES);
	ck_assert_int_eq(ledger_verify_tree(lg, &bad, &err), 0);
	/* And appends go on from it. */
	{
		struct event tick = {.time_ns = T0 * 2, .type = EV_TICK};

		ck_assert_int_eq(
			ledger_append(lg, &tick, 1, NULL, 0, NULL, &err), 0);
		ck_assert_int_eq(ledger_verify_tree(lg, &bad, &err), 0);
	}
	ledger_close(lg);
	rm_tree(dir);
	free(p);
}
END_TEST

/* A changed stored node (leaf or inner) is found and its seq named. */
START_TEST(tree_tampered_node)
{
	char *dir = fresh_dir();
	ledger_t *lg = build_random(dir, 9);
	struct lg_error err = {0};
	static const struct {
		unsigned level;
		uint64_t index, seq; /* the seq that completes it */
	} rows[] = {{0, 0, 1}, {0, 122, 123}, {1, 3, 8}, {3, 5, 48},
		    {8, 0, 256}};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		uint64_t pos = merkle_node_pos(rows[r].level, rows[r].index);
		uint8_t *v;
		size_t len;
		uint64_t bad = 0;

		ck_assert_int_eq(ledger__raw_get(lg, LEDGER_DB_TREE, pos, &v,
						 &len, &err),
				 0);
		ck_assert_uint_eq(len, MERKLE_HASH_BYTES);
		v[7] ^= 0x20;
		ck_assert_int_eq(
			ledger__raw_put(lg, LEDGER_DB_TREE, pos, v, len, &err),
			0);
		ck_assert_int_eq(ledger_verify_tree(lg, &bad, &err),
				 LG_ECORRUPT);
		ck_assert_msg(bad == rows[r].seq, "node %u/%llu: named %llu",
			      rows[r].level,
			      (unsigned long long)rows[r].index,
			      (unsigned long long)bad);
		v[7] ^= 0x20;
		ck_assert_int_eq(
			ledger__raw_put(lg, LEDGER_DB_TREE, pos, v, len, &err),
			0);
		ck_assert_int_eq(ledger_verify_tree(lg, &bad, &err), 0);
		free(v);
	}
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

LEDGER_PART(tree)
{
	TCase *tc = tcase_create("tree");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tree_leaf_writer_matches);
	tcase_add_test(tc, tree_matches_reference);
	tcase_add_test(tc, tree_built_for_old_ledger);
	tcase_add_test(tc, tree_tampered_node);
	suite_add_tcase(s, tc);
}
