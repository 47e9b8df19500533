/*
 * Holder and node mapping (DESIGN 2.3, 2.4, Appendix A): what one watched
 * object holds of each class, and what one node offers of each class.
 *
 * The watcher maps every event and the verdicts map every admission spec, so
 * both must get the same answer from the same JSON: this file is the only
 * place that reads VMInstance, KubernetesNodes, Pod, ResourceClaim and Node
 * objects for their GPU content. The result structs are fixed size, so
 * mapping never allocates them, and every string is borrowed from the JSON.
 *
 * Each kind's mapper sums units into a per-class accumulator and returns an
 * LG_* code with err set when the object is unmappable; the public entry
 * points turn that into "valid = false, holds 0", because an invalid object
 * is an observation (a NOTE) and not a failure of the caller.
 */
#include "model/model_int.h"

#include <stdio.h>
#include <string.h>

/* KubernetesNodes without spec.maxReplicas scale to 10 (Cozystack default). */
#define KN_DEFAULT_REPLICAS 10
/* A claim request with allocationMode "All" counts as 32 devices. */
#define CLAIM_ALL_UNITS 32

/* Per class sums while mapping, indexed by class index. */
typedef int64_t class_acc[HOLDER_MAX_CLASSES];

typedef int map_fn(const json_t *in, const struct class_table *t,
		   struct holder_map *hm, int64_t *acc, struct lg_error *err);

static map_fn map_vmi, map_kn, map_pod, map_claim;

/*
 * The kinds we read. An object is ours only when both apiVersion and kind
 * match (Appendix A "Streams and time"); from_spec says that the mapper reads
 * the spec alone, which is what admission requests carry.
 */
static const struct kind_desc {
	const char *name;
	const char *api_version;
	map_fn *map;
	bool from_spec;
} kinds[HK_MAX] = {
	[HK_NONE] = {"", NULL, NULL, false},
	[HK_VMINSTANCE] = {"VMInstance", "apps.cozystack.io/v1alpha1", map_vmi,
			   true},
	[HK_KUBERNETESNODES] = {"KubernetesNodes", "apps.cozystack.io/v1alpha1",
				map_kn, true},
	[HK_POD] = {"Pod", "v1", map_pod, false},
	[HK_RESOURCECLAIM] = {"ResourceClaim", "resource.k8s.io/v1", map_claim,
			      false},
};

const char *model__holder_kind_name(enum holder_kind k)
{
	if ((unsigned)k >= HK_MAX)
		return "";
	return kinds[k].name;
}

enum holder_kind model__holder_kind_parse(const char *s)
{
	if (s == NULL || *s == '\0')
		return HK_NONE;
	for (int k = HK_NONE + 1; k < HK_MAX; k++)
		if (strcmp(kinds[k].name, s) == 0)
			return (enum holder_kind)k;
	return HK_NONE;
}

/* ---------------------------------------------------------------------- */
/* Small helpers.                                                          */

static size_t table_n(const struct class_table *t)
{
	return t == NULL ? 0 : t->n;
}

/* The index of a class found in t (lookups return pointers into t). */
static uint32_t class_index(const struct class_table *t,
			    const struct gpu_class *c)
{
	return (uint32_t)(c - t->classes);
}

static bool absent(const json_t *v)
{
	return v == NULL || json_is_null(v);
}

/* Adds b to *a, refusing int64 overflow (every input here is >= 0). */
static int add_units(int64_t *a, int64_t b)
{
	return __builtin_add_overflow(*a, b, a) ? LG_ERANGE : 0;
}

/* Copies a node name into hm->node; names longer than a DNS-1123
 * subdomain cannot be real node names. */
static int set_node(struct holder_map *hm, const char *node)
{
	size_t len = strlen(node);

	if (len > NODE_NAME_MAX)
		return LG_EINVAL;
	memcpy(hm->node, node, len + 1);
	return 0;
}

/* Reads a member that may be absent or null (*out = NULL) or an object. */
static int opt_object(const json_t *o, const char *key, const char *where,
		      const json_t **out, struct lg_error *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (absent(v))
		return 0;
	if (!json_is_object(v))
		return lg_error_set(err, LG_EINVAL, "%s.%s: not an object",
				    where, key);
	*out = v;
	return 0;
}

/* Reads a member that may be absent or null (*out = NULL) or an array of at
 * most max items. */
static int opt_array(const json_t *o, const char *key, const char *where,
		     size_t max, const json_t **out, struct lg_error *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (absent(v))
		return 0;
	if (!json_is_array(v))
		return lg_error_set(err, LG_EINVAL, "%s.%s: not a list", where,
				    key);
	if (json_array_size(v) > max)
		return lg_error_set(err, LG_ELIMIT,
				    "%s.%s: more than %zu items", where, key,
				    max);
	*out = v;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* VMInstance and KubernetesNodes: spec.gpus entries.                      */

/* A count is absent/null (1) or an exact integer >= 1, given as a JSON
 * number or a quantity string (Appendix A). */
static int entry_count(const json_t *e, size_t i, int64_t *out,
		       struct lg_error *err)
{
	const json_t *v = json_object_get(e, "count");
	struct lg_error qe = {0};

	*out = 1;
	if (absent(v))
		return 0;
	if (model__quantity_json_uint(v, out, &qe) < 0)
		return lg_error_set(err, LG_EINVAL, "spec.gpus[%zu].count: %s",
				    i, qe.msg[0] ? qe.msg : "invalid");
	if (*out < 1)
		return lg_error_set(err, LG_EINVAL,
				    "spec.gpus[%zu].count: must be >= 1", i);
	return 0;
}

/* Maps one entry: a class entry adds its count to its class, a raw entry or
 * an unknown class adds nothing. Counts are checked on every entry, because
 * an unmappable spec is unmappable whatever its entries mean. */
static int map_entry(const json_t *e, size_t i, const struct class_table *t,
		     struct holder_map *hm, int64_t *acc, struct lg_error *err)
{
	const json_t *cv = json_object_get(e, "class");
	const struct gpu_class *c = NULL;
	int64_t count;
	int rc;

	hm->entry_class[i] = -1;
	if (!json_is_object(e))
		return lg_error_set(err, LG_EINVAL,
				    "spec.gpus[%zu]: not an object", i);
	if (!absent(cv) && !json_is_string(cv))
		return lg_error_set(err, LG_EINVAL,
				    "spec.gpus[%zu].class: not a string", i);
	rc = entry_count(e, i, &count, err);
	if (rc < 0 || absent(cv))
		return rc;
	if (t != NULL)
		c = class_table_find(t, json_string_value(cv));
	if (c == NULL) {
		hm->unknown_class = true;
		return 0;
	}
	hm->entry_class[i] = (int16_t)class_index(t, c);
	if (add_units(&acc[class_index(t, c)], count) < 0)
		return lg_error_set(err, LG_ERANGE,
				    "spec.gpus: units of class %s overflow",
				    c->name);
	return 0;
}

static int map_gpus(const json_t *spec, const struct class_table *t,
		    struct holder_map *hm, int64_t *acc, struct lg_error *err)
{
	const json_t *gpus;
	int rc;

	if (!json_is_object(spec))
		return lg_error_set(err, LG_EINVAL, "spec: not an object");
	rc = opt_array(spec, "gpus", "spec", HOLDER_MAX_ENTRIES, &gpus, err);
	if (rc < 0)
		return rc;
	hm->n_entries = json_array_size(gpus);
	for (size_t i = 0; i < hm->n_entries; i++) {
		rc = map_entry(json_array_get(gpus, i), i, t, hm, acc, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* A VMInstance reserves its entries once; its maxReplicas is ignored. */
static int map_vmi(const json_t *spec, const struct class_table *t,
		   struct holder_map *hm, int64_t *acc, struct lg_error *err)
{
	return map_gpus(spec, t, hm, acc, err);
}

/* maxReplicas is absent/null (10) or a JSON integer >= 0; a string or a
 * real is invalid even when it looks like an integer (Appendix A). */
static int max_replicas(const json_t *spec, int64_t *out, struct lg_error *err)
{
	const json_t *v = json_object_get(spec, "maxReplicas");

	*out = KN_DEFAULT_REPLICAS;
	if (absent(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return lg_error_set(err, LG_EINVAL,
				    "spec.maxReplicas: not an integer >= 0");
	*out = json_integer_value(v);
	return 0;
}

static int map_kn(const json_t *spec, const struct class_table *t,
		  struct holder_map *hm, int64_t *acc, struct lg_error *err)
{
	int64_t replicas;
	int rc = map_gpus(spec, t, hm, acc, err);

	if (rc == 0)
		rc = max_replicas(spec, &replicas, err);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < table_n(t); i++)
		if (__builtin_mul_overflow(acc[i], replicas, &acc[i]))
			return lg_error_set(err, LG_ERANGE,
					    "units x maxReplicas overflow");
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Pods.                                                                   */

/* Every quantity of a resource map must be a string that parses to a
 * non-negative value; a pod with a bad one holds 0 (Appendix A "Pods").
 * Stored objects carry quantities as strings, as model__pod_requests expects.
 */
static int check_qmap(const json_t *m, const char *where, struct lg_error *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(m))
		return 0;
	if (json_object_size(m) > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT, "%s: too many resources",
				    where);
	/* jansson's iteration API takes non-const pointers; nothing is
	 * modified. */
	json_object_foreach ((json_t *)m, key, v) {
		const char *s = json_string_value(v);
		struct quantity q;

		if (s == NULL ||
		    model__quantity_parse(&q, s, json_string_length(v), NULL) <
			    0)
			return lg_error_set(err, LG_EINVAL,
					    "%s[%.63s]: invalid quantity",
					    where, key);
		if (model__quantity_is_negative(&q))
			return lg_error_set(err, LG_EINVAL,
					    "%s[%.63s]: negative quantity "
					    "%.40s",
					    where, key, s);
	}
	return 0;
}

static int check_containers(const json_t *spec, const char *list,
			    struct lg_error *err)
{
	const json_t *cs = json_object_get(spec, list);
	char where[64];
	int rc;

	if (json_array_size(cs) > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT, "spec.%s: too many items",
				    list);
	for (size_t i = 0; i < json_array_size(cs); i++) {
		const json_t *res =
			json_object_get(json_array_get(cs, i), "resources");

		snprintf(where, sizeof(where), "spec.%s[%zu].requests", list,
			 i);
		rc = check_qmap(json_object_get(res, "requests"), where, err);
		if (rc < 0)
			return rc;
		snprintf(where, sizeof(where), "spec.%s[%zu].limits", list, i);
		rc = check_qmap(json_object_get(res, "limits"), where, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int check_pod_quantities(const json_t *spec, struct lg_error *err)
{
	int rc = check_containers(spec, "containers", err);

	if (rc == 0)
		rc = check_containers(spec, "initContainers", err);
	if (rc == 0)
		rc = check_qmap(json_object_get(spec, "overhead"),
				"spec.overhead", err);
	return rc;
}

/* Units of class c = sum over c's raw names of Value() of the effective
 * request: the ceiling per resource, then the sum. */
static int pod_units(const struct reslist *rl, const struct class_table *t,
		     int64_t *acc, struct lg_error *err)
{
	for (size_t i = 0; i < table_n(t); i++) {
		const struct gpu_class *c = &t->classes[i];

		for (size_t j = 0; j < c->n_resource_names; j++) {
			const char *r = c->resource_names[j];
			const struct quantity *q = model__reslist_get(rl, r);
			int64_t v;

			if (q == NULL)
				continue;
			if (model__quantity_value(q, &v) < 0 ||
			    add_units(&acc[i], v))
				return lg_error_set(err, LG_ERANGE,
						    "%s: request overflows", r);
		}
	}
	return 0;
}

static bool pod_terminal(const json_t *pod)
{
	const char *phase = jstr(json_object_get(pod, "status"), "phase");

	return phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
				 strcmp(phase, "Failed") == 0);
}

static int map_pod(const json_t *pod, const struct class_table *t,
		   struct holder_map *hm, int64_t *acc, struct lg_error *err)
{
	const json_t *spec = json_object_get(pod, "spec");
	const json_t *node = json_object_get(spec, "nodeName");
	struct reslist rl;
	int rc;

	hm->allocated = true;
	if (!absent(node) && (!json_is_string(node) ||
			      set_node(hm, json_string_value(node)) < 0))
		return lg_error_set(err, LG_EINVAL,
				    "spec.nodeName: not a node name");
	/* A finished pod holds nothing, whatever its spec says. */
	if (pod_terminal(pod))
		return 0;
	rc = check_pod_quantities(spec, err);
	if (rc < 0)
		return rc;
	model__reslist_init(&rl);
	/* The API server's defaulting: a limit with no request is the
	 * request, so a limits-only GPU pod counts. */
	rc = model__pod_requests(pod, true, &rl, err);
	if (rc == 0)
		rc = pod_units(&rl, t, acc, err);
	model__reslist_release(&rl);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* ResourceClaims (resource.k8s.io/v1).                                    */

/* A device request ("exactly" or one of "firstAvailable"): its class (NULL
 * when the device class is not in the table) and its units. */
struct devreq {
	const struct gpu_class *c;
	int64_t units;
};

static int devreq_count(const json_t *r, const char *where, int64_t *out,
			struct lg_error *err)
{
	const json_t *v = json_object_get(r, "count");

	*out = 1;
	if (absent(v))
		return 0;
	if (!json_is_number(v) || model__quantity_json_uint(v, out, NULL) < 0 ||
	    *out < 1)
		return lg_error_set(err, LG_EINVAL,
				    "%s.count: not an integer >= 1", where);
	return 0;
}

static int read_devreq(const json_t *r, const char *where,
		       const struct class_table *t, struct devreq *d,
		       struct lg_error *err)
{
	const json_t *dc = json_object_get(r, "deviceClassName");
	const json_t *mode = json_object_get(r, "allocationMode");
	const char *m = absent(mode) ? "ExactCount" : json_string_value(mode);

	d->c = NULL;
	d->units = 0;
	if (!json_is_object(r))
		return lg_error_set(err, LG_EINVAL, "%s: not an object", where);
	if (!absent(dc) && !json_is_string(dc))
		return lg_error_set(err, LG_EINVAL,
				    "%s.deviceClassName: not a string", where);
	if (m == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s.allocationMode: not a string", where);
	if (json_is_string(dc) && t != NULL)
		d->c = model__class_table_by_device_class(
			t, json_string_value(dc));
	/* Only an ExactCount count is read; an unknown mode counts 0. */
	if (strcmp(m, "ExactCount") == 0)
		return devreq_count(r, where, &d->units, err);
	if (strcmp(m, "All") == 0)
		d->units = CLAIM_ALL_UNITS;
	return 0;
}

static int add_devreq(const struct class_table *t, const struct devreq *d,
		      int64_t *acc, struct lg_error *err)
{
	if (d->c == NULL)
		return 0;
	if (add_units(&acc[class_index(t, d->c)], d->units) < 0)
		return lg_error_set(err, LG_ERANGE,
				    "units of class %s overflow", d->c->name);
	return 0;
}

/* firstAvailable: per class, the largest count among its subrequests (the
 * scheduler picks one; the claim may end up holding any of them). */
static int first_available(const json_t *req, const char *where,
			   const struct class_table *t, int64_t *acc,
			   struct lg_error *err)
{
	class_acc best = {0};
	const json_t *subs;
	char sw[128];
	int rc;

	rc = opt_array(req, "firstAvailable", where, MODEL_MAX_ITEMS, &subs,
		       err);
	for (size_t i = 0; rc == 0 && i < json_array_size(subs); i++) {
		struct devreq d;

		snprintf(sw, sizeof(sw), "%s.firstAvailable[%zu]", where, i);
		rc = read_devreq(json_array_get(subs, i), sw, t, &d, err);
		if (rc == 0 && d.c != NULL) {
			uint32_t k = class_index(t, d.c);

			if (d.units > best[k])
				best[k] = d.units;
		}
	}
	for (size_t k = 0; rc == 0 && k < table_n(t); k++)
		if (add_units(&acc[k], best[k]) < 0)
			rc = lg_error_set(err, LG_ERANGE, "units overflow");
	return rc;
}

static int map_request(const json_t *req, size_t i, const struct class_table *t,
		       int64_t *acc, struct lg_error *err)
{
	const json_t *exactly;
	struct devreq d;
	char where[64], ew[80];
	int rc;

	snprintf(where, sizeof(where), "spec.devices.requests[%zu]", i);
	if (!json_is_object(req))
		return lg_error_set(err, LG_EINVAL, "%s: not an object", where);
	rc = opt_object(req, "exactly", where, &exactly, err);
	if (rc == 0 && exactly != NULL) {
		snprintf(ew, sizeof(ew), "%s.exactly", where);
		rc = read_devreq(exactly, ew, t, &d, err);
		if (rc == 0)
			rc = add_devreq(t, &d, acc, err);
	}
	if (rc == 0)
		rc = first_available(req, where, t, acc, err);
	return rc;
}

/* True when a matchFields entry names nodes: key metadata.name, operator
 * In. */
static bool names_node(const json_t *f)
{
	const char *key = jstr(f, "key"), *op = jstr(f, "operator");

	return key != NULL && op != NULL && strcmp(key, "metadata.name") == 0 &&
	       strcmp(op, "In") == 0;
}

/* Folds the values of one matchFields entry into *one; false when they name
 * a second node, a value is not a string, or the bound is reached. */
static bool fold_values(const json_t *vals, const char **one, size_t *budget)
{
	for (size_t k = 0; k < json_array_size(vals); k++) {
		const char *v = json_string_value(json_array_get(vals, k));

		if ((*budget)-- == 0 || v == NULL)
			return false;
		if (*one != NULL && strcmp(*one, v) != 0)
			return false;
		*one = v;
	}
	return true;
}

/*
 * The allocation's node: the values of matchFields entries with key
 * metadata.name and operator In, over all terms, when they name exactly one
 * node. The node is informational, so a selector of another shape gives ""
 * rather than making the claim invalid.
 */
static void claim_node(const json_t *alloc, struct holder_map *hm)
{
	const json_t *terms = json_object_get(
		json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms");
	const char *one = NULL;
	size_t budget = MODEL_MAX_ITEMS;

	for (size_t i = 0; i < json_array_size(terms); i++) {
		const json_t *mf = json_object_get(json_array_get(terms, i),
						   "matchFields");

		for (size_t j = 0; j < json_array_size(mf); j++) {
			const json_t *f = json_array_get(mf, j);

			if (budget-- == 0)
				return;
			if (names_node(f) &&
			    !fold_values(json_object_get(f, "values"), &one,
					 &budget))
				return;
		}
	}
	if (one != NULL && set_node(hm, one) < 0)
		hm->node[0] = '\0';
}

static int map_claim(const json_t *claim, const struct class_table *t,
		     struct holder_map *hm, int64_t *acc, struct lg_error *err)
{
	const json_t *alloc =
		json_object_get(json_object_get(claim, "status"), "allocation");
	const json_t *spec, *devices = NULL, *reqs = NULL;
	int rc;

	hm->allocated = !absent(alloc);
	if (hm->allocated)
		claim_node(alloc, hm);
	rc = opt_object(claim, "spec", "", &spec, err);
	if (rc == 0)
		rc = opt_object(spec, "devices", "spec", &devices, err);
	if (rc == 0)
		rc = opt_array(devices, "requests", "spec.devices",
			       MODEL_MAX_ITEMS, &reqs, err);
	for (size_t i = 0; rc == 0 && i < json_array_size(reqs); i++)
		rc = map_request(json_array_get(reqs, i), i, t, acc, err);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Entry points.                                                           */

static void holder_map_reset(struct holder_map *hm, enum holder_kind kind)
{
	hm->kind = kind;
	hm->ns = hm->name = hm->uid = "";
	hm->valid = false;
	hm->n = 0;
	hm->node[0] = '\0';
	hm->allocated = false;
	hm->unknown_class = false;
	hm->too_large = false;
	hm->n_entries = 0;
}

/* Runs a kind's mapper and turns its failure into an invalid map. */
static int run_mapper(const struct kind_desc *kd, const json_t *in,
		      const struct class_table *t, struct holder_map *hm,
		      struct lg_error *err)
{
	class_acc acc = {0};
	int rc;

	if (table_n(t) > HOLDER_MAX_CLASSES)
		rc = lg_error_set(err, LG_ELIMIT,
				  "class table has more than %d classes",
				  HOLDER_MAX_CLASSES);
	else
		rc = kd->map(in, t, hm, acc, err);
	/* DESIGN 2.3 "Bounds": int64 overflow on the way is too large too. */
	for (size_t i = 0; rc == 0 && i < table_n(t); i++)
		if (acc[i] > HOLDER_UNITS_MAX)
			rc = lg_error_set(err, LG_ERANGE,
					  "%lld units of class %s, more than "
					  "%lld",
					  (long long)acc[i], t->classes[i].name,
					  HOLDER_UNITS_MAX);
	if (rc == LG_ERANGE)
		hm->too_large = true;
	if (rc < 0) {
		hm->valid = false;
		hm->n = 0;
		hm->n_entries = 0;
		hm->unknown_class = false;
		return 0;
	}
	hm->valid = true;
	for (size_t i = 0; i < table_n(t); i++) {
		if (acc[i] <= 0)
			continue;
		hm->units[hm->n].cls = (uint32_t)i;
		hm->units[hm->n].units = acc[i];
		hm->n++;
	}
	return 0;
}

static const char *or_q(const char *s)
{
	return s != NULL ? s : "?";
}

static const struct kind_desc *object_kind(const json_t *obj,
					   enum holder_kind *k)
{
	const char *api = jstr(obj, "apiVersion");
	const char *kind = jstr(obj, "kind");

	*k = model__holder_kind_parse(kind);
	if (*k == HK_NONE || api == NULL ||
	    strcmp(api, kinds[*k].api_version) != 0)
		return NULL;
	return &kinds[*k];
}

int holder_map_object(const json_t *obj, const struct class_table *t,
		      struct holder_map *hm, struct lg_error *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	const char *uid = jstr(meta, "uid");
	const struct kind_desc *kd;
	const json_t *in;
	enum holder_kind k;

	holder_map_reset(hm, HK_NONE);
	kd = object_kind(obj, &k);
	if (kd == NULL)
		return lg_error_set(
			err, LG_EUNKNOWN, "not a holder kind: %s %s",
			or_q(jstr(obj, "apiVersion")), or_q(jstr(obj, "kind")));
	hm->kind = k;
	if (ns == NULL || *ns == '\0' || name == NULL || *name == '\0')
		return lg_error_set(err, LG_EINVAL,
				    "%s: metadata.namespace and metadata.name "
				    "are required",
				    kd->name);
	hm->ns = ns;
	hm->name = name;
	hm->uid = uid != NULL ? uid : "";
	in = kd->from_spec ? json_object_get(obj, "spec") : obj;
	return run_mapper(kd, in, t, hm, err);
}

int model__holder_map_spec(enum holder_kind kind, const json_t *spec,
			   const struct class_table *t, struct holder_map *hm,
			   struct lg_error *err)
{
	holder_map_reset(hm, HK_NONE);
	if ((unsigned)kind >= HK_MAX || !kinds[kind].from_spec)
		return lg_error_set(err, LG_EINVAL,
				    "kind %s has no spec mapping",
				    model__holder_kind_name(kind));
	hm->kind = kind;
	return run_mapper(&kinds[kind], spec, t, hm, err);
}

int64_t model__holder_map_units(const struct holder_map *hm, uint32_t cls)
{
	for (size_t i = 0; i < hm->n && i < HOLDER_MAX_CLASSES; i++)
		if (hm->units[i].cls == cls)
			return hm->units[i].units;
	return 0;
}

bool holder_claim_covered(const struct holder_map *claim,
			  const struct holder_map *vmi)
{
	char vname[DNS1123_LABEL_MAX + 1], cname[DNS1123_LABEL_MAX + 1];
	char dev[16];
	uint32_t c;

	if (claim->kind != HK_RESOURCECLAIM || !claim->valid || claim->n != 1 ||
	    vmi->kind != HK_VMINSTANCE || !vmi->valid)
		return false;
	if (claim->ns == NULL || vmi->ns == NULL || claim->name == NULL ||
	    vmi->name == NULL || strcmp(claim->ns, vmi->ns) != 0)
		return false;
	c = claim->units[0].cls;
	vmi_name(vmi->name, vname);
	for (size_t i = 0; i < vmi->n_entries && i < HOLDER_MAX_ENTRIES; i++) {
		if (vmi->entry_class[i] < 0 ||
		    (uint32_t)vmi->entry_class[i] != c)
			continue;
		snprintf(dev, sizeof(dev), "gpu%zu", i + 1);
		if (claim_name(vname, dev, cname) < 0)
			continue;
		if (strcmp(claim->name, cname) == 0)
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------------- */
/* Nodes.                                                                  */

/* One allocatable value: Value() of a non-negative quantity, else 0. Returns
 * false when the value had to be counted as 0. */
static bool allocatable_value(const json_t *v, int64_t *out)
{
	const char *s = json_string_value(v);
	struct quantity q;

	*out = 0;
	if (s == NULL ||
	    model__quantity_parse(&q, s, json_string_length(v), NULL) < 0 ||
	    model__quantity_is_negative(&q) ||
	    model__quantity_value(&q, out) < 0) {
		*out = 0;
		return false;
	}
	return true;
}

static int64_t node_capacity(const json_t *alloc, const struct gpu_class *c,
			     const char *node, struct lg_error *err)
{
	int64_t sum = 0, v;

	for (size_t j = 0; j < c->n_resource_names; j++) {
		const char *r = c->resource_names[j];
		const json_t *q = json_object_get(alloc, r);

		if (q == NULL)
			continue;
		if (!allocatable_value(q, &v))
			lg_error_set(err, LG_EINVAL,
				     "node %s: allocatable %s is invalid, "
				     "counted as 0",
				     node, r);
		if (add_units(&sum, v) < 0) {
			lg_error_set(err, LG_ERANGE,
				     "node %s: capacity of class %s overflows, "
				     "counted as 0",
				     node, c->name);
			return 0;
		}
	}
	return sum;
}

/*
 * A node's per-class capacity and serving. Problems that make a value count
 * as 0 (an invalid allocatable, an overflowing sum) do not fail the call:
 * they are reported in err, which is cleared first so that err->code says
 * whether there was one.
 */
int node_map_object(const json_t *node, const struct class_table *t,
		    struct node_map *nm, struct lg_error *err)
{
	const json_t *alloc =
		json_object_get(json_object_get(node, "status"), "allocatable");
	const char *name = jstr(json_object_get(node, "metadata"), "name");

	if (err != NULL) {
		err->code = 0;
		err->msg[0] = '\0';
	}
	nm->name = "";
	nm->n = 0;
	if (name == NULL || *name == '\0')
		return lg_error_set(err, LG_EINVAL,
				    "node: metadata.name is required");
	if (table_n(t) > HOLDER_MAX_CLASSES)
		return lg_error_set(err, LG_ELIMIT,
				    "class table has more than %d classes",
				    HOLDER_MAX_CLASSES);
	nm->name = name;
	for (size_t i = 0; i < table_n(t); i++) {
		struct node_class *nc = &nm->classes[i];

		nc->cls = (uint32_t)i;
		nc->capacity = node_capacity(alloc, &t->classes[i], name, err);
		nc->serves = model__node_serves(node, &t->classes[i]);
	}
	nm->n = table_n(t);
	return 0;
}
