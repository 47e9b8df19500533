/* Tests of budget keys and Tenant quotas (model/keys.c): DESIGN 2.2 and
 * Appendix A "Keys and values". */
#include "model/model_int.h"
#include "tests/model_tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The longest DNS-1123 label. */
#define L63 "a23456789012345678901234567890123456789012345678901234567890123"
#define SFX GPU_CLASS_KEY_SUFFIX

/* A table with a bare raw name ("gpu") and a raw name inside the GPU domain,
 * to show that neither rule is overridden by the table. */
static const char table_doc[] =
	"{\"classes\":[{\"name\":\"h100\",\"resourceNames\":"
	"[\"nvidia.com/GH100_H100_SXM5_80GB\",\"nvidia.com/gpu\"]},"
	"{\"name\":\"l4\",\"resourceNames\":[\"nvidia.com/AD104GL_L4\",\"gpu\","
	"\"gpuclass.cozystack.io/raw\"]}]}";

static void load_table(struct class_table *t)
{
	json_t *doc = tj(table_doc);
	struct lg_error err = {0};

	ck_assert_msg(class_table_parse(t, doc, &err) == 0, "%s", err.msg);
	json_decref(doc);
}

/* ---------------------------------------------------------------------- */

static const struct {
	const char *key;
	bool table; /* classify against table_doc (else NULL) */
	enum key_kind kind;
	const char *cls; /* class label / owning class, NULL if none */
	size_t res_off;	 /* raw: where the resource starts in key */
} keys[] = {
	/* DESIGN 2.2. */
	{GPU_TOTAL_KEY, true, KEY_TOTAL, NULL, 0},
	{GPU_TOTAL_KEY, false, KEY_TOTAL, NULL, 0},
	{"h100" SFX, true, KEY_CLASS, "h100", 0},
	{"h100" SFX, false, KEY_CLASS, "h100", 0},
	{"b200" SFX, true, KEY_CLASS, "b200", 0}, /* not in the table: still */
	{"requests.h100" SFX, true, KEY_INVALID, NULL, 0},
	{"limits.h100" SFX, true, KEY_INVALID, NULL, 0},
	{"requests." GPU_TOTAL_KEY, true, KEY_INVALID, NULL, 0},
	{"limits." GPU_TOTAL_KEY, false, KEY_INVALID, NULL, 0},
	{"gpuclass.cozystack.io/memory", true, KEY_INVALID, NULL, 0},
	{"a.b" SFX, true, KEY_INVALID, NULL, 0},
	/* Labels: uppercase, empty, dashes at the ends, 63 and 64 chars. */
	{"H100" SFX, true, KEY_INVALID, NULL, 0},
	{SFX, true, KEY_INVALID, NULL, 0},
	{"-h100" SFX, true, KEY_INVALID, NULL, 0},
	{"h100-" SFX, true, KEY_INVALID, NULL, 0},
	{"h_100" SFX, true, KEY_INVALID, NULL, 0},
	{"a-1" SFX, true, KEY_CLASS, "a-1", 0},
	{"7" SFX, true, KEY_CLASS, "7", 0},
	{L63 SFX, true, KEY_CLASS, L63, 0},
	{L63 "4" SFX, true, KEY_INVALID, NULL, 0},
	/* Only one prefix is stripped. */
	{"requests.requests.h100" SFX, true, KEY_INVALID, NULL, 0},
	{"requests.limits" SFX, true, KEY_INVALID, NULL, 0},
	{"requests.limits.nvidia.com/gpu", true, KEY_OTHER, NULL, 0},
	/* Anything else in the domain, as written or after stripping. */
	{"gpuclass.cozystack.io/", true, KEY_INVALID, NULL, 0},
	{"gpuclass.cozystack.io/devices/x", true, KEY_INVALID, NULL, 0},
	{"gpuclass.cozystack.io/devices ", true, KEY_INVALID, NULL, 0},
	{"h100.gpuclass.cozystack.io/Devices", true, KEY_INVALID, NULL, 0},
	{"requests.gpuclass.cozystack.io/memory", true, KEY_INVALID, NULL, 0},
	{"limits.x.gpuclass.cozystack.io/foo", true, KEY_INVALID, NULL, 0},
	{"requests.sub.gpuclass.cozystack.io/y", false, KEY_INVALID, NULL, 0},
	/* ...and a raw name of the table there is still invalid. */
	{"gpuclass.cozystack.io/raw", true, KEY_INVALID, NULL, 0},
	{"requests.gpuclass.cozystack.io/raw", true, KEY_INVALID, NULL, 0},
	/* Not the domain: exact bytes, a subdomain needs the dot. */
	{"GPUCLASS.COZYSTACK.IO/devices", true, KEY_OTHER, NULL, 0},
	{"Gpuclass.cozystack.io/devices", true, KEY_OTHER, NULL, 0},
	{"xgpuclass.cozystack.io/devices", true, KEY_OTHER, NULL, 0},
	{"gpuclass.cozystack.io.example.com/devices", true, KEY_OTHER, NULL, 0},
	{"example.com/gpuclass.cozystack.io/devices", true, KEY_OTHER, NULL, 0},
	{"requests.xgpuclass.cozystack.io/devices", true, KEY_OTHER, NULL, 0},
	/* No '/': never GPU, even a bare raw name of the table. */
	{"gpuclass.cozystack.io", true, KEY_OTHER, NULL, 0},
	{"h100.gpuclass.cozystack.io", true, KEY_OTHER, NULL, 0},
	{"requests.gpuclass.cozystack.io", true, KEY_OTHER, NULL, 0},
	{"gpu", true, KEY_OTHER, NULL, 0},
	{"requests.gpu", true, KEY_OTHER, NULL, 0},
	{"", true, KEY_OTHER, NULL, 0},
	{"cpu", true, KEY_OTHER, NULL, 0},
	{"requests.cpu", true, KEY_OTHER, NULL, 0},
	{"limits.memory", true, KEY_OTHER, NULL, 0},
	{"requests.", true, KEY_OTHER, NULL, 0},
	{"count/pods", true, KEY_OTHER, NULL, 0},
	{"requests./", true, KEY_OTHER, NULL, 0},
	/* Raw names, with and without prefix and table. */
	{"nvidia.com/GH100_H100_SXM5_80GB", true, KEY_RAW, "h100", 0},
	{"requests.nvidia.com/GH100_H100_SXM5_80GB", true, KEY_RAW, "h100", 9},
	{"limits.nvidia.com/gpu", true, KEY_RAW, "h100", 7},
	{"requests.nvidia.com/AD104GL_L4", true, KEY_RAW, "l4", 9},
	{"nvidia.com/GH100_H100_SXM5_80GB", false, KEY_OTHER, NULL, 0},
	{"requests.nvidia.com/gpu", false, KEY_OTHER, NULL, 0},
	{"nvidia.com/gh100_h100_sxm5_80gb", true, KEY_OTHER, NULL, 0},
	{"nvidia.com/gpu ", true, KEY_OTHER, NULL, 0},
	{" nvidia.com/gpu", true, KEY_OTHER, NULL, 0},
	{"Requests.nvidia.com/gpu", true, KEY_OTHER, NULL, 0},
	{"request.nvidia.com/gpu", true, KEY_OTHER, NULL, 0},
	{"nvidia.com/gpu.shared", true, KEY_OTHER, NULL, 0},
};

START_TEST(keys_classify)
{
	struct class_table t;
	const char *key = keys[_i].key, *cls = "x", *res = "x";
	size_t cls_len = 99;
	enum key_kind k;

	load_table(&t);
	k = model__budget_key_classify(key, keys[_i].table ? &t : NULL, &cls,
				       &cls_len, &res);
	ck_assert_msg(k == keys[_i].kind, "%s: %s, want %s", key,
		      model__key_kind_name(k),
		      model__key_kind_name(keys[_i].kind));
	if (keys[_i].cls == NULL) {
		ck_assert_ptr_null(cls);
		ck_assert_uint_eq(cls_len, 0);
	} else {
		ck_assert_uint_eq(cls_len, strlen(keys[_i].cls));
		ck_assert(strncmp(cls, keys[_i].cls, cls_len) == 0);
	}
	if (k == KEY_CLASS)
		ck_assert_ptr_eq(cls, key); /* points into the key */
	if (k == KEY_RAW) {
		ck_assert_ptr_eq(res, key + keys[_i].res_off);
		ck_assert_ptr_eq(model__class_table_by_resource(&t, res)->name,
				 cls);
	} else {
		ck_assert_ptr_null(res);
	}
	/* Output pointers are optional and do not change the answer. */
	ck_assert_int_eq(model__budget_key_classify(key,
						    keys[_i].table ? &t : NULL,
						    NULL, NULL, NULL),
			 k);
	class_table_release(&t);
}
END_TEST

START_TEST(keys_classify_null)
{
	const char *cls = "x", *res = "x";
	size_t len = 5;

	ck_assert_int_eq(
		model__budget_key_classify(NULL, NULL, &cls, &len, &res),
		KEY_OTHER);
	ck_assert_ptr_null(cls);
	ck_assert_ptr_null(res);
	ck_assert_uint_eq(len, 0);
}
END_TEST

static const struct {
	enum key_kind k;
	const char *name;
} kind_names[] = {
	{KEY_OTHER, "other"},
	{KEY_CLASS, "class"},
	{KEY_TOTAL, "total"},
	{KEY_INVALID, "invalid"},
	{KEY_RAW, "raw"},
	{(enum key_kind)5, "unknown"},
	{(enum key_kind) - 1, "unknown"},
};

START_TEST(keys_kind_name)
{
	ck_assert_str_eq(model__key_kind_name(kind_names[_i].k),
			 kind_names[_i].name);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* eval BudgetKey.                                                          */

static const struct {
	const char *input;
	bool table;
	const char *out; /* canonical output; NULL: an error */
} evals[] = {
	{"\"gpuclass.cozystack.io/devices\"", false,
	 "{\"class\":null,\"kind\":\"total\"}"},
	{"\"h100.gpuclass.cozystack.io/devices\"", false,
	 "{\"class\":\"h100\",\"kind\":\"class\"}"},
	{"\"requests.h100.gpuclass.cozystack.io/devices\"", true,
	 "{\"class\":null,\"kind\":\"invalid\"}"},
	{"\"requests.nvidia.com/gpu\"", true,
	 "{\"class\":\"h100\",\"kind\":\"raw\"}"},
	{"\"nvidia.com/AD104GL_L4\"", true,
	 "{\"class\":\"l4\",\"kind\":\"raw\"}"},
	{"\"requests.nvidia.com/gpu\"", false,
	 "{\"class\":null,\"kind\":\"other\"}"},
	{"\"requests.cpu\"", true, "{\"class\":null,\"kind\":\"other\"}"},
	{"\"\"", true, "{\"class\":null,\"kind\":\"other\"}"},
	{"8", true, NULL},
	{"null", true, NULL},
	{"[\"gpuclass.cozystack.io/devices\"]", true, NULL},
	{"{\"key\":\"gpuclass.cozystack.io/devices\"}", true, NULL},
};

START_TEST(keys_eval)
{
	struct class_table t;
	struct eval_ctx ctx = {0};
	json_t *in = tj(evals[_i].input), *out = NULL;
	struct lg_error err = {0};
	char *s;
	int rc;

	load_table(&t);
	ctx.classes = evals[_i].table ? &t : NULL;
	rc = model__eval_budget_key(&ctx, in, &out, &err);
	if (evals[_i].out == NULL) {
		ck_assert_int_eq(rc, LG_EINVAL);
		ck_assert_str_eq(err.msg, "input must be a string");
	} else {
		ck_assert_msg(rc == 0, "%s", err.msg);
		s = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
		ck_assert_str_eq(s, evals[_i].out);
		free(s);
		json_decref(out);
	}
	json_decref(in);
	class_table_release(&t);
}
END_TEST

/* A string with a NUL byte is no resource name: "other", not the key its
 * first part spells. */
START_TEST(keys_eval_nul)
{
	struct eval_ctx ctx = {0};
	json_t *in =
		json_stringn(GPU_TOTAL_KEY "\0x", sizeof(GPU_TOTAL_KEY) + 1);
	json_t *out = NULL;

	ck_assert_int_eq(model__eval_budget_key(&ctx, in, &out, NULL), 0);
	ck_assert_str_eq(json_string_value(json_object_get(out, "kind")),
			 "other");
	ck_assert(json_is_null(json_object_get(out, "class")));
	json_decref(out);
	json_decref(in);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Tenant objects.                                                          */

/* A Tenant acme in tenant-root with the given resourceQuotas text. */
static json_t *tenant(const char *quotas)
{
	char buf[4096];

	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"apps.cozystack.io/"
		 "v1alpha1\",\"kind\":\"Tenant\","
		 "\"metadata\":{\"name\":\"acme\",\"namespace\":\"tenant-"
		 "root\"},"
		 "\"spec\":{\"resourceQuotas\":%s}}",
		 quotas);
	return tj(buf);
}

static const struct {
	const char *value;
	bool valid;
	int64_t want;
} values[] = {
	{"\"8\"", true, 8},
	{"\"0\"", true, 0},
	{"\"1k\"", true, 1000},
	{"\"2Ki\"", true, 2048},
	{"\"1e3\"", true, 1000},
	{"8", true, 8},
	{"0", true, 0},
	{"8.0", true, 8},
	{"\"9Ei\"", true, INT64_MAX}, /* capped by the parser, as upstream */
	{"\"9223372036854775807\"", true, INT64_MAX},
	{"9223372036854775807", true, INT64_MAX},
	{"\"9223372036854775808\"", false, 0},
	{"\"1e19\"", false, 0},
	{"\"1.5\"", false, 0},
	{"\"500m\"", false, 0},
	{"\"-1\"", false, 0},
	{"-1", false, 0},
	{"\" 8\"", false, 0},
	{"\"8 \"", false, 0},
	{"\"\"", false, 0},
	{"\"eight\"", false, 0},
	{"2.5", false, 0},
	{"true", false, 0},
	{"false", false, 0},
	{"null", false, 0},
	{"{}", false, 0},
	{"[8]", false, 0},
};

/* The same value for a total key and a raw key: both bind, or neither. */
START_TEST(keys_tenant_values)
{
	char q[256];
	json_t *obj;
	struct class_table t;
	struct tenant_map tm;
	struct lg_error err = {0};
	const char *want_msg = "spec.resourceQuotas \"" GPU_TOTAL_KEY "\": ";

	snprintf(q, sizeof(q),
		 "{\"requests.nvidia.com/gpu\":%s,\"" GPU_TOTAL_KEY "\":%s}",
		 values[_i].value, values[_i].value);
	obj = tenant(q);
	load_table(&t);
	ck_assert_int_eq(tenant_map_object(obj, &t, &tm, &err), 0);
	ck_assert_str_eq(tm.governed, "tenant-acme");
	if (values[_i].valid) {
		ck_assert_uint_eq(tm.n_invalid, 0);
		ck_assert_int_eq(err.code, 0);
		ck_assert_str_eq(err.msg, "");
		ck_assert_uint_eq(tm.n_budgets, 1);
		ck_assert_str_eq(tm.budgets[0].key, GPU_TOTAL_KEY);
		ck_assert_int_eq(tm.budgets[0].value, values[_i].want);
		ck_assert_uint_eq(tm.n_raw, 1);
		ck_assert_str_eq(tm.raw[0], "nvidia.com/gpu");
	} else {
		ck_assert_uint_eq(tm.n_invalid, 2);
		ck_assert_uint_eq(tm.n_budgets, 0);
		ck_assert_uint_eq(tm.n_raw, 0);
		/* The first invalid key in sorted order is the total key. */
		ck_assert_int_eq(err.code, LG_EINVAL);
		ck_assert_msg(strncmp(err.msg, want_msg, strlen(want_msg)) ==
					      0 &&
				      strlen(err.msg) > strlen(want_msg),
			      "%s", err.msg);
	}
	tenant_map_release(&tm);
	class_table_release(&t);
	json_decref(obj);
}
END_TEST

static const char mixed_quotas[] =
	"{\"cpu\":\"4\",\"requests.memory\":true,\"count/pods\":null,"
	"\"h100.gpuclass.cozystack.io/devices\":\"8\","
	"\"gpuclass.cozystack.io/devices\":10,"
	"\"a100.gpuclass.cozystack.io/devices\":\"2\","
	"\"requests.nvidia.com/gpu\":\"1\",\"limits.nvidia.com/gpu\":\"2\","
	"\"nvidia.com/AD104GL_L4\":\"0\","
	"\"requests.nvidia.com/GH100_H100_SXM5_80GB\":\"bad\","
	"\"l4.gpuclass.cozystack.io/devices\":\"1.5\","
	"\"gpuclass.cozystack.io/memory\":\"1\","
	"\"requests.h100.gpuclass.cozystack.io/devices\":\"1\"}";

/* Every kind in one map; invalid entries are counted and the object is
 * still usable. A class not in the table still budgets. */
START_TEST(keys_tenant_mixed)
{
	json_t *obj = tenant(mixed_quotas);
	struct class_table t;
	struct tenant_map tm;
	struct lg_error err = {0};

	load_table(&t);
	ck_assert_int_eq(tenant_map_object(obj, &t, &tm, &err), 0);
	ck_assert_uint_eq(tm.n_budgets, 3);
	ck_assert_str_eq(tm.budgets[0].key,
			 "a100.gpuclass.cozystack.io/devices");
	ck_assert_int_eq(tm.budgets[0].value, 2);
	ck_assert_str_eq(tm.budgets[1].key, GPU_TOTAL_KEY);
	ck_assert_int_eq(tm.budgets[1].value, 10);
	ck_assert_str_eq(tm.budgets[2].key,
			 "h100.gpuclass.cozystack.io/devices");
	ck_assert_int_eq(tm.budgets[2].value, 8);
	ck_assert_uint_eq(tm.n_raw, 2);
	ck_assert_str_eq(tm.raw[0], "nvidia.com/AD104GL_L4");
	ck_assert_str_eq(tm.raw[1], "nvidia.com/gpu");
	ck_assert_uint_eq(tm.n_invalid, 4);
	ck_assert_str_eq(err.msg, "spec.resourceQuotas key "
				  "\"gpuclass.cozystack.io/memory\" is not a "
				  "valid GPU budget key");
	/* Borrowed from the object. */
	ck_assert_ptr_eq(tm.budgets[2].key,
			 json_object_iter_key(json_object_iter_at(
				 json_object_get(json_object_get(obj, "spec"),
						 "resourceQuotas"),
				 tm.budgets[2].key)));
	tenant_map_release(&tm);
	ck_assert_ptr_null(tm.budgets);
	ck_assert_ptr_null(tm.raw);
	tenant_map_release(&tm);
	tenant_map_release(NULL);

	/* Without a table nothing is raw: the GH100 key is ignored. */
	ck_assert_int_eq(tenant_map_object(obj, NULL, &tm, &err), 0);
	ck_assert_uint_eq(tm.n_budgets, 3);
	ck_assert_uint_eq(tm.n_raw, 0);
	ck_assert_uint_eq(tm.n_invalid, 3);
	tenant_map_release(&tm);
	class_table_release(&t);
	json_decref(obj);
}
END_TEST

/* The first invalid entry is the first in key order, however the object was
 * written: insert the quotas in reverse. */
START_TEST(keys_tenant_order)
{
	json_t *fwd = tenant(mixed_quotas), *rev = tenant("{}");
	json_t *fq =
		json_object_get(json_object_get(fwd, "spec"), "resourceQuotas");
	json_t *rq =
		json_object_get(json_object_get(rev, "spec"), "resourceQuotas");
	const char *keys_in[32];
	size_t n = 0;
	const char *k;
	json_t *v;
	struct tenant_map a, b;
	struct lg_error ea = {0}, eb = {0};

	json_object_foreach (fq, k, v)
		keys_in[n++] = k;
	while (n-- > 0)
		json_object_set(rq, keys_in[n],
				json_object_get(fq, keys_in[n]));
	ck_assert_int_eq(tenant_map_object(fwd, NULL, &a, &ea), 0);
	ck_assert_int_eq(tenant_map_object(rev, NULL, &b, &eb), 0);
	ck_assert_str_eq(ea.msg, eb.msg);
	ck_assert_uint_eq(a.n_invalid, b.n_invalid);
	ck_assert_uint_eq(a.n_budgets, b.n_budgets);
	for (size_t i = 0; i < a.n_budgets; i++)
		ck_assert_str_eq(a.budgets[i].key, b.budgets[i].key);
	tenant_map_release(&a);
	tenant_map_release(&b);
	json_decref(fwd);
	json_decref(rev);
}
END_TEST

/* A key with a NUL byte is ignored even when its first part is a GPU key. */
START_TEST(keys_tenant_nul_key)
{
	json_t *obj = tenant("{\"h100.gpuclass.cozystack.io/devices\":\"1\"}");
	json_t *rq =
		json_object_get(json_object_get(obj, "spec"), "resourceQuotas");
	struct tenant_map tm;

	json_object_setn_new(rq, GPU_TOTAL_KEY "\0x", sizeof(GPU_TOTAL_KEY) + 1,
			     json_string("bad"));
	ck_assert_uint_eq(json_object_size(rq), 2);
	ck_assert_int_eq(tenant_map_object(obj, NULL, &tm, NULL), 0);
	ck_assert_uint_eq(tm.n_budgets, 1);
	ck_assert_str_eq(tm.budgets[0].key,
			 "h100.gpuclass.cozystack.io/devices");
	ck_assert_uint_eq(tm.n_invalid, 0);
	tenant_map_release(&tm);
	json_decref(obj);
}
END_TEST

START_TEST(keys_tenant_limit)
{
	json_t *obj = tenant("{}");
	json_t *rq =
		json_object_get(json_object_get(obj, "spec"), "resourceQuotas");
	struct tenant_map tm;
	struct lg_error err = {0};
	char k[32];

	for (int i = 0; i < MODEL_MAX_ITEMS; i++) {
		snprintf(k, sizeof(k), "example.com/r%d", i);
		json_object_set_new(rq, k, json_integer(i));
	}
	ck_assert_int_eq(tenant_map_object(obj, NULL, &tm, &err), 0);
	tenant_map_release(&tm);
	json_object_set_new(rq, GPU_TOTAL_KEY, json_integer(1));
	ck_assert_int_eq(tenant_map_object(obj, NULL, &tm, &err), LG_ELIMIT);
	ck_assert_str_eq(err.msg,
			 "spec.resourceQuotas has more than 4096 keys");
	ck_assert_uint_eq(tm.n_budgets, 0);
	ck_assert_ptr_null(tm.budgets);
	ck_assert_str_eq(tm.governed, "");
	json_decref(obj);
}
END_TEST

/* ---------------------------------------------------------------------- */

static const struct {
	const char *obj;
	int code;
	const char *msg;      /* code != 0 */
	const char *governed; /* code == 0 */
	size_t n_budgets;
} shapes[] = {
	/* Governed namespaces (DESIGN 2.2). */
	{"{\"metadata\":{\"name\":\"root\",\"namespace\":\"tenant-root\"}}", 0,
	 NULL, "tenant-root", 0},
	{"{\"metadata\":{\"name\":\"acme\",\"namespace\":\"tenant-root\"}}", 0,
	 NULL, "tenant-acme", 0},
	{"{\"metadata\":{\"name\":\"dev\",\"namespace\":\"tenant-acme\"}}", 0,
	 NULL, "tenant-acme-dev", 0},
	{"{\"metadata\":{\"name\":\"c\",\"namespace\":\"tenant-a-b\"}}", 0,
	 NULL, "tenant-a-b-c", 0},
	{"{\"metadata\":{\"name\":\"root\",\"namespace\":\"tenant-acme\"}}", 0,
	 NULL, "tenant-acme-root", 0},
	{"{\"metadata\":{\"name\":\"x\",\"namespace\":\"default\"}}", 0, NULL,
	 "default-x", 0},
	/* No quotas: spec or resourceQuotas absent, null or empty. */
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":null}",
	 0, NULL, "tenant-a", 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":{}}",
	 0, NULL, "tenant-a", 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":{\"resourceQuotas\":null}}",
	 0, NULL, "tenant-a", 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":{\"resourceQuotas\":{}}}",
	 0, NULL, "tenant-a", 0},
	{"{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":\"Tenant\","
	 "\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":{\"resourceQuotas\":{\"" GPU_TOTAL_KEY "\":\"4\"}}}",
	 0, NULL, "tenant-a", 1},
	/* Wrong shapes. */
	{"[]", LG_EINVAL, "the Tenant is not an object", NULL, 0},
	{"\"Tenant\"", LG_EINVAL, "the Tenant is not an object", NULL, 0},
	{"{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\",\"namespace\":"
	 "\"tenant-root\"}}",
	 LG_EUNKNOWN, "not a apps.cozystack.io/v1alpha1 Tenant", NULL, 0},
	{"{\"apiVersion\":\"apps.cozystack.io/v1\",\"kind\":\"Tenant\","
	 "\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"}}",
	 LG_EUNKNOWN, "not a apps.cozystack.io/v1alpha1 Tenant", NULL, 0},
	{"{\"kind\":7,\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-"
	 "root\"}}",
	 LG_EUNKNOWN, "not a apps.cozystack.io/v1alpha1 Tenant", NULL, 0},
	{"{}", LG_EINVAL, "metadata.name is missing or not a non-empty string",
	 NULL, 0},
	{"{\"metadata\":[]}", LG_EINVAL,
	 "metadata.name is missing or not a non-empty string", NULL, 0},
	{"{\"metadata\":{\"name\":\"\",\"namespace\":\"tenant-root\"}}",
	 LG_EINVAL, "metadata.name is missing or not a non-empty string", NULL,
	 0},
	{"{\"metadata\":{\"name\":5,\"namespace\":\"tenant-root\"}}", LG_EINVAL,
	 "metadata.name is missing or not a non-empty string", NULL, 0},
	{"{\"metadata\":{\"name\":\"a\"}}", LG_EINVAL,
	 "metadata.namespace is missing or not a non-empty string", NULL, 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":null}}", LG_EINVAL,
	 "metadata.namespace is missing or not a non-empty string", NULL, 0},
	{"{\"metadata\":{\"name\":\"Acme\",\"namespace\":\"tenant-root\"}}",
	 LG_EINVAL, "Tenant tenant-root/Acme governs no valid namespace", NULL,
	 0},
	{"{\"metadata\":{\"name\":\"a.b\",\"namespace\":\"tenant-root\"}}",
	 LG_EINVAL, "Tenant tenant-root/a.b governs no valid namespace", NULL,
	 0},
	{"{\"metadata\":{\"name\":\"" L63 "\",\"namespace\":\"tenant-root\"}}",
	 LG_EINVAL, "Tenant tenant-root/" L63 " governs no valid namespace",
	 NULL, 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":\"x\"}",
	 LG_EINVAL, "spec is not an object", NULL, 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":[{}]}",
	 LG_EINVAL, "spec is not an object", NULL, 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":{\"resourceQuotas\":[]}}",
	 LG_EINVAL, "spec.resourceQuotas is not an object", NULL, 0},
	{"{\"metadata\":{\"name\":\"a\",\"namespace\":\"tenant-root\"},"
	 "\"spec\":{\"resourceQuotas\":\"8\"}}",
	 LG_EINVAL, "spec.resourceQuotas is not an object", NULL, 0},
};

START_TEST(keys_tenant_shape)
{
	json_t *obj = tj(shapes[_i].obj);
	struct tenant_map tm;
	struct lg_error err = {0};
	int rc = tenant_map_object(obj, NULL, &tm, &err);

	ck_assert_msg(rc == shapes[_i].code, "%s: %d %s", shapes[_i].obj, rc,
		      err.msg);
	if (rc == 0) {
		ck_assert_str_eq(tm.governed, shapes[_i].governed);
		ck_assert_uint_eq(tm.n_budgets, shapes[_i].n_budgets);
		ck_assert_uint_eq(tm.n_invalid, 0);
	} else {
		ck_assert_int_eq(err.code, rc);
		ck_assert_str_eq(err.msg, shapes[_i].msg);
		/* Left empty: releasing is safe, nothing leaks. */
		ck_assert_ptr_null(tm.budgets);
		ck_assert_ptr_null(tm.raw);
		ck_assert_uint_eq(tm.n_budgets + tm.n_raw + tm.n_invalid, 0);
		ck_assert_int_eq(tenant_map_object(obj, NULL, &tm, NULL), rc);
	}
	tenant_map_release(&tm);
	json_decref(obj);
}
END_TEST

void model_tests_keys(Suite *s)
{
	TCase *tc;

	tc = tcase_create("keys_classify");
	tcase_add_loop_test(tc, keys_classify, 0, N(keys));
	tcase_add_test(tc, keys_classify_null);
	tcase_add_loop_test(tc, keys_kind_name, 0, N(kind_names));
	suite_add_tcase(s, tc);

	tc = tcase_create("keys_eval");
	tcase_add_loop_test(tc, keys_eval, 0, N(evals));
	tcase_add_test(tc, keys_eval_nul);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys_tenant");
	tcase_add_loop_test(tc, keys_tenant_values, 0, N(values));
	tcase_add_test(tc, keys_tenant_mixed);
	tcase_add_test(tc, keys_tenant_order);
	tcase_add_test(tc, keys_tenant_nul_key);
	tcase_add_test(tc, keys_tenant_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys_shape");
	tcase_add_loop_test(tc, keys_tenant_shape, 0, N(shapes));
	suite_add_tcase(s, tc);
}
