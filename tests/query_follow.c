/*
 * Following the log: another process appends while the server runs; the
 * server's answers, readiness and metrics catch up, and verdicts computed
 * while the writer is busy still audit (their basis may then lie several
 * events before their own seq).
 */
#include "tests/query_tests.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Polls path until it answers want (bounded; a test never times the
 * server, it only waits for it). */
static bool wait_status(const struct qt *t, const char *path, long want)
{
	for (int i = 0; i < 400; i++) {
		struct qt_resp r;
		long s;

		qt_http(t, "GET", path, NULL, NULL, &r);
		s = r.status;
		qt_resp_free(&r);
		if (s == want)
			return true;
		nap_ms(25);
	}
	return false;
}

START_TEST(follows_a_writer)
{
	struct qt t;
	struct qt_resp r;
	const char *last;

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	ck_assert_int_eq(
		qt_status(&t, "GET", "/v1/tenants/tenant-gamma", NULL, NULL),
		404);
	qt_append_child(
		&t, "{\"type\":\"TENANT\",\"namespace\":\"tenant-gamma\","
		    "\"parent\":\"tenant-root\"}\n"
		    "{\"type\":\"BUDGET\",\"namespace\":\"tenant-gamma\","
		    "\"key\":\"gpuclass.cozystack.io/devices\",\"value\":4}\n");
	ck_assert(wait_status(&t, "/v1/tenants/tenant-gamma", 200));
	qt_http(&t, "GET", "/v1/tenants/tenant-gamma", NULL, NULL, &r);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(r.json, "budgets"),
				 "gpuclass.cozystack.io/devices")),
			 4);
	qt_resp_free(&r);
	/* The root lists the new child; metrics and readiness agree. */
	qt_http(&t, "GET", "/v1/tenants/tenant-root", NULL, NULL, &r);
	ck_assert_ptr_nonnull(strstr(r.body, "\"tenant-gamma\""));
	qt_resp_free(&r);
	qt_http(&t, "GET", "/metrics", NULL, NULL, &r);
	last = strstr(r.body, "\ngpuledger_last_seq ");
	ck_assert_ptr_nonnull(last);
	ck_assert_int_eq(atoi(last + 20), QT_FIXTURE_SEQ + 2);
	/* Caught up, but the fixture holds no NOTE Synced: not ready. */
	ck_assert_ptr_nonnull(strstr(r.body, "\ngpuledger_ready 0\n"));
	qt_resp_free(&r);
	/* A verdict is computed on the state that includes the writer's
	 * events. */
	qt_http(&t, "POST", "/v1/admission", NULL,
		"{\"namespace\":\"tenant-gamma\",\"kind\":\"VMInstance\","
		"\"name\":\"v\",\"old\":null,\"new\":{\"gpus\":[{\"class\":"
		"\"h100\",\"count\":5}]}}",
		&r);
	ck_assert_str_eq(qjstr(r.json, "reason"), "TotalBudgetExceeded");
	ck_assert_int_eq(
		json_integer_value(json_object_get(r.json, "basisSeq")),
		QT_FIXTURE_SEQ + 2);
	qt_resp_free(&r);
	qt_done(&t);
}
END_TEST

/* Ready means ready to judge (DESIGN 7): a log without a complete list
 * (a fresh `serve --create`, a watcher still listing) is 503 with the
 * reason, however caught up; the first NOTE Synced makes it 200, and it
 * stays so. */
START_TEST(ready_only_after_a_complete_list)
{
	struct qt t;
	struct qt_resp r;

	qt_init(&t, false);
	qt_start(&t, NULL, false);
	qt_http(&t, "GET", "/readyz", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(qjstr(r.json, "error"), "NOTE Synced"));
	qt_resp_free(&r);
	/* Listing: observations, but not yet the end of the first list. */
	qt_append_child(&t, "{\"type\":\"TENANT\",\"namespace\":"
			    "\"tenant-root\",\"parent\":null}\n"
			    "{\"type\":\"NOTE\",\"code\":\"Relisted\","
			    "\"message\":\"another note\"}\n");
	ck_assert(wait_status(&t, "/v1/tenants/tenant-root", 200));
	ck_assert_int_eq(qt_status(&t, "GET", "/readyz", NULL, NULL), 503);
	qt_http(&t, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_ptr_nonnull(strstr(r.body, "\ngpuledger_ready 0\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\ngpuledger_log_synced 0\n"));
	qt_resp_free(&r);
	qt_append_child(&t, "{\"type\":\"NOTE\",\"code\":\"Synced\","
			    "\"message\":\"complete list\"}\n");
	ck_assert(wait_status(&t, "/readyz", 200));
	qt_http(&t, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_ptr_nonnull(strstr(r.body, "\ngpuledger_ready 1\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\ngpuledger_log_synced 1\n"));
	qt_resp_free(&r);
	/* Once is enough: more events (a watcher's restart, listing again)
	 * do not make it unready, nor does a restart of serve. */
	qt_append_child(&t, "{\"type\":\"TENANT\",\"namespace\":"
			    "\"tenant-a\",\"parent\":\"tenant-root\"}\n");
	ck_assert(wait_status(&t, "/v1/tenants/tenant-a", 200));
	ck_assert_int_eq(qt_status(&t, "GET", "/readyz", NULL, NULL), 200);
	qt_stop(&t);
	qt_start(&t, NULL, false);
	ck_assert_int_eq(qt_status(&t, "GET", "/readyz", NULL, NULL), 200);
	qt_done(&t);
}
END_TEST

/* A writer process appends RESERVE/RELEASE pairs in many small commits
 * while a client asks for verdicts on the same namespace. */
#define WR_ROUNDS   150
#define WR_VERDICTS 120

START_TEST(verdicts_while_writing)
{
	struct qt t;
	pid_t pid;
	int ok = 0;
	uint64_t ids[WR_VERDICTS];

	qt_init(&t, true);
	qt_start(&t, NULL, false);
	pid = qt_writer_start(&t, WR_ROUNDS);
	for (int i = 0; i < WR_VERDICTS; i++) {
		struct qt_resp r;

		qt_http(&t, "POST", "/v1/admission", NULL,
			"{\"namespace\":\"tenant-acme-dev\",\"kind\":"
			"\"VMInstance\",\"name\":\"w\",\"old\":null,\"new\":"
			"{\"gpus\":[{\"class\":\"h100\"}]}}",
			&r);
		ok += r.status == 200;
		qt_resp_free(&r);
	}
	qt_writer_wait(pid);
	ck_assert_int_eq(ok, WR_VERDICTS);
	qt_stop(&t);
	ck_assert_uint_eq(qt_audit(t.db, ids, WR_VERDICTS), WR_VERDICTS);
	for (int i = 0; i < WR_VERDICTS; i++)
		ck_assert_uint_eq(ids[i], (uint64_t)i + 1);
	qt_done(&t);
}
END_TEST

QUERY_PART(follow)
{
	TCase *tc = tcase_create("follow_writer");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, follows_a_writer);
	tcase_add_test(tc, ready_only_after_a_complete_list);
	tcase_add_test(tc, verdicts_while_writing);
	suite_add_tcase(s, tc);
}
