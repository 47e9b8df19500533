/*
 * The Check suite of ingest/: one suite, one TCase group per file
 * tests/ingest_<part>.c, each test in its own process (CK_FORK) with a fresh
 * LMDB directory.
 */
#include "tests/ingest_tests.h"

int main(void)
{
	Suite *s = suite_create("ingest");
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof(ingest_parts) / sizeof(ingest_parts[0]);
	     i++)
		if (ingest_parts[i] != NULL)
			ingest_parts[i](s);
	sr = srunner_create(s);
	test_root_begin();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_root_end();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
