/*
 * Verdicts (DESIGN 3, Appendix A "Verdicts"): admission, declaration,
 * remaining budget and overcommit. Every function here only reads the state.
 *
 * The verdict objects are part of the byte-for-byte audit contract: `audit`
 * recomputes a stored verdict and compares canonical JSON, so every text
 * below is fixed and must not change without a format version:
 *
 *   reason               message
 *   ------               -------
 *   Invalid              the holder mapping's error text ("invalid spec"
 *                        when it gave none)
 *   UnknownClass         the holder mapping's error text, else
 *                        "spec.gpus[<i>].class: unknown class <c>" for
 *                        the first entry naming a class not in the table
 *   NotATenant           "namespace is not a tenant"
 *   NoGrowth             "no growth"
 *   WithinBudget         "within budget"
 *   Unconstrained        "tenant-root is unconstrained"
 *   RawKeyBlocksClass    "<T>: raw key <key> blocks class <c>"
 *   ClassBudgetExceeded, TotalBudgetExceeded, ExceedsParentBudget
 *                        "<T>: <key> <used> + <growth> > <budget>", and
 *                        judged with holds on (DESIGN 3.7)
 *                        "<T>: <key> <used> + <held> + <growth> > <budget>"
 *   InvalidBudgetKey     "invalid budget key <key>"
 *   InvalidQuantity      "invalid quantity for <key>"
 *
 *   warnings of a declaration, in this order: all unknown-class warnings
 *   by key, then all overcommit warnings by key:
 *     "<key>: class <c> is not in the class table"
 *     "<key>: <value> is below the subtree usage <used>"
 *   warnings of an admission whose valid new spec has raw entries, one per
 *   raw entry in entry order (issue 10, case 6; the verdict is unchanged):
 *     "spec.gpus[<i>]: raw entry <name> reserves nothing itself; it is
 *      counted once its pod exists"
 *   (<name> is the entry's "name" string cut to 317 bytes, "(no name)"
 *   when it has none)
 *
 * Numbers are printed in decimal. Sums that could leave int64 (budgets may be
 * as large as 2^63-1) are computed in 128 bits so that every comparison is
 * exact; only the printed numbers are clamped to the int64 range.
 */
#include "model/model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exact arithmetic for sums of budgets and usages (a GCC/Clang extension,
 * present on every 64-bit target we build for). */
typedef __int128 wide_t;

/* Names lose at least two characters per level ("-x"), so no chain of
 * parents of a name the tree accepts is longer than this. */
#define ANC_MAX (DNS1123_SUBDOMAIN_MAX / 2 + 2)
/* "<class>.gpuclass.cozystack.io/devices" with a class of at most 63. */
#define CLASS_KEY_MAX (DNS1123_LABEL_MAX + sizeof(GPU_CLASS_KEY_SUFFIX))

#define MSG_INVALID	  "invalid spec"
#define MSG_NOT_TENANT	  "namespace is not a tenant"
#define MSG_NO_GROWTH	  "no growth"
#define MSG_WITHIN	  "within budget"
#define MSG_UNCONSTRAINED "tenant-root is unconstrained"
#define MSG_NO_STATE	  "no state: pass --db DIR or an inline \"state\""

/* ---------------------------------------------------------------------- */
/* Small helpers.                                                           */

static int64_t clamp64(wide_t v)
{
	if (v > INT64_MAX)
		return INT64_MAX;
	if (v < INT64_MIN)
		return INT64_MIN;
	return (int64_t)v;
}

/* A copy of s as valid UTF-8. Mapping errors may quote input cut in the
 * middle of a UTF-8 sequence; such bytes become '?' so that the verdict
 * stays valid. */
static char *vtext(const char *s)
{
	json_t *v = json_string(s);
	char *copy = lg_xstrdup(s);

	if (v == NULL)
		for (char *p = copy; *p != '\0'; p++)
			if ((unsigned char)*p >= 0x80)
				*p = '?';
	json_decref(v);
	return copy;
}

static char *vfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *vfmt(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *buf, *v;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	LG_ASSERT(n >= 0);
	buf = lg_xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(buf, (size_t)n + 1, fmt, ap);
	va_end(ap);
	v = vtext(buf);
	free(buf);
	return v;
}

static void class_key(const char *cls, char *out)
{
	snprintf(out, CLASS_KEY_MAX, "%s%s", cls, GPU_CLASS_KEY_SUFFIX);
}

static int by_strcmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---------------------------------------------------------------------- */
/* Ancestors and usage.                                                     */

/* ancestors_inclusive(ns) by name, nearest first. A record is NULL where the
 * state has never seen the namespace: no budgets, usage 0. */
struct ancestry {
	size_t n;
	char *name[ANC_MAX];
	const struct nsrec *rec[ANC_MAX];
};

static void ancestry_init(struct ancestry *a, const state_t *st, const char *ns)
{
	char parent[DNS1123_SUBDOMAIN_MAX + 1];
	const char *cur = ns;

	a->n = 0;
	while (a->n < ANC_MAX) {
		a->name[a->n] = lg_xstrdup(cur);
		a->rec[a->n] = model__state_ns(st, cur);
		cur = a->name[a->n++];
		if (!ns_parent(cur, parent))
			break;
		cur = parent;
	}
}

static void ancestry_release(struct ancestry *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->name[i]);
	a->n = 0;
}

/* What a budget key measures: one class (by state class id, -1 when the
 * class was never seen, so usage 0) or all classes. */
struct measure {
	bool total;
	int32_t cls;
};

static struct measure key_measure(const state_t *st, const char *key)
{
	struct measure m = {.total = false, .cls = -1};
	char label[DNS1123_LABEL_MAX + 1];
	const char *cls = NULL;
	size_t len = 0;

	switch (model__budget_key_classify(key, NULL, &cls, &len, NULL)) {
	case KEY_TOTAL:
		m.total = true;
		break;
	case KEY_CLASS:
		if (cls != NULL && len < sizeof(label)) {
			memcpy(label, cls, len);
			label[len] = '\0';
			m.cls = model__state_cls_id(st, label);
		}
		break;
	default:
		break;
	}
	return m;
}

/* U(T, c) or U(T): the subtree's reserved units that key measures. */
static int64_t usage(const state_t *st, const struct nsrec *r, struct measure m)
{
	if (r == NULL)
		return 0;
	if (m.total)
		return r->sub_reserved_total;
	if (m.cls < 0 || (uint32_t)m.cls >= st->n_cls ||
	    r->sub_reserved == NULL)
		return 0;
	return r->sub_reserved[m.cls];
}

/* H(T, c) or H(T): the subtree's held units that key measures (DESIGN
 * 3.7), 0 while holds are off. */
static int64_t held_usage(const state_t *st, const struct nsrec *r,
			  struct measure m)
{
	if (r == NULL || st->holds.ttl_ms == 0)
		return 0;
	if (m.total)
		return r->sub_held_total;
	if (m.cls < 0 || (uint32_t)m.cls >= st->n_cls)
		return 0;
	return r->sub_held[m.cls];
}

static struct measure class_measure(const state_t *st, size_t i)
{
	struct measure m = {.total = false, .cls = (int32_t)st->table_ids[i]};

	return m;
}

static const struct measure total_measure = {.total = true, .cls = -1};

/* Carving below a declarer a of key (DESIGN 3.2): walks a's subtree through
 * the tree links, stopping descent at every namespace that declares key
 * itself (it carves its budget out of a) and skipping the subtree of skip
 * entirely. The usage of the carvers and of skip is returned too, so that
 * the pool is a's usage minus theirs. The walk uses the parent links to
 * climb back, so it needs no stack however deep the tree is. */
struct carve {
	wide_t carved;	     /* sum of the carvers' budgets */
	wide_t removed;	     /* usage of the carvers and of skip */
	wide_t removed_held; /* their held units (DESIGN 3.7) */
};

static bool carve_visit(const state_t *st, const struct nsrec *n,
			const struct nsrec *skip, const char *key,
			struct measure m, struct carve *cv)
{
	const struct budget *b;

	if (n == skip) {
		cv->removed += usage(st, n, m);
		cv->removed_held += held_usage(st, n, m);
		return false;
	}
	b = model__nsrec_budget(n, key);
	if (b == NULL)
		return true;
	cv->carved += b->value;
	cv->removed += usage(st, n, m);
	cv->removed_held += held_usage(st, n, m);
	return false;
}

static struct carve carve_walk(const state_t *st, const struct nsrec *a,
			       const struct nsrec *skip, const char *key)
{
	struct carve cv = {0, 0, 0};
	struct measure m = key_measure(st, key);
	const struct nsrec *n = a->child;

	while (n != NULL) {
		if (carve_visit(st, n, skip, key, m, &cv) && n->child != NULL) {
			n = n->child;
			continue;
		}
		while (n != NULL && n != a && n->sibling == NULL)
			n = n->parent;
		if (n == a || n == NULL)
			break;
		n = n->sibling;
	}
	return cv;
}

/* The first raw key of class c that t declares (t->raw is sorted), or NULL. */
static const char *first_raw_key(const struct nsrec *t,
				 const struct gpu_class *c)
{
	for (size_t i = 0; i < t->n_raw; i++)
		for (size_t j = 0; j < c->n_resource_names; j++)
			if (strcmp(t->raw[i], c->resource_names[j]) == 0)
				return t->raw[i];
	return NULL;
}

/* T blocks c (DESIGN 3.1 step 4a) when it declares a raw key of c and
 * neither c's per-class key nor the total key: the raw key it is blocked by,
 * or NULL. */
static const char *blocking_key(const struct nsrec *t,
				const struct gpu_class *c, const char *ckey)
{
	if (t == NULL || model__nsrec_budget(t, ckey) != NULL ||
	    model__nsrec_budget(t, GPU_TOTAL_KEY) != NULL)
		return NULL;
	return first_raw_key(t, c);
}

/* ---------------------------------------------------------------------- */
/* Checks and the judgement they add up to.                                 */

struct check {
	const char *tenant, *key;
	bool has_budget; /* false for a RawKeyBlocksClass check */
	wide_t budget, used, growth;
	bool ok;
	bool has_held; /* judged with holds on */
	wide_t held;
};

/* The verdict being built. The first outcome set wins: the first failed
 * check, or an early answer (Invalid, NotATenant, ...), else the default
 * set last. */
struct judgement {
	struct verdict *v;
	bool decided;
	size_t cap_checks, cap_warnings;
	/* Holds on (DESIGN 3.7): the judged object counts at max(observed,
	 * old) in place of its hold. adj is what that changes in every
	 * subtree holding the object, per class of the table and over all
	 * classes; it is added to the held units the checks read. */
	bool holds;
	wide_t adj[HOLDER_MAX_CLASSES];
	wide_t adj_total;
};

static void judgement_init(struct judgement *j, struct verdict *v,
			   enum verdict_kind kind)
{
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->allowed = true;
	*j = (struct judgement){.v = v};
}

/* Takes ownership of message. */
static void judge(struct judgement *j, bool allowed, const char *reason,
		  char *message)
{
	if (j->decided) {
		free(message);
		return;
	}
	j->decided = true;
	j->v->allowed = allowed;
	j->v->reason = reason;
	j->v->message = message;
}

static void add_check(struct judgement *j, const struct check *c)
{
	struct verdict *v = j->v;
	struct verdict_check *vc;

	if (v->n_checks == j->cap_checks) {
		j->cap_checks = j->cap_checks ? 2 * j->cap_checks : 4;
		v->checks = lg_xrealloc(v->checks,
					j->cap_checks * sizeof(*v->checks));
	}
	vc = &v->checks[v->n_checks++];
	*vc = (struct verdict_check){
		.tenant = vtext(c->tenant),
		.key = vtext(c->key),
		.has_budget = c->has_budget,
		.budget = c->has_budget ? clamp64(c->budget) : 0,
		.used = clamp64(c->used),
		.growth = clamp64(c->growth),
		.remaining = c->has_budget ? clamp64(c->budget - c->used -
						     c->held - c->growth)
					   : 0,
		.ok = c->ok,
		.has_held = c->has_held,
		.held = clamp64(c->held)};
}

/* Takes ownership of w. */
static void add_warning(struct judgement *j, char *w)
{
	struct verdict *v = j->v;

	if (v->n_warnings == j->cap_warnings) {
		j->cap_warnings = j->cap_warnings ? 2 * j->cap_warnings : 4;
		v->warnings = lg_xrealloc(
			v->warnings, j->cap_warnings * sizeof(*v->warnings));
	}
	v->warnings[v->n_warnings++] = w;
}

/* Records a budget check; a failed one decides the verdict with reason. */
static void add_budget_check(struct judgement *j, const struct check *c,
			     const char *reason)
{
	add_check(j, c);
	if (c->ok)
		return;
	if (c->has_held)
		judge(j, false, reason,
		      vfmt("%s: %s %lld + %lld + %lld > %lld", c->tenant,
			   c->key, (long long)clamp64(c->used),
			   (long long)clamp64(c->held),
			   (long long)clamp64(c->growth),
			   (long long)clamp64(c->budget)));
	else
		judge(j, false, reason,
		      vfmt("%s: %s %lld + %lld > %lld", c->tenant, c->key,
			   (long long)clamp64(c->used),
			   (long long)clamp64(c->growth),
			   (long long)clamp64(c->budget)));
}

static void add_block_check(struct judgement *j, const struct check *c,
			    const char *cls)
{
	add_check(j, c);
	judge(j, false, "RawKeyBlocksClass",
	      vfmt("%s: raw key %s blocks class %s", c->tenant, c->key, cls));
}

/* The verdict is decided (WithinBudget when nothing else decided it); it
 * holds a reference to req, the request it was judged on. */
static void judgement_finish(struct judgement *j, const json_t *req)
{
	judge(j, true, "WithinBudget", lg_xstrdup(MSG_WITHIN));
	j->v->request = json_incref((json_t *)req);
}

void verdict_release(struct verdict *v)
{
	if (v == NULL)
		return;
	free(v->message);
	for (size_t i = 0; i < v->n_checks; i++) {
		free(v->checks[i].tenant);
		free(v->checks[i].key);
	}
	free(v->checks);
	for (size_t i = 0; i < v->n_warnings; i++)
		free(v->warnings[i]);
	free(v->warnings);
	json_decref(v->request);
	json_decref(v->requester);
	memset(v, 0, sizeof(*v));
}

/* ---------------------------------------------------------------------- */
/* Admission (DESIGN 3.1).                                                  */

struct adm_req {
	const char *ns;
	enum holder_kind kind;
	const json_t *old, *new; /* NULL for null or absent */
};

static const json_t *member_or_null(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_null(v) ? NULL : v;
}

/* A namespace must be a string without NUL bytes: a NUL would silently
 * shorten the name the tree is walked by. */
static const char *req_namespace(const json_t *req)
{
	const json_t *v = json_object_get(req, "namespace");

	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static int admission_parse(const json_t *req, struct adm_req *r,
			   struct lg_error *err)
{
	const char *kind = jstr(req, "kind");

	if (!json_is_object(req))
		return lg_error_set(err, LG_EINVAL,
				    "admission request must be an object");
	r->ns = req_namespace(req);
	if (r->ns == NULL)
		return lg_error_set(
			err, LG_EINVAL,
			"admission request needs a namespace string");
	r->kind = kind != NULL ? model__holder_kind_parse(kind) : HK_NONE;
	if (r->kind != HK_VMINSTANCE && r->kind != HK_KUBERNETESNODES)
		return lg_error_set(err, LG_EINVAL,
				    "admission kind must be VMInstance or "
				    "KubernetesNodes");
	r->old = member_or_null(req, "old");
	r->new = member_or_null(req, "new");
	return 0;
}

/* The message of UnknownClass: the first class entry of spec naming a class
 * absent from t (the mapping reports unknown classes without a text). */
static char *unknown_class_message(const json_t *spec,
				   const struct class_table *t)
{
	const json_t *gpus = json_object_get(spec, "gpus");
	size_t n = json_array_size(gpus);

	for (size_t i = 0; i < n && i < MODEL_MAX_ITEMS; i++) {
		const char *c = jstr(json_array_get(gpus, i), "class");

		if (c != NULL && class_table_find(t, c) == NULL)
			return vfmt("spec.gpus[%zu].class: unknown class %s", i,
				    c);
	}
	return lg_xstrdup("unknown class");
}

/* Judges new alone (Appendix A): true when that decided the verdict. */
static bool admission_new_invalid(const state_t *st, const struct adm_req *r,
				  struct holder_map *hm, struct judgement *j)
{
	struct lg_error merr = {0};
	int rc;

	rc = model__holder_map_spec(r->kind, r->new, &st->table, hm, &merr);
	if (rc < 0 || !hm->valid) {
		judge(j, false, "Invalid",
		      vtext(merr.msg[0] != '\0' ? merr.msg : MSG_INVALID));
		return true;
	}
	if (!hm->unknown_class)
		return false;
	judge(j, false, "UnknownClass",
	      merr.msg[0] != '\0' ? vtext(merr.msg)
				  : unknown_class_message(r->new, &st->table));
	return true;
}

/* A raw entry ({"name": <raw resource>}) reserves nothing: the caller is
 * told that it counts only once its virt-launcher pod exists. new is a
 * valid spec (admission_new_invalid passed). */
static void raw_entry_warnings(const json_t *new, struct judgement *j)
{
	const json_t *gpus = json_object_get(new, "gpus");

	for (size_t i = 0; i < json_array_size(gpus); i++) {
		const json_t *e = json_array_get(gpus, i);
		const json_t *cls = json_object_get(e, "class");
		const char *name = jstr(e, "name");

		if (cls != NULL && !json_is_null(cls))
			continue;
		add_warning(j, vfmt("spec.gpus[%zu]: raw entry %.317s reserves "
				    "nothing itself; it is counted once its "
				    "pod exists",
				    i, name != NULL ? name : "(no name)"));
	}
}

/* Growth per class of the table (by table index) and in total. */
struct growth {
	size_t n;
	wide_t g[HOLDER_MAX_CLASSES];
	wide_t total;
};

static void growth_of(const state_t *st, const struct holder_map *nw,
		      const struct holder_map *old, struct growth *gr)
{
	wide_t sum_new = 0, sum_old = 0, d;

	gr->n = st->table.n < HOLDER_MAX_CLASSES ? st->table.n
						 : HOLDER_MAX_CLASSES;
	for (size_t i = 0; i < gr->n; i++) {
		wide_t a = nw != NULL ? model__holder_map_units(nw, (uint32_t)i)
				      : 0;
		wide_t b = old != NULL
				   ? model__holder_map_units(old, (uint32_t)i)
				   : 0;

		sum_new += a;
		sum_old += b;
		gr->g[i] = a > b ? a - b : 0;
	}
	d = sum_new - sum_old;
	gr->total = d > 0 ? d : 0;
}

static bool growth_none(const struct growth *gr)
{
	for (size_t i = 0; i < gr->n; i++)
		if (gr->g[i] > 0)
			return false;
	return gr->total == 0;
}

/* Step 4a for one tenant and one growing class. */
static void admission_class_check(const state_t *st, const char *tname,
				  const struct nsrec *t, size_t i, wide_t g,
				  struct judgement *j)
{
	const struct gpu_class *c = &st->table.classes[i];
	char ckey[CLASS_KEY_MAX];
	struct check ck = {.tenant = tname, .growth = g};
	const struct budget *b;

	class_key(c->name, ckey);
	ck.used = usage(st, t, class_measure(st, i));
	ck.has_held = j->holds;
	if (j->holds && t != NULL)
		ck.held = held_usage(st, t, class_measure(st, i)) + j->adj[i];
	ck.key = blocking_key(t, c, ckey);
	if (ck.key != NULL) {
		add_block_check(j, &ck, c->name);
		return;
	}
	b = t != NULL ? model__nsrec_budget(t, ckey) : NULL;
	if (b == NULL)
		return;
	ck.key = ckey;
	ck.has_budget = true;
	ck.budget = b->value;
	ck.ok = ck.used + ck.held + ck.growth <= ck.budget;
	add_budget_check(j, &ck, "ClassBudgetExceeded");
}

/* Step 4b for one tenant. */
static void admission_total_check(const state_t *st, const char *tname,
				  const struct nsrec *t, wide_t gt,
				  struct judgement *j)
{
	const struct budget *b =
		t != NULL ? model__nsrec_budget(t, GPU_TOTAL_KEY) : NULL;
	struct check ck = {.tenant = tname,
			   .key = GPU_TOTAL_KEY,
			   .has_budget = true,
			   .growth = gt};

	if (gt <= 0 || b == NULL)
		return;
	ck.budget = b->value;
	ck.used = usage(st, t, total_measure);
	ck.has_held = j->holds;
	if (j->holds)
		ck.held = held_usage(st, t, total_measure) + j->adj_total;
	ck.ok = ck.used + ck.held + ck.growth <= ck.budget;
	add_budget_check(j, &ck, "TotalBudgetExceeded");
}

static void admission_checks(const state_t *st, const char *ns,
			     const struct growth *gr, struct judgement *j)
{
	struct ancestry a;

	ancestry_init(&a, st, ns);
	for (size_t k = 0; k < a.n; k++) {
		for (size_t i = 0; i < gr->n; i++)
			if (gr->g[i] > 0)
				admission_class_check(st, a.name[k], a.rec[k],
						      i, gr->g[i], j);
		admission_total_check(st, a.name[k], a.rec[k], gr->total, j);
	}
	ancestry_release(&a);
}

/* DESIGN 3.7: while a request for an object is judged, the object counts
 * at max(observed[c], old[c]) in place of its hold (old being the object
 * as the API server stores it). adj is that minus what the state counts
 * for it beyond its observed units (its held units), per class of the
 * table and over all classes (a hold may hold a class that has left the
 * table). name may be NULL: no holder and no hold can be found. */
static void holds_adjust(const state_t *st, const struct adm_req *r,
			 const char *name, const struct holder_map *old,
			 struct judgement *j)
{
	const struct holder *h =
		name ? model__state_holder(st, r->kind, r->ns, name) : NULL;
	const struct hold *hd =
		name ? model__hold_find(st, r->kind, r->ns, name) : NULL;
	const struct hunits *u = h != NULL ? holder_u(h) : NULL;
	size_t n = st->table.n < HOLDER_MAX_CLASSES ? st->table.n
						    : HOLDER_MAX_CLASSES;

	j->holds = true;
	j->adj_total = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t cls = st->table_ids[i];
		wide_t obs = 0,
		       o = old ? model__holder_map_units(old, (uint32_t)i) : 0;

		for (uint32_t k = 0; h != NULL && k < h->n; k++)
			if (u[k].cls == cls)
				obs = u[k].reserved;
		j->adj[i] =
			(o > obs ? o - obs : 0) - model__hold_units(hd, cls);
		j->adj_total += o > obs ? o - obs : 0;
	}
	for (uint32_t k = 0; hd != NULL && k < hd->n; k++)
		j->adj_total -= hd->u[k].units;
}

static void admission_judge(const state_t *st, const struct adm_req *r,
			    const char *name, struct judgement *j)
{
	struct holder_map hm_new, hm_old;
	const struct holder_map *old = NULL;
	struct growth gr;

	if (r->new != NULL && admission_new_invalid(st, r, &hm_new, j))
		return;
	if (r->new != NULL)
		raw_entry_warnings(r->new, j);
	if (r->old != NULL &&
	    model__holder_map_spec(r->kind, r->old, &st->table, &hm_old,
				   NULL) == 0 &&
	    hm_old.valid)
		old = &hm_old;
	if (r->new == NULL && r->old == NULL) {
		judge(j, true, "NoGrowth", lg_xstrdup(MSG_NO_GROWTH));
		return;
	}
	if (!ns_is_tenant(r->ns)) {
		judge(j, true, "NotATenant", lg_xstrdup(MSG_NOT_TENANT));
		return;
	}
	growth_of(st, r->new != NULL ? &hm_new : NULL, old, &gr);
	if (growth_none(&gr)) {
		judge(j, true, "NoGrowth", lg_xstrdup(MSG_NO_GROWTH));
		return;
	}
	if (state_holds_on(st))
		holds_adjust(st, r, name, old, j);
	admission_checks(st, r->ns, &gr, j);
}

int model__judge_admission(const state_t *st, const json_t *req,
			   struct verdict *v, struct lg_error *err)
{
	struct adm_req r = {0};
	struct judgement j;
	int rc;

	memset(v, 0, sizeof(*v));
	rc = admission_parse(req, &r, err);
	if (rc < 0)
		return rc;
	judgement_init(&j, v, VERDICT_ADMISSION);
	admission_judge(st, &r, jstr(req, "name"), &j);
	judgement_finish(&j, req);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Declaration (DESIGN 3.2, Appendix A "Verdicts").                         */

/* A class or total key of new with its valid value. */
struct decl_key {
	const char *key;
	int64_t value;
};

struct decl_req {
	const char *ns;
	const json_t *old; /* NULL unless an object */
	const json_t *new;
	size_t n_names;
	const char **names; /* every key of new, sorted; owned array */
	size_t n;
	struct decl_key *keys; /* class and total keys, sorted; owned */
};

static void decl_req_release(struct decl_req *r)
{
	free(r->names);
	free(r->keys);
}

static int declaration_parse(const json_t *req, struct decl_req *r,
			     struct lg_error *err)
{
	const char *k;
	const json_t *v;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(req))
		return lg_error_set(err, LG_EINVAL,
				    "declaration request must be an object");
	r->ns = req_namespace(req);
	if (r->ns == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "declaration request needs a namespace "
				    "string");
	r->new = json_object_get(req, "new");
	if (!json_is_object(r->new))
		return lg_error_set(err, LG_EINVAL,
				    "declaration new must be an object");
	if (json_object_size(r->new) > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT,
				    "declaration new has more than %d keys",
				    MODEL_MAX_ITEMS);
	/* An old map of another type declares nothing, like null. */
	r->old = json_is_object(json_object_get(req, "old"))
			 ? json_object_get(req, "old")
			 : NULL;
	r->names = lg_xcalloc(json_object_size(r->new) + 1, sizeof(*r->names));
	r->keys = lg_xcalloc(json_object_size(r->new) + 1, sizeof(*r->keys));
	json_object_foreach ((json_t *)r->new, k, v)
		r->names[r->n_names++] = k;
	qsort(r->names, r->n_names, sizeof(*r->names), by_strcmp);
	return 0;
}

/* The class label of a class key as a C string; false for other keys. */
static bool key_class_label(const char *key, const struct class_table *t,
			    char *label)
{
	const char *cls = NULL;
	size_t len = 0;

	if (model__budget_key_classify(key, t, &cls, &len, NULL) != KEY_CLASS ||
	    cls == NULL || len > DNS1123_LABEL_MAX)
		return false;
	memcpy(label, cls, len);
	label[len] = '\0';
	return true;
}

static bool is_budget_kind(enum key_kind k)
{
	return k == KEY_CLASS || k == KEY_TOTAL;
}

/* Step 1 (class and total keys of new only): keys first, then values; true
 * when that denied the request. Fills r->keys and the unknown-class
 * warnings otherwise. */
static bool declaration_step1(const state_t *st, struct decl_req *r,
			      struct judgement *j)
{
	char label[DNS1123_LABEL_MAX + 1];
	enum key_kind kind;
	int64_t value;

	for (size_t i = 0; i < r->n_names; i++)
		if (model__budget_key_classify(r->names[i], &st->table, NULL,
					       NULL, NULL) == KEY_INVALID) {
			judge(j, false, "InvalidBudgetKey",
			      vfmt("invalid budget key %s", r->names[i]));
			return true;
		}
	for (size_t i = 0; i < r->n_names; i++) {
		kind = model__budget_key_classify(r->names[i], &st->table, NULL,
						  NULL, NULL);
		if (!is_budget_kind(kind))
			continue;
		if (model__quantity_json_uint(
			    json_object_get(r->new, r->names[i]), &value,
			    NULL) < 0) {
			judge(j, false, "InvalidQuantity",
			      vfmt("invalid quantity for %s", r->names[i]));
			return true;
		}
		r->keys[r->n].key = r->names[i];
		r->keys[r->n++].value = value;
	}
	for (size_t i = 0; i < r->n; i++)
		if (key_class_label(r->keys[i].key, &st->table, label) &&
		    class_table_find(&st->table, label) == NULL)
			add_warning(j, vfmt("%s: class %s is not in the class "
					    "table",
					    r->keys[i].key, label));
	return false;
}

/* Only growth is checked: old declaring k with a valid value at least as
 * large skips it (an invalid old value counts as undeclared). */
static bool declaration_grows(const struct decl_req *r,
			      const struct decl_key *k)
{
	int64_t old;

	if (r->old == NULL ||
	    model__quantity_json_uint(json_object_get(r->old, k->key), &old,
				      NULL) < 0)
		return true;
	return k->value > old;
}

/* Step 3 for one growing key: checked against A, the nearest proper
 * ancestor declaring it, with the namespace's own subtree left out. */
static void declaration_key_check(const state_t *st, const struct ancestry *a,
				  const struct decl_key *k, struct judgement *j)
{
	const struct budget *b = NULL;
	struct check ck = {
		.key = k->key, .has_budget = true, .growth = k->value};
	struct carve cv;
	size_t i;

	for (i = 1; i < a->n && b == NULL; i++)
		if (a->rec[i] != NULL)
			b = model__nsrec_budget(a->rec[i], k->key);
	if (b == NULL)
		return;
	i--;
	cv = carve_walk(st, a->rec[i], a->rec[0], k->key);
	ck.tenant = a->name[i];
	ck.budget = b->value;
	/* The pool is A's subtree usage less the carvers' subtrees and the
	 * namespace's own subtree: the usage of the namespaces whose nearest
	 * declarer, inclusive, is A. With holds on its held units are
	 * pooled too (DESIGN 3.7), shown apart as "held". */
	ck.used = cv.carved + usage(st, a->rec[i], key_measure(st, k->key)) -
		  cv.removed;
	ck.has_held = state_holds_on(st);
	ck.held = held_usage(st, a->rec[i], key_measure(st, k->key)) -
		  cv.removed_held;
	ck.ok = ck.budget - ck.used - ck.held - ck.growth >= 0;
	add_budget_check(j, &ck, "ExceedsParentBudget");
}

/* Step 4: declaring less than the subtree already uses is allowed, with a
 * warning per key. */
static void declaration_overcommit(const state_t *st, const struct nsrec *self,
				   const struct decl_req *r,
				   struct judgement *j)
{
	int64_t used;

	for (size_t i = 0; i < r->n; i++) {
		used = usage(st, self, key_measure(st, r->keys[i].key));
		if (r->keys[i].value < used)
			add_warning(j, vfmt("%s: %lld is below the subtree "
					    "usage %lld",
					    r->keys[i].key,
					    (long long)r->keys[i].value,
					    (long long)used));
	}
}

static void declaration_judge(const state_t *st, struct decl_req *r,
			      struct judgement *j)
{
	struct ancestry a;
	bool grows = false;

	if (declaration_step1(st, r, j))
		return;
	if (!ns_is_tenant(r->ns)) {
		judge(j, true, "NotATenant", lg_xstrdup(MSG_NOT_TENANT));
		return;
	}
	ancestry_init(&a, st, r->ns);
	if (strcmp(r->ns, "tenant-root") == 0) {
		judge(j, true, "Unconstrained", lg_xstrdup(MSG_UNCONSTRAINED));
	} else {
		for (size_t i = 0; i < r->n; i++) {
			if (!declaration_grows(r, &r->keys[i]))
				continue;
			grows = true;
			declaration_key_check(st, &a, &r->keys[i], j);
		}
		if (!grows)
			judge(j, true, "NoGrowth", lg_xstrdup(MSG_NO_GROWTH));
	}
	declaration_overcommit(st, a.rec[0], r, j);
	ancestry_release(&a);
}

int model__judge_declaration(const state_t *st, const json_t *req,
			     struct verdict *v, struct lg_error *err)
{
	struct decl_req r;
	struct judgement j;
	int rc;

	memset(v, 0, sizeof(*v));
	rc = declaration_parse(req, &r, err);
	if (rc < 0) {
		decl_req_release(&r);
		return rc;
	}
	judgement_init(&j, v, VERDICT_DECLARATION);
	declaration_judge(st, &r, &j);
	decl_req_release(&r);
	judgement_finish(&j, req);
	return 0;
}

/* The verdict as JSON, for the model's tests (a verdict's JSON is its
 * text read back: model__verdict_to_json). */
static int verdict_json(int (*fn)(const state_t *, const json_t *,
				  struct verdict *, struct lg_error *),
			const state_t *st, const json_t *req, json_t **verdict,
			struct lg_error *err)
{
	struct verdict v;
	int rc = fn(st, req, &v, err);

	*verdict = rc == 0 ? model__verdict_to_json(&v, 0) : NULL;
	verdict_release(&v);
	return rc;
}

int model__verdict_admission(const state_t *st, const json_t *req,
			     json_t **verdict, struct lg_error *err)
{
	return verdict_json(model__judge_admission, st, req, verdict, err);
}

int model__verdict_declaration(const state_t *st, const json_t *req,
			       json_t **verdict, struct lg_error *err)
{
	return verdict_json(model__judge_declaration, st, req, verdict, err);
}

/* ---------------------------------------------------------------------- */
/* Remaining budget (DESIGN 3.3) and overcommit (3.4).                      */

/* A running minimum: the first minimum found wins ties, so limitedBy names
 * the nearest tenant, and the per-class key before the total key. */
struct minimum {
	bool set;
	int64_t value;
	const char *tenant, *key;
	bool holds;   /* holds on: "held" is shown */
	int64_t held; /* held units in limitedBy's subtree */
};

/* used is observed usage, held the held units (0 with holds off). */
static void minimum_offer(struct minimum *m, const char *tenant,
			  const struct nsrec *t, const char *key, int64_t used,
			  int64_t held)
{
	const struct budget *b = t != NULL ? model__nsrec_budget(t, key) : NULL;
	int64_t left;

	if (b == NULL)
		return;
	/* All are non-negative int64s: the difference fits 128 bits, and
	 * a budget less usage this large is clamped like every figure. */
	left = clamp64((wide_t)b->value - used - held);
	if (m->set && left >= m->value)
		return;
	m->set = true;
	m->value = left;
	m->tenant = tenant;
	m->key = b->key;
	m->held = held;
}

static json_t *minimum_json(const struct minimum *m)
{
	json_t *v;

	if (!m->set)
		v = json_pack("{s:n, s:n}", "remaining", "limitedBy");
	else
		v = json_pack("{s:I, s:{s:s, s:s}}", "remaining",
			      (json_int_t)m->value, "limitedBy", "tenant",
			      m->tenant, "key", m->key);
	if (m->holds)
		json_object_set_new(v, "held",
				    m->set ? json_integer(m->held)
					   : json_null());
	return v;
}

/* One class's entry; a is empty for a namespace that is not a tenant. */
static json_t *remaining_class(const state_t *st, const struct ancestry *a,
			       size_t i)
{
	const struct gpu_class *c = &st->table.classes[i];
	char ckey[CLASS_KEY_MAX];
	struct minimum m = {.set = false, .holds = state_holds_on(st)};
	bool blocked = false;
	json_t *v;

	class_key(c->name, ckey);
	for (size_t k = 0; k < a->n; k++) {
		minimum_offer(&m, a->name[k], a->rec[k], ckey,
			      usage(st, a->rec[k], class_measure(st, i)),
			      held_usage(st, a->rec[k], class_measure(st, i)));
		minimum_offer(&m, a->name[k], a->rec[k], GPU_TOTAL_KEY,
			      usage(st, a->rec[k], total_measure),
			      held_usage(st, a->rec[k], total_measure));
		if (blocking_key(a->rec[k], c, ckey) != NULL)
			blocked = true;
	}
	v = minimum_json(&m);
	json_object_set_new(v, "blocked", json_boolean(blocked));
	return v;
}

static json_t *remaining_classes(const state_t *st, const struct ancestry *a)
{
	json_t *o = json_object();

	for (size_t i = 0; i < st->table.n; i++)
		json_object_set_new(o, st->table.classes[i].name,
				    remaining_class(st, a, i));
	return o;
}

static json_t *remaining_total(const state_t *st, const struct ancestry *a)
{
	struct minimum m = {.set = false, .holds = state_holds_on(st)};

	for (size_t k = 0; k < a->n; k++)
		minimum_offer(&m, a->name[k], a->rec[k], GPU_TOTAL_KEY,
			      usage(st, a->rec[k], total_measure),
			      held_usage(st, a->rec[k], total_measure));
	return minimum_json(&m);
}

/* Non-tenants lie outside every budget: an empty ancestry. */
static void ancestry_of_tenant(struct ancestry *a, const state_t *st,
			       const char *ns)
{
	a->n = 0;
	if (ns_is_tenant(ns))
		ancestry_init(a, st, ns);
}

enum remaining_part {
	REM_CLASSES = 1,
	REM_TOTAL = 2,
	REM_BOTH = 3
};

/* What remains to the tenant ns: per class, in total, or both in one object
 * {"classes", "total"}. */
static json_t *remaining_json(const state_t *st, const char *ns,
			      enum remaining_part part)
{
	struct ancestry a;
	json_t *v;

	ancestry_of_tenant(&a, st, ns);
	if (part == REM_BOTH)
		v = json_pack("{s:o, s:o}", "classes",
			      remaining_classes(st, &a), "total",
			      remaining_total(st, &a));
	else if (part == REM_CLASSES)
		v = remaining_classes(st, &a);
	else
		v = remaining_total(st, &a);
	ancestry_release(&a);
	return v;
}

json_t *state_remaining_json(const state_t *st, const char *ns)
{
	return remaining_json(st, ns, REM_BOTH);
}

json_t *model__tenant_remaining_json(const state_t *st, const struct nsrec *ns)
{
	return remaining_json(st, ns->name, REM_CLASSES);
}

json_t *model__tenant_remaining_total_json(const state_t *st,
					   const struct nsrec *ns)
{
	return remaining_json(st, ns->name, REM_TOTAL);
}

int64_t model__tenant_key_used(const state_t *st, const struct nsrec *ns,
			       const char *key)
{
	return usage(st, ns, key_measure(st, key));
}

/* One entry per declared key whose subtree usage, or the sum of the budgets
 * carved out of it, exceeds the budget (strictly); by key, as the budgets
 * are kept sorted. */
json_t *model__tenant_overcommit_json(const state_t *st, const struct nsrec *ns)
{
	json_t *list = json_array();

	for (size_t i = 0; i < ns->n_budgets; i++) {
		const struct budget *b = &ns->budgets[i];
		int64_t used = usage(st, ns, key_measure(st, b->key));
		struct carve cv = carve_walk(st, ns, NULL, b->key);

		if (used <= b->value && cv.carved <= b->value)
			continue;
		json_array_append_new(
			list, json_pack("{s:s, s:I, s:I, s:I}", "key", b->key,
					"budget", (json_int_t)b->value, "used",
					(json_int_t)used, "carved",
					(json_int_t)clamp64(cv.carved)));
	}
	return list;
}

/* ---------------------------------------------------------------------- */
/* eval (DESIGN 6.1): Admission, Declaration, Remaining.                    */

typedef int judge_fn(const state_t *st, const json_t *req, json_t **out,
		     struct lg_error *err);

static int remaining_request(const state_t *st, const json_t *req, json_t **out,
			     struct lg_error *err)
{
	const char *ns = req_namespace(req);

	if (!json_is_object(req) || ns == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "remaining request needs a namespace "
				    "string");
	*out = state_remaining_json(st, ns);
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}

/* Runs fn on the state of ctx or, when the input carries one, on an inline
 * state {"events": [...]} built for this call; the "state" member is removed
 * from (a copy of) the request first, so that the verdict echoes only the
 * request itself. */
static int eval_on_state(const struct eval_ctx *ctx, const json_t *input,
			 json_t **out, struct lg_error *err, judge_fn *fn)
{
	const json_t *inline_st = json_object_get(input, "state");
	const json_t *events = json_object_get(inline_st, "events");
	state_t *st = NULL;
	json_t *req;
	int rc;

	*out = NULL;
	if (inline_st == NULL) {
		if (ctx == NULL || ctx->state == NULL)
			return lg_error_set(err, LG_EINVAL, MSG_NO_STATE);
		return fn(ctx->state, input, out, err);
	}
	if (!json_is_array(events))
		return lg_error_set(err, LG_EINVAL,
				    "state must be {\"events\": [...]}");
	rc = model__state_from_events_json(events, &st, err);
	if (rc < 0)
		return rc;
	req = json_copy((json_t *)input);
	json_object_del(req, "state");
	rc = fn(st, req, out, err);
	json_decref(req);
	state_free(st);
	return rc;
}

/* A verdict request as serve reads it (model/vrequest.c): the members of
 * a request, or an AdmissionReview around one. */
static int judge_kind(const state_t *st, const json_t *input, json_t **out,
		      struct lg_error *err, enum verdict_kind kind)
{
	struct verdict_request r;
	struct verdict v = {0};
	int rc = model__verdict_request_from_json(kind, input, &r, err);

	if (rc == 0)
		rc = verdict_judge(st, &r, &v, err);
	*out = rc == 0 ? model__verdict_to_json(&v, 0) : NULL;
	verdict_release(&v);
	verdict_request_release(&r);
	return rc;
}

static int judge_admission(const state_t *st, const json_t *input, json_t **out,
			   struct lg_error *err)
{
	return judge_kind(st, input, out, err, VERDICT_ADMISSION);
}

static int judge_declaration(const state_t *st, const json_t *input,
			     json_t **out, struct lg_error *err)
{
	return judge_kind(st, input, out, err, VERDICT_DECLARATION);
}

int model__eval_admission(const struct eval_ctx *ctx, const json_t *input,
			  json_t **out, struct lg_error *err)
{
	return eval_on_state(ctx, input, out, err, judge_admission);
}

int model__eval_declaration(const struct eval_ctx *ctx, const json_t *input,
			    json_t **out, struct lg_error *err)
{
	return eval_on_state(ctx, input, out, err, judge_declaration);
}

int model__eval_remaining(const struct eval_ctx *ctx, const json_t *input,
			  json_t **out, struct lg_error *err)
{
	return eval_on_state(ctx, input, out, err, remaining_request);
}
