/*
 * The tenant tree through the stream (DESIGN 2.1, 2.2): nodes appear root
 * first and go leaf first, for every reason a node exists (Namespace,
 * Tenant, holder, child); budgets and raw keys come from the governing
 * Tenant and are withdrawn before the node goes; label mismatches,
 * non-tenant and conflicting Tenants and invalid keys are NOTEs.
 */
#include "tests/ingest_tests.h"

#include "ingest/ingest_int.h"

#include <signal.h>

#define RQ_FULL                                                             \
	"{'h100.gpuclass.cozystack.io/devices':'8','gpuclass.cozystack.io/" \
	"devices':'10','requests.nvidia.com/L40S':'2','cpu':'4'}"

static const struct h_case namespace_cases[] = {
	{"root", {ADD(NSOBJ("tenant-root"))}, "TENANT tenant-root", NULL},
	{"ancestors first",
	 {ADD(NSOBJ("tenant-a-b"))},
	 "TENANT tenant-root; TENANT tenant-a; TENANT tenant-a-b",
	 NULL},
	{"not a tenant",
	 {ADD(NSOBJ("default")), ADD(NSOBJ("kube-system"))},
	 "",
	 NULL},
	{"leaf first",
	 {ADD(NSOBJ("tenant-a")), ADD(NSOBJ("tenant-a-b")),
	  DEL(NSOBJ("tenant-a")), DEL(NSOBJ("tenant-a-b"))},
	 "TENANT tenant-root; TENANT tenant-a; TENANT tenant-a-b; "
	 "GONE tenant-a-b; GONE tenant-a; GONE tenant-root",
	 NULL},
	{"root namespace keeps root",
	 {ADD(NSOBJ("tenant-root")), ADD(NSOBJ("tenant-a")),
	  DEL(NSOBJ("tenant-a"))},
	 "TENANT tenant-root; TENANT tenant-a; GONE tenant-a",
	 NULL},
	{"delete unknown", {DEL(NSOBJ("tenant-zz"))}, "", NULL},
	{"label mismatch, once",
	 {ADD("{'apiVersion':'v1','kind':'Namespace','metadata':{'name':"
	      "'tenant-a','labels':{'tenant.cozystack.io/tenant-x':''}}}")},
	 "TENANT tenant-root; TENANT tenant-a; NOTE LabelMismatch",
	 NULL},
	{"labels that agree",
	 {ADD("{'apiVersion':'v1','kind':'Namespace','metadata':{'name':"
	      "'tenant-a','labels':{'tenant.cozystack.io/tenant-root':'',"
	      "'tenant.cozystack.io/tenant-a':''}}}")},
	 "TENANT tenant-root; TENANT tenant-a",
	 NULL},
};

static const struct h_case tenant_cases[] = {
	{"budgets and raw keys",
	 {ADD(TEN("tenant-root", "acme", RQ_FULL))},
	 "TENANT tenant-root; TENANT tenant-acme; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=10; "
	 "BUDGET tenant-acme h100.gpuclass.cozystack.io/devices=8; "
	 "RAWKEY tenant-acme +nvidia.com/L40S",
	 NULL},
	{"changes are differences",
	 {ADD(TEN("tenant-root", "acme", RQ_FULL)),
	  MOD(TEN("tenant-root", "acme",
		  "{'h100.gpuclass.cozystack.io/devices':'4','limits.nvidia."
		  "com/L40S_SHARED':'1Ki'}"))},
	 "TENANT tenant-root; TENANT tenant-acme; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=10; "
	 "BUDGET tenant-acme h100.gpuclass.cozystack.io/devices=8; "
	 "RAWKEY tenant-acme +nvidia.com/L40S; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=null; "
	 "BUDGET tenant-acme h100.gpuclass.cozystack.io/devices=4; "
	 "RAWKEY tenant-acme -nvidia.com/L40S; "
	 "RAWKEY tenant-acme +nvidia.com/L40S_SHARED",
	 NULL},
	{"withdrawn before the node goes",
	 {ADD(TEN("tenant-root", "acme", RQ_FULL)),
	  DEL(TEN("tenant-root", "acme", RQ_FULL))},
	 "TENANT tenant-root; TENANT tenant-acme; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=10; "
	 "BUDGET tenant-acme h100.gpuclass.cozystack.io/devices=8; "
	 "RAWKEY tenant-acme +nvidia.com/L40S; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=null; "
	 "BUDGET tenant-acme h100.gpuclass.cozystack.io/devices=null; "
	 "RAWKEY tenant-acme -nvidia.com/L40S; "
	 "GONE tenant-acme; GONE tenant-root",
	 NULL},
	{"namespace outlives its Tenant",
	 {ADD(NSOBJ("tenant-acme")),
	  ADD(TEN("tenant-root", "acme",
		  "{'gpuclass.cozystack.io/devices':3}")),
	  DEL(TEN("tenant-root", "acme", "{}"))},
	 "TENANT tenant-root; TENANT tenant-acme; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=3; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=null",
	 NULL},
	{"root governs tenant-root",
	 {ADD(TEN("tenant-root", "root",
		  "{'gpuclass.cozystack.io/devices':'1k'}"))},
	 "TENANT tenant-root; "
	 "BUDGET tenant-root gpuclass.cozystack.io/devices=1000",
	 NULL},
	{"nested tenant",
	 {ADD(TEN("tenant-a", "b", "{'gpuclass.cozystack.io/devices':'2'}"))},
	 "TENANT tenant-root; TENANT tenant-a; TENANT tenant-a-b; "
	 "BUDGET tenant-a-b gpuclass.cozystack.io/devices=2",
	 NULL},
	{"not a tenant namespace",
	 {ADD(TEN("default", "x", "{'gpuclass.cozystack.io/devices':'2'}"))},
	 "NOTE NotATenant",
	 NULL},
	{"invalid values bind nothing",
	 {ADD(TEN("tenant-root", "acme",
		  "{'h100.gpuclass.cozystack.io/devices':'1.5','gpuclass."
		  "cozystack.io/devices':8,'requests.nvidia.com/H100':'-1'}"))},
	 "TENANT tenant-root; TENANT tenant-acme; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=8; "
	 "NOTE InvalidBudget",
	 NULL},
	{"invalid keys",
	 {ADD(TEN("tenant-root", "acme",
		  "{'requests.h100.gpuclass.cozystack.io/devices':'1',"
		  "'gpuclass.cozystack.io/memory':'1'}"))},
	 "TENANT tenant-root; TENANT tenant-acme; NOTE InvalidBudget",
	 NULL},
	{"fixed budget clears the note",
	 {ADD(TEN("tenant-root", "acme",
		  "{'gpuclass.cozystack.io/devices':'500m'}")),
	  MOD(TEN("tenant-root", "acme",
		  "{'gpuclass.cozystack.io/devices':'5'}")),
	  MOD(TEN("tenant-root", "acme",
		  "{'gpuclass.cozystack.io/devices':'500m'}"))},
	 "TENANT tenant-root; TENANT tenant-acme; NOTE InvalidBudget; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=5; "
	 "BUDGET tenant-acme gpuclass.cozystack.io/devices=null; "
	 "NOTE InvalidBudget",
	 NULL},
	{"quotas of the wrong type",
	 {ADD(TEN("tenant-root", "acme", "5"))},
	 "NOTE InvalidObject",
	 NULL},
	{"conflicting Tenants",
	 {ADD(TEN("tenant-a", "b", "{'gpuclass.cozystack.io/devices':'2'}")),
	  ADD(TEN("tenant-root", "a-b",
		  "{'gpuclass.cozystack.io/devices':'9'}"))},
	 "TENANT tenant-root; TENANT tenant-a; TENANT tenant-a-b; "
	 "BUDGET tenant-a-b gpuclass.cozystack.io/devices=2; "
	 "NOTE TenantConflict",
	 NULL},
};

START_TEST(tree_namespaces)
{
	h_run_case(&namespace_cases[_i]);
}
END_TEST

START_TEST(tree_tenants)
{
	h_run_case(&tenant_cases[_i]);
}
END_TEST

/* A holder keeps its node (and the ancestors) alive; the node goes with
 * the last holder when nothing else keeps it. */
START_TEST(tree_holder_keeps_node)
{
	struct h h;
	char *s;

	h_open(&h, CLASSES);
	h_feed(&h, ADD(GPOD("tenant-x-y", "p", "u1", "n1", "nvidia.com/H100",
			    "1")));
	h_feed(&h, ADD(NSOBJ("tenant-x")));
	h_expect(&h,
		 "TENANT tenant-root; TENANT tenant-x; TENANT tenant-x-y; "
		 "RESERVE Pod tenant-x-y/p#u1 h100 0>1; "
		 "ALLOC Pod tenant-x-y/p#u1 h100 0>1 @n1",
		 "pod creates its nodes");
	s = h_state(&h, "tenant-x", "subtreeReserved");
	ck_assert_str_eq(s, "{\"h100\":1}");
	free(s);
	h_feed(&h, DEL(GPOD("tenant-x-y", "p", "u1", "n1", "nvidia.com/H100",
			    "1")));
	h_expect(&h,
		 "FREE Pod tenant-x-y/p#u1 h100 1>0 @n1; "
		 "RELEASE Pod tenant-x-y/p#u1 h100 1>0; GONE tenant-x-y",
		 "namespace tenant-x stays");
	h_feed(&h, DEL(NSOBJ("tenant-x")));
	h_expect(&h, "GONE tenant-x; GONE tenant-root", "then it goes");
	h_close(&h);
}
END_TEST

/* The same stream twice adds nothing (DESIGN 4.1 "only on change"). */
START_TEST(tree_idempotent)
{
	static const char *const lines[] = {
		ADD(NSOBJ("tenant-root")),
		ADD(NSOBJ("tenant-a")),
		ADD(TEN("tenant-root", "a", RQ_FULL)),
		ADD(VMI("tenant-a", "vm", "v1",
			"[{'class':'h100','count':2}]")),
		ADD(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/L40S", "1")),
		ADD(NODE("n1", "{'nvidia.com/L40S':'4'}", "")),
	};
	struct h h;
	char *first;

	h_open(&h, CLASSES);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		h_feed(&h, lines[i]);
	first = h_take(&h);
	ck_assert_ptr_nonnull(strstr(first, "RESERVE VMInstance"));
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		h_feed(&h, lines[i]);
	h_expect(&h, "", "second time");
	free(first);
	h_close(&h);
}
END_TEST

/* The engine's map takes a key only once (ingest__smap_put's precondition,
 * asserted even when the two values are different objects); after a delete the
 * key may come back. */
static const char *str_key(const void *v)
{
	return v;
}

START_TEST(tree_smap_put_twice)
{
	struct smap m;
	char a[] = "tenant-a", b[] = "tenant-a", c[16];

	ingest__smap_init(&m, str_key);
	for (int i = 0; i < 40; i++) {
		char *k = malloc(16);

		snprintf(k, 16, "ns-%d", i);
		ingest__smap_put(&m, k);
	}
	ingest__smap_put(&m, a);
	ingest__smap_del(&m, a);
	ingest__smap_put(&m, a);
	ck_assert_ptr_eq(ingest__smap_get(&m, "tenant-a"), a);
	snprintf(c, sizeof(c), "ns-%d", 17);
	ck_assert_ptr_nonnull(ingest__smap_get(&m, c));
	ingest__smap_put(&m, b); /* aborts */
	ck_abort_msg("smap_put took a key twice");
}
END_TEST

INGEST_PART(tree)
{
	TCase *tc = tcase_create("tree_namespaces");

	tcase_add_loop_test(tc, tree_namespaces, 0,
			    sizeof(namespace_cases) /
				    sizeof(namespace_cases[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("tree_tenants");
	tcase_add_loop_test(tc, tree_tenants, 0,
			    sizeof(tenant_cases) / sizeof(tenant_cases[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("tree_nodes");
	tcase_add_test(tc, tree_holder_keeps_node);
	tcase_add_test(tc, tree_idempotent);
	tcase_add_test_raise_signal(tc, tree_smap_put_twice, SIGABRT);
	suite_add_tcase(s, tc);
}
