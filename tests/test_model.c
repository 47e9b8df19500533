/*
 * The Check suite of model/: one suite, one TCase group per file
 * tests/model_<part>.c, each test in its own process (CK_FORK).
 */
#include "tests/model_tests.h"

#include <stdlib.h>

int main(void)
{
	Suite *s = suite_create("model");
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < sizeof(model_parts) / sizeof(model_parts[0]);
	     i++)
		model_parts[i](s);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists each test */
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
