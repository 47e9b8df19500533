/*
 * The Check suite of ledger/: one suite, one TCase group per file
 * tests/ledger_<part>.c, each test in its own process (CK_FORK) with a fresh
 * LMDB directory.
 */
#include "tests/ledger_tests.h"

int main(void)
{
	Suite *s = suite_create("ledger");
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof(ledger_parts) / sizeof(ledger_parts[0]);
	     i++)
		ledger_parts[i](s);
	sr = srunner_create(s);
	test_root_begin();
	srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists each test */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_root_end();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
