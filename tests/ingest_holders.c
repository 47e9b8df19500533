/*
 * Every holder rule of DESIGN 2.3 and Appendix A through the stream:
 * VMInstance class and raw entries, KubernetesNodes x maxReplicas (default
 * 10), pods (limits as requests, sidecars, init containers, overhead,
 * terminal phases, nodes), claims (ExactCount, All, unknown device classes,
 * allocation and its node) and coverage both ways; a recreated object
 * releases under its old uid first; a moved allocation is freed first.
 * Most rows use the non-tenant namespace "ns", which needs no tenant node.
 */
#include "tests/ingest_tests.h"

#define H100 "'nvidia.com/H100'"
#define NOGPU \
	"{'containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}]}"

static const struct h_case vmi_cases[] = {
	{"class entries",
	 {ADD(VMI("tenant-a", "vm", "v1",
		  "[{'class':'h100','count':2},{'class':'h100'},{'class':"
		  "'l40s','count':'3'},{'class':'h100','count':null}]"))},
	 "TENANT tenant-root; TENANT tenant-a; "
	 "RESERVE VMInstance tenant-a/vm#v1 h100 0>4; "
	 "RESERVE VMInstance tenant-a/vm#v1 l40s 0>3",
	 NULL},
	{"raw entries reserve nothing",
	 {ADD(VMI("ns", "vm", "v1",
		  "[{'name':'nvidia.com/H100'},{'class':null}]"))},
	 "",
	 NULL},
	{"unknown class",
	 {ADD(VMI("ns", "vm", "v1", "[{'class':'a100'},{'class':'h100'}]"))},
	 "NOTE UnknownClass; RESERVE VMInstance ns/vm#v1 h100 0>1",
	 NULL},
	{"bad count",
	 {ADD(VMI("ns", "vm", "v1", "[{'class':'h100','count':2}]")),
	  MOD(VMI("ns", "vm", "v1", "[{'class':'h100','count':0}]"))},
	 "RESERVE VMInstance ns/vm#v1 h100 0>2; NOTE InvalidObject; "
	 "RELEASE VMInstance ns/vm#v1 h100 2>0",
	 NULL},
	{"gpus not a list",
	 {ADD(VMI("ns", "vm", "v1", "{'class':'h100'}"))},
	 "NOTE InvalidObject",
	 NULL},
	{"shrink and grow",
	 {ADD(VMI("ns", "vm", "v1", "[{'class':'h100','count':2}]")),
	  MOD(VMI("ns", "vm", "v1", "[{'class':'l40s','count':'1'}]"))},
	 "RESERVE VMInstance ns/vm#v1 h100 0>2; "
	 "RELEASE VMInstance ns/vm#v1 h100 2>0; "
	 "RESERVE VMInstance ns/vm#v1 l40s 0>1",
	 NULL},
	{"deleted",
	 {ADD(VMI("tenant-a", "vm", "v1", "[{'class':'h100'}]")),
	  DEL(VMI("tenant-a", "vm", "v1", "[{'class':'h100'}]"))},
	 "TENANT tenant-root; TENANT tenant-a; "
	 "RESERVE VMInstance tenant-a/vm#v1 h100 0>1; "
	 "RELEASE VMInstance tenant-a/vm#v1 h100 1>0; "
	 "GONE tenant-a; GONE tenant-root",
	 NULL},
};

static const struct h_case kn_cases[] = {
	{"maxReplicas defaults to 10",
	 {ADD(KN("ns", "k", "k1", "{'gpus':[{'class':'h100'}]}"))},
	 "RESERVE KubernetesNodes ns/k#k1 h100 0>10",
	 NULL},
	{"count times maxReplicas",
	 {ADD(KN("ns", "k", "k1",
		 "{'maxReplicas':3,'gpus':[{'class':'h100','count':2},"
		 "{'class':'l40s'}]}"))},
	 "RESERVE KubernetesNodes ns/k#k1 h100 0>6; "
	 "RESERVE KubernetesNodes ns/k#k1 l40s 0>3",
	 NULL},
	{"maxReplicas 0",
	 {ADD(KN("ns", "k", "k1",
		 "{'maxReplicas':0,'gpus':[{'class':'h100'}]}"))},
	 "",
	 NULL},
	{"maxReplicas as a string is invalid",
	 {ADD(KN("ns", "k", "k1",
		 "{'maxReplicas':'3','gpus':[{'class':'h100'}]}"))},
	 "NOTE InvalidObject",
	 NULL},
};

static const struct h_case pod_cases[] = {
	{"limits count as requests",
	 {ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "2"))},
	 "RESERVE Pod ns/p#u1 h100 0>2; ALLOC Pod ns/p#u1 h100 0>2 @n1",
	 NULL},
	{"raw names of one class add up",
	 {ADD(POD("ns", "p", "u1",
		  "{'nodeName':'n1','containers':[{'name':'a','resources':{"
		  "'requests':{'nvidia.com/L40S':'1'}}},{'name':'b',"
		  "'resources':{'limits':{'nvidia.com/"
		  "L40S_SHARED':'1500m'}}}]}"))},
	 "RESERVE Pod ns/p#u1 l40s 0>3; ALLOC Pod ns/p#u1 l40s 0>3 @n1",
	 NULL},
	{"sidecars add, init containers take the max, overhead adds",
	 {ADD(POD("ns", "p", "u1",
		  "{'nodeName':'n1','initContainers':[{'name':'s',"
		  "'restartPolicy':'Always','resources':{'limits':{" H100
		  ":'1'}}},{'name':'i','resources':{'limits':{" H100
		  ":'4'}}}],'containers':[{'name':'c','resources':{'limits':"
		  "{" H100 ":'1'}}}],'overhead':{" H100 ":'1'}}"))},
	 "RESERVE Pod ns/p#u1 h100 0>6; ALLOC Pod ns/p#u1 h100 0>6 @n1",
	 NULL},
	{"pod-level resources never count",
	 {ADD(POD(
		 "ns", "p", "u1",
		 "{'nodeName':'n1','resources':{'requests':{" H100
		 ":'4'}},'containers':[{'name':'c','resources':{'limits':{" H100
		 ":'1'}}}]}"))},
	 "RESERVE Pod ns/p#u1 h100 0>1; ALLOC Pod ns/p#u1 h100 0>1 @n1",
	 NULL},
	{"terminal pods hold nothing",
	 {ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "1")),
	  MOD(PODST("ns", "p", "u1",
		    "{'nodeName':'n1','containers':[{'name':'c','resources':{"
		    "'limits':{" H100 ":'1'}}}]}",
		    "Succeeded")),
	  ADD(PODST("ns", "q", "u2",
		    "{'nodeName':'n1','containers':[{'name':'c','resources':{"
		    "'limits':{" H100 ":'1'}}}]}",
		    "Failed"))},
	 "RESERVE Pod ns/p#u1 h100 0>1; ALLOC Pod ns/p#u1 h100 0>1 @n1; "
	 "FREE Pod ns/p#u1 h100 1>0 @n1; RELEASE Pod ns/p#u1 h100 1>0",
	 NULL},
	{"scheduled later: freed on no node, allocated on the node",
	 {ADD(POD("ns", "p", "u1",
		  "{'containers':[{'name':'c','resources':{'limits':{" H100
		  ":'1'}}}]}")),
	  MOD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "1"))},
	 "RESERVE Pod ns/p#u1 h100 0>1; ALLOC Pod ns/p#u1 h100 0>1 @; "
	 "FREE Pod ns/p#u1 h100 1>0 @; ALLOC Pod ns/p#u1 h100 0>1 @n1",
	 NULL},
	{"recreated: the old uid releases first",
	 {ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "1")),
	  ADD(GPOD("ns", "p", "u2", "n2", "nvidia.com/H100", "2"))},
	 "RESERVE Pod ns/p#u1 h100 0>1; ALLOC Pod ns/p#u1 h100 0>1 @n1; "
	 "FREE Pod ns/p#u1 h100 1>0 @n1; RELEASE Pod ns/p#u1 h100 1>0; "
	 "RESERVE Pod ns/p#u2 h100 0>2; ALLOC Pod ns/p#u2 h100 0>2 @n2",
	 NULL},
	{"a stale DELETED of the old uid does nothing",
	 {ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "1")),
	  ADD(GPOD("ns", "p", "u2", "n1", "nvidia.com/H100", "1")),
	  DEL(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "1"))},
	 "RESERVE Pod ns/p#u1 h100 0>1; ALLOC Pod ns/p#u1 h100 0>1 @n1; "
	 "FREE Pod ns/p#u1 h100 1>0 @n1; RELEASE Pod ns/p#u1 h100 1>0; "
	 "RESERVE Pod ns/p#u2 h100 0>1; ALLOC Pod ns/p#u2 h100 0>1 @n1",
	 NULL},
	{"invalid quantity: a NOTE once, holds nothing",
	 {ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "1")),
	  MOD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "one"))},
	 "RESERVE Pod ns/p#u1 h100 0>1; ALLOC Pod ns/p#u1 h100 0>1 @n1; "
	 "NOTE InvalidObject; FREE Pod ns/p#u1 h100 1>0 @n1; "
	 "RELEASE Pod ns/p#u1 h100 1>0",
	 NULL},
	{"negative quantity",
	 {ADD(GPOD("ns", "p", "u1", "n1", "nvidia.com/H100", "-1"))},
	 "NOTE InvalidObject",
	 NULL},
	{"no GPU, no event", {ADD(POD("ns", "p", "u1", NOGPU))}, "", NULL},
};

#define CLAIM_H100(ns, n, uid, count, status) \
	CLAIM(ns, n, uid, "[" EXACT("h100.nvidia.com", count) "]", status)

static const struct h_case claim_cases[] = {
	{"pending claim reserves",
	 {ADD(CLAIM_H100("ns", "c", "c1", "2", "{}"))},
	 "RESERVE ResourceClaim ns/c#c1 h100 0>2",
	 NULL},
	{"allocation and its node",
	 {ADD(CLAIM_H100("ns", "c", "c1", "2", "{}")),
	  MOD(CLAIM_H100("ns", "c", "c1", "2", ALLOCATED("n1")))},
	 "RESERVE ResourceClaim ns/c#c1 h100 0>2; "
	 "ALLOC ResourceClaim ns/c#c1 h100 0>2 @n1",
	 NULL},
	{"allocationMode All counts 32",
	 {ADD(CLAIM("ns", "c", "c1",
		    "[{'name':'r','exactly':{'deviceClassName':"
		    "'h100.nvidia.com','allocationMode':'All'}}]",
		    "{}"))},
	 "RESERVE ResourceClaim ns/c#c1 h100 0>32",
	 NULL},
	{"firstAvailable: the largest count per class",
	 {ADD(CLAIM("ns", "c", "c1",
		    "[{'name':'r','firstAvailable':[{'name':'a',"
		    "'deviceClassName':'h100.nvidia.com','count':2},{'name':"
		    "'b','deviceClassName':'h100.nvidia.com','count':3}]}]",
		    "{}"))},
	 "RESERVE ResourceClaim ns/c#c1 h100 0>3",
	 NULL},
	{"unknown device classes are ignored",
	 {ADD(CLAIM("ns", "c", "c1", "[" EXACT("gpu.example.com", "1") "]",
		    "{}"))},
	 "",
	 NULL},
	{"bad count",
	 {ADD(CLAIM_H100("ns", "c", "c1", "0", "{}"))},
	 "NOTE InvalidObject",
	 NULL},
	{"covered claim: allocated, not reserved",
	 {ADD(VMI("ns", "vm1", "v1", "[{'class':'h100'}]")),
	  ADD(CLAIM_H100("ns", "vm-instance-vm1-gpu1", "c1", "1",
			 ALLOCATED("n1")))},
	 "RESERVE VMInstance ns/vm1#v1 h100 0>1; "
	 "ALLOC ResourceClaim ns/vm-instance-vm1-gpu1#c1 h100 0>1 @n1",
	 NULL},
	{"coverage both ways",
	 {ADD(CLAIM_H100("ns", "vm-instance-vm1-gpu2", "c1", "1", "{}")),
	  ADD(VMI("ns", "vm1", "v1", "[{'name':'x'},{'class':'h100'}]")),
	  DEL(VMI("ns", "vm1", "v1", "[]"))},
	 "RESERVE ResourceClaim ns/vm-instance-vm1-gpu2#c1 h100 0>1; "
	 "RESERVE VMInstance ns/vm1#v1 h100 0>1; "
	 "RELEASE ResourceClaim ns/vm-instance-vm1-gpu2#c1 h100 1>0; "
	 "RELEASE VMInstance ns/vm1#v1 h100 1>0; "
	 "RESERVE ResourceClaim ns/vm-instance-vm1-gpu2#c1 h100 0>1",
	 NULL},
	{"entry of another class covers nothing",
	 {ADD(VMI("ns", "vm1", "v1", "[{'class':'h100'}]")),
	  ADD(CLAIM_H100("ns", "vm-instance-vm1-gpu1", "c1", "1", "{}")),
	  MOD(VMI("ns", "vm1", "v1", "[{'class':'l40s'}]"))},
	 "RESERVE VMInstance ns/vm1#v1 h100 0>1; "
	 "RELEASE VMInstance ns/vm1#v1 h100 1>0; "
	 "RESERVE VMInstance ns/vm1#v1 l40s 0>1; "
	 "RESERVE ResourceClaim ns/vm-instance-vm1-gpu1#c1 h100 0>1",
	 NULL},
	{"another namespace covers nothing",
	 {ADD(VMI("ns2", "vm1", "v1", "[{'class':'h100'}]")),
	  ADD(CLAIM_H100("ns", "vm-instance-vm1-gpu1", "c1", "1", "{}"))},
	 "RESERVE VMInstance ns2/vm1#v1 h100 0>1; "
	 "RESERVE ResourceClaim ns/vm-instance-vm1-gpu1#c1 h100 0>1",
	 NULL},
	{"wrong apiVersion is not ours",
	 {ADD("{'apiVersion':'resource.k8s.io/v1beta1','kind':"
	      "'ResourceClaim'," META("ns", "c", "c1") ",'spec':{}}")},
	 "NOTE UnknownKind",
	 "NOTE UnknownKind"},
};

START_TEST(holders_vmi)
{
	h_run_case(&vmi_cases[_i]);
}
END_TEST

START_TEST(holders_kn)
{
	h_run_case(&kn_cases[_i]);
}
END_TEST

START_TEST(holders_pod)
{
	h_run_case(&pod_cases[_i]);
}
END_TEST

START_TEST(holders_claim)
{
	h_run_case(&claim_cases[_i]);
}
END_TEST

/* reserved and allocated per namespace, as replay shows them. */
START_TEST(holders_measures)
{
	struct h h;
	char *r, *a;

	h_open(&h, CLASSES);
	h_feed(&h, ADD(NSOBJ("tenant-a")));
	h_feed(&h, ADD(VMI("tenant-a", "vm1", "v1",
			   "[{'class':'h100','count':2}]")));
	h_feed(&h, ADD(CLAIM_H100("tenant-a", "vm-instance-vm1-gpu1", "c1", "2",
				  ALLOCATED("n1"))));
	h_feed(&h,
	       ADD(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/L40S", "1")));
	h_feed(&h, ADD(CLAIM_H100("tenant-a", "other", "c2", "1", "{}")));
	free(h_take(&h));
	r = h_state(&h, "tenant-a", "reserved");
	a = h_state(&h, "tenant-a", "allocated");
	ck_assert_str_eq(r, "{\"h100\":3,\"l40s\":1}");
	ck_assert_str_eq(a, "{\"h100\":2,\"l40s\":1}");
	free(r);
	free(a);
	h_close(&h);
}
END_TEST

static void add_loop(Suite *s, const char *name, const TTest *t, size_t n)
{
	TCase *tc = tcase_create(name);

	tcase_add_loop_test(tc, t, 0, (int)n);
	suite_add_tcase(s, tc);
}

#define N(a) (sizeof(a) / sizeof(a[0]))

INGEST_PART(holders)
{
	TCase *tc = tcase_create("holders_measures");

	add_loop(s, "holders_vmi", holders_vmi, N(vmi_cases));
	add_loop(s, "holders_kn", holders_kn, N(kn_cases));
	add_loop(s, "holders_pod", holders_pod, N(pod_cases));
	add_loop(s, "holders_claim", holders_claim, N(claim_cases));
	tcase_add_test(tc, holders_measures);
	suite_add_tcase(s, tc);
}
