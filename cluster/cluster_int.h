/*
 * Internals of cluster/: what is built on etcd's client (etcd/etcd.h) and
 * shared across cluster/: the key layout, the log in etcd (the append txn,
 * the append loop, catching up, retention) for the operator's commands
 * (`cluster init`, `status`, `feed`) and for a member, and the applier's
 * interface. A member's other threads (the leader's watcher, the verdict
 * path, a door's forward) are declared in cluster/member_int.h.
 *
 * Names: functions and data shared between files of cluster/ are
 * cluster__* (layercheck reads the objects for it); types and constants,
 * which no object holds, are cluster_* and CLUSTER_*, like the public ones.
 */
#ifndef GPULEDGER_CLUSTER_INT_H
#define GPULEDGER_CLUSTER_INT_H

#include "cluster/cluster.h"

#include <jansson.h>
#include <signal.h>

/* A verdict txn's failure branch reads P/log/<s+1> and the values after it,
 * with P/head: at most this many values, which etcd's answer bound holds. */
#define CLUSTER_FAIL_VALUES ETCD_RESPONSE_VALUES

/* CLOCK_MONOTONIC in nanoseconds, and a sleep of ms >= 0 milliseconds
 * (cluster/clock.c). */
int64_t cluster__mono_ns(void);
void cluster__sleep_ms(int64_t ms);

/* ---------------------------------------------------------------------- */
/* The key layout (cluster/README.md). Each writes prefix + the key's tail
 * into buf (cap bytes) and returns its length, 0 when it does not fit. */
size_t cluster__key(char *buf, size_t cap, const char *prefix,
		    const char *tail);
/* P/log/<first seq as 20 decimal digits>, so that keys sort as seqs. */
size_t cluster__log_key(char *buf, size_t cap, const char *prefix,
			uint64_t first_seq);

/* ---------------------------------------------------------------------- */
/* The log in etcd (DESIGN 11): the append txn (cluster/append.c), the
 * applier (cluster/applier.c), the member (cluster/member.c) and the feed
 * (cluster/feed.c). P/log/<s+1>'s value is ledger_logval_build's. */

/* P/head's value, canonical JSON {"chainHead", "seq", "time"} (caller
 * frees), and its reading (false when v is not a head). */
char *cluster__head_json(const struct cluster_head *h);
bool cluster__head_parse(const uint8_t *v, size_t n, struct cluster_head *h);
/* A head's chainHead as bytes; false when it is not 64 hex digits. */
bool cluster__head_bytes(const struct cluster_head *h, uint8_t *out);
/* The seq of a P/log/ key (prefix/log/<20 digits>); 0 when key is not
 * one. */
uint64_t cluster__log_key_seq(const uint8_t *key, size_t len,
			      const char *prefix);

/* What sends a txn: etcd_txn on an etcd_t, or a test's. */
typedef int cluster_txn_fn(void *ctx, const struct etcd_txn *t,
			   struct etcd_txn_result *out, struct lg_error *err);

/* One writer of the log: where its next txn appends. */
struct cluster_writer {
	const char *prefix;    /* borrowed */
	cluster_txn_fn *send;  /* NULL: etcd_txn on etcd */
	void *send_ctx;
	etcd_t *etcd;
	char epoch[65]; /* P/epoch, compared by every txn */
	/* (s, h) as judged on, and P/head's mod_revision read with them. */
	uint64_t seq;
	uint8_t head[LEDGER_HEAD_BYTES];
	int64_t head_rev;
	/* The sequencer's pipeline (DESIGN 11): when not NULL, P/head is
	 * compared on this value instead of head_rev: the exact bytes the
	 * txn before this one puts (its head_put), whose revision is not
	 * known until it commits (borrowed; cleared when this txn commits). */
	const char *head_value;
	size_t head_value_len;
	/* P/leader's create_revision won (0: no leader compare). */
	int64_t leader_rev;
	uint64_t retry_ms; /* pause between re-sends (0: 100) */
};

/* A watcher position written with the events (P/pos/<source>). */
struct cluster_pos {
	const char *source;
	const void *value;
	size_t len;
};

enum cluster_append_outcome {
	CLUSTER_APPEND_COMMITTED = 0,
	CLUSTER_APPEND_CONFLICT,    /* P/head moved, or P/open is there */
	CLUSTER_APPEND_DEPOSED,	    /* the leader compare failed */
	CLUSTER_APPEND_NOT_APPLIED, /* definitely not (why says why) */
	CLUSTER_APPEND_UNKNOWN	    /* still unknown at the deadline */
};
/* "committed", "conflict", "deposed", "not-applied", "unknown". */
const char *cluster__append_outcome_name(enum cluster_append_outcome o);

struct cluster_append_req {
	const struct ledger_logval *v; /* P/log/<s+1>'s value (first_seq
					  must be w->seq + 1) */
	const struct cluster_pos *pos;
	size_t n_pos;
	/* Only VERDICTs: no leader compare; compare P/open absent
	 * (rule 6). */
	bool verdicts;
	/* Rule 6: the first part of a batch that needs several txns puts
	 * P/open, its last part deletes it. */
	enum cluster_open {
		CLUSTER_OPEN_KEEP = 0,
		CLUSTER_OPEN_PUT,
		CLUSTER_OPEN_DELETE
	} open;
	int64_t deadline_ms; /* CLOCK_MONOTONIC ms: rule 1 stops there */
	/* P/head's new value as put (NULL: cluster__head_json of the
	 * value's last seq, head and time). The pipeline makes it once, so
	 * that the next txn compares these very bytes. */
	const char *head_put;
	size_t head_put_len;
};

struct cluster_append_result {
	enum cluster_append_outcome outcome;
	unsigned attempts; /* txns sent */
	/* Some attempt's answer did not arrive (it may commit later). */
	bool indeterminate;
	/* COMMITTED: the txn's revision; found is true when the failure
	 * branch of a re-send showed our own P/log/<s+1> (rule 1). */
	int64_t revision;
	bool found;
	/* CONFLICT: P/head now and its mod_revision; whether only the
	 * verdict path's events (cluster__verdict_path_event) lie between
	 * (read from the P/log/ values between; not read, false, for a
	 * verdict txn, whose caller reads them itself to re-number); open:
	 * P/open was there (a verdict txn). */
	struct cluster_head now;
	int64_t now_rev;
	bool only_verdicts, open;
	/* CONFLICT of a verdict txn: the P/log/ values from s+1 on as its
	 * failure branch read them (at most CLUSTER_FAIL_VALUES, contiguous,
	 * perhaps not up to now.seq), so that re-numbering needs no other read
	 * when few values lie between. Owned: cluster__append_result_release. */
	struct cluster_logcopy {
		uint64_t seq; /* the value's first seq */
		uint8_t *value;
		size_t len;
	} between[CLUSTER_FAIL_VALUES];
	size_t n_between;
	/* NOT_APPLIED because P/epoch is another's (rule 8): never again. */
	bool other_history;
	char why[LG_ERRMSG_MAX]; /* NOT_APPLIED, UNKNOWN, DEPOSED */
};

/* The NOTE code of DESIGN 11 rule 2: a verdict found committed after its
 * client was answered 503. */
#define CLUSTER_NOTE_UNANSWERED "VerdictUnanswered"

/* An event the verdict path appends, from any member: a VERDICT, or a NOTE
 * VerdictUnanswered. Neither changes the state, so a leader re-chains
 * over them (rule 4); anything else between is another writer's
 * observation. */
bool cluster__verdict_path_event(const struct event *ev);

/* The append txn (DESIGN 11 "An append is one txn"): compare P/epoch,
 * P/head's mod_revision (or its value, w->head_value), P/leader's create_revision (with leader_rev and
 * !verdicts), P/open absent (verdicts) -> put P/log/<s+1>, P/head and the
 * positions; the failure branch reads P/head, P/log/<s+1>, P/epoch,
 * P/leader and P/open. Rule 1: an indeterminate outcome is re-sent
 * identical until a definite one or the deadline; a failed compare whose
 * P/log/<s+1> is byte for byte the value sent was ours. On COMMITTED the
 * writer moves to the value's last seq and head. Returns 0 with the
 * outcome in res; LG_EINVAL for a request that cannot be made (a value
 * that is not at w->seq + 1, too many positions). */
int cluster__append(struct cluster_writer *w,
		    const struct cluster_append_req *rq,
		    struct cluster_append_result *res, struct lg_error *err);
void cluster__append_result_release(struct cluster_append_result *res);

/* Retention (DESIGN 11 "Compaction and members joining", rule 11): with
 * rt->keep > 0, deletes the P/log/ keys below min(applied of P/members/) -
 * keep (only when some member is listed: none listed pins nothing), and
 * with rt->keep_bytes the oldest while the values kept exceed it; with
 * P/epoch's compare and, when w->leader_rev is set, the leader's (rule 5);
 * then compacts etcd at the mod_revision of the oldest key kept and
 * defragments its members one at a time (rt->defrag_free). *c says what
 * it read and did; cut 0: nothing was due. */
int cluster__compact(struct cluster_writer *w,
		     const struct cluster_retention *rt,
		     struct cluster_compact *c, struct lg_error *err);
/* P/epoch into epoch (cap bytes, NUL-terminated); LG_ENOENT when absent. */
int cluster__epoch_read(etcd_t *e, const char *prefix, char *epoch,
			size_t cap, struct lg_error *err);
/* A P/members/<name> value: its applied seq and lease into *m (name
 * untouched). */
void cluster__member_parse(const struct etcd_kv *kv,
			   struct cluster_status_member *m);

/* The P/log/ values of seqs [from, to] at revision (0: the latest), in
 * order, each handed to fn (borrowed for the call; non-zero stops and is
 * returned), through w's sender. LG_ENOENT when a value the range should
 * hold is missing (err names the seq). */
typedef int cluster_logval_fn(void *ctx, const struct etcd_kv *kv,
			      uint64_t first_seq);
int cluster__log_read(struct cluster_writer *w, uint64_t from, uint64_t to,
		      int64_t revision, cluster_logval_fn *fn, void *ctx,
		      struct lg_error *err);

/* Applies the P/log/ values after w->seq up to head (P/head read at
 * head_rev) to st, the state at w->seq, checking the chain up to head's
 * chainHead; then w is at head. LG_EMISMATCH for a head that went back or
 * a chain that is not P/head's, LG_ENOENT for a value missing. (On an
 * error st may hold part of the values: the caller drops it.) */
int cluster__catch_up(struct cluster_writer *w, state_t *st,
		      const struct cluster_head *head, int64_t head_rev,
		      struct lg_error *err);

/* One append loop (DESIGN 11), the feed's and the leader's: builds what is
 * left on a copy of *st, appends it with cluster__append, and asks the
 * caller's policy what each outcome means. A verdict txn takes the
 * sequencer's pipeline instead (cluster/verdicts.c). */
enum cluster_next {
	CLUSTER_NEXT_DONE,    /* committed: *st is the state after it */
	CLUSTER_NEXT_AGAIN,   /* the identical txn again (rule 1) */
	CLUSTER_NEXT_REBUILD, /* catch up to the conflict's head (another
				 writer appended), then build again */
};
struct cluster_append_loop {
	struct cluster_writer *w;
	state_t **st; /* the state at w->seq; replaced after a commit */
	void *ctx;
	/* The value of what is left, built on copy (a clone of *st) after
	 * head: ledger_logval_build's contract. */
	int (*build)(void *ctx, state_t *copy, const uint8_t *head,
		     struct ledger_logval *v, size_t *taken,
		     struct lg_error *err);
	/* Before each send (NULL: none): the request's parts besides its
	 * value, given how many events it takes; non-zero stops the loop. */
	int (*before)(void *ctx, struct cluster_append_req *rq, size_t taken,
		      struct lg_error *err);
	/* The caller's policy over an outcome: *next, or non-zero (with err)
	 * to stop. */
	int (*after)(void *ctx, const struct cluster_append_req *rq,
		     const struct cluster_append_result *res,
		     enum cluster_next *next, struct lg_error *err);
};
/* 0 once a txn committed (*taken of the events it was built from), else
 * the first error of build, before, cluster__append, after or the catch
 * up. */
int cluster__append_loop(const struct cluster_append_loop *lp, size_t *taken,
			 struct lg_error *err);

/* The applier (rule 7): the only writer of a member's LMDB. */
#define CLUSTER_MSG_MAX (2 * LG_ERRMSG_MAX)
typedef struct cluster_applier cluster_applier_t;

/* What the member shows of it (copied under its lock). */
struct cluster_applier_status {
	bool reachable;	  /* the last request reached etcd */
	int64_t fresh_ns; /* CLOCK_MONOTONIC when it last knew itself
			     caught up with P/head (0: never) */
	uint64_t applied, head_seq;
	char refused[CLUSTER_MSG_MAX]; /* rule 8: why it writes no more */
	char stuck[CLUSTER_MSG_MAX];   /* why it cannot go on for now */
};

/* Opens the applier over lg (a writer handle it alone uses from then on)
 * and makes rule 8's checks against etcd: LG_EEXIST with err saying why
 * when the ledger belongs to another history (another P/epoch, etcd
 * cluster or prefix, or a seq past P/head, or a head that differs from
 * P/head at the same seq); an etcd that cannot be reached is no error
 * (the checks are made when it answers). Caller frees. */
/* Joining (DESIGN 11 "Compaction and members joining"): when etcd no
 * longer holds the log after the ledger's seq, it is copied from this
 * peer first (replicate's protocol, every head checked). Strings borrowed
 * for the applier's life. Before cluster__applier_run. */
/* Rule 10: sign the checkpoint of every multiple of every seqs (0: the
 * default) with s (borrowed for the applier's life). Before the run. */
void cluster__applier_signer(cluster_applier_t *a, const struct note_signer *s,
			     uint64_t every);
void cluster__applier_peer(cluster_applier_t *a, const char *url,
			   const char *token, const char *cacert,
			   const char *cert, const char *key);
int cluster__applier_new(cluster_applier_t **out, ledger_t *lg,
			 const struct etcd_opts *eo, const char *prefix,
			 struct lg_error *err);
/* Runs until *stop (on the applier's own thread). */
void cluster__applier_run(cluster_applier_t *a,
			  const volatile sig_atomic_t *stop);
void cluster__applier_status(cluster_applier_t *a,
			     struct cluster_applier_status *st);
void cluster__applier_free(cluster_applier_t *a);

#endif
