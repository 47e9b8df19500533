/*
 * Internals of cluster/applier.c alone, kept out of cluster_int.h (which
 * holds what several files of cluster/ share): applier.c and its unit tests
 * (tests/cluster_log.c) include this. The applier's interface to the rest
 * of the member is cluster_int.h's cluster__applier_*.
 */
#ifndef GPULEDGER_CLUSTER_APPLIER_INT_H
#define GPULEDGER_CLUSTER_APPLIER_INT_H

#include "cluster/cluster_int.h"

/* Rule 7's filter of one watch event or range key: what the applier at
 * applied seq does with it. */
enum cluster_log_check {
	CLUSTER_LOG_OTHER = 0, /* not a P/log/ key, or a delete */
	CLUSTER_LOG_APPLY,     /* the next value: a version-1 put of
				  P/log/<applied + 1> */
	CLUSTER_LOG_REPEAT,    /* a value already applied */
	CLUSTER_LOG_GAP,       /* a value beyond the next */
	CLUSTER_LOG_REWRITE    /* a put of version > 1: never applied */
};
enum cluster_log_check cluster__log_check(const struct etcd_kv *kv, bool put,
					  const char *prefix, uint64_t applied,
					  uint64_t *first_seq);

/* One value as the applier applies it (for tests): kv a version-1 put of
 * P/log/<applied + 1>, expect_head P/head's chainHead at kv's revision
 * (NULL: not known there), cluster_id etcd's. 0, or the ledger's error
 * (LG_EMISMATCH: another head; nothing written). */
int cluster__applier_apply(cluster_applier_t *a, const struct etcd_kv *kv,
			   const uint8_t *expect_head, uint64_t cluster_id,
			   struct lg_error *err);

#endif
