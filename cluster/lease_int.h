/*
 * Internals of cluster/lease.c alone, kept out of cluster_int.h (which
 * holds what several files of cluster/ share): lease.c and its unit tests
 * (tests/cluster_lease.c) include this. The lease's interface is
 * cluster/cluster.h's cluster_lease_*.
 */
#ifndef GPULEDGER_CLUSTER_LEASE_INT_H
#define GPULEDGER_CLUSTER_LEASE_INT_H

#include "cluster/member_int.h"

/* Leadership's pure half (cluster/lease.c, DESIGN 11 rule 5): decisions as
 * functions of what etcd answered and of clock values the caller reads
 * (milliseconds on a monotonic clock), so that the unit tests inject them.
 */

/* What the keepalive thread knows of the lease's life. */
struct cluster_lease_clock {
	int64_t ttl_ms;	    /* the lesser of the TTL asked and granted */
	int64_t renewed_ms; /* when the last grant or keepalive that etcd
			       answered was sent */
	int64_t tried_ms;   /* when the last keepalive that failed was sent */
	bool failed;	    /* the last keepalive failed (tried_ms) */
};
/* Retry a failed keepalive or P/members put after this long. */
#define CLUSTER_RETRY_MS 100
/* P/members/<name> is written at most once in this long (and at once
 * for a new lease). */
#define CLUSTER_MEMBERS_INTERVAL_MS 1000

/* The instant holding ends: renewed_ms + ttl_ms / 2 (etcd's lease lives
 * at least ttl_ms from renewed_ms, so it cannot have expired yet). */
int64_t cluster__lease_deadline(const struct cluster_lease_clock *c);
/* now_ms < the deadline. */
bool cluster__lease_holding(const struct cluster_lease_clock *c,
			    int64_t now_ms);
/* When the next keepalive goes: renewed_ms + ttl_ms / 3, or
 * CLUSTER_RETRY_MS after a failed one. */
int64_t cluster__lease_next_keepalive(const struct cluster_lease_clock *c);
/* The timeouts of the lease's requests: a keepalive's is short enough that
 * a renewal that hangs on one endpoint can be retried on the next before
 * the deadline (ttl/8, at least 100 ms); the campaign thread's (grant,
 * txn, range, revoke) ends by ttl/3 (at least 250 ms), so that a
 * transition is noticed before the lease can have expired. Neither is
 * longer than etcd_ms (--etcd-timeout-ms, 0: the default). */
void cluster__lease_timeouts(int64_t ttl_ms, uint64_t etcd_ms,
			     uint64_t *keepalive_ms, uint64_t *request_ms);

/* What P/members/<name> holds, as the keepalive thread last wrote it. */
struct cluster_members_clock {
	bool registered;  /* written with the current lease */
	uint64_t seq;	  /* the applied seq written */
	int64_t put_ms;	  /* when it was written */
	int64_t tried_ms; /* when a put last failed (0: none since) */
};
/* When the next put is due for applied seq `applied` (INT64_MAX: none):
 * at once for a new lease; interval_ms after the last put when the seq
 * moved; CLUSTER_RETRY_MS after a failed one. */
int64_t cluster__members_next(const struct cluster_members_clock *m,
			      uint64_t applied, int64_t interval_ms);

/* What a campaign came to. */
enum cluster_campaign {
	CLUSTER_CAMPAIGN_WON,	  /* P/leader is bound to our lease: *fence */
	CLUSTER_CAMPAIGN_LOST,	  /* another member's */
	CLUSTER_CAMPAIGN_VACANT,  /* no P/leader: campaign again */
	CLUSTER_CAMPAIGN_UNKNOWN, /* rule 1: read P/leader before deciding */
	CLUSTER_CAMPAIGN_LEASE_GONE, /* etcd does not know our lease */
	CLUSTER_CAMPAIGN_RETRY	     /* not applied (etcd unreachable): again */
};
/* The campaign txn's result: rc and outcome as etcd_txn gave
 * them, leader = P/leader as its failure branch read it (NULL: absent),
 * revision = the answer's header revision. */
enum cluster_campaign cluster__campaign_decide(int rc, enum etcd_outcome oc,
					       const struct etcd_kv *leader,
					       int64_t lease, int64_t revision,
					       int64_t *fence);
/* Resolves an indeterminate campaign by P/leader as read afterwards: ours
 * by lease id (WON, *fence its create_revision), another's (LOST), or
 * absent (VACANT). */
enum cluster_campaign cluster__campaign_resolve(const struct etcd_kv *leader,
						int64_t lease, int64_t *fence);

/* What an event of P/leader's watch means to a follower that knows the
 * leader of create_revision known (0: none). */
enum cluster_watched {
	CLUSTER_WATCHED_SAME,	    /* nothing changes */
	CLUSTER_WATCHED_VACANT_NOW, /* the key was deleted: campaign */
	CLUSTER_WATCHED_NEW_LEADER  /* another create_revision: another term */
};
enum cluster_watched cluster__follower_watched(const struct etcd_event *ev,
					       int64_t known);
/* The leader's check of P/leader as read (NULL: absent): still ours, by
 * create_revision (the fence) and lease id? */
bool cluster__leader_ours(const struct etcd_kv *leader, int64_t fence,
			  int64_t lease);
/* P/leader's value: {"name": NAME} (canonical JSON, caller frees with
 * free()); and the name in one (into buf, cap bytes; "?" when it is not
 * one). */
char *cluster__leader_value(const char *name, const char *peer_url);
/* P/leader's value read: its name and peer URL ("" when none or too long;
 * url may be NULL). */
void cluster__leader_parse(const uint8_t *v, size_t n, char *name,
			   size_t name_cap, char *url, size_t url_cap);
void cluster__leader_name(const uint8_t *v, size_t n, char *buf, size_t cap);
/* P/members/<name>'s value: {"applied": SEQ} (caller frees). */
char *cluster__member_value(uint64_t applied);

#endif
