/*
 * The Check suite of query/: one suite, one TCase group per file
 * tests/query_<part>.c, each test in its own process (CK_FORK) with a fresh
 * ledger directory and, for the integration parts, a real server on an
 * ephemeral loopback port talked to with libcurl and raw sockets.
 */
#include "tests/query_tests.h"

#include <signal.h>

int main(int argc, char **argv)
{
	Suite *s;
	SRunner *sr;
	int failed = qt_helper_main(argc, argv);

	/* Re-executed as another process's writer (tests/query_harness.c). */
	if (failed >= 0)
		return failed;
	s = suite_create("query");

	/* A client that goes away must show up as EPIPE, not kill the
	 * test process (the server ignores SIGPIPE the same way). */
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(query_parts) / sizeof(query_parts[0]);
	     i++)
		query_parts[i](s);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
