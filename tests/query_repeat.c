/*
 * One review, one verdict (DESIGN 11 rule 3): an AdmissionReview whose uid
 * was already judged is answered with the recorded verdict, byte for byte,
 * and recorded once -- across batches, within one batch, and across a
 * restart of the server -- while the same uid with another request is a
 * 409 and a dry run is neither answered from the index nor indexed. A
 * plain POST with an Idempotency-Key header is held to the same rule.
 */
#include "tests/query_tests.h"

#include <sys/socket.h>
#include <unistd.h>

/* A review of a VMInstance in tenant-acme-dev with count devices of h100
 * (the fixture's class); dry adds request.dryRun. */
static char *review(const char *uid, int count, bool dry)
{
	char *b = malloc(1024);

	snprintf(b, 1024,
		 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
		 "\"AdmissionReview\",\"request\":{\"uid\":\"%s\",\"kind\":"
		 "{\"group\":\"apps.cozystack.io\",\"version\":\"v1alpha1\","
		 "\"kind\":\"VMInstance\"},\"operation\":\"CREATE\","
		 "\"namespace\":\"tenant-acme-dev\",\"name\":\"vm-%s\","
		 "\"userInfo\":{\"username\":\"alice\"},\"object\":{\"spec\":"
		 "{\"gpus\":[{\"class\":\"h100\",\"count\":%d}]}},"
		 "\"oldObject\":null%s}}",
		 uid, uid, count, dry ? ",\"dryRun\":true" : "");
	return b;
}

/* A plain admission request of the same shape as review(). */
static char *plain(const char *name, int count)
{
	char *b = malloc(1024);

	snprintf(b, 1024,
		 "{\"kind\":\"VMInstance\",\"namespace\":\"tenant-acme-dev\","
		 "\"name\":\"vm-%s\",\"old\":null,\"new\":{\"spec\":"
		 "{\"gpus\":[{\"class\":\"h100\",\"count\":%d}]}}}",
		 name, count);
	return b;
}

/* The request text of a POST with extra header lines (each ending CRLF). */
static int post_text(char *req, size_t cap, const char *path,
		     const char *headers, const char *body)
{
	return snprintf(req, cap,
			"POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: "
			"%zu\r\n\r\n%s",
			path, headers, strlen(body), body);
}

/* The key of every VERDICT in the ledger, in log order: its review uid,
 * or "key:" and its idempotencyKey, or "-". */
struct uids {
	size_t n;
	char uid[512][32];
};

static int collect_uid(void *ctx, const struct event *ev, const uint8_t *h)
{
	struct uids *u = ctx;
	json_t *v;

	if (ev->type != EV_VERDICT)
		return 0;
	v = json_loads(ev->text, 0, NULL);
	ck_assert_uint_lt(u->n, 512);
	if (json_object_get(v, "idempotencyKey") != NULL)
		snprintf(u->uid[u->n++], 32, "key:%s",
			 qjstr(v, "idempotencyKey"));
	else
		snprintf(u->uid[u->n++], 32, "%s",
			 qjstr_or(json_object_get(v, "requester"), "uid",
				  "-"));
	json_decref(v);
	return 0;
}

static void log_uids(const struct qt *t, struct uids *u)
{
	struct ledger_opts o = {.dir = t->db, .read_only = true};
	struct lg_error err = {0};
	ledger_t *lg;

	memset(u, 0, sizeof(*u));
	ck_assert_int_eq(ledger_open(&lg, &o, &err), 0);
	ck_assert_int_eq(ledger_scan(lg, 1, 0, collect_uid, u, &err), 0);
	ledger_close(lg);
}

static size_t count_uid(const struct uids *u, const char *uid)
{
	size_t n = 0;

	for (size_t i = 0; i < u->n; i++)
		n += strcmp(u->uid[i], uid) == 0;
	return n;
}

static double repeats_metric(const struct qt *t)
{
	struct qt_resp r;
	const char *m;
	double v = -1;

	qt_http(t, "GET", "/metrics", NULL, NULL, &r);
	m = strstr(r.body, "\ngpuledger_verdict_repeats_total ");
	if (m != NULL)
		v = strtod(m + strlen("\ngpuledger_verdict_repeats_total "),
			   NULL);
	qt_resp_free(&r);
	return v;
}

START_TEST(repeat_answers_the_record)
{
	struct qt t;
	struct qt_resp first, r;
	struct uids u;
	char *body = review("r-1", 1, false);

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	qt_http(&t, "POST", "/v1/admission", NULL, body, &first);
	ck_assert_int_eq(first.status, 200);
	for (int i = 0; i < 3; i++) {
		qt_http(&t, "POST", "/v1/admission", NULL, body, &r);
		ck_assert_int_eq(r.status, 200);
		ck_assert_str_eq(r.body, first.body);
		qt_resp_free(&r);
	}
	ck_assert(repeats_metric(&t) == 3);
	/* A new server process finds it in the ledger's index. */
	qt_stop(&t);
	qt_start(&t, NULL, false);
	qt_http(&t, "POST", "/v1/admission", NULL, body, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, first.body);
	qt_resp_free(&r);
	qt_stop(&t);
	log_uids(&t, &u);
	ck_assert_uint_eq(u.n, 1);
	ck_assert_str_eq(u.uid[0], "r-1");
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), 1);
	qt_resp_free(&first);
	free(body);
	qt_done(&t);
}
END_TEST

START_TEST(repeat_with_another_request_is_409)
{
	struct qt t;
	struct qt_resp r;
	struct uids u;
	char *a = review("r-2", 1, false), *b = review("r-2", 2, false);
	char *dry = review("r-3", 1, true), *real = review("r-3", 1, false);

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	ck_assert_int_eq(qt_status(&t, "POST", "/v1/admission", NULL, a), 200);
	qt_http(&t, "POST", "/v1/admission", NULL, b, &r);
	ck_assert_int_eq(r.status, 409);
	ck_assert_ptr_nonnull(strstr(qjstr(r.json, "error"), "r-2"));
	ck_assert_ptr_nonnull(strstr(qjstr(r.json, "error"), "another request"));
	qt_resp_free(&r);
	/* A dry run is judged, not indexed: the real one after it is
	 * recorded, and a dry run of a recorded uid is judged again. */
	qt_http(&t, "POST", "/v1/admission", NULL, dry, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "dry-run"));
	qt_resp_free(&r);
	ck_assert_int_eq(qt_status(&t, "POST", "/v1/admission", NULL, real),
			 200);
	qt_http(&t, "POST", "/v1/admission", NULL, dry, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "dry-run"));
	qt_resp_free(&r);
	qt_stop(&t);
	log_uids(&t, &u);
	ck_assert_uint_eq(u.n, 2);
	ck_assert_uint_eq(count_uid(&u, "r-2"), 1);
	ck_assert_uint_eq(count_uid(&u, "r-3"), 1);
	free(a);
	free(b);
	free(dry);
	free(real);
	qt_done(&t);
}
END_TEST

/* Reads one HTTP answer (Content-Length framed) from fd into buf. */
static size_t read_answer(int fd, char *buf, size_t cap);

/* POSTs body with extra header lines on a fresh connection; the whole
 * answer (head and body) into buf. */
static void raw_post(const struct qt *t, const char *path,
		     const char *headers, const char *body, char *buf,
		     size_t cap)
{
	char req[4096];
	int n = post_text(req, sizeof(req), path, headers, body), fd;

	ck_assert_int_lt(n, (int)sizeof(req));
	fd = qt_connect(t);
	ck_assert_int_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
	read_answer(fd, buf, cap);
	close(fd);
}

static const char *answer_body(const char *buf)
{
	const char *b = strstr(buf, "\r\n\r\n");

	ck_assert_ptr_nonnull(b);
	return b + 4;
}

START_TEST(idempotency_key_plain_posts)
{
	struct qt t;
	struct uids u;
	char first[8192], again[8192];
	char *a = plain("k1", 1), *b = plain("k1", 2);
	char long_key[200];
	char hdr[300];

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	raw_post(&t, "/v1/admission", "Idempotency-Key: job-42\r\n", a,
		 first, sizeof(first));
	ck_assert_msg(strncmp(first, "HTTP/1.1 200 ", 13) == 0, "%.300s",
		      first);
	ck_assert_ptr_nonnull(
		strstr(answer_body(first), "\"idempotencyKey\":\"job-42\""));
	/* A retry: the same bytes, no second record, across a restart. */
	for (int i = 0; i < 2; i++) {
		raw_post(&t, "/v1/admission", "Idempotency-Key: job-42\r\n", a,
			 again, sizeof(again));
		ck_assert_str_eq(answer_body(again), answer_body(first));
		qt_stop(&t);
		qt_start(&t, NULL, false);
	}
	/* The key with another request: 409. */
	raw_post(&t, "/v1/admission", "Idempotency-Key: job-42\r\n", b,
		 again, sizeof(again));
	ck_assert_msg(strncmp(again, "HTTP/1.1 409 ", 13) == 0, "%.300s",
		      again);
	ck_assert_ptr_nonnull(strstr(again, "Idempotency-Key"));
	/* The key and a review uid of the same text never meet. */
	{
		char *rv = review("job-42", 1, false);

		raw_post(&t, "/v1/admission", "", rv, again, sizeof(again));
		ck_assert_msg(strncmp(again, "HTTP/1.1 200 ", 13) == 0,
			      "%.300s", again);
		ck_assert_ptr_nonnull(strstr(again, "AdmissionReview"));
		free(rv);
	}
	/* Without a key a plain POST is judged and recorded each time. */
	raw_post(&t, "/v1/admission", "", a, again, sizeof(again));
	ck_assert(strncmp(again, "HTTP/1.1 200 ", 13) == 0);
	raw_post(&t, "/v1/admission", "", a, again, sizeof(again));
	ck_assert(strncmp(again, "HTTP/1.1 200 ", 13) == 0);
	/* Bad keys: too long, two headers, a control byte, a space last. */
	memset(long_key, 'k', 129);
	long_key[129] = '\0';
	snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s\r\n", long_key);
	raw_post(&t, "/v1/admission", hdr, a, again, sizeof(again));
	ck_assert_msg(strncmp(again, "HTTP/1.1 400 ", 13) == 0, "%.300s",
		      again);
	ck_assert_ptr_nonnull(strstr(again, "Idempotency-Key"));
	raw_post(&t, "/v1/admission",
		 "Idempotency-Key: x\r\nIdempotency-Key: y\r\n", a, again,
		 sizeof(again));
	ck_assert(strncmp(again, "HTTP/1.1 400 ", 13) == 0);
	raw_post(&t, "/v1/admission", "Idempotency-Key: a\x01b\r\n", a, again,
		 sizeof(again));
	ck_assert(strncmp(again, "HTTP/1.1 400 ", 13) == 0);
	/* 128 bytes is the bound, and fits. */
	long_key[128] = '\0';
	snprintf(hdr, sizeof(hdr), "idempotency-key: %s\r\n", long_key);
	raw_post(&t, "/v1/admission", hdr, a, again, sizeof(again));
	ck_assert_msg(strncmp(again, "HTTP/1.1 200 ", 13) == 0, "%.300s",
		      again);
	qt_stop(&t);
	log_uids(&t, &u);
	/* job-42, the review job-42, two without a key, the 128-byte key. */
	ck_assert_uint_eq(u.n, 5);
	ck_assert_uint_eq(count_uid(&u, "key:job-42"), 1);
	ck_assert_uint_eq(count_uid(&u, "job-42"), 1);
	/* audit re-derives each record, the key included. */
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), 5);
	free(a);
	free(b);
	qt_done(&t);
}
END_TEST

static size_t read_answer(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	const char *end, *cl;

	for (;;) {
		ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);

		ck_assert_msg(r > 0, "connection closed before an answer");
		got += (size_t)r;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		cl = strstr(buf, "\r\nContent-Length: ");
		if (end != NULL && cl != NULL &&
		    got >= (size_t)(end + 4 - buf) +
				   strtoul(cl + 18, NULL, 10))
			return got;
	}
}

/* The property: a random mix of reviews from a pool of uids (some sent
 * together on parallel connections, so that they can meet in one batch),
 * with restarts of the server in between: every uid is recorded exactly
 * once and every answer to it is the same bytes. Seeds are printed. */
#define POOL  8
#define SENDS 60

START_TEST(repeat_property)
{
	unsigned seed = 0x5eed0u + (unsigned)_i;
	struct qt t;
	char *bodies[POOL], *answers[POOL] = {0};
	bool sent[POOL] = {0};
	struct uids u;
	size_t distinct = 0;

	printf("repeat_property seed %u\n", seed);
	srand(seed);
	for (int k = 0; k < POOL; k++) {
		char uid[16];

		snprintf(uid, sizeof(uid), "p-%d", k);
		/* Odd ones: plain POSTs with an Idempotency-Key. */
		bodies[k] = k % 2 == 0 ? review(uid, 1 + k % 3, false)
				       : plain(uid, 1 + k % 3);
	}
	qt_init(&t, true);
	qt_start(&t, NULL, false);
	for (int s = 0; s < SENDS;) {
		int fan = 1 + rand() % 4, fds[4], ks[4];
		char buf[8192];

		if (rand() % 12 == 0) {
			qt_stop(&t);
			qt_start(&t, NULL, false);
		}
		/* Send every request of the fan, then read the answers. */
		for (int f = 0; f < fan; f++) {
			char req[2048];
			int n;

			char hk[64] = "";

			ks[f] = rand() % POOL;
			if (ks[f] % 2 == 1)
				snprintf(hk, sizeof(hk),
					 "Idempotency-Key: p-%d\r\n", ks[f]);
			n = post_text(req, sizeof(req), "/v1/admission", hk,
				      bodies[ks[f]]);
			fds[f] = qt_connect(&t);
			ck_assert_int_eq(send(fds[f], req, (size_t)n,
					      MSG_NOSIGNAL),
					 n);
		}
		for (int f = 0; f < fan; f++, s++) {
			const char *body;
			size_t got = read_answer(fds[f], buf, sizeof(buf));

			close(fds[f]);
			ck_assert_msg(strncmp(buf, "HTTP/1.1 200 ", 13) == 0,
				      "seed %u: %.200s", seed, buf);
			body = strstr(buf, "\r\n\r\n") + 4;
			(void)got;
			if (!sent[ks[f]]) {
				sent[ks[f]] = true;
				answers[ks[f]] = strdup(body);
				distinct++;
			} else {
				ck_assert_msg(strcmp(answers[ks[f]], body) == 0,
					      "seed %u: p-%d answered\n  %s\n"
					      "then\n  %s",
					      seed, ks[f], answers[ks[f]], body);
			}
		}
	}
	qt_stop(&t);
	log_uids(&t, &u);
	ck_assert_msg(u.n == distinct, "seed %u: %zu records for %zu uids",
		      seed, u.n, distinct);
	for (int k = 0; k < POOL; k++) {
		char uid[16];

		snprintf(uid, sizeof(uid), k % 2 == 0 ? "p-%d" : "key:p-%d", k);
		ck_assert_uint_eq(count_uid(&u, uid), sent[k] ? 1 : 0);
		free(bodies[k]);
		free(answers[k]);
	}
	ck_assert_uint_eq(qt_audit(t.db, NULL, 0), distinct);
	qt_done(&t);
}
END_TEST

QUERY_PART(repeat)
{
	TCase *tc = tcase_create("verdict_repeat");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, repeat_answers_the_record);
	tcase_add_test(tc, repeat_with_another_request_is_409);
	tcase_add_test(tc, idempotency_key_plain_posts);
	tcase_add_loop_test(tc, repeat_property, 0, 6);
	suite_add_tcase(s, tc);
}
