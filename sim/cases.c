/*
 * The reconciliation cases (DESIGN 3.6) on purpose: a short recorded
 * stream and the admission reviews that "the webhook" sent along it, so
 * that a test or the demo can build a ledger in which each finding
 * happens -- by feeding the stream to `gpuledger watch --from` and, after
 * the line each review follows, answering the review with `gpuledger
 * serve`. The history, one minute apart:
 *
 *   - tenants acme (total 8), acme-dev (total 4), beta (total 2) and gamma
 *     (total 4) and the class table (a100, h100);
 *   - preExisting: VMInstance legacy in tenant-acme (2 a100), observed
 *     before the first admission (the webhook was not wired yet);
 *   - admitted: VMInstance web in tenant-acme (1 a100), reviewed, then
 *     observed: nothing to report;
 *   - bypass: VMInstance rogue in tenant-beta (3 h100), never reviewed
 *     (the webhook was off), which takes beta over its 2;
 *   - race: VMInstances race-a and race-b in tenant-gamma (3 a100 each),
 *     both reviewed on the same state (used 0 of 4, so both allowed), then
 *     both observed: gamma uses 6 of 4, until race-b is deleted;
 *   - budgetLowered: tenant-acme-dev runs dev-box (3 a100, reviewed), then
 *     its Tenant's quota is lowered to 2 under that usage.
 *
 * Each stream line carries its "time"; the reviews carry the names and
 * users an auditor would see. Deterministic: no clock, no randomness.
 */
#include "sim/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_NS (60LL * 1000000000LL)

struct out {
	struct sim_case_line *lines;
	size_t n, cap;
	int64_t t_ns;
	uint64_t rv; /* resourceVersion */
};

static void push(struct out *o, bool review, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT);

	json_decref(v);
	LG_ASSERT(text != NULL);
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 32;
		o->lines = lg_xrealloc(o->lines, o->cap * sizeof(*o->lines));
	}
	o->lines[o->n].review = review;
	o->lines[o->n++].text = text;
}

static json_t *meta(struct out *o, const char *name, const char *ns,
		    const char *uid)
{
	char rv[24];

	snprintf(rv, sizeof(rv), "%llu", (unsigned long long)++o->rv);
	return json_pack("{s:s, s:s, s:s, s:s}", "name", name, "namespace", ns,
			 "uid", uid, "resourceVersion", rv);
}

static void event(struct out *o, const char *type, json_t *obj)
{
	char t[64];

	o->t_ns += STEP_NS;
	time_format_ns(o->t_ns, t, sizeof(t));
	push(o, false,
	     json_pack("{s:s, s:o, s:s}", "type", type, "object", obj, "time",
		       t));
}

static void class_table(struct out *o)
{
	const char *classes =
		"{\"classes\":[{\"name\":\"a100\",\"resourceNames\":"
		"[\"nvidia.com/GA100_A100_SXM4_80GB\"]},{\"name\":\"h100\","
		"\"resourceNames\":[\"nvidia.com/GH100_H100_SXM5_80GB\"]}]}";

	event(o, "ADDED",
	      json_pack("{s:s, s:s, s:o, s:{s:s}}", "apiVersion", "v1", "kind",
			"ConfigMap", "metadata",
			meta(o, "gpu-classes", "cozy-system",
			     "00000000-0000-4000-8000-000000000001"),
			"data", "classes.json", classes));
}

static void tenant(struct out *o, const char *type, const char *name,
		   const char *parent_ns, const char *uid, const char *total)
{
	event(o, type,
	      json_pack("{s:s, s:s, s:o, s:{s:{s:s}}}", "apiVersion",
			"apps.cozystack.io/v1alpha1", "kind", "Tenant",
			"metadata", meta(o, name, parent_ns, uid), "spec",
			"resourceQuotas", GPU_TOTAL_KEY, total));
}

static json_t *vmi_spec(const char *cls, int count)
{
	return json_pack("{s:[{s:s, s:i}]}", "gpus", "class", cls, "count",
			 count);
}

static json_t *vmi(struct out *o, const char *ns, const char *name,
		   const char *uid, const char *cls, int count)
{
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion",
			 "apps.cozystack.io/v1alpha1", "kind", "VMInstance",
			 "metadata", meta(o, name, ns, uid), "spec",
			 vmi_spec(cls, count));
}

/* The AdmissionReview the API server sends for a VMInstance CREATE. */
static void review(struct out *o, const char *ns, const char *name,
		   const char *cls, int count, const char *user,
		   const char *review_uid)
{
	push(o, true,
	     json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s,"
		       " s:{s:s, s:[s], s:s}, s:{s:s, s:s, s:{s:s, s:s}, s:o},"
		       " s:n}}",
		       "apiVersion", "admission.k8s.io/v1", "kind",
		       "AdmissionReview", "request", "uid", review_uid, "kind",
		       "group", "apps.cozystack.io", "version", "v1alpha1",
		       "kind", "VMInstance", "operation", "CREATE", "namespace",
		       ns, "name", name, "userInfo", "username", user, "groups",
		       "system:authenticated", "uid", "user-uid-of-the-caller",
		       "object", "apiVersion", "apps.cozystack.io/v1alpha1",
		       "kind", "VMInstance", "metadata", "name", name,
		       "namespace", ns, "spec", vmi_spec(cls, count),
		       "oldObject"));
}

int sim_cases(int64_t start_ns, struct sim_case_line **lines, size_t *n,
	      struct lg_error *err)
{
	struct out o = {.t_ns = start_ns};

	LG_ASSERT(lines != NULL && n != NULL);
	if (start_ns < 0 || start_ns > SIM_TIME_MAX_NS - 100 * STEP_NS)
		return lg_error_set(err, LG_EINVAL,
				    "the cases start in 1970..2199");
	class_table(&o);
	tenant(&o, "ADDED", "acme", "tenant-root",
	       "00000000-0000-4000-8000-0000000000a1", "8");
	tenant(&o, "ADDED", "dev", "tenant-acme",
	       "00000000-0000-4000-8000-0000000000a2", "4");
	tenant(&o, "ADDED", "beta", "tenant-root",
	       "00000000-0000-4000-8000-0000000000b1", "2");
	tenant(&o, "ADDED", "gamma", "tenant-root",
	       "00000000-0000-4000-8000-0000000000c1", "4");
	/* preExisting: before the webhook was wired. */
	event(&o, "ADDED",
	      vmi(&o, "tenant-acme", "legacy",
		  "00000000-0000-4000-8000-000000000101", "a100", 2));
	/* Admitted, then observed. */
	review(&o, "tenant-acme", "web", "a100", 1, "alice@acme.example",
	       "review-web");
	event(&o, "ADDED",
	      vmi(&o, "tenant-acme", "web",
		  "00000000-0000-4000-8000-000000000102", "a100", 1));
	/* A bypass: the webhook was off. */
	event(&o, "ADDED",
	      vmi(&o, "tenant-beta", "rogue",
		  "00000000-0000-4000-8000-000000000201", "h100", 3));
	/* A race: two reviews on the same state, then both objects. */
	review(&o, "tenant-gamma", "race-a", "a100", 3, "carol@gamma.example",
	       "review-race-a");
	review(&o, "tenant-gamma", "race-b", "a100", 3, "dave@gamma.example",
	       "review-race-b");
	event(&o, "ADDED",
	      vmi(&o, "tenant-gamma", "race-a",
		  "00000000-0000-4000-8000-000000000301", "a100", 3));
	event(&o, "ADDED",
	      vmi(&o, "tenant-gamma", "race-b",
		  "00000000-0000-4000-8000-000000000302", "a100", 3));
	event(&o, "DELETED",
	      vmi(&o, "tenant-gamma", "race-b",
		  "00000000-0000-4000-8000-000000000302", "a100", 3));
	/* A budget lowered under usage. */
	review(&o, "tenant-acme-dev", "dev-box", "a100", 3, "bob@acme.example",
	       "review-dev-box");
	event(&o, "ADDED",
	      vmi(&o, "tenant-acme-dev", "dev-box",
		  "00000000-0000-4000-8000-000000000401", "a100", 3));
	tenant(&o, "MODIFIED", "dev", "tenant-acme",
	       "00000000-0000-4000-8000-0000000000a2", "2");
	*lines = o.lines;
	*n = o.n;
	return 0;
}

void sim_cases_free(struct sim_case_line *lines, size_t n)
{
	for (size_t i = 0; i < n && lines != NULL; i++)
		free(lines[i].text);
	free(lines);
}
