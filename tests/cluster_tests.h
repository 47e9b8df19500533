/* Parts of the cluster suite; each tests/cluster_<part>.c adds its
 * TCases. */
#ifndef GPULEDGER_CLUSTER_TESTS_H
#define GPULEDGER_CLUSTER_TESTS_H

#include <check.h>

/* tests/cluster_log.c: the log in etcd (values, applier, append txn). */
void cluster_tests_log(Suite *s);
/* tests/cluster_contract.c: preconditions that abort when broken. */
void cluster_tests_contract(Suite *s);

#endif
