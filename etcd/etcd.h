/*
 * etcd — a client of etcd's v3 JSON gateway, with libcurl (DESIGN 11): the
 * requests (txn, range, put, delete, leases, watch, maintenance), their
 * bodies and answers (etcd/codec.c), rule 1's table of outcomes, and
 * `gpuledger cluster etcd`, the debugging shell over them (etcd/shell.c).
 * It knows nothing of the log kept in etcd: that is cluster/, its user.
 *
 * Invariants:
 *  - etcd is spoken to only through its v3 JSON gateway with libcurl
 *    (etcd/etcd.c): keys and values base64, int64s JSON strings. CURL*
 *    types never leave this layer.
 *  - Every request's outcome is classified as DESIGN 11 rule 1 says, by
 *    one table (etcd/codec.c): committed, compare failed (with the
 *    failure branch's reads), indeterminate (it may have committed: a
 *    timeout, a reset or an end of stream after the body was sent, a
 *    gateway 5xx) or definitely not applied (could not connect or
 *    resolve, too large, too many operations, no space, auth). A request
 *    that may have been applied is never reported as not applied, and
 *    libcurl never re-sends a write behind the caller's back.
 *  - Bounded: the endpoint list, every request body, every answer and
 *    every message of a watch stream have a maximum; exceeding one is an
 *    error, never growth.
 *  - A handle is used from one thread at a time; its calls assert their
 *    preconditions (a handle, the result to fill, a callback).
 *
 * Keys and values are bytes (pointer and length); the client base64s them.
 * Revisions, versions and lease ids are int64 (etcd's). Results own what
 * they point to: release them with their _release function, also after an
 * error (they are zeroed first).
 */
#ifndef GPULEDGER_ETCD_H
#define GPULEDGER_ETCD_H

#include "model/base.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* jansson's document type, named without its header (etcd_i64 reads one). */
struct json_t;

/* How to reach etcd (--etcd, --etcd-cacert, --etcd-cert, --etcd-key,
 * --etcd-timeout-ms). Strings are borrowed for the call that takes them. */
struct etcd_opts {
	const char *endpoints;	/* "URL[,URL...]", http:// or https:// */
	const char *cacert;	/* PEM file of the CA that signed etcd's
				   certificate, or NULL (the system's) */
	const char *cert, *key; /* PEM client certificate and key, or NULL */
	uint64_t timeout_ms;	/* per request, connecting included
				   (0: 5000) */
};

/* Bounds. etcd refuses a request above --max-request-bytes (1.5 MiB by
 * default) as "request is too large", so no value we put is larger than
 * that; an answer holds at most ETCD_RESPONSE_VALUES such values (the most
 * any request of cluster/ reads: its verdict txn's failure branch),
 * base64 makes each 4/3 larger (2 MiB), and the JSON around them is small:
 * 4 x 2 MiB and 256 KiB hold the largest answer a well-formed request of
 * ours can get. A range over many keys must set a limit that fits. */
#define ETCD_RESPONSE_VALUES 4
#define ETCD_ENDPOINTS_MAX   16
#define ETCD_URL_MAX	     511
#define ETCD_RESPONSE_MAX    ((size_t)(ETCD_RESPONSE_VALUES * 2048 + 256) << 10)
/* Our own request bodies: JSON with base64 values, so 4/3 of etcd's limit
 * and some; a body above it is refused before anything is sent. */
#define ETCD_REQUEST_MAX ((size_t)3 << 20)
/* One message of a watch stream: etcd batches the events of up to 1,000
 * revisions in one message, so it may be larger than any answer; a larger
 * one ends the watch with LG_ELIMIT (the applier then reads ranges,
 * rule 7). */
#define ETCD_WATCH_MSG_MAX   ((size_t)16 << 20)
#define ETCD_TIMEOUT_DEFAULT 5000
/* Operations in one txn branch (etcd's --max-txn-ops default). */
#define ETCD_TXN_OPS_MAX 128

/* ---------------------------------------------------------------------- */
/* Outcomes (DESIGN 11 rule 1) */

enum etcd_outcome {
	/* Answered: the request took effect (a txn: its compares held). */
	ETCD_COMMITTED = 0,
	/* A txn's compares failed; its failure branch ran (and its reads are
	 * in the result). Definite: nothing of the success branch applied. */
	ETCD_COMPARE_FAILED,
	/* The answer did not arrive: it may have committed. */
	ETCD_INDETERMINATE,
	/* Definitely not applied. */
	ETCD_NOT_APPLIED
};

/* ---------------------------------------------------------------------- */
/* Requests and results */

struct etcd_header {
	uint64_t cluster_id, member_id;
	int64_t revision;
	uint64_t raft_term;
};

struct etcd_kv {
	uint8_t *key, *value; /* owned by the result; NUL-terminated */
	size_t key_len, value_len;
	int64_t create_revision, mod_revision, version, lease;
};

struct etcd_range_result {
	struct etcd_header header;
	struct etcd_kv *kvs;
	size_t n_kvs;
	bool more;
	int64_t count;
};
void etcd_range_result_release(struct etcd_range_result *r);

/* A range: key alone, every key with key as a prefix, or [key, end). */
struct etcd_range {
	const void *key;
	size_t key_len;
	bool prefix;
	const void *end; /* with !prefix: range end, or NULL for key alone */
	size_t end_len;
	int64_t revision; /* 0: the latest */
	int64_t limit;	  /* 0: no limit */
	bool keys_only, count_only;
	bool serializable; /* read the member's copy (may be stale) */
};

enum etcd_cmp_target {
	ETCD_CMP_VERSION,
	ETCD_CMP_CREATE,
	ETCD_CMP_MOD,
	ETCD_CMP_VALUE,
	ETCD_CMP_LEASE
};
enum etcd_cmp_result {
	ETCD_EQUAL,
	ETCD_GREATER,
	ETCD_LESS,
	ETCD_NOT_EQUAL
};

struct etcd_cmp {
	const void *key;
	size_t key_len;
	enum etcd_cmp_target target;
	enum etcd_cmp_result result;
	int64_t number;	   /* VERSION, CREATE, MOD, LEASE */
	const void *value; /* VALUE */
	size_t value_len;
};

enum etcd_op_kind {
	ETCD_OP_PUT,
	ETCD_OP_RANGE,
	ETCD_OP_DELETE
};

struct etcd_op {
	enum etcd_op_kind kind;
	/* PUT: key, value, lease (0: none). RANGE: range. DELETE: the keys
	 * of range (key, prefix, end). */
	struct etcd_range range;
	const void *value;
	size_t value_len;
	int64_t lease;
};

struct etcd_txn {
	const struct etcd_cmp *cmp;
	size_t n_cmp;
	const struct etcd_op *success, *failure;
	size_t n_success, n_failure;
};

/* The answer to one op of the branch that ran. */
struct etcd_op_result {
	enum etcd_op_kind kind;
	struct etcd_range_result range; /* RANGE */
	int64_t deleted;		/* DELETE */
};

struct etcd_txn_result {
	enum etcd_outcome outcome;
	struct etcd_header header;
	struct etcd_op_result *ops; /* the branch that ran, in order */
	size_t n_ops;
};
void etcd_txn_result_release(struct etcd_txn_result *r);

/* A JSON int64, as etcd writes them: a decimal string, absent = 0 (proto3
 * omits zeros); a JSON integer is taken too. */
int64_t etcd_i64(const struct json_t *obj, const char *name);
/* ---------------------------------------------------------------------- */
/* The client (etcd/etcd.c). One handle, one connection at a time,
 * used from one thread. */

typedef struct etcd etcd_t;

/* LG_EINVAL for a bad endpoint list or unreadable TLS files. Caller
 * closes. */
int etcd_open(etcd_t **out, const struct etcd_opts *o, struct lg_error *err);
void etcd_close(etcd_t *e);
/* From now on every request of e is capped at the time left before
 * deadline_ms (CLOCK_MONOTONIC ms, etcd_mono_ms; 0: no deadline), and
 * none is sent once it has passed (not applied: DESIGN 11 rule 2's bound
 * holds however many requests a call makes). */
void etcd_deadline(etcd_t *e, int64_t deadline_ms);
/* CLOCK_MONOTONIC in milliseconds: the clock of every deadline here (and
 * of every bound of cluster/). */
int64_t etcd_mono_ms(void);
/* The endpoint the last request went to (borrowed until the next). */
const char *etcd_endpoint(const etcd_t *e);

/* Every request returns 0 for an answer (a txn: committed or compare
 * failed, in out->outcome), else the code of rule 1's outcome (etcd__classify)
 * with err saying what happened and *outcome (may be NULL) the outcome.
 * Endpoints: a request that was definitely not sent (could not connect or
 * resolve, TLS failed) goes on to the next endpoint; after an attempt that
 * failed otherwise, the next request starts at the next endpoint. */
int etcd_txn(etcd_t *e, const struct etcd_txn *t, struct etcd_txn_result *out,
	     struct lg_error *err);
int etcd_range(etcd_t *e, const struct etcd_range *r,
	       struct etcd_range_result *out, enum etcd_outcome *outcome,
	       struct lg_error *err);
int etcd_put(etcd_t *e, const void *key, size_t key_len, const void *val,
	     size_t val_len, int64_t lease, int64_t *revision,
	     enum etcd_outcome *outcome, struct lg_error *err);
/* Leases: grant (id 0: etcd picks one; *ttl_s the TTL granted),
 * keepalive (*ttl_s 0 when the lease is gone: LG_ENOENT), revoke
 * (LG_ENOENT when there is no such lease). */
int etcd_lease_grant(etcd_t *e, int64_t ttl_s, int64_t *id, int64_t *granted_s,
		     enum etcd_outcome *outcome, struct lg_error *err);
int etcd_lease_keepalive(etcd_t *e, int64_t id, int64_t *ttl_s,
			 enum etcd_outcome *outcome, struct lg_error *err);
int etcd_lease_revoke(etcd_t *e, int64_t id, enum etcd_outcome *outcome,
		      struct lg_error *err);
/* The whole seconds lease id has left, and its granted TTL (timetolive;
 * LG_ENOENT, *ttl_s <= 0, when it is gone). */
int etcd_lease_ttl(etcd_t *e, int64_t id, int64_t *ttl_s, int64_t *granted_s,
		   enum etcd_outcome *outcome, struct lg_error *err);

struct etcd_status {
	struct etcd_header header; /* cluster_id, member_id, revision */
	uint64_t leader;	   /* the etcd leader's member id */
	char version[32];
	int64_t db_size;
	int64_t db_size_in_use; /* 0: not said (before 3.4) */
	uint64_t raft_index, raft_term;
};
int etcd_status(etcd_t *e, struct etcd_status *st, enum etcd_outcome *outcome,
		struct lg_error *err);
/* The endpoints of a handle, and the maintenance calls of one of them
 * (endpoint i alone, no other tried: status and defragment are about that
 * member; i == SIZE_MAX: any). Defragmenting blocks that member's reads
 * and writes while it runs: timeout_ms bounds it (0: the handle's). */
size_t etcd_n_endpoints(const etcd_t *e);
const char *etcd_endpoint_at(const etcd_t *e, size_t i);
int etcd_status_at(etcd_t *e, size_t i, struct etcd_status *st,
		   enum etcd_outcome *outcome, struct lg_error *err);
int etcd_defragment_at(etcd_t *e, size_t i, uint64_t timeout_ms,
		       enum etcd_outcome *outcome, struct lg_error *err);
/* Compacts the key-value history up to revision (physical: wait until it
 * is removed from the store). */
int etcd_compact(etcd_t *e, int64_t revision, bool physical,
		 enum etcd_outcome *outcome, struct lg_error *err);

/* Watches. */
enum etcd_event_type {
	ETCD_EV_PUT,
	ETCD_EV_DELETE
};
struct etcd_event {
	enum etcd_event_type type;
	struct etcd_kv kv; /* borrowed for the call */
};
struct etcd_watch_msg {
	struct etcd_header header;
	bool created;
	const struct etcd_event *events; /* borrowed for the call */
	size_t n_events;
	/* The start revision was compacted: the oldest revision left is
	 * compact_revision; the watch is canceled after this message. */
	int64_t compact_revision;
	bool canceled;
	const char *cancel_reason; /* borrowed; "" when none */
};
/* fn sees each message; non-zero stops the watch (etcd_watch returns it). */
typedef int etcd_watch_fn(void *ctx, const struct etcd_watch_msg *m);

struct etcd_watch {
	struct etcd_range range; /* key, prefix or end; revision, limit and
				    the flags are not used */
	int64_t start_revision;	 /* 0: from now */
	bool progress_notify;
	uint64_t timeout_ms; /* the whole watch (0: none) */
	/* Stops the watch (returns 0) once non-zero; may be NULL. */
	const volatile sig_atomic_t *stop;
};
/* Streams from w->start_revision, calling fn for every message until fn
 * stops it (its value), *stop (0), or the stream ends: LG_ERANGE when the
 * start revision was compacted (after fn saw the message), LG_EIO when etcd
 * canceled the watch or the stream broke or timed out, LG_ELIMIT for a
 * message above ETCD_WATCH_MSG_MAX, LG_ECORRUPT for one that is not JSON. */
int etcd_watch(etcd_t *e, const struct etcd_watch *w, etcd_watch_fn *fn,
	       void *ctx, struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* A debugging aid, `gpuledger cluster etcd` (etcd/shell.c): NDJSON
 * requests on in ({"op": "txn"|"range"|"put"|"delete"|"watch"|"grant"|
 * "keepalive"|"revoke"|"status"|"compact", ...}, cluster/README.md), one
 * JSON answer a line on out, each with its "outcome". Returns 0 at the end
 * of the input, LG_EIO when out cannot be written, LG_EINVAL for options
 * that do not make a client. */
int etcd_shell(const struct etcd_opts *eo, FILE *in, FILE *out,
	       struct lg_error *err);

#endif
