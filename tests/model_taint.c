/* Tests of model/taint.c: ToleratesTaint, taint/toleration JSON, serving. */
#include "model/model_int.h"
#include "tests/model_tests.h"

#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct tol_row {
	const char *what;
	struct toleration tol;
	struct taint taint;
	bool want;
};

/* The rows of upstream TestTolerationToleratesTaint (k8s.io/api core/v1),
 * then ours. Upstream's Gt/Lt rows that expect true expect false here:
 * DESIGN 5.3 keeps the comparison operators off. */
static const struct tol_row tol_rows[] = {
	{"same key/effect, Exists, taint without value",
	 {"foo", "Exists", NULL, "NoSchedule"},
	 {"foo", NULL, "NoSchedule"},
	 true},
	{"same key/effect, Exists, taint with value",
	 {"foo", "Exists", NULL, "NoSchedule"},
	 {"foo", "bar", "NoSchedule"},
	 true},
	{"empty key and Exists match every key",
	 {"", "Exists", NULL, "NoSchedule"},
	 {"foo", "bar", "NoSchedule"},
	 true},
	{"same key, effect and value, Equal",
	 {"foo", "Equal", "bar", "NoSchedule"},
	 {"foo", "bar", "NoSchedule"},
	 true},
	{"different values, Equal",
	 {"foo", "Equal", "value1", "NoSchedule"},
	 {"foo", "value2", "NoSchedule"},
	 false},
	{"different effects, Equal",
	 {"foo", "Equal", "bar", "NoSchedule"},
	 {"foo", "bar", "NoExecute"},
	 false},
	{"Gt, taint value smaller",
	 {"node.kubernetes.io/sla", "Gt", "950", "NoSchedule"},
	 {"node.kubernetes.io/sla", "800", "NoSchedule"},
	 false},
	{"Gt, taint value greater (upstream true, gate off here)",
	 {"node.kubernetes.io/sla", "Gt", "750", "NoSchedule"},
	 {"node.kubernetes.io/sla", "950", "NoSchedule"},
	 false},
	{"Lt, taint value greater",
	 {"node.kubernetes.io/sla", "Lt", "800", "NoSchedule"},
	 {"node.kubernetes.io/sla", "950", "NoSchedule"},
	 false},
	{"Lt, taint value smaller (upstream true, gate off here)",
	 {"node.kubernetes.io/sla", "Lt", "950", "NoSchedule"},
	 {"node.kubernetes.io/sla", "800", "NoSchedule"},
	 false},
	{"Gt, equal values",
	 {"node.kubernetes.io/sla", "Gt", "950", "NoSchedule"},
	 {"node.kubernetes.io/sla", "950", "NoSchedule"},
	 false},
	{"Gt, non-numeric taint value",
	 {"node.kubernetes.io/sla", "Gt", "950", "NoSchedule"},
	 {"node.kubernetes.io/sla", "high", "NoSchedule"},
	 false},
	{"Gt, negative values",
	 {"test-key", "Gt", "-100", "NoSchedule"},
	 {"test-key", "-200", "NoSchedule"},
	 false},
	{"Gt, large values",
	 {"test-key", "Gt", "9223372036854775806", "NoSchedule"},
	 {"test-key", "100", "NoSchedule"},
	 false},
	/* Ours. */
	{"empty effect matches any effect",
	 {"foo", "Exists", NULL, ""},
	 {"foo", NULL, "NoExecute"},
	 true},
	{"NULL effect matches any effect",
	 {"foo", "Exists", NULL, NULL},
	 {"foo", NULL, "PreferNoSchedule"},
	 true},
	{"empty operator is Equal",
	 {"foo", "", "bar", "NoSchedule"},
	 {"foo", "bar", "NoSchedule"},
	 true},
	{"NULL operator is Equal, values differ",
	 {"foo", NULL, "bar", NULL},
	 {"foo", "baz", "NoSchedule"},
	 false},
	{"Equal, both values empty",
	 {"foo", "Equal", NULL, NULL},
	 {"foo", "", "NoSchedule"},
	 true},
	{"empty key with Equal matches any key, value compared",
	 {NULL, "Equal", "bar", NULL},
	 {"other", "bar", "NoSchedule"},
	 true},
	{"empty key with Equal, value differs",
	 {NULL, NULL, "bar", NULL},
	 {"other", "baz", "NoSchedule"},
	 false},
	{"all empty with Exists tolerates everything",
	 {NULL, "Exists", NULL, NULL},
	 {"x", "y", "NoExecute"},
	 true},
	{"different keys, Exists",
	 {"foo", "Exists", NULL, NULL},
	 {"foo2", NULL, "NoSchedule"},
	 false},
	{"unknown operator",
	 {"foo", "In", "bar", NULL},
	 {"foo", "bar", "NoSchedule"},
	 false},
	{"operator case matters",
	 {"foo", "exists", NULL, NULL},
	 {"foo", "bar", "NoSchedule"},
	 false},
	{"key case matters",
	 {"Foo", "Exists", NULL, NULL},
	 {"foo", NULL, "NoSchedule"},
	 false},
};

START_TEST(tol_table)
{
	const struct tol_row *r = &tol_rows[_i];

	ck_assert_msg(model__toleration_tolerates(&r->tol, &r->taint) ==
			      r->want,
		      "%s: want %d", r->what, r->want);
}
END_TEST

struct json_row {
	const char *json;
	int rc;
	const char *key, *op, *value, *effect; /* expected fields */
};

static const struct json_row tol_json_rows[] = {
	{"{\"key\": \"k\", \"operator\": \"Exists\", \"effect\": "
	 "\"NoSchedule\"}",
	 0, "k", "Exists", NULL, "NoSchedule"},
	{"{\"key\": \"k\", \"value\": \"v\", \"tolerationSeconds\": 30}", 0,
	 "k", NULL, "v", NULL},
	{"{\"key\": null, \"operator\": null, \"value\": null}", 0, NULL, NULL,
	 NULL, NULL},
	{"{}", 0, NULL, NULL, NULL, NULL},
	{"{\"key\": 1}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"{\"operator\": true}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"{\"value\": [\"v\"]}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"{\"effect\": {}}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"[]", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"\"k\"", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"null", LG_EINVAL, NULL, NULL, NULL, NULL},
};

static void assert_field(const char *got, const char *want)
{
	if (want == NULL)
		ck_assert_ptr_null(got);
	else
		ck_assert_str_eq(got, want);
}

START_TEST(tol_json_table)
{
	const struct json_row *r = &tol_json_rows[_i];
	struct lg_error err = {0};
	struct toleration tol;
	json_t *v = tj(r->json);

	ck_assert_int_eq(model__toleration_from_json(&tol, v, &err), r->rc);
	if (r->rc < 0)
		ck_assert_int_eq(err.code, r->rc);
	assert_field(tol.key, r->key);
	assert_field(tol.op, r->op);
	assert_field(tol.value, r->value);
	assert_field(tol.effect, r->effect);
	json_decref(v);
}
END_TEST

static const struct json_row taint_json_rows[] = {
	{"{\"key\": \"k\", \"value\": \"v\", \"effect\": \"NoSchedule\", "
	 "\"timeAdded\": \"2026-01-01T00:00:00Z\"}",
	 0, "k", NULL, "v", "NoSchedule"},
	{"{\"key\": \"k\", \"effect\": null}", 0, "k", NULL, NULL, NULL},
	{"{\"key\": \"k\", \"value\": 3}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"{\"effect\": false}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"{\"key\": 1.5}", LG_EINVAL, NULL, NULL, NULL, NULL},
	{"7", LG_EINVAL, NULL, NULL, NULL, NULL},
};

START_TEST(taint_json_table)
{
	const struct json_row *r = &taint_json_rows[_i];
	struct lg_error err = {0};
	struct taint t;
	json_t *v = tj(r->json);

	ck_assert_int_eq(model__taint_from_json(&t, v, &err), r->rc);
	if (r->rc < 0)
		ck_assert_str_ne(err.msg, "");
	assert_field(t.key, r->key);
	assert_field(t.value, r->value);
	assert_field(t.effect, r->effect);
	json_decref(v);
}
END_TEST

START_TEST(json_nul)
{
	struct toleration tol;
	json_t *v = json_pack("{s:s%}", "key", "a\0b", (size_t)3);

	ck_assert_int_eq(model__toleration_from_json(&tol, v, NULL), LG_EINVAL);
	json_decref(v);
}
END_TEST

/* Classes for the node table: 0 tolerates nvidia.com/gpu:NoSchedule, 1
 * tolerates nothing, 2 tolerates everything. */
static struct toleration gpu_tol[] = {
	{"nvidia.com/gpu", "Exists", NULL, "NoSchedule"},
};
static struct toleration all_tol[] = {
	{NULL, "Exists", NULL, NULL},
};
static const struct gpu_class node_classes[] = {
	{.name = "h100", .tolerations = gpu_tol, .n_tolerations = 1},
	{.name = "a10"},
	{.name = "any", .tolerations = all_tol, .n_tolerations = 1},
};

#define READY                                                     \
	"\"status\": {\"conditions\": ["                          \
	"{\"type\": \"MemoryPressure\", \"status\": \"False\"}, " \
	"{\"type\": \"Ready\", \"status\": \"True\"}]}"
#define TAINTED(t) "{\"spec\": {\"taints\": [" t "]}, " READY "}"

struct node_row {
	const char *what;
	const char *node;
	int cls;
	bool want;
};

static const struct node_row node_rows[] = {
	{"ready, no spec", "{" READY "}", 1, true},
	{"ready, empty spec", "{\"spec\": {}, " READY "}", 1, true},
	{"cordoned", "{\"spec\": {\"unschedulable\": true}, " READY "}", 2,
	 false},
	{"unschedulable false",
	 "{\"spec\": {\"unschedulable\": false}, " READY "}", 1, true},
	{"unschedulable as a string does not cordon",
	 "{\"spec\": {\"unschedulable\": \"true\"}, " READY "}", 1, true},
	{"unschedulable 1 does not cordon",
	 "{\"spec\": {\"unschedulable\": 1}, " READY "}", 1, true},
	{"not ready",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\", "
	 "\"status\": \"False\"}]}}",
	 2, false},
	{"ready unknown",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\", "
	 "\"status\": \"Unknown\"}]}}",
	 2, false},
	{"ready status lower case",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\", "
	 "\"status\": \"true\"}]}}",
	 2, false},
	{"ready status boolean",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\", "
	 "\"status\": true}]}}",
	 2, false},
	{"ready without status",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\"}]}}", 2, false},
	{"no Ready condition",
	 "{\"status\": {\"conditions\": [{\"type\": \"DiskPressure\", "
	 "\"status\": \"True\"}]}}",
	 2, false},
	{"empty conditions", "{\"status\": {\"conditions\": []}}", 2, false},
	{"no status", "{\"spec\": {}}", 2, false},
	{"first Ready True decides",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\", "
	 "\"status\": \"True\"}, {\"type\": \"Ready\", "
	 "\"status\": \"False\"}]}}",
	 1, true},
	{"first Ready False decides",
	 "{\"status\": {\"conditions\": [{\"type\": \"Ready\", "
	 "\"status\": \"False\"}, {\"type\": \"Ready\", "
	 "\"status\": \"True\"}]}}",
	 1, false},
	{"conditions not a list",
	 "{\"status\": {\"conditions\": {\"type\": \"Ready\", "
	 "\"status\": \"True\"}}}",
	 1, false},
	{"condition not an object",
	 "{\"status\": {\"conditions\": [\"Ready\", {\"type\": \"Ready\", "
	 "\"status\": \"True\"}]}}",
	 1, false},
	{"condition type not a string",
	 "{\"status\": {\"conditions\": [{\"type\": 1}, {\"type\": \"Ready\", "
	 "\"status\": \"True\"}]}}",
	 1, false},
	{"tolerated taint",
	 TAINTED("{\"key\": \"nvidia.com/gpu\", \"effect\": \"NoSchedule\"}"),
	 0, true},
	{"tolerated taint with a value",
	 TAINTED("{\"key\": \"nvidia.com/gpu\", \"value\": \"present\", "
		 "\"effect\": \"NoSchedule\"}"),
	 0, true},
	{"same key, other effect",
	 TAINTED("{\"key\": \"nvidia.com/gpu\", \"effect\": \"NoExecute\"}"), 0,
	 false},
	{"untolerated NoSchedule",
	 TAINTED("{\"key\": \"dedicated\", \"value\": \"ml\", "
		 "\"effect\": \"NoSchedule\"}"),
	 0, false},
	{"untolerated NoExecute",
	 TAINTED("{\"key\": \"dedicated\", \"effect\": \"NoExecute\"}"), 1,
	 false},
	{"a class without tolerations",
	 TAINTED("{\"key\": \"nvidia.com/gpu\", \"effect\": \"NoSchedule\"}"),
	 1, false},
	{"a class tolerating everything",
	 TAINTED("{\"key\": \"dedicated\", \"effect\": \"NoExecute\"}, "
		 "{\"key\": \"x\", \"effect\": \"NoSchedule\"}"),
	 2, true},
	{"one tolerated, one not",
	 TAINTED("{\"key\": \"nvidia.com/gpu\", \"effect\": \"NoSchedule\"}, "
		 "{\"key\": \"dedicated\", \"effect\": \"NoSchedule\"}"),
	 0, false},
	{"PreferNoSchedule ignored",
	 TAINTED("{\"key\": \"dedicated\", \"effect\": \"PreferNoSchedule\"}"),
	 1, true},
	{"taint without effect ignored", TAINTED("{\"key\": \"dedicated\"}"), 1,
	 true},
	{"exempt: unschedulable",
	 TAINTED("{\"key\": \"node.kubernetes.io/unschedulable\", "
		 "\"effect\": \"NoSchedule\"}"),
	 1, true},
	{"exempt: not-ready and unreachable",
	 TAINTED("{\"key\": \"node.kubernetes.io/not-ready\", "
		 "\"effect\": \"NoExecute\"}, "
		 "{\"key\": \"node.kubernetes.io/unreachable\", "
		 "\"effect\": \"NoSchedule\"}"),
	 1, true},
	{"not exempt: another node.kubernetes.io key",
	 TAINTED("{\"key\": \"node.kubernetes.io/disk-pressure\", "
		 "\"effect\": \"NoSchedule\"}"),
	 1, false},
	{"taints null", "{\"spec\": {\"taints\": null}, " READY "}", 1, true},
	{"taints empty", TAINTED(""), 1, true},
	{"taints not a list",
	 "{\"spec\": {\"taints\": {\"key\": \"x\"}}, " READY "}", 2, false},
	{"taint not an object", TAINTED("\"x\""), 2, false},
	{"taint key not a string",
	 TAINTED("{\"key\": 5, \"effect\": \"PreferNoSchedule\"}"), 2, false},
	{"spec not an object", "{\"spec\": \"x\", " READY "}", 2, false},
	{"node not an object", "[]", 2, false},
	{"node null", "null", 2, false},
};

START_TEST(node_table)
{
	const struct node_row *r = &node_rows[_i];
	json_t *node = tj(r->node);

	ck_assert_msg(model__node_serves(node, &node_classes[r->cls]) ==
			      r->want,
		      "%s: want %d", r->what, r->want);
	json_decref(node);
}
END_TEST

START_TEST(node_null_class)
{
	json_t *node = tj("{" READY "}");

	ck_assert(model__node_serves(node, NULL));
	json_decref(node);
	node = tj(TAINTED("{\"key\": \"k\", \"effect\": \"NoSchedule\"}"));
	ck_assert(!model__node_serves(node, NULL));
	json_decref(node);
}
END_TEST

START_TEST(node_too_many_taints)
{
	json_t *node = tj("{" READY "}");
	json_t *taints = json_array();

	for (size_t i = 0; i <= MODEL_MAX_ITEMS; i++)
		json_array_append_new(taints,
				      json_pack("{s:s,s:s}", "key", "x",
						"effect", "PreferNoSchedule"));
	json_object_set_new(node, "spec", json_pack("{s:o}", "taints", taints));
	ck_assert(!model__node_serves(node, &node_classes[2]));
	json_array_remove(taints, 0);
	ck_assert(model__node_serves(node, &node_classes[2]));
	json_decref(node);
}
END_TEST

static const struct eval_row eval_rows[] = {
	{model__eval_tolerates_taint,
	 "{\"toleration\": {\"key\": \"foo\", \"operator\": \"Exists\"}, "
	 "\"taint\": {\"key\": \"foo\", \"effect\": \"NoSchedule\"}}",
	 "{\"tolerates\":true}"},
	{model__eval_tolerates_taint,
	 "{\"toleration\": {\"key\": \"foo\", \"value\": \"a\"}, "
	 "\"taint\": {\"key\": \"foo\", \"value\": \"b\", "
	 "\"effect\": \"NoSchedule\"}}",
	 "{\"tolerates\":false}"},
	{model__eval_tolerates_taint, "{\"toleration\": {}, \"taint\": {}}",
	 "{\"tolerates\":true}"},
	{model__eval_tolerates_taint, "{\"taint\": {\"key\": \"foo\"}}", NULL},
	{model__eval_tolerates_taint, "{\"toleration\": {\"key\": \"foo\"}}",
	 NULL},
	{model__eval_tolerates_taint,
	 "{\"toleration\": {\"key\": 1}, \"taint\": {}}", NULL},
	{model__eval_tolerates_taint,
	 "{\"toleration\": {}, \"taint\": {\"effect\": []}}", NULL},
	{model__eval_tolerates_taint, "[]", NULL},
	{model__eval_node_serves,
	 "{\"node\": " TAINTED(
		 "{\"key\": \"nvidia.com/gpu\", "
		 "\"effect\": \"NoSchedule\"}") ", "
						"\"class\": {\"name\": "
						"\"h100\", \"resourceNames\": "
						"[\"nvidia.com/x\"],"
						" \"tolerations\": [{\"key\": "
						"\"nvidia.com/gpu\", "
						"\"operator\": \"Exists\"}]}}",
	 "{\"serves\":true}"},
	{model__eval_node_serves,
	 "{\"node\": " TAINTED(
		 "{\"key\": \"nvidia.com/gpu\", "
		 "\"effect\": \"NoSchedule\"}") ", "
						"\"class\": {\"name\": "
						"\"h100\", \"resourceNames\": "
						"[\"nvidia.com/x\"]}}",
	 "{\"serves\":false}"},
	{model__eval_node_serves,
	 "{\"node\": {\"spec\": {\"unschedulable\": true}, " READY "}, "
	 "\"class\": {\"name\": \"h100\", \"resourceNames\": []}}",
	 "{\"serves\":false}"},
	{model__eval_node_serves,
	 "{\"node\": {" READY "}, \"class\": {\"name\": \"H100\"}}", NULL},
	{model__eval_node_serves, "{\"node\": {" READY "}}", NULL},
	{model__eval_node_serves,
	 "{\"node\": [], \"class\": {\"name\": \"h100\"}}", NULL},
	{model__eval_node_serves, "\"node\"", NULL},
};

START_TEST(eval_table)
{
	check_eval_row(&eval_rows[_i]);
}
END_TEST

void model_tests_taint(Suite *s)
{
	TCase *tc;

	tc = tcase_create("taint_tolerates");
	tcase_add_loop_test(tc, tol_table, 0, N(tol_rows));
	suite_add_tcase(s, tc);

	tc = tcase_create("taint_json");
	tcase_add_loop_test(tc, tol_json_table, 0, N(tol_json_rows));
	tcase_add_loop_test(tc, taint_json_table, 0, N(taint_json_rows));
	tcase_add_test(tc, json_nul);
	suite_add_tcase(s, tc);

	tc = tcase_create("taint_node");
	tcase_add_loop_test(tc, node_table, 0, N(node_rows));
	tcase_add_test(tc, node_null_class);
	tcase_add_test(tc, node_too_many_taints);
	suite_add_tcase(s, tc);

	tc = tcase_create("taint_eval");
	tcase_add_loop_test(tc, eval_table, 0, N(eval_rows));
	suite_add_tcase(s, tc);
}
