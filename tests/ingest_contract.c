/*
 * The preconditions of ingest/ingest.h are asserted (LG_ASSERT, always
 * compiled in): a caller that breaks one aborts at once (SIGABRT) instead of
 * reading through a NULL pointer. The cases the header allows, next to each
 * broken one, still work.
 */
#include "tests/ingest_tests.h"

#include <signal.h>

/* A fresh ledger whose directory is already removed: LMDB keeps the open
 * files, and a test that aborts leaves nothing behind in /tmp. */
static ledger_t *open_unlinked(void)
{
	char *dir = fresh_dir();
	struct ledger_opts o = {.dir = dir, .create = true, .no_sync = true};
	struct lg_error err = {0};
	ledger_t *lg = NULL;

	ck_assert_msg(ledger_open(&lg, &o, &err) == 0, "open: %s", err.msg);
	rm_tree(dir);
	return lg;
}

/* What the header allows next to each broken precondition below (not in
 * the aborting tests, where an abort here would pass unnoticed). */
START_TEST(contract_allowed)
{
	ledger_t *lg = open_unlinked();
	struct replica_opts o = {.url = "ftp://nowhere", .once = true};
	struct replica_result res;
	struct lg_error err = {0};
	ingest_t *in = NULL;

	/* Options may be NULL (the defaults). */
	ck_assert_msg(ingest_new(&in, lg, NULL, &err) == 0, "%s", err.msg);
	ingest_free(in);
	/* A bad URL is bad input: an error, not an abort. */
	ck_assert_int_eq(ingest_replicate(lg, &o, &res, &err), LG_EINVAL);
	ledger_close(lg);
}
END_TEST

START_TEST(contract_new_without_ledger)
{
	struct lg_error err = {0};
	ingest_t *in = NULL;

	ingest_new(&in, NULL, NULL, &err);
}
END_TEST

START_TEST(contract_follow_without_path)
{
	ledger_t *lg = open_unlinked();
	struct ingest_follow_opts o = {.path = NULL};
	struct lg_error err = {0};

	ingest_follow(lg, &o, NULL, &err);
}
END_TEST

START_TEST(contract_replicate_without_result)
{
	ledger_t *lg = open_unlinked();
	struct replica_opts o = {.url = "ftp://nowhere", .once = true};
	struct lg_error err = {0};

	ingest_replicate(lg, &o, NULL, &err);
}
END_TEST

START_TEST(contract_kube_config_without_config)
{
	kube_config_load(NULL, "/nonexistent/kubeconfig", NULL, NULL);
}
END_TEST

INGEST_PART(contract)
{
	TCase *tc = tcase_create("ingest_contract");

	tcase_add_test(tc, contract_allowed);
	tcase_add_test_raise_signal(tc, contract_new_without_ledger, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_follow_without_path, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_replicate_without_result,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_kube_config_without_config,
				    SIGABRT);
	suite_add_tcase(s, tc);
}
