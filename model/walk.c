/*
 * Walking a state's live records (model/model.h "state_walk"): what a cache
 * of the ledger's view needs, read from the projection itself, so that no
 * other layer keeps a second projection of events to learn it. Each record
 * is visited once, O(live records); the views point into the state.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

static int walk_tenants(const state_t *st, const struct state_walk_fns *f,
			void *ctx)
{
	const struct ptab *t = &st->ns_index;
	struct budget_entry *b = NULL;
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; i < t->cap && rc == 0; i++) {
		const struct nsrec *ns = t->vals[i];
		struct state_tenant_view v;

		if (t->hashes[i] == 0 || !ns->node)
			continue;
		if (ns->n_budgets > cap) {
			cap = ns->n_budgets;
			b = lg_xrealloc(b, cap * sizeof(*b));
		}
		for (size_t k = 0; k < ns->n_budgets; k++)
			b[k] = (struct budget_entry){ns->budgets[k].key,
						     ns->budgets[k].value};
		v = (struct state_tenant_view){
			.ns = ns->name,
			.parent = ns->parent ? ns->parent->name : NULL,
			.n_budgets = ns->n_budgets,
			.budgets = b,
			.n_raw = ns->n_raw,
			.raw = (const char *const *)ns->raw};
		rc = f->tenant(ctx, &v);
	}
	free(b);
	return rc;
}

static int walk_holders(const state_t *st, const struct state_walk_fns *f,
			void *ctx)
{
	const struct ptab *t = &st->holder_index;
	struct state_units_view *u = NULL;
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; i < t->cap && rc == 0; i++) {
		const struct holder *h = t->vals[i];
		const struct hunits *hu;
		size_t n = 0;

		if (t->hashes[i] == 0)
			continue;
		hu = holder_u(h);
		if (h->n > cap) {
			cap = h->n;
			u = lg_xrealloc(u, cap * sizeof(*u));
		}
		for (uint32_t k = 0; k < h->n; k++) {
			if (hu[k].reserved == 0 && hu[k].allocated == 0)
				continue;
			u[n++] = (struct state_units_view){
				.cls = st->cls_names[hu[k].cls],
				.reserved = hu[k].reserved,
				.allocated = hu[k].allocated,
				.node = hu[k].node ? hu[k].node->name : NULL};
		}
		if (n == 0)
			continue;
		rc = f->holder(ctx, &(struct state_holder_view){
					    .kind = (enum holder_kind)h->kind,
					    .ns = h->ns->name,
					    .name = holder_name(h),
					    .uid = holder_uid(h),
					    .n = n,
					    .units = u});
	}
	free(u);
	return rc;
}

static int walk_nodes(const state_t *st, const struct state_walk_fns *f,
		      void *ctx)
{
	const struct ptab *t = &st->node_index;
	struct state_cap_view *c =
		st->n_cls ? lg_xcalloc(st->n_cls, sizeof(*c)) : NULL;
	int rc = 0;

	for (size_t i = 0; i < t->cap && rc == 0; i++) {
		const struct noderec *nr = t->vals[i];
		struct state_node_view v = {0};

		if (t->hashes[i] == 0)
			continue;
		v.name = nr->name;
		v.caps = c;
		for (uint32_t k = 0; k < st->n_cls; k++) {
			if (strcmp(st->cls_names[k], NODE_EXISTS_CLASS) == 0) {
				v.exists = nr->serves[k];
				continue;
			}
			if (nr->capacity[k] == 0 && !nr->serves[k])
				continue;
			c[v.n++] = (struct state_cap_view){st->cls_names[k],
							   nr->capacity[k],
							   nr->serves[k]};
		}
		if (v.exists || v.n > 0)
			rc = f->node(ctx, &v);
	}
	free(c);
	return rc;
}

int state_walk(const state_t *st, const struct state_walk_fns *f, void *ctx)
{
	int rc = 0;

	if (f->tenant != NULL)
		rc = walk_tenants(st, f, ctx);
	if (rc == 0 && f->holder != NULL)
		rc = walk_holders(st, f, ctx);
	if (rc == 0 && f->node != NULL)
		rc = walk_nodes(st, f, ctx);
	return rc;
}
