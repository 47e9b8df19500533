/*
 * The tenant tree (DESIGN 2.1, 2.2): tenant nodes with the reasons they
 * exist, Namespace objects, and the budgets and raw keys of Tenant objects.
 *
 * A node exists while its Namespace exists, a Tenant governs it, a holder
 * in it holds units, or a child node exists. The ledger checks the tree
 * order, so TENANT events go root first (every missing ancestor before the
 * node) and TENANT_GONE leaf first, after the budgets and raw keys of the
 * node are withdrawn.
 */
#include "ingest/ingest_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Depth of the deepest tenant: a DNS-1123 label has at most 63 characters,
 * and every level adds at least two ("-x"). */
#define TREE_DEPTH_MAX 32

struct tnode *ingest__tnode_get(ingest_t *in, const char *ns, bool create)
{
	struct tnode *t = ingest__smap_get(&in->tnodes, ns);

	if (t != NULL || !create)
		return t;
	t = lg_xcalloc(1, sizeof(*t));
	t->ns = lg_xstrdup(ns);
	ingest__smap_put(&in->tnodes, t);
	return t;
}

void ingest__tnode_free(struct tnode *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n_budgets; i++)
		free((char *)t->budgets[i].key);
	free(t->budgets);
	for (size_t i = 0; i < t->n_raw; i++)
		free(t->raw[i]);
	free(t->raw);
	free(t->ns);
	free(t);
}

static bool wanted(const struct tnode *t)
{
	return t->ns_present || t->governor != NULL || t->n_holding > 0 ||
	       t->n_children > 0 || t->n_budgets > 0 || t->n_raw > 0;
}

/* Forgets a node that neither exists nor has a reason to. */
static void tnode_gc(ingest_t *in, struct tnode *t)
{
	if (t->exists || wanted(t))
		return;
	ingest__smap_del(&in->tnodes, t);
	ingest__tnode_free(t);
}

static void emit_tenant(ingest_t *in, enum event_type type, const char *ns)
{
	char parent[DNS1123_SUBDOMAIN_MAX + 1];
	bool has = ns_parent(ns, parent);

	ingest__emit(in, &(struct event){.type = type,
					 .ns = ns,
					 .parent = has ? parent : NULL});
}

void ingest__tnode_ensure(ingest_t *in, const char *ns)
{
	char chain[TREE_DEPTH_MAX][DNS1123_SUBDOMAIN_MAX + 1];
	char cur[DNS1123_SUBDOMAIN_MAX + 1], up[DNS1123_SUBDOMAIN_MAX + 1];
	size_t n = 0;

	if (!ns_is_tenant(ns) || strlen(ns) > DNS1123_LABEL_MAX)
		return;
	snprintf(cur, sizeof(cur), "%s", ns);
	/* Collect the missing nodes nearest first, then create root first. */
	while (n < TREE_DEPTH_MAX) {
		if (ingest__tnode_get(in, cur, true)->exists)
			break;
		memcpy(chain[n++], cur, sizeof(cur));
		if (!ns_parent(cur, up))
			break;
		memcpy(cur, up, sizeof(cur));
	}
	while (n-- > 0) {
		struct tnode *t = ingest__tnode_get(in, chain[n], true);

		emit_tenant(in, EV_TENANT, chain[n]);
		t->exists = true;
		if (ns_parent(chain[n], up))
			ingest__tnode_get(in, up, true)->n_children++;
	}
}

void ingest__tnode_check(ingest_t *in, const char *ns)
{
	char cur[DNS1123_SUBDOMAIN_MAX + 1], up[DNS1123_SUBDOMAIN_MAX + 1];

	if (strlen(ns) > DNS1123_SUBDOMAIN_MAX)
		return;
	snprintf(cur, sizeof(cur), "%s", ns);
	for (int depth = 0; depth < TREE_DEPTH_MAX; depth++) {
		struct tnode *t = ingest__tnode_get(in, cur, false);
		bool has;

		if (t == NULL)
			return;
		if (!t->exists || wanted(t)) {
			tnode_gc(in, t);
			return;
		}
		emit_tenant(in, EV_TENANT_GONE, cur);
		t->exists = false;
		tnode_gc(in, t);
		has = ns_parent(cur, up);
		if (!has || (t = ingest__tnode_get(in, up, false)) == NULL)
			return;
		t->n_children--;
		memcpy(cur, up, sizeof(cur));
	}
}

/* ---------------------------------------------------------------------- */
/* Budgets and raw keys as the ledger holds them. */

void ingest__tnode_budget_set(struct tnode *t, const char *key, bool present,
			      int64_t value)
{
	size_t i = 0;

	while (i < t->n_budgets && strcmp(t->budgets[i].key, key) < 0)
		i++;
	if (i < t->n_budgets && strcmp(t->budgets[i].key, key) == 0) {
		if (present) {
			t->budgets[i].value = value;
			return;
		}
		free((char *)t->budgets[i].key);
		memmove(t->budgets + i, t->budgets + i + 1,
			(t->n_budgets - i - 1) * sizeof(*t->budgets));
		t->n_budgets--;
		return;
	}
	if (!present)
		return;
	t->budgets = lg_xrealloc(t->budgets,
				 (t->n_budgets + 1) * sizeof(*t->budgets));
	memmove(t->budgets + i + 1, t->budgets + i,
		(t->n_budgets - i) * sizeof(*t->budgets));
	t->budgets[i] = (struct budget_entry){lg_xstrdup(key), value};
	t->n_budgets++;
}

void ingest__tnode_raw_set(struct tnode *t, const char *res, bool present)
{
	size_t i = 0;

	while (i < t->n_raw && strcmp(t->raw[i], res) < 0)
		i++;
	if (i < t->n_raw && strcmp(t->raw[i], res) == 0) {
		if (present)
			return;
		free(t->raw[i]);
		memmove(t->raw + i, t->raw + i + 1,
			(t->n_raw - i - 1) * sizeof(*t->raw));
		t->n_raw--;
		return;
	}
	if (!present)
		return;
	t->raw = lg_xrealloc(t->raw, (t->n_raw + 1) * sizeof(*t->raw));
	memmove(t->raw + i + 1, t->raw + i, (t->n_raw - i) * sizeof(*t->raw));
	t->raw[i] = lg_xstrdup(res);
	t->n_raw++;
}

static void set_budget(ingest_t *in, struct tnode *t, const char *key,
		       bool present, int64_t value)
{
	ingest__emit(in, &(struct event){.type = EV_BUDGET,
					 .ns = t->ns,
					 .key = key,
					 .present = present,
					 .value = present ? value : 0});
	ingest__tnode_budget_set(t, key, present, value);
}

static void set_raw(ingest_t *in, struct tnode *t, const char *res,
		    bool present)
{
	ingest__emit(in, &(struct event){.type = EV_RAWKEY,
					 .ns = t->ns,
					 .key = res,
					 .present = present});
	ingest__tnode_raw_set(t, res, present);
}

/* Budgets of t become want[0..n) (sorted by key): a merge in key order. */
static void diff_budgets(ingest_t *in, struct tnode *t,
			 const struct budget_entry *want, size_t n)
{
	size_t i = 0, j = 0;

	while (i < t->n_budgets || j < n) {
		int c = i == t->n_budgets ? 1
			: j == n	  ? -1
				 : strcmp(t->budgets[i].key, want[j].key);

		if (c < 0) {
			/* Removing shifts the next old key into slot i. */
			set_budget(in, t, t->budgets[i].key, false, 0);
		} else if (c > 0) {
			set_budget(in, t, want[j].key, true, want[j].value);
			i++;
			j++;
		} else {
			if (t->budgets[i].value != want[j].value)
				set_budget(in, t, want[j].key, true,
					   want[j].value);
			i++;
			j++;
		}
	}
}

static void diff_raw(ingest_t *in, struct tnode *t, const char *const *want,
		     size_t n)
{
	size_t i = 0, j = 0;

	while (i < t->n_raw || j < n) {
		int c = i == t->n_raw ? 1
			: j == n      ? -1
				      : strcmp(t->raw[i], want[j]);

		if (c < 0) {
			set_raw(in, t, t->raw[i], false);
		} else {
			if (c > 0)
				set_raw(in, t, want[j], true);
			i++;
			j++;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Namespaces */

int ingest__ns_upsert(ingest_t *in, enum resource r, const json_t *obj,
		      struct obj *o)
{
	struct namespace_map nm;
	struct lg_error e = {0};

	if (namespace_map_object(obj, &nm, &e) != 0) {
		ingest__emit_note(in, o, "InvalidObject", HK_NONE, NULL,
				  ingest__meta_str(obj, "name"),
				  "Namespace: %s", e.msg);
		return 0;
	}
	if (o == NULL)
		o = ingest__obj_add(in, r, "", nm.name,
				    ingest__meta_str(obj, "uid"));
	ingest__obj_set_uid(o, ingest__meta_str(obj, "uid")
				       ? ingest__meta_str(obj, "uid")
				       : "");
	if (nm.tenant) {
		ingest__tnode_get(in, nm.name, true)->ns_present = true;
		ingest__tnode_ensure(in, nm.name);
	}
	if (!nm.labels_agree)
		ingest__emit_note(in, o, "LabelMismatch", HK_NONE, NULL,
				  nm.name, "%s", e.msg);
	else
		o->note = 0;
	return 0;
}

void ingest__ns_delete(ingest_t *in, enum resource r, struct obj *o)
{
	char name[DNS1123_SUBDOMAIN_MAX + 1];
	struct tnode *t;

	snprintf(name, sizeof(name), "%s", o->name);
	ingest__obj_del(in, r, o);
	if ((t = ingest__tnode_get(in, name, false)) != NULL) {
		t->ns_present = false;
		ingest__tnode_check(in, name);
	}
}

/* ---------------------------------------------------------------------- */
/* Tenants */

/* What mapping a Tenant again needs. */
static json_t *tenant_extract(const json_t *obj)
{
	json_t *d = json_object(), *md = json_object();

	json_object_set_new(d, "apiVersion", ingest__jcopy(obj, "apiVersion"));
	json_object_set_new(d, "kind", ingest__jcopy(obj, "kind"));
	json_object_set_new(md, "name",
			    json_string(ingest__meta_str(obj, "name")));
	json_object_set_new(md, "namespace",
			    json_string(ingest__meta_str(obj, "namespace")));
	json_object_set_new(d, "metadata", md);
	if (json_object_get(obj, "spec") != NULL)
		json_object_set_new(d, "spec", ingest__jcopy(obj, "spec"));
	return d;
}

/* Withdraws what o contributed: its budgets and raw keys, then the node
 * when nothing else keeps it. */
static void withdraw(ingest_t *in, struct obj *o)
{
	char g[DNS1123_SUBDOMAIN_MAX + 1];
	struct tnode *t;

	if (o->governed == NULL)
		return;
	snprintf(g, sizeof(g), "%s", o->governed);
	free(o->governed);
	o->governed = NULL;
	t = ingest__tnode_get(in, g, false);
	if (t == NULL || t->governor != o)
		return;
	diff_budgets(in, t, NULL, 0);
	diff_raw(in, t, NULL, 0);
	t->governor = NULL;
	ingest__tnode_check(in, g);
}

/* Checks that o may govern tm->governed; NOTEs and false when not. */
static bool may_govern(ingest_t *in, struct obj *o, const struct tenant_map *tm)
{
	struct tnode *t;

	if (!ns_is_tenant(tm->governed)) {
		ingest__emit_note(
			in, o, "NotATenant", HK_NONE, o->ns, o->name,
			"Tenant %s/%s governs %s, which is not a tenant "
			"namespace",
			o->ns, o->name, tm->governed);
		return false;
	}
	t = ingest__tnode_get(in, tm->governed, false);
	if (t != NULL && t->governor != NULL && t->governor != o) {
		ingest__emit_note(
			in, o, "TenantConflict", HK_NONE, o->ns, o->name,
			"Tenant %s/%s governs %s, already governed by "
			"Tenant %s/%s",
			o->ns, o->name, tm->governed, t->governor->ns,
			t->governor->name);
		return false;
	}
	return true;
}

int ingest__tenant_upsert(ingest_t *in, enum resource r, const json_t *obj,
			  struct obj *o)
{
	struct tenant_map tm;
	struct lg_error e = {0};
	const char *uid = ingest__meta_str(obj, "uid");
	struct tnode *t;
	int rc;

	if (o == NULL)
		o = ingest__obj_add(in, r, ingest__meta_str(obj, "namespace"),
				    ingest__meta_str(obj, "name"), uid);
	ingest__obj_set_uid(o, uid ? uid : "");
	if (obj != o->doc)
		ingest__obj_set_doc(o, tenant_extract(obj));
	rc = tenant_map_object(obj, &in->table, &tm, &e);
	if (rc != 0) {
		withdraw(in, o);
		ingest__emit_note(in, o, "InvalidObject", HK_NONE, o->ns,
				  o->name, "Tenant: %s", e.msg);
		return 0;
	}
	if (!may_govern(in, o, &tm)) {
		withdraw(in, o);
		tenant_map_release(&tm);
		return 0;
	}
	t = ingest__tnode_get(in, tm.governed, true);
	t->governor = o;
	free(o->governed);
	o->governed = lg_xstrdup(tm.governed);
	ingest__tnode_ensure(in, tm.governed);
	diff_budgets(in, t, tm.budgets, tm.n_budgets);
	diff_raw(in, t, tm.raw, tm.n_raw);
	if (tm.n_invalid > 0)
		ingest__emit_note(in, o, "InvalidBudget", HK_NONE, o->ns,
				  o->name, "Tenant %s/%s: %s", o->ns, o->name,
				  e.msg);
	else
		o->note = 0;
	tenant_map_release(&tm);
	return 0;
}

void ingest__tenant_delete(ingest_t *in, enum resource r, struct obj *o)
{
	withdraw(in, o);
	ingest__obj_del(in, r, o);
}
