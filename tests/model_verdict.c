/*
 * Tests of model/verdict.c: admission (DESIGN 3.1), declaration (3.2),
 * remaining budget (3.3), overcommit (3.4) and the eval functions on them,
 * as worked examples of every verdict rule (Appendix A "Verdicts").
 *
 * A test world is a short script, one command per ';', applied as events:
 *   C <class> <res>[,<res>...]     CLASS with those resourceNames
 *   T <ns>                         TENANT (parent by name)
 *   B <ns> <class>|* <value>|-     BUDGET of the class key or the total key
 *                                  (*); '-' removes it
 *   R <ns> <resource>              RAWKEY declared
 *   X <ns> <resource>              RAWKEY withdrawn
 *   U <ns> <class> <holder> <n>    RESERVE n units by a new VMInstance
 * JSON is written with single quotes and turned into JSON by tv().
 */
#include "model/model_int.h"
#include "tests/model_tests.h"

/* A verdict request is judged as its record reads back (DESIGN 3.5): the
 * literals of these tests are read by json_loadb_doubles. */
static json_t *tvj(const char *text)
{
	json_error_t e;
	json_t *v = json_loadb_doubles(text, strlen(text), JSON_DECODE_ANY, &e);

	ck_assert_msg(v != NULL, "bad test JSON: %s: %s", e.text, text);
	return v;
}

/* The same with single quotes. */
static json_t *tv(const char *text)
{
	char *s = strdup(text);
	json_t *v;

	ck_assert_ptr_nonnull(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = tvj(s);
	free(s);
	return v;
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KH100 "h100.gpuclass.cozystack.io/devices"
#define KA10  "a10.gpuclass.cozystack.io/devices"
#define KTOT  "gpuclass.cozystack.io/devices"

/* An expected check, in the order of the verdict's fields. */
#define CK(t, k, b, u, g, r, ok)                                     \
	"{'tenant':'" t "','key':'" k "','budget':" #b ",'used':" #u \
	",'growth':" #g ",'remaining':" #r ",'ok':" #ok "}"

/* Classes a10 (two raw names) and h100; tenants root > acme > {dev, prod}. */
#define CLASSES "C h100 nvidia.com/h100; C a10 nvidia.com/a10g,nvidia.com/a10; "
#define TREE                                                  \
	"T tenant-root; T tenant-acme; T tenant-acme-dev; T " \
	"tenant-acme-prod; "
/* The example of DESIGN 3.5: acme uses 7 of 8 h100, dev 2 of 4. */
#define ACME                                                       \
	CLASSES TREE                                               \
		"B tenant-acme h100 8; B tenant-acme-dev h100 4; " \
		"U tenant-acme h100 vm-a 5; U tenant-acme-dev h100 vm-d 2"

static char *canon(const json_t *v)
{
	char *s = json_canonical(v);

	ck_assert_ptr_nonnull(s);
	return s;
}

static void apply_ok(state_t *st, const struct event *ev, const char *cmd)
{
	struct lg_error err = {0};

	ck_assert_msg(state_apply(st, ev, &err) == 0, "world \"%s\": %s", cmd,
		      err.msg);
}

static void world_class(state_t *st, const char *name, const char *res,
			const char *cmd)
{
	json_t *def = json_pack("{s:s, s:[]}", "name", name, "resourceNames");
	char *copy = strdup(res), *save = NULL;
	struct event ev = {.type = EV_CLASS, .cls = name};

	for (char *r = strtok_r(copy, ",", &save); r != NULL;
	     r = strtok_r(NULL, ",", &save))
		json_array_append_new(json_object_get(def, "resourceNames"),
				      json_string(r));
	ev.text = json_canonical(def);
	apply_ok(st, &ev, cmd);
	free((char *)ev.text);
	free(copy);
	json_decref(def);
}

static void world_cmd(state_t *st, const char *cmd)
{
	char op[4] = "", a[128] = "", b[128] = "", c[128] = "", key[200];
	char parent[DNS1123_SUBDOMAIN_MAX + 1];
	long long n = 0;
	struct event ev = {.ns = a, .kind = HK_VMINSTANCE};

	ck_assert_int_ge(
		sscanf(cmd, " %3s %127s %127s %127s %lld", op, a, b, c, &n), 2);
	switch (op[0]) {
	case 'C':
		world_class(st, a, b, cmd);
		return;
	case 'T':
		ev.type = EV_TENANT;
		ev.parent = ns_parent(a, parent) ? parent : NULL;
		break;
	case 'B':
		snprintf(key, sizeof(key), "%s%s", strcmp(b, "*") ? b : "",
			 strcmp(b, "*") ? GPU_CLASS_KEY_SUFFIX : GPU_TOTAL_KEY);
		ev = (struct event){.type = EV_BUDGET,
				    .ns = a,
				    .key = key,
				    .present = strcmp(c, "-") != 0,
				    .value = atoll(c)};
		break;
	case 'R':
	case 'X':
		ev = (struct event){.type = EV_RAWKEY,
				    .ns = a,
				    .key = b,
				    .present = op[0] == 'R'};
		break;
	case 'U':
		ev = (struct event){.type = EV_RESERVE,
				    .ns = a,
				    .cls = b,
				    .kind = HK_VMINSTANCE,
				    .name = c,
				    .uid = c,
				    .before = 0,
				    .after = n};
		break;
	default:
		ck_abort_msg("bad world command \"%s\"", cmd);
	}
	apply_ok(st, &ev, cmd);
}

/* A state built from a world script; caller frees with state_free. */
static state_t *world(const char *script)
{
	state_t *st = state_new();
	char *copy = strdup(script), *save = NULL;

	for (char *cmd = strtok_r(copy, ";", &save); cmd != NULL;
	     cmd = strtok_r(NULL, ";", &save))
		if (strspn(cmd, " ") != strlen(cmd))
			world_cmd(st, cmd);
	free(copy);
	return st;
}

/* Compares v with want by canonical bytes. */
static void assert_same(const json_t *v, const json_t *want, const char *what)
{
	char *got = canon(v), *exp = canon(want);

	ck_assert_msg(strcmp(got, exp) == 0, "%s:\n got  %s\n want %s", what,
		      got, exp);
	free(got);
	free(exp);
}

/* Compares v with the single-quoted JSON want. */
static void assert_json(const json_t *v, const char *want, const char *what)
{
	json_t *w = tv(want);

	assert_same(v, w, what);
	json_decref(w);
}

typedef int verdict_fn(const state_t *st, const json_t *req, json_t **verdict,
		       struct lg_error *err);

/* Runs fn on req and compares the verdict, less "request" (which must echo
 * req exactly) and "type", with want; warnings default to []. */
/* The one writer is canonical: what verdict_write writes (a record with a
 * seq, also with integers as exact digits) is the JCS of what it reads
 * back as, byte for byte. */
static void assert_writer_canonical(const state_t *st, const char *type,
				    const json_t *req, const char *name)
{
	struct verdict v;
	struct lg_buf b;
	unsigned flags[] = {JCS_INT_DOUBLES, 0};
	int rc = strcmp(type, "admission") == 0
			 ? model__judge_admission(st, req, &v, NULL)
			 : model__judge_declaration(st, req, &v, NULL);

	ck_assert_int_eq(rc, 0);
	v.id = 12;
	v.seq = 9007199254740991ull;
	v.basis_seq = 3;
	memset(v.chain_head, 'a', VERDICT_HEAD_HEX);
	lg_buf_init(&b, JCS_TEXT_MAX_BYTES);
	for (size_t i = 0; i < 2; i++) {
		json_t *back;
		char *again;

		lg_buf_reset(&b);
		ck_assert_int_eq(verdict_write(&b, &v,
					       VERDICT_W_RECORD | VERDICT_W_SEQ,
					       flags[i], SIZE_MAX),
				 0);
		back = flags[i] ? json_loadb_doubles(b.p, b.len, 0, NULL)
				: json_loadb(b.p, b.len, 0, NULL);
		ck_assert_msg(back != NULL, "%s: not JSON: %s", name, b.p);
		again = jcs_text(back, flags[i], SIZE_MAX, NULL);
		ck_assert_msg(again != NULL && strcmp(again, b.p) == 0,
			      "%s: not canonical:\n%s\n%s", name, b.p, again);
		free(again);
		json_decref(back);
	}
	lg_buf_release(&b);
	verdict_release(&v);
}

static void assert_verdict(const state_t *st, verdict_fn *fn, const char *type,
			   const json_t *req, const char *want,
			   const char *name)
{
	struct lg_error err = {0};
	json_t *v = NULL, *w = tv(want);

	assert_writer_canonical(st, type, req, name);

	ck_assert_msg(fn(st, req, &v, &err) == 0, "%s: %s", name, err.msg);
	ck_assert_ptr_nonnull(v);
	ck_assert_msg(json_equal(json_object_get(v, "request"), (json_t *)req),
		      "%s: request not echoed", name);
	ck_assert_str_eq(json_string_value(json_object_get(v, "type")), type);
	json_object_del(v, "request");
	json_object_del(v, "type");
	if (json_object_get(w, "warnings") == NULL)
		json_object_set_new(w, "warnings", json_array());
	assert_same(v, w, name);
	json_decref(w);
	json_decref(v);
}

/* ---------------------------------------------------------------------- */
/* Admission (DESIGN 3.1).                                                  */

#define GPUS(c, n) "{'gpus':[{'class':'" c "','count':" #n "}]}"
#define NO_GROWTH                                            \
	"{'allowed':true,'reason':'NoGrowth','message':'no " \
	"growth','checks':[]}"
#define WITHIN(checks)                                                       \
	"{'allowed':true,'reason':'WithinBudget','message':'within budget'," \
	"'checks':[" checks "]}"
#define DENIED(reason, msg, checks)                                   \
	"{'allowed':false,'reason':'" reason "','message':'" msg "'," \
	"'checks':[" checks "]}"
#define DEV "tenant-acme-dev"
#define RAW                                                                   \
	CLASSES TREE "R tenant-acme nvidia.com/h100; U tenant-acme-dev h100 " \
		     "vm-d 2; "
/* dev: total 2 of which a10 1; acme: h100 4, a10 2 (total 6); root 6. */
#define MULTI                                                        \
	CLASSES TREE                                                 \
		"B tenant-root * 10; B tenant-acme a10 3; "          \
		"B tenant-acme h100 8; B tenant-acme * 9; "          \
		"B tenant-acme-dev * 2; U tenant-acme h100 vm-a 4; " \
		"U tenant-acme-dev a10 vm-d 1; U tenant-acme-prod a10 vm-p 1"

struct adm_row {
	const char *name, *world, *ns, *kind, *old, *new, *want;
};

static const struct adm_row adm_rows[] = {
	{"design-example", ACME, DEV, NULL, "null", GPUS("h100", 2),
	 DENIED("ClassBudgetExceeded", "tenant-acme: " KH100 " 7 + 2 > 8",
		CK(DEV, KH100, 4, 2, 2, 0, true) "," CK("tenant-acme", KH100, 8,
							7, 2, -1, false))},
	{"within-budget", ACME, DEV, NULL, "null", GPUS("h100", 1),
	 WITHIN(CK(DEV, KH100, 4, 2, 1, 1, true) "," CK("tenant-acme", KH100, 8,
							7, 1, 0, true))},
	{"nearest-failure-decides", ACME, DEV, NULL, "null", GPUS("h100", 3),
	 DENIED("ClassBudgetExceeded", DEV ": " KH100 " 2 + 3 > 4",
		CK(DEV, KH100, 4, 2, 3, -1, false) "," CK("tenant-acme", KH100,
							  8, 7, 3, -2, false))},
	{"growth-only-update", ACME, DEV, NULL, GPUS("h100", 1),
	 GPUS("h100", 2),
	 WITHIN(CK(DEV, KH100, 4, 2, 1, 1, true) "," CK("tenant-acme", KH100, 8,
							7, 1, 0, true))},
	{"unchanged", ACME, DEV, NULL, GPUS("h100", 2), GPUS("h100", 2),
	 NO_GROWTH},
	{"shrink-while-over-budget", ACME "; U tenant-acme-dev h100 vm-e 5",
	 DEV, NULL, GPUS("h100", 3), GPUS("h100", 1), NO_GROWTH},
	{"delete", ACME, DEV, NULL, GPUS("h100", 2), "null", NO_GROWTH},
	{"both-null", ACME, DEV, NULL, "null", "null", NO_GROWTH},
	{"both-null-not-a-tenant", ACME, "default", NULL, "null", "null",
	 NO_GROWTH},
	{"not-a-tenant", ACME, "default", NULL, "null", GPUS("h100", 100),
	 "{'allowed':true,'reason':'NotATenant',"
	 "'message':'namespace is not a tenant','checks':[]}"},
	{"invalid-count", ACME, DEV, NULL, "null", GPUS("h100", 0),
	 DENIED("Invalid", "spec.gpus[0].count: must be >= 1", "")},
	{"invalid-gpus", ACME, DEV, NULL, "null", "{'gpus':{}}",
	 DENIED("Invalid", "spec.gpus: not a list", "")},
	{"invalid-spec", ACME, DEV, NULL, "null", "'x'",
	 DENIED("Invalid", "spec: not an object", "")},
	{"invalid-before-not-a-tenant", ACME, "default", NULL, "null",
	 GPUS("h100", 0),
	 DENIED("Invalid", "spec.gpus[0].count: must be >= 1", "")},
	{"invalid-old-counts-zero", ACME, DEV, NULL,
	 "{'gpus':[{'class':'h100','count':'abc'}]}", GPUS("h100", 1),
	 WITHIN(CK(DEV, KH100, 4, 2, 1, 1, true) "," CK("tenant-acme", KH100, 8,
							7, 1, 0, true))},
	{"delete-invalid", ACME, DEV, NULL, GPUS("h100", 0), "null", NO_GROWTH},
	{"unknown-class", ACME, DEV, NULL, "null",
	 "{'gpus':[{'class':'h100'},{'class':'b200','count':2}]}",
	 DENIED("UnknownClass", "spec.gpus[1].class: unknown class b200", "")},
	{"unknown-class-in-old-counts-zero", ACME, DEV, NULL, GPUS("b200", 9),
	 GPUS("h100", 1),
	 WITHIN(CK(DEV, KH100, 4, 2, 1, 1, true) "," CK("tenant-acme", KH100, 8,
							7, 1, 0, true))},
	{"invalid-beats-unknown-class", ACME, DEV, NULL, "null",
	 "{'gpus':[{'class':'b200'},{'class':'h100','count':0}]}",
	 DENIED("Invalid", "spec.gpus[1].count: must be >= 1", "")},
	/* Issue 10, case 6: NoGrowth, with a warning per raw entry. */
	{"raw-entry-reserves-nothing", ACME, DEV, NULL, "null",
	 "{'gpus':[{'name':'nvidia.com/h100'}]}",
	 "{'allowed':true,'reason':'NoGrowth','message':'no growth',"
	 "'checks':[],'warnings':['spec.gpus[0]: raw entry nvidia.com/h100 "
	 "reserves nothing itself; it is counted once its pod exists']}"},
	{"raw-entries-warn-within", ACME, DEV, NULL, "null",
	 "{'gpus':[{'class':'h100'},{'name':'nvidia.com/x'},{'class':null}]}",
	 "{'allowed':true,'reason':'WithinBudget','message':'within budget',"
	 "'checks':[" CK(DEV, KH100, 4, 2, 1, 1, true) "," CK(
		 "tenant-acme", KH100, 8, 7, 1, 0,
		 true) "],'warnings':['spec.gpus[1]: raw "
		       "entry nvidia.com/x reserves nothing itself; it is "
		       "counted once its "
		       "pod exists','spec.gpus[2]: raw entry (no name) "
		       "reserves nothing "
		       "itself; it is counted once its pod exists']}"},
	{"kn-replicas", ACME, "tenant-acme-prod", "KubernetesNodes", "null",
	 "{'gpus':[{'class':'h100'}],'maxReplicas':1}",
	 WITHIN(CK("tenant-acme", KH100, 8, 7, 1, 0, true))},
	{"kn-default-replicas", ACME, "tenant-acme-prod", "KubernetesNodes",
	 "null", "{'gpus':[{'class':'h100'}]}",
	 DENIED("ClassBudgetExceeded", "tenant-acme: " KH100 " 7 + 10 > 8",
		CK("tenant-acme", KH100, 8, 7, 10, -9, false))},
	{"kn-bad-replicas", ACME, DEV, "KubernetesNodes", "null",
	 "{'gpus':[{'class':'h100'}],'maxReplicas':'3'}",
	 DENIED("Invalid", "spec.maxReplicas: not an integer >= 0", "")},
	{"vmi-ignores-replicas", ACME, DEV, NULL, "null",
	 "{'gpus':[{'class':'h100'}],'maxReplicas':'3'}",
	 WITHIN(CK(DEV, KH100, 4, 2, 1, 1, true) "," CK("tenant-acme", KH100, 8,
							7, 1, 0, true))},
	{"namespace-not-in-state", ACME, "tenant-acme-new", NULL, "null",
	 GPUS("h100", 1), WITHIN(CK("tenant-acme", KH100, 8, 7, 1, 0, true))},
	{"tree-not-in-state", ACME, "tenant-zeta-a", NULL, "null",
	 GPUS("h100", 1), WITHIN("")},
	{"raw-key-blocks", RAW, DEV, NULL, "null", GPUS("h100", 1),
	 DENIED("RawKeyBlocksClass",
		"tenant-acme: raw key nvidia.com/h100 blocks class h100",
		CK("tenant-acme", "nvidia.com/h100", null, 2, 1, null, false))},
	{"raw-key-of-another-class", RAW, DEV, NULL, "null", GPUS("a10", 1),
	 WITHIN("")},
	{"raw-key-unblocked-by-class-key", RAW "B tenant-acme h100 5", DEV,
	 NULL, "null", GPUS("h100", 1),
	 WITHIN(CK("tenant-acme", KH100, 5, 2, 1, 2, true))},
	{"raw-key-unblocked-by-total-key", RAW "B tenant-acme * 5", DEV, NULL,
	 "null", GPUS("h100", 1),
	 WITHIN(CK("tenant-acme", KTOT, 5, 2, 1, 2, true))},
	{"raw-key-withdrawn", RAW "X tenant-acme nvidia.com/h100", DEV, NULL,
	 "null", GPUS("h100", 1), WITHIN("")},
	{"raw-key-first-sorted",
	 CLASSES TREE "R tenant-acme nvidia.com/a10g; "
		      "R tenant-acme nvidia.com/a10",
	 DEV, NULL, "null", GPUS("a10", 1),
	 DENIED("RawKeyBlocksClass",
		"tenant-acme: raw key nvidia.com/a10 blocks class a10",
		CK("tenant-acme", "nvidia.com/a10", null, 0, 1, null, false))},
	{"checks-go-on-after-a-failure", RAW "B tenant-acme-dev h100 1", DEV,
	 NULL, "null", GPUS("h100", 1),
	 DENIED("ClassBudgetExceeded", DEV ": " KH100 " 2 + 1 > 1",
		CK(DEV, KH100, 1, 2, 1, -2,
		   false) "," CK("tenant-acme", "nvidia.com/h100", null, 2, 1,
				 null, false))},
	{"check-order", MULTI, DEV, NULL, "null",
	 "{'gpus':[{'class':'h100'},{'class':'a10'}]}",
	 DENIED("TotalBudgetExceeded", DEV ": " KTOT " 1 + 2 > 2",
		CK(DEV, KTOT, 2, 1, 2, -1, false) "," CK(
			"tenant-acme", KA10, 3, 2, 1, 0,
			true) "," CK("tenant-acme", KH100, 8, 4, 1, 3,
				     true) "," CK("tenant-acme", KTOT, 9, 6, 2,
						  1, true) "," CK("tenant-root",
								  KTOT, 10, 6,
								  2, 2, true))},
	/* Exact boundaries: used + growth == budget is allowed (remaining 0),
	 * one more is denied; for a class key and for the total key. */
	{"class-exact-boundary",
	 CLASSES TREE "B " DEV " h100 4; U " DEV " h100 vm-d 1", DEV, NULL,
	 "null", GPUS("h100", 3), WITHIN(CK(DEV, KH100, 4, 1, 3, 0, true))},
	{"class-one-over-boundary",
	 CLASSES TREE "B " DEV " h100 4; U " DEV " h100 vm-d 1", DEV, NULL,
	 "null", GPUS("h100", 4),
	 DENIED("ClassBudgetExceeded", DEV ": " KH100 " 1 + 4 > 4",
		CK(DEV, KH100, 4, 1, 4, -1, false))},
	{"total-exact-boundary",
	 CLASSES TREE "B tenant-acme * 5; U tenant-acme a10 vm-a 3", DEV, NULL,
	 "null", GPUS("h100", 2),
	 WITHIN(CK("tenant-acme", KTOT, 5, 3, 2, 0, true))},
	{"total-one-over-boundary",
	 CLASSES TREE "B tenant-acme * 5; U tenant-acme a10 vm-a 3", DEV, NULL,
	 "null", GPUS("h100", 3),
	 DENIED("TotalBudgetExceeded", "tenant-acme: " KTOT " 3 + 3 > 5",
		CK("tenant-acme", KTOT, 5, 3, 3, -1, false))},
	{"total-exact-boundary-update",
	 CLASSES TREE "B tenant-acme * 5; U tenant-acme a10 vm-a 3", DEV, NULL,
	 GPUS("h100", 1), GPUS("h100", 3),
	 WITHIN(CK("tenant-acme", KTOT, 5, 3, 2, 0, true))},
	{"class-and-total-exact-boundary",
	 CLASSES TREE "B tenant-acme h100 4; B tenant-acme * 4; "
		      "U tenant-acme-prod h100 vm-p 2",
	 DEV, NULL, "null", GPUS("h100", 2),
	 WITHIN(CK("tenant-acme", KH100, 4, 2, 2, 0,
		   true) "," CK("tenant-acme", KTOT, 4, 2, 2, 0, true))},
	{"class-swap-no-total-growth", MULTI, DEV, NULL, GPUS("h100", 1),
	 GPUS("a10", 1), WITHIN(CK("tenant-acme", KA10, 3, 2, 1, 0, true))},
};

static json_t *adm_req(const struct adm_row *r)
{
	char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{'namespace':'%s','kind':'%s','name':'x','old':%s,'new':%s}",
		 r->ns, r->kind ? r->kind : "VMInstance", r->old, r->new);
	return tv(buf);
}

START_TEST(verdict_admission_rows)
{
	const struct adm_row *r = &adm_rows[_i];
	state_t *st = world(r->world);
	json_t *req = adm_req(r);

	assert_verdict(st, model__verdict_admission, "admission", req, r->want,
		       r->name);
	json_decref(req);
	state_free(st);
}
END_TEST

/* The example of DESIGN 3.5, byte for byte, request included. */
START_TEST(verdict_admission_bytes)
{
	state_t *st = world(ACME);
	json_t *req =
		tvj("{\"namespace\":\"tenant-acme-dev\",\"kind\":"
		    "\"VMInstance\",\"name\":\"x\",\"old\":null,"
		    "\"new\":{\"gpus\":[{\"class\":\"h100\",\"count\":2}]}}");
	json_t *v = NULL;
	char *text;

	ck_assert_int_eq(model__verdict_admission(st, req, &v, NULL), 0);
	text = canon(v);
	ck_assert_str_eq(
		text,
		"{\"allowed\":false,\"checks\":[{\"budget\":4,\"growth\":2,"
		"\"key\":\"h100.gpuclass.cozystack.io/devices\",\"ok\":true,"
		"\"remaining\":0,\"tenant\":\"tenant-acme-dev\",\"used\":2},"
		"{\"budget\":8,\"growth\":2,\"key\":"
		"\"h100.gpuclass.cozystack.io/devices\",\"ok\":false,"
		"\"remaining\":-1,\"tenant\":\"tenant-acme\",\"used\":7}],"
		"\"message\":\"tenant-acme: h100.gpuclass.cozystack.io/devices "
		"7 + 2 > 8\",\"reason\":\"ClassBudgetExceeded\",\"request\":"
		"{\"kind\":\"VMInstance\",\"name\":\"x\",\"namespace\":"
		"\"tenant-acme-dev\",\"new\":{\"gpus\":[{\"class\":\"h100\","
		"\"count\":2}]},\"old\":null},\"type\":\"admission\","
		"\"warnings\":[]}");
	free(text);
	json_decref(v);
	json_decref(req);
	state_free(st);
}
END_TEST

static const char *const adm_bad[] = {
	"{'namespace':'tenant-a','kind':'Pod','new':null}",
	"{'namespace':'tenant-a','kind':'vminstance','new':null}",
	"{'namespace':'tenant-a','kind':5,'new':null}",
	"{'namespace':'tenant-a','new':null}",
	"{'kind':'VMInstance','new':null}",
	"{'namespace':5,'kind':'VMInstance','new':null}",
	"{'namespace':null,'kind':'KubernetesNodes'}",
	"['tenant-a','VMInstance']",
	"'tenant-a'",
};

START_TEST(verdict_admission_request_errors)
{
	state_t *st = world(ACME);
	json_t *req = tv(adm_bad[_i]), *sentinel = tvj("1"), *v = sentinel;
	struct lg_error err = {0};

	/* The verdict pointer is cleared, never left pointing anywhere. */
	ck_assert_int_eq(model__verdict_admission(st, req, &v, &err),
			 LG_EINVAL);
	ck_assert_ptr_null(v);
	json_decref(sentinel);
	ck_assert_int_eq(err.code, LG_EINVAL);
	ck_assert_msg(err.msg[0] != '\0', "no error text");
	ck_assert_int_eq(model__verdict_admission(st, req, &v, NULL),
			 LG_EINVAL);
	json_decref(req);
	state_free(st);
}
END_TEST

/* A NUL in the namespace would shorten the name the tree is walked by. */
START_TEST(verdict_admission_nul_namespace)
{
	state_t *st = world(ACME);
	json_t *req = tv("{'kind':'VMInstance','new':null}"), *v = NULL;

	json_object_set_new(req, "namespace", json_stringn("tenant-a\0b", 10));
	ck_assert_int_eq(model__verdict_admission(st, req, &v, NULL),
			 LG_EINVAL);
	ck_assert_ptr_null(v);
	json_decref(req);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Declaration (DESIGN 3.2).                                                */

/*
 * h100 usage: root own 1, acme own 1, dev 2, prod own 3 (4 with prod-x),
 * prod-x 1, gamma 2, so U(acme) = 7 and U(root) = 10; beta uses 1 a10.
 * h100 budgets: root 20, acme 10, prod 4 (carved from acme), prod-x 1
 * (carved from prod, not from acme), beta 5 (carved from root).
 */
#define DECL                                                               \
	CLASSES TREE                                                       \
		"T tenant-acme-prod-x; T tenant-beta; T tenant-gamma; "    \
		"B tenant-root h100 20; B tenant-acme h100 10; "           \
		"B tenant-acme-prod h100 4; B tenant-acme-prod-x h100 1; " \
		"B tenant-beta h100 5; U tenant-root h100 r1 1; "          \
		"U tenant-acme h100 a1 1; U tenant-acme-dev h100 d1 2; "   \
		"U tenant-acme-prod h100 p1 3; "                           \
		"U tenant-acme-prod-x h100 x1 1; "                         \
		"U tenant-gamma h100 g1 2; U tenant-beta a10 b1 1"
#define Q(k, v) "{'" k "':" #v "}"
#define WARN(w) ",'warnings':[" w "]"
#define ALLOWED(reason, msg, checks, warnings)                       \
	"{'allowed':true,'reason':'" reason "','message':'" msg "'," \
	"'checks':[" checks "]" warnings "}"
/* CK for acme's h100 budget; spelled out, as a nested macro would expand
 * true and false to 1 and 0 before stringizing them. */
#define ACME_H100(u, g, r, ok)                                             \
	"{'tenant':'tenant-acme','key':'" KH100 "','budget':10,'used':" #u \
	",'growth':" #g ",'remaining':" #r ",'ok':" #ok "}"
#define BELOW(k, v, u) "'" k ": " #v " is below the subtree usage " #u "'"

struct decl_row {
	const char *name, *world, *ns, *old, *new, *want;
};

static const struct decl_row decl_rows[] = {
	{"carve-and-pool", DECL, DEV, "null", Q(KH100, 3),
	 WITHIN(ACME_H100(5, 3, 2, true))},
	{"exceeds-parent", DECL, DEV, "null", Q(KH100, 6),
	 DENIED("ExceedsParentBudget", "tenant-acme: " KH100 " 5 + 6 > 10",
		ACME_H100(5, 6, -1, false))},
	{"exact-fit", DECL, DEV, "null", Q(KH100, 5),
	 WITHIN(ACME_H100(5, 5, 0, true))},
	{"shrink-is-not-checked", DECL, DEV, Q(KH100, 8), Q(KH100, 6),
	 NO_GROWTH},
	/* Equal is not growth: 6 would not fit (5 + 6 > 10), and is not
	 * checked. */
	{"unchanged-is-not-checked", DECL, DEV, Q(KH100, 6), Q(KH100, 6),
	 NO_GROWTH},
	{"growth-checks-whole-value", DECL, DEV, Q(KH100, 4), Q(KH100, 6),
	 DENIED("ExceedsParentBudget", "tenant-acme: " KH100 " 5 + 6 > 10",
		ACME_H100(5, 6, -1, false))},
	{"old-quantity-string", DECL, DEV, Q(KH100, '8'), Q(KH100, 6),
	 NO_GROWTH},
	{"old-invalid-counts-undeclared", DECL, DEV, Q(KH100, '8.5'),
	 Q(KH100, 6),
	 DENIED("ExceedsParentBudget", "tenant-acme: " KH100 " 5 + 6 > 10",
		ACME_H100(5, 6, -1, false))},
	{"old-wrong-type-declares-nothing", DECL, DEV, "'x'", Q(KH100, 3),
	 WITHIN(ACME_H100(5, 3, 2, true))},
	{"below-usage-warns", DECL, DEV, "null", Q(KH100, 1),
	 "{'allowed':true,'reason':'WithinBudget','message':'within budget',"
	 "'checks':[" ACME_H100(5, 1, 4,
				true) "]" WARN(BELOW(KH100, 1, 2)) "}"},
	{"shrink-while-over-warns", DECL, DEV, Q(KH100, 3), Q(KH100, 1),
	 ALLOWED("NoGrowth", "no growth", "", WARN(BELOW(KH100, 1, 2)))},
	{"carvers-under-root", DECL, "tenant-acme", "null", Q(KH100, 10),
	 WITHIN(CK("tenant-root", KH100, 20, 8, 10, 2, true))},
	{"own-subtree-and-its-carvers-ignored", DECL, "tenant-acme-prod",
	 Q(KH100, 4), Q(KH100, 6), WITHIN(ACME_H100(3, 6, 1, true))},
	{"namespace-not-in-state", DECL, "tenant-acme-new", "null", Q(KH100, 3),
	 WITHIN(ACME_H100(7, 3, 0, true))},
	{"no-declaring-ancestor", DECL, DEV, "null", Q(KTOT, 3), WITHIN("")},
	{"total-key", DECL "; B tenant-root * 12", "tenant-gamma", "null",
	 Q(KTOT, 1),
	 "{'allowed':true,'reason':'WithinBudget','message':'within budget',"
	 "'checks':[" CK("tenant-root", KTOT, 12, 9, 1, 2,
			 true) "]" WARN(BELOW(KTOT, 1, 2)) "}"},
	{"unknown-class-key-warns", DECL, DEV, "null",
	 Q("b200.gpuclass.cozystack.io/devices", 2),
	 ALLOWED("WithinBudget", "within budget", "",
		 WARN("'b200.gpuclass.cozystack.io/devices: class b200 is "
		      "not in the class table'"))},
	{"raw-and-other-keys-ignored", DECL, DEV, "null",
	 "{'nvidia.com/h100':'abc','cpu':'x','limits.nvidia.com/a10':-1}",
	 NO_GROWTH},
	{"empty", DECL, DEV, "null", "{}", NO_GROWTH},
	{"invalid-key-before-values", DECL, DEV, "null",
	 "{'" KA10 "':'abc','requests." KTOT "':1}",
	 DENIED("InvalidBudgetKey", "invalid budget key requests." KTOT, "")},
	{"invalid-key-domain", DECL, DEV, "null",
	 Q("gpuclass.cozystack.io/memory", 1),
	 DENIED("InvalidBudgetKey",
		"invalid budget key gpuclass.cozystack.io/memory", "")},
	{"invalid-key-not-a-tenant", DECL, "default", "null",
	 Q("a.b.gpuclass.cozystack.io/devices", 1),
	 DENIED("InvalidBudgetKey",
		"invalid budget key a.b.gpuclass.cozystack.io/devices", "")},
	{"invalid-quantity-fraction", DECL, DEV, "null", Q(KH100, '1.5'),
	 DENIED("InvalidQuantity", "invalid quantity for " KH100, "")},
	{"invalid-quantity-milli", DECL, DEV, "null", Q(KH100, '500m'),
	 DENIED("InvalidQuantity", "invalid quantity for " KH100, "")},
	{"invalid-quantity-negative", DECL, DEV, "null", Q(KH100, -1),
	 DENIED("InvalidQuantity", "invalid quantity for " KH100, "")},
	{"invalid-quantity-space", DECL, DEV, "null", Q(KH100, ' 8'),
	 DENIED("InvalidQuantity", "invalid quantity for " KH100, "")},
	{"invalid-quantity-types", DECL, DEV, "null",
	 "{'" KA10 "':true,'" KH100 "':null}",
	 DENIED("InvalidQuantity", "invalid quantity for " KA10, "")},
	{"invalid-quantity-real", DECL, DEV, "null", Q(KTOT, 2.5),
	 DENIED("InvalidQuantity", "invalid quantity for " KTOT, "")},
	{"integral-real-and-suffix", DECL, DEV, "null",
	 "{'" KA10 "':'1k','" KH100 "':2.0}", WITHIN(ACME_H100(5, 2, 3, true))},
	{"not-a-tenant", DECL, "default", "null", Q(KH100, 3),
	 ALLOWED("NotATenant", "namespace is not a tenant", "", "")},
	{"root-unconstrained", DECL, "tenant-root", "null", Q(KH100, 5),
	 ALLOWED("Unconstrained", "tenant-root is unconstrained", "",
		 WARN(BELOW(KH100, 5, 10)))},
	{"root-invalid-quantity", DECL, "tenant-root", "null", Q(KTOT, 'x'),
	 DENIED("InvalidQuantity", "invalid quantity for " KTOT, "")},
	{"keys-sorted-first-failure",
	 DECL "; B tenant-acme a10 1; U tenant-acme-prod a10 p2 1", DEV, "null",
	 "{'" KH100 "':6,'" KA10 "':1}",
	 DENIED("ExceedsParentBudget", "tenant-acme: " KA10 " 1 + 1 > 1",
		CK("tenant-acme", KA10, 1, 1, 1, -1,
		   false) "," ACME_H100(5, 6, -1, false))},
	{"saturating-sums",
	 CLASSES TREE "B tenant-acme h100 9223372036854775807; "
		      "B tenant-acme-prod h100 9223372036854775807; "
		      "U tenant-acme h100 a1 1",
	 DEV, "null", Q(KH100, '9Ei'),
	 DENIED("ExceedsParentBudget",
		"tenant-acme: " KH100 " 9223372036854775807 + "
		"9223372036854775807 > 9223372036854775807",
		CK("tenant-acme", KH100, 9223372036854775807,
		   9223372036854775807, 9223372036854775807,
		   -9223372036854775808, false))},
};

static json_t *decl_req(const struct decl_row *r)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), "{'namespace':'%s','old':%s,'new':%s}",
		 r->ns, r->old, r->new);
	return tv(buf);
}

START_TEST(verdict_declaration_rows)
{
	const struct decl_row *r = &decl_rows[_i];
	state_t *st = world(r->world);
	json_t *req = decl_req(r);

	assert_verdict(st, model__verdict_declaration, "declaration", req,
		       r->want, r->name);
	json_decref(req);
	state_free(st);
}
END_TEST

static const char *const decl_bad[] = {
	"{'old':null,'new':{}}",
	"{'namespace':7,'new':{}}",
	"{'namespace':'tenant-a'}",
	"{'namespace':'tenant-a','new':null}",
	"{'namespace':'tenant-a','new':[]}",
	"{'namespace':'tenant-a','new':'8'}",
	"['tenant-a']",
	"null",
};

START_TEST(verdict_declaration_request_errors)
{
	state_t *st = world(DECL);
	json_t *req = tv(decl_bad[_i]), *v = NULL;
	struct lg_error err = {0};

	ck_assert_int_eq(model__verdict_declaration(st, req, &v, &err),
			 LG_EINVAL);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(err.code, LG_EINVAL);
	ck_assert_msg(err.msg[0] != '\0', "no error text");
	json_decref(req);
	state_free(st);
}
END_TEST

/* Bounded input: more keys than MODEL_MAX_ITEMS is a request error. */
START_TEST(verdict_declaration_too_many_keys)
{
	state_t *st = world(DECL);
	json_t *req = tv("{'namespace':'tenant-acme-dev'}"),
	       *nw = json_object();
	json_t *v = NULL;
	char key[32];

	for (int i = 0; i <= MODEL_MAX_ITEMS; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		json_object_set_new(nw, key, json_integer(1));
	}
	json_object_set_new(req, "new", nw);
	ck_assert_int_eq(model__verdict_declaration(st, req, &v, NULL),
			 LG_ELIMIT);
	ck_assert_ptr_null(v);
	json_object_del(nw, "k0");
	ck_assert_int_eq(model__verdict_declaration(st, req, &v, NULL), 0);
	ck_assert_str_eq(json_string_value(json_object_get(v, "reason")),
			 "NoGrowth");
	json_decref(v);
	json_decref(req);
	state_free(st);
}
END_TEST

/* The same request with its maps in another member order gives the same
 * bytes: keys are judged sorted, never in input order. */
START_TEST(verdict_declaration_order_independent)
{
	state_t *st = world(DECL "; B tenant-acme a10 1");
	json_t *a =
		tv("{'namespace':'tenant-acme-dev','old':null,'new':{'" KH100
		   "':6,'" KA10 "':2}}");
	json_t *b = tv("{'new':{'" KA10 "':2,'" KH100 "':6},'old':null,"
		       "'namespace':'tenant-acme-dev'}");
	json_t *va = NULL, *vb = NULL;
	char *ta, *tb;

	ck_assert_int_eq(model__verdict_declaration(st, a, &va, NULL), 0);
	ck_assert_int_eq(model__verdict_declaration(st, b, &vb, NULL), 0);
	ta = canon(va);
	tb = canon(vb);
	ck_assert_str_eq(ta, tb);
	ck_assert_str_eq(json_string_value(json_object_get(va, "reason")),
			 "ExceedsParentBudget");
	ck_assert_str_eq(
		jstr(json_array_get(json_object_get(va, "checks"), 0), "key"),
		KA10);
	free(ta);
	free(tb);
	json_decref(va);
	json_decref(vb);
	json_decref(a);
	json_decref(b);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Remaining (DESIGN 3.3) and overcommit (3.4).                             */

/*
 * dev uses h100 4 and a10 1; acme 2 h100 of its own (so 6 h100, 7 in all).
 * dev h100: 6-4 = 2 at dev ties with acme's 8-6 = 2 and 9-7 = 2: the
 * nearest tenant wins; at acme the class key comes before the total key.
 */
#define REM                                                                   \
	CLASSES TREE "B tenant-root * 20; B tenant-acme h100 8; "             \
		     "B tenant-acme * 9; B tenant-acme-dev h100 6; "          \
		     "R tenant-acme-prod nvidia.com/a10; "                    \
		     "U tenant-acme h100 a1 2; U tenant-acme-dev h100 d1 4; " \
		     "U tenant-acme-dev a10 d2 1"
#define LIM(v, t, k) \
	"{'remaining':" #v ",'limitedBy':{'tenant':'" t "','key':'" k "'}"
#define UNBOUNDED "{'remaining':null,'limitedBy':null"
#define BLK(b)	  ",'blocked':" #b "}"
#define REMAINING(a10, h100, total) \
	"{'classes':{'a10':" a10 ",'h100':" h100 "},'total':" total "}"

struct rem_row {
	const char *name, *world, *ns, *want;
};

static const struct rem_row rem_rows[] = {
	{"nearest-tie-wins", REM, DEV,
	 REMAINING(LIM(2, "tenant-acme", KTOT) BLK(false),
		   LIM(2, DEV, KH100) BLK(false),
		   LIM(2, "tenant-acme", KTOT) "}")},
	{"class-key-before-total-key", REM, "tenant-acme-prod",
	 REMAINING(LIM(2, "tenant-acme", KTOT) BLK(true),
		   LIM(2, "tenant-acme", KH100) BLK(false),
		   LIM(2, "tenant-acme", KTOT) "}")},
	{"later-smaller-wins", REM "; U tenant-root h100 r1 12", DEV,
	 REMAINING(LIM(1, "tenant-root", KTOT) BLK(false),
		   LIM(1, "tenant-root", KTOT) BLK(false),
		   LIM(1, "tenant-root", KTOT) "}")},
	{"root-only", REM "; U tenant-root a10 r1 11", "tenant-zeta",
	 REMAINING(LIM(2, "tenant-root", KTOT) BLK(false),
		   LIM(2, "tenant-root", KTOT) BLK(false),
		   LIM(2, "tenant-root", KTOT) "}")},
	{"over-budget-is-negative", REM "; U tenant-acme-dev h100 d3 5", DEV,
	 REMAINING(LIM(-3, "tenant-acme", KTOT) BLK(false),
		   LIM(-3, DEV, KH100) BLK(false),
		   LIM(-3, "tenant-acme", KTOT) "}")},
	{"not-a-tenant", REM, "default",
	 REMAINING(UNBOUNDED BLK(false), UNBOUNDED BLK(false), UNBOUNDED "}")},
	{"blocked-without-budgets",
	 CLASSES "T tenant-root; T tenant-x; R tenant-root nvidia.com/h100",
	 "tenant-x",
	 REMAINING(UNBOUNDED BLK(false), UNBOUNDED BLK(true), UNBOUNDED "}")},
	{"unblocked-by-class-key",
	 CLASSES "T tenant-root; T tenant-x; R tenant-root nvidia.com/h100; "
		 "B tenant-root h100 3",
	 "tenant-x",
	 REMAINING(UNBOUNDED BLK(false),
		   LIM(3, "tenant-root", KH100) BLK(false), UNBOUNDED "}")},
};

START_TEST(verdict_remaining_rows)
{
	const struct rem_row *r = &rem_rows[_i];
	state_t *st = world(r->world);
	json_t *v = state_remaining_json(st, r->ns);
	const struct nsrec *rec = model__state_ns(st, r->ns);

	assert_json(v, r->want, r->name);
	/* The replay JSON's members say the same for a recorded tenant. */
	if (rec != NULL) {
		json_t *c = model__tenant_remaining_json(st, rec);
		json_t *t = model__tenant_remaining_total_json(st, rec);

		assert_same(c, json_object_get(v, "classes"), r->name);
		assert_same(t, json_object_get(v, "total"), r->name);
		json_decref(c);
		json_decref(t);
	}
	json_decref(v);
	state_free(st);
}
END_TEST

/*
 * acme: a10 budget 0 but 1 used; h100 budget 4, 5 used, dev 3 + prod 2 = 5
 * carved (prod-x's 9 carves from prod, not acme); total 100, 6 used.
 */
#define OC                                                                   \
	CLASSES TREE "T tenant-acme-prod-x; B tenant-acme h100 4; "          \
		     "B tenant-acme-dev h100 3; B tenant-acme-prod h100 2; " \
		     "B tenant-acme-prod-x h100 9; B tenant-acme * 100; "    \
		     "B tenant-acme a10 0; U tenant-acme-dev h100 d1 5; "    \
		     "U tenant-acme-prod a10 p1 1"
#define OVER(k, b, u, c) \
	"{'key':'" k "','budget':" #b ",'used':" #u ",'carved':" #c "}"

static const struct rem_row oc_rows[] = {
	{"used-and-carved", OC, "tenant-acme",
	 "[" OVER(KA10, 0, 1, 0) "," OVER(KH100, 4, 5, 5) "]"},
	{"carved-only", OC, "tenant-acme-prod", "[" OVER(KH100, 2, 0, 9) "]"},
	{"used-only", OC, DEV, "[" OVER(KH100, 3, 5, 0) "]"},
	{"within", OC, "tenant-acme-prod-x", "[]"},
	{"no-budgets", OC, "tenant-root", "[]"},
	{"equal-is-not-over",
	 CLASSES TREE "B tenant-acme h100 5; B tenant-acme-dev h100 5; "
		      "U tenant-acme-prod h100 p1 5",
	 "tenant-acme", "[]"},
	{"total-key",
	 CLASSES TREE "B tenant-acme * 2; B tenant-acme-dev * 2; "
		      "B tenant-acme-prod * 1; U tenant-acme-dev h100 d1 1; "
		      "U tenant-acme-prod a10 p1 1",
	 "tenant-acme", "[" OVER(KTOT, 2, 2, 3) "]"},
};

START_TEST(verdict_overcommit_rows)
{
	const struct rem_row *r = &oc_rows[_i];
	state_t *st = world(r->world);
	const struct nsrec *rec = model__state_ns(st, r->ns);
	json_t *v;

	ck_assert_ptr_nonnull(rec);
	v = model__tenant_overcommit_json(st, rec);
	assert_json(v, r->want, r->name);
	json_decref(v);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* eval: Admission, Declaration, Remaining on a --db state or inline.       */

#define EVENTS                                                             \
	"{'events':[{'type':'CLASS','class':'h100','definition':"          \
	"{'name':'h100','resourceNames':['nvidia.com/h100']}},"            \
	"{'type':'TENANT','namespace':'tenant-root','parent':null},"       \
	"{'type':'TENANT','namespace':'tenant-a','parent':'tenant-root'}," \
	"{'type':'BUDGET','namespace':'tenant-a','key':'" KH100            \
	"','value':2},"                                                    \
	"{'type':'RESERVE','namespace':'tenant-a','class':'h100','kind':"  \
	"'VMInstance','name':'vm1','uid':'u1','before':0,'after':1}]}"
#define ADM_A                                                                  \
	"'namespace':'tenant-a','kind':'VMInstance','name':'vm2','old':null,'" \
	"new':" GPUS("h100", 2)

START_TEST(verdict_eval_no_state)
{
	struct eval_ctx ctx = {.classes = NULL, .state = NULL};
	eval_fn *fns[] = {model__eval_admission, model__eval_declaration,
			  model__eval_remaining};
	json_t *in = tv("{" ADM_A "}"), *out = NULL;
	struct lg_error err = {0};

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		memset(&err, 0, sizeof(err));
		ck_assert_int_eq(fns[i](&ctx, in, &out, &err), LG_EINVAL);
		ck_assert_ptr_null(out);
		ck_assert_str_eq(err.msg, "no state: pass --db DIR or an "
					  "inline \"state\"");
		ck_assert_int_eq(fns[i](NULL, in, &out, &err), LG_EINVAL);
	}
	json_decref(in);
}
END_TEST

/* An inline state wins over the --db one, and is not echoed. */
START_TEST(verdict_eval_inline_state)
{
	state_t *db = world(CLASSES "T tenant-root; T tenant-a");
	struct eval_ctx ctx = {.state = db};
	json_t *in = tv("{'state':" EVENTS "," ADM_A "}"), *out = NULL;
	json_t *bare = tv("{" ADM_A "}");
	struct lg_error err = {0};

	ck_assert_int_eq(model__eval_admission(&ctx, in, &out, &err), 0);
	ck_assert_ptr_nonnull(json_object_get(in, "state"));
	ck_assert_msg(json_equal(json_object_get(out, "request"), bare),
		      "request must be the input without its state");
	json_object_del(out, "request");
	assert_json(out,
		    "{'type':'admission','allowed':false,"
		    "'reason':'ClassBudgetExceeded','message':'tenant-a: " KH100
		    " 1 + 2 > 2','checks':[" CK("tenant-a", KH100, 2, 1, 2, -1,
						false) "],'warnings':[]}",
		    "inline");
	json_decref(out);
	/* Without the inline state the --db state (no budgets) answers. */
	ck_assert_int_eq(model__eval_admission(&ctx, bare, &out, &err), 0);
	ck_assert_str_eq(json_string_value(json_object_get(out, "reason")),
			 "WithinBudget");
	json_decref(out);
	json_decref(bare);
	json_decref(in);
	state_free(db);
}
END_TEST

START_TEST(verdict_eval_declaration_and_remaining)
{
	struct eval_ctx ctx = {0};
	json_t *d = tv("{'state':" EVENTS ",'namespace':'tenant-a-b',"
		       "'old':null,'new':" Q(KH100, 2) "}");
	json_t *r = tv("{'state':" EVENTS ",'namespace':'tenant-a'}");
	json_t *out = NULL;

	ck_assert_int_eq(model__eval_declaration(&ctx, d, &out, NULL), 0);
	json_object_del(out, "request");
	assert_json(out,
		    "{'type':'declaration','allowed':false,"
		    "'reason':'ExceedsParentBudget','message':'tenant-a: " KH100
		    " 1 + 2 > 2','checks':[" CK("tenant-a", KH100, 2, 1, 2, -1,
						false) "],'warnings':[]}",
		    "declaration");
	json_decref(out);
	ck_assert_int_eq(model__eval_remaining(&ctx, r, &out, NULL), 0);
	assert_json(out,
		    "{'classes':{'h100':" LIM(1, "tenant-a", KH100)
			    BLK(false) "},'total':" UNBOUNDED "}}",
		    "remaining");
	json_decref(out);
	json_decref(d);
	json_decref(r);
}
END_TEST

static const char *const eval_bad[] = {
	"{'state':{'events':5},'namespace':'tenant-a'}",
	"{'state':[],'namespace':'tenant-a'}",
	"{'state':null,'namespace':'tenant-a'}",
	"{'state':{'events':[{'type':'BOGUS'}]},'namespace':'tenant-a'}",
	"{'state':{'events':[{'type':'TENANT','namespace':'tenant-a',"
	"'parent':'tenant-root'}]},'namespace':'tenant-a'}",
	"{'state':{'events':[]},'namespace':5}",
	"{'state':{'events':[]}}",
	"'tenant-a'",
};

START_TEST(verdict_eval_errors)
{
	state_t *db = world(ACME);
	struct eval_ctx ctx = {.state = db};
	eval_fn *fns[] = {model__eval_admission, model__eval_declaration,
			  model__eval_remaining};
	json_t *in = tv(eval_bad[_i]), *out = NULL;
	struct lg_error err = {0};

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		memset(&err, 0, sizeof(err));
		ck_assert_int_lt(fns[i](&ctx, in, &out, &err), 0);
		ck_assert_ptr_null(out);
		ck_assert_msg(err.msg[0] != '\0', "no error text");
	}
	json_decref(in);
	state_free(db);
}
END_TEST

/* Verdicts only read: the replay JSON is the same before and after. */
START_TEST(verdict_reads_only)
{
	state_t *st = world(DECL);
	json_t *before = state_to_json(st, NULL), *after, *v = NULL;

	for (size_t i = 0; i < sizeof(decl_rows) / sizeof(decl_rows[0]); i++) {
		json_t *req = decl_req(&decl_rows[i]);

		ck_assert_int_eq(model__verdict_declaration(st, req, &v, NULL),
				 0);
		json_decref(v);
		json_decref(req);
	}
	for (size_t i = 0; i < sizeof(adm_rows) / sizeof(adm_rows[0]); i++) {
		json_t *req = adm_req(&adm_rows[i]);

		ck_assert_int_eq(model__verdict_admission(st, req, &v, NULL),
				 0);
		json_decref(v);
		json_decref(req);
	}
	after = state_to_json(st, NULL);
	assert_same(after, before, "state");
	ck_assert_int_eq(model__state_check(st, NULL), 0);
	json_decref(before);
	json_decref(after);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */

static void add_loop(Suite *s, const char *name, const TTest *t, int n)
{
	TCase *tc = tcase_create(name);

	tcase_add_loop_test(tc, t, 0, n);
	suite_add_tcase(s, tc);
}

static void add_one(Suite *s, const char *name, const TTest *t)
{
	add_loop(s, name, t, 1);
}

/* DESIGN 11 rule 3 for plain POSTs: what an Idempotency-Key may be. */
START_TEST(verdict_idempotency_key_bounds)
{
	char k[VERDICT_IDEMPOTENCY_KEY_MAX + 2];

	memset(k, 'k', sizeof(k));
	ck_assert(verdict_idempotency_key_valid("a", 1));
	ck_assert(verdict_idempotency_key_valid("job 42/x~", 9));
	ck_assert(
		verdict_idempotency_key_valid(k, VERDICT_IDEMPOTENCY_KEY_MAX));
	ck_assert(!verdict_idempotency_key_valid(
		k, VERDICT_IDEMPOTENCY_KEY_MAX + 1));
	ck_assert(!verdict_idempotency_key_valid("", 0));
	ck_assert(!verdict_idempotency_key_valid(NULL, 0));
	ck_assert(!verdict_idempotency_key_valid(" a", 2));
	ck_assert(!verdict_idempotency_key_valid("a ", 2));
	ck_assert(!verdict_idempotency_key_valid("a\x01", 2));
	ck_assert(!verdict_idempotency_key_valid("a\x7f", 2));
	ck_assert(!verdict_idempotency_key_valid("a\xc3\xa9", 3));
	/* len, not the NUL, decides. */
	ck_assert(!verdict_idempotency_key_valid("a\0b", 3));
}
END_TEST

/* verdict_record_key as its contract says, from a tree: the requester's
 * uid when it is a string, else the idempotencyKey; a key only when not
 * empty and within its kind's bound. */
static void record_key_reference(const json_t *v, struct verdict_key *k)
{
	const json_t *u = json_object_get(json_object_get(v, "requester"),
					  "uid");
	enum verdict_key_kind kind = VERDICT_KEY_REVIEW;
	size_t max = VERDICT_REVIEW_UID_MAX;

	k->kind = VERDICT_KEY_NONE;
	k->s[0] = '\0';
	if (!json_is_string(u)) {
		u = json_object_get(v, "idempotencyKey");
		kind = VERDICT_KEY_IDEMPOTENCY;
		max = VERDICT_IDEMPOTENCY_KEY_MAX;
	}
	if (json_is_string(u) && json_string_length(u) > 0 &&
	    json_string_length(u) <= max &&
	    strlen(json_string_value(u)) == json_string_length(u)) {
		k->kind = kind;
		strcpy(k->s, json_string_value(u));
	}
}

static uint64_t key_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A key-ish value: absent (NULL), not a string, or a string of a length
 * around the bounds, sometimes with a character to escape. */
static json_t *key_value(uint64_t *s)
{
	char buf[VERDICT_REVIEW_UID_MAX + 4];
	size_t n;

	switch (key_rnd(s) % 6) {
	case 0:
		return NULL;
	case 1:
		return key_rnd(s) % 2 ? json_integer(7) : json_null();
	default:
		n = key_rnd(s) % 4 == 0 ? VERDICT_REVIEW_UID_MAX - 1 +
						  key_rnd(s) % 3
					: key_rnd(s) % 12;
		for (size_t i = 0; i < n; i++)
			buf[i] = "ab-0\"\\\n\xc3\xa9/"[key_rnd(s) % 10];
		/* é is two bytes: end on a whole character. */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)buf[i] == 0xc3 &&
			    (i + 1 == n || (unsigned char)buf[i + 1] != 0xa9))
				buf[i] = 'x';
			else if ((unsigned char)buf[i] == 0xa9 &&
				 (i == 0 || (unsigned char)buf[i - 1] != 0xc3))
				buf[i] = 'y';
		return json_stringn(buf, n);
	}
}

/* Random records, written canonically (read in place) and compactly in
 * another order (parsed), give the key their tree has. */
START_TEST(verdict_record_key_property)
{
	uint64_t s = 0x7ec0de5ULL, canon = 0;

	for (int i = 0; i < 20000; i++) {
		json_t *v = json_object(), *req = NULL, *x;
		struct verdict_key want, got;
		char *texts[2];

		json_object_set_new(v, "allowed", json_boolean(i % 2));
		json_object_set_new(v, "id", json_integer(i + 1));
		switch (key_rnd(&s) % 4) {
		case 0:
			break;
		case 1:
			json_object_set_new(v, "requester", json_string("x"));
			break;
		default:
			req = json_object();
			if ((x = key_value(&s)) != NULL)
				json_object_set_new(req, "uid", x);
			json_object_set_new(req, "username",
					    json_string("system:apiserver"));
			json_object_set_new(v, "requester", req);
		}
		if ((x = key_value(&s)) != NULL)
			json_object_set_new(v, "idempotencyKey", x);
		/* A real, or a nested requester, now and then. */
		if (key_rnd(&s) % 5 == 0)
			json_object_set_new(v, "ratio", json_real(0.5));
		if (key_rnd(&s) % 5 == 0)
			json_object_set_new(
				v, "request",
				json_pack("{s{ss}}", "requester", "uid", "in"));
		record_key_reference(v, &want);
		texts[0] = json_canonical(v);
		texts[1] = json_dumps(v, JSON_COMPACT);
		canon += model__jcs_own_form(texts[0], strlen(texts[0]));
		for (int t = 0; t < 2; t++) {
			int rc = verdict_record_key(texts[t], strlen(texts[t]),
						    &got);

			ck_assert_msg(rc == (want.kind != VERDICT_KEY_NONE) &&
					      got.kind == want.kind &&
					      strcmp(got.s, want.s) == 0,
				      "%s: key %d \"%s\", want %d \"%s\"",
				      texts[t], got.kind, got.s, want.kind,
				      want.s);
			free(texts[t]);
		}
		json_decref(v);
	}
	/* Most canonical records were read in place. */
	ck_assert_uint_gt(canon, 10000);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

void model_tests_verdict(Suite *s)
{
	add_loop(s, "model__verdict_admission", verdict_admission_rows,
		 N(adm_rows));
	add_one(s, "verdict_admission_bytes", verdict_admission_bytes);
	add_loop(s, "verdict_admission_errors",
		 verdict_admission_request_errors, N(adm_bad));
	add_one(s, "verdict_admission_nul", verdict_admission_nul_namespace);
	add_loop(s, "model__verdict_declaration", verdict_declaration_rows,
		 N(decl_rows));
	add_loop(s, "verdict_declaration_errors",
		 verdict_declaration_request_errors, N(decl_bad));
	add_one(s, "verdict_declaration_limit",
		verdict_declaration_too_many_keys);
	add_one(s, "verdict_declaration_order",
		verdict_declaration_order_independent);
	add_loop(s, "verdict_remaining", verdict_remaining_rows, N(rem_rows));
	add_loop(s, "verdict_overcommit", verdict_overcommit_rows, N(oc_rows));
	add_one(s, "verdict_eval_no_state", verdict_eval_no_state);
	add_one(s, "verdict_eval_inline", verdict_eval_inline_state);
	add_one(s, "verdict_eval_decl_remaining",
		verdict_eval_declaration_and_remaining);
	add_loop(s, "verdict_eval_errors", verdict_eval_errors, N(eval_bad));
	add_one(s, "verdict_reads_only", verdict_reads_only);
	add_one(s, "verdict_idempotency_key", verdict_idempotency_key_bounds);
	add_one(s, "verdict_record_key", verdict_record_key_property);
}
