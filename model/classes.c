/*
 * The class table (DESIGN 2, Appendix A "Class table").
 *
 * A table is validated as a whole: one bad entry, or a raw resource name or
 * deviceClassName shared by two classes, rejects it, because the previous
 * table stays in force upstream and a half-applied table would map holders
 * against rules nobody wrote. Messages name the exact place in the input
 * (`classes[2].name "H100" is not a DNS-1123 label`) since they end up in
 * NOTE events that an operator reads.
 *
 * Every string is copied (lg_xstrdup) so that a table outlives the JSON it
 * was parsed from; the state keeps tables for the whole life of a process.
 * Memory comes from the lg_xmalloc family, which aborts when it runs out.
 */
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Quoted input in messages is cut so that the place and the reason still fit
 * in LG_ERRMSG_MAX. */
#define QUOTE_MAX 64

/* A string usable as a C string: JSON strings may hold NUL bytes, which a
 * C copy would silently cut, so such strings are treated as wrong. */
static const char *cstr(const json_t *v)
{
	const char *s = json_string_value(v);

	if (s == NULL || strlen(s) != json_string_length(v))
		return NULL;
	return s;
}

/* ---------------------------------------------------------------------- */
/* Lifecycle.                                                               */

void class_table_init(struct class_table *t)
{
	t->classes = NULL;
	t->n = 0;
}

static void toleration_release(struct toleration *tol)
{
	free((char *)tol->key);
	free((char *)tol->op);
	free((char *)tol->value);
	free((char *)tol->effect);
}

void model__gpu_class_release(struct gpu_class *c)
{
	if (c == NULL)
		return;
	free(c->name);
	free(c->device_class);
	for (size_t i = 0; i < c->n_resource_names; i++)
		free(c->resource_names[i]);
	free(c->resource_names);
	for (size_t i = 0; i < c->n_tolerations; i++)
		toleration_release(&c->tolerations[i]);
	free(c->tolerations);
	memset(c, 0, sizeof(*c));
}

void class_table_release(struct class_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		model__gpu_class_release(&t->classes[i]);
	free(t->classes);
	class_table_init(t);
}

/* ---------------------------------------------------------------------- */
/* One entry. `where` names the entry in messages ("classes[2]", "class").  */

static int parse_name(struct gpu_class *c, const json_t *entry,
		      const char *where, struct lg_error *err)
{
	const json_t *v = json_object_get(entry, "name");
	const char *s = cstr(v);

	if (s == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s.name is missing or not a string",
				    where);
	if (!dns1123_label(s, strlen(s)))
		return lg_error_set(err, LG_EINVAL,
				    "%s.name \"%.*s\" is not a DNS-1123 label",
				    where, QUOTE_MAX, s);
	c->name = lg_xstrdup(s);
	return 0;
}

/* Absent or null means the class name (DESIGN 2). */
static int parse_device_class(struct gpu_class *c, const json_t *entry,
			      const char *where, struct lg_error *err)
{
	const json_t *v = json_object_get(entry, "deviceClassName");
	const char *s = c->name;

	if (v != NULL && !json_is_null(v)) {
		s = cstr(v);
		if (s == NULL || *s == '\0')
			return lg_error_set(
				err, LG_EINVAL,
				"%s.deviceClassName is not a non-empty string",
				where);
	}
	c->device_class = lg_xstrdup(s);
	return 0;
}

static bool has_resource(const struct gpu_class *c, const char *s)
{
	for (size_t i = 0; i < c->n_resource_names; i++)
		if (strcmp(c->resource_names[i], s) == 0)
			return true;
	return false;
}

/* The optional list entry.key of at most MODEL_MAX_ITEMS entries into *list
 * and *n; absent or null: *n is 0. */
static int opt_list(const json_t *entry, const char *key, const char *where,
		    const json_t **list, size_t *n, struct lg_error *err)
{
	*list = json_object_get(entry, key);
	*n = 0;
	if (*list == NULL || json_is_null(*list))
		return 0;
	if (!json_is_array(*list))
		return lg_error_set(err, LG_EINVAL, "%s.%s is not a list",
				    where, key);
	*n = json_array_size(*list);
	if (*n > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT,
				    "%s.%s has more than %d entries", where,
				    key, MODEL_MAX_ITEMS);
	return 0;
}

/* A raw name repeated within one class counts once (Appendix A); the first
 * occurrence keeps its place so that the canonical form follows the input. */
static int parse_resource_names(struct gpu_class *c, const json_t *entry,
				const char *where, struct lg_error *err)
{
	const json_t *list;
	size_t n;
	int rc = opt_list(entry, "resourceNames", where, &list, &n, err);

	if (rc < 0 || n == 0)
		return rc;
	c->resource_names = lg_xcalloc(n, sizeof(*c->resource_names));
	for (size_t i = 0; i < n; i++) {
		const char *s = cstr(json_array_get(list, i));

		if (s == NULL || *s == '\0')
			return lg_error_set(err, LG_EINVAL,
					    "%s.resourceNames[%zu] is not a "
					    "non-empty string",
					    where, i);
		if (has_resource(c, s))
			continue;
		c->resource_names[c->n_resource_names] = lg_xstrdup(s);
		c->n_resource_names++;
	}
	return 0;
}

/* The members a toleration keeps, by JSON name. */
static const struct {
	const char *json;
	size_t off;
} tol_members[] = {
	{"key", offsetof(struct toleration, key)},
	{"operator", offsetof(struct toleration, op)},
	{"value", offsetof(struct toleration, value)},
	{"effect", offsetof(struct toleration, effect)},
};

static const char **tol_field(struct toleration *tol, const char *member)
{
	size_t n = sizeof(tol_members) / sizeof(tol_members[0]);

	for (size_t i = 0; i < n; i++)
		if (strcmp(member, tol_members[i].json) == 0)
			return (const char **)((char *)tol +
					       tol_members[i].off);
	return NULL;
}

/* "Tolerations not objects of strings" are invalid (Appendix A): every
 * member must be a string, even one this model ignores (tolerationSeconds
 * only matters for NoExecute evictions, which never decide serving). Only
 * the four members above are kept. */
static int parse_toleration(struct toleration *tol, const json_t *v,
			    const char *where, size_t i, struct lg_error *err)
{
	const char *member;
	const json_t *mv;

	if (!json_is_object(v))
		return lg_error_set(err, LG_EINVAL,
				    "%s.tolerations[%zu] is not an object",
				    where, i);
	if (json_object_size(v) > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT,
				    "%s.tolerations[%zu] has too many members",
				    where, i);
	json_object_foreach ((json_t *)v, member, mv) {
		const char *s = cstr(mv);
		const char **field = tol_field(tol, member);

		if (s == NULL)
			return lg_error_set(
				err, LG_EINVAL,
				"%s.tolerations[%zu].%.*s is not a string",
				where, i, QUOTE_MAX, member);
		if (field == NULL)
			continue;
		*field = lg_xstrdup(s);
	}
	return 0;
}

static int parse_tolerations(struct gpu_class *c, const json_t *entry,
			     const char *where, struct lg_error *err)
{
	const json_t *list;
	size_t n;
	int rc = opt_list(entry, "tolerations", where, &list, &n, err);

	if (rc < 0 || n == 0)
		return rc;
	c->tolerations = lg_xcalloc(n, sizeof(*c->tolerations));
	for (size_t i = 0; i < n; i++) {
		/* Counted first so that a half-parsed one is released. */
		c->n_tolerations++;
		rc = parse_toleration(&c->tolerations[i],
				      json_array_get(list, i), where, i, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int parse_class(struct gpu_class *c, const json_t *entry,
		       const char *where, struct lg_error *err)
{
	int rc;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(entry))
		return lg_error_set(err, LG_EINVAL, "%s is not an object",
				    where);
	rc = parse_name(c, entry, where, err);
	if (rc == 0)
		rc = parse_device_class(c, entry, where, err);
	if (rc == 0)
		rc = parse_resource_names(c, entry, where, err);
	if (rc == 0)
		rc = parse_tolerations(c, entry, where, err);
	if (rc < 0)
		model__gpu_class_release(c);
	return rc;
}

int model__gpu_class_parse(struct gpu_class *c, const json_t *entry,
			   struct lg_error *err)
{
	return parse_class(c, entry, "class", err);
}

/* ---------------------------------------------------------------------- */
/* Rules across classes, checked in input order so that the message names  */
/* the later of two clashing entries.                                       */

/* The index of an earlier class whose name (or deviceClassName) equals that
 * of class i; i itself when there is none. */
static size_t earlier_same(const struct gpu_class *cs, size_t i, bool by_dc)
{
	const char *a = by_dc ? cs[i].device_class : cs[i].name;

	for (size_t j = 0; j < i; j++)
		if (strcmp(a, by_dc ? cs[j].device_class : cs[j].name) == 0)
			return j;
	return i;
}

/* At most HOLDER_MAX_CLASSES classes: pairwise is cheap enough. */
static int check_unique(const struct gpu_class *cs, size_t n,
			struct lg_error *err)
{
	size_t j;

	for (size_t i = 1; i < n; i++) {
		j = earlier_same(cs, i, false);
		if (j < i)
			return lg_error_set(
				err, LG_EINVAL,
				"classes[%zu].name \"%s\" repeats classes[%zu]",
				i, cs[i].name, j);
		j = earlier_same(cs, i, true);
		if (j < i)
			return lg_error_set(
				err, LG_EINVAL,
				"classes[%zu].deviceClassName \"%.*s\" is also "
				"the deviceClassName of class \"%s\"",
				i, QUOTE_MAX, cs[i].device_class, cs[j].name);
	}
	return 0;
}

/* One raw resource name and where it was given. */
struct rref {
	const char *s;
	size_t cls, item;
};

static int rref_cmp(const void *pa, const void *pb)
{
	const struct rref *a = pa, *b = pb;
	int c = strcmp(a->s, b->s);

	if (c != 0)
		return c;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	return (a->item > b->item) - (a->item < b->item);
}

/* Up to HOLDER_MAX_CLASSES x MODEL_MAX_ITEMS names: sorted rather than
 * compared pairwise. Names are unique within a class already, so two equal
 * neighbours are always in two classes. */
static int check_resources(const struct gpu_class *cs, size_t n,
			   struct lg_error *err)
{
	struct rref *all, *clash = NULL;
	size_t total = 0, k = 0;

	for (size_t i = 0; i < n; i++)
		total += cs[i].n_resource_names;
	if (total < 2)
		return 0;
	all = lg_xmalloc(total * sizeof(*all));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < cs[i].n_resource_names; j++)
			all[k++] = (struct rref){cs[i].resource_names[j], i, j};
	qsort(all, total, sizeof(*all), rref_cmp);
	for (k = 1; k < total; k++) {
		if (strcmp(all[k].s, all[k - 1].s) != 0)
			continue;
		if (clash == NULL || all[k].cls < clash->cls ||
		    (all[k].cls == clash->cls && all[k].item < clash->item))
			clash = &all[k];
	}
	if (clash != NULL) {
		/* The earliest owner of the name is the first of its run. */
		struct rref *first = clash;

		while (first > all && strcmp(first[-1].s, clash->s) == 0)
			first--;
		lg_error_set(err, LG_EINVAL,
			     "classes[%zu].resourceNames[%zu] \"%.*s\" is also "
			     "in class \"%s\"",
			     clash->cls, clash->item, QUOTE_MAX, clash->s,
			     cs[first->cls].name);
	}
	free(all);
	return clash != NULL ? LG_EINVAL : 0;
}

static int class_cmp(const void *pa, const void *pb)
{
	const struct gpu_class *a = pa, *b = pb;

	return strcmp(a->name, b->name);
}

static int parse_entries(struct class_table *t, const json_t *list,
			 struct lg_error *err)
{
	size_t n = json_array_size(list);
	char where[32];
	int rc;

	if (n > HOLDER_MAX_CLASSES)
		return lg_error_set(err, LG_ELIMIT,
				    "classes has %zu entries, more than %d", n,
				    HOLDER_MAX_CLASSES);
	if (n == 0)
		return 0;
	t->classes = lg_xcalloc(n, sizeof(*t->classes));
	for (size_t i = 0; i < n; i++) {
		snprintf(where, sizeof(where), "classes[%zu]", i);
		rc = parse_class(&t->classes[i], json_array_get(list, i), where,
				 err);
		if (rc < 0)
			return rc;
		t->n++;
	}
	return 0;
}

/* t is filled from scratch: whatever it held before is not released (parse
 * into a fresh table and swap, so that the old one stays in force when the
 * new one is rejected). */
int class_table_parse(struct class_table *t, const json_t *doc,
		      struct lg_error *err)
{
	const json_t *list = json_object_get(doc, "classes");
	int rc;

	class_table_init(t);
	if (!json_is_object(doc))
		return lg_error_set(err, LG_EINVAL,
				    "the class table is not an object");
	if (!json_is_array(list))
		return lg_error_set(err, LG_EINVAL, "classes is not a list");
	rc = parse_entries(t, list, err);
	if (rc == 0)
		rc = check_unique(t->classes, t->n, err);
	if (rc == 0)
		rc = check_resources(t->classes, t->n, err);
	if (rc < 0) {
		class_table_release(t);
		return rc;
	}
	if (t->n > 1)
		qsort(t->classes, t->n, sizeof(*t->classes), class_cmp);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Lookups. Tables hold at most HOLDER_MAX_CLASSES classes.                 */

const struct gpu_class *class_table_find(const struct class_table *t,
					 const char *name)
{
	struct gpu_class key = {.name = (char *)name};

	if (t == NULL || name == NULL || t->n == 0)
		return NULL;
	return bsearch(&key, t->classes, t->n, sizeof(*t->classes), class_cmp);
}

const struct gpu_class *
model__class_table_by_resource(const struct class_table *t,
			       const char *resource)
{
	if (t == NULL || resource == NULL)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (has_resource(&t->classes[i], resource))
			return &t->classes[i];
	return NULL;
}

const struct gpu_class *
model__class_table_by_device_class(const struct class_table *t,
				   const char *device_class)
{
	if (t == NULL || device_class == NULL)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->classes[i].device_class, device_class) == 0)
			return &t->classes[i];
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Copy, compare, canonical form.                                           */

/* NULL (member absent) copies as NULL: absent and "" print differently. */
static const char *dup_opt(const char *src)
{
	return src == NULL ? NULL : lg_xstrdup(src);
}

static void copy_tolerations(struct gpu_class *dst, const struct gpu_class *src)
{
	if (src->n_tolerations == 0)
		return;
	dst->tolerations =
		lg_xcalloc(src->n_tolerations, sizeof(*dst->tolerations));
	for (size_t i = 0; i < src->n_tolerations; i++) {
		const struct toleration *s = &src->tolerations[i];
		struct toleration *d = &dst->tolerations[i];

		d->key = dup_opt(s->key);
		d->op = dup_opt(s->op);
		d->value = dup_opt(s->value);
		d->effect = dup_opt(s->effect);
	}
	dst->n_tolerations = src->n_tolerations;
}

static void copy_resources(struct gpu_class *dst, const struct gpu_class *src)
{
	if (src->n_resource_names == 0)
		return;
	dst->resource_names =
		lg_xcalloc(src->n_resource_names, sizeof(*dst->resource_names));
	for (size_t i = 0; i < src->n_resource_names; i++)
		dst->resource_names[i] = lg_xstrdup(src->resource_names[i]);
	dst->n_resource_names = src->n_resource_names;
}

/* dst is filled from scratch. */
void gpu_class_copy(struct gpu_class *dst, const struct gpu_class *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->name = (char *)dup_opt(src->name);
	dst->device_class = (char *)dup_opt(src->device_class);
	copy_resources(dst, src);
	copy_tolerations(dst, src);
}

static bool str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool toleration_eq(const struct toleration *a,
			  const struct toleration *b)
{
	return str_eq(a->key, b->key) && str_eq(a->op, b->op) &&
	       str_eq(a->value, b->value) && str_eq(a->effect, b->effect);
}

/* Equal exactly when the canonical forms are equal: order of resourceNames
 * and tolerations matters, as it does in the CLASS event. */
bool gpu_class_equal(const struct gpu_class *a, const struct gpu_class *b)
{
	if (a == b)
		return true;
	if (a == NULL || b == NULL)
		return false;
	if (!str_eq(a->name, b->name) ||
	    !str_eq(a->device_class, b->device_class) ||
	    a->n_resource_names != b->n_resource_names ||
	    a->n_tolerations != b->n_tolerations)
		return false;
	for (size_t i = 0; i < a->n_resource_names; i++)
		if (!str_eq(a->resource_names[i], b->resource_names[i]))
			return false;
	for (size_t i = 0; i < a->n_tolerations; i++)
		if (!toleration_eq(&a->tolerations[i], &b->tolerations[i]))
			return false;
	return true;
}

/* Sets o[k] = v when v is not NULL; false only when out of memory (or the
 * string is not UTF-8, which a parsed class never has). */
static bool set_opt(json_t *o, const char *k, const char *v)
{
	if (v == NULL)
		return true;
	return json_object_set_new(o, k, json_string(v)) == 0;
}

static json_t *toleration_to_json(const struct toleration *tol)
{
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	if (!set_opt(o, "key", tol->key) || !set_opt(o, "operator", tol->op) ||
	    !set_opt(o, "value", tol->value) ||
	    !set_opt(o, "effect", tol->effect)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static bool fill_lists(json_t *rn, json_t *tols, const struct gpu_class *c)
{
	json_t *v;

	for (size_t i = 0; i < c->n_resource_names; i++) {
		v = json_string(c->resource_names[i]);
		if (json_array_append_new(rn, v) < 0)
			return false;
	}
	for (size_t i = 0; i < c->n_tolerations; i++) {
		v = toleration_to_json(&c->tolerations[i]);
		if (json_array_append_new(tols, v) < 0)
			return false;
	}
	return true;
}

/* The device class defaults to the name also for a hand-built class, so
 * that every CLASS event carries the complete definition. */
json_t *gpu_class_to_json(const struct gpu_class *c)
{
	json_t *o, *rn = json_array(), *tols = json_array();
	const char *dc;

	if (c == NULL || c->name == NULL || rn == NULL || tols == NULL ||
	    !fill_lists(rn, tols, c)) {
		json_decref(rn);
		json_decref(tols);
		return NULL;
	}
	dc = c->device_class != NULL ? c->device_class : c->name;
	o = json_pack("{s:s, s:s, s:o, s:o}", "deviceClassName", dc, "name",
		      c->name, "resourceNames", rn, "tolerations", tols);
	return o;
}
