/*
 * Reading a whole state: sorted listings, the self-check that recomputes
 * every total from the holders, deep copies, and the replay JSON of DESIGN 6.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

static int nsp_cmp(const void *a, const void *b)
{
	return strcmp((*(struct nsrec *const *)a)->name,
		      (*(struct nsrec *const *)b)->name);
}

static int nodep_cmp(const void *a, const void *b)
{
	return strcmp((*(struct noderec *const *)a)->name,
		      (*(struct noderec *const *)b)->name);
}

/* The values of a pointer table in an array, sorted with cmp. */
static void **ptab_sorted(const struct ptab *t, size_t *n,
			  int (*cmp)(const void *, const void *))
{
	void **v = lg_xmalloc((t->n + 1) * sizeof(void *));
	size_t k = 0;

	for (size_t i = 0; i < t->cap; i++)
		if (t->hashes[i] != 0)
			v[k++] = t->vals[i];
	qsort(v, k, sizeof(void *), cmp);
	*n = k;
	return v;
}

struct nsrec **model__state_ns_sorted(const state_t *st, size_t *n)
{
	return (struct nsrec **)ptab_sorted(&st->ns_index, n, nsp_cmp);
}

struct noderec **model__state_nodes_sorted(const state_t *st, size_t *n)
{
	return (struct noderec **)ptab_sorted(&st->node_index, n, nodep_cmp);
}

/* ---------------------------------------------------------------------- */
/* Self-check */

static int check_ns(const state_t *st, struct nsrec *const *v, size_t n,
		    struct lg_error *err)
{
	uint32_t cc = st->cls_cap;
	int64_t *res = lg_xcalloc(n * cc + 1, sizeof(int64_t));
	int64_t *alloc = lg_xcalloc(n * cc + 1, sizeof(int64_t));
	int rc = 0;

	/* Own totals from the holders. */
	for (size_t i = 0; i < st->holder_index.cap; i++) {
		const struct holder *h = st->holder_index.vals[i];
		const struct hunits *u;
		struct nsrec *const *p;

		if (st->holder_index.hashes[i] == 0)
			continue;
		u = holder_u(h);
		p = bsearch(&h->ns, v, n, sizeof(*v), nsp_cmp);
		for (uint32_t k = 0; p && k < h->n; k++) {
			res[(size_t)(p - v) * cc + u[k].cls] += u[k].reserved;
			alloc[(size_t)(p - v) * cc + u[k].cls] +=
				u[k].allocated;
		}
	}
	/* Subtree totals: add each node's own totals to all its ancestors. */
	for (size_t i = 0; i < n && rc == 0; i++) {
		for (uint32_t c = 0; c < st->n_cls && rc == 0; c++) {
			if (v[i]->reserved[c] != res[i * cc + c] ||
			    v[i]->allocated[c] != alloc[i * cc + c])
				rc = lg_error_set(err, LG_ECORRUPT,
						  "%s/%s: own totals differ "
						  "from its holders",
						  v[i]->name, st->cls_names[c]);
		}
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		int64_t total = 0;

		if (!v[i]->node)
			continue;
		for (uint32_t c = 0; c < st->n_cls && rc == 0; c++) {
			int64_t sr = 0, sa = 0;

			for (size_t j = 0; j < n; j++) {
				const struct nsrec *a =
					v[j]->node ? v[j] : NULL;

				for (; a != NULL && a != v[i]; a = a->parent)
					;
				if (a == v[i]) {
					sr += v[j]->reserved[c];
					sa += v[j]->allocated[c];
				}
			}
			total += sr;
			if (v[i]->sub_reserved[c] != sr ||
			    v[i]->sub_allocated[c] != sa)
				rc = lg_error_set(err, LG_ECORRUPT,
						  "%s/%s: subtree totals "
						  "differ from a recount",
						  v[i]->name, st->cls_names[c]);
		}
		if (rc == 0 && v[i]->sub_reserved_total != total)
			rc = lg_error_set(err, LG_ECORRUPT,
					  "%s: subtree total differs",
					  v[i]->name);
	}
	free(res);
	free(alloc);
	return rc;
}

static int check_nodes(const state_t *st, struct lg_error *err)
{
	int rc = 0;

	for (size_t i = 0; i < st->node_index.cap && rc == 0; i++) {
		const struct noderec *nd = st->node_index.vals[i];

		if (st->node_index.hashes[i] == 0)
			continue;
		for (uint32_t c = 0; c < st->n_cls && rc == 0; c++) {
			int64_t sum = 0;

			for (size_t j = 0; j < st->holder_index.cap; j++) {
				const struct holder *h =
					st->holder_index.vals[j];
				const struct hunits *u;

				if (st->holder_index.hashes[j] == 0)
					continue;
				u = holder_u(h);
				for (uint32_t k = 0; k < h->n; k++)
					if (u[k].cls == c && u[k].node == nd)
						sum += u[k].allocated;
			}
			if (sum != nd->allocated[c])
				rc = lg_error_set(err, LG_ECORRUPT,
						  "node %s/%s: allocated %lld, "
						  "holders say %lld",
						  nd->name, st->cls_names[c],
						  (long long)nd->allocated[c],
						  (long long)sum);
		}
	}
	return rc;
}

int model__state_check(const state_t *st, struct lg_error *err)
{
	size_t n;
	struct nsrec **v = model__state_ns_sorted(st, &n);
	int rc = check_ns(st, v, n, err);

	free(v);
	if (rc == 0)
		rc = check_nodes(st, err);
	return rc ? rc : model__holds_check(st, err);
}

/* ---------------------------------------------------------------------- */
/* Deep copy: replaying the state's own content into a new state would need
 * the events; copying the structures keeps clone O(size). */

static struct nsrec *ns_copy(const struct nsrec *s, uint32_t cap)
{
	struct nsrec *d = lg_xmalloc(sizeof(*d));

	*d = *s;
	d->name = lg_xstrdup(s->name);
	d->parent = d->child = d->sibling = NULL;
	d->budgets = lg_xmalloc((s->n_budgets + 1) * sizeof(*d->budgets));
	for (size_t i = 0; i < s->n_budgets; i++) {
		d->budgets[i].key = lg_xstrdup(s->budgets[i].key);
		d->budgets[i].value = s->budgets[i].value;
	}
	d->raw = lg_xmalloc((s->n_raw + 1) * sizeof(char *));
	for (size_t i = 0; i < s->n_raw; i++)
		d->raw[i] = lg_xstrdup(s->raw[i]);
#define DUP(f)                                                   \
	d->f = memcpy(lg_xmalloc(cap * sizeof(*d->f) + 1), s->f, \
		      cap * sizeof(*d->f))
	DUP(reserved);
	DUP(allocated);
	DUP(sub_reserved);
	DUP(sub_allocated);
	DUP(bill);
	/* Held totals are counted again as the holds are copied. */
	d->held = lg_xcalloc(cap + 1, sizeof(*d->held));
	d->sub_held = lg_xcalloc(cap + 1, sizeof(*d->sub_held));
	d->sub_held_total = 0;
	d->n_holds = 0;
	return d;
}

static struct noderec *node_copy(const struct noderec *s, uint32_t cap)
{
	struct noderec *d = lg_xmalloc(sizeof(*d));

	d->name = lg_xstrdup(s->name);
	DUP(capacity);
	DUP(allocated);
	DUP(serves);
#undef DUP
	return d;
}

/* Copies a table's shape slot by slot: slot i of the copy will hold the copy
 * of slot i, so no rehashing is needed. */
static void ptab_copy_shape(struct ptab *d, const struct ptab *s)
{
	d->cap = s->cap;
	d->n = s->n;
	d->hashes = lg_xcalloc(s->cap + 1, sizeof(*d->hashes));
	d->vals = lg_xcalloc(s->cap + 1, sizeof(*d->vals));
	if (s->cap)
		memcpy(d->hashes, s->hashes, s->cap * sizeof(*s->hashes));
}

/* The record of d with the name of s's record p. */
static struct nsrec *same_ns(const state_t *d, const struct nsrec *p)
{
	return p ? model__state_ns(d, p->name) : NULL;
}

static void clone_tree(state_t *d, const state_t *s)
{
	/* Children are relinked in the same order as in s. */
	for (size_t i = 0; i < s->ns_index.cap; i++) {
		const struct nsrec *sn = s->ns_index.vals[i];
		struct nsrec *dn = d->ns_index.vals[i];

		if (s->ns_index.hashes[i] == 0)
			continue;
		dn->parent = same_ns(d, sn->parent);
		dn->child = same_ns(d, sn->child);
		dn->sibling = same_ns(d, sn->sibling);
	}
	d->root = same_ns(d, s->root);
}

state_t *state_clone(const state_t *s)
{
	state_t *d = state_new();

	d->seq = s->seq;
	d->time_ns = s->time_ns;
	d->horizon_ns = s->horizon_ns;
	d->n_verdicts = s->n_verdicts;
	d->n_notes = s->n_notes;
	d->table.n = s->table.n;
	d->table.classes = lg_xcalloc(s->table.n + 1, sizeof(struct gpu_class));
	for (size_t i = 0; i < s->table.n; i++)
		gpu_class_copy(&d->table.classes[i], &s->table.classes[i]);
	d->table_ids = lg_xmalloc(s->table.n * sizeof(uint32_t) + 1);
	if (s->table.n > 0)
		memcpy(d->table_ids, s->table_ids,
		       s->table.n * sizeof(uint32_t));
	d->n_cls = s->n_cls;
	d->cls_cap = s->cls_cap;
	d->cls_names = lg_xcalloc(s->cls_cap + 1, sizeof(char *));
	for (uint32_t i = 0; i < s->n_cls; i++)
		d->cls_names[i] = lg_xstrdup(s->cls_names[i]);
	ptab_copy_shape(&d->cls_index, &s->cls_index);
	if (s->cls_index.cap > 0)
		memcpy(d->cls_index.vals, s->cls_index.vals,
		       s->cls_index.cap * sizeof(void *));
	ptab_copy_shape(&d->ns_index, &s->ns_index);
	for (size_t i = 0; i < s->ns_index.cap; i++)
		if (s->ns_index.hashes[i] != 0)
			d->ns_index.vals[i] =
				ns_copy(s->ns_index.vals[i], s->cls_cap);
	clone_tree(d, s);
	ptab_copy_shape(&d->node_index, &s->node_index);
	for (size_t i = 0; i < s->node_index.cap; i++)
		if (s->node_index.hashes[i] != 0)
			d->node_index.vals[i] =
				node_copy(s->node_index.vals[i], s->cls_cap);
	ptab_copy_shape(&d->holder_index, &s->holder_index);
	d->n_holders = s->n_holders;
	for (size_t i = 0; i < s->holder_index.cap; i++) {
		const struct holder *sh = s->holder_index.vals[i];
		const char *uid;
		struct holder *dh;
		struct hunits *u;

		if (s->holder_index.hashes[i] == 0)
			continue;
		uid = holder_uid(sh);
		dh = model__holder_new(
			sh->kind, model__state_ns(d, sh->ns->name),
			holder_name(sh), sh->uid_at - 1u, uid, strlen(uid));
		dh->n = sh->n;
		if (sh->n > 1)
			dh->u.many = memcpy(lg_xmalloc(sh->n * sizeof(*u)),
					    sh->u.many, sh->n * sizeof(*u));
		else
			dh->u.one = sh->u.one;
		u = holder_u(dh);
		for (uint32_t k = 0; k < dh->n; k++)
			if (u[k].node != NULL)
				u[k].node =
					model__state_node(d, u[k].node->name);
		d->holder_index.vals[i] = dh;
	}
	model__holds_clone(d, s);
	return d;
}

/* ---------------------------------------------------------------------- */
/* Replay JSON (DESIGN 6) */

/* {class: value} for the non-zero entries of a per-class array. */
static json_t *class_counts(const state_t *st, const int64_t *v)
{
	json_t *o = json_object();

	for (uint32_t c = 0; c < st->n_cls; c++)
		if (v[c] != 0)
			json_object_set_new(o, st->cls_names[c],
					    json_integer(v[c]));
	return o;
}

static json_t *tenant_json(const state_t *st, const struct nsrec *ns)
{
	json_t *o = json_object(), *b = json_object(), *raw = json_array();

	json_object_set_new(o, "namespace", json_string(ns->name));
	json_object_set_new(o, "parent",
			    ns->parent ? json_string(ns->parent->name)
				       : json_null());
	for (size_t i = 0; i < ns->n_budgets; i++)
		json_object_set_new(b, ns->budgets[i].key,
				    json_integer(ns->budgets[i].value));
	json_object_set_new(o, "budgets", b);
	for (size_t i = 0; i < ns->n_raw; i++)
		json_array_append_new(raw, json_string(ns->raw[i]));
	json_object_set_new(o, "rawKeys", raw);
	json_object_set_new(o, "reserved", class_counts(st, ns->reserved));
	json_object_set_new(o, "allocated", class_counts(st, ns->allocated));
	json_object_set_new(o, "subtreeReserved",
			    class_counts(st, ns->sub_reserved));
	json_object_set_new(o, "subtreeAllocated",
			    class_counts(st, ns->sub_allocated));
	/* DESIGN 3.7: only with holds on, so that a state without them
	 * prints what it always did. */
	if (state_holds_on(st)) {
		json_object_set_new(o, "held", class_counts(st, ns->held));
		json_object_set_new(o, "subtreeHeld",
				    class_counts(st, ns->sub_held));
	}
	json_object_set_new(o, "remaining",
			    model__tenant_remaining_json(st, ns));
	json_object_set_new(o, "remainingTotal",
			    model__tenant_remaining_total_json(st, ns));
	json_object_set_new(o, "overcommitted",
			    model__tenant_overcommit_json(st, ns));
	return o;
}

/* A node exists for the replay while its Node object does (the NODE
 * existence event, model/state.c), so that one with no GPU entries, or with
 * units bound to it after its device plugin left, is listed. A log written
 * before existence events only says it through capacity. */
static bool node_exists(const state_t *st, const struct noderec *nd)
{
	int32_t id = model__state_cls_id(st, NODE_EXISTS_CLASS);

	if (id >= 0 && nd->serves[id])
		return true;
	for (uint32_t c = 0; c < st->n_cls; c++)
		if (nd->capacity[c] > 0)
			return true;
	return false;
}

static json_t *classes_json(const state_t *st, struct noderec *const *nodes,
			    size_t n_nodes)
{
	json_t *a = json_array();

	for (size_t i = 0; i < st->table.n; i++) {
		uint32_t c = st->table_ids[i];
		json_t *o = gpu_class_to_json(&st->table.classes[i]);
		int64_t cap = 0, free_units = 0;

		for (size_t k = 0; k < n_nodes; k++) {
			const struct noderec *nd = nodes[k];
			int64_t left = nd->capacity[c] - nd->allocated[c];

			cap += nd->capacity[c];
			if (nd->serves[c] && left > 0)
				free_units += left;
		}
		json_object_set_new(o, "capacity", json_integer(cap));
		json_object_set_new(o, "free", json_integer(free_units));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *nodes_json(const state_t *st, struct noderec *const *nodes,
			  size_t n_nodes)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n_nodes; i++) {
		const struct noderec *nd = nodes[i];
		json_t *o, *cls = json_object();

		if (!node_exists(st, nd)) {
			json_decref(cls);
			continue;
		}
		for (uint32_t c = 0; c < st->n_cls; c++) {
			json_t *e;

			if (nd->capacity[c] == 0 && nd->allocated[c] == 0)
				continue;
			e = json_pack("{s:I,s:I,s:b}", "capacity",
				      (json_int_t)nd->capacity[c], "allocated",
				      (json_int_t)nd->allocated[c], "serves",
				      (int)nd->serves[c]);
			json_object_set_new(cls, st->cls_names[c], e);
		}
		o = json_object();
		json_object_set_new(o, "name", json_string(nd->name));
		json_object_set_new(o, "classes", cls);
		json_array_append_new(a, o);
	}
	return a;
}

json_t *state_to_json(const state_t *st, const char *only)
{
	size_t n_ns, n_nodes;
	struct nsrec **ns = model__state_ns_sorted(st, &n_ns);
	struct noderec **nodes = model__state_nodes_sorted(st, &n_nodes);
	json_t *o = json_object(), *tenants = json_array();
	char tbuf[48];

	json_object_set_new(o, "seq", json_integer((json_int_t)st->seq));
	time_format_ns(st->time_ns, tbuf, sizeof(tbuf));
	json_object_set_new(o, "time", json_string(tbuf));
	for (size_t i = 0; i < n_ns; i++)
		if (ns[i]->node &&
		    (only == NULL || strcmp(only, ns[i]->name) == 0))
			json_array_append_new(tenants, tenant_json(st, ns[i]));
	json_object_set_new(o, "tenants", tenants);
	json_object_set_new(o, "classes", classes_json(st, nodes, n_nodes));
	json_object_set_new(o, "nodes", nodes_json(st, nodes, n_nodes));
	if (state_holds_on(st))
		json_object_set_new(o, "holds",
				    json_pack("{s:I, s:o}", "ttlMs",
					      (json_int_t)st->holds.ttl_ms,
					      "alive",
					      state_holds_json(st, only)));
	free(ns);
	free(nodes);
	return o;
}
