/* Parts of the ledger suite; each tests/ledger_<part>.c adds its TCases. */
#ifndef GPULEDGER_LEDGER_TESTS_H
#define GPULEDGER_LEDGER_TESTS_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger/ledger_int.h"
#include "tests/model_tests.h"

#define LEDGER_PART(name) void ledger_tests_##name(Suite *s)

LEDGER_PART(codec);
LEDGER_PART(store);
LEDGER_PART(crash);
LEDGER_PART(tamper);
LEDGER_PART(concurrency);
LEDGER_PART(export);
LEDGER_PART(tree);
LEDGER_PART(contract);
LEDGER_PART(head);
LEDGER_PART(exportopts);

static void (*const ledger_parts[])(Suite *) = {
	ledger_tests_codec,  ledger_tests_store,       ledger_tests_crash,
	ledger_tests_tamper, ledger_tests_concurrency, ledger_tests_export,
	ledger_tests_tree,   ledger_tests_contract, ledger_tests_head,
	ledger_tests_exportopts,
};

/* Every fresh_dir of a run lies under one root that main makes before the
 * tests fork and removes after them (test_root_begin/_end), so that a test
 * that ends early (a failure, an expected crash) leaves nothing in /tmp. */
#define TEST_ROOT_ENV "GPULEDGER_TEST_ROOT"

static inline void test_root_begin(void)
{
	static char root[] = "/tmp/gpuledger-unit-XXXXXX";

	if (mkdtemp(root) == NULL || setenv(TEST_ROOT_ENV, root, 1) != 0) {
		perror("test root");
		exit(EXIT_FAILURE);
	}
}

static inline void test_root_end(void)
{
	const char *root = getenv(TEST_ROOT_ENV);
	char cmd[256];

	if (root == NULL || getenv("KEEP") != NULL)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
}

/* A fresh LMDB directory for one test (each test runs in its own process);
 * removed by the caller with rm_tree. */
static inline char *fresh_dir(void)
{
	const char *root = getenv(TEST_ROOT_ENV);
	char buf[256], *d;

	snprintf(buf, sizeof(buf), "%s/gpuledger-test-XXXXXX",
		 root != NULL ? root : "/tmp");
	d = strdup(buf);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static inline void rm_tree(char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(dir);
}

#endif
