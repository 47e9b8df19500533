/*
 * Nodes (DESIGN 2.4, Appendix A "Nodes") and the class table (Appendix A
 * "Class table"): capacity and serving become NODE events only for classes
 * with capacity before or after; a valid gpu-classes ConfigMap replaces the
 * table (CLASS events, then every cached holder, node and Tenant mapped
 * again); an invalid or deleted one leaves it.
 */
#include "tests/ingest_tests.h"

#define READY_NOT                                                           \
	"{'apiVersion':'v1','kind':'Node','metadata':{'name':'n1'},'spec':" \
	"{},'status':{'allocatable':{'nvidia.com/H100':'8'},'conditions':"  \
	"[{'type':'Ready','status':'False'}]}}"

static const struct h_case node_cases[] = {
	{"capacity and serving",
	 {ADD(NODE("n1", "{'nvidia.com/H100':'8','cpu':'64'}", ""))},
	 "NODE n1 exists; NODE n1 h100 8 serves",
	 NULL},
	{"a taint only the class tolerates",
	 {ADD(NODE("n1", "{'nvidia.com/H100':'8','nvidia.com/L40S':'2'}",
		   "'taints':[{'key':'gpu','effect':'NoSchedule'}]"))},
	 "NODE n1 exists; NODE n1 h100 8 serves; NODE n1 l40s 2 -",
	 NULL},
	{"cordoned",
	 {ADD(NODE("n1", "{'nvidia.com/H100':'8'}", "")),
	  MOD(NODE("n1", "{'nvidia.com/H100':'8'}", "'unschedulable':true"))},
	 "NODE n1 exists; NODE n1 h100 8 serves; NODE n1 h100 8 -",
	 NULL},
	{"not ready", {ADD(READY_NOT)}, "NODE n1 exists; NODE n1 h100 8 -", NULL},
	{"capacity changes, then the node goes",
	 {ADD(NODE("n1", "{'nvidia.com/H100':'8'}", "")),
	  MOD(NODE("n1",
		   "{'nvidia.com/H100':'4','nvidia.com/L40S':'1',"
		   "'nvidia.com/L40S_SHARED':'2'}",
		   "")),
	  DEL(NODE("n1", "{}", ""))},
	 "NODE n1 exists; NODE n1 h100 8 serves; NODE n1 h100 4 serves; "
	 "NODE n1 l40s 3 serves; NODE n1 h100 0 -; NODE n1 l40s 0 -; "
	 "NODE n1 gone",
	 NULL},
	{"no capacity: it exists, and serving is no event",
	 {ADD(NODE("n1", "{'cpu':'4'}", "")),
	  MOD(NODE("n1", "{'cpu':'4'}", "'unschedulable':true"))},
	 "NODE n1 exists",
	 NULL},
	{"invalid allocatable counts 0",
	 {ADD(NODE("n1", "{'nvidia.com/H100':'x','nvidia.com/L40S':'1'}", ""))},
	 "NODE n1 exists; NODE n1 l40s 1 serves; NOTE InvalidObject",
	 NULL},
};

START_TEST(classes_nodes)
{
	h_run_case(&node_cases[_i]);
}
END_TEST

/* A gpu-classes ConfigMap line carrying table (single-quoted JSON). */
static char *cm_line(const char *type, const char *name, const char *table)
{
	char *t = h_dq(table);
	json_t *line =
		json_pack("{ss s{ss ss s{ss ss} s{ss}}}", "type", type,
			  "object", "apiVersion", "v1", "kind", "ConfigMap",
			  "metadata", "namespace", "cozy-system", "name", name,
			  "data", "classes.json", t);
	char *s = json_dumps(line, JSON_COMPACT);

	ck_assert_ptr_nonnull(s);
	json_decref(line);
	free(t);
	return s;
}

static void h_cm(struct h *h, const char *type, const char *name,
		 const char *table)
{
	char *s = cm_line(type, name, table);

	h_raw(h, s, strlen(s));
	free(s);
}

/* h100 unchanged; l40s gone; a100 new and owning nvidia.com/L40S. */
#define TABLE2                                                             \
	"{'classes':[{'name':'h100','deviceClassName':'h100.nvidia.com',"  \
	"'resourceNames':['nvidia.com/H100'],'tolerations':[{'key':'gpu'," \
	"'operator':'Exists','effect':'NoSchedule'}]},{'name':'a100',"     \
	"'resourceNames':['nvidia.com/L40S']}]}"

START_TEST(classes_configmap_remaps)
{
	struct h h;

	h_open(&h, CLASSES);
	h_feed(&h, ADD(VMI("ns", "vm", "v1",
			   "[{'class':'h100'},{'class':'l40s','count':2},"
			   "{'class':'a100'}]")));
	h_feed(&h, ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/L40S", "1")));
	h_feed(&h, ADD(NODE("n1", "{'nvidia.com/L40S':'4'}", "")));
	h_feed(&h, ADD(TEN("tenant-root", "a",
			   "{'limits.nvidia.com/L40S':'1','l40s.gpuclass."
			   "cozystack.io/devices':'3'}")));
	h_expect(&h,
		 "NOTE UnknownClass; RESERVE VMInstance ns/vm#v1 h100 0>1; "
		 "RESERVE VMInstance ns/vm#v1 l40s 0>2; "
		 "RESERVE Pod ns/p#u1 l40s 0>1; "
		 "ALLOC Pod ns/p#u1 l40s 0>1 @n1; NODE n1 exists; "
		 "NODE n1 l40s 4 serves; TENANT tenant-root; TENANT tenant-a; "
		 "BUDGET tenant-a l40s.gpuclass.cozystack.io/devices=3; "
		 "RAWKEY tenant-a +nvidia.com/L40S",
		 "before");
	h_cm(&h, "ADDED", "gpu-classes", TABLE2);
	h_expect(&h,
		 "CLASS -l40s; CLASS a100; "
		 "RELEASE VMInstance ns/vm#v1 l40s 2>0; "
		 "RESERVE VMInstance ns/vm#v1 a100 0>1; "
		 "FREE Pod ns/p#u1 l40s 1>0 @n1; RELEASE Pod ns/p#u1 l40s 1>0; "
		 "RESERVE Pod ns/p#u1 a100 0>1; "
		 "ALLOC Pod ns/p#u1 a100 0>1 @n1; "
		 "NODE n1 l40s 0 -; NODE n1 a100 4 serves",
		 "after the ConfigMap");
	/* The same table again, a deleted ConfigMap, another ConfigMap: no
	 * change. */
	h_cm(&h, "MODIFIED", "gpu-classes", TABLE2);
	h_cm(&h, "DELETED", "gpu-classes", TABLE2);
	h_cm(&h, "ADDED", "other", CLASSES);
	h_expect(&h, "", "no change");
	h_close(&h);
}
END_TEST

START_TEST(classes_configmap_invalid)
{
	static const char *const bad[] = {
		"{'classes':{}}",
		"{'classes':[{'name':'H100'}]}",
		"{'classes':[{'name':'a','resourceNames':['x']},{'name':'b',"
		"'resourceNames':['x']}]}",
		"{'classes':[{'name':'a','deviceClassName':''}]}",
	};
	struct h h;

	h_open(&h, CLASSES);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h_cm(&h, "ADDED", "gpu-classes", bad[i]);
		h_expect(&h, "NOTE InvalidClassTable", bad[i]);
		/* The same invalid table again: noted once. */
		h_cm(&h, "MODIFIED", "gpu-classes", bad[i]);
		h_expect(&h, "", bad[i]);
	}
	/* Not JSON at all. */
	h_cm(&h, "MODIFIED", "gpu-classes", "{");
	h_expect(&h, "NOTE InvalidClassTable", "not JSON");
	/* The table in force is still CLASSES. */
	ck_assert_uint_eq(ingest__classes(h.in)->n, 2);
	h_feed(&h, ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/L40S", "1")));
	h_expect(&h,
		 "RESERVE Pod ns/p#u1 l40s 0>1; ALLOC Pod ns/p#u1 l40s 0>1 @n1",
		 "old table");
	h_close(&h);
}
END_TEST

/* ingest__set_classes: an empty table releases everything; coverage is
 * evaluated again with the new table. */
START_TEST(classes_set_table)
{
	struct class_table t;
	struct lg_error err = {0};
	struct h h;

	h_open(&h, NULL);
	h_feed(&h, ADD(VMI("ns", "vm1", "v1", "[{'class':'h100'}]")));
	h_feed(&h, ADD(CLAIM("ns", "vm-instance-vm1-gpu1", "c1",
			     "[" EXACT("h100.nvidia.com", "1") "]", "{}")));
	h_expect(&h, "NOTE UnknownClass", "no table yet");
	h_table(&t, CLASSES);
	ck_assert_int_eq(ingest__set_classes(h.in, &t, &err), 0);
	class_table_release(&t);
	h_expect(&h,
		 "CLASS h100; CLASS l40s; "
		 "RESERVE VMInstance ns/vm1#v1 h100 0>1",
		 "classes arrive: the claim is covered");
	class_table_init(&t);
	ck_assert_int_eq(ingest__set_classes(h.in, &t, &err), 0);
	h_expect(&h,
		 "CLASS -h100; CLASS -l40s; NOTE UnknownClass; "
		 "RELEASE VMInstance ns/vm1#v1 h100 1>0",
		 "classes gone");
	h_close(&h);
}
END_TEST

INGEST_PART(classes)
{
	TCase *tc = tcase_create("classes_nodes");

	tcase_add_loop_test(tc, classes_nodes, 0,
			    sizeof(node_cases) / sizeof(node_cases[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("classes_table");
	tcase_add_test(tc, classes_configmap_remaps);
	tcase_add_test(tc, classes_configmap_invalid);
	tcase_add_test(tc, classes_set_table);
	suite_add_tcase(s, tc);
}
