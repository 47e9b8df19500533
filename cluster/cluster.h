/*
 * cluster — a cluster of members on etcd (DESIGN 11): the etcd v3 client,
 * the key layout of the log in etcd, and the operator's commands on it
 * (`gpuledger cluster init|status`). cluster/README.md describes the keys.
 *
 * Invariants:
 *  - etcd is spoken to only through its v3 JSON gateway with libcurl
 *    (cluster/etcd.c): keys and values base64, int64s JSON strings. CURL*
 *    types never leave this layer.
 *  - Every request's outcome is classified as DESIGN 11 rule 1 says, by
 *    one table (cluster/etcd_codec.c): committed, compare failed (with the
 *    failure branch's reads), indeterminate (it may have committed: a
 *    timeout, a reset or an end of stream after the body was sent, a
 *    gateway 5xx) or definitely not applied (could not connect or
 *    resolve, too large, too many operations, no space, auth). A request
 *    that may have been applied is never reported as not applied, and
 *    libcurl never re-sends a write behind the caller's back.
 *  - Bounded: the endpoint list, every request body, every answer and
 *    every message of a watch stream have a maximum; exceeding one is an
 *    error, never growth.
 */
#ifndef GPULEDGER_CLUSTER_H
#define GPULEDGER_CLUSTER_H

#include "ledger/ledger.h"
#include "model/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How to reach etcd (--etcd, --etcd-cacert, --etcd-cert, --etcd-key,
 * --etcd-timeout-ms). Strings are borrowed for the call that takes them. */
struct cluster_etcd_opts {
	const char *endpoints;	/* "URL[,URL...]", http:// or https:// */
	const char *cacert;	/* PEM file of the CA that signed etcd's
				   certificate, or NULL (the system's) */
	const char *cert, *key; /* PEM client certificate and key, or NULL */
	uint64_t timeout_ms;	/* per request, connecting included
				   (0: 5000) */
};

#endif
