/* The eval dispatcher (DESIGN 6.1): every function name reaches its
 * function, and bad requests are errors with a message, never a crash. */
#include "tests/model_tests.h"

static const struct {
	const char *function, *input, *want; /* want NULL: an error */
	int rc;
} rows[] = {
	{"ParseQuantity", "\"2Ki\"", "{\"milli\":2048000,\"value\":2048}", 0},
	{"PodRequests", "{}", "{\"requests\":{}}", 0},
	{"ToleratesTaint",
	 "{\"toleration\":{\"operator\":\"Exists\"},\"taint\":{\"key\":\"k\","
	 "\"effect\":\"NoSchedule\"}}",
	 "{\"tolerates\":true}", 0},
	{"IsDNS1123Label", "\"a-b\"", "{\"valid\":true}", 0},
	{"IsDNS1123Subdomain", "\"a.b\"", "{\"valid\":true}", 0},
	{"ClaimName", "{\"vmi\":\"vm-instance-a\",\"device\":\"gpu1\"}",
	 "{\"name\":\"vm-instance-a-gpu1\"}", 0},
	{"BudgetKey", "\"gpuclass.cozystack.io/devices\"",
	 "{\"class\":null,\"kind\":\"total\"}", 0},
	{"NodeServes",
	 "{\"node\":{\"status\":{\"conditions\":[{\"type\":\"Ready\","
	 "\"status\":\"True\"}]}},\"class\":{\"name\":\"h100\"}}",
	 "{\"serves\":true}", 0},
	{"Remaining", "{\"namespace\":\"default\",\"state\":{\"events\":[]}}",
	 "{\"classes\":{},\"total\":{\"limitedBy\":null,\"remaining\":null}}",
	 0},
	{"Admission", "{\"namespace\":\"tenant-a\",\"kind\":\"VMInstance\"}",
	 NULL, LG_EINVAL}, /* no state */
	{"Declaration",
	 "{\"namespace\":\"tenant-a\",\"new\":{},\"state\":{\"events\":7}}",
	 NULL, LG_EINVAL},
	{"parsequantity", "\"1\"", NULL, LG_EUNKNOWN},
	{NULL, "\"1\"", NULL, LG_EINVAL},
	{"ParseQuantity", NULL, NULL, LG_EINVAL},
};

START_TEST(eval_dispatch)
{
	struct eval_ctx ctx = {0};
	struct lg_error err = {0};
	json_t *in = rows[_i].input ? tj(rows[_i].input) : NULL, *out = NULL;
	int rc = model_eval(&ctx, rows[_i].function, in, &out, &err);

	ck_assert_msg(rc == rows[_i].rc, "%s: rc %d (%s)", rows[_i].function,
		      rc, err.msg);
	if (rows[_i].want != NULL) {
		char *s = json_canonical(out);

		ck_assert_str_eq(s, rows[_i].want);
		free(s);
	} else {
		ck_assert_ptr_null(out);
		ck_assert_str_ne(err.msg, "");
	}
	json_decref(out);
	json_decref(in);
}
END_TEST

void model_tests_eval(Suite *s)
{
	TCase *tc = tcase_create("eval_dispatch");

	tcase_add_loop_test(tc, eval_dispatch, 0,
			    sizeof(rows) / sizeof(rows[0]));
	suite_add_tcase(s, tc);
}
