/*
 * Verdicts over HTTP: each answer equals the model's verdict on the
 * server's state plus id, seq, basisSeq and chainHead; it is in the log
 * exactly once before it is answered; lookups and ?verify=1 re-derive it;
 * refused requests record nothing; concurrent clients get distinct ids
 * that all audit; AdmissionReview in and out.
 */
#include "tests/query_tests.h"

#include <curl/curl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static state_t *ledger_snapshot(const char *db, char *hex)
{
	struct ledger_opts o = {.dir = db, .read_only = true};
	ledger_t *lg;
	state_t *st;

	ck_assert_int_eq(ledger_open(&lg, &o, NULL), 0);
	st = state_clone(ledger_state(lg));
	query__hex(ledger_head(lg), hex);
	ledger_close(lg);
	return st;
}

static const struct {
	const char *path, *body;
	const char *reason;
} verdict_rows[] = {
	{"/v1/admission",
	 "{\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\",\"name\":"
	 "\"vm-x\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\","
	 "\"count\":2}]}}",
	 "ClassBudgetExceeded"},
	{"/v1/admission",
	 "{\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\",\"name\":"
	 "\"vm-y\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\"}]}}",
	 "WithinBudget"},
	{"/v1/admission",
	 "{\"namespace\":\"tenant-acme-prod\",\"kind\":\"KubernetesNodes\","
	 "\"name\":\"kn\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"a10\"}],"
	 "\"maxReplicas\":1}}",
	 "RawKeyBlocksClass"},
	{"/v1/admission",
	 "{\"namespace\":\"tenant-acme\",\"kind\":\"VMInstance\",\"name\":"
	 "\"v\","
	 "\"old\":{\"gpus\":[{\"class\":\"h100\",\"count\":3}]},\"new\":"
	 "{\"gpus\":[{\"class\":\"h100\"}]},\"ignored\":true}",
	 "NoGrowth"},
	{"/v1/admission",
	 "{\"namespace\":\"tenant-acme\",\"kind\":\"VMInstance\",\"name\":"
	 "\"v\","
	 "\"old\":null,\"new\":{\"gpus\":[{\"class\":\"t4\"}]}}",
	 "UnknownClass"},
	{"/v1/declarations",
	 "{\"namespace\":\"tenant-acme-dev\",\"old\":null,\"new\":{\"h100."
	 "gpuclass.cozystack.io/devices\":\"9\"}}",
	 "ExceedsParentBudget"},
	{"/v1/declarations",
	 "{\"namespace\":\"tenant-acme-dev\",\"old\":null,\"new\":{\"h100."
	 "gpuclass.cozystack.io/devices\":\"1.5\"}}",
	 "InvalidQuantity"},
	{"/v1/declarations",
	 "{\"namespace\":\"tenant-root\",\"old\":null,\"new\":{\"gpuclass."
	 "cozystack.io/devices\":100}}",
	 "Unconstrained"},
};

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

/* The answer is the model's verdict plus the five fields; the log holds
 * it at seq 38, and a lookup returns the same bytes. */
START_TEST(verdict_matches_model)
{
	struct qt t;
	char hex[65], path[64];
	state_t *st;
	json_t *body, *want = NULL;
	struct qt_resp r, g;
	bool adm = strcmp(verdict_rows[_i].path, "/v1/admission") == 0;

	qt_init(&t, true);
	st = ledger_snapshot(t.db, hex);
	body = qt_json(verdict_rows[_i].body);
	json_object_del(body, "ignored");
	ck_assert_int_eq(qt_judge(st,
				  adm ? VERDICT_ADMISSION : VERDICT_DECLARATION,
				  body, &want),
			 0);
	json_object_set_new(want, "id", json_integer(1));
	json_object_set_new(want, "seq", json_integer(QT_FIXTURE_SEQ + 1));
	json_object_set_new(want, "basisSeq", json_integer(QT_FIXTURE_SEQ));
	json_object_set_new(want, "chainHead", json_string(hex));
	qt_start(&t, NULL, false);
	qt_http(&t, "POST", verdict_rows[_i].path, NULL, verdict_rows[_i].body,
		&r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(qjstr(r.json, "reason"), verdict_rows[_i].reason);
	/* The answering process's clock (DESIGN 3.7), not the judgement's:
	 * copied, after checking that it is one. */
	ck_assert_ptr_nonnull(qjstr(r.json, "answeredAt"));
	ck_assert_int_eq((int)strlen(qjstr(r.json, "answeredAt")), 30);
	json_object_set_new(want, "answeredAt",
			    json_string(qjstr(r.json, "answeredAt")));
	{
		char *w = json_canonical(want);

		ck_assert_str_eq(r.body, w);
		free(w);
	}
	qt_http(&t, "GET", "/v1/verdicts/1", NULL, NULL, &g);
	ck_assert_int_eq(g.status, 200);
	ck_assert_str_eq(g.body, r.body);
	qt_resp_free(&g);
	qt_http(&t, "GET", "/v1/verdicts/1?verify=1", NULL, NULL, &g);
	ck_assert(json_is_true(json_object_get(g.json, "verified")));
	ck_assert_ptr_null(json_object_get(g.json, "recomputed"));
	qt_resp_free(&g);
	snprintf(path, sizeof(path), "/v1/events?from=%d", QT_FIXTURE_SEQ + 1);
	qt_http(&t, "GET", path, NULL, NULL, &g);
	ck_assert_uint_eq(json_array_size(json_object_get(g.json, "events")),
			  1);
	ck_assert_str_eq(
		qjstr(json_array_get(json_object_get(g.json, "events"), 0),
		      "type"),
		"VERDICT");
	qt_resp_free(&g);
	qt_resp_free(&r);
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), 1);
	json_decref(want);
	json_decref(body);
	state_free(st);
	qt_done(&t);
}
END_TEST

static const struct {
	const char *path, *body;
	long status;
} refused_rows[] = {
	{"/v1/admission", "{", 400},
	{"/v1/admission", "", 400},
	{"/v1/admission", "[1]", 400},
	{"/v1/admission", "{\"a\":1,\"a\":2}", 400},
	{"/v1/admission", "{\"namespace\":\"tenant-a\",\"kind\":\"Pod\"}", 400},
	{"/v1/admission", "{\"kind\":\"VMInstance\"}", 400},
	{"/v1/admission", "{\"namespace\":7,\"kind\":\"VMInstance\"}", 400},
	{"/v1/declarations", "{\"namespace\":\"tenant-a\",\"new\":[]}", 400},
	{"/v1/declarations", "{\"new\":{}}", 400},
	{"/v1/admission",
	 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	 "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"VMInstance\"},"
	 "\"operation\":\"CONNECT\"}}",
	 400},
	{"/v1/admission",
	 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	 "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},"
	 "\"operation\":\"CREATE\",\"namespace\":\"tenant-a\"}}",
	 400},
};

/* Numbers beyond 2^53 in a record (a count of 1e19, a budget of 9Ei in
 * the checks) are the doubles JCS gives them: the record parses back,
 * re-derives, and is its own canonical form (qt_audit checks both). */
START_TEST(records_with_huge_numbers)
{
	struct qt t;
	static const char *const bodies[] = {
		"{\"namespace\":\"tenant-acme-dev\",\"kind\":"
		"\"KubernetesNodes\",\"name\":\"f0\",\"old\":null,"
		"\"new\":{\"maxReplicas\":1,\"gpus\":[{\"class\":\"h100\","
		"\"count\":1e19}]}}",
		"{\"namespace\":\"tenant-acme-dev\",\"old\":null,\"new\":"
		"{\"h100.gpuclass.cozystack.io/devices\":\"9Ei\"}}",
		"{\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\","
		"\"name\":\"v\",\"old\":null,\"new\":{\"gpus\":[{\"class\":"
		"\"h100\",\"count\":9007199254740993}]}}",
	};
	static const char *const paths[] = {"/v1/admission", "/v1/declarations",
					    "/v1/admission"};

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (size_t i = 0; i < 3; i++) {
		struct qt_resp r;
		char path[64];

		qt_http(&t, "POST", paths[i], NULL, bodies[i], &r);
		ck_assert_int_eq(r.status, 200);
		qt_resp_free(&r);
		snprintf(path, sizeof(path), "/v1/verdicts/%zu?verify=1",
			 i + 1);
		qt_http(&t, "GET", path, NULL, NULL, &r);
		ck_assert_int_eq(r.status, 200);
		ck_assert_msg(json_is_true(json_object_get(r.json, "verified")),
			      "%s", r.body);
		qt_resp_free(&r);
	}
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), 3);
	qt_done(&t);
}
END_TEST

START_TEST(refused_requests_record_nothing)
{
	struct qt t;
	struct qt_resp r;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (size_t i = 0; i < sizeof(refused_rows) / sizeof(refused_rows[0]);
	     i++)
		ck_assert_msg(qt_status(&t, "POST", refused_rows[i].path, NULL,
					refused_rows[i].body) ==
				      refused_rows[i].status,
			      "%s %s", refused_rows[i].path,
			      refused_rows[i].body);
	qt_http(&t, "GET", "/readyz", NULL, NULL, &r);
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "seq")),
			 QT_FIXTURE_SEQ);
	qt_resp_free(&r);
	ck_assert_int_eq(qt_status(&t, "GET", "/v1/verdicts/1", NULL, NULL),
			 404);
	ck_assert_int_eq(qt_status(&t, "GET", "/v1/verdicts/0", NULL, NULL),
			 400);
	ck_assert_int_eq(qt_status(&t, "GET", "/v1/verdicts/x1", NULL, NULL),
			 400);
	ck_assert_int_eq(qt_status(&t, "GET",
				   "/v1/verdicts/99999999999999999999", NULL,
				   NULL),
			 400);
	qt_done(&t);
}
END_TEST

START_TEST(admission_review_roundtrip)
{
	struct qt t;
	struct qt_resp r, g;
	const json_t *resp;
	char path[64], *stored;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	qt_http(&t, "POST", "/v1/admission", NULL,
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
		"\"AdmissionReview\",\"request\":{\"uid\":\"705ab4f5\","
		"\"kind\":{\"group\":\"apps.cozystack.io\",\"version\":"
		"\"v1alpha1\",\"kind\":\"VMInstance\"},\"operation\":"
		"\"CREATE\","
		"\"namespace\":\"tenant-acme-dev\",\"name\":\"vm-r\","
		"\"object\":"
		"{\"metadata\":{\"name\":\"vm-r\"},\"spec\":{\"gpus\":[{"
		"\"class\":"
		"\"h100\",\"count\":2}]}},\"oldObject\":null,\"dryRun\":false}"
		"}",
		&r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(qjstr(r.json, "kind"), "AdmissionReview");
	resp = json_object_get(r.json, "response");
	ck_assert_str_eq(qjstr(resp, "uid"), "705ab4f5");
	ck_assert(json_is_false(json_object_get(resp, "allowed")));
	ck_assert_ptr_nonnull(
		strstr(qjstr(json_object_get(resp, "status"), "message"),
		       "ClassBudgetExceeded"));
	snprintf(path, sizeof(path), "/v1/verdicts/%s",
		 qjstr(json_object_get(resp, "auditAnnotations"),
		       "gpuledger.cozystack.io/verdict-id"));
	ck_assert_str_eq(path, "/v1/verdicts/1");
	/* The stored request is the internal form, not the review. */
	qt_http(&t, "GET", path, NULL, NULL, &g);
	stored = json_canonical(json_object_get(g.json, "request"));
	ck_assert_str_eq(
		stored,
		"{\"kind\":\"VMInstance\",\"name\":\"vm-r\",\"namespace\":"
		"\"tenant-acme-dev\",\"new\":{\"gpus\":[{\"class\":"
		"\"h100\",\"count\":2}]},\"old\":null}");
	free(stored);
	qt_resp_free(&g);
	qt_resp_free(&r);
	qt_done(&t);
}
END_TEST

/* The requester of a review (DESIGN 3.5, issue 27 item 2): "uid" is the
 * review's, "userUid" the user's own (request.userInfo.uid), absent when
 * the user has none (absent, "", not a string), bounded with the rest of
 * userInfo; every record audits. */
static const struct {
	const char *user_info; /* the members of userInfo */
	int status;
	const char *requester; /* its canonical JSON, or NULL for a 400 */
} user_uid_rows[] = {
	{"\"username\":\"alice\",\"uid\":\"u-alice\",\"groups\":[\"g\"]", 200,
	 "{\"groups\":[\"g\"],\"operation\":\"CREATE\",\"uid\":\"r-0\","
	 "\"userUid\":\"u-alice\",\"username\":\"alice\"}"},
	{"\"username\":\"bob\"", 200,
	 "{\"groups\":[],\"operation\":\"CREATE\",\"uid\":\"r-1\","
	 "\"username\":\"bob\"}"},
	{"\"username\":\"carol\",\"uid\":\"\"", 200,
	 "{\"groups\":[],\"operation\":\"CREATE\",\"uid\":\"r-2\","
	 "\"username\":\"carol\"}"},
	{"\"username\":\"dave\",\"uid\":42", 200,
	 "{\"groups\":[],\"operation\":\"CREATE\",\"uid\":\"r-3\","
	 "\"username\":\"dave\"}"},
	{"\"uid\":\"u-only\"", 200,
	 "{\"groups\":[],\"operation\":\"CREATE\",\"uid\":\"r-4\","
	 "\"userUid\":\"u-only\",\"username\":\"\"}"},
	{"\"username\":\"erin\",\"uid\":\"%BIG%\"", 400, NULL},
	{"\"username\":\"erin\",\"uid\":\"%LONG%\"", 200, "%LONG%"},
};

START_TEST(review_user_uid)
{
	struct qt t;
	struct qt_resp r, g;
	/* Over the bound of userInfo, and just within it. */
	size_t big_n = VERDICT_REVIEW_USERINFO_MAX,
	       long_n = VERDICT_REVIEW_USERINFO_MAX - 64;
	char *big = malloc(big_n + 1), *longer = malloc(long_n + 1);
	char *body = malloc(2 * VERDICT_REVIEW_USERINFO_MAX + 1024);
	char *ui = malloc(VERDICT_REVIEW_USERINFO_MAX + 256), *stored;
	size_t recorded = 0;

	memset(big, 'b', big_n);
	big[big_n] = '\0';
	memset(longer, 'l', long_n);
	longer[long_n] = '\0';
	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (size_t i = 0; i < NROWS(user_uid_rows); i++) {
		const char *u = user_uid_rows[i].user_info, *mark;
		char path[64];

		/* %BIG% and %LONG% stand for the long uids. */
		if ((mark = strchr(u, '%')) != NULL)
			snprintf(ui, VERDICT_REVIEW_USERINFO_MAX + 256,
				 "%.*s%s\"", (int)(mark - u), u,
				 mark[1] == 'B' ? big : longer);
		else
			snprintf(ui, VERDICT_REVIEW_USERINFO_MAX + 256, "%s",
				 u);
		sprintf(body,
			"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
			"\"AdmissionReview\",\"request\":{\"uid\":\"r-%zu\","
			"\"kind\":{\"kind\":\"VMInstance\"},\"operation\":"
			"\"CREATE\",\"namespace\":\"tenant-acme-dev\","
			"\"name\":\"vm-u%zu\",\"object\":{\"spec\":{}},"
			"\"userInfo\":{%s}}}",
			i, i, ui);
		qt_http(&t, "POST", "/v1/admission", NULL, body, &r);
		ck_assert_msg(r.status == user_uid_rows[i].status,
			      "row %zu: %ld %.200s", i, r.status, r.body);
		qt_resp_free(&r);
		if (user_uid_rows[i].requester == NULL)
			continue;
		snprintf(path, sizeof(path), "/v1/verdicts/%zu", ++recorded);
		qt_http(&t, "GET", path, NULL, NULL, &g);
		ck_assert_int_eq(g.status, 200);
		stored = json_canonical(json_object_get(g.json, "requester"));
		if (strcmp(user_uid_rows[i].requester, "%LONG%") == 0) {
			ck_assert_str_eq(
				qjstr(json_object_get(g.json, "requester"),
				      "userUid"),
				longer);
		} else {
			ck_assert_str_eq(stored, user_uid_rows[i].requester);
		}
		free(stored);
		qt_resp_free(&g);
	}
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), recorded);
	qt_done(&t);
	free(big);
	free(longer);
	free(body);
	free(ui);
}
END_TEST

/* A hand-written VERDICT event (from tests/ledger/small.ndjson) whose
 * chainHead is zeros: ?verify=1 finds it does not match. */
START_TEST(verify_finds_forgery)
{
	struct qt t;
	struct qt_resp g;

	qt_init(&t, true);
	qt_append_child(
		&t,
		"{\"type\":\"VERDICT\",\"record\":{\"id\":1,\"basisSeq\":25,"
		"\"chainHead\":\"000000000000000000000000000000000000000000"
		"0000000000000000000000\",\"type\":\"admission\",\"allowed\""
		":true,\"reason\":\"WithinBudget\",\"message\":\"within "
		"budget\",\"checks\":[],\"warnings\":[],\"request\":{"
		"\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\","
		"\"name\":\"vm-x\",\"old\":null,\"new\":{\"gpus\":[]}}}}\n");
	qt_start(&t, NULL, false);
	qt_http(&t, "GET", "/v1/verdicts/1?verify=1", NULL, NULL, &g);
	ck_assert_int_eq(g.status, 200);
	ck_assert(json_is_false(json_object_get(g.json, "verified")));
	ck_assert_str_eq(qjstr(json_object_get(g.json, "recomputed"), "reason"),
			 "NoGrowth");
	ck_assert_int_eq(json_integer_value(json_object_get(g.json, "seq")),
			 QT_FIXTURE_SEQ + 1);
	qt_resp_free(&g);
	ck_assert_int_eq(
		qt_status(&t, "GET", "/v1/verdicts/1?verify=2", NULL, NULL),
		400);
	/* The next verdict the server gives counts the forged one. */
	qt_http(&t, "POST", "/v1/admission", NULL,
		"{\"namespace\":\"default\",\"kind\":\"VMInstance\",\"old\":"
		"null,"
		"\"new\":null}",
		&g);
	ck_assert_int_eq(json_integer_value(json_object_get(g.json, "id")), 2);
	qt_resp_free(&g);
	qt_done(&t);
}
END_TEST

/* Concurrent clients: every answer has a distinct id, the ids are 1..N,
 * each is in the log exactly once, and all of them audit. */
#define VC_CLIENTS  16
#define VC_REQUESTS 25

struct vc {
	const struct qt *t;
	uint64_t ids[VC_REQUESTS];
	int n;
};

static size_t sink(char *p, size_t size, size_t n, void *ctx)
{
	struct qt_resp *r = ctx;

	r->body = realloc(r->body, r->len + size * n + 1);
	memcpy(r->body + r->len, p, size * n);
	r->len += size * n;
	r->body[r->len] = '\0';
	return size * n;
}

static void *vc_client(void *arg)
{
	struct vc *v = arg;
	CURL *c = curl_easy_init();
	char url[128];
	const char *body = "{\"namespace\":\"tenant-acme-dev\",\"kind\":"
			   "\"VMInstance\",\"name\":\"vm-c\",\"old\":null,"
			   "\"new\":{\"gpus\":[{\"class\":\"h100\"}]}}";

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/admission",
		 v->t->port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	for (int i = 0; i < VC_REQUESTS; i++) {
		struct qt_resp r = {0};
		json_t *j;

		curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
		if (curl_easy_perform(c) == CURLE_OK &&
		    (j = json_loads(r.body ? r.body : "", 0, NULL)) != NULL) {
			if (json_is_integer(json_object_get(j, "id")))
				v->ids[v->n++] = (uint64_t)json_integer_value(
					json_object_get(j, "id"));
			json_decref(j);
		}
		free(r.body);
	}
	curl_easy_cleanup(c);
	return NULL;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

START_TEST(concurrent_verdicts_audit)
{
	struct qt t;
	pthread_t th[VC_CLIENTS];
	struct vc *v = calloc(VC_CLIENTS, sizeof(*v));
	uint64_t all[VC_CLIENTS * VC_REQUESTS],
		logged[VC_CLIENTS * VC_REQUESTS];
	size_t n = 0;
	struct qt_resp m;
	const char *b;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (int i = 0; i < VC_CLIENTS; i++) {
		v[i].t = &t;
		ck_assert_int_eq(pthread_create(&th[i], NULL, vc_client, &v[i]),
				 0);
	}
	for (int i = 0; i < VC_CLIENTS; i++) {
		pthread_join(th[i], NULL);
		for (int k = 0; k < v[i].n; k++)
			all[n++] = v[i].ids[k];
	}
	ck_assert_uint_eq(n, VC_CLIENTS * VC_REQUESTS);
	qsort(all, n, sizeof(all[0]), by_u64);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(all[i], i + 1);
	qt_http(&t, "GET", "/metrics", NULL, NULL, &m);
	b = strstr(m.body, "\ngpuledger_verdict_batch_events_total ");
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(atoi(b + 38), VC_CLIENTS * VC_REQUESTS);
	ck_assert_ptr_nonnull(
		strstr(m.body, "gpuledger_verdicts_total{type=\"admission\","
			       "reason=\"WithinBudget\"} 400\n"));
	qt_resp_free(&m);
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, logged, n), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(logged[i], all[i]);
	free(v);
	qt_done(&t);
}
END_TEST

/* A metric's value on the server's /metrics (the line "NAME VALUE"). */
static long metric(const struct qt *t, const char *name)
{
	char key[128];
	const char *p;
	struct qt_resp r;
	long v;

	qt_http(t, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(r.body, key);
	ck_assert_msg(p != NULL, "no metric %s", name);
	v = atol(p + strlen(key));
	qt_resp_free(&r);
	return v;
}

/* A verdict whose record does not fit the map: the append fails, the
 * answer is 503, no id is consumed (the id it would have had answers 404
 * and goes to the next recorded verdict), the log holds nothing of it and
 * the append-error counter counts it. The map is bounded to the fixture's
 * file plus 256 KiB: a small verdict fits, a 600 KB one cannot. */
#define SMALL_VERDICT                                                          \
	"{\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\",\"name\":" \
	"\"vm-y\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\"}]}}"

START_TEST(append_failure_is_503)
{
	struct qt t;
	struct query_opts o = {0};
	struct qt_resp r;
	struct stat sb;
	char path[128], seqpath[64];
	size_t pad = 600u << 10;
	char *big = malloc(pad + 256);
	int n;

	qt_init(&t, true);
	snprintf(path, sizeof(path), "%s/data.mdb", t.db);
	ck_assert_int_eq(stat(path, &sb), 0);
	o.map_max_bytes = (size_t)sb.st_size + (256u << 10);
	qt_start(&t, &o, false);
	qt_http(&t, "POST", "/v1/admission", NULL, SMALL_VERDICT, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "id")), 1);
	qt_resp_free(&r);
	n = snprintf(
		big, pad + 256,
		"{\"namespace\":\"tenant-acme-dev\",\"kind\":\"VMInstance\","
		"\"name\":\"vm-big\",\"old\":null,\"new\":{\"gpus\":"
		"[{\"class\":\"h100\"}],\"pad\":\"");
	memset(big + n, 'p', pad);
	strcpy(big + n + pad, "\"}}");
	qt_http(&t, "POST", "/v1/admission", NULL, big, &r);
	ck_assert_msg(r.status == 503, "status %ld: %.200s", r.status, r.body);
	ck_assert_ptr_nonnull(json_object_get(r.json, "error"));
	ck_assert_ptr_null(json_object_get(r.json, "id"));
	qt_resp_free(&r);
	ck_assert_int_eq(qt_status(&t, "GET", "/v1/verdicts/2", NULL, NULL),
			 404);
	ck_assert_int_eq(metric(&t, "gpuledger_verdict_append_errors_total"),
			 1);
	snprintf(seqpath, sizeof(seqpath), "/v1/events?from=%d",
		 QT_FIXTURE_SEQ + 2);
	qt_http(&t, "GET", seqpath, NULL, NULL, &r);
	ck_assert_uint_eq(json_array_size(json_object_get(r.json, "events")),
			  0);
	qt_resp_free(&r);
	/* The next verdict that fits gets id 2 and the next seq. */
	qt_http(&t, "POST", "/v1/admission", NULL, SMALL_VERDICT, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "id")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "seq")),
			 QT_FIXTURE_SEQ + 2);
	qt_resp_free(&r);
	ck_assert_int_eq(qt_status(&t, "GET", "/v1/verdicts/2", NULL, NULL),
			 200);
	ck_assert_int_eq(qt_status(&t, "GET", "/v1/verdicts/3", NULL, NULL),
			 404);
	ck_assert_int_eq(metric(&t, "gpuledger_verdict_append_errors_total"),
			 1);
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), 2);
	free(big);
	qt_done(&t);
}
END_TEST

/* The ids of a listing, in answer order, into ids; returns how many and
 * sets *next (0 for null). */
static size_t listed(const struct qt *t, const char *path, uint64_t *ids,
		     size_t cap, uint64_t *next)
{
	struct qt_resp r;
	const json_t *vs, *v;
	size_t i, n = 0;

	qt_http(t, "GET", path, NULL, NULL, &r);
	ck_assert_msg(r.status == 200, "%s: %ld %s", path, r.status, r.body);
	vs = json_object_get(r.json, "verdicts");
	json_array_foreach (vs, i, v) {
		ck_assert_uint_lt(n, cap);
		ids[n++] =
			(uint64_t)json_integer_value(json_object_get(v, "id"));
	}
	*next = (uint64_t)json_integer_value(json_object_get(r.json, "next"));
	qt_resp_free(&r);
	return n;
}

/* Every page of a listing (query without the cursor), following next as
 * `cursor` (after or before); returns how many ids. */
static size_t walk(const struct qt *t, const char *query, const char *cursor,
		   uint64_t *ids, size_t cap)
{
	char path[256];
	uint64_t next = 0;
	size_t n = 0;
	int pages = 0;

	do {
		if (next)
			snprintf(path, sizeof(path), "/v1/verdicts?%s&%s=%llu",
				 query, cursor, (unsigned long long)next);
		else
			snprintf(path, sizeof(path), "/v1/verdicts?%s", query);
		n += listed(t, path, ids + n, cap - n, &next);
		ck_assert_int_lt(++pages, 100);
	} while (next);
	return n;
}

#define NLIST 11

/* allowed= keeps the answers asked for; order=desc lists newest first with
 * `before` as its cursor, and both orders see the same verdicts; after and
 * before bound either; a requester is kept in the listing. */
START_TEST(listing_allowed_order_cursor)
{
	struct qt t;
	struct qt_resp r;
	uint64_t ids[64], got[64], next;
	bool allowed[NLIST + 1];
	size_t n, yes = 0, i;
	char q[64];

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (i = 1; i <= NLIST; i++) {
		int row = (int)(i - 1) % NROWS(verdict_rows);

		qt_http(&t, "POST", verdict_rows[row].path, NULL,
			verdict_rows[row].body, &r);
		ck_assert_int_eq(r.status, 200);
		ck_assert_int_eq(
			json_integer_value(json_object_get(r.json, "id")),
			(json_int_t)i);
		allowed[i] = json_is_true(json_object_get(r.json, "allowed"));
		yes += allowed[i];
		qt_resp_free(&r);
	}
	ck_assert(yes > 0 && yes < NLIST);
	for (int a = 0; a < 2; a++) {
		snprintf(q, sizeof(q), "allowed=%s&limit=2",
			 a ? "true" : "false");
		n = walk(&t, q, "after", got, 64);
		ck_assert_uint_eq(n, (a ? yes : NLIST - yes));
		for (i = 0; i < n; i++) {
			ck_assert(allowed[got[i]] == (a == 1));
			ck_assert(i == 0 || got[i] > got[i - 1]);
		}
		/* Newest first, the same verdicts reversed. */
		snprintf(q, sizeof(q), "allowed=%s&limit=3&order=desc",
			 a ? "1" : "0");
		ck_assert_uint_eq(walk(&t, q, "before", ids, 64), n);
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(ids[i], got[n - 1 - i]);
	}
	/* The first page newest first, and its cursor. */
	ck_assert_uint_eq(
		listed(&t, "/v1/verdicts?order=desc&limit=3", ids, 64, &next),
		3);
	ck_assert_uint_eq(ids[0], NLIST);
	ck_assert_uint_eq(ids[2], NLIST - 2);
	ck_assert_uint_eq(next, NLIST - 2);
	ck_assert_uint_eq(walk(&t, "order=desc&limit=4", "before", ids, 64),
			  NLIST);
	for (i = 0; i < NLIST; i++)
		ck_assert_uint_eq(ids[i], NLIST - i);
	/* Both bounds, either order. */
	ck_assert_uint_eq(
		listed(&t, "/v1/verdicts?after=2&before=6", ids, 64, &next), 3);
	ck_assert(ids[0] == 3 && ids[2] == 5 && next == 0);
	ck_assert_uint_eq(listed(&t,
				 "/v1/verdicts?after=2&before=6&order=desc&"
				 "limit=2",
				 ids, 64, &next),
			  2);
	ck_assert(ids[0] == 5 && ids[1] == 4 && next == 4);
	ck_assert_uint_eq(
		listed(&t, "/v1/verdicts?after=3&before=4", ids, 64, &next), 0);
	ck_assert_uint_eq(listed(&t,
				 "/v1/verdicts?before=99&order=desc&"
				 "limit=1",
				 ids, 64, &next),
			  1);
	ck_assert(ids[0] == NLIST && next == NLIST);
	/* Filters combine: tenant and answer. */
	n = walk(&t, "tenant=tenant-acme-dev&allowed=false&order=desc",
		 "before", ids, 64);
	ck_assert_uint_gt(n, 0);
	for (i = 0; i < n; i++)
		ck_assert(!allowed[ids[i]]);
	{
		static const char *const bad[] = {"allowed=maybe",
						  "allowed=",
						  "order=up",
						  "order=",
						  "before=0",
						  "before=x",
						  "allowed=true&limit=0"};

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(q, sizeof(q), "/v1/verdicts?%s", bad[i]);
			qt_http(&t, "GET", q, NULL, NULL, &r);
			ck_assert_msg(r.status == 400, "%s: %ld", q, r.status);
			ck_assert_ptr_nonnull(qjstr(r.json, "error"));
			qt_resp_free(&r);
		}
	}
	qt_done(&t);
}
END_TEST

/* Clients that send two pipelined verdict requests and close at once: the
 * first is answered in the loop iteration that read it, and answering it
 * lets the second be parsed and queued for the next group commit. Every
 * verdict is still recorded exactly once, in order, and the server goes
 * on answering. (The connection does not close while a verdict waits:
 * reading stops while a request is deferred, so the end of the connection
 * is seen after the answer; the close hook of query__reply_defer covers a
 * queued write failing in between.) */
#define ABANDONED 20

START_TEST(abandoned_verdicts_recorded)
{
	struct qt t;
	char one[512], req[1024];
	uint64_t ids[2 * ABANDONED + 1];
	struct qt_resp r;
	int n = snprintf(one, sizeof(one),
			 "POST /v1/admission HTTP/1.1\r\nHost: x\r\n"
			 "Content-Length: %zu\r\n\r\n%s",
			 strlen(SMALL_VERDICT), SMALL_VERDICT);

	snprintf(req, sizeof(req), "%s%s", one, one);
	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (int i = 0; i < ABANDONED; i++) {
		int fd = qt_connect(&t);

		ck_assert_int_eq(send(fd, req, 2 * (size_t)n, MSG_NOSIGNAL),
				 2 * n);
		close(fd);
	}
	qt_http(&t, "POST", "/v1/admission", NULL, SMALL_VERDICT, &r);
	ck_assert_int_eq(r.status, 200);
	qt_resp_free(&r);
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, ids, 2 * ABANDONED + 1),
			  2 * ABANDONED + 1);
	for (int i = 0; i <= 2 * ABANDONED; i++)
		ck_assert_uint_eq(ids[i], (uint64_t)i + 1);
	qt_done(&t);
}
END_TEST

QUERY_PART(verdicts)
{
	TCase *tc = tcase_create("verdicts_http");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, verdict_matches_model, 0, NROWS(verdict_rows));
	tcase_add_test(tc, refused_requests_record_nothing);
	tcase_add_test(tc, records_with_huge_numbers);
	tcase_add_test(tc, admission_review_roundtrip);
	tcase_add_test(tc, review_user_uid);
	tcase_add_test(tc, verify_finds_forgery);
	tcase_add_test(tc, concurrent_verdicts_audit);
	tcase_add_test(tc, append_failure_is_503);
	tcase_add_test(tc, listing_allowed_order_cursor);
	tcase_add_test(tc, abandoned_verdicts_recorded);
	suite_add_tcase(s, tc);
}
