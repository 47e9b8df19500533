/*
 * Tests of model/mapping.c: holder mapping (DESIGN 2.3, Appendix A) and node
 * mapping (2.4). Objects are written with single quotes for readability and
 * turned into JSON by tq().
 */
#include "tests/model_tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sorted by name, the table is a10 (0), h100 (1), l4 (2). */
#define CLASSES                                                            \
	"{'classes':[{'name':'h100','resourceNames':['nvidia.com/GH100']," \
	"'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists',"      \
	"'effect':'NoSchedule'}]},"                                        \
	"{'name':'a10','deviceClassName':'a10.nvidia.com',"                \
	"'resourceNames':['nvidia.com/GA102']},"                           \
	"{'name':'l4','resourceNames':['nvidia.com/AD104','nvidia.com/L4']}]}"

#define META "'metadata':{'namespace':'tenant-a','name':'vm1','uid':'u1'}"
#define VMI(spec)                                                              \
	"{'apiVersion':'apps.cozystack.io/v1alpha1','kind':'VMInstance'," META \
	",'spec':" spec "}"
#define KN(spec)                            \
	"{'apiVersion':'apps.cozystack.io/" \
	"v1alpha1','kind':'KubernetesNodes'," META ",'spec':" spec "}"
#define POD(spec, phase)                                        \
	"{'apiVersion':'v1','kind':'Pod'," META ",'spec':" spec \
	",'status':{'phase':'" phase "'}}"
/* One container with the given resources. */
#define POD1(res, phase)                                                  \
	POD("{'nodeName':'n1','containers':[{'name':'c','resources':" res \
	    "}]}",                                                        \
	    phase)
#define CLAIM(reqs, status)                                               \
	"{'apiVersion':'resource.k8s.io/v1','kind':'ResourceClaim'," META \
	",'spec':{'devices':{'requests':" reqs "}},'status':" status "}"
#define ALLOC(terms) \
	"{'allocation':{'nodeSelector':{'nodeSelectorTerms':" terms "}}}"
#define TERM(fields) "{'matchFields':[" fields "]}"
#define MF(key, op, vals) \
	"{'key':'" key "','operator':'" op "','values':" vals "}"

static void load_classes(struct class_table *t)
{
	struct lg_error e = {0};
	json_t *doc = tq(CLASSES);

	class_table_init(t);
	ck_assert_msg(class_table_parse(t, doc, &e) == 0, "classes: %s", e.msg);
	json_decref(doc);
	ck_assert_uint_eq(t->n, 3);
}

/* "a10=1 h100=2": the units of hm by class name. */
static void render_units(const struct holder_map *hm,
			 const struct class_table *t, char *buf, size_t cap)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < hm->n; i++) {
		ck_assert_uint_lt(hm->units[i].cls, t->n);
		ck_assert_int_gt(hm->units[i].units, 0);
		if (i > 0)
			ck_assert_uint_lt(hm->units[i - 1].cls,
					  hm->units[i].cls);
		off += snprintf(buf + off, cap - off, "%s%s=%lld", i ? " " : "",
				t->classes[hm->units[i].cls].name,
				(long long)hm->units[i].units);
		ck_assert_uint_lt(off, cap);
	}
}

/* "h100,-,a10": the entry classes of hm. */
static void render_entries(const struct holder_map *hm,
			   const struct class_table *t, char *buf, size_t cap)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < hm->n_entries; i++) {
		int c = hm->entry_class[i];

		off += snprintf(buf + off, cap - off, "%s%s", i ? "," : "",
				c < 0 ? "-" : t->classes[c].name);
		ck_assert_uint_lt(off, cap);
	}
}

/* One object to map and what must come out. */
struct hrow {
	const char *obj;
	int rc;
	bool valid;
	const char *units;
	const char *entries; /* NULL: not checked */
	bool unknown;
	const char *node;
	bool allocated;
};

static void check_row(const struct hrow *r, const struct class_table *t)
{
	struct holder_map hm;
	struct lg_error e = {0};
	char buf[512];
	json_t *obj = tq(r->obj);
	int rc = holder_map_object(obj, t, &hm, &e);

	ck_assert_msg(rc == r->rc, "rc %d (%s) want %d: %s", rc, e.msg, r->rc,
		      r->obj);
	if (rc < 0) {
		ck_assert_int_eq(e.code, rc);
		ck_assert_uint_eq(hm.n, 0);
		goto out;
	}
	ck_assert_msg(hm.valid == r->valid, "valid %d (%s): %s", hm.valid,
		      e.msg, r->obj);
	/* An invalid object says why; a valid one leaves err alone. */
	if (!r->valid)
		ck_assert(e.code < 0 && e.msg[0] != '\0');
	else
		ck_assert_int_eq(e.code, 0);
	render_units(&hm, t, buf, sizeof(buf));
	ck_assert_msg(strcmp(buf, r->units) == 0, "units '%s' want '%s': %s",
		      buf, r->units, r->obj);
	if (r->entries != NULL) {
		render_entries(&hm, t, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, r->entries) == 0,
			      "entries '%s' want '%s'", buf, r->entries);
	}
	ck_assert_int_eq(hm.unknown_class, r->unknown);
	ck_assert_str_eq(hm.node, r->node ? r->node : "");
	ck_assert_int_eq(hm.allocated, r->allocated);
	ck_assert_str_eq(hm.ns, "tenant-a");
	ck_assert_str_eq(hm.name, "vm1");
	ck_assert_str_eq(hm.uid, "u1");
out:
	json_decref(obj);
}

static void run_rows(const struct hrow *rows, size_t n, int i)
{
	struct class_table t;

	ck_assert_int_lt(i, (int)n);
	load_classes(&t);
	check_row(&rows[i], &t);
	class_table_release(&t);
}

#define ROWS(name, ...)                                             \
	static const struct hrow name[] = {__VA_ARGS__};            \
	START_TEST(test_##name)                                     \
	{                                                           \
		run_rows(name, sizeof(name) / sizeof(name[0]), _i); \
	}                                                           \
	END_TEST

/* ---------------------------------------------------------------------- */

START_TEST(test_kind_names)
{
	static const struct {
		enum holder_kind k;
		const char *name;
	} rows[] = {
		{HK_VMINSTANCE, "VMInstance"},
		{HK_KUBERNETESNODES, "KubernetesNodes"},
		{HK_POD, "Pod"},
		{HK_RESOURCECLAIM, "ResourceClaim"},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ck_assert_str_eq(model__holder_kind_name(rows[i].k),
				 rows[i].name);
		ck_assert_int_eq(model__holder_kind_parse(rows[i].name),
				 rows[i].k);
	}
	ck_assert_str_eq(model__holder_kind_name(HK_NONE), "");
	ck_assert_str_eq(model__holder_kind_name(HK_MAX), "");
	ck_assert_str_eq(model__holder_kind_name((enum holder_kind) - 1), "");
	ck_assert_int_eq(model__holder_kind_parse("pod"), HK_NONE);
	ck_assert_int_eq(model__holder_kind_parse("Node"), HK_NONE);
	ck_assert_int_eq(model__holder_kind_parse(""), HK_NONE);
	ck_assert_int_eq(model__holder_kind_parse(NULL), HK_NONE);
}
END_TEST

/* Objects that are not ours, or have no name: not mapped at all. */
static const struct {
	const char *obj;
	int rc;
} object_rows[] = {
	{"{'apiVersion':'apps.cozystack.io/v1','kind':'VMInstance'," META "}",
	 LG_EUNKNOWN},
	{"{'apiVersion':'apps/v1','kind':'Pod'," META "}", LG_EUNKNOWN},
	{"{'apiVersion':'v1','kind':'Deployment'," META "}", LG_EUNKNOWN},
	{"{'apiVersion':'v1','kind':'Node'," META "}", LG_EUNKNOWN},
	{"{'apiVersion':'resource.k8s.io/v1beta1','kind':'ResourceClaim'," META
	 "}",
	 LG_EUNKNOWN},
	{"{'apiVersion':'resource.k8s.io/v1beta2','kind':'ResourceClaim'," META
	 "}",
	 LG_EUNKNOWN},
	{"{'apiVersion':'v1','kind':'pod'," META "}", LG_EUNKNOWN},
	{"{'kind':'Pod'," META "}", LG_EUNKNOWN},
	{"{'apiVersion':'v1'," META "}", LG_EUNKNOWN},
	{"{'apiVersion':1,'kind':'Pod'," META "}", LG_EUNKNOWN},
	{"[1,2]", LG_EUNKNOWN},
	{"'Pod'", LG_EUNKNOWN},
	{"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'}}", LG_EINVAL},
	{"{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns'}}",
	 LG_EINVAL},
	{"{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	 "'name':''}}",
	 LG_EINVAL},
	{"{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':1,"
	 "'name':'p'}}",
	 LG_EINVAL},
	{"{'apiVersion':'v1','kind':'Pod','metadata':'x'}", LG_EINVAL},
	{"{'apiVersion':'v1','kind':'Pod'}", LG_EINVAL},
	{"{'apiVersion':'apps.cozystack.io/v1alpha1','kind':'KubernetesNodes',"
	 "'metadata':{'name':'k'},'spec':{}}",
	 LG_EINVAL},
};

START_TEST(test_object_kinds)
{
	struct class_table t;
	struct holder_map hm;
	struct lg_error e = {0};
	json_t *obj = tq(object_rows[_i].obj);

	load_classes(&t);
	ck_assert_int_eq(holder_map_object(obj, &t, &hm, &e),
			 object_rows[_i].rc);
	ck_assert_int_eq(e.code, object_rows[_i].rc);
	ck_assert(e.msg[0] != '\0');
	ck_assert(!hm.valid);
	ck_assert_uint_eq(hm.n, 0);
	json_decref(obj);
	class_table_release(&t);
}
END_TEST

/* Strings are borrowed from the object; a missing uid is "". */
START_TEST(test_object_borrowed)
{
	struct class_table t;
	struct holder_map hm;
	json_t *obj = tq("{'apiVersion':'v1','kind':'Pod','metadata':"
			 "{'namespace':'ns1','name':'p1'},'spec':{}}");

	load_classes(&t);
	ck_assert_int_eq(holder_map_object(obj, &t, &hm, NULL), 0);
	ck_assert(hm.valid);
	ck_assert_int_eq(hm.kind, HK_POD);
	ck_assert_ptr_eq(
		hm.ns, json_string_value(json_object_get(
			       json_object_get(obj, "metadata"), "namespace")));
	ck_assert_str_eq(hm.name, "p1");
	ck_assert_str_eq(hm.uid, "");
	ck_assert_uint_eq(hm.n, 0);
	json_decref(obj);
	class_table_release(&t);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* VMInstance.                                                             */

ROWS(vmi_rows,
     /* Class entries, default count, units per class. */
     {VMI("{'gpus':[{'class':'h100','count':2},{'class':'a10'}]}"), 0, true,
      "a10=1 h100=2", "h100,a10", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100'},{'class':'h100','count':3}]}"), 0, true,
      "h100=4", "h100,h100", false, NULL, false},
     /* Raw entries reserve nothing; class null is a raw entry. */
     {VMI("{'gpus':[{'name':'nvidia.com/GH100'}]}"), 0, true, "", "-", false,
      NULL, false},
     {VMI("{'gpus':[{'class':null,'name':'x'},{'class':'l4'}]}"), 0, true,
      "l4=1", "-,l4", false, NULL, false},
     /* gpus absent or null is []. */
     {VMI("{}"), 0, true, "", "", false, NULL, false},
     {VMI("{'gpus':null}"), 0, true, "", "", false, NULL, false},
     {VMI("{'gpus':[]}"), 0, true, "", "", false, NULL, false},
     /* Counts: numbers, integral reals, quantity strings. */
     {VMI("{'gpus':[{'class':'h100','count':null}]}"), 0, true, "h100=1",
      "h100", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':2.0}]}"), 0, true, "h100=2", "h100",
      false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'2'}]}"), 0, true, "h100=2", "h100",
      false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'1k'}]}"), 0, true, "h100=1000",
      "h100", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'2Ki'}]}"), 0, true, "h100=2048",
      "h100", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'3000m'}]}"), 0, true, "h100=3",
      "h100", false, NULL, false},
     /* Bad counts make the whole spec invalid. */
     {VMI("{'gpus':[{'class':'a10'},{'class':'h100','count':0}]}"), 0, false,
      "", "", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':-1}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':1.5}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'0'}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'1.5'}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'500m'}]}"), 0, false, "", "",
      false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':' 2'}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':'two'}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':true}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':[1]}]}"), 0, false, "", "", false,
      NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':{}}]}"), 0, false, "", "", false,
      NULL, false},
     /* A bad count on a raw entry is still a bad count. */
     {VMI("{'gpus':[{'name':'nvidia.com/GH100','count':0}]}"), 0, false, "", "",
      false, NULL, false},
     /* Overflow of a class sum. */
     {VMI("{'gpus':[{'class':'h100','count':'9223372036854775807'},"
	  "{'class':'h100'}]}"),
      0, false, "", "", false, NULL, false},
     /* DESIGN 2.3 "Bounds": at most 2^31-1 units of a class. */
     {VMI("{'gpus':[{'class':'h100','count':'9223372036854775807'},"
	  "{'class':'a10'}]}"),
      0, false, "", "", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':2147483647},{'class':'a10'}]}"),
      0, true, "a10=1 h100=2147483647", "h100,a10", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':2147483648}]}"), 0, false, "", "",
      false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':2147483646},{'class':'h100'}]}"),
      0, true, "h100=2147483647", "h100,h100", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100','count':2147483647},{'class':'h100'}]}"),
      0, false, "", "", false, NULL, false},
     /* Unknown classes reserve 0; the other entries still count. */
     {VMI("{'gpus':[{'class':'v100','count':4},{'class':'h100'}]}"), 0, true,
      "h100=1", "-,h100", true, NULL, false},
     {VMI("{'gpus':[{'class':''}]}"), 0, true, "", "-", true, NULL, false},
     {VMI("{'gpus':[{'class':'H100'}]}"), 0, true, "", "-", true, NULL, false},
     /* Wrong shapes. */
     {VMI("[]"), 0, false, "", "", false, NULL, false},
     {VMI("null"), 0, false, "", "", false, NULL, false},
     {VMI("'spec'"), 0, false, "", "", false, NULL, false},
     {VMI("{'gpus':{}}"), 0, false, "", "", false, NULL, false},
     {VMI("{'gpus':'h100'}"), 0, false, "", "", false, NULL, false},
     {VMI("{'gpus':[{'class':'h100'},5]}"), 0, false, "", "", false, NULL,
      false},
     {VMI("{'gpus':[null]}"), 0, false, "", "", false, NULL, false},
     {VMI("{'gpus':[{'class':5}]}"), 0, false, "", "", false, NULL, false},
     {VMI("{'gpus':[{'class':['h100']}]}"), 0, false, "", "", false, NULL,
      false},
     /* An unknown class before an invalid entry: invalid wins. */
     {VMI("{'gpus':[{'class':'v100'},{'class':'h100','count':0}]}"), 0, false,
      "", "", false, NULL, false},
     /* A VMInstance's maxReplicas is ignored, even when bad. */
     {VMI("{'maxReplicas':3,'gpus':[{'class':'h100','count':2}]}"), 0, true,
      "h100=2", "h100", false, NULL, false},
     {VMI("{'maxReplicas':'x','gpus':[{'class':'h100'}]}"), 0, true, "h100=1",
      "h100", false, NULL, false}, )

/* The entry bound: HOLDER_MAX_ENTRIES entries map, one more does not. */
START_TEST(test_vmi_entry_limit)
{
	struct class_table t;
	struct holder_map hm;
	struct lg_error e = {0};
	json_t *spec = json_object(), *gpus = json_array();
	size_t n = HOLDER_MAX_ENTRIES + (size_t)_i;
	int64_t half = HOLDER_MAX_ENTRIES / 2;

	load_classes(&t);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(gpus, json_pack("{s:s}", "class",
						      i % 2 ? "a10" : "h100"));
	json_object_set_new(spec, "gpus", gpus);
	ck_assert_int_eq(
		model__holder_map_spec(HK_VMINSTANCE, spec, &t, &hm, &e), 0);
	if (_i == 0) {
		ck_assert(hm.valid);
		ck_assert_uint_eq(hm.n_entries, HOLDER_MAX_ENTRIES);
		ck_assert_int_eq(model__holder_map_units(&hm, 0), half);
		ck_assert_int_eq(model__holder_map_units(&hm, 1), half);
		ck_assert_int_eq(hm.entry_class[HOLDER_MAX_ENTRIES - 1], 0);
	} else {
		ck_assert(!hm.valid);
		ck_assert_int_eq(e.code, LG_ELIMIT);
		ck_assert_uint_eq(hm.n, 0);
	}
	json_decref(spec);
	class_table_release(&t);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* KubernetesNodes.                                                        */

ROWS(kn_rows,
     /* maxReplicas absent or null is 10. */
     {KN("{'gpus':[{'class':'h100','count':2}]}"), 0, true, "h100=20", "h100",
      false, NULL, false},
     {KN("{'maxReplicas':null,'gpus':[{'class':'h100'},{'class':'l4'}]}"), 0,
      true, "h100=10 l4=10", "h100,l4", false, NULL, false},
     {KN("{'maxReplicas':3,'gpus':[{'class':'h100','count':'2'},"
	 "{'class':'a10'}]}"),
      0, true, "a10=3 h100=6", "h100,a10", false, NULL, false},
     {KN("{'maxReplicas':1,'gpus':[{'class':'h100'}]}"), 0, true, "h100=1",
      "h100", false, NULL, false},
     /* Zero replicas reserve nothing but are valid. */
     {KN("{'maxReplicas':0,'gpus':[{'class':'h100','count':4}]}"), 0, true, "",
      "h100", false, NULL, false},
     /* Raw entries and unknown classes, as for a VMInstance. */
     {KN("{'maxReplicas':2,'gpus':[{'name':'nvidia.com/GH100'},"
	 "{'class':'v100'},{'class':'a10'}]}"),
      0, true, "a10=2", "-,-,a10", true, NULL, false},
     /* Bad maxReplicas. */
     {KN("{'maxReplicas':'3','gpus':[{'class':'h100'}]}"), 0, false, "", "",
      false, NULL, false},
     {KN("{'maxReplicas':3.5,'gpus':[{'class':'h100'}]}"), 0, false, "", "",
      false, NULL, false},
     {KN("{'maxReplicas':3.0,'gpus':[{'class':'h100'}]}"), 0, false, "", "",
      false, NULL, false},
     {KN("{'maxReplicas':-1,'gpus':[{'class':'h100'}]}"), 0, false, "", "",
      false, NULL, false},
     {KN("{'maxReplicas':true,'gpus':[{'class':'h100'}]}"), 0, false, "", "",
      false, NULL, false},
     {KN("{'maxReplicas':{},'gpus':[]}"), 0, false, "", "", false, NULL, false},
     /* Bad entries. */
     {KN("{'maxReplicas':2,'gpus':[{'class':'h100','count':0}]}"), 0, false, "",
      "", false, NULL, false},
     {KN("{'gpus':7}"), 0, false, "", "", false, NULL, false},
     {KN("null"), 0, false, "", "", false, NULL, false},
     /* units x maxReplicas overflow. */
     {KN("{'gpus':[{'class':'h100','count':'1000000000000000000'}]}"), 0, false,
      "", "", false, NULL, false},
     {KN("{'maxReplicas':9223372036854775807,'gpus':[{'class':'h100'}]}"), 0,
      false, "", "", false, NULL, false},
     /* count x maxReplicas at and above 2^31-1. */
     {KN("{'maxReplicas':2147483647,'gpus':[{'class':'h100'}]}"), 0, true,
      "h100=2147483647", "h100", false, NULL, false},
     {KN("{'maxReplicas':1073741824,'gpus':[{'class':'h100','count':2}]}"), 0,
      false, "", "", false, NULL, false},
     {KN("{'maxReplicas':9223372036854775807,'gpus':[{'class':'h100',"
	 "'count':2}]}"),
      0, false, "", "", false, NULL, false}, )

/* ---------------------------------------------------------------------- */
/* Pods.                                                                   */

#define GH(v) "{'requests':{'nvidia.com/GH100':'" v "'}}"

ROWS(pod_rows,
     {POD1(GH("2"), "Running"), 0, true, "h100=2", NULL, false, "n1", true},
     {POD1(GH("2"), "Pending"), 0, true, "h100=2", NULL, false, "n1", true},
     {POD1(GH("1"), "Unknown"), 0, true, "h100=1", NULL, false, "n1", true},
     /* A limits-only GPU request counts (API-server defaulting). */
     {POD1("{'limits':{'nvidia.com/GH100':'3','cpu':'1'}}", "Running"), 0, true,
      "h100=3", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/GA102':'1'},"
	   "'limits':{'nvidia.com/GA102':'1'}}",
	   "Running"),
      0, true, "a10=1", NULL, false, "n1", true},
     /* A class with two raw names sums them; Value() per resource, then
      * the sum (1 + 1, not ceil(0.5 + 0.5)). */
     {POD1("{'requests':{'nvidia.com/AD104':'1','nvidia.com/L4':'2'}}",
	   "Running"),
      0, true, "l4=3", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/AD104':'500m','nvidia.com/L4':'500m'}}",
	   "Running"),
      0, true, "l4=2", NULL, false, "n1", true},
     /* Several classes at once. */
     {POD1("{'requests':{'nvidia.com/GA102':'1','nvidia.com/GH100':'2'}}",
	   "Running"),
      0, true, "a10=1 h100=2", NULL, false, "n1", true},
     /* No GPU: valid, holds nothing. */
     {POD1("{'requests':{'cpu':'100m','memory':'1Gi'}}", "Running"), 0, true,
      "", NULL, false, "n1", true},
     {POD("{}", "Running"), 0, true, "", NULL, false, NULL, true},
     /* Terminal pods hold 0 but are valid. */
     {POD1(GH("2"), "Succeeded"), 0, true, "", NULL, false, "n1", true},
     {POD1(GH("2"), "Failed"), 0, true, "", NULL, false, "n1", true},
     /* Init containers: max(sum of containers, each init container). */
     {POD("{'nodeName':'n1','initContainers':[{'name':'i',"
	  "'resources':" GH("4") "}],'containers':[{'name':'c',"
				 "'resources':" GH("1") "}]}",
	  "Running"),
      0, true, "h100=4", NULL, false, "n1", true},
     /* Sidecars run beside the containers and the later init containers:
      * max(1 + 1, 2 + 1) = 3. */
     {POD("{'nodeName':'n1','initContainers':[{'name':'s',"
	  "'restartPolicy':'Always','resources':" GH(
		  "1") "},"
		       "{'name':'i','resources':" GH(
			       "2") "}],'containers':[{'name':'c',"
				    "'resources':" GH("1") "}]}",
	  "Running"),
      0, true, "h100=3", NULL, false, "n1", true},
     /* Overhead is added. */
     {POD("{'nodeName':'n1','overhead':{'nvidia.com/GH100':'1'},"
	  "'containers':[{'name':'c','resources':" GH("1") "}]}",
	  "Running"),
      0, true, "h100=2", NULL, false, "n1", true},
     /* Pod-level resources never count for GPUs. */
     {POD("{'nodeName':'n1','resources':{'requests':"
	  "{'nvidia.com/GH100':'4'}},'containers':[{'name':'c',"
	  "'resources':" GH("1") "}]}",
	  "Running"),
      0, true, "h100=1", NULL, false, "n1", true},
     /* Negative or unparsable quantities anywhere: the pod holds 0. */
     {POD1(GH("-1"), "Running"), 0, false, "", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/GH100':'1','cpu':'-100m'}}", "Running"), 0,
      false, "", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/GH100':'1'},'limits':{'memory':'x'}}",
	   "Running"),
      0, false, "", NULL, false, "n1", true},
     {POD1("{'limits':{'nvidia.com/GH100':'1','cpu':'-1'}}", "Running"), 0,
      false, "", NULL, false, "n1", true},
     {POD("{'initContainers':[{'name':'i','resources':{'limits':"
	  "{'cpu':'-1'}}}],'containers':[{'name':'c','resources':" GH(
		  "1") "}]}",
	  "Running"),
      0, false, "", NULL, false, NULL, true},
     {POD("{'initContainers':[{'name':'i','resources':{'requests':"
	  "{'cpu':'1..'}}}],'containers':[{'name':'c','resources':" GH(
		  "1") "}]}",
	  "Running"),
      0, false, "", NULL, false, NULL, true},
     {POD("{'overhead':{'nvidia.com/GH100':'-1'},'containers':[{'name':'c',"
	  "'resources':" GH("2") "}]}",
	  "Running"),
      0, false, "", NULL, false, NULL, true},
     {POD1(GH(" 1"), "Running"), 0, false, "", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/GH100':2}}", "Running"), 0, false, "",
      NULL, false, "n1", true},
     {POD1("{'limits':{'nvidia.com/GH100':null}}", "Running"), 0, false, "",
      NULL, false, "n1", true},
     /* A Value() overflow, and an overflowing sum over raw names. */
     {POD1(GH("10E"), "Running"), 0, false, "", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/AD104':'9223372036854775807',"
	   "'nvidia.com/L4':'1'}}",
	   "Running"),
      0, false, "", NULL, false, "n1", true},
     /* A pod's per-class sum over raw names at and above 2^31-1. */
     {POD1("{'requests':{'nvidia.com/AD104':'2147483646',"
	   "'nvidia.com/L4':'1'}}",
	   "Running"),
      0, true, "l4=2147483647", NULL, false, "n1", true},
     {POD1("{'requests':{'nvidia.com/AD104':'2147483647',"
	   "'nvidia.com/L4':'1'}}",
	   "Running"),
      0, false, "", NULL, false, "n1", true},
     /* Wrong shapes. */
     {POD("{'containers':{}}", "Running"), 0, false, "", NULL, false, NULL,
      true},
     {POD("{'nodeName':5}", "Running"), 0, false, "", NULL, false, NULL,
      true}, )

/* ---------------------------------------------------------------------- */
/* ResourceClaims.                                                         */

#define EX(body) "{'name':'r','exactly':{" body "}}"
#define A10	 "'deviceClassName':'a10.nvidia.com'"

ROWS(claim_rows,
     /* ExactCount with default and explicit counts. */
     {CLAIM("[" EX(A10) "]", "{}"), 0, true, "a10=1", NULL, false, NULL, false},
     {CLAIM("[" EX(A10 ",'count':2") "]", "{}"), 0, true, "a10=2", NULL, false,
      NULL, false},
     {CLAIM("[" EX(A10 ",'allocationMode':'ExactCount','count':3") "]", "{}"),
      0, true, "a10=3", NULL, false, NULL, false},
     {CLAIM("[" EX(A10 ",'count':null") "]", "{}"), 0, true, "a10=1", NULL,
      false, NULL, false},
     /* deviceClassName defaults to the class name (h100). */
     {CLAIM("[" EX("'deviceClassName':'h100'") "]", "{}"), 0, true, "h100=1",
      NULL, false, NULL, false},
     /* All is 32 and ignores count; an unknown mode counts 0. */
     {CLAIM("[" EX(A10 ",'allocationMode':'All'") "]", "{}"), 0, true, "a10=32",
      NULL, false, NULL, false},
     {CLAIM("[" EX(A10 ",'allocationMode':'All','count':0") "]", "{}"), 0, true,
      "a10=32", NULL, false, NULL, false},
     {CLAIM("[" EX(A10 ",'allocationMode':'Some','count':5") "]", "{}"), 0,
      true, "", NULL, false, NULL, false},
     {CLAIM("[" EX(A10 ",'allocationMode':'exactcount'") "]", "{}"), 0, true,
      "", NULL, false, NULL, false},
     /* Units add up over requests per class. */
     {CLAIM("[" EX(A10) "," EX(A10 ",'count':3") "," EX(
		    "'deviceClassName':'h100','count':2") "]",
	    "{}"),
      0, true, "a10=4 h100=2", NULL, false, NULL, false},
     /* Unknown device classes are ignored. */
     {CLAIM("[" EX("'deviceClassName':'gpu.example.com','count':4") "]", "{}"),
      0, true, "", NULL, false, NULL, false},
     {CLAIM("[" EX("'deviceClassName':'gpu.example.com'") "," EX(A10) "]",
	    "{}"),
      0, true, "a10=1", NULL, false, NULL, false},
     {CLAIM("[" EX("'deviceClassName':'a10'") "]", "{}"), 0, true, "", NULL,
      false, NULL, false},
     {CLAIM("[" EX("'count':2") "]", "{}"), 0, true, "", NULL, false, NULL,
      false},
     /* A bad ExactCount count voids the whole claim. */
     {CLAIM("[" EX("'deviceClassName':'h100'") "," EX(A10 ",'count':0") "]",
	    "{}"),
      0, false, "", NULL, false, NULL, false},
     {CLAIM("[" EX(A10 ",'count':-2") "]", "{}"), 0, false, "", NULL, false,
      NULL, false},
     {CLAIM("[" EX(A10 ",'count':'2'") "]", "{}"), 0, false, "", NULL, false,
      NULL, false},
     {CLAIM("[" EX(A10 ",'count':1.5") "]", "{}"), 0, false, "", NULL, false,
      NULL, false},
     {CLAIM("[" EX(A10 ",'count':true") "]", "{}"), 0, false, "", NULL, false,
      NULL, false},
     /* firstAvailable: per class the largest subrequest count. */
     {CLAIM("[{'name':'r','firstAvailable':[{'name':'a'," A10 ",'count':2},"
	    "{'name':'b'," A10 ",'count':4},{'name':'c',"
	    "'deviceClassName':'h100'}]}]",
	    "{}"),
      0, true, "a10=4 h100=1", NULL, false, NULL, false},
     {CLAIM("[{'name':'r','firstAvailable':[{'name':'a'," A10
	    ",'allocationMode':'All'},{'name':'b'," A10
	    ",'count':4}]}," EX(A10) "]",
	    "{}"),
      0, true, "a10=33", NULL, false, NULL, false},
     {CLAIM("[{'name':'r','firstAvailable':[{'name':'a',"
	    "'deviceClassName':'x.example.com','count':8}]}]",
	    "{}"),
      0, true, "", NULL, false, NULL, false},
     {CLAIM("[{'name':'r','firstAvailable':[{'name':'a'," A10 ",'count':0}]}]",
	    "{}"),
      0, false, "", NULL, false, NULL, false},
     {CLAIM("[{'name':'r','firstAvailable':{}}]", "{}"), 0, false, "", NULL,
      false, NULL, false},
     {CLAIM("[{'name':'r','firstAvailable':[7]}]", "{}"), 0, false, "", NULL,
      false, NULL, false},
     /* Wrong shapes. */
     {CLAIM("{}", "{}"), 0, false, "", NULL, false, NULL, false},
     {CLAIM("[5]", "{}"), 0, false, "", NULL, false, NULL, false},
     {CLAIM("[{'name':'r','exactly':[]}]", "{}"), 0, false, "", NULL, false,
      NULL, false},
     {CLAIM("[" EX("'deviceClassName':5") "]", "{}"), 0, false, "", NULL, false,
      NULL, false},
     {CLAIM("[" EX(A10 ",'allocationMode':1") "]", "{}"), 0, false, "", NULL,
      false, NULL, false},
     {CLAIM("null", "{}"), 0, true, "", NULL, false, NULL, false},
     {CLAIM("[]", "{}"), 0, true, "", NULL, false, NULL, false},
     /* Allocation and its node. */
     {CLAIM("[" EX(A10) "]", "{'allocation':{}}"), 0, true, "a10=1", NULL,
      false, NULL, true},
     {CLAIM("[" EX(A10) "]", "{'allocation':null}"), 0, true, "a10=1", NULL,
      false, NULL, false},
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "['n1']")) "]")),
      0, true, "a10=1", NULL, false, "n1", true},
     /* Two values, in one entry or over two terms: no node. */
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "['n1','n2']")) "]")),
      0, true, "a10=1", NULL, false, NULL, true},
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "['n1']")) "," TERM(
		    MF("metadata.name", "In", "['n2']")) "]")),
      0, true, "a10=1", NULL, false, NULL, true},
     /* The same node named twice is still one node. */
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "['n1']")) "," TERM(
		    MF("metadata.name", "In", "['n1']")) "]")),
      0, true, "a10=1", NULL, false, "n1", true},
     /* Wrong operator or key: not a node value. */
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "NotIn", "['n1']")) "]")),
      0, true, "a10=1", NULL, false, NULL, true},
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "NotIn", "['n2']") "," MF(
		    "metadata.name", "In", "['n1']")) "]")),
      0, true, "a10=1", NULL, false, "n1", true},
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("spec.name", "In", "['n1']")) "]")),
      0, true, "a10=1", NULL, false, NULL, true},
     /* matchExpressions do not name the node. */
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[{'matchExpressions':[" MF("metadata.name", "In",
					      "['n2']") "]}]")),
      0, true, "a10=1", NULL, false, NULL, true},
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "[]")) "]")),
      0, true, "a10=1", NULL, false, NULL, true},
     {CLAIM("[" EX(A10) "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "['n1',7]")) "]")),
      0, true, "a10=1", NULL, false, NULL, true},
     {CLAIM("[" EX(A10) "]", ALLOC("'x'")), 0, true, "a10=1", NULL, false, NULL,
      true},
     /* An allocated claim for another vendor holds nothing of ours. */
     {CLAIM("[" EX("'deviceClassName':'x.example.com'") "]",
	    ALLOC("[" TERM(MF("metadata.name", "In", "['n1']")) "]")),
      0, true, "", NULL, false, "n1", true}, )

/* ---------------------------------------------------------------------- */
/* Bare specs (admission).                                                 */

START_TEST(test_spec_kinds)
{
	static const struct {
		enum holder_kind kind;
		const char *spec;
		int rc;
		bool valid;
		int64_t h100;
	} rows[] = {
		{HK_VMINSTANCE, "{'gpus':[{'class':'h100','count':2}]}", 0,
		 true, 2},
		{HK_KUBERNETESNODES, "{'gpus':[{'class':'h100','count':2}]}", 0,
		 true, 20},
		{HK_KUBERNETESNODES, "{'maxReplicas':'1','gpus':[]}", 0, false,
		 0},
		{HK_VMINSTANCE, "null", 0, false, 0},
		{HK_VMINSTANCE, "[]", 0, false, 0},
		{HK_POD, "{}", LG_EINVAL, false, 0},
		{HK_RESOURCECLAIM, "{}", LG_EINVAL, false, 0},
		{HK_NONE, "{}", LG_EINVAL, false, 0},
		{HK_MAX, "{}", LG_EINVAL, false, 0},
	};
	struct class_table t;
	struct holder_map hm;
	struct lg_error e = {0};
	json_t *spec;

	load_classes(&t);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		e.code = 0;
		spec = tq(rows[i].spec);
		ck_assert_int_eq(
			model__holder_map_spec(rows[i].kind, spec, &t, &hm, &e),
			rows[i].rc);
		ck_assert_msg(hm.valid == rows[i].valid, "row %zu", i);
		ck_assert_int_eq(model__holder_map_units(&hm, 1), rows[i].h100);
		if (!rows[i].valid)
			ck_assert_int_lt(e.code, 0);
		else
			ck_assert_int_eq(hm.kind, rows[i].kind);
		json_decref(spec);
	}
	class_table_release(&t);
}
END_TEST

/* Without a class table every class entry is unknown. */
START_TEST(test_spec_no_table)
{
	struct holder_map hm;
	json_t *spec = tq("{'gpus':[{'class':'h100'},{'name':'x'}]}");

	ck_assert_int_eq(
		model__holder_map_spec(HK_VMINSTANCE, spec, NULL, &hm, NULL),
		0);
	ck_assert(hm.valid);
	ck_assert(hm.unknown_class);
	ck_assert_uint_eq(hm.n, 0);
	ck_assert_uint_eq(hm.n_entries, 2);
	ck_assert_int_eq(hm.entry_class[0], -1);
	json_decref(spec);
}
END_TEST

START_TEST(test_units_lookup)
{
	struct class_table t;
	struct holder_map hm;
	json_t *obj = tq(VMI("{'gpus':[{'class':'l4','count':5},"
			     "{'class':'a10','count':2}]}"));

	load_classes(&t);
	ck_assert_int_eq(holder_map_object(obj, &t, &hm, NULL), 0);
	ck_assert_uint_eq(hm.n, 2);
	ck_assert_int_eq(model__holder_map_units(&hm, 0), 2);
	ck_assert_int_eq(model__holder_map_units(&hm, 1), 0);
	ck_assert_int_eq(model__holder_map_units(&hm, 2), 5);
	ck_assert_int_eq(model__holder_map_units(&hm, 3), 0);
	ck_assert_int_eq(model__holder_map_units(&hm, UINT32_MAX), 0);
	json_decref(obj);
	class_table_release(&t);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Claim coverage (DESIGN 2.3, Appendix A "Claims").                       */

#define LONGVM "a-very-long-virtual-machine-name-for-the-hashed-claim-test"
/* Computed independently: the first 49 characters of vm-instance-LONGVM
 * less the trailing '-', then the first 8 hex digits of its SHA-256. */
#define LONGHASH   "vm-instance-a-very-long-virtual-machine-name-for-f1ef5f12"
#define LONGCLAIM1 LONGHASH "-gpu1"
#define LONGCLAIM2 LONGHASH "-gpu2"

static const struct {
	const char *vm_ns, *vm_name, *vm_spec;
	const char *claim_ns, *claim_name, *claim_reqs;
	bool covered;
} cover_rows[] = {
	/* Entry 0 is the h100 class entry: gpu1. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-vm1-gpu1", "[" EX("'deviceClassName':'h100'") "]", true},
	/* Counts need not match: the claim draws on the reservation. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100','count':2}]}", "tenant-a",
	 "vm-instance-vm1-gpu1",
	 "[" EX("'deviceClassName':'h100','count':2") "]", true},
	/* The second entry is gpu2, of its own class. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'},{'class':'a10'}]}",
	 "tenant-a", "vm-instance-vm1-gpu2", "[" EX(A10) "]", true},
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'},{'class':'a10'}]}",
	 "tenant-a", "vm-instance-vm1-gpu2",
	 "[" EX("'deviceClassName':'h100'") "]", false},
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'},{'class':'a10'}]}",
	 "tenant-a", "vm-instance-vm1-gpu1", "[" EX(A10) "]", false},
	/* No such entry. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-vm1-gpu2", "[" EX("'deviceClassName':'h100'") "]", false},
	/* A raw entry or an unknown class is not a class entry. */
	{"tenant-a", "vm1", "{'gpus':[{'name':'nvidia.com/GH100'}]}",
	 "tenant-a", "vm-instance-vm1-gpu1",
	 "[" EX("'deviceClassName':'h100'") "]", false},
	{"tenant-a", "vm1", "{'gpus':[{'class':'v100'},{'class':'h100'}]}",
	 "tenant-a", "vm-instance-vm1-gpu2",
	 "[" EX("'deviceClassName':'h100'") "]", true},
	/* Another namespace. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'}]}", "tenant-b",
	 "vm-instance-vm1-gpu1", "[" EX("'deviceClassName':'h100'") "]", false},
	/* Units in two classes, or none. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-vm1-gpu1",
	 "[" EX("'deviceClassName':'h100'") "," EX(A10) "]", false},
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-vm1-gpu1",
	 "[" EX("'deviceClassName':'x.example.com'") "]", false},
	/* An invalid claim or an unmappable VMInstance covers nothing. */
	{"tenant-a", "vm1", "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-vm1-gpu1",
	 "[" EX("'deviceClassName':'h100'") "," EX(A10 ",'count':0") "]",
	 false},
	{"tenant-a", "vm1",
	 "{'gpus':[{'class':'h100'},{'class':'h100',"
	 "'count':0}]}",
	 "tenant-a", "vm-instance-vm1-gpu1",
	 "[" EX("'deviceClassName':'h100'") "]", false},
	/* A long VM name: the hashed claim name. */
	{"tenant-a", LONGVM, "{'gpus':[{'class':'h100'},{'class':'h100'}]}",
	 "tenant-a", LONGCLAIM1, "[" EX("'deviceClassName':'h100'") "]", true},
	{"tenant-a", LONGVM, "{'gpus':[{'class':'h100'},{'class':'h100'}]}",
	 "tenant-a", LONGCLAIM2, "[" EX("'deviceClassName':'h100'") "]", true},
	{"tenant-a", LONGVM, "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-" LONGVM "-gpu1", "[" EX("'deviceClassName':'h100'") "]",
	 false},
	/* No valid claim name can be formed: nothing is covered. */
	{"tenant-a", "VM1", "{'gpus':[{'class':'h100'}]}", "tenant-a",
	 "vm-instance-VM1-gpu1", "[" EX("'deviceClassName':'h100'") "]", false},
};

static json_t *named(const char *api, const char *kind, const char *ns,
		     const char *name, const char *spec_text)
{
	json_t *spec = tq(spec_text);
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", api,
			      "kind", kind, "metadata", "namespace", ns, "name",
			      name, "spec", spec);

	ck_assert_ptr_nonnull(o);
	return o;
}

START_TEST(test_covered)
{
	struct class_table t;
	struct holder_map vm, cl;
	char creq[1024];
	json_t *vmo, *clo;

	load_classes(&t);
	vmo = named("apps.cozystack.io/v1alpha1", "VMInstance",
		    cover_rows[_i].vm_ns, cover_rows[_i].vm_name,
		    cover_rows[_i].vm_spec);
	snprintf(creq, sizeof(creq), "{'devices':{'requests':%s}}",
		 cover_rows[_i].claim_reqs);
	clo = named("resource.k8s.io/v1", "ResourceClaim",
		    cover_rows[_i].claim_ns, cover_rows[_i].claim_name, creq);
	ck_assert_int_eq(holder_map_object(vmo, &t, &vm, NULL), 0);
	ck_assert_int_eq(holder_map_object(clo, &t, &cl, NULL), 0);
	ck_assert_msg(holder_claim_covered(&cl, &vm) == cover_rows[_i].covered,
		      "row %d: claim %s", _i, cover_rows[_i].claim_name);
	/* Coverage is not symmetric: a VMInstance is never a claim. */
	ck_assert(!holder_claim_covered(&vm, &cl));
	ck_assert(!holder_claim_covered(&vm, &vm));
	json_decref(vmo);
	json_decref(clo);
	class_table_release(&t);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Nodes.                                                                  */

#define READY "{'type':'Ready','status':'True'}"
#define NODE(spec, alloc, conds)                                           \
	"{'apiVersion':'v1','kind':'Node','metadata':{'name':'n1'},'spec'" \
	":" spec ",'status':{'allocatable':" alloc ",'conditions':[" conds \
	"]}}"
#define GPUTAINT "{'taints':[{'key':'nvidia.com/gpu','effect':'NoSchedule'}]}"

static const struct {
	const char *node;
	int rc;
	const char *out; /* class=capacity/serves ... */
	int err;	 /* err.code after the call */
} node_rows[] = {
	{NODE("{}",
	      "{'nvidia.com/GH100':'8','nvidia.com/AD104':'2',"
	      "'nvidia.com/L4':'1','cpu':'64'}",
	      READY),
	 0, "a10=0/y h100=8/y l4=3/y", 0},
	/* A GPU taint: only h100 tolerates it. */
	{NODE(GPUTAINT, "{'nvidia.com/GH100':'8','nvidia.com/GA102':'4'}",
	      READY),
	 0, "a10=4/n h100=8/y l4=0/n", 0},
	/* Cordoned, not ready: serves nothing, capacity stays. */
	{NODE("{'unschedulable':true}", "{'nvidia.com/GH100':'8'}", READY), 0,
	 "a10=0/n h100=8/n l4=0/n", 0},
	{NODE("{}", "{'nvidia.com/GH100':'8'}",
	      "{'type':'Ready','status':'False'}"),
	 0, "a10=0/n h100=8/n l4=0/n", 0},
	{NODE("{}", "{'nvidia.com/GH100':'8'}", ""), 0,
	 "a10=0/n h100=8/n l4=0/n", 0},
	/* Value() is the ceiling. */
	{NODE("{}", "{'nvidia.com/GA102':'1500m','nvidia.com/GH100':'1k'}",
	      READY),
	 0, "a10=2/y h100=1000/y l4=0/y", 0},
	/* Unparsable or negative allocatable counts 0, with a report. */
	{NODE("{}", "{'nvidia.com/GH100':'-1','nvidia.com/GA102':'2'}", READY),
	 0, "a10=2/y h100=0/y l4=0/y", LG_EINVAL},
	{NODE("{}", "{'nvidia.com/GH100':'eight'}", READY), 0,
	 "a10=0/y h100=0/y l4=0/y", LG_EINVAL},
	{NODE("{}", "{'nvidia.com/AD104':'x','nvidia.com/L4':'2'}", READY), 0,
	 "a10=0/y h100=0/y l4=2/y", LG_EINVAL},
	{NODE("{}", "{'nvidia.com/GH100':8}", READY), 0,
	 "a10=0/y h100=0/y l4=0/y", LG_EINVAL},
	{NODE("{}", "{'nvidia.com/GH100':'10E'}", READY), 0,
	 "a10=0/y h100=0/y l4=0/y", LG_EINVAL},
	/* An overflowing sum counts 0, with a report. */
	{NODE("{}",
	      "{'nvidia.com/AD104':'9223372036854775807',"
	      "'nvidia.com/L4':'1','nvidia.com/GH100':'2'}",
	      READY),
	 0, "a10=0/y h100=2/y l4=0/y", LG_ERANGE},
	/* No allocatable at all. */
	{NODE("{}", "null", READY), 0, "a10=0/y h100=0/y l4=0/y", 0},
	{NODE("{}", "[]", READY), 0, "a10=0/y h100=0/y l4=0/y", 0},
	/* No name. */
	{"{'apiVersion':'v1','kind':'Node','metadata':{}}", LG_EINVAL, "",
	 LG_EINVAL},
	{"{'apiVersion':'v1','kind':'Node','metadata':{'name':7}}", LG_EINVAL,
	 "", LG_EINVAL},
	{"[]", LG_EINVAL, "", LG_EINVAL},
};

START_TEST(test_node_map)
{
	struct class_table t;
	struct node_map nm;
	struct lg_error e = {0};
	char buf[256];
	size_t off = 0;
	json_t *node = tq(node_rows[_i].node);

	load_classes(&t);
	ck_assert_int_eq(node_map_object(node, &t, &nm, &e), node_rows[_i].rc);
	ck_assert_msg(e.code == node_rows[_i].err, "err %d (%s) want %d",
		      e.code, e.msg, node_rows[_i].err);
	buf[0] = '\0';
	for (size_t i = 0; node_rows[_i].rc == 0 && i < nm.n; i++) {
		ck_assert_uint_eq(nm.classes[i].cls, i);
		off += snprintf(buf + off, sizeof(buf) - off, "%s%s=%lld/%c",
				i ? " " : "", t.classes[i].name,
				(long long)nm.classes[i].capacity,
				nm.classes[i].serves ? 'y' : 'n');
	}
	ck_assert_str_eq(buf, node_rows[_i].out);
	if (node_rows[_i].rc == 0) {
		ck_assert_uint_eq(nm.n, t.n);
		ck_assert_str_eq(nm.name, "n1");
	}
	json_decref(node);
	class_table_release(&t);
}
END_TEST

/* A node with no table has no classes. */
START_TEST(test_node_no_table)
{
	struct node_map nm;
	json_t *node = tq(NODE("{}", "{'nvidia.com/GH100':'8'}", READY));

	ck_assert_int_eq(node_map_object(node, NULL, &nm, NULL), 0);
	ck_assert_uint_eq(nm.n, 0);
	ck_assert_str_eq(nm.name, "n1");
	json_decref(node);
}
END_TEST

/* ---------------------------------------------------------------------- */

#define NROWS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void add_loop(Suite *s, const char *name, const TTest *fn, int n)
{
	TCase *tc = tcase_create(name);

	tcase_add_loop_test(tc, fn, 0, n);
	suite_add_tcase(s, tc);
}

static void add_one(Suite *s, const char *name, const TTest *fn)
{
	TCase *tc = tcase_create(name);

	tcase_add_test(tc, fn);
	suite_add_tcase(s, tc);
}

void model_tests_mapping(Suite *s)
{
	add_one(s, "mapping_kind", test_kind_names);
	add_loop(s, "mapping_object", test_object_kinds, NROWS(object_rows));
	add_one(s, "mapping_borrowed", test_object_borrowed);
	add_loop(s, "mapping_vmi", test_vmi_rows, NROWS(vmi_rows));
	add_loop(s, "mapping_vmi_limit", test_vmi_entry_limit, 2);
	add_loop(s, "mapping_kn", test_kn_rows, NROWS(kn_rows));
	add_loop(s, "mapping_pod", test_pod_rows, NROWS(pod_rows));
	add_loop(s, "mapping_claim", test_claim_rows, NROWS(claim_rows));
	add_one(s, "mapping_spec", test_spec_kinds);
	add_one(s, "mapping_spec_no_table", test_spec_no_table);
	add_one(s, "mapping_units", test_units_lookup);
	add_loop(s, "mapping_covered", test_covered, NROWS(cover_rows));
	add_loop(s, "mapping_node", test_node_map, NROWS(node_rows));
	add_one(s, "mapping_node_no_table", test_node_no_table);
}
