/*
 * The projection: every refusal rule, totals, billing accumulators, clones,
 * and a property test (random event sequences keep every subtree total equal
 * to a from-scratch recount; a clone taken halfway ends equal).
 */
#include "tests/model_tests.h"

#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char h100_def[] =
	"{\"name\":\"h100\",\"resourceNames\":[\"nvidia.com/GH100\"]}";
static const char a10_def[] =
	"{\"name\":\"a10\",\"resourceNames\":[\"nvidia.com/GA102\"]}";

/* Applies one event given as JSON text (seq and time optional). */
static int apply(state_t *st, const char *json, struct lg_error *err)
{
	json_t *v = tj(json);
	int rc = apply_event_json(st, v, err);

	json_decref(v);
	return rc;
}

static void ok(state_t *st, const char *json)
{
	struct lg_error err = {0};
	int rc = apply(st, json, &err);

	ck_assert_msg(rc == 0, "refused %s: %s", json, err.msg);
}

static char *dump(const state_t *st)
{
	json_t *v = state_to_json(st, NULL);
	char *s = json_canonical(v);

	json_decref(v);
	return s;
}

/* Applies json expecting a refusal naming `why`, and checks that the state
 * did not change at all. */
static void refused(state_t *st, const char *json, const char *why)
{
	struct lg_error err = {0};
	char *before = dump(st), *after;
	uint64_t seq = state_seq(st);
	int rc = apply(st, json, &err);

	ck_assert_msg(rc != 0, "accepted %s", json);
	ck_assert_msg(strstr(err.msg, why) != NULL, "%s: \"%s\" lacks \"%s\"",
		      json, err.msg, why);
	after = dump(st);
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(state_seq(st), seq);
	free(before);
	free(after);
}

static void class_event(state_t *st, const char *name, const char *def)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"type\":\"CLASS\",\"class\":\"%s\",\"definition\":%s}",
		 name, def);
	ok(st, buf);
}

static void tenant(state_t *st, const char *ns, const char *parent)
{
	char buf[256];

	snprintf(buf, sizeof(buf),
		 "{\"type\":\"TENANT\",\"namespace\":\"%s\",\"parent\":%s%s%s}",
		 ns, parent ? "\"" : "", parent ? parent : "null",
		 parent ? "\"" : "");
	ok(st, buf);
}

static void units(state_t *st, const char *type, const char *ns,
		  const char *cls, const char *name, long before, long after,
		  const char *node)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "{\"type\":\"%s\",\"namespace\":\"%s\",\"class\":\"%s\","
		 "\"kind\":\"VMInstance\",\"name\":\"%s\",\"uid\":\"u-%s\","
		 "\"before\":%ld,\"after\":%ld,\"node\":\"%s\"}",
		 type, ns, cls, name, name, before, after, node ? node : "");
	ok(st, buf);
}

static void check(const state_t *st)
{
	struct lg_error err = {0};

	ck_assert_msg(model__state_check(st, &err) == 0, "state_check: %s",
		      err.msg);
}

/* A tenant's member as canonical JSON, from the replay view. */
static char *member(const state_t *st, const char *ns, const char *key)
{
	json_t *v = state_to_json(st, ns);
	json_t *t = json_array_get(json_object_get(v, "tenants"), 0);
	char *s;

	ck_assert_msg(t != NULL, "no tenant %s", ns);
	s = json_canonical(json_object_get(t, key));
	json_decref(v);
	return s;
}

static void expect_member(const state_t *st, const char *ns, const char *key,
			  const char *want)
{
	char *got = member(st, ns, key);

	ck_assert_msg(strcmp(got, want) == 0, "%s.%s = %s, want %s", ns, key,
		      got, want);
	free(got);
}

static state_t *small_tree(void)
{
	state_t *st = state_new();

	class_event(st, "h100", h100_def);
	class_event(st, "a10", a10_def);
	tenant(st, "tenant-root", NULL);
	tenant(st, "tenant-a", "tenant-root");
	tenant(st, "tenant-a-b", "tenant-a");
	tenant(st, "tenant-c", "tenant-root");
	return st;
}

START_TEST(state_tenant_rules)
{
	state_t *st = state_new();

	refused(st,
		"{\"type\":\"TENANT\",\"namespace\":\"tenant-a\","
		"\"parent\":\"tenant-root\"}",
		"parent tenant-root does not exist");
	tenant(st, "tenant-root", NULL);
	refused(st,
		"{\"type\":\"TENANT\",\"namespace\":\"tenant-root\","
		"\"parent\":null}",
		"already exists");
	tenant(st, "tenant-a", "tenant-root");
	tenant(st, "tenant-a-b", "tenant-a");
	refused(st,
		"{\"type\":\"TENANT_GONE\",\"namespace\":\"tenant-a\","
		"\"parent\":\"tenant-root\"}",
		"still has children");
	refused(st,
		"{\"type\":\"TENANT_GONE\",\"namespace\":\"tenant-x\","
		"\"parent\":\"tenant-root\"}",
		"does not exist");
	ok(st, "{\"type\":\"TENANT_GONE\",\"namespace\":\"tenant-a-b\","
	       "\"parent\":\"tenant-a\"}");
	ok(st, "{\"type\":\"TENANT_GONE\",\"namespace\":\"tenant-a\","
	       "\"parent\":\"tenant-root\"}");
	tenant(st, "tenant-a", "tenant-root");
	ck_assert_int_eq(state_seq(st), 6);
	check(st);
	state_free(st);
}
END_TEST

START_TEST(state_budget_rules)
{
	state_t *st = small_tree();
	const char *set8 = "{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\","
			   "\"key\":\"h100.gpuclass.cozystack.io/devices\","
			   "\"value\":8}";
	const char *unset = "{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\","
			    "\"key\":\"h100.gpuclass.cozystack.io/devices\","
			    "\"value\":null}";

	refused(st, unset, "removing an absent budget");
	ok(st, set8);
	refused(st, set8, "no change");
	ok(st, "{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\",\"key\":"
	       "\"gpuclass.cozystack.io/devices\",\"value\":10}");
	expect_member(st, "tenant-a", "budgets",
		      "{\"gpuclass.cozystack.io/devices\":10,"
		      "\"h100.gpuclass.cozystack.io/devices\":8}");
	ok(st, unset);
	expect_member(st, "tenant-a", "budgets",
		      "{\"gpuclass.cozystack.io/devices\":10}");
	refused(st,
		"{\"type\":\"BUDGET\",\"namespace\":\"tenant-zz\",\"key\":"
		"\"gpuclass.cozystack.io/devices\",\"value\":1}",
		"no such tenant");
	/* Raw keys toggle, and only on change. */
	ok(st, "{\"type\":\"RAWKEY\",\"namespace\":\"tenant-a\",\"resource\":"
	       "\"nvidia.com/GH100\",\"present\":true}");
	refused(st,
		"{\"type\":\"RAWKEY\",\"namespace\":\"tenant-a\","
		"\"resource\":\"nvidia.com/GH100\",\"present\":true}",
		"no change");
	expect_member(st, "tenant-a", "rawKeys", "[\"nvidia.com/GH100\"]");
	ok(st, "{\"type\":\"RAWKEY\",\"namespace\":\"tenant-a\",\"resource\":"
	       "\"nvidia.com/GH100\",\"present\":false}");
	expect_member(st, "tenant-a", "rawKeys", "[]");
	state_free(st);
}
END_TEST

START_TEST(state_units_and_totals)
{
	state_t *st = small_tree();

	units(st, "RESERVE", "tenant-a-b", "h100", "vm1", 0, 2, NULL);
	units(st, "RESERVE", "tenant-a", "a10", "vm2", 0, 3, NULL);
	units(st, "RESERVE", "tenant-c", "h100", "vm3", 0, 1, NULL);
	units(st, "RESERVE", "default", "h100", "vm4", 0, 5, NULL);
	expect_member(st, "tenant-a", "reserved", "{\"a10\":3}");
	expect_member(st, "tenant-a", "subtreeReserved",
		      "{\"a10\":3,\"h100\":2}");
	expect_member(st, "tenant-root", "subtreeReserved",
		      "{\"a10\":3,\"h100\":3}");
	ck_assert_int_eq(model__state_ns(st, "tenant-root")->sub_reserved_total,
			 6);
	check(st);
	/* before must match, uids must match, direction is checked. */
	refused(st,
		"{\"type\":\"RESERVE\",\"namespace\":\"tenant-a-b\","
		"\"class\":\"h100\",\"kind\":\"VMInstance\",\"name\":\"vm1\","
		"\"uid\":\"u-vm1\",\"before\":1,\"after\":4}",
		"before 1, state has 2");
	refused(st,
		"{\"type\":\"RESERVE\",\"namespace\":\"tenant-a-b\","
		"\"class\":\"h100\",\"kind\":\"VMInstance\",\"name\":\"vm1\","
		"\"uid\":\"other\",\"before\":2,\"after\":4}",
		"uid other");
	refused(st,
		"{\"type\":\"RESERVE\",\"namespace\":\"tenant-q\","
		"\"class\":\"h100\",\"kind\":\"Pod\",\"name\":\"p\","
		"\"uid\":\"u\",\"before\":0,\"after\":1}",
		"tenant node does not exist");
	refused(st,
		"{\"type\":\"RESERVE\",\"namespace\":\"tenant-a\","
		"\"class\":\"t4\",\"kind\":\"Pod\",\"name\":\"p\","
		"\"uid\":\"u\",\"before\":0,\"after\":1}",
		"class not in the table");
	/* The same name in another kind is another holder. */
	ok(st, "{\"type\":\"RESERVE\",\"namespace\":\"tenant-a-b\",\"class\":"
	       "\"h100\",\"kind\":\"KubernetesNodes\",\"name\":\"vm1\",\"uid\":"
	       "\"k\",\"before\":0,\"after\":10}");
	units(st, "RELEASE", "tenant-a-b", "h100", "vm1", 2, 0, NULL);
	expect_member(st, "tenant-root", "subtreeReserved",
		      "{\"a10\":3,\"h100\":11}");
	refused(st,
		"{\"type\":\"TENANT_GONE\",\"namespace\":\"tenant-a-b\","
		"\"parent\":\"tenant-a\"}",
		"holders");
	check(st);
	/* A class that left the table can still be released. */
	ok(st, "{\"type\":\"CLASS\",\"class\":\"a10\",\"definition\":null}");
	units(st, "RELEASE", "tenant-a", "a10", "vm2", 3, 0, NULL);
	expect_member(st, "tenant-a", "subtreeReserved", "{\"h100\":10}");
	check(st);
	state_free(st);
}
END_TEST

START_TEST(state_alloc_nodes)
{
	state_t *st = small_tree();
	json_t *v;
	char *s;

	ok(st, "{\"type\":\"NODE\",\"node\":\"n1\",\"class\":\"h100\","
	       "\"capacity\":8,\"serves\":true}");
	ok(st, "{\"type\":\"NODE\",\"node\":\"n2\",\"class\":\"h100\","
	       "\"capacity\":4,\"serves\":false}");
	refused(st,
		"{\"type\":\"NODE\",\"node\":\"n2\",\"class\":\"h100\","
		"\"capacity\":4,\"serves\":false}",
		"no change");
	units(st, "ALLOC", "tenant-a", "h100", "c1", 0, 3, "n1");
	units(st, "ALLOC", "default", "h100", "c2", 0, 2, "n2");
	units(st, "ALLOC", "default", "h100", "c3", 0, 1, "gone-node");
	refused(st,
		"{\"type\":\"ALLOC\",\"namespace\":\"tenant-a\",\"class\":"
		"\"h100\",\"kind\":\"VMInstance\",\"name\":\"c1\",\"uid\":"
		"\"u-c1\",\"before\":3,\"after\":4,\"node\":\"n2\"}",
		"node n2, state has n1");
	refused(st,
		"{\"type\":\"FREE\",\"namespace\":\"tenant-a\",\"class\":"
		"\"h100\",\"kind\":\"VMInstance\",\"name\":\"c1\",\"uid\":"
		"\"u-c1\",\"before\":3,\"after\":0,\"node\":\"\"}",
		"state has n1");
	expect_member(st, "tenant-a", "allocated", "{\"h100\":3}");
	expect_member(st, "tenant-root", "subtreeAllocated", "{\"h100\":3}");
	v = state_to_json(st, "none");
	s = json_canonical(json_object_get(v, "nodes"));
	ck_assert_str_eq(s,
			 "[{\"classes\":{\"h100\":{\"allocated\":3,"
			 "\"capacity\":8,\"serves\":true}},\"name\":\"n1\"},"
			 "{\"classes\":{\"h100\":{\"allocated\":2,"
			 "\"capacity\":4,\"serves\":false}},\"name\":\"n2\"}]");
	free(s);
	s = json_canonical(json_array_get(json_object_get(v, "classes"), 1));
	/* capacity sums every node, free only serving ones. */
	ck_assert_str_eq(s, "{\"capacity\":12,\"deviceClassName\":\"h100\","
			    "\"free\":5,\"name\":\"h100\",\"resourceNames\":"
			    "[\"nvidia.com/GH100\"],\"tolerations\":[]}");
	free(s);
	json_decref(v);
	check(st);
	units(st, "FREE", "tenant-a", "h100", "c1", 3, 0, "n1");
	/* After a free the claim may be allocated elsewhere. */
	units(st, "ALLOC", "tenant-a", "h100", "c1", 0, 3, "n2");
	ck_assert_int_eq(model__state_node(st, "n1")
				 ->allocated[model__state_cls_id(st, "h100")],
			 0);
	ck_assert_int_eq(model__state_node(st, "n2")
				 ->allocated[model__state_cls_id(st, "h100")],
			 5);
	check(st);
	state_free(st);
}
END_TEST

START_TEST(state_seq_time_class)
{
	state_t *st = state_new();

	ok(st,
	   "{\"type\":\"TICK\",\"seq\":1,\"time\":\"2026-01-01T00:00:00Z\"}");
	refused(st, "{\"type\":\"TICK\",\"seq\":3}", "expected seq 2");
	refused(st, "{\"type\":\"TICK\",\"time\":\"2025-12-31T23:59:59Z\"}",
		"time goes back");
	ok(st, "{\"type\":\"NOTE\",\"code\":\"X\",\"message\":\"m\","
	       "\"time\":\"2026-01-02T00:00:00Z\"}");
	/* NOTE and VERDICT do not move the horizon. */
	ck_assert_int_eq(state_horizon_ns(st), 1767225600LL * 1000000000);
	ok(st, "{\"type\":\"VERDICT\",\"record\":{\"allowed\":true},"
	       "\"time\":\"2026-01-03T00:00:00Z\"}");
	ck_assert_int_eq(state_horizon_ns(st), 1767225600LL * 1000000000);
	ck_assert_int_eq(state_time_ns(st), 1767398400LL * 1000000000);
	refused(st,
		"{\"type\":\"CLASS\",\"class\":\"h100\",\"definition\":null}",
		"absent class");
	class_event(st, "h100", h100_def);
	refused(st,
		"{\"type\":\"CLASS\",\"class\":\"h100\",\"definition\":"
		"{\"name\":\"h100\",\"resourceNames\":[\"nvidia.com/GH100\"]}}",
		"unchanged");
	refused(st,
		"{\"type\":\"CLASS\",\"class\":\"h100\",\"definition\":"
		"{\"name\":\"a10\"}}",
		"names another class");
	refused(st,
		"{\"type\":\"CLASS\",\"class\":\"h100\",\"definition\":"
		"{\"name\":\"h100\",\"resourceNames\":[7]}}",
		"CLASS h100");
	ok(st, "{\"type\":\"CLASS\",\"class\":\"h100\",\"definition\":"
	       "{\"name\":\"h100\",\"resourceNames\":[\"nvidia.com/X\"]}}");
	ck_assert_str_eq(state_classes(st)->classes[0].resource_names[0],
			 "nvidia.com/X");
	ok(st, "{\"type\":\"VERDICT\",\"record\":{\"allowed\":true}}");
	ck_assert_uint_eq(st->n_verdicts, 2);
	state_free(st);
}
END_TEST

/* Billing: integrated exactly in device-milliseconds. */
START_TEST(state_billing)
{
	state_t *st = small_tree();
	int64_t r, a;
	uint32_t h;

	ok(st,
	   "{\"type\":\"RESERVE\",\"namespace\":\"tenant-a\",\"class\":"
	   "\"h100\",\"kind\":\"VMInstance\",\"name\":\"v\",\"uid\":\"u\","
	   "\"before\":0,\"after\":2,\"time\":\"2026-01-01T00:30:00.0009Z\"}");
	ok(st, "{\"type\":\"ALLOC\",\"namespace\":\"tenant-a\",\"class\":"
	       "\"h100\",\"kind\":\"VMInstance\",\"name\":\"v\",\"uid\":\"u\","
	       "\"before\":0,\"after\":1,\"node\":\"\",\"time\":"
	       "\"2026-01-01T01:00:00Z\"}");
	ok(st, "{\"type\":\"RELEASE\",\"namespace\":\"tenant-a\",\"class\":"
	       "\"h100\",\"kind\":\"VMInstance\",\"name\":\"v\",\"uid\":\"u\","
	       "\"before\":2,\"after\":0,\"time\":\"2026-01-01T02:00:00Z\"}");
	h = (uint32_t)model__state_cls_id(st, "h100");
	/* 90 minutes at 2 units; event times are truncated to the ms. */
	model__nsrec_bill_at(model__state_ns(st, "tenant-a"), h,
			     1767225600000 + 3 * 3600000, &r, &a);
	ck_assert_int_eq(r, 2 * 5400000);
	/* allocated 1 unit from 01:00, still running at 03:00: 2 hours. */
	ck_assert_int_eq(a, 2 * 3600000);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Property test */

struct slot {
	const char *ns, *cls;
	char name[16];
	long reserved, allocated;
	const char *node;
};

static const char *const pool_ns[] = {
	"tenant-root", "tenant-a",   "tenant-b", "tenant-a-x",
	"tenant-a-y",  "tenant-b-z", "default",	 "kube-system",
};
static const char *const pool_cls[] = {"h100", "a10"};
static const char *const pool_node[] = {"", "n1", "n2", "n3"};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool node_exists_tree(const state_t *st, const char *ns)
{
	const struct nsrec *r = model__state_ns(st, ns);

	return r != NULL && r->node;
}

/* One random event, mostly valid; applied, and the shadow follows. Returns
 * the event's text when it was accepted (caller frees), else NULL. */
static char *random_step(state_t *st, struct slot *slots, size_t n_slots,
			 uint64_t *seed)
{
	char buf[512];
	struct lg_error err = {0};
	unsigned k = rnd(seed) % 10;

	if (k == 0) { /* tenants appear or go (refusals are fine) */
		const char *ns = pool_ns[rnd(seed) % 6];
		char parent[64];
		bool has = ns_parent(ns, parent);

		snprintf(buf, sizeof(buf),
			 "{\"type\":\"%s\",\"namespace\":\"%s\",\"parent\":%s%"
			 "s%s}",
			 node_exists_tree(st, ns) ? "TENANT_GONE" : "TENANT",
			 ns, has ? "\"" : "", has ? parent : "null",
			 has ? "\"" : "");
		return apply(st, buf, &err) == 0 ? strdup(buf) : NULL;
	}
	if (k == 1) {
		snprintf(buf, sizeof(buf),
			 "{\"type\":\"NODE\",\"node\":\"%s\",\"class\":\"%s\","
			 "\"capacity\":%u,\"serves\":%s}",
			 pool_node[1 + rnd(seed) % 3], pool_cls[rnd(seed) % 2],
			 (unsigned)(rnd(seed) % 9),
			 rnd(seed) % 2 ? "true" : "false");
		return apply(st, buf, &err) == 0 ? strdup(buf) : NULL;
	}
	struct slot *s = &slots[rnd(seed) % n_slots];
	bool res = k < 6;
	long cur = res ? s->reserved : s->allocated;
	long after = (long)(rnd(seed) % 6);
	const char *node =
		s->allocated > 0 ? s->node : pool_node[rnd(seed) % 4];
	bool lie = rnd(seed) % 16 == 0; /* sometimes a wrong before */

	if (after == cur)
		return NULL;
	snprintf(
		buf, sizeof(buf),
		"{\"type\":\"%s\",\"namespace\":\"%s\",\"class\":\"%s\","
		"\"kind\":\"Pod\",\"name\":\"%s\",\"uid\":\"u\",\"before\":%ld,"
		"\"after\":%ld,\"node\":\"%s\",\"time\":\"2026-01-01T00:%02u:"
		"00Z\"}",
		res ? (after > cur ? "RESERVE" : "RELEASE")
		    : (after > cur ? "ALLOC" : "FREE"),
		s->ns, s->cls, s->name, cur + (lie ? 1 : 0), after, node,
		(unsigned)(state_seq(st) / 200 % 60));
	if (apply(st, buf, &err) != 0) {
		ck_assert_msg(lie || strstr(err.msg, "tenant node") ||
				      strstr(err.msg, "time goes back"),
			      "unexpected refusal of %s: %s", buf, err.msg);
		return NULL;
	}
	ck_assert_msg(!lie || after == cur + 1, "accepted a lie: %s", buf);
	if (res) {
		s->reserved = after;
	} else {
		s->allocated = after;
		s->node = node;
	}
	return strdup(buf);
}

START_TEST(state_property_recount)
{
	enum {
		N_SLOTS = 48,
		STEPS = 3000
	};
	struct slot slots[N_SLOTS];
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(_i + 1);
	state_t *st = state_new(), *half = NULL;
	char *later[STEPS], *a, *b;
	size_t n_later = 0, accepted = 0, multi_class_seen = 0;

	class_event(st, "h100", h100_def);
	class_event(st, "a10", a10_def);
	for (int i = 0; i < N_SLOTS; i++) {
		/* Slots 2k and 2k+1 are one holder's two classes, so that
		 * holders gain and lose a second class too. */
		slots[i] = (struct slot){.ns = pool_ns[(i / 2) % 8],
					 .cls = pool_cls[i % 2]};
		snprintf(slots[i].name, sizeof(slots[i].name), "p%d", i / 2);
		slots[i].node = "";
	}
	for (int i = 0; i < STEPS; i++) {
		char *text = random_step(st, slots, N_SLOTS, &seed);

		accepted += text != NULL;
		if (half != NULL && text != NULL)
			later[n_later++] = text;
		else
			free(text);
		if (i % 250 == 0)
			check(st);
		for (size_t k = 0; k < st->holder_index.cap; k++)
			if (st->holder_index.hashes[k] != 0 &&
			    ((struct holder *)st->holder_index.vals[k])->n > 1)
				multi_class_seen++;
		if (i == STEPS / 2)
			half = state_clone(st);
	}
	check(st);
	/* The generator must have exercised the state, not only refusals,
	 * and holders with more than one class. */
	ck_assert_uint_gt(accepted, STEPS / 3);
	ck_assert_uint_gt(st->n_holders, 0);
	ck_assert_uint_gt(multi_class_seen, 0);
	/* The clone taken halfway, fed the same second half, ends equal. */
	for (size_t i = 0; i < n_later; i++) {
		ok(half, later[i]);
		free(later[i]);
	}
	check(half);
	a = dump(st);
	b = dump(half);
	ck_assert_str_eq(a, b);
	/* The checkpoint bytes of a state with multi-class holders survive a
	 * decode: equal bytes, equal replay JSON. */
	{
		uint8_t *e1, *e2;
		size_t n1, n2;
		state_t *back;
		struct lg_error err = {0};
		char *c;

		ck_assert_int_eq(state_encode(st, &e1, &n1), 0);
		ck_assert_msg(state_decode(&back, e1, n1, &err) == 0, "%s",
			      err.msg);
		ck_assert_int_eq(state_encode(back, &e2, &n2), 0);
		ck_assert(n1 == n2 && memcmp(e1, e2, n1) == 0);
		c = dump(back);
		ck_assert_str_eq(c, a);
		free(c);
		free(e1);
		free(e2);
		state_free(back);
	}
	ck_assert_uint_eq(state_seq(half), state_seq(st));
	free(a);
	free(b);
	state_free(half);
	state_free(st);
}
END_TEST

/* DESIGN 6: replay lists every Node that exists (NODE events of class
 * NODE_EXISTS_CLASS), with units bound to it after its capacity went to 0;
 * existence survives a checkpoint (issue 10, case 2). */
#define EXISTS(n, yes)                                                   \
	"{\"type\":\"NODE\",\"node\":\"" n "\",\"class\":\"\","           \
	"\"capacity\":0,\"serves\":" yes "}"

START_TEST(state_node_exists)
{
	state_t *st = small_tree(), *back = NULL;
	struct lg_error err = {0};
	uint8_t *enc = NULL;
	size_t n = 0;
	json_t *v;
	char *s, *a, *b;

	refused(st, EXISTS("n1", "false"), "already gone");
	ok(st, EXISTS("cpu-1", "true"));
	ok(st, EXISTS("n1", "true"));
	refused(st, EXISTS("n1", "true"), "already exists");
	refused(st,
		"{\"type\":\"NODE\",\"node\":\"n1\",\"class\":\"\","
		"\"capacity\":1,\"serves\":true}",
		"existence with a capacity");
	ok(st, "{\"type\":\"NODE\",\"node\":\"n1\",\"class\":\"h100\","
	       "\"capacity\":8,\"serves\":true}");
	units(st, "ALLOC", "tenant-a", "h100", "c1", 0, 3, "n1");
	refused(st, EXISTS("n1", "false"), "gone with capacity of h100");
	/* The device plugin leaves; the units stay bound. */
	ok(st, "{\"type\":\"NODE\",\"node\":\"n1\",\"class\":\"h100\","
	       "\"capacity\":0,\"serves\":false}");
	v = state_to_json(st, "none");
	s = json_canonical(json_object_get(v, "nodes"));
	ck_assert_str_eq(s, "[{\"classes\":{},\"name\":\"cpu-1\"},"
			    "{\"classes\":{\"h100\":{\"allocated\":3,"
			    "\"capacity\":0,\"serves\":false}},\"name\":\"n1\"}]");
	free(s);
	json_decref(v);
	check(st);
	ck_assert_int_eq(state_encode(st, &enc, &n), 0);
	ck_assert_msg(state_decode(&back, enc, n, &err) == 0, "%s", err.msg);
	a = dump(st);
	b = dump(back);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	free(enc);
	ok(st, EXISTS("cpu-1", "false"));
	v = state_to_json(st, "none");
	s = json_canonical(json_object_get(v, "nodes"));
	ck_assert_str_eq(s, "[{\"classes\":{\"h100\":{\"allocated\":3,"
			    "\"capacity\":0,\"serves\":false}},\"name\":\"n1\"}]");
	free(s);
	json_decref(v);
	state_free(back);
	state_free(st);
}
END_TEST

/* DESIGN 2.3 "Bounds": a holder's units are at most 2^31-1, and every total
 * an event changes is checked before any is: an event that would overflow
 * one is refused with the state unchanged, never wrapped (issue 10, case
 * 3). Totals near 2^63 cannot be reached with valid events short of 2^32
 * holders, so they are built with state_apply_validated, which trusts the
 * event's own fields: the checked arithmetic is what still stands. */
static struct event big_event(enum event_type type, const char *ns,
			      const char *name, int64_t before, int64_t after,
			      const char *node)
{
	return (struct event){.type = type,
			      .time_ns = 0,
			      .ns = ns,
			      .cls = "h100",
			      .kind = HK_POD,
			      .name = name,
			      .uid = name,
			      .before = before,
			      .after = after,
			      .node = node};
}

static void big_refused(state_t *st, const struct event *ev)
{
	struct lg_error err = {0};
	char *before = dump(st), *after;

	ck_assert_int_eq(state_apply_validated(st, ev, &err), LG_EMISMATCH);
	ck_assert_msg(strstr(err.msg, "would overflow") != NULL, "%s",
		      err.msg);
	after = dump(st);
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
}

START_TEST(state_bounds)
{
	state_t *st = small_tree();
	struct lg_error err = {0};
	struct event ev;

	/* One holder: 2^31-1 is the most; above it the event is invalid. */
	refused(st,
		"{\"type\":\"RESERVE\",\"namespace\":\"tenant-a\",\"class\":"
		"\"h100\",\"kind\":\"Pod\",\"name\":\"p\",\"uid\":\"u\","
		"\"before\":0,\"after\":2147483648}",
		"units above 2147483647");
	units(st, "RESERVE", "tenant-a", "h100", "v1", 0, 2147483647, NULL);
	units(st, "RESERVE", "tenant-a-b", "h100", "v2", 0, 2147483647, NULL);
	expect_member(st, "tenant-root", "subtreeReserved",
		      "{\"h100\":4294967294}");
	check(st);
	state_free(st);

	/* Own, subtree (per class and total) and node totals near 2^63. */
	st = small_tree();
	ev = big_event(EV_RESERVE, "tenant-c", "p1", 0, INT64_MAX - 5, NULL);
	ck_assert_int_eq(state_apply_validated(st, &ev, &err), 0);
	ev = big_event(EV_RESERVE, "tenant-c", "p2", 0, 8, NULL);
	big_refused(st, &ev);
	ev = big_event(EV_RESERVE, "tenant-a", "p3", 0, 6, NULL);
	big_refused(st, &ev); /* tenant-root's subtree total */
	/* Another class: only tenant-root's total over classes overflows. */
	ev = big_event(EV_RESERVE, "tenant-a", "p3", 0, 6, NULL);
	ev.cls = "a10";
	big_refused(st, &ev);
	ev = big_event(EV_RESERVE, "tenant-c", "p2", 0, 5, NULL);
	ck_assert_int_eq(state_apply_validated(st, &ev, &err), 0);
	expect_member(st, "tenant-c", "reserved",
		      "{\"h100\":9223372036854775807}");
	ev = big_event(EV_ALLOC, "default", "p4", 0, INT64_MAX - 1, "n1");
	ck_assert_int_eq(state_apply_validated(st, &ev, &err), 0);
	ev = big_event(EV_ALLOC, "other", "p5", 0, 2, "n1");
	big_refused(st, &ev); /* the node's allocation */
	ev = big_event(EV_ALLOC, "other", "p5", 0, 2, "n2");
	ck_assert_int_eq(state_apply_validated(st, &ev, &err), 0);
	check(st);
	state_free(st);
}
END_TEST

/* Billing integrates units x milliseconds: two holders of 2^31-1 units
 * overflow int64 device-ms within 25 days. The next event there is refused
 * and a billing snapshot says so, instead of wrapping. */
START_TEST(state_bounds_billing)
{
	state_t *st = small_tree();
	struct bill_snap *snap = bill_snap_new();
	struct lg_error err = {0};
	int64_t day_ms = 86400000LL, t30 = 30 * day_ms;
	char buf[512];

	units(st, "RESERVE", "tenant-a", "h100", "v1", 0, 2147483647, NULL);
	units(st, "RESERVE", "tenant-a", "h100", "v2", 0, 2147483647, NULL);
	ck_assert_int_eq(bill_snap_take(snap, st, 20 * day_ms,
					BILL_BASIS_RESERVED, &err),
			 0);
	ck_assert_int_eq(
		bill_snap_take(snap, st, t30, BILL_BASIS_RESERVED, &err),
		LG_ERANGE);
	ck_assert_msg(strstr(err.msg, "overflow") != NULL, "%s", err.msg);
	snprintf(buf, sizeof(buf),
		 "{\"type\":\"RESERVE\",\"time\":\"1970-01-31T00:00:00Z\","
		 "\"namespace\":\"tenant-a\",\"class\":\"h100\",\"kind\":"
		 "\"Pod\",\"name\":\"p\",\"uid\":\"u\",\"before\":0,"
		 "\"after\":1}");
	refused(st, buf, "would overflow");
	bill_snap_free(snap);
	state_free(st);
}
END_TEST

void model_tests_state(Suite *s)
{
	TCase *tc = tcase_create("state_rules");

	tcase_add_test(tc, state_tenant_rules);
	tcase_add_test(tc, state_budget_rules);
	tcase_add_test(tc, state_units_and_totals);
	tcase_add_test(tc, state_alloc_nodes);
	tcase_add_test(tc, state_seq_time_class);
	tcase_add_test(tc, state_billing);
	tcase_add_test(tc, state_node_exists);
	tcase_add_test(tc, state_bounds);
	tcase_add_test(tc, state_bounds_billing);
	suite_add_tcase(s, tc);
	tc = tcase_create("state_property");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, state_property_recount, 0, 8);
	suite_add_tcase(s, tc);
}
