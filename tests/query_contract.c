/*
 * The preconditions of query/query.h are asserted (LG_ASSERT, always
 * compiled in): a caller that breaks one aborts at once (SIGABRT) instead of
 * reading through a NULL pointer. Bad options and bad ranges, next to each
 * broken precondition, stay errors.
 */
#include "tests/query_tests.h"

#include <signal.h>

/* What the header allows next to each broken precondition below (not in
 * the aborting tests, where an abort here would pass unnoticed). */
START_TEST(contract_allowed)
{
	char dir[] = "/tmp/gpuledger-test-XXXXXX", cmd[64];
	struct ledger_opts lo = {.dir = dir, .create = true, .no_sync = true};
	struct query_opts o = {.db = NULL};
	struct lg_error err = {0};
	query_server_t *qs = NULL;
	ledger_t *lg = NULL;

	/* A missing --db is the operator's mistake: an error. */
	ck_assert_int_eq(query_server_open(&qs, &o, &err), LG_EINVAL);
	ck_assert_ptr_null(qs);
	/* A seq outside the tree is a bad request: NULL with err set. */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_msg(ledger_open(&lg, &lo, &err) == 0, "%s", err.msg);
	ck_assert_ptr_null(query_proof_inclusion(lg, 1, 0, &err));
	ck_assert_int_eq(err.code, LG_EINVAL);
	ledger_close(lg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(contract_open_without_out)
{
	struct query_opts o = {.db = NULL};
	struct lg_error err = {0};

	query_server_open(NULL, &o, &err);
}
END_TEST

START_TEST(contract_port_of_no_server)
{
	query_server_port(NULL);
}
END_TEST

START_TEST(contract_run_no_server)
{
	query_server_run(NULL, NULL);
}
END_TEST

START_TEST(contract_proof_without_ledger)
{
	struct lg_error err = {0};

	query_proof_inclusion(NULL, 1, 1, &err);
}
END_TEST

QUERY_PART(contract)
{
	TCase *tc = tcase_create("query_contract");

	tcase_add_test(tc, contract_allowed);
	tcase_add_test_raise_signal(tc, contract_open_without_out, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_port_of_no_server, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_run_no_server, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_proof_without_ledger, SIGABRT);
	suite_add_tcase(s, tc);
}
