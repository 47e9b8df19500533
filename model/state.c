/*
 * The projection: state + event -> state (DESIGN 4).
 *
 * Every event is checked against the state before anything changes, so that
 * a refused event leaves the state exactly as it was: replay detects a gap or
 * a corrupt record instead of computing a wrong total. Subtree totals are
 * kept incrementally (a change at a namespace walks its ancestors), and
 * model__state_check recomputes them from scratch to prove it.
 */
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Pointer tables (linear probing, tombstone-free deletion by shifting). */

uint64_t model__hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t model__hash_str(const char *s)
{
	return model__hash_bytes(0xcbf29ce484222325ULL, s, strlen(s));
}

static uint64_t fix_hash(uint64_t h)
{
	h ^= h >> 29;
	return h ? h : 1;
}

void *model__ptab_find(const struct ptab *t, uint64_t h,
		       bool (*eq)(const void *val, const void *key),
		       const void *key)
{
	if (t->cap == 0)
		return NULL;
	h = fix_hash(h);
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (t->hashes[i] == 0)
			return NULL;
		if (t->hashes[i] == h && eq(t->vals[i], key))
			return t->vals[i];
	}
}

/* The table cannot compare keys, so the caller guarantees a new key; the
 * same value twice, the cheapest violation to see, is asserted on the way
 * to the free slot. */
static void ptab_put(struct ptab *t, uint64_t h, void *val)
{
	size_t i = h & (t->cap - 1);

	while (t->hashes[i] != 0) {
		LG_ASSERT(t->vals[i] != val);
		i = (i + 1) & (t->cap - 1);
	}
	t->hashes[i] = h;
	t->vals[i] = val;
}

static void ptab_resize(struct ptab *t, size_t cap)
{
	struct ptab old = *t;

	t->cap = cap;
	t->hashes = lg_xcalloc(t->cap, sizeof(*t->hashes));
	t->vals = lg_xcalloc(t->cap, sizeof(*t->vals));
	for (size_t i = 0; i < old.cap; i++)
		if (old.hashes[i] != 0)
			ptab_put(t, old.hashes[i], old.vals[i]);
	free(old.hashes);
	free(old.vals);
}

void model__ptab_insert(struct ptab *t, uint64_t h, void *val)
{
	if ((t->n + 1) * 4 > t->cap * 3)
		ptab_resize(t, t->cap ? t->cap * 2 : 16);
	ptab_put(t, fix_hash(h), val);
	t->n++;
}

void model__ptab_reserve(struct ptab *t, size_t n)
{
	size_t cap = t->cap ? t->cap : 16;

	while (n * 4 > cap * 3)
		cap *= 2;
	if (cap != t->cap)
		ptab_resize(t, cap);
}

void model__ptab_remove(struct ptab *t, uint64_t h, const void *val)
{
	size_t mask = t->cap - 1, i, j;

	if (t->cap == 0)
		return;
	h = fix_hash(h);
	for (i = h & mask; t->hashes[i] != 0; i = (i + 1) & mask)
		if (t->vals[i] == val)
			break;
	if (t->hashes[i] == 0)
		return;
	/* Shift later members of the probe run back into the hole. */
	for (j = (i + 1) & mask; t->hashes[j] != 0; j = (j + 1) & mask) {
		size_t home = t->hashes[j] & mask;
		bool movable = i <= j ? (home <= i || home > j)
				      : (home <= i && home > j);
		if (movable) {
			t->hashes[i] = t->hashes[j];
			t->vals[i] = t->vals[j];
			i = j;
		}
	}
	t->hashes[i] = 0;
	t->vals[i] = NULL;
	t->n--;
}

void model__ptab_release(struct ptab *t)
{
	free(t->hashes);
	free(t->vals);
	memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------------------- */
/* Lookups */

static bool ns_eq(const void *val, const void *key)
{
	return strcmp(((const struct nsrec *)val)->name, key) == 0;
}

static bool node_eq(const void *val, const void *key)
{
	return strcmp(((const struct noderec *)val)->name, key) == 0;
}

/* A holder's key with its namespace already looked up: every holder's ns
 * is the one record of that name (records are never dropped), so the
 * namespace compares as a pointer. */
struct hkey {
	enum holder_kind kind;
	const struct nsrec *ns;
	const char *name;
};

/* The holder hash continued from model__hash_str(ns), which the namespace
 * lookup has computed already. */
static uint64_t holder_hash_from(uint64_t ns_hash, enum holder_kind kind,
				 const char *name)
{
	uint64_t h = model__hash_bytes(ns_hash, &kind, sizeof(kind));

	return model__hash_bytes(h, name, strlen(name) + 1);
}

static uint64_t holder_hash(enum holder_kind kind, const char *ns,
			    const char *name)
{
	return holder_hash_from(model__hash_str(ns), kind, name);
}

static bool holder_eq(const void *val, const void *key)
{
	const struct holder *h = val;
	const struct hkey *k = key;

	return h->kind == k->kind && h->ns == k->ns &&
	       strcmp(holder_name(h), k->name) == 0;
}

struct nsrec *model__state_ns(const state_t *st, const char *name)
{
	return model__ptab_find(&st->ns_index, model__hash_str(name), ns_eq,
				name);
}

struct noderec *model__state_node(const state_t *st, const char *name)
{
	return model__ptab_find(&st->node_index, model__hash_str(name), node_eq,
				name);
}

int32_t model__state_cls_id(const state_t *st, const char *name)
{
	const struct ptab *t = &st->cls_index;
	uint64_t h;

	if (t->cap == 0)
		return -1;
	h = fix_hash(model__hash_str(name));
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		uint32_t id;

		if (t->hashes[i] == 0)
			return -1;
		id = (uint32_t)(uintptr_t)t->vals[i] - 1;
		if (t->hashes[i] == h && strcmp(st->cls_names[id], name) == 0)
			return (int32_t)id;
	}
}

/* The holder (kind, ns, name), where ns_hash is model__hash_str(ns->name); NULL
 * when absent, and always when ns is (a holder needs its record). */
static struct holder *holder_find(const state_t *st, enum holder_kind kind,
				  const struct nsrec *ns, uint64_t ns_hash,
				  const char *name)
{
	struct hkey k = {kind, ns, name};

	if (ns == NULL)
		return NULL;
	return model__ptab_find(&st->holder_index,
				holder_hash_from(ns_hash, kind, name),
				holder_eq, &k);
}

const struct holder *model__state_holder(const state_t *st,
					 enum holder_kind kind, const char *ns,
					 const char *name)
{
	uint64_t h = model__hash_str(ns);

	return holder_find(st, kind,
			   model__ptab_find(&st->ns_index, h, ns_eq, ns), h,
			   name);
}

static int budget_cmp(const void *a, const void *b)
{
	return strcmp(((const struct budget *)a)->key,
		      ((const struct budget *)b)->key);
}

const struct budget *model__nsrec_budget(const struct nsrec *ns,
					 const char *key)
{
	struct budget k = {(char *)key, 0};

	if (ns == NULL || ns->n_budgets == 0)
		return NULL;
	return bsearch(&k, ns->budgets, ns->n_budgets, sizeof(k), budget_cmp);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool model__nsrec_has_raw(const struct nsrec *ns, const char *resource)
{
	if (ns == NULL || ns->n_raw == 0)
		return false;
	return bsearch(&resource, ns->raw, ns->n_raw, sizeof(char *),
		       str_cmp) != NULL;
}

int model__nsrec_bill_at(const struct nsrec *ns, uint32_t cls, int64_t t_ms,
			 int64_t *reserved_ms, int64_t *allocated_ms)
{
	const struct bill *b = &ns->bill[cls];
	int64_t dt = t_ms > b->since_ms ? t_ms - b->since_ms : 0;
	int64_t r, a;

	if (__builtin_mul_overflow(ns->reserved[cls], dt, &r) ||
	    __builtin_add_overflow(b->cum_reserved_ms, r, &r) ||
	    __builtin_mul_overflow(ns->allocated[cls], dt, &a) ||
	    __builtin_add_overflow(b->cum_allocated_ms, a, &a))
		return LG_ERANGE;
	*reserved_ms = r;
	*allocated_ms = a;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Creation */

static void ns_arrays(struct nsrec *ns, uint32_t old_cap, uint32_t cap)
{
	size_t add = cap - old_cap;

#define GROW(f)                                                   \
	do {                                                      \
		ns->f = lg_xrealloc(ns->f, cap * sizeof(*ns->f)); \
		memset(ns->f + old_cap, 0, add * sizeof(*ns->f)); \
	} while (0)
	GROW(reserved);
	GROW(allocated);
	GROW(sub_reserved);
	GROW(sub_allocated);
	GROW(bill);
	GROW(held);
	GROW(sub_held);
#undef GROW
}

static void node_arrays(struct noderec *n, uint32_t old_cap, uint32_t cap)
{
	size_t add = cap - old_cap;

	n->capacity = lg_xrealloc(n->capacity, cap * sizeof(*n->capacity));
	n->allocated = lg_xrealloc(n->allocated, cap * sizeof(*n->allocated));
	n->serves = lg_xrealloc(n->serves, cap * sizeof(*n->serves));
	memset(n->capacity + old_cap, 0, add * sizeof(*n->capacity));
	memset(n->allocated + old_cap, 0, add * sizeof(*n->allocated));
	memset(n->serves + old_cap, 0, add * sizeof(*n->serves));
}

/* Interns a class name; grows every per-class array when needed. */
static uint32_t cls_intern(state_t *st, const char *name)
{
	int32_t id = model__state_cls_id(st, name);
	uint32_t old_cap = st->cls_cap;

	if (id >= 0)
		return (uint32_t)id;
	if (st->n_cls == st->cls_cap) {
		st->cls_cap = st->cls_cap ? st->cls_cap * 2 : 4;
		st->cls_names = lg_xrealloc(st->cls_names,
					    st->cls_cap * sizeof(char *));
		for (size_t i = 0; i < st->ns_index.cap; i++)
			if (st->ns_index.hashes[i] != 0)
				ns_arrays(st->ns_index.vals[i], old_cap,
					  st->cls_cap);
		for (size_t i = 0; i < st->node_index.cap; i++)
			if (st->node_index.hashes[i] != 0)
				node_arrays(st->node_index.vals[i], old_cap,
					    st->cls_cap);
	}
	st->cls_names[st->n_cls] = lg_xstrdup(name);
	model__ptab_insert(&st->cls_index, model__hash_str(name),
			   (void *)(uintptr_t)(st->n_cls + 1));
	return st->n_cls++;
}

static struct nsrec *ns_get(state_t *st, const char *name)
{
	struct nsrec *ns = model__state_ns(st, name);

	if (ns != NULL)
		return ns;
	ns = lg_xcalloc(1, sizeof(*ns));
	ns->name = lg_xstrdup(name);
	ns->tenant = ns_is_tenant(name);
	ns_arrays(ns, 0, st->cls_cap);
	model__ptab_insert(&st->ns_index, model__hash_str(name), ns);
	return ns;
}

struct nsrec *model__state_ns_get(state_t *st, const char *name)
{
	return ns_get(st, name);
}

static struct noderec *node_get(state_t *st, const char *name)
{
	struct noderec *n = model__state_node(st, name);

	if (n != NULL)
		return n;
	n = lg_xcalloc(1, sizeof(*n));
	n->name = lg_xstrdup(name);
	node_arrays(n, 0, st->cls_cap);
	model__ptab_insert(&st->node_index, model__hash_str(name), n);
	return n;
}

static void ns_free(struct nsrec *ns)
{
	if (ns == NULL)
		return;
	for (size_t i = 0; i < ns->n_budgets; i++)
		free(ns->budgets[i].key);
	for (size_t i = 0; i < ns->n_raw; i++)
		free(ns->raw[i]);
	free(ns->budgets);
	free(ns->raw);
	free(ns->reserved);
	free(ns->allocated);
	free(ns->sub_reserved);
	free(ns->sub_allocated);
	free(ns->bill);
	free(ns->held);
	free(ns->sub_held);
	free(ns->name);
	free(ns);
}

struct holder *model__holder_new(enum holder_kind kind, struct nsrec *ns,
				 const char *name, size_t name_len,
				 const char *uid, size_t uid_len)
{
	size_t at = name_len + 1;
	struct holder *h;

	/* Events and checkpoints are validated first: a name has at most
	 * DNS1123_SUBDOMAIN_MAX bytes, so this is a programmer error. */
	LG_ASSERT(at <= UINT16_MAX);
	h = lg_xmalloc(offsetof(struct holder, str) + at + uid_len + 1);
	memset(h, 0, offsetof(struct holder, str));
	h->kind = (uint8_t)kind;
	h->ns = ns;
	h->uid_at = (uint16_t)at;
	memcpy(h->str, name, name_len);
	h->str[name_len] = '\0';
	memcpy(h->str + at, uid, uid_len);
	h->str[at + uid_len] = '\0';
	return h;
}

void model__holder_free(struct holder *h)
{
	if (h == NULL)
		return;
	if (h->n > 1)
		free(h->u.many);
	free(h);
}

static void node_free(struct noderec *n)
{
	if (n == NULL)
		return;
	free(n->name);
	free(n->capacity);
	free(n->allocated);
	free(n->serves);
	free(n);
}

state_t *state_new(void)
{
	state_t *st = lg_xcalloc(1, sizeof(*st));

	class_table_init(&st->table);
	return st;
}

void state_free(state_t *st)
{
	if (st == NULL)
		return;
	model__holds_release(st);
	for (size_t i = 0; i < st->holder_index.cap; i++)
		if (st->holder_index.hashes[i] != 0)
			model__holder_free(st->holder_index.vals[i]);
	for (size_t i = 0; i < st->ns_index.cap; i++)
		if (st->ns_index.hashes[i] != 0)
			ns_free(st->ns_index.vals[i]);
	for (size_t i = 0; i < st->node_index.cap; i++)
		if (st->node_index.hashes[i] != 0)
			node_free(st->node_index.vals[i]);
	for (uint32_t i = 0; i < st->n_cls; i++)
		free(st->cls_names[i]);
	free(st->cls_names);
	free(st->table_ids);
	class_table_release(&st->table);
	model__ptab_release(&st->holder_index);
	model__ptab_release(&st->ns_index);
	model__ptab_release(&st->node_index);
	model__ptab_release(&st->cls_index);
	free(st);
}

uint64_t state_seq(const state_t *st)
{
	return st->seq;
}

int64_t state_time_ns(const state_t *st)
{
	return st->time_ns;
}

int64_t state_horizon_ns(const state_t *st)
{
	return st->horizon_ns;
}

const struct class_table *state_classes(const state_t *st)
{
	return &st->table;
}

/* ---------------------------------------------------------------------- */
/* Tenants */

static int apply_tenant(state_t *st, const struct event *ev,
			struct lg_error *err)
{
	struct nsrec *ns = model__state_ns(st, ev->ns), *parent = NULL;

	if (ns != NULL && ns->node)
		return lg_error_set(err, LG_EMISMATCH,
				    "TENANT %s: already exists", ev->ns);
	if (ev->parent != NULL) {
		parent = model__state_ns(st, ev->parent);
		if (parent == NULL || !parent->node)
			return lg_error_set(
				err, LG_EMISMATCH,
				"TENANT %s: parent %s does not exist", ev->ns,
				ev->parent);
	}
	ns = ns_get(st, ev->ns);
	/* A namespace that held units before its node appeared cannot be: a
	 * tenant namespace's holders need its node (apply_units). */
	ns->node = true;
	ns->parent = parent;
	if (parent != NULL) {
		ns->sibling = parent->child;
		parent->child = ns;
		parent->n_children++;
	} else {
		st->root = ns;
	}
	model__holds_tree_changed(st);
	return 0;
}

static int apply_tenant_gone(state_t *st, const struct event *ev,
			     struct lg_error *err)
{
	struct nsrec *ns = model__state_ns(st, ev->ns);

	if (ns == NULL || !ns->node)
		return lg_error_set(err, LG_EMISMATCH,
				    "TENANT_GONE %s: does not exist", ev->ns);
	if (ns->n_children > 0 || ns->n_holders > 0 || ns->n_budgets > 0 ||
	    ns->n_raw > 0)
		return lg_error_set(err, LG_EMISMATCH,
				    "TENANT_GONE %s: still has children, "
				    "holders or budgets",
				    ev->ns);
	/* Its objects are gone with it, and so are their holds. */
	model__holds_ns_gone(st, ns);
	if (ns->parent != NULL) {
		struct nsrec **pp = &ns->parent->child;

		while (*pp != ns)
			pp = &(*pp)->sibling;
		*pp = ns->sibling;
		ns->parent->n_children--;
	} else {
		st->root = NULL;
	}
	ns->node = false;
	ns->parent = ns->sibling = NULL;
	model__holds_tree_changed(st);
	/* The record stays: its billing accumulators still answer for the
	 * time it held units. */
	return 0;
}

static int apply_budget(state_t *st, const struct event *ev,
			struct lg_error *err)
{
	struct nsrec *ns = model__state_ns(st, ev->ns);
	const struct budget *b;
	size_t i;

	if (ns == NULL || !ns->node)
		return lg_error_set(err, LG_EMISMATCH,
				    "BUDGET %s: no such tenant", ev->ns);
	b = model__nsrec_budget(ns, ev->key);
	if (b == NULL && !ev->present)
		return lg_error_set(err, LG_EMISMATCH,
				    "BUDGET %s %s: removing an absent budget",
				    ev->ns, ev->key);
	if (b != NULL && ev->present && b->value == ev->value)
		return lg_error_set(err, LG_EMISMATCH,
				    "BUDGET %s %s: no change", ev->ns, ev->key);
	i = b ? (size_t)(b - ns->budgets) : 0;
	if (b != NULL && ev->present) {
		ns->budgets[i].value = ev->value;
	} else if (b != NULL) {
		free(ns->budgets[i].key);
		memmove(ns->budgets + i, ns->budgets + i + 1,
			(ns->n_budgets - i - 1) * sizeof(*ns->budgets));
		ns->n_budgets--;
	} else {
		while (i < ns->n_budgets &&
		       strcmp(ns->budgets[i].key, ev->key) < 0)
			i++;
		ns->budgets =
			lg_xrealloc(ns->budgets,
				    (ns->n_budgets + 1) * sizeof(*ns->budgets));
		memmove(ns->budgets + i + 1, ns->budgets + i,
			(ns->n_budgets - i) * sizeof(*ns->budgets));
		ns->budgets[i].key = lg_xstrdup(ev->key);
		ns->budgets[i].value = ev->value;
		ns->n_budgets++;
	}
	return 0;
}

static int apply_rawkey(state_t *st, const struct event *ev,
			struct lg_error *err)
{
	struct nsrec *ns = model__state_ns(st, ev->ns);
	size_t i = 0;

	if (ns == NULL || !ns->node)
		return lg_error_set(err, LG_EMISMATCH,
				    "RAWKEY %s: no such tenant", ev->ns);
	if (model__nsrec_has_raw(ns, ev->key) == ev->present)
		return lg_error_set(err, LG_EMISMATCH,
				    "RAWKEY %s %s: no change", ev->ns, ev->key);
	while (i < ns->n_raw && strcmp(ns->raw[i], ev->key) < 0)
		i++;
	if (ev->present) {
		ns->raw =
			lg_xrealloc(ns->raw, (ns->n_raw + 1) * sizeof(char *));
		memmove(ns->raw + i + 1, ns->raw + i,
			(ns->n_raw - i) * sizeof(char *));
		ns->raw[i] = lg_xstrdup(ev->key);
		ns->n_raw++;
	} else {
		free(ns->raw[i]);
		memmove(ns->raw + i, ns->raw + i + 1,
			(ns->n_raw - i - 1) * sizeof(char *));
		ns->n_raw--;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Classes and nodes */

static void table_ids_refresh(state_t *st)
{
	st->table_ids = lg_xrealloc(st->table_ids,
				    st->table.n * sizeof(*st->table_ids));
	for (size_t i = 0; i < st->table.n; i++)
		st->table_ids[i] = cls_intern(st, st->table.classes[i].name);
}

static int apply_class(state_t *st, const struct event *ev,
		       struct lg_error *err)
{
	struct class_table *t = &st->table;
	struct gpu_class c;
	size_t i = 0;
	bool found;
	json_t *def = NULL;
	int rc;

	while (i < t->n && strcmp(t->classes[i].name, ev->cls) < 0)
		i++;
	found = i < t->n && strcmp(t->classes[i].name, ev->cls) == 0;
	if (ev->text == NULL) {
		if (!found)
			return lg_error_set(
				err, LG_EMISMATCH,
				"CLASS %s: removing an absent class", ev->cls);
		model__gpu_class_release(&t->classes[i]);
		memmove(t->classes + i, t->classes + i + 1,
			(t->n - i - 1) * sizeof(*t->classes));
		t->n--;
		table_ids_refresh(st);
		model__holds_table_changed(st);
		return 0;
	}
	def = json_loads(ev->text, 0, NULL);
	rc = def ? model__gpu_class_parse(&c, def, err)
		 : lg_error_set(err, LG_EINVAL, "definition is not JSON");
	json_decref(def);
	if (rc != 0)
		return lg_error_set(err, LG_EMISMATCH, "CLASS %s: %s", ev->cls,
				    err ? err->msg : "bad definition");
	if (strcmp(c.name, ev->cls) != 0 ||
	    (found && gpu_class_equal(&c, &t->classes[i]))) {
		bool other = strcmp(c.name, ev->cls) != 0;

		model__gpu_class_release(&c);
		return lg_error_set(
			err, LG_EMISMATCH, "CLASS %s: definition %s", ev->cls,
			other ? "names another class" : "unchanged");
	}
	if (found) {
		model__gpu_class_release(&t->classes[i]);
	} else {
		if (t->n >= HOLDER_MAX_CLASSES) {
			model__gpu_class_release(&c);
			return lg_error_set(err, LG_EMISMATCH,
					    "CLASS %s: more than %d classes",
					    ev->cls, HOLDER_MAX_CLASSES);
		}
		t->classes = lg_xrealloc(t->classes,
					 (t->n + 1) * sizeof(*t->classes));
		memmove(t->classes + i + 1, t->classes + i,
			(t->n - i) * sizeof(*t->classes));
		t->n++;
	}
	t->classes[i] = c;
	table_ids_refresh(st);
	model__holds_table_changed(st);
	return 0;
}

/* A node's existence (DESIGN 6: replay lists every Node object that
 * exists) is the serving flag of the pseudo-class NODE_EXISTS_CLASS, which
 * is never a DNS-1123 label and so never a table class: checkpoints carry
 * it as one more per-class entry, without a new field. A node goes only
 * after its capacities did. */
static int apply_node_exists(state_t *st, const struct event *ev,
			     struct lg_error *err)
{
	struct noderec *n = model__state_node(st, ev->node);
	int32_t id = model__state_cls_id(st, ev->cls);
	bool was = n != NULL && id >= 0 && n->serves[id];

	if (was == ev->present)
		return lg_error_set(err, LG_EMISMATCH, "NODE %s: already %s",
				    ev->node, was ? "exists" : "gone");
	for (uint32_t c = 0; !ev->present && c < st->n_cls; c++)
		if (n->capacity[c] != 0)
			return lg_error_set(err, LG_EMISMATCH,
					    "NODE %s: gone with capacity of %s",
					    ev->node, st->cls_names[c]);
	id = (int32_t)cls_intern(st, ev->cls);
	n = node_get(st, ev->node);
	n->serves[id] = ev->present;
	return 0;
}

static int apply_node(state_t *st, const struct event *ev, struct lg_error *err)
{
	struct noderec *n = model__state_node(st, ev->node);
	int32_t id = model__state_cls_id(st, ev->cls);
	uint32_t cls;

	if (ev->cls[0] == '\0')
		return apply_node_exists(st, ev, err);
	if (n != NULL && id >= 0 && n->capacity[id] == ev->value &&
	    n->serves[id] == ev->present)
		return lg_error_set(err, LG_EMISMATCH, "NODE %s %s: no change",
				    ev->node, ev->cls);
	cls = cls_intern(st, ev->cls);
	n = node_get(st, ev->node);
	n->capacity[cls] = ev->value;
	n->serves[cls] = ev->present;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Units */

static struct hunits *holder_units(const struct holder *h, uint32_t cls)
{
	struct hunits *u = h != NULL ? holder_u(h) : NULL;

	for (uint32_t i = 0; h != NULL && i < h->n; i++)
		if (u[i].cls == cls)
			return &u[i];
	return NULL;
}

/* Only after units_fit said it fits. */
static void bill_advance(struct nsrec *ns, uint32_t cls, int64_t t_ms)
{
	struct bill *b = &ns->bill[cls];

	model__nsrec_bill_at(ns, cls, t_ms, &b->cum_reserved_ms,
			     &b->cum_allocated_ms);
	if (t_ms > b->since_ms)
		b->since_ms = t_ms;
}

/* DESIGN 2.3 "Bounds": every total an event changes, checked before any
 * is: the namespace's own, each ancestor's subtree (per class and over
 * classes), the node's allocation, and the billing integral up to now. An
 * event that would overflow one is refused (LG_EMISMATCH, the state
 * unchanged), never wrapped. ns is the holder's namespace record (NULL:
 * none yet, its totals are 0), node the allocation's node or NULL. */
static int units_fit(const state_t *st, const struct event *ev,
		     const struct nsrec *ns, uint32_t cls,
		     const struct noderec *node, int64_t d)
{
	bool reserve = ev->type == EV_RESERVE || ev->type == EV_RELEASE;
	int64_t v, r, a;
	bool over;

	over = ns != NULL &&
	       (model__nsrec_bill_at(ns, cls, st->time_ns / 1000000, &r, &a) !=
			0 ||
		__builtin_add_overflow(reserve ? ns->reserved[cls]
					       : ns->allocated[cls],
				       d, &v));
	for (const struct nsrec *p = ns && ns->node ? ns : NULL; p && !over;
	     p = p->parent)
		over = reserve ? __builtin_add_overflow(p->sub_reserved[cls], d,
							&v) ||
					 __builtin_add_overflow(
						 p->sub_reserved_total, d, &v)
			       : __builtin_add_overflow(p->sub_allocated[cls],
							d, &v);
	if (!over && !reserve && node != NULL)
		over = __builtin_add_overflow(node->allocated[cls], d, &v);
	if (!over)
		return 0;
	return LG_EMISMATCH;
}

/* The node whose allocation an ALLOC/FREE changes (NULL: none or unknown,
 * whose allocation is 0). */
static const struct noderec *unit_node(const state_t *st,
				       const struct event *ev,
				       const struct holder *h, int32_t id)
{
	const struct hunits *u = holder_units(h, (uint32_t)id);

	if (ev->type == EV_RESERVE || ev->type == EV_RELEASE)
		return NULL;
	if (u != NULL && u->allocated > 0)
		return u->node;
	return ev->node[0] != '\0' ? model__state_node(st, ev->node) : NULL;
}

/* Checks a RESERVE..FREE event against the state; changes nothing. ns is
 * the record of ev->ns, or NULL when there is none. */
static int check_units(const state_t *st, const struct event *ev,
		       const struct nsrec *ns, const struct holder *h,
		       int32_t id, struct lg_error *err)
{
	bool reserve = ev->type == EV_RESERVE || ev->type == EV_RELEASE;
	const struct hunits *u = id >= 0 ? holder_units(h, (uint32_t)id) : NULL;
	int64_t cur = u ? (reserve ? u->reserved : u->allocated) : 0;
	const char *what = event_type_name(ev->type);

	if (cur != ev->before)
		return lg_error_set(err, LG_EMISMATCH,
				    "%s %s/%s %s: before %lld, state has %lld",
				    what, ev->ns, ev->name, ev->cls,
				    (long long)ev->before, (long long)cur);
	if (h != NULL && strcmp(holder_uid(h), ev->uid) != 0)
		return lg_error_set(err, LG_EMISMATCH,
				    "%s %s/%s: uid %s, state has %s", what,
				    ev->ns, ev->name, ev->uid, holder_uid(h));
	/* A record knows whether its name is a tenant's (ns->tenant). */
	if (ev->after > ev->before && (ns == NULL || !ns->node) &&
	    (ns != NULL ? ns->tenant : ns_is_tenant(ev->ns)))
		return lg_error_set(err, LG_EMISMATCH,
				    "%s %s: tenant node does not exist", what,
				    ev->ns);
	if (ev->after > ev->before && id < 0 &&
	    class_table_find(&st->table, ev->cls) == NULL)
		return lg_error_set(err, LG_EMISMATCH,
				    "%s %s: class not in the table", what,
				    ev->cls);
	if (!reserve && u != NULL && u->allocated > 0) {
		const char *at = u->node ? u->node->name : "";

		if (strcmp(at, ev->node) != 0)
			return lg_error_set(err, LG_EMISMATCH,
					    "%s %s/%s: node %s, state has %s",
					    what, ev->ns, ev->name, ev->node,
					    at);
	}
	return 0;
}

/* The holder of ev, created when absent (h is what holder_find gave). */
static struct holder *holder_get(state_t *st, const struct event *ev,
				 struct holder *h)
{
	if (h != NULL)
		return h;
	h = model__holder_new(ev->kind, ns_get(st, ev->ns), ev->name,
			      strlen(ev->name), ev->uid, strlen(ev->uid));
	model__ptab_insert(&st->holder_index,
			   holder_hash(ev->kind, h->ns->name, holder_name(h)),
			   h);
	h->ns->n_holders++;
	st->n_holders++;
	return h;
}

/* A second class moves the units out of line; the array is sized exactly
 * (a holder rarely holds more than one or two classes). */
static struct hunits *hunits_get(struct holder *h, uint32_t cls)
{
	struct hunits *u = holder_units(h, cls);
	uint32_t i = 0;

	if (u != NULL)
		return u;
	u = holder_u(h);
	while (i < h->n && u[i].cls < cls)
		i++;
	if (h->n == 1) {
		struct hunits one = h->u.one;

		u = lg_xmalloc(2 * sizeof(*u));
		u[0] = one;
		h->u.many = u;
	} else if (h->n > 1) {
		u = h->u.many = lg_xrealloc(u, (h->n + 1) * sizeof(*u));
	}
	memmove(u + i + 1, u + i, (h->n - i) * sizeof(*u));
	memset(&u[i], 0, sizeof(u[i]));
	u[i].cls = cls;
	h->n++;
	return &u[i];
}

/* Drops empty unit slots (a last one moves back inline) and, when nothing
 * is left, the holder. */
static void holder_trim(state_t *st, struct holder *h)
{
	struct hunits *u = holder_u(h);
	uint32_t j = 0;

	for (uint32_t i = 0; i < h->n; i++)
		if (u[i].reserved != 0 || u[i].allocated != 0)
			u[j++] = u[i];
	if (h->n > 1 && j <= 1) {
		struct hunits one = u[0];

		free(u);
		h->u.one = one;
	}
	h->n = j;
	if (j > 0)
		return;
	model__ptab_remove(&st->holder_index,
			   holder_hash(h->kind, h->ns->name, holder_name(h)),
			   h);
	h->ns->n_holders--;
	st->n_holders--;
	model__holder_free(h);
}

static int apply_units(state_t *st, const struct event *ev,
		       struct lg_error *err)
{
	/* One hash of the namespace serves its lookup and the holder's. */
	uint64_t ns_hash = model__hash_str(ev->ns);
	struct nsrec *ns =
		model__ptab_find(&st->ns_index, ns_hash, ns_eq, ev->ns);
	struct holder *h = holder_find(st, ev->kind, ns, ns_hash, ev->name);
	bool reserve = ev->type == EV_RESERVE || ev->type == EV_RELEASE;
	int64_t d = ev->after - ev->before;
	struct hunits *u;
	uint32_t cls;
	int rc;

	int32_t id = model__state_cls_id(st, ev->cls);

	rc = check_units(st, ev, ns, h, id, err);
	if (rc != 0)
		return rc;
	/* A class never interned has totals of 0 that one holder's bounded
	 * units cannot overflow. */
	if (id >= 0 &&
	    units_fit(st, ev, ns, (uint32_t)id, unit_node(st, ev, h, id), d))
		return lg_error_set(err, LG_EMISMATCH,
				    "%s %s/%s %s: %lld -> %lld would overflow "
				    "a total",
				    event_type_name(ev->type), ev->ns, ev->name,
				    ev->cls, (long long)ev->before,
				    (long long)ev->after);
	cls = id >= 0 ? (uint32_t)id : cls_intern(st, ev->cls);
	h = holder_get(st, ev, h);
	u = hunits_get(h, cls);
	ns = h->ns;
	bill_advance(ns, cls, st->time_ns / 1000000);
	if (reserve) {
		u->reserved = ev->after;
		ns->reserved[cls] += d;
		for (struct nsrec *a = ns->node ? ns : NULL; a; a = a->parent) {
			a->sub_reserved[cls] += d;
			a->sub_reserved_total += d;
		}
	} else {
		if (ev->before == 0 && ev->node[0] != '\0')
			u->node = node_get(st, ev->node);
		if (u->node != NULL)
			u->node->allocated[cls] += d;
		if (ev->after == 0)
			u->node = NULL;
		u->allocated = ev->after;
		ns->allocated[cls] += d;
		for (struct nsrec *a = ns->node ? ns : NULL; a; a = a->parent)
			a->sub_allocated[cls] += d;
	}
	holder_trim(st, h);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Dispatch */

typedef int apply_fn(state_t *st, const struct event *ev, struct lg_error *err);

static int apply_verdict(state_t *st, const struct event *ev,
			 struct lg_error *err)
{
	st->n_verdicts++;
	model__holds_verdict(st, ev);
	return 0;
}

static int apply_note(state_t *st, const struct event *ev, struct lg_error *err)
{
	st->n_notes++;
	return 0;
}

static int apply_tick(state_t *st, const struct event *ev, struct lg_error *err)
{
	return 0;
}

static apply_fn *const apply_tab[EV_MAX] = {
	[EV_TENANT] = apply_tenant,   [EV_TENANT_GONE] = apply_tenant_gone,
	[EV_BUDGET] = apply_budget,   [EV_RAWKEY] = apply_rawkey,
	[EV_CLASS] = apply_class,     [EV_NODE] = apply_node,
	[EV_RESERVE] = apply_units,   [EV_RELEASE] = apply_units,
	[EV_ALLOC] = apply_units,     [EV_FREE] = apply_units,
	[EV_VERDICT] = apply_verdict, [EV_NOTE] = apply_note,
	[EV_TICK] = apply_tick,	      [EV_HOLDS] = model__holds_mode,
};

int state_apply(state_t *st, const struct event *ev, struct lg_error *err)
{
	int rc = event_validate(ev, err);

	if (rc != 0)
		return lg_error_set(err, LG_EMISMATCH, "seq %llu: %s",
				    (unsigned long long)ev->seq,
				    err ? err->msg : "invalid event");
	return state_apply_validated(st, ev, err);
}

int state_apply_validated(state_t *st, const struct event *ev,
			  struct lg_error *err)
{
	int rc;

	/* event_validate checked the type; apply_tab is indexed by it. */
	LG_ASSERT(ev->type > 0 && ev->type < EV_MAX &&
		  apply_tab[ev->type] != NULL);

	if (ev->seq != 0 && ev->seq != st->seq + 1)
		return lg_error_set(err, LG_EMISMATCH,
				    "seq %llu: expected seq %llu",
				    (unsigned long long)ev->seq,
				    (unsigned long long)st->seq + 1);
	if (ev->time_ns < st->time_ns)
		return lg_error_set(err, LG_EMISMATCH,
				    "seq %llu: time goes back",
				    (unsigned long long)ev->seq);
	/* Time moves first: billing integrates the old levels up to now. */
	int64_t old_time = st->time_ns;
	st->time_ns = ev->time_ns;
	rc = apply_tab[ev->type](st, ev, err);
	if (rc != 0) {
		st->time_ns = old_time;
		return rc;
	}
	st->seq++;
	/* The log's time (the horizon) is that of observations and TICKs:
	 * no answering process's clock (VERDICT, HOLDS) or note moves it.
	 * Holds expire by it first, so an observation after its hold's
	 * expiry finds it expired. */
	if (ev->type != EV_NOTE && ev->type != EV_VERDICT &&
	    ev->type != EV_HOLDS) {
		st->horizon_ns = ev->time_ns;
		model__holds_expire(st, ev->time_ns);
	}
	if (ev->type == EV_RESERVE || ev->type == EV_RELEASE)
		model__holds_observed(st, ev);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* State construction for model/statecodec.c, which builds records directly
 * instead of replaying events. */

uint64_t model__state_holder_hash(enum holder_kind kind, const char *ns,
				  const char *name)
{
	return holder_hash(kind, ns, name);
}
