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

/* A fresh LMDB directory for one test (each test runs in its own process);
 * removed by the caller with rm_tree. */
static inline char *fresh_dir(void)
{
	char *d = strdup("/tmp/gpuledger-test-XXXXXX");

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
