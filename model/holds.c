/*
 * Holds (DESIGN 3.7): the part of the projection that turns allowed
 * admission verdicts into units held for their objects until the watcher
 * observes them, and ends them by observation, replacement, delete,
 * expiry or the mode turning off. model/model.h says what a hold is; here
 * is how it is kept.
 *
 * Cost. Holds live in their own table keyed like holders, and in a
 * min-heap by expiry, so that the log's time moving ends the expired ones
 * in O(log n) each without looking at the others; a hold knows its place in
 * the heap, so ending one by observation or replacement is O(log n) too.
 * Held totals are kept per namespace and per subtree exactly like reserved
 * ones (a change walks the ancestors), so judging reads them in O(depth).
 * A hold is one block: 32 bytes of record, 8 per class, the name.
 *
 * Namespaces without a tenant node. An admission may be judged, and
 * allowed, in a tenant namespace whose Namespace the watcher has not
 * observed yet: its ancestors' budgets still apply (by name, 3.1). Its
 * hold counts in the subtree of the nearest ancestor that has a node.
 * Such holds are rare; when the tree changes while there are any, every
 * subtree total is recounted (TENANT, TENANT_GONE), which keeps the common
 * path free of them.
 */
#define _GNU_SOURCE /* memmem */
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const end_names[HOLD_END_MAX] = {
	[HOLD_END_OBSERVED] = "observation",
	[HOLD_END_REPLACED] = "replacement",
	[HOLD_END_DELETED] = "delete",
	[HOLD_END_EXPIRED] = "expiry",
	[HOLD_END_OFF] = "off",
};

const char *hold_end_name(enum hold_end e)
{
	return (unsigned)e < HOLD_END_MAX ? end_names[e] : "none";
}

/* ---------------------------------------------------------------------- */
/* Records, the table and the heap. */

struct hold_key {
	enum holder_kind kind;
	const struct nsrec *ns;
	const char *name;
};

static bool hold_eq(const void *val, const void *key)
{
	const struct hold *h = val;
	const struct hold_key *k = key;

	return h->kind == k->kind && h->ns == k->ns &&
	       strcmp(hold_name(h), k->name) == 0;
}

static uint64_t hold_hash(const struct hold *h)
{
	return model__state_holder_hash(h->kind, h->ns->name, hold_name(h));
}

struct hold *model__hold_new(struct nsrec *ns, enum holder_kind kind,
			     const char *name, uint64_t verdict_id,
			     int64_t expires_ns, const struct hold_unit *u,
			     size_t n)
{
	size_t len = strlen(name);
	struct hold *h;

	LG_ASSERT(n <= HOLDER_MAX_CLASSES);
	h = lg_xmalloc(sizeof(*h) + n * sizeof(*u) + len + 1);
	h->ns = ns;
	h->verdict_id = verdict_id;
	h->expires_ns = expires_ns;
	h->heap_i = 0;
	h->kind = (uint8_t)kind;
	h->n = (uint8_t)n;
	if (n > 0)
		memcpy(h->u, u, n * sizeof(*u));
	memcpy((char *)(h->u + n), name, len + 1);
	return h;
}

int64_t model__hold_units(const struct hold *h, uint32_t cls)
{
	for (uint32_t i = 0; h != NULL && i < h->n; i++)
		if (h->u[i].cls == cls)
			return h->u[i].units;
	return 0;
}

const struct hold *model__hold_find(const state_t *st, enum holder_kind kind,
				    const char *ns, const char *name)
{
	struct hold_key k = {kind, model__state_ns(st, ns), name};

	if (k.ns == NULL || st->holds.n == 0)
		return NULL;
	return model__ptab_find(&st->holds.index,
				model__state_holder_hash(kind, ns, name),
				hold_eq, &k);
}

static void heap_set(struct holds *hs, size_t i, struct hold *h)
{
	hs->heap[i] = h;
	h->heap_i = (uint32_t)i;
}

static void heap_up(struct holds *hs, size_t i)
{
	struct hold *h = hs->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (hs->heap[p]->expires_ns <= h->expires_ns)
			break;
		heap_set(hs, i, hs->heap[p]);
		i = p;
	}
	heap_set(hs, i, h);
}

static void heap_down(struct holds *hs, size_t i)
{
	struct hold *h = hs->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= hs->n)
			break;
		if (c + 1 < hs->n &&
		    hs->heap[c + 1]->expires_ns < hs->heap[c]->expires_ns)
			c++;
		if (h->expires_ns <= hs->heap[c]->expires_ns)
			break;
		heap_set(hs, i, hs->heap[c]);
		i = c;
	}
	heap_set(hs, i, h);
}

static void heap_remove(struct holds *hs, struct hold *h)
{
	size_t i = h->heap_i;
	struct hold *last;

	LG_ASSERT(i < hs->n && hs->heap[i] == h);
	last = hs->heap[--hs->n];
	if (i == hs->n)
		return;
	heap_set(hs, i, last);
	heap_down(hs, i);
	heap_up(hs, last->heap_i);
}

/* ---------------------------------------------------------------------- */
/* Totals. */

/* The nearest namespace at or above ns (by the name rule) whose tenant
 * node exists: the subtree totals the hold counts in start there. NULL for
 * a namespace outside every tenant tree. */
static struct nsrec *chain_start(const state_t *st, struct nsrec *ns)
{
	char cur[DNS1123_SUBDOMAIN_MAX + 1], parent[DNS1123_SUBDOMAIN_MAX + 1];

	if (ns->node)
		return ns;
	snprintf(cur, sizeof(cur), "%s", ns->name);
	while (ns_parent(cur, parent)) {
		struct nsrec *p = model__state_ns(st, parent);

		if (p != NULL && p->node)
			return p;
		memcpy(cur, parent, sizeof(cur));
	}
	return NULL;
}

/* Adds (sign 1) or takes out (-1) h's units: its namespace's own, and every
 * subtree it lies in. Held units are bounded per hold (2^31 - 1 per class,
 * 64 classes), so no sum of the holds a log can make leaves int64. */
static void hold_count(state_t *st, const struct hold *h, int sign)
{
	struct nsrec *ns = h->ns, *start = chain_start(st, ns);

	for (uint32_t i = 0; i < h->n; i++) {
		int64_t d = sign * (int64_t)h->u[i].units;

		ns->held[h->u[i].cls] += d;
		for (struct nsrec *a = start; a != NULL; a = a->parent) {
			a->sub_held[h->u[i].cls] += d;
			a->sub_held_total += d;
		}
	}
	if (!ns->node)
		st->holds.n_orphan += sign > 0 ? 1 : (size_t)-1;
}

void model__holds_insert(state_t *st, struct hold *h)
{
	struct holds *hs = &st->holds;

	model__ptab_insert(&hs->index, hold_hash(h), h);
	if (hs->n == hs->cap) {
		hs->cap = hs->cap ? 2 * hs->cap : 64;
		hs->heap = lg_xrealloc(hs->heap, hs->cap * sizeof(*hs->heap));
	}
	heap_set(hs, hs->n++, h);
	heap_up(hs, hs->n - 1);
	h->ns->n_holds++;
	hold_count(st, h, 1);
}

static void hold_end(state_t *st, struct hold *h, enum hold_end why)
{
	struct holds *hs = &st->holds;

	hold_count(st, h, -1);
	h->ns->n_holds--;
	heap_remove(hs, h);
	model__ptab_remove(&hs->index, hold_hash(h), h);
	hs->ended[why]++;
	free(h);
}

void model__holds_release(state_t *st)
{
	struct holds *hs = &st->holds;

	for (size_t i = 0; i < hs->n; i++)
		free(hs->heap[i]);
	free(hs->heap);
	model__ptab_release(&hs->index);
	free(hs->cache);
	memset(hs, 0, sizeof(*hs));
}

/* Every subtree total from scratch: for the rare tree change while some
 * hold counts in a namespace without a node. */
static void recount(state_t *st)
{
	struct holds *hs = &st->holds;

	for (size_t i = 0; i < st->ns_index.cap; i++) {
		struct nsrec *ns = st->ns_index.vals[i];

		if (st->ns_index.hashes[i] == 0)
			continue;
		memset(ns->held, 0, st->cls_cap * sizeof(*ns->held));
		memset(ns->sub_held, 0, st->cls_cap * sizeof(*ns->sub_held));
		ns->sub_held_total = 0;
	}
	hs->n_orphan = 0;
	for (size_t i = 0; i < hs->n; i++)
		hold_count(st, hs->heap[i], 1);
}

/* ---------------------------------------------------------------------- */
/* The projection's hooks. */

int model__holds_mode(state_t *st, const struct event *ev, struct lg_error *err)
{
	struct holds *hs = &st->holds;

	if (hs->ever && hs->ttl_ms == ev->value)
		return lg_error_set(err, LG_EMISMATCH, "HOLDS: no change");
	if (!hs->ever && ev->value == 0)
		return lg_error_set(err, LG_EMISMATCH,
				    "HOLDS: no change (holds are off)");
	hs->ever = true;
	hs->ttl_ms = ev->value;
	while (ev->value == 0 && hs->n > 0)
		hold_end(st, hs->heap[hs->n - 1], HOLD_END_OFF);
	return 0;
}

void model__holds_expire(state_t *st, int64_t now_ns)
{
	struct holds *hs = &st->holds;

	while (hs->n > 0 && hs->heap[0]->expires_ns <= now_ns)
		hold_end(st, hs->heap[0], HOLD_END_EXPIRED);
}

void model__holds_observed(state_t *st, const struct event *ev)
{
	struct hold *h;

	if (st->holds.n == 0 ||
	    (ev->kind != HK_VMINSTANCE && ev->kind != HK_KUBERNETESNODES))
		return;
	h = (struct hold *)model__hold_find(st, ev->kind, ev->ns, ev->name);
	if (h != NULL)
		hold_end(st, h,
			 ev->type == EV_RELEASE && ev->after == 0
				 ? HOLD_END_DELETED
				 : HOLD_END_OBSERVED);
}

void model__holds_ns_gone(state_t *st, struct nsrec *ns)
{
	struct holds *hs = &st->holds;

	for (size_t i = hs->n; ns->n_holds > 0 && i-- > 0;)
		if (i < hs->n && hs->heap[i]->ns == ns)
			hold_end(st, hs->heap[i], HOLD_END_DELETED);
}

void model__holds_tree_changed(state_t *st)
{
	if (st->holds.n_orphan > 0)
		recount(st);
}

/* ---------------------------------------------------------------------- */
/* What a VERDICT record makes. */

/* What makes a hold, read from a record: the object and its held units
 * on st. */
struct made {
	enum holder_kind kind;
	char ns[DNS1123_LABEL_MAX + 1], name[DNS1123_SUBDOMAIN_MAX + 1];
	uint64_t id;
	size_t n;
	struct hold_unit u[HOLDER_MAX_CLASSES];
};

/* Reading a record fast. A replay applies every VERDICT, and with holds on
 * each allowed admission is read for its hold: only its request is parsed,
 * found in the record's canonical text (JCS: members sorted, strings with
 * their quotes escaped, so the members below can be found by their text).
 * The top-level members before "request" are allowed, answeredAt,
 * basisSeq, chainHead, checks (objects of fixed keys), id,
 * idempotencyKey, message and reason; after it requester, seq, type and
 * warnings. So the first ',"id":' and ',"request":{' are the record's
 * own, the reason is the member just before the request, and the type
 * follows it. */
#define REC_ALLOWED "{\"allowed\":true,"
#define REC_REASON  "\"reason\":\"WithinBudget\""
#define REC_REQUEST ",\"request\":{"
#define REC_TYPE    ",\"type\":\"admission\",\"warnings\":["

/* The length of the JSON object at p (p[0] == '{'), or 0 when it does
 * not close within len. */
static size_t object_len(const char *p, size_t len)
{
	size_t depth = 0;
	bool str = false;

	for (size_t i = 0; i < len; i++) {
		char c = p[i];

		if (str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				str = false;
		} else if (c == '"') {
			str = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if ((c == '}' || c == ']') && --depth == 0) {
			return i + 1;
		}
	}
	return 0;
}

/* The request of a record that may make a hold: its text [*req, + *n)
 * and the record's id; false when the record cannot make one. */
static bool record_request(const char *rec, size_t len, const char **req,
			   size_t *n, uint64_t *id)
{
	size_t a = sizeof(REC_ALLOWED) - 1, r = sizeof(REC_REASON) - 1;
	const char *q, *p;
	uint64_t v = 0;

	if (len <= a || memcmp(rec, REC_ALLOWED, a) != 0)
		return false;
	q = memmem(rec, len, REC_REQUEST, sizeof(REC_REQUEST) - 1);
	if (q == NULL || (size_t)(q - rec) < r ||
	    memcmp(q - r, REC_REASON, r) != 0)
		return false;
	*req = q + sizeof(REC_REQUEST) - 2;
	*n = object_len(*req, len - (size_t)(*req - rec));
	if (*n == 0 ||
	    memmem(*req + *n, len - (size_t)(*req + *n - rec), REC_TYPE,
		   sizeof(REC_TYPE) - 1) == NULL)
		return false;
	p = memmem(rec, (size_t)(q - rec), ",\"id\":", 6);
	for (p = p ? p + 6 : NULL; p != NULL && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	*id = v;
	return true;
}

/* m's held units from new's units (by table index) and the object's
 * observed ones. */
static void made_units(const state_t *st, struct made *m,
		       const struct class_units *units, size_t n)
{
	const struct holder *h =
		model__state_holder(st, m->kind, m->ns, m->name);
	const struct hunits *hu = h != NULL ? holder_u(h) : NULL;
	uint32_t hn = h != NULL ? h->n : 0;

	m->n = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t cls = st->table_ids[units[i].cls];
		int64_t obs = 0;

		for (uint32_t k = 0; k < hn; k++)
			if (hu[k].cls == cls)
				obs = hu[k].reserved;
		if (units[i].units > obs)
			m->u[m->n++] = (struct hold_unit){
				cls, (uint32_t)(units[i].units - obs)};
	}
}

/* The object of a request: a VMInstance or KubernetesNodes with a valid
 * name in a tenant namespace. */
static bool object_ok(const struct made *m)
{
	return (m->kind == HK_VMINSTANCE || m->kind == HK_KUBERNETESNODES) &&
	       dns1123_label(m->ns, strlen(m->ns)) && ns_is_tenant(m->ns) &&
	       dns1123_subdomain(m->name, strlen(m->name));
}

static bool copy_str(char *dst, size_t cap, const char *s)
{
	size_t n = s != NULL ? strlen(s) : cap;

	if (n >= cap)
		return false;
	memcpy(dst, s, n + 1);
	return true;
}

/* The general reading: the request parsed as every verdict reader reads
 * it (json_loadb_doubles), its new spec mapped like the judge maps it. */
static bool record_hold(const state_t *st, const char *req, size_t n,
			struct made *m)
{
	json_t *v = json_loadb_doubles(req, n, 0, NULL);
	const json_t *new = json_object_get(v, "new");
	const char *kind = jstr(v, "kind");
	struct holder_map hm;
	bool ok;

	m->kind = kind ? model__holder_kind_parse(kind) : HK_NONE;
	ok = v != NULL && copy_str(m->ns, sizeof(m->ns), jstr(v, "namespace")) &&
	     copy_str(m->name, sizeof(m->name), jstr(v, "name")) &&
	     object_ok(m) && json_is_object(new) &&
	     model__holder_map_spec(m->kind, new, &st->table, &hm, NULL) == 0 &&
	     hm.valid;
	if (ok)
		made_units(st, m, hm.units, hm.n);
	json_decref(v);
	return ok;
}

/* The fast reading of the canonical request most records hold,
 * {"kind":"K","name":"N","namespace":"S","new":{...},"old":...} (JCS
 * order; names and namespaces need no escapes), its new spec's units
 * from a cache by the spec's text (a spec maps to the same units while
 * the class table stays). Anything else, or a miss, takes the general
 * reading's mapping; false: read it the general way. */
#define CACHE_SLOTS    256
#define CACHE_SPEC_MAX 512
#define CACHE_CLASSES  8
struct hold_cache {
	struct {
		uint64_t hash; /* 0: empty */
		uint8_t kind;
		bool valid;
		uint8_t n;
		uint16_t len;
		char spec[CACHE_SPEC_MAX];
		struct class_units units[CACHE_CLASSES];
	} slot[CACHE_SLOTS];
};

static const char *take_str(const char *p, const char *end, const char *pre,
			    char *out, size_t cap)
{
	size_t k = strlen(pre), i = 0;

	if ((size_t)(end - p) < k || memcmp(p, pre, k) != 0)
		return NULL;
	for (p += k; p < end && *p != '"' && *p != '\\'; p++) {
		if (i + 1 >= cap)
			return NULL;
		out[i++] = *p;
	}
	out[i] = '\0';
	return p < end && *p == '"' ? p + 1 : NULL;
}

/* 1: m makes a hold; 0: the request makes none; -1: read it the general
 * way. */
static int record_hold_fast(state_t *st, const char *req, size_t n,
			    struct made *m)
{
	const char *end = req + n, *p;
	char kind[32];
	size_t len;
	uint64_t h;
	struct hold_cache *c;
	struct holder_map hm;
	json_t *spec;

	p = take_str(req, end, "{\"kind\":\"", kind, sizeof(kind));
	p = p ? take_str(p, end, ",\"name\":\"", m->name, sizeof(m->name))
	      : NULL;
	p = p ? take_str(p, end, ",\"namespace\":\"", m->ns, sizeof(m->ns))
	      : NULL;
	if (p == NULL || (size_t)(end - p) < 8 ||
	    memcmp(p, ",\"new\":{", 8) != 0)
		return -1;
	m->kind = model__holder_kind_parse(kind);
	if (!object_ok(m))
		return -1;
	p += 7;
	len = object_len(p, (size_t)(end - p));
	if (len == 0 || len > CACHE_SPEC_MAX)
		return -1;
	if (st->holds.cache == NULL)
		st->holds.cache = lg_xcalloc(1, sizeof(*st->holds.cache));
	c = st->holds.cache;
	h = model__hash_bytes(model__hash_bytes(0xcbf29ce484222325ULL,
						&m->kind, sizeof(m->kind)),
			      p, len) | 1;
	{
		__typeof__(c->slot[0]) *e = &c->slot[h % CACHE_SLOTS];

		if (e->hash != h || e->kind != m->kind || e->len != len ||
		    memcmp(e->spec, p, len) != 0) {
			spec = json_loadb_doubles(p, len, 0, NULL);
			if (spec == NULL ||
			    model__holder_map_spec(m->kind, spec, &st->table,
						   &hm, NULL) != 0 ||
			    hm.n > CACHE_CLASSES) {
				json_decref(spec);
				return -1;
			}
			json_decref(spec);
			e->hash = h;
			e->kind = (uint8_t)m->kind;
			e->len = (uint16_t)len;
			memcpy(e->spec, p, len);
			e->valid = hm.valid;
			e->n = (uint8_t)hm.n;
			memcpy(e->units, hm.units, hm.n * sizeof(hm.units[0]));
		}
		if (!e->valid)
			return 0;
		made_units(st, m, e->units, e->n);
		return 1;
	}
}

void model__holds_table_changed(state_t *st)
{
	free(st->holds.cache);
	st->holds.cache = NULL;
}

/* Reads record (len bytes) for the hold it makes on st; false: none.
 * With a mutable st (cache not NULL allowed), the fast reading may be
 * used and cached. */
static bool record_made(const state_t *st, state_t *mut, const char *record,
			size_t len, struct made *m)
{
	const char *req;
	size_t n;
	uint64_t id = 0;
	bool ok;
	int fast;

	if (st->holds.ttl_ms == 0 || record == NULL ||
	    !record_request(record, len, &req, &n, &id))
		return false;
	fast = mut != NULL ? record_hold_fast(mut, req, n, m) : -1;

	ok = fast >= 0 ? fast == 1 : record_hold(st, req, n, m);
	m->id = id > 0 ? id : st->n_verdicts;
	return ok;
}

static int unit_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct hold_unit *)a)->cls,
		 y = ((const struct hold_unit *)b)->cls;

	return x < y ? -1 : x > y;
}

/* The log's time at a verdict plus the TTL, saturated (a day at most is
 * added, to a time that fits int64). */
static int64_t expiry(const state_t *st)
{
	int64_t ttl = st->holds.ttl_ms * 1000000, t;

	if (__builtin_add_overflow(st->horizon_ns, ttl, &t))
		return INT64_MAX;
	return t;
}

void model__holds_verdict(state_t *st, const struct event *ev)
{
	struct made m;
	struct hold *old, *h;
	struct nsrec *ns;

	if (record_made(st, st, ev->text, strlen(ev->text), &m)) {
		ns = model__state_ns(st, m.ns);
		old = (struct hold *)model__hold_find(st, m.kind, m.ns, m.name);
		if (old != NULL)
			hold_end(st, old, HOLD_END_REPLACED);
		if (m.n > 0) {
			if (ns == NULL)
				ns = model__state_ns_get(st, m.ns);
			qsort(m.u, m.n, sizeof(m.u[0]), unit_cmp);
			h = model__hold_new(ns, m.kind, m.name, m.id,
					    expiry(st), m.u, m.n);
			model__holds_insert(st, h);
			st->holds.made++;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Public reads. */

bool state_holds_on(const state_t *st)
{
	return st->holds.ttl_ms > 0;
}

void state_holds_stats(const state_t *st, struct state_holds_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->on = st->holds.ttl_ms > 0;
	out->ttl_ms = st->holds.ttl_ms;
	out->alive = st->holds.n;
	out->made = st->holds.made;
	memcpy(out->ended, st->holds.ended, sizeof(out->ended));
}

/* Every change of the holds makes or ends one, and these counters are
 * part of the state (checkpoints carry them): the number is a function of
 * the log's position, the same in every process. A HOLDS event also
 * changes what holds show; it is content (not a VERDICT, NOTE or TICK),
 * which a cache compares as well. */
uint64_t state_holds_gen(const state_t *st)
{
	uint64_t g = st->holds.made;

	for (int i = 0; i < HOLD_END_MAX; i++)
		g += st->holds.ended[i];
	return g;
}

bool model__verdict_makes_hold(const state_t *st, const char *record,
			       size_t len)
{
	struct made m;

	return record_made(st, NULL, record, len, &m);
}

int model__apply_verdict(state_t *st, const char *record, bool *made,
			 struct lg_error *err)
{
	struct event ev = {.seq = st->seq + 1,
			   .time_ns = st->time_ns,
			   .type = EV_VERDICT,
			   .text = record};
	bool m = record != NULL &&
		 model__verdict_makes_hold(st, record, strlen(record));
	int rc = state_apply(st, &ev, err);

	if (made != NULL)
		*made = rc == 0 && m;
	return rc;
}

static int by_id(const void *a, const void *b)
{
	uint64_t x = (*(struct hold *const *)a)->verdict_id,
		 y = (*(struct hold *const *)b)->verdict_id;

	return x < y ? -1 : x > y;
}

static json_t *hold_json(const state_t *st, const struct hold *h)
{
	json_t *units = json_object();
	char tbuf[48];

	for (uint32_t i = 0; i < h->n; i++)
		json_object_set_new(units, st->cls_names[h->u[i].cls],
				    json_integer(h->u[i].units));
	time_format_ns(h->expires_ns, tbuf, sizeof(tbuf));
	return json_pack("{s:I, s:s, s:s, s:s, s:o, s:s}", "verdictId",
			 (json_int_t)h->verdict_id, "namespace", h->ns->name,
			 "kind", model__holder_kind_name(h->kind), "name",
			 hold_name(h), "units", units, "expiresAt", tbuf);
}

json_t *state_holds_json(const state_t *st, const char *tenant)
{
	const struct holds *hs = &st->holds;
	struct hold **v = lg_xmalloc((hs->n + 1) * sizeof(*v));
	json_t *a = json_array();
	size_t n = 0;

	for (size_t i = 0; i < hs->n; i++)
		if (tenant == NULL ||
		    ns_in_subtree(tenant, hs->heap[i]->ns->name))
			v[n++] = hs->heap[i];
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, hold_json(st, v[i]));
	free(v);
	return a;
}

static int by_key(const void *a, const void *b)
{
	const struct hold *x = *(struct hold *const *)a,
			  *y = *(struct hold *const *)b;
	int c = strcmp(x->ns->name, y->ns->name);

	if (c != 0)
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(hold_name(x), hold_name(y));
}

struct hold **model__holds_sorted(const state_t *st, size_t *n)
{
	const struct holds *hs = &st->holds;
	struct hold **v = lg_xmalloc((hs->n + 1) * sizeof(*v));

	if (hs->n > 0)
		memcpy(v, hs->heap, hs->n * sizeof(*v));
	qsort(v, hs->n, sizeof(*v), by_key);
	*n = hs->n;
	return v;
}

void model__holds_clone(state_t *d, const state_t *s)
{
	const struct holds *hs = &s->holds;

	d->holds.ttl_ms = hs->ttl_ms;
	d->holds.ever = hs->ever;
	d->holds.made = hs->made;
	memcpy(d->holds.ended, hs->ended, sizeof(hs->ended));
	for (size_t i = 0; i < hs->n; i++) {
		const struct hold *h = hs->heap[i];

		model__holds_insert(
			d, model__hold_new(model__state_ns(d, h->ns->name),
					   h->kind, hold_name(h), h->verdict_id,
					   h->expires_ns, h->u, h->n));
	}
}

/* ---------------------------------------------------------------------- */
/* Self-check. */

int model__holds_check(const state_t *st, struct lg_error *err)
{
	const struct holds *hs = &st->holds;
	int rc = 0;

	if (hs->index.n != hs->n)
		return lg_error_set(err, LG_ECORRUPT,
				    "holds: %zu in the index, %zu in the heap",
				    hs->index.n, hs->n);
	for (size_t i = 0; i < hs->n; i++) {
		if (hs->heap[i]->heap_i != i ||
		    (i > 0 && hs->heap[(i - 1) / 2]->expires_ns >
				      hs->heap[i]->expires_ns))
			rc = lg_error_set(err, LG_ECORRUPT,
					  "holds: heap out of order at %zu", i);
	}
	if (rc != 0)
		return rc;
	/* The totals: take every hold out, and all must be zero; then put
	 * them back (a self-check of tests and verify, never run while
	 * another thread reads st). */
	{
		state_t *s = (state_t *)st;
		size_t orphan = s->holds.n_orphan;

		for (size_t i = 0; i < hs->n; i++)
			hold_count(s, hs->heap[i], -1);
		for (size_t i = 0; i < st->ns_index.cap && rc == 0; i++) {
			const struct nsrec *ns = st->ns_index.vals[i];

			if (st->ns_index.hashes[i] == 0)
				continue;
			for (uint32_t c = 0; c < st->n_cls && rc == 0; c++)
				if (ns->held[c] != 0 || ns->sub_held[c] != 0)
					rc = lg_error_set(
						err, LG_ECORRUPT,
						"%s/%s: held totals differ "
						"from a recount of the holds",
						ns->name, st->cls_names[c]);
			if (rc == 0 && ns->sub_held_total != 0)
				rc = lg_error_set(err, LG_ECORRUPT,
						  "%s: held total differs",
						  ns->name);
		}
		if (rc == 0 && s->holds.n_orphan != 0)
			rc = lg_error_set(err, LG_ECORRUPT,
					  "holds: orphan count differs");
		for (size_t i = 0; i < hs->n; i++)
			hold_count(s, hs->heap[i], 1);
		s->holds.n_orphan = orphan;
	}
	return rc;
}
