/*
 * Checkpoint bytes: the whole state as one canonical, versioned byte string.
 *
 * verify compares a replayed state with a stored checkpoint byte for byte, so
 * the bytes must be a function of the state's content alone: records are
 * written in sorted order, per-class entries that are all zero are left out,
 * and everything that can be derived (own and subtree totals, per-node
 * allocation, tree links, holder counts, the table's class ids) is left out
 * and recomputed on decode. Decoding is strict in the same way: a byte string
 * it accepts is exactly what state_encode writes for the state it builds
 * (minimal varints, sorted unique records, no zero entries, canonical class
 * JSON), so one state has one spelling and a flipped byte cannot hide.
 *
 * Format, version 1. uv: unsigned LEB128; sv: zigzag LEB128; str: uv length,
 * then the bytes (no NUL); u8: one byte.
 *
 *   state    "GLST" version:u8 header names table nodes spaces
 *   header   seq:uv time_ns:sv horizon_ns:sv n_verdicts:uv n_notes:uv
 *   names    n:uv name:str*n                  interned classes, by id
 *   table    n:uv def:str*n                   canonical class JSON, by name
 *   nodes    n:uv node*n                      by name
 *   node     name:str n:uv (cls:uv capacity:uv serves:u8)*n
 *   spaces   n:uv n_holders:uv ns*n           namespaces by name
 *   ns       name:str flags:u8 budgets raw bills holders
 *   budgets  n:uv (key:str value:uv)*n        by key
 *   raw      n:uv resource:str*n              sorted
 *   bills    n:uv (cls:uv reserved_ms:uv allocated_ms:uv since_ms:sv)*n
 *   holders  n:uv holder*n                    by (kind, name)
 *   holder   kind:u8 name:str uid:str n:uv unit*n
 *   unit     cls:uv reserved:uv allocated:uv [node:uv if allocated > 0]
 *
 * Version 2 is version 1 followed by the holds (DESIGN 3.7), written for a
 * state whose log has a HOLDS event (a state that never had one is written
 * as version 1, byte for byte what it was before holds):
 *
 *   holds    ttl_ms:uv made:uv ended:uv*5 n:uv hold*n   by (ns, kind, name)
 *   hold     ns:str kind:u8 name:str verdict_id:uv expires_ns:sv
 *            n:uv (cls:uv units:uv)*n
 *
 * A hold's namespace is one of the spaces; its held totals are derived.
 *
 * flags bit 0: the tenant node exists. Per-class lists ascend by class id.
 * A unit's node is 0 for none, else 1 + the node's index in nodes. n_holders
 * is the sum of the holder counts; it lets decode size the holder table once.
 */
#include "model/model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_MAGIC	 "GLST"
#define SC_MAGIC_LEN	 4
#define SC_VERSION	 1
#define SC_VERSION_HOLDS 2 /* version 1 and the holds */
#define SC_HEADER_LEN	 (SC_MAGIC_LEN + 1)

/* The bounds model/event.c puts on what an event may carry. */
#define RESOURCE_NAME_MAX (DNS1123_SUBDOMAIN_MAX + 1 + 63)
#define UID_MAX		  128

/* The fewest bytes each record takes: a count larger than the bytes left
 * divided by this is corrupt, so no count can make decode allocate more
 * than the input justifies. */
enum {
	MIN_NAME = 2, /* a string of one byte */
	MIN_NODE = 3,
	MIN_ENTRY = 3, /* cls, value, one more byte */
	MIN_NS = 7,
	MIN_BILL = 4,
	MIN_HOLDER = 8,
};

/* ---------------------------------------------------------------------- */
/* Pointer -> index maps, for node references and the recount. */

struct pmap {
	size_t mask;
	const void **keys;
	size_t *idx;
};

static size_t pmap_slot(const struct pmap *m, const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;
	size_t i = (size_t)(h ^ (h >> 32)) & m->mask;

	while (m->keys[i] != NULL && m->keys[i] != p)
		i = (i + 1) & m->mask;
	return i;
}

static void pmap_init(struct pmap *m, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	m->mask = cap - 1;
	m->keys = lg_xcalloc(cap, sizeof(*m->keys));
	m->idx = lg_xcalloc(cap, sizeof(*m->idx));
}

static void pmap_put(struct pmap *m, const void *p, size_t i)
{
	size_t s = pmap_slot(m, p);

	m->keys[s] = p;
	m->idx[s] = i;
}

/* SIZE_MAX when p is not in m. */
static size_t pmap_get(const struct pmap *m, const void *p)
{
	size_t s = pmap_slot(m, p);

	return m->keys[s] == p ? m->idx[s] : SIZE_MAX;
}

static void pmap_release(struct pmap *m)
{
	free(m->keys);
	free(m->idx);
}

/* ---------------------------------------------------------------------- */
/* Writing */

/* The bound of a state's encoding: the ledger's default map (1 TiB), which
 * no checkpoint of a larger state would fit; the state itself is bounded
 * by the objects alive. The writers add unchecked (a refusal sticks) and
 * state_encode tests once. */
#define STATE_ENCODE_MAX_BYTES ((size_t)1 << 40)

static void w_u8(struct lg_buf *w, uint8_t b)
{
	lg_buf_addc(w, (char)b);
}

static void w_uv(struct lg_buf *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (uint8_t)v;
	lg_buf_add(w, b, n);
}

/* Zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... */
static void w_sv(struct lg_buf *w, int64_t v)
{
	uint64_t u = (uint64_t)v << 1;

	w_uv(w, v < 0 ? ~u : u);
}

static void w_bytes(struct lg_buf *w, const void *p, size_t n)
{
	w_uv(w, n);
	lg_buf_add(w, p, n);
}

static void w_str(struct lg_buf *w, const char *s)
{
	w_bytes(w, s, strlen(s));
}

static void enc_header(struct lg_buf *w, const state_t *st)
{
	lg_buf_add(w, SC_MAGIC, SC_MAGIC_LEN);
	w_u8(w, st->holds.ever ? SC_VERSION_HOLDS : SC_VERSION);
	w_uv(w, st->seq);
	w_sv(w, st->time_ns);
	w_sv(w, st->horizon_ns);
	w_uv(w, st->n_verdicts);
	w_uv(w, st->n_notes);
}

static int enc_classes(struct lg_buf *w, const state_t *st)
{
	w_uv(w, st->n_cls);
	for (uint32_t i = 0; i < st->n_cls; i++)
		w_str(w, st->cls_names[i]);
	w_uv(w, st->table.n);
	for (size_t i = 0; i < st->table.n; i++) {
		json_t *v = gpu_class_to_json(&st->table.classes[i]);
		char *s = v ? json_canonical(v) : NULL;

		json_decref(v);
		/* A class is plain JSON, and jansson aborts when out of
		 * memory: nothing here can fail. */
		LG_ASSERT(s != NULL);
		w_str(w, s);
		free(s);
	}
	return 0;
}

static void enc_nodes(struct lg_buf *w, const state_t *st,
		      struct noderec *const *nodes, size_t n)
{
	w_uv(w, n);
	for (size_t i = 0; i < n; i++) {
		const struct noderec *nd = nodes[i];
		uint32_t k = 0;

		w_str(w, nd->name);
		for (uint32_t c = 0; c < st->n_cls; c++)
			k += nd->capacity[c] != 0 || nd->serves[c];
		w_uv(w, k);
		for (uint32_t c = 0; c < st->n_cls; c++) {
			if (nd->capacity[c] == 0 && !nd->serves[c])
				continue;
			w_uv(w, c);
			w_uv(w, (uint64_t)nd->capacity[c]);
			w_u8(w, nd->serves[c] ? 1 : 0);
		}
	}
}

static bool bill_zero(const struct bill *b)
{
	return b->cum_reserved_ms == 0 && b->cum_allocated_ms == 0 &&
	       b->since_ms == 0;
}

/* Everything of a namespace but its holders. */
static void enc_ns(struct lg_buf *w, const state_t *st, const struct nsrec *ns)
{
	uint32_t k = 0;

	w_str(w, ns->name);
	w_u8(w, ns->node ? 1 : 0);
	w_uv(w, ns->n_budgets);
	for (size_t i = 0; i < ns->n_budgets; i++) {
		w_str(w, ns->budgets[i].key);
		w_uv(w, (uint64_t)ns->budgets[i].value);
	}
	w_uv(w, ns->n_raw);
	for (size_t i = 0; i < ns->n_raw; i++)
		w_str(w, ns->raw[i]);
	for (uint32_t c = 0; c < st->n_cls; c++)
		k += !bill_zero(&ns->bill[c]);
	w_uv(w, k);
	for (uint32_t c = 0; c < st->n_cls; c++) {
		const struct bill *b = &ns->bill[c];

		if (bill_zero(b))
			continue;
		w_uv(w, c);
		w_uv(w, (uint64_t)b->cum_reserved_ms);
		w_uv(w, (uint64_t)b->cum_allocated_ms);
		w_sv(w, b->since_ms);
	}
}

/* A node a holder's units point at is always in the node table; LG_ECORRUPT
 * if the state says otherwise. */
static int enc_holder(struct lg_buf *w, const struct holder *h,
		      const struct pmap *nodes)
{
	w_u8(w, h->kind);
	w_str(w, holder_name(h));
	w_str(w, holder_uid(h));
	w_uv(w, h->n);
	for (uint32_t k = 0; k < h->n; k++) {
		const struct hunits *u = &holder_u(h)[k];
		size_t at = 0;

		w_uv(w, u->cls);
		w_uv(w, (uint64_t)u->reserved);
		w_uv(w, (uint64_t)u->allocated);
		if (u->allocated <= 0)
			continue;
		if (u->node != NULL) {
			at = pmap_get(nodes, u->node);
			if (at == SIZE_MAX)
				return LG_ECORRUPT;
			at++;
		}
		w_uv(w, at);
	}
	return 0;
}

/* Holders in checkpoint order: by namespace name, kind, name. Sorting a
 * million holders by pointer chases every comparison into the heap; a key
 * with the namespace's rank and the first 16 bytes of the name settles
 * almost all of them without leaving the array. */
struct hsort {
	uint32_t rank; /* the namespace's index in name order */
	uint32_t kind;
	uint64_t prefix[2]; /* name bytes, big-endian, NUL-padded */
	const struct holder *h;
};

static int hsort_cmp(const void *a, const void *b)
{
	const struct hsort *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	for (int i = 0; i < 2; i++)
		if (x->prefix[i] != y->prefix[i])
			return x->prefix[i] < y->prefix[i] ? -1 : 1;
	return strcmp(holder_name(x->h), holder_name(y->h));
}

static void hsort_key(struct hsort *k, const struct holder *h, size_t rank)
{
	const unsigned char *s = (const unsigned char *)holder_name(h);
	bool end = false;

	k->rank = (uint32_t)rank;
	k->kind = h->kind;
	k->h = h;
	for (int i = 0; i < 16; i++) {
		end = end || s[i] == '\0';
		k->prefix[i / 8] = k->prefix[i / 8] << 8 | (end ? 0 : s[i]);
	}
}

/* NULL when a holder's namespace is not among spaces. */
static struct hsort *holders_sorted(const state_t *st,
				    struct nsrec *const *spaces, size_t n_ns)
{
	const struct ptab *t = &st->holder_index;
	struct hsort *v = lg_xcalloc(t->n + 1, sizeof(*v));
	struct pmap ranks;
	size_t k = 0;

	pmap_init(&ranks, n_ns);
	for (size_t i = 0; i < n_ns; i++)
		pmap_put(&ranks, spaces[i], i);
	for (size_t i = 0; i < t->cap && k < t->n; i++) {
		const struct holder *h = t->vals[i];
		size_t rank;

		if (t->hashes[i] == 0)
			continue;
		rank = pmap_get(&ranks, h->ns);
		if (rank == SIZE_MAX || rank > UINT32_MAX) {
			free(v);
			v = NULL;
			break;
		}
		hsort_key(&v[k++], h, rank);
	}
	pmap_release(&ranks);
	if (v != NULL)
		qsort(v, k, sizeof(*v), hsort_cmp);
	return v;
}

static int enc_spaces(struct lg_buf *w, const state_t *st,
		      const struct pmap *nodes)
{
	size_t n_ns, n_h = st->holder_index.n, k = 0;
	struct nsrec **ns = model__state_ns_sorted(st, &n_ns);
	struct hsort *h = holders_sorted(st, ns, n_ns);
	int rc = h ? 0 : LG_ECORRUPT;

	w_uv(w, n_ns);
	w_uv(w, n_h);
	for (size_t i = 0; i < n_ns && rc == 0; i++) {
		size_t end = k;

		enc_ns(w, st, ns[i]);
		while (end < n_h && h[end].rank == i)
			end++;
		w_uv(w, end - k);
		for (; k < end && rc == 0; k++)
			rc = enc_holder(w, h[k].h, nodes);
	}
	free(ns);
	free(h);
	return rc;
}

static void enc_holds(struct lg_buf *w, const state_t *st)
{
	size_t n;
	struct hold **v = model__holds_sorted(st, &n);

	w_uv(w, (uint64_t)st->holds.ttl_ms);
	w_uv(w, st->holds.made);
	for (int i = 0; i < HOLD_END_MAX; i++)
		w_uv(w, st->holds.ended[i]);
	w_uv(w, n);
	for (size_t i = 0; i < n; i++) {
		const struct hold *h = v[i];

		w_str(w, h->ns->name);
		w_u8(w, h->kind);
		w_str(w, hold_name(h));
		w_uv(w, h->verdict_id);
		w_sv(w, h->expires_ns);
		w_uv(w, h->n);
		for (uint32_t k = 0; k < h->n; k++) {
			w_uv(w, h->u[k].cls);
			w_uv(w, h->u[k].units);
		}
	}
	free(v);
}

int state_encode(const state_t *st, uint8_t **buf, size_t *len)
{
	struct lg_buf w;
	size_t n_nodes;
	struct noderec **nodes = model__state_nodes_sorted(st, &n_nodes);
	struct pmap map;
	int rc;

	*buf = NULL;
	*len = 0;
	lg_buf_init(&w, STATE_ENCODE_MAX_BYTES);
	pmap_init(&map, n_nodes);
	for (size_t i = 0; i < n_nodes; i++)
		pmap_put(&map, nodes[i], i);
	enc_header(&w, st);
	rc = enc_classes(&w, st);
	if (rc == 0) {
		enc_nodes(&w, st, nodes, n_nodes);
		rc = enc_spaces(&w, st, &map);
	}
	if (rc == 0 && st->holds.ever)
		enc_holds(&w, st);
	pmap_release(&map);
	free(nodes);
	if (rc == 0 && lg_buf_failed(&w))
		rc = LG_ELIMIT;
	if (rc != 0) {
		lg_buf_release(&w);
		return rc;
	}
	*buf = (uint8_t *)lg_buf_detach(&w, len);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Reading. Every read checks the bytes left; the first failure is kept
 * (with the offset of the field it was found in) and makes every later read
 * a no-op returning zero, so that callers test once per record. */

struct rd {
	const uint8_t *start, *p, *end;
	const uint8_t *at; /* start of the field read last */
	struct lg_error *err;
	int rc;
};

static void rd_fail(struct rd *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rd_fail(struct rd *r, const char *fmt, ...)
{
	char msg[LG_ERRMSG_MAX];
	va_list ap;

	if (r->rc != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->rc = lg_error_set(r->err, LG_ECORRUPT, "checkpoint: %s at byte %zu",
			     msg, (size_t)(r->at - r->start));
}

static size_t rd_left(const struct rd *r)
{
	return (size_t)(r->end - r->p);
}

static uint8_t rd_u8(struct rd *r, const char *what)
{
	r->at = r->p;
	if (r->rc != 0)
		return 0;
	if (r->p == r->end) {
		rd_fail(r, "%s: truncated", what);
		return 0;
	}
	return *r->p++;
}

/* Minimal LEB128 only: an encoding with a redundant last byte is corrupt. */
static uint64_t rd_uv(struct rd *r, const char *what)
{
	uint64_t v = 0;

	r->at = r->p;
	if (r->rc != 0)
		return 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t b;

		if (r->p == r->end) {
			rd_fail(r, "%s: truncated", what);
			return 0;
		}
		b = *r->p++;
		if (shift == 63 && b > 1) {
			rd_fail(r, "%s: varint overflows 64 bits", what);
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (b & 0x80)
			continue;
		if (b == 0 && shift > 0) {
			rd_fail(r, "%s: overlong varint", what);
			return 0;
		}
		return v;
	}
}

/* A non-negative int64. */
static int64_t rd_int(struct rd *r, const char *what)
{
	uint64_t v = rd_uv(r, what);

	if (v > INT64_MAX) {
		rd_fail(r, "%s: %llu is out of range", what,
			(unsigned long long)v);
		return 0;
	}
	return (int64_t)v;
}

static int64_t rd_sv(struct rd *r, const char *what)
{
	uint64_t v = rd_uv(r, what);

	return (v & 1) ? -(int64_t)(v >> 1) - 1 : (int64_t)(v >> 1);
}

/* A count of records of at least min bytes each. */
static size_t rd_count(struct rd *r, const char *what, size_t min)
{
	uint64_t v = rd_uv(r, what);

	if (v > rd_left(r) / min) {
		rd_fail(r, "%s: count %llu exceeds the %zu bytes left", what,
			(unsigned long long)v, rd_left(r));
		return 0;
	}
	return (size_t)v;
}

/* A string of at most max bytes, none of them NUL; borrowed from the input. */
static const char *rd_str(struct rd *r, const char *what, size_t max,
			  size_t *len)
{
	uint64_t n = rd_uv(r, what);
	const char *s = (const char *)r->p;

	*len = 0;
	if (r->rc != 0)
		return NULL;
	if (n > max) {
		rd_fail(r, "%s: length %llu above %zu", what,
			(unsigned long long)n, max);
		return NULL;
	}
	if (n > rd_left(r)) {
		rd_fail(r, "%s: truncated", what);
		return NULL;
	}
	if (memchr(s, '\0', (size_t)n) != NULL) {
		rd_fail(r, "%s: contains a NUL byte", what);
		return NULL;
	}
	r->p += n;
	*len = (size_t)n;
	return s;
}

static char *dupn(const char *s, size_t len)
{
	char *d = lg_xmalloc(len + 1);

	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

/* strcmp(prev, s[0..len)) for a NUL-free s. */
static int cmp_prev(const char *prev, const char *s, size_t len)
{
	size_t plen = strlen(prev);
	int c = memcmp(prev, s, plen < len ? plen : len);

	return c ? c : (plen > len) - (plen < len);
}

static void add_checked(struct rd *r, int64_t *acc, int64_t v, const char *what,
			const char *name)
{
	if (__builtin_add_overflow(*acc, v, acc))
		rd_fail(r, "%s of %s overflows", what, name);
}

/* ---------------------------------------------------------------------- */
/* Decoding, section by section. */

struct dec {
	struct rd r;
	state_t *st;
	struct noderec **nodes; /* in checkpoint order, for references */
	size_t n_nodes;
	struct nsrec **spaces; /* in checkpoint order */
	size_t n_spaces;
	struct hold **holds; /* version 2: inserted once the tree is linked */
	size_t n_holds;
};

/* A class id, ascending from *next. */
static uint32_t rd_cls(struct dec *d, uint32_t *next)
{
	uint64_t v = rd_uv(&d->r, "class id");

	if (d->r.rc != 0)
		return 0;
	if (v >= d->st->n_cls || v < *next) {
		rd_fail(&d->r, "class id %llu %s", (unsigned long long)v,
			v < *next ? "out of order" : "out of range");
		return 0;
	}
	*next = (uint32_t)v + 1;
	return (uint32_t)v;
}

static void dec_header(struct dec *d)
{
	struct rd *r = &d->r;
	state_t *st = d->st;

	st->seq = rd_uv(r, "seq");
	st->time_ns = rd_sv(r, "time");
	st->horizon_ns = rd_sv(r, "horizon");
	if (st->horizon_ns > st->time_ns)
		rd_fail(r, "horizon after time");
	st->n_verdicts = rd_uv(r, "verdict count");
	st->n_notes = rd_uv(r, "note count");
	if (st->n_verdicts > st->seq || st->n_notes > st->seq - st->n_verdicts)
		rd_fail(r, "more verdicts and notes than events");
}

static void dec_names(struct dec *d)
{
	struct rd *r = &d->r;
	state_t *st = d->st;
	size_t n = rd_count(r, "class names", MIN_NAME);

	if (r->rc != 0)
		return;
	if (n > UINT32_MAX / 2) {
		rd_fail(r, "%zu class names", n);
		return;
	}
	st->cls_names = lg_xcalloc(n + 1, sizeof(char *));
	st->cls_cap = (uint32_t)n;
	model__ptab_reserve(&st->cls_index, n);
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		size_t len;
		const char *s =
			rd_str(r, "class name", DNS1123_LABEL_MAX, &len);
		char *name;

		if (r->rc != 0)
			break;
		/* NODE_EXISTS_CLASS ("") is interned for node existence. */
		if (len != 0 && !dns1123_label(s, len)) {
			rd_fail(r, "class name is not a DNS-1123 label");
			break;
		}
		name = dupn(s, len);
		if (model__state_cls_id(st, name) >= 0) {
			rd_fail(r, "class name %s repeats", name);
			free(name);
			break;
		}
		st->cls_names[st->n_cls] = name;
		model__ptab_insert(&st->cls_index, model__hash_str(name),
				   (void *)(uintptr_t)(st->n_cls + 1));
		st->n_cls++;
	}
}

/* One table entry: valid, canonical, after prev, and an interned name. */
static void dec_class(struct dec *d, struct gpu_class *c, const char *prev)
{
	struct rd *r = &d->r;
	size_t len;
	const char *s = rd_str(r, "class definition", SIZE_MAX, &len);
	json_t *v;
	char *canon;

	if (r->rc != 0)
		return;
	v = json_loadb(s, len, 0, NULL);
	if (v == NULL || model__gpu_class_parse(c, v, NULL) != 0) {
		json_decref(v);
		rd_fail(r, "class definition is not a valid class");
		return;
	}
	json_decref(v);
	v = gpu_class_to_json(c);
	canon = v ? json_canonical(v) : NULL;
	json_decref(v);
	if (canon == NULL || strlen(canon) != len || memcmp(canon, s, len))
		rd_fail(r, "class %s: definition is not canonical", c->name);
	else if (prev != NULL && strcmp(prev, c->name) >= 0)
		rd_fail(r, "class %s: not after %s", c->name, prev);
	else if (model__state_cls_id(d->st, c->name) < 0)
		rd_fail(r, "class %s: not an interned name", c->name);
	free(canon);
}

static void dec_table(struct dec *d)
{
	struct rd *r = &d->r;
	state_t *st = d->st;
	size_t n = rd_count(r, "classes", MIN_NAME);

	if (r->rc != 0)
		return;
	if (n > HOLDER_MAX_CLASSES) {
		rd_fail(r, "%zu classes, more than %d", n, HOLDER_MAX_CLASSES);
		return;
	}
	st->table.classes = lg_xcalloc(n + 1, sizeof(*st->table.classes));
	st->table_ids = lg_xcalloc(n + 1, sizeof(*st->table_ids));
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		struct gpu_class *c = &st->table.classes[i];

		dec_class(d, c, i ? st->table.classes[i - 1].name : NULL);
		if (c->name == NULL)
			break; /* not parsed: nothing to release */
		st->table.n++;
		st->table_ids[i] = (uint32_t)model__state_cls_id(st, c->name);
	}
}

static void dec_node_classes(struct dec *d, struct noderec *nd)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "node classes", MIN_ENTRY);
	uint32_t next = 0;

	for (size_t i = 0; i < n && r->rc == 0; i++) {
		uint32_t c = rd_cls(d, &next);
		int64_t capacity = rd_int(r, "capacity");
		uint8_t serves = rd_u8(r, "serves");

		if (r->rc != 0)
			break;
		if (serves > 1)
			rd_fail(r, "node %s: serves is %u", nd->name, serves);
		else if (capacity == 0 && serves == 0)
			rd_fail(r, "node %s: empty entry for class %s",
				nd->name, d->st->cls_names[c]);
		if (r->rc != 0)
			break;
		nd->capacity[c] = capacity;
		nd->serves[c] = serves != 0;
	}
}

static struct noderec *dec_node(struct dec *d, const char *prev)
{
	struct rd *r = &d->r;
	state_t *st = d->st;
	size_t len;
	const char *s = rd_str(r, "node name", DNS1123_SUBDOMAIN_MAX, &len);
	struct noderec *nd;

	if (r->rc != 0)
		return NULL;
	if (!dns1123_subdomain(s, len))
		rd_fail(r, "node name is not a DNS-1123 subdomain");
	else if (prev != NULL && cmp_prev(prev, s, len) >= 0)
		rd_fail(r, "node %.*s: not after %s", (int)len, s, prev);
	if (r->rc != 0)
		return NULL;
	nd = lg_xcalloc(1, sizeof(*nd));
	nd->name = dupn(s, len);
	nd->capacity = lg_xcalloc(st->cls_cap, sizeof(*nd->capacity));
	nd->allocated = lg_xcalloc(st->cls_cap, sizeof(*nd->allocated));
	nd->serves = lg_xcalloc(st->cls_cap, sizeof(*nd->serves));
	model__ptab_insert(&st->node_index, model__hash_str(nd->name), nd);
	dec_node_classes(d, nd);
	return r->rc == 0 ? nd : NULL;
}

static void dec_nodes(struct dec *d)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "nodes", MIN_NODE);

	if (r->rc != 0)
		return;
	d->nodes = lg_xcalloc(n + 1, sizeof(*d->nodes));
	model__ptab_reserve(&d->st->node_index, n);
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		struct noderec *nd =
			dec_node(d, i ? d->nodes[i - 1]->name : NULL);

		if (nd != NULL)
			d->nodes[d->n_nodes++] = nd;
	}
}

/* Budgets and raw keys: only a tenant node declares them (TENANT_GONE
 * refuses a tenant that still has any). */
static void dec_budgets(struct dec *d, struct nsrec *ns)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "budgets", MIN_ENTRY);

	if (n > 0 && !ns->node)
		rd_fail(r, "namespace %s: budgets without a tenant node",
			ns->name);
	if (r->rc != 0)
		return;
	ns->budgets = lg_xcalloc(n + 1, sizeof(*ns->budgets));
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		size_t len;
		const char *s =
			rd_str(r, "budget key", RESOURCE_NAME_MAX, &len);
		struct budget *b = &ns->budgets[i];
		enum key_kind k;

		if (r->rc != 0)
			break;
		b->key = dupn(s, len);
		ns->n_budgets++;
		k = model__budget_key_classify(b->key, NULL, NULL, NULL, NULL);
		if (k != KEY_CLASS && k != KEY_TOTAL)
			rd_fail(r, "namespace %s: %s is not a budget key",
				ns->name, b->key);
		else if (i > 0 && strcmp(b[-1].key, b->key) >= 0)
			rd_fail(r, "namespace %s: budget %s not after %s",
				ns->name, b->key, b[-1].key);
		b->value = rd_int(r, "budget value");
	}
}

static void dec_raw(struct dec *d, struct nsrec *ns)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "raw keys", MIN_NAME);

	if (n > 0 && !ns->node)
		rd_fail(r, "namespace %s: raw keys without a tenant node",
			ns->name);
	if (r->rc != 0)
		return;
	ns->raw = lg_xcalloc(n + 1, sizeof(*ns->raw));
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		size_t len;
		const char *s = rd_str(r, "raw key", RESOURCE_NAME_MAX, &len);

		if (r->rc != 0)
			break;
		if (len == 0)
			rd_fail(r, "namespace %s: empty raw key", ns->name);
		else if (i > 0 && cmp_prev(ns->raw[i - 1], s, len) >= 0)
			rd_fail(r, "namespace %s: raw key %.*s not after %s",
				ns->name, (int)len, s, ns->raw[i - 1]);
		else
			ns->raw[ns->n_raw++] = dupn(s, len);
	}
}

static void dec_bills(struct dec *d, struct nsrec *ns)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "billing entries", MIN_BILL);
	uint32_t next = 0;

	for (size_t i = 0; i < n && r->rc == 0; i++) {
		uint32_t c = rd_cls(d, &next);
		struct bill b;

		b.cum_reserved_ms = rd_int(r, "reserved device-ms");
		b.cum_allocated_ms = rd_int(r, "allocated device-ms");
		b.since_ms = rd_sv(r, "billed up to");
		if (r->rc == 0 && bill_zero(&b))
			rd_fail(r, "namespace %s: empty billing entry for %s",
				ns->name, d->st->cls_names[c]);
		if (r->rc == 0)
			ns->bill[c] = b;
	}
}

/* Adds a holder's units of one class to what they are derived into. */
static void add_units(struct dec *d, struct nsrec *ns, const struct hunits *u)
{
	add_checked(&d->r, &ns->reserved[u->cls], u->reserved, "reserved units",
		    ns->name);
	add_checked(&d->r, &ns->allocated[u->cls], u->allocated,
		    "allocated units", ns->name);
	if (u->node != NULL)
		add_checked(&d->r, &u->node->allocated[u->cls], u->allocated,
			    "allocated units", u->node->name);
}

static void dec_units(struct dec *d, struct holder *h)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "holder units", MIN_ENTRY);
	uint32_t next = 0, got = 0;
	struct hunits *units;

	if (r->rc == 0 && n == 0)
		rd_fail(r, "holder %s/%s holds nothing", h->ns->name,
			holder_name(h));
	if (r->rc != 0)
		return;
	/* The slots are laid out for all n at once (zeroed when out of line,
	 * so that a failure part way leaves them to model__holder_free). */
	if (n > 1)
		h->u.many = lg_xcalloc(n, sizeof(*h->u.many));
	units = n > 1 ? h->u.many : &h->u.one;
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		struct hunits *u = &units[i];
		uint64_t at = 0;

		u->cls = rd_cls(d, &next);
		u->reserved = rd_int(r, "reserved units");
		u->allocated = rd_int(r, "allocated units");
		if (u->allocated > 0)
			at = rd_uv(r, "node index");
		if (r->rc != 0)
			break;
		if (u->reserved == 0 && u->allocated == 0)
			rd_fail(r, "holder %s/%s: no units of %s", h->ns->name,
				holder_name(h), d->st->cls_names[u->cls]);
		else if (at > d->n_nodes)
			rd_fail(r, "holder %s/%s: node index %llu of %zu",
				h->ns->name, holder_name(h),
				(unsigned long long)at, d->n_nodes);
		if (r->rc != 0)
			break;
		u->node = at ? d->nodes[at - 1] : NULL;
		got++;
		add_units(d, h->ns, u);
	}
	h->n = n > 1 ? (uint32_t)n : got;
}

/* Holders of a namespace ascend by (kind, name). */
static int holder_order(const struct holder *prev, unsigned kind, const char *s,
			size_t len)
{
	if ((unsigned)prev->kind != kind)
		return (unsigned)prev->kind < kind ? -1 : 1;
	return cmp_prev(holder_name(prev), s, len);
}

static struct holder *dec_holder(struct dec *d, struct nsrec *ns,
				 const struct holder *prev)
{
	struct rd *r = &d->r;
	unsigned kind = rd_u8(r, "holder kind");
	size_t len, ulen;
	const char *s, *uid;
	struct holder *h;

	if (r->rc == 0 && (kind <= HK_NONE || kind >= HK_MAX))
		rd_fail(r, "holder kind %u", kind);
	s = rd_str(r, "holder name", DNS1123_SUBDOMAIN_MAX, &len);
	if (r->rc == 0 && !dns1123_subdomain(s, len))
		rd_fail(r, "holder name is not a DNS-1123 subdomain");
	if (r->rc == 0 && prev && holder_order(prev, kind, s, len) >= 0)
		rd_fail(r, "holder %s/%.*s: not after %s", ns->name, (int)len,
			s, holder_name(prev));
	uid = rd_str(r, "holder uid", UID_MAX, &ulen);
	if (r->rc != 0)
		return NULL;
	h = model__holder_new((enum holder_kind)kind, ns, s, len, uid, ulen);
	model__ptab_insert(
		&d->st->holder_index,
		model__state_holder_hash(h->kind, ns->name, holder_name(h)), h);
	ns->n_holders++;
	d->st->n_holders++;
	dec_units(d, h);
	return r->rc == 0 ? h : NULL;
}

/* A tenant namespace holds units only while its node exists: growth needs
 * the node, and TENANT_GONE needs the holders gone. */
static void dec_holders(struct dec *d, struct nsrec *ns)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "holders", MIN_HOLDER);
	const struct holder *prev = NULL;

	if (n > 0 && ns->tenant && !ns->node)
		rd_fail(r, "namespace %s: holders without its tenant node",
			ns->name);
	for (size_t i = 0; i < n && r->rc == 0; i++)
		prev = dec_holder(d, ns, prev);
}

static struct nsrec *dec_ns(struct dec *d, const char *prev)
{
	struct rd *r = &d->r;
	uint32_t cap = d->st->cls_cap;
	size_t len;
	const char *s = rd_str(r, "namespace name", DNS1123_LABEL_MAX, &len);
	struct nsrec *ns;
	uint8_t flags;

	if (r->rc == 0 && !dns1123_label(s, len))
		rd_fail(r, "namespace name is not a DNS-1123 label");
	else if (r->rc == 0 && prev != NULL && cmp_prev(prev, s, len) >= 0)
		rd_fail(r, "namespace %.*s: not after %s", (int)len, s, prev);
	if (r->rc != 0)
		return NULL;
	ns = lg_xcalloc(1, sizeof(*ns));
	ns->name = dupn(s, len);
	ns->tenant = ns_is_tenant(ns->name);
	ns->reserved = lg_xcalloc(cap, sizeof(*ns->reserved));
	ns->allocated = lg_xcalloc(cap, sizeof(*ns->allocated));
	ns->sub_reserved = lg_xcalloc(cap, sizeof(*ns->sub_reserved));
	ns->sub_allocated = lg_xcalloc(cap, sizeof(*ns->sub_allocated));
	ns->bill = lg_xcalloc(cap, sizeof(*ns->bill));
	ns->held = lg_xcalloc(cap + 1, sizeof(*ns->held));
	ns->sub_held = lg_xcalloc(cap + 1, sizeof(*ns->sub_held));
	model__ptab_insert(&d->st->ns_index, model__hash_str(ns->name), ns);
	flags = rd_u8(r, "namespace flags");
	if (r->rc == 0 && (flags & ~1u) != 0)
		rd_fail(r, "namespace %s: flags 0x%02x", ns->name, flags);
	ns->node = flags & 1;
	if (r->rc == 0 && ns->node && !ns->tenant)
		rd_fail(r, "namespace %s: a tenant node but not a tenant",
			ns->name);
	dec_budgets(d, ns);
	dec_raw(d, ns);
	dec_bills(d, ns);
	dec_holders(d, ns);
	return r->rc == 0 ? ns : NULL;
}

static void dec_spaces(struct dec *d)
{
	struct rd *r = &d->r;
	size_t n = rd_count(r, "namespaces", MIN_NS);
	size_t n_holders = rd_count(r, "holders", MIN_HOLDER);

	if (r->rc != 0)
		return;
	d->spaces = lg_xcalloc(n + 1, sizeof(*d->spaces));
	model__ptab_reserve(&d->st->ns_index, n);
	model__ptab_reserve(&d->st->holder_index, n_holders);
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		struct nsrec *ns = dec_ns(d, i ? d->spaces[i - 1]->name : NULL);

		if (ns != NULL)
			d->spaces[d->n_spaces++] = ns;
	}
	if (r->rc == 0 && d->st->n_holders != n_holders)
		rd_fail(r, "%zu holders announced, %zu found", n_holders,
			d->st->n_holders);
}

/* ---------------------------------------------------------------------- */
/* Derived data: the tree from the names (a node's parent is ns_parent of
 * its name and must be a node), then subtree totals by walking ancestors. */

static void link_tree(struct dec *d)
{
	state_t *st = d->st;

	for (size_t i = 0; i < d->n_spaces && d->r.rc == 0; i++) {
		struct nsrec *ns = d->spaces[i], *p;
		char name[DNS1123_SUBDOMAIN_MAX + 1];

		if (!ns->node)
			continue;
		if (!ns_parent(ns->name, name)) {
			st->root = ns; /* tenant-root: nodes are tenants */
			continue;
		}
		p = model__state_ns(st, name);
		if (p == NULL || !p->node) {
			rd_fail(&d->r, "tenant %s: parent %s is not a node",
				ns->name, name);
			break;
		}
		ns->parent = p;
		ns->sibling = p->child;
		p->child = ns;
		p->n_children++;
	}
}

static void sum_subtrees(struct dec *d)
{
	uint32_t nc = d->st->n_cls;

	for (size_t i = 0; i < d->n_spaces && d->r.rc == 0; i++) {
		const struct nsrec *ns = d->spaces[i];

		if (!ns->node || ns->n_holders == 0)
			continue;
		for (struct nsrec *a = d->spaces[i]; a && d->r.rc == 0;
		     a = a->parent) {
			for (uint32_t c = 0; c < nc; c++) {
				add_checked(&d->r, &a->sub_reserved[c],
					    ns->reserved[c], "subtree units",
					    a->name);
				add_checked(&d->r, &a->sub_allocated[c],
					    ns->allocated[c], "subtree units",
					    a->name);
				add_checked(&d->r, &a->sub_reserved_total,
					    ns->reserved[c], "subtree total",
					    a->name);
			}
		}
	}
}

/* ---------------------------------------------------------------------- */
/* The recount: what model__state_check proves, in O(holders + namespaces *
 * depth + nodes) instead of its pairwise walks, computed independently of the
 * decoder's running sums (from the hash tables and the tree links). */

struct tally {
	size_t nc;
	int64_t *own, *sub;  /* [n_spaces][2][nc]: reserved, then allocated */
	int64_t *at;	     /* [n_nodes][nc] */
	size_t *held, *kids; /* holders and children per namespace */
	struct pmap spaces, nodes;
};

static int tally_holders(const struct dec *d, struct tally *t)
{
	const struct ptab *hs = &d->st->holder_index;

	for (size_t i = 0; i < hs->cap; i++) {
		const struct holder *h = hs->vals[i];
		size_t s;

		/* The table is in hash order, the holders in memory are not:
		 * fetch a holder ahead, and its units a little less ahead. */
		if (i + 16 < hs->cap && hs->vals[i + 16] != NULL)
			__builtin_prefetch(hs->vals[i + 16]);
		if (i + 8 < hs->cap && hs->vals[i + 8] != NULL)
			__builtin_prefetch(holder_u(hs->vals[i + 8]));
		if (hs->hashes[i] == 0)
			continue;
		s = pmap_get(&t->spaces, h->ns);
		if (s == SIZE_MAX)
			return -1;
		t->held[s]++;
		for (uint32_t k = 0; k < h->n; k++) {
			const struct hunits *u = &holder_u(h)[k];
			size_t nd = u->node ? pmap_get(&t->nodes, u->node) : 0;

			if (nd == SIZE_MAX)
				return -1;
			t->own[(2 * s) * t->nc + u->cls] += u->reserved;
			t->own[(2 * s + 1) * t->nc + u->cls] += u->allocated;
			if (u->node != NULL)
				t->at[nd * t->nc + u->cls] += u->allocated;
		}
	}
	return 0;
}

static int tally_tree(const struct dec *d, struct tally *t)
{
	for (size_t i = 0; i < d->n_spaces; i++) {
		const struct nsrec *ns = d->spaces[i];
		const int64_t *own = &t->own[2 * i * t->nc];

		if (!ns->node)
			continue;
		if (ns->parent != NULL) {
			size_t p = pmap_get(&t->spaces, ns->parent);

			if (p == SIZE_MAX)
				return -1;
			t->kids[p]++;
		}
		for (const struct nsrec *a = ns; a; a = a->parent) {
			size_t s = pmap_get(&t->spaces, a);

			if (s == SIZE_MAX)
				return -1;
			for (size_t c = 0; c < 2 * t->nc; c++)
				t->sub[2 * s * t->nc + c] += own[c];
		}
	}
	return 0;
}

static bool tally_same(const int64_t *want, const int64_t *res,
		       const int64_t *alloc, size_t nc)
{
	return memcmp(want, res, nc * sizeof(*res)) == 0 &&
	       memcmp(want + nc, alloc, nc * sizeof(*alloc)) == 0;
}

/* The first namespace or node whose derived data differs, or NULL. */
static const char *tally_compare(const struct dec *d, const struct tally *t)
{
	size_t nc = t->nc;

	for (size_t i = 0; i < d->n_spaces; i++) {
		const struct nsrec *ns = d->spaces[i];
		int64_t total = 0;

		for (size_t c = 0; c < nc; c++)
			total += ns->sub_reserved[c];
		if (!tally_same(&t->own[2 * i * nc], ns->reserved,
				ns->allocated, nc) ||
		    !tally_same(&t->sub[2 * i * nc], ns->sub_reserved,
				ns->sub_allocated, nc) ||
		    total != ns->sub_reserved_total ||
		    t->held[i] != ns->n_holders || t->kids[i] != ns->n_children)
			return ns->name;
	}
	for (size_t i = 0; i < d->n_nodes; i++)
		if (memcmp(&t->at[i * nc], d->nodes[i]->allocated,
			   nc * sizeof(int64_t)) != 0)
			return d->nodes[i]->name;
	return NULL;
}

static int recount(const struct dec *d, struct lg_error *err)
{
	struct tally t = {.nc = d->st->n_cls};
	const char *bad = NULL;

	t.own = lg_xcalloc(2 * d->n_spaces * t.nc + 1, sizeof(int64_t));
	t.sub = lg_xcalloc(2 * d->n_spaces * t.nc + 1, sizeof(int64_t));
	t.at = lg_xcalloc(d->n_nodes * t.nc + 1, sizeof(int64_t));
	t.held = lg_xcalloc(d->n_spaces + 1, sizeof(size_t));
	t.kids = lg_xcalloc(d->n_spaces + 1, sizeof(size_t));
	pmap_init(&t.spaces, d->n_spaces);
	for (size_t i = 0; i < d->n_spaces; i++)
		pmap_put(&t.spaces, d->spaces[i], i);
	pmap_init(&t.nodes, d->n_nodes);
	for (size_t i = 0; i < d->n_nodes; i++)
		pmap_put(&t.nodes, d->nodes[i], i);
	if (tally_holders(d, &t) != 0 || tally_tree(d, &t) != 0)
		bad = "a record outside the tables";
	else
		bad = tally_compare(d, &t);
	free(t.own);
	free(t.sub);
	free(t.at);
	free(t.held);
	free(t.kids);
	pmap_release(&t.spaces);
	pmap_release(&t.nodes);
	/* Every chain of parents ends at tenant-root: no root, no nodes. */
	for (size_t i = 0; i < d->n_spaces && bad == NULL && !d->st->root; i++)
		if (d->spaces[i]->node)
			bad = d->spaces[i]->name;
	if (bad != NULL)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint: recount of %s differs at byte "
				    "%zu",
				    bad, (size_t)(d->r.end - d->r.start));
	return 0;
}

/* ---------------------------------------------------------------------- */

/* ---------------------------------------------------------------------- */
/* The holds of version 2. */

#define MIN_HOLD 9 /* ns, kind, name, id, expiry, n, one unit */

static int hold_order(const struct hold *p, const struct hold *h)
{
	int c = strcmp(p->ns->name, h->ns->name);

	if (c == 0)
		c = p->kind != h->kind ? (p->kind < h->kind ? -1 : 1) : 0;
	return c ? c : strcmp(hold_name(p), hold_name(h));
}

static struct hold *dec_hold(struct dec *d, const struct hold *prev)
{
	struct rd *r = &d->r;
	struct hold_unit u[HOLDER_MAX_CLASSES];
	size_t len, nlen, n;
	const char *s = rd_str(r, "hold namespace", DNS1123_LABEL_MAX, &len);
	char ns_name[DNS1123_LABEL_MAX + 1], name[DNS1123_SUBDOMAIN_MAX + 1];
	struct nsrec *ns = NULL;
	uint8_t kind;
	const char *nm;
	uint64_t id;
	int64_t expires;
	uint32_t next = 0;
	struct hold *h;

	if (r->rc == 0) {
		memcpy(ns_name, s, len);
		ns_name[len] = '\0';
		ns = model__state_ns(d->st, ns_name);
		if (ns == NULL || !ns->tenant)
			rd_fail(r, "hold: namespace %s is not a tenant's",
				ns_name);
	}
	kind = rd_u8(r, "hold kind");
	if (r->rc == 0 && kind != HK_VMINSTANCE && kind != HK_KUBERNETESNODES)
		rd_fail(r, "hold: kind %u", kind);
	nm = rd_str(r, "hold name", DNS1123_SUBDOMAIN_MAX, &nlen);
	if (r->rc == 0 && !dns1123_subdomain(nm, nlen))
		rd_fail(r, "hold: name is not a DNS-1123 subdomain");
	id = rd_uv(r, "hold verdict id");
	if (r->rc == 0 && (id == 0 || id > d->st->n_verdicts))
		rd_fail(r, "hold: verdict id %llu", (unsigned long long)id);
	expires = rd_sv(r, "hold expiry");
	n = rd_count(r, "hold units", 2);
	if (r->rc == 0 && (n == 0 || n > HOLDER_MAX_CLASSES))
		rd_fail(r, "hold: %zu classes", n);
	for (size_t k = 0; k < n && r->rc == 0; k++) {
		u[k].cls = rd_cls(d, &next);
		uint64_t v = rd_uv(r, "held units");

		if (r->rc == 0 && (v == 0 || v > HOLDER_UNITS_MAX))
			rd_fail(r, "hold: %llu units", (unsigned long long)v);
		u[k].units = (uint32_t)v;
	}
	if (r->rc != 0)
		return NULL;
	memcpy(name, nm, nlen);
	name[nlen] = '\0';
	h = model__hold_new(ns, (enum holder_kind)kind, name, id, expires, u,
			    n);
	if (prev != NULL && hold_order(prev, h) >= 0) {
		rd_fail(r, "hold %s/%s: not after the one before", ns_name,
			name);
		free(h);
		return NULL;
	}
	return h;
}

static void dec_holds(struct dec *d)
{
	struct rd *r = &d->r;
	struct holds *hs = &d->st->holds;
	size_t n;

	hs->ever = true;
	hs->ttl_ms = rd_int(r, "holds TTL");
	if (r->rc == 0 && hs->ttl_ms > HOLDS_TTL_MS_MAX)
		rd_fail(r, "holds TTL %lld", (long long)hs->ttl_ms);
	hs->made = rd_uv(r, "holds made");
	for (int i = 0; i < HOLD_END_MAX; i++)
		hs->ended[i] = rd_uv(r, "holds ended");
	n = rd_count(r, "holds", MIN_HOLD);
	if (r->rc == 0 && n > 0 && hs->ttl_ms == 0)
		rd_fail(r, "holds alive while holds are off");
	if (r->rc != 0)
		return;
	d->holds = lg_xcalloc(n + 1, sizeof(*d->holds));
	for (size_t i = 0; i < n && r->rc == 0; i++) {
		struct hold *h =
			dec_hold(d, i ? d->holds[d->n_holds - 1] : NULL);

		if (h != NULL)
			d->holds[d->n_holds++] = h;
	}
}

/* After the tree is linked: the holds go in, their totals counted. */
static void insert_holds(struct dec *d)
{
	for (size_t i = 0; i < d->n_holds; i++) {
		if (d->r.rc == 0)
			model__holds_insert(d->st, d->holds[i]);
		else
			free(d->holds[i]);
	}
	free(d->holds);
}

static int dec_magic(const uint8_t *buf, size_t len, struct lg_error *err)
{
	if (len < SC_MAGIC_LEN || memcmp(buf, SC_MAGIC, SC_MAGIC_LEN) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint: no \"" SC_MAGIC
				    "\" magic at byte 0");
	if (len < SC_HEADER_LEN)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint: version: truncated at byte %d",
				    SC_MAGIC_LEN);
	if (buf[SC_MAGIC_LEN] != SC_VERSION &&
	    buf[SC_MAGIC_LEN] != SC_VERSION_HOLDS)
		return lg_error_set(err, LG_EVERSION,
				    "checkpoint: version %u, this is version "
				    "%d, at byte %d",
				    buf[SC_MAGIC_LEN], SC_VERSION_HOLDS,
				    SC_MAGIC_LEN);
	return 0;
}

int state_decode(state_t **out, const uint8_t *buf, size_t len,
		 struct lg_error *err)
{
	struct dec d = {0};
	int rc = dec_magic(buf, len, err);

	*out = NULL;
	if (rc != 0)
		return rc;
	d.r = (struct rd){.start = buf,
			  .p = buf + SC_HEADER_LEN,
			  .end = buf + len,
			  .err = err};
	d.r.at = d.r.p;
	d.st = state_new();
	dec_header(&d);
	dec_names(&d);
	dec_table(&d);
	dec_nodes(&d);
	dec_spaces(&d);
	if (buf[SC_MAGIC_LEN] == SC_VERSION_HOLDS)
		dec_holds(&d);
	d.r.at = d.r.p;
	if (d.r.rc == 0 && d.r.p != d.r.end)
		rd_fail(&d.r, "%zu trailing bytes", rd_left(&d.r));
	link_tree(&d);
	sum_subtrees(&d);
	insert_holds(&d);
	rc = d.r.rc ? d.r.rc : recount(&d, err);
	free(d.nodes);
	free(d.spaces);
	if (rc != 0) {
		state_free(d.st);
		return rc;
	}
	*out = d.st;
	return 0;
}
