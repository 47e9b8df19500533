/* Tests of model/podreq.c: resource lists and effective pod requests. */
#include "model/model_int.h"
#include "tests/model_tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Pod JSON builders: a container with requests, one with limits, a sidecar
 * (restartable init container), and a pod from its parts. */
#define REQ(x) "{\"resources\": {\"requests\": {" x "}}}"
#define NREQ(n, x) \
	"{\"name\": \"" n "\", \"resources\": {\"requests\": {" x "}}}"
#define LIM(x)	 "{\"resources\": {\"limits\": {" x "}}}"
#define RL(r, l) "{\"resources\": {\"requests\": {" r "}, \"limits\": {" l "}}}"
#define SIDE(x)                            \
	"{\"restartPolicy\": \"Always\", " \
	"\"resources\": {\"requests\": {" x "}}}"
#define SIDELIM(x)                         \
	"{\"restartPolicy\": \"Always\", " \
	"\"resources\": {\"limits\": {" x "}}}"
#define CPU(v) "\"cpu\": \"" v "\""
#define MEM(v) "\"memory\": \"" v "\""
#define GPU(v) "\"nvidia.com/gpu\": \"" v "\""
#define POD(cs, ics, extra)                      \
	"{\"spec\": {\"containers\": [" cs "], " \
	"\"initContainers\": [" ics "]" extra "}}"
#define OVERHEAD(x) ", \"overhead\": {" x "}"
#define PODLEVEL(x) ", \"resources\": {\"requests\": {" x "}}"

/* Renders l as "name=quantity,..." in list order. */
static void render(const struct reslist *l, char *buf, size_t cap)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < l->n && off < cap; i++) {
		off += snprintf(buf + off, cap - off, "%s%s=", i ? "," : "",
				l->items[i].name);
		if (off < cap)
			off += model__quantity_format(&l->items[i].q, buf + off,
						      cap - off);
	}
	ck_assert_uint_lt(off, cap);
}

struct req_row {
	const char *what;
	const char *pod;
	bool defaults;
	const char *want; /* rendered result when rc is 0 */
	int rc;
	const char *msg; /* a substring of the error message */
};

/* Ported from upstream component-helpers resource/helpers_test.go
 * (TestPodRequestsAndLimits, TestPodResourceRequests,
 * TestPodLevelResourceRequests, TestAggregateContainerRequestsAndLimits);
 * rows that exclude overhead there include it here, since gpuledger uses
 * only the default options. Quantities print as model__quantity_format does. */
static const struct req_row upstream_rows[] = {
	{"just-limit-no-overhead", POD(LIM(CPU("9")), LIM(CPU("9")), ""), false,
	 "", 0, NULL},
	{"just-overhead", POD("{}", "{}", OVERHEAD(CPU("5") ", " MEM("5"))),
	 false, "cpu=5,memory=5", 0, NULL},
	{"req-and-overhead",
	 POD(REQ(CPU("1") ", " MEM("10")), REQ(CPU("1") ", " MEM("10")),
	     OVERHEAD(CPU("5") ", " MEM("5"))),
	 false, "cpu=6,memory=15", 0, NULL},
	{"all-req-lim-and-overhead",
	 POD(RL(CPU("1") ", " MEM("10"), CPU("2") ", " MEM("12")),
	     RL(CPU("1") ", " MEM("10"), CPU("2") ", " MEM("12")),
	     OVERHEAD(CPU("5") ", " MEM("5"))),
	 false, "cpu=6,memory=15", 0, NULL},
	{"req-some-lim-and-overhead",
	 POD(RL(CPU("1") ", " MEM("10"), CPU("2")),
	     RL(CPU("1") ", " MEM("10"), CPU("2")),
	     OVERHEAD(CPU("5") ", " MEM("5"))),
	 false, "cpu=6,memory=15", 0, NULL},
	{"two containers: sum of containers",
	 POD(RL(CPU("1") ", " MEM("5"), CPU("2") ", " MEM("10")) ", " RL(
		     CPU("4") ", " MEM("12"), CPU("8") ", " MEM("24")),
	     "", ""),
	 false, "cpu=5,memory=17", 0, NULL},
	{"massive init: the largest init, plus overhead",
	 POD(REQ(CPU("1") ", " MEM("5")) ", " REQ(CPU("4") ", " MEM("12")),
	     REQ(CPU("1") ", " MEM("5")) ", " REQ(CPU("40") ", " MEM("120")),
	     OVERHEAD(CPU("3") ", " MEM("8"))),
	 false, "cpu=43,memory=128", 0, NULL},
	{"larger init container", POD(REQ(CPU("1")), REQ(CPU("4")), ""), false,
	 "cpu=4", 0, NULL},
	{"larger containers",
	 POD(REQ(CPU("2")) ", " REQ(CPU("3")), REQ(CPU("2")), ""), false,
	 "cpu=5", 0, NULL},
	{"pod overhead included",
	 POD(REQ(CPU("2")) ", " REQ(CPU("3")), RL(CPU("2"), CPU("2")),
	     OVERHEAD(CPU("1") ", " MEM("1Gi"))),
	 false, "cpu=6,memory=1073741824", 0, NULL},
	{"restartable init container", POD(REQ(CPU("1")), SIDE(CPU("1")), ""),
	 false, "cpu=2", 0, NULL},
	{"multiple restartable init containers",
	 POD(REQ(CPU("1")),
	     REQ(CPU("5")) ", " SIDE(CPU("1")) ", " SIDE(CPU("2")) ", " SIDE(
		     CPU("3")),
	     ""),
	 false, "cpu=7", 0, NULL},
	{"multiple restartable and regular init containers",
	 POD(REQ(CPU("1")),
	     REQ(CPU("5")) ", " SIDE(CPU("1")) ", " SIDE(CPU("2")) ", " REQ(
		     CPU("5")) ", " SIDE(CPU("3")),
	     ""),
	 false, "cpu=8", 0, NULL},
	{"restartable-init, init and regular",
	 POD(REQ(CPU("100")), SIDE(CPU("10")) ", " REQ(CPU("200")), ""), false,
	 "cpu=210", 0, NULL},
	{"regular, init and sidecar containers with requests",
	 POD(REQ(CPU("9")), SIDE(CPU("8")) ", " REQ(CPU("6")), ""), false,
	 "cpu=17", 0, NULL},
	{"pod level nil", "{\"spec\": {}}", false, "", 0, NULL},
	{"pod level memory",
	 "{\"spec\": {\"resources\": {\"requests\": {" MEM("2Mi") "}}}}", false,
	 "memory=2097152", 0, NULL},
	{"pod level memory and container level cpu",
	 POD(REQ(CPU("2m")), "", PODLEVEL(MEM("2Mi"))), false,
	 "cpu=2m,memory=2097152", 0, NULL},
	{"pod level unsupported at both levels",
	 POD(REQ("\"storage\": \"3Mi\""), "", PODLEVEL("\"storage\": \"2Mi\"")),
	 false, "storage=3145728", 0, NULL},
	{"pod level unsupported at pod level",
	 POD(REQ(MEM("3Mi")), "", PODLEVEL("\"storage\": \"2Mi\"")), false,
	 "memory=3145728", 0, NULL},
	{"only container level", POD(REQ(MEM("3Mi") ", " CPU("2m")), "", ""),
	 false, "cpu=2m,memory=3145728", 0, NULL},
	{"both container and pod level",
	 POD(REQ(MEM("3Mi") ", " CPU("2m")), "",
	     PODLEVEL(MEM("6Mi") ", " CPU("8m"))),
	 false, "cpu=8m,memory=6291456", 0, NULL},
	{"container and init",
	 POD(REQ(MEM("3Mi") ", " CPU("2m")), REQ(MEM("5Mi") ", " CPU("4m")),
	     ""),
	 false, "cpu=4m,memory=5242880", 0, NULL},
	{"container and sidecar",
	 POD(REQ(MEM("3Mi") ", " CPU("2m")), SIDE(MEM("5Mi") ", " CPU("4m")),
	     ""),
	 false, "cpu=6m,memory=8388608", 0, NULL},
	{"container, sidecar and init",
	 POD(REQ(MEM("3Mi") ", " CPU("2m")),
	     SIDE(MEM("5Mi") ", " CPU("4m")) ", " REQ(
		     MEM("6Mi") ", " CPU("8m")),
	     ""),
	 false, "cpu=12m,memory=11534336", 0, NULL},
	{"pod level over container, sidecar and init",
	 POD(REQ(MEM("3Mi") ", " CPU("2m")),
	     SIDE(MEM("5Mi") ", " CPU("4m")) ", " REQ(
		     MEM("6Mi") ", " CPU("8m")),
	     PODLEVEL(MEM("15Mi") ", " CPU("18m"))),
	 false, "cpu=18m,memory=15728640", 0, NULL},
};

/* Ours: presence, sidecar in-use values, GPUs, pod level, negatives. */
static const struct req_row own_rows[] = {
	{"a sidecar's own in-use value is the running sidecar sum",
	 POD("", SIDE(GPU("1")) ", " SIDE(GPU("2")), ""), false,
	 "nvidia.com/gpu=3", 0, NULL},
	{"a sidecar after a big init container",
	 POD(REQ(GPU("1")), REQ(GPU("4")) ", " SIDE(GPU("1")), ""), false,
	 "nvidia.com/gpu=4", 0, NULL},
	{"sidecars declared after an init container do not count for it",
	 POD("", REQ(GPU("2")) ", " SIDE(GPU("1")), ""), false,
	 "nvidia.com/gpu=2", 0, NULL},
	{"a resource only in an init container",
	 POD(REQ(CPU("1")), REQ(GPU("1")), ""), false, "cpu=1,nvidia.com/gpu=1",
	 0, NULL},
	{"an explicit zero is present", POD(REQ(GPU("0")), "", ""), false,
	 "nvidia.com/gpu=0", 0, NULL},
	{"restartPolicy other than Always is a plain init container",
	 POD(REQ(GPU("1")),
	     "{\"restartPolicy\": \"OnFailure\", "
	     "\"resources\": {\"requests\": {" GPU("1") "}}}",
	     ""),
	 false, "nvidia.com/gpu=1", 0, NULL},
	{"pod level replaces hugepages but not GPUs",
	 POD(REQ(GPU("1") ", \"hugepages-2Mi\": \"4Mi\""), "",
	     PODLEVEL(GPU("8") ", \"hugepages-2Mi\": \"8Mi\"")),
	 false, "hugepages-2Mi=8388608,nvidia.com/gpu=1", 0, NULL},
	{"pod level adds a supported resource no container has",
	 POD(REQ(GPU("1")), "", PODLEVEL(CPU("1"))), false,
	 "cpu=1,nvidia.com/gpu=1", 0, NULL},
	{"overhead goes on top of pod level",
	 POD(REQ(CPU("4")), "", PODLEVEL(CPU("1")) OVERHEAD(CPU("250m"))),
	 false, "cpu=1250m", 0, NULL},
	{"overhead counts for GPUs", POD(REQ(GPU("1")), "", OVERHEAD(GPU("1"))),
	 false, "nvidia.com/gpu=2", 0, NULL},
	{"negative quantities are allowed", POD(REQ(GPU("-1")), "", ""), false,
	 "nvidia.com/gpu=-1", 0, NULL},
	{"max with negatives", POD(REQ(GPU("-1")), REQ(GPU("-2")), ""), false,
	 "nvidia.com/gpu=-1", 0, NULL},
	{"a negative init-only resource is still present",
	 POD("", REQ(GPU("-1")), ""), false, "nvidia.com/gpu=-1", 0, NULL},
	{"fractions add exactly",
	 POD(REQ(CPU("100m")) ", " REQ(CPU("0.9")) ", " REQ(CPU("1n")), "", ""),
	 false, "cpu=1000000001n", 0, NULL},
	{"no spec", "{\"metadata\": {\"name\": \"p\"}}", false, "", 0, NULL},
	{"null members",
	 "{\"spec\": {\"containers\": null, \"initContainers\": null, "
	 "\"overhead\": null, \"resources\": null}}",
	 false, "", 0, NULL},
	{"a container without resources", POD("{\"name\": \"a\"}", "", ""),
	 false, "", 0, NULL},
	{"null requests", POD("{\"resources\": {\"requests\": null}}", "", ""),
	 false, "", 0, NULL},
};

/* The API server's defaulting: a limit without a request is the request. */
static const struct req_row default_rows[] = {
	{"limit only, defaulted", POD(LIM(GPU("2")), "", ""), true,
	 "nvidia.com/gpu=2", 0, NULL},
	{"limit only, not defaulted", POD(LIM(GPU("2")), "", ""), false, "", 0,
	 NULL},
	{"request wins over limit", POD(RL(GPU("1"), GPU("2")), "", ""), true,
	 "nvidia.com/gpu=1", 0, NULL},
	{"limit fills only the missing resource",
	 POD(RL(CPU("1"), CPU("2") ", " GPU("1")), "", ""), true,
	 "cpu=1,nvidia.com/gpu=1", 0, NULL},
	{"init container limit defaulted",
	 POD(REQ(GPU("1")), LIM(GPU("3")), ""), true, "nvidia.com/gpu=3", 0,
	 NULL},
	{"sidecar limit defaulted", POD(LIM(GPU("1")), SIDELIM(GPU("1")), ""),
	 true, "nvidia.com/gpu=2", 0, NULL},
	{"just-limit-no-overhead, defaulted",
	 POD(LIM(CPU("9")), LIM(CPU("9")), ""), true, "cpu=9", 0, NULL},
	{"an invalid limit with defaults", POD(LIM(GPU("x")), "", ""), true,
	 NULL, LG_EINVAL, "nvidia.com/gpu"},
	{"an invalid limit behind a request, with defaults",
	 POD(RL(GPU("1"), GPU("x")), "", ""), true, NULL, LG_EINVAL,
	 "limit nvidia.com/gpu"},
	{"an invalid limit without defaults is not read",
	 POD(LIM(GPU("x")), "", ""), false, "", 0, NULL},
	{"pod-level limits are not defaulted",
	 "{\"spec\": {\"resources\": {\"limits\": {" CPU("1") "}}}}", true, "",
	 0, NULL},
};

static const struct req_row error_rows[] = {
	{"pod not an object", "[]", false, NULL, LG_EINVAL, "pod"},
	{"spec not an object", "{\"spec\": []}", false, NULL, LG_EINVAL,
	 "spec"},
	{"containers not a list", "{\"spec\": {\"containers\": {}}}", false,
	 NULL, LG_EINVAL, "containers"},
	{"initContainers not a list", "{\"spec\": {\"initContainers\": 1}}",
	 false, NULL, LG_EINVAL, "initContainers"},
	{"container not an object", POD("\"c\"", "", ""), false, NULL,
	 LG_EINVAL, "container #0"},
	{"resources not an object", POD("{\"resources\": []}", "", ""), false,
	 NULL, LG_EINVAL, "resources"},
	{"requests not an object",
	 POD("{\"name\": \"w\", \"resources\": {\"requests\": \"1\"}}", "", ""),
	 false, NULL, LG_EINVAL, "container w"},
	{"limits not an object",
	 POD("{\"resources\": {\"limits\": 3}}", "", ""), false, NULL,
	 LG_EINVAL, "limits"},
	{"quantity not a string",
	 POD("{\"name\": \"w\", \"resources\": {\"requests\": {\"cpu\": 1}}}",
	     "", ""),
	 false, NULL, LG_EINVAL, "container w: request cpu"},
	{"unparsable quantity, named",
	 POD(REQ(CPU("1")) ", " NREQ("gpu-worker", GPU("two")), "", ""), false,
	 NULL, LG_EINVAL, "container gpu-worker: request nvidia.com/gpu"},
	{"no trimming", POD(REQ(GPU(" 1")), "", ""), false, NULL, LG_EINVAL,
	 "nvidia.com/gpu"},
	{"empty quantity", POD(REQ(GPU("")), "", ""), false, NULL, LG_EINVAL,
	 "nvidia.com/gpu"},
	{"null quantity", POD(REQ("\"cpu\": null"), "", ""), false, NULL,
	 LG_EINVAL, "cpu"},
	{"init container named", POD("", NREQ("setup", CPU("1x")), ""), false,
	 NULL, LG_EINVAL, "initContainer setup: request cpu"},
	{"restartPolicy not a string", POD("", "{\"restartPolicy\": true}", ""),
	 false, NULL, LG_EINVAL, "restartPolicy"},
	{"invalid overhead", POD("", "", OVERHEAD(CPU("1x"))), false, NULL,
	 LG_EINVAL, "overhead cpu"},
	{"overhead not an object", POD("", "", ", \"overhead\": [1]"), false,
	 NULL, LG_EINVAL, "overhead"},
	{"invalid pod-level quantity, even unsupported",
	 POD("", "", PODLEVEL(GPU("1.2.3"))), false, NULL, LG_EINVAL,
	 "nvidia.com/gpu"},
	{"pod-level requests not an object",
	 POD("", "", ", \"resources\": {\"requests\": 1}"), false, NULL,
	 LG_EINVAL, "requests"},
};

static void check_row(const struct req_row *r)
{
	struct lg_error err = {0};
	struct reslist l;
	json_t *pod = tj(r->pod);
	char buf[512];
	int rc;

	model__reslist_init(&l);
	rc = model__pod_requests(pod, r->defaults, &l, &err);
	ck_assert_msg(rc == r->rc, "%s: rc %d (%s), want %d", r->what, rc,
		      err.msg, r->rc);
	if (rc == 0) {
		render(&l, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, r->want) == 0,
			      "%s: got '%s' want '%s'", r->what, buf, r->want);
	} else {
		ck_assert_uint_eq(l.n, 0);
		ck_assert_int_eq(err.code, r->rc);
		ck_assert_msg(strstr(err.msg, r->msg) != NULL,
			      "%s: message '%s' lacks '%s'", r->what, err.msg,
			      r->msg);
	}
	model__reslist_release(&l);
	json_decref(pod);
}

START_TEST(upstream_table)
{
	check_row(&upstream_rows[_i]);
}
END_TEST

START_TEST(own_table)
{
	check_row(&own_rows[_i]);
}
END_TEST

START_TEST(default_table)
{
	check_row(&default_rows[_i]);
}
END_TEST

START_TEST(error_table)
{
	check_row(&error_rows[_i]);
}
END_TEST

START_TEST(reslist_basics)
{
	struct reslist l;
	json_t *pod = tj(POD(REQ(MEM("1") ", " CPU("2") ", " GPU("3")),
			     REQ("\"a/x\": \"4\", \"z\": \"5\""), ""));
	const struct quantity *q;
	char buf[64];

	model__reslist_init(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(model__reslist_get(&l, "cpu"));
	ck_assert_ptr_null(model__reslist_get(NULL, "cpu"));
	model__reslist_release(NULL);
	ck_assert_int_eq(model__pod_requests(pod, false, &l, NULL), 0);
	ck_assert_uint_eq(l.n, 5);
	for (size_t i = 1; i < l.n; i++)
		ck_assert_int_lt(strcmp(l.items[i - 1].name, l.items[i].name),
				 0);
	q = model__reslist_get(&l, "nvidia.com/gpu");
	ck_assert_ptr_nonnull(q);
	model__quantity_format(q, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3");
	ck_assert_ptr_null(model__reslist_get(&l, "nvidia.com"));
	ck_assert_ptr_nonnull(model__reslist_get(&l, "a/x"));
	ck_assert_ptr_nonnull(model__reslist_get(&l, "z"));
	model__reslist_release(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(l.items);
	model__reslist_release(&l);
	json_decref(pod);
}
END_TEST

/* out is reused: a second call replaces the first result, and a failing
 * call leaves it empty. */
START_TEST(reslist_reuse)
{
	struct reslist l;
	json_t *a = tj(POD(REQ(CPU("1") ", " GPU("1")), "", ""));
	json_t *b = tj(POD(REQ(MEM("2")), "", ""));
	json_t *bad = tj(POD(REQ(MEM("x")), "", ""));
	char buf[64];

	model__reslist_init(&l);
	ck_assert_int_eq(model__pod_requests(a, false, &l, NULL), 0);
	ck_assert_int_eq(model__pod_requests(b, false, &l, NULL), 0);
	render(&l, buf, sizeof(buf));
	ck_assert_str_eq(buf, "memory=2");
	ck_assert_int_eq(model__pod_requests(bad, false, &l, NULL), LG_EINVAL);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(model__reslist_get(&l, "memory"));
	model__reslist_release(&l);
	json_decref(a);
	json_decref(b);
	json_decref(bad);
}
END_TEST

/* Many distinct resources grow the list; beyond MODEL_MAX_ITEMS in one map
 * the pod is invalid. */
static json_t *pod_with_resources(size_t n)
{
	json_t *req = json_object();
	char name[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "example.com/r%05zu", i);
		json_object_set_new(req, name, json_string("1"));
	}
	return json_pack("{s:{s:[{s:{s:o}}]}}", "spec", "containers",
			 "resources", "requests", req);
}

START_TEST(bounds)
{
	struct reslist l;
	json_t *pod = pod_with_resources(MODEL_MAX_ITEMS);
	json_t *arr;

	model__reslist_init(&l);
	ck_assert_int_eq(model__pod_requests(pod, false, &l, NULL), 0);
	ck_assert_uint_eq(l.n, MODEL_MAX_ITEMS);
	ck_assert_ptr_nonnull(model__reslist_get(&l, "example.com/r04095"));
	json_decref(pod);
	pod = pod_with_resources(MODEL_MAX_ITEMS + 1);
	ck_assert_int_eq(model__pod_requests(pod, false, &l, NULL), LG_EINVAL);
	json_decref(pod);
	/* Too many containers. */
	arr = json_array();
	for (size_t i = 0; i <= MODEL_MAX_ITEMS; i++)
		json_array_append_new(arr, json_object());
	pod = json_pack("{s:{s:o}}", "spec", "initContainers", arr);
	ck_assert_int_eq(model__pod_requests(pod, false, &l, NULL), LG_EINVAL);
	json_array_remove(arr, 0);
	ck_assert_int_eq(model__pod_requests(pod, false, &l, NULL), 0);
	model__reslist_release(&l);
	json_decref(pod);
}
END_TEST

/* A sum beyond what a quantity can hold is LG_ERANGE, never wrapped.
 * Whether the addend parses at all is quantity.c's business, so the test
 * asks it first and expects the matching outcome. */
START_TEST(sum_overflow)
{
	static const char big[] = "2e376";
	struct quantity q, acc;
	struct reslist l;
	json_t *pod = tj(POD(REQ(GPU("2e376")) ", " REQ(GPU("2e376")), "", ""));
	int want = 0, rc;

	if (model__quantity_parse(&q, big, strlen(big), NULL) < 0) {
		want = LG_EINVAL;
	} else {
		acc = q;
		if (model__quantity_add(&acc, &q) < 0)
			want = LG_ERANGE;
	}
	model__reslist_init(&l);
	rc = model__pod_requests(pod, false, &l, NULL);
	ck_assert_int_eq(rc, want);
	model__reslist_release(&l);
	json_decref(pod);
}
END_TEST

static const struct eval_row eval_rows[] = {
	{model__eval_pod_requests,
	 POD(REQ(CPU("500m") ", " MEM("1Gi")), SIDE(GPU("1")),
	     OVERHEAD(CPU("100m"))),
	 "{\"requests\":{\"cpu\":\"600m\",\"memory\":\"1073741824\","
	 "\"nvidia.com/gpu\":\"1\"}}"},
	/* No defaulting in eval. */
	{model__eval_pod_requests, POD(LIM(GPU("1")), "", ""),
	 "{\"requests\":{}}"},
	{model__eval_pod_requests, "{}", "{\"requests\":{}}"},
	{model__eval_pod_requests, POD(REQ(GPU("1.5")), "", ""),
	 "{\"requests\":{\"nvidia.com/gpu\":"
	 "\"1500m\"}}"},
	{model__eval_pod_requests, POD(REQ(GPU("bad")), "", ""), NULL},
	{model__eval_pod_requests, "\"pod\"", NULL},
};

START_TEST(eval_table)
{
	check_eval_row(&eval_rows[_i]);
}
END_TEST

void model_tests_podreq(Suite *s)
{
	TCase *tc;

	tc = tcase_create("podreq_upstream");
	tcase_add_loop_test(tc, upstream_table, 0, N(upstream_rows));
	suite_add_tcase(s, tc);

	tc = tcase_create("podreq_semantics");
	tcase_add_loop_test(tc, own_table, 0, N(own_rows));
	tcase_add_loop_test(tc, default_table, 0, N(default_rows));
	suite_add_tcase(s, tc);

	tc = tcase_create("podreq_errors");
	tcase_add_loop_test(tc, error_table, 0, N(error_rows));
	tcase_add_test(tc, bounds);
	tcase_add_test(tc, sum_overflow);
	suite_add_tcase(s, tc);

	tc = tcase_create("podreq_reslist");
	tcase_add_test(tc, reslist_basics);
	tcase_add_test(tc, reslist_reuse);
	suite_add_tcase(s, tc);

	tc = tcase_create("podreq_eval");
	tcase_add_loop_test(tc, eval_table, 0, N(eval_rows));
	suite_add_tcase(s, tc);
}
