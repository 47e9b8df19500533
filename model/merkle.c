/*
 * The RFC 9162 (Certificate Transparency 2.0) Merkle tree, section 2.1:
 * hashes, the right edge of a growing tree, and the inclusion and
 * consistency proofs with their verifiers, written as the RFC states them
 * (2.1.3.1 and 2.1.4.1 to generate, 2.1.3.2 and 2.1.4.2 to verify).
 *
 * Pure: proofs are generated from a callback that returns the hash of a
 * complete subtree, so that the ledger answers from stored nodes in
 * O(log N) lookups and tests answer from an array.
 */
#include "model/model_int.h"

/* The low-level SHA-256 calls avoid a context allocation per hash (see
 * ledger/codec.c); two hashes per appended event on average. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <string.h>

void merkle_leaf_hash(const void *data, size_t len, uint8_t *out)
{
	SHA256_CTX c;
	uint8_t z = 0x00;

	SHA256_Init(&c);
	SHA256_Update(&c, &z, 1);
	SHA256_Update(&c, data, len);
	SHA256_Final(out, &c);
}

void model__merkle_node_hash(const uint8_t *left, const uint8_t *right,
			     uint8_t *out)
{
	uint8_t buf[1 + 2 * MERKLE_HASH_BYTES];
	SHA256_CTX c;

	buf[0] = 0x01;
	memcpy(buf + 1, left, MERKLE_HASH_BYTES);
	memcpy(buf + 1 + MERKLE_HASH_BYTES, right, MERKLE_HASH_BYTES);
	SHA256_Init(&c);
	SHA256_Update(&c, buf, sizeof(buf));
	SHA256_Final(out, &c);
}

uint64_t merkle_node_pos(unsigned level, uint64_t index)
{
	uint64_t last = ((index + 1) << level) - 1;

	return 2 * last - (uint64_t)__builtin_popcountll(last) + level;
}

/* ---------------------------------------------------------------------- */
/* The right edge */

void merkle_edge_push(struct merkle_edge *e, const uint8_t *leaf,
		      merkle_node_fn *emit, void *ctx)
{
	uint8_t h[MERKLE_HASH_BYTES];
	unsigned level = 0;
	uint64_t idx = e->size;

	/* UINT64_MAX marks an edge that must be loaded again (ledger/tree.c);
	 * pushing onto it would join all 64 levels and write past hash[63]. */
	LG_ASSERT(e->size < UINT64_MAX);
	memcpy(h, leaf, MERKLE_HASH_BYTES);
	if (emit != NULL)
		emit(ctx, 0, idx, h);
	/* Each trailing one bit of the old size is a complete subtree of
	 * that level, now joined by the new one. */
	while ((e->size >> level) & 1) {
		model__merkle_node_hash(e->hash[level], h, h);
		level++;
		idx >>= 1;
		if (emit != NULL)
			emit(ctx, level, idx, h);
	}
	memcpy(e->hash[level], h, MERKLE_HASH_BYTES);
	e->size++;
}

void model__merkle_edge_root(const struct merkle_edge *e, uint8_t *out)
{
	uint8_t h[MERKLE_HASH_BYTES];
	bool have = false;

	if (e->size == 0) {
		SHA256(NULL, 0, out);
		return;
	}
	for (unsigned level = 0; level < 64; level++) {
		if (!((e->size >> level) & 1))
			continue;
		if (have)
			model__merkle_node_hash(e->hash[level], h, h);
		else
			memcpy(h, e->hash[level], MERKLE_HASH_BYTES);
		have = true;
	}
	memcpy(out, h, MERKLE_HASH_BYTES);
}

int merkle_edge_load(struct merkle_edge *e, uint64_t size, merkle_get_fn *get,
		     void *ctx)
{
	uint64_t start = 0;

	memset(e, 0, sizeof(*e));
	for (int level = 63; level >= 0; level--) {
		int rc;

		if (!((size >> level) & 1))
			continue;
		rc = get(ctx, (unsigned)level, start >> level,
			 e->hash[level]);
		if (rc != 0)
			return rc;
		start += (uint64_t)1 << level;
	}
	e->size = size;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Proofs: generation (RFC 9162 2.1.3.1, 2.1.4.1) */

/* The largest power of two smaller than n (n >= 2). */
static uint64_t split(uint64_t n)
{
	return (uint64_t)1 << (63 - __builtin_clzll(n - 1));
}

/* MTH(D[a:b]) where [a, b) starts at a multiple of a power of two that is
 * at least b - a, as every range the proofs need does. */
static int range_hash(merkle_get_fn *get, void *ctx, uint64_t a, uint64_t b,
		      uint8_t *out)
{
	uint64_t n = b - a, k;
	uint8_t l[MERKLE_HASH_BYTES];
	int rc;

	LG_ASSERT(n > 0);
	if ((n & (n - 1)) == 0) {
		unsigned level = (unsigned)__builtin_ctzll(n);

		/* A stored subtree starts at a multiple of its size. */
		LG_ASSERT((a & (n - 1)) == 0);
		return get(ctx, level, a >> level, out);
	}
	k = split(n);
	if ((rc = range_hash(get, ctx, a, a + k, l)) != 0 ||
	    (rc = range_hash(get, ctx, a + k, b, out)) != 0)
		return rc;
	model__merkle_node_hash(l, out, out);
	return 0;
}

int merkle_root(merkle_get_fn *get, void *ctx, uint64_t size, uint8_t *out)
{
	if (size == 0) {
		SHA256(NULL, 0, out);
		return 0;
	}
	return range_hash(get, ctx, 0, size, out);
}

/* PATH(m, D[a:b]); hashes are appended from the leaf up, as the RFC's
 * recursion yields them. A tree of 64-bit size has at most 64 levels, so a
 * path holds at most 64 hashes and a consistency proof at most 128: the
 * bound of struct merkle_proof is asserted, not an operating error. */
static int path(merkle_get_fn *get, void *ctx, uint64_t m, uint64_t a,
		uint64_t b, struct merkle_proof *p)
{
	uint64_t n = b - a, k;
	int rc;

	if (n == 1)
		return 0;
	k = split(n);
	if (m < k)
		rc = path(get, ctx, m, a, a + k, p);
	else
		rc = path(get, ctx, m - k, a + k, b, p);
	if (rc != 0)
		return rc;
	LG_ASSERT(p->n < MERKLE_PROOF_MAX);
	return m < k ? range_hash(get, ctx, a + k, b, p->hash[p->n++])
		     : range_hash(get, ctx, a, a + k, p->hash[p->n++]);
}

int merkle_inclusion_proof(merkle_get_fn *get, void *ctx, uint64_t index,
			   uint64_t size, struct merkle_proof *p)
{
	p->n = 0;
	if (index >= size)
		return LG_EINVAL;
	return path(get, ctx, index, 0, size, p);
}

/* SUBPROOF(m, D[a:b], whole). */
static int subproof(merkle_get_fn *get, void *ctx, uint64_t m, uint64_t a,
		    uint64_t b, bool whole, struct merkle_proof *p)
{
	uint64_t n = b - a, k;
	int rc;

	if (m == n) {
		if (whole)
			return 0;
		LG_ASSERT(p->n < MERKLE_PROOF_MAX);
		return range_hash(get, ctx, a, b, p->hash[p->n++]);
	}
	k = split(n);
	if (m <= k)
		rc = subproof(get, ctx, m, a, a + k, whole, p);
	else
		rc = subproof(get, ctx, m - k, a + k, b, false, p);
	if (rc != 0)
		return rc;
	LG_ASSERT(p->n < MERKLE_PROOF_MAX);
	return m <= k ? range_hash(get, ctx, a + k, b, p->hash[p->n++])
		      : range_hash(get, ctx, a, a + k, p->hash[p->n++]);
}

int merkle_consistency_proof(merkle_get_fn *get, void *ctx, uint64_t m,
			     uint64_t n, struct merkle_proof *p)
{
	p->n = 0;
	if (m > n)
		return LG_EINVAL;
	if (m == 0 || m == n)
		return 0;
	return subproof(get, ctx, m, 0, n, true, p);
}

/* ---------------------------------------------------------------------- */
/* Proofs: verification (RFC 9162 2.1.3.2, 2.1.4.2) */

int model__merkle_root_from_inclusion(uint64_t index, uint64_t size,
				      const uint8_t *leaf,
				      const struct merkle_proof *p,
				      uint8_t *root)
{
	uint64_t fn = index, sn = size - 1;
	uint8_t r[MERKLE_HASH_BYTES];

	if (index >= size)
		return LG_EINVAL;
	memcpy(r, leaf, MERKLE_HASH_BYTES);
	for (size_t i = 0; i < p->n; i++) {
		if (sn == 0)
			return LG_EINVAL; /* too many hashes */
		if ((fn & 1) || fn == sn) {
			model__merkle_node_hash(p->hash[i], r, r);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			model__merkle_node_hash(r, p->hash[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	if (sn != 0)
		return LG_EINVAL; /* too few hashes */
	memcpy(root, r, MERKLE_HASH_BYTES);
	return 0;
}

int merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t *leaf,
			    const struct merkle_proof *p, const uint8_t *root)
{
	uint8_t r[MERKLE_HASH_BYTES];
	int rc = model__merkle_root_from_inclusion(index, size, leaf, p, r);

	if (rc != 0)
		return rc;
	return memcmp(r, root, MERKLE_HASH_BYTES) == 0 ? 0 : LG_EMISMATCH;
}

int merkle_verify_consistency(uint64_t m, uint64_t n, const uint8_t *root1,
			      const uint8_t *root2,
			      const struct merkle_proof *p)
{
	uint8_t fr[MERKLE_HASH_BYTES], sr[MERKLE_HASH_BYTES];
	const uint8_t *first;
	uint64_t fn, sn;
	size_t i = 0;

	if (m > n)
		return LG_EINVAL;
	if (m == n)
		return p->n == 0 && memcmp(root1, root2, MERKLE_HASH_BYTES) == 0
			       ? 0
			       : LG_EMISMATCH;
	if (m == 0)
		return p->n == 0 ? 0 : LG_EINVAL;
	if (p->n == 0)
		return LG_EINVAL;
	/* A first size that is a power of two: its root is the first hash. */
	if ((m & (m - 1)) == 0)
		first = root1;
	else
		first = p->hash[i++];
	fn = m - 1;
	sn = n - 1;
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	memcpy(fr, first, MERKLE_HASH_BYTES);
	memcpy(sr, first, MERKLE_HASH_BYTES);
	for (; i < p->n; i++) {
		if (sn == 0)
			return LG_EINVAL;
		if ((fn & 1) || fn == sn) {
			model__merkle_node_hash(p->hash[i], fr, fr);
			model__merkle_node_hash(p->hash[i], sr, sr);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			model__merkle_node_hash(sr, p->hash[i], sr);
		}
		fn >>= 1;
		sn >>= 1;
	}
	if (sn != 0)
		return LG_EINVAL;
	return memcmp(fr, root1, MERKLE_HASH_BYTES) == 0 &&
		       memcmp(sr, root2, MERKLE_HASH_BYTES) == 0
		       ? 0
		       : LG_EMISMATCH;
}
