/*
 * The preconditions of ledger/ledger.h are asserted (LG_ASSERT, always
 * compiled in): a caller that breaks one aborts at once (SIGABRT) instead of
 * reading through a NULL pointer (SIGSEGV, or worse, nothing). The cases the
 * header allows, next to each broken one, still work: the assertions are
 * exactly what the header promises.
 */
#include "tests/ledger_tests.h"

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

START_TEST(contract_open_without_out)
{
	struct ledger_opts o = {.dir = "/nonexistent", .read_only = true};

	ledger_open(NULL, &o, NULL);
}
END_TEST

/* What the header allows next to each broken precondition below (not in
 * the aborting tests, where an abort here would pass unnoticed). */
START_TEST(contract_allowed)
{
	ledger_t *lg = open_unlinked();
	struct lg_error err = {0};
	size_t len = 1;

	/* n == 0 with no events is allowed (a meta-only or empty batch). */
	ck_assert_int_eq(ledger_append(lg, NULL, 0, NULL, 0, NULL, &err), 0);
	/* A zero-sized buffer may be NULL: absent is still LG_ENOENT. */
	ck_assert_int_eq(ledger_meta_get(lg, "absent", NULL, 0, &len, &err),
			 LG_ENOENT);
	/* A directory that is not there is an error, not an abort. */
	ledger_close(lg);
	lg = NULL;
	ck_assert_int_lt(ledger_open(&lg,
				     &(struct ledger_opts){
					     .dir = "/nonexistent/gpuledger",
					     .read_only = true},
				     &err),
			 0);
	ck_assert_ptr_null(lg);
}
END_TEST

START_TEST(contract_append_without_events)
{
	ledger_t *lg = open_unlinked();
	struct lg_error err = {0};

	ledger_append(lg, NULL, 2, NULL, 0, NULL, &err);
}
END_TEST

START_TEST(contract_meta_get_without_len)
{
	ledger_t *lg = open_unlinked();
	struct lg_error err = {0};
	char buf[8];

	ledger_meta_get(lg, "absent", buf, sizeof(buf), NULL, &err);
}
END_TEST

START_TEST(contract_state_at_without_out)
{
	ledger_t *lg = open_unlinked();
	struct lg_error err = {0};

	ledger_state_at(lg, 0, NULL, NULL, &err);
}
END_TEST

START_TEST(contract_state_of_no_handle)
{
	ledger_state(NULL);
}
END_TEST

LEDGER_PART(contract)
{
	TCase *tc = tcase_create("ledger_contract");

	tcase_add_test(tc, contract_allowed);
	tcase_add_test_raise_signal(tc, contract_open_without_out, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_append_without_events,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_meta_get_without_len, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_state_at_without_out, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_state_of_no_handle, SIGABRT);
	suite_add_tcase(s, tc);
}
