/*
 * cluster — a cluster of members on etcd (DESIGN 11): the key layout of the
 * log in etcd, the operator's commands on it (`gpuledger cluster init`,
 * `status`, `feed`, ...) and a member (`gpuledger member`: its applier,
 * lease, watcher, verdict path and door). cluster/README.md describes the
 * keys.
 *
 * Invariants:
 *  - etcd is spoken to only through etcd/etcd.h (the v3 gateway client,
 *    whose outcomes follow DESIGN 11 rule 1); no CURL* type or gateway JSON is
 *    seen here.
 *  - `cluster init` writes P/epoch, P/head and P/pos/ in one txn that
 *    compares create_revision(P/head) == 0: a prefix that holds a head is
 *    never written again (rule 8: no second history).
 */
#ifndef GPULEDGER_CLUSTER_H
#define GPULEDGER_CLUSTER_H

#include "etcd/etcd.h"
#include "ledger/ledger.h"
#include "model/model.h"
#include "query/query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The longest prefix P (bytes); P is not empty, holds no control
 * character and does not end with '/'. */
#define CLUSTER_PREFIX_MAX 200
/* The longest peer URL (--advertise-url, --peer) in bytes, NUL included. */
#define CLUSTER_URL_MAX 512

/* Checks a prefix; LG_EINVAL says why. */
int cluster_prefix_check(const char *prefix, struct lg_error *err);

/* What `cluster init` wrote (or found). */
struct cluster_head {
	uint64_t seq;
	char chain_head[2 * LEDGER_HEAD_BYTES + 1]; /* hex */
	char time[40];				    /* RFC 3339, ns */
};

struct cluster_init_result {
	struct cluster_head head; /* written, or the existing one (LG_EEXIST) */
	char epoch[33];		  /* P/epoch (hex), written or existing */
	size_t n_positions;	  /* P/pos/ keys written */
	uint64_t cluster_id;	  /* etcd's, from the answer's header */
	int64_t revision;	  /* the txn's revision */
	unsigned attempts;	  /* txns sent (rule 1: re-sent when the
				     outcome was unknown) */
};

/* `cluster init` (DESIGN 6, 11): P/epoch (a fresh random id), P/head
 * ({"chainHead", "seq", "time"} of lg's last event, or of an empty log when
 * lg is NULL) and P/pos/<source> (lg's watcher positions) in one txn
 * comparing create_revision(P/head) == 0. A txn whose outcome is unknown is
 * re-sent, identical, until an answer or until timeout_ms * 4 have passed;
 * a failed compare whose P/epoch is the one sent was ours (rule 1).
 * Errors: LG_EEXIST when P already holds a head (res->head and res->epoch
 * name it; nothing written); LG_EIO when etcd cannot be reached or the
 * outcome stays unknown (err says which); the ledger's errors. */
int cluster_init(const struct etcd_opts *eo, const char *prefix, ledger_t *lg,
		 struct cluster_init_result *res, struct lg_error *err);

/* `cluster status`, read in one txn at one revision. */
struct cluster_status_member {
	char *name;	  /* caller frees with the status */
	bool has_applied; /* its value carried an applied seq */
	uint64_t applied;
	int64_t lease; /* the lease its key is bound to (0: none) */
};

struct cluster_status {
	char endpoint[512]; /* the etcd endpoint that answered */
	uint64_t cluster_id, member_id, etcd_leader;
	int64_t revision;
	char etcd_version[32];
	bool has_head;
	struct cluster_head head;
	char epoch[65]; /* "" when absent */
	char *leader;	/* P/leader's member, or NULL; caller frees */
	int64_t leader_lease;
	struct cluster_status_member *members; /* sorted by name */
	size_t n_members;
};

/* Reads P's head, epoch, leader and members. LG_EIO when etcd cannot be
 * reached (err says why); LG_ECORRUPT when P/head is not a head. Release
 * with cluster_status_release (also after an error). */
int cluster_status(const struct etcd_opts *eo, const char *prefix,
		   struct cluster_status *st, struct lg_error *err);
void cluster_status_release(struct cluster_status *st);
/* The status as one line of canonical JSON (caller frees with free()). */
char *cluster_status_json(const struct cluster_status *st, const char *prefix);

/* ---------------------------------------------------------------------- */
/* Leadership (DESIGN 11 rule 5; cluster/lease.c): a member's lease, its
 * keepalive, the election on P/leader and P/members/<name>.
 *
 * Invariants:
 *  - The fence is P/leader's create_revision, never a name: a member wins
 *    with a txn comparing create_revision(P/leader) == 0 that puts
 *    {"name": NAME} bound to its lease, and every txn of the leader that
 *    carries anything but VERDICTs compares that create_revision.
 *  - Holding is false as soon as no renewal succeeded within TTL/2 of the
 *    last one that etcd answered (measured from when it was sent), before
 *    the lease can have expired in etcd; and at once after
 *    cluster_lease_deposed, cluster_lease_resign or cluster_lease_close.
 *  - Every step-down revokes the lease (P/leader and P/members/<name> go
 *    with it); a lease that etcd says is gone is never used again.
 *  - An outcome that etcd did not give (rule 1) is resolved by reading
 *    P/leader (is it bound to our lease?) before deciding won or lost.
 */
typedef struct cluster_lease cluster_lease_t;

#define CLUSTER_LEASE_TTL_DEFAULT 5
#define CLUSTER_LEASE_TTL_MAX	  3600
/* A member's name: 1..CLUSTER_NAME_MAX bytes of [A-Za-z0-9._-]. */
#define CLUSTER_NAME_MAX 128
int cluster_name_check(const char *name, struct lg_error *err);

enum cluster_lease_event {
	CLUSTER_LEASE_ELECTED,	    /* won P/leader: fence = create_revision */
	CLUSTER_LEASE_FOLLOWER,	    /* another member holds it (leader) */
	CLUSTER_LEASE_RENEWAL_LATE, /* no renewal within TTL/2: stepped down */
	CLUSTER_LEASE_DEPOSED,	    /* P/leader is no longer ours, or a
				       leader compare failed elsewhere */
	CLUSTER_LEASE_LOST,	    /* etcd says our lease is gone */
	CLUSTER_LEASE_RESIGNED	    /* stepped down on request or at close,
				       the lease revoked */
};
/* "elected", "follower", "renewal-late", "deposed", "lost", "resigned". */
const char *cluster_lease_event_name(enum cluster_lease_event ev);

struct cluster_lease_transition {
	enum cluster_lease_event event;
	/* elected: the fence won; renewal-late, deposed, lost, resigned: the
	 * fence held until then (0: none); follower: the leader's. */
	int64_t create_revision;
	int64_t lease;	    /* our lease concerned (0: none) */
	const char *leader; /* follower: the leader's name; else NULL */
	const char *why;    /* a phrase, or NULL */
};
/* Called from the lease's own thread, one transition at a time, in order
 * (borrowed for the call); it must not call cluster_lease_close. */
typedef void cluster_lease_fn(void *ctx,
			      const struct cluster_lease_transition *t);

struct cluster_lease_opts {
	struct etcd_opts etcd;	       /* copied */
	const char *prefix, *name;     /* copied */
	uint64_t ttl_s;		       /* 0: CLUSTER_LEASE_TTL_DEFAULT */
	uint64_t applied;	       /* P/members/<name>'s first value */
	/* This member's URL for its peers (--advertise-url), put in
	 * P/leader's value while it holds it: where doors forward verdicts
	 * to the sequencer (DESIGN 11). NULL or "": none (doors then judge
	 * themselves). */
	const char *peer_url;
	/* Never campaigns: the lease keeps P/members/<name> alone (a member
	 * without --watch still pins retention, rule 11). */
	bool observer;
	cluster_lease_fn *on_transition;
	/* Operating trouble (etcd unreachable, ...), at most once a second,
	 * from either of the lease's threads (never both at once); may be
	 * NULL. */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
};

/* Starts a member's leadership: two threads (the keepalive, every TTL/3;
 * and the campaign, which grants the lease, registers P/members/<name>,
 * campaigns, watches P/leader and steps down) that retry etcd until
 * cluster_lease_close. LG_EINVAL for bad options or endpoints (err says
 * which). Caller closes. */
int cluster_lease_open(cluster_lease_t **out,
		       const struct cluster_lease_opts *o,
		       struct lg_error *err);
/* Whether this member holds P/leader now, and with which fence
 * (create_revision; 0 when not holding). Any thread; never blocks on
 * etcd. */
bool cluster_lease_holding(cluster_lease_t *l, int64_t *fence);
/* A txn comparing fence failed elsewhere (rule 5, "deposed"): holding is
 * false at once and the module steps down (revokes) and lets another win
 * for one TTL. A fence that is not the current one is ignored. */
void cluster_lease_deposed(cluster_lease_t *l, int64_t fence);
/* Steps down on request: holding false at once, the lease revoked, no
 * campaign for one TTL (another member takes over). */
void cluster_lease_resign(cluster_lease_t *l);
/* The applied seq for P/members/<name> (written at most once a second).
 * Any thread; never blocks on etcd. */
void cluster_lease_applied(cluster_lease_t *l, uint64_t seq);
/* Steps down (revokes the lease: P/leader and P/members/<name> go at
 * once, a "resigned" transition), stops the threads and frees. NULL is
 * fine. */
void cluster_lease_close(cluster_lease_t *l);

/* ---------------------------------------------------------------------- */
/* `gpuledger member` (DESIGN 11; cluster/member.c): the applier (rule 7)
 * on its own thread, the only writer of the member's LMDB; serve's routes
 * reading that ledger through a shared handle of the same environment;
 * and with watch, the lease and the leader's watcher on a thread of their
 * own. */

/* --keep's default: DESIGN 11's 100,000 events. */
#define CLUSTER_KEEP_DEFAULT 100000
/* --keep-bytes' default: 256 MiB of P/log/ values, an eighth of etcd's
 * default 2 GiB quota (--quota-backend-bytes). */
#define CLUSTER_KEEP_BYTES_DEFAULT (256ULL << 20)
/* --defrag-free's default: 64 MiB. */
#define CLUSTER_DEFRAG_FREE_DEFAULT (64ULL << 20)
/* What one pass of retention may hand back about defragmentation. */
#define CLUSTER_DEFRAG_MAX 16
/* Retention (DESIGN 11 rule 11 and "Compaction and members joining"). */
struct cluster_retention {
	/* P/log/ keys more than keep events below the lowest applied seq of
	 * the members listed in P/members/ go (0: no bound by events; none
	 * listed: none go by it). */
	uint64_t keep;
	/* And, oldest first, while the P/log/ values etcd holds exceed
	 * keep_bytes (the newest is always kept), even past a member's
	 * applied seq: etcd at its quota refuses every write, so a member
	 * that far behind joins from a peer instead (0: no bound). */
	uint64_t keep_bytes;
	/* At each pass, after the compaction, each etcd member, one at a
	 * time, is defragmented when at least defrag_free bytes of its
	 * file are free (0: never). */
	uint64_t defrag_free;
};

struct cluster_member_opts {
	struct etcd_opts eo;
	const char *prefix, *name;
	uint64_t lease_ttl_s;	   /* the leader's lease (later) */
	uint64_t checkpoint_every; /* seqs between checkpoints (0: the
				      ledger's default); never on a timer
				      (rule 10) */
	struct query_opts q;	   /* serve's: db, listen, tokens, TLS */
	/* DESIGN 11 rule 2: the whole judge-append-resolve loop of a
	 * verdict batch is bounded by this (0: 7000, 70% of the webhook's
	 * 10 s); what is unknown there is answered 503. */
	uint64_t verdict_timeout_ms;
	/* --pipeline: the verdict txns the sequencer keeps in flight at
	 * once (DESIGN 11 "One sequencer, every member a door"), each on a
	 * connection of its own and compared on the P/head value of the one
	 * before (0: CLUSTER_PIPELINE_DEFAULT; 1: one at a time). A door,
	 * or a member without --watch, has one in flight. */
	unsigned pipeline;
	/* --watch: campaign for P/leader and, while holding it, run the
	 * live watcher (DESIGN 11), its API found from kubeconfig/context as
	 * `gpuledger watch` finds it; classes (may be NULL) and tick_s as
	 * watch's --classes and --tick. */
	bool watch;
	const char *kubeconfig, *context;
	const struct class_table *classes;
	uint64_t tick_s;
	/* The largest P/log/ value the watcher writes (0: 1,400,000 bytes,
	 * under etcd's 1.5 MiB request limit); a larger flush splits
	 * (rule 6). */
	uint64_t max_txn_bytes;
	/* --watch: what etcd keeps of the log (DESIGN 11 rule 11): --keep,
	 * --keep-bytes, --defrag-free. */
	struct cluster_retention rt;
	/* --peer: a ready member ("http(s)://host:port") whose GET
	 * /v1/events gives the log etcd no longer holds (DESIGN 11
	 * "Compaction and members joining"; NULL: none), its bearer token
	 * (NULL: none), CA (NULL: the system's) and a client certificate and
	 * key for a peer that requires one (NULL: none). */
	const char *peer, *peer_token, *peer_cacert, *peer_cert, *peer_key;
	/* DESIGN 11 "One sequencer, every member a door": --advertise-url,
	 * this member's URL for its peers (put in P/leader's value while it
	 * holds it; NULL: from --listen when that names a host, else none);
	 * a door forwards its admission and declarations to the sequencer
	 * with peer_token or peer_cert/peer_key (peer_cacert verifying the
	 * sequencer), and judges them itself when the forward is not
	 * answered within forward_timeout_ms (0: 2000) or fails;
	 * no_forward: never forward (every member judges its own). */
	const char *advertise_url;
	uint64_t forward_timeout_ms;
	bool no_forward;
	/* --sign-key: signed checkpoints (rule 10) at every multiple of
	 * sign_every seqs (0: the default); NULL: none. */
	const struct note_signer *signer;
	uint64_t sign_every;
	/* --holds DUR (DESIGN 3.7): with holds_set, the holds mode the log
	 * must have (TTL in ms, 0 off); the member's side appends the HOLDS
	 * event through etcd when the log's mode differs. */
	bool holds_set;
	int64_t holds_ttl_ms;
};
/* --pipeline's default and bound. */
#define CLUSTER_PIPELINE_DEFAULT 3
#define CLUSTER_PIPELINE_MAX	 16
/* --sign-every's default: a signed checkpoint every 1,000 seqs. */
#define CLUSTER_SIGN_EVERY_DEFAULT 1000
/* What one pass read and did. */
struct cluster_compact {
	uint64_t head, low; /* P/head's seq; the lowest applied listed */
	size_t members;	    /* P/members/ keys */
	uint64_t cut;	    /* keys below it deleted (0: none due) */
	bool by_bytes;	    /* cut was set by keep_bytes */
	uint64_t bytes;	    /* with keep_bytes: the values' bytes kept */
	uint64_t oldest;    /* the oldest P/log/ key left (its first seq) */
	uint64_t deleted;   /* keys deleted by this call */
	int64_t compact_rev; /* etcd compacted there (0: not) */
	/* The etcd members defragmented, in the order done: their file's
	 * bytes before and after. */
	struct cluster_defrag {
		char endpoint[256];
		int64_t before, after;
	} defrag[CLUSTER_DEFRAG_MAX];
	size_t n_defrag;
};
/* `cluster compact`: one pass of the leader's retention (rt->keep or
 * rt->keep_bytes > 0), without its fence (P/epoch is compared). */
int cluster_compact(const struct etcd_opts *eo, const char *prefix,
		    const struct cluster_retention *rt,
		    struct cluster_compact *out, struct lg_error *err);
typedef struct cluster_member cluster_member_t;
/* Opens the ledger (created when missing), checks it against etcd (rule
 * 8: LG_EEXIST, err naming why, for a ledger of another history) and
 * binds the server. Caller closes. */
int cluster_member_open(cluster_member_t **m,
			const struct cluster_member_opts *o,
			struct lg_error *err);
int cluster_member_port(const cluster_member_t *m);
int cluster_member_probe_port(const cluster_member_t *m);
/* Runs the applier's thread and the server until SIGINT or SIGTERM. */
int cluster_member_run(cluster_member_t *m, struct lg_error *err);
void cluster_member_close(cluster_member_t *m);

/* `gpuledger cluster feed` (a hidden aid for tests; cluster/feed.c):
 * NDJSON events in the form `gpuledger log` prints (import's) from in,
 * appended through the append txn as the writer of observations would,
 * batch events per txn at most (split further to max_txn_bytes), from the
 * state at P/head: the ledger at db (may be NULL) up to its seq, then the
 * P/log/ values after it. One line of JSON per txn on out. 0 when every
 * event committed; LG_EINVAL with err naming the line for one that is not
 * an event or does not fit; LG_EIO for an outcome that is not committed
 * (err says which). */
struct cluster_feed_opts {
	struct etcd_opts eo;
	const char *prefix, *db;
	uint64_t batch, max_txn_bytes;
};
int cluster_feed(const struct cluster_feed_opts *o, FILE *in, FILE *out,
		 struct lg_error *err);

#endif
