/*
 * Tolerations, taints (DESIGN 5.3) and whether a node serves a class
 * (DESIGN 2.4, Appendix A "Nodes").
 *
 * ToleratesTaint follows upstream k8s.io/api/core/v1 with one deliberate
 * difference: the comparison operators Gt and Lt never match, because their
 * feature gate is off by default and gpuledger must give one answer.
 */
#include "model/model_int.h"

#include <string.h>

/* Taints that say what the Ready condition and spec.unschedulable already
 * say: the node lifecycle controller sets them, so they must not count a
 * second time (and a class need not tolerate them). */
static const char *const exempt_taint_keys[] = {
	"node.kubernetes.io/unschedulable",
	"node.kubernetes.io/not-ready",
	"node.kubernetes.io/unreachable",
};

/* Effects that keep a pod off a node; PreferNoSchedule only discourages. */
static const char *const blocking_effects[] = {
	"NoSchedule",
	"NoExecute",
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *nz(const char *s)
{
	return s != NULL ? s : "";
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

bool model__toleration_tolerates(const struct toleration *tol,
				 const struct taint *taint)
{
	const char *op = nz(tol->op);

	if (nz(tol->effect)[0] != '\0' &&
	    strcmp(nz(tol->effect), nz(taint->effect)) != 0)
		return false;
	if (nz(tol->key)[0] != '\0' &&
	    strcmp(nz(tol->key), nz(taint->key)) != 0)
		return false;
	/* An empty operator is Equal, as upstream defaults it. */
	if (op[0] == '\0' || strcmp(op, "Equal") == 0)
		return strcmp(nz(tol->value), nz(taint->value)) == 0;
	return strcmp(op, "Exists") == 0;
}

/* Reads member k of object v into *out: absent or null is NULL, a string is
 * borrowed, anything else is an error. */
static int opt_str(const json_t *v, const char *k, const char **out,
		   const char *what, struct lg_error *err)
{
	const json_t *m = json_object_get(v, k);

	*out = NULL;
	if (m == NULL || json_is_null(m))
		return 0;
	if (!json_is_string(m))
		return lg_error_set(err, LG_EINVAL, "%s: %s is not a string",
				    what, k);
	/* A NUL inside would make two different values compare equal. */
	if (strlen(json_string_value(m)) != json_string_length(m))
		return lg_error_set(err, LG_EINVAL, "%s: %s contains NUL", what,
				    k);
	*out = json_string_value(m);
	return 0;
}

int model__toleration_from_json(struct toleration *tol, const json_t *v,
				struct lg_error *err)
{
	int rc;

	memset(tol, 0, sizeof(*tol));
	if (!json_is_object(v))
		return lg_error_set(err, LG_EINVAL,
				    "toleration is not an object");
	if ((rc = opt_str(v, "key", &tol->key, "toleration", err)) < 0 ||
	    (rc = opt_str(v, "operator", &tol->op, "toleration", err)) < 0 ||
	    (rc = opt_str(v, "value", &tol->value, "toleration", err)) < 0 ||
	    (rc = opt_str(v, "effect", &tol->effect, "toleration", err)) < 0) {
		memset(tol, 0, sizeof(*tol));
		return rc;
	}
	return 0;
}

int model__taint_from_json(struct taint *taint, const json_t *v,
			   struct lg_error *err)
{
	int rc;

	memset(taint, 0, sizeof(*taint));
	if (!json_is_object(v))
		return lg_error_set(err, LG_EINVAL, "taint is not an object");
	if ((rc = opt_str(v, "key", &taint->key, "taint", err)) < 0 ||
	    (rc = opt_str(v, "value", &taint->value, "taint", err)) < 0 ||
	    (rc = opt_str(v, "effect", &taint->effect, "taint", err)) < 0) {
		memset(taint, 0, sizeof(*taint));
		return rc;
	}
	return 0;
}

/* True when the node's conditions are a well-formed list whose first Ready
 * condition has status exactly "True". */
static bool node_ready(const json_t *status)
{
	const json_t *conds = json_object_get(status, "conditions");
	bool seen = false, ready = false;
	size_t i;
	json_t *c;

	if (!json_is_array(conds) || json_array_size(conds) > MODEL_MAX_ITEMS)
		return false;
	json_array_foreach (conds, i, c) {
		const char *type = jstr(c, "type");

		if (!json_is_object(c) || type == NULL)
			return false;
		if (!seen && strcmp(type, "Ready") == 0) {
			const char *st = jstr(c, "status");

			seen = true;
			ready = st != NULL && strcmp(st, "True") == 0;
		}
	}
	return ready;
}

static bool class_tolerates(const struct gpu_class *c, const struct taint *t)
{
	for (size_t i = 0; c != NULL && i < c->n_tolerations; i++)
		if (model__toleration_tolerates(&c->tolerations[i], t))
			return true;
	return false;
}

/* True when every blocking taint of spec is tolerated by class c; a
 * malformed taint list fails, since we cannot tell what it would block. */
static bool taints_tolerated(const json_t *spec, const struct gpu_class *c)
{
	const json_t *taints = json_object_get(spec, "taints");
	struct taint t;
	size_t i;
	json_t *v;

	if (taints == NULL || json_is_null(taints))
		return true;
	if (!json_is_array(taints) || json_array_size(taints) > MODEL_MAX_ITEMS)
		return false;
	json_array_foreach (taints, i, v) {
		if (model__taint_from_json(&t, v, NULL) < 0)
			return false;
		if (!in_list(nz(t.effect), blocking_effects,
			     ARRAY_LEN(blocking_effects)) ||
		    in_list(nz(t.key), exempt_taint_keys,
			    ARRAY_LEN(exempt_taint_keys)))
			continue;
		if (!class_tolerates(c, &t))
			return false;
	}
	return true;
}

bool model__node_serves(const json_t *node, const struct gpu_class *c)
{
	const json_t *spec = json_object_get(node, "spec");

	if (!json_is_object(node))
		return false;
	if (spec != NULL && !json_is_null(spec) && !json_is_object(spec))
		return false;
	/* Only the JSON value true cordons (Appendix A "Nodes"). */
	if (json_is_true(json_object_get(spec, "unschedulable")))
		return false;
	if (!node_ready(json_object_get(node, "status")))
		return false;
	return taints_tolerated(spec, c);
}

int model__eval_tolerates_taint(const struct eval_ctx *ctx, const json_t *input,
				json_t **out, struct lg_error *err)
{
	struct toleration tol;
	struct taint taint;
	int rc;

	if (!json_is_object(input))
		return lg_error_set(err, LG_EINVAL, "input must be an object");
	rc = model__toleration_from_json(
		&tol, json_object_get(input, "toleration"), err);
	if (rc < 0)
		return rc;
	rc = model__taint_from_json(&taint, json_object_get(input, "taint"),
				    err);
	if (rc < 0)
		return rc;
	*out = json_pack("{s:b}", "tolerates",
			 model__toleration_tolerates(&tol, &taint));
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}

int model__eval_node_serves(const struct eval_ctx *ctx, const json_t *input,
			    json_t **out, struct lg_error *err)
{
	const json_t *node = json_object_get(input, "node");
	struct gpu_class c;
	bool serves;
	int rc;

	if (!json_is_object(input))
		return lg_error_set(err, LG_EINVAL, "input must be an object");
	if (!json_is_object(node))
		return lg_error_set(err, LG_EINVAL, "node must be an object");
	rc = model__gpu_class_parse(&c, json_object_get(input, "class"), err);
	if (rc < 0)
		return rc;
	serves = model__node_serves(node, &c);
	model__gpu_class_release(&c);
	*out = json_pack("{s:b}", "serves", serves);
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}
