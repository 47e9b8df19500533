/*
 * The RFC 9162 Merkle tree (model/merkle.c): the known answers of the
 * certificate-transparency test vectors (transparency-dev/merkle,
 * proof/verify_test.go: eight leaves, their roots, inclusion and
 * consistency proofs), and exhaustive checks over every tree of at most 64
 * leaves: every inclusion proof of every (index, size) and every
 * consistency proof of every (m <= n) verifies against a root computed
 * independently from the leaves, and a flipped bit, a wrong index or size,
 * a missing or extra hash is refused.
 */
#include "tests/model_tests.h"

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

static void unhex(const char *s, uint8_t *out)
{
	for (size_t i = 0; s[2 * i] != '\0'; i++) {
		unsigned v;

		sscanf(s + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

/* An in-memory tree: every completed subtree by post-order position. */
struct mem_tree {
	struct merkle_edge edge;
	uint8_t (*node)[MERKLE_HASH_BYTES];
	size_t cap;
};

static void mem_emit(void *ctx, unsigned level, uint64_t index,
		     const uint8_t *hash)
{
	struct mem_tree *t = ctx;
	uint64_t pos = merkle_node_pos(level, index);

	ck_assert_uint_lt(pos, t->cap);
	memcpy(t->node[pos], hash, MERKLE_HASH_BYTES);
}

static int mem_get(void *ctx, unsigned level, uint64_t index, uint8_t *out)
{
	struct mem_tree *t = ctx;
	uint64_t pos = merkle_node_pos(level, index);

	/* Only complete subtrees of the tree so far exist. */
	if (((index + 1) << level) > t->edge.size)
		return LG_ENOENT;
	memcpy(out, t->node[pos], MERKLE_HASH_BYTES);
	return 0;
}

static void mem_init(struct mem_tree *t, size_t leaves)
{
	memset(&t->edge, 0, sizeof(t->edge));
	t->cap = 2 * leaves + 64;
	t->node = calloc(t->cap, MERKLE_HASH_BYTES);
}

/* MTH straight from RFC 9162 2.1.1, recursively over leaf hashes. */
static void ref_mth(uint8_t (*leaf)[MERKLE_HASH_BYTES], size_t n, uint8_t *out)
{
	uint8_t l[MERKLE_HASH_BYTES], r[MERKLE_HASH_BYTES];
	size_t k = 1;

	if (n == 1) {
		memcpy(out, leaf[0], MERKLE_HASH_BYTES);
		return;
	}
	while (k * 2 < n)
		k *= 2;
	ref_mth(leaf, k, l);
	ref_mth(leaf + k, n - k, r);
	model__merkle_node_hash(l, r, out);
}

/* ---------------------------------------------------------------------- */
/* Known answers */

static const char *const kat_leaves[8] = {
	"", "00", "10", "2021", "3031", "40414243", "5051525354555657",
	"606162636465666768696a6b6c6d6e6f",
};

static const char *const kat_roots[8] = {
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

/* Leaf numbers are 1-based in the vectors, as there. */
static const struct {
	uint64_t leaf, size;
	const char *hash[3];
} kat_incl[] = {
	{1,
	 8,
	 {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
	  "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
	  "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
	{6,
	 8,
	 {"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
	  "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
	  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
	{3,
	 3,
	 {"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"}},
	{2,
	 5,
	 {"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	  "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
	  "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
	{1, 1, {NULL}},
};

static const struct {
	uint64_t m, n;
	const char *hash[3];
} kat_cons[] = {
	{1,
	 8,
	 {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
	  "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
	  "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
	{6,
	 8,
	 {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
	  "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
	  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
	{2,
	 5,
	 {"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
	  "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
	{6,
	 7,
	 {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
	  "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
	  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
	{1, 1, {NULL}},
};

/* The tree of the eight vector leaves. */
static void kat_tree(struct mem_tree *t)
{
	mem_init(t, 8);
	for (int i = 0; i < 8; i++) {
		uint8_t data[16], leaf[MERKLE_HASH_BYTES];
		size_t len = strlen(kat_leaves[i]) / 2;

		unhex(kat_leaves[i], data);
		merkle_leaf_hash(data, len, leaf);
		merkle_edge_push(&t->edge, leaf, mem_emit, t);
	}
}

START_TEST(merkle_kat_roots)
{
	struct mem_tree t;
	uint8_t want[MERKLE_HASH_BYTES], got[MERKLE_HASH_BYTES];
	uint8_t empty[MERKLE_HASH_BYTES];

	kat_tree(&t);
	for (uint64_t size = 1; size <= 8; size++) {
		unhex(kat_roots[size - 1], want);
		ck_assert_int_eq(merkle_root(mem_get, &t, size, got), 0);
		ck_assert_mem_eq(got, want, MERKLE_HASH_BYTES);
	}
	model__merkle_edge_root(&t.edge, got);
	ck_assert_mem_eq(got, want, MERKLE_HASH_BYTES);
	/* The empty tree: SHA-256 of nothing. */
	unhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	      empty);
	ck_assert_int_eq(merkle_root(mem_get, &t, 0, got), 0);
	ck_assert_mem_eq(got, empty, MERKLE_HASH_BYTES);
	free(t.node);
}
END_TEST

START_TEST(merkle_kat_inclusion)
{
	struct mem_tree t;
	struct merkle_proof want = {0}, got;
	uint8_t root[MERKLE_HASH_BYTES], leaf[MERKLE_HASH_BYTES], data[16];
	uint64_t index = kat_incl[_i].leaf - 1, size = kat_incl[_i].size;

	kat_tree(&t);
	for (; want.n < 3 && kat_incl[_i].hash[want.n]; want.n++)
		unhex(kat_incl[_i].hash[want.n], want.hash[want.n]);
	ck_assert_int_eq(merkle_inclusion_proof(mem_get, &t, index, size, &got),
			 0);
	ck_assert_uint_eq(got.n, want.n);
	for (size_t i = 0; i < got.n; i++)
		ck_assert_mem_eq(got.hash[i], want.hash[i], MERKLE_HASH_BYTES);
	unhex(kat_roots[size - 1], root);
	unhex(kat_leaves[index], data);
	merkle_leaf_hash(data, strlen(kat_leaves[index]) / 2, leaf);
	ck_assert_int_eq(merkle_verify_inclusion(index, size, leaf, &want, root),
			 0);
	free(t.node);
}
END_TEST

START_TEST(merkle_kat_consistency)
{
	struct mem_tree t;
	struct merkle_proof want = {0}, got;
	uint8_t r1[MERKLE_HASH_BYTES], r2[MERKLE_HASH_BYTES];
	uint64_t m = kat_cons[_i].m, n = kat_cons[_i].n;

	kat_tree(&t);
	for (; want.n < 3 && kat_cons[_i].hash[want.n]; want.n++)
		unhex(kat_cons[_i].hash[want.n], want.hash[want.n]);
	ck_assert_int_eq(merkle_consistency_proof(mem_get, &t, m, n, &got), 0);
	ck_assert_uint_eq(got.n, want.n);
	for (size_t i = 0; i < got.n; i++)
		ck_assert_mem_eq(got.hash[i], want.hash[i], MERKLE_HASH_BYTES);
	unhex(kat_roots[m - 1], r1);
	unhex(kat_roots[n - 1], r2);
	ck_assert_int_eq(merkle_verify_consistency(m, n, r1, r2, &want), 0);
	if (m != n) /* the roots swapped do not verify */
		ck_assert_int_ne(merkle_verify_consistency(m, n, r2, r1, &want),
				 0);
	free(t.node);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Exhaustive over small trees */

#define SMALL 64

struct small {
	struct mem_tree t;
	uint8_t leaf[SMALL][MERKLE_HASH_BYTES];
	uint8_t root[SMALL + 1][MERKLE_HASH_BYTES];
};

static void small_init(struct small *s)
{
	mem_init(&s->t, SMALL);
	for (int i = 0; i < SMALL; i++) {
		char text[32];

		snprintf(text, sizeof(text), "{\"seq\":%d}", i + 1);
		merkle_leaf_hash(text, strlen(text), s->leaf[i]);
		merkle_edge_push(&s->t.edge, s->leaf[i], mem_emit, &s->t);
		ref_mth(s->leaf, (size_t)i + 1, s->root[i + 1]);
	}
}

/* Every proof hash with one bit flipped (a different bit per byte, so that
 * every bit position is hit across a proof) must be refused. */
static void flips_refused_incl(uint64_t idx, uint64_t size,
			       const uint8_t *leaf, struct merkle_proof *p,
			       const uint8_t *root)
{
	for (size_t h = 0; h < p->n; h++)
		for (int byte = 0; byte < MERKLE_HASH_BYTES; byte++) {
			uint8_t bit = (uint8_t)(1u << ((byte + h) % 8));

			p->hash[h][byte] ^= bit;
			ck_assert_msg(merkle_verify_inclusion(idx, size, leaf, p,
							      root) != 0,
				      "flip %zu/%d of (%llu, %llu) verified", h,
				      byte, (unsigned long long)idx,
				      (unsigned long long)size);
			p->hash[h][byte] ^= bit;
		}
}

START_TEST(merkle_every_inclusion)
{
	struct small *s = malloc(sizeof(*s));

	small_init(s);
	for (uint64_t size = 1; size <= SMALL; size++) {
		uint8_t got[MERKLE_HASH_BYTES];

		ck_assert_int_eq(merkle_root(mem_get, &s->t, size, got), 0);
		ck_assert_mem_eq(got, s->root[size], MERKLE_HASH_BYTES);
		for (uint64_t i = 0; i < size; i++) {
			struct merkle_proof p, q;
			uint8_t bad[MERKLE_HASH_BYTES];

			ck_assert_int_eq(merkle_inclusion_proof(mem_get, &s->t,
								i, size, &p),
					 0);
			ck_assert_int_eq(merkle_verify_inclusion(
						 i, size, s->leaf[i], &p,
						 s->root[size]),
					 0);
			flips_refused_incl(i, size, s->leaf[i], &p,
					   s->root[size]);
			/* Another leaf, index, size or root: refused. */
			if (size > 1)
				ck_assert_int_ne(
					merkle_verify_inclusion(
						i, size, s->leaf[(i + 1) % size],
						&p, s->root[size]),
					0);
			if (i + 1 < size)
				ck_assert_int_ne(merkle_verify_inclusion(
							 i + 1, size, s->leaf[i],
							 &p, s->root[size]),
						 0);
			/* Nor in the next tree. (A path can fit two sizes
			 * with the same root, which is why the size and the
			 * root must come from one signed checkpoint.) */
			if (size < SMALL)
				ck_assert_int_ne(merkle_verify_inclusion(
							 i, size + 1, s->leaf[i],
							 &p, s->root[size + 1]),
						 0);
			memcpy(bad, s->root[size], sizeof(bad));
			bad[31] ^= 1;
			ck_assert_int_ne(merkle_verify_inclusion(
						 i, size, s->leaf[i], &p, bad),
					 0);
			/* A hash missing or one too many. */
			if (p.n > 0) {
				q = p;
				q.n--;
				ck_assert_int_ne(merkle_verify_inclusion(
							 i, size, s->leaf[i],
							 &q, s->root[size]),
						 0);
			}
			q = p;
			memcpy(q.hash[q.n++], s->root[size], MERKLE_HASH_BYTES);
			ck_assert_int_ne(merkle_verify_inclusion(i, size,
								 s->leaf[i], &q,
								 s->root[size]),
					 0);
		}
		ck_assert_int_ne(merkle_inclusion_proof(mem_get, &s->t, size,
							size, &(struct merkle_proof){0}),
				 0);
	}
	free(s->t.node);
	free(s);
}
END_TEST

START_TEST(merkle_every_consistency)
{
	struct small *s = malloc(sizeof(*s));

	small_init(s);
	for (uint64_t n = 1; n <= SMALL; n++)
		for (uint64_t m = 1; m <= n; m++) {
			struct merkle_proof p, q;

			ck_assert_int_eq(merkle_consistency_proof(mem_get, &s->t,
								  m, n, &p),
					 0);
			ck_assert_msg(merkle_verify_consistency(m, n, s->root[m],
								s->root[n],
								&p) == 0,
				      "consistency %llu -> %llu refused",
				      (unsigned long long)m,
				      (unsigned long long)n);
			for (size_t h = 0; h < p.n; h++)
				for (int byte = 0; byte < MERKLE_HASH_BYTES;
				     byte++) {
					uint8_t bit =
						(uint8_t)(1u << ((byte + h) % 8));

					p.hash[h][byte] ^= bit;
					ck_assert_int_ne(
						merkle_verify_consistency(
							m, n, s->root[m],
							s->root[n], &p),
						0);
					p.hash[h][byte] ^= bit;
				}
			/* A wrong first root alone: for a first size that is
			 * not a power of two only the check of the first
			 * root it rebuilds refuses it (RFC 9162 2.1.4.2). */
			{
				uint8_t r1[MERKLE_HASH_BYTES];

				memcpy(r1, s->root[m], sizeof(r1));
				r1[m % MERKLE_HASH_BYTES] ^= 0x80;
				ck_assert_msg(merkle_verify_consistency(
						      m, n, r1, s->root[n],
						      &p) != 0,
					      "consistency %llu -> %llu with "
					      "a wrong first root",
					      (unsigned long long)m,
					      (unsigned long long)n);
			}
			if (m == n)
				continue;
			/* Other roots, other sizes, a shorter proof. */
			ck_assert_int_ne(merkle_verify_consistency(
						 m, n, s->root[n], s->root[m], &p),
					 0);
			if (m > 1)
				ck_assert_int_ne(merkle_verify_consistency(
							 m - 1, n, s->root[m],
							 s->root[n], &p),
						 0);
			if (n < SMALL)
				ck_assert_int_ne(merkle_verify_consistency(
							 m, n + 1, s->root[m],
							 s->root[n + 1], &p),
						 0);
			q = p;
			q.n--;
			ck_assert_int_ne(merkle_verify_consistency(
						 m, n, s->root[m], s->root[n], &q),
					 0);
		}
	free(s->t.node);
	free(s);
}
END_TEST

/* The edge of a size loaded from stored subtrees is the pushed one. */
START_TEST(merkle_edge_reload)
{
	struct small *s = malloc(sizeof(*s));

	small_init(s);
	for (uint64_t size = 0; size <= SMALL; size++) {
		struct merkle_edge e;
		uint8_t r[MERKLE_HASH_BYTES];
		struct mem_tree view = s->t;

		view.edge.size = size;
		ck_assert_int_eq(merkle_edge_load(&e, size, mem_get, &view), 0);
		model__merkle_edge_root(&e, r);
		if (size > 0)
			ck_assert_mem_eq(r, s->root[size], MERKLE_HASH_BYTES);
	}
	free(s->t.node);
	free(s);
}
END_TEST

MODEL_PART(merkle)
{
	TCase *tc = tcase_create("merkle");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, merkle_kat_roots);
	tcase_add_loop_test(tc, merkle_kat_inclusion, 0, NROWS(kat_incl));
	tcase_add_loop_test(tc, merkle_kat_consistency, 0, NROWS(kat_cons));
	tcase_add_test(tc, merkle_every_inclusion);
	tcase_add_test(tc, merkle_every_consistency);
	tcase_add_test(tc, merkle_edge_reload);
	suite_add_tcase(s, tc);
}
