/*
 * Effective pod requests (DESIGN 5.2): upstream component-helpers
 * resource.PodRequests with default options, i.e. AggregateContainerRequests
 * over the spec (no status resources), pod-level requests, then overhead.
 *
 * Resource lists keep upstream's map semantics: a resource is present or
 * absent, and a present zero differs from an absent one (max over init
 * containers and pod-level replacement both depend on presence).
 */
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* reslist: a sorted array, small in practice (a handful of resources).    */

void model__reslist_init(struct reslist *l)
{
	l->n = 0;
	l->cap = 0;
	l->items = NULL;
}

void model__reslist_release(struct reslist *l)
{
	if (l == NULL)
		return;
	free(l->items);
	model__reslist_init(l);
}

/* Index of name in l, or of where it would go (*found false). */
static size_t reslist_find(const struct reslist *l, const char *name,
			   bool *found)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->items[mid].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

const struct quantity *model__reslist_get(const struct reslist *l,
					  const char *name)
{
	bool found;
	size_t i;

	if (l == NULL || name == NULL)
		return NULL;
	i = reslist_find(l, name, &found);
	return found ? &l->items[i].q : NULL;
}

/* The slot for name, inserted (as zero) when absent; *fresh says whether it
 * was. NULL when the list is at its bound (*rc is then LG_EINVAL). */
static struct quantity *reslist_slot(struct reslist *l, const char *name,
				     bool *fresh, int *rc)
{
	bool found;
	size_t i = reslist_find(l, name, &found);

	*fresh = !found;
	if (found)
		return &l->items[i].q;
	if (l->n >= MODEL_MAX_ITEMS) {
		*rc = LG_EINVAL;
		return NULL;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;

		l->items = lg_xrealloc(l->items, cap * sizeof(*l->items));
		l->cap = cap;
	}
	memmove(&l->items[i + 1], &l->items[i],
		(l->n - i) * sizeof(l->items[0]));
	l->n++;
	l->items[i].name = name;
	model__quantity_zero(&l->items[i].q);
	return &l->items[i].q;
}

/* The three upstream list operations (addResourceList, maxResourceList and
 * plain assignment), with overflow and bounds reported, never wrapped. */
enum list_op {
	OP_ADD,
	OP_MAX,
	OP_SET
};

static int reslist_apply(struct reslist *l, const char *name,
			 const struct quantity *q, enum list_op op)
{
	bool fresh;
	int rc = 0;
	struct quantity *slot = reslist_slot(l, name, &fresh, &rc);

	if (slot == NULL)
		return rc;
	if (!fresh && op == OP_ADD)
		return model__quantity_add(slot, q);
	if (!fresh && op == OP_MAX && model__quantity_cmp(q, slot) <= 0)
		return 0;
	*slot = *q;
	return 0;
}

static int reslist_merge(struct reslist *dst, const struct reslist *src,
			 enum list_op op)
{
	for (size_t i = 0; i < src->n; i++) {
		int rc = reslist_apply(dst, src->items[i].name,
				       &src->items[i].q, op);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Reading a pod.                                                          */

#define HUGEPAGES_PREFIX "hugepages-"
/* "initContainer <63 chars of name>" and room to spare. */
#define WHO_MAX 96

/* Member k of o when it has type t; absent or null gives NULL and 0. */
static int opt_member(const json_t *o, const char *k, json_type t,
		      const json_t **out, const char *who, struct lg_error *err)
{
	const json_t *m = json_object_get(o, k);

	*out = NULL;
	if (m == NULL || json_is_null(m))
		return 0;
	if (json_typeof(m) != t)
		return lg_error_set(err, LG_EINVAL, "%s: %s has the wrong type",
				    who, k);
	if ((t == JSON_ARRAY && json_array_size(m) > MODEL_MAX_ITEMS) ||
	    (t == JSON_OBJECT && json_object_size(m) > MODEL_MAX_ITEMS))
		return lg_error_set(err, LG_EINVAL,
				    "%s: %s has more than %d "
				    "items",
				    who, k, MODEL_MAX_ITEMS);
	*out = m;
	return 0;
}

/* Parses one quantity of a resource list. Stored objects carry quantities
 * as strings; anything else is a wrong type. A quantity too large to
 * represent is as unusable as a malformed one, so both are LG_EINVAL. */
static int parse_quantity(const json_t *v, struct quantity *q, const char *who,
			  const char *field, const char *name,
			  struct lg_error *err)
{
	const char *s = json_string_value(v);

	if (s == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s: %s %.63s is not a string", who, field,
				    name);
	if (model__quantity_parse(q, s, json_string_length(v), NULL) < 0)
		return lg_error_set(err, LG_EINVAL,
				    "%s: %s %.63s: invalid quantity \"%.40s\"",
				    who, field, name, s);
	return 0;
}

/* Adds every resource of map (bounded by opt_member) to l, except those
 * that skip has: that is how a limit stands in for a missing request. The
 * skipped ones are still parsed, so that a malformed limit never hides
 * behind a request. */
static int add_map(struct reslist *l, const json_t *map, const json_t *skip,
		   const char *who, const char *field, struct lg_error *err)
{
	const char *name;
	json_t *v;

	json_object_foreach ((json_t *)map, name, v) {
		struct quantity q;
		int rc;

		rc = parse_quantity(v, &q, who, field, name, err);
		if (rc < 0)
			return rc;
		if (json_object_get(skip, name) != NULL)
			continue;
		rc = reslist_apply(l, name, &q, OP_ADD);
		if (rc < 0)
			return lg_error_set(err, rc, "%s: %s %.63s: %s", who,
					    field, name, lg_strerror(rc));
	}
	return 0;
}

/* The requests of one container into l (emptied first). With defaults, a
 * limit without a request counts as the request, as the API server's
 * defaulting (SetDefaults_Pod) would have made it. */
static int container_requests(const json_t *c, const char *who, bool defaults,
			      struct reslist *l, struct lg_error *err)
{
	const json_t *res, *req, *lim;
	int rc;

	l->n = 0;
	if (!json_is_object(c))
		return lg_error_set(err, LG_EINVAL, "%s is not an object", who);
	if ((rc = opt_member(c, "resources", JSON_OBJECT, &res, who, err)) <
		    0 ||
	    (rc = opt_member(res, "requests", JSON_OBJECT, &req, who, err)) <
		    0 ||
	    (rc = opt_member(res, "limits", JSON_OBJECT, &lim, who, err)) < 0)
		return rc;
	rc = add_map(l, req, NULL, who, "request", err);
	if (rc == 0 && defaults)
		rc = add_map(l, lim, req, who, "limit", err);
	return rc;
}

static void container_who(char *who, const char *kind, const json_t *c,
			  size_t i)
{
	const char *name = jstr(c, "name");

	if (name != NULL)
		snprintf(who, WHO_MAX, "%s %.63s", kind, name);
	else
		snprintf(who, WHO_MAX, "%s #%zu", kind, i);
}

/* True for a restartable init container (a sidecar). A restartPolicy of
 * the wrong type is an error, reported through *rc. */
static bool is_sidecar(const json_t *c, const char *who, int *rc,
		       struct lg_error *err)
{
	const json_t *p = json_object_get(c, "restartPolicy");

	*rc = 0;
	if (p == NULL || json_is_null(p))
		return false;
	if (!json_is_string(p)) {
		*rc = lg_error_set(err, LG_EINVAL,
				   "%s: restartPolicy is not a string", who);
		return false;
	}
	return strcmp(json_string_value(p), "Always") == 0;
}

/* The regular containers (init false) or the init containers (init true),
 * following upstream's sidecar arithmetic (KEP 753) for the latter: regular
 * containers and sidecars add to sum, sidecars also to the running sidecar
 * total side; the in-use value of an init container is its request plus the
 * sidecars declared before it, and for a sidecar the running total including
 * itself. Their maximum goes into initmax. */
static int walk_containers(const json_t *spec, bool init, bool defaults,
			   struct reslist *sum, struct reslist *initmax,
			   struct reslist *side, struct reslist *cur,
			   struct lg_error *err)
{
	const json_t *arr;
	char who[WHO_MAX];
	size_t i;
	json_t *c;
	int rc;

	rc = opt_member(spec, init ? "initContainers" : "containers",
			JSON_ARRAY, &arr, "spec", err);
	if (rc < 0)
		return rc;
	json_array_foreach ((json_t *)arr, i, c) {
		bool sidecar;

		container_who(who, init ? "initContainer" : "container", c, i);
		rc = container_requests(c, who, defaults, cur, err);
		if (rc < 0)
			return rc;
		sidecar = init ? is_sidecar(c, who, &rc, err) : false;
		if (rc < 0)
			return rc;
		if (!init) {
			rc = reslist_merge(sum, cur, OP_ADD);
		} else if (sidecar) {
			if ((rc = reslist_merge(sum, cur, OP_ADD)) == 0 &&
			    (rc = reslist_merge(side, cur, OP_ADD)) == 0)
				rc = reslist_merge(initmax, side, OP_MAX);
		} else {
			if ((rc = reslist_merge(cur, side, OP_ADD)) == 0)
				rc = reslist_merge(initmax, cur, OP_MAX);
		}
		if (rc < 0)
			return lg_error_set(err, rc, "%s: sum of requests: %s",
					    who, lg_strerror(rc));
	}
	return 0;
}

static bool pod_level_resource(const char *name)
{
	return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
	       strncmp(name, HUGEPAGES_PREFIX, strlen(HUGEPAGES_PREFIX)) == 0;
}

/* Pod-level spec.resources.requests replaces cpu, memory and hugepages-*;
 * other resources there are checked but have no effect, as upstream. */
static int pod_level(const json_t *spec, struct reslist *sum,
		     struct lg_error *err)
{
	const json_t *res, *req;
	const char *name;
	json_t *v;
	int rc;

	if ((rc = opt_member(spec, "resources", JSON_OBJECT, &res, "spec",
			     err)) < 0 ||
	    (rc = opt_member(res, "requests", JSON_OBJECT, &req,
			     "spec.resources", err)) < 0)
		return rc;
	json_object_foreach ((json_t *)req, name, v) {
		struct quantity q;

		rc = parse_quantity(v, &q, "pod", "request", name, err);
		if (rc < 0)
			return rc;
		if (pod_level_resource(name) &&
		    (rc = reslist_apply(sum, name, &q, OP_SET)) < 0)
			return lg_error_set(err, rc, "pod: request %.63s: %s",
					    name, lg_strerror(rc));
	}
	return 0;
}

static int overhead(const json_t *spec, struct reslist *sum,
		    struct lg_error *err)
{
	const json_t *oh;
	int rc;

	rc = opt_member(spec, "overhead", JSON_OBJECT, &oh, "spec", err);
	if (rc < 0)
		return rc;
	return add_map(sum, oh, NULL, "pod", "overhead", err);
}

int model__pod_requests(const json_t *pod, bool defaults, struct reslist *out,
			struct lg_error *err)
{
	struct reslist sum, initmax, side, cur;
	const json_t *spec;
	int rc;

	out->n = 0;
	if (!json_is_object(pod))
		return lg_error_set(err, LG_EINVAL, "pod is not an object");
	rc = opt_member(pod, "spec", JSON_OBJECT, &spec, "pod", err);
	if (rc < 0)
		return rc;
	model__reslist_init(&sum);
	model__reslist_init(&initmax);
	model__reslist_init(&side);
	model__reslist_init(&cur);
	if ((rc = walk_containers(spec, false, defaults, &sum, &initmax, &side,
				  &cur, err)) < 0 ||
	    (rc = walk_containers(spec, true, defaults, &sum, &initmax, &side,
				  &cur, err)) < 0)
		goto out;
	if ((rc = reslist_merge(&sum, &initmax, OP_MAX)) < 0) {
		lg_error_set(err, rc, "pod: requests: %s", lg_strerror(rc));
		goto out;
	}
	if ((rc = pod_level(spec, &sum, err)) < 0 ||
	    (rc = overhead(spec, &sum, err)) < 0)
		goto out;
	/* Hand the result over; out's old array goes. */
	model__reslist_release(out);
	*out = sum;
	model__reslist_init(&sum);
out:
	model__reslist_release(&sum);
	model__reslist_release(&initmax);
	model__reslist_release(&side);
	model__reslist_release(&cur);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* eval PodRequests: a Pod in, {"requests": {name: quantity}} out.         */

static json_t *quantity_json(const struct quantity *q)
{
	char buf[128];
	size_t n = model__quantity_format(q, buf, sizeof(buf));
	json_t *v;
	char *big;

	if (n < sizeof(buf))
		return json_string(buf);
	big = lg_xmalloc(n + 1);
	model__quantity_format(q, big, n + 1);
	v = json_string(big);
	free(big);
	return v;
}

int model__eval_pod_requests(const struct eval_ctx *ctx, const json_t *input,
			     json_t **out, struct lg_error *err)
{
	struct reslist l;
	json_t *reqs;
	int rc;

	model__reslist_init(&l);
	rc = model__pod_requests(input, false, &l, err);
	if (rc < 0)
		return rc;
	reqs = json_object();
	for (size_t i = 0; reqs != NULL && i < l.n; i++)
		if (json_object_set_new(reqs, l.items[i].name,
					quantity_json(&l.items[i].q)) < 0) {
			json_decref(reqs);
			reqs = NULL;
		}
	model__reslist_release(&l);
	*out = reqs != NULL ? json_pack("{s:o}", "requests", reqs) : NULL;
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}
