/*
 * A member's threads (DESIGN 11), as cluster/member.c wires them: the
 * leader's watcher and the lease it runs under, the verdict path with the
 * sequencer's pipeline, and a door's forward to the sequencer. Only the
 * files of those parts (leader.c, lease.c, verdicts.c, forward.c,
 * member.c) and their unit tests include this; cluster_int.h holds what
 * all of cluster/ shares (the key layout, the append txn and loop, the
 * applier's interface).
 */
#ifndef GPULEDGER_CLUSTER_MEMBER_INT_H
#define GPULEDGER_CLUSTER_MEMBER_INT_H

#include "cluster/cluster_int.h"

/* ---------------------------------------------------------------------- */
/* The leader's watcher (cluster/leader.c; DESIGN 11 rules 1, 4, 5, 6): the
 * member's lease and, while it holds P/leader, the live watcher with its
 * flushes appended to etcd's log. */
typedef struct cluster_leader cluster_leader_t;
struct cluster_leader_opts {
	struct etcd_opts eo;
	const char *prefix, *name; /* borrowed until freed */
	uint64_t ttl_s;		   /* the lease's (0: the default) */
	ledger_t *lg;		   /* the member's: a shared handle of it */
	cluster_applier_t *ap;	   /* borrowed: its status */
	/* The Kubernetes API as `gpuledger watch` finds it (NULL, NULL:
	 * $KUBECONFIG, ~/.kube/config or in-cluster). */
	const char *kubeconfig, *context;
	const struct class_table *classes; /* --classes, or NULL */
	int64_t tick_ns;		   /* 0: the engine's */
	uint64_t request_ms; /* one append's rule-1 span before the lease is
				looked at again */
	size_t max_value;    /* a P/log/ value's bound (0: the default) */
	struct cluster_retention rt; /* retention (rule 11) */
	/* Without --watch: the lease only keeps P/members/<name> (this
	 * member's applied seq pins retention, rule 11); no campaign, no
	 * watcher, no Kubernetes configuration. */
	bool observe;
	const char *peer_url; /* this member's, for P/leader (may be NULL) */
	/* --holds (DESIGN 3.7): the mode a term appends when the log's
	 * differs (holds_set false: the log's stays). */
	bool holds_set;
	int64_t holds_ttl_ms;
};
/* Loads the Kubernetes configuration and starts the lease (it campaigns at
 * once). LG_ENOENT/LG_EINVAL for a configuration that cannot be used.
 * Caller frees. */
int cluster__leader_new(cluster_leader_t **out,
			const struct cluster_leader_opts *o,
			struct lg_error *err);
/* Runs terms while the lease is won, until cluster__leader_stop (on a
 * thread of its own). */
void cluster__leader_run(cluster_leader_t *l);
/* Any thread: ends the term and the run. */
void cluster__leader_stop(cluster_leader_t *l);
/* Whether a term's watcher runs now, and its fence. */
bool cluster__leader_leading(cluster_leader_t *l, int64_t *fence);
/* The verdict sequencer as the lease last saw it (cluster__lease_sequencer). */
enum cluster_sequencer cluster__leader_sequencer(cluster_leader_t *l,
						 char *url, size_t cap);
/* Resigns (revokes the lease) and frees; after the run returned. */
void cluster__leader_free(cluster_leader_t *l);

/* ---------------------------------------------------------------------- */
/* A member's verdicts (cluster/verdicts.c; DESIGN 11 "Verdicts in a
 * cluster", rules 1, 2, 3, 6, 9): the server's verdict path of a member,
 * called on worker threads, one call at a time, or up to --pipeline at
 * once while this member is the sequencer (cluster__verdicts_inflight;
 * struct query_member). */

/* The verdict sequencer (DESIGN 11 "One sequencer, every member a door"):
 * the holder of P/leader as this member last saw it. SELF while this
 * member holds it; OTHER with its peer URL (url, cap bytes; "" when it
 * advertised none); UNKNOWN while no holder is known. Any thread; never
 * blocks on etcd. */
enum cluster_sequencer {
	CLUSTER_SEQ_UNKNOWN = 0,
	CLUSTER_SEQ_SELF,
	CLUSTER_SEQ_OTHER
};
enum cluster_sequencer cluster__lease_sequencer(cluster_lease_t *l,
					       char *url, size_t cap);

/* A door's forward (cluster/forward.c; DESIGN 11 "One sequencer, every
 * member a door"): one POST /v1/peer/verdicts per group, on the verdict
 * path's thread. */
#define CLUSTER_FORWARD_ITEMS_MAX 256
struct cluster_forward;
/* token, cacert, cert and key (each may be NULL) as --peer-token-file,
 * --peer-cacert, --peer-cert, --peer-key; copied where libcurl needs.
 * Caller frees. */
int cluster__forward_new(struct cluster_forward **out, const char *token,
			 const char *cacert, const char *cert, const char *key,
			 struct lg_error *err);
void cluster__forward_free(struct cluster_forward *f);
/* Forwards g's items to judge that have a body, a budget left
 * (budget_ms[i] > 0) and were not forwarded to this member, to the
 * sequencer at url within timeout_ms: items it answers are answered (200
 * with its answer as again, or its 400/409/413); the rest stay to judge
 * here. Returns how many were answered, or a negative code with err when
 * the forward failed as a whole (nothing answered). */
int cluster__forward_run(struct cluster_forward *f, const char *url,
			 const char *from, struct query_vgroup *g,
			 const int64_t *budget_ms, uint64_t timeout_ms,
			 struct lg_error *err);

/* Rule 2's bound: 70% of the webhook's 10 s. */
#define CLUSTER_VERDICT_TIMEOUT_MS 7000
/* How long a door waits for the sequencer's answer (--forward-timeout-ms)
 * before it judges the group itself. */
#define CLUSTER_FORWARD_TIMEOUT_MS 2000
typedef struct cluster_verdicts cluster_verdicts_t;
/* Over ledger_shares of lg (the applier's writer handle) and clients of
 * its own, one of each per txn it may have in flight (pipeline, 1 to
 * CLUSTER_PIPELINE_MAX: --pipeline); ap and prefix are borrowed until it
 * is freed. Caller frees, before lg. */
int cluster__verdicts_new(cluster_verdicts_t **out, ledger_t *lg,
			  cluster_applier_t *ap, const struct etcd_opts *eo,
			  const char *prefix, uint64_t timeout_ms,
			  unsigned pipeline, struct lg_error *err);
void cluster__verdicts_free(cluster_verdicts_t *cv);
/* Judges, records and answers the n items of one group commit. */
void cluster__verdicts_run(cluster_verdicts_t *cv, struct query_vitem *it,
			   size_t n, struct query_vstats *st);
/* Makes the member a door (DESIGN 11): while ld names another member as
 * the sequencer, groups are forwarded with fwd (taken over; NULL: never
 * forward) first. name: this member's, sent as the forward's "from".
 * Before the first run. */
void cluster__verdicts_doors(cluster_verdicts_t *cv,
			     struct cluster_forward *fwd,
			     cluster_leader_t *ld, const char *name,
			     uint64_t forward_timeout_ms);
/* A txn of unknown outcome or an owed NOTE waits (any thread). */
bool cluster__verdicts_pending(cluster_verdicts_t *cv);
/* The sequencer's pipeline (DESIGN 11): while ld says this member holds
 * P/leader, up to `pipeline` calls may run at once (each one txn in
 * flight, chained on the one before); else one. Before the first run. */
void cluster__verdicts_sequencer(cluster_verdicts_t *cv, cluster_leader_t *ld);
/* How many calls of cluster__verdicts_run may run at once now (any
 * thread; never blocks on etcd). */
size_t cluster__verdicts_inflight(cluster_verdicts_t *cv);

#endif
