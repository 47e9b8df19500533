/*
 * Request shapes: AdmissionReview (admission.k8s.io/v1) to the internal
 * admission request and back, request normalisation, and reading stored
 * verdict records.
 */
#include "tests/query_tests.h"

static const struct {
	const char *review;
	const char *req; /* canonical request; NULL: refused */
	const char *uid;
} review_rows[] = {
	/* CREATE: old is null, new is object.spec. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u1','kind':{'group':'apps.cozystack.io',"
	 "'version':'v1alpha1','kind':'VMInstance'},'operation':'CREATE',"
	 "'namespace':'tenant-acme','name':'vm1','object':{'metadata':"
	 "{'name':'vm1'},'spec':{'gpus':[{'class':'h100'}]}},'oldObject':null}"
	 "}",
	 "{'kind':'VMInstance','name':'vm1','namespace':'tenant-acme','new':"
	 "{'gpus':[{'class':'h100'}]},'old':null}",
	 "u1"},
	/* UPDATE: both specs; the name comes from the object. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u2','kind':{'kind':'KubernetesNodes'},"
	 "'operation':'UPDATE','namespace':'tenant-a','object':{'metadata':"
	 "{'name':'kn'},'spec':{'maxReplicas':3}},'oldObject':{'spec':"
	 "{'maxReplicas':1}}}}",
	 "{'kind':'KubernetesNodes','name':'kn','namespace':'tenant-a','new':"
	 "{'maxReplicas':3},'old':{'maxReplicas':1}}",
	 "u2"},
	/* DELETE: new is null; the name from oldObject. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u3','kind':{'kind':'VMInstance'},'operation':"
	 "'DELETE','namespace':'tenant-a','object':null,'oldObject':"
	 "{'metadata':{'name':'gone'},'spec':{'gpus':[]}}}}",
	 "{'kind':'VMInstance','name':'gone','namespace':'tenant-a','new':null,"
	 "'old':{'gpus':[]}}",
	 "u3"},
	/* An object without spec maps to an empty spec. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u4','kind':{'kind':'VMInstance'},'operation':"
	 "'CREATE','namespace':'tenant-a','name':'x','object':{}}}",
	 "{'kind':'VMInstance','name':'x','namespace':'tenant-a','new':{},"
	 "'old':null}",
	 "u4"},
	/* A Tenant: the namespace it governs, its resourceQuotas. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t1','kind':{'group':'apps.cozystack.io',"
	 "'version':'v1alpha1','kind':'Tenant'},'operation':'CREATE',"
	 "'namespace':'tenant-acme','name':'dev','object':{'metadata':"
	 "{'name':'dev','namespace':'tenant-acme'},'spec':{'resourceQuotas':"
	 "{'h100.gpuclass.cozystack.io/devices':'4'}}},'oldObject':null}}",
	 "{'namespace':'tenant-acme-dev','new':{'h100.gpuclass.cozystack.io/"
	 "devices':'4'},'old':null}",
	 "t1"},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t2','kind':{'kind':'Tenant'},'operation':"
	 "'UPDATE','namespace':'tenant-root','object':{'metadata':{'name':"
	 "'beta'},'spec':{}},'oldObject':{'spec':{'resourceQuotas':"
	 "{'gpuclass.cozystack.io/devices':'2'}}}}}",
	 "{'namespace':'tenant-beta','new':{},'old':{'gpuclass.cozystack.io/"
	 "devices':'2'}}",
	 "t2"},
	/* The root Tenant governs tenant-root. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t3','kind':{'kind':'Tenant'},'operation':"
	 "'CREATE','namespace':'tenant-root','name':'root','object':{'spec':"
	 "{'resourceQuotas':{}}}}}",
	 "{'namespace':'tenant-root','new':{},'old':null}", "t3"},
	/* A Tenant DELETE is not judged; a Tenant needs its namespace. */
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t4','kind':{'kind':'Tenant'},'operation':"
	 "'DELETE','namespace':'tenant-root','name':'x','oldObject':{}}}",
	 NULL, NULL},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t5','kind':{'kind':'Tenant'},'operation':"
	 "'CREATE','name':'x','object':{}}}",
	 NULL, NULL},
	{"{'apiVersion':'admission.k8s.io/v1beta1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':{'kind':'VMInstance'},'operation':"
	 "'CREATE'}}",
	 NULL, NULL},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview'}", NULL,
	 NULL},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'kind':{'kind':'VMInstance'},'operation':'CREATE'}}",
	 NULL, NULL},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':{'kind':'VMInstance'},'operation':"
	 "'CONNECT'}}",
	 NULL, NULL},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':'VMInstance','operation':'CREATE'}}",
	 NULL, NULL},
	{"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':[]}",
	 NULL, NULL},
};

/* Malformed reviews, each refused with its own message (DESIGN 7: a
 * malformed review is a 400, never a verdict). */
static const struct {
	enum verdict_kind kind;
	const char *review;
	const char *msg;
} malformed_rows[] = {
	{VERDICT_ADMISSION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':{'kind':'VMInstance'},'operation':"
	 "'CREATE','namespace':'tenant-a','name':'x','object':'x'}}",
	 "AdmissionReview: request.object must be an object or null"},
	{VERDICT_ADMISSION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':{'kind':'KubernetesNodes'},"
	 "'operation':'UPDATE','namespace':'tenant-a','name':'x','object':"
	 "[],'oldObject':{'spec':{}}}}",
	 "AdmissionReview: request.object must be an object or null"},
	{VERDICT_ADMISSION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':{'kind':'VMInstance'},'operation':"
	 "'UPDATE','namespace':'tenant-a','name':'x','object':{'spec':{}},"
	 "'oldObject':'x'}}",
	 "AdmissionReview: request.oldObject must be an object or null"},
	/* Not read for a CREATE, but still malformed. */
	{VERDICT_ADMISSION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'u','kind':{'kind':'VMInstance'},'operation':"
	 "'CREATE','namespace':'tenant-a','name':'x','object':{'spec':{}},"
	 "'oldObject':7}}",
	 "AdmissionReview: request.oldObject must be an object or null"},
	{VERDICT_ADMISSION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'','kind':{'kind':'VMInstance'},'operation':"
	 "'CREATE','namespace':'tenant-a','name':'x','object':{'spec':{}}}}",
	 "AdmissionReview: request.uid must not be empty"},
	{VERDICT_DECLARATION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t','kind':{'kind':'Tenant'},'operation':"
	 "'CREATE','namespace':'tenant-root','name':'beta','object':'x'}}",
	 "AdmissionReview: request.object must be an object or null"},
	{VERDICT_DECLARATION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'t','kind':{'kind':'Tenant'},'operation':"
	 "'UPDATE','namespace':'tenant-root','name':'beta','object':{'spec':"
	 "{}},'oldObject':true}}",
	 "AdmissionReview: request.oldObject must be an object or null"},
	{VERDICT_DECLARATION,
	 "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
	 "'request':{'uid':'','kind':{'kind':'Tenant'},'operation':"
	 "'CREATE','namespace':'tenant-root','name':'beta','object':{}}}",
	 "AdmissionReview: request.uid must not be empty"},
};

static json_t *tq(const char *text)
{
	char *s = strdup(text);
	json_t *v;

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = qt_json(s);
	free(s);
	return v;
}

/* verdict_request_read of doc's text. */
static int read_doc(enum verdict_kind kind, const json_t *doc,
		    struct verdict_request *vr, struct lg_error *err)
{
	char *text = json_dumps(doc, JSON_ENCODE_ANY);
	int rc = verdict_request_read(kind, text, strlen(text), vr, err);

	free(text);
	return rc;
}

/* The kind of verdict a review is for: a Tenant's is a declaration. */
static enum verdict_kind review_kind(const json_t *review)
{
	const char *k = qjstr(
		json_object_get(json_object_get(review, "request"), "kind"),
		"kind");

	return k && strcmp(k, "Tenant") == 0 ? VERDICT_DECLARATION
					     : VERDICT_ADMISSION;
}

START_TEST(review_to_request_rows)
{
	json_t *review = tq(review_rows[_i].review), *want;
	struct verdict_request vr;
	struct lg_error err = {0};
	int rc = read_doc(review_kind(review), review, &vr, &err);

	if (review_rows[_i].req == NULL) {
		ck_assert_int_eq(rc, LG_EINVAL);
		ck_assert_ptr_null(vr.req);
		ck_assert_ptr_nonnull(strstr(err.msg, "AdmissionReview"));
	} else {
		char *got, *exp;

		ck_assert_int_eq(rc, 0);
		want = tq(review_rows[_i].req);
		got = json_canonical(vr.req);
		exp = json_canonical(want);
		ck_assert_str_eq(got, exp);
		ck_assert_str_eq(vr.review_uid, review_rows[_i].uid);
		free(got);
		free(exp);
		json_decref(want);
	}
	verdict_request_release(&vr);
	json_decref(review);
}
END_TEST

START_TEST(review_malformed_rows)
{
	json_t *review = tq(malformed_rows[_i].review);
	struct verdict_request vr;
	struct lg_error err = {0};

	ck_assert_int_eq(read_doc(malformed_rows[_i].kind, review, &vr, &err),
			 LG_EINVAL);
	ck_assert_ptr_null(vr.req);
	ck_assert_str_eq(err.msg, malformed_rows[_i].msg);
	verdict_request_release(&vr);
	json_decref(review);
}
END_TEST

/* A review goes where its kind is judged: a Tenant to declarations, a
 * workload to admission; each the other way is refused. */
START_TEST(review_wrong_kind)
{
	json_t *t = tq(review_rows[4].review), *w = tq(review_rows[0].review);
	struct verdict_request vr;
	struct lg_error err = {0};

	ck_assert_int_eq(read_doc(VERDICT_ADMISSION, t, &vr, &err), LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "/v1/declarations"));
	verdict_request_release(&vr);
	ck_assert_int_eq(read_doc(VERDICT_DECLARATION, w, &vr, &err),
			 LG_EINVAL);
	verdict_request_release(&vr);
	json_decref(t);
	json_decref(w);
}
END_TEST

START_TEST(review_response_shape)
{
	char *w[] = {"w1"};
	char msg_denied[] = "t: k 1 + 2 > 2", msg_allowed[] = "within budget";
	struct verdict denied = {.kind = VERDICT_ADMISSION,
				 .allowed = false,
				 .reason = "ClassBudgetExceeded",
				 .message = msg_denied,
				 .warnings = w,
				 .n_warnings = 1,
				 .id = 7,
				 .seq = 40};
	struct verdict allowed = {.kind = VERDICT_ADMISSION,
				  .allowed = true,
				  .reason = "WithinBudget",
				  .message = msg_allowed,
				  .id = 8,
				  .seq = 41};
	json_t *r = verdict_review_response("uid-1", &denied, true), *resp;

	ck_assert_str_eq(qjstr(r, "apiVersion"), "admission.k8s.io/v1");
	ck_assert_str_eq(qjstr(r, "kind"), "AdmissionReview");
	resp = json_object_get(r, "response");
	ck_assert_str_eq(qjstr(resp, "uid"), "uid-1");
	ck_assert(json_is_false(json_object_get(resp, "allowed")));
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(resp, "status"), "code")),
			 403);
	ck_assert_str_eq(qjstr(json_object_get(resp, "status"), "message"),
			 "ClassBudgetExceeded: t: k 1 + 2 > 2");
	ck_assert_str_eq(qjstr(json_object_get(resp, "status"), "reason"),
			 "ClassBudgetExceeded");
	ck_assert_str_eq(qjstr(json_object_get(resp, "auditAnnotations"),
			       "gpuledger.cozystack.io/verdict-id"),
			 "7");
	ck_assert_str_eq(qjstr(json_object_get(resp, "auditAnnotations"),
			       "gpuledger.cozystack.io/verdict-seq"),
			 "40");
	ck_assert_uint_eq(json_array_size(json_object_get(resp, "warnings")),
			  1);
	json_decref(r);
	/* A dry run is said to be one, with no id. */
	r = verdict_review_response("uid-2", &allowed, false);
	resp = json_object_get(r, "response");
	ck_assert(json_is_true(json_object_get(resp, "allowed")));
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(resp, "status"), "code")),
			 200);
	ck_assert_str_eq(qjstr(json_object_get(resp, "auditAnnotations"),
			       "gpuledger.cozystack.io/dry-run"),
			 "not recorded");
	ck_assert_ptr_null(
		json_object_get(json_object_get(resp, "auditAnnotations"),
				"gpuledger.cozystack.io/verdict-id"));
	json_decref(r);
}
END_TEST

/* Who asked: userInfo.username, uid (as userUid) and groups, the review's
 * uid and the operation; what is missing is empty (userUid: absent),
 * groups keep only strings. */
START_TEST(review_requester_shape)
{
	json_t *r1 = tq("{'apiVersion':'admission.k8s.io/v1','kind':"
			"'AdmissionReview','request':{'uid':'u9','kind':"
			"{'kind':'VMInstance'},'operation':'UPDATE',"
			"'namespace':'n','name':'v','userInfo':{'username':"
			"'alice','uid':'x','groups':['system:authenticated',"
			"7,'devs']}}}");
	json_t *r2 = tq("{'apiVersion':'admission.k8s.io/v1','kind':"
			"'AdmissionReview','request':{'uid':'u8','kind':"
			"{'kind':'VMInstance'},'operation':'CREATE'}}");
	json_t *want1 = tq("{'groups':['system:authenticated','devs'],"
			   "'operation':'UPDATE','uid':'u9','userUid':'x',"
			   "'username':'alice'}");
	json_t *want2 = tq("{'groups':[],'operation':'CREATE','uid':'u8',"
			   "'username':''}");
	struct verdict_request v1, v2;

	ck_assert_int_eq(read_doc(VERDICT_ADMISSION, r1, &v1, NULL), 0);
	ck_assert_int_eq(read_doc(VERDICT_ADMISSION, r2, &v2, NULL), 0);
	ck_assert(json_equal(v1.requester, want1));
	ck_assert(json_equal(v2.requester, want2));
	verdict_request_release(&v1);
	verdict_request_release(&v2);
	json_decref(want1);
	json_decref(want2);
	json_decref(r1);
	json_decref(r2);
}
END_TEST

static const struct {
	enum verdict_kind type;
	const char *body, *want;
} norm_rows[] = {
	{VERDICT_ADMISSION,
	 "{'namespace':'n','kind':'VMInstance','name':'v','old':null,'new':{},"
	 "'extra':1,'state':{'events':[]}}",
	 "{'kind':'VMInstance','name':'v','namespace':'n','new':{},'old':"
	 "null}"},
	{VERDICT_ADMISSION, "{'namespace':'n'}", "{'namespace':'n'}"},
	{VERDICT_DECLARATION,
	 "{'namespace':'n','kind':'Tenant','old':null,'new':{'a':'1'}}",
	 "{'namespace':'n','new':{'a':'1'},'old':null}"},
	{VERDICT_DECLARATION, "[]", NULL},
	{VERDICT_ADMISSION, "'text'", NULL},
};

START_TEST(normalise_rows)
{
	json_t *body = tq(norm_rows[_i].body);
	struct verdict_request vr;
	int rc = read_doc(norm_rows[_i].type, body, &vr, NULL);
	json_t *got = json_incref(vr.req);

	verdict_request_release(&vr);
	if (norm_rows[_i].want == NULL) {
		ck_assert_int_eq(rc, LG_EINVAL);
		ck_assert_ptr_null(got);
	} else {
		json_t *want = tq(norm_rows[_i].want);
		char *a = json_canonical(got), *b = json_canonical(want);

		ck_assert_str_eq(a, b);
		free(a);
		free(b);
		json_decref(want);
	}
	json_decref(got);
	json_decref(body);
}
END_TEST

#define H64  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H64B "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct {
	const char *record;
	int rc;
	uint64_t id, basis;
} ref_rows[] = {
	{"{\"basisSeq\":5,\"chainHead\":\"" H64 "\",\"id\":3}", 0, 3, 5},
	{"{\"basisSeq\":0,\"chainHead\":\"" H64 "\",\"id\":1}", 0, 1, 0},
	{"{\"basisSeq\":5,\"chainHead\":\"" H64 "\",\"id\":0}", LG_ECORRUPT, 0,
	 0},
	{"{\"basisSeq\":-1,\"chainHead\":\"" H64 "\",\"id\":1}", LG_ECORRUPT, 0,
	 0},
	{"{\"basisSeq\":5,\"chainHead\":\"ABC\",\"id\":1}", LG_ECORRUPT, 0, 0},
	{"{\"basisSeq\":5,\"chainHead\":\"" H64 "0\",\"id\":1}", LG_ECORRUPT, 0,
	 0},
	{"{\"basisSeq\":\"5\",\"chainHead\":\"" H64 "\",\"id\":1}", LG_ECORRUPT,
	 0, 0},
	{"[1,2]", LG_ECORRUPT, 0, 0},
	{"not json", LG_ECORRUPT, 0, 0},
};

START_TEST(verdict_ref_rows)
{
	struct verdict_ref ref;
	const char *r = ref_rows[_i].record;

	ck_assert_int_eq(verdict_record_parse(r, strlen(r), &ref, NULL),
			 ref_rows[_i].rc);
	if (ref_rows[_i].rc == 0) {
		ck_assert_uint_eq(ref.id, ref_rows[_i].id);
		ck_assert_uint_eq(ref.basis_seq, ref_rows[_i].basis);
		ck_assert_str_eq(ref.chain_head, H64);
	}
}
END_TEST

/* Recompute: a record made from a verdict matches; any byte changed, or a
 * record of another type, does not. */
START_TEST(recompute_detects_change)
{
	state_t *st = state_new();
	json_t *req = tq("{'namespace':'default','kind':'VMInstance','name':"
			 "'v','old':null,'new':{'gpus':[]}}");
	json_t *v = NULL;
	char *rec, *re = NULL;
	bool match = false;

	ck_assert_int_eq(qt_judge(st, VERDICT_ADMISSION, req, &v), 0);
	json_object_set_new(v, "id", json_integer(1));
	json_object_set_new(v, "basisSeq", json_integer(0));
	json_object_set_new(v, "chainHead", json_string(H64));
	rec = json_canonical(v);
	ck_assert_int_eq(verdict_record_recompute(st, H64, rec, strlen(rec),
						  &re, &match, NULL),
			 0);
	ck_assert(match);
	ck_assert_str_eq(re, rec);
	free(re);
	/* Another head at basisSeq. */
	ck_assert_int_eq(verdict_record_recompute(st, H64B, rec, strlen(rec),
						  &re, &match, NULL),
			 0);
	ck_assert(!match);
	free(re);
	/* A flipped verdict. */
	json_object_set_new(v, "allowed", json_false());
	free(rec);
	rec = json_canonical(v);
	ck_assert_int_eq(verdict_record_recompute(st, H64, rec, strlen(rec),
						  &re, &match, NULL),
			 0);
	ck_assert(!match);
	free(re);
	ck_assert_int_eq(verdict_record_recompute(st, H64, "{\"type\":\"x\"}",
						  12, &re, &match, NULL),
			 LG_ECORRUPT);
	free(rec);
	json_decref(v);
	json_decref(req);
	state_free(st);
}
END_TEST

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

QUERY_PART(review)
{
	TCase *tc = tcase_create("review_shapes");

	tcase_add_loop_test(tc, review_to_request_rows, 0, NROWS(review_rows));
	tcase_add_test(tc, review_response_shape);
	tcase_add_test(tc, review_requester_shape);
	tcase_add_test(tc, review_wrong_kind);
	tcase_add_loop_test(tc, review_malformed_rows, 0,
			    NROWS(malformed_rows));
	tcase_add_loop_test(tc, normalise_rows, 0, NROWS(norm_rows));
	tcase_add_loop_test(tc, verdict_ref_rows, 0, NROWS(ref_rows));
	tcase_add_test(tc, recompute_detects_change);
	suite_add_tcase(s, tc);
}
