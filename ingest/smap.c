/*
 * Small containers of the engine: a string-keyed hash map and an arena for
 * the strings of pending events (memory comes from model's lg_xmalloc
 * family, which aborts when it runs out).
 *
 * The map stores only pointers and reads each value's key through a
 * callback, so that a cached object carries its key once. Deletion shifts
 * the following entries back instead of leaving tombstones: a long stream
 * of creates and deletes must not slow lookups down or grow the table.
 */
#include "ingest/ingest_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a; never 0, which marks an empty slot. */
uint64_t ingest__hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

void ingest__smap_init(struct smap *m, smap_key_fn *key)
{
	memset(m, 0, sizeof(*m));
	m->key = key;
}

void ingest__smap_release(struct smap *m)
{
	free(m->hashes);
	free(m->vals);
	m->hashes = NULL;
	m->vals = NULL;
	m->cap = m->n = 0;
}

void *ingest__smap_getn(const struct smap *m, const char *key, size_t len)
{
	uint64_t h;

	if (m->n == 0)
		return NULL;
	h = ingest__hash(key, len);
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const char *k;

		if (m->hashes[i] == 0)
			return NULL;
		if (m->hashes[i] != h)
			continue;
		k = m->key(m->vals[i]);
		if (strncmp(k, key, len) == 0 && k[len] == '\0')
			return m->vals[i];
	}
}

void *ingest__smap_get(const struct smap *m, const char *key)
{
	return ingest__smap_getn(m, key, strlen(key));
}

/* Every entry of v's probe sequence is passed on the way to the free slot:
 * the precondition of ingest__smap_put (the key is not in the map yet) costs a
 * string compare only on a full hash match. */
static void put_raw(struct smap *m, uint64_t h, void *v)
{
	size_t i = h & (m->cap - 1);

	while (m->hashes[i] != 0) {
		LG_ASSERT(m->hashes[i] != h ||
			  strcmp(m->key(m->vals[i]), m->key(v)) != 0);
		i = (i + 1) & (m->cap - 1);
	}
	m->hashes[i] = h;
	m->vals[i] = v;
}

static void grow(struct smap *m)
{
	size_t old = m->cap;
	uint64_t *hs = m->hashes;
	void **vs = m->vals;

	m->cap = old ? 2 * old : 16;
	m->hashes = lg_xcalloc(m->cap, sizeof(*m->hashes));
	m->vals = lg_xcalloc(m->cap, sizeof(*m->vals));
	for (size_t i = 0; i < old; i++)
		if (hs[i] != 0)
			put_raw(m, hs[i], vs[i]);
	free(hs);
	free(vs);
}

void ingest__smap_put(struct smap *m, void *v)
{
	const char *k = m->key(v);

	/* At most 3/4 full, so that probes stay short. */
	if (4 * (m->n + 1) > 3 * m->cap)
		grow(m);
	put_raw(m, ingest__hash(k, strlen(k)), v);
	m->n++;
}

void ingest__smap_del(struct smap *m, const void *v)
{
	const char *k = m->key(v);
	size_t mask = m->cap - 1, i, j;

	if (m->n == 0)
		return;
	i = ingest__hash(k, strlen(k)) & mask;
	while (m->hashes[i] != 0 && m->vals[i] != v)
		i = (i + 1) & mask;
	if (m->hashes[i] == 0)
		return;
	/* Backward shift: move every later entry of the cluster that may
	 * move into the hole, so that no lookup ever stops early. */
	for (j = (i + 1) & mask; m->hashes[j] != 0; j = (j + 1) & mask) {
		size_t home = m->hashes[j] & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->hashes[i] = m->hashes[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->hashes[i] = 0;
	m->vals[i] = NULL;
	m->n--;
}

struct kv {
	const char *k;
	void *v;
};

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}

void **ingest__smap_sorted(const struct smap *m, size_t *n)
{
	struct kv *kv;
	void **out;
	size_t k = 0;

	*n = 0;
	if (m->n == 0)
		return NULL;
	kv = lg_xmalloc(m->n * sizeof(*kv));
	for (size_t i = 0; i < m->cap; i++)
		if (m->hashes[i] != 0)
			kv[k++] = (struct kv){m->key(m->vals[i]), m->vals[i]};
	qsort(kv, k, sizeof(*kv), by_key);
	out = lg_xmalloc(k * sizeof(*out));
	for (size_t i = 0; i < k; i++)
		out[i] = kv[i].v;
	free(kv);
	*n = k;
	return out;
}

/* ---------------------------------------------------------------------- */
/* Arena */

#define ABLOCK_BYTES (64u << 10)

struct ablock {
	struct ablock *next;
	size_t used, cap;
	char data[];
};

void ingest__arena_init(struct arena *a)
{
	a->head = NULL;
}

char *ingest__arena_strdup(struct arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	struct ablock *b = a->head;
	char *p;

	if (b == NULL || b->cap - b->used < n) {
		size_t cap = n > ABLOCK_BYTES ? n : ABLOCK_BYTES;

		b = lg_xmalloc(sizeof(*b) + cap);
		b->used = 0;
		b->cap = cap;
		b->next = a->head;
		a->head = b;
	}
	LG_ASSERT(b->cap - b->used >= n);
	p = b->data + b->used;
	memcpy(p, s, n);
	b->used += n;
	return p;
}

/* Keeps the newest block for the next batch and frees the rest. */
void ingest__arena_reset(struct arena *a)
{
	struct ablock *b = a->head;

	if (b == NULL)
		return;
	while (b->next != NULL) {
		struct ablock *n = b->next->next;

		free(b->next);
		b->next = n;
	}
	b->used = 0;
}

void ingest__arena_release(struct arena *a)
{
	while (a->head != NULL) {
		struct ablock *n = a->head->next;

		free(a->head);
		a->head = n;
	}
}
