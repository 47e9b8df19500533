/*
 * Budget keys and Tenant quotas (DESIGN 2.2, Appendix A "Keys and values").
 *
 * A key is classified in a fixed order: the exact budget keys first, then
 * anything else in the gpuclass.cozystack.io domain (invalid: a typo there
 * must not silently budget nothing), then raw device-plugin names of the
 * class table, then everything else, which belongs to other quota systems
 * and is ignored.
 *
 * A key without '/' is never a GPU key of any kind, raw included: the GPU
 * domain and every extended resource name are qualified with a '/', and a
 * class table listing a bare name must not turn "requests.cpu" or "pods"
 * into a GPU key.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

#define GPU_DOMAIN	   "gpuclass.cozystack.io"
#define TENANT_API_VERSION "apps.cozystack.io/v1alpha1"

static const char *const kind_names[] = {
	[KEY_OTHER] = "other",	   [KEY_CLASS] = "class", [KEY_TOTAL] = "total",
	[KEY_INVALID] = "invalid", [KEY_RAW] = "raw",
};

const char *model__key_kind_name(enum key_kind k)
{
	if ((unsigned)k >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "unknown";
	return kind_names[k];
}

/* The optional quota prefixes; at most one is stripped. */
static const struct {
	const char *s;
	size_t len;
} prefixes[] = {
	{"requests.", sizeof("requests.") - 1},
	{"limits.", sizeof("limits.") - 1},
};

static const char *strip_prefix(const char *key, bool *stripped)
{
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(key, prefixes[i].s, prefixes[i].len) == 0) {
			*stripped = true;
			return key + prefixes[i].len;
		}
	}
	*stripped = false;
	return key;
}

/* The part before the first '/' is the domain itself or a subdomain of it. */
static bool in_gpu_domain(const char *key)
{
	const char *slash = strchr(key, '/');
	size_t dlen = sizeof(GPU_DOMAIN) - 1, n;

	if (slash == NULL)
		return false;
	n = (size_t)(slash - key);
	if (n == dlen)
		return memcmp(key, GPU_DOMAIN, dlen) == 0;
	return n > dlen && key[n - dlen - 1] == '.' &&
	       memcmp(key + n - dlen, GPU_DOMAIN, dlen) == 0;
}

/* KEY_TOTAL or KEY_CLASS when s has the exact shape of one (label set for a
 * class key), else KEY_OTHER. */
static enum key_kind budget_shape(const char *s, const char **label,
				  size_t *label_len)
{
	size_t len = strlen(s), slen = sizeof(GPU_CLASS_KEY_SUFFIX) - 1;

	if (strcmp(s, GPU_TOTAL_KEY) == 0)
		return KEY_TOTAL;
	if (len <= slen || strcmp(s + len - slen, GPU_CLASS_KEY_SUFFIX) != 0 ||
	    !dns1123_label(s, len - slen))
		return KEY_OTHER;
	*label = s;
	*label_len = len - slen;
	return KEY_CLASS;
}

enum key_kind model__budget_key_classify(const char *key,
					 const struct class_table *t,
					 const char **cls, size_t *cls_len,
					 const char **resource)
{
	const char *s, *label = NULL, *res = NULL;
	size_t label_len = 0;
	enum key_kind k = KEY_OTHER;
	const struct gpu_class *c;
	bool stripped;

	if (key == NULL || strchr(key, '/') == NULL)
		goto out;
	s = strip_prefix(key, &stripped);
	k = budget_shape(s, &label, &label_len);
	if (k != KEY_OTHER) {
		/* Budget keys take no prefix: requests.h100.gpuclass... */
		if (stripped) {
			k = KEY_INVALID;
			label = NULL;
			label_len = 0;
		}
		goto out;
	}
	/* The stripped key needs no check of its own: a prefix only adds a
	 * label in front of the domain, so "requests.gpuclass.cozystack.io/x"
	 * is in the domain as written. */
	if (in_gpu_domain(key)) {
		k = KEY_INVALID;
		goto out;
	}
	c = model__class_table_by_resource(t, s);
	if (c != NULL) {
		k = KEY_RAW;
		label = c->name;
		label_len = strlen(c->name);
		res = s;
	}
out:
	if (cls != NULL)
		*cls = label;
	if (cls_len != NULL)
		*cls_len = label_len;
	if (resource != NULL)
		*resource = res;
	return k;
}

/* eval BudgetKey: a JSON string -> {"kind", "class"}. A string with a NUL
 * byte cannot be a Kubernetes resource name: it is "other". */
int model__eval_budget_key(const struct eval_ctx *ctx, const json_t *input,
			   json_t **out, struct lg_error *err)
{
	const char *key = json_string_value(input), *cls = NULL;
	size_t cls_len = 0;
	enum key_kind k = KEY_OTHER;
	json_t *c;

	if (key == NULL)
		return lg_error_set(err, LG_EINVAL, "input must be a string");
	if (strlen(key) == json_string_length(input))
		k = model__budget_key_classify(
			key, ctx != NULL ? ctx->classes : NULL, &cls, &cls_len,
			NULL);
	c = k == KEY_CLASS || k == KEY_RAW ? json_stringn(cls, cls_len)
					   : json_null();
	*out = json_pack("{s:s, s:o}", "kind", model__key_kind_name(k), "class",
			 c);
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Tenant objects.                                                          */

void tenant_map_release(struct tenant_map *tm)
{
	if (tm == NULL)
		return;
	free(tm->budgets);
	free(tm->raw);
	memset(tm, 0, sizeof(*tm));
}

/* A string member equal to want, or absent. */
static bool absent_or(const json_t *o, const char *member, const char *want)
{
	const json_t *v = json_object_get(o, member);

	return v == NULL ||
	       (json_is_string(v) && strcmp(json_string_value(v), want) == 0);
}

/* Objects without apiVersion or kind are accepted (callers may pass bare
 * objects); present ones must name a Tenant, as holder_map_object answers
 * LG_EUNKNOWN for a kind it does not map. */
static int check_kind(const json_t *tenant, struct lg_error *err)
{
	if (!json_is_object(tenant))
		return lg_error_set(err, LG_EINVAL,
				    "the Tenant is not an object");
	if (!absent_or(tenant, "apiVersion", TENANT_API_VERSION) ||
	    !absent_or(tenant, "kind", "Tenant"))
		return lg_error_set(err, LG_EUNKNOWN,
				    "not a " TENANT_API_VERSION " Tenant");
	return 0;
}

static const char *nonempty(const json_t *o, const char *member)
{
	const json_t *v = json_object_get(o, member);
	const char *s = json_string_value(v);

	if (s == NULL || *s == '\0' || strlen(s) != json_string_length(v))
		return NULL;
	return s;
}

/* The governed namespace must be a namespace name: a Tenant whose name
 * cannot form one governs nothing and is reported as invalid. */
static int read_governed(const json_t *tenant, struct tenant_map *tm,
			 struct lg_error *err)
{
	const json_t *md = json_object_get(tenant, "metadata");
	const char *x = nonempty(md, "name"), *p = nonempty(md, "namespace");

	if (x == NULL)
		return lg_error_set(
			err, LG_EINVAL,
			"metadata.name is missing or not a non-empty string");
	if (p == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "metadata.namespace is missing or not a "
				    "non-empty string");
	if (model__tenant_governed_ns(p, x, tm->governed, sizeof(tm->governed)) < 0 ||
	    !dns1123_label(tm->governed, strlen(tm->governed))) {
		tm->governed[0] = '\0';
		return lg_error_set(
			err, LG_EINVAL,
			"Tenant %.64s/%.64s governs no valid namespace", p, x);
	}
	return 0;
}

/* spec.resourceQuotas, or NULL when there is none (absent or null). */
static int read_quotas(const json_t *tenant, const json_t **rq,
		       struct lg_error *err)
{
	const json_t *spec = json_object_get(tenant, "spec"), *q;

	*rq = NULL;
	if (spec == NULL || json_is_null(spec))
		return 0;
	if (!json_is_object(spec))
		return lg_error_set(err, LG_EINVAL, "spec is not an object");
	q = json_object_get(spec, "resourceQuotas");
	if (q == NULL || json_is_null(q))
		return 0;
	if (!json_is_object(q))
		return lg_error_set(err, LG_EINVAL,
				    "spec.resourceQuotas is not an object");
	if (json_object_size(q) > MODEL_MAX_ITEMS)
		return lg_error_set(err, LG_ELIMIT,
				    "spec.resourceQuotas has more than %d keys",
				    MODEL_MAX_ITEMS);
	*rq = q;
	return 0;
}

/* One quota: key as written (len counts NUL bytes inside it) and value. */
struct quota {
	const char *key;
	size_t len;
	json_t *v;
};

static int quota_cmp(const void *pa, const void *pb)
{
	const struct quota *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);

	if (c != 0)
		return c;
	return (a->len > b->len) - (a->len < b->len);
}

static int str_cmp(const void *pa, const void *pb)
{
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The quotas sorted by key, so that "the first invalid one" (whose message
 * becomes the NOTE) does not depend on the order the map was written in.
 * Caller frees. */
static struct quota *sorted_quotas(const json_t *rq, size_t *n)
{
	struct quota *qs;
	size_t k = 0;

	*n = json_object_size(rq);
	qs = lg_xmalloc((*n > 0 ? *n : 1) * sizeof(*qs));
	for (void *it = json_object_iter((json_t *)rq); it != NULL && k < *n;
	     it = json_object_iter_next((json_t *)rq, it))
		qs[k++] = (struct quota){json_object_iter_key(it),
					 json_object_iter_key_len(it),
					 json_object_iter_value(it)};
	*n = k;
	qsort(qs, k, sizeof(*qs), quota_cmp);
	return qs;
}

/* A key with a NUL byte cannot be a resource name: ignored like "other". */
static void map_quota(struct tenant_map *tm, const struct quota *q,
		      const struct class_table *t, struct lg_error *err)
{
	const char *res = NULL;
	enum key_kind k = KEY_OTHER;
	struct lg_error qe = {0};
	int64_t val;

	if (strlen(q->key) == q->len)
		k = model__budget_key_classify(q->key, t, NULL, NULL, &res);
	if (k == KEY_OTHER)
		return;
	if (k == KEY_INVALID) {
		if (tm->n_invalid++ == 0)
			lg_error_set(err, LG_EINVAL,
				     "spec.resourceQuotas key \"%.128s\" is "
				     "not a valid GPU budget key",
				     q->key);
		return;
	}
	if (model__quantity_json_uint(q->v, &val, &qe) < 0) {
		if (tm->n_invalid++ == 0)
			lg_error_set(
				err, LG_EINVAL,
				"spec.resourceQuotas \"%.128s\": %s", q->key,
				qe.msg[0] != '\0'
					? qe.msg
					: "not an exact non-negative integer");
		return;
	}
	if (k == KEY_RAW)
		tm->raw[tm->n_raw++] = res;
	else
		tm->budgets[tm->n_budgets++] =
			(struct budget_entry){.key = q->key, .value = val};
}

/* Raw keys: "requests.r" and "limits.r" declare the same resource r once. */
static void unique_raw(struct tenant_map *tm)
{
	size_t k = 0;

	qsort(tm->raw, tm->n_raw, sizeof(*tm->raw), str_cmp);
	for (size_t i = 0; i < tm->n_raw; i++)
		if (k == 0 || strcmp(tm->raw[i], tm->raw[k - 1]) != 0)
			tm->raw[k++] = tm->raw[i];
	tm->n_raw = k;
}

static int map_quotas(struct tenant_map *tm, const json_t *rq,
		      const struct class_table *t, struct lg_error *err)
{
	struct quota *qs;
	size_t n;

	qs = sorted_quotas(rq, &n);
	tm->budgets = lg_xcalloc(n, sizeof(*tm->budgets));
	tm->raw = lg_xcalloc(n, sizeof(*tm->raw));
	/* Budgets come out sorted because the quotas are walked sorted. */
	for (size_t i = 0; i < n; i++)
		map_quota(tm, &qs[i], t, err);
	unique_raw(tm);
	free(qs);
	return 0;
}

/* tm is filled from scratch. Keys and resources are borrowed from tenant. */
int tenant_map_object(const json_t *tenant, const struct class_table *t,
		      struct tenant_map *tm, struct lg_error *err)
{
	const json_t *rq = NULL;
	int rc;

	memset(tm, 0, sizeof(*tm));
	lg_error_set(err, LG_OK, "%s", "");
	rc = check_kind(tenant, err);
	if (rc == 0)
		rc = read_governed(tenant, tm, err);
	if (rc == 0)
		rc = read_quotas(tenant, &rq, err);
	if (rc == 0 && rq != NULL)
		rc = map_quotas(tm, rq, t, err);
	if (rc < 0)
		tenant_map_release(tm);
	return rc;
}
